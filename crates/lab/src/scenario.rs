//! Scenario files: loading, overrides (variants, sweep points) and compilation into
//! [`SimConfig`]s. The schema is documented in `docs/scenarios.md`.

use crate::overrides;
use crate::plot::PlotSpec;
use crate::spec::{FileSpec, FlowSpec, LinkSpec, MetaSpec, ReverseSpec};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use tributary_proto::scheme::SchemeConfig;
use tributary_proto::time::Duration;
use tributary_proto::ConnectionConfig;
use tributary_sim::{
    app::FlowShape, AppConfig, ArrivalConfig, DeliveryTrace, Direction, FlowConfig, FlowKind,
    LinkChange, LinkConfig, LinkParams, LossModel, QueueLimit, SimConfig, TimedChange,
};

/// Why a scenario cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("cannot read scenario file {path}: {error}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        error: std::io::Error,
    },
    /// The file is not valid TOML.
    #[error("{origin}: invalid TOML: {message}")]
    Syntax {
        /// Where the text came from.
        origin: String,
        /// The parser's message (with line and column).
        message: String,
    },
    /// The file is TOML but not a valid scenario; `message` names the field.
    #[error("{origin}: {message}")]
    Invalid {
        /// Where the text came from.
        origin: String,
        /// `field: problem`, prefixed by the variant or sweep point when it is theirs.
        message: String,
    },
}

/// One point of the sweep: the overrides it applies.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepPoint {
    /// Short label (`loss=0.02`, or the file's `labels`); empty without a sweep.
    pub label: String,
    /// (parameter path, value) per swept parameter.
    pub values: Vec<(String, toml::Value)>,
}

/// Flows of a run that come from one `[[flows]]` entry (`count` copies).
#[derive(Debug, Clone, PartialEq)]
pub struct FlowGroup {
    /// The entry's name.
    pub name: String,
    /// Indices of its flows in [`SimConfig::flows`].
    pub flows: std::ops::Range<usize>,
    /// Names of the flow's paths.
    pub path_names: Vec<String>,
}

/// A network and workload ready to run (the seed is set per repetition).
#[derive(Debug, Clone, PartialEq)]
pub struct Compiled {
    /// The simulation, with `seed` to be set per repetition.
    pub sim: SimConfig,
    /// Flow groups in order.
    pub groups: Vec<FlowGroup>,
}

/// A parsed scenario: every (variant, sweep point) combination compiled.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// `name`.
    pub name: String,
    /// `description`.
    pub description: Option<String>,
    /// Master seed; repetition `r` runs with `derive_seed(seed, [0x1ab, r])`
    /// ([`crate::run::repetition_seed`]) in every variant and sweep point.
    pub seed: u64,
    /// Repetitions per (variant, sweep point).
    pub repetitions: u64,
    /// Variant names (`["base"]` when the file has none).
    pub variants: Vec<String>,
    /// Sweep points (one unlabelled point when the file has no sweep).
    pub points: Vec<SweepPoint>,
    /// Compiled configurations, index `variant * points.len() + point`.
    pub configs: Vec<Compiled>,
    /// Figures to render from the results (`[[plots]]`).
    pub plots: Vec<PlotSpec>,
}

/// The `[[plots]]` section on its own.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PlotsSpec {
    plots: Vec<PlotSpec>,
}

impl Scenario {
    /// The configuration of (variant, point).
    pub fn config(&self, variant: usize, point: usize) -> &Compiled {
        &self.configs[variant * self.points.len() + point]
    }

