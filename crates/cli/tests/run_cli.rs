//! End-to-end `tributary run`: JSON content, CSV, determinism across runs and thread counts,
//! exit codes on bad input.

use std::path::PathBuf;
use std::process::Command;

const TINY: &str = r#"
name = "tiny"
duration = "4s"
seed = 3
repetitions = 3

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
name = "f"
paths = ["a", "b"]
bytes = "200KB"
buffer = "256KiB"

[[flows]]
name = "bg"
paths = ["a"]
scheme = "tcp"
count = 2

[[variants]]
name = "mptcp"

[[variants]]
name = "n-tcp"
set = { "flows.f.scheme" = "n-tcp" }

[sweep]
parameter = "links.b.loss"
values = [0.0, "2%"]
"#;

fn tmp(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("run_cli");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn tributary(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tributary"))
        .args(args)
        .output()
        .expect("runs")
}

fn run_json(file: &str, extra: &[&str]) -> String {
    let mut args = vec!["run", file, "--format", "json"];
    args.extend_from_slice(extra);
    let out = tributary(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn num(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn tiny_scenario_reports_every_run_and_a_summary() {
    let file = tmp("tiny.toml");
    std::fs::write(&file, TINY).unwrap();
    let json_path = tmp("tiny.json");
    let csv_path = tmp("tiny.csv");
    let out = tributary(&[
        "run",
        file.to_str().unwrap(),
        "--json",
        json_path.to_str().unwrap(),
        "--csv",
        csv_path.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("goodput Mbit/s"), "{table}");
    assert!(table.contains("bg (sum of 2, Jain"), "{table}");

    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    assert_eq!(v["scenario"], "tiny");
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2 * 2 * 3);
    // The same seed for a repetition in every variant and sweep point.
    for r in runs {
        let rep = r["repetition"].as_u64().unwrap() as usize;
        assert_eq!(r["seed"], runs[rep]["seed"]);
    }
    assert_ne!(runs[0]["seed"], runs[1]["seed"]);
    assert_eq!(runs[3]["variant"], "mptcp");
    assert_eq!(runs[3]["sweep"], "loss=2%");
    assert_eq!(runs[3]["sweep_values"]["links.b.loss"], "2%");
    assert_eq!(runs[6]["variant"], "n-tcp");
    let flows = runs[0]["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 3);
    let f = &flows[0];
    assert_eq!(f["name"], "f");
    assert_eq!(f["bytes_delivered"], 200_000);
    let c = num(&f["completion_s"]);
    assert!(c > 0.1 && c < 4.0, "{c}");
    assert!(num(&f["goodput_mbps"]) > 0.1);
    assert_eq!(f["paths"].as_array().unwrap().len(), 2);
    assert_eq!(f["paths"][1]["name"], "b");
    for k in [
        "throughput_mbps",
        "loss_rate",
        "retransmitted_bytes",
        "packets_lost",
    ] {
        assert!(f["paths"][0].get(k).is_some(), "{k}");
    }
    assert!(f["buffer_max_bytes"].as_u64().unwrap() > 0);
    assert_eq!(flows[1]["name"], "bg#1");
    assert!(flows[1]["completion_s"].is_null());

    // Summary: 2 variants × 2 points × (f, bg#1, bg#2, bg aggregate).
    let summary = v["summary"].as_array().unwrap();
    assert_eq!(summary.len(), 2 * 2 * 4);
    let s0 = &summary[0];
    assert_eq!(s0["variant"], "mptcp");
    assert_eq!(s0["flow"], "f");
    let xs: Vec<f64> = runs[..3]
        .iter()
        .map(|r| num(&r["flows"][0]["goodput_mbps"]))
        .collect();
    let mean = xs.iter().sum::<f64>() / 3.0;
    let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 2.0).sqrt();
    let g = &s0["goodput_mbps"];
    assert!((num(&g["mean"]) - mean).abs() < 1e-9);
    assert!((num(&g["ci95"]) - 4.302653 * sd / 3f64.sqrt()).abs() < 1e-6);
    let agg = &summary[3];
    assert_eq!(agg["flow"], "bg");
    assert_eq!(agg["aggregate"], true);
    let j = num(&agg["fairness"]["mean"]);
    assert!((0.5..=1.0).contains(&j), "{j}");
    let sum: f64 = runs[..3]
        .iter()
        .map(|r| num(&r["flows"][1]["goodput_mbps"]) + num(&r["flows"][2]["goodput_mbps"]))
        .sum::<f64>()
        / 3.0;
    assert!((num(&agg["goodput_mbps"]["mean"]) - sum).abs() < 1e-9);

    let csv = std::fs::read_to_string(&csv_path).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 1 + 12 * 3);
    assert!(lines[0].starts_with("variant,sweep,repetition,seed,flow,group,goodput_mbps"));
    assert!(lines[0].contains("path2_throughput_mbps"));
    assert!(lines[1].starts_with("mptcp,loss=0.0,0,"), "{}", lines[1]);
}

#[test]
fn results_do_not_depend_on_threads_or_invocation() {
    let file = tmp("det.toml");
    std::fs::write(&file, TINY).unwrap();
    let file = file.to_str().unwrap();
    let one = run_json(file, &["--jobs", "1", "--repetitions", "2"]);
    let two = run_json(file, &["--jobs", "2", "--repetitions", "2"]);
    let again = run_json(file, &["--repetitions", "2"]);
    assert_eq!(one, two);
    assert_eq!(one, again);
    let other_seed = run_json(file, &["--repetitions", "2", "--seed", "4"]);
    assert_ne!(one, other_seed);
}

#[test]
fn bad_input_fails_with_a_message() {
    let out = tributary(&["run", "/nonexistent/x.toml"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot read scenario file /nonexistent/x.toml"),
        "{err}"
    );

    let file = tmp("bad.toml");
    std::fs::write(
        &file,
        TINY.replace("buffer = \"256KiB\"", "buffer = \"64 parsecs\""),
    )
    .unwrap();
    let out = tributary(&["run", file.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "flows[0].buffer: expected a size like \"64KB\" or \"64KiB\", got \"64 parsecs\""
        ),
        "{err}"
    );

    // A repetition count no machine could plan is an error with the limit, not an aborted
    // process (found by held-out testing: the plan's allocation failed and killed it).
    let file = tmp("huge-repetitions.toml");
    std::fs::write(&file, TINY).unwrap();
    let out = tributary(&["run", file.to_str().unwrap(), "--repetitions", "100000000"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("100000000 repetition(s) is more than the 16777216 runs"),
        "{err}"
    );
}

/// Output into a closed pipe (`tributary list | head`) ends the process quietly, as for other
/// Unix tools, not with a panic and a backtrace (found by review: `list --markdown | head`
/// panicked with "failed printing to stdout: Broken pipe"). The pipe's read end is closed
/// before the command starts, so its first write fails whatever the timing.
#[cfg(unix)]
#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    use std::os::unix::process::ExitStatusExt;
    for args in [&["list", "--markdown"][..], &["run", "--help"][..]] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = Command::new(env!("CARGO_BIN_EXE_tributary"))
            .args(args)
            .stdout(writer)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{args:?}: {err}");
    }
}

#[test]
fn qlog_traces_are_written_per_run_and_asked_for_explicitly() {
    let text = r#"
name = "traced"
duration = "5s"
repetitions = 2

[[links]]
name = "a"
rate = "10Mbps"
delay = "10ms"

[[flows]]
name = "f"
paths = ["a"]
scheme = "tcp"
bytes = "100KB"
trace = "qlog"
"#;
    let file = tmp("traced.toml");
    std::fs::write(&file, text).unwrap();
    let out = tributary(&["run", file.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--qlog DIR"), "{err}");
    let dir = tmp("qlog-out");
    let _ = std::fs::remove_dir_all(&dir);
    let out = tributary(&[
        "run",
        file.to_str().unwrap(),
        "--qlog",
        dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for rep in 0..2 {
        for role in ["sender", "receiver"] {
            let p = dir
                .join(format!("base-r{rep}"))
                .join(format!("f-c0-{role}.sqlog"));
            let t = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            assert!(t.starts_with("\u{1e}{\"qlog_version\""), "{}", p.display());
        }
    }
    // A second run into the same directory refuses to overwrite the traces.
    let out = tributary(&[
        "run",
        file.to_str().unwrap(),
        "--qlog",
        dir.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("qlog"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The summary of `tributary list --help` (its first line, also in `tributary --help`) names
/// every registry `tributary list` prints.
#[test]
fn list_help_names_every_registry_it_lists() {
    let list = tributary(&["list"]);
    assert!(list.status.success());
    let titles: Vec<String> = String::from_utf8_lossy(&list.stdout)
        .lines()
        .filter(|l| !l.starts_with(' ') && l.ends_with(':'))
        .map(|l| l.trim_end_matches(':').to_owned())
        .collect();
    assert_eq!(titles.len(), 4, "{titles:?}");
    let help = tributary(&["list", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    let summary = help.split("\n\n").next().unwrap_or_default().to_lowercase();
    for t in &titles {
        assert!(
            summary.contains(t.as_str()),
            "{t:?} missing from {summary:?}"
        );
    }
}

/// `--max-probe-interval`'s help states the floor that a smaller value is refused for.
#[test]
fn max_probe_interval_help_states_its_floor() {
    let help = tributary(&["send", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    let text = help
        .split("--max-probe-interval")
        .nth(1)
        .and_then(|t| t.split("\n\n").next())
        .unwrap_or_default()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(text.contains("At least 0.2 (the minimum RTO)"), "{text}");
    // Just below the floor: refused, naming it.
    let out = tributary(&[
        "send",
        "/dev/null",
        "--insecure",
        "--path",
        "127.0.0.1:0=127.0.0.1:9",
        "--max-probe-interval",
        "0.19",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("max_probe_interval") && err.contains("min_rto (200ms)"),
        "{err}"
    );
}

/// `tributary bench`: a filter that matches no case is an error that says so; otherwise every
/// chosen case is reported with one record per run, and the runs of a case simulate the same
/// thing (same packets and events: only the wall time may differ).
#[test]
fn bench_reports_every_run_of_each_chosen_case() {
    let out = tributary(&["bench", "--runs", "1", "--filter", "no-such-case"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no benchmark case matches --filter \"no-such-case\""),
        "{err}"
    );

    let json = tmp("bench.json");
    let _ = std::fs::remove_file(&json);
    let out = tributary(&[
        "bench",
        "--runs",
        "2",
        "--filter",
        "8paths",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let cases = v.as_array().unwrap();
    let names: Vec<&str> = cases.iter().map(|c| c["case"].as_str().unwrap()).collect();
    assert_eq!(names, ["mptcp-8paths-4MiB-10s", "fmtcp-8paths-4MiB-10s"]);
    for c in cases {
        let runs = c["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 2, "{c}");
        for r in runs {
            assert_eq!(r["packets"], c["packets"], "{c}");
            assert_eq!(r["events"], c["events"], "{c}");
            assert!(num(&r["wall_seconds"]) > 0.0, "{c}");
        }
        assert!(num(&c["packets"]) > 10_000.0, "{c}");
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.lines().count(),
        3,
        "header and one row per case:\n{stdout}"
    );
}
