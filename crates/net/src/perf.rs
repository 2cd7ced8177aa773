//! Memory-to-memory throughput tests (`tributary perf`), with iperf3's habits: a client that
//! sends (or with `reverse` receives) for a duration, a report every interval per path,
//! and a server that takes many tests at once.
//!
//! The test travels in the handshake's offer ([`Content::Perf`]: direction and duration),
//! so the server needs no options of its own. Forward, the client's stream is filler bytes
//! that the server reads and drops. Reverse, the server's stream is a sequence of records
//! `kind (1 B) | length (4 B, big endian) | body`: filler records ([`RECORD_FILL`], body
//! ignored), then one [`RECORD_REPORT`] record whose body is the server's own report (JSON
//! of a [`Side`]: the sender's intervals with RTT, window and losses), so that the client can
//! show both ends.
//!
//! What is measured: per interval and path, the sender's payload bytes sent (with
//! retransmissions, as iperf3's sender), its smoothed RTT and congestion window at the end
//! of the interval and the packets it declared lost; the receiver's datagram bytes per
//! path. Per interval, the stream bytes done: the sender's cumulatively acknowledged bytes,
//! the receiver's delivered bytes (goodput). The intervals' bytes add up to the totals.

use crate::driver::UdpDriver;
use crate::negotiate::Content;
use crate::server::{live_session, next_accepted, ServerEvent, Visits};
use crate::transfer::{check_reachable, wait_open, Linger, CLOSE_DONE};
use crate::NetError;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration as StdDuration, Instant as StdInstant};
use tributary_proto::{Connection, Event};

/// Record kind of filler bytes.
pub const RECORD_FILL: u8 = 0;
/// Record kind of the sender's report (JSON of a [`Side`]).
pub const RECORD_REPORT: u8 = 1;
/// Body of a filler record.
const FILL: usize = 64 << 10;
/// Largest report record a client accepts.
pub const MAX_REPORT: usize = 4 << 20;
/// CLOSE code of a client that could not parse the server's stream.
pub const CLOSE_MALFORMED: u64 = 3;
/// Longest single wait of the loops.
const TICK: StdDuration = StdDuration::from_millis(20);

/// What a client test does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PerfOptions {
    /// How long data is sent (the sender then waits for the last acknowledgements).
    pub duration: StdDuration,
    /// Report period.
    pub interval: StdDuration,
    /// The server sends, the client receives.
    pub reverse: bool,
    /// Give up after this long without progress.
    pub idle_timeout: StdDuration,
}

/// Which end of the data a [`Side`] describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PerfRole {
    /// Wrote the stream.
    Sender,
    /// Read it.
    Receiver,
}

/// One path in one interval.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PathSample {
    /// Path index.
    pub path: usize,
    /// Sender: payload bytes sent on the path (retransmissions included). Receiver:
    /// datagram bytes received on it.
    pub bytes: u64,
    /// `bytes` as Mbit/s over the interval.
    pub mbps: f64,
    /// Sender: smoothed RTT at the end of the interval, ms (none before the first sample).
    pub rtt_ms: Option<f64>,
    /// Sender: congestion window at the end of the interval, bytes.
    pub cwnd: Option<u64>,
    /// Sender: packets declared lost during the interval.
    pub lost: Option<u64>,
}

/// One report period.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Interval {
    /// Seconds since the test started.
    pub start: f64,
    /// Seconds since the test started.
    pub end: f64,
    /// Stream bytes done in the interval (sender: acknowledged; receiver: delivered).
    pub bytes: u64,
    /// `bytes` as Mbit/s (goodput).
    pub mbps: f64,
    /// Per path.
    pub paths: Vec<PathSample>,
}

/// Totals of a path over the whole test.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PathTotal {
    /// Path index.
    pub path: usize,
    /// As [`PathSample::bytes`], over the test.
    pub bytes: u64,
    /// Mbit/s over the test.
    pub mbps: f64,
    /// Sender: packets declared lost.
    pub lost: Option<u64>,
    /// Sender: stream bytes sent again on this path.
    pub retransmitted_bytes: Option<u64>,
    /// Sender: of the packets declared lost, those whose original was acknowledged later
    /// (reordering, not loss: `ConnectionConfig::reorder_tolerance`). Absent in reports of
    /// peers that predate it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spurious: Option<u64>,
}

