//! The discrete-event loop.
//!
//! Events sit in a binary heap keyed by `(time, sequence)`; the sequence number makes ties
//! resolve in insertion order, so a run is a pure function of its configuration and seed.
//! Each link direction keeps its packets in flight in a FIFO and has at most one heap entry
//! (its head's arrival); reordered packets travel as separate events.

use crate::app::{Sink, Source};
use crate::config::{Direction, FlowKind, SimConfig, SimConfigError};
use crate::link::Link;
use crate::result::{BlockDelay, FlowResult, LinkResult, PathResult, SimResult};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use tributary_proto::conn::SchemeCounters;
use tributary_proto::time::{Duration, Instant};
use tributary_proto::{Connection, Event};

/// Why a run failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    /// The configuration is invalid.
    #[error("invalid simulation: {0}")]
    Config(#[from] SimConfigError),
    /// The receiving application got bytes that differ from what was written: a protocol
    /// bug. Never ignored.
    #[error(
        "flow `{flow}`: delivered data does not match what was written \
         ({delivered} bytes delivered of {written} written, digest mismatch)"
    )]
    Corrupted {
        /// Flow name.
        flow: String,
        /// Bytes delivered.
        delivered: u64,
        /// Bytes written.
        written: u64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// The head of a link direction's FIFO arrives.
    LinkHead(u32),
    /// A packet travelling outside its link's FIFO (reordered) arrives.
    Loose { slot: u32, route: u32, hop: u8 },
    /// An endpoint's timer check (stale unless it is the endpoint's earliest scheduled one).
    Timer(u32),
    /// A flow's application starts.
    Start(u32),
    /// A timed link change.
    Change(u32),
    /// A rate-limited reader reads.
    Read(u32),
    /// Goodput sampling.
    Sample,
}

#[derive(Debug, Clone, Copy)]
struct InFlight {
    arrival: Instant,
    slot: u32,
    route: u32,
    hop: u8,
    epoch: u32,
}

#[derive(Debug)]
struct Route {
    links: Vec<u32>,
    dest: u32,
    data: bool,
}

#[derive(Debug)]
enum Role {
    Sender { src: Source, limit: Option<u64> },
    Receiver { sink: Sink, occupancy: Occupancy },
}

/// Time-weighted receive-buffer occupancy, integrated at datagram arrivals (where it
/// changes): the simulator's measurement, kept out of the connection.
#[derive(Debug, Default)]
struct Occupancy {
    since: Option<Instant>,
    last: Option<Instant>,
    integral: f64,
}

impl Occupancy {
    /// Accounts for the occupancy `held` since the previous sample, up to `now`.
    fn sample(&mut self, now: Instant, held: u64) {
        match self.last {
            Some(last) => self.integral += held as f64 * (now - last).as_nanos() as f64,
            None => self.since = Some(now),
        }
        self.last = Some(now);
    }

    /// Mean from the first sample to `now`, the occupancy being `held` since the last one.
    fn mean(&self, now: Instant, held: u64) -> f64 {
        let (Some(t0), Some(last)) = (self.since, self.last) else {
            return 0.0;
        };
        let span = (now - t0).as_nanos() as f64;
        if span == 0.0 {
            held as f64
        } else {
            (self.integral + held as f64 * (now - last).as_nanos() as f64) / span
        }
    }
}

#[derive(Debug)]
struct Endpoint {
    conn: Connection,
    role: Role,
    flow: u32,
    routes: Vec<u32>,
    /// Time of the earliest live timer event in the heap. Deadlines that move later (an RTO
    /// restarted by every ACK) push nothing: the earlier event fires, finds the deadline not
    /// yet due, and re-arms — one heap push per expiry instead of one per ACK.
    scheduled: Option<Instant>,
    started: bool,
    finished: bool,
    read_rate_bps: Option<u64>,
}

#[derive(Debug)]
struct Flow {
    /// (sender, receiver) endpoint per connection.
    conns: Vec<(u32, u32)>,
    start: Instant,
    finite: bool,
    completed: Option<Instant>,
    series: Vec<[f64; 2]>,
    last_sample: u64,
}

/// Read tick for rate-limited applications.
const READ_TICK: Duration = Duration::from_millis(1);

