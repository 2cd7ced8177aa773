//! Fully coupled multipath congestion control (F. Kelly, T. Voice, "Stability of end-to-end
//! algorithms for joint routing and rate control", CCR 35(2), 2005; H. Han, S. Shakkottai,
//! C. V. Hollot, R. Srikant, D. Towsley, "Multi-path TCP: a joint congestion control and
//! routing scheme to exploit path diversity in the Internet", IEEE/ACM ToN 14(6), 2006), as
//! stated by Wischik et al. (NSDI 2011, §2.1, "COUPLED"):
//!
//! - each ACK on path r increases `w_r` by `1/w_total` (bytes: `MSS·bytes_acked/w_total`),
//!   `w_total` the sum of the active paths' windows;
//! - each loss on path r decreases `w_r` by `w_total/2`, floored at 2·MSS (a window cannot go
//!   negative; RFC 5681's ssthresh floor).
//!
//! The whole connection then behaves as one Reno flow that moves all its traffic to the least
//! congested paths (and flaps between equally congested ones). Slow start is uncoupled.

use super::{
    apply_fractional, reduced, reno_increase, slow_start, AckEvent, CongestionControl, PerPath,
    Window,
};
use crate::path::PathView;
use crate::time::Instant;

/// Sum of the active paths' windows (bytes), at least 1.
pub fn total_cwnd(paths: &[PathView]) -> u64 {
    paths
        .iter()
        .filter(|p| p.active)
        .map(|p| p.cwnd)
        .sum::<u64>()
        .max(1)
}

/// Fully coupled AIMD.
#[derive(Debug, Clone, Default)]
pub struct Coupled {
    carry: PerPath<f64>,
}

impl CongestionControl for Coupled {
    fn name(&self) -> &'static str {
        "coupled"
    }

    fn on_ack(&mut self, path: usize, ack: &AckEvent, paths: &[PathView]) -> Window {
        let p = &paths[path];
        let (mut cwnd, rest) = slow_start(p, ack.bytes_acked);
        if rest > 0 {
            let total = total_cwnd(paths).max(cwnd);
            cwnd = apply_fractional(
                self.carry.get(path),
                cwnd,
                reno_increase(p.mss, rest, total),
            );
        }
        Window {
            cwnd,
            ssthresh: p.ssthresh,
        }
    }

    fn on_congestion_event(&mut self, path: usize, _now: Instant, paths: &[PathView]) -> Window {
        let p = &paths[path];
        let total = total_cwnd(paths) as f64;
        reduced(p, p.cwnd as f64 - total / 2.0)
    }
}
