//! NewReno: RFC 5681 slow start and congestion avoidance, RFC 6582 one reduction per window.

use super::{halve, slow_start, Accumulators, AckEvent, CongestionControl, Window};
use crate::path::PathView;
use crate::time::Instant;

/// Uncoupled NewReno per path.
#[derive(Debug, Clone, Default)]
pub struct NewReno {
    acc: Accumulators,
}

impl CongestionControl for NewReno {
    fn name(&self) -> &'static str {
        "new-reno"
    }

    fn on_ack(&mut self, path: usize, ack: &AckEvent, paths: &[PathView]) -> Window {
        let p = &paths[path];
        let (mut cwnd, rest) = slow_start(p, ack.bytes_acked);
        if rest > 0 {
            // Congestion avoidance: +1 MSS per window acknowledged (RFC 5681 Eq. 3, byte-counted).
            cwnd += self
                .acc
                .add(path, p.mss as f64 * rest as f64 / cwnd.max(1) as f64);
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
