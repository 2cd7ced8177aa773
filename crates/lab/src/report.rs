//! Results: per-run records, the summary per (variant, sweep point, flow), and their
//! renderings as JSON, CSV and a text table.

use crate::scenario::Scenario;
use crate::stats::{jain, Estimate};
use std::fmt::Write as _;

/// One path of one flow in one run: its name from the scenario and the simulator's record
/// (flattened in JSON).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PathRecord {
    /// Path name (from the scenario).
    pub name: String,
    /// Throughput, losses, retransmissions, RTT, window.
    #[serde(flatten)]
    pub stats: tributary_sim::PathResult,
}

/// One flow in one run.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FlowRecord {
    /// Flow name (`name#k` for copies).
    pub name: String,
    /// The `[[flows]]` entry it comes from.
    pub group: String,
    /// In-order goodput over the flow's active time, Mbit/s.
    pub goodput_mbps: f64,
    /// Bytes delivered in order to the application.
    pub bytes_delivered: u64,
    /// Completion time, s (finite flows that finished).
    pub completion_s: Option<f64>,
    /// Time-weighted mean receive-buffer occupancy, bytes.
    pub buffer_mean_bytes: f64,
    /// Peak receive-buffer occupancy, bytes.
    pub buffer_max_bytes: u64,
    /// Stream bytes dropped beyond the receive window.
    pub window_drops: u64,
    /// Window reductions the scheme asked for (MPTCP penalisation).
    pub penalizations: u64,
    /// Redundancy: payload bytes sent over stream bytes delivered, minus one (the same
    /// measure for every scheme; see `tributary_sim::FlowResult::overhead`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead: Option<f64>,
    /// Per path.
    pub paths: Vec<PathRecord>,
    /// (time s, goodput Mbit/s) samples when `sample_interval` is set.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<[f64; 2]>,
    /// Block delivery delay: first transmission of a block's bytes → in-order delivery
    /// (blocks of the connection's `metric_block` bytes, 32 KiB by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_delay: Option<tributary_sim::BlockDelay>,
    /// (delivery time s, delay ms) per block when `sample_interval` is set.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub block_delay_series: Vec<[f64; 2]>,
    /// The scheme's own counters: `{ name, sender: {...}, receiver: {...} }` (e.g. `fmtcp`:
    /// symbols sent, appended, replaced, the lost-per-block histogram).
    pub scheme: tributary_proto::conn::SchemeCounters,
    /// The application's own measurements: `{ name, sender: {...}, receiver: {...} }`.
    #[serde(default)]
    pub app: tributary_sim::AppCounters,
    /// Per path (order of `paths`), its state over time when `sample_interval` is set.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub path_series: Vec<tributary_sim::PathSeries>,
}

/// One simulation.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunRecord {
    /// Variant name.
    pub variant: String,
    /// Sweep point label (empty without a sweep).
    pub sweep: String,
    /// Swept parameters and their values.
    pub sweep_values: serde_json::Map<String, serde_json::Value>,
    /// Repetition, from 0.
    pub repetition: u64,
    /// Simulation seed.
    pub seed: u64,
    /// Simulated seconds.
    pub sim_seconds: f64,
    /// Flows in scenario order.
    pub flows: Vec<FlowRecord>,
    /// Arrival groups in scenario order, aggregated over their flows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arrivals: Vec<tributary_sim::ArrivalResult>,
    /// Link counters (offered, delivered, dropped by cause) in scenario order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<tributary_sim::LinkResult>,
}

/// Per-path summary.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PathSummary {
    /// Path name.
    pub name: String,
    /// Throughput over repetitions.
    pub throughput_mbps: Estimate,
    /// Loss rate over repetitions.
    pub loss_rate: Estimate,
}

