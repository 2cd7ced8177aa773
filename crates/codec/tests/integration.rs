//! One test binary for the crate's integration tests: every file in this directory is a
//! module of it (compiling and linking one binary instead of one per file is most of what a
//! fresh clone's `cargo test` costs; see docs/performance.md). Run one file's tests with
//! `cargo test -p <crate> --test integration -- <file>::`.
//! `every_test_file_is_a_module` below fails if a file is added here and not listed.

mod gf256;
mod lt;
mod parity;
mod raptorq;
mod rlnc;

/// Cargo's automatic test discovery is off for this crate (`autotests = false`), so a new
/// file in tests/ would silently never run unless it is declared above: refuse that.
#[test]
fn every_test_file_is_a_module() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let main = include_str!("integration.rs");
    for entry in std::fs::read_dir(&dir).expect("tests directory") {
        let path = entry.expect("directory entry").path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let module = match name.strip_suffix(".rs") {
            Some("integration") => continue,
            Some(m) => m.to_string(),
            None if path.join("mod.rs").is_file() => name.clone(),
            None => continue,
        };
        assert!(
            main.lines().any(|l| l.trim() == format!("mod {module};")),
            "tests/{name} is not declared in tests/integration.rs: its tests would never run"
        );
    }
}
