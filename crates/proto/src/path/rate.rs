//! Delivery-rate estimation per path, as in draft-cheng-iccrg-delivery-rate-estimation-00
//! (2017; the algorithm Linux uses since 4.9): every packet remembers, when it is sent, how
//! much the path had delivered and when; the acknowledgement of the newest packet of an ACK
//! then yields a rate sample `delivered / max(send_elapsed, ack_elapsed)` (§3.3), flagged
//! when the sender was application-limited (§3.4) so a model-based controller (BBR) can
//! ignore samples that understate the path.
//!
//! Generic engine state: any controller may read the samples
//! ([`CongestionControl::on_delivery`](crate::cc::CongestionControl::on_delivery)); the
//! engine feeds it for every path, whatever the scheme, when the controller asks for samples
//! ([`CongestionControl::wants_delivery_rate`](crate::cc::CongestionControl::wants_delivery_rate)).

use crate::time::{Duration, Instant};

/// What a packet records when it is sent (the draft's `P.delivered`, `P.delivered_time`,
/// `P.first_sent_time`, `P.is_app_limited`; §3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SendSnapshot {
    pub(crate) delivered: u64,
    pub(crate) delivered_time: Instant,
    pub(crate) first_sent_time: Instant,
    pub(crate) app_limited: bool,
}

/// One delivery-rate sample of one path, produced for every ACK that newly acknowledged
/// packets of that path (draft-cheng-iccrg-delivery-rate-estimation-00 §3.3), together with
/// the ACK's loss and in-flight context that model-based controllers need.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct RateSample {
    /// When the ACK was processed.
    pub now: Instant,
    /// Bytes delivered on the path since it opened, after this ACK (`C.delivered`).
    pub delivered_total: u64,
    /// `C.delivered` when the newest packet acknowledged by this ACK was sent
    /// (`rs.prior_delivered`): a round trip ends when it reaches the mark taken at the
    /// round's start.
    pub prior_delivered: u64,
    /// Bytes delivered over the sample's interval (`rs.delivered`).
    pub delivered: u64,
    /// The interval `max(send_elapsed, ack_elapsed)` (§3.3); zero if no valid sample.
    pub interval: Duration,
    /// `delivered / interval` in bytes per second; `None` when the interval is shorter than
    /// the path's minimum RTT (an ACK compression artefact the draft discards) or zero.
    pub delivery_rate: Option<f64>,
    /// The newest acknowledged packet was sent while the sender was application-limited
    /// (§3.4: the sample may understate the path's capacity).
    pub is_app_limited: bool,
    /// Bytes newly acknowledged by this ACK on this path.
    pub newly_acked: u64,
    /// Bytes of this path newly declared lost while processing this ACK.
    pub newly_lost: u64,
    /// Packets newly acknowledged by this ACK on this path.
    pub acked_packets: u64,
    /// Packets of this path newly declared lost while processing this ACK.
    pub lost_packets: u64,
    /// Bytes in flight before this ACK was processed.
    pub prior_in_flight: u64,
    /// Round-trip time of the newest acknowledged packet (now − its send time), whether or
    /// not the engine's RTT estimator took it.
    pub rtt: Option<Duration>,
}

/// Per-path delivery state (`C.delivered`, `C.delivered_time`, `C.first_sent_time`,
/// `C.app_limited`; §3.1) and the sample being built for the current ACK.
#[derive(Debug, Clone, Default)]
pub(crate) struct DeliveryRate {
    delivered: u64,
    delivered_time: Instant,
    first_sent_time: Instant,
    /// 0, or the `delivered` mark until which samples are application-limited.
    app_limited: u64,
    // --- the sample of the ACK being processed ---
    prior_delivered: Option<u64>,
    send_elapsed: Duration,
    ack_elapsed: Duration,
    sample_app_limited: bool,
    newest_sent: Instant,
    acked_bytes: u64,
    acked_packets: u64,
}

impl DeliveryRate {
    /// The snapshot a packet sent now records (§3.2 `SendPacket`); `nothing_in_flight` restarts
    /// the clocks so an idle period does not count as slow delivery.
    pub(crate) fn on_send(&mut self, now: Instant, nothing_in_flight: bool) -> SendSnapshot {
        if nothing_in_flight {
            self.first_sent_time = now;
            self.delivered_time = now;
        }
        SendSnapshot {
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
            app_limited: self.app_limited != 0,
        }
    }

    /// The sender had window space on this path and nothing to send (§3.4): samples until
    /// everything now in flight is delivered are application-limited.
    pub(crate) fn mark_app_limited(&mut self, bytes_in_flight: u64) {
        self.app_limited = (self.delivered + bytes_in_flight).max(1);
    }