/// Statistics over the repetitions of one (variant, sweep point, flow).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SummaryRow {
    /// Variant.
    pub variant: String,
    /// Sweep point label.
    pub sweep: String,
    /// Swept parameters and their values.
    pub sweep_values: serde_json::Map<String, serde_json::Value>,
    /// Flow name; for an aggregate row, the `[[flows]]` entry's name.
    pub flow: String,
    /// True for the row summing the `count` copies of a flow entry.
    pub aggregate: bool,
    /// Flows the row covers (1, or `count` for an aggregate).
    pub copies: usize,
    /// Goodput (sum over copies for an aggregate), Mbit/s.
    pub goodput_mbps: Estimate,
    /// Completion time over the repetitions where the flow finished (for an aggregate: the
    /// last copy to finish, when all did).
    pub completion_s: Option<Estimate>,
    /// Repetitions where the flow (all copies) finished.
    pub finished: usize,
    /// Jain's fairness index over the copies' goodputs (aggregate rows only).
    pub fairness: Option<Estimate>,
    /// Mean receive-buffer occupancy, bytes (summed over copies for an aggregate).
    pub buffer_mean_bytes: Estimate,
    /// Mean block delay, ms: the per-run `block_delay.mean_ms` over the repetitions (mean
    /// over copies for an aggregate); absent when no run measured a block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_delay_ms: Option<Estimate>,
    /// Jitter (standard deviation of the block delays), ms, like `block_delay_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_ms: Option<Estimate>,
    /// Redundancy overhead, %: payload bytes sent over stream bytes delivered, minus one
    /// (the same measure for every scheme: retransmissions, coded symbols, parity).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead_pct: Option<Estimate>,
    /// Per path (summed over copies for an aggregate).
    pub paths: Vec<PathSummary>,
    /// The application's numeric measurements (`sender.…`, `receiver.…`, nested keys joined
    /// by dots, e.g. `receiver.on_time`, `receiver.frame_delay_ms.p95`) over the repetitions
    /// (mean over copies for an aggregate).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub app: std::collections::BTreeMap<String, Estimate>,
}

/// Statistics of one arrival group over the repetitions of a (variant, sweep point).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ArrivalSummary {
    /// Variant.
    pub variant: String,
    /// Sweep point label.
    pub sweep: String,
    /// Group name.
    pub name: String,
    /// Flows that arrived.
    pub flows: Estimate,
    /// Flows that completed.
    pub completed: Estimate,
    /// Per run mean completion time, s.
    pub completion_mean_s: Option<Estimate>,
    /// Per run median completion time, s.
    pub completion_p50_s: Option<Estimate>,
    /// Per run 95th-percentile completion time, s.
    pub completion_p95_s: Option<Estimate>,
    /// Per run mean goodput of a completed flow, Mbit/s.
    pub goodput_mbps: Option<Estimate>,
}

/// Everything `tributary run` reports.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Report {
    /// Scenario name.
    pub scenario: String,
    /// Scenario description.
    pub description: Option<String>,
    /// Master seed.
    pub seed: u64,
    /// Repetitions per (variant, sweep point).
    pub repetitions: u64,
    /// Variant names.
    pub variants: Vec<String>,
    /// Sweep point labels.
    pub sweep_points: Vec<String>,
    /// Every run, ordered by variant, sweep point, repetition.
    pub runs: Vec<RunRecord>,
    /// Statistics per (variant, sweep point, flow).
    pub summary: Vec<SummaryRow>,
    /// Statistics per (variant, sweep point, arrival group).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arrivals: Vec<ArrivalSummary>,
}

fn est(xs: &[f64]) -> Estimate {
    Estimate::of(xs).expect("at least one repetition")
}

/// What a report needs from its scenario besides the runs: names, sweep points, flow groups,
/// seed and repetitions. Built from a [`Scenario`], or read back from the header of a results
/// file ([`crate::sweep`]), so `tributary merge` needs no scenario file and builds the same
/// report as the run that wrote the files.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Layout {
    /// Scenario name.
    pub scenario: String,
    /// Scenario description.
    pub description: Option<String>,
    /// Master seed.
    pub seed: u64,
    /// Repetitions per (variant, sweep point).
    pub repetitions: u64,
    /// Variant names.
    pub variants: Vec<String>,
    /// Sweep points in order.
    pub points: Vec<PointLayout>,
    /// Flow groups of each (variant, sweep point), index `variant * points.len() + point`.
    pub groups: Vec<Vec<GroupLayout>>,
}

/// One sweep point of a [`Layout`].
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PointLayout {
    /// Label (empty without a sweep).
    pub label: String,
    /// Swept parameters and their values.
    pub values: serde_json::Map<String, serde_json::Value>,
}

