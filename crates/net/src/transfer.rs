//! One stream over a driver: the sending and receiving loops behind `tributary send/recv`.

use crate::driver::{DriverStats, UdpDriver};
use crate::negotiate::{hash_prefix, CLOSE_RESUME_MISMATCH};
use crate::session::{SessionError, SessionStats};
use crate::NetError;
use std::fmt;
use std::io::{ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::sync::mpsc;
use std::time::{Duration as StdDuration, Instant as StdInstant};
use tributary_proto::{ConnectionStats, Event};

/// Longest single wait of the loops, so that idle and linger deadlines are checked.
const TICK: StdDuration = StdDuration::from_millis(100);
/// Longest wait while the source has nothing to read yet.
const SOURCE_POLL: StdDuration = StdDuration::from_millis(5);
/// Bytes read from the source per `read` call.
const CHUNK: usize = 256 << 10;
/// CLOSE reason code sent by a sender whose data was all acknowledged.
pub const CLOSE_DONE: u64 = 0;

/// The receiver's wait for the sender's CLOSE once the stream ended. The sender closes only
/// after the STREAM_END it sent was acknowledged; if the receiver's last ACKs are lost, the
/// sender retransmits on its retransmission timer (backing off), and a receiver that has
/// gone by then leaves it waiting until its idle timeout although the data arrived. So the
/// wait restarts with every datagram the sender sends after the end, and lasts at least
/// three of the connection's current retransmission timeouts (the largest of its paths'),
/// whatever `linger` says.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Linger {
    since: StdInstant,
    seen: u64,
    floor: StdDuration,
}

impl Linger {
    /// Retransmission timeouts the wait lasts at least.
    const RTOS: u32 = 3;

    fn facts(c: &tributary_proto::Connection) -> (u64, StdDuration) {
        let s = c.stats();
        let rx = s.paths.iter().map(|p| p.packets_received).sum();
        let rto = (0..s.paths.len())
            .filter_map(|i| c.path(i))
            .map(|v| v.rto)
            .max()
            .unwrap_or_default();
        (
            rx,
            StdDuration::from_nanos(rto.as_nanos()).saturating_mul(Self::RTOS),
        )
    }

    /// The wait starts at `now`, when the stream ended.
    pub(crate) fn start(c: &tributary_proto::Connection, now: StdInstant) -> Self {
        let (seen, floor) = Self::facts(c);
        Linger {
            since: now,
            seen,
            floor,
        }
    }

    /// Notes what the connection received since: a datagram of the sender restarts it.
    pub(crate) fn update(&mut self, c: &tributary_proto::Connection, now: StdInstant) {
        let (rx, floor) = Self::facts(c);
        if rx > self.seen {
            self.seen = rx;
            self.since = now;
        }
        self.floor = self.floor.max(floor);
    }

    /// How long it still lasts at `now` with the configured `linger` (zero: over).
    pub(crate) fn remaining(&self, linger: StdDuration, now: StdInstant) -> StdDuration {
        linger
            .max(self.floor)
            .saturating_sub(now.saturating_duration_since(self.since))
    }
}

/// Limits of a transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransferOptions {
    /// Give up after this long without progress (sender: no packet acknowledged; receiver:
    /// no stream byte delivered, including before the first datagram).
    pub idle_timeout: StdDuration,
    /// Receiver: after the stream finished, keep answering (re-acknowledging the sender's
    /// retransmissions, should the last ACKs be lost) until the sender's CLOSE arrives or
    /// this long has passed since the later of the end and the sender's last datagram, and
    /// at least three of the connection's retransmission timeouts (the `Linger` rule of this module).
    pub linger: StdDuration,
}

impl Default for TransferOptions {
    fn default() -> Self {
        TransferOptions {
            idle_timeout: StdDuration::from_secs(30),
            linger: StdDuration::from_secs(2),
        }
    }
}

/// Which end a report describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The sending end.
    Sender,
    /// The receiving end.
    Receiver,
}

