//! `probe_new_paths` (docs/scenarios.md): a path without an RTT sample carries no data
//! while another can, and joins once one probe has measured it, as a Linux MPTCP subflow
//! carries data only after its MP_JOIN handshake (RFC 8684 §3.2).

use crate::runs::{first_flows, of, two_paths};

fn flows(text: &str) -> Vec<(String, serde_json::Value)> {
    first_flows(text, "new paths", None)
}

/// RFC 6356 goal 1 for a short transfer: 20 KB over a fast path and a 1.4 s one finishes
/// within 1.5× the time of TCP on the fast path alone (measured: equal, 0.03 s; without the
/// option 0.71 s, the data's first packets cross the slow path).
#[test]
fn a_short_transfer_does_not_wait_for_an_unmeasured_slow_path() {
    let runs = flows(include_str!(
        "../../../scenarios/examples/short-flow-slow-path.toml"
    ));
    let done = |v: &str| of(&runs, v)["completion_s"].as_f64().unwrap();
    let alone = done("tcp-fast");
    assert!(alone < 0.1, "TCP on the fast path alone: {alone} s");
    for v in ["mptcp-probe", "fmtcp-probe"] {
        assert!(
            done(v) <= 1.5 * alone,
            "{v}: {} s against {alone} s",
            done(v)
        );
    }
}

/// The probe must let the second path join: two loss-free paths (20 Mbit/s / 20 ms and
/// 10 Mbit/s / 80 ms RTT), bulk over `mptcp`/LIA for 20 s, reach issue 14's 80 % of Σ C_i
/// (a second path that never joined would leave at most 20 of 30 Mbit/s).
#[test]
fn a_probed_path_joins_and_carries_data() {
    let text = two_paths(
        "scheme = \"mptcp\"\ncc = \"lia\"\nprobe_new_paths = true",
        r#"
[[variants]]
name = "mptcp"
[[variants]]
name = "fmtcp"
set = { "flows.f.scheme" = "fmtcp" }
"#,
    );
    for (v, f) in flows(&text) {
        let g = f["goodput_mbps"].as_f64().unwrap();
        assert!(g >= 0.8 * 30.0, "{v}: {g} Mbit/s of 30");
        let cell = f["paths"][1]["throughput_mbps"].as_f64().unwrap();
        assert!(cell > 5.0, "{v}: the second path carried {cell} Mbit/s");
    }
}