/// One `[[flows]]` entry of a [`Layout`]: its name and its flows `first..end` in the run's
/// flow list.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GroupLayout {
    /// The entry's name.
    pub name: String,
    /// Index of its first flow.
    pub first: usize,
    /// One past its last flow.
    pub end: usize,
}

impl Layout {
    /// The layout of `s` run with `repetitions` and master `seed`.
    pub fn new(s: &Scenario, repetitions: u64, seed: u64) -> Layout {
        Layout {
            scenario: s.name.clone(),
            description: s.description.clone(),
            seed,
            repetitions,
            variants: s.variants.clone(),
            points: s
                .points
                .iter()
                .map(|p| PointLayout {
                    label: p.label.clone(),
                    values: crate::run::sweep_json(&p.values),
                })
                .collect(),
            groups: s
                .configs
                .iter()
                .map(|c| {
                    c.groups
                        .iter()
                        .map(|g| GroupLayout {
                            name: g.name.clone(),
                            first: g.flows.start,
                            end: g.flows.end,
                        })
                        .collect()
                })
                .collect(),
        }
    }

    /// Runs in the plan: variants × sweep points × repetitions.
    /// (Saturates rather than overflows for an absurd layout read from a file.)
    pub fn runs(&self) -> usize {
        self.variants
            .len()
            .saturating_mul(self.points.len())
            .saturating_mul(usize::try_from(self.repetitions).unwrap_or(usize::MAX))
    }

    /// (variant, sweep point, repetition) of run `k` of the plan (ordered by variant, then
    /// sweep point, then repetition), or `None` past the end.
    pub fn run_at(&self, k: usize) -> Option<(usize, usize, u64)> {
        if k >= self.runs() {
            return None;
        }
        let reps = self.repetitions as usize;
        let per_variant = self.points.len() * reps;
        Some((k / per_variant, (k % per_variant) / reps, (k % reps) as u64))
    }
}

impl Report {
    /// Builds the report (and its summary) from the runs in plan order.
    pub fn new(s: &Scenario, repetitions: u64, seed: u64, runs: Vec<RunRecord>) -> Report {
        Report::from_layout(&Layout::new(s, repetitions, seed), runs)
    }

