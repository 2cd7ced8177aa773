//! The schedulers beside min-RTT in whole simulated transfers (their rules are unit-tested in
//! `crates/proto/src/sched/`): `redundant` puts every segment on every path, `blest` and `ecf`
//! keep a slow path out when waiting for the fast one is better. Every run verifies every
//! delivered byte.

use crate::common;
use common::*;
use tributary_proto::sched::SchedulerConfig;
use tributary_sim::*;

fn run_with(
    links: Vec<LinkConfig>,
    sched: &str,
    buffer: usize,
    bytes: u64,
    seed: u64,
) -> FlowResult {
    let n = links.len();
    let mut c = conn(mptcp(), cc("lia"), buffer);
    c.scheduler = SchedulerConfig::named(sched).unwrap();
    let mut f = flow(
        "f",
        (0..n).map(|i| vec![i]).collect(),
        c,
        FlowKind::Multipath,
    );
    f.app = file(bytes);
    let r = run(sim(links, vec![f], 60, seed)).unwrap().flows.remove(0);
    assert_eq!(r.bytes_delivered, bytes, "{sched}: transfer incomplete");
    r
}

fn payload(r: &FlowResult) -> Vec<u64> {
    r.paths.iter().map(|p| p.payload_bytes_sent).collect()
}

/// `redundant` over two identical paths: by the rule's definition each path carries (nearly)
/// every segment, so each path's payload is at least 90 % of the bytes delivered (a copy is
/// skipped only when the other path's acknowledgement came first), while under min-RTT the
/// paths share the data and neither carries 90 % of it.
#[test]
fn redundant_sends_every_segment_on_every_path() {
    let links = || {
        vec![
            link("a", 10_000_000, 20, 100, 0.0),
            link("b", 10_000_000, 20, 100, 0.0),
        ]
    };
    let bytes = 2_000_000;
    let red = run_with(links(), "redundant", 1 << 20, bytes, 1);
    let min = run_with(links(), "min-rtt", 1 << 20, bytes, 1);
    eprintln!("redundant {:?}, min-rtt {:?}", payload(&red), payload(&min));
    let most = bytes * 9 / 10;
    assert!(
        payload(&red).iter().all(|&p| p >= most),
        "{:?}",
        payload(&red)
    );
    assert!(
        payload(&min).iter().all(|&p| p < most),
        "{:?}",
        payload(&min)
    );
    assert!(red.scheme.sender["redundant_bytes"].as_u64().unwrap() > bytes * 8 / 10);
}

/// A fast path (20 Mbit/s, 10 ms one-way, 1 % loss, so its window is often full) and a slow
/// one (2 Mbit/s, 200 ms) with a 64 KiB receive buffer: min-RTT fills the slow path whenever
/// the fast one is full, BLEST and ECF hold it back when waiting for the fast path is better,
/// so they put markedly less on it, and (both papers' claim for such paths) finish no later.
#[test]
fn blest_and_ecf_keep_data_off_a_slow_path() {
    let links = || {
        vec![
            link("fast", 20_000_000, 10, 100, 0.01),
            link("slow", 2_000_000, 200, 100, 0.0),
        ]
    };
    let bytes = 4_000_000;
    let slow = |s: &str| {
        let r = run_with(links(), s, 64 << 10, bytes, 2);
        let p = payload(&r);
        eprintln!(
            "{s}: payload per path {p:?}, completion {:?}",
            r.completion_s
        );
        (p[1], r.completion_s.unwrap())
    };
    let (m, mt) = slow("min-rtt");
    let (b, bt) = slow("blest");
    let (e, et) = slow("ecf");
    assert!(b * 2 < m, "blest slow-path bytes {b} vs min-rtt {m}");
    assert!(e * 2 < m, "ecf slow-path bytes {e} vs min-rtt {m}");
    // Waiting for the fast path must not cost completion time here (the point of both).
    assert!(
        bt <= mt * 1.05 && et <= mt * 1.05,
        "completion {mt} {bt} {et}"
    );
}
