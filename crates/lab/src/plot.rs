//! Figures from a [`Report`]: line plots of a metric against the sweep, bar charts per
//! variant and goodput time series, rendered to PNG and SVG with `plotters`.
//!
//! A figure is described by a [`PlotSpec`] (a scenario's `[[plots]]` entry, or built by
//! `tributary plot` from its options). Every value is recomputed from the per-run records and
//! summarised over the repetitions as mean ± 95 % confidence interval ([`Estimate`]), so the
//! figure shows exactly what the runs measured. Rendering is deterministic: the same report
//! and spec give byte-identical files. Text is drawn with an embedded DejaVu Sans (the
//! bitmap backend needs a font and we want no system font lookup).

use crate::report::{FlowRecord, Report, RunRecord};
use crate::stats::{jain, Estimate};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// What a figure shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlotKind {
    /// The metric against the sweep points, one line per variant (× flow selector × path).
    Line,
    /// One group of bars per variant (bars: sweep points × selectors × paths).
    Bar,
    /// Goodput over time (`sample_interval`), one line per variant (× sweep point × flow).
    Series,
    /// Cumulative distribution of a histogram metric (`lost-per-block`): per variant × sweep
    /// point, the share of blocks (%) with at most x lost packets, histograms summed over
    /// the repetitions and the selected flows.
    Cdf,
}

/// The quantity plotted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Metric {
    /// Goodput of the selected flows, Mbit/s.
    #[default]
    Goodput,
    /// Completion time, s (runs where a selected flow did not finish are left out).
    Completion,
    /// Jain's fairness index over the goodputs of all selected flows together.
    Fairness,
    /// Goodput of the first selector over the second (both reduced per `reduce`).
    Ratio,
    /// Acknowledged throughput per path of the selected flows, Mbit/s.
    PathThroughput,
    /// Each path's share of the selected flows' path throughput, %.
    PathShare,
    /// Mean block delay (`block_delay.mean_ms`), ms, averaged over the selected flows; in a
    /// `series` plot, the delays of the blocks delivered in each sampling interval.
    BlockDelay,
    /// Jitter (standard deviation of the block delays, `block_delay.jitter_ms`), ms, averaged
    /// over the selected flows.
    Jitter,
    /// Redundancy overhead (payload bytes sent / stream bytes delivered − 1, the same for
    /// every scheme), %, averaged over the selected flows. (`coding-overhead` is accepted,
    /// its name before it applied to every scheme.)
    #[serde(alias = "coding-overhead")]
    Overhead,
    /// Frames complete by their deadline, % of the frames, of the selected flows whose
    /// application reports frames (the `video` application's `receiver.on_time` over
    /// `receiver.frames`), averaged over them.
    OnTimeFrames,
    /// Lost packets per block of a coded scheme (the `lost_per_block` histogram among the
    /// scheme's sender counters); `cdf` plots only.
    LostPerBlock,
    /// Congestion window per path over time, KB (`series` plots; `path_series.cwnd_bytes`).
    Cwnd,
    /// Smoothed RTT per path over time, ms (`series` plots).
    Srtt,
    /// Bytes in flight per path over time, KB (`series` plots).
    InFlight,
    /// Packets declared lost per path in each sampling interval (`series` plots).
    Losses,
    /// Stream bytes re-sent per path in each sampling interval, KB (`series` plots).
    Retransmissions,
}

impl Metric {
    fn name(self) -> &'static str {
        match self {
            Metric::Goodput => "goodput",
            Metric::Completion => "completion",
            Metric::Fairness => "fairness",
            Metric::Ratio => "ratio",
            Metric::PathThroughput => "path-throughput",
            Metric::PathShare => "path-share",
            Metric::BlockDelay => "block-delay",
            Metric::Jitter => "jitter",
            Metric::Overhead => "overhead",
            Metric::OnTimeFrames => "on-time-frames",
            Metric::LostPerBlock => "lost-per-block",
            Metric::Cwnd => "cwnd",
            Metric::Srtt => "srtt",
            Metric::InFlight => "in-flight",
            Metric::Losses => "losses",
            Metric::Retransmissions => "retransmissions",
        }
    }

    /// The per-path time-series column of this metric (series plots), in plotted units.
    fn path_column(self) -> Option<fn(&tributary_sim::PathSeries, usize) -> Option<f64>> {
        Some(match self {
            Metric::Cwnd => |s, i| s.cwnd_bytes.get(i).map(|&v| v as f64 / 1e3),
            Metric::Srtt => |s, i| s.srtt_ms.get(i).copied().flatten(),
            Metric::InFlight => |s, i| s.in_flight_bytes.get(i).map(|&v| v as f64 / 1e3),
            Metric::PathThroughput => |s, i| s.throughput_mbps.get(i).copied(),
            Metric::Losses => |s, i| s.losses.get(i).map(|&v| v as f64),
            Metric::Retransmissions => |s, i| s.retransmitted_bytes.get(i).map(|&v| v as f64 / 1e3),
            _ => return None,
        })
    }

    /// Parses a metric name as written in `[[plots]]` or on the command line.
    pub fn parse(s: &str) -> Result<Metric, PlotError> {
        const ALL: [Metric; 16] = [
            Metric::Goodput,
            Metric::Completion,
            Metric::Fairness,
            Metric::Ratio,
            Metric::PathThroughput,
            Metric::PathShare,
            Metric::BlockDelay,
            Metric::Jitter,
            Metric::Overhead,
            Metric::OnTimeFrames,
            Metric::LostPerBlock,
            Metric::Cwnd,
            Metric::Srtt,
            Metric::InFlight,
            Metric::Losses,
            Metric::Retransmissions,
        ];
        // The metric's name before it was generalised to every scheme.
        let s = if s == "coding-overhead" {
            "overhead"
        } else {
            s
        };
        ALL.into_iter().find(|m| m.name() == s).ok_or_else(|| {
            PlotError::Spec(format!(
                "unknown metric `{s}` (known: {})",
                ALL.map(Metric::name).join(", ")
            ))
        })
    }

    fn axis_label(self, reduce: Reduce) -> String {
        let per = if reduce == Reduce::Mean {
            " per flow"
        } else {
            ""
        };
        match self {
            Metric::Goodput => format!("goodput{per} (Mbit/s)"),
            Metric::Completion => format!("completion time{per} (s)"),
            Metric::Fairness => "Jain's fairness index".into(),
            Metric::Ratio => format!("goodput ratio{per}"),
            Metric::PathThroughput => format!("throughput per path{per} (Mbit/s)"),
            Metric::PathShare => "share of traffic per path (%)".into(),
            Metric::BlockDelay => "block delay (ms)".into(),
            Metric::Jitter => "block delay jitter (ms)".into(),
            Metric::Overhead => "overhead (%)".into(),
            Metric::OnTimeFrames => "frames on time (%)".into(),
            Metric::LostPerBlock => "blocks with at most x lost packets (%)".into(),
            Metric::Cwnd => format!("congestion window{per} (KB)"),
            Metric::Srtt => "smoothed RTT (ms)".into(),
            Metric::InFlight => format!("bytes in flight{per} (KB)"),
            Metric::Losses => format!("packets lost per interval{per}"),
            Metric::Retransmissions => format!("bytes re-sent per interval{per} (KB)"),
        }
    }
}

