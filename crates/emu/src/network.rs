//! The emulated network: the scenario's links (the shared [`tributary_link::Link`] model)
//! and the routes over them, driven by the caller's clock.
//!
//! This is the emulator's counterpart of the simulator's packet transport (`crates/sim`,
//! `engine.rs`: `send`, `enqueue`, the link-head events): a packet offered to a route is
//! offered to its first link at the time it was read; the link's [`Fate`] says whether and
//! when it arrives; it then goes on to the next link of the route *at its arrival time*, and
//! after the last link it is delivered. Packets that are not reordered leave each link in
//! order ([`Link::fifo_arrival`]), a duplicate copy travels in the FIFO with the original's
//! arrival, a corrupted packet has one bit flipped, and a packet still in flight when its link
//! goes down is lost (link epochs). Timed changes apply at their time.
//!
//! Nothing here reads a clock or does I/O: [`Network::inject`] and [`Network::advance`] take
//! the time, so the same configuration, seed and sequence of injections give the same
//! deliveries at the same (scheduled) times, in virtual time (tests) as in real time.
//!
//! [`Fate`]: tributary_link::Fate

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use tributary_link::Link;
use tributary_proto::time::Instant;
use tributary_sim::{derive_seed, Direction, LinkStats, SimConfig, TimedChange};

/// A route through the network: link directions in order, and where packets end up.
#[derive(Debug, Clone)]
pub struct Route {
    /// Link-direction indices (`2 * link` forward, `2 * link + 1` reverse).
    pub hops: Vec<usize>,
    /// Caller's index of the destination (e.g. which TUN device to write to).
    pub dest: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// The head of a link direction's FIFO arrives.
    Head(u32),
    /// A packet travelling outside its link's FIFO (reordered) arrives.
    Loose(u32),
    /// A timed change.
    Change(u32),
}

#[derive(Debug, Clone, Copy)]
struct InFlight {
    slot: u32,
    route: u32,
    hop: u32,
    link: u32,
    epoch: u32,
}

/// A packet leaving the network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// The route's destination.
    pub dest: usize,
    /// When the model says it arrives.
    pub at: Instant,
    /// The packet (with a bit flipped if the link corrupted it).
    pub packet: Vec<u8>,
}

/// Links, routes and the packets in flight.
#[derive(Debug)]
pub struct Network {
    links: Vec<Link>,
    names: Vec<String>,
    fifos: Vec<VecDeque<(Instant, InFlight)>>,
    loose: Vec<Option<InFlight>>,
    loose_free: Vec<u32>,
    routes: Vec<Route>,
    changes: Vec<TimedChange>,
    heap: BinaryHeap<Reverse<(Instant, u64, Ev)>>,
    seq: u64,
    slab: Vec<Vec<u8>>,
    free: Vec<u32>,
    header_overhead: u64,
    in_flight: usize,
}

impl Network {
    /// The links of `cfg` (seeded from `cfg.seed` exactly as the simulator seeds them) and its
    /// timed changes, counted from time zero; no route yet. `header_overhead` bytes are added
    /// to each packet's size on the wire (0 when packets are whole IP packets, as on TUN
    /// devices; the simulator's datagrams get the scenario's `header_overhead`).
    pub fn new(cfg: &SimConfig, header_overhead: u64) -> Network {
        let mut links = Vec::new();
        let mut names = Vec::new();
        for (i, l) in cfg.links.iter().enumerate() {
            // Same derivation as the simulator's `Simulator::new`.
            links.push(Link::new(
                l.forward.clone(),
                derive_seed(cfg.seed, &[1, i as u64, 0]),
            ));
            links.push(Link::new(
                l.reverse.clone(),
                derive_seed(cfg.seed, &[1, i as u64, 1]),
            ));
            names.push(l.name.clone());
        }
        let mut net = Network {
            fifos: (0..links.len()).map(|_| VecDeque::new()).collect(),
            links,
            names,
            loose: Vec::new(),
            loose_free: Vec::new(),
            routes: Vec::new(),
            changes: cfg.changes.clone(),
            heap: BinaryHeap::new(),
            seq: 0,
            slab: Vec::new(),
            free: Vec::new(),
            header_overhead,
            in_flight: 0,
        };
        for i in 0..net.changes.len() {
            let at = Instant::ZERO + net.changes[i].at;
            net.push(at, Ev::Change(i as u32));
        }
        net
    }

    /// Adds a route and returns its index.
    pub fn add_route(&mut self, route: Route) -> usize {
        assert!(
            route.hops.iter().all(|&h| h < self.links.len()),
            "route uses an unknown link"
        );
        assert!(!route.hops.is_empty(), "a route needs a link");
        self.routes.push(route);
        self.routes.len() - 1
    }

