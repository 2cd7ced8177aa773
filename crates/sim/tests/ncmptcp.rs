//! `nc-mptcp` in the simulator (which checks every delivered byte against those written on
//! every run): applications that write less than a generation and wait for an answer.

use crate::common;
use common::*;
use tributary_proto::scheme::SchemeConfig;
use tributary_sim::*;

/// Applications that write less than a generation and then wait for an answer must complete
/// with nc-mptcp as with any reliable scheme: `web` (300-byte requests written by the
/// receiving end, objects whose tails are shorter than a generation) and `request-response`,
/// on the comparison suite's Wi-Fi + cellular paths (scenarios/compare/wifi-cell.toml) and on
/// one lossless path. Regression: nc-mptcp waited for a full generation (16 segments) before
/// sending anything, so the first request never left and `web` never completed in the
/// comparison suite (docs/compare.md before 2026-11-23).
#[test]
fn nc_mptcp_completes_applications_that_write_less_than_a_generation() {
    let apps = [
        ("web", serde_json::json!({})),
        ("request-response", serde_json::json!({ "requests": 20 })),
    ];
    let cases = [
        (
            "wifi + cell",
            vec![
                link("wifi", 20_000_000, 10, 35, 0.01),
                link("cell", 10_000_000, 40, 70, 0.005),
            ],
        ),
        ("one path", vec![link("a", 10_000_000, 20, 100, 0.0)]),
    ];
    for (name, links) in cases {
        for (app, opts) in &apps {
            let n = links.len();
            let mut f = flow(
                "f",
                (0..n).map(|i| vec![i]).collect(),
                conn(SchemeConfig::named("nc-mptcp").unwrap(), cc("lia"), 1 << 20),
                FlowKind::Multipath,
            );
            f.app = AppConfig::of(app, opts).unwrap();
            let r = run(sim(links.clone(), vec![f], 30, 1)).unwrap();
            let fl = &r.flows[0];
            assert!(
                fl.completion_s.is_some(),
                "{name}, {app}: {}",
                fl.app.receiver
            );
            let m = (&fl.app.sender, &fl.app.receiver);
            match *app {
                "web" => assert_eq!(m.1["objects_complete"], 6, "{name}: {}", m.1),
                _ => assert_eq!(m.0["completed"], 20, "{name}: {}", m.0),
            }
        }
    }
}
