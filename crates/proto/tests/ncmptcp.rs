//! `nc-mptcp` on a live pair of connections: byte-exact delivery with regular and NC
//! subflows, with only coded segments (the decoder does all the work), under loss, with a
//! short final generation; hostile SYMBOL and FEEDBACK frames dropped and counted.

use crate::common;

use common::{
    data, exchange, overlapping_blocks_are_refused, packet, send_all, symbol, transfer,
    transfer_from, wrap, Source,
};
use proptest::prelude::*;
use tributary_proto::scheme::ncmptcp::NcStats;
use tributary_proto::scheme::{NcMptcpConfig, SchemeConfig};
use tributary_proto::wire::{Coding, FeedbackFrame, Frame, FrameIter};
use tributary_proto::{Connection, ConnectionConfig, Instant};

fn cfg_with(f: NcMptcpConfig) -> ConnectionConfig {
    ConnectionConfig {
        scheme: SchemeConfig::of("nc-mptcp", &f).unwrap(),
        recv_buffer: 128 << 10,
        ..ConnectionConfig::default()
    }
}

fn pair_with(f: NcMptcpConfig, paths: usize) -> (Connection, Connection) {
    (
        Connection::new(cfg_with(f.clone()), paths).unwrap(),
        Connection::new(cfg_with(f), paths).unwrap(),
    )
}

fn pair() -> (Connection, Connection) {
    pair_with(NcMptcpConfig::default(), 2)
}

fn sender_stats(c: &Connection) -> NcStats {
    serde_json::from_value(c.stats().scheme.sender).unwrap()
}

fn receiver_stats(c: &Connection) -> NcStats {
    serde_json::from_value(c.stats().scheme.receiver).unwrap()
}

/// Two paths (one NC, one regular by the automatic rule), a stream that ends inside a
/// generation: every byte arrives, in order, and both kinds of segment were used.
#[test]
fn delivers_exactly_with_regular_and_nc_subflows() {
    let (mut a, mut b) = pair();
    // 300,001 bytes: 13 full generations of 16·1380 and a short one.
    let d = data(300_001);
    let got = send_all(&mut a, &mut b, &d, 0, 20_000);
    assert!(got == d, "{} of {} bytes", got.len(), d.len());
    let s = sender_stats(&a);
    let r = receiver_stats(&b);
    assert!(s.regular_sent > 0 && s.coded_sent > 0, "{s:?}");
    // 14 generations of 16·1380 bytes (the last one shorter), or more with short ones where the sender went idle while
    // `send_all` was not writing (it writes only every 50 rounds).
    let full = 300_001u64.div_ceil(16 * 1380);
    assert!(
        s.generations >= full && s.generations - s.short_generations <= full,
        "{s:?}"
    );
    assert_eq!(r.generations_decoded, s.generations);
}

/// Every subflow NC: the receiver sees only random combinations and must decode each
/// generation from them.
#[test]
fn delivers_exactly_from_coded_segments_only() {
    let f = NcMptcpConfig {
        nc_paths: vec![0, 1],
        ..NcMptcpConfig::default()
    };
    let (mut a, mut b) = pair_with(f, 2);
    let d = data(200_000);
    let got = send_all(&mut a, &mut b, &d, 0, 20_000);
    assert!(got == d, "{} of {} bytes", got.len(), d.len());
    let s = sender_stats(&a);
    assert_eq!(s.regular_sent, 0);
    assert!(s.coded_sent >= s.source_segments, "{s:?}");
}

/// One path: no NC subflow, source segments only, retransmitted when lost (ARQ).
#[test]
fn one_path_is_arq_over_source_segments() {
    let (mut a, mut b) = pair_with(NcMptcpConfig::default(), 1);
    let d = data(150_000);
    let got = send_all(&mut a, &mut b, &d, 9, 20_000);
    assert!(got == d, "{} of {} bytes", got.len(), d.len());
    let s = sender_stats(&a);
    assert_eq!(s.coded_sent, 0);
    assert!(s.regular_resent > 0, "{s:?}");
}