/// Per-path counters of a transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathReport {
    /// Path index.
    pub path: usize,
    /// Where the path's datagrams were last sent.
    pub remote: Option<SocketAddr>,
    /// Datagrams sent (data, ACKs, control).
    pub packets_sent: u64,
    /// Datagrams received.
    pub packets_received: u64,
    /// Ack-eliciting packets declared lost.
    pub packets_lost: u64,
    /// Retransmission timeouts.
    pub rto_count: u64,
}

/// The outcome of a completed transfer.
#[derive(Debug, Clone)]
pub struct TransferReport {
    /// Which end.
    pub role: Role,
    /// Stream bytes (sender: written and acknowledged; receiver: delivered in order).
    pub bytes: u64,
    /// Sender: from the first write to the last acknowledgement. Receiver: from the first
    /// accepted datagram to the end of the stream.
    pub elapsed: StdDuration,
    /// Per-path counters.
    pub paths: Vec<PathReport>,
    /// The connection's counters.
    pub conn: ConnectionStats,
    /// The driver's counters.
    pub driver: DriverStats,
    /// The security layer's counters (zero when unprotected).
    pub session: SessionStats,
    /// True if packets were protected.
    pub protected: bool,
    /// Sender: the file offset the stream started at (the receiver held the bytes before,
    /// checked by their hash); 0 for a whole transfer.
    pub resumed_from: u64,
}

/// How far a transfer is, for a progress display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransferProgress {
    /// Stream bytes done (sender: acknowledged; receiver: delivered).
    pub bytes: u64,
    /// Sender: the file offset of the stream's first byte (a resumed transfer's prefix).
    pub offset: u64,
    /// Receiver: the size the sender announced, if any.
    pub total: Option<u64>,
    /// Since the transfer started.
    pub elapsed: StdDuration,
}

impl TransferReport {
    /// Goodput, Mbit/s (application bytes over `elapsed`).
    pub fn goodput_mbps(&self) -> f64 {
        let s = self.elapsed.as_secs_f64();
        if s > 0.0 {
            self.bytes as f64 * 8.0 / s / 1e6
        } else {
            0.0
        }
    }
}

impl fmt::Display for TransferReport {
    /// One line: bytes, seconds, goodput, per-path packets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verb = match self.role {
            Role::Sender => "sent",
            Role::Receiver => "received",
        };
        write!(
            f,
            "{verb} {} bytes in {:.3} s: {:.1} Mbit/s",
            self.bytes,
            self.elapsed.as_secs_f64(),
            self.goodput_mbps()
        )?;
        if self.resumed_from > 0 {
            write!(f, " (resumed at byte {})", self.resumed_from)?;
        }
        for p in &self.paths {
            write!(
                f,
                "; path {}: {} pkts sent, {} received, {} lost",
                p.path, p.packets_sent, p.packets_received, p.packets_lost
            )?;
        }
        if self.driver.datagrams_dropped > 0 {
            write!(f, "; {} datagrams dropped", self.driver.datagrams_dropped)?;
        }
        Ok(())
    }
}

/// Tracks the last time a counter moved.
struct Progress {
    value: u64,
    at: StdInstant,
    timeout: StdDuration,
    what: &'static str,
}

impl Progress {
    fn new(timeout: StdDuration, what: &'static str) -> Self {
        Progress {
            value: 0,
            at: StdInstant::now(),
            timeout,
            what,
        }
    }

    /// Counts as progress now.
    fn touch(&mut self) {
        self.at = StdInstant::now();
    }

    fn update(&mut self, value: u64) -> Result<(), NetError> {
        if value != self.value {
            self.value = value;
            self.at = StdInstant::now();
        } else if self.at.elapsed() >= self.timeout {
            return Err(NetError::Idle {
                secs: self.timeout.as_secs_f64(),
                what: self.what,
            });
        }
        Ok(())
    }
}

