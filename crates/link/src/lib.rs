//! The link model of Tributary, shared by the simulator (`tributary-sim`, virtual time) and
//! the path emulator (`tributary-emu`, real packets on TUN devices, monotonic time): one
//! direction of a link, with serialization at a rate or along a Mahimahi packet-delivery
//! trace, a drop-tail queue, propagation delay, a loss model, and faults (reordering,
//! duplication, corruption, down/up).
//!
//! The model is deterministic and driven by its caller's clock: [`Link::offer`] takes the
//! current time as an integer-nanosecond [`Instant`] (the simulator's virtual time, or the
//! emulator's monotonic time since it started) and returns the packet's [`Fate`]. The same
//! parameters, seed and sequence of `(time, size)` offers give the same fates, whoever calls.
//!
//! Queueing is computed on arrival at the link rather than with a transmit-complete event per
//! packet: with FIFO service, a packet's departure is `max(now, link busy until) + size/rate`,
//! and the queue at any instant is the set of packets whose departure has not passed. This
//! halves the events per packet without changing any timing.
//!
//! What the caller does with a fate (shared by both drivers): packets that are not reordered
//! leave a link in order ([`Link::fifo_arrival`]), a duplicate copy travels in the FIFO with
//! the original's arrival time, and a packet in flight when the link goes down is lost
//! ([`Link::epoch`] changes).

#![warn(missing_docs)]

mod trace;

pub use trace::{DeliveryTrace, TraceError, TRACE_OPPORTUNITY_BYTES};

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};
use std::collections::VecDeque;
use tributary_proto::time::{Duration, Instant};

/// Drop-tail queue limit (the packet being serialized counts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum QueueLimit {
    /// At most this many packets.
    Packets(u64),
    /// At most this many bytes.
    Bytes(u64),
}

/// Random loss.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "model", rename_all = "kebab-case")]
pub enum LossModel {
    /// No random loss.
    None,
    /// Each packet lost independently with probability `p`.
    Bernoulli {
        /// Loss probability.
        p: f64,
    },
    /// Two-state Gilbert–Elliott: per packet, first move Good→Bad with probability `p` or
    /// Bad→Good with probability `r`, then lose the packet with the state's loss probability.
    /// Stationary loss = (p·loss_bad + r·loss_good)/(p + r); mean burst ≈ 1/r (loss_bad = 1).
    GilbertElliott {
        /// P(Good → Bad).
        p: f64,
        /// P(Bad → Good).
        r: f64,
        /// Loss probability in the Good state.
        loss_good: f64,
        /// Loss probability in the Bad state.
        loss_bad: f64,
    },
}

impl LossModel {
    /// Long-run loss probability.
    pub fn mean_loss(&self) -> f64 {
        match *self {
            LossModel::None => 0.0,
            LossModel::Bernoulli { p } => p,
            LossModel::GilbertElliott {
                p,
                r,
                loss_good,
                loss_bad,
            } => {
                if p + r == 0.0 {
                    loss_good
                } else {
                    (p * loss_bad + r * loss_good) / (p + r)
                }
            }
        }
    }
}

/// Parameters of one link direction.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LinkParams {
    /// Rate in bit/s.
    pub rate_bps: u64,
    /// One-way propagation delay.
    pub delay: Duration,
    /// Queue limit.
    pub queue: QueueLimit,
    /// Random loss.
    pub loss: LossModel,
    /// Probability that a packet is held back by `reorder_delay` (and so overtaken).
    pub reorder_prob: f64,
    /// Extra delay of a reordered packet.
    pub reorder_delay: Duration,
    /// Probability that a packet is delivered twice.
    pub duplicate_prob: f64,
    /// Probability that one random bit of a packet is flipped.
    pub corrupt_prob: f64,
    /// False: the link drops everything.
    pub up: bool,
    /// Time-varying service: a Mahimahi packet-delivery trace replaces `rate_bps` (which then
    /// only describes the link, e.g. for the default queue size).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<DeliveryTrace>,
}

impl LinkParams {
    /// A clean link of `rate_bps` and `delay` with a queue of `queue_packets`.
    pub fn new(rate_bps: u64, delay: Duration, queue_packets: u64) -> Self {
        LinkParams {
            rate_bps,
            delay,
            queue: QueueLimit::Packets(queue_packets),
            loss: LossModel::None,
            reorder_prob: 0.0,
            reorder_delay: Duration::ZERO,
            duplicate_prob: 0.0,
            corrupt_prob: 0.0,
            up: true,
            trace: None,
        }
    }

