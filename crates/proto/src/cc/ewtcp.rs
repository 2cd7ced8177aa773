//! EWTCP, equally-weighted TCP (M. Honda, Y. Nishida, L. Eggert, P. Sarolahti, H. Tokuda,
//! "Multipath Congestion Control for Shared Bottleneck", PFLDNeT 2009), in the form restated
//! by Wischik, Raiciu, Greenhalgh and Handley ("Design, implementation and evaluation of
//! congestion control for multipath TCP", NSDI 2011, §2.1):
//!
//! - each ACK on path r increases `w_r` by `a/w_r` (here `a·MSS·bytes_acked/w_r` in bytes);
//! - each loss on path r halves `w_r`;
//! - `a = 1/n²` with `n` the number of active paths. A Reno-like window grows as `√a`
//!   (`w = √(2a/p)`), so each subflow settles at `1/n` of a TCP's window under the same loss
//!   and RTT: on a shared bottleneck the n subflows together take one TCP's share; on disjoint
//!   paths each subflow gets only `1/n` of what a TCP would.
//!
//! Slow start is uncoupled (Reno's).

use super::{
    apply_fractional, halve, reno_increase, slow_start, AckEvent, CongestionControl, PerPath,
    Window,
};
use crate::path::PathView;
use crate::time::Instant;

/// EWTCP's increase weight `a = 1/n²` for `n` active paths.
pub fn ewtcp_weight(paths: &[PathView]) -> f64 {
    let n = paths.iter().filter(|p| p.active).count().max(1) as f64;
    1.0 / (n * n)
}

/// EWTCP: per-path Reno with the increase weighted by `1/n²`.
#[derive(Debug, Clone, Default)]
pub struct Ewtcp {
    carry: PerPath<f64>,
}

impl CongestionControl for Ewtcp {
    fn name(&self) -> &'static str {
        "ewtcp"
    }

    fn on_ack(&mut self, path: usize, ack: &AckEvent, paths: &[PathView]) -> Window {
        let p = &paths[path];
        let (mut cwnd, rest) = slow_start(p, ack.bytes_acked);
        if rest > 0 {
            let inc = ewtcp_weight(paths) * reno_increase(p.mss, rest, cwnd);
            cwnd = apply_fractional(self.carry.get(path), cwnd, inc);
        }
        Window {
            cwnd,
            ssthresh: p.ssthresh,
        }
    }

    fn on_congestion_event(&mut self, path: usize, _now: Instant, paths: &[PathView]) -> Window {
        halve(&paths[path])
    }
}
