//! Schedulers: which path sends next, as a pure decision over the path views.
//!
//! The connection asks the scheduler to rank the paths that have congestion-window space, then
//! offers each in turn to the scheme until one yields a packet. Scheme-specific allocators
//! (FMTCP's expected-arrival-time allocation, for example) decide *what* goes in the packet
//! inside the scheme; the scheduler only orders the paths.
//!
//! Two generic hooks go beyond ordering: [`Scheduler::hold_back`] may remove candidates, so a
//! scheduler can *wait* for a better path whose window is full (BLEST, ECF), and
//! [`Scheduler::redundant`] asks the scheme to carry every packet on every path (the
//! `redundant` scheduler; ARQ schemes honour it, see `scheme::arq`).

use crate::path::PathView;
use crate::registry::{self, Choice, Entry, Factory, Family, Options};
use crate::time::{Duration, Instant};
use std::marker::PhantomData;
use std::sync::Arc;

mod blest;
mod ecf;
mod redundant;

pub use blest::Blest;
pub use ecf::Ecf;
pub use redundant::Redundant;

/// What a scheduler may know about the connection besides its paths.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct SchedContext<'a> {
    /// Current time.
    pub now: Instant,
    /// Every path (the candidates are indices into it).
    pub paths: &'a [PathView],
    /// Stream bytes written by the application and never sent yet (the send queue ECF calls
    /// k), whether or not the receive window lets them go now.
    pub unsent_bytes: u64,
    /// The connection-level send window: the peer's flow-control limit minus its cumulative
    /// acknowledgement, bytes (BLEST's MPTCP_SW).
    pub send_window: u64,
}

impl<'a> SchedContext<'a> {
    /// A context for tests and other drivers.
    pub fn new(now: Instant, paths: &'a [PathView], unsent_bytes: u64, send_window: u64) -> Self {
        SchedContext {
            now,
            paths,
            unsent_bytes,
            send_window,
        }
    }
}

/// Orders candidate paths by preference.
pub trait Scheduler: Send + std::fmt::Debug {
    /// Registry name.
    fn name(&self) -> &'static str;
    /// Sorts `candidates` (path ids with window space) best first.
    fn rank(&mut self, paths: &[PathView], candidates: &mut [usize]);
    /// Called after [`Scheduler::rank`]: removes the candidates that should not send now
    /// (the connection then sends nothing until its next input if none is left). Default:
    /// keep all.
    fn hold_back(&mut self, _ctx: &SchedContext<'_>, _candidates: &mut Vec<usize>) {}
    /// A packet was sent on `path`.
    fn on_sent(&mut self, _path: usize) {}
    /// True if the scheme should send every packet on every path (see [`Redundant`]).
    fn redundant(&self) -> bool {
        false
    }
}

/// The path with the lowest smoothed RTT among the active paths (ties: lower index), the
/// "fastest path" of BLEST and ECF. Paths without an RTT sample are not considered.
pub(crate) fn fastest(paths: &[PathView]) -> Option<usize> {
    paths
        .iter()
        .filter(|p| p.active && p.srtt.is_some())
        .min_by_key(|p| (p.srtt, p.id))
        .map(|p| p.id)
}

/// Lowest smoothed RTT first (the Linux MPTCP default). Paths without a sample yet sort
/// first, so they get measured.
#[derive(Debug, Clone, Default)]
pub struct MinRtt;

impl Scheduler for MinRtt {
    fn name(&self) -> &'static str {
        "min-rtt"
    }
    fn rank(&mut self, paths: &[PathView], candidates: &mut [usize]) {
        candidates.sort_by_key(|&i| (paths[i].srtt.unwrap_or(Duration::ZERO), i));
    }
}

/// Each path in turn, starting after the one that sent last.
#[derive(Debug, Clone, Default)]
pub struct RoundRobin {
    last: Option<usize>,
}