    /// Checks every value; the error names the field.
    pub fn validate(&self) -> Result<(), String> {
        let prob = |name: &str, v: f64| {
            if (0.0..=1.0).contains(&v) {
                Ok(())
            } else {
                Err(format!("{name} = {v} is not a probability in [0, 1]"))
            }
        };
        if self.rate_bps == 0 {
            return Err("rate must be positive".into());
        }
        match self.queue {
            QueueLimit::Packets(0) | QueueLimit::Bytes(0) => {
                return Err("queue must hold at least one packet".into())
            }
            _ => {}
        }
        match self.loss {
            LossModel::None => {}
            LossModel::Bernoulli { p } => prob("loss", p)?,
            LossModel::GilbertElliott {
                p,
                r,
                loss_good,
                loss_bad,
            } => {
                prob("loss.p", p)?;
                prob("loss.r", r)?;
                prob("loss.loss_good", loss_good)?;
                prob("loss.loss_bad", loss_bad)?;
            }
        }
        prob("reorder_prob", self.reorder_prob)?;
        prob("duplicate_prob", self.duplicate_prob)?;
        prob("corrupt_prob", self.corrupt_prob)?;
        Ok(())
    }
}

/// Counters of one link direction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct LinkStats {
    /// Packets offered to the link.
    pub offered: u64,
    /// Packets that reached the far end (copies included; corrupted ones too, which the
    /// receiver then drops by checksum).
    pub delivered: u64,
    /// Dropped because the queue was full.
    pub queue_drops: u64,
    /// Dropped by the loss model.
    pub random_drops: u64,
    /// Dropped because the link was down.
    pub down_drops: u64,
    /// Datagrams (copies included) sent on with a flipped bit.
    pub corrupted: u64,
    /// Delivered twice.
    pub duplicated: u64,
    /// Held back for reordering.
    pub reordered: u64,
    /// Bytes serialized (wire size).
    pub bytes: u64,
}

/// What the link decided for one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fate {
    /// Arrival time at the far end, or `None` if dropped.
    pub arrival: Option<Instant>,
    /// Goes around the FIFO (reordered).
    pub reordered: bool,
    /// Deliver a second copy.
    pub duplicate: bool,
    /// Flip this bit (index into the datagram bits).
    pub corrupt_bit: Option<u64>,
}

/// State of one link direction.
#[derive(Debug)]
pub struct Link {
    /// Current parameters (the caller may change them; see [`Link::set_up`] for `up`).
    pub params: LinkParams,
    /// Counters.
    pub stats: LinkStats,
    rng: ChaCha8Rng,
    busy_until: Instant,
    /// Trace service: the delivery opportunity in use and the bytes it has left.
    trace_next: u64,
    trace_left: u64,
    /// (departure time, wire bytes) of packets queued or in service.
    queue: VecDeque<(Instant, u64)>,
    queued_bytes: u64,
    ge_bad: bool,
    /// Incremented when the link goes down: packets sent before are lost. A driver records
    /// it with each packet in flight and drops the packet on arrival if it changed.
    pub epoch: u32,
    /// Arrival time of the last packet put in the FIFO (no overtaking inside a link).
    pub last_arrival: Instant,
}

impl Link {
    /// A link direction with its own random stream.
    pub fn new(params: LinkParams, seed: u64) -> Self {
        Link {
            params,
            stats: LinkStats::default(),
            rng: ChaCha8Rng::seed_from_u64(seed),
            busy_until: Instant::ZERO,
            trace_next: 0,
            trace_left: TRACE_OPPORTUNITY_BYTES,
            queue: VecDeque::new(),
            queued_bytes: 0,
            ge_bad: false,
            epoch: 0,
            last_arrival: Instant::ZERO,
        }
    }

