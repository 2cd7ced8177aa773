//! A directory for a test's files, removed when the test ends (kept if the test fails, for a
//! look). Test binaries include this file with `#[path = "../../test_tempdir.rs"] mod
//! test_tempdir;`.

use std::path::{Path, PathBuf};

/// An empty directory under the system's temporary directory, removed on drop unless the
/// thread is panicking.
pub struct TempDir(PathBuf);

impl TempDir {
    /// `tributary-<name>-<process id>`, emptied if it exists.
    pub fn new(name: &str) -> Self {
        let d = std::env::temp_dir().join(format!("tributary-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }
}

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
