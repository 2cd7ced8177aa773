//! The plot pipeline: a small scenario run in-process, written as JSON, read back and
//! rendered; bad inputs give clear errors.

use crate::test_tempdir::TempDir;
use std::path::PathBuf;
use tributary_lab::plot::{load_report, render, Metric, PlotKind, PlotSpec, Reduce};
use tributary_lab::{run, RunOptions, Scenario};

const SCENARIO: &str = r#"
name = "tiny"
duration = "4s"
seed = 3
repetitions = 2
sample_interval = "1s"

[[links]]
name = "a"
rate = "4Mbps"
delay = "10ms"
loss = "1%"

[[links]]
name = "b"
rate = "2Mbps"
delay = "30ms"

[[flows]]
name = "mp"
paths = ["a", "b"]
cc = "lia"
count = 2

[[flows]]
name = "tcp"
paths = ["a"]
scheme = "tcp"

[[variants]]
name = "LIA"

[[variants]]
name = "OLIA"
set = { "flows.mp.cc" = "olia" }

[sweep]
parameter = "links.b.rate"
values = ["1Mbps", "2Mbps"]
labels = ["1 Mbit/s", "2 Mbit/s"]

[[plots]]
name = "tiny-goodput"
kind = "line"
flows = ["mp", "tcp"]
reduce = "mean"
title = "Tiny goodput versus rate"
x_label = "rate of link b"

[[plots]]
name = "tiny-share"
kind = "bar"
metric = "path-share"
flows = ["mp"]

[[plots]]
name = "tiny-series"
kind = "series"
flows = ["mp"]

[[plots]]
name = "tiny-delay"
kind = "line"
metric = "block-delay"
flows = ["mp"]

[[plots]]
name = "tiny-jitter"
kind = "bar"
metric = "jitter"

[[plots]]
name = "tiny-delay-series"
kind = "series"
metric = "block-delay"
flows = ["tcp"]
"#;

fn tmp(name: &str) -> TempDir {
    TempDir::new(&format!("plot-test-{name}"))
}

fn results(dir: &std::path::Path) -> (Scenario, PathBuf) {
    let s = Scenario::parse(SCENARIO, "tiny.toml").unwrap();
    let report = run::run(&s, &RunOptions::default(), &|| {}).unwrap();
    let p = dir.join("tiny.json");
    std::fs::write(&p, report.to_json()).unwrap();
    (s, p)
}

#[test]
fn renders_png_and_svg_deterministically() {
    let dir = tmp("ok");
    let (s, json) = results(&dir);
    assert_eq!(s.plots.len(), 6);
    let report = load_report(&json).unwrap();
    for spec in &s.plots {
        let files = render(&report, spec, &dir.join("a")).unwrap();
        let again = render(&report, spec, &dir.join("b")).unwrap();
        for (f, g) in files.iter().zip(&again) {
            let bytes = std::fs::read(f).unwrap();
            assert!(
                bytes.len() > 1000,
                "{} is {} bytes",
                f.display(),
                bytes.len()
            );
            assert_eq!(bytes, std::fs::read(g).unwrap(), "{} differs", f.display());
        }
        assert!(std::fs::read(&files[0]).unwrap().starts_with(b"\x89PNG"));
    }
    let svg = std::fs::read_to_string(dir.join("a/tiny-goodput.svg")).unwrap();
    for text in [
        "Tiny goodput versus rate",
        "rate of link b",
        "goodput per flow (Mbit/s)",
        "LIA mp",
        "OLIA tcp",
        "1 Mbit/s",
    ] {
        assert!(svg.contains(text), "missing {text:?}");
    }
    let svg = std::fs::read_to_string(dir.join("a/tiny-share.svg")).unwrap();
    for text in [
        "share of traffic per path (%)",
        "variant",
        "OLIA",
        "1 Mbit/s a",
    ] {
        assert!(svg.contains(text), "missing {text:?}");
    }
    let svg = std::fs::read_to_string(dir.join("a/tiny-series.svg")).unwrap();
    assert!(svg.contains("time (s)"));
    assert!(svg.contains("LIA 2 Mbit/s"));
    let svg = std::fs::read_to_string(dir.join("a/tiny-delay.svg")).unwrap();
    assert!(svg.contains("block delay (ms)"));
    let svg = std::fs::read_to_string(dir.join("a/tiny-jitter.svg")).unwrap();
    assert!(svg.contains("block delay jitter (ms)"));
    let svg = std::fs::read_to_string(dir.join("a/tiny-delay-series.svg")).unwrap();
    assert!(svg.contains("block delay (ms)") && svg.contains("time (s)"));
    assert_eq!(Metric::parse("block-delay").unwrap(), Metric::BlockDelay);
    // Sweep-point groups and a variant filter: one line per group, the rest on x.
    let mut grouped = s.plots[0].clone();
    grouped.name = "tiny-grouped".into();
    grouped.points = vec!["1 Mbit/s".into(), "2 Mbit/s".into()];
    grouped.variants = vec!["OLIA".into()];
    render(&report, &grouped, &dir.join("a")).unwrap();
    let svg = std::fs::read_to_string(dir.join("a/tiny-grouped.svg")).unwrap();
    assert!(svg.contains("\nOLIA 1 Mbit/s mp\n") && !svg.contains("\nLIA "));
    assert_eq!(Metric::parse("jitter").unwrap(), Metric::Jitter);
}