/// One end's view of a test.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Side {
    /// Sender or receiver.
    pub role: PerfRole,
    /// Report periods, in order; the last one may be shorter.
    pub intervals: Vec<Interval>,
    /// Seconds from the start to the end (sender: last byte acknowledged).
    pub seconds: f64,
    /// Stream bytes (the sum of the intervals' bytes).
    pub bytes: u64,
    /// Goodput, Mbit/s.
    pub mbps: f64,
    /// Per path (each the sum of its intervals).
    pub paths: Vec<PathTotal>,
}

/// A client's result.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PerfReport {
    /// The server sent.
    pub reverse: bool,
    /// Packets were protected.
    pub protected: bool,
    /// Scheme, controller and scheduler names.
    pub scheme: String,
    /// Congestion controller.
    pub cc: String,
    /// Path scheduler.
    pub scheduler: String,
    /// Paths.
    pub paths: usize,
    /// This end's view (sender forward, receiver reverse).
    pub local: Side,
    /// Reverse: the server's (sender's) view, received at the end of the stream.
    pub remote: Option<Side>,
}

fn mbps(bytes: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        bytes as f64 * 8.0 / secs / 1e6
    } else {
        0.0
    }
}

/// Samples one end's counters every interval.
struct Sampler {
    role: PerfRole,
    start: StdInstant,
    last_at: f64,
    last_stream: u64,
    last_bytes: Vec<u64>,
    last_lost: Vec<u64>,
    intervals: Vec<Interval>,
}

/// Cumulative counters of one end at one instant.
struct Counters {
    stream: u64,
    paths: Vec<(u64, u64, Option<f64>, Option<u64>)>,
}

impl Sampler {
    fn new(role: PerfRole, start: StdInstant) -> Self {
        Sampler {
            role,
            start,
            last_at: 0.0,
            last_stream: 0,
            last_bytes: Vec::new(),
            last_lost: Vec::new(),
            intervals: Vec::new(),
        }
    }

    /// Cumulative counters: `stream` as given (the receiver counts what it read); per path
    /// the sender's payload bytes and losses, or the receiver's datagram bytes.
    fn counters(&self, c: &Connection, rx_bytes: impl Fn(usize) -> u64, stream: u64) -> Counters {
        let stats = c.stats();
        let paths = (0..c.path_count())
            .map(|p| match self.role {
                PerfRole::Sender => {
                    let v = c.path(p);
                    (
                        stats.paths.get(p).map_or(0, |s| s.payload_bytes_sent),
                        stats.paths.get(p).map_or(0, |s| s.packets_lost),
                        v.and_then(|v| v.srtt).map(|d| d.as_nanos() as f64 / 1e6),
                        v.map(|v| v.cwnd),
                    )
                }
                PerfRole::Receiver => (rx_bytes(p), 0, None, None),
            })
            .collect();
        Counters { stream, paths }
    }

    /// Closes the interval ending now with these counters.
    fn record(&mut self, k: Counters) -> &Interval {
        self.record_at(k, self.start.elapsed().as_secs_f64())
    }

    /// Closes the last interval at the end of the test: a remainder shorter than a tenth
    /// of `interval` is added to the previous interval instead of being reported on its own
    /// (its rate over a few milliseconds would mean nothing). Totals are unchanged.
    fn record_last(&mut self, k: Counters, interval: StdDuration) {
        let end = self.start.elapsed().as_secs_f64();
        let short = end - self.last_at < interval.as_secs_f64() / 10.0;
        match self.intervals.pop() {
            Some(prev) if short => {
                // Re-open the previous interval and close it again now.
                self.last_at = prev.start;
                self.last_stream -= prev.bytes;
                for (p, s) in prev.paths.iter().enumerate() {
                    self.last_bytes[p] -= s.bytes;
                    self.last_lost[p] -= s.lost.unwrap_or(0);
                }
                self.record_at(k, end);
            }
            prev => {
                self.intervals.extend(prev);
                self.record_at(k, end);
            }
        }
    }

