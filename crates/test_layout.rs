//! The check every crate's `tests/integration.rs` runs (included there with `#[path]`):
//! Cargo's automatic test discovery is off (`autotests = false`, one integration binary per
//! crate), so a file added to `tests/` would silently never run unless `integration.rs`
//! declares it as a module. `check` refuses that.

/// Panics if a `.rs` file or a module directory in `<manifest_dir>/tests` is not declared as
/// `mod name;` in `main`, the text of that crate's `tests/integration.rs`.
pub fn check(manifest_dir: &str, main: &str) {
    let dir = std::path::Path::new(manifest_dir).join("tests");
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