    /// Reads and parses a scenario file; trace files it names are relative to its directory.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|error| ScenarioError::Read {
            path: path.display().to_string(),
            error,
        })?;
        let dir = path.parent().unwrap_or(Path::new(""));
        Scenario::parse_in(&text, &path.display().to_string(), dir)
    }

    /// Parses scenario text; `origin` names it in errors. Trace files it names are relative
    /// to the current directory.
    pub fn parse(text: &str, origin: &str) -> Result<Scenario, ScenarioError> {
        Scenario::parse_in(text, origin, Path::new(""))
    }

    /// Parses scenario text; `origin` names it in errors and trace files it names are
    /// relative to `dir`.
    pub fn parse_in(text: &str, origin: &str, dir: &Path) -> Result<Scenario, ScenarioError> {
        let mut traces = Traces {
            dir: dir.to_path_buf(),
            loaded: HashMap::new(),
        };
        let invalid = |message: String| ScenarioError::Invalid {
            origin: origin.to_string(),
            message,
        };
        let mut root: toml::Table =
            text.parse()
                .map_err(|e: toml::de::Error| ScenarioError::Syntax {
                    origin: origin.to_string(),
                    message: e.to_string().trim_end().to_string(),
                })?;
        let mut meta_tbl = toml::Table::new();
        for key in ["variants", "sweep"] {
            if let Some(v) = root.remove(key) {
                meta_tbl.insert(key.to_string(), v);
            }
        }
        let meta: MetaSpec = typed(meta_tbl).map_err(invalid)?;
        let plots = match root.remove("plots") {
            None => Vec::new(),
            Some(v) => {
                let mut t = toml::Table::new();
                t.insert("plots".into(), v);
                typed::<PlotsSpec>(t).map_err(invalid)?.plots
            }
        };

        // The base file must be valid on its own.
        let base_spec: FileSpec = typed(root.clone()).map_err(invalid)?;
        compile(&base_spec, &mut traces).map_err(invalid)?;
        if base_spec.repetitions == 0 {
            return Err(invalid("repetitions: must be at least 1".into()));
        }

        let mut variants = Vec::new();
        for (i, v) in meta.variants.iter().enumerate() {
            if variants.contains(&v.name) {
                return Err(invalid(format!(
                    "variants[{i}].name: `{}` is used twice",
                    v.name
                )));
            }
            variants.push(v.name.clone());
        }
        let points = sweep_points(&meta).map_err(invalid)?;
        // `sweep_points` bounded the points alone; with the variants (at least one), and with
        // the repetitions, the plan must stay within the limits too.
        let configs = points.len().saturating_mul(meta.variants.len().max(1));
        if configs > crate::run::MAX_CONFIGS {
            return Err(invalid(format!(
                "{} variant(s) × {} sweep point(s) = {configs} configurations, more than the {} \
                 one scenario file may have; split the study over several files",
                meta.variants.len().max(1),
                points.len(),
                crate::run::MAX_CONFIGS
            )));
        }
        crate::run::plan_size(configs, base_spec.repetitions)
            .map_err(|e| invalid(format!("repetitions: {e}")))?;

        let variant_sets: Vec<(String, Vec<(String, toml::Value)>)> = if meta.variants.is_empty() {
            vec![(String::new(), Vec::new())]
        } else {
            meta.variants
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let sets = v
                        .set
                        .iter()
                        .map(|(k, val)| (k.clone(), val.clone()))
                        .collect();
                    (format!("variants[{i}] (`{}`)", v.name), sets)
                })
                .collect()
        };
        if variants.is_empty() {
            variants.push("base".into());
        }

        let mut configs = Vec::new();
        for (vctx, sets) in &variant_sets {
            for point in &points {
                let mut tree = root.clone();
                let ctx = match (vctx.is_empty(), point.label.is_empty()) {
                    (_, true) => vctx.clone(),
                    (true, false) => format!("sweep point `{}`", point.label),
                    (false, false) => format!("{vctx}, sweep point `{}`", point.label),
                };
                for (k, v) in sets {
                    check_overridable(k).map_err(|e| invalid(format!("{vctx}.set.{k}: {e}")))?;
                    overrides::apply(&mut tree, k, v.clone())
                        .map_err(|e| invalid(format!("{vctx}.set.{k}: {e}")))?;
                }
                for (si, (k, v)) in point.values.iter().enumerate() {
                    let sctx = if meta.sweep.0.len() == 1 {
                        "sweep".to_string()
                    } else {
                        format!("sweep[{si}]")
                    };
                    check_overridable(k)
                        .map_err(|e| invalid(format!("{sctx}.parameter `{k}`: {e}")))?;
                    overrides::apply(&mut tree, k, v.clone())
                        .map_err(|e| invalid(format!("{sctx}.parameter `{k}`: {e}")))?;
                }
                let wrap = |e: String| {
                    invalid(if ctx.is_empty() {
                        e
                    } else {
                        format!("in {ctx}: {e}")
                    })
                };
                let spec: FileSpec = typed(tree).map_err(wrap)?;
                let compiled = compile(&spec, &mut traces).map_err(wrap)?;
                configs.push(compiled);
            }
        }
        Ok(Scenario {
            name: base_spec.name,
            description: base_spec.description,
            seed: base_spec.seed,
            repetitions: base_spec.repetitions,
            variants,
            points,
            configs,
            plots,
        })
    }
}