/// Every 7th packet lost (about 14 %): losses are repaired (coded repairs on the NC subflow,
/// retransmissions on the regular one) and the bytes are exact.
#[test]
fn delivers_exactly_when_packets_are_lost() {
    for drop in [7, 3] {
        let (mut a, mut b) = pair();
        let d = data(250_000);
        let got = send_all(&mut a, &mut b, &d, drop, 20_000);
        assert!(got == d, "drop {drop}: {} of {} bytes", got.len(), d.len());
        let s = sender_stats(&a);
        assert!(s.coded_repairs + s.regular_resent > 0, "{s:?}");
    }
}

/// With Theorem 2's planned split and without Eq. 3 offsets the scheme still delivers exactly.
#[test]
fn delivers_exactly_with_plan_and_without_offsets() {
    let f = NcMptcpConfig {
        plan: true,
        offset: false,
        generation_size: 8,
        ..NcMptcpConfig::default()
    };
    let (mut a, mut b) = pair_with(f, 2);
    let d = data(100_000);
    let got = send_all(&mut a, &mut b, &d, 5, 20_000);
    assert!(got == d, "{} of {} bytes", got.len(), d.len());
}

/// Hostile SYMBOL and FEEDBACK frames against a live connection: each is dropped and counted
/// (none panics), and the transfer that follows delivers exactly what was written.
#[test]
fn hostile_symbols_and_feedback_are_dropped_and_counted() {
    let (mut a, mut b) = pair();
    let d = data(120_000);
    let mut src = Source::new(&d);
    let mut now = Instant::ZERO;
    // Let generation 0 be decoded and a few more start.
    let mut got = transfer_from(&mut a, &mut b, &mut now, &mut src, 3, 0);
    assert!(!got.is_empty(), "generation 0 not delivered yet");
    static RIGHT: [u8; 1380] = [0xAB; 1380];
    static WRONG: [u8; 100] = [0xCD; 100];
    let hostile: Vec<(Frame<'static>, bool)> = vec![
        // wrong segment size
        (symbol(2, 5, Coding::Plain, &WRONG), true),
        // generation far beyond the receive window
        (symbol(1_000_000, 0, Coding::Plain, &RIGHT), true),
        // generation ids (first stream byte) at the end of the offset space
        (symbol(u64::MAX >> 3, 0, Coding::Plain, &RIGHT), true),
        (symbol((1 << 62) - 5, 0, Coding::Plain, &RIGHT), true),
        // explicit coefficients of the wrong count (bad coefficients)
        (symbol(2, 3, Coding::Coefficients(&[1, 2, 3]), &RIGHT), true),
        // a "short final generation" as long as a full one
        (symbol(2, 3, Coding::Seed(16 * 1380), &RIGHT), true),
        // a zero-length one
        (symbol(2, 3, Coding::Seed(0), &RIGHT), true),
        // a DATA frame: not this scheme's
        (
            Frame::Data {
                offset: 0,
                data: &WRONG,
            },
            true,
        ),
        // a segment of generation 0, already delivered: late, dropped, not a rejection
        (symbol(0, 9_999, Coding::Plain, &RIGHT), false),
    ];
    let before = b.stats().frames_rejected;
    let late_before = receiver_stats(&b).late_symbols;
    let mut expected = 0;
    for (i, (f, rejected)) in hostile.iter().enumerate() {
        let _ = b.handle_datagram(now, &packet(0, 10_000 + i as u64, std::slice::from_ref(f)));
        expected += u64::from(*rejected);
    }
    assert_eq!(b.stats().frames_rejected - before, expected);
    assert_eq!(receiver_stats(&b).late_symbols - late_before, 1);
    // Feedback to the sender: a generation never sent, a rank above the generation size (rank
    // overflow), a rank above what was sent, a private feedback kind this scheme does not use.
    let before = a.stats().feedback_rejected;
    let fb = |block, count, decoded| {
        Frame::Feedback(FeedbackFrame {
            block,
            count,
            decoded,
        })
    };
    let bad = [
        fb(1_000_000, 0, true),
        fb(1, 17, false),
        fb(1, 1 << 40, false),
        Frame::Scheme {
            kind: 0x80,
            body: &[1, 2, 3],
        },
    ];
    for (i, f) in bad.iter().enumerate() {
        let _ = a.handle_datagram(now, &packet(1, 20_000 + i as u64, std::slice::from_ref(f)));
    }
    assert_eq!(a.stats().feedback_rejected - before, 4);
    got.extend(transfer_from(&mut a, &mut b, &mut now, &mut src, 20_000, 0));
    assert!(got == d, "{} of {} bytes", got.len(), d.len());
}