fn report(d: &UdpDriver, role: Role, bytes: u64, elapsed: StdDuration) -> TransferReport {
    let conn = d.connection().map(|c| c.stats()).unwrap_or_default();
    let paths = conn
        .paths
        .iter()
        .enumerate()
        .map(|(i, p)| PathReport {
            path: i,
            remote: d.remote(i),
            packets_sent: p.packets_sent,
            packets_received: p.packets_received,
            packets_lost: p.packets_lost,
            rto_count: p.rto_count,
        })
        .collect();
    TransferReport {
        role,
        bytes,
        elapsed,
        paths,
        conn,
        driver: d.stats(),
        session: d.session().map(|s| s.stats()).unwrap_or_default(),
        protected: d.session().is_some_and(|s| s.is_protected()),
        resumed_from: 0,
    }
}

fn conn(d: &mut UdpDriver) -> Result<&mut tributary_proto::Connection, NetError> {
    d.connection_mut().ok_or(NetError::NoPaths("connection"))
}

fn read_retry(src: &mut impl Read, buf: &mut [u8]) -> Result<usize, NetError> {
    loop {
        match src.read(buf) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(NetError::Source(e)),
        }
    }
}

/// Waits until the first connection's handshake completes (at once for an unprotected
/// one); fails at once on REJECT, a refused offer, or ICMP port unreachable, and after
/// `timeout` without an answer.
pub fn wait_open(d: &mut UdpDriver, timeout: StdDuration) -> Result<(), NetError> {
    let t0 = StdInstant::now();
    loop {
        let s = d.session().ok_or(NetError::NoPaths("connection"))?;
        if s.is_open() {
            return Ok(());
        }
        let addr = s.remote(0).unwrap_or_else(|| d.local_addrs()[0]);
        match s.error() {
            Some(SessionError::Rejected(r)) => return Err(NetError::Refused(r.to_string())),
            Some(SessionError::Refused(r)) => return Err(NetError::Refused(r.clone())),
            _ => {}
        }
        if let Some(addr) = d.unreachable() {
            return Err(NetError::Unreachable { addr });
        }
        if t0.elapsed() >= timeout {
            let hint = if matches!(s.error(), Some(SessionError::BadResponse)) {
                ": an answer came but did not authenticate (the receiver's public key pinned \
                 here, or the pre-shared key, differs)"
            } else {
                " (nothing listens there, a firewall drops the datagrams, or the receiver \
                 runs an older version of tributary, which drops handshakes of this wire \
                 version without an answer)"
            };
            return Err(NetError::NoAnswer {
                addr,
                secs: timeout.as_secs_f64(),
                hint,
            });
        }
        d.poll_io(TICK.min(timeout.saturating_sub(t0.elapsed())))?;
    }
}

/// Fails with [`NetError::Unreachable`] if a path reported ICMP port unreachable before
/// anything from the peer arrived: an unprotected sender's first contact is its data, so
/// this is where it learns that nothing listens (a protected one learns it in
/// [`wait_open`]). Later reports (a receiver that exited after the end) are left to the
/// idle timeout and the connection's own failure detection.
pub(crate) fn check_reachable(d: &UdpDriver) -> Result<(), NetError> {
    let s = d.stats();
    match d.unreachable() {
        Some(addr) if s.datagrams_received == s.datagrams_dropped => {
            Err(NetError::Unreachable { addr })
        }
        _ => Ok(()),
    }
}

/// Sends everything `src` yields as the connection's stream, ends it, waits until the peer
/// acknowledged all of it, then sends CLOSE ([`CLOSE_DONE`]) on every path. A protected
/// connection first completes its handshake ([`wait_open`]).
///
/// `src` is read on the calling thread, between turns of the event loop: a source that
/// blocks (a pipe with nothing to read yet) stalls the connection meanwhile. For such
/// sources use [`send_stream_observed`], which reads on a thread of its own.
///
/// If the receiver answered that it holds a prefix of the file (`recv --resume`), the
/// first bytes of `src` are read and hashed: if they match, the stream is the rest of
/// `src`; if not, the connection is closed with [`CLOSE_RESUME_MISMATCH`] and the error
/// says so (the receiver's partial file is left as it was).
pub fn send_stream(
    d: &mut UdpDriver,
    mut src: impl Read,
    opts: &TransferOptions,
) -> Result<TransferReport, NetError> {
    wait_open(d, opts.idle_timeout)?;
    let resumed_from = check_resume(d, &mut src)?;
    let mut feed = Inline {
        src,
        buf: vec![0u8; CHUNK],
    };
    send_loop(d, &mut feed, resumed_from, opts, &mut |_| {})
}

