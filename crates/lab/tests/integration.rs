//! One test binary for the crate's integration tests: every file in this directory is a
//! module of it (compiling and linking one binary instead of one per file is most of what a
//! fresh clone's `cargo test` costs; see docs/performance.md). Run one file's tests with
//! `cargo test -p <crate> --test integration -- <file>::`.
//! `every_test_file_is_a_module` below fails if a file is added here and not listed.

mod docs;
mod new_paths;
mod paced_paths;
mod plot;
mod regressions;
mod runs;
mod scenarios;
mod stress;
mod sweep;
mod traces;

#[path = "../../test_layout.rs"]
mod test_layout;
#[path = "../../test_tempdir.rs"]
mod test_tempdir;

/// Every file in tests/ is declared above (see crates/test_layout.rs).
#[test]
fn every_test_file_is_a_module() {
    test_layout::check(env!("CARGO_MANIFEST_DIR"), include_str!("integration.rs"));
}