/// Explicit coefficients of the right count are legal RLNC (recoding): accepted, and a
/// combination that is all zero is counted as non-innovative, not as a rejection.
#[test]
fn explicit_coefficients_are_accepted() {
    let (mut a, mut b) = pair();
    let d = data(60_000);
    assert_eq!(a.write(&d), d.len());
    a.close();
    let mut now = Instant::ZERO;
    static ZERO: [u8; 16] = [0; 16];
    static PAYLOAD: [u8; 1380] = [0; 1380];
    let before = b.stats().frames_rejected;
    // Generation 1 starts at stream byte 16·1380.
    let f = symbol(16 * 1380, 0, Coding::Coefficients(&ZERO), &PAYLOAD);
    let _ = b.handle_datagram(now, &packet(0, 5_000, std::slice::from_ref(&f)));
    assert_eq!(b.stats().frames_rejected, before);
    assert_eq!(receiver_stats(&b).non_innovative, 1);
    let got = transfer(&mut a, &mut b, &mut now, 20_000, 0);
    assert!(got == d, "{} of {} bytes", got.len(), d.len());
}

/// Writes shorter than a generation on a stream that stays open (a web request, a
/// response's tail) must be delivered: the idle sender sends them as a short generation
/// instead of waiting for a full one that may never be written. Both directions (the web
/// client requests from the receiving end), with two paths (regular + NC subflow) and with
/// only NC subflows. Regression: before short generations nothing was ever sent and the
/// comparison suite's `web` never completed with nc-mptcp (docs/compare.md, 2026-11-23).
#[test]
fn writes_shorter_than_a_generation_are_delivered_without_closing() {
    for nc_paths in [vec![], vec![0, 1]] {
        let (mut a, mut b) = pair_with(
            NcMptcpConfig {
                nc_paths: nc_paths.clone(),
                ..NcMptcpConfig::default()
            },
            2,
        );
        let mut now = Instant::ZERO;
        let req = data(300);
        assert_eq!(b.write(&req), 300);
        let (_, at_a) = exchange(&mut a, &mut b, &mut now);
        assert!(at_a == req, "{nc_paths:?}: request: {} of 300", at_a.len());
        // One full generation (22 080 bytes) and a 7 920-byte tail, then a one-byte write.
        let resp = data(30_000);
        assert_eq!(a.write(&resp), resp.len());
        let (at_b, _) = exchange(&mut a, &mut b, &mut now);
        assert!(
            at_b == resp,
            "{nc_paths:?}: response: {} of 30000",
            at_b.len()
        );
        assert_eq!(a.write(&[7]), 1);
        let (at_b, _) = exchange(&mut a, &mut b, &mut now);
        assert_eq!(at_b, vec![7], "{nc_paths:?}");
        assert_eq!((a.data_acked(), b.data_acked()), (30_001, 300));
        let s = sender_stats(&a);
        assert_eq!((s.generations, s.short_generations), (3, 2), "{s:?}");
        assert_eq!(sender_stats(&b).short_generations, 1);
        assert_eq!(b.stats().frames_rejected + a.stats().frames_rejected, 0);
    }
}

