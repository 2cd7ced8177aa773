//! `cmt-sctp`: the five retransmission policies of Iyengar, Amer & Stewart (ICON 2004, §3)
//! choose the path they name, and the scheme delivers exactly under loss.

use crate::common;

use common::transfer;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use tributary_proto::path::{PathState, PathView};
use tributary_proto::scheme::cmt_sctp::CmtSctpConfig;
use tributary_proto::scheme::{RtxPolicy, SchemeConfig};
use tributary_proto::{Connection, ConnectionConfig, Duration, Instant};

fn view(id: usize, cwnd: u64, ssthresh: u64, loss: f64) -> PathView {
    let mut v = PathView::new(id, 1000, cwnd);
    v.ssthresh = ssthresh;
    v.loss_rate = loss;
    v
}

/// Each policy's definition (ICON 2004 §3) on hand-built path views: path 1 has the largest
/// cwnd, path 2 the largest ssthresh, path 0 the lowest loss rate; path 3 beats them all but
/// is not active (SCTP only retransmits to active destinations).
#[test]
fn each_policy_chooses_the_path_it_names() {
    let mut paths = vec![
        view(0, 10_000, 20_000, 0.001),
        view(1, 40_000, 30_000, 0.05),
        view(2, 20_000, 90_000, 0.02),
        view(3, 99_000, 99_000, 0.0),
    ];
    paths[3].active = false;
    paths[3].state = PathState::Suspect;
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for lost_on in 0..4 {
        assert_eq!(
            RtxPolicy::Same.choose(&paths, lost_on, &mut rng),
            Some(lost_on)
        );
        assert_eq!(RtxPolicy::Asap.choose(&paths, lost_on, &mut rng), None);
        assert_eq!(RtxPolicy::Cwnd.choose(&paths, lost_on, &mut rng), Some(1));
        assert_eq!(
            RtxPolicy::Ssthresh.choose(&paths, lost_on, &mut rng),
            Some(2)
        );
        assert_eq!(
            RtxPolicy::Lossrate.choose(&paths, lost_on, &mut rng),
            Some(0)
        );
    }
    // No active path: the path that lost it.
    for p in &mut paths {
        p.active = false;
    }
    assert_eq!(RtxPolicy::Cwnd.choose(&paths, 2, &mut rng), Some(2));
}

/// "If there is a tie, it is broken randomly" (HMTP §IV on RTX-CWND): both tied paths are
/// chosen, about equally often (200 draws: each at least 60, a > 6σ margin), never the third.
#[test]
fn ties_are_broken_at_random() {
    let paths = vec![
        view(0, 30_000, 30_000, 0.01),
        view(1, 30_000, 30_000, 0.01),
        view(2, 10_000, 10_000, 0.05),
    ];
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut n = [0u32; 3];
    for _ in 0..200 {
        n[RtxPolicy::Cwnd.choose(&paths, 2, &mut rng).unwrap()] += 1;
    }
    assert!(n[0] >= 60 && n[1] >= 60 && n[2] == 0, "{n:?}");
}

fn cfg(rtx: RtxPolicy) -> ConnectionConfig {
    ConnectionConfig {
        scheme: SchemeConfig::of("cmt-sctp", &CmtSctpConfig { rtx }).unwrap(),
        recv_buffer: 64 << 10,
        ..ConnectionConfig::default()
    }
}

fn data(n: u32) -> Vec<u8> {
    (0..n)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect()
}