impl Scheduler for RoundRobin {
    fn name(&self) -> &'static str {
        "round-robin"
    }
    fn rank(&mut self, paths: &[PathView], candidates: &mut [usize]) {
        let n = paths.len().max(1);
        let start = self.last.map_or(0, |l| l + 1);
        candidates.sort_by_key(|&i| (i + n - start % n) % n);
    }
    fn on_sent(&mut self, path: usize) {
        self.last = Some(path);
    }
}

/// How a scheduler is configured and built: the object a [`SchedulerConfig`] holds.
pub trait SchedulerFactory: Factory {
    /// A fresh scheduler for one connection.
    fn build(&self) -> Box<dyn Scheduler>;
}

/// The factory of a scheduler without options.
pub struct Plain<T>(PhantomData<fn() -> T>);

impl<T> std::fmt::Debug for Plain<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Plain")
    }
}

impl<T> Factory for Plain<T> {
    fn options(&self) -> Options {
        Options::new()
    }
}

impl<T: Scheduler + Default + 'static> SchedulerFactory for Plain<T> {
    fn build(&self) -> Box<dyn Scheduler> {
        Box::new(T::default())
    }
}

/// `make` of a registry entry for a scheduler without options.
pub fn plain<T: Scheduler + Default + 'static>(
    o: Options,
) -> Result<Arc<dyn SchedulerFactory>, String> {
    registry::no_options(&o)?;
    Ok(Arc::new(Plain::<T>(PhantomData)))
}

/// The scheduler family (see [`crate::registry`]).
#[derive(Debug)]
pub struct Schedulers;

impl Family for Schedulers {
    type Factory = dyn SchedulerFactory;
    const KIND: &'static str = "scheduler";
    fn entries() -> &'static [Entry<dyn SchedulerFactory>] {
        SCHEDULERS
    }
    fn default_name() -> &'static str {
        "min-rtt"
    }
}

/// A chosen scheduler (`scheduler = "..."` in scenario files).
pub type SchedulerConfig = Choice<Schedulers>;

/// Every scheduler selectable by name: one line per scheduler.
pub static SCHEDULERS: &[Entry<dyn SchedulerFactory>] = &[
    Entry {
        name: "min-rtt",
        aliases: &[],
        summary: "lowest smoothed RTT first (the Linux MPTCP default)",
        options: &[],
        make: plain::<MinRtt>,
    },
    Entry {
        name: "round-robin",
        aliases: &[],
        summary: "each path in turn",
        options: &[],
        make: plain::<RoundRobin>,
    },
    redundant::ENTRY,
    blest::ENTRY,
    ecf::ENTRY,
];

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::time::Duration;

    pub(crate) fn v(id: usize, rtt: Option<u64>) -> PathView {
        PathView {
            id,
            active: true,
            state: crate::path::PathState::Active,
            mss: 1000,
            cwnd: 10_000,
            ssthresh: u64::MAX,
            bytes_in_flight: 0,
            packets_in_flight: 0,
            srtt: rtt.map(Duration::from_millis),
            min_rtt: None,
            latest_rtt: None,
            rto: Duration::from_secs(1),
            loss_rate: 0.0,
            in_recovery: false,
            oldest_unacked_sent: None,
            loss_threshold: 3,
            cwnd_limited: true,
            flight_decrease: None,
        }
    }

    #[test]
    fn min_rtt_orders_by_srtt() {
        let paths = [v(0, Some(100)), v(1, Some(20)), v(2, None)];
        let mut c = [0, 1, 2];
        MinRtt.rank(&paths, &mut c);
        assert_eq!(c, [2, 1, 0]);
    }

    #[test]
    fn round_robin_rotates() {
        let paths = [v(0, None), v(1, None), v(2, None)];
        let mut rr = RoundRobin::default();
        let mut c = [0, 1, 2];
        rr.rank(&paths, &mut c);
        assert_eq!(c, [0, 1, 2]);
        rr.on_sent(0);
        rr.rank(&paths, &mut c);
        assert_eq!(c, [1, 2, 0]);
        rr.on_sent(2);
        let mut c = [2, 1];
        rr.rank(&paths, &mut c);
        assert_eq!(c, [1, 2]);
    }
}