    /// Per link (in configuration order): name, forward and reverse counters.
    pub fn stats(&self) -> Vec<(String, LinkStats, LinkStats)> {
        self.names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                (
                    n.clone(),
                    self.links[2 * i].stats,
                    self.links[2 * i + 1].stats,
                )
            })
            .collect()
    }

    /// Packets in flight (queued or propagating).
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// The earliest time something is due, if anything is.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse((t, _, _))| *t)
    }

    /// Offers `packet` to `route` at `now`. Call [`Network::advance`] up to `now` first, so
    /// that everything due earlier has happened.
    pub fn inject(&mut self, now: Instant, route: usize, packet: &[u8]) {
        let slot = self.alloc(packet);
        self.in_flight += 1;
        self.send(now, slot, route as u32, 0);
    }

    /// Processes everything due at or before `now` in time order and hands each packet that
    /// leaves the network to `out`.
    pub fn advance(&mut self, now: Instant, mut out: impl FnMut(Delivery)) {
        while let Some(&Reverse((t, _, ev))) = self.heap.peek() {
            if t > now {
                break;
            }
            self.heap.pop();
            match ev {
                Ev::Head(l) => {
                    let Some((_, p)) = self.fifos[l as usize].pop_front() else {
                        continue;
                    };
                    if let Some(&(next, _)) = self.fifos[l as usize].front() {
                        self.push(next, Ev::Head(l));
                    }
                    self.arrived(t, p, &mut out);
                }
                Ev::Loose(i) => {
                    let p = self.loose[i as usize].take().expect("loose packet");
                    self.loose_free.push(i);
                    self.arrived(t, p, &mut out);
                }
                Ev::Change(i) => self.apply_change(i as usize),
            }
        }
    }

    fn push(&mut self, at: Instant, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, ev)));
    }

    fn alloc(&mut self, packet: &[u8]) -> u32 {
        match self.free.pop() {
            Some(s) => {
                let b = &mut self.slab[s as usize];
                b.clear();
                b.extend_from_slice(packet);
                s
            }
            None => {
                self.slab.push(packet.to_vec());
                (self.slab.len() - 1) as u32
            }
        }
    }

    fn release(&mut self, slot: u32) {
        self.free.push(slot);
        self.in_flight -= 1;
    }

    /// Puts the packet in `slot` on hop `hop` of `route` at time `t`.
    fn send(&mut self, t: Instant, slot: u32, route: u32, hop: u32) {
        let l = self.routes[route as usize].hops[hop as usize];
        let len = self.slab[slot as usize].len();
        let fate = self.links[l].offer(t, len as u64 + self.header_overhead, len);
        let Some(arrival) = fate.arrival else {
            self.release(slot);
            return;
        };
        if let Some(bit) = fate.corrupt_bit {
            self.slab[slot as usize][(bit / 8) as usize] ^= 1 << (bit % 8);
        }
        let epoch = self.links[l].epoch;
        let p = InFlight {
            slot,
            route,
            hop,
            link: l as u32,
            epoch,
        };
        if fate.duplicate {
            let data = std::mem::take(&mut self.slab[slot as usize]);
            let copy = self.alloc(&data);
            self.slab[slot as usize] = data;
            self.in_flight += 1;
            self.enqueue(l, arrival, InFlight { slot: copy, ..p });
        }
        if fate.reordered {
            let i = match self.loose_free.pop() {
                Some(i) => {
                    self.loose[i as usize] = Some(p);
                    i
                }
                None => {
                    self.loose.push(Some(p));
                    (self.loose.len() - 1) as u32
                }
            };
            self.push(arrival, Ev::Loose(i));
            return;
        }
        self.enqueue(l, arrival, p);
    }

    fn enqueue(&mut self, l: usize, arrival: Instant, p: InFlight) {
        let arrival = self.links[l].fifo_arrival(arrival);
        let was_empty = self.fifos[l].is_empty();
        self.fifos[l].push_back((arrival, p));
        if was_empty {
            self.push(arrival, Ev::Head(l as u32));
        }
    }

    fn arrived(&mut self, t: Instant, p: InFlight, out: &mut impl FnMut(Delivery)) {
        // A packet in flight when its link went down is lost (reordered ones too).
        if p.epoch != self.links[p.link as usize].epoch {
            self.links[p.link as usize].stats.down_drops += 1;
            self.release(p.slot);
            return;
        }
        let r = &self.routes[p.route as usize];
        if (p.hop as usize) + 1 < r.hops.len() {
            self.send(t, p.slot, p.route, p.hop + 1);
            return;
        }
        let dest = r.dest;
        let packet = std::mem::take(&mut self.slab[p.slot as usize]);
        self.release(p.slot);
        out(Delivery {
            dest,
            at: t,
            packet,
        });
    }

    fn apply_change(&mut self, i: usize) {
        let c = self.changes[i].clone();
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
}
