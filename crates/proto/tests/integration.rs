//! One test binary for the crate's integration tests: every file in this directory is a
//! module of it (compiling and linking one binary instead of one per file is most of what a
//! fresh clone's `cargo test` costs; see docs/performance.md). Run one file's tests with
//! `cargo test -p <crate> --test integration -- <file>::`.
//! `every_test_file_is_a_module` below fails if a file is added here and not listed.

mod cc_signals;
mod cmt_sctp;
mod common;
mod dfec;
mod flow_control;
mod fmtcp;
mod hmtp;
mod hostile;
mod memory;
mod messages;
mod ncmptcp;
mod protected;
mod reordering;
mod scheme_hooks;
mod trace;

/// Seed of the property tests' case generator: the same cases on every run, as every test
/// here (set in each `proptest_config`; proptest draws a fresh seed per run by default).
pub const PROPTEST_SEED: u64 = 0x7472_6962;

#[path = "../../test_layout.rs"]
mod test_layout;

/// Every file in tests/ is declared above (see crates/test_layout.rs).
#[test]
fn every_test_file_is_a_module() {
    test_layout::check(env!("CARGO_MANIFEST_DIR"), include_str!("integration.rs"));
}
