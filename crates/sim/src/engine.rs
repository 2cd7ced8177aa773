//! The discrete-event loop.
//!
//! Events are keyed by `(time, sequence)`; the sequence number makes ties resolve in insertion
//! order, so a run is a pure function of its configuration and seed. Each link direction keeps
//! its packets in flight in a FIFO and has at most one queued event (its head's arrival);
//! reordered packets travel as separate events. Packet events and the rest (timers, starts,
//! changes) sit in two binary heaps, and the loop pops whichever top has the smaller key: the
//! same order as one heap, but a packet event, the most frequent, no longer sifts through one
//! timer per live endpoint (1,000 flows on one link: a heap of 2 instead of about 1,000).
//!
//! Flows are built lazily: a flow's connections, application halves and routes exist from its
//! start until it is done; then its results are computed and everything else is released
//! (endpoints and routes are slab slots with generation numbers, so a stale timer or a packet
//! of a finished flow never reaches a newer one). Per-run state is bounded by what is live:
//! delivered bytes are verified where they arrive, block delays and completion times are
//! summarised online.

use crate::app::{AppContext, AppHalf, AppIo, Lifetime, RawDatagram};
use crate::config::{Direction, FlowConfig, FlowKind, SimConfig, SimConfigError};
use crate::data::{Sink, Source};
use crate::link::Link;
use crate::random::exponential;
use crate::result::{
    AppCounters, ArrivalResult, BlockDelay, DistributionSummary, FlowResult, LinkResult,
    PathResult, PathSeries, SimResult,
};
use crate::stats::Distribution;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use std::collections::binary_heap::PeekMut;
use std::collections::{BinaryHeap, VecDeque};
use tributary_proto::conn::SchemeCounters;
use tributary_proto::time::{Duration, Instant};
use tributary_proto::Connection;