/// The summary carries block delay and jitter (mean over repetitions of each run's value)
/// when the runs measured blocks, no coding overhead for uncoded schemes, and the table
/// shows the delay columns.
#[test]
fn summary_has_block_delay_and_jitter() {
    let s = Scenario::parse(SCENARIO, "tiny.toml").unwrap();
    let report = run::run(&s, &RunOptions::default(), &|| {}).unwrap();
    let row = report
        .summary
        .iter()
        .find(|r| r.flow == "tcp" && r.variant == "LIA" && r.sweep == "1 Mbit/s")
        .unwrap();
    let runs: Vec<_> = report
        .runs
        .iter()
        .filter(|r| r.variant == "LIA" && r.sweep == "1 Mbit/s")
        .collect();
    let per_run = |f: &dyn Fn(&tributary_sim::BlockDelay) -> f64| -> Vec<f64> {
        runs.iter()
            .map(|r| {
                let fl = r.flows.iter().find(|f| f.name == "tcp").unwrap();
                f(fl.block_delay.as_ref().unwrap())
            })
            .collect()
    };
    let d = row.block_delay_ms.unwrap();
    let want = per_run(&|b| b.mean_ms);
    assert_eq!(d.n, want.len());
    assert!((d.mean - want.iter().sum::<f64>() / want.len() as f64).abs() < 1e-9);
    let j = row.jitter_ms.unwrap();
    let want = per_run(&|b| b.jitter_ms);
    assert!((j.mean - want.iter().sum::<f64>() / want.len() as f64).abs() < 1e-9);
    // Overhead is measured the same way for every scheme: payload sent / delivered − 1.
    let o = row.overhead_pct.unwrap();
    assert!(o.mean >= 0.0, "{o:?}");
    let table = report.to_table();
    assert!(table.contains("block delay ms") && table.contains("jitter ms"));
    assert!(table.contains("overhead %"));
}

#[test]
fn bad_input_gives_clear_errors() {
    let dir = tmp("bad");
    let e = load_report(&dir.join("missing.json"))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("cannot read results file"), "{e}");
    let p = dir.join("bad.json");
    std::fs::write(&p, "{ not json").unwrap();
    let e = load_report(&p).unwrap_err().to_string();
    assert!(e.contains("not a tributary results file"), "{e}");
    std::fs::write(&p, r#"{"scenario": "x", "runs": 3}"#).unwrap();
    let e = load_report(&p).unwrap_err().to_string();
    assert!(e.contains("not a tributary results file"), "{e}");

    let e = Metric::parse("latency").unwrap_err().to_string();
    assert!(e.contains("unknown metric `latency`"), "{e}");
    let bad = SCENARIO.replace("metric = \"path-share\"", "metric = \"latency\"");
    let e = Scenario::parse(&bad, "tiny.toml").unwrap_err().to_string();
    assert!(
        e.contains("plots[1].metric: unknown variant `latency`"),
        "{e}"
    );

    let (_, json) = results(&dir);
    let report = load_report(&json).unwrap();
    let spec = |kind, metric, flows: &[&str]| PlotSpec {
        name: "x".into(),
        kind,
        metric,
        flows: flows.iter().map(|s| s.to_string()).collect(),
        reduce: Reduce::Sum,
        per_flow: false,
        variants: Vec::new(),
        points: Vec::new(),
        title: None,
        x_label: None,
        y_label: None,
    };
    let e = render(
        &report,
        &spec(PlotKind::Line, Metric::Goodput, &["web"]),
        &dir,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("no flow or flow entry `web`"), "{e}");
    let e = render(&report, &spec(PlotKind::Bar, Metric::Ratio, &["mp"]), &dir)
        .unwrap_err()
        .to_string();
    assert!(e.contains("needs exactly two flow selectors"), "{e}");
    let e = render(
        &report,
        &spec(PlotKind::Series, Metric::Fairness, &["mp"]),
        &dir,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("series plot shows goodput"), "{e}");
}

