//! End-to-end sweeps at scale: `run --stream` killed mid-sweep and `--resume`d, `--shard` +
//! `merge`, both byte-identical (JSON, CSV, table) to one uninterrupted run; merge errors;
//! results files never overwritten; the large-sweep warning.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Two variants × two sweep points × `repetitions` runs.
fn scenario(repetitions: u64, duration: &str) -> String {
    format!(
        r#"
name = "cli-sweep"
duration = "{duration}"
seed = 11
repetitions = {repetitions}

[[links]]
name = "a"
rate = "8Mbps"
delay = "10ms"
loss = 0.01

[[links]]
name = "b"
rate = "4Mbps"
delay = "40ms"

[[flows]]
name = "f"
paths = ["a", "b"]
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
set = {{ "flows.f.scheme" = "n-tcp" }}

[sweep]
parameter = "links.b.loss"
values = [0.0, 0.02]
"#
    )
}

fn dir(test: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("sweep_cli")
        .join(test);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn tributary(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tributary"))
        .args(args)
        .output()
        .expect("runs")
}

fn ok(args: &[&str]) -> Output {
    let out = tributary(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs a command that must fail with exit status 1 (2 for errors clap finds in the
/// arguments); returns its stderr.
fn fails_with(code: i32, args: &[&str]) -> String {
    let out = tributary(args);
    assert_eq!(out.status.code(), Some(code), "{args:?} should fail");
    String::from_utf8(out.stderr).unwrap()
}

fn fails(args: &[&str]) -> String {
    fails_with(1, args)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn line_count(p: &Path) -> usize {
    std::fs::read(p)
        .unwrap()
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

/// The outputs of one uninterrupted run: (stdout JSON, --csv file, stdout table).
fn reference(d: &Path, file: &str) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let csv = d.join("reference.csv");
    let json = ok(&["run", file, "--format", "json", "--csv", s(&csv)]).stdout;
    let table = ok(&["run", file]).stdout;
    (json, std::fs::read(csv).unwrap(), table)
}

#[test]
fn a_killed_sweep_resumes_to_the_bytes_of_one_run() {
    let d = dir("killed");
    let file = d.join("sweep.toml");
    // 40 runs of 10 simulated seconds: long enough on one thread to be killed part-way.
    std::fs::write(&file, scenario(10, "10s")).unwrap();
    let f = s(&file);
    let results = d.join("results.jsonl");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tributary"))
        .args(["run", f, "--jobs", "1", "--stream", s(&results)])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !(results.exists() && line_count(&results) >= 4) {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "no runs streamed in 2 min"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let kept = line_count(&results) - 1;
    assert!(
        kept < 40,
        "the sweep finished before it could be killed ({kept} runs): make it longer"
    );
    // The kill is SIGKILL between two runs' writes; also cut the file inside a line, as a
    // kill during a write or a full disk would.
    let mut bytes = std::fs::read(&results).unwrap();
    bytes.extend_from_slice(br#"{"run":39,"record":{"variant":"n-t"#);
    std::fs::write(&results, &bytes).unwrap();

    let csv = d.join("resumed.csv");
    let out = ok(&[
        "run",
        f,
        "--resume",
        s(&results),
        "--format",
        "json",
        "--csv",
        s(&csv),
    ]);
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("ignoring an unterminated last line"), "{err}");
    assert!(
        err.contains(&format!(
            "{kept} finished run(s) found, {} to run",
            40 - kept
        )),
        "{err}"
    );
    assert_eq!(line_count(&results), 41);
    let (json, ref_csv, table) = reference(&d, f);
    assert!(out.stdout == json, "resumed JSON differs from one run");
    assert!(
        std::fs::read(&csv).unwrap() == ref_csv,
        "resumed CSV differs"
    );
    // Resuming the complete file runs nothing and prints the same table.
    assert!(ok(&["run", f, "--resume", s(&results)]).stdout == table);
}

#[test]
fn shards_merge_to_the_bytes_of_one_run() {
    let d = dir("shards");
    let file = d.join("sweep.toml");
    std::fs::write(&file, scenario(3, "3s")).unwrap();
    let f = s(&file);
    let (json, csv, table) = reference(&d, f);
    let slices: Vec<PathBuf> = (0..4).map(|i| d.join(format!("s{i}.jsonl"))).collect();
    for (i, p) in slices.iter().enumerate() {
        let shard = format!("{i}/4");
        let jobs = (1 + i % 2).to_string();
        let out = ok(&[
            "run",
            f,
            "--shard",
            &shard,
            "--jobs",
            &jobs,
            "--stream",
            s(p),
        ]);
        assert!(out.stdout.is_empty());
        // 12 runs: shards 0..3 of 4 hold 3 each.
        assert_eq!(line_count(p), 1 + 3);
    }
    let mut args = vec!["merge"];
    args.extend(slices.iter().rev().map(|p| s(p)));
    let (mj, mc) = (d.join("merged.json"), d.join("merged.csv"));
    let mut with_files = args.clone();
    with_files.extend(["--json", s(&mj), "--csv", s(&mc)]);
    assert!(ok(&with_files).stdout == table, "merged table differs");
    assert!(std::fs::read(&mj).unwrap() == json, "merged JSON differs");
    assert!(std::fs::read(&mc).unwrap() == csv, "merged CSV differs");
    let mut as_json = args.clone();
    as_json.extend(["--format", "json"]);
    assert!(ok(&as_json).stdout == json);

    // Merge errors name the problem.
    let err = fails(&["merge", s(&slices[0]), s(&slices[1]), s(&slices[3])]);
    assert!(
        err.contains("incomplete: 3 of 12 runs are missing: no file given for shard 2/4 (3 runs)"),
        "{err}"
    );
    let err = fails(&["merge", s(&slices[0]), s(&slices[0])]);
    assert!(err.contains("overlapping files"), "{err}");
    let other = d.join("other.jsonl");
    ok(&[
        "run",
        f,
        "--shard",
        "3/4",
        "--seed",
        "12",
        "--stream",
        s(&other),
    ]);
    let err = fails(&[
        "merge",
        s(&slices[0]),
        s(&slices[1]),
        s(&slices[2]),
        s(&other),
    ]);
    assert!(
        err.contains("different sweeps")
            && err.contains(&format!("seed 12 ({}: 11)", s(&slices[0]))),
        "{err}"
    );
    let err = fails(&["merge", s(&file)]);
    assert!(err.contains("not a tributary results file"), "{err}");

    // A shard's output is its results file only.
    let err = fails(&["run", f, "--shard", "0/4"]);
    assert!(err.contains("--shard needs a results file"), "{err}");
    let x = d.join("x.jsonl");
    let err = fails(&[
        "run",
        f,
        "--shard",
        "0/4",
        "--stream",
        s(&x),
        "--json",
        "x.json",
    ]);
    assert!(err.contains("has no report"), "{err}");
    assert!(!x.exists());
    let err = fails_with(2, &["run", f, "--shard", "4/4", "--stream", s(&x)]);
    assert!(err.contains("out of range"), "{err}");
    let out = ok(&["run", f, "--check", "--shard", "1/5"]);
    assert!(String::from_utf8(out.stdout)
        .unwrap()
        .contains("= 12 runs; shard 1/5: 3 runs"),);
}

#[test]
fn results_files_are_not_overwritten_without_force() {
    let d = dir("force");
    let file = d.join("sweep.toml");
    std::fs::write(&file, scenario(1, "1s")).unwrap();
    let f = s(&file);
    let p = d.join("results.jsonl");
    std::fs::write(&p, "my notes\n").unwrap();
    let err = fails(&["run", f, "--stream", s(&p)]);
    assert!(
        err.contains("already exists: continue it with --resume, or replace it with --force"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "my notes\n");
    ok(&["run", f, "--stream", s(&p), "--force"]);
    assert_eq!(line_count(&p), 1 + 4);
    // Another seed is another sweep: resuming refuses and leaves the file alone.
    let before = std::fs::read(&p).unwrap();
    let err = fails(&["run", f, "--seed", "1", "--resume", s(&p)]);
    assert!(err.contains("seed 11 (now: 1)"), "{err}");
    assert_eq!(std::fs::read(&p).unwrap(), before);
    let err = fails_with(2, &["run", f, "--force"]);
    assert!(err.contains("--stream"), "{err}");
}

/// `--json`/`--csv` never destroy an input of the command (the scenario, the results file,
/// a slice to merge) or each other, and a path in a missing directory is refused before
/// anything runs, not after the sweep (whose report would be lost).
#[test]
fn report_outputs_never_overwrite_inputs_and_are_checked_before_running() {
    let d = dir("outputs");
    let file = d.join("sweep.toml");
    let text = scenario(1, "1s");
    std::fs::write(&file, &text).unwrap();
    let f = s(&file);
    // The scenario itself, also spelled through `..`.
    let err = fails(&["run", f, "--json", f]);
    assert!(err.contains("is the scenario file"), "{err}");
    let roundabout = d.join("sub").join("..").join("sweep.toml");
    std::fs::create_dir_all(d.join("sub")).unwrap();
    let err = fails(&["run", f, "--csv", s(&roundabout)]);
    assert!(err.contains("is the scenario file"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    // The scenario as the results file, even with --force.
    let err = fails(&["run", f, "--stream", f, "--force"]);
    assert!(err.contains("is the scenario file"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    // The results file being written.
    let results = d.join("results.jsonl");
    let err = fails(&["run", f, "--stream", s(&results), "--json", s(&results)]);
    assert!(err.contains("is the results file"), "{err}");
    assert!(!results.exists());
    // Both outputs on one file.
    let both = d.join("both.out");
    let err = fails(&["run", f, "--json", s(&both), "--csv", s(&both)]);
    assert!(err.contains("--json and --csv name the same file"), "{err}");
    // A missing directory: refused up front, nothing printed, nothing run.
    let missing = d.join("no-such-dir").join("report.json");
    let out = tributary(&["run", f, "--json", s(&missing)]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("does not exist"), "{err}");
    assert!(
        out.stdout.is_empty(),
        "the sweep ran before the output was checked"
    );
    // A slice given to merge.
    ok(&["run", f, "--stream", s(&results)]);
    let kept = std::fs::read(&results).unwrap();
    let err = fails(&["merge", s(&results), "--json", s(&results)]);
    assert!(err.contains("is a results file to merge"), "{err}");
    assert_eq!(std::fs::read(&results).unwrap(), kept);
    // An ordinary output file is still written (and replaced).
    let report = d.join("report.json");
    std::fs::write(&report, "old").unwrap();
    ok(&["merge", s(&results), "--json", s(&report)]);
    assert!(std::fs::read_to_string(&report).unwrap().starts_with('{'));
}

#[test]
fn a_large_sweep_warns_with_an_estimate_before_it_runs() {
    let d = dir("large");
    let file = d.join("sweep.toml");
    // 4 × 26 = 104 runs of 0.1 s: over the threshold of 100.
    std::fs::write(&file, scenario(26, "100ms")).unwrap();
    let out = ok(&["run", s(&file), "--jobs", "2"]);
    let err = String::from_utf8(out.stderr).unwrap();
    let lines: Vec<&str> = err.lines().collect();
    assert!(
        lines[0].starts_with("warning: 104 runs to do, 10 simulated seconds: more than 100 runs; timing 2 run(s) first"),
        "{err}"
    );
    assert!(lines[1].contains("add --stream PATH.jsonl"), "{err}");
    assert!(
        lines[2].starts_with("note: estimated wall time: about"),
        "{err}"
    );
    assert!(lines[2].contains("for the other 102 run(s)"), "{err}");
    assert!(lines[3].starts_with("note: 104 run(s) took"), "{err}");
    // 100 runs: quiet.
    std::fs::write(&file, scenario(25, "100ms")).unwrap();
    let out = ok(&["run", s(&file), "--jobs", "2"]);
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