/// [`send_stream`] with `src` read on a thread of its own (so a slow source never stalls
/// the connection: acknowledgements, retransmissions and timers go on while it blocks),
/// calling `progress` on every turn of the loop (the caller rate-limits any display).
pub fn send_stream_observed(
    d: &mut UdpDriver,
    mut src: impl Read + Send + 'static,
    opts: &TransferOptions,
    progress: &mut dyn FnMut(TransferProgress),
) -> Result<TransferReport, NetError> {
    wait_open(d, opts.idle_timeout)?;
    let resumed_from = check_resume(d, &mut src)?;
    let (tx, rx) = mpsc::sync_channel::<std::io::Result<Vec<u8>>>(READ_AHEAD);
    let (back, spare) = mpsc::channel::<Vec<u8>>();
    // Detached: if the transfer fails while the thread is blocked in `read`, it ends at its
    // next read (the channel is gone) instead of holding the caller.
    std::thread::Builder::new()
        .name("send-source".into())
        .spawn(move || loop {
            let mut buf = spare.try_recv().unwrap_or_else(|_| vec![0u8; CHUNK]);
            buf.resize(CHUNK, 0);
            let r = read_retry(&mut src, &mut buf).map(|n| {
                buf.truncate(n);
                buf
            });
            let last = !matches!(&r, Ok(b) if !b.is_empty());
            if tx
                .send(r.map_err(|e| match e {
                    NetError::Source(e) => e,
                    e => std::io::Error::other(e.to_string()),
                }))
                .is_err()
                || last
            {
                return;
            }
        })
        .map_err(NetError::Source)?;
    let mut feed = Threaded { rx, back };
    send_loop(d, &mut feed, resumed_from, opts, progress)
}

/// Chunks read ahead by the source thread.
const READ_AHEAD: usize = 8;

/// Where the stream's bytes come from.
enum Chunk {
    /// Bytes (never empty).
    Data(Vec<u8>),
    /// None available now (a slow source).
    Pending,
    /// The source ended.
    Eof,
}

trait Feed {
    fn next(&mut self) -> Result<Chunk, NetError>;
    /// Hands a consumed buffer back for reuse.
    fn recycle(&mut self, _: Vec<u8>) {}
}

struct Inline<R> {
    src: R,
    buf: Vec<u8>,
}

impl<R: Read> Feed for Inline<R> {
    fn next(&mut self) -> Result<Chunk, NetError> {
        let mut b = std::mem::take(&mut self.buf);
        b.resize(CHUNK, 0);
        let n = read_retry(&mut self.src, &mut b)?;
        if n == 0 {
            self.buf = b;
            return Ok(Chunk::Eof);
        }
        b.truncate(n);
        Ok(Chunk::Data(b))
    }
    fn recycle(&mut self, b: Vec<u8>) {
        self.buf = b;
    }
}

struct Threaded {
    rx: mpsc::Receiver<std::io::Result<Vec<u8>>>,
    back: mpsc::Sender<Vec<u8>>,
}

impl Feed for Threaded {
    fn next(&mut self) -> Result<Chunk, NetError> {
        match self.rx.try_recv() {
            Ok(Ok(b)) if b.is_empty() => Ok(Chunk::Eof),
            Ok(Ok(b)) => Ok(Chunk::Data(b)),
            Ok(Err(e)) => Err(NetError::Source(e)),
            Err(mpsc::TryRecvError::Empty) => Ok(Chunk::Pending),
            Err(mpsc::TryRecvError::Disconnected) => Err(NetError::Source(std::io::Error::other(
                "the thread reading the data to send stopped",
            ))),
        }
    }
    fn recycle(&mut self, b: Vec<u8>) {
        let _ = self.back.send(b);
    }
}