/// Every platform scenario parses and renders its figures; one of them end to end with a
/// 3-second duration (the smoke test of the pipeline on a real scenario file).
#[test]
fn platform_scenarios_render() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/platform");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 9, "{files:?}");
    for f in &files {
        let s = Scenario::load(f).unwrap_or_else(|e| panic!("{e}"));
        assert!(!s.plots.is_empty(), "{} has no [[plots]]", f.display());
    }
    let text = std::fs::read_to_string(root.join("loadbalance-2.toml"))
        .unwrap()
        .replace("duration = \"120s\"", "duration = \"3s\"");
    let s = Scenario::parse(&text, "loadbalance-2.toml").unwrap();
    let opts = RunOptions {
        repetitions: Some(2),
        ..RunOptions::default()
    };
    let report = run::run(&s, &opts, &|| {}).unwrap();
    let dir = tmp("platform");
    for spec in &s.plots {
        let files = render(&report, spec, &dir).unwrap();
        let svg = std::fs::read_to_string(&files[1]).unwrap();
        assert!(svg.contains("MPVeno") && svg.contains("mp link2"), "{svg}");
    }
}

/// `cdf` of `lost-per-block`: an fmtcp scenario over a lossy path, through the JSON file,
/// rendered to PNG and SVG; the histogram reaches the run records; the kind/metric pairing
/// is checked.
#[test]
fn cdf_of_lost_per_block_renders() {
    let dir = tmp("cdf");
    let text = r#"
name = "coded"
duration = "10s"
seed = 5
repetitions = 2

[[links]]
name = "a"
rate = "10Mbps"
delay = "20ms"
loss = 0.001

[[links]]
name = "b"
rate = "10Mbps"
delay = "20ms"
loss = 0.05

[[flows]]
name = "f"
paths = ["a", "b"]
scheme = "fmtcp"
cc = "lia"
buffer = "128KiB"

[sweep]
parameter = "links.b.loss"
values = [0.0, 0.10]
labels = ["clean", "lossy"]
"#;
    let s = Scenario::parse(text, "coded.toml").unwrap();
    let report = run::run(&s, &RunOptions::default(), &|| {}).unwrap();
    let p = dir.join("coded.json");
    std::fs::write(&p, report.to_json()).unwrap();
    let report = load_report(&p).unwrap();
    for r in &report.runs {
        let h: Vec<u64> =
            serde_json::from_value(r.flows[0].scheme.sender["lost_per_block"].clone()).unwrap();
        assert!(h.iter().sum::<u64>() > 0, "{h:?}");
        if r.sweep == "lossy" {
            assert!(h.iter().skip(1).sum::<u64>() > 0, "{h:?}");
        }
    }
    let spec = PlotSpec {
        name: "coded-cdf".into(),
        kind: PlotKind::Cdf,
        metric: Metric::LostPerBlock,
        flows: vec![],
        reduce: Reduce::Sum,
        per_flow: false,
        variants: vec![],
        points: vec![],
        title: Some("CDF of lost packets per block".into()),
        x_label: None,
        y_label: None,
    };
    let files = render(&report, &spec, &dir).unwrap();
    assert_eq!(files.len(), 2);
    let png = std::fs::read(dir.join("coded-cdf.png")).unwrap();
    assert!(png.starts_with(b"\x89PNG"));
    let svg = std::fs::read_to_string(dir.join("coded-cdf.svg")).unwrap();
    assert!(svg.contains("CDF of lost packets per block"));
    assert!(svg.contains("lossy") && svg.contains("lost packets per block (x)"));
    let bad = PlotSpec {
        metric: Metric::Goodput,
        ..spec
    };
    let e = render(&report, &bad, &dir).unwrap_err().to_string();
    assert!(e.contains("lost-per-block"), "{e}");
}