/// Top-level settings shared by all runs cannot be overridden per variant or sweep point.
fn check_overridable(path: &str) -> Result<(), String> {
    match path.split('.').next() {
        Some("name" | "description" | "seed" | "repetitions" | "variants" | "sweep" | "plots") => {
            Err("cannot be overridden (it is shared by all variants and sweep points)".into())
        }
        _ => Ok(()),
    }
}

/// Deserializes with the path of the offending field in the message.
fn typed<T: serde::de::DeserializeOwned>(t: toml::Table) -> Result<T, String> {
    serde_path_to_error::deserialize(toml::Value::Table(t)).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        // The TOML deserializer appends its own (less precise) key path.
        let inner = inner.split("\nin `").next().unwrap_or("").trim_end();
        if path == "." {
            inner.to_string()
        } else {
            format!("{path}: {inner}")
        }
    })
}

fn sweep_points(meta: &MetaSpec) -> Result<Vec<SweepPoint>, String> {
    let mut points = vec![SweepPoint {
        label: String::new(),
        values: Vec::new(),
    }];
    let n = meta.sweep.0.len();
    for (si, s) in meta.sweep.0.iter().enumerate() {
        let ctx = if n == 1 {
            "sweep".to_string()
        } else {
            format!("sweep[{si}]")
        };
        if s.values.is_empty() {
            return Err(format!("{ctx}.values: at least one value is needed"));
        }
        if let Some(l) = &s.labels {
            if l.len() != s.values.len() {
                return Err(format!(
                    "{ctx}.labels: {} labels for {} values",
                    l.len(),
                    s.values.len()
                ));
            }
        }
        // Checked before the product is built: several sweeps multiply.
        let n_points = points.len().saturating_mul(s.values.len());
        if n_points > crate::run::MAX_CONFIGS {
            return Err(format!(
                "{ctx}: the sweeps up to this one make {n_points} points, more than the {} \
                 configurations one scenario file may have; split the study over several files",
                crate::run::MAX_CONFIGS
            ));
        }
        let short = s.parameter.rsplit('.').next().unwrap_or(&s.parameter);
        let mut next = Vec::with_capacity(n_points);
        for p in &points {
            for (vi, v) in s.values.iter().enumerate() {
                let part = match &s.labels {
                    Some(l) => l[vi].clone(),
                    None => format!("{short}={}", inline(v)),
                };
                let mut q = p.clone();
                q.label = if q.label.is_empty() {
                    part
                } else {
                    format!("{} {part}", q.label)
                };
                q.values.push((s.parameter.clone(), v.clone()));
                next.push(q);
            }
        }
        points = next;
    }
    // Runs are grouped into summary rows by label: two points with one label would be
    // averaged together as if they were repetitions of one point.
    let mut first_with = std::collections::HashMap::with_capacity(points.len());
    for (j, q) in points.iter().enumerate() {
        if let Some(&i) = first_with.get(q.label.as_str()) {
            return Err(format!(
                "sweep: points {i} and {j} are both labelled `{}`; a repeated value or label \
                 would merge their runs in the report: give each point its own value and label",
                q.label
            ));
        }
        first_with.insert(q.label.as_str(), j);
    }
    Ok(points)
}

