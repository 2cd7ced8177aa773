//! Mahimahi packet-delivery traces in scenario files: syntax, errors, and what the simulator
//! makes of them.

use crate::test_tempdir::TempDir;
use tributary_lab::Scenario;

/// A fresh directory for one test's files, removed when the test passes.
fn dir(name: &str) -> TempDir {
    TempDir::new(&format!("trace-test-{name}"))
}

/// A trace with `per_ms` opportunities every millisecond for `ms` milliseconds.
fn uniform(per_ms: u64, ms: u64) -> String {
    let mut s = String::new();
    for t in 1..=ms {
        for _ in 0..per_ms {
            s.push_str(&format!("{t}\n"));
        }
    }
    s
}

fn scenario(link: &str, events: &str) -> String {
    format!(
        r#"
name = "trace"
duration = "20s"
seed = 3

[[links]]
name = "cell"
delay = "20ms"
queue = 100
{link}

[[flows]]
name = "f"
paths = ["cell"]
scheme = "tcp"
buffer = "4MiB"
{events}
"#
    )
}

fn goodput(s: &Scenario) -> f64 {
    let mut cfg = s.config(0, 0).sim.clone();
    cfg.seed = 1;
    tributary_sim::run(cfg).unwrap().flows[0].goodput_mbps
}

#[test]
fn trace_paths_are_relative_to_the_scenario_file() {
    let d = dir("relative");
    std::fs::create_dir_all(d.join("traces")).unwrap();
    std::fs::write(d.join("traces/two.up"), uniform(2, 100)).unwrap();
    let file = d.join("s.toml");
    std::fs::write(&file, scenario(r#"trace = "traces/two.up""#, "")).unwrap();
    let s = Scenario::load(&file).unwrap();
    let l = &s.config(0, 0).sim.links[0];
    // Two 1504-byte opportunities per ms: 24.064 Mbit/s, in both directions by default.
    assert_eq!(l.forward.rate_bps, 24_064_000);
    assert_eq!(l.forward.trace.as_ref().unwrap().len(), 200);
    assert_eq!(l.reverse.trace, l.forward.trace);
    // The reverse direction may have its own rate instead.
    std::fs::write(
        &file,
        scenario(
            r#"trace = "traces/two.up"
reverse = { rate = "5Mbps" }"#,
            "",
        ),
    )
    .unwrap();
    let s = Scenario::load(&file).unwrap();
    let l = &s.config(0, 0).sim.links[0];
    assert!(l.reverse.trace.is_none());
    assert_eq!(l.reverse.rate_bps, 5_000_000);
}

#[test]
fn trace_errors_are_clear() {
    let d = dir("errors");
    let file = d.join("s.toml");
    let load = |link: &str, events: &str| {
        std::fs::write(&file, scenario(link, events)).unwrap();
        Scenario::load(&file).map(|_| ()).unwrap_err().to_string()
    };
    let e = load(r#"trace = "missing.up""#, "");
    assert!(
        e.contains("links[0] (`cell`): trace: cannot read trace file") && e.contains("missing.up"),
        "{e}"
    );
    std::fs::write(d.join("bad.up"), "1\n2\nfast\n").unwrap();
    let e = load(r#"trace = "bad.up""#, "");
    assert!(e.contains("bad.up:3") && e.contains("`fast`"), "{e}");
    std::fs::write(d.join("ok.up"), "1\n").unwrap();
    let e = load(
        r#"trace = "ok.up"
rate = "10Mbps""#,
        "",
    );
    assert!(e.contains("not both"), "{e}");
    let e = load("", "");
    assert!(e.contains("`rate` (or `trace`) is required"), "{e}");
    let e = load(
        r#"trace = "ok.up""#,
        r#"[[events]]
at = "1s"
link = "cell"
set = { rate = "1Mbps" }"#,
    );
    assert!(
        e.contains("events[0].set.rate") && e.contains("delivery trace"),
        "{e}"
    );
}

/// A trace of one opportunity per millisecond serves 1504 bytes/ms like a 12.032 Mbit/s link
/// (Mahimahi's model), at a 1 ms granularity: TCP's goodput over it must match its goodput
/// over the fixed-rate link of the same rate within 3 % (the granularity adds at most 1 ms of
/// queueing to a 40 ms round trip and changes no window dynamics beyond that).
#[test]
fn simulator_uniform_trace_matches_fixed_rate() {
    let d = dir("uniform");
    std::fs::write(d.join("one.up"), uniform(1, 1000)).unwrap();
    let file = d.join("s.toml");
    std::fs::write(&file, scenario(r#"trace = "one.up""#, "")).unwrap();
    let traced = goodput(&Scenario::load(&file).unwrap());
    std::fs::write(&file, scenario(r#"rate = "12.032Mbps""#, "")).unwrap();
    let fixed = goodput(&Scenario::load(&file).unwrap());
    assert!(
        (traced / fixed - 1.0).abs() < 0.03,
        "trace {traced:.3} Mbit/s vs fixed {fixed:.3} Mbit/s"
    );
    // Goodput cannot exceed the trace's capacity.
    assert!(traced < 12.032, "{traced}");
}

/// A time-varying trace: 1 opportunity/ms for 5 s, then 4/ms for 5 s, repeating. TCP's goodput
/// follows the capacity: over 20 s it must lie between the mean capacity's 80 % and 100 %
/// (TCP NewReno with a BDP-sized queue keeps a single-path link at least ~80 % busy, and the
/// trace-driven link can never exceed its mean capacity).
#[test]
fn simulator_follows_a_varying_trace() {
    let d = dir("varying");
    let mut t = uniform(1, 5000);
    for ms in 5001..=10_000u64 {
        for _ in 0..4 {
            t.push_str(&format!("{ms}\n"));
        }
    }
    std::fs::write(d.join("step.up"), t).unwrap();
    let file = d.join("s.toml");
    std::fs::write(&file, scenario(r#"trace = "step.up""#, "")).unwrap();
    let s = Scenario::load(&file).unwrap();
    let mean = s.config(0, 0).sim.links[0].forward.rate_bps as f64 / 1e6;
    assert!((mean - 12.032 * 2.5).abs() < 0.01, "{mean}");
    // Payload per wire byte: mss 1400 of a 1400 + 28 + tributary-header datagram is below 1.
    let g = goodput(&s);
    assert!(g < mean, "{g} vs {mean}");
    assert!(g > 0.8 * mean, "{g} vs {mean}");
}
