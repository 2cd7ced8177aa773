//! Helpers shared by the simulator's integration tests.
#![allow(dead_code)]

use tributary_proto::cc::CcConfig;
use tributary_proto::scheme::SchemeConfig;
use tributary_proto::time::Duration;
use tributary_proto::ConnectionConfig;
use tributary_sim::*;

/// A symmetric link: `rate` bit/s, one-way `delay_ms`, queue of `queue` packets, forward
/// Bernoulli loss `loss`; the reverse direction is clean.
pub fn link(name: &str, rate: u64, delay_ms: u64, queue: u64, loss: f64) -> LinkConfig {
    let mut fwd = LinkParams::new(rate, Duration::from_millis(delay_ms), queue);
    if loss > 0.0 {
        fwd.loss = LossModel::Bernoulli { p: loss };
    }
    LinkConfig {
        name: name.into(),
        forward: fwd,
        reverse: LinkParams::new(rate, Duration::from_millis(delay_ms), queue),
    }
}

pub fn conn(scheme: SchemeConfig, cc: CcConfig, buffer: usize) -> ConnectionConfig {
    ConnectionConfig {
        scheme,
        cc,
        recv_buffer: buffer,
        send_buffer: buffer.max(1 << 20) * 2,
        ..ConnectionConfig::default()
    }
}

pub fn mptcp() -> SchemeConfig {
    SchemeConfig::named("mptcp").unwrap()
}

pub fn tcp() -> SchemeConfig {
    SchemeConfig::named("tcp").unwrap()
}

pub fn cc(name: &str) -> CcConfig {
    CcConfig::named(name).unwrap()
}

pub fn flow(
    name: &str,
    paths: Vec<Vec<usize>>,
    conn: ConnectionConfig,
    kind: FlowKind,
) -> FlowConfig {
    FlowConfig {
        name: name.into(),
        paths,
        conn,
        kind,
        start: Duration::ZERO,
        start_jitter: Duration::ZERO,
        app: AppConfig::default(),
        qlog: false,
    }
}

pub fn sim(links: Vec<LinkConfig>, flows: Vec<FlowConfig>, secs: u64, seed: u64) -> SimConfig {
    SimConfig {
        links,
        flows,
        changes: vec![],
        duration: Duration::from_secs(secs),
        seed,
        header_overhead: 28,
        max_live_flows: tributary_sim::DEFAULT_MAX_LIVE_FLOWS,
        sample_interval: None,
        arrivals: vec![],
        qlog_dir: None,
    }
}

/// The `file` application transferring `bytes`.
pub fn file(bytes: u64) -> AppConfig {
    AppConfig::of("file", &serde_json::json!({ "bytes": bytes })).unwrap()
}

/// Runs the applications that write less than a coding block and then wait for an answer —
/// `web` (300-byte requests written by the receiving end) and `request-response` (20
/// requests) — over `scheme` with LIA and a 1 MiB buffer for 30 s (seed 1) on each of
/// `cases` (name, links; one path per link), and asserts that each completes: every object
/// of the page, every request answered.
pub fn assert_short_writes_complete(scheme: SchemeConfig, cases: Vec<(&str, Vec<LinkConfig>)>) {
    let apps = [
        ("web", serde_json::json!({})),
        ("request-response", serde_json::json!({ "requests": 20 })),
    ];
    for (name, links) in cases {
        for (app, opts) in &apps {
            let n = links.len();
            let mut f = flow(
                "f",
                (0..n).map(|i| vec![i]).collect(),
                conn(scheme.clone(), cc("lia"), 1 << 20),
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
