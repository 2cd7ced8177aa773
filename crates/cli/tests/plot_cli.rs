//! End-to-end `tributary plot` and `tributary run --plots`: files written, same input → same
//! files, exit status 1 with a message on bad input.

use std::path::PathBuf;
use std::process::Command;

const TINY: &str = r#"
name = "tiny"
duration = "3s"
seed = 3
repetitions = 2
sample_interval = "500ms"

[[links]]
name = "a"
rate = "4Mbps"
delay = "10ms"
loss = 0.01

[[links]]
name = "b"
rate = "2Mbps"
delay = "30ms"

[[flows]]
name = "mp"
paths = ["a", "b"]
count = 2

[[variants]]
name = "LIA"
set = { "flows.mp.cc" = "lia" }

[[variants]]
name = "MPVeno"
set = { "flows.mp.cc" = "mpveno" }

[sweep]
parameter = "links.b.loss"
values = [0.0, "2%"]

[[plots]]
name = "tiny-shares"
kind = "bar"
metric = "path-share"
title = "Share per path"
"#;

fn tmp(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("plot_cli");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn tributary(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tributary"))
        .args(args)
        .output()
        .expect("runs")
}

fn ok(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn run_plots_and_plot_agree() {
    let file = tmp("tiny.toml");
    std::fs::write(&file, TINY).unwrap();
    let json = tmp("tiny.json");
    let dir_run = tmp("from-run");
    let dir_plot = tmp("from-plot");
    let out = tributary(&[
        "run",
        file.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--plots",
        dir_run.to_str().unwrap(),
    ]);
    ok(&out);
    let out = tributary(&[
        "plot",
        json.to_str().unwrap(),
        "--scenario",
        file.to_str().unwrap(),
        "--out",
        dir_plot.to_str().unwrap(),
    ]);
    ok(&out);
    for f in ["tiny-shares.png", "tiny-shares.svg"] {
        let a = std::fs::read(dir_run.join(f)).unwrap();
        assert!(a.len() > 1000, "{f}");
        assert_eq!(a, std::fs::read(dir_plot.join(f)).unwrap(), "{f}");
    }
    let svg = std::fs::read_to_string(dir_run.join("tiny-shares.svg")).unwrap();
    assert!(svg.contains("Share per path") && svg.contains("loss=2% b"));

    // One figure from the options: default kind is `line` with a sweep.
    let out = tributary(&[
        "plot",
        json.to_str().unwrap(),
        "--out",
        dir_plot.to_str().unwrap(),
        "--metric",
        "fairness",
        "--flow",
        "mp",
    ]);
    ok(&out);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("tiny-fairness.png") && stdout.contains("tiny-fairness.svg"));
    let svg = std::fs::read_to_string(dir_plot.join("tiny-fairness.svg")).unwrap();
    assert!(svg.contains("Jain&apos;s fairness index") && svg.contains("links.b.loss"));
    let out = tributary(&[
        "plot",
        json.to_str().unwrap(),
        "--out",
        dir_plot.to_str().unwrap(),
        "--kind",
        "series",
        "--per-flow",
    ]);
    ok(&out);
    let svg = std::fs::read_to_string(dir_plot.join("tiny-goodput.svg")).unwrap();
    assert!(svg.contains("time (s)") && svg.contains("MPVeno loss=2% mp#2"));
}

#[test]
fn bad_input_fails_with_a_message() {
    let dir = tmp("bad-out");
    let dir = dir.to_str().unwrap();
    let err = |args: &[&str]| {
        let out = tributary(args);
        assert_eq!(out.status.code(), Some(1));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let e = err(&["plot", "/nonexistent/r.json", "--out", dir]);
    assert!(
        e.starts_with("error: cannot read results file /nonexistent/r.json: "),
        "{e}"
    );
    let bad = tmp("bad.json");
    std::fs::write(&bad, "[1, 2").unwrap();
    let e = err(&["plot", bad.to_str().unwrap(), "--out", dir]);
    assert!(e.contains("not a tributary results file"), "{e}");

    let file = tmp("tiny2.toml");
    std::fs::write(&file, TINY).unwrap();
    let json = tmp("tiny2.json");
    ok(&tributary(&[
        "run",
        file.to_str().unwrap(),
        "--repetitions",
        "1",
        "--json",
        json.to_str().unwrap(),
    ]));
    let json = json.to_str().unwrap();
    let e = err(&["plot", json, "--out", dir, "--metric", "latency"]);
    assert!(
        e.contains("unknown metric `latency` (known: goodput,"),
        "{e}"
    );
    let e = err(&["plot", json, "--out", dir, "--flow", "web"]);
    assert!(e.contains("no flow or flow entry `web`"), "{e}");
}
