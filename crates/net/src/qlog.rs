//! qlog traces of real-socket connections: one JSON-SEQ file per connection in a directory,
//! written by proto's [`QlogWriter`] (format: `tributary_proto::qlog`), for
//! `tributary send/recv/perf --qlog DIR`.
//!
//! Files are named `<role>-<connection id as 16 hex digits>.sqlog`, with `-2`, `-3`, … before
//! the extension when that name is taken: an existing file is never overwritten. Times are
//! relative to the driver's start. Write errors are collected and reported by
//! [`QlogDir::errors`] once the tracers are dropped (when the driver is).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tributary_proto::qlog::{QlogWriter, ReportingQlog, VantagePoint};
use tributary_proto::trace::Tracer;

/// A directory that receives one qlog file per connection.
#[derive(Debug, Clone)]
pub struct QlogDir {
    dir: PathBuf,
    role: &'static str,
    vantage: VantagePoint,
    errors: Arc<Mutex<Vec<String>>>,
    files: Arc<Mutex<Vec<PathBuf>>>,
}

impl QlogDir {
    /// Traces of this end (`role`: `"sender"` or `"receiver"`, the file name's prefix) into
    /// `dir`, which must exist and be writable: checked now, by creating and removing a probe
    /// file, so that a bad directory is an error before any transfer starts.
    pub fn new(dir: &Path, role: &'static str, vantage: VantagePoint) -> std::io::Result<Self> {
        let meta = std::fs::metadata(dir).map_err(|e| {
            std::io::Error::new(e.kind(), format!("qlog directory {}: {e}", dir.display()))
        })?;
        if !meta.is_dir() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                format!("qlog directory {}: not a directory", dir.display()),
            ));
        }
        let probe = dir.join(format!(".tributary-qlog-probe-{}", std::process::id()));
        File::options()
            .write(true)
            .create_new(true)
            .open(&probe)
            .map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!("qlog directory {} is not writable: {e}", dir.display()),
                )
            })?;
        // Ours (create_new succeeded), so removing it touches no user file.
        let _ = std::fs::remove_file(&probe);
        Ok(QlogDir {
            dir: dir.to_path_buf(),
            role,
            vantage,
            errors: Arc::default(),
            files: Arc::default(),
        })
    }

    /// Creates the trace file of connection `conn_id` (a free name, never an existing file)
    /// and returns its tracer and path.
    pub fn tracer(&self, conn_id: u64) -> std::io::Result<(Box<dyn Tracer>, PathBuf)> {
        let base = format!("{}-{conn_id:016x}", self.role);
        let mut n = 1;
        loop {
            let name = if n == 1 {
                format!("{base}.sqlog")
            } else {
                format!("{base}-{n}.sqlog")
            };
            let path = self.dir.join(name);
            match File::options().write(true).create_new(true).open(&path) {
                Ok(f) => {
                    let title = format!("tributary {} {conn_id:016x}", self.role);
                    let w = QlogWriter::new(f, &title, self.role, self.vantage);
                    let t = ReportingQlog::new(w, path.display().to_string(), self.errors.clone());
                    if let Ok(mut v) = self.files.lock() {
                        v.push(path.clone());
                    }
                    return Ok((Box::new(t), path));
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 10_000 => n += 1,
                Err(e) => {
                    return Err(std::io::Error::new(
                        e.kind(),
                        format!("cannot create qlog file {}: {e}", path.display()),
                    ))
                }
            }
        }
    }

    /// Write errors of the files whose tracers were dropped, and failures to create one.
    pub fn errors(&self) -> Vec<String> {
        self.errors.lock().map(|v| v.clone()).unwrap_or_default()
    }

    /// The files created so far.
    pub fn files(&self) -> Vec<PathBuf> {
        self.files.lock().map(|v| v.clone()).unwrap_or_default()
    }

    /// A tracer factory for [`crate::UdpDriver::set_tracer_factory`]: a file per connection;
    /// a file that cannot be created is recorded in [`QlogDir::errors`] and the connection
    /// goes untraced.
    pub fn factory(&self) -> impl FnMut(u64) -> Option<Box<dyn Tracer>> + Send + 'static {
        let d = self.clone();
        move |id| match d.tracer(id) {
            Ok((t, _)) => Some(t),
            Err(e) => {
                if let Ok(mut v) = d.errors.lock() {
                    v.push(e.to_string());
                }
                None
            }
        }
    }
}