/// Generations are named by their first stream byte, so a hostile peer could name
/// overlapping ones: a generation overlapping one being decoded, or reusing its id with
/// another length, is refused and counted; FEEDBACK naming an offset inside the open
/// generations that is no generation's start is refused and counted.
#[test]
fn overlapping_generations_are_refused() {
    let (mut a, mut b) = pair();
    static RIGHT: [u8; 1380] = [0xAB; 1380];
    overlapping_blocks_are_refused(&mut b, &RIGHT);
    // The sender opens a short generation [0, 300); feedback for byte 150 names none.
    assert_eq!(a.write(&data(300)), 300);
    let mut buf = vec![0u8; 2048];
    assert!(a.poll_transmit(Instant::ZERO, &mut buf).is_some());
    assert_eq!(sender_stats(&a).short_generations, 1);
    let before = a.stats().feedback_rejected;
    let fb = Frame::Feedback(FeedbackFrame {
        block: 150,
        count: 0,
        decoded: false,
    });
    let _ = a.handle_datagram(Instant::ZERO, &packet(1, 300, std::slice::from_ref(&fb)));
    assert_eq!(a.stats().feedback_rejected - before, 1);
}

#[test]
fn invalid_configurations_are_refused() {
    let mut c = cfg_with(NcMptcpConfig::default());
    c.recv_buffer = 16 << 10;
    assert!(
        Connection::new(c, 2).is_err(),
        "generation larger than the receive buffer"
    );
    for f in [
        NcMptcpConfig {
            generation_size: 0,
            ..NcMptcpConfig::default()
        },
        NcMptcpConfig {
            generation_size: 5000,
            ..NcMptcpConfig::default()
        },
        NcMptcpConfig {
            z: -1.0,
            ..NcMptcpConfig::default()
        },
        NcMptcpConfig {
            nc_paths: vec![70],
            ..NcMptcpConfig::default()
        },
    ] {
        assert!(Connection::new(cfg_with(f.clone()), 2).is_err(), "{f:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        rng_seed: proptest::test_runner::RngSeed::Fixed(crate::PROPTEST_SEED),
        ..ProptestConfig::default()
    })]
    /// Arbitrary frame bytes with a valid checksum, fed to both ends before a real transfer:
    /// no panic, and without a forged SYMBOL or ACK frame (the transport is not authenticated)
    /// the bytes read are exactly a prefix of those written.
    #[test]
    fn garbage_never_panics_or_corrupts(junk in proptest::collection::vec(
        (any::<u8>(), any::<u8>(), proptest::collection::vec(any::<u8>(), 0..64)), 0..16)) {
        let (mut a, mut b) = pair();
        let d = data(70_000);
        let mut src = Source::new(&d);
        let mut now = Instant::ZERO;
        let id = ConnectionConfig::default().conn_id;
        for (i, (path, kind, body)) in junk.iter().enumerate() {
            let mut pkt = vec![*kind & 0x0f];
            pkt.extend_from_slice(body);
            let _ = b.handle_datagram(now, &wrap(id, path % 3, 40_000 + i as u64, &pkt));
            let _ = a.handle_datagram(now, &wrap(id, path % 3, 50_000 + i as u64, &pkt));
        }
        let got = transfer_from(&mut a, &mut b, &mut now, &mut src, 5_000, 0);
        let forged = junk.iter().any(|(_, kind, body)| {
            let mut pkt = vec![*kind & 0x0f];
            pkt.extend_from_slice(body);
            FrameIter::new(&pkt).any(|f| matches!(f, Ok(Frame::Symbol(_) | Frame::Ack(_))))
        });
        if !forged {
            prop_assert_eq!(&got[..], &d[..got.len()]);
        }
    }
}