/// Zero-delay exchange over two paths; every `drop`-th datagram of path 1 (only) is lost.
fn run(rtx: RtxPolicy, d: &[u8], drop: usize) -> (Connection, Vec<u8>) {
    let mut a = Connection::new(cfg(rtx), 2).unwrap();
    let mut b = Connection::new(cfg(rtx), 2).unwrap();
    let mut now = Instant::ZERO;
    let mut got = Vec::new();
    let mut buf = vec![0u8; 2048];
    let mut off = 0;
    let mut n1 = 0usize;
    for _ in 0..200_000 {
        if off < d.len() {
            off += a.write(&d[off..]);
            if off == d.len() {
                a.close();
            }
        }
        let mut moved = false;
        while let Some(t) = a.poll_transmit(now, &mut buf) {
            moved = true;
            if t.path == 1 {
                n1 += 1;
                if n1.is_multiple_of(drop) {
                    continue;
                }
            }
            let _ = b.handle_datagram(now, &buf[..t.len]);
        }
        while let Some(t) = b.poll_transmit(now, &mut buf) {
            let _ = a.handle_datagram(now, &buf[..t.len]);
            moved = true;
        }
        b.read_with(u64::MAX, |s| got.extend_from_slice(s));
        if b.is_finished() && a.is_all_acked() {
            break;
        }
        if !moved {
            now += Duration::from_millis(5);
            a.handle_timeout(now);
            b.handle_timeout(now);
        }
    }
    (a, got)
}

/// Losses on path 1 only: RTX-SAME re-sends them on path 1 (plus, after a timeout of path 1,
/// the `failover` copy on path 0 the scheme documents); RTX-CWND, RTX-SSTHRESH and
/// RTX-LOSSRATE on path 0 (the lossless path: larger window after path 1's reductions, larger
/// ssthresh, lower loss rate); RTX-ASAP on whichever path asks. All deliver exactly.
#[test]
fn policies_move_retransmissions_where_they_say_and_deliver_exactly() {
    let d = data(600_000);
    for rtx in [
        RtxPolicy::Same,
        RtxPolicy::Asap,
        RtxPolicy::Cwnd,
        RtxPolicy::Ssthresh,
        RtxPolicy::Lossrate,
    ] {
        let (a, got) = run(rtx, &d, 9);
        assert!(got == d, "{rtx:?}: {} of {} bytes", got.len(), d.len());
        let p = &a.stats().paths;
        assert!(p[1].packets_lost > 0, "{rtx:?}: no loss on path 1");
        let (r0, r1) = (p[0].retransmitted_bytes, p[1].retransmitted_bytes);
        let reinjected = a.stats().scheme.sender["reinjected_bytes"]
            .as_u64()
            .unwrap_or(0);
        match rtx {
            // Threshold losses stay on path 1; path 0 only re-sends what path 1 still owed
            // when its retransmission timer expired (the documented `failover`, counted as
            // reinjection), never a fast retransmission.
            RtxPolicy::Same => assert!(
                r1 > 0 && r0 == reinjected && (r0 == 0 || p[1].rto_count > 0),
                "{rtx:?}: {r0} {r1}, reinjected {reinjected}, path-1 timeouts {}",
                p[1].rto_count
            ),
            RtxPolicy::Asap => assert!(r0 + r1 > 0, "{rtx:?}: {r0} {r1}"),
            _ => assert!(r0 > 0 && r1 == 0, "{rtx:?}: {r0} {r1}"),
        }
    }
}

#[test]
fn delivers_exactly_when_every_path_loses() {
    let d = data(300_000);
    let mut a = Connection::new(cfg(RtxPolicy::Cwnd), 2).unwrap();
    let mut b = Connection::new(cfg(RtxPolicy::Cwnd), 2).unwrap();
    let mut now = Instant::ZERO;
    let mut got = Vec::new();
    let mut off = 0;
    while off < d.len() {
        off += a.write(&d[off..]);
        if off == d.len() {
            a.close();
        }
        got.extend(transfer(&mut a, &mut b, &mut now, 50, 7));
    }
    got.extend(transfer(&mut a, &mut b, &mut now, 50_000, 7));
    assert!(got == d, "{} of {} bytes", got.len(), d.len());
}

#[test]
fn unknown_policy_is_refused() {
    let e = SchemeConfig::parse(serde_json::json!({"name": "cmt-sctp", "rtx": "fastest"}));
    assert!(e.is_err());
    let ok = SchemeConfig::parse(serde_json::json!({"name": "cmt-sctp", "rtx": "lossrate"}));
    assert!(ok.is_ok());
}
