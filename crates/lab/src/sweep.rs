//! Sweeps at scale: results streamed to a JSON Lines file as runs finish, resuming an
//! interrupted sweep, shards of the run plan, merging shards into one report, and a wall-time
//! estimate for large sweeps.
//!
//! A **results file** is JSON Lines: line 1 is a [`Header`] (format, scenario name, the
//! [`fingerprint`] of the compiled scenario and options, the number of runs in the plan, the
//! shard, and the report's [`Layout`]); every further line is one finished run,
//! `{"run": k, "record": RunRecord}`, where `k` is the run's index in the plan (variant, then
//! sweep point, then repetition; [`Layout::run_at`]). Lines are appended in the order the runs
//! finish, each with one `write` and flushed to the operating system at once (a killed process
//! loses no finished run), and synced to disk at least once a second and at the end.
//!
//! Reading tolerates exactly the damage an interruption can cause: an unterminated last line
//! (the run being written when the process died, or zeros after a machine crash) is ignored
//! with a [`Notice::TruncatedTail`] and its run is run again; anything else that does not parse
//! is an error naming the line.
//!
//! Reports are built from the records *as read back* from their JSON line, and writing checks
//! that a record survives the round trip unchanged, so a sweep run whole, resumed after an
//! interruption, or run as shards and merged gives byte-identical JSON and CSV.

use crate::report::{Layout, Report, RunRecord};
use crate::run::{self, RunError, RunOptions, RunSpec, MAX_RUNS};
use crate::scenario::Scenario;
use std::collections::BTreeMap;
use std::fmt;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Sweeps with more runs than this (in one invocation) warn before they start and print a
/// wall-time estimate. A run takes from 0.1 s to tens of seconds of one core on this
/// project's machines (docs/performance.md), so from about 100 runs on a sweep can take from
/// seconds to an hour, and its cost is worth a look before it starts.
pub const LARGE_SWEEP_RUNS: usize = 100;

/// The `format` of a results file header.
pub const FORMAT: &str = "tributary-results";

/// The version of the results file format this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// How often at least a results file is synced to disk (it is flushed to the operating system
/// after every line).
const SYNC_EVERY: Duration = Duration::from_secs(1);

/// One slice of a run plan: the runs `k` with `k mod count == index` (0-based, so that Slurm
/// array indices from 0 and Kubernetes' `JOB_COMPLETION_INDEX` can be passed as they are).
/// Interleaving rather than contiguous blocks spreads every variant over every shard, so
/// shards take similar times even when one variant is much slower than the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Shard {
    /// This shard, from 0.
    pub index: u64,
    /// Number of shards.
    pub count: u64,
}

impl Shard {
    /// Whether run `k` of the plan belongs to this shard.
    pub fn contains(&self, k: usize) -> bool {
        k as u64 % self.count == self.index
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl std::str::FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Shard, String> {
        let usage = "expected i/N: shard i (from 0) of N, e.g. 0/8";
        let (i, n) = s.split_once('/').ok_or_else(|| format!("`{s}`: {usage}"))?;
        let parse = |x: &str| {
            x.trim()
                .parse::<u64>()
                .map_err(|_| format!("`{s}`: {usage}"))
        };
        let (index, count) = (parse(i)?, parse(n)?);
        if count == 0 {
            return Err(format!("`{s}`: the number of shards must be at least 1"));
        }
        if index >= count {
            return Err(format!(
                "`{s}`: shard index {index} is out of range for {count} shards (0 to {})",
                count - 1
            ));
        }
        Ok(Shard { index, count })
    }
}

/// Digest of the sources this build was compiled from (`build.rs`): the same on every machine
/// that builds the same sources, different after any change to them.
pub const BUILD: &str = env!("TRIBUTARY_BUILD");

/// Line 1 of a results file.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Header {
    /// Always [`FORMAT`].
    pub format: String,
    /// [`FORMAT_VERSION`].
    pub format_version: u32,
    /// Scenario name.
    pub scenario: String,
    /// [`fingerprint`] of the compiled scenario and options.
    pub fingerprint: String,
    /// Runs in the whole plan (all shards).
    pub runs: usize,
    /// The slice this file holds; `None` for the whole plan.
    pub shard: Option<Shard>,
    /// Version of the `tributary` build that started the file (informative).
    pub tributary_version: String,
    /// Digest of the sources of the build that started the file ([`BUILD`]). The fingerprint
    /// covers the configuration, not the code: a file is resumed or merged only by the same
    /// build, so that one report never mixes runs of two versions of the simulator. `None` in
    /// files written before builds were recorded (not checked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<String>,
    /// What the report needs besides the runs.
    pub layout: Layout,
}

impl Header {
    /// The header of a results file for `s` run with `opts`, holding `shard` (or every run).
    pub fn new(s: &Scenario, opts: &RunOptions, shard: Option<Shard>) -> Header {
        let layout = layout_of(s, opts);
        Header {
            format: FORMAT.into(),
            format_version: FORMAT_VERSION,
            scenario: s.name.clone(),
            fingerprint: fingerprint(s, &layout),
            runs: layout.runs(),
            shard,
            tributary_version: env!("CARGO_PKG_VERSION").into(),
            build: Some(BUILD.into()),
            layout,
        }
    }

    /// Whether run `k` belongs in this file.
    pub fn holds(&self, k: usize) -> bool {
        k < self.runs && self.shard.is_none_or(|s| s.contains(k))
    }

