//! Running a scenario: every (variant, sweep point, repetition) in parallel, results in a
//! fixed order whatever the thread count.

use crate::report::{FlowRecord, PathRecord, Report, RunRecord};
use crate::scenario::Scenario;
use rayon::prelude::*;
use tributary_sim::{derive_seed, SimError};

/// Command-line adjustments of a run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Replace the file's `repetitions`.
    pub repetitions: Option<u64>,
    /// Replace the file's `seed`.
    pub seed: Option<u64>,
    /// Worker threads (default: rayon's choice, one per core).
    pub jobs: Option<usize>,
    /// Write qlog traces under this directory, one subdirectory per run: of the flows whose
    /// `trace = "qlog"`, or of every configured flow if none asks.
    pub qlog: Option<std::path::PathBuf>,
}

/// One simulation to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunSpec {
    /// Variant index.
    pub variant: usize,
    /// Sweep point index.
    pub point: usize,
    /// Repetition (0-based).
    pub repetition: u64,
    /// Simulation seed.
    pub seed: u64,
}

/// A run that failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The simulator refused the configuration or detected corrupted delivery.
    #[error(
        "run failed (variant `{variant}`{point}, repetition {repetition}, seed {seed}): {error}"
    )]
    Sim {
        /// Variant name.
        variant: String,
        /// `, sweep point ...` or empty.
        point: String,
        /// Repetition.
        repetition: u64,
        /// Seed.
        seed: u64,
        /// The simulator's error.
        error: SimError,
    },
    /// A trace directory could not be created.
    #[error("cannot create qlog directory {path}: {message}")]
    Qlog {
        /// The directory.
        path: String,
        /// Why.
        message: String,
    },
    /// The thread pool could not be built.
    #[error("cannot start {jobs} worker threads: {message}")]
    Pool {
        /// Requested threads.
        jobs: usize,
        /// Why.
        message: String,
    },
}

/// The seed of repetition `r`: derived from the master seed only, so every variant and sweep
/// point sees the same seeds (and so the same random losses where the traffic is the same).
pub fn repetition_seed(master: u64, r: u64) -> u64 {
    derive_seed(master, &[0x1ab, r])
}

/// The runs of a scenario in report order: variant, then sweep point, then repetition.
pub fn plan(s: &Scenario, opts: &RunOptions) -> Vec<RunSpec> {
    let reps = opts.repetitions.unwrap_or(s.repetitions);
    let master = opts.seed.unwrap_or(s.seed);
    let mut v = Vec::new();
    for variant in 0..s.variants.len() {
        for point in 0..s.points.len() {
            for repetition in 0..reps {
                v.push(RunSpec {
                    variant,
                    point,
                    repetition,
                    seed: repetition_seed(master, repetition),
                });
            }
        }
    }
    v
}

/// Runs the whole scenario; `progress` is called once per finished run (from any thread).
pub fn run(
    s: &Scenario,
    opts: &RunOptions,
    progress: &(dyn Fn() + Sync),
) -> Result<Report, RunError> {
    let runs = plan(s, opts);
    let exec = || {
        runs.par_iter()
            .map(|r| {
                let res = run_one(s, r, opts);
                progress();
                res
            })
            .collect::<Vec<_>>()
    };
    let results = match opts.jobs {
        Some(jobs) => rayon::ThreadPoolBuilder::new()
            .num_threads(jobs)
            .build()
            .map_err(|e| RunError::Pool {
                jobs,
                message: e.to_string(),
            })?
            .install(exec),
        None => exec(),
    };
    let records = results.into_iter().collect::<Result<Vec<_>, _>>()?;
    Ok(Report::new(
        s,
        opts.repetitions.unwrap_or(s.repetitions),
        opts.seed.unwrap_or(s.seed),
        records,
    ))
}

/// The directory of one run's traces: `DIR/VARIANT[-POINT]-rREP` (characters other than
/// letters, digits, `-`, `_` and `.` replaced by `_`).
pub fn qlog_dir(
    base: &std::path::Path,
    variant: &str,
    point: &str,
    repetition: u64,
) -> std::path::PathBuf {
    let mut name = variant.to_string();
    if !point.is_empty() {
        name.push('-');
        name.push_str(point);
    }
    let name: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    base.join(format!("{name}-r{repetition}"))
}

fn run_one(s: &Scenario, r: &RunSpec, opts: &RunOptions) -> Result<RunRecord, RunError> {
    let compiled = s.config(r.variant, r.point);
    let mut cfg = compiled.sim.clone();
    cfg.seed = r.seed;
    let point = &s.points[r.point];
    if let Some(base) = &opts.qlog {
        let dir = qlog_dir(base, &s.variants[r.variant], &point.label, r.repetition);
        std::fs::create_dir_all(&dir).map_err(|e| RunError::Qlog {
            path: dir.display().to_string(),
            message: e.to_string(),
        })?;
        if !cfg.flows.iter().any(|f| f.qlog) && !cfg.arrivals.iter().any(|a| a.template.qlog) {
            for f in &mut cfg.flows {
                f.qlog = true;
            }
        }
        cfg.qlog_dir = Some(dir);
    }
    let res = tributary_sim::run(cfg).map_err(|error| RunError::Sim {
        variant: s.variants[r.variant].clone(),
        point: if point.label.is_empty() {
            String::new()
        } else {
            format!(", sweep point `{}`", point.label)
        },
        repetition: r.repetition,
        seed: r.seed,
        error,
    })?;
    let mut flows = Vec::new();
    for g in &compiled.groups {
        for fi in g.flows.clone() {
            let f = &res.flows[fi];
            flows.push(FlowRecord {
                name: f.name.clone(),
                group: g.name.clone(),
                goodput_mbps: f.goodput_mbps,
                bytes_delivered: f.bytes_delivered,
                completion_s: f.completion_s,
                buffer_mean_bytes: f.buffer_mean_bytes,
                buffer_max_bytes: f.buffer_max_bytes,
                window_drops: f.window_drops,
                overhead: f.overhead,
                penalizations: f.penalizations,
                paths: f
                    .paths
                    .iter()
                    .zip(&g.path_names)
                    .map(|(p, name)| PathRecord {
                        name: name.clone(),
                        stats: p.clone(),
                    })
                    .collect(),
                series: f.series.clone(),
                block_delay: f.block_delay.clone(),
                block_delay_series: f.block_delay_series.clone(),
                scheme: f.scheme.clone(),
                app: f.app.clone(),
                path_series: f.path_series.clone(),
            });
        }
    }
    Ok(RunRecord {
        variant: s.variants[r.variant].clone(),
        sweep: point.label.clone(),
        sweep_values: sweep_json(&point.values),
        repetition: r.repetition,
        seed: r.seed,
        sim_seconds: res.sim_seconds,
        flows,
        arrivals: res.arrivals.clone(),
        links: res.links.clone(),
    })
}

pub(crate) fn sweep_json(
    values: &[(String, toml::Value)],
) -> serde_json::Map<String, serde_json::Value> {
    values
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                serde_json::to_value(v).unwrap_or(serde_json::Value::Null),
            )
        })
        .collect()
}
