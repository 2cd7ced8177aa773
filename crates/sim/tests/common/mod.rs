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
        sample_interval: None,
        arrivals: vec![],
        qlog_dir: None,
    }
}

/// The `file` application transferring `bytes`.
pub fn file(bytes: u64) -> AppConfig {
    AppConfig::of("file", &serde_json::json!({ "bytes": bytes })).unwrap()
}