    /// What differs between this (a file's) header and `other`, in words; `None` if they
    /// describe the same sweep and slice. `other_name` names `other`'s values in the message
    /// ("now" for the sweep about to run, a file name when merging).
    fn difference(&self, other: &Header, other_name: &str) -> Option<String> {
        let (a, b) = (&self.layout, &other.layout);
        let theirs = |v: &dyn fmt::Display| format!("{other_name}: {v}");
        let mut diffs = Vec::new();
        if a.scenario != b.scenario {
            diffs.push(format!(
                "scenario `{}` ({})",
                a.scenario,
                theirs(&format!("`{}`", b.scenario))
            ));
        }
        if a.seed != b.seed {
            diffs.push(format!("seed {} ({})", a.seed, theirs(&b.seed)));
        }
        if a.repetitions != b.repetitions {
            diffs.push(format!(
                "{} repetitions ({})",
                a.repetitions,
                theirs(&b.repetitions)
            ));
        }
        if self.runs != other.runs {
            diffs.push(format!("{} runs ({})", self.runs, theirs(&other.runs)));
        }
        if diffs.is_empty() && self.fingerprint != other.fingerprint {
            diffs.push(format!(
                "a different network, flows, variants or sweep (fingerprint {}; {})",
                self.fingerprint,
                theirs(&other.fingerprint)
            ));
        }
        if !diffs.is_empty() && self.tributary_version != other.tributary_version {
            diffs.push(format!(
                "written by tributary {} ({})",
                self.tributary_version,
                theirs(&other.tributary_version)
            ));
        }
        if let (Some(a), Some(b)) = (&self.build, &other.build) {
            if a != b {
                diffs.push(format!(
                    "written by another build of tributary (sources {a}; {}): results of two \
                     versions of the simulator must not be mixed, so rerun the sweep into a new \
                     file",
                    theirs(b)
                ));
            }
        }
        if diffs.is_empty() && self.shard != other.shard {
            diffs.push(format!(
                "{} ({})",
                shard_words(self.shard),
                theirs(&shard_words(other.shard))
            ));
        }
        (!diffs.is_empty()).then(|| diffs.join(", "))
    }
}

fn shard_words(s: Option<Shard>) -> String {
    match s {
        Some(s) => format!("shard {s}"),
        None => "the whole plan, not a shard".into(),
    }
}

fn layout_of(s: &Scenario, opts: &RunOptions) -> Layout {
    Layout::new(
        s,
        opts.repetitions.unwrap_or(s.repetitions),
        opts.seed.unwrap_or(s.seed),
    )
}

/// A hash (XXH3-64, 16 hex digits) of everything that determines a sweep's records and report:
/// the layout (name, description, seed, repetitions, variants, sweep points, flow groups) and
/// every compiled simulation configuration with its path names. Any edit of the scenario that
/// changes a run, or another `--seed`/`--repetitions`, changes it; worker threads and shards do
/// not. It does not cover the simulator's code: a file resumed or merged by a different build
/// mixes results of both (the header records the version that started it).
pub fn fingerprint(s: &Scenario, layout: &Layout) -> String {
    #[derive(serde::Serialize)]
    struct Fingerprinted<'a> {
        layout: &'a Layout,
        sims: Vec<&'a tributary_sim::SimConfig>,
        path_names: Vec<Vec<&'a [String]>>,
    }
    let f = Fingerprinted {
        layout,
        sims: s.configs.iter().map(|c| &c.sim).collect(),
        path_names: s
            .configs
            .iter()
            .map(|c| c.groups.iter().map(|g| g.path_names.as_slice()).collect())
            .collect(),
    };
    let bytes = serde_json::to_vec(&f).expect("configurations serialize");
    format!("{:016x}", xxhash_rust::xxh3::xxh3_64(&bytes))
}

/// Why a results file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    /// Reading or writing failed.
    #[error("cannot {action} {path}: {error}")]
    Io {
        /// What was being done ("read", "create", "write to", ...).
        action: &'static str,
        /// The file.
        path: String,
        /// The I/O error.
        error: std::io::Error,
    },
    /// The file exists and was not to be replaced.
    #[error("{path} already exists: continue it with --resume, or replace it with --force")]
    Exists {
        /// The file.
        path: String,
    },
    /// The file is not a results file (or of an unsupported version).
    #[error("{path}: not a tributary results file: {message}")]
    NotResults {
        /// The file.
        path: String,
        /// What is wrong with line 1.
        message: String,
    },
    /// The file has no header: it is empty, or its only line is unterminated.
    #[error("{path}: no results header (the file is empty or was cut off in its first line)")]
    NoHeader {
        /// The file.
        path: String,
    },
    /// A line other than an unterminated last one is damaged or inconsistent.
    #[error("{path}:{line}: {message}")]
    Corrupt {
        /// The file.
        path: String,
        /// Line number, from 1.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The file belongs to another sweep or slice.
    #[error("{path} holds results of another sweep or slice: it has {detail}")]
    Mismatch {
        /// The file.
        path: String,
        /// What differs.
        detail: String,
    },
    /// Records that cannot be put in one report (hand-edited files).
    #[error("{path}: {message}")]
    Inconsistent {
        /// The file.
        path: String,
        /// What does not fit.
        message: String,
    },
    /// A record does not survive a round trip through JSON (a non-finite number?), so it could
    /// not be resumed or merged identically.
    #[error("{run}: its record does not survive a round trip through JSON ({message})")]
    Unrepresentable {
        /// The run.
        run: String,
        /// Why.
        message: String,
    },
}

/// Something the user should hear about; [`fmt::Display`] words it.
#[derive(Debug, Clone, PartialEq)]
pub enum Notice {
    /// The unterminated last line of a results file was ignored (and, on resume, cut off).
    TruncatedTail {
        /// The file.
        path: String,
        /// Its line number.
        line: usize,
        /// Its length in bytes.
        bytes: usize,
    },
    /// A results file was resumed.
    Resumed {
        /// The file.
        path: String,
        /// Finished runs found in it.
        found: usize,
        /// Runs left to do.
        todo: usize,
    },
    /// `--resume` named a file that does not exist yet: it is started.
    Started {
        /// The file.
        path: String,
    },
    /// More than [`LARGE_SWEEP_RUNS`] runs are about to start.
    LargeSweep {
        /// Runs this invocation will execute.
        runs: usize,
        /// Their simulated seconds, summed.
        simulated_s: f64,
        /// Runs in the whole plan.
        plan: usize,
        /// Whether finished runs go to a results file.
        streaming: bool,
        /// Timed runs that come first (one per variant).
        pilots: usize,
    },
    /// The wall-time estimate, once the timed runs finished.
    Estimate(WallEstimate),
    /// The sweep finished.
    Finished {
        /// Runs executed.
        ran: usize,
        /// Wall time, s.
        wall_s: f64,
        /// The earlier estimate of the total, s, if one was made.
        estimated_s: Option<f64>,
    },
}

