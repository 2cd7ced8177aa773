//! BALIA, the Balanced Linked Adaptation algorithm (Q. Peng, A. Walid, J. Hwang, S. H. Low,
//! "Multipath TCP: Analysis, Design, and Implementation", IEEE/ACM ToN 24(1), 2016;
//! also draft-walid-mptcp-congestion-control).
//!
//! With `x_r = w_r/rtt_r` and `α_r = max_k x_k / x_r`:
//! - each ACK on path r increases `w_r` (packets) by
//!   `(x_r/rtt_r)/(Σ_k x_k)² · (1 + α_r)/2 · (4 + α_r)/5`;
//! - each loss on path r decreases `w_r` by `(w_r/2)·min(α_r, 1.5)`, floored at 2·MSS.
//!
//! In bytes the increase is `MSS·bytes_acked·(x_r/rtt_r)/(Σ x_k)²·…` with `x` in bytes/s.
//! It never exceeds Reno's `MSS·bytes_acked/w_r`: `(x_r/rtt_r)/(Σx)² ≤ 1/(w_r·α_r²)` and
//! `(1 + α)(4 + α)/10 ≤ α²` for `α ≥ 1`. Slow start is uncoupled; RTTs are smoothed RTTs.

use super::{
    apply_fractional, reduced, rtt_secs, slow_start, AckEvent, CongestionControl, PerPath, Window,
};
use crate::path::PathView;
use crate::time::Instant;

/// BALIA's `α_r = max_k x_k / x_r` and `Σ_k x_k` (x in bytes/s) over the active paths.
pub fn balia_alpha(paths: &[PathView], r: usize) -> (f64, f64) {
    let x = |p: &PathView| p.cwnd.max(1) as f64 / rtt_secs(p);
    let xr = x(&paths[r]);
    let (max, sum) = paths
        .iter()
        .filter(|p| p.active)
        .map(x)
        .fold((xr, 0.0), |(m, s), v| (m.max(v), s + v));
    (max / xr, sum.max(xr))
}

/// BALIA.
#[derive(Debug, Clone, Default)]
pub struct Balia {
    carry: PerPath<f64>,
}

impl CongestionControl for Balia {
    fn name(&self) -> &'static str {
        "balia"
    }

    fn on_ack(&mut self, path: usize, ack: &AckEvent, paths: &[PathView]) -> Window {
        let p = &paths[path];
        let (mut cwnd, rest) = slow_start(p, ack.bytes_acked);
        if rest > 0 {
            let (alpha, sum) = balia_alpha(paths, path);
            let rtt = rtt_secs(p);
            let xr = p.cwnd.max(1) as f64 / rtt;
            let inc = p.mss as f64 * rest as f64 * (xr / rtt) / (sum * sum)
                * ((1.0 + alpha) / 2.0)
                * ((4.0 + alpha) / 5.0);
            cwnd = apply_fractional(self.carry.get(path), cwnd, inc);
        }
        Window {
            cwnd,
            ssthresh: p.ssthresh,
        }
    }

    fn on_congestion_event(&mut self, path: usize, _now: Instant, paths: &[PathView]) -> Window {
        let p = &paths[path];
        let (alpha, _) = balia_alpha(paths, path);
        let w = p.cwnd as f64;
        reduced(p, w - w / 2.0 * alpha.min(1.5))
    }
}