    fn record_at(&mut self, k: Counters, end: f64) -> &Interval {
        let span = end - self.last_at;
        let n = k.paths.len();
        self.last_bytes.resize(n, 0);
        self.last_lost.resize(n, 0);
        let sender = self.role == PerfRole::Sender;
        let paths = k
            .paths
            .iter()
            .enumerate()
            .map(|(p, &(bytes, lost, rtt, cwnd))| {
                let b = bytes - self.last_bytes[p].min(bytes);
                let l = lost - self.last_lost[p].min(lost);
                self.last_bytes[p] = bytes;
                self.last_lost[p] = lost;
                PathSample {
                    path: p,
                    bytes: b,
                    mbps: mbps(b, span),
                    rtt_ms: rtt,
                    cwnd,
                    lost: sender.then_some(l),
                }
            })
            .collect();
        let bytes = k.stream - self.last_stream.min(k.stream);
        self.last_stream = k.stream;
        self.intervals.push(Interval {
            start: self.last_at,
            end,
            bytes,
            mbps: mbps(bytes, span),
            paths,
        });
        self.last_at = end;
        self.intervals.last().expect("just pushed")
    }

    /// Closes an interval (the last one if `last`) and tells `on_interval`, unless the last
    /// was folded into the previous one (which was told already).
    fn close(
        &mut self,
        k: Counters,
        last: bool,
        interval: StdDuration,
        on_interval: &mut dyn FnMut(&Interval),
    ) {
        let n = self.intervals.len();
        if last {
            self.record_last(k, interval);
        } else {
            self.record(k);
        }
        if self.intervals.len() > n {
            if let Some(i) = self.intervals.last() {
                on_interval(i);
            }
        }
    }

    fn due(&self, interval: StdDuration) -> bool {
        self.start.elapsed().as_secs_f64() >= self.last_at + interval.as_secs_f64()
    }

    /// The whole test: totals are the sums of the intervals (so they always agree).
    fn finish(self, c: &Connection) -> Side {
        let seconds = self.last_at;
        let bytes = self.intervals.iter().map(|i| i.bytes).sum();
        let stats = c.stats();
        let n = self.last_bytes.len();
        let paths = (0..n)
            .map(|p| {
                let b: u64 = self
                    .intervals
                    .iter()
                    .filter_map(|i| i.paths.get(p))
                    .map(|s| s.bytes)
                    .sum();
                let sender = self.role == PerfRole::Sender;
                PathTotal {
                    path: p,
                    bytes: b,
                    mbps: mbps(b, seconds),
                    lost: sender.then(|| {
                        self.intervals
                            .iter()
                            .filter_map(|i| i.paths.get(p).and_then(|s| s.lost))
                            .sum()
                    }),
                    retransmitted_bytes: sender
                        .then(|| stats.paths.get(p).map_or(0, |s| s.retransmitted_bytes)),
                    spurious: sender.then(|| stats.paths.get(p).map_or(0, |s| s.spurious_losses)),
                }
            })
            .collect();
        Side {
            role: self.role,
            intervals: self.intervals,
            seconds,
            bytes,
            mbps: mbps(bytes, seconds),
            paths,
        }
    }
}

/// Writes the reverse direction's records into a connection's stream.
struct RecordWriter {
    rec: Vec<u8>,
    pos: usize,
    /// The report record is in `rec`: nothing follows it.
    last: bool,
}

impl RecordWriter {
    fn new() -> Self {
        let mut rec = vec![0u8; 5 + FILL];
        rec[0] = RECORD_FILL;
        rec[1..5].copy_from_slice(&(FILL as u32).to_be_bytes());
        RecordWriter {
            rec,
            pos: 0,
            last: false,
        }
    }

    /// Fills the send buffer with filler records.
    fn fill(&mut self, c: &mut Connection) {
        loop {
            if self.pos == self.rec.len() {
                if self.last {
                    return;
                }
                self.pos = 0;
            }
            let n = c.write(&self.rec[self.pos..]);
            self.pos += n;
            if n == 0 {
                return;
            }
        }
    }

