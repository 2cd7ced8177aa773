//! qlog trace files for simulated flows: one JSON-SEQ file per connection end, written by
//! proto's [`QlogWriter`] (see `tributary_proto::qlog` for the format).

use std::fs::File;
use std::path::Path;
use std::sync::{Arc, Mutex};
use tributary_proto::qlog::{QlogWriter, VantagePoint};
use tributary_proto::time::Instant;
use tributary_proto::trace::{TraceEvent, Tracer};

/// Write errors of the trace files of a run, reported when the files are closed.
pub(crate) type Errors = Arc<Mutex<Vec<String>>>;

/// `flow-c0-sender.sqlog`: the flow name with anything but letters, digits, `-`, `_` and `.`
/// replaced by `_`.
pub fn file_name(flow: &str, conn: usize, role: &str) -> String {
    let safe: String = flow
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{safe}-c{conn}-{role}.sqlog")
}

/// A trace file; closed (and its write errors reported) when dropped.
#[derive(Debug)]
pub(crate) struct QlogFile {
    w: Option<QlogWriter<File>>,
    path: String,
    errors: Errors,
}

impl QlogFile {
    /// Creates `path` (never overwriting an existing file).
    pub(crate) fn create(
        path: &Path,
        flow: &str,
        role: &str,
        errors: Errors,
    ) -> std::io::Result<Self> {
        let f = File::options().write(true).create_new(true).open(path)?;
        let vantage = if role == "sender" {
            VantagePoint::Client
        } else {
            VantagePoint::Server
        };
        Ok(QlogFile {
            w: Some(QlogWriter::new(
                f,
                &format!("{flow} ({role})"),
                role,
                vantage,
            )),
            path: path.display().to_string(),
            errors,
        })
    }
}

impl Tracer for QlogFile {
    fn event(&mut self, now: Instant, event: &TraceEvent<'_>) {
        if let Some(w) = &mut self.w {
            w.event(now, event);
        }
    }
}

impl Drop for QlogFile {
    fn drop(&mut self) {
        if let Some(w) = self.w.take() {
            if let Err(e) = w.finish() {
                if let Ok(mut v) = self.errors.lock() {
                    v.push(format!("{}: {e}", self.path));
                }
            }
        }
    }
}
