//! Schedulers: which path sends next, as a pure decision over the path views.
//!
//! The connection asks the scheduler to rank the paths that have congestion-window space, then
//! offers each in turn to the scheme until one yields a packet. Scheme-specific allocators
//! (FMTCP's expected-arrival-time allocation, for example) decide *what* goes in the packet
//! inside the scheme; the scheduler only orders the paths.

use crate::path::PathView;
use crate::registry::{self, Choice, Entry, Factory, Family, Options};
use crate::time::Duration;
use std::marker::PhantomData;
use std::sync::Arc;

/// Orders candidate paths by preference.
pub trait Scheduler: Send + std::fmt::Debug {
    /// Registry name.
    fn name(&self) -> &'static str;
    /// Sorts `candidates` (path ids with window space) best first.
    fn rank(&mut self, paths: &[PathView], candidates: &mut [usize]);
    /// A packet was sent on `path`.
    fn on_sent(&mut self, _path: usize) {}
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
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Duration;

    fn v(id: usize, rtt: Option<u64>) -> PathView {
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
