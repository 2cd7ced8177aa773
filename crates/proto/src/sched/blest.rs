//! `blest`: blocking-estimation scheduler, after Ferlin, Alay, Mehani and Boreli, "BLEST:
//! Blocking Estimation-based MPTCP Scheduler for Heterogeneous Networks", IFIP Networking
//! 2016, §III.
//!
//! When the fastest path x_f (lowest smoothed RTT) has no window space and a slower path x_s
//! has, BLEST estimates how much the fast path could send while one packet crosses the slow
//! path: with rtts = RTT_s/RTT_f and a window growing by one packet per RTT_f,
//!
//! `X = MSS_f · (cwnd_f + (rtts − 1)/2) · rtts` (cwnd_f in packets),
//!
//! and does not use x_s if `X · λ > |MPTCP_SW| − MSS_s · (inflight_s + 1)`: sending on x_s
//! would leave the send window too small for what x_f will want to send meanwhile, so the
//! receiver would be head-of-line blocked by x_s's packet. MPTCP_SW is the connection-level
//! send window ([`SchedContext::send_window`]). The connection then waits for x_f's window to
//! open (its next ACK). Otherwise the order is min-RTT's.
//!
//! **Deviation:** the paper adapts the scaling factor λ from the head-of-line blocking it
//! observes (λ grows by δλ after a blocking event, shrinks otherwise); the engine gives a
//! scheduler no such signal, so λ is fixed at 1 (the estimate taken at face value).

use super::{fastest, plain, MinRtt, SchedContext, Scheduler};
use crate::path::PathView;
use crate::registry::Entry;

/// λ of the rule above (fixed; see the module docs).
pub const LAMBDA: f64 = 1.0;

/// The `blest` scheduler.
#[derive(Debug, Clone, Default)]
pub struct Blest;

/// BLEST's rule: true if slow path `s` must not send while fast path `f` is full.
pub fn blest_holds(f: &PathView, s: &PathView, send_window: u64) -> bool {
    let (Some(rf), Some(rs)) = (f.srtt, s.srtt) else {
        return false;
    };
    let rf = rf.as_secs_f64().max(1e-6);
    let rtts = rs.as_secs_f64() / rf;
    let mss_f = f.mss.max(1) as f64;
    let cwnd_f = f.cwnd as f64 / mss_f;
    let x = mss_f * (cwnd_f + (rtts - 1.0) / 2.0) * rtts;
    let room = send_window as f64 - s.mss as f64 * (s.packets_in_flight as f64 + 1.0);
    x * LAMBDA > room
}

impl Scheduler for Blest {
    fn name(&self) -> &'static str {
        "blest"
    }
    fn rank(&mut self, paths: &[PathView], candidates: &mut [usize]) {
        MinRtt.rank(paths, candidates);
    }
    fn hold_back(&mut self, ctx: &SchedContext<'_>, candidates: &mut Vec<usize>) {
        let Some(f) = fastest(ctx.paths) else {
            return;
        };
        if candidates.contains(&f) {
            return;
        }
        let fv = &ctx.paths[f];
        candidates.retain(|&s| !blest_holds(fv, &ctx.paths[s], ctx.send_window));
    }
}

/// Registry entry of `blest`.
pub(crate) const ENTRY: Entry<dyn super::SchedulerFactory> = Entry {
    name: "blest",
    aliases: &[],
    summary: "min-RTT, but a slower path waits when its packet would block the send window \
              the fast path needs (Ferlin et al., IFIP Networking 2016; λ fixed at 1)",
    options: &[],
    make: plain::<Blest>,
};

#[cfg(test)]
mod tests {
    use super::super::tests::v;
    use super::*;
    use crate::time::Instant;

    /// Fast path: 10 ms, window full (10 packets of 1000 B in flight); slow path: 100 ms,
    /// empty. rtts = 10, X = 1000 · (10 + 4.5) · 10 = 145 000 B.
    fn paths() -> [PathView; 2] {
        let mut f = v(0, Some(10));
        f.bytes_in_flight = f.cwnd;
        f.packets_in_flight = 10;
        let s = v(1, Some(100));
        [f, s]
    }

    #[test]
    fn waits_for_the_fast_path_when_the_window_is_small() {
        let p = paths();
        // Send window 100 kB: 100 000 − 1000 < 145 000 → x_s held back (min-RTT would send).
        let ctx = SchedContext::new(Instant::ZERO, &p, 1 << 20, 100_000);
        let mut c = vec![1];
        Blest.hold_back(&ctx, &mut c);
        assert!(c.is_empty(), "BLEST must wait for the fast path");
        let mut c = vec![1];
        MinRtt.rank(&p, &mut c);
        assert_eq!(c, [1], "min-RTT would have used the slow path");
    }

    #[test]
    fn uses_the_slow_path_when_the_window_is_large() {
        let p = paths();
        // 1 MB − 1000 > 145 000: no blocking expected.
        let ctx = SchedContext::new(Instant::ZERO, &p, 1 << 20, 1_000_000);
        let mut c = vec![1];
        Blest.hold_back(&ctx, &mut c);
        assert_eq!(c, [1]);
        // The boundary of the rule: X = 145 000 exactly against room = SW − 1000.
        assert!(blest_holds(&p[0], &p[1], 145_999));
        assert!(!blest_holds(&p[0], &p[1], 146_001));
    }

    #[test]
    fn never_holds_the_fast_path() {
        let mut p = paths();
        p[0].bytes_in_flight = 0;
        p[0].packets_in_flight = 0;
        let ctx = SchedContext::new(Instant::ZERO, &p, 1 << 20, 10_000);
        let mut c = vec![0, 1];
        Blest.hold_back(&ctx, &mut c);
        assert_eq!(c, [0, 1]);
    }
}