/// Why a run failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    /// The configuration is invalid.
    #[error("invalid simulation: {0}")]
    Config(#[from] SimConfigError),
    /// The receiving application got bytes that differ from what was written: a protocol
    /// bug. Never ignored.
    #[error(
        "flow `{flow}`: delivered data does not match what was written (first wrong byte at \
         stream offset {offset}; {delivered} bytes delivered of {written} written)"
    )]
    Corrupted {
        /// Flow name.
        flow: String,
        /// Stream offset of the first wrong byte (or of the first byte beyond those written).
        offset: u64,
        /// Bytes delivered.
        delivered: u64,
        /// Bytes written.
        written: u64,
    },
    /// Starting a flow would pass [`SimConfig::max_live_flows`] flows running at once:
    /// flows arrive faster than the network finishes them.
    #[error(
        "`{flow}`: {live} flows are running at once, the run's max_live_flows; flows arrive \
         faster than the network finishes them (lower the arrival rate or the flows' size, \
         or raise max_live_flows if memory allows: about 16-30 KB per flow)"
    )]
    Overloaded {
        /// The flow that would have started.
        flow: String,
        /// Flows running when it would have started.
        live: usize,
    },
    /// A trace file could not be written.
    #[error("flow `{flow}`: cannot write its qlog trace: {error}")]
    Trace {
        /// Flow name.
        flow: String,
        /// The I/O error.
        error: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ev {
    /// The head of a link direction's FIFO arrives.
    LinkHead(u32),
    /// The same, its heap entry already rewritten as the next packet's `LinkHead` (see
    /// [`Simulator::pop`]); never in a heap.
    LinkHeadRearmed(u32),
    /// A packet travelling outside its link's FIFO (reordered) arrives at the end of `link`.
    Loose { slot: u32, link: u32, epoch: u32 },
    /// An endpoint's wake-up (stale unless it is the endpoint's earliest scheduled one).
    Timer { ep: u32, gen: u32 },
    /// A configured flow starts.
    Start(u32),
    /// The next flow of an arrival process arrives.
    Arrival(u32),
    /// A timed link change.
    Change(u32),
    /// Time-series sampling.
    Sample,
}

/// An event in a heap, with its time and push sequence number in one key, `time · 2⁶⁴ + seq`:
/// ordered by the key alone, so that the earliest `(time, seq)` is the heap's top (the
/// sequence numbers are unique, so two entries never tie and the event itself is never
/// compared; one 128-bit comparison instead of a tuple's).
#[derive(Debug, Clone, Copy)]
struct Queued {
    key: u128,
    ev: Ev,
}

impl Queued {
    fn new(at: Instant, seq: u64, ev: Ev) -> Self {
        Queued {
            key: u128::from(at.as_nanos()) << 64 | u128::from(seq),
            ev,
        }
    }
    fn at(&self) -> Instant {
        Instant::from_nanos((self.key >> 64) as u64)
    }
}

impl PartialEq for Queued {
    fn eq(&self, o: &Self) -> bool {
        self.key == o.key
    }
}

impl Eq for Queued {}

impl PartialOrd for Queued {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

impl Ord for Queued {
    /// Reversed: `BinaryHeap` keeps the greatest on top, the heaps want the earliest.
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        o.key.cmp(&self.key)
    }
}

#[derive(Debug, Clone, Copy)]
struct InFlight {
    arrival: Instant,
    slot: u32,
    epoch: u32,
}

/// Where the packet in a slot is.
#[derive(Debug, Clone, Copy)]
struct Meta {
    len: u32,
    route: u32,
    hop: u8,
    /// A raw application datagram, not a protocol packet.
    raw: bool,
    /// A link flipped a bit of it (corruption): only such datagrams need the receiver's
    /// checksum; the others arrive exactly as their sender wrote them.
    flipped: bool,
}

const NO_ROUTE: u32 = u32::MAX;

#[derive(Debug, Default)]
struct Route {
    links: Vec<u32>,
    dest: u32,
    data: bool,
    /// Packets on this route (slots referring to it).
    inflight: u32,
    /// Its flow is done: deliver nothing more, free the route once empty.
    dead: bool,
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
            // Nothing held adds nothing (`+ 0.0` leaves the sum as it is): the common case
            // of a reader that reads all it gets, and of every sender, spared the product.
            Some(last) if held > 0 => {
                self.integral += held as f64 * (now - last).as_nanos() as f64;
            }
            Some(_) => {}
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
    app: Box<dyn AppHalf>,
    /// What this end writes.
    src: Source,
    /// What this end reads (the peer's source, verified).
    sink: Sink,
    /// The flow's sending end (else its receiving end).
    sender: bool,
    occupancy: Occupancy,
    raw_seq: u64,
    raw_bytes: u64,
    raw_corrupt: u64,
    /// Live flow slot.
    flow: u32,
    /// Connection index within the flow.
    ci: u32,
    routes: Vec<u32>,
    /// Time of the earliest live timer event in the heap. Deadlines that move later (an RTO
    /// restarted by every ACK) push nothing: the earlier event fires, finds the deadline not
    /// yet due, and re-arms — one heap push per expiry instead of one per ACK.
    scheduled: Option<Instant>,
}

#[derive(Debug, Clone, Copy)]
struct ConnPair {
    s: u32,
    r: u32,
    /// Blocks whose send and delivery times were paired.
    paired: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// `SimConfig::flows[i]`.
    Configured(u32),
    /// Arrival process `g`.
    Arrival(u32),
}

/// A live flow.
#[derive(Debug)]
struct Flow {
    name: String,
    origin: Origin,
    conns: Vec<ConnPair>,
    start: Instant,
    lifetime: Lifetime,
    completed: Option<Instant>,
    block_delay: Distribution,
    /// Current block-delay sampling bin: (index, Σ delivery time, Σ delay, count).
    block_bin: (u64, f64, f64, u64),
    block_series: Vec<[f64; 2]>,
    path_series: Vec<PathSeries>,
    /// Per path: (bytes acked, packets lost, bytes retransmitted) at the previous sample.
    path_last: Vec<(u64, u64, u64)>,
}

/// A configured flow's state.
#[derive(Debug)]
enum Slot {
    Pending,
    Live(u32),
    Done(Box<FlowResult>),
}

/// An arrival process.
#[derive(Debug)]
struct Group {
    rng: ChaCha8Rng,
    arrived: u64,
    live: u64,
    max_live: u64,
    exhausted: bool,
    completed: u64,
    completion: Distribution,
    goodput: Distribution,
    bytes: u64,
    app: AppCounters,
}

/// A simulation, ready to run.
#[derive(Debug)]
pub struct Simulator {
    cfg: SimConfig,
    now: Instant,
    end: Instant,
    /// Packet events (`LinkHead`, `Loose`).
    packets: BinaryHeap<Queued>,
    /// Every other event (timers, starts, arrivals, changes, samples).
    others: BinaryHeap<Queued>,
    seq: u64,
    links: Vec<Link>,
    fifos: Vec<VecDeque<InFlight>>,
    routes: Vec<Route>,
    route_free: Vec<u32>,
    eps: Vec<Option<Endpoint>>,
    ep_gen: Vec<u32>,
    ep_free: Vec<u32>,
    live: Vec<Option<Flow>>,
    live_free: Vec<u32>,
    slots: Vec<Slot>,
    /// Goodput series of configured flows: (samples, bytes delivered at the last sample).
    series: Vec<(Vec<[f64; 2]>, u64)>,
    groups: Vec<Group>,
    slab: Vec<Vec<u8>>,
    meta: Vec<Meta>,
    free: Vec<u32>,
    slot_size: usize,
    raw_out: Vec<usize>,
    events: u64,
    data_delivered: u64,
    /// Flows, pending or live, and arrival processes the run waits for.
    open: usize,
    /// Configured flows that never end.
    endless: usize,
    /// Some flow or arrival process ends by itself.
    any_finite: bool,
    error: Option<SimError>,
    qlog_errors: crate::qlog::Errors,
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

/// When configured flow `fi` of `cfg` starts in a run: its `start` plus its
/// [`FlowConfig::start_jitter`](crate::FlowConfig::start_jitter) draw, which depends on the
/// run's seed and the flow's index only (a driver that runs the flow elsewhere, e.g.
/// `tributary emulate`, starts it at the same time).
pub fn flow_start(cfg: &SimConfig, fi: usize) -> Duration {
    let f = &cfg.flows[fi];
    f.start + jitter(derive_seed(cfg.seed, &[14, fi as u64]), f.start_jitter)
}

/// A uniform draw from [0, `max`] (nanoseconds) made from a 64-bit random word: integer
/// arithmetic only, so every platform draws the same.
fn jitter(word: u64, max: Duration) -> Duration {
    let span = u128::from(max.as_nanos()) + 1;
    Duration::from_nanos(((u128::from(word) * span) >> 64) as u64)
}

/// Check word of a raw datagram's header.
fn raw_check(seq: u64, sent: u64) -> u64 {
    derive_seed(seq, &[sent])
}

impl Simulator {
    /// Checks the configuration and builds the network (flows are built when they start).
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
        let templates = cfg
            .flows
            .iter()
            .chain(cfg.arrivals.iter().map(|a| &a.template));
        let slot_size = templates
            .map(|f| f.conn.max_datagram())
            .max()
            .unwrap_or(1500);
        let mut open = 0;
        let mut endless = 0;
        for f in &cfg.flows {
            match f.app.factory().lifetime() {
                Lifetime::Finite => open += 1,
                Lifetime::Endless => endless += 1,
                Lifetime::Background => {}
            }
        }
        open += cfg.arrivals.len();
        let groups = (0..cfg.arrivals.len())
            .map(|g| Group {
                rng: ChaCha8Rng::seed_from_u64(derive_seed(cfg.seed, &[11, g as u64])),
                arrived: 0,
                live: 0,
                max_live: 0,
                exhausted: false,
                completed: 0,
                completion: Distribution::default(),
                goodput: Distribution::default(),
                bytes: 0,
                app: AppCounters::default(),
            })
            .collect();
        Ok(Simulator {
            now: Instant::ZERO,
            end: Instant::ZERO + cfg.duration,
            packets: BinaryHeap::new(),
            others: BinaryHeap::new(),
            seq: 0,
            fifos: (0..links.len()).map(|_| VecDeque::new()).collect(),
            links,
            routes: Vec::new(),
            route_free: Vec::new(),
            eps: Vec::new(),
            ep_gen: Vec::new(),
            ep_free: Vec::new(),
            live: Vec::new(),
            live_free: Vec::new(),
            slots: cfg.flows.iter().map(|_| Slot::Pending).collect(),
            series: cfg.flows.iter().map(|_| (Vec::new(), 0)).collect(),
            groups,
            slab: Vec::new(),
            meta: Vec::new(),
            free: Vec::new(),
            slot_size,
            raw_out: Vec::new(),
            events: 0,
            data_delivered: 0,
            any_finite: open > 0,
            open,
            endless,
            error: None,
            qlog_errors: Default::default(),
            cfg,
        })
    }

    fn push(&mut self, at: Instant, ev: Ev) {
        self.seq += 1;
        let heap = match ev {
            Ev::LinkHead(_) | Ev::LinkHeadRearmed(_) | Ev::Loose { .. } => &mut self.packets,
            _ => &mut self.others,
        };
        heap.push(Queued::new(at, self.seq, ev));
    }

    /// The event with the smallest `(time, sequence)` of both heaps.
    ///
    /// A link head (not past the end) whose FIFO holds a next packet stays in its heap: its
    /// entry is rewritten in place as that packet's `LinkHead`, with the sequence number the
    /// push in [`Simulator::dispatch`] would have given it (nothing else is pushed between
    /// the pop and that push), and it is returned as [`Ev::LinkHeadRearmed`]. The heap then
    /// holds what it would have held after the pop and the push, for one sift instead of
    /// the pop's and the push's.
    fn pop(&mut self) -> Option<(Instant, Ev)> {
        let key = |h: &BinaryHeap<Queued>| h.peek().map(|q| q.key);
        let heap = match (key(&self.packets), key(&self.others)) {
            (Some(a), Some(b)) if b < a => &mut self.others,
            (Some(_), _) => {
                let mut top = self.packets.peek_mut()?;
                let at = top.at();
                if let Ev::LinkHead(l) = top.ev {
                    if at <= self.end {
                        if let Some(next) = self.fifos[l as usize].get(1) {
                            self.seq += 1;
                            *top = Queued::new(next.arrival, self.seq, Ev::LinkHead(l));
                            return Some((at, Ev::LinkHeadRearmed(l)));
                        }
                    }
                }
                return Some((at, PeekMut::pop(top).ev));
            }
            (None, _) => &mut self.others,
        };
        heap.pop().map(|q| (q.at(), q.ev))
    }

    /// Every flow that ends is done and none lasts forever (a run of background traffic only
    /// lasts its duration).
    fn done(&self) -> bool {
        self.open == 0 && self.endless == 0 && self.any_finite
    }

    /// Runs to the end and reports. Fails if any flow received wrong bytes.
    pub fn run(mut self) -> Result<SimResult, SimError> {
        for fi in 0..self.cfg.flows.len() {
            let t = Instant::ZERO + flow_start(&self.cfg, fi);
            self.push(t, Ev::Start(fi as u32));
        }
        for g in 0..self.cfg.arrivals.len() {
            let a = &self.cfg.arrivals[g];
            let first = Instant::ZERO + a.start;
            self.schedule_arrival(g, first);
        }
        for i in 0..self.cfg.changes.len() {
            let t = Instant::ZERO + self.cfg.changes[i].at;
            self.push(t, Ev::Change(i as u32));
        }
        if let Some(iv) = self.cfg.sample_interval {
            self.push(Instant::ZERO + iv, Ev::Sample);
        }
        while let Some((t, ev)) = self.pop() {
            if t > self.end {
                break;
            }
            self.now = t;
            self.events += 1;
            self.dispatch(ev);
            if let Some(e) = self.error.take() {
                return Err(e);
            }
            if self.done() {
                break;
            }
        }
        if !self.done() {
            self.now = self.end;
        }
        self.report()
    }

    /// Draws the next arrival of group `g` after `from` (or ends the group).
    fn schedule_arrival(&mut self, g: usize, from: Instant) {
        let a = &self.cfg.arrivals[g];
        let gap = exponential(&mut self.groups[g].rng, 1.0 / a.rate);
        let at = from + Duration::from_secs_f64(gap);
        let past_until = a.until.is_some_and(|u| at > Instant::ZERO + u);
        let counted = a.count.is_some_and(|c| self.groups[g].arrived >= c);
        if past_until || counted || at > self.end {
            self.groups[g].exhausted = true;
            self.open -= 1;
            return;
        }
        self.push(at, Ev::Arrival(g as u32));
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
                self.link_exit(l, p.slot, p.epoch);
            }
            Ev::LinkHeadRearmed(l) => {
                let p = self.fifos[l as usize]
                    .pop_front()
                    .expect("a rearmed link head has a next packet");
                self.link_exit(l, p.slot, p.epoch);
            }
            Ev::Loose { slot, link, epoch } => self.link_exit(link, slot, epoch),
            Ev::Timer { ep, gen } => {
                if self.ep_gen.get(ep as usize) != Some(&gen) {
                    return;
                }
                let Some(e) = self.eps[ep as usize].as_mut() else {
                    return;
                };
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
                let f = self.cfg.flows[fi as usize].clone();
                let name = f.name.clone();
                let seeds = [fi as u64];
                self.start_flow(&f, name, Origin::Configured(fi), &seeds);
            }
            Ev::Arrival(g) => {
                let gi = g as usize;
                let k = self.groups[gi].arrived;
                self.groups[gi].arrived += 1;
                let grp = &mut self.groups[gi];
                grp.live += 1;
                grp.max_live = grp.max_live.max(grp.live);
                self.open += 1;
                let a = &self.cfg.arrivals[gi];
                let f = a.template.clone();
                let name = format!("{}#{}", a.name, k + 1);
                self.start_flow(&f, name, Origin::Arrival(g), &[1 << 32 | u64::from(g), k]);
                self.schedule_arrival(gi, self.now);
            }
            Ev::Change(i) => self.apply_change(i as usize),
            Ev::Sample => {
                self.sample();
                let iv = self.cfg.sample_interval.unwrap_or(Duration::from_secs(1));
                let at = self.now + iv;
                self.push(at, Ev::Sample);
            }
        }
    }

    /// A packet reaches the far end of link direction `l`: lost if the link went down
    /// meanwhile (for reordered packets too), else on to its next hop.
    fn link_exit(&mut self, l: u32, slot: u32, epoch: u32) {
        let link = &mut self.links[l as usize];
        if epoch != link.epoch {
            link.stats.down_drops += 1;
            self.release(slot);
            return;
        }
        link.stats.delivered += 1;
        self.arrived(slot);
    }

    // ------------------------------------------------------------------ flows

    fn alloc_ep(&mut self, e: Endpoint) -> u32 {
        match self.ep_free.pop() {
            Some(i) => {
                self.eps[i as usize] = Some(e);
                i
            }
            None => {
                self.eps.push(Some(e));
                self.ep_gen.push(0);
                (self.eps.len() - 1) as u32
            }
        }
    }

    fn alloc_route(&mut self, r: Route) -> u32 {
        match self.route_free.pop() {
            Some(i) => {
                self.routes[i as usize] = r;
                i
            }
            None => {
                self.routes.push(r);
                (self.routes.len() - 1) as u32
            }
        }
    }

    /// Builds a flow's connections, application halves and routes, and starts it.
    fn start_flow(&mut self, f: &FlowConfig, name: String, origin: Origin, seeds: &[u64]) {
        let live = self.live.len() - self.live_free.len();
        if live >= self.cfg.max_live_flows {
            self.error
                .get_or_insert(SimError::Overloaded { flow: name, live });
            return;
        }
        let groups: Vec<Vec<usize>> = match f.kind {
            FlowKind::Multipath => vec![(0..f.paths.len()).collect()],
            FlowKind::PerPath => (0..f.paths.len()).map(|p| vec![p]).collect(),
        };
        let li = match self.live_free.pop() {
            Some(i) => i,
            None => {
                self.live.push(None);
                (self.live.len() - 1) as u32
            }
        };
        let master = self.cfg.seed;
        let seed = |tag: u64, ci: usize| {
            let mut parts = vec![tag];
            parts.extend_from_slice(seeds);
            parts.push(ci as u64);
            derive_seed(master, &parts)
        };
        let mut conns = Vec::new();
        let mut total_paths = 0;
        for (ci, group) in groups.iter().enumerate() {
            let mut cfg = f.conn.clone();
            let configured = matches!(origin, Origin::Configured(_));
            // Configured flows keep the seeds they had when all flows were built at start.
            let (cs, ss, as_, id) = if configured {
                (seed(2, ci), seed(3, ci), seed(7, ci), seed(12, ci))
            } else {
                (seed(8, ci), seed(9, ci), seed(10, ci), seed(13, ci))
            };
            cfg.seed = cs;
            // Both ends share the id, as a handshake would give them; it keys coded schemes'
            // LT lists (`LtParams::with_key`), so repetitions draw different codes.
            cfg.conn_id = id;
            let paths = group.len();
            // Validated in `SimConfig::validate`.
            let mut sconn = Connection::new(cfg.clone(), paths).expect("validated configuration");
            let mut rconn = Connection::new(cfg, paths).expect("validated configuration");
            // The CRC-32 of a datagram is computed only when a link is about to flip one of
            // its bits (`send`); an unaltered datagram is delivered as intact and its trailer
            // never read. Debug builds (the tests') seal every datagram as it is sent, so that
            // the receiver's debug check still catches a datagram altered unannounced.
            sconn.defer_checksums();
            rconn.defer_checksums();
            let ctx = AppContext {
                index: ci,
                connections: groups.len(),
                start: self.now,
                seed: as_,
                max_datagram: sconn.max_datagram(),
            };
            let (sapp, rapp) = f.app.factory().build(&ctx);
            // The reverse direction (requests, answers) has its own stream.
            let rs = derive_seed(ss, &[0x7265_7665]);
            // Each end's bytes are a function of their offset: the connections produce them
            // as they send them instead of storing what the applications wrote (debug builds
            // store them too and check every copy against the stream).
            let (ssrc, rsrc) = (Source::new(ss), Source::new(rs));
            let (ssink, rsink) = (Sink::new(rs), Sink::new(ss));
            for (conn, src, sink) in [(&mut sconn, &ssrc, &ssink), (&mut rconn, &rsrc, &rsink)] {
                conn.set_stream_source(std::sync::Arc::new(src.stream()))
                    .expect("a connection just built has written nothing");
                // And each end checks the peer's bytes as they arrive, storing none that
                // arrive in order and match: its sink counts those unchecked.
                conn.set_stream_check(std::sync::Arc::new(sink.stream()));
            }
            let s = self.alloc_ep(Endpoint {
                conn: sconn,
                app: sapp,
                src: ssrc,
                sink: ssink,
                sender: true,
                occupancy: Occupancy::default(),
                raw_seq: 0,
                raw_bytes: 0,
                raw_corrupt: 0,
                flow: li,
                ci: ci as u32,
                routes: Vec::new(),
                scheduled: None,
            });
            let r = self.alloc_ep(Endpoint {
                conn: rconn,
                app: rapp,
                src: rsrc,
                sink: rsink,
                sender: false,
                occupancy: Occupancy::default(),
                raw_seq: 0,
                raw_bytes: 0,
                raw_corrupt: 0,
                flow: li,
                ci: ci as u32,
                routes: Vec::new(),
                scheduled: None,
            });
            for &p in group {
                let fwd: Vec<u32> = f.paths[p].iter().map(|&l| 2 * l as u32).collect();
                let rev: Vec<u32> = f.paths[p].iter().rev().map(|&l| 2 * l as u32 + 1).collect();
                let fr = self.alloc_route(Route {
                    links: fwd,
                    dest: r,
                    data: true,
                    ..Route::default()
                });
                let rr = self.alloc_route(Route {
                    links: rev,
                    dest: s,
                    data: false,
                    ..Route::default()
                });
                self.ep_mut(s).routes.push(fr);
                self.ep_mut(r).routes.push(rr);
            }
            conns.push(ConnPair { s, r, paired: 0 });
            total_paths += paths;
        }
        let sampled = self.cfg.sample_interval.is_some() && matches!(origin, Origin::Configured(_));
        self.live[li as usize] = Some(Flow {
            name,
            origin,
            conns: conns.clone(),
            start: self.now,
            lifetime: f.app.factory().lifetime(),
            completed: None,
            block_delay: Distribution::default(),
            block_bin: (0, 0.0, 0.0, 0),
            block_series: Vec::new(),
            path_series: if sampled {
                vec![PathSeries::default(); total_paths]
            } else {
                Vec::new()
            },
            path_last: vec![(0, 0, 0); total_paths],
        });
        if let Origin::Configured(fi) = origin {
            self.slots[fi as usize] = Slot::Live(li);
        }
        if f.qlog {
            self.attach_tracers(li);
        }
        for c in conns {
            self.pump(c.s);
            if self.live[li as usize].is_none() {
                return;
            }
            self.pump(c.r);
            if self.live[li as usize].is_none() {
                return;
            }
        }
    }

    fn ep_mut(&mut self, ep: u32) -> &mut Endpoint {
        self.eps[ep as usize].as_mut().expect("live endpoint")
    }

    fn ep(&self, ep: u32) -> &Endpoint {
        self.eps[ep as usize].as_ref().expect("live endpoint")
    }

    fn attach_tracers(&mut self, li: u32) {
        let Some(dir) = self.cfg.qlog_dir.clone() else {
            return;
        };
        let f = self.live[li as usize].as_ref().expect("live flow");
        let name = f.name.clone();
        let conns = f.conns.clone();
        for (ci, c) in conns.iter().enumerate() {
            for (ep, role) in [(c.s, "sender"), (c.r, "receiver")] {
                let file = dir.join(crate::qlog::file_name(&name, ci, role));
                let errors = self.qlog_errors.clone();
                match crate::qlog::create(&file, &name, role, errors) {
                    Ok(t) => self.ep_mut(ep).conn.set_tracer(Box::new(t)),
                    Err(e) => {
                        self.error.get_or_insert(SimError::Trace {
                            flow: name.clone(),
                            error: format!("{}: {e}", file.display()),
                        });
                    }
                }
            }
        }
    }

    /// The flow is done: results computed, endpoints and routes released.
    fn finish_flow(&mut self, li: u32) {
        let end = self.now;
        let result = self.flow_result(li, end);
        let f = self.live[li as usize].take().expect("live flow");
        self.live_free.push(li);
        for c in &f.conns {
            for ep in [c.s, c.r] {
                let mut e = self.eps[ep as usize].take().expect("live endpoint");
                if let Some(t) = e.conn.take_tracer() {
                    // Closes the file; a write error is reported below.
                    drop(t);
                    let errors = std::mem::take(&mut *self.qlog_errors.lock().expect("lock"));
                    if let Some(error) = errors.into_iter().next() {
                        self.error.get_or_insert(SimError::Trace {
                            flow: f.name.clone(),
                            error,
                        });
                    }
                }
                self.ep_gen[ep as usize] = self.ep_gen[ep as usize].wrapping_add(1);
                self.ep_free.push(ep);
                for r in e.routes {
                    let route = &mut self.routes[r as usize];
                    route.dead = true;
                    if route.inflight == 0 {
                        self.route_free.push(r);
                    }
                }
            }
        }
        let result = match result {
            Ok(r) => r,
            Err(e) => {
                self.error.get_or_insert(e);
                return;
            }
        };
        match f.origin {
            Origin::Configured(fi) => {
                self.slots[fi as usize] = Slot::Done(Box::new(result));
            }
            Origin::Arrival(g) => self.add_to_group(g as usize, &result),
        }
    }

    fn add_to_group(&mut self, g: usize, r: &FlowResult) {
        let grp = &mut self.groups[g];
        grp.live -= 1;
        grp.bytes += r.bytes_delivered;
        if let Some(c) = r.completion_s {
            grp.completed += 1;
            grp.completion.add(c);
            grp.goodput.add(r.goodput_mbps);
        }
        if grp.app.name.is_empty() {
            grp.app.name = r.app.name.clone();
        }
        add_counters(&mut grp.app.sender, &r.app.sender);
        add_counters(&mut grp.app.receiver, &r.app.receiver);
    }

    fn check_flow_done(&mut self, li: u32) {
        let Some(f) = self.live[li as usize].as_ref() else {
            return;
        };
        if f.lifetime != Lifetime::Finite || f.completed.is_some() {
            return;
        }
        let all = f
            .conns
            .iter()
            .all(|c| self.ep(c.s).app.done() && self.ep(c.r).app.done());
        if all {
            self.live[li as usize]
                .as_mut()
                .expect("live flow")
                .completed = Some(self.now);
            self.open -= 1;
            self.finish_flow(li);
        }
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

    // ------------------------------------------------------------------ packets

    /// A free packet slot: inlined (a pump takes one per `poll_transmit` call, and gives the
    /// last back unused), growing the slab out of line.
    #[inline]
    fn alloc(&mut self) -> u32 {
        match self.free.pop() {
            Some(s) => s,
            None => self.alloc_new(),
        }
    }

    /// The slot the next [`Simulator::alloc`] returns, left free (one is added if none is).
    #[inline]
    fn next_free(&mut self) -> u32 {
        match self.free.last() {
            Some(&s) => s,
            None => {
                let s = self.alloc_new();
                self.free.push(s);
                s
            }
        }
    }

    #[inline(never)]
    fn alloc_new(&mut self) -> u32 {
        self.slab.push(vec![0; self.slot_size]);
        self.meta.push(Meta {
            len: 0,
            route: NO_ROUTE,
            hop: 0,
            raw: false,
            flipped: false,
        });
        (self.slab.len() - 1) as u32
    }

    #[inline]
    fn release(&mut self, slot: u32) {
        let m = &mut self.meta[slot as usize];
        let r = std::mem::replace(&mut m.route, NO_ROUTE);
        if r != NO_ROUTE {
            let route = &mut self.routes[r as usize];
            route.inflight -= 1;
            if route.dead && route.inflight == 0 {
                self.route_free.push(r);
            }
        }
        self.free.push(slot);
    }

    /// Puts the packet in `slot` (its `len` and `raw` set) on the first hop of `route`.
    fn launch(&mut self, slot: u32, route: u32) {
        let m = &mut self.meta[slot as usize];
        m.route = route;
        m.hop = 0;
        m.flipped = false;
        self.routes[route as usize].inflight += 1;
        self.send(slot);
    }

    /// Offers the packet in `slot` to the link of its current hop.
    fn send(&mut self, slot: u32) {
        let m = self.meta[slot as usize];
        let l = self.routes[m.route as usize].links[m.hop as usize] as usize;
        let len = m.len as usize;
        let wire = len as u64 + self.cfg.header_overhead;
        let fate = self.links[l].offer(self.now, wire, len);
        let Some(arrival) = fate.arrival else {
            self.release(slot);
            return;
        };
        if let Some(bit) = fate.corrupt_bit {
            let packet = &mut self.slab[slot as usize];
            if !m.flipped && !m.raw {
                // The sender's checksum, computed now (`defer_checksums`): over the bytes as
                // sent, before the first flip, so that the receiver's check fails.
                tributary_proto::wire::seal_checksum(&mut packet[..len]);
            }
            packet[(bit / 8) as usize] ^= 1 << (bit % 8);
            self.meta[slot as usize].flipped = true;
        }
        if fate.duplicate {
            let copy = self.alloc();
            let (a, b) = (slot as usize, copy as usize);
            let data = self.slab[a][..len].to_vec();
            self.slab[b][..len].copy_from_slice(&data);
            self.meta[b] = self.meta[a];
            self.routes[m.route as usize].inflight += 1;
            self.enqueue(l, arrival, copy);
        }
        if fate.reordered {
            let epoch = self.links[l].epoch;
            self.push(
                arrival,
                Ev::Loose {
                    slot,
                    link: l as u32,
                    epoch,
                },
            );
            return;
        }
        self.enqueue(l, arrival, slot);
    }

    #[inline(always)]
    fn enqueue(&mut self, l: usize, arrival: Instant, slot: u32) {
        let arrival = self.links[l].fifo_arrival(arrival);
        let epoch = self.links[l].epoch;
        let was_empty = self.fifos[l].is_empty();
        self.fifos[l].push_back(InFlight {
            arrival,
            slot,
            epoch,
        });
        if was_empty {
            self.push(arrival, Ev::LinkHead(l as u32));
        }
    }

    /// The packet in `slot` finished a hop: on to the next one, or to its endpoint.
    fn arrived(&mut self, slot: u32) {
        let m = self.meta[slot as usize];
        let r = &self.routes[m.route as usize];
        if (m.hop as usize) + 1 < r.links.len() {
            self.meta[slot as usize].hop += 1;
            self.send(slot);
            return;
        }
        if r.dead {
            self.release(slot);
            return;
        }
        let (dest, data) = (r.dest, r.data);
        if data {
            self.data_delivered += 1;
        }
        let len = m.len as usize;
        if m.raw {
            self.raw_arrived(dest, slot, len);
            self.release(slot);
            return;
        }
        let now = self.now;
        let e = self.eps[dest as usize]
            .as_mut()
            .expect("live route, live endpoint");
        e.occupancy.sample(now, e.conn.buffer_occupancy());
        // Malformed (corrupted) datagrams are counted inside the connection. A datagram no
        // link flipped a bit of is the sender's bytes: its checksum cannot fail, so the
        // receiver is spared recomputing it (`handle_datagram_intact`; debug builds, the
        // tests', still recompute and compare).
        let bytes = &self.slab[slot as usize][..len];
        let _ = if m.flipped {
            e.conn.handle_datagram(now, bytes)
        } else {
            e.conn.handle_datagram_intact(now, bytes)
        };
        self.release(slot);
        if data {
            self.pair_blocks(dest);
        }
        self.pump(dest);
    }

    fn raw_arrived(&mut self, dest: u32, slot: u32, len: usize) {
        let b = &self.slab[slot as usize][..len];
        let word = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
        let (seq, sent, check) = (word(0), word(1), word(2));
        // UDP-like checksum: a flipped bit anywhere is caught (the padding is zeros).
        let intact =
            check == raw_check(seq, sent) && b[RawDatagram::HEADER..].iter().all(|&x| x == 0);
        let now = self.now;
        let e = self.eps[dest as usize]
            .as_mut()
            .expect("live route, live endpoint");
        if intact {
            e.raw_bytes += len as u64;
            let d = RawDatagram {
                seq,
                sent: Instant::from_nanos(sent),
                len,
            };
            e.app.on_datagram(now, &d);
        } else {
            e.raw_corrupt += 1;
        }
    }

    /// Pairs the send and in-order delivery times of the blocks the receiving endpoint `r`
    /// newly delivered, then lets both connections forget them.
    fn pair_blocks(&mut self, r: u32) {
        let (li, ci, got) = {
            let e = self.ep(r);
            (e.flow, e.ci as usize, e.conn.block_delivered_times().len())
        };
        let f = self.live[li as usize].as_ref().expect("live flow");
        let c = f.conns[ci];
        if got <= c.paired {
            return;
        }
        let iv = self.cfg.sample_interval;
        let mut samples = Vec::new();
        {
            let (sent, dl) = (
                self.ep(c.s).conn.block_sent_times(),
                self.ep(r).conn.block_delivered_times(),
            );
            for i in c.paired..got {
                if let (Some(s), Some(d)) = (sent.get(i), dl.get(i)) {
                    samples.push((d.as_secs_f64(), (d - s).as_secs_f64() * 1e3));
                }
            }
        }
        self.ep_mut(c.s).conn.forget_blocks_before(got);
        self.ep_mut(r).conn.forget_blocks_before(got);
        let f = self.live[li as usize].as_mut().expect("live flow");
        f.conns[ci].paired = got;
        for (t, d) in samples {
            f.block_delay.add(d);
            if let Some(iv) = iv {
                let bin = (t / iv.as_secs_f64()).floor() as u64;
                if f.block_bin.3 > 0 && f.block_bin.0 != bin {
                    flush_bin(f);
                }
                f.block_bin.0 = bin;
                f.block_bin.1 += t;
                f.block_bin.2 += d;
                f.block_bin.3 += 1;
            }
        }
    }

    /// After any input to an endpoint: application, transmissions, events, wake-up.
    fn pump(&mut self, ep: u32) {
        let now = self.now;
        let Some(e) = self.eps[ep as usize].as_mut() else {
            return;
        };
        let mut io = AppIo {
            now,
            conn: &mut e.conn,
            src: &mut e.src,
            sink: &mut e.sink,
            datagrams: &mut self.raw_out,
        };
        e.app.poll(&mut io);
        while let Some(ev) = io.conn.poll_event() {
            e.app.on_event(&mut io, &ev);
        }
        let corrupt = e.sink.corrupt_at();
        if !self.raw_out.is_empty() {
            self.send_raw(ep);
        }
        loop {
            // The slot `alloc` would give, taken only if a datagram is written into it (the
            // last call of every pump writes none).
            let slot = self.next_free();
            let e = self.eps[ep as usize].as_mut().expect("live endpoint");
            match e.conn.poll_transmit(now, &mut self.slab[slot as usize]) {
                Some(t) => {
                    self.free.pop();
                    if cfg!(debug_assertions) {
                        tributary_proto::wire::seal_checksum(
                            &mut self.slab[slot as usize][..t.len],
                        );
                    }
                    let route = e.routes[t.path];
                    let m = &mut self.meta[slot as usize];
                    m.len = t.len as u32;
                    m.raw = false;
                    self.launch(slot, route);
                }
                None => break,
            }
        }
        let e = self.eps[ep as usize].as_mut().expect("live endpoint");
        let wake = e.app.next_wake();
        let next = match (e.conn.poll_timeout(), wake) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let li = e.flow;
        if let Some(t) = next {
            let t = t.max(now);
            if e.scheduled.is_none_or(|s| t < s) {
                e.scheduled = Some(t);
                let gen = self.ep_gen[ep as usize];
                self.push(t, Ev::Timer { ep, gen });
            }
        }
        if let Some(offset) = corrupt {
            self.corrupted(li, ep, offset);
            return;
        }
        self.check_flow_done(li);
    }

    /// The reader at `ep` got a wrong byte at stream `offset`.
    fn corrupted(&mut self, li: u32, ep: u32, offset: u64) {
        let f = self.live[li as usize].as_ref().expect("live flow");
        let e = self.ep(ep);
        let c = f.conns[e.ci as usize];
        let peer = self.ep(if e.sender { c.r } else { c.s });
        self.error.get_or_insert(SimError::Corrupted {
            flow: f.name.clone(),
            offset,
            delivered: e.sink.bytes(),
            written: peer.src.written(),
        });
    }

    /// Sends the raw datagrams the sending application of `ep` asked for, on its first path.
    fn send_raw(&mut self, ep: u32) {
        let lens = std::mem::take(&mut self.raw_out);
        for &len in &lens {
            let len = len.clamp(RawDatagram::HEADER, self.slot_size);
            let slot = self.alloc();
            let e = self.eps[ep as usize].as_mut().expect("live endpoint");
            let Some(&route) = e.routes.first() else {
                self.free.push(slot);
                continue;
            };
            let seq = e.raw_seq;
            e.raw_seq += 1;
            let sent = self.now.as_nanos();
            let b = &mut self.slab[slot as usize][..len];
            b[..8].copy_from_slice(&seq.to_le_bytes());
            b[8..16].copy_from_slice(&sent.to_le_bytes());
            b[16..24].copy_from_slice(&raw_check(seq, sent).to_le_bytes());
            b[24..].fill(0);
            let m = &mut self.meta[slot as usize];
            m.len = len as u32;
            m.raw = true;
            self.launch(slot, route);
        }
        self.raw_out = lens;
        self.raw_out.clear();
    }

    // ------------------------------------------------------------------ measurement

    fn flow_delivered(&self, f: &Flow) -> u64 {
        f.conns
            .iter()
            .map(|c| {
                let r = self.ep(c.r);
                r.sink.bytes() + r.raw_bytes
            })
            .sum()
    }

    fn sample(&mut self) {
        let Some(iv) = self.cfg.sample_interval else {
            return;
        };
        let t = self.now.as_secs_f64();
        let secs = iv.as_secs_f64();
        for fi in 0..self.slots.len() {
            let total = match &self.slots[fi] {
                Slot::Pending => 0,
                Slot::Done(r) => r.bytes_delivered,
                Slot::Live(li) => {
                    let li = *li;
                    self.sample_paths(li, t, secs);
                    let f = self.live[li as usize].as_ref().expect("live flow");
                    self.flow_delivered(f)
                }
            };
            let (series, last) = &mut self.series[fi];
            let mbps = (total - *last) as f64 * 8.0 / secs / 1e6;
            series.push([t, mbps]);
            *last = total;
        }
    }

    fn sample_paths(&mut self, li: u32, t: f64, secs: f64) {
        let f = self.live[li as usize].as_ref().expect("live flow");
        let mut rows = Vec::new();
        for c in &f.conns {
            let conn = &self.ep(c.s).conn;
            let st = conn.stats();
            for (p, ps) in st.paths.iter().enumerate() {
                let v = conn.path(p);
                rows.push((
                    v.map_or(0, |v| v.cwnd),
                    v.and_then(|v| v.srtt).map(|d| d.as_secs_f64() * 1e3),
                    v.map_or(0, |v| v.bytes_in_flight),
                    (ps.bytes_acked, ps.packets_lost, ps.retransmitted_bytes),
                ));
            }
        }
        let f = self.live[li as usize].as_mut().expect("live flow");
        for (k, (cwnd, srtt, inflight, now)) in rows.into_iter().enumerate() {
            let (Some(s), Some(last)) = (f.path_series.get_mut(k), f.path_last.get_mut(k)) else {
                continue;
            };
            s.t_s.push(t);
            s.cwnd_bytes.push(cwnd);
            s.srtt_ms.push(srtt);
            s.in_flight_bytes.push(inflight);
            s.throughput_mbps
                .push(now.0.saturating_sub(last.0) as f64 * 8.0 / secs / 1e6);
            s.losses.push(now.1.saturating_sub(last.1));
            s.retransmitted_bytes.push(now.2.saturating_sub(last.2));
            *last = now;
        }
    }

    /// The results of live flow `li` at `end`, verifying what its receivers read.
    fn flow_result(&mut self, li: u32, end: Instant) -> Result<FlowResult, SimError> {
        let f = self.live[li as usize].as_mut().expect("live flow");
        if f.block_bin.3 > 0 {
            flush_bin(f);
        }
        let f = self.live[li as usize].as_ref().expect("live flow");
        let name = f.name.clone();
        let mut delivered = 0;
        let mut paths: Vec<PathResult> = Vec::new();
        let mut buffer_mean = 0.0;
        let mut buffer_max = 0;
        let mut malformed = 0;
        let mut window_drops = 0;
        let mut penalizations = 0;
        let mut payload_sent = 0;
        let mut scheme = SchemeCounters::default();
        let mut app_counters = AppCounters::default();
        let stop = f.completed.unwrap_or(end);
        let active = (stop - f.start).as_secs_f64();
        for c in &f.conns {
            let (se, re) = (self.ep(c.s), self.ep(c.r));
            // Every slice was compared where it arrived; what was read must also have been
            // written, in both directions.
            for (reader, writer) in [(re, se), (se, re)] {
                let sink = &reader.sink;
                let written = writer.src.written();
                if let Some(offset) = sink
                    .corrupt_at()
                    .or((sink.read() > written).then_some(written))
                {
                    return Err(SimError::Corrupted {
                        flow: name,
                        offset,
                        delivered: sink.bytes(),
                        written,
                    });
                }
            }
            delivered += re.sink.bytes() + re.raw_bytes;
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
                    spurious_losses: st.spurious_losses,
                    undos: st.undos,
                });
            }
            buffer_mean += re.occupancy.mean(stop, re.conn.buffer_occupancy());
            buffer_max = buffer_max.max(rs.max_buffer_occupancy);
            malformed += ss.malformed + rs.malformed + re.raw_corrupt;
            window_drops += rs.window_drops;
            scheme.name = ss.scheme.name;
            add_counters(&mut scheme.sender, &ss.scheme.sender);
            add_counters(&mut scheme.receiver, &rs.scheme.receiver);
            add_counters(&mut app_counters.sender, &se.app.metrics());
            add_counters(&mut app_counters.receiver, &re.app.metrics());
        }
        app_counters.name = match f.origin {
            Origin::Configured(fi) => self.cfg.flows[fi as usize].app.name(),
            Origin::Arrival(g) => self.cfg.arrivals[g as usize].template.app.name(),
        }
        .to_string();
        let series = match f.origin {
            Origin::Configured(fi) => self.series[fi as usize].0.clone(),
            Origin::Arrival(_) => Vec::new(),
        };
        Ok(FlowResult {
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
            series,
            block_delay: block_delay(&f.block_delay),
            block_delay_series: f.block_series.clone(),
            path_series: f.path_series.clone(),
            app: app_counters,
            scheme,
        })
    }

    /// Results of a configured flow that never started.
    fn unstarted(&self, fi: usize) -> FlowResult {
        let f = &self.cfg.flows[fi];
        let zero = PathResult {
            throughput_mbps: 0.0,
            packets_sent: 0,
            packets_lost: 0,
            loss_rate: 0.0,
            retransmitted_bytes: 0,
            payload_bytes_sent: 0,
            rto_count: 0,
            srtt_ms: None,
            cwnd_bytes: 0,
            spurious_losses: 0,
            undos: 0,
        };
        FlowResult {
            name: f.name.clone(),
            bytes_delivered: 0,
            goodput_mbps: 0.0,
            completion_s: None,
            paths: vec![zero; f.paths.len()],
            buffer_mean_bytes: 0.0,
            buffer_max_bytes: 0,
            malformed_dropped: 0,
            window_drops: 0,
            penalizations: 0,
            overhead: None,
            series: self.series[fi].0.clone(),
            block_delay: None,
            block_delay_series: Vec::new(),
            path_series: Vec::new(),
            app: AppCounters {
                name: f.app.name().to_string(),
                ..AppCounters::default()
            },
            scheme: SchemeCounters {
                name: f.conn.scheme.name().to_string(),
                ..SchemeCounters::default()
            },
        }
    }

    fn report(mut self) -> Result<SimResult, SimError> {
        // Flows still live at the end: results as of now (arrivals go to their group).
        for li in 0..self.live.len() as u32 {
            if self.live[li as usize].is_some() {
                self.finish_flow(li);
                if let Some(e) = self.error.take() {
                    return Err(e);
                }
            }
        }
        let mut flows = Vec::new();
        for fi in 0..self.slots.len() {
            match std::mem::replace(&mut self.slots[fi], Slot::Pending) {
                Slot::Done(mut r) => {
                    // Samples taken after the flow finished (zero goodput) belong to it too.
                    r.series = self.series[fi].0.clone();
                    flows.push(*r);
                }
                Slot::Pending | Slot::Live(_) => flows.push(self.unstarted(fi)),
            }
        }
        let arrivals = self
            .groups
            .iter()
            .zip(&self.cfg.arrivals)
            .map(|(g, a)| ArrivalResult {
                name: a.name.clone(),
                flows: g.arrived,
                completed: g.completed,
                completion_s: DistributionSummary::of(&g.completion),
                goodput_mbps: DistributionSummary::of(&g.goodput),
                bytes_delivered: g.bytes,
                max_concurrent: g.max_live,
                app: g.app.clone(),
            })
            .collect();
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
            arrivals,
            links,
            events: self.events,
            data_packets_delivered: self.data_delivered,
        })
    }
}