/// How the goodputs of several flows matched by one selector combine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reduce {
    /// Their sum (a `count = N` group's aggregate).
    #[default]
    Sum,
    /// Their mean (per-flow value).
    Mean,
}

/// One figure (`[[plots]]` in a scenario file; schema in `docs/scenarios.md`).
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlotSpec {
    /// File stem: the figure is written as `NAME.png` and `NAME.svg`.
    pub name: String,
    /// Line, bar or time series.
    pub kind: PlotKind,
    /// Quantity on the y axis (`series` plots goodput only).
    #[serde(default)]
    pub metric: Metric,
    /// Flow selectors: a flow name (`mp#3`) or a `[[flows]]` entry name (all its copies).
    /// Empty: every `[[flows]]` entry.
    #[serde(default)]
    pub flows: Vec<String>,
    /// Sum or mean over the flows one selector matches.
    #[serde(default)]
    pub reduce: Reduce,
    /// `series`: one line per flow instead of one per selector.
    #[serde(default)]
    pub per_flow: bool,
    /// Variants to show (default: all).
    #[serde(default)]
    pub variants: Vec<String>,
    /// Line and bar plots: sweep points to show, as groups of whole words of their labels
    /// (default: all). A point is kept when its label contains one of the groups as a run
    /// of words; with several sweeps this draws one line per group (`line`), with the rest
    /// of the label on the x axis — e.g. `["loss 1%", "loss 5%"]` over a δ × loss sweep.
    #[serde(default)]
    pub points: Vec<String>,
    /// Title (default: the scenario name and the metric).
    #[serde(default)]
    pub title: Option<String>,
    /// x axis label (default: the swept parameters, or "time (s)").
    #[serde(default)]
    pub x_label: Option<String>,
    /// y axis label (default: the metric with its unit).
    #[serde(default)]
    pub y_label: Option<String>,
}

/// Why a figure cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// The results file could not be read.
    #[error("cannot read results file {path}: {error}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        error: std::io::Error,
    },
    /// The results file is not a `tributary run` JSON report.
    #[error("{path}: not a tributary results file: {message}")]
    Json {
        /// The file.
        path: String,
        /// The parser's message, with the field path.
        message: String,
    },
    /// The spec does not fit the report (unknown flow, metric, missing series, ...).
    #[error("{0}")]
    Spec(String),
    /// Writing or drawing failed.
    #[error("cannot write {path}: {message}")]
    Write {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
}

/// Reads a JSON report written by `tributary run --json`.
pub fn load_report(path: &Path) -> Result<Report, PlotError> {
    let text = std::fs::read_to_string(path).map_err(|error| PlotError::Read {
        path: path.display().to_string(),
        error,
    })?;
    let de = &mut serde_json::Deserializer::from_str(&text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let field = e.path().to_string();
        let inner = e.into_inner().to_string();
        PlotError::Json {
            path: path.display().to_string(),
            message: if field == "." {
                inner
            } else {
                format!("{field}: {inner}")
            },
        }
    })
}

/// One plotted line (or bar series): y with its 95 % half-width at each x position.
#[derive(Debug, Clone, PartialEq)]
struct Line {
    name: String,
    points: Vec<(f64, Estimate)>,
}

/// A figure ready to draw.
#[derive(Debug, Clone, PartialEq)]
struct Figure {
    kind: PlotKind,
    title: String,
    x_label: String,
    y_label: String,
    /// Tick labels for categorical x (line and bar plots).
    categories: Vec<String>,
    lines: Vec<Line>,
}

