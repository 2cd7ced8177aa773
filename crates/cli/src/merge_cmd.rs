//! `tributary merge SLICES...`: join the results files of a sweep's shards into its report.

use crate::run_cmd::{check_outputs, print_report, write_outputs, Format};
use anyhow::{bail, Result};
use clap::Args;
use std::path::PathBuf;
use tributary_lab::sweep::{self, MergeError};

/// Arguments of `tributary merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Results files (`run --stream/--resume`, usually one per `--shard`), in any order.
    #[arg(required = true, value_name = "SLICE.jsonl")]
    pub slices: Vec<PathBuf>,
    /// Also write the full JSON report to this file.
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Also write the per-run CSV rows to this file.
    #[arg(long, value_name = "PATH")]
    pub csv: Option<PathBuf>,
    /// What to print on standard output.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// Runs `tributary merge`.
pub fn merge(a: MergeArgs) -> Result<()> {
    let inputs: Vec<(&str, &std::path::Path)> = a
        .slices
        .iter()
        .map(|p| ("a results file to merge", p.as_path()))
        .collect();
    check_outputs(&inputs, a.json.as_deref(), a.csv.as_deref())?;
    let (report, notices) = match sweep::merge(&a.slices) {
        Ok(x) => x,
        Err(e @ MergeError::Missing { .. }) => bail!(
            "{e}\n(run a missing shard, or complete an interrupted one, with `tributary run \
             FILE --shard I/N --resume SLICE.jsonl` and the same --seed/--repetitions; then \
             merge again)"
        ),
        Err(e) => return Err(e.into()),
    };
    for n in notices {
        eprintln!("warning: {n}");
    }
    write_outputs(&report, a.json.as_deref(), a.csv.as_deref())?;
    print_report(&report, a.format);
    Ok(())
}
