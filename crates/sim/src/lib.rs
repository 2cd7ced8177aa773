//! Tributary's deterministic discrete-event network simulator.
//!
//! It moves the real serialized datagrams of [`tributary_proto::Connection`]s over links with
//! rate, delay, drop-tail queues, random loss and faults, and checks at the end of every run
//! that each receiving application got exactly a prefix of what its sender wrote (length and
//! XXH3 digest). The same [`SimConfig`] and seed give bit-identical [`SimResult`]s.
//!
//! Topologies are links plus routes: a flow's path is a list of links, so flows that list the
//! same link share it (a dumbbell bottleneck is a link every flow's path crosses).

#![warn(missing_docs)]

pub mod app;
pub mod bench;
mod config;
mod engine;
mod result;

pub use config::{
    Direction, FlowConfig, FlowKind, LinkChange, LinkConfig, SimConfig, SimConfigError, TimedChange,
};
pub use engine::{derive_seed, SimError, Simulator};
pub use result::{BlockDelay, FlowResult, LinkResult, PathResult, SimResult};
/// The link model, shared with the path emulator (`tributary-link`).
pub use tributary_link as link;
pub use tributary_link::{DeliveryTrace, LinkParams, LinkStats, LossModel, QueueLimit};

/// Builds and runs a simulation.
pub fn run(cfg: SimConfig) -> Result<SimResult, SimError> {
    Simulator::new(cfg)?.run()
}
