//! TCP Veno (C. P. Fu, S. C. Liew, "TCP Veno: TCP Enhancement for Transmission over Wireless
//! Access Networks", IEEE JSAC 21(2), 2003, §II), uncoupled per path.
//!
//! Backlog estimate (§II-A): `N = Actual·(RTT − BaseRTT) = (cwnd/BaseRTT − cwnd/RTT)·BaseRTT`
//! packets, with `BaseRTT` the smallest RTT seen and `RTT` the latest sample (Linux
//! `tcp_veno` refreshes it on every ACK). `β = 3` packets.
//! - Additive increase (§II-C): if `N < β` Reno's +1 MSS per RTT; otherwise +1 MSS every other
//!   RTT (a toggle flipped each time a window's worth of bytes has been acknowledged, as Linux).
//! - Multiplicative decrease (§II-B): a loss with `N < β` is taken as random,
//!   `ssthresh = cwnd·4/5`; otherwise as congestive, `ssthresh = cwnd/2`; the window is set
//!   to ssthresh (floor 2·MSS).
//! - Slow start and timeouts: Reno's.

use super::{
    apply_fractional, reduced, reno_increase, slow_start, AckEvent, CongestionControl, PerPath,
    Window,
};
use crate::path::PathView;
use crate::time::{Duration, Instant};

/// Veno β: backlog (packets) at which losses count as congestive.
pub const VENO_BETA: f64 = 3.0;

/// Veno's backlog `N = cwnd·(RTT − BaseRTT)/RTT` in packets; 0 before any RTT sample.
pub fn veno_backlog(p: &PathView, sample: Option<Duration>) -> f64 {
    match (sample.or(p.latest_rtt), p.min_rtt) {
        (Some(rtt), Some(base)) => {
            super::vegas::vegas_diff(p.cwnd, p.mss, rtt.as_secs_f64(), base.as_secs_f64())
        }
        _ => 0.0,
    }
}

/// Veno's per-path state, shared with MPVeno.
#[derive(Debug, Clone, Default)]
pub(crate) struct VenoState {
    /// Latest backlog estimate (packets).
    pub backlog: f64,
    /// Increase allowed in the current window when the backlog is at least β.
    pub inc: bool,
    /// Bytes acknowledged in avoidance since the toggle last flipped.
    pub counted: u64,
    /// Fractional window carry.
    pub carry: f64,
}

impl VenoState {
    /// Scales an avoidance increase of `inc` bytes for `rest` acknowledged bytes: whole if the
    /// backlog is under β, else only in every other window of acknowledged bytes (§II-C).
    pub fn gate(&mut self, cwnd: u64, rest: u64, inc: f64) -> f64 {
        if self.backlog < VENO_BETA {
            return inc;
        }
        let allowed = self.inc;
        self.counted += rest;
        if self.counted >= cwnd {
            self.counted = 0;
            self.inc = !self.inc;
        }
        if allowed {
            inc
        } else {
            0.0
        }
    }

    /// The Veno decrease: ×4/5 for random losses, ×1/2 for congestive ones (§II-B).
    pub fn decrease(&mut self, p: &PathView) -> Window {
        self.counted = 0;
        self.carry = 0.0;
        let factor = if self.backlog < VENO_BETA { 0.8 } else { 0.5 };
        reduced(p, p.cwnd as f64 * factor)
    }
}

/// Veno per path.
#[derive(Debug, Clone, Default)]
pub struct Veno {
    st: PerPath<VenoState>,
}

impl CongestionControl for Veno {
    fn name(&self) -> &'static str {
        "veno"
    }

    fn on_ack(&mut self, path: usize, ack: &AckEvent, paths: &[PathView]) -> Window {
        let p = &paths[path];
        let st = self.st.get(path);
        st.backlog = veno_backlog(p, ack.rtt_sample);
        let (mut cwnd, rest) = slow_start(p, ack.bytes_acked);
        if rest > 0 {
            let inc = st.gate(cwnd, rest, reno_increase(p.mss, rest, cwnd));
            cwnd = apply_fractional(&mut st.carry, cwnd, inc);
        }
        Window {
            cwnd,
            ssthresh: p.ssthresh,
        }
    }

    fn on_congestion_event(&mut self, path: usize, _now: Instant, paths: &[PathView]) -> Window {
        self.st.get(path).decrease(&paths[path])
    }
}