    /// Builds the report from a layout and the runs in plan order.
    pub fn from_layout(l: &Layout, runs: Vec<RunRecord>) -> Report {
        let mut summary = Vec::new();
        for (vi, variant) in l.variants.iter().enumerate() {
            for (pi, point) in l.points.iter().enumerate() {
                let mine: Vec<&RunRecord> = runs
                    .iter()
                    .filter(|r| r.variant == *variant && r.sweep == point.label)
                    .collect();
                if mine.is_empty() {
                    continue;
                }
                for g in &l.groups[vi * l.points.len() + pi] {
                    let members: Vec<usize> = (g.first..g.end).collect();
                    for &fi in &members {
                        let recs: Vec<&FlowRecord> = mine.iter().map(|r| &r.flows[fi]).collect();
                        summary.push(row(
                            variant,
                            point,
                            &recs,
                            &[fi],
                            &recs[0].name,
                            false,
                            &mine,
                        ));
                    }
                    if members.len() > 1 {
                        let recs: Vec<&FlowRecord> =
                            mine.iter().map(|r| &r.flows[members[0]]).collect();
                        summary.push(row(variant, point, &recs, &members, &g.name, true, &mine));
                    }
                }
            }
        }
        let mut arrivals = Vec::new();
        for variant in &l.variants {
            for point in &l.points {
                let mine: Vec<&RunRecord> = runs
                    .iter()
                    .filter(|r| r.variant == *variant && r.sweep == point.label)
                    .collect();
                let Some(first) = mine.first() else {
                    continue;
                };
                for (gi, g) in first.arrivals.iter().enumerate() {
                    let per = |f: &dyn Fn(&tributary_sim::ArrivalResult) -> Option<f64>| {
                        let xs: Vec<f64> = mine
                            .iter()
                            .filter_map(|r| r.arrivals.get(gi).and_then(f))
                            .collect();
                        Estimate::of(&xs)
                    };
                    arrivals.push(ArrivalSummary {
                        variant: variant.clone(),
                        sweep: point.label.clone(),
                        name: g.name.clone(),
                        flows: est(&mine
                            .iter()
                            .filter_map(|r| r.arrivals.get(gi).map(|a| a.flows as f64))
                            .collect::<Vec<_>>()),
                        completed: est(&mine
                            .iter()
                            .filter_map(|r| r.arrivals.get(gi).map(|a| a.completed as f64))
                            .collect::<Vec<_>>()),
                        completion_mean_s: per(&|a| a.completion_s.as_ref().map(|c| c.mean)),
                        completion_p50_s: per(&|a| a.completion_s.as_ref().map(|c| c.p50)),
                        completion_p95_s: per(&|a| a.completion_s.as_ref().map(|c| c.p95)),
                        goodput_mbps: per(&|a| a.goodput_mbps.as_ref().map(|c| c.mean)),
                    });
                }
            }
        }
        Report {
            scenario: l.scenario.clone(),
            description: l.description.clone(),
            seed: l.seed,
            repetitions: l.repetitions,
            variants: l.variants.clone(),
            sweep_points: l.points.iter().map(|p| p.label.clone()).collect(),
            runs,
            summary,
            arrivals,
        }
    }

    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("reports serialize");
        s.push('\n');
        s
    }

    /// CSV with one row per (run, flow).
    pub fn to_csv(&self) -> String {
        let max_paths = self
            .runs
            .iter()
            .flat_map(|r| r.flows.iter().map(|f| f.paths.len()))
            .max()
            .unwrap_or(0);
        let mut out = String::from(
            "variant,sweep,repetition,seed,flow,group,goodput_mbps,bytes_delivered,completion_s,\
             buffer_mean_bytes,buffer_max_bytes,window_drops,overhead,penalizations",
        );
        for i in 1..=max_paths {
            write!(
                out,
                ",path{i}_name,path{i}_throughput_mbps,path{i}_loss_rate,path{i}_packets_sent,\
                 path{i}_packets_lost,path{i}_retransmitted_bytes,path{i}_rto_count"
            )
            .unwrap();
        }
        out.push('\n');
        for r in &self.runs {
            for f in &r.flows {
                let mut line = vec![
                    csv_field(&r.variant),
                    csv_field(&r.sweep),
                    r.repetition.to_string(),
                    r.seed.to_string(),
                    csv_field(&f.name),
                    csv_field(&f.group),
                    f.goodput_mbps.to_string(),
                    f.bytes_delivered.to_string(),
                    f.completion_s.map_or(String::new(), |c| c.to_string()),
                    f.buffer_mean_bytes.to_string(),
                    f.buffer_max_bytes.to_string(),
                    f.window_drops.to_string(),
                    f.overhead.map_or(String::new(), |o| o.to_string()),
                    f.penalizations.to_string(),
                ];
                for i in 0..max_paths {
                    match f.paths.get(i) {
                        Some(p) => line.extend([
                            csv_field(&p.name),
                            p.stats.throughput_mbps.to_string(),
                            p.stats.loss_rate.to_string(),
                            p.stats.packets_sent.to_string(),
                            p.stats.packets_lost.to_string(),
                            p.stats.retransmitted_bytes.to_string(),
                            p.stats.rto_count.to_string(),
                        ]),
                        None => line.extend(std::iter::repeat_n(String::new(), 7)),
                    }
                }
                out.push_str(&line.join(","));
                out.push('\n');
            }
        }
        out
    }

    /// A readable table of the summary (aggregate rows stand for their copies).
    pub fn to_table(&self) -> String {
        let has_sweep = self.sweep_points.iter().any(|p| !p.is_empty());
        let multi_copy: std::collections::HashSet<(&str, &str, &str)> = self
            .summary
            .iter()
            .filter(|r| r.aggregate)
            .map(|r| (r.variant.as_str(), r.sweep.as_str(), r.flow.as_str()))
            .collect();
        let mut header = vec!["variant"];
        if has_sweep {
            header.push("sweep");
        }
        let has_delay = self.summary.iter().any(|r| r.block_delay_ms.is_some());
        let has_overhead = self.summary.iter().any(|r| r.overhead_pct.is_some());
        header.extend(["flow", "goodput Mbit/s (±95% CI)", "completion s"]);
        if has_delay {
            header.extend(["block delay ms", "jitter ms"]);
        }
        if has_overhead {
            header.push("overhead %");
        }
        header.push("per path Mbit/s");
        let mut rows: Vec<Vec<String>> = Vec::new();
        for r in &self.summary {
            if !r.aggregate {
                let group = self
                    .runs
                    .iter()
                    .flat_map(|run| run.flows.iter())
                    .find(|f| f.name == r.flow)
                    .map(|f| f.group.as_str())
                    .unwrap_or("");
                if multi_copy.contains(&(r.variant.as_str(), r.sweep.as_str(), group)) {
                    continue;
                }
            }
            let mut row = vec![r.variant.clone()];
            if has_sweep {
                row.push(r.sweep.clone());
            }
            let mut flow = r.flow.clone();
            if r.aggregate {
                let j = r
                    .fairness
                    .map_or(String::new(), |j| format!(", Jain {:.3}", j.mean));
                flow = format!("{flow} (sum of {}{j})", r.copies);
            }
            row.push(flow);
            row.push(fmt_est(&r.goodput_mbps, 2));
            row.push(match &r.completion_s {
                None => "-".into(),
                Some(c) if r.finished < r.goodput_mbps.n => {
                    format!(
                        "{} ({}/{} done)",
                        fmt_est(c, 2),
                        r.finished,
                        r.goodput_mbps.n
                    )
                }
                Some(c) => fmt_est(c, 2),
            });
            let opt =
                |e: &Option<Estimate>, d: usize| e.as_ref().map_or("-".into(), |e| fmt_est(e, d));
            if has_delay {
                row.push(opt(&r.block_delay_ms, 0));
                row.push(opt(&r.jitter_ms, 0));
            }
            if has_overhead {
                row.push(opt(&r.overhead_pct, 1));
            }
            row.push(
                r.paths
                    .iter()
                    .map(|p| format!("{} {:.2}", p.name, p.throughput_mbps.mean))
                    .collect::<Vec<_>>()
                    .join(", "),
            );
            rows.push(row);
        }
        let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
        for row in &rows {
            for (w, c) in widths.iter_mut().zip(row) {
                *w = (*w).max(c.chars().count());
            }
        }
        let mut out = format!(
            "{} — {} repetition(s), seed {}\n",
            self.scenario, self.repetitions, self.seed
        );
        let line = |cells: Vec<String>, out: &mut String| {
            let n = cells.len();
            for (i, (c, w)) in cells.into_iter().zip(&widths).enumerate() {
                let pad = w - c.chars().count();
                out.push_str(&c);
                if i + 1 < n {
                    out.push_str(&" ".repeat(pad + 2));
                }
            }
            out.push('\n');
        };
        line(header.iter().map(|s| s.to_string()).collect(), &mut out);
        line(widths.iter().map(|w| "-".repeat(*w)).collect(), &mut out);
        for row in rows {
            line(row, &mut out);
        }
        if !self.arrivals.is_empty() {
            out.push_str("\narrival groups (completion time of the completed flows):\n");
            for a in &self.arrivals {
                let opt = |e: &Option<Estimate>, d: usize| {
                    e.as_ref().map_or("-".to_string(), |e| fmt_est(e, d))
                };
                let sweep = if has_sweep {
                    format!(" {}", a.sweep)
                } else {
                    String::new()
                };
                out.push_str(&format!(
                    "{}{sweep} {}: {} flows, {} completed; completion s mean {}, p50 {}, p95 {}; \
                     goodput per flow {} Mbit/s\n",
                    a.variant,
                    a.name,
                    fmt_est(&a.flows, 0),
                    fmt_est(&a.completed, 0),
                    opt(&a.completion_mean_s, 3),
                    opt(&a.completion_p50_s, 3),
                    opt(&a.completion_p95_s, 3),
                    opt(&a.goodput_mbps, 2),
                ));
            }
        }
        out
    }
}

