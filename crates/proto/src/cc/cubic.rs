//! CUBIC, RFC 9438, uncoupled per path.
//!
//! - Window growth (§4.2): `W_cubic(t) = C·(t − K)³ + W_max` (Figure 1) with
//!   `K = ∛((W_max − cwnd_epoch)/C)` (Figure 2), `t` the time since the congestion-avoidance
//!   epoch began; on each ACK the window moves towards `target = W_cubic(t + RTT)` clamped to
//!   `[cwnd, 1.5·cwnd]` by `(target − cwnd)/cwnd` per segment acknowledged (§4.4, §4.5). RTT
//!   is the smoothed RTT. Windows are kept in bytes, so `C` is scaled by the MSS.
//! - Reno-friendly region (§4.3): `W_est += α_cubic · segments_acked / cwnd` (Figure 4) with
//!   `α_cubic = 3(1 − β)/(1 + β)` (Figure 5), raised to 1 once `W_est ≥ cwnd_prior`; when
//!   `W_cubic(t) < W_est` the window follows `W_est`.
//! - Multiplicative decrease (§4.6): `ssthresh = cwnd = β·cwnd`, floored at 2·MSS;
//!   fast convergence (§4.7): if `cwnd < W_max` then `W_max = cwnd·(1 + β)/2`, else `cwnd`.
//! - Timeout (§4.8): `ssthresh = β·cwnd`, `cwnd = 1 MSS`; the first epoch after it uses
//!   `K = 0` and `W_max` = the window at its start.
//! - Spurious reductions (§4.9): the state before a reduction is kept and restored if the
//!   engine finds that every loss behind it was spurious.
//! - Constants: `C = 0.4`, `β = 0.7` (§5.1, §5.2 defaults). Slow start is standard (RFC 5681,
//!   byte counting); HyStart++ (§4.10 allows it) is not implemented.

use super::{apply_fractional, slow_start, AckEvent, CongestionControl, PerPath, Window};
use crate::path::PathView;
use crate::time::Instant;

/// `C` of RFC 9438 §5.2 (segments / s³).
pub const CUBIC_C: f64 = 0.4;
/// `β_cubic` of RFC 9438 §5.1.
pub const CUBIC_BETA: f64 = 0.7;

#[derive(Debug, Clone, Default)]
struct State {
    /// Start of the current congestion-avoidance epoch.
    epoch_start: Option<Instant>,
    /// `W_max` (bytes); 0 until the first reduction and after a timeout.
    w_max: f64,
    /// `K` (seconds) of the current epoch.
    k: f64,
    /// `W_max` used by the current epoch (bytes).
    origin: f64,
    /// Reno-friendly estimate `W_est` (bytes).
    w_est: f64,
    /// Window before the last reduction (bytes).
    cwnd_prior: f64,
    carry: f64,
    /// The state before the last reduction (RFC 9438 §4.9: `W_max`, `K`, the epoch,
    /// `W_est`, `cwnd_prior` are restored when the reduction proves spurious).
    prev: Option<Box<State>>,
}

/// CUBIC (RFC 9438) per path.
#[derive(Debug, Clone, Default)]
pub struct Cubic {
    st: PerPath<State>,
}

impl Cubic {
    /// `W_cubic(t)` in bytes for path state with `mss` (RFC 9438 Figure 1).
    fn w_cubic(st: &State, mss: f64, t: f64) -> f64 {
        CUBIC_C * mss * (t - st.k).powi(3) + st.origin
    }
}

impl CongestionControl for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    fn on_ack(&mut self, path: usize, ack: &AckEvent, paths: &[PathView]) -> Window {
        let p = &paths[path];
        let (cwnd, rest) = slow_start(p, ack.bytes_acked);
        let st = self.st.get(path);
        if rest == 0 {
            return Window {
                cwnd,
                ssthresh: p.ssthresh,
            };
        }
        let mss = p.mss as f64;
        let cw = cwnd as f64;
        let start = *st.epoch_start.get_or_insert_with(|| {
            if st.w_max <= cw {
                st.k = 0.0;
                st.origin = cw;
            } else {
                st.k = ((st.w_max - cw) / (CUBIC_C * mss)).cbrt();
                st.origin = st.w_max;
            }
            st.w_est = cw;
            ack.now
        });
        let t = ack.now.saturating_since(start).as_secs_f64();
        let rtt = p.srtt.map_or(0.0, |d| d.as_secs_f64());
        let alpha = if st.w_est >= st.cwnd_prior {
            1.0
        } else {
            3.0 * (1.0 - CUBIC_BETA) / (1.0 + CUBIC_BETA)
        };
        st.w_est += alpha * mss * rest as f64 / cw;
        let new = if Self::w_cubic(st, mss, t) < st.w_est {
            st.carry = 0.0;
            // Never faster than slow start: W_est can stand far above a window the engine
            // lowered behind the controller's back (MPTCP's penalisation).
            (st.w_est as u64).clamp(cwnd, cwnd + rest)
        } else {
            let target = Self::w_cubic(st, mss, t + rtt).clamp(cw, 1.5 * cw);
            apply_fractional(&mut st.carry, cwnd, (target - cw) * rest as f64 / cw)
        };
        Window {
            cwnd: new,
            ssthresh: p.ssthresh,
        }
    }

    fn on_congestion_event(&mut self, path: usize, _now: Instant, paths: &[PathView]) -> Window {
        let p = &paths[path];
        let st = self.st.get(path);
        let mut saved = st.clone();
        saved.prev = None;
        st.prev = Some(Box::new(saved));
        let cw = p.cwnd as f64;
        st.w_max = if cw < st.w_max {
            cw * (1.0 + CUBIC_BETA) / 2.0
        } else {
            cw
        };
        st.cwnd_prior = cw;
        st.epoch_start = None;
        st.carry = 0.0;
        super::reduced(p, cw * CUBIC_BETA)
    }

    fn on_timeout(&mut self, path: usize, _now: Instant, paths: &[PathView]) -> Window {
        let p = &paths[path];
        let st = self.st.get(path);
        st.cwnd_prior = p.cwnd as f64;
        st.prev = None;
        st.w_max = 0.0;
        st.epoch_start = None;
        st.carry = 0.0;
        Window {
            cwnd: p.mss,
            ssthresh: ((p.cwnd as f64 * CUBIC_BETA) as u64).max(2 * p.mss),
        }
    }

    /// RFC 9438 §4.9: restore `W_max`, `K`, the epoch, `W_est` and `cwnd_prior` from before
    /// the spurious reduction, and the window (the larger of the current and prior values,
    /// as the default).
    fn on_spurious_congestion(
        &mut self,
        path: usize,
        _now: Instant,
        prior: Window,
        paths: &[PathView],
    ) -> Window {
        let st = self.st.get(path);
        if let Some(prev) = st.prev.take() {
            *st = *prev;
        }
        Window::undone(&paths[path], prior)
    }
}