    fn coin(&mut self, p: f64) -> bool {
        if p <= 0.0 {
            return false;
        }
        if p >= 1.0 {
            return true;
        }
        // 53 random bits → uniform in [0, 1).
        let u = (self.rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
        u < p
    }

    // Always inlined: with `offer` inlined into a driver, LLVM otherwise kept this out of
    // line, a call per packet for the common `LossModel::None`.
    #[inline(always)]
    fn lose(&mut self) -> bool {
        match self.params.loss {
            LossModel::None => false,
            LossModel::Bernoulli { p } => self.coin(p),
            LossModel::GilbertElliott {
                p,
                r,
                loss_good,
                loss_bad,
            } => {
                let flip = if self.ge_bad { r } else { p };
                if self.coin(flip) {
                    self.ge_bad = !self.ge_bad;
                }
                let l = if self.ge_bad { loss_bad } else { loss_good };
                self.coin(l)
            }
        }
    }

    /// Offers a packet of `wire` bytes (its size on the wire) at `now`; `datagram_len` is the
    /// size of the bytes a corruption may flip a bit of. Times never go backwards between
    /// calls. (Inlined: the simulator calls it once per packet per hop, and inlined into its
    /// `send` together with `lose` it costs about 20 instructions less a packet.)
    #[inline]
    pub fn offer(&mut self, now: Instant, wire: u64, datagram_len: usize) -> Fate {
        let dropped = Fate {
            arrival: None,
            reordered: false,
            duplicate: false,
            corrupt_bit: None,
        };
        self.stats.offered += 1;
        if !self.params.up {
            self.stats.down_drops += 1;
            return dropped;
        }
        while let Some(&(dep, b)) = self.queue.front() {
            if dep > now {
                break;
            }
            self.queue.pop_front();
            self.queued_bytes -= b;
        }
        let full = match self.params.queue {
            QueueLimit::Packets(n) => self.queue.len() as u64 >= n,
            QueueLimit::Bytes(n) => self.queued_bytes + wire > n,
        };
        if full {
            self.stats.queue_drops += 1;
            return dropped;
        }
        let dep = match &self.params.trace {
            None => {
                let start = self.busy_until.max(now);
                // Serialization time, rounded up to the nanosecond; in 64-bit arithmetic when
                // the product fits (any datagram: a 128-bit division per packet was a
                // measurable share of the link's cost), the same quotient either way.
                let rate = self.params.rate_bps;
                let nanos = match wire.checked_mul(8 * 1_000_000_000) {
                    Some(bits_ns) => bits_ns.div_ceil(rate),
                    None => (wire as u128 * 8 * 1_000_000_000).div_ceil(rate as u128) as u64,
                };
                let tx = Duration::from_nanos(nanos);
                start + tx
            }
            Some(t) => {
                let (k, left, dep) = t.serve(now, self.trace_next, self.trace_left, wire);
                self.trace_next = k;
                self.trace_left = left;
                dep
            }
        };
        self.busy_until = dep;
        self.queue.push_back((dep, wire));
        self.queued_bytes += wire;
        self.stats.bytes += wire;
        // Random loss happens on the wire, after the packet used its share of the link.
        if self.lose() {
            self.stats.random_drops += 1;
            return dropped;
        }
        let mut fate = Fate {
            arrival: Some(dep + self.params.delay),
            ..dropped
        };
        if self.coin(self.params.corrupt_prob) {
            self.stats.corrupted += 1;
            fate.corrupt_bit = Some(self.rng.next_u64() % (datagram_len as u64 * 8).max(1));
        }
        if self.coin(self.params.duplicate_prob) {
            self.stats.duplicated += 1;
            fate.duplicate = true;
            if fate.corrupt_bit.is_some() {
                // The copy carries the same flipped bit.
                self.stats.corrupted += 1;
            }
        }
        if self.coin(self.params.reorder_prob) {
            self.stats.reordered += 1;
            fate.reordered = true;
            fate.arrival = Some(dep + self.params.delay + self.params.reorder_delay);
        }
        fate
    }

    /// Takes the link up or down from now on; going down loses the packets in flight (their
    /// [`Link::epoch`] no longer matches).
    pub fn set_up(&mut self, up: bool) {
        if self.params.up && !up {
            self.epoch = self.epoch.wrapping_add(1);
        }
        self.params.up = up;
    }

    /// The time a packet that the model said arrives at `arrival` leaves the link's FIFO: not
    /// before the packet put in the FIFO last (no overtaking inside a link, e.g. after the
    /// delay shrank). Records it as the new last arrival.
    pub fn fifo_arrival(&mut self, arrival: Instant) -> Instant {
        let a = arrival.max(self.last_arrival);
        self.last_arrival = a;
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialization_and_queue() {
        // 8 Mbit/s: 1000 bytes take 1 ms. Queue of 2 packets.
        let mut l = Link::new(LinkParams::new(8_000_000, Duration::from_millis(10), 2), 1);
        let t0 = Instant::ZERO;
        assert_eq!(
            l.offer(t0, 1000, 1000).arrival,
            Some(t0 + Duration::from_millis(11))
        );
        assert_eq!(
            l.offer(t0, 1000, 1000).arrival,
            Some(t0 + Duration::from_millis(12))
        );
        assert_eq!(l.offer(t0, 1000, 1000).arrival, None);
        assert_eq!(l.stats.queue_drops, 1);
        // After the first departs, there is room again.
        let t1 = t0 + Duration::from_millis(1);
        assert_eq!(
            l.offer(t1, 1000, 1000).arrival,
            Some(t0 + Duration::from_millis(13))
        );
    }

    #[test]
    fn bernoulli_rate_within_binomial_bounds() {
        let mut p = LinkParams::new(1_000_000_000, Duration::ZERO, 1_000_000);
        p.loss = LossModel::Bernoulli { p: 0.05 };
        let mut l = Link::new(p, 42);
        let n = 100_000;
        let mut t = Instant::ZERO;
        for _ in 0..n {
            t += Duration::from_micros(100);
            l.offer(t, 100, 100);
        }
        // sd = sqrt(n p (1-p)) ≈ 69; allow 5 sd.
        let lost = l.stats.random_drops as f64;
        assert!((lost - 5000.0).abs() < 345.0, "{lost}");
    }

    #[test]
    fn gilbert_elliott_mean_and_bursts() {
        // 3 % loss, mean burst 2 (r = 0.5), loss_bad = 1: p = 0.03·0.5/0.97.
        let pgb = 0.03 * 0.5 / 0.97;
        let mut p = LinkParams::new(1_000_000_000, Duration::ZERO, 1_000_000);
        p.loss = LossModel::GilbertElliott {
            p: pgb,
            r: 0.5,
            loss_good: 0.0,
            loss_bad: 1.0,
        };
        assert!((p.loss.mean_loss() - 0.03).abs() < 1e-12);
        let mut l = Link::new(p, 7);
        let mut t = Instant::ZERO;
        let (mut bursts, mut run, mut lost) = (0u64, 0u64, 0u64);
        for _ in 0..400_000 {
            t += Duration::from_micros(10);
            let dropped = l.offer(t, 100, 100).arrival.is_none();
            if dropped {
                lost += 1;
                run += 1;
            } else if run > 0 {
                bursts += 1;
                run = 0;
            }
        }
        let rate = lost as f64 / 400_000.0;
        let mean_burst = lost as f64 / bursts as f64;
        assert!((rate - 0.03).abs() < 0.003, "{rate}");
        assert!((mean_burst - 2.0).abs() < 0.15, "{mean_burst}");
    }

    #[test]
    fn trace_service_follows_the_opportunities() {
        // One opportunity per millisecond (12.032 Mbit/s); 1504-byte packets offered every
        // 0.1 ms into a large queue leave exactly one per opportunity, after the delay.
        let mut p = LinkParams::new(1, Duration::from_millis(5), 1_000);
        p.trace = Some(DeliveryTrace::parse("1\n", "t").unwrap());
        let mut l = Link::new(p, 3);
        for i in 0..100u64 {
            let now = Instant::from_nanos(i * 100_000);
            let a = l.offer(now, 1504, 1476).arrival.unwrap();
            // Opportunity k is at k + 1 ms (the trace's one line is "1").
            assert_eq!(
                a,
                Instant::from_nanos((i + 1) * 1_000_000 + 5_000_000),
                "packet {i}"
            );
        }
        // Two 700-byte packets share one opportunity.
        let mut p = LinkParams::new(1, Duration::ZERO, 1_000);
        p.trace = Some(DeliveryTrace::parse("1\n", "t").unwrap());
        let mut l = Link::new(p, 3);
        let t = Instant::from_nanos(500_000);
        assert_eq!(
            l.offer(t, 700, 700).arrival,
            Some(Instant::from_nanos(1_000_000))
        );
        assert_eq!(
            l.offer(t, 700, 700).arrival,
            Some(Instant::from_nanos(1_000_000))
        );
        assert_eq!(
            l.offer(t, 700, 700).arrival,
            Some(Instant::from_nanos(2_000_000))
        );
    }

    #[test]
    fn trace_link_queue_is_drop_tail() {
        // 2-packet queue on a trace with an opportunity every 10 ms.
        let mut p = LinkParams::new(1, Duration::ZERO, 2);
        p.trace = Some(DeliveryTrace::parse("10\n", "t").unwrap());
        let mut l = Link::new(p, 3);
        let t = Instant::from_nanos(1);
        assert!(l.offer(t, 1504, 1504).arrival.is_some());
        assert!(l.offer(t, 1504, 1504).arrival.is_some());
        assert_eq!(l.offer(t, 1504, 1504).arrival, None);
        assert_eq!(l.stats.queue_drops, 1);
    }

    #[test]
    fn fifo_arrival_prevents_overtaking() {
        let mut l = Link::new(LinkParams::new(8_000_000, Duration::from_millis(50), 10), 1);
        let a = l.offer(Instant::ZERO, 1000, 1000).arrival.unwrap();
        assert_eq!(l.fifo_arrival(a), a);
        // The delay drops to 1 ms: the next packet may not leave before the first.
        l.params.delay = Duration::from_millis(1);
        let b = l.offer(Instant::ZERO, 1000, 1000).arrival.unwrap();
        assert!(b < a);
        assert_eq!(l.fifo_arrival(b), a);
    }
}
