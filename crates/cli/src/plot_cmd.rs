//! `tributary plot RESULTS.json --out DIR`: render figures from a `tributary run` JSON report.

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use std::path::PathBuf;
use tributary_lab::plot::{self, Metric, PlotKind, PlotSpec, Reduce};
use tributary_lab::Scenario;

/// Figure kind on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Kind {
    /// Metric against the sweep points, one line per variant.
    Line,
    /// One group of bars per variant.
    Bar,
    /// Goodput over time (needs `sample_interval`).
    Series,
    /// Cumulative distribution of `lost-per-block` (coded schemes).
    Cdf,
}

/// Arguments of `tributary plot`.
#[derive(Debug, Args)]
pub struct PlotArgs {
    /// JSON report written by `tributary run --json`.
    pub results: PathBuf,
    /// Directory for the figures (NAME.png and NAME.svg).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Render the `[[plots]]` of this scenario file instead of one figure from the options.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["kind", "metric", "flow", "name"])]
    pub scenario: Option<PathBuf>,
    /// Figure kind (default: line when the results have a sweep, else bar).
    #[arg(long, value_enum)]
    pub kind: Option<Kind>,
    /// Metric, as `[[plots]]` takes it (docs/scenarios.md): goodput, completion, fairness,
    /// ratio, path-throughput, path-share, block-delay, jitter, overhead, on-time-frames,
    /// lost-per-block, or a per-path series (cwnd, srtt, in-flight, losses, retransmissions).
    #[arg(long, default_value = "goodput")]
    pub metric: String,
    /// Flow or `[[flows]]` entry to plot (repeatable; default: every entry).
    #[arg(long, value_name = "NAME")]
    pub flow: Vec<String>,
    /// Mean over the flows of an entry instead of their sum.
    #[arg(long)]
    pub mean: bool,
    /// Series: one line per flow.
    #[arg(long)]
    pub per_flow: bool,
    /// File stem (default: SCENARIO-METRIC).
    #[arg(long)]
    pub name: Option<String>,
    /// Figure title.
    #[arg(long)]
    pub title: Option<String>,
}

/// Runs `tributary plot`.
pub fn plot(a: PlotArgs) -> Result<()> {
    let report = plot::load_report(&a.results)?;
    let specs = match &a.scenario {
        Some(f) => {
            let s = Scenario::load(f)?;
            if s.plots.is_empty() {
                bail!("{}: the scenario has no [[plots]]", f.display());
            }
            s.plots
        }
        None => {
            let metric = Metric::parse(&a.metric)?;
            let kind = match a.kind {
                Some(Kind::Line) => PlotKind::Line,
                Some(Kind::Bar) => PlotKind::Bar,
                Some(Kind::Series) => PlotKind::Series,
                Some(Kind::Cdf) => PlotKind::Cdf,
                None if report.sweep_points.len() > 1 => PlotKind::Line,
                None => PlotKind::Bar,
            };
            vec![PlotSpec {
                name: a
                    .name
                    .clone()
                    .unwrap_or_else(|| format!("{}-{}", report.scenario, a.metric)),
                kind,
                metric,
                flows: a.flow.clone(),
                reduce: if a.mean { Reduce::Mean } else { Reduce::Sum },
                per_flow: a.per_flow,
                variants: Vec::new(),
                points: Vec::new(),
                title: a.title.clone(),
                x_label: None,
                y_label: None,
            }]
        }
    };
    for spec in &specs {
        for p in plot::render(&report, spec, &a.out)? {
            println!("{}", p.display());
        }
    }
    Ok(())
}
