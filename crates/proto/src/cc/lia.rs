//! LIA, the Linked Increases Algorithm of RFC 6356.
//!
//! In congestion avoidance, an ACK of `bytes_acked` on path i grows its window by
//! `min(alpha · bytes_acked · MSS_i / cwnd_total, bytes_acked · MSS_i / cwnd_i)` (RFC 6356
//! §3, Eq. 2 in byte form) with
//! `alpha = cwnd_total · max_i(cwnd_i / rtt_i²) / (Σ_i cwnd_i / rtt_i)²` (§3, Eq. 1 as
//! specified for the implementation in §4). Slow start and decrease are uncoupled (Reno).

use super::{halve, slow_start, Accumulators, AckEvent, CongestionControl, Window};
use crate::path::PathView;
use crate::time::Instant;

/// Coupled LIA.
#[derive(Debug, Clone, Default)]
pub struct Lia {
    acc: Accumulators,
}

/// RFC 6356 alpha over the active paths with an RTT estimate.
pub fn lia_alpha(paths: &[PathView]) -> f64 {
    let mut total = 0.0;
    let mut best = 0.0f64;
    let mut sum = 0.0;
    for p in paths.iter().filter(|p| p.active) {
        let Some(rtt) = p.srtt else { continue };
        let rtt = rtt.as_secs_f64().max(1e-6);
        let w = p.cwnd as f64;
        total += w;
        best = best.max(w / (rtt * rtt));
        sum += w / rtt;
    }
    if sum == 0.0 {
        1.0
    } else {
        total * best / (sum * sum)
    }
}

impl CongestionControl for Lia {
    fn name(&self) -> &'static str {
        "lia"
    }

    fn on_ack(&mut self, path: usize, ack: &AckEvent, paths: &[PathView]) -> Window {
        let p = &paths[path];
        let (mut cwnd, rest) = slow_start(p, ack.bytes_acked);
        if rest > 0 {
            let total: u64 = paths.iter().filter(|q| q.active).map(|q| q.cwnd).sum();
            let mss = p.mss as f64;
            let coupled = lia_alpha(paths) * rest as f64 * mss / total.max(1) as f64;
            let uncoupled = rest as f64 * mss / cwnd.max(1) as f64;
            cwnd += self.acc.add(path, coupled.min(uncoupled));
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
