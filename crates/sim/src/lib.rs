//! Tributary's deterministic discrete-event network simulator.
//!
//! It moves the real serialized datagrams of [`tributary_proto::Connection`]s over links with
//! rate, delay, drop-tail queues, random loss and faults, between applications ([`app`]:
//! bulk, files, background sources, ...) built when their flow starts and released when it is
//! done. Every byte a receiving application reads is compared with what its sender wrote, at
//! its offset, as it arrives. The same [`SimConfig`] and seed give bit-identical
//! [`SimResult`]s.
//!
//! Topologies are links plus routes: a flow's path is a list of links, so flows that list the
//! same link share it (a dumbbell bottleneck is a link every flow's path crosses).

#![warn(missing_docs)]

pub mod app;
pub mod bench;
mod config;
pub mod data;
mod engine;
mod qlog;
pub mod random;
mod result;
pub mod stats;
pub mod units;

pub use app::{AppConfig, Applications};
pub use config::{
    ArrivalConfig, Direction, FlowConfig, FlowKind, LinkChange, LinkConfig, SimConfig,
    SimConfigError, TimedChange, DEFAULT_MAX_LIVE_FLOWS, MAX_ALL_SAMPLES, MAX_ARRIVALS,
    MAX_HEADER_OVERHEAD, MAX_SAMPLES,
};
pub use engine::{derive_seed, flow_start, SimError, Simulator};
pub use result::{
    AppCounters, ArrivalResult, BlockDelay, DistributionSummary, FlowResult, LinkResult,
    PathResult, PathSeries, SimResult,
};
/// The link model, shared with the path emulator (`tributary-link`).
pub use tributary_link as link;
pub use tributary_link::{DeliveryTrace, LinkParams, LinkStats, LossModel, QueueLimit};

/// Builds and runs a simulation.
pub fn run(cfg: SimConfig) -> Result<SimResult, SimError> {
    Simulator::new(cfg)?.run()
}