    /// One packet of `size` bytes sent at `sent` with snapshot `s` was acknowledged at `now`
    /// (§3.3 `UpdateRateSample`).
    pub(crate) fn on_acked(&mut self, now: Instant, sent: Instant, size: u64, s: &SendSnapshot) {
        self.delivered += size;
        self.delivered_time = now;
        self.acked_bytes += size;
        self.acked_packets += 1;
        if self.prior_delivered.is_none_or(|p| s.delivered >= p) {
            self.prior_delivered = Some(s.delivered);
            self.sample_app_limited = s.app_limited;
            self.send_elapsed = sent.saturating_since(s.first_sent_time);
            self.ack_elapsed = self.delivered_time.saturating_since(s.delivered_time);
            self.first_sent_time = sent;
            self.newest_sent = sent;
        }
    }

    /// Ends the ACK (§3.3 `GenerateRateSample`): the sample, if any packet was acknowledged.
    pub(crate) fn finish(
        &mut self,
        now: Instant,
        min_rtt: Option<Duration>,
        lost: (u64, u64),
        prior_in_flight: u64,
    ) -> Option<RateSample> {
        let prior = self.prior_delivered.take()?;
        if self.app_limited != 0 && self.delivered > self.app_limited {
            self.app_limited = 0;
        }
        let delivered = self.delivered - prior;
        let interval = self.send_elapsed.max(self.ack_elapsed);
        let valid = interval > Duration::ZERO && min_rtt.is_none_or(|m| interval >= m);
        let rate = valid.then(|| delivered as f64 / interval.as_secs_f64());
        let rs = RateSample {
            now,
            delivered_total: self.delivered,
            prior_delivered: prior,
            delivered,
            interval: if valid { interval } else { Duration::ZERO },
            delivery_rate: rate,
            is_app_limited: self.sample_app_limited,
            newly_acked: self.acked_bytes,
            newly_lost: lost.0,
            acked_packets: self.acked_packets,
            lost_packets: lost.1,
            prior_in_flight,
            rtt: Some(now.saturating_since(self.newest_sent)),
        };
        self.acked_bytes = 0;
        self.acked_packets = 0;
        Some(rs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Instant {
        Instant::from_nanos(x * 1_000_000)
    }

    /// A path sending 1000-byte packets every 1 ms, each acknowledged 100 ms later, delivers
    /// 1 MB/s: once the pipe is full every sample says so (draft §3.3's send and ACK rates
    /// are equal in steady state).
    #[test]
    fn steady_flow_measures_its_rate() {
        let mut d = DeliveryRate::default();
        let mut snaps = Vec::new();
        let mut last = None;
        for i in 0..400u64 {
            let now = ms(i);
            // Acknowledge the packet sent 100 ms ago.
            if i >= 100 {
                let (sent, s) = snaps[(i - 100) as usize];
                d.on_acked(now, sent, 1000, &s);
                last = d.finish(now, Some(Duration::from_millis(100)), (0, 0), 100_000);
            }
            let s = d.on_send(now, i == 0);
            snaps.push((now, s));
        }
        let rs = last.unwrap();
        let rate = rs.delivery_rate.unwrap();
        assert!((rate - 1e6).abs() / 1e6 < 0.02, "rate {rate}");
        assert!(!rs.is_app_limited);
        assert_eq!(rs.rtt, Some(Duration::from_millis(100)));
    }

    /// Samples of packets sent after `mark_app_limited` are flagged until the marked amount
    /// is delivered (§3.4), then no longer.
    #[test]
    fn app_limited_marking_expires() {
        let mut d = DeliveryRate::default();
        let s0 = d.on_send(ms(0), true);
        d.mark_app_limited(1000);
        let s1 = d.on_send(ms(1), false);
        assert!(!s0.app_limited && s1.app_limited);
        d.on_acked(ms(100), ms(0), 1000, &s0);
        let a = d.finish(ms(100), None, (0, 0), 2000).unwrap();
        assert!(!a.is_app_limited);
        d.on_acked(ms(101), ms(1), 1000, &s1);
        let b = d.finish(ms(101), None, (0, 0), 1000).unwrap();
        assert!(b.is_app_limited);
        // Everything marked is delivered: new packets are not app-limited.
        let s2 = d.on_send(ms(102), true);
        assert!(!s2.app_limited);
    }

    /// An ACK that acknowledges nothing yields no sample; an interval below min RTT is
    /// discarded (§3.3).
    #[test]
    fn no_sample_without_ack_or_with_short_interval() {
        let mut d = DeliveryRate::default();
        assert!(d.finish(ms(5), None, (0, 0), 0).is_none());
        let s = d.on_send(ms(0), true);
        d.on_acked(ms(10), ms(0), 1000, &s);
        let rs = d
            .finish(ms(10), Some(Duration::from_millis(50)), (500, 1), 0)
            .unwrap();
        assert_eq!(rs.delivery_rate, None);
        assert_eq!((rs.newly_lost, rs.lost_packets), (500, 1));
    }
}
