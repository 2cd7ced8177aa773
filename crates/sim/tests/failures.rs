//! Failures a user hits on harsh paths (issue "Engine that does not stall, lie or bloat"):
//! each test here failed on the engine before its fix.

mod common;
use common::*;
use tributary_proto::time::Duration;
use tributary_sim::*;

/// A link that goes down loses every packet on it, also those held back for reordering
/// (before the fix, a reordered packet offered before the link went down still arrived).
#[test]
fn reordered_packets_do_not_survive_a_link_going_down() {
    // Every packet is held back 500 ms: with 10 ms one-way delay, a packet arrives 510 ms
    // after it was sent. The link goes down for good at 1 s, so only packets sent before
    // 490 ms can arrive — the initial window (no ACK comes back before 1 s): 10 maximum-size
    // datagrams of window, in which 11 packets fit (one may be sent while in flight < cwnd).
    let mut l = link("l", 10_000_000, 10, 1000, 0.0);
    l.forward.reorder_prob = 1.0;
    l.forward.reorder_delay = Duration::from_millis(500);
    let f = flow(
        "f",
        vec![vec![0]],
        conn(tcp(), cc("new-reno"), 1 << 20),
        FlowKind::Multipath,
    );
    let mut cfg = sim(vec![l], vec![f], 5, 1);
    cfg.changes.push(TimedChange {
        at: Duration::from_secs(1),
        link: 0,
        direction: Direction::Forward,
        change: LinkChange {
            up: Some(false),
            ..LinkChange::default()
        },
    });
    let r = run(cfg).unwrap();
    let delivered = r.flows[0].bytes_delivered;
    assert!(delivered <= 11 * 1400, "{delivered} bytes arrived");
    assert!(r.links[0].forward.down_drops > 0);
}
