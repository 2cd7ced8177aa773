//! OLIA, the Opportunistic Linked-Increases Algorithm (R. Khalili, N. Gast, M. Popovic,
//! U. Upadhyay, J.-Y. Le Boudec, "MPTCP is not Pareto-optimal: performance issues and a
//! possible solution", ACM CoNEXT 2012; also IEEE/ACM ToN 21(5), 2013, and
//! draft-khalili-mptcp-congestion-control).
//!
//! Each ACK on path r increases `w_r` (in packets) by
//! `(w_r/rtt_r²) / (Σ_p w_p/rtt_p)² + α_r/w_r`; each loss halves `w_r`. With `l_r` the larger of
//! the bytes acknowledged between the last two losses on r and since the last loss:
//! - `B` = the *best* paths, maximising `l_r/rtt_r²` (an estimate of a TCP's rate² on r);
//! - `M` = the paths with the largest window;
//! - if `B \ M` is empty, `α_r = 0`; otherwise `α_r = 1/(n·|B \ M|)` for `r ∈ B \ M`,
//!   `α_r = −1/(n·|M|)` for `r ∈ M`, and 0 for the others (n = number of active paths).
//!
//! In bytes, for `bytes_acked` acknowledged: `MSS·bytes_acked·((w_r/rtt_r²)/(Σ w_p/rtt_p)² +
//! α_r/w_r)` with windows in bytes. RTTs are smoothed RTTs. The α term moves window from the
//! largest paths to the best ones, which is how OLIA reaches Pareto-optimality; it can also
//! make an ACK *shrink* a window in `M` (floored at 1 MSS). The first term alone never exceeds
//! Reno's `MSS·bytes_acked/w_r`; with α the increase is at most `(1 + 1/n)` times Reno's.
//! Slow start is uncoupled.

use super::{
    apply_fractional, halve, rtt_secs, slow_start, AckEvent, CongestionControl, PerPath, Window,
};
use crate::path::PathView;
use crate::time::Instant;

/// Bytes acknowledged between losses on one path (OLIA's `l_r`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LossInterval {
    /// Bytes acknowledged between the last two losses.
    pub between: u64,
    /// Bytes acknowledged since the last loss.
    pub since: u64,
}

impl LossInterval {
    /// `l_r = max(l_1r, l_2r)`.
    pub fn l(&self) -> u64 {
        self.between.max(self.since)
    }
    /// A loss (or timeout) closes the interval.
    pub fn on_loss(&mut self) {
        self.between = self.since;
        self.since = 0;
    }
}

/// OLIA's α_r (see the module doc); `l(id)` gives `l_p` for path id `p`.
pub fn olia_alpha(paths: &[PathView], r: usize, l: impl Fn(usize) -> u64) -> f64 {
    let active: Vec<&PathView> = paths.iter().filter(|p| p.active).collect();
    let n = active.len().max(1) as f64;
    let metric = |p: &PathView| {
        let rtt = rtt_secs(p);
        l(p.id) as f64 / (rtt * rtt)
    };
    let best = active.iter().map(|p| metric(p)).fold(0.0f64, f64::max);
    let max_w = active.iter().map(|p| p.cwnd).max().unwrap_or(0);
    let in_m = |p: &PathView| p.cwnd == max_w;
    let in_collected = |p: &PathView| metric(p) >= best && !in_m(p);
    let collected = active.iter().filter(|p| in_collected(p)).count() as f64;
    if collected == 0.0 {
        return 0.0;
    }
    let me = &paths[r];
    if in_collected(me) {
        1.0 / (n * collected)
    } else if in_m(me) {
        let m = active.iter().filter(|p| in_m(p)).count() as f64;
        -1.0 / (n * m)
    } else {
        0.0
    }
}

/// OLIA's window change in bytes on path `r` for `bytes` acknowledged with window `cwnd`.
pub fn olia_increase(
    paths: &[PathView],
    r: usize,
    cwnd: u64,
    bytes: u64,
    l: impl Fn(usize) -> u64,
) -> f64 {
    let p = &paths[r];
    let sum: f64 = paths
        .iter()
        .filter(|q| q.active)
        .map(|q| q.cwnd as f64 / rtt_secs(q))
        .sum();
    let rtt = rtt_secs(p);
    let w = cwnd.max(1) as f64;
    let sum = sum.max(w / rtt);
    let first = (w / (rtt * rtt)) / (sum * sum);
    p.mss as f64 * bytes as f64 * (first + olia_alpha(paths, r, l) / w)
}

/// A coupled window change that may be negative: never below 1 MSS (nor raised by the floor).
pub(crate) fn apply_signed(carry: &mut f64, p: &PathView, cwnd: u64, inc: f64) -> u64 {
    let new = apply_fractional(carry, cwnd, inc);
    if new < cwnd {
        new.max(p.mss.min(cwnd))
    } else {
        new
    }
}

#[derive(Debug, Clone, Default)]
struct State {
    l: LossInterval,
    carry: f64,
}

/// OLIA.
#[derive(Debug, Clone, Default)]
pub struct Olia {
    st: PerPath<State>,
}

impl CongestionControl for Olia {
    fn name(&self) -> &'static str {
        "olia"
    }

    fn on_ack(&mut self, path: usize, ack: &AckEvent, paths: &[PathView]) -> Window {
        let p = &paths[path];
        self.st.get(path).l.since += ack.bytes_acked;
        let (mut cwnd, rest) = slow_start(p, ack.bytes_acked);
        if rest > 0 {
            let st = &self.st;
            let inc = olia_increase(paths, path, cwnd, rest, |i| {
                st.peek(i).map_or(0, |s| s.l.l())
            });
            let s = self.st.get(path);
            cwnd = apply_signed(&mut s.carry, p, cwnd, inc);
        }
        Window {
            cwnd,
            ssthresh: p.ssthresh,
        }
    }

    fn on_congestion_event(&mut self, path: usize, _now: Instant, paths: &[PathView]) -> Window {
        self.st.get(path).l.on_loss();
        halve(&paths[path])
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
