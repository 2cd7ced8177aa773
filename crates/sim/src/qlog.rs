//! qlog trace files for simulated flows: one JSON-SEQ file per connection end, written by
//! proto's [`QlogWriter`] (see `tributary_proto::qlog` for the format).

use std::fs::File;
use std::path::Path;
use std::sync::{Arc, Mutex};
use tributary_proto::qlog::{QlogWriter, ReportingQlog, VantagePoint};

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

/// Creates the trace file `path` (never overwriting an existing file); the tracer closes it
/// when dropped and reports a write error to `errors`.
pub(crate) fn create(
    path: &Path,
    flow: &str,
    role: &str,
    errors: Errors,
) -> std::io::Result<ReportingQlog<File>> {
    let f = File::options().write(true).create_new(true).open(path)?;
    let vantage = if role == "sender" {
        VantagePoint::Client
    } else {
        VantagePoint::Server
    };
    let w = QlogWriter::new(f, &format!("{flow} ({role})"), role, vantage);
    Ok(ReportingQlog::new(w, path.display().to_string(), errors))
}
