//! Tributary's experiment layer.
//!
//! A scenario file (TOML, schema in `docs/scenarios.md`) describes links, paths, concurrent
//! flows, timed events, variants compared on the same network and seeds, a sweep over any
//! parameter, and repetitions. [`Scenario::load`] parses and checks it (errors name the
//! field), [`run::run`] executes every (variant, sweep point, repetition) in parallel, and the
//! [`Report`] holds every run plus mean and 95 % confidence interval per (variant, sweep
//! point, flow), rendered as JSON, CSV or a table; [`plot`] renders its figures (PNG, SVG).
//! [`sweep`] runs large sweeps: finished runs streamed to a JSON Lines results file, resumed
//! after an interruption, split into shards and merged back into the same report.

#![warn(missing_docs)]

mod overrides;
pub mod plot;
pub mod report;
pub mod run;
pub mod scenario;
mod spec;
pub mod stats;
pub mod sweep;
pub mod units;

pub use report::Report;
pub use run::{RunError, RunOptions};
pub use scenario::{Scenario, ScenarioError};