impl fmt::Display for Notice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Notice::TruncatedTail { path, line, bytes } => write!(
                f,
                "{path}:{line}: ignoring an unterminated last line ({bytes} bytes, cut off by an \
                 interruption); its run will be run again"
            ),
            Notice::Resumed { path, found, todo } => {
                write!(f, "{path}: {found} finished run(s) found, {todo} to run")
            }
            Notice::Started { path } => write!(f, "{path} does not exist yet: starting it"),
            Notice::LargeSweep {
                runs,
                simulated_s,
                plan,
                pilots,
                ..
            } => {
                write!(f, "{runs} runs to do")?;
                if plan != runs {
                    write!(f, " (of {plan} in the plan)")?;
                }
                write!(
                    f,
                    ", {} simulated seconds: more than {LARGE_SWEEP_RUNS} runs; timing {pilots} \
                     run(s) first (one per variant) for a wall-time estimate",
                    group_digits(simulated_s.round() as u64)
                )
            }
            Notice::Estimate(e) => write!(f, "{e}"),
            Notice::Finished {
                ran,
                wall_s,
                estimated_s,
            } => {
                write!(f, "{ran} run(s) took {}", human(*wall_s))?;
                if let Some(e) = estimated_s {
                    write!(f, " (estimated {})", human(*e))?;
                }
                Ok(())
            }
        }
    }
}

/// A wall-time estimate of a sweep from timed runs (see [`estimate_wall`]).
#[derive(Debug, Clone, PartialEq)]
pub struct WallEstimate {
    /// Wall time already spent (on the timed runs), s.
    pub elapsed_s: f64,
    /// Estimated wall time of the remaining runs, s.
    pub remaining_s: f64,
    /// Remaining runs.
    pub remaining_runs: usize,
    /// Runs assumed to proceed in parallel.
    pub parallel: usize,
    /// Per variant: (name, measured wall seconds per simulated second).
    pub rates: Vec<(String, f64)>,
}

impl WallEstimate {
    /// Estimated total wall time, s.
    pub fn total_s(&self) -> f64 {
        self.elapsed_s + self.remaining_s
    }
}

impl fmt::Display for WallEstimate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "estimated wall time: about {} in all ({} so far, about {} for the other {} run(s) \
             on {} worker(s)); from one timed run per variant, scaled by each run's simulated \
             duration: ",
            human(self.total_s()),
            human(self.elapsed_s),
            human(self.remaining_s),
            self.remaining_runs,
            self.parallel
        )?;
        let rates: Vec<String> = self
            .rates
            .iter()
            .map(|(v, r)| format!("`{v}` {} per simulated minute", human(r * 60.0)))
            .collect();
        write!(f, "{}", rates.join(", "))
    }
}

/// Estimated wall time, s, of runs `remaining` (variant, simulated seconds) on `parallel`
/// workers, from timed runs `timed` (variant, simulated seconds, wall seconds).
///
/// Model: a run's wall time is its simulated duration times its variant's measured rate
/// (wall s per simulated s; a variant without a timed run takes the mean rate of the others),
/// and the runs spread evenly over `min(parallel, runs)` workers — the sum over runs divided by
/// that, but never less than the longest run. It ignores that sweep points differ in traffic
/// (a lossier point sends fewer packets) and that the timed runs themselves ran in parallel,
/// sharing the machine like the rest will.
pub fn estimate_wall(
    timed: &[(usize, f64, f64)],
    remaining: &[(usize, f64)],
    parallel: usize,
) -> f64 {
    let rates = rates(timed);
    let mean = {
        let (sim, wall) = timed
            .iter()
            .fold((0.0, 0.0), |(s, w), &(_, a, b)| (s + a, w + b));
        if sim > 0.0 {
            wall / sim
        } else {
            0.0
        }
    };
    let costs: Vec<f64> = remaining
        .iter()
        .map(|&(v, sim)| rates.get(&v).copied().unwrap_or(mean) * sim)
        .collect();
    let workers = parallel.min(costs.len()).max(1) as f64;
    let sum: f64 = costs.iter().sum();
    let longest = costs.iter().cloned().fold(0.0, f64::max);
    (sum / workers).max(longest)
}

/// Wall seconds per simulated second of each variant over its timed runs (variant, simulated
/// seconds, wall seconds).
fn rates(timed: &[(usize, f64, f64)]) -> BTreeMap<usize, f64> {
    let mut sums: BTreeMap<usize, (f64, f64)> = BTreeMap::new();
    for &(v, sim, wall) in timed {
        let e = sums.entry(v).or_default();
        e.0 += sim;
        e.1 += wall;
    }
    sums.into_iter()
        .filter(|(_, (sim, _))| *sim > 0.0)
        .map(|(v, (sim, wall))| (v, wall / sim))
        .collect()
}

/// A duration in words: "42 s", "3.5 min", "2.1 h".
fn human(s: f64) -> String {
    if s < 1.0 {
        format!("{s:.2} s")
    } else if s < 120.0 {
        format!("{s:.0} s")
    } else if s < 7200.0 {
        format!("{:.1} min", s / 60.0)
    } else {
        format!("{:.1} h", s / 3600.0)
    }
}

fn group_digits(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

/// "run 17 (variant `a`, sweep point `b`, repetition 2)".
fn describe(l: &Layout, k: usize) -> String {
    match l.run_at(k) {
        Some((v, p, r)) => {
            let point = &l.points[p].label;
            if point.is_empty() {
                format!("run {k} (variant `{}`, repetition {r})", l.variants[v])
            } else {
                format!(
                    "run {k} (variant `{}`, sweep point `{point}`, repetition {r})",
                    l.variants[v]
                )
            }
        }
        None => format!("run {k}"),
    }
}

#[derive(serde::Serialize)]
struct LineOut<'a> {
    run: usize,
    record: &'a RunRecord,
}

