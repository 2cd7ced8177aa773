//! Reordering within a path (`reorder`, `reorder_delay` link keys) with the engine's
//! reordering tolerance (`ConnectionConfig::reorder_tolerance`; docs/experiments/reordering.md).
//!
//! The requirement is RFC 8985's: reordering within the reordering window (here packets held
//! back 10 ms on an 80 ms path, within min_RTT/4 = 20 ms) causes no spurious retransmission
//! once the path has seen reordering, and the one congestion response it caused before
//! (the first reordering) is undone (RFC 4015 §2). So the flow should get what it gets on
//! the same path without reordering, save the few packets held back: we ask for 95 % of
//! the no-reordering goodput (Linux TCP is "nearly unaffected", docs/scenarios.md), and
//! check that without the option the same path gives less than a quarter of it (measured:
//! 9 % at 0.1 %, 3 % at 1 %), so the test fails if the mechanism is missing. The undo alone
//! would keep most of the goodput (each spurious reduction comes back 10 ms later), so the
//! window is checked by its own goal: RFC 8985 aims at no spurious loss once a path has
//! seen reordering, so at most one per path (the first reordering) plus 1 % of the packets
//! held back as slack (measured: 1 to 5 in all), where without the window every held packet
//! would be one.

use crate::common;
use common::*;
use tributary_proto::time::Duration;
use tributary_sim::*;

/// A 100 Mbit/s, 40 ms one-way link (80 ms RTT, queue 1000 packets) whose forward direction
/// holds each packet back 10 ms with probability `reorder`.
fn reordering_link(name: &str, rate: u64, reorder: f64) -> LinkConfig {
    let mut l = link(name, rate, 40, 1000, 0.0);
    l.forward.reorder_prob = reorder;
    l.forward.reorder_delay = Duration::from_millis(10);
    l
}

/// (goodput Mbit/s, spurious losses, undos, packets sent) of a 20 s bulk flow, seed 1.
fn run_flow(
    links: Vec<LinkConfig>,
    scheme: &str,
    cc_name: &str,
    tolerance: bool,
) -> (f64, u64, u64, u64) {
    let n = links.len();
    let mut c = conn(
        tributary_proto::scheme::SchemeConfig::named(scheme).unwrap(),
        cc(cc_name),
        32 << 20,
    );
    c.reorder_tolerance = tolerance;
    let f = flow(
        "f",
        (0..n).map(|i| vec![i]).collect(),
        c,
        FlowKind::Multipath,
    );
    let r = run(sim(links, vec![f], 20, 1)).unwrap();
    let fl = &r.flows[0];
    (
        fl.goodput_mbps,
        fl.paths.iter().map(|p| p.spurious_losses).sum(),
        fl.paths.iter().map(|p| p.undos).sum(),
        fl.paths.iter().map(|p| p.packets_sent).sum(),
    )
}

fn check(name: &str, links: impl Fn(f64) -> Vec<LinkConfig>, scheme: &str, cc_name: &str) {
    let n = links(0.0).len();
    let (clean, spurious, _, _) = run_flow(links(0.0), scheme, cc_name, true);
    assert_eq!(spurious, 0, "{name}: no reordering, no spurious loss");
    for reorder in [0.001, 0.01] {
        let (with, spurious, undos, sent) = run_flow(links(reorder), scheme, cc_name, true);
        assert!(
            with >= 0.95 * clean,
            "{name}, {reorder}: {with:.2} Mbit/s with the tolerance, {clean:.2} without reordering"
        );
        assert!(undos >= 1, "{name}, {reorder}: {undos} undos");
        let held = reorder * sent as f64;
        assert!(
            spurious >= 1 && (spurious as f64) <= n as f64 + 0.01 * held,
            "{name}, {reorder}: {spurious} spurious losses, about {held:.0} packets held back"
        );
        let (without, _, _, _) = run_flow(links(reorder), scheme, cc_name, false);
        assert!(
            without < 0.25 * clean,
            "{name}, {reorder}: {without:.2} Mbit/s without the tolerance"
        );
    }
}

/// CUBIC on one 100 Mbit/s, 80 ms path with 0.1 % and 1 % of packets held back 10 ms.
#[test]
fn cubic_single_path_tolerates_reordering() {
    check(
        "tcp/cubic",
        |r| vec![reordering_link("l", 100_000_000, r)],
        "tcp",
        "cubic",
    );
}

/// MPTCP with LIA over two such 50 Mbit/s paths, both reordering.
#[test]
fn mptcp_tolerates_reordering_within_each_path() {
    check(
        "mptcp/lia",
        |r| {
            vec![
                reordering_link("a", 50_000_000, r),
                reordering_link("b", 50_000_000, r),
            ]
        },
        "mptcp",
        "lia",
    );
}