/// A simulation, ready to run.
#[derive(Debug)]
pub struct Simulator {
    cfg: SimConfig,
    now: Instant,
    end: Instant,
    heap: BinaryHeap<Reverse<(Instant, u64, Ev)>>,
    seq: u64,
    links: Vec<Link>,
    fifos: Vec<VecDeque<InFlight>>,
    routes: Vec<Route>,
    eps: Vec<Endpoint>,
    flows: Vec<Flow>,
    slab: Vec<Vec<u8>>,
    lens: Vec<u32>,
    free: Vec<u32>,
    slot_size: usize,
    events: u64,
    data_delivered: u64,
    open_finite: usize,
    any_bulk: bool,
}

/// Derives an independent 64-bit seed (SplitMix64 finaliser over the inputs).
pub fn derive_seed(master: u64, parts: &[u64]) -> u64 {
    let mut x = master ^ 0x5851_F42D_4C95_7F2D;
    for &p in parts {
        x = x.wrapping_add(p).wrapping_add(0x9E37_79B9_7F4A_7C15);
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        x ^= x >> 31;
    }
    x
}

impl Simulator {
    /// Builds the network and endpoints.
    pub fn new(cfg: SimConfig) -> Result<Self, SimError> {
        cfg.validate()?;
        let mut links = Vec::new();
        for (i, l) in cfg.links.iter().enumerate() {
            links.push(Link::new(
                l.forward.clone(),
                derive_seed(cfg.seed, &[1, i as u64, 0]),
            ));
            links.push(Link::new(
                l.reverse.clone(),
                derive_seed(cfg.seed, &[1, i as u64, 1]),
            ));
        }
        let mut sim = Simulator {
            now: Instant::ZERO,
            end: Instant::ZERO + cfg.duration,
            heap: BinaryHeap::new(),
            seq: 0,
            fifos: (0..links.len()).map(|_| VecDeque::new()).collect(),
            links,
            routes: Vec::new(),
            eps: Vec::new(),
            flows: Vec::new(),
            slab: Vec::new(),
            lens: Vec::new(),
            free: Vec::new(),
            slot_size: cfg
                .flows
                .iter()
                .map(|f| f.conn.max_datagram())
                .max()
                .unwrap_or(1500),
            events: 0,
            data_delivered: 0,
            open_finite: 0,
            any_bulk: false,
            cfg,
        };
        for fi in 0..sim.cfg.flows.len() {
            sim.build_flow(fi);
        }
        Ok(sim)
    }

    fn build_flow(&mut self, fi: usize) {
        let f = self.cfg.flows[fi].clone();
        let groups: Vec<Vec<usize>> = match f.kind {
            FlowKind::Multipath => vec![(0..f.paths.len()).collect()],
            FlowKind::PerPath => (0..f.paths.len()).map(|p| vec![p]).collect(),
        };
        let n = groups.len() as u64;
        let mut conns = Vec::new();
        for (ci, group) in groups.iter().enumerate() {
            let mut cfg = f.conn.clone();
            cfg.seed = derive_seed(self.cfg.seed, &[2, fi as u64, ci as u64]);
            let limit = f.bytes.map(|b| b / n + u64::from((ci as u64) < b % n));
            let sender = self.eps.len() as u32;
            let receiver = sender + 1;
            let mut s_routes = Vec::new();
            let mut r_routes = Vec::new();
            for &p in group {
                let fwd: Vec<u32> = f.paths[p].iter().map(|&l| 2 * l as u32).collect();
                let rev: Vec<u32> = f.paths[p].iter().rev().map(|&l| 2 * l as u32 + 1).collect();
                s_routes.push(self.routes.len() as u32);
                self.routes.push(Route {
                    links: fwd,
                    dest: receiver,
                    data: true,
                });
                r_routes.push(self.routes.len() as u32);
                self.routes.push(Route {
                    links: rev,
                    dest: sender,
                    data: false,
                });
            }
            let paths = group.len();
            // Validated in `SimConfig::validate`.
            let sconn = Connection::new(cfg.clone(), paths).expect("validated configuration");
            let rconn = Connection::new(cfg, paths).expect("validated configuration");
            let src = Source::new(derive_seed(self.cfg.seed, &[3, fi as u64, ci as u64]));
            self.eps.push(Endpoint {
                conn: sconn,
                role: Role::Sender { src, limit },
                flow: fi as u32,
                routes: s_routes,
                scheduled: None,
                started: false,
                finished: false,
                read_rate_bps: None,
            });
            self.eps.push(Endpoint {
                conn: rconn,
                role: Role::Receiver {
                    sink: Sink::default(),
                    occupancy: Occupancy::default(),
                },
                flow: fi as u32,
                routes: r_routes,
                scheduled: None,
                started: true,
                finished: false,
                read_rate_bps: f.read_rate_bps,
            });
            conns.push((sender, receiver));
        }
        let finite = f.bytes.is_some();
        if finite {
            self.open_finite += 1;
        } else {
            self.any_bulk = true;
        }
        self.flows.push(Flow {
            conns,
            start: Instant::ZERO + f.start,
            finite,
            completed: None,
            series: Vec::new(),
            last_sample: 0,
        });
    }