#[derive(serde::Deserialize)]
struct LineIn {
    run: usize,
    record: RunRecord,
}

/// What a results file holds.
#[derive(Debug, Clone)]
pub struct Contents {
    /// Its header.
    pub header: Header,
    /// Finished runs by plan index.
    pub records: BTreeMap<usize, RunRecord>,
    /// What reading it found worth saying (a truncated last line).
    pub notices: Vec<Notice>,
}

/// A parsed file: header (if any), records, the length of the intact part.
struct Parsed {
    header: Option<Header>,
    records: BTreeMap<usize, RunRecord>,
    intact_len: u64,
    notices: Vec<Notice>,
}

fn parse(bytes: &[u8], path: &str) -> Result<Parsed, ResultsError> {
    let corrupt = |line: usize, message: String| ResultsError::Corrupt {
        path: path.to_string(),
        line,
        message,
    };
    let mut out = Parsed {
        header: None,
        records: BTreeMap::new(),
        intact_len: 0,
        notices: Vec::new(),
    };
    let mut first_line: BTreeMap<usize, usize> = BTreeMap::new();
    let mut pos = 0;
    let mut line_no = 0;
    while pos < bytes.len() {
        line_no += 1;
        let Some(nl) = bytes[pos..].iter().position(|&b| b == b'\n') else {
            // The unterminated tail an interruption leaves: the run being written when the
            // process was killed, or zeros after a machine crash. Never a finished run (a
            // finished run's line is written in one piece, newline included).
            out.notices.push(Notice::TruncatedTail {
                path: path.to_string(),
                line: line_no,
                bytes: bytes.len() - pos,
            });
            break;
        };
        let raw = &bytes[pos..pos + nl];
        pos += nl + 1;
        let text =
            std::str::from_utf8(raw).map_err(|_| corrupt(line_no, "not UTF-8 text".into()))?;
        match &out.header {
            None => {
                let h: Header =
                    serde_json::from_str(text).map_err(|e| ResultsError::NotResults {
                        path: path.to_string(),
                        message: format!("line 1 is not a results header ({e})"),
                    })?;
                if h.format != FORMAT {
                    return Err(ResultsError::NotResults {
                        path: path.to_string(),
                        message: format!("its format is `{}`, not `{FORMAT}`", h.format),
                    });
                }
                if h.format_version != FORMAT_VERSION {
                    return Err(ResultsError::NotResults {
                        path: path.to_string(),
                        message: format!(
                            "format version {} (this build reads version {FORMAT_VERSION})",
                            h.format_version
                        ),
                    });
                }
                if let Some(problem) = layout_problem(&h) {
                    return Err(corrupt(1, problem));
                }
                if h.layout.runs() != h.runs {
                    return Err(corrupt(
                        1,
                        format!(
                            "the header says {} runs but its layout makes {}",
                            h.runs,
                            h.layout.runs()
                        ),
                    ));
                }
                out.header = Some(h);
            }
            Some(h) => {
                let l: LineIn = serde_json::from_str(text)
                    .map_err(|e| corrupt(line_no, format!("not a run record ({e})")))?;
                let k = l.run;
                let Some((v, p, r)) = h.layout.run_at(k) else {
                    return Err(corrupt(
                        line_no,
                        format!("run {k} is out of range: the plan has {} runs", h.runs),
                    ));
                };
                if !h.holds(k) {
                    return Err(corrupt(
                        line_no,
                        format!(
                            "{} does not belong in {}",
                            describe(&h.layout, k),
                            shard_words(h.shard)
                        ),
                    ));
                }
                let rec = &l.record;
                let seed = run::repetition_seed(h.layout.seed, r);
                if rec.variant != h.layout.variants[v]
                    || rec.sweep != h.layout.points[p].label
                    || rec.repetition != r
                    || rec.seed != seed
                {
                    return Err(corrupt(
                        line_no,
                        format!(
                            "the record of run {k} is of variant `{}`, sweep point `{}`, \
                             repetition {}, seed {}; the plan has {} with seed {seed}",
                            rec.variant,
                            rec.sweep,
                            rec.repetition,
                            rec.seed,
                            describe(&h.layout, k)
                        ),
                    ));
                }
                let groups = &h.layout.groups[v * h.layout.points.len() + p];
                let flows = groups.iter().map(|g| g.end).max().unwrap_or(0);
                if rec.flows.len() < flows {
                    return Err(corrupt(
                        line_no,
                        format!(
                            "the record of run {k} has {} flows; its flow groups need {flows}",
                            rec.flows.len()
                        ),
                    ));
                }
                if let Some(first) = first_line.insert(k, line_no) {
                    return Err(corrupt(
                        line_no,
                        format!(
                            "{} appears twice (lines {first} and {line_no})",
                            describe(&h.layout, k)
                        ),
                    ));
                }
                out.records.insert(k, l.record);
            }
        }
        out.intact_len = pos as u64;
    }
    Ok(out)
}

/// What makes a header's layout unusable (it would make a report index out of bounds).
fn layout_problem(h: &Header) -> Option<String> {
    let l = &h.layout;
    if let Some(s) = h.shard {
        if s.count == 0 || s.index >= s.count {
            return Some(format!("invalid shard {}/{}", s.index, s.count));
        }
    }
    // A plan larger than any scenario may make is damage, not a sweep: it would have merge
    // list billions of missing runs.
    if l.runs() > MAX_RUNS {
        return Some(format!("a plan of {} runs is implausible", l.runs()));
    }
    let configs = l.variants.len() * l.points.len();
    if l.groups.len() != configs {
        return Some(format!(
            "the layout has flow groups for {} configurations, its variants and sweep points \
             make {configs}",
            l.groups.len()
        ));
    }
    if l.groups.iter().flatten().any(|g| g.first >= g.end) {
        return Some("the layout has an empty flow group".into());
    }
    None
}