/// A value as it would be written inline in TOML.
fn inline(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Queue of a link when the file gives none: one bandwidth-delay product of the link at a
/// round trip of twice its delay, in 1500-byte packets, at least 20.
fn default_queue(rate_bps: u64, delay: Duration) -> QueueLimit {
    let bdp_bytes = rate_bps as f64 / 8.0 * 2.0 * delay.as_secs_f64();
    QueueLimit::Packets(((bdp_bytes / 1500.0).ceil() as u64).max(20))
}

/// Trace files named by a scenario, each read once.
struct Traces {
    dir: PathBuf,
    loaded: HashMap<String, DeliveryTrace>,
}

impl Traces {
    fn get(&mut self, name: &str) -> Result<DeliveryTrace, String> {
        if let Some(t) = self.loaded.get(name) {
            return Ok(t.clone());
        }
        let t = DeliveryTrace::load(&self.dir.join(name)).map_err(|e| e.to_string())?;
        self.loaded.insert(name.to_string(), t.clone());
        Ok(t)
    }
}

/// Rate and trace of a link direction: exactly one of them is given.
fn service(
    rate: Option<u64>,
    trace: Option<&str>,
    traces: &mut Traces,
) -> Result<(u64, Option<DeliveryTrace>), String> {
    match (rate, trace) {
        (Some(_), Some(_)) => Err("give `rate` or `trace`, not both".into()),
        (None, None) => Err("`rate` (or `trace`) is required".into()),
        (Some(r), None) => Ok((r, None)),
        (None, Some(name)) => {
            let t = traces.get(name).map_err(|e| format!("trace: {e}"))?;
            Ok((t.mean_rate_bps(), Some(t)))
        }
    }
}

fn link_params(l: &LinkSpec, traces: &mut Traces) -> Result<(LinkParams, LinkParams), String> {
    let (rate_bps, trace) = service(l.rate.map(|r| r.0), l.trace.as_deref(), traces)?;
    let queue = l
        .queue
        .map(|q| q.0)
        .unwrap_or_else(|| default_queue(rate_bps, l.delay.0));
    let fwd = LinkParams {
        rate_bps,
        delay: l.delay.0,
        queue,
        loss: l.loss.map_or(LossModel::None, |x| x.0),
        reorder_prob: l.reorder.map_or(0.0, |f| f.0),
        reorder_delay: l.reorder_delay.map_or(Duration::ZERO, |d| d.0),
        duplicate_prob: l.duplicate.map_or(0.0, |f| f.0),
        corrupt_prob: l.corrupt.map_or(0.0, |f| f.0),
        up: l.up.unwrap_or(true),
        trace,
    };
    let r = l.reverse.as_ref();
    let dflt = ReverseSpec::default();
    let r = r.unwrap_or(&dflt);
    // The reverse direction keeps the forward service unless it gives its own.
    let (rate, trace) = if r.rate.is_some() || r.trace.is_some() {
        service(r.rate.map(|x| x.0), r.trace.as_deref(), traces)
            .map_err(|e| format!("reverse: {e}"))?
    } else {
        (fwd.rate_bps, fwd.trace.clone())
    };
    let delay = r.delay.map_or(fwd.delay, |x| x.0);
    let own_service = r.rate.is_some() || r.trace.is_some();
    let rev = LinkParams {
        rate_bps: rate,
        delay,
        queue: r.queue.map_or(
            if own_service || r.delay.is_some() {
                default_queue(rate, delay)
            } else {
                fwd.queue
            },
            |q| q.0,
        ),
        loss: r.loss.map_or(LossModel::None, |x| x.0),
        reorder_prob: r.reorder.map_or(0.0, |f| f.0),
        reorder_delay: r.reorder_delay.map_or(Duration::ZERO, |d| d.0),
        duplicate_prob: r.duplicate.map_or(0.0, |f| f.0),
        corrupt_prob: r.corrupt.map_or(0.0, |f| f.0),
        up: r.up.unwrap_or(fwd.up),
        trace,
    };
    Ok((fwd, rev))
}

/// The scheme of a flow: (kind, scheme). `"n-tcp"` is not a scheme but a flow kind: one
/// independent `tcp` connection per path.
fn scheme_of(f: &FlowSpec, at: &str, npaths: usize) -> Result<(FlowKind, SchemeConfig), String> {
    let value = match &f.scheme {
        None => return Ok((FlowKind::Multipath, SchemeConfig::default())),
        Some(toml::Value::String(s)) if s == "n-tcp" => {
            let tcp = SchemeConfig::named("tcp").map_err(|e| format!("{at}.scheme: {e}"))?;
            return Ok((FlowKind::PerPath, tcp));
        }
        Some(v) => serde_json::to_value(v).map_err(|e| format!("{at}.scheme: {e}"))?,
    };
    if value.get("name").and_then(|v| v.as_str()) == Some("n-tcp") {
        return Err(format!("{at}.scheme: `n-tcp` takes no options"));
    }
    let scheme = SchemeConfig::parse(value).map_err(|e| {
        if e.starts_with("unknown scheme") {
            format!("{at}.scheme: {e}; or n-tcp (one tcp connection per path)")
        } else {
            format!("{at}.scheme: {e}")
        }
    })?;
    if let Some(max) = scheme.factory().max_paths() {
        if npaths > max {
            return Err(format!(
                "{at}.scheme: `{}` uses at most {max} path(s) but the flow lists {npaths}; \
                 use \"n-tcp\" for one TCP connection per path, or \"mptcp\"",
                scheme.name()
            ));
        }
    }
    Ok((FlowKind::Multipath, scheme))
}

fn usize_size(v: u64, at: &str) -> Result<usize, String> {
    usize::try_from(v).map_err(|_| format!("{at}: {v} bytes is too large"))
}

/// The flow a `[[flows]]` entry (or an arrival template) describes, named after it.
fn flow_config(
    f: &FlowSpec,
    at: &str,
    routes: &HashMap<&str, Vec<usize>>,
    path_names: &dyn Fn() -> String,
) -> Result<FlowConfig, String> {
    if f.paths.is_empty() {
        return Err(format!("{at}.paths: a flow needs at least one path"));
    }
    let mut paths = Vec::new();
    for (j, pn) in f.paths.iter().enumerate() {
        let r = routes.get(pn.as_str()).ok_or_else(|| {
            format!(
                "{at}.paths[{j}]: unknown path or link `{pn}` (known: {})",
                path_names()
            )
        })?;
        paths.push(r.clone());
    }
    let (kind, scheme) = scheme_of(f, at, paths.len())?;
    let d = ConnectionConfig::default();
    let mut conn = ConnectionConfig {
        scheme,
        cc: f.cc.clone().unwrap_or(d.cc),
        scheduler: f.scheduler.clone().unwrap_or(d.scheduler),
        mss: f
            .mss
            .map_or(Ok(d.mss), |x| usize_size(x.0, &format!("{at}.mss")))?,
        recv_buffer: f.buffer.map_or(Ok(d.recv_buffer), |x| {
            usize_size(x.0, &format!("{at}.buffer"))
        })?,
        send_buffer: f.send_buffer.map_or(Ok(d.send_buffer), |x| {
            usize_size(x.0, &format!("{at}.send_buffer"))
        })?,
        initial_window: f.initial_window.unwrap_or(d.initial_window),
        initial_rto: f.initial_rto.map_or(d.initial_rto, |x| x.0),
        min_rto: f.min_rto.map_or(d.min_rto, |x| x.0),
        max_rto: f.max_rto.map_or(d.max_rto, |x| x.0),
        loss_threshold: f.loss_threshold.unwrap_or(d.loss_threshold),
        ack_every: f.ack_every.unwrap_or(d.ack_every),
        max_ack_delay: f.max_ack_delay.map_or(d.max_ack_delay, |x| x.0),
        max_ack_ranges: f.max_ack_ranges.unwrap_or(d.max_ack_ranges),
        max_paths: f.max_paths.unwrap_or(d.max_paths),
        metric_block: f.metric_block.map_or(Ok(d.metric_block), |x| {
            usize_size(x.0, &format!("{at}.metric_block"))
        })?,
        profile: f.profile.unwrap_or(d.profile),
        pacing: f.pacing.unwrap_or(d.pacing),
        tail_loss_probe: f.tail_loss_probe.unwrap_or(d.tail_loss_probe),
        cwnd_validation: f.cwnd_validation.unwrap_or(d.cwnd_validation),
        probe_new_paths: f.probe_new_paths.unwrap_or(d.probe_new_paths),
        reorder_tolerance: f
            .reorder_tolerance
            .unwrap_or_else(|| f.profile.unwrap_or(d.profile).reorder_tolerance()),
        max_probe_interval: f.max_probe_interval.map(|x| x.0).or(d.max_probe_interval),
        ..d
    };
    let n = match kind {
        FlowKind::Multipath => paths.len(),
        FlowKind::PerPath => 1,
    };
    conn.validate(n).map_err(|e| {
        let field = match e.field {
            "recv_buffer" => "buffer",
            other => other,
        };
        format!("{at}.{field}: {}", e.reason)
    })?;
    let app = app_of(f, at)?;
    conn.ack_timestamps = f
        .ack_timestamps
        .unwrap_or_else(|| app.factory().ack_timestamps());
    let n = match kind {
        FlowKind::Multipath => 1,
        FlowKind::PerPath => paths.len(),
    };
    app.factory()
        .validate(&FlowShape::new(n, paths.len(), conn.max_datagram()))
        .map_err(|e| format!("{at}.app: `{}`: {e}", app.name()))?;
    let qlog = match f.trace.as_deref() {
        None | Some("none") => false,
        Some("qlog") => true,
        Some(other) => {
            return Err(format!(
                "{at}.trace: unknown trace format `{other}` (known: qlog, none)"
            ))
        }
    };
    Ok(FlowConfig {
        name: f.name.clone(),
        paths,
        conn,
        kind,
        start: f.start.map_or(Duration::ZERO, |x| x.0),
        start_jitter: f.start_jitter.map_or(Duration::ZERO, |x| x.0),
        app,
        qlog,
    })
}

/// The application of a flow: `app`, or the older `bytes`/`read_rate` keys (a `file` of
/// `bytes`, or `bulk`, with the reader's rate).
fn app_of(f: &FlowSpec, at: &str) -> Result<AppConfig, String> {
    if let Some(v) = &f.app {
        if f.bytes.is_some() || f.read_rate.is_some() {
            return Err(format!(
                "{at}: `bytes` and `read_rate` belong inside `app` when `app` is given \
                 (e.g. app = {{ name = \"file\", bytes = \"1MB\", read_rate = \"5Mbps\" }})"
            ));
        }
        let json = serde_json::to_value(v).map_err(|e| format!("{at}.app: {e}"))?;
        return AppConfig::parse(json).map_err(|e| format!("{at}.app: {e}"));
    }
    let mut opts = serde_json::Map::new();
    if let Some(r) = f.read_rate {
        opts.insert("read_rate".into(), r.0.into());
    }
    let name = match f.bytes {
        Some(b) if b.0 == 0 => {
            return Err(format!(
                "{at}.bytes: must be positive (omit it for a bulk flow)"
            ))
        }
        Some(b) => {
            opts.insert("bytes".into(), b.0.into());
            "file"
        }
        None => "bulk",
    };
    AppConfig::with_options(name, opts).map_err(|e| format!("{at}: {e}"))
}

/// Turns a typed scenario into a simulation (seed 0).
fn compile(s: &FileSpec, traces: &mut Traces) -> Result<Compiled, String> {
    let mut link_ix = HashMap::new();
    let mut links = Vec::new();
    for (i, l) in s.links.iter().enumerate() {
        if link_ix.insert(l.name.as_str(), i).is_some() {
            return Err(format!("links[{i}].name: `{}` is used twice", l.name));
        }
        let (forward, reverse) =
            link_params(l, traces).map_err(|e| format!("links[{i}] (`{}`): {e}", l.name))?;
        for (dir, p) in [("", &forward), (".reverse", &reverse)] {
            p.validate()
                .map_err(|e| format!("links[{i}] (`{}`){dir}: {e}", l.name))?;
        }
        links.push(LinkConfig {
            name: l.name.clone(),
            forward,
            reverse,
        });
    }
    if links.is_empty() {
        return Err("links: at least one link is needed".into());
    }
    let link_names = || {
        s.links
            .iter()
            .map(|l| l.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    // Paths and links share one namespace: a flow may name a link as a one-link path.
    let mut routes: HashMap<&str, Vec<usize>> = HashMap::new();
    for l in &s.links {
        routes.insert(l.name.as_str(), vec![link_ix[l.name.as_str()]]);
    }
    for (i, p) in s.paths.iter().enumerate() {
        if link_ix.contains_key(p.name.as_str()) {
            return Err(format!(
                "paths[{i}].name: `{}` is already a link name (paths and links share names)",
                p.name
            ));
        }
        let mut route = Vec::new();
        for (j, ln) in p.links.iter().enumerate() {
            let &ix = link_ix.get(ln.as_str()).ok_or_else(|| {
                format!(
                    "paths[{i}].links[{j}]: unknown link `{ln}` (known: {})",
                    link_names()
                )
            })?;
            route.push(ix);
        }
        if route.is_empty() {
            return Err(format!("paths[{i}].links: a path needs at least one link"));
        }
        if routes.insert(p.name.as_str(), route).is_some() {
            return Err(format!("paths[{i}].name: `{}` is used twice", p.name));
        }
    }
    let path_names = || {
        let mut v: Vec<&str> = s.paths.iter().map(|p| p.name.as_str()).collect();
        v.extend(s.links.iter().map(|l| l.name.as_str()));
        v.join(", ")
    };

    let max_live = s
        .max_live_flows
        .unwrap_or(tributary_sim::DEFAULT_MAX_LIVE_FLOWS);
    if max_live == 0 {
        return Err("max_live_flows: must be at least 1".into());
    }
    let mut flows = Vec::new();
    let mut groups = Vec::new();
    let mut seen = HashMap::new();
    for (i, f) in s.flows.iter().enumerate() {
        let at = format!("flows[{i}]");
        if seen.insert(f.name.as_str(), i).is_some() {
            return Err(format!("{at}.name: `{}` is used twice", f.name));
        }
        let template = flow_config(f, &at, &routes, &path_names)?;
        let count = f.count.unwrap_or(1);
        if count == 0 {
            return Err(format!("{at}.count: must be at least 1"));
        }
        // Checked before the copies are made (four billion of them exhausted memory).
        if flows.len().saturating_add(count as usize) > max_live {
            return Err(format!(
                "{at}.count: {count} copies make {} flows with those before, more than \
                 max_live_flows ({max_live})",
                flows.len().saturating_add(count as usize),
            ));
        }
        let first = flows.len();
        for c in 0..count {
            let name = if count == 1 {
                f.name.clone()
            } else {
                format!("{}#{}", f.name, c + 1)
            };
            flows.push(FlowConfig {
                name,
                ..template.clone()
            });
        }
        groups.push(FlowGroup {
            name: f.name.clone(),
            flows: first..flows.len(),
            path_names: f.paths.clone(),
        });
    }
    let mut arrivals = Vec::new();
    for (i, a) in s.arrivals.iter().enumerate() {
        let at = format!("arrivals[{i}]");
        if seen.insert(a.name.as_str(), i).is_some() {
            return Err(format!(
                "{at}.name: `{}` is already used by a flow or arrival group",
                a.name
            ));
        }
        if a.flow.contains_key("name") || a.flow.contains_key("count") {
            return Err(format!(
                "{at}.flow: takes no `name` or `count` (the group's `name` and `count` apply)"
            ));
        }
        let mut t = a.flow.clone();
        t.insert("name".into(), toml::Value::String(a.name.clone()));
        let spec: FlowSpec = typed(t).map_err(|e| format!("{at}.flow.{e}"))?;
        if spec.start.is_some() {
            return Err(format!(
                "{at}.flow.start: arrival times replace `start` (use the group's `start`)"
            ));
        }
        if spec.start_jitter.is_some() {
            return Err(format!(
                "{at}.flow.start_jitter: arrival times are random already (Poisson); \
                 `start_jitter` is for configured flows"
            ));
        }
        let template = flow_config(&spec, &format!("{at}.flow"), &routes, &path_names)?;
        if !(a.rate.is_finite() && a.rate > 0.0) {
            return Err(format!(
                "{at}.rate: {} must be a positive number of arrivals per second",
                a.rate
            ));
        }
        arrivals.push(ArrivalConfig {
            name: a.name.clone(),
            template,
            rate: a.rate,
            start: a.start.map_or(Duration::ZERO, |d| d.0),
            count: a.count,
            until: a.until.map(|d| d.0),
        });
    }
    if flows.is_empty() && arrivals.is_empty() {
        return Err("flows: at least one flow (or `[[arrivals]]` group) is needed".into());
    }

    let mut changes = Vec::new();
    for (i, e) in s.events.iter().enumerate() {
        let &link = link_ix.get(e.link.as_str()).ok_or_else(|| {
            format!(
                "events[{i}].link: unknown link `{}` (known: {})",
                e.link,
                link_names()
            )
        })?;
        let change = LinkChange {
            rate_bps: e.set.rate.map(|r| r.0),
            delay: e.set.delay.map(|d| d.0),
            loss: e.set.loss.map(|l| l.0),
            up: e.set.up,
        };
        if change == LinkChange::default() {
            return Err(format!("events[{i}].set: changes nothing"));
        }
        let direction = e.direction.unwrap_or(Direction::Forward);
        if change.rate_bps.is_some() {
            let lc = &links[link];
            let traced = match direction {
                Direction::Forward => lc.forward.trace.is_some(),
                Direction::Reverse => lc.reverse.trace.is_some(),
                Direction::Both => lc.forward.trace.is_some() || lc.reverse.trace.is_some(),
            };
            if traced {
                return Err(format!(
                    "events[{i}].set.rate: link `{}` follows a delivery trace; its rate \
                     cannot be changed",
                    e.link
                ));
            }
        }
        changes.push(TimedChange {
            at: e.at.0,
            link,
            direction,
            change,
        });
    }
    changes.sort_by_key(|c| c.at);

    let sim = SimConfig {
        links,
        flows,
        changes,
        duration: s.duration.0,
        seed: 0,
        header_overhead: s.header_overhead.map_or(28, |h| h.0),
        max_live_flows: max_live,
        sample_interval: s.sample_interval.map(|d| d.0),
        arrivals,
        qlog_dir: None,
    };
    // Trace directories are given at run time (`tributary run --qlog DIR`).
    let mut check = sim.clone();
    check.qlog_dir = Some(std::path::PathBuf::from("."));
    check.validate().map_err(|e| e.to_string())?;
    Ok(Compiled { sim, groups })
}