/// Renders `spec` from `report` into `DIR/NAME.png` and `DIR/NAME.svg`; returns both paths.
pub fn render(report: &Report, spec: &PlotSpec, dir: &Path) -> Result<Vec<PathBuf>, PlotError> {
    let fig = figure(report, spec)?;
    std::fs::create_dir_all(dir).map_err(|e| PlotError::Write {
        path: dir.display().to_string(),
        message: e.to_string(),
    })?;
    let svg_path = dir.join(format!("{}.svg", spec.name));
    let png_path = dir.join(format!("{}.png", spec.name));
    let werr = |p: &Path| {
        let p = p.display().to_string();
        move |e: String| PlotError::Write {
            path: p.clone(),
            message: e,
        }
    };
    register_font();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        draw(&root, &fig).map_err(werr(&svg_path))?;
        root.present().map_err(|e| werr(&svg_path)(e.to_string()))?;
    }
    std::fs::write(&svg_path, svg).map_err(|e| werr(&svg_path)(e.to_string()))?;
    let mut rgb = vec![0u8; (SIZE.0 * SIZE.1 * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, SIZE).into_drawing_area();
        draw(&root, &fig).map_err(werr(&png_path))?;
        root.present().map_err(|e| werr(&png_path)(e.to_string()))?;
    }
    write_png(&png_path, &rgb).map_err(werr(&png_path))?;
    Ok(vec![png_path, svg_path])
}

const SIZE: (u32, u32) = (800, 480);

/// Tableau 10: distinguishable, and fixed so the output is deterministic.
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

fn register_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            include_bytes!("../assets/DejaVuSans.ttf"),
        )
        .unwrap_or_else(|_| panic!("the embedded font parses"));
    });
}

fn write_png(path: &Path, rgb: &[u8]) -> Result<(), String> {
    let file = std::fs::File::create(path).map_err(|e| e.to_string())?;
    let mut enc = png::Encoder::new(std::io::BufWriter::new(file), SIZE.0, SIZE.1);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    enc.set_compression(png::Compression::Best);
    let mut w = enc.write_header().map_err(|e| e.to_string())?;
    w.write_image_data(rgb).map_err(|e| e.to_string())?;
    w.finish().map_err(|e| e.to_string())
}

/// Flows of `run` a selector matches: by flow name, else by `[[flows]]` entry.
fn select<'a>(run: &'a RunRecord, sel: &str) -> Vec<&'a FlowRecord> {
    let by_name: Vec<&FlowRecord> = run.flows.iter().filter(|f| f.name == sel).collect();
    if !by_name.is_empty() {
        return by_name;
    }
    run.flows.iter().filter(|f| f.group == sel).collect()
}

fn reduce(xs: impl Iterator<Item = f64>, how: Reduce) -> f64 {
    let (mut sum, mut n) = (0.0, 0usize);
    for x in xs {
        sum += x;
        n += 1;
    }
    match how {
        Reduce::Sum => sum,
        Reduce::Mean => sum / n.max(1) as f64,
    }
}

/// The named values one run gives for the spec (line name → value; absent when undefined).
fn run_values(run: &RunRecord, spec: &PlotSpec, sels: &[String]) -> Vec<(String, Option<f64>)> {
    let label = |sel: &str| {
        if sels.len() > 1 {
            sel.to_string()
        } else {
            String::new()
        }
    };
    let mut out = Vec::new();
    match spec.metric {
        Metric::Goodput => {
            for s in sels {
                let v = reduce(select(run, s).iter().map(|f| f.goodput_mbps), spec.reduce);
                out.push((label(s), Some(v)));
            }
        }
        Metric::Completion => {
            for s in sels {
                let fl = select(run, s);
                let done: Option<Vec<f64>> = fl.iter().map(|f| f.completion_s).collect();
                let v = done.map(|c| match spec.reduce {
                    Reduce::Sum => c.iter().fold(0.0f64, |m, &x| m.max(x)),
                    Reduce::Mean => reduce(c.into_iter(), Reduce::Mean),
                });
                out.push((label(s), v));
            }
        }
        Metric::Fairness => {
            let xs: Vec<f64> = sels
                .iter()
                .flat_map(|s| select(run, s))
                .map(|f| f.goodput_mbps)
                .collect();
            out.push((String::new(), Some(jain(&xs))));
        }
        Metric::Ratio => {
            let a = reduce(
                select(run, &sels[0]).iter().map(|f| f.goodput_mbps),
                spec.reduce,
            );
            let b = reduce(
                select(run, &sels[1]).iter().map(|f| f.goodput_mbps),
                spec.reduce,
            );
            out.push((String::new(), (b > 0.0).then(|| a / b)));
        }
        Metric::OnTimeFrames => {
            for s in sels {
                let xs: Vec<f64> = select(run, s)
                    .iter()
                    .filter_map(|f| {
                        let r = &f.app.receiver;
                        let frames = r.get("frames")?.as_u64().filter(|&n| n > 0)?;
                        Some(100.0 * r.get("on_time")?.as_u64()? as f64 / frames as f64)
                    })
                    .collect();
                let v = (!xs.is_empty()).then(|| reduce(xs.into_iter(), Reduce::Mean));
                out.push((label(s), v));
            }
        }
        Metric::BlockDelay | Metric::Jitter | Metric::Overhead => {
            for s in sels {
                let xs: Vec<f64> = select(run, s)
                    .iter()
                    .filter_map(|f| match spec.metric {
                        Metric::BlockDelay => f.block_delay.as_ref().map(|b| b.mean_ms),
                        Metric::Jitter => f.block_delay.as_ref().map(|b| b.jitter_ms),
                        _ => f.overhead.map(|o| 100.0 * o),
                    })
                    .collect();
                let v = (!xs.is_empty()).then(|| reduce(xs.into_iter(), Reduce::Mean));
                out.push((label(s), v));
            }
        }
        Metric::LostPerBlock
        | Metric::Cwnd
        | Metric::Srtt
        | Metric::InFlight
        | Metric::Losses
        | Metric::Retransmissions => {}
        Metric::PathThroughput | Metric::PathShare => {
            for s in sels {
                let fl = select(run, s);
                let names: Vec<&str> = fl[0].paths.iter().map(|p| p.name.as_str()).collect();
                let per_path: Vec<f64> = (0..names.len())
                    .map(|i| {
                        reduce(
                            fl.iter()
                                .map(|f| f.paths.get(i).map_or(0.0, |p| p.stats.throughput_mbps)),
                            spec.reduce,
                        )
                    })
                    .collect();
                let total: f64 = per_path.iter().sum();
                for (name, v) in names.iter().zip(&per_path) {
                    let lbl = if sels.len() > 1 {
                        format!("{s} {name}")
                    } else {
                        name.to_string()
                    };
                    let v = if spec.metric == Metric::PathShare {
                        (total > 0.0).then(|| 100.0 * v / total)
                    } else {
                        Some(*v)
                    };
                    out.push((lbl, v));
                }
            }
        }
    }
    out
}