fn fmt_est(e: &Estimate, decimals: usize) -> String {
    match e.ci95 {
        Some(ci) => format!("{:.*} ± {:.*}", decimals, e.mean, decimals, ci),
        None => format!("{:.*}", decimals, e.mean),
    }
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Numeric leaves of a JSON value, keys joined by dots.
fn leaves(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, f64)>) {
    match v {
        serde_json::Value::Number(n) => {
            if let Some(x) = n.as_f64() {
                out.push((prefix.to_string(), x));
            }
        }
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                leaves(&format!("{prefix}.{k}"), x, out);
            }
        }
        _ => {}
    }
}

/// The application's numeric measurements over the runs (mean over `members` in each run).
fn app_estimates(
    runs: &[&RunRecord],
    members: &[usize],
) -> std::collections::BTreeMap<String, Estimate> {
    let mut per_key: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    for r in runs {
        let mut sums: std::collections::BTreeMap<String, (f64, usize)> = Default::default();
        for &i in members {
            let mut v = Vec::new();
            leaves("sender", &r.flows[i].app.sender, &mut v);
            leaves("receiver", &r.flows[i].app.receiver, &mut v);
            for (k, x) in v {
                let e = sums.entry(k).or_default();
                e.0 += x;
                e.1 += 1;
            }
        }
        for (k, (sum, n)) in sums {
            per_key.entry(k).or_default().push(sum / n as f64);
        }
    }
    per_key
        .into_iter()
        .filter_map(|(k, xs)| Estimate::of(&xs).map(|e| (k, e)))
        .collect()
}

