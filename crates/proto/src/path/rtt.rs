//! RTT estimation and retransmission timeout, RFC 6298.

use crate::time::Duration;

/// SRTT/RTTVAR estimator with RTO computation and exponential backoff (RFC 6298 §2, §5).
#[derive(Debug, Clone)]
pub struct RttEstimator {
    srtt: Option<Duration>,
    rttvar: Duration,
    min_rtt: Option<Duration>,
    latest: Option<Duration>,
    initial_rto: Duration,
    min_rto: Duration,
    max_rto: Duration,
    ack_delay_allowance: Duration,
    backoff: u32,
}

/// Clock granularity G of RFC 6298 §2 (the simulator is exact; 1 ms matches common stacks).
const GRANULARITY: Duration = Duration::from_millis(1);

impl RttEstimator {
    /// A fresh estimator: RTO = `initial_rto` until the first sample (RFC 6298 §2.1).
    pub fn new(initial_rto: Duration, min_rto: Duration, max_rto: Duration) -> Self {
        RttEstimator {
            srtt: None,
            rttvar: Duration::ZERO,
            min_rtt: None,
            latest: None,
            initial_rto,
            min_rto,
            max_rto,
            ack_delay_allowance: Duration::ZERO,
            backoff: 0,
        }
    }

    /// Adds `d` to every timeout computed from samples: the peer's `max_ack_delay`, when
    /// samples have the peer's ACK delay subtracted (RFC 9002 §6.2.1: the PTO is
    /// SRTT + max(4·RTTVAR, G) + max_ack_delay, because a lone packet's ACK may be held that
    /// long). Without it a path whose RTT is near the timer's floor times out on every lone
    /// packet. Zero (the default) when samples are raw and already include the delay.
    pub fn with_ack_delay_allowance(mut self, d: Duration) -> Self {
        self.ack_delay_allowance = d;
        self
    }

    /// Feeds one RTT measurement.
    pub fn update(&mut self, r: Duration) {
        self.update_with_delay(r, Duration::ZERO);
    }

    /// Feeds one RTT measurement `latest` whose ACK the peer held for `ack_delay` (already
    /// capped at `max_ack_delay` by the caller). RFC 9002 §5.3: the minimum RTT takes the raw
    /// sample; the smoothed RTT and its variation take `latest − ack_delay` if that is not
    /// below the minimum RTT, else the raw sample. Returns the sample used for smoothing.
    pub fn update_with_delay(&mut self, latest: Duration, ack_delay: Duration) -> Duration {
        self.latest = Some(latest);
        let min = self.min_rtt.map_or(latest, |m| m.min(latest));
        self.min_rtt = Some(min);
        let r = if latest >= min + ack_delay {
            latest - ack_delay
        } else {
            latest
        };
        self.smooth(r);
        r
    }

    fn smooth(&mut self, r: Duration) {
        match self.srtt {
            None => {
                // §2.2: SRTT <- R, RTTVAR <- R/2.
                self.srtt = Some(r);
                self.rttvar = Duration::from_nanos(r.as_nanos() / 2);
            }
            Some(s) => {
                // §2.3 with alpha = 1/8, beta = 1/4.
                let diff = s.as_nanos().abs_diff(r.as_nanos());
                self.rttvar = Duration::from_nanos((3 * self.rttvar.as_nanos() + diff) / 4);
                self.srtt = Some(Duration::from_nanos((7 * s.as_nanos() + r.as_nanos()) / 8));
            }
        }
    }

