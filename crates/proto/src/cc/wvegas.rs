//! wVegas, weighted Vegas (Y. Cao, M. Xu, X. Fu, "Delay-based Congestion Control for Multipath
//! TCP", IEEE ICNP 2012), with the constants and details of the authors' Linux
//! implementation (`mptcp_wvegas.c` in the out-of-tree MPTCP kernel, by Cao and Dong).
//!
//! Each subflow runs Vegas with its own threshold `α_r`, the share of a connection-wide total:
//! `α_r = max(2, weight_r · α_total)` with `weight_r = x_r / Σ_k x_k`, `x = cwnd/RTT` (the
//! subflow's share of the connection's rate), `α_total = 10` packets, `α_r = 2` initially.
//! Once per round (see [`super::vegas`]), with `RTT` the *mean* sample of the round and
//! `diff_r = cwnd_r·(RTT − BaseRTT)/RTT` packets:
//! - slow start (Reno's) ends once `diff_r > γ = 1`, as Vegas;
//! - in avoidance, `α_r` is recomputed when `diff_r ≥ α_r`; then `cwnd_r` grows by one MSS if
//!   `diff_r < α_r`, shrinks by one MSS if `diff_r > α_r`;
//! - queue drain (as the Linux module does it): with `q = RTT − BaseRTT` and `q_min` the
//!   smallest `q` seen since the last drain, if `q ≥ 2·q_min` the window is scaled by
//!   `BaseRTT/(2·RTT)` and `q_min` is reset. We apply it only while `diff_r > α_r` (the
//!   subflow's queue is above its target, the case the rule exists for). Ungated, the rule
//!   fires on sub-millisecond queueing jitter: in our simulator a lone wVegas subflow then got
//!   1.0 Mbit/s of a clean 10 Mbit/s path, and a two-path flow 0.40 of the best single-path TCP
//!   (docs/experiments/congestion.md).
//!
//! Losses halve the window (Reno's rule, as the Linux module). Since `α_r ≥ 2`, a subflow is
//! never less aggressive than one Vegas with α = 2; with `α_total = 10` the subflows together
//! hold up to 10 packets in queues, where one Vegas holds 2–4: wVegas is designed to take its
//! fair share from *Vegas-like* competitors by rate shares, not to be weaker than each.

use super::vegas::{slow_start_exit, vegas_diff};
use super::{halve, rtt_secs, slow_start, AckEvent, CongestionControl, PerPath, RttRounds, Window};
use crate::path::PathView;
use crate::time::Instant;

/// Initial per-subflow α (packets), Linux `initial_alpha`.
pub const WVEGAS_INITIAL_ALPHA: f64 = 2.0;
/// Connection-wide α (packets), Linux `total_alpha`.
pub const WVEGAS_TOTAL_ALPHA: f64 = 10.0;

#[derive(Debug, Clone)]
struct State {
    rounds: RttRounds,
    alpha: f64,
    /// Rate at the last α update (bytes/s), 0 until then (Linux `instant_rate`).
    rate: f64,
    /// Smallest queueing delay since the last drain (s), 0 = none.
    q_min: f64,
}

impl Default for State {
    fn default() -> Self {
        State {
            rounds: RttRounds::default(),
            alpha: WVEGAS_INITIAL_ALPHA,
            rate: 0.0,
            q_min: 0.0,
        }
    }
}

/// Weighted Vegas.
#[derive(Debug, Clone, Default)]
pub struct WVegas {
    st: PerPath<State>,
}

impl WVegas {
    /// `α_r = max(2, α_total · x_r / Σ x_k)`; other subflows' rates are their last measured
    /// ones, or `cwnd/SRTT` before they have one.
    fn alpha(&self, paths: &[PathView], r: usize, rate: f64) -> f64 {
        let total: f64 = paths
            .iter()
            .filter(|p| p.active)
            .map(|p| {
                if p.id == r {
                    rate
                } else {
                    match self.st.peek(p.id) {
                        Some(s) if s.rate > 0.0 => s.rate,
                        _ => p.cwnd as f64 / rtt_secs(p),
                    }
                }
            })
            .sum();
        if total <= 0.0 {
            return WVEGAS_INITIAL_ALPHA;
        }
        (WVEGAS_TOTAL_ALPHA * rate / total).max(WVEGAS_INITIAL_ALPHA)
    }
}

impl CongestionControl for WVegas {
    fn name(&self) -> &'static str {
        "wvegas"
    }

    fn on_ack(&mut self, path: usize, ack: &AckEvent, paths: &[PathView]) -> Window {
        let p = &paths[path];
        let round = self.st.get(path).rounds.on_ack(ack.now, ack.rtt_sample);
        let base = p.min_rtt.map(|d| d.as_secs_f64());
        if p.cwnd < p.ssthresh {
            let (cwnd, _) = slow_start(p, ack.bytes_acked);
            if let (Some(r), Some(base)) = (round, base) {
                if let Some(w) = slow_start_exit(p, cwnd, r.mean, base) {
                    return w;
                }
            }
            return Window {
                cwnd,
                ssthresh: p.ssthresh,
            };
        }
        let (Some(r), Some(base)) = (round, base) else {
            return Window {
                cwnd: p.cwnd,
                ssthresh: p.ssthresh,
            };
        };
        let rtt = r.mean;
        let diff = vegas_diff(p.cwnd, p.mss, rtt, base);
        if diff >= self.st.get(path).alpha {
            let rate = p.cwnd as f64 / rtt.max(1e-6);
            let alpha = self.alpha(paths, path, rate);
            let st = self.st.get(path);
            st.rate = rate;
            st.alpha = alpha;
        }
        let st = self.st.get(path);
        let mut w = super::vegas::vegas_step(p, diff, st.alpha, st.alpha);
        let q = (rtt - base).max(0.0);
        if st.q_min == 0.0 || st.q_min > q {
            st.q_min = q;
        }
        if diff > st.alpha && q >= 2.0 * st.q_min {
            w.cwnd = ((w.cwnd as f64 * base / (2.0 * rtt)) as u64).max(2 * p.mss);
            w.ssthresh = w.ssthresh.min(w.cwnd);
            st.q_min = 0.0;
        }
        w
    }

    fn on_congestion_event(&mut self, path: usize, _now: Instant, paths: &[PathView]) -> Window {
        let st = self.st.get(path);
        st.rounds.reset();
        st.rate = 0.0;
        halve(&paths[path])
    }

    fn on_timeout(&mut self, path: usize, _now: Instant, paths: &[PathView]) -> Window {
        let st = self.st.get(path);
        st.rounds.reset();
        st.rate = 0.0;
        let p = &paths[path];
        Window {
            cwnd: p.mss,
            ssthresh: (p.cwnd / 2).max(2 * p.mss),
        }
    }
}
