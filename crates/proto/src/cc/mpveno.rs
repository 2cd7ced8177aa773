//! MPVeno, multipath Veno (T. A. Le, "Improving the Performance of Multipath Congestion
//! Control over Wireless Networks", IEEE ATC 2013), as described by the platform paper
//! (`mptcp-platform.txt` §2: "designed based on TCP Veno and adopts the MPTCP-OLIA window
//! increase rule"). We have not had Le's text; this module combines, per subflow:
//!
//! - Veno's backlog `N_r = cwnd_r·(RTT_r − BaseRTT_r)/RTT_r` (see [`super::veno`]), β = 3;
//! - OLIA's coupled increase (see [`super::olia`]) in avoidance, applied in full while
//!   `N_r < β`, and only in every other window of acknowledged bytes while `N_r ≥ β` (Veno's
//!   "increase every other RTT" in the congestive state);
//! - Veno's decrease on loss: `×4/5` if `N_r < β` (random loss), `×1/2` otherwise (floor 2·MSS).
//!
//! Slow start and timeouts are uncoupled (Reno's). Like OLIA, an ACK can raise a window by at
//! most `(1 + 1/n)` times Reno's increase.

use super::olia::{apply_signed, olia_increase, LossInterval};
use super::veno::{veno_backlog, VenoState};
use super::{slow_start, AckEvent, CongestionControl, PerPath, Window};
use crate::path::PathView;
use crate::time::Instant;

#[derive(Debug, Clone, Default)]
struct State {
    veno: VenoState,
    l: LossInterval,
}

/// MPVeno.
#[derive(Debug, Clone, Default)]
pub struct MpVeno {
    st: PerPath<State>,
}

impl CongestionControl for MpVeno {
    fn name(&self) -> &'static str {
        "mpveno"
    }

    fn on_ack(&mut self, path: usize, ack: &AckEvent, paths: &[PathView]) -> Window {
        let p = &paths[path];
        {
            let st = self.st.get(path);
            st.l.since += ack.bytes_acked;
            st.veno.backlog = veno_backlog(p, ack.rtt_sample);
        }
        let (mut cwnd, rest) = slow_start(p, ack.bytes_acked);
        if rest > 0 {
            let st = &self.st;
            let inc = olia_increase(paths, path, cwnd, rest, |i| {
                st.peek(i).map_or(0, |s| s.l.l())
            });
            let s = self.st.get(path);
            let inc = if inc > 0.0 {
                s.veno.gate(cwnd, rest, inc)
            } else {
                inc
            };
            cwnd = apply_signed(&mut s.veno.carry, p, cwnd, inc);
        }
        Window {
            cwnd,
            ssthresh: p.ssthresh,
        }
    }

    fn on_congestion_event(&mut self, path: usize, _now: Instant, paths: &[PathView]) -> Window {
        let st = self.st.get(path);
        st.l.on_loss();
        st.veno.decrease(&paths[path])
    }

    fn on_timeout(&mut self, path: usize, _now: Instant, paths: &[PathView]) -> Window {
        self.st.get(path).l.on_loss();
        let p = &paths[path];
        Window {
            cwnd: p.mss,
            ssthresh: (p.cwnd / 2).max(2 * p.mss),
        }
    }
}