    /// After the current record, the report; returns true once all of it is written.
    fn finish(&mut self, c: &mut Connection, report: &[u8]) -> bool {
        if !self.last {
            // Complete the filler record under way, then switch to the report.
            while self.pos < self.rec.len() {
                let n = c.write(&self.rec[self.pos..]);
                if n == 0 {
                    return false;
                }
                self.pos += n;
            }
            self.rec.clear();
            self.rec.push(RECORD_REPORT);
            self.rec
                .extend_from_slice(&(report.len() as u32).to_be_bytes());
            self.rec.extend_from_slice(report);
            self.pos = 0;
            self.last = true;
        }
        while self.pos < self.rec.len() {
            let n = c.write(&self.rec[self.pos..]);
            if n == 0 {
                return false;
            }
            self.pos += n;
        }
        true
    }
}

/// Parses the reverse direction's records.
#[derive(Default)]
struct RecordReader {
    hdr: Vec<u8>,
    kind: u8,
    left: usize,
    report: Vec<u8>,
    reports: Vec<Vec<u8>>,
    error: Option<String>,
}

impl RecordReader {
    fn push(&mut self, mut b: &[u8]) {
        while !b.is_empty() && self.error.is_none() {
            if self.left == 0 && self.hdr.len() < 5 {
                let take = (5 - self.hdr.len()).min(b.len());
                self.hdr.extend_from_slice(&b[..take]);
                b = &b[take..];
                if self.hdr.len() < 5 {
                    return;
                }
                self.kind = self.hdr[0];
                let len = u32::from_be_bytes([self.hdr[1], self.hdr[2], self.hdr[3], self.hdr[4]]);
                self.left = len as usize;
                match self.kind {
                    RECORD_FILL => {}
                    RECORD_REPORT if self.left <= MAX_REPORT => self.report.clear(),
                    RECORD_REPORT => {
                        self.error = Some(format!("a report record of {len} bytes"));
                        return;
                    }
                    k => {
                        self.error = Some(format!("unknown record kind {k}"));
                        return;
                    }
                }
                if self.left == 0 {
                    self.end_record();
                }
                continue;
            }
            let take = self.left.min(b.len());
            if self.kind == RECORD_REPORT {
                self.report.extend_from_slice(&b[..take]);
            }
            b = &b[take..];
            self.left -= take;
            if self.left == 0 {
                self.end_record();
            }
        }
    }

    fn end_record(&mut self) {
        if self.kind == RECORD_REPORT {
            self.reports.push(std::mem::take(&mut self.report));
        }
        self.hdr.clear();
    }
}

fn conn(d: &mut UdpDriver) -> Result<&mut Connection, NetError> {
    d.connection_mut().ok_or(NetError::NoPaths("connection"))
}