/// Records of one (variant, sweep point) must have the same flows with the same number of
/// paths each, and copies of a flow the same number of paths, for the report's summary to
/// line them up; only hand-edited files can break this.
fn shape_problem(l: &Layout, records: &BTreeMap<usize, RunRecord>) -> Option<String> {
    let shape = |r: &RunRecord| -> Vec<usize> { r.flows.iter().map(|f| f.paths.len()).collect() };
    let mut first: BTreeMap<usize, (usize, Vec<usize>)> = BTreeMap::new();
    for (&k, r) in records {
        let (v, p, _) = l.run_at(k)?;
        let config = v * l.points.len() + p;
        let s = shape(r);
        for g in &l.groups[config] {
            let copies = s.get(g.first..g.end).unwrap_or_default();
            if copies.iter().any(|&n| n != copies[0]) {
                return Some(format!(
                    "{}: the copies of flow `{}` have different numbers of paths",
                    describe(l, k),
                    g.name
                ));
            }
        }
        match first.get(&config) {
            Some((j, t)) if *t != s => {
                return Some(format!(
                    "{} and run {j} have different flows or paths (flows with {s:?} and {t:?} \
                     paths)",
                    describe(l, k)
                ))
            }
            Some(_) => {}
            None => {
                first.insert(config, (k, s));
            }
        }
    }
    None
}

fn io<'a>(
    action: &'static str,
    path: &'a Path,
) -> impl FnOnce(std::io::Error) -> ResultsError + 'a {
    move |error| ResultsError::Io {
        action,
        path: path.display().to_string(),
        error,
    }
}

/// Reads a results file (an unterminated last line is ignored, with a notice).
pub fn read(path: &Path) -> Result<Contents, ResultsError> {
    let bytes = std::fs::read(path).map_err(io("read", path))?;
    let shown = path.display().to_string();
    let p = parse(&bytes, &shown)?;
    let header = p.header.ok_or(ResultsError::NoHeader { path: shown })?;
    Ok(Contents {
        header,
        records: p.records,
        notices: p.notices,
    })
}

/// A results file opened by [`ResultsFile::resume`], with what it already holds.
#[derive(Debug)]
pub struct Resumed {
    /// The file, ready for more runs.
    pub file: ResultsFile,
    /// Finished runs by plan index.
    pub records: BTreeMap<usize, RunRecord>,
    /// What reading it found worth saying (a truncated last line, a file started anew).
    pub notices: Vec<Notice>,
}

/// A results file being written.
#[derive(Debug)]
pub struct ResultsFile {
    path: PathBuf,
    writer: Mutex<Writer>,
}

#[derive(Debug)]
struct Writer {
    file: std::fs::File,
    last_sync: Instant,
}

impl ResultsFile {
    /// Starts a results file with `header`. An existing file is an error unless `force`, which
    /// replaces it.
    pub fn create(path: &Path, header: &Header, force: bool) -> Result<ResultsFile, ResultsError> {
        let mut o = std::fs::OpenOptions::new();
        o.write(true);
        if force {
            o.create(true).truncate(true);
        } else {
            o.create_new(true);
        }
        let file = o.open(path).map_err(|error| {
            if error.kind() == std::io::ErrorKind::AlreadyExists {
                ResultsError::Exists {
                    path: path.display().to_string(),
                }
            } else {
                io("create", path)(error)
            }
        })?;
        let f = ResultsFile {
            path: path.to_path_buf(),
            writer: Mutex::new(Writer {
                file,
                last_sync: Instant::now(),
            }),
        };
        f.write_header(header)?;
        Ok(f)
    }

    /// Continues the results file at `path` for the sweep `header` describes: returns it with
    /// the finished runs it holds. A missing file is started; an unterminated last line is cut
    /// off (its run is run again); a file of another sweep or slice is an error and left as it
    /// is.
    pub fn resume(path: &Path, header: &Header) -> Result<Resumed, ResultsError> {
        let shown = path.display().to_string();
        if !path.exists() {
            let f = ResultsFile::create(path, header, false)?;
            return Ok(Resumed {
                file: f,
                records: BTreeMap::new(),
                notices: vec![Notice::Started { path: shown }],
            });
        }
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .append(true)
            .open(path)
            .map_err(io("open for appending", path))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io("read", path))?;
        let p = parse(&bytes, &shown)?;
        if let Some(h) = &p.header {
            if let Some(detail) = h.difference(header, "now") {
                return Err(ResultsError::Mismatch {
                    path: shown,
                    detail,
                });
            }
        }
        // Only the damaged tail goes; every intact line stays.
        if p.intact_len < bytes.len() as u64 {
            file.set_len(p.intact_len)
                .map_err(io("cut the unterminated last line of", path))?;
        }
        let f = ResultsFile {
            path: path.to_path_buf(),
            writer: Mutex::new(Writer {
                file,
                last_sync: Instant::now(),
            }),
        };
        if p.header.is_none() {
            f.write_header(header)?;
        }
        Ok(Resumed {
            file: f,
            records: p.records,
            notices: p.notices,
        })
    }

    fn write_header(&self, header: &Header) -> Result<(), ResultsError> {
        let mut line = serde_json::to_string(header).expect("headers serialize");
        line.push('\n');
        let mut w = self.writer.lock().expect("writer not poisoned");
        w.file
            .write_all(line.as_bytes())
            .map_err(io("write to", &self.path))?;
        w.file.sync_data().map_err(io("sync", &self.path))
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends run `k`'s record (one write, flushed to the operating system) and returns the
    /// record as read back from its line — what a resume or merge will see.
    pub fn append(&self, k: usize, rec: &RunRecord) -> Result<RunRecord, ResultsError> {
        let unrepresentable = |message: String| ResultsError::Unrepresentable {
            run: format!(
                "run {k} (variant `{}`, repetition {})",
                rec.variant, rec.repetition
            ),
            message,
        };
        let mut line = serde_json::to_string(&LineOut {
            run: k,
            record: rec,
        })
        .map_err(|e| unrepresentable(e.to_string()))?;
        let back: LineIn =
            serde_json::from_str(&line).map_err(|e| unrepresentable(e.to_string()))?;
        let again = serde_json::to_string(&LineOut {
            run: k,
            record: &back.record,
        })
        .map_err(|e| unrepresentable(e.to_string()))?;
        if again != line {
            return Err(unrepresentable("it reads back differently".into()));
        }
        line.push('\n');
        let mut w = self.writer.lock().expect("writer not poisoned");
        w.file
            .write_all(line.as_bytes())
            .map_err(io("write to", &self.path))?;
        if w.last_sync.elapsed() >= SYNC_EVERY {
            w.file.sync_data().map_err(io("sync", &self.path))?;
            w.last_sync = Instant::now();
        }
        Ok(back.record)
    }

    /// Syncs the file to disk.
    pub fn sync(&self) -> Result<(), ResultsError> {
        let mut w = self.writer.lock().expect("writer not poisoned");
        w.file.sync_data().map_err(io("sync", &self.path))?;
        w.last_sync = Instant::now();
        Ok(())
    }
}

