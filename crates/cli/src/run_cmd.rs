//! `tributary run FILE`: run a scenario on the simulator and report the results.

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::PathBuf;
use tributary_lab::{run, RunOptions, Scenario};

/// What `tributary run` prints on standard output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A readable summary table.
    Table,
    /// The full JSON report.
    Json,
    /// One CSV row per (run, flow).
    Csv,
}

/// Arguments of `tributary run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Scenario file (TOML; schema in docs/scenarios.md).
    pub file: PathBuf,
    /// Also write the full JSON report to this file.
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Also write the per-run CSV rows to this file.
    #[arg(long, value_name = "PATH")]
    pub csv: Option<PathBuf>,
    /// What to print on standard output.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Repetitions per variant and sweep point (replaces the file's `repetitions`).
    #[arg(long, value_name = "N")]
    pub repetitions: Option<u64>,
    /// Master seed (replaces the file's `seed`).
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Worker threads (default: one per core). Results do not depend on it.
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Render the scenario's `[[plots]]` into this directory (PNG and SVG).
    #[arg(long, value_name = "DIR")]
    pub plots: Option<PathBuf>,
    /// Write qlog traces (JSON-SEQ, loadable in qvis) under this directory, one subdirectory
    /// per run: of the flows with `trace = "qlog"`, or of every `[[flows]]` entry if none has.
    #[arg(long, value_name = "DIR")]
    pub qlog: Option<PathBuf>,
    /// Check the scenario and list its runs without running them.
    #[arg(long)]
    pub check: bool,
}

/// Runs `tributary run`.
pub fn run(a: RunArgs) -> Result<()> {
    let scenario = Scenario::load(&a.file)?;
    if a.repetitions == Some(0) {
        bail!("--repetitions must be at least 1");
    }
    if a.jobs == Some(0) {
        bail!("--jobs must be at least 1");
    }
    let opts = RunOptions {
        repetitions: a.repetitions,
        seed: a.seed,
        jobs: a.jobs,
        qlog: a.qlog.clone(),
    };
    let traced = scenario.configs.iter().any(|c| {
        c.sim.flows.iter().any(|f| f.qlog) || c.sim.arrivals.iter().any(|g| g.template.qlog)
    });
    if traced && a.qlog.is_none() {
        bail!(
            "{}: a flow asks for a qlog trace (`trace = \"qlog\"`): give the directory with --qlog DIR",
            a.file.display()
        );
    }
    let plan = run::plan(&scenario, &opts);
    if a.check {
        println!(
            "{}: {} variant(s) × {} sweep point(s) × {} repetition(s) = {} runs",
            a.file.display(),
            scenario.variants.len(),
            scenario.points.len(),
            opts.repetitions.unwrap_or(scenario.repetitions),
            plan.len()
        );
        return Ok(());
    }
    let bar = if plan.len() > 1 && std::io::stderr().is_terminal() {
        let b = ProgressBar::new(plan.len() as u64);
        b.set_style(
            ProgressStyle::with_template(
                "{elapsed_precise} [{bar:40}] {pos}/{len} runs, eta {eta}",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        Some(b)
    } else {
        None
    };
    let tick = || {
        if let Some(b) = &bar {
            b.inc(1);
        }
    };
    let result = run::run(&scenario, &opts, &tick);
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let report = result?;
    if let Some(p) = &a.json {
        std::fs::write(p, report.to_json())
            .with_context(|| format!("cannot write {}", p.display()))?;
    }
    if let Some(p) = &a.csv {
        std::fs::write(p, report.to_csv())
            .with_context(|| format!("cannot write {}", p.display()))?;
    }
    if let Some(dir) = &a.plots {
        for spec in &scenario.plots {
            for p in tributary_lab::plot::render(&report, spec, dir)? {
                eprintln!("wrote {}", p.display());
            }
        }
    }
    match a.format {
        Format::Table => print!("{}", report.to_table()),
        Format::Json => print!("{}", report.to_json()),
        Format::Csv => print!("{}", report.to_csv()),
    }
    Ok(())
}