    fn push(&mut self, at: Instant, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, ev)));
    }

    /// Runs to the end and reports. Fails if any flow received wrong bytes.
    pub fn run(mut self) -> Result<SimResult, SimError> {
        for fi in 0..self.flows.len() {
            let t = self.flows[fi].start;
            self.push(t, Ev::Start(fi as u32));
        }
        for i in 0..self.cfg.changes.len() {
            let t = Instant::ZERO + self.cfg.changes[i].at;
            self.push(t, Ev::Change(i as u32));
        }
        if let Some(iv) = self.cfg.sample_interval {
            self.push(Instant::ZERO + iv, Ev::Sample);
        }
        while let Some(Reverse((t, _, ev))) = self.heap.pop() {
            if t > self.end {
                break;
            }
            self.now = t;
            self.events += 1;
            self.dispatch(ev);
            if self.open_finite == 0 && !self.any_bulk {
                break;
            }
        }
        let stop = if self.open_finite == 0 && !self.any_bulk {
            self.now
        } else {
            self.end
        };
        self.now = stop;
        self.report()
    }

    fn dispatch(&mut self, ev: Ev) {
        match ev {
            Ev::LinkHead(l) => {
                let Some(p) = self.fifos[l as usize].pop_front() else {
                    return;
                };
                if let Some(next) = self.fifos[l as usize].front() {
                    let at = next.arrival;
                    self.push(at, Ev::LinkHead(l));
                }
                if p.epoch != self.links[l as usize].epoch {
                    self.links[l as usize].stats.down_drops += 1;
                    self.release(p.slot);
                    return;
                }
                self.arrived(p.slot, p.route, p.hop);
            }
            Ev::Loose { slot, route, hop } => self.arrived(slot, route, hop),
            Ev::Timer(ep) => {
                let e = &mut self.eps[ep as usize];
                if e.scheduled != Some(self.now) {
                    return;
                }
                e.scheduled = None;
                if e.conn.poll_timeout().is_some_and(|t| t <= self.now) {
                    e.conn.handle_timeout(self.now);
                }
                self.pump(ep);
            }
            Ev::Start(fi) => {
                let conns = self.flows[fi as usize].conns.clone();
                for (s, r) in conns {
                    self.eps[s as usize].started = true;
                    self.pump(s);
                    if self.eps[r as usize].read_rate_bps.is_some() {
                        let at = self.now + READ_TICK;
                        self.push(at, Ev::Read(r));
                    }
                }
            }
            Ev::Change(i) => self.apply_change(i as usize),
            Ev::Read(ep) => {
                let e = &mut self.eps[ep as usize];
                let rate = e.read_rate_bps.unwrap_or(u64::MAX);
                let budget =
                    (rate as u128 * READ_TICK.as_nanos() as u128 / 8 / 1_000_000_000).max(1) as u64;
                if let Role::Receiver { sink, .. } = &mut e.role {
                    e.conn.read_with(budget, |s| sink.consume(s));
                }
                self.pump(ep);
                if !self.eps[ep as usize].finished {
                    let at = self.now + READ_TICK;
                    self.push(at, Ev::Read(ep));
                }
            }
            Ev::Sample => {
                let iv = self.cfg.sample_interval.unwrap_or(Duration::from_secs(1));
                for fi in 0..self.flows.len() {
                    let total = self.delivered(fi);
                    let f = &mut self.flows[fi];
                    let mbps = (total - f.last_sample) as f64 * 8.0 / iv.as_secs_f64() / 1e6;
                    f.series.push([self.now.as_secs_f64(), mbps]);
                    f.last_sample = total;
                }
                let at = self.now + iv;
                self.push(at, Ev::Sample);
            }
        }
    }

    fn delivered(&self, fi: usize) -> u64 {
        self.flows[fi]
            .conns
            .iter()
            .map(|&(_, r)| match &self.eps[r as usize].role {
                Role::Receiver { sink, .. } => sink.read(),
                Role::Sender { .. } => 0,
            })
            .sum()
    }

    fn apply_change(&mut self, i: usize) {
        let c = self.cfg.changes[i].clone();
        let dirs: &[usize] = match c.direction {
            Direction::Forward => &[0],
            Direction::Reverse => &[1],
            Direction::Both => &[0, 1],
        };
        for &d in dirs {
            let l = &mut self.links[2 * c.link + d];
            if let Some(r) = c.change.rate_bps {
                l.params.rate_bps = r;
            }
            if let Some(dl) = c.change.delay {
                l.params.delay = dl;
            }
            if let Some(loss) = c.change.loss {
                l.params.loss = loss;
            }
            if let Some(up) = c.change.up {
                l.set_up(up);
            }
        }
    }

    fn alloc(&mut self) -> u32 {
        if let Some(s) = self.free.pop() {
            return s;
        }
        self.slab.push(vec![0; self.slot_size]);
        self.lens.push(0);
        (self.slab.len() - 1) as u32
    }

    fn release(&mut self, slot: u32) {
        self.free.push(slot);
    }

    /// Puts the packet in `slot` on hop `hop` of `route`.
    fn send(&mut self, slot: u32, route: u32, hop: u8) {
        let l = self.routes[route as usize].links[hop as usize] as usize;
        let len = self.lens[slot as usize] as usize;
        let wire = len as u64 + self.cfg.header_overhead;
        let fate = self.links[l].offer(self.now, wire, len);
        let Some(mut arrival) = fate.arrival else {
            self.release(slot);
            return;
        };
        if let Some(bit) = fate.corrupt_bit {
            self.slab[slot as usize][(bit / 8) as usize] ^= 1 << (bit % 8);
        }
        if fate.duplicate {
            let copy = self.alloc();
            let (a, b) = (slot as usize, copy as usize);
            let data = self.slab[a][..len].to_vec();
            self.slab[b][..len].copy_from_slice(&data);
            self.lens[b] = len as u32;
            self.enqueue(l, arrival, copy, route, hop);
        }
        if fate.reordered {
            self.push(arrival, Ev::Loose { slot, route, hop });
            return;
        }
        arrival = arrival.max(self.links[l].last_arrival);
        self.enqueue(l, arrival, slot, route, hop);
    }

    fn enqueue(&mut self, l: usize, arrival: Instant, slot: u32, route: u32, hop: u8) {
        let arrival = arrival.max(self.links[l].last_arrival);
        self.links[l].last_arrival = arrival;
        let epoch = self.links[l].epoch;
        let was_empty = self.fifos[l].is_empty();
        self.fifos[l].push_back(InFlight {
            arrival,
            slot,
            route,
            hop,
            epoch,
        });
        if was_empty {
            self.push(arrival, Ev::LinkHead(l as u32));
        }
    }

    fn arrived(&mut self, slot: u32, route: u32, hop: u8) {
        let r = &self.routes[route as usize];
        if (hop as usize) + 1 < r.links.len() {
            self.send(slot, route, hop + 1);
            return;
        }
        let dest = r.dest;
        if r.data {
            self.data_delivered += 1;
        }
        let len = self.lens[slot as usize] as usize;
        let e = &mut self.eps[dest as usize];
        if let Role::Receiver { occupancy, .. } = &mut e.role {
            occupancy.sample(self.now, e.conn.buffer_occupancy());
        }
        // Malformed (corrupted) datagrams are counted inside the connection.
        let _ = e
            .conn
            .handle_datagram(self.now, &self.slab[slot as usize][..len]);
        self.release(slot);
        self.pump(dest);
    }

    /// After any input to an endpoint: application I/O, transmissions, events, timer.
    fn pump(&mut self, ep: u32) {
        let now = self.now;
        {
            let e = &mut self.eps[ep as usize];
            match &mut e.role {
                Role::Sender { src, limit } if e.started => {
                    let left = limit.map_or(u64::MAX, |l| l - src.written());
                    let n = (e.conn.write_capacity() as u64).min(left) as usize;
                    if n > 0 {
                        e.conn.write_with(n, |dst| src.produce(dst));
                    }
                    if limit.is_some_and(|l| src.written() == l) {
                        e.conn.close();
                    }
                }
                Role::Receiver { sink, .. } if e.read_rate_bps.is_none() => {
                    e.conn.read_with(u64::MAX, |s| sink.consume(s));
                }
                _ => {}
            }
        }
        loop {
            let slot = self.alloc();
            let e = &mut self.eps[ep as usize];
            match e.conn.poll_transmit(now, &mut self.slab[slot as usize]) {
                Some(t) => {
                    self.lens[slot as usize] = t.len as u32;
                    let route = e.routes[t.path];
                    self.send(slot, route, 0);
                }
                None => {
                    self.release(slot);
                    break;
                }
            }
        }
        while let Some(ev) = self.eps[ep as usize].conn.poll_event() {
            if ev == Event::StreamFinished {
                self.eps[ep as usize].finished = true;
                self.check_flow_done(self.eps[ep as usize].flow as usize);
            }
        }
        let e = &mut self.eps[ep as usize];
        if let Some(t) = e.conn.poll_timeout() {
            let t = t.max(now);
            if e.scheduled.is_none_or(|s| t < s) {
                e.scheduled = Some(t);
                self.push(t, Ev::Timer(ep));
            }
        }
    }

    fn check_flow_done(&mut self, fi: usize) {
        let f = &self.flows[fi];
        if !f.finite || f.completed.is_some() {
            return;
        }
        if f.conns.iter().all(|&(_, r)| self.eps[r as usize].finished) {
            self.flows[fi].completed = Some(self.now);
            self.open_finite -= 1;
        }
    }

    fn report(&self) -> Result<SimResult, SimError> {
        let mut flows = Vec::new();
        for (fi, f) in self.flows.iter().enumerate() {
            let name = self.cfg.flows[fi].name.clone();
            let mut delivered = 0;
            let mut paths: Vec<PathResult> = Vec::new();
            let mut buffer_mean = 0.0;
            let mut buffer_max = 0;
            let mut malformed = 0;
            let mut window_drops = 0;
            let mut penalizations = 0;
            let mut payload_sent = 0;
            let mut delays: Vec<(f64, f64)> = Vec::new();
            let mut scheme = SchemeCounters::default();
            let end = f.completed.unwrap_or(self.now);
            let active = (end - f.start).as_secs_f64();
            for &(s, r) in &f.conns {
                let (se, re) = (&self.eps[s as usize], &self.eps[r as usize]);
                let (Role::Sender { src, .. }, Role::Receiver { sink, occupancy }) =
                    (&se.role, &re.role)
                else {
                    unreachable!("endpoints are built in sender/receiver pairs")
                };
                // Length + hash: what was read must be a prefix of what was written.
                if src.digest_of_prefix(sink.read()) != Some(sink.digest()) {
                    return Err(SimError::Corrupted {
                        flow: name,
                        delivered: sink.read(),
                        written: src.written(),
                    });
                }
                delivered += sink.read();
                let ss = se.conn.stats();
                let rs = re.conn.stats();
                for (p, st) in ss.paths.iter().enumerate() {
                    let view = se.conn.path(p);
                    penalizations += st.penalizations;
                    payload_sent += st.payload_bytes_sent;
                    paths.push(PathResult {
                        throughput_mbps: if active > 0.0 {
                            st.bytes_acked as f64 * 8.0 / active / 1e6
                        } else {
                            0.0
                        },
                        packets_sent: st.packets_sent,
                        packets_lost: st.packets_lost,
                        loss_rate: if st.packets_sent > 0 {
                            st.packets_lost as f64 / st.packets_sent as f64
                        } else {
                            0.0
                        },
                        retransmitted_bytes: st.retransmitted_bytes,
                        payload_bytes_sent: st.payload_bytes_sent,
                        rto_count: st.rto_count,
                        srtt_ms: view.and_then(|v| v.srtt).map(|d| d.as_secs_f64() * 1e3),
                        cwnd_bytes: view.map_or(0, |v| v.cwnd),
                    });
                }
                buffer_mean += occupancy.mean(end, re.conn.buffer_occupancy());
                buffer_max = buffer_max.max(rs.max_buffer_occupancy);
                malformed += ss.malformed + rs.malformed;
                window_drops += rs.window_drops;
                scheme.name = ss.scheme.name;
                add_counters(&mut scheme.sender, &ss.scheme.sender);
                add_counters(&mut scheme.receiver, &rs.scheme.receiver);
                let (sent, got) = (se.conn.block_sent_times(), re.conn.block_delivered_times());
                for i in 0..got.len() {
                    if let (Some(s), Some(d)) = (sent.get(i), got.get(i)) {
                        delays.push((d.as_secs_f64(), (d - s).as_secs_f64() * 1e3));
                    }
                }
            }
            flows.push(FlowResult {
                name,
                bytes_delivered: delivered,
                goodput_mbps: if active > 0.0 {
                    delivered as f64 * 8.0 / active / 1e6
                } else {
                    0.0
                },
                completion_s: f.completed.map(|c| (c - f.start).as_secs_f64()),
                paths,
                buffer_mean_bytes: buffer_mean,
                buffer_max_bytes: buffer_max,
                malformed_dropped: malformed,
                window_drops,
                penalizations,
                overhead: (delivered > 0)
                    .then(|| (payload_sent as f64 / delivered as f64 - 1.0).max(0.0)),
                series: f.series.clone(),
                block_delay: block_delay(&delays),
                block_delay_series: if self.cfg.sample_interval.is_some() {
                    delays.iter().map(|&(t, d)| [t, d]).collect()
                } else {
                    Vec::new()
                },
                scheme,
            });
        }
        let links = self
            .cfg
            .links
            .iter()
            .enumerate()
            .map(|(i, l)| LinkResult {
                name: l.name.clone(),
                forward: self.links[2 * i].stats,
                reverse: self.links[2 * i + 1].stats,
            })
            .collect();
        Ok(SimResult {
            sim_seconds: self.now.as_secs_f64(),
            flows,
            links,
            events: self.events,
            data_packets_delivered: self.data_delivered,
        })
    }
}

