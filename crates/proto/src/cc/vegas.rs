//! TCP Vegas (L. Brakmo, L. Peterson, "TCP Vegas: End to End Congestion Avoidance on a Global
//! Internet", IEEE JSAC 13(8), 1995, §3.2), uncoupled per path.
//!
//! Once per round trip (rounds as Linux `tcp_vegas`: a round ends when a packet sent after it
//! began is acknowledged), with `BaseRTT` the smallest RTT ever measured on the path and `RTT`
//! the smallest sample of the round:
//! `Expected = cwnd/BaseRTT`, `Actual = cwnd/RTT`, `Diff = (Expected − Actual)·BaseRTT`
//! (in packets). If `Diff < α` the window grows by one MSS; if `Diff > β` it shrinks by one MSS;
//! otherwise it is left alone. `α = 2`, `β = 4` packets: the paper runs both "Vegas-1,3" and
//! "Vegas-2,4"; 2/4 is also Linux's default.
//! Modified slow start (§3.3): slow start ends once `Diff > γ = 1` packet, setting the window to
//! `min(cwnd, BaseRTT/RTT·cwnd + 1 MSS)`, as Linux does. Losses halve the window (Reno's rule,
//! which Linux's Vegas also uses); the round restarts after a loss.

use super::{halve, slow_start, AckEvent, CongestionControl, PerPath, RoundRtt, RttRounds, Window};
use crate::path::PathView;
use crate::time::Instant;

/// Vegas α: grow while fewer than this many packets are queued (packets).
pub const VEGAS_ALPHA: f64 = 2.0;
/// Vegas β: shrink while more than this many packets are queued (packets).
pub const VEGAS_BETA: f64 = 4.0;
/// Vegas γ: leave slow start once this many packets are queued (packets).
pub const VEGAS_GAMMA: f64 = 1.0;

/// Backlog estimate `Diff = cwnd·(RTT − BaseRTT)/RTT` in packets (Brakmo & Peterson §3.2).
pub fn vegas_diff(cwnd: u64, mss: u64, rtt: f64, base: f64) -> f64 {
    if rtt <= 0.0 {
        return 0.0;
    }
    cwnd as f64 / mss as f64 * (rtt - base).max(0.0) / rtt
}

/// The Vegas slow-start exit (Linux `tcp_vegas`): if the backlog exceeds γ, returns the
/// window `min(cwnd, BaseRTT/RTT·cwnd + MSS)`, with ssthresh set to it (ends slow start).
pub(crate) fn slow_start_exit(p: &PathView, cwnd: u64, rtt: f64, base: f64) -> Option<Window> {
    if vegas_diff(cwnd, p.mss, rtt, base) <= VEGAS_GAMMA {
        return None;
    }
    let target = (cwnd as f64 * base / rtt) as u64 + p.mss;
    let cwnd = cwnd.min(target).max(2 * p.mss);
    Some(Window {
        cwnd,
        ssthresh: cwnd,
    })
}

/// One round's Vegas step with thresholds `alpha`/`beta` (packets): ±1 MSS or nothing.
/// A decrease also lowers ssthresh to the window, so the path stays in avoidance.
pub(crate) fn vegas_step(p: &PathView, diff: f64, alpha: f64, beta: f64) -> Window {
    if diff < alpha {
        Window {
            cwnd: p.cwnd + p.mss,
            ssthresh: p.ssthresh,
        }
    } else if diff > beta && p.cwnd > 2 * p.mss {
        let cwnd = (p.cwnd - p.mss).max(2 * p.mss);
        Window {
            cwnd,
            ssthresh: p.ssthresh.min(cwnd),
        }
    } else {
        Window {
            cwnd: p.cwnd,
            ssthresh: p.ssthresh,
        }
    }
}

/// Vegas per path.
#[derive(Debug, Clone, Default)]
pub struct Vegas {
    rounds: PerPath<RttRounds>,
}

impl CongestionControl for Vegas {
    fn name(&self) -> &'static str {
        "vegas"
    }

    fn on_ack(&mut self, path: usize, ack: &AckEvent, paths: &[PathView]) -> Window {
        let p = &paths[path];
        let round = self.rounds.get(path).on_ack(ack.now, ack.rtt_sample);
        let base = p.min_rtt.map(|d| d.as_secs_f64());
        if p.cwnd < p.ssthresh {
            let (cwnd, _) = slow_start(p, ack.bytes_acked);
            if let (Some(RoundRtt { min, .. }), Some(base)) = (round, base) {
                if let Some(w) = slow_start_exit(p, cwnd, min, base) {
                    return w;
                }
            }
            return Window {
                cwnd,
                ssthresh: p.ssthresh,
            };
        }
        match (round, base) {
            (Some(r), Some(base)) => vegas_step(
                p,
                vegas_diff(p.cwnd, p.mss, r.min, base),
                VEGAS_ALPHA,
                VEGAS_BETA,
            ),
            _ => Window {
                cwnd: p.cwnd,
                ssthresh: p.ssthresh,
            },
        }
    }

    fn on_congestion_event(&mut self, path: usize, _now: Instant, paths: &[PathView]) -> Window {
        self.rounds.get(path).reset();
        halve(&paths[path])
    }

    fn on_timeout(&mut self, path: usize, _now: Instant, paths: &[PathView]) -> Window {
        self.rounds.get(path).reset();
        let p = &paths[path];
        Window {
            cwnd: p.mss,
            ssthresh: (p.cwnd / 2).max(2 * p.mss),
        }
    }
}
