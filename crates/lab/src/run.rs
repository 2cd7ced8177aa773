//! Running a scenario: every (variant, sweep point, repetition) in parallel on a pool of
//! worker threads, results in a fixed order whatever the thread count.

use crate::report::{FlowRecord, Layout, PathRecord, Report, RunRecord};
use crate::scenario::Scenario;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use tributary_sim::{derive_seed, SimError};

/// Command-line adjustments of a run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Replace the file's `repetitions`.
    pub repetitions: Option<u64>,
    /// Replace the file's `seed`.
    pub seed: Option<u64>,
    /// Worker threads (default: one per core).
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

/// Most runs one scenario may plan (16.7 million): about 32 bytes each to plan and, at about
/// 1 KB of results per run (docs/performance.md, "Sweeps at scale"), 17 GB of results. Larger
/// plans are refused with an error before anything is allocated: they are a typing slip (an
/// extra zero in `repetitions`) or a damaged results file, not a sweep one machine can run.
pub const MAX_RUNS: usize = 1 << 24;

/// Most (variant, sweep point) combinations one scenario file may expand to. Each is compiled
/// before anything runs, at about 5 KB apiece (27,000 points of a small two-link file took
/// 140 MB), so this bounds a file's configurations to about half a gigabyte. Several
/// `[[sweep]]` tables multiply: four sweeps of 100 values are 100 million points. A larger
/// study is split over several files.
pub const MAX_CONFIGS: usize = 100_000;

/// Runs of `configs` (variant, sweep point) combinations × `repetitions`, or why the plan is
/// too large ([`MAX_RUNS`]).
pub fn plan_size(configs: usize, repetitions: u64) -> Result<usize, String> {
    usize::try_from(repetitions)
        .ok()
        .and_then(|r| configs.checked_mul(r))
        .filter(|&n| n <= MAX_RUNS)
        .ok_or_else(|| {
            format!(
                "{configs} configuration(s) × {repetitions} repetition(s) is more than the \
                 {MAX_RUNS} runs one scenario may plan; use fewer repetitions or split the \
                 sweep over several files"
            )
        })
}

/// The seed of repetition `r`: derived from the master seed only, so every variant and sweep
/// point sees the same seeds (and so the same random losses where the traffic is the same).
pub fn repetition_seed(master: u64, r: u64) -> u64 {
    derive_seed(master, &[0x1ab, r])
}

/// The runs of a scenario in report order: variant, then sweep point, then repetition. The
/// list is built whole: check its size with [`plan_size`] first when `opts` overrides the
/// file's repetitions ([`Scenario::load`] checks the file's own, [`crate::sweep::sweep`] every
/// plan).
pub fn plan(s: &Scenario, opts: &RunOptions) -> Vec<RunSpec> {
    plan_of(&Layout::new(
        s,
        opts.repetitions.unwrap_or(s.repetitions),
        opts.seed.unwrap_or(s.seed),
    ))
}

/// The runs of a layout in report order (run `k` is [`Layout::run_at`]`(k)`).
pub fn plan_of(l: &Layout) -> Vec<RunSpec> {
    (0..l.runs())
        .map(|k| {
            let (variant, point, repetition) = l.run_at(k).expect("k < runs");
            RunSpec {
                variant,
                point,
                repetition,
                seed: repetition_seed(l.seed, repetition),
            }
        })
        .collect()
}

/// Worker threads when none are asked for: one per core.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Runs `specs` on `jobs` worker threads (default: one per core), starting them in the given
/// order. `done` receives, on the worker thread that ran it, each run's index in `specs`, its
/// result and the wall time it took; once `done` returns `false` no further run starts (runs
/// already under way finish and are reported).
pub fn execute(
    s: &Scenario,
    specs: &[RunSpec],
    jobs: Option<usize>,
    done: &(dyn Fn(usize, Result<RunRecord, RunError>, std::time::Duration) -> bool + Sync),
) -> Result<(), RunError> {
    let opts = RunOptions {
        jobs,
        ..RunOptions::default()
    };
    execute_with(s, specs, &opts, done)
}

/// [`execute`] with every option of `opts` that applies to a single run (`jobs`, `qlog`).
pub fn execute_with(
    s: &Scenario,
    specs: &[RunSpec],
    opts: &RunOptions,
    done: &(dyn Fn(usize, Result<RunRecord, RunError>, std::time::Duration) -> bool + Sync),
) -> Result<(), RunError> {
    let jobs = opts.jobs.unwrap_or_else(default_jobs);
    if jobs == 0 {
        return Err(RunError::Pool {
            jobs,
            message: "at least one worker thread is needed".into(),
        });
    }
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let worker = || {
        while !stop.load(Ordering::Relaxed) {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(spec) = specs.get(i) else { break };
            let t0 = std::time::Instant::now();
            let res = run_one(s, spec, opts);
            if !done(i, res, t0.elapsed()) {
                stop.store(true, Ordering::Relaxed);
            }
        }
    };
    std::thread::scope(|scope| {
        let mut started = 0;
        let mut last_err = None;
        for t in 0..jobs.min(specs.len()) {
            match std::thread::Builder::new()
                .name(format!("run-{t}"))
                .spawn_scoped(scope, worker)
            {
                Ok(_) => started += 1,
                Err(e) => last_err = Some(e),
            }
        }
        // Fewer threads than asked only slows the sweep down; none at all is an error.
        match last_err {
            Some(e) if started == 0 => Err(RunError::Pool {
                jobs,
                message: e.to_string(),
            }),
            _ => Ok(()),
        }
    })
}

/// Runs the whole scenario; `progress` is called once per finished run (from any thread).
pub fn run(
    s: &Scenario,
    opts: &RunOptions,
    progress: &(dyn Fn() + Sync),
) -> Result<Report, RunError> {
    let runs = plan(s, opts);
    let results: Mutex<Vec<Option<Result<RunRecord, RunError>>>> =
        Mutex::new((0..runs.len()).map(|_| None).collect());
    execute_with(s, &runs, opts, &|i, res, _| {
        results.lock().expect("no worker panicked")[i] = Some(res);
        progress();
        true
    })?;
    let records = results
        .into_inner()
        .expect("no worker panicked")
        .into_iter()
        .map(|r| r.expect("every run reported"))
        .collect::<Result<Vec<_>, _>>()?;
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