    /// Smoothed RTT, once measured.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }
    /// Smallest RTT seen.
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }
    /// Most recent sample.
    pub fn latest(&self) -> Option<Duration> {
        self.latest
    }
    /// RTT variation.
    pub fn rttvar(&self) -> Duration {
        self.rttvar
    }

    /// RTO without backoff: max(min, SRTT + max(G, 4·RTTVAR) + ack-delay allowance)
    /// (RFC 6298 §2.2–2.4; the allowance is RFC 9002 §6.2.1's `max_ack_delay`, see
    /// [`RttEstimator::with_ack_delay_allowance`]), capped at max.
    pub fn base_rto(&self) -> Duration {
        let rto = match self.srtt {
            None => self.initial_rto,
            Some(s) => {
                s + GRANULARITY.max(self.rttvar.saturating_mul(4)) + self.ack_delay_allowance
            }
        };
        rto.max(self.min_rto).min(self.max_rto)
    }

    /// RTO including exponential backoff (§5.5), capped at the maximum.
    pub fn rto(&self) -> Duration {
        let b = self.base_rto();
        b.saturating_mul(1u64 << self.backoff.min(30))
            .min(self.max_rto.max(b))
    }

    /// Doubles the timer after an expiry (§5.5).
    pub fn back_off(&mut self) {
        self.backoff = (self.backoff + 1).min(30);
    }

    /// Clears backoff after new data is acknowledged (§5.7).
    pub fn reset_backoff(&mut self) {
        self.backoff = 0;
    }

    /// Current backoff exponent.
    pub fn backoff(&self) -> u32 {
        self.backoff
    }
}

/// Forward (sender → receiver) queueing delay from the receiver's timestamps
/// ([`crate::ConnectionConfig::ack_timestamps`]).
///
/// Each sample is the receive time of an ACK's largest packet on the receiver's clock minus
/// its send time on ours: the one-way delay plus an unknown clock offset. The offset cancels
/// in the difference between the smoothed sample (α = 1/8, as SRTT) and the smallest, which is
/// the queueing the forward direction adds over its least delay. A round-trip measure cannot
/// tell that from queueing in the ACK direction. Clocks are assumed to run at the same rate:
/// a relative drift of `x` ppm adds `x` µs per second of connection to the estimate (the
/// simulator's ends share one clock). Samples are the peer's word and may be forged; they
/// are kept to 64-bit arithmetic here, and the connection's one-way estimate that uses them
/// (`one_way` in `conn.rs`) never lets the result exceed the round-trip estimate.
#[derive(Debug, Clone, Default)]
pub struct ForwardDelay {
    /// Smallest sample, ns (receiver clock − sender clock).
    min: Option<i64>,
    /// Smoothed sample, ns.
    smoothed: i64,
}

impl ForwardDelay {
    /// Feeds one sample: the packet was sent at `sent_ns` on our clock and received at
    /// `received_us` µs on the peer's.
    pub fn on_sample(&mut self, sent_ns: u64, received_us: u64) {
        let d = i128::from(received_us) * 1000 - i128::from(sent_ns);
        let d = i64::try_from(d).unwrap_or(if d < 0 { i64::MIN } else { i64::MAX });
        match self.min {
            None => {
                self.min = Some(d);
                self.smoothed = d;
            }
            Some(m) => {
                self.min = Some(m.min(d));
                let s = (7 * i128::from(self.smoothed) + i128::from(d)) / 8;
                self.smoothed = i64::try_from(s).unwrap_or(d);
            }
        }
    }

