//! Helpers for tests that run a whole scenario text and read its JSON report.

use tributary_lab::{run, RunOptions, Scenario};

/// The JSON report of scenario `text` (named `name` in errors), with `repetitions` if given.
pub fn report(text: &str, name: &str, repetitions: Option<u64>) -> serde_json::Value {
    let s = Scenario::parse(text, name).unwrap();
    let opts = RunOptions {
        repetitions,
        ..RunOptions::default()
    };
    let report = run::run(&s, &opts, &|| {}).unwrap();
    serde_json::from_str(&report.to_json()).unwrap()
}

/// (variant, first flow's JSON) of every run of scenario `text`.
pub fn first_flows(
    text: &str,
    name: &str,
    repetitions: Option<u64>,
) -> Vec<(String, serde_json::Value)> {
    report(text, name, repetitions)["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["variant"].as_str().unwrap().to_string(),
                r["flows"][0].clone(),
            )
        })
        .collect()
}

/// The flow of the first run of `variant` in `runs`.
pub fn of<'a>(runs: &'a [(String, serde_json::Value)], variant: &str) -> &'a serde_json::Value {
    &runs
        .iter()
        .find(|(v, _)| v == variant)
        .unwrap_or_else(|| panic!("no run of variant {variant}"))
        .1
}

/// Two loss-free paths for 20 s, seed 14: a Wi-Fi-like one (20 Mbit/s, 20 ms RTT, 35-packet
/// queue) and a cellular-like one (10 Mbit/s, 80 ms RTT, 70 packets), as
/// `scenarios/bbr/loss-multi.toml` at 0 %; one bulk flow `f` over both with a 4 MiB buffer
/// and the keys `flow` (scheme, cc, options), then `variants` (TOML tables).
pub fn two_paths(flow: &str, variants: &str) -> String {
    format!(
        r#"
name = "two-paths"
duration = "20s"
seed = 14
[[links]]
name = "wifi"
rate = "20Mbps"
delay = "10ms"
queue = 35
[[links]]
name = "cell"
rate = "10Mbps"
delay = "40ms"
queue = 70
[[flows]]
name = "f"
paths = ["wifi", "cell"]
buffer = "4MiB"
{flow}
{variants}
"#
    )
}