/// Summary of flows `members` (one flow, or all copies for an aggregate) over `runs`.
fn row(
    variant: &str,
    point: &PointLayout,
    first: &[&FlowRecord],
    members: &[usize],
    name: &str,
    aggregate: bool,
    runs: &[&RunRecord],
) -> SummaryRow {
    let per_run = |f: &dyn Fn(&FlowRecord) -> f64| -> Vec<f64> {
        runs.iter()
            .map(|r| members.iter().map(|&i| f(&r.flows[i])).sum())
            .collect()
    };
    // Mean over the members that have the value; runs where none has it are left out.
    let per_run_mean = |f: &dyn Fn(&FlowRecord) -> Option<f64>| -> Vec<f64> {
        runs.iter()
            .filter_map(|r| {
                let xs: Vec<f64> = members.iter().filter_map(|&i| f(&r.flows[i])).collect();
                (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
            })
            .collect()
    };
    let goodput = per_run(&|f| f.goodput_mbps);
    let completions: Vec<f64> = runs
        .iter()
        .filter_map(|r| {
            members
                .iter()
                .map(|&i| r.flows[i].completion_s)
                .try_fold(0.0f64, |m, c| c.map(|c| m.max(c)))
        })
        .collect();
    let fairness = aggregate.then(|| {
        est(&runs
            .iter()
            .map(|r| {
                jain(
                    &members
                        .iter()
                        .map(|&i| r.flows[i].goodput_mbps)
                        .collect::<Vec<_>>(),
                )
            })
            .collect::<Vec<_>>())
    });
    let paths = first[0]
        .paths
        .iter()
        .enumerate()
        .map(|(pi, p)| PathSummary {
            name: p.name.clone(),
            throughput_mbps: est(&per_run(&|f| f.paths[pi].stats.throughput_mbps)),
            loss_rate: est(&runs
                .iter()
                .map(|r| {
                    let (lost, sent) = members.iter().fold((0, 0), |(l, s), &i| {
                        let p = &r.flows[i].paths[pi];
                        (l + p.stats.packets_lost, s + p.stats.packets_sent)
                    });
                    if sent == 0 {
                        0.0
                    } else {
                        lost as f64 / sent as f64
                    }
                })
                .collect::<Vec<_>>()),
        })
        .collect();
    SummaryRow {
        variant: variant.to_string(),
        sweep: point.label.clone(),
        sweep_values: point.values.clone(),
        flow: name.to_string(),
        aggregate,
        copies: members.len(),
        goodput_mbps: est(&goodput),
        finished: completions.len(),
        completion_s: Estimate::of(&completions),
        fairness,
        buffer_mean_bytes: est(&per_run(&|f| f.buffer_mean_bytes)),
        block_delay_ms: Estimate::of(&per_run_mean(&|f| {
            f.block_delay.as_ref().map(|b| b.mean_ms)
        })),
        jitter_ms: Estimate::of(&per_run_mean(&|f| {
            f.block_delay.as_ref().map(|b| b.jitter_ms)
        })),
        overhead_pct: Estimate::of(&per_run_mean(&|f| f.overhead.map(|o| 100.0 * o))),
        app: app_estimates(runs, members),
        paths,
    }
}