    /// Queueing delay of the forward direction (smoothed − smallest sample), once sampled.
    pub fn queueing(&self) -> Option<Duration> {
        let m = self.min?;
        let q = i128::from(self.smoothed) - i128::from(m);
        Some(Duration::from_nanos(
            u64::try_from(q.max(0)).unwrap_or(u64::MAX),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc6298_numbers() {
        let ms = Duration::from_millis;
        let mut e = RttEstimator::new(ms(1000), ms(200), ms(60_000));
        assert_eq!(e.rto(), ms(1000));
        e.update(ms(100));
        assert_eq!(e.srtt(), Some(ms(100)));
        assert_eq!(e.rttvar(), ms(50));
        // 100 + 4*50 = 300 ms.
        assert_eq!(e.rto(), ms(300));
        e.update(ms(200));
        // RTTVAR = 3/4*50 + 1/4*100 = 62.5; SRTT = 7/8*100 + 1/8*200 = 112.5.
        assert_eq!(e.rttvar(), Duration::from_micros(62_500));
        assert_eq!(e.srtt(), Some(Duration::from_micros(112_500)));
        assert_eq!(e.rto(), Duration::from_micros(362_500));
        e.back_off();
        e.back_off();
        assert_eq!(e.rto(), Duration::from_micros(1_450_000));
        for _ in 0..20 {
            e.back_off();
        }
        assert_eq!(e.rto(), ms(60_000));
        e.reset_backoff();
        // Minimum RTO applies to tiny RTTs.
        let mut f = RttEstimator::new(ms(1000), ms(200), ms(60_000));
        f.update(ms(1));
        assert_eq!(f.rto(), ms(200));
    }

    /// RFC 9002 §5.3: the ack delay comes off the smoothed RTT, not off the minimum, and
    /// never takes a sample below the minimum RTT.
    #[test]
    fn ack_delay_is_subtracted_down_to_the_minimum() {
        let ms = Duration::from_millis;
        let mut e = RttEstimator::new(ms(1000), ms(200), ms(60_000));
        assert_eq!(e.update_with_delay(ms(50), ms(0)), ms(50));
        // 70 ms raw, 20 ms of it the peer's delay: 50 ms is smoothed, 70 ms is the latest.
        assert_eq!(e.update_with_delay(ms(70), ms(20)), ms(50));
        assert_eq!(e.srtt(), Some(ms(50)));
        assert_eq!(e.latest(), Some(ms(70)));
        assert_eq!(e.min_rtt(), Some(ms(50)));
        // A delay that would take the sample below the minimum is not subtracted.
        assert_eq!(e.update_with_delay(ms(60), ms(40)), ms(60));
    }

    /// RFC 9002 §6.2.1: with the allowance the timer is SRTT + max(4·RTTVAR, G) +
    /// max_ack_delay; the floor still applies to the sum, and nothing changes before the
    /// first sample.
    #[test]
    fn ack_delay_allowance_is_added_to_the_timer() {
        let ms = Duration::from_millis;
        let mut e =
            RttEstimator::new(ms(1000), ms(200), ms(60_000)).with_ack_delay_allowance(ms(25));
        assert_eq!(e.rto(), ms(1000));
        e.update(ms(100));
        // 100 + 4*50 + 25.
        assert_eq!(e.rto(), ms(325));
        let mut f =
            RttEstimator::new(ms(1000), ms(200), ms(60_000)).with_ack_delay_allowance(ms(25));
        f.update(ms(1));
        // 1 + 4*0.5 + 25 = 28 ms: the 200 ms floor.
        assert_eq!(f.rto(), ms(200));
    }

    /// The clock offset cancels: a receiver clock 7 s ahead, one-way delays of 20 ms then
    /// 28 ms give a queueing of (7·20 + 28)/8 − 20 = 1 ms; the first sample is the smallest
    /// one (zero queueing).
    #[test]
    fn forward_queueing_is_free_of_the_clock_offset() {
        let mut f = ForwardDelay::default();
        assert_eq!(f.queueing(), None);
        let offset_us = 7_000_000;
        f.on_sample(1_000_000_000, 1_000_000 + offset_us + 20_000);
        assert_eq!(f.queueing(), Some(Duration::ZERO));
        f.on_sample(2_000_000_000, 2_000_000 + offset_us + 28_000);
        assert_eq!(f.queueing(), Some(Duration::from_millis(1)));
        // A receiver clock behind ours (negative samples) works the same.
        let mut g = ForwardDelay::default();
        g.on_sample(9_000_000_000, 20_000);
        g.on_sample(9_100_000_000, 100_000 + 28_000);
        assert_eq!(g.queueing(), Some(Duration::from_millis(1)));
    }

    /// Forged extremes neither panic nor wrap: the estimate saturates.
    #[test]
    fn forged_timestamps_saturate() {
        let mut f = ForwardDelay::default();
        f.on_sample(u64::MAX, 0);
        f.on_sample(0, u64::MAX);
        f.on_sample(0, u64::MAX);
        let q = f.queueing().unwrap();
        assert!(q > Duration::from_secs(1_000_000), "{q:?}");
    }
}