/// The selectors of `spec`, checked against the report.
fn selectors(report: &Report, spec: &PlotSpec) -> Result<Vec<String>, PlotError> {
    let first = report
        .runs
        .first()
        .ok_or_else(|| PlotError::Spec("the results contain no runs".into()))?;
    let sels: Vec<String> = if spec.flows.is_empty() {
        let mut groups: Vec<String> = Vec::new();
        for f in &first.flows {
            if !groups.contains(&f.group) {
                groups.push(f.group.clone());
            }
        }
        groups
    } else {
        spec.flows.clone()
    };
    for s in &sels {
        if select(first, s).is_empty() {
            let mut known: Vec<&str> = Vec::new();
            for f in &first.flows {
                for n in [f.group.as_str(), f.name.as_str()] {
                    if !known.contains(&n) {
                        known.push(n);
                    }
                }
            }
            return Err(PlotError::Spec(format!(
                "plot `{}`: no flow or flow entry `{s}` in the results (known: {})",
                spec.name,
                known.join(", ")
            )));
        }
    }
    if spec.metric == Metric::Ratio && sels.len() != 2 {
        return Err(PlotError::Spec(format!(
            "plot `{}`: metric `ratio` needs exactly two flow selectors (numerator, denominator), got {}",
            spec.name,
            sels.len()
        )));
    }
    Ok(sels)
}

fn est_or_point(xs: &[f64]) -> Option<Estimate> {
    Estimate::of(xs)
}

fn default_x_label(report: &Report) -> String {
    let mut params: Vec<&str> = Vec::new();
    for r in &report.runs {
        for k in r.sweep_values.keys() {
            if !params.contains(&k.as_str()) {
                params.push(k);
            }
        }
    }
    if params.is_empty() {
        "sweep point".into()
    } else {
        params.join(", ")
    }
}

/// Computes the figure's data.
fn figure(report: &Report, spec: &PlotSpec) -> Result<Figure, PlotError> {
    if spec.name.is_empty() || spec.name.contains(['/', '\\']) {
        return Err(PlotError::Spec(format!(
            "plot name `{}` must be a non-empty file stem without slashes",
            spec.name
        )));
    }
    let sels = selectors(report, spec)?;
    let title = spec.title.clone().unwrap_or_else(|| {
        format!(
            "{}: {}",
            report.scenario,
            spec.metric.axis_label(spec.reduce)
        )
    });
    if spec.kind == PlotKind::Series {
        return series_figure(report, spec, &sels, title);
    }
    if spec.metric != Metric::PathThroughput && spec.metric.path_column().is_some() {
        return Err(PlotError::Spec(format!(
            "plot `{}`: metric `{}` is a time series: use kind `series`",
            spec.name,
            spec.metric.name()
        )));
    }
    if (spec.kind == PlotKind::Cdf) != (spec.metric == Metric::LostPerBlock) {
        return Err(PlotError::Spec(format!(
            "plot `{}`: metric `lost-per-block` goes with kind `cdf` and `cdf` with it only",
            spec.name
        )));
    }
    if spec.kind == PlotKind::Cdf {
        return cdf_figure(report, spec, &sels, title);
    }
    let variants: Vec<&String> = report
        .variants
        .iter()
        .filter(|v| spec.variants.is_empty() || spec.variants.contains(v))
        .collect();
    if variants.is_empty() {
        return Err(PlotError::Spec(format!(
            "plot `{}`: none of the variants {:?} is in the results (known: {})",
            spec.name,
            spec.variants,
            report.variants.join(", ")
        )));
    }
    // Per sweep point: (group, x category) when shown.
    let mut categories: Vec<String> = Vec::new();
    let mut shown: Vec<Option<(String, usize)>> = Vec::new();
    for p in &report.sweep_points {
        let m = if spec.points.is_empty() {
            Some((String::new(), p.clone()))
        } else {
            spec.points.iter().find_map(|g| {
                point_group(p, g).map(|rest| {
                    (
                        if spec.points.len() > 1 {
                            g.clone()
                        } else {
                            String::new()
                        },
                        rest,
                    )
                })
            })
        };
        shown.push(m.map(|(g, x)| {
            let xi = match categories.iter().position(|c| *c == x) {
                Some(i) => i,
                None => {
                    categories.push(x);
                    categories.len() - 1
                }
            };
            (g, xi)
        }));
    }
    if shown.iter().all(Option::is_none) {
        return Err(PlotError::Spec(format!(
            "plot `{}`: no sweep point matches {:?} (known: {})",
            spec.name,
            spec.points,
            report.sweep_points.join(", ")
        )));
    }
    // (line name) → per x index, the values over repetitions.
    let mut lines: Vec<(String, Vec<Vec<f64>>)> = Vec::new();
    let x_count = match spec.kind {
        PlotKind::Line => categories.len(),
        _ => variants.len(),
    };
    for (vi, variant) in variants.iter().enumerate() {
        for (pi, point) in report.sweep_points.iter().enumerate() {
            let Some((group, xi)) = &shown[pi] else {
                continue;
            };
            for run in report
                .runs
                .iter()
                .filter(|r| r.variant == **variant && r.sweep == *point)
            {
                for (name, v) in run_values(run, spec, &sels) {
                    let (line_name, x) = match spec.kind {
                        PlotKind::Line => (join(&[variant, group, &name]), *xi),
                        _ => (join(&[point, &name]), vi),
                    };
                    let idx = match lines.iter().position(|(n, _)| *n == line_name) {
                        Some(i) => i,
                        None => {
                            lines.push((line_name, vec![Vec::new(); x_count]));
                            lines.len() - 1
                        }
                    };
                    if let Some(v) = v {
                        lines[idx].1[x].push(v);
                    }
                }
            }
        }
    }
    let lines: Vec<Line> = lines
        .into_iter()
        .map(|(name, per_x)| Line {
            name,
            points: per_x
                .iter()
                .enumerate()
                .filter_map(|(x, vs)| est_or_point(vs).map(|e| (x as f64, e)))
                .collect(),
        })
        .collect();
    let (categories, x_label) = match spec.kind {
        PlotKind::Line => (
            categories,
            spec.x_label
                .clone()
                .unwrap_or_else(|| default_x_label(report)),
        ),
        _ => (
            variants.iter().map(|v| v.to_string()).collect(),
            spec.x_label.clone().unwrap_or_else(|| "variant".into()),
        ),
    };
    Ok(Figure {
        kind: spec.kind,
        title,
        x_label,
        y_label: spec
            .y_label
            .clone()
            .unwrap_or_else(|| spec.metric.axis_label(spec.reduce)),
        categories,
        lines,
    })
}

