//! `ecf`: Earliest Completion First, after Lim, Nahum, Towsley and Gibbens, "ECF: An MPTCP
//! Path Scheduler to Manage Heterogeneous Paths", ACM CoNEXT 2017, §3 (Algorithm 1).
//!
//! If the fastest path x_f (lowest smoothed RTT) has window space it sends. Otherwise let x_s
//! be the best path that has space, k the packets waiting in the send queue
//! ([`SchedContext::unsent_bytes`] / MSS), cwnd in packets, δ = max(σ_f, σ_s) the larger RTT
//! deviation, β = 0.25 and `waiting` ∈ {0, 1} the hysteresis state. With n = 1 + k/cwnd_f
//! (the rounds x_f needs for the queue):
//!
//! - if `n · RTT_f < (1 + waiting·β)(RTT_s + δ)` — waiting for x_f finishes the queue before
//!   one round on x_s — then, if also `(k/cwnd_s) · RTT_s ≥ 2·RTT_f + δ` (x_s could not finish
//!   it earlier either), set `waiting = 1` and send nothing (wait for x_f); else use x_s;
//! - else set `waiting = 0` and use x_s.
//!
//! σ is kept here per path as RFC 6298's RTTVAR (σ ← ¾σ + ¼|SRTT − R|) over the latest RTT
//! samples seen in the path views (a sample equal to the previous one is not told apart from
//! no new sample).

use super::{fastest, plain, MinRtt, SchedContext, Scheduler};
use crate::path::PathView;
use crate::registry::Entry;
use crate::time::Duration;

/// β of the hysteresis (the paper's value).
pub const BETA: f64 = 0.25;

/// The `ecf` scheduler.
#[derive(Debug, Clone, Default)]
pub struct Ecf {
    waiting: bool,
    /// Per path: (last RTT sample seen, RTT deviation σ in seconds).
    dev: Vec<(Option<Duration>, f64)>,
}

/// ECF's decision for the best available path `s` while the fastest path `f` is full, with
/// `k_packets` queued, deviation `delta` (seconds) and the current hysteresis state:
/// (wait for `f`, new `waiting` state).
pub fn ecf_waits(
    f: &PathView,
    s: &PathView,
    k_packets: f64,
    delta: f64,
    waiting: bool,
) -> (bool, bool) {
    let (Some(rf), Some(rs)) = (f.srtt, s.srtt) else {
        return (false, waiting);
    };
    let (rf, rs) = (rf.as_secs_f64(), rs.as_secs_f64());
    let cwnd_f = (f.cwnd as f64 / f.mss.max(1) as f64).max(1.0);
    let cwnd_s = (s.cwnd as f64 / s.mss.max(1) as f64).max(1.0);
    let n = 1.0 + k_packets / cwnd_f;
    let w = if waiting { 1.0 } else { 0.0 };
    if n * rf < (1.0 + w * BETA) * (rs + delta) {
        if (k_packets / cwnd_s) * rs >= 2.0 * rf + delta {
            (true, true)
        } else {
            (false, waiting)
        }
    } else {
        (false, false)
    }
}

impl Ecf {
    fn sigma(&mut self, paths: &[PathView], i: usize) -> f64 {
        if self.dev.len() < paths.len() {
            self.dev.resize(paths.len(), (None, 0.0));
        }
        let p = &paths[i];
        let (last, sigma) = &mut self.dev[i];
        if p.latest_rtt.is_some() && p.latest_rtt != *last {
            *last = p.latest_rtt;
            if let (Some(r), Some(srtt)) = (p.latest_rtt, p.srtt) {
                let diff = (srtt.as_secs_f64() - r.as_secs_f64()).abs();
                *sigma = 0.75 * *sigma + 0.25 * diff;
            }
        }
        *sigma
    }
}

impl Scheduler for Ecf {
    fn name(&self) -> &'static str {
        "ecf"
    }
    fn rank(&mut self, paths: &[PathView], candidates: &mut [usize]) {
        MinRtt.rank(paths, candidates);
        for i in 0..paths.len() {
            self.sigma(paths, i);
        }
    }
    fn hold_back(&mut self, ctx: &SchedContext<'_>, candidates: &mut Vec<usize>) {
        let Some(f) = fastest(ctx.paths) else {
            return;
        };
        if candidates.contains(&f) {
            return;
        }
        // x_s: the best candidate with an RTT sample (unmeasured paths are left to probe).
        let Some(&s) = candidates.iter().find(|&&c| ctx.paths[c].srtt.is_some()) else {
            return;
        };
        let delta = self.sigma(ctx.paths, f).max(self.sigma(ctx.paths, s));
        let k = ctx.unsent_bytes as f64 / ctx.paths[f].mss.max(1) as f64;
        let (wait, state) = ecf_waits(&ctx.paths[f], &ctx.paths[s], k, delta, self.waiting);
        self.waiting = state;
        if wait {
            candidates.retain(|&c| ctx.paths[c].srtt.is_none());
        }
    }
}

/// Registry entry of `ecf`.
pub(crate) const ENTRY: Entry<dyn super::SchedulerFactory> = Entry {
    name: "ecf",
    aliases: &[],
    summary: "earliest completion first: wait for the fastest path when it would finish the \
              send queue sooner than a slower one (Lim et al., CoNEXT 2017)",
    options: &[],
    make: plain::<Ecf>,
};

#[cfg(test)]
mod tests {
    use super::super::tests::v;
    use super::*;
    use crate::time::Instant;

    /// Fast path 10 ms with a full 10-packet window, slow path 100 ms with an empty one.
    fn paths() -> [PathView; 2] {
        let mut f = v(0, Some(10));
        f.bytes_in_flight = f.cwnd;
        f.packets_in_flight = 10;
        [f, v(1, Some(100))]
    }

    #[test]
    fn waits_for_the_fast_path_with_a_short_queue() {
        let p = paths();
        // k = 20 packets: n = 1 + 20/10 = 3 rounds of 10 ms = 30 ms < 100 ms, and
        // (20/10)·100 ms = 200 ms ≥ 2·10 ms: wait (min-RTT would send on the slow path).
        let ctx = SchedContext::new(Instant::ZERO, &p, 20 * 1000, 1 << 20);
        let mut ecf = Ecf::default();
        let mut c = vec![1];
        ecf.hold_back(&ctx, &mut c);
        assert!(c.is_empty(), "ECF must wait for the fast path");
        assert!(ecf.waiting);
    }

    #[test]
    fn uses_the_slow_path_with_a_long_queue() {
        let p = paths();
        // k = 200 packets: n = 21 rounds = 210 ms > 100 ms: the slow path helps.
        let ctx = SchedContext::new(Instant::ZERO, &p, 200 * 1000, 1 << 20);
        let mut ecf = Ecf::default();
        let mut c = vec![1];
        ecf.hold_back(&ctx, &mut c);
        assert_eq!(c, [1]);
        assert!(!ecf.waiting);
    }

    #[test]
    fn hysteresis_keeps_waiting() {
        let p = paths();
        // k = 95: n = 10.5 → 105 ms ≥ 100 ms: not waiting from idle, but still waiting once
        // waiting (105 < 1.25 · 100).
        let k = 95.0;
        assert_eq!(ecf_waits(&p[0], &p[1], k, 0.0, false), (false, false));
        assert_eq!(ecf_waits(&p[0], &p[1], k, 0.0, true), (true, true));
    }
}