/// Where a sweep's finished runs go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Results {
    /// Nowhere but memory (an interruption loses them).
    Memory,
    /// A new results file; an existing one is replaced only with `force`.
    Create {
        /// The file.
        path: PathBuf,
        /// Replace an existing file.
        force: bool,
    },
    /// Continue this results file (start it if it does not exist).
    Resume {
        /// The file.
        path: PathBuf,
    },
}

/// How to run a sweep.
#[derive(Debug, Clone)]
pub struct SweepOptions {
    /// Repetitions, seed and worker threads.
    pub run: RunOptions,
    /// Run only this slice of the plan (needs a results file).
    pub shard: Option<Shard>,
    /// Where finished runs go.
    pub results: Results,
}

/// Hears a sweep's progress (from any thread).
pub trait Observer: Sync {
    /// Something to tell the user.
    fn notice(&self, n: &Notice);
    /// `runs` runs are about to start.
    fn start(&self, runs: usize);
    /// One run finished.
    fn progress(&self);
}

/// An observer that ignores everything.
pub struct Silent;

impl Observer for Silent {
    fn notice(&self, _: &Notice) {}
    fn start(&self, _: usize) {}
    fn progress(&self) {}
}

/// Why a sweep failed.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// A run failed (the others ran; with a results file they are kept).
    #[error(transparent)]
    Run(#[from] RunError),
    /// The results file could not be used.
    #[error(transparent)]
    Results(#[from] ResultsError),
    /// A shard without a results file would produce nothing.
    #[error("a shard's runs must go to a results file (to be merged with the other shards)")]
    ShardWithoutFile,
    /// The plan is larger than one sweep may be ([`MAX_RUNS`]).
    #[error("{runs} runs are more than one sweep may plan ({MAX_RUNS}); use fewer repetitions")]
    TooLarge {
        /// Runs in the plan.
        runs: usize,
    },
}

/// What a sweep produced.
#[derive(Debug)]
pub enum Outcome {
    /// The whole plan ran (now or earlier): its report.
    Complete(Report),
    /// A shard finished; its runs are in the results file.
    Shard {
        /// The shard.
        shard: Shard,
        /// Its runs.
        runs: usize,
    },
}

/// Runs the sweep of `s` as `o` says: the plan, or one shard of it, minus the runs a resumed
/// results file already holds, each finished run appended to the results file. The report is
/// built from the records as read back from the file, so it is the same whether the sweep ran
/// at once, was resumed, or is merged from shards.
pub fn sweep(s: &Scenario, o: &SweepOptions, obs: &dyn Observer) -> Result<Outcome, SweepError> {
    let header = Header::new(s, &o.run, o.shard);
    if header.runs > MAX_RUNS {
        return Err(SweepError::TooLarge { runs: header.runs });
    }
    let plan = run::plan_of(&header.layout);
    if o.shard.is_some() && o.results == Results::Memory {
        return Err(SweepError::ShardWithoutFile);
    }
    let mine: Vec<usize> = (0..plan.len()).filter(|&k| header.holds(k)).collect();
    let (file, mut records) = match &o.results {
        Results::Memory => (None, BTreeMap::new()),
        Results::Create { path, force } => (
            Some(ResultsFile::create(path, &header, *force)?),
            BTreeMap::new(),
        ),
        Results::Resume { path } => {
            let Resumed {
                file: f,
                records: recs,
                notices,
            } = ResultsFile::resume(path, &header)?;
            for n in &notices {
                obs.notice(n);
            }
            if !notices.iter().any(|n| matches!(n, Notice::Started { .. })) {
                obs.notice(&Notice::Resumed {
                    path: path.display().to_string(),
                    found: recs.len(),
                    todo: mine.len() - recs.len(),
                });
            }
            (Some(f), recs)
        }
    };
    let todo: Vec<usize> = mine
        .iter()
        .copied()
        .filter(|k| !records.contains_key(k))
        .collect();
    let sim_s = |spec: &RunSpec| {
        s.config(spec.variant, spec.point)
            .sim
            .duration
            .as_secs_f64()
    };

    // Large sweeps: one run per variant (the middle one of its runs to do) goes first and is
    // timed for an estimate.
    let large = todo.len() > LARGE_SWEEP_RUNS;
    let mut order = todo.clone();
    let mut pilots = 0;
    if large {
        let mut first = Vec::new();
        for v in 0..header.layout.variants.len() {
            let of_v: Vec<usize> = todo
                .iter()
                .copied()
                .filter(|&k| plan[k].variant == v)
                .collect();
            if !of_v.is_empty() {
                first.push(of_v[of_v.len() / 2]);
            }
        }
        pilots = first.len();
        order.retain(|k| !first.contains(k));
        first.append(&mut order);
        order = first;
        obs.notice(&Notice::LargeSweep {
            runs: todo.len(),
            simulated_s: todo.iter().map(|&k| sim_s(&plan[k])).sum(),
            plan: plan.len(),
            streaming: file.is_some(),
            pilots,
        });
    }
    obs.start(todo.len());
    let specs: Vec<RunSpec> = order.iter().map(|&k| plan[k]).collect();
    let jobs = o.run.jobs.unwrap_or_else(run::default_jobs);
    let t0 = Instant::now();

    struct State {
        records: BTreeMap<usize, RunRecord>,
        run_errors: BTreeMap<usize, RunError>,
        file_error: Option<ResultsError>,
        timed: Vec<(usize, f64, f64)>,
        estimate: Option<f64>,
    }
    let state = Mutex::new(State {
        records: BTreeMap::new(),
        run_errors: BTreeMap::new(),
        file_error: None,
        timed: Vec::new(),
        estimate: None,
    });
    let done = |i: usize, res: Result<RunRecord, RunError>, wall: Duration| -> bool {
        let k = order[i];
        let stored = match res {
            Ok(rec) => match &file {
                Some(f) => f.append(k, &rec).map_err(Some),
                None => Ok(rec),
            },
            Err(e) => {
                state.lock().expect("state").run_errors.insert(k, e);
                Err(None)
            }
        };
        let mut st = state.lock().expect("state");
        let keep_going = match stored {
            Ok(rec) => {
                st.records.insert(k, rec);
                true
            }
            Err(Some(e)) => {
                st.file_error.get_or_insert(e);
                false
            }
            Err(None) => true,
        };
        if i < pilots {
            st.timed
                .push((specs[i].variant, sim_s(&specs[i]), wall.as_secs_f64()));
            if st.timed.len() == pilots {
                let rest: Vec<(usize, f64)> = specs[pilots..]
                    .iter()
                    .map(|sp| (sp.variant, sim_s(sp)))
                    .collect();
                let parallel = jobs.min(run::default_jobs()).min(rest.len()).max(1);
                let e = WallEstimate {
                    elapsed_s: t0.elapsed().as_secs_f64(),
                    remaining_s: estimate_wall(&st.timed, &rest, parallel),
                    remaining_runs: rest.len(),
                    parallel,
                    rates: rates(&st.timed)
                        .into_iter()
                        .map(|(v, r)| (header.layout.variants[v].clone(), r))
                        .collect(),
                };
                st.estimate = Some(e.total_s());
                drop(st);
                obs.notice(&Notice::Estimate(e));
                obs.progress();
                return keep_going;
            }
        }
        drop(st);
        obs.progress();
        keep_going
    };
    let executed = if specs.is_empty() {
        Ok(())
    } else {
        run::execute_with(s, &specs, &o.run, &done)
    };
    let st = state.into_inner().expect("state");
    if let Some(f) = &file {
        f.sync()?;
    }
    executed?;
    if let Some(e) = st.file_error {
        return Err(e.into());
    }
    if let Some((_, e)) = st.run_errors.into_iter().next() {
        return Err(e.into());
    }
    if large {
        obs.notice(&Notice::Finished {
            ran: specs.len(),
            wall_s: t0.elapsed().as_secs_f64(),
            estimated_s: st.estimate,
        });
    }
    records.extend(st.records);
    if let (Some(f), Some(message)) = (&file, shape_problem(&header.layout, &records)) {
        return Err(ResultsError::Inconsistent {
            path: f.path().display().to_string(),
            message,
        }
        .into());
    }
    match o.shard {
        Some(shard) => Ok(Outcome::Shard {
            shard,
            runs: mine.len(),
        }),
        None => Ok(Outcome::Complete(Report::from_layout(
            &header.layout,
            records.into_values().collect(),
        ))),
    }
}

/// Why results files cannot be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// No file was given.
    #[error("no results files to merge")]
    NoFiles,
    /// A file could not be read or is damaged.
    #[error(transparent)]
    Results(#[from] ResultsError),
    /// Two files belong to different sweeps.
    #[error("{other} and {first} are results of different sweeps: {other} has {detail}")]
    Mismatch {
        /// The first file.
        first: String,
        /// The file that differs.
        other: String,
        /// What differs.
        detail: String,
    },
    /// A run is in more than one file.
    #[error("overlapping files: {run} is in both {a} and {b}{more}")]
    Overlap {
        /// The first run found twice.
        run: String,
        /// One file.
        a: String,
        /// The other.
        b: String,
        /// ", and N more runs are in two files", or empty.
        more: String,
    },
    /// Records of different files cannot be put in one report (hand-edited files).
    #[error("the files do not fit together: {0}")]
    Inconsistent(String),
    /// Runs of the plan are in no file.
    #[error("incomplete: {missing} of {total} runs are missing: {detail}")]
    Missing {
        /// Missing runs.
        missing: usize,
        /// Runs in the plan.
        total: usize,
        /// Which (shards not given, runs missing from given files).
        detail: String,
    },
}

/// How many missing runs a [`MergeError::Missing`] names one by one.
const LIST_MISSING: usize = 10;

/// Joins results files (shards of one sweep, in any order, or a whole-plan file) into the
/// report of the whole sweep: the same bytes as running it in one go. Files of different
/// sweeps, runs in two files and runs in none are errors that say which.
pub fn merge(paths: &[PathBuf]) -> Result<(Report, Vec<Notice>), MergeError> {
    if paths.is_empty() {
        return Err(MergeError::NoFiles);
    }
    let mut files = Vec::new();
    let mut notices = Vec::new();
    for p in paths {
        let mut c = read(p)?;
        notices.append(&mut c.notices);
        files.push((p.display().to_string(), c));
    }
    let (first_path, first) = &files[0];
    for (p, c) in &files[1..] {
        let mut h = c.header.clone();
        // Shards of one sweep differ only in their slice.
        h.shard = first.header.shard;
        if let Some(detail) = h.difference(&first.header, first_path) {
            return Err(MergeError::Mismatch {
                first: first_path.clone(),
                other: p.clone(),
                detail,
            });
        }
    }
    let layout = first.header.layout.clone();
    let total = first.header.runs;
    let mut owner: BTreeMap<usize, usize> = BTreeMap::new();
    let mut overlaps: Vec<(usize, usize, usize)> = Vec::new();
    let mut all: BTreeMap<usize, RunRecord> = BTreeMap::new();
    for (fi, (_, c)) in files.iter_mut().enumerate() {
        for (k, rec) in std::mem::take(&mut c.records) {
            if let Some(&prev) = owner.get(&k) {
                overlaps.push((k, prev, fi));
            } else {
                owner.insert(k, fi);
                all.insert(k, rec);
            }
        }
    }
    if let Some(&(k, a, b)) = overlaps.first() {
        let more = if overlaps.len() > 1 {
            format!(", and {} more run(s) are in two files", overlaps.len() - 1)
        } else {
            String::new()
        };
        return Err(MergeError::Overlap {
            run: describe(&layout, k),
            a: files[a].0.clone(),
            b: files[b].0.clone(),
            more,
        });
    }
    if let Some(problem) = shape_problem(&layout, &all) {
        return Err(MergeError::Inconsistent(problem));
    }
    let missing: Vec<usize> = (0..total).filter(|k| !all.contains_key(k)).collect();
    if !missing.is_empty() {
        return Err(MergeError::Missing {
            missing: missing.len(),
            total,
            detail: missing_detail(&layout, &files, &missing),
        });
    }
    Ok((
        Report::from_layout(&layout, all.into_values().collect()),
        notices,
    ))
}

/// Words for missing runs: whole shards that no file holds, then the runs missing from the
/// given files (listed up to [`LIST_MISSING`]).
fn missing_detail(l: &Layout, files: &[(String, Contents)], missing: &[usize]) -> String {
    let mut parts = Vec::new();
    let counts: Vec<Option<u64>> = files
        .iter()
        .map(|(_, c)| c.header.shard.map(|s| s.count))
        .collect();
    let mut rest: Vec<usize> = missing.to_vec();
    // With one shard layout throughout, name the shards no file holds.
    if let Some(Some(n)) = counts.first() {
        if counts.iter().all(|c| *c == Some(*n)) {
            let given: Vec<u64> = files
                .iter()
                .filter_map(|(_, c)| c.header.shard.map(|s| s.index))
                .collect();
            let absent: Vec<u64> = (0..*n).filter(|i| !given.contains(i)).collect();
            if !absent.is_empty() {
                let names: Vec<String> = absent
                    .iter()
                    .map(|&i| {
                        let s = Shard {
                            index: i,
                            count: *n,
                        };
                        let runs = missing.iter().filter(|&&k| s.contains(k)).count();
                        format!("shard {s} ({runs} runs)")
                    })
                    .collect();
                parts.push(format!("no file given for {}", names.join(", ")));
                rest.retain(|&k| given.contains(&(k as u64 % n)));
            }
        }
    }
    if !rest.is_empty() {
        let mut listed: Vec<String> = rest
            .iter()
            .take(LIST_MISSING)
            .map(|&k| {
                let from = files
                    .iter()
                    .find(|(_, c)| c.header.holds(k))
                    .map(|(p, c)| match c.header.shard {
                        Some(s) => format!(" from shard {s} ({p})"),
                        None => format!(" from {p}"),
                    })
                    .unwrap_or_default();
                format!("{}{from}", describe(l, k))
            })
            .collect();
        if rest.len() > LIST_MISSING {
            listed.push(format!("and {} more", rest.len() - LIST_MISSING));
        }
        parts.push(format!(
            "{} run(s) missing from the files given (interrupted?): {}",
            rest.len(),
            listed.join("; ")
        ));
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_parsing() {
        assert_eq!("3/8".parse::<Shard>(), Ok(Shard { index: 3, count: 8 }));
        assert_eq!("0/1".parse::<Shard>(), Ok(Shard { index: 0, count: 1 }));
        for bad in ["8/8", "1/0", "a/2", "1", "-1/2", "1/2/3"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        let e = "8/8".parse::<Shard>().unwrap_err();
        assert!(e.contains("out of range") && e.contains("0 to 7"), "{e}");
    }

    #[test]
    fn shards_partition_the_plan() {
        for n in 1..6u64 {
            for k in 0..50usize {
                let owners = (0..n)
                    .filter(|&i| Shard { index: i, count: n }.contains(k))
                    .count();
                assert_eq!(owners, 1);
            }
        }
    }

    /// The estimate's model (documented at [`estimate_wall`]) on numbers worked by hand.
    #[test]
    fn estimate_follows_its_model() {
        // Variant 0: 2 s of wall per 100 simulated s; variant 1: 20 s per 100 s.
        let timed = [(0, 100.0, 2.0), (1, 100.0, 20.0)];
        // Four runs of each at 100 s, one of variant 1 at 50 s: 4·2 + 4·20 + 10 = 98 s of
        // work on 2 workers.
        let mut rest = vec![(0, 100.0); 4];
        rest.extend(vec![(1, 100.0); 4]);
        rest.push((1, 50.0));
        assert!((estimate_wall(&timed, &rest, 2) - 49.0).abs() < 1e-9);
        // More workers than runs: the longest run bounds it.
        assert!((estimate_wall(&timed, &[(1, 100.0), (0, 100.0)], 8) - 20.0).abs() < 1e-9);
        // A variant without a timed run takes the mean rate (22 s per 200 s).
        assert!((estimate_wall(&timed, &[(2, 200.0)], 1) - 22.0).abs() < 1e-9);
        assert_eq!(estimate_wall(&timed, &[], 2), 0.0);
    }

    #[test]
    fn words() {
        assert_eq!(group_digits(128000), "128 000");
        assert_eq!(group_digits(999), "999");
        assert_eq!(human(42.4), "42 s");
        assert_eq!(human(600.0), "10.0 min");
        assert_eq!(human(9000.0), "2.5 h");
    }
}