/// Runs a client test on a connected driver (protected: [`UdpDriver::connect_secure`] with
/// [`Content::Perf`] matching `opts`; unprotected: forward only). `on_interval` hears
/// every interval of this end as it closes.
pub fn perf_client(
    d: &mut UdpDriver,
    opts: &PerfOptions,
    on_interval: &mut dyn FnMut(&Interval),
) -> Result<PerfReport, NetError> {
    wait_open(d, opts.idle_timeout)?;
    let protected = d.session().is_some_and(|s| s.is_protected());
    if opts.reverse && !protected {
        return Err(NetError::Limit(
            "the reverse direction needs the handshake (it carries the request): drop \
             --insecure"
                .into(),
        ));
    }
    let cfg = conn(d)?.config().clone();
    let paths = conn(d)?.path_count();
    let start = StdInstant::now();
    let role = if opts.reverse {
        PerfRole::Receiver
    } else {
        PerfRole::Sender
    };
    let mut sampler = Sampler::new(role, start);
    let mut idle = Idle::new(opts.idle_timeout);
    let (local, remote) = if opts.reverse {
        // Nothing to send: end our stream at once.
        conn(d)?.close();
        let mut reader = RecordReader::default();
        let mut read = 0u64;
        let mut finished = false;
        loop {
            d.poll_io(TICK)?;
            let c = conn(d)?;
            read += c.read_with(u64::MAX, |b| reader.push(b));
            if let Some(e) = reader.error.take() {
                d.close(CLOSE_MALFORMED);
                return Err(NetError::Negotiation(format!(
                    "malformed perf stream from the server: {e}"
                )));
            }
            while let Some(ev) = conn(d)?.poll_event() {
                match ev {
                    Event::StreamFinished => finished = true,
                    Event::Closed { code } if !finished => {
                        return Err(NetError::PeerClosed { code })
                    }
                    _ => {}
                }
            }
            d.flush();
            if sampler.due(opts.interval) || finished {
                let s = d.session().ok_or(NetError::NoPaths("connection"))?;
                let k = sampler.counters(s.connection(), |p| s.path_bytes_received(p), read);
                sampler.close(k, finished, opts.interval, on_interval);
            }
            if finished {
                break;
            }
            idle.update(read)?;
        }
        // Keep acknowledging until the server, all its data acknowledged, closes (the last
        // acknowledgement may be delayed or lost).
        // The wait restarts with every datagram the server sends after the end (see Linger).
        let mut linger = Linger::start(conn(d)?, StdInstant::now());
        'linger: loop {
            let now = StdInstant::now();
            linger.update(conn(d)?, now);
            if linger.remaining(LINGER, now).is_zero() {
                break;
            }
            d.poll_io(TICK)?;
            while let Some(ev) = conn(d)?.poll_event() {
                if let Event::Closed { .. } = ev {
                    break 'linger;
                }
            }
        }
        let remote = reader
            .reports
            .last()
            .map(|r| serde_json::from_slice::<Side>(r))
            .transpose()
            .map_err(|e| NetError::Negotiation(format!("malformed report from the server: {e}")))?;
        let local = sampler.finish(conn(d)?);
        (local, remote)
    } else {
        let fill = vec![0u8; FILL];
        let mut closed = false;
        loop {
            let c = conn(d)?;
            if !closed {
                if start.elapsed() >= opts.duration {
                    c.close();
                    closed = true;
                } else {
                    while c.write(&fill) > 0 {}
                }
            }
            d.flush();
            let mut done = false;
            while let Some(ev) = conn(d)?.poll_event() {
                match ev {
                    Event::AllAcked => done = true,
                    Event::Closed { code } => return Err(NetError::PeerClosed { code }),
                    _ => {}
                }
            }
            if sampler.due(opts.interval) || done {
                let c = conn(d)?;
                let k = sampler.counters(c, |_| 0, c.data_acked());
                sampler.close(k, done, opts.interval, on_interval);
            }
            if done {
                break;
            }
            check_reachable(d)?;
            idle.update(conn(d)?.data_acked())?;
            let wait = if closed {
                TICK
            } else {
                TICK.min(opts.duration.saturating_sub(start.elapsed()))
            };
            d.poll_io(wait)?;
        }
        d.close(CLOSE_DONE);
        (sampler.finish(conn(d)?), None)
    };
    Ok(PerfReport {
        reverse: opts.reverse,
        protected,
        scheme: cfg.scheme.name().to_string(),
        cc: cfg.cc.name().to_string(),
        scheduler: cfg.scheduler.name().to_string(),
        paths,
        local,
        remote,
    })
}

/// Tracks the last time a counter moved.
struct Idle {
    value: u64,
    at: StdInstant,
    timeout: StdDuration,
}

impl Idle {
    fn new(timeout: StdDuration) -> Self {
        Idle {
            value: 0,
            at: StdInstant::now(),
            timeout,
        }
    }
    fn update(&mut self, v: u64) -> Result<(), NetError> {
        if v != self.value {
            self.value = v;
            self.at = StdInstant::now();
        } else if self.at.elapsed() >= self.timeout {
            return Err(NetError::Idle {
                secs: self.timeout.as_secs_f64(),
                what: "perf test",
            });
        }
        Ok(())
    }
}

/// What the server saw of one test, for its log.
#[derive(Debug, Clone, PartialEq)]
pub struct PerfDone {
    /// Connection id.
    pub id: u64,
    /// The server sent (the client's `-R`).
    pub reverse: bool,
    /// The server's view.
    pub side: Side,
}

