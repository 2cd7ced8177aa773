//! One direction of a link: serialization at a rate, a drop-tail queue, propagation delay,
//! a loss model, and faults (reordering, duplication, corruption, down/up).
//!
//! Queueing is computed on arrival at the link rather than with a transmit-complete event per
//! packet: with FIFO service, a packet's departure is `max(now, link busy until) + size/rate`,
//! and the queue at any instant is the set of packets whose departure has not passed. This
//! halves the events per packet without changing any timing.

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
pub(crate) struct Fate {
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
pub(crate) struct Link {
    pub params: LinkParams,
    pub stats: LinkStats,
    rng: ChaCha8Rng,
    busy_until: Instant,
    /// (departure time, wire bytes) of packets queued or in service.
    queue: VecDeque<(Instant, u64)>,
    queued_bytes: u64,
    ge_bad: bool,
    /// Incremented when the link goes down: packets sent before are lost.
    pub epoch: u32,
    /// Arrival time of the last packet put in the FIFO (no overtaking inside a link).
    pub last_arrival: Instant,
}

impl Link {
    pub fn new(params: LinkParams, seed: u64) -> Self {
        Link {
            params,
            stats: LinkStats::default(),
            rng: ChaCha8Rng::seed_from_u64(seed),
            busy_until: Instant::ZERO,
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

    /// Offers a packet of `wire` bytes at `now`.
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
        let start = self.busy_until.max(now);
        // Serialization time, rounded up to the nanosecond.
        let tx = Duration::from_nanos((wire * 8 * 1_000_000_000).div_ceil(self.params.rate_bps));
        let dep = start + tx;
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

    /// Changes parameters from now on (packets already queued keep their schedule).
    pub fn set_up(&mut self, up: bool) {
        if self.params.up && !up {
            self.epoch = self.epoch.wrapping_add(1);
        }
        self.params.up = up;
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
}
