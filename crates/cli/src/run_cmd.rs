//! `tributary run FILE`: run a scenario on the simulator and report the results.

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use tributary_lab::sweep::{
    self, Notice, Observer, Outcome, Results, Shard, SweepError, SweepOptions,
};
use tributary_lab::{run, Report, RunOptions, Scenario};

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
    /// What to print on standard output [default: table].
    #[arg(long, value_enum)]
    pub format: Option<Format>,
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
    /// Write every run to this results file (JSON Lines) as it finishes, so that an
    /// interrupted sweep keeps its finished runs. Refuses an existing file (see --force).
    #[arg(long, value_name = "PATH.jsonl", conflicts_with = "resume")]
    pub stream: Option<PathBuf>,
    /// With --stream: replace an existing results file.
    #[arg(long, requires = "stream")]
    pub force: bool,
    /// Continue this results file: run only the runs it lacks, then report as if the sweep
    /// had run at once. Starts the file if it does not exist.
    #[arg(long, value_name = "PATH.jsonl")]
    pub resume: Option<PathBuf>,
    /// Run only shard I of N (0-based; runs k with k mod N = I) into the results file given
    /// by --stream or --resume; join the shards with `tributary merge`.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<Shard>,
}

/// Prints a sweep's progress: notices on stderr, a progress bar when stderr is a terminal.
struct Progress {
    bar: OnceLock<ProgressBar>,
    streaming: bool,
}

impl Progress {
    fn say(&self, text: &str) {
        match self.bar.get() {
            Some(b) => b.suspend(|| eprintln!("{text}")),
            None => eprintln!("{text}"),
        }
    }
}

impl Observer for Progress {
    fn notice(&self, n: &Notice) {
        match n {
            Notice::LargeSweep { .. } => {
                let mut text = format!("warning: {n}");
                if !self.streaming {
                    text.push_str(
                        "\nwarning: finished runs are kept only in memory: add --stream \
                         PATH.jsonl to keep them if the sweep is interrupted (and --resume to \
                         continue it), or split it over machines with --shard (docs/scenarios.md)",
                    );
                }
                self.say(&text);
            }
            Notice::TruncatedTail { .. } => self.say(&format!("warning: {n}")),
            _ => self.say(&format!("note: {n}")),
        }
    }

    fn start(&self, runs: usize) {
        if runs > 1 && std::io::stderr().is_terminal() {
            let b = ProgressBar::new(runs as u64);
            b.set_style(
                ProgressStyle::with_template(
                    "{elapsed_precise} [{bar:40}] {pos}/{len} runs, eta {eta}",
                )
                .expect("valid template")
                .progress_chars("=> "),
            );
            let _ = self.bar.set(b);
        }
    }

