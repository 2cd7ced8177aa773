//! `fmtcp` in the simulator: exact delivery over clean and faulty paths, the head-of-line case
//! against `mptcp`, coding overhead, and the allocation switch.

mod common;
use common::*;
use tributary_proto::cc::CcConfig;
use tributary_proto::scheme::{FmtcpConfig, SchemeConfig};
use tributary_sim::*;

fn fmtcp() -> SchemeConfig {
    SchemeConfig::Fmtcp(FmtcpConfig::default())
}

fn two_paths(loss2: f64, delay2_ms: u64) -> Vec<LinkConfig> {
    vec![
        link("sub1", 10_000_000, 100, 200, 0.001),
        link("sub2", 10_000_000, delay2_ms, 200, loss2),
    ]
}

fn run_flow(
    links: Vec<LinkConfig>,
    scheme: SchemeConfig,
    buffer: usize,
    secs: u64,
    seed: u64,
    bytes: Option<u64>,
) -> FlowResult {
    let n = links.len();
    let mut f = flow(
        "f",
        (0..n).map(|i| vec![i]).collect(),
        conn(scheme, CcConfig::Lia, buffer),
        FlowKind::Multipath,
    );
    f.bytes = bytes;
    let cfg = sim(links, vec![f], secs, seed);
    run(cfg).unwrap().flows.remove(0)
}

#[test]
fn smoke() {
    for loss in [0.0, 0.01, 0.05] {
        let r = run_flow(two_paths(loss, 100), fmtcp(), 128 << 10, 60, 1, None);
        let m = run_flow(two_paths(loss, 100), mptcp(), 128 << 10, 60, 1, None);
        eprintln!(
            "loss {loss}: fmtcp {:.3} Mbit/s delay {:?} | mptcp {:.3} delay {:?}",
            r.goodput_mbps, r.block_delay, m.goodput_mbps, m.block_delay
        );
    }
}
