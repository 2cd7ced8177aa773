//! The stress suite's motivating case (issue 14, item 1; docs/experiments/stress.md): the
//! scenario file itself, reduced to the variants a requirement is stated for.

use tributary_lab::{run, RunOptions, Scenario};

/// The suite's fmtcp variant, as `scenarios/stress/three-paths.toml` writes it.
const SUITE_FMTCP: &str = "[[variants]]\nname = \"fmtcp\"\nset = { \"flows.bulk.scheme\" = { name = \"fmtcp\", repair = true, full_symbols = true, adaptive_delta = true } }";

/// `scenarios/stress/three-paths.toml` up to its first variant (links, the flow with its
/// 64 KiB buffer), with only the `mptcp` variant and the suite's fmtcp variant, no sweep.
fn three_paths_mptcp_and_fmtcp() -> Scenario {
    let file = include_str!("../../../scenarios/stress/three-paths.toml");
    let head = file.split("[[variants]]").next().unwrap();
    assert!(
        head.contains("buffer = \"64KiB\"") && head.contains("cc = \"lia\""),
        "the three-path case's flow changed"
    );
    assert!(
        file.contains(SUITE_FMTCP),
        "the suite's fmtcp variant changed"
    );
    let text = format!("{head}[[variants]]\nname = \"mptcp\"\n\n{SUITE_FMTCP}\n");
    Scenario::parse(&text, "three-paths.toml, 64 KiB").unwrap()
}

/// Goodput (Mbit/s) per variant name, one entry per repetition in repetition order.
fn goodputs(s: &Scenario, repetitions: u64) -> std::collections::BTreeMap<String, Vec<f64>> {
    let opts = RunOptions {
        repetitions: Some(repetitions),
        ..RunOptions::default()
    };
    let report = run::run(s, &opts, &|| {}).unwrap();
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    let mut out = std::collections::BTreeMap::<String, Vec<(u64, f64)>>::new();
    for r in json["runs"].as_array().unwrap() {
        out.entry(r["variant"].as_str().unwrap().to_string())
            .or_default()
            .push((
                r["repetition"].as_u64().unwrap(),
                r["flows"][0]["goodput_mbps"].as_f64().unwrap(),
            ));
    }
    out.into_iter()
        .map(|(k, mut v)| {
            v.sort_by_key(|&(rep, _)| rep);
            (k, v.into_iter().map(|(_, g)| g).collect())
        })
        .collect()
}

/// Issue 14's held-out case: three heterogeneous paths (the fastest with bursty
/// Gilbert–Elliott loss), 64 KiB receive buffer, LIA. The issue measured `fmtcp` at two
/// thirds of `mptcp`; item 1 requires it to at least match `mptcp` with the same controller.
/// Requirement asserted on 8 paired seeds: the mean per-seed ratio fmtcp / `mptcp` is at
/// least 1. Measured with feedback as runs of blocks (the default since 2026-11-28): 1.076 ±
/// 0.029 over 30 seeds (27 of 30 at or above 1; `scripts/stress-ablation.py`), 1.068 on these
/// 8 (1.079 and 1.071 with the per-block feedback before). With the paper's sender (no
/// `repair`, default symbols, fixed δ̂; per-block feedback) the same seeds gave 0.638, the
/// issue's two thirds, and the bound fails. TCP on the fast path alone (5.78 Mbit/s on these
/// seeds) stays above both multipath schemes over LIA with this buffer; that is not the
/// scheme's doing, so it is not asserted (docs/experiments/stress.md, "Not done / limits").
#[test]
fn fmtcp_at_least_matches_mptcp_on_the_issues_three_path_case() {
    let s = three_paths_mptcp_and_fmtcp();
    let g = goodputs(&s, 8);
    let (f, m) = (&g["fmtcp"], &g["mptcp"]);
    let ratio = f.iter().zip(m).map(|(a, b)| a / b).sum::<f64>() / f.len() as f64;
    eprintln!("fmtcp / mptcp per seed, mean {ratio:.3}: {g:?}");
    assert!(ratio >= 1.0, "fmtcp / mptcp {ratio:.3}: {g:?}");
}