fn block_delay(delays: &[(f64, f64)]) -> Option<BlockDelay> {
    if delays.is_empty() {
        return None;
    }
    let n = delays.len() as f64;
    let mean = delays.iter().map(|d| d.1).sum::<f64>() / n;
    let var = delays.iter().map(|d| (d.1 - mean).powi(2)).sum::<f64>() / n;
    let mut sorted: Vec<f64> = delays.iter().map(|d| d.1).collect();
    sorted.sort_by(f64::total_cmp);
    let p95 = sorted[((sorted.len() as f64 * 0.95).ceil() as usize).clamp(1, sorted.len()) - 1];
    Some(BlockDelay {
        blocks: delays.len() as u64,
        mean_ms: mean,
        jitter_ms: var.sqrt(),
        p95_ms: p95,
        max_ms: sorted[sorted.len() - 1],
    })
}

/// Adds scheme counters of one connection into a flow's: numbers add, arrays add element by
/// element, objects add key by key; anything else keeps the first value seen.
fn add_counters(acc: &mut serde_json::Value, v: &serde_json::Value) {
    use serde_json::Value;
    match (&mut *acc, v) {
        (_, Value::Null) => {}
        (Value::Null, _) => *acc = v.clone(),
        (Value::Number(a), Value::Number(b)) => {
            *a = match (a.as_u64(), b.as_u64()) {
                (Some(x), Some(y)) => x.saturating_add(y).into(),
                _ => serde_json::Number::from_f64(
                    a.as_f64().unwrap_or(0.0) + b.as_f64().unwrap_or(0.0),
                )
                .unwrap_or_else(|| a.clone()),
            };
        }
        (Value::Array(a), Value::Array(b)) => {
            for (i, x) in b.iter().enumerate() {
                match a.get_mut(i) {
                    Some(y) => add_counters(y, x),
                    None => a.push(x.clone()),
                }
            }
        }
        (Value::Object(a), Value::Object(b)) => {
            for (k, x) in b {
                add_counters(a.entry(k.clone()).or_insert(Value::Null), x);
            }
        }
        _ => {}
    }
}