/// The rest of `label` when `group`'s words occur in it as a run of whole words.
fn point_group(label: &str, group: &str) -> Option<String> {
    let words: Vec<&str> = label.split_whitespace().collect();
    let g: Vec<&str> = group.split_whitespace().collect();
    if g.is_empty() || g.len() > words.len() {
        return None;
    }
    (0..=words.len() - g.len())
        .find(|&i| words[i..i + g.len()] == g[..])
        .map(|i| {
            let mut rest = words[..i].to_vec();
            rest.extend_from_slice(&words[i + g.len()..]);
            rest.join(" ")
        })
}

fn join(parts: &[&str]) -> String {
    parts
        .iter()
        .filter(|p| !p.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Adds one run's block delays, averaged per sampling interval (the goodput series' step,
/// 1 s without one), to `per_t` (bin end time → one value per run).
fn delay_bins(
    fl: &[&FlowRecord],
    per_t: &mut Vec<(f64, Vec<f64>)>,
    spec: &PlotSpec,
) -> Result<(), PlotError> {
    if fl.iter().all(|f| f.block_delay_series.is_empty()) {
        return Err(PlotError::Spec(format!(
            "plot `{}`: the results have no block delay series (set `sample_interval` in the scenario)",
            spec.name
        )));
    }
    let step = fl
        .iter()
        .find_map(|f| f.series.first().map(|s| s[0]))
        .filter(|&s| s > 0.0)
        .unwrap_or(1.0);
    let mut bins: std::collections::BTreeMap<u64, (f64, usize)> = Default::default();
    for f in fl {
        for &[t, d] in &f.block_delay_series {
            let b = bins.entry((t / step).floor().max(0.0) as u64).or_default();
            b.0 += d;
            b.1 += 1;
        }
    }
    for (bin, (sum, n)) in bins {
        let t = (bin + 1) as f64 * step;
        let v = sum / n as f64;
        match per_t.iter_mut().find(|(x, _)| (*x - t).abs() < 1e-9) {
            Some(slot) => slot.1.push(v),
            None => per_t.push((t, vec![v])),
        }
    }
    per_t.sort_by(|a, b| a.0.total_cmp(&b.0));
    Ok(())
}

/// A per-path quantity over time: one line per variant (× sweep point × selector, or × flow
/// with `per_flow`) × path, the selected flows reduced per `reduce` at each sample, then the
/// mean over repetitions.
fn path_series_figure(
    report: &Report,
    spec: &PlotSpec,
    sels: &[String],
    title: String,
    column: fn(&tributary_sim::PathSeries, usize) -> Option<f64>,
) -> Result<Figure, PlotError> {
    let multi_point = report.sweep_points.len() > 1;
    let mut lines = Vec::new();
    for variant in &report.variants {
        for point in &report.sweep_points {
            let runs: Vec<&RunRecord> = report
                .runs
                .iter()
                .filter(|r| r.variant == *variant && r.sweep == *point)
                .collect();
            if runs.is_empty() {
                continue;
            }
            let mut keys: Vec<(String, String)> = Vec::new();
            for s in sels {
                if spec.per_flow {
                    for f in select(runs[0], s) {
                        keys.push((f.name.clone(), f.name.clone()));
                    }
                } else {
                    let label = if sels.len() > 1 {
                        s.clone()
                    } else {
                        String::new()
                    };
                    keys.push((label, s.clone()));
                }
            }
            for (key, sel) in keys {
                let first = select(runs[0], &sel);
                let names: Vec<String> = first
                    .first()
                    .map(|f| f.paths.iter().map(|p| p.name.clone()).collect())
                    .unwrap_or_default();
                for (pi, pname) in names.iter().enumerate() {
                    let mut per_t: Vec<(f64, Vec<f64>)> = Vec::new();
                    for run in &runs {
                        let fl = select(run, &sel);
                        let len = fl
                            .iter()
                            .filter_map(|f| f.path_series.get(pi))
                            .map(|s| s.t_s.len())
                            .max()
                            .unwrap_or(0);
                        if len == 0 {
                            return Err(PlotError::Spec(format!(
                                "plot `{}`: the results have no per-path series (set `sample_interval` in the scenario)",
                                spec.name
                            )));
                        }
                        for i in 0..len {
                            let t = fl
                                .iter()
                                .filter_map(|f| f.path_series.get(pi))
                                .find_map(|s| s.t_s.get(i).copied())
                                .unwrap_or(0.0);
                            let vs: Vec<f64> = fl
                                .iter()
                                .filter_map(|f| f.path_series.get(pi).and_then(|s| column(s, i)))
                                .collect();
                            if vs.is_empty() {
                                continue;
                            }
                            let v = reduce(vs.into_iter(), spec.reduce);
                            match per_t.iter_mut().find(|(x, _)| (*x - t).abs() < 1e-9) {
                                Some(slot) => slot.1.push(v),
                                None => per_t.push((t, vec![v])),
                            }
                        }
                    }
                    per_t.sort_by(|a, b| a.0.total_cmp(&b.0));
                    let name = join(&[variant, if multi_point { point } else { "" }, &key, pname]);
                    lines.push(Line {
                        name,
                        points: per_t
                            .iter()
                            .filter_map(|(t, vs)| est_or_point(vs).map(|e| (*t, e)))
                            .collect(),
                    });
                }
            }
        }
    }
    Ok(Figure {
        kind: PlotKind::Series,
        title,
        x_label: spec.x_label.clone().unwrap_or_else(|| "time (s)".into()),
        y_label: spec
            .y_label
            .clone()
            .unwrap_or_else(|| spec.metric.axis_label(spec.reduce)),
        categories: Vec::new(),
        lines,
    })
}

fn series_figure(
    report: &Report,
    spec: &PlotSpec,
    sels: &[String],
    title: String,
) -> Result<Figure, PlotError> {
    if let Some(column) = spec.metric.path_column() {
        return path_series_figure(report, spec, sels, title, column);
    }
    if !matches!(spec.metric, Metric::Goodput | Metric::BlockDelay) {
        return Err(PlotError::Spec(format!(
            "plot `{}`: a series plot shows goodput, block delay, path-throughput, cwnd, srtt, \
             in-flight, losses or retransmissions over time; metric `{}` is not available per sample",
            spec.name,
            spec.metric.name()
        )));
    }
    let multi_point = report.sweep_points.len() > 1;
    let mut lines = Vec::new();
    for variant in &report.variants {
        for point in &report.sweep_points {
            let runs: Vec<&RunRecord> = report
                .runs
                .iter()
                .filter(|r| r.variant == *variant && r.sweep == *point)
                .collect();
            if runs.is_empty() {
                continue;
            }
            // Each line: selector (or flow) → per-run series reduced over its flows.
            let mut keys: Vec<(String, Vec<String>)> = Vec::new();
            for s in sels {
                if spec.per_flow {
                    for f in select(runs[0], s) {
                        keys.push((f.name.clone(), vec![f.name.clone()]));
                    }
                } else {
                    keys.push((
                        if sels.len() > 1 {
                            s.clone()
                        } else {
                            String::new()
                        },
                        vec![s.clone()],
                    ));
                }
            }
            for (key, sel) in keys {
                let mut per_t: Vec<(f64, Vec<f64>)> = Vec::new();
                for run in &runs {
                    let fl = select(run, &sel[0]);
                    if spec.metric == Metric::BlockDelay {
                        delay_bins(&fl, &mut per_t, spec)?;
                        continue;
                    }
                    let len = fl.iter().map(|f| f.series.len()).max().unwrap_or(0);
                    if len == 0 {
                        return Err(PlotError::Spec(format!(
                            "plot `{}`: the results have no time series (set `sample_interval` in the scenario)",
                            spec.name
                        )));
                    }
                    for i in 0..len {
                        let t = fl
                            .iter()
                            .find_map(|f| f.series.get(i).map(|s| s[0]))
                            .unwrap_or(0.0);
                        let v = reduce(
                            fl.iter().map(|f| f.series.get(i).map_or(0.0, |s| s[1])),
                            spec.reduce,
                        );
                        match per_t.get_mut(i) {
                            Some(slot) => slot.1.push(v),
                            None => per_t.push((t, vec![v])),
                        }
                    }
                }
                let name = join(&[variant, if multi_point { point } else { "" }, &key]);
                lines.push(Line {
                    name,
                    points: per_t
                        .iter()
                        .filter_map(|(t, vs)| est_or_point(vs).map(|e| (*t, e)))
                        .collect(),
                });
            }
        }
    }
    Ok(Figure {
        kind: PlotKind::Series,
        title,
        x_label: spec.x_label.clone().unwrap_or_else(|| "time (s)".into()),
        y_label: spec
            .y_label
            .clone()
            .unwrap_or_else(|| spec.metric.axis_label(spec.reduce)),
        categories: Vec::new(),
        lines,
    })
}

/// `cdf` plots: per variant × sweep point (filtered by `points`), the lost-per-block
/// histograms of the selected flows summed over the repetitions, drawn as the cumulative
/// share of blocks (%) with at most x lost packets, x = 0 .. the largest count seen.
fn cdf_figure(
    report: &Report,
    spec: &PlotSpec,
    sels: &[String],
    title: String,
) -> Result<Figure, PlotError> {
    let variants: Vec<&String> = report
        .variants
        .iter()
        .filter(|v| spec.variants.is_empty() || spec.variants.contains(v))
        .collect();
    let multi_variant = variants.len() > 1;
    let multi_point = report.sweep_points.len() > 1;
    let mut lines = Vec::new();
    for variant in variants {
        for point in &report.sweep_points {
            if !spec.points.is_empty()
                && !spec.points.iter().any(|g| point_group(point, g).is_some())
            {
                continue;
            }
            let mut hist: Vec<u64> = Vec::new();
            for run in report
                .runs
                .iter()
                .filter(|r| r.variant == *variant && r.sweep == *point)
            {
                for s in sels {
                    for f in select(run, s) {
                        for (x, n) in lost_per_block(f).enumerate() {
                            if hist.len() <= x {
                                hist.resize(x + 1, 0);
                            }
                            hist[x] += n;
                        }
                    }
                }
            }
            let total: u64 = hist.iter().sum();
            if total == 0 {
                continue;
            }
            let mut cum = 0;
            let points = hist
                .iter()
                .enumerate()
                .map(|(x, &n)| {
                    cum += n;
                    let v = 100.0 * cum as f64 / total as f64;
                    (
                        x as f64,
                        Estimate {
                            mean: v,
                            ci95: None,
                            std: None,
                            min: v,
                            max: v,
                            n: 1,
                        },
                    )
                })
                .collect();
            lines.push(Line {
                name: join(&[
                    if multi_variant { variant } else { "" },
                    if multi_point { point } else { "" },
                ]),
                points,
            });
        }
    }
    if lines.is_empty() {
        return Err(PlotError::Spec(format!(
            "plot `{}`: no run of the selected variants and points has a lost-per-block histogram (a coded scheme's `scheme.sender.lost_per_block`)",
            spec.name
        )));
    }
    Ok(Figure {
        kind: PlotKind::Cdf,
        title,
        x_label: spec
            .x_label
            .clone()
            .unwrap_or_else(|| "lost packets per block (x)".into()),
        y_label: spec
            .y_label
            .clone()
            .unwrap_or_else(|| spec.metric.axis_label(spec.reduce)),
        categories: Vec::new(),
        lines,
    })
}

fn y_range(fig: &Figure) -> (f64, f64) {
    if fig.kind == PlotKind::Cdf {
        return (0.0, 102.0);
    }
    let mut hi: f64 = 0.0;
    let mut lo: f64 = 0.0;
    for l in &fig.lines {
        for (_, e) in &l.points {
            let ci = e.ci95.unwrap_or(0.0);
            hi = hi.max(e.mean + ci);
            lo = lo.min(e.mean - ci);
        }
    }
    if hi <= lo {
        hi = lo + 1.0;
    }
    // Headroom for the legend in the upper right corner: about 5 % of the height per entry.
    let entries = fig.lines.len().min(10) as f64;
    (lo, hi / (1.0 - 0.05 * entries - 0.06))
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, fig: &Figure) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let e = |err: DrawingAreaErrorKind<DB::ErrorType>| err.to_string();
    root.fill(&WHITE).map_err(e)?;
    let (ylo, yhi) = y_range(fig);
    let (xlo, xhi) = match fig.kind {
        PlotKind::Cdf => {
            let xmax = fig
                .lines
                .iter()
                .flat_map(|l| l.points.iter().map(|p| p.0))
                .fold(0.0f64, f64::max);
            (-0.5, xmax.max(1.0) + 0.5)
        }
        PlotKind::Series => {
            let tmax = fig
                .lines
                .iter()
                .flat_map(|l| l.points.iter().map(|p| p.0))
                .fold(0.0f64, f64::max);
            (0.0, tmax.max(1.0))
        }
        _ => (-0.5, fig.categories.len().max(1) as f64 - 0.5),
    };
    let mut chart = ChartBuilder::on(root)
        .caption(&fig.title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(65)
        .build_cartesian_2d(xlo..xhi, ylo..yhi)
        .map_err(e)?;
    let cats = fig.categories.clone();
    let cdf = fig.kind == PlotKind::Cdf;
    let categorical = matches!(fig.kind, PlotKind::Line | PlotKind::Bar);
    let fmt_x = move |x: &f64| {
        if categorical {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < cats.len() {
                cats[i as usize].clone()
            } else {
                String::new()
            }
        } else if cdf {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 {
                format!("{i}")
            } else {
                String::new()
            }
        } else {
            format!("{x}")
        }
    };
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(&fig.x_label)
        .y_desc(&fig.y_label)
        .label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 15))
        .max_light_lines(0)
        .x_label_formatter(&fmt_x);
    if categorical {
        mesh.x_labels(fig.categories.len().max(1) * 2 + 1)
            .disable_x_mesh();
    }
    if cdf {
        mesh.x_labels(((xhi - xlo).round() as usize).min(40) * 2 + 1);
    }
    mesh.draw().map_err(e)?;

    let n = fig.lines.len().max(1) as f64;
    for (li, line) in fig.lines.iter().enumerate() {
        let color = PALETTE[li % PALETTE.len()];
        let style = color.stroke_width(2);
        match fig.kind {
            PlotKind::Line | PlotKind::Series | PlotKind::Cdf => {
                let pts: Vec<(f64, f64)> = line.points.iter().map(|(x, e)| (*x, e.mean)).collect();
                chart
                    .draw_series(LineSeries::new(pts.clone(), style))
                    .map_err(e)?
                    .label(line.name.clone())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                    });
                if matches!(fig.kind, PlotKind::Line | PlotKind::Cdf) {
                    chart
                        .draw_series(pts.iter().map(|&p| Circle::new(p, 4, color.filled())))
                        .map_err(e)?;
                }
                let with_ci = line.points.iter().filter_map(|(x, est)| {
                    est.ci95.map(|ci| {
                        ErrorBar::new_vertical(*x, est.mean - ci, est.mean, est.mean + ci, style, 8)
                    })
                });
                if fig.kind == PlotKind::Line {
                    chart.draw_series(with_ci).map_err(e)?;
                }
            }
            PlotKind::Bar => {
                let width = 0.8 / n;
                let off = -0.4 + width * li as f64;
                chart
                    .draw_series(line.points.iter().map(|(x, est)| {
                        Rectangle::new(
                            [(x + off, 0.0), (x + off + width * 0.92, est.mean)],
                            color.filled(),
                        )
                    }))
                    .map_err(e)?
                    .label(if line.name.is_empty() {
                        "mean ± 95 % CI".to_string()
                    } else {
                        line.name.clone()
                    })
                    .legend(move |(x, y)| {
                        Rectangle::new([(x, y - 5), (x + 14, y + 5)], color.filled())
                    });
                chart
                    .draw_series(line.points.iter().filter_map(|(x, est)| {
                        est.ci95.map(|ci| {
                            ErrorBar::new_vertical(
                                x + off + width * 0.46,
                                est.mean - ci,
                                est.mean,
                                est.mean + ci,
                                BLACK.stroke_width(1),
                                6,
                            )
                        })
                    }))
                    .map_err(e)?;
            }
        }
    }
    chart
        .configure_series_labels()
        .position(if cdf {
            SeriesLabelPosition::LowerRight
        } else {
            SeriesLabelPosition::UpperRight
        })
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 13))
        .draw()
        .map_err(e)?;
    Ok(())
}