    fn progress(&self) {
        if let Some(b) = self.bar.get() {
            b.inc(1);
        }
    }
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
    if let Err(e) = run::plan_size(
        scenario.configs.len(),
        opts.repetitions.unwrap_or(scenario.repetitions),
    ) {
        bail!("{}: {e}", a.file.display());
    }
    let plan = run::plan(&scenario, &opts);
    if let Some(shard) = a.shard {
        if a.stream.is_none() && a.resume.is_none() && !a.check {
            bail!(
                "--shard needs a results file: add --stream PATH.jsonl (or --resume PATH.jsonl), \
                 then join the shards with `tributary merge`"
            );
        }
        if a.json.is_some() || a.csv.is_some() || a.plots.is_some() || a.format.is_some() {
            bail!(
                "shard {shard} holds only part of the runs, so it has no report: its runs go to \
                 the results file; `tributary merge` joins the shards and writes --json, --csv, \
                 --format (and `tributary plot` draws the merged JSON)"
            );
        }
    }
    let mut inputs = vec![("the scenario file", a.file.as_path())];
    if let Some(p) = a.stream.as_deref().or(a.resume.as_deref()) {
        if resolved(p) == resolved(&a.file) {
            bail!(
                "the results file {} is the scenario file: streaming runs there would destroy \
                 it; give another path",
                p.display()
            );
        }
        inputs.push(("the results file", p));
    }
    check_outputs(&inputs, a.json.as_deref(), a.csv.as_deref())?;
    if a.check {
        let reps = opts.repetitions.unwrap_or(scenario.repetitions);
        print!(
            "{}: {} variant(s) × {} sweep point(s) × {} repetition(s) = {} runs",
            a.file.display(),
            scenario.variants.len(),
            scenario.points.len(),
            reps,
            plan.len()
        );
        match a.shard {
            Some(s) => println!(
                "; shard {s}: {} runs",
                (0..plan.len()).filter(|&k| s.contains(k)).count()
            ),
            None => println!(),
        }
        return Ok(());
    }
    let results = match (&a.stream, &a.resume) {
        (Some(p), _) => Results::Create {
            path: p.clone(),
            force: a.force,
        },
        (None, Some(p)) => Results::Resume { path: p.clone() },
        (None, None) => Results::Memory,
    };
    let file = a.stream.as_ref().or(a.resume.as_ref()).cloned();
    let progress = Progress {
        bar: OnceLock::new(),
        streaming: file.is_some(),
    };
    let outcome = sweep::sweep(
        &scenario,
        &SweepOptions {
            run: opts,
            shard: a.shard,
            results,
        },
        &progress,
    );
    if let Some(b) = progress.bar.get() {
        b.finish_and_clear();
    }
    let outcome = match (outcome, &file) {
        (Err(e @ SweepError::Run(_)), Some(p)) => {
            bail!("{e}\n(the runs that finished are kept in {})", p.display())
        }
        (o, _) => o?,
    };
    let report = match outcome {
        Outcome::Shard { shard, runs } => {
            eprintln!(
                "shard {shard}: all {runs} of its runs are in {}; join the shards with \
                 `tributary merge`",
                file.as_deref().unwrap_or(Path::new("?")).display()
            );
            return Ok(());
        }
        Outcome::Complete(r) => r,
    };
    write_outputs(&report, a.json.as_deref(), a.csv.as_deref())?;
    if let Some(dir) = &a.plots {
        for spec in &scenario.plots {
            for p in tributary_lab::plot::render(&report, spec, dir)? {
                eprintln!("wrote {}", p.display());
            }
        }
    }
    print_report(&report, a.format.unwrap_or(Format::Table));
    Ok(())
}

/// Checks `--json` and `--csv` before anything runs: each must be a file in an existing
/// directory (so that a long sweep does not fail at its end, its report lost), and neither may
/// name one of the command's `inputs` (the scenario, a results file, a slice) nor the other
/// output: writing the report would destroy that file.
pub fn check_outputs(
    inputs: &[(&str, &Path)],
    json: Option<&Path>,
    csv: Option<&Path>,
) -> Result<()> {
    let outputs: Vec<(&str, &Path)> = [("--json", json), ("--csv", csv)]
        .into_iter()
        .filter_map(|(flag, p)| p.map(|p| (flag, p)))
        .collect();
    for (i, &(flag, out)) in outputs.iter().enumerate() {
        if out.is_dir() {
            bail!("{flag} {}: is a directory, not a file", out.display());
        }
        let parent = match out.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if !parent.is_dir() {
            bail!(
                "{flag} {}: directory {} does not exist",
                out.display(),
                parent.display()
            );
        }
        let target = resolved(out);
        for &(what, input) in inputs {
            if resolved(input) == target {
                bail!(
                    "{flag} {} is {what}: writing the report there would overwrite it; \
                     give another path",
                    out.display()
                );
            }
        }
        for &(other, p) in &outputs[..i] {
            if resolved(p) == target {
                bail!("{other} and {flag} name the same file {}", out.display());
            }
        }
    }
    Ok(())
}

/// `p` with its directory resolved (symbolic links, `..`), to tell whether two paths name
/// one file; `p` itself when its directory cannot be resolved.
fn resolved(p: &Path) -> PathBuf {
    if let Ok(c) = std::fs::canonicalize(p) {
        return c;
    }
    let parent = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match (std::fs::canonicalize(parent), p.file_name()) {
        (Ok(d), Some(name)) => d.join(name),
        _ => p.to_path_buf(),
    }
}

/// Writes `--json` and `--csv`.
pub fn write_outputs(report: &Report, json: Option<&Path>, csv: Option<&Path>) -> Result<()> {
    if let Some(p) = json {
        std::fs::write(p, report.to_json())
            .with_context(|| format!("cannot write {}", p.display()))?;
    }
    if let Some(p) = csv {
        std::fs::write(p, report.to_csv())
            .with_context(|| format!("cannot write {}", p.display()))?;
    }
    Ok(())
}

/// Prints the report on standard output.
pub fn print_report(report: &Report, format: Format) {
    match format {
        Format::Table => print!("{}", report.to_table()),
        Format::Json => print!("{}", report.to_json()),
        Format::Csv => print!("{}", report.to_csv()),
    }
}