fn flush_bin(f: &mut Flow) {
    let (_, st, sd, n) = f.block_bin;
    if n > 0 {
        f.block_series.push([st / n as f64, sd / n as f64]);
    }
    f.block_bin = (0, 0.0, 0.0, 0);
}

fn block_delay(d: &Distribution) -> Option<BlockDelay> {
    (d.count() > 0).then(|| BlockDelay {
        blocks: d.count(),
        mean_ms: d.mean(),
        jitter_ms: d.std_dev(),
        p95_ms: d.quantile(0.95),
        max_ms: d.max(),
    })
}

/// Adds the counters of one connection into a flow's: numbers add, arrays add element by
/// element, objects add key by key; anything else keeps the first value seen.
pub(crate) fn add_counters(acc: &mut serde_json::Value, v: &serde_json::Value) {
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

#[cfg(test)]
mod tests {
    use super::{derive_seed, jitter};
    use tributary_proto::time::Duration;

    /// `start_jitter` draws uniformly from [0, max]: the extreme words give the ends, no
    /// jitter gives 0, and the mean of many draws is max/2 (within 1 % for 10,000 draws: the
    /// standard error of the mean of a uniform is max/√(12·10⁴) ≈ 0.29 % of max, so 1 % is
    /// 3.5 standard errors).
    #[test]
    fn start_jitter_is_uniform_on_its_interval() {
        let max = Duration::from_millis(100);
        assert_eq!(jitter(0, max), Duration::ZERO);
        assert_eq!(jitter(u64::MAX, max), max);
        assert_eq!(jitter(u64::MAX, Duration::ZERO), Duration::ZERO);
        let n = 10_000u64;
        let sum: u128 = (0..n)
            .map(|i| {
                let d = jitter(derive_seed(1406, &[14, i]), max);
                assert!(d <= max);
                u128::from(d.as_nanos())
            })
            .sum();
        let mean = sum as f64 / n as f64 / max.as_nanos() as f64;
        assert!((mean - 0.5).abs() < 0.01, "mean {mean} of max");
    }

    /// `flow_start` (what `tributary emulate --transfer` uses to start its flow when the
    /// simulator would): `start` exactly without jitter; with it, within [start, start +
    /// jitter], different for two flows of one run and for two seeds, the same for the same
    /// seed and index.
    #[test]
    fn flow_start_is_start_plus_the_runs_draw() {
        use crate::config::{FlowConfig, SimConfig};
        use tributary_proto::ConnectionConfig;
        let mut flow = FlowConfig::new("f", vec![vec![0]], ConnectionConfig::default());
        flow.start = Duration::from_secs(1);
        let mut cfg = SimConfig {
            links: vec![],
            flows: vec![flow.clone(), flow],
            changes: vec![],
            duration: Duration::from_secs(5),
            seed: 3,
            header_overhead: 28,
            max_live_flows: crate::DEFAULT_MAX_LIVE_FLOWS,
            sample_interval: None,
            arrivals: vec![],
            qlog_dir: None,
        };
        assert_eq!(super::flow_start(&cfg, 0), Duration::from_secs(1));
        let j = Duration::from_millis(50);
        for f in &mut cfg.flows {
            f.start_jitter = j;
        }
        let (a, b) = (super::flow_start(&cfg, 0), super::flow_start(&cfg, 1));
        for t in [a, b] {
            assert!(
                t >= Duration::from_secs(1) && t <= Duration::from_secs(1) + j,
                "{t}"
            );
        }
        assert_ne!(a, b, "two flows drew the same start");
        assert_eq!(a, super::flow_start(&cfg, 0));
        cfg.seed = 4;
        assert_ne!(
            a,
            super::flow_start(&cfg, 0),
            "the seed does not move the draw"
        );
    }
}
