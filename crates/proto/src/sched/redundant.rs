//! `redundant`: every packet on every path, for latency-critical flows.
//!
//! The rule of the Linux MPTCP "redundant" scheduler (Frömmgen et al., "ReMP TCP: Low latency
//! multipath TCP", IEEE ICC 2016): each segment is sent on every available subflow; a subflow
//! that falls behind skips the segments already acknowledged. The scheduler itself ranks the
//! paths as min-RTT (so new data leaves on the fastest path first) and tells the scheme
//! through [`Scheduler::redundant`] to copy; the ARQ schemes (`mptcp`) then give each path
//! the oldest unacknowledged segment it has not carried yet before any new data
//! (`scheme::arq`, counted as `redundant_bytes` and as retransmitted bytes of that path).
//! Schemes that do not replicate data (coded schemes, whose every symbol is already useful on
//! any path) ignore the hint and see plain min-RTT ordering.

use super::{plain, MinRtt, Scheduler};
use crate::path::PathView;
use crate::registry::Entry;

/// The `redundant` scheduler.
#[derive(Debug, Clone, Default)]
pub struct Redundant;

impl Scheduler for Redundant {
    fn name(&self) -> &'static str {
        "redundant"
    }
    fn rank(&mut self, paths: &[PathView], candidates: &mut [usize]) {
        MinRtt.rank(paths, candidates);
    }
    fn redundant(&self) -> bool {
        true
    }
}

/// Registry entry of `redundant`.
pub(crate) const ENTRY: Entry<dyn super::SchedulerFactory> = Entry {
    name: "redundant",
    aliases: &[],
    summary: "every packet on every path, slower paths skip what is acknowledged \
              (Frömmgen et al., ICC 2016; ARQ schemes replicate, coded ones ignore it)",
    options: &[],
    make: plain::<Redundant>,
};