struct Test {
    reverse: bool,
    duration: StdDuration,
    sampler: Sampler,
    writer: RecordWriter,
    /// Reverse: the report, once the duration is over.
    report: Option<Vec<u8>>,
    read: u64,
    /// Bytes read plus bytes acknowledged when they last moved.
    progress: (u64, StdInstant),
    /// Reverse: the report is written and the stream closed.
    closed: bool,
    /// Forward: our receive side finished; reverse: everything we sent is acknowledged.
    finished: bool,
    /// Forward (we receive): the wait for the client's CLOSE after the end, restarted by the
    /// client's retransmissions (see [`Linger`]). Reverse: none; the test ends, and the
    /// connection closes, once everything sent is acknowledged.
    linger: Option<Linger>,
}

/// How long a receiving end waits for the sender's CLOSE at least after the stream ended
/// (longer while the sender still retransmits, see [`Linger`]).
const LINGER: StdDuration = StdDuration::from_secs(2);

/// Serves perf tests until `stop` is set (or `max_tests` ended): forward tests are read
/// and dropped, reverse ones are sent for the duration the client asked (its report at
/// the end). `log` hears acceptances, refusals and failures; `done` every completed test.
/// Returns how many completed.
pub fn perf_serve(
    d: &mut UdpDriver,
    idle_timeout: StdDuration,
    interval: StdDuration,
    stop: &AtomicBool,
    max_tests: Option<u64>,
    mut log: impl FnMut(ServerEvent<'_>),
    mut done: impl FnMut(PerfDone),
) -> Result<u64, NetError> {
    let mut tests: HashMap<u64, Test> = HashMap::new();
    let (mut ended_n, mut completed) = (0u64, 0u64);
    let mut ended: Vec<(u64, Result<(), String>)> = Vec::new();
    let mut visits = Visits::new(TICK);
    while !stop.load(Ordering::Relaxed) && max_tests.is_none_or(|m| ended_n < m) {
        d.poll_io(TICK)?;
        while let Some((id, offer)) = next_accepted(d, &mut log) {
            // The listener's service let only perf offers through.
            let Content::Perf {
                reverse,
                duration_ms,
            } = offer.content
            else {
                ended.push((id, Err("not a perf test".into())));
                continue;
            };
            let now = StdInstant::now();
            let role = if reverse {
                PerfRole::Sender
            } else {
                PerfRole::Receiver
            };
            tests.insert(
                id,
                Test {
                    reverse,
                    duration: StdDuration::from_millis(duration_ms),
                    sampler: Sampler::new(role, now),
                    writer: RecordWriter::new(),
                    report: None,
                    read: 0,
                    progress: (0, now),
                    closed: false,
                    finished: false,
                    linger: None,
                },
            );
        }
        // Reverse tests send whenever there is room, so every test is visited each turn
        // (perf servers hold a few tests, not thousands).
        let reverse = tests.values().any(|t| t.reverse);
        visits.refill(d, tests.keys().copied(), reverse);
        for &id in visits.ids() {
            let Some(t) = tests.get_mut(&id) else {
                continue;
            };
            let Some(s) = live_session(d, id, &mut ended) else {
                continue;
            };
            let c = s.connection_mut();
            t.read += c.read_with(u64::MAX, |_| {});
            let elapsed = t.sampler.start.elapsed();
            if t.reverse && !t.closed {
                if elapsed < t.duration {
                    t.writer.fill(c);
                } else {
                    if t.report.is_none() {
                        // The report: the intervals up to the end of the duration (bytes
                        // acknowledged later are not in it).
                        let k = t.sampler.counters(c, |_| 0, c.data_acked());
                        t.sampler.record(k);
                        let side = snapshot(&t.sampler, c);
                        t.report = Some(serde_json::to_vec(&side).unwrap_or_default());
                    }
                    if t.writer.finish(c, t.report.as_deref().unwrap_or_default()) {
                        c.close();
                        t.closed = true;
                    }
                }
            }
            let mut closed = None;
            while let Some(ev) = c.poll_event() {
                match ev {
                    Event::StreamFinished if !t.reverse => {
                        t.finished = true;
                        t.linger = Some(Linger::start(c, StdInstant::now()));
                    }
                    Event::AllAcked if t.reverse => t.finished = true,
                    Event::Closed { code } => closed = Some(code),
                    _ => {}
                }
            }
            let moved = t.read + c.data_acked();
            if moved != t.progress.0 {
                t.progress = (moved, StdInstant::now());
            }
            let s: &crate::Session = s;
            if t.report.is_none() && !t.finished && t.sampler.due(interval) {
                let stream = if t.reverse {
                    s.connection().data_acked()
                } else {
                    t.read
                };
                let k = t
                    .sampler
                    .counters(s.connection(), |p| s.path_bytes_received(p), stream);
                t.sampler.record(k);
            }
            let now = StdInstant::now();
            let lingered = match (&mut t.linger, t.finished) {
                (Some(l), _) => {
                    l.update(s.connection(), now);
                    l.remaining(LINGER, now).is_zero()
                }
                // Reverse: all we sent, the report and the stream's end included, is
                // acknowledged, so the client has it all; our CLOSE ends its wait at once
                // (the client, the receiver, waits for it as this end does in a forward test).
                (None, finished) => finished,
            };
            match (t.finished, closed) {
                (true, Some(_)) => ended.push((id, Ok(()))),
                (true, None) if lingered => ended.push((id, Ok(()))),
                (true, None) => {}
                (false, Some(code)) => {
                    ended.push((id, Err(format!("the client closed (code {code}) early"))))
                }
                (false, None) if t.progress.1.elapsed() >= idle_timeout => ended.push((
                    id,
                    Err(format!(
                        "no progress for {:.1} s",
                        idle_timeout.as_secs_f64()
                    )),
                )),
                (false, None) => {}
            }
        }
        d.flush_some(visits.ids());
        for (id, res) in ended.drain(..) {
            let t = tests.remove(&id);
            if res.is_ok() {
                if let Some(s) = d.session_by_id_mut(id) {
                    s.connection_mut().close_connection(CLOSE_DONE);
                }
                d.flush_session(id);
            }
            let side = match (t, d.session_by_id(id)) {
                (Some(mut t), Some(s)) => {
                    if !t.reverse {
                        let k = t.sampler.counters(
                            s.connection(),
                            |p| s.path_bytes_received(p),
                            t.read,
                        );
                        t.sampler.record_last(k, interval);
                    }
                    Some((t.reverse, t.sampler.finish(s.connection())))
                }
                _ => None,
            };
            d.remove(id);
            ended_n += 1;
            match (res, side) {
                (Ok(()), Some((reverse, side))) => {
                    completed += 1;
                    done(PerfDone { id, reverse, side });
                }
                (Ok(()), None) => {}
                (Err(error), side) => log(ServerEvent::Failed {
                    id,
                    bytes: side.map_or(0, |(_, s)| s.bytes),
                    error,
                }),
            }
        }
    }
    Ok(completed)
}

/// The sender's side as it stands (for the report record), without consuming the sampler.
fn snapshot(s: &Sampler, c: &Connection) -> Side {
    let copy = Sampler {
        role: s.role,
        start: s.start,
        last_at: s.last_at,
        last_stream: s.last_stream,
        last_bytes: s.last_bytes.clone(),
        last_lost: s.last_lost.clone(),
        intervals: s.intervals.clone(),
    };
    copy.finish(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_parse_across_any_split() {
        let report = br#"{"x":1}"#;
        let mut stream = Vec::new();
        for _ in 0..3 {
            stream.push(RECORD_FILL);
            stream.extend_from_slice(&100u32.to_be_bytes());
            stream.extend_from_slice(&[7u8; 100]);
        }
        stream.push(RECORD_REPORT);
        stream.extend_from_slice(&(report.len() as u32).to_be_bytes());
        stream.extend_from_slice(report);
        for split in [1, 2, 3, 5, 7, 64, 1000] {
            let mut r = RecordReader::default();
            for c in stream.chunks(split) {
                r.push(c);
            }
            assert_eq!(r.error, None);
            assert_eq!(r.reports, vec![report.to_vec()], "split {split}");
        }
        let mut r = RecordReader::default();
        r.push(&[9, 0, 0, 0, 1, 0]);
        assert!(r
            .error
            .as_deref()
            .unwrap()
            .contains("unknown record kind 9"));
        let mut r = RecordReader::default();
        r.push(&[RECORD_REPORT, 0xff, 0xff, 0xff, 0xff]);
        assert!(
            r.error.is_some(),
            "an oversized report is refused before buffering"
        );
    }
}