/// Checks the receiver's prefix, if it holds one (see [`send_stream`]); returns the offset
/// the stream starts at.
fn check_resume(d: &mut UdpDriver, src: &mut impl Read) -> Result<u64, NetError> {
    let Some(r) = d.session().and_then(|s| s.resume()).cloned() else {
        return Ok(0);
    };
    let ours = hash_prefix(src, r.offset).map_err(NetError::Source)?;
    if ours.as_deref() != Some(r.sha256.as_str()) {
        d.close(CLOSE_RESUME_MISMATCH);
        return Err(NetError::ResumeMismatch {
            offset: r.offset,
            shorter: ours.is_none(),
        });
    }
    Ok(r.offset)
}

fn send_loop(
    d: &mut UdpDriver,
    feed: &mut dyn Feed,
    resumed_from: u64,
    opts: &TransferOptions,
    progress_fn: &mut dyn FnMut(TransferProgress),
) -> Result<TransferReport, NetError> {
    let start = StdInstant::now();
    let mut chunk: Option<(Vec<u8>, usize)> = None;
    let mut eof = false;
    let mut progress = Progress::new(opts.idle_timeout, "waiting for acknowledgements");
    loop {
        let mut starved = false;
        while !eof {
            if chunk.is_none() {
                if conn(d)?.write_capacity() == 0 {
                    break;
                }
                match feed.next()? {
                    Chunk::Data(b) => chunk = Some((b, 0)),
                    Chunk::Pending => {
                        starved = true;
                        break;
                    }
                    Chunk::Eof => {
                        eof = true;
                        conn(d)?.close();
                        break;
                    }
                }
            }
            let Some((b, pos)) = &mut chunk else { break };
            let w = conn(d)?.write(&b[*pos..]);
            *pos += w;
            if *pos == b.len() {
                if let Some((b, _)) = chunk.take() {
                    feed.recycle(b);
                }
            } else if w == 0 {
                break;
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
        if done {
            break;
        }
        let c = conn(d)?;
        let acked = c.data_acked();
        if starved && acked == c.stats().bytes_written {
            // Everything written is acknowledged: waiting for the source, not the network.
            progress.touch();
        }
        check_reachable(d)?;
        progress.update(acked)?;
        progress_fn(TransferProgress {
            bytes: acked,
            offset: resumed_from,
            total: None,
            elapsed: start.elapsed(),
        });
        // A starved loop looks at the source again soon. What the input triggers is sent
        // at the top of the loop, after the application wrote (`poll_input`).
        d.poll_input(if starved { SOURCE_POLL } else { TICK })?;
    }
    let elapsed = start.elapsed();
    d.close(CLOSE_DONE);
    let bytes = conn(d)?.stats().bytes_written;
    let mut r = report(d, Role::Sender, bytes, elapsed);
    r.resumed_from = resumed_from;
    Ok(r)
}

/// Receives the connection's stream into `dst` until it ends, then lingers (see
/// [`TransferOptions::linger`]) until the sender's CLOSE. A CLOSE before the end of the
/// stream is an error.
pub fn receive_stream(
    d: &mut UdpDriver,
    dst: impl Write,
    opts: &TransferOptions,
) -> Result<TransferReport, NetError> {
    receive_stream_observed(d, dst, opts, &mut |_| {})
}

/// [`receive_stream`], calling `progress` on every turn of its loop.
pub fn receive_stream_observed(
    d: &mut UdpDriver,
    mut dst: impl Write,
    opts: &TransferOptions,
    progress_fn: &mut dyn FnMut(TransferProgress),
) -> Result<TransferReport, NetError> {
    let mut first: Option<StdInstant> = None;
    let mut finished: Option<StdInstant> = None;
    let mut linger: Option<Linger> = None;
    let mut bytes = 0u64;
    let mut progress = Progress::new(opts.idle_timeout, "waiting for data");
    loop {
        let wait = match &linger {
            Some(l) => l.remaining(opts.linger, StdInstant::now()).min(TICK),
            None => TICK,
        };
        // The acknowledgements the input triggers go out after the read below, so they
        // carry the window the read opened (the simulator's order: application, then
        // transmissions); otherwise each ACK advertises the window as it was before the read.
        d.poll_input(wait)?;
        if d.session().is_none() {
            // Protected: no handshake completed yet.
            d.flush();
            progress.update(0)?;
            continue;
        }
        if first.is_none() && d.stats().datagrams_received > d.stats().datagrams_dropped {
            first = Some(StdInstant::now());
        }
        let mut err = None;
        bytes += conn(d)?.read_with(u64::MAX, |b| {
            if err.is_none() {
                err = dst.write_all(b).err();
            }
        });
        if let Some(e) = err {
            return Err(NetError::Sink(e));
        }
        if let Some(t) = first {
            let total = d.session().and_then(|s| match s.offer() {
                Some(crate::Offer {
                    content: crate::Content::File { size, .. },
                    ..
                }) => *size,
                _ => None,
            });
            progress_fn(TransferProgress {
                bytes,
                offset: 0,
                total,
                elapsed: t.elapsed(),
            });
        }
        // Reading frees buffer space: send the window update it may have triggered.
        d.flush();
        let mut closed = None;
        let c = conn(d)?;
        while let Some(ev) = c.poll_event() {
            match ev {
                Event::StreamFinished => {
                    let now = StdInstant::now();
                    finished = Some(now);
                    linger = Some(Linger::start(c, now));
                }
                Event::Closed { code } => closed = Some(code),
                _ => {}
            }
        }
        let over = match &mut linger {
            Some(l) => {
                let now = StdInstant::now();
                l.update(c, now);
                l.remaining(opts.linger, now).is_zero()
            }
            None => false,
        };
        match (finished, closed) {
            (Some(t), Some(_)) => return finish(d, &mut dst, first, bytes, t),
            (Some(t), None) if over => return finish(d, &mut dst, first, bytes, t),
            (Some(_), None) => {}
            (None, Some(CLOSE_RESUME_MISMATCH)) => return Err(NetError::ResumeRefused),
            (None, Some(code)) => return Err(NetError::PeerClosed { code }),
            (None, None) => progress.update(bytes)?,
        }
    }
}

fn finish(
    d: &UdpDriver,
    dst: &mut impl Write,
    first: Option<StdInstant>,
    bytes: u64,
    finished: StdInstant,
) -> Result<TransferReport, NetError> {
    dst.flush().map_err(NetError::Sink)?;
    let start = first.unwrap_or(finished);
    Ok(report(
        d,
        Role::Receiver,
        bytes,
        finished.duration_since(start),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tributary_proto::{Connection, ConnectionConfig, Instant};

    /// The receiver's wait after the end: at least three retransmission timeouts, restarted
    /// by every datagram of the sender (whose last ACK from us may have been lost), and over
    /// once the sender has been quiet for that long.
    #[test]
    fn linger_restarts_on_the_senders_datagrams_and_lasts_three_timeouts() {
        let mut a = Connection::new(ConnectionConfig::default(), 1).unwrap();
        let mut b = Connection::new(ConnectionConfig::default(), 1).unwrap();
        let t0 = StdInstant::now();
        let l0 = Linger::start(&b, t0);
        let rto = StdDuration::from_nanos(b.path(0).unwrap().rto.as_nanos());
        assert!(rto > StdDuration::ZERO);
        // A short configured linger is raised to three timeouts; a long one is kept.
        let short = StdDuration::from_millis(1);
        assert_eq!(l0.remaining(short, t0), rto * 3);
        assert_eq!(l0.remaining(rto * 10, t0), rto * 10);
        assert!(l0.remaining(short, t0 + rto * 3).is_zero());
        // Nothing received: time passes, the wait runs out.
        let mut l = l0;
        l.update(&b, t0 + rto * 2);
        assert_eq!(l.remaining(short, t0 + rto * 2), rto);
        // A datagram of the sender at t0 + 2 RTO restarts it from there.
        a.write(b"x");
        let mut buf = vec![0u8; 2048];
        let t = a.poll_transmit(Instant::ZERO, &mut buf).unwrap();
        b.handle_datagram(Instant::ZERO, &buf[..t.len]).unwrap();
        let later = t0 + rto * 2;
        l.update(&b, later);
        assert_eq!(l.remaining(short, later), rto * 3);
        assert_eq!(l.remaining(short, later + rto * 2), rto);
    }
}
