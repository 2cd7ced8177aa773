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

/// The result of a 20 s bulk flow over `links`, seed 1, receive buffer `buffer`.
fn flow_result(
    links: Vec<LinkConfig>,
    scheme: &str,
    cc_name: &str,
    buffer: usize,
    tolerance: bool,
) -> FlowResult {
    let n = links.len();
    let mut c = conn(
        tributary_proto::scheme::SchemeConfig::named(scheme).unwrap(),
        cc(cc_name),
        buffer,
    );
    c.reorder_tolerance = tolerance;
    let f = flow(
        "f",
        (0..n).map(|i| vec![i]).collect(),
        c,
        FlowKind::Multipath,
    );
    let mut r = run(sim(links, vec![f], 20, 1)).unwrap();
    r.flows.swap_remove(0)
}

/// (goodput Mbit/s, spurious losses, undos, packets sent) of a 20 s bulk flow, seed 1.
fn run_flow(
    links: Vec<LinkConfig>,
    scheme: &str,
    cc_name: &str,
    tolerance: bool,
) -> (f64, u64, u64, u64) {
    let fl = &flow_result(links, scheme, cc_name, 32 << 20, tolerance);
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

/// dFEC and TCP-IR rebuild a lost packet from parity and the receiver acknowledges it, after
/// the packets sent behind it: that is neither reordering nor proof of a spurious loss, and the
/// schemes tell the engine so (`SchemeSender::acked_by_repair`). The requirement is RFC 8985
/// §6.2's: on a path that does not reorder, the reordering window stays 0 and loss detection
/// is the packet threshold alone, so the option changes nothing: the whole flow result
/// (goodput, every path's losses and retransmissions, the schemes' counters) must be equal
/// with and without it. Before the schemes said so, 207 of 372 runs of `scenarios/dfec`
/// changed (docs/experiments/reordering.md), and these did: the check that repairs happened
/// keeps the test from passing on a path where parity never had anything to do.
#[test]
fn fec_repairs_are_neither_reordering_nor_spurious_losses() {
    let one = || vec![link("l", 20_000_000, 20, 100, 0.02)];
    let two = || {
        vec![
            link("a", 10_000_000, 10, 50, 0.02),
            link("b", 10_000_000, 40, 100, 0.01),
        ]
    };
    for (name, links, scheme, cc_name) in [
        ("tcp-dfec", one(), "dfec", "cubic"),
        ("tcp-ir", one(), "tcp-ir", "cubic"),
        ("mptcp-dfec", two(), "dfec", "lia"),
    ] {
        let off = flow_result(links.clone(), scheme, cc_name, 4 << 20, false);
        let on = flow_result(links, scheme, cc_name, 4 << 20, true);
        let repaired: u64 = on.scheme.receiver["paths"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["repaired"].as_u64().unwrap())
            .sum();
        assert!(repaired >= 10, "{name}: only {repaired} repairs");
        assert_eq!(
            on.paths.iter().map(|p| p.spurious_losses).sum::<u64>(),
            0,
            "{name}: a repair counted as a spurious loss"
        );
        assert!(
            on == off,
            "{name}: the reordering tolerance changed a run without reordering: \
             {:.3} Mbit/s with it, {:.3} without",
            on.goodput_mbps,
            off.goodput_mbps
        );
    }
}