/// The `lost_per_block` histogram among a flow's scheme counters (empty if it has none).
fn lost_per_block(f: &FlowRecord) -> impl Iterator<Item = u64> + '_ {
    f.scheme
        .sender
        .get("lost_per_block")
        .and_then(|v| v.as_array())
        .into_iter()
        .flatten()
        .map(|v| v.as_u64().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `on-time-frames` is the video receiver's on-time frames over its frames, in %, per
    /// flow that has frames (a bulk flow beside it is left out), averaged over the selected
    /// flows — what the dFEC report's tables call "on-time frames %".
    #[test]
    fn on_time_frames_is_the_share_of_frames_on_time() {
        let text = r#"
name = "frames"
duration = "6s"
seed = 9
[[links]]
name = "a"
rate = "4Mbps"
delay = "40ms"
loss = 0.03
[[flows]]
name = "v"
paths = ["a"]
scheme = "tcp"
app = { name = "video", duration = "4s", bit_rate = "1Mbps", deadline = "120ms" }
count = 2
[[flows]]
name = "bulk"
paths = ["a"]
scheme = "tcp"
"#;
        let s = crate::Scenario::parse(text, "frames.toml").unwrap();
        let report = crate::run::run(&s, &crate::RunOptions::default(), &|| {}).unwrap();
        let run = &report.runs[0];
        let spec = PlotSpec {
            name: "f".into(),
            kind: PlotKind::Bar,
            metric: Metric::OnTimeFrames,
            flows: vec!["v".into(), "bulk".into()],
            reduce: Reduce::Sum,
            per_flow: false,
            variants: vec![],
            points: vec![],
            title: None,
            x_label: None,
            y_label: None,
        };
        let sels = spec.flows.clone();
        let got = run_values(run, &spec, &sels);
        let share = |f: &FlowRecord| {
            let r = &f.app.receiver;
            100.0 * r["on_time"].as_f64().unwrap() / r["frames"].as_f64().unwrap()
        };
        let v: Vec<f64> = run
            .flows
            .iter()
            .filter(|f| f.name.starts_with("v#"))
            .map(share)
            .collect();
        assert_eq!(v.len(), 2);
        assert!(
            v.iter().any(|&x| x < 100.0),
            "loss makes some frames late: {v:?}"
        );
        let want = (v[0] + v[1]) / 2.0;
        assert_eq!(got[0].0, "v");
        assert!((got[0].1.unwrap() - want).abs() < 1e-9, "{got:?} vs {want}");
        assert_eq!(
            got[1],
            ("bulk".to_string(), None),
            "a flow without frames has no value"
        );
    }

    #[test]
    fn metric_names_round_trip() {
        for m in [
            "goodput",
            "completion",
            "fairness",
            "ratio",
            "path-throughput",
            "path-share",
        ] {
            assert_eq!(Metric::parse(m).unwrap().name(), m);
        }
        assert_eq!(
            Metric::parse("on-time-frames").unwrap(),
            Metric::OnTimeFrames
        );
        let e = Metric::parse("latency").unwrap_err().to_string();
        assert!(
            e.starts_with("unknown metric `latency` (known: goodput,"),
            "{e}"
        );
    }
}
