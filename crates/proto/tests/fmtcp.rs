//! `fmtcp`: the model of the paper (Eq. 4, Eqs. 8–10, Algorithm 1) on hand-built inputs, and
//! the scheme on a live pair of connections, including hostile SYMBOL/FEEDBACK frames.

use crate::common;

use common::{
    data, exchange, overlapping_blocks_are_refused as overlapping_blocks_are_refused_by, packet,
    send_all, symbol, transfer_from, wrap, Source,
};
use proptest::prelude::*;
use tributary_proto::path::PathView;
use tributary_proto::scheme::fmtcp::{
    allocate_packet, appended_symbols, edt, eq4_failure, rt, Arrivals, Code, PathEstimate,
    FEEDBACK_KIND,
};
use tributary_proto::scheme::{CodingStats, FmtcpConfig, SchemeConfig};
use tributary_proto::wire::{put_varint, Coding, FeedbackFrame, Frame, FrameIter};
use tributary_proto::{Connection, ConnectionConfig, Duration, Instant};

// ------------------------------------------------------------------------ Eq. 4

/// §VI-A: with δ̂ = 5 %, "l_b* = 1 for loss rate from 1 % to 5 % and l_b* = 2 for loss rate
/// 10 %". The paper does not state ŵ_f; Eq. 4 gives exactly these values for ŵ_f = 6 packets
/// and for no other window (ŵ_f ≤ 5 gives l* = 0 at 1 %, ŵ_f ≥ 7 gives l* = 2 at 5 %).
#[test]
fn eq4_reproduces_the_papers_appending_numbers() {
    let w = 6;
    for p in [0.01, 0.02, 0.03, 0.04, 0.05] {
        assert_eq!(appended_symbols(w, p, 0.05), 1, "p = {p}");
    }
    assert_eq!(appended_symbols(w, 0.10, 0.05), 2);
    assert_eq!(appended_symbols(5, 0.01, 0.05), 0);
    assert_eq!(appended_symbols(7, 0.05, 0.05), 2);
    // Hand values: 1 − 0.95^7 − 7·0.05·0.95^6 = 0.04438; 1 − 0.99^6 = 0.05852.
    assert!((eq4_failure(6, 1, 0.05) - 0.04438).abs() < 1e-4);
    assert!((eq4_failure(6, 0, 0.01) - 0.05852).abs() < 1e-4);
    assert_eq!(eq4_failure(24, 0, 0.0), 0.0);
}

/// The online estimate (symbols in flight, each arriving with 1 − p) is Eq. 4 when everything
/// is on one path.
#[test]
fn arrivals_match_eq4_on_one_path() {
    for &(w, l, p) in &[
        (6u64, 1u64, 0.05),
        (24, 2, 0.01),
        (24, 5, 0.2),
        (10, 0, 0.1),
    ] {
        let mut a = Arrivals::new(w as usize);
        a.add_many(w + l, 1.0 - p);
        assert!(
            (a.failure() - eq4_failure(w, l, p)).abs() < 1e-9,
            "{w} {l} {p}"
        );
    }
}

// ------------------------------------------------------------------------ Eqs. 8–10

fn view(loss: f64, srtt_ms: u64, rto_ms: u64, cwnd: u64, in_flight: u64) -> PathView {
    let mut v = PathView::new(0, 1000, cwnd * 1000);
    v.bytes_in_flight = in_flight * 1000;
    v.packets_in_flight = in_flight;
    v.srtt = Some(Duration::from_millis(srtt_ms));
    v.min_rtt = v.srtt;
    v.latest_rtt = v.srtt;
    v.rto = Duration::from_millis(rto_ms);
    v.loss_rate = loss;
    v.oldest_unacked_sent = (in_flight > 0).then_some(Instant::ZERO);
    v
}

#[test]
fn edt_rt_eat_by_hand() {
    // p = 0.1, RTT 200 ms, RTO 400 ms.
    // Eq. 8: 0.1·0.4/0.9 + 0.1 = 0.14444 s; Eq. 9: 0.9·0.2 + 0.1·0.4 = 0.22 s.
    assert!((edt(0.1, 0.2, 0.4) - 0.144444).abs() < 1e-6);
    assert!((rt(0.1, 0.2, 0.4) - 0.22).abs() < 1e-12);
    let now = Instant::ZERO + Duration::from_millis(50);
    // Window space: EAT = EDT (Eq. 10, first case).
    let open = PathEstimate::from_view(&view(0.1, 200, 400, 10, 4), now);
    assert_eq!(open.space, 6);
    assert!((open.eat(0) - 0.144444).abs() < 1e-6);
    assert!((open.eat(5) - 0.144444).abs() < 1e-6);
    // Full window, oldest packet sent 50 ms ago: EDT + RT − τ = 0.14444 + 0.22 − 0.05.
    let full = PathEstimate::from_view(&view(0.1, 200, 400, 10, 10), now);
    assert_eq!(full.space, 0);
    assert!((full.eat(0) - 0.314444).abs() < 1e-6);
    // Our extension (ACK clock): each further packet RT/c later; 10 packets = one RT.
    assert!((full.eat(10) - 0.534444).abs() < 1e-6);
    // The 6 free packets of `open` come first, then its next window.
    assert!((open.eat(6) - (0.144444 + 0.22 - 0.05)).abs() < 1e-6);
}

// ------------------------------------------------------------------------ Algorithm 1

fn est(edt: f64, rt: f64, loss: f64, space: u64, cwnd: u64) -> PathEstimate {
    PathEstimate {
        active: true,
        loss,
        edt,
        rt,
        tau: 0.0,
        space,
        cwnd,
    }
}

/// Fast path: EDT 50 ms, RT 100 ms, 10 free packets of a 10-packet window, so its virtual
/// packets arrive at 0.05 s (10 of them), then 0.15 + 0.01·m s (m = 0, 1, ...: the ACK clock);
/// slow path: EDT 0.505 s. The fast path can deliver 10 + 36 = 46 packets before the slow
/// one's first. Blocks need 24 symbols each, no loss.
#[test]
fn algorithm1_gives_the_slow_path_what_the_fast_path_cannot_deliver_earlier() {
    let paths = [est(0.05, 0.1, 0.0, 10, 10), est(0.505, 1.0, 0.0, 10, 10)];
    let blocks = |n| (0..n).map(|_| Arrivals::new(24)).collect::<Vec<_>>();
    // One block (24 symbols): the fast path delivers it before 0.505 s; the slow path is
    // given nothing.
    assert!(allocate_packet(1, &paths, &blocks(1), 1, 0.05, true).is_empty());
    // Two blocks (48 symbols): the fast path covers block 0 and 22 symbols of block 1; the
    // slow path gets a symbol of block 1.
    assert_eq!(
        allocate_packet(1, &paths, &blocks(2), 1, 0.05, true),
        vec![(1, 1)]
    );
    // The fast path asking gets the first block.
    assert_eq!(
        allocate_packet(0, &paths, &blocks(2), 1, 0.05, true),
        vec![(0, 1)]
    );
    // Allocation off (greedy, Fig. 14 "coding only"): the slow path takes the first block.
    assert_eq!(
        allocate_packet(1, &paths, &blocks(2), 1, 0.05, false),
        vec![(0, 1)]
    );
    // Several symbols per packet fill across blocks: 30 symbols = 24 of block 0 + 6 of block 1.
    assert_eq!(
        allocate_packet(0, &paths, &blocks(3), 30, 0.05, true),
        vec![(0, 24), (1, 6)]
    );
}

/// δ-completeness inside Algorithm 1: at 1 % loss a 24-symbol block is given 24 + l* symbols
/// with l* from Eq. 4 (ŵ_f = 24: 1 − 0.99^25 − 25·0.01·0.99^24 = 2.6 % ≤ 5 % so l* = 1), then
/// the allocator moves on to the next block without waiting for any acknowledgement.
#[test]
fn algorithm1_appends_the_eq4_redundancy_then_moves_on() {
    let paths = [est(0.1, 0.2, 0.01, 100, 100)];
    let l = appended_symbols(24, 0.01, 0.05);
    assert_eq!(l, 1);
    let b = vec![Arrivals::new(24), Arrivals::new(24)];
    assert_eq!(
        allocate_packet(0, &paths, &b, 40, 0.05, true),
        vec![(0, 25), (1, 15)]
    );
    // At 10 % loss the same block needs 24 + 6 (Eq. 4 with ŵ_f = 24).
    let lossy = [est(0.1, 0.2, 0.10, 100, 100)];
    let l10 = appended_symbols(24, 0.10, 0.05);
    let b = vec![Arrivals::new(24)];
    assert_eq!(
        allocate_packet(0, &lossy, &b, 100, 0.05, true),
        vec![(0, 24 + l10 as usize)]
    );
}

// ------------------------------------------------------------------------ live connection

fn cfg(code: Code) -> ConnectionConfig {
    cfg_with(FmtcpConfig {
        code,
        ..FmtcpConfig::default()
    })
}

fn cfg_with(f: FmtcpConfig) -> ConnectionConfig {
    ConnectionConfig {
        scheme: SchemeConfig::of("fmtcp", &f).unwrap(),
        recv_buffer: 128 << 10,
        ..ConnectionConfig::default()
    }
}

fn pair(code: Code) -> (Connection, Connection) {
    pair_of(cfg(code))
}

/// Two ends with the configuration `c`.
fn pair_of(c: ConnectionConfig) -> (Connection, Connection) {
    (
        Connection::new(c.clone(), 2).unwrap(),
        Connection::new(c, 2).unwrap(),
    )
}

/// Zero-delay lossless exchange until `b` finished, or `rounds` pass; drops every `drop`-th
/// datagram from `a` (0: none). Returns what `b` read.

#[test]
fn delivers_exactly_with_a_short_final_block() {
    for code in [Code::Raptorq, Code::Lt] {
        // 10 full 32 KiB blocks and a short one of 1234 bytes.
        let d = data(10 * 32768 + 1234);
        let (mut a, mut b) = pair(code);
        let got = send_all(&mut a, &mut b, &d, 0, 20_000);
        assert!(got == d, "{code:?}: {} of {} bytes", got.len(), d.len());
        assert!(b.is_finished() && a.is_all_acked(), "{code:?}");
        let s = sender_coding(&a);
        assert_eq!(s.blocks, 11);
        assert_eq!(b.stats().frames_rejected, 0);
        assert_eq!(a.stats().feedback_rejected, 0);
    }
}

/// Writes shorter than a block on a stream that stays open (a web request, a response's
/// tail) must be delivered: the sender, idle, sends them as a short block instead of waiting
/// for a full block that may never be written. Both directions (the web client requests
/// from the receiving end). Regression: before short blocks, nothing was ever sent and the
/// comparison suite's `web` never completed with fmtcp.
#[test]
fn writes_shorter_than_a_block_are_delivered_without_closing() {
    for code in [Code::Raptorq, Code::Lt] {
        let (mut a, mut b) = pair(code);
        let mut now = Instant::ZERO;
        let req = data(300);
        assert_eq!(b.write(&req), 300);
        let (_, at_a) = exchange(&mut a, &mut b, &mut now);
        assert!(
            at_a == req,
            "{code:?}: request: {} of 300 bytes",
            at_a.len()
        );
        // A response of one full block and a 27 232-byte tail, then a one-byte write.
        let resp = data(60_000);
        assert_eq!(a.write(&resp), resp.len());
        let (at_b, _) = exchange(&mut a, &mut b, &mut now);
        assert!(
            at_b == resp,
            "{code:?}: response: {} of 60000 bytes",
            at_b.len()
        );
        assert_eq!(a.write(&[7]), 1);
        let (at_b, _) = exchange(&mut a, &mut b, &mut now);
        assert_eq!(at_b, vec![7], "{code:?}");
        assert_eq!((a.data_acked(), b.data_acked()), (60_001, 300), "{code:?}");
        let s = sender_coding(&a);
        assert_eq!((s.blocks, s.short_blocks), (3, 2), "{code:?}: {s:?}");
        assert_eq!(b.stats().frames_rejected + a.stats().frames_rejected, 0);
    }
}

/// The other side of "a bulk writer gets only full blocks" (`SendCtx::writer_waiting`): an
/// application whose write exactly fills the room the connection offers (so nothing was
/// cut short) and then waits, stream open, must see it all delivered: the tail beyond the
/// last full block goes out as a short block once the sender is idle. Then a write cut short
/// by the room (more offered than taken) leaves no short block: the writer's next writes
/// (here, the rest, then the close) complete the blocks.
#[test]
fn a_write_that_exactly_fills_the_room_is_delivered_without_closing() {
    for code in [Code::Raptorq, Code::Lt] {
        // Whole 1400-byte symbols: blocks of 32 200 B, so the 64 KiB room is two blocks and
        // a 1136-byte tail.
        let c = cfg_with(FmtcpConfig {
            code,
            full_symbols: true,
            ..FmtcpConfig::default()
        });
        let (mut a, mut b) = pair_of(c);
        let mut now = Instant::ZERO;
        let room = a.write_capacity();
        assert_eq!(room, 65_536, "{code:?}");
        let d = data(room);
        assert_eq!(a.write(&d), room);
        let (at_b, _) = exchange(&mut a, &mut b, &mut now);
        assert!(at_b == d, "{code:?}: {} of {room} bytes", at_b.len());
        assert_eq!(sender_coding(&a).short_blocks, 1, "{code:?}");
        // Offered more than the room: the tail waits for the writer, which writes the rest.
        let more = data(3 * room);
        let took = a.write(&more);
        assert!(took < more.len(), "{code:?}");
        let (mut at_b, _) = exchange(&mut a, &mut b, &mut now);
        let mut off = took;
        while off < more.len() {
            off += a.write(&more[off..]);
            if off == more.len() {
                a.close();
            }
            at_b.extend(exchange(&mut a, &mut b, &mut now).0);
        }
        assert!(
            at_b == more,
            "{code:?}: {} of {} bytes",
            at_b.len(),
            more.len()
        );
        assert!(b.is_finished() && a.is_all_acked(), "{code:?}");
        // Only the first write's tail was short (the final block ends the stream).
        assert_eq!(sender_coding(&a).short_blocks, 1, "{code:?}");
    }
}

#[test]
fn delivers_exactly_with_two_symbols_per_packet() {
    let c = cfg_with(FmtcpConfig {
        symbols_per_packet: 2,
        ..FmtcpConfig::default()
    });
    let (mut a, mut b) = pair_of(c);
    let d = data(5 * 32768 + 700);
    let got = send_all(&mut a, &mut b, &d, 5, 20_000);
    assert!(got == d, "{} of {} bytes", got.len(), d.len());
    // 49 source symbols per full block, 2 for the 700-byte tail (T = 669).
    assert_eq!(sender_coding(&a).source_symbols, 5 * 49 + 2);
}

#[test]
fn delivers_exactly_when_packets_are_lost() {
    // Every 7th datagram from the sender is dropped: lost symbols are replaced by new ones.
    // With either feedback format (`compact_feedback`).
    let d = data(300_000);
    for compact in [false, true] {
        let c = cfg_with(FmtcpConfig {
            compact_feedback: compact,
            ..FmtcpConfig::default()
        });
        let (mut a, mut b) = pair_of(c);
        let got = send_all(&mut a, &mut b, &d, 7, 20_000);
        assert!(
            got == d,
            "compact {compact}: {} of {} bytes",
            got.len(),
            d.len()
        );
        let s = sender_coding(&a);
        assert!(s.replacement_symbols > 0, "{s:?}");
        // No ARQ: nothing is ever re-sent as stream bytes.
        assert!(a.stats().paths.iter().all(|p| p.retransmitted_bytes == 0));
    }
}

/// `compact_feedback`: a run reporting the held block decoded finishes it at the sender; the
/// same run arriving again (an overtaken ACK) names a block no longer held and is skipped, not
/// refused (module docs, "Feedback").
#[test]
fn a_run_reports_a_block_decoded_and_a_stale_run_is_skipped() {
    let c = cfg_with(FmtcpConfig {
        compact_feedback: true,
        ..FmtcpConfig::default()
    });
    let mut a = Connection::new(c, 2).unwrap();
    let d = data(130_000);
    let mut src = Source::new(&d);
    let now = Instant::ZERO;
    src.pump(&mut a);
    let mut buf = vec![0u8; 2048];
    while a.poll_transmit(now, &mut buf).is_some() {}
    // Block 0 decoded (state 0), as a receiver writes it.
    let body = [0, 1, 0];
    let run = Frame::Scheme {
        kind: FEEDBACK_KIND,
        body: &body,
    };
    for (i, decoded) in [(0, 1), (1, 1)] {
        let _ = a.handle_datagram(now, &packet(1, 30_000 + i, std::slice::from_ref(&run)));
        assert_eq!(sender_coding(&a).blocks_decoded, decoded, "datagram {i}");
        assert_eq!(a.stats().feedback_rejected, 0, "datagram {i}");
    }
}

/// The fmtcp counters of a connection's sending half.
fn sender_coding(c: &Connection) -> CodingStats {
    serde_json::from_value(c.stats().scheme.sender).unwrap()
}

/// The fmtcp counters of a connection's receiving half.
fn receiver_coding(c: &Connection) -> CodingStats {
    serde_json::from_value(c.stats().scheme.receiver).unwrap()
}

/// Hostile SYMBOL frames against a live connection: each is dropped and counted (none panics),
/// and the transfer that follows delivers exactly what was written.
#[test]
fn hostile_symbols_are_dropped_and_counted() {
    let (mut a, mut b) = pair(Code::Raptorq);
    let d = data(130_000);
    let mut src = Source::new(&d);
    let mut now = Instant::ZERO;
    // Let the transfer go (zero delay: it is delivered in these rounds).
    let mut got = transfer_from(&mut a, &mut b, &mut now, &mut src, 3, 0);
    let t = 1366; // symbol size for MSS 1400 (module docs)
    static RIGHT: [u8; 1366] = [0xAB; 1366];
    static WRONG: [u8; 100] = [0xCD; 100];
    let hostile: Vec<(Frame<'static>, bool)> = vec![
        // wrong size
        (symbol(1, 5, Coding::Plain, &WRONG), true),
        // block far beyond the receive window
        (symbol(1_000_000, 0, Coding::Plain, &RIGHT), true),
        // block ids (first stream byte) at the end of the offset space
        (symbol(u64::MAX >> 3, 0, Coding::Plain, &RIGHT), true),
        (symbol((1 << 62) - 5, 0, Coding::Plain, &RIGHT), true),
        // ESI beyond RFC 6330's 24 bits
        (symbol(2, 1 << 24, Coding::Plain, &RIGHT), true),
        // explicit coefficients: not this scheme's coding
        (symbol(2, 3, Coding::Coefficients(&[1, 2, 3]), &RIGHT), true),
        // a "short block" as long as a full one
        (symbol(2, 3, Coding::Seed(32768), &RIGHT), true),
        // a DATA frame: not this scheme's
        (
            Frame::Data {
                offset: 0,
                data: &WRONG,
            },
            true,
        ),
        // a symbol of block 0, already decoded: late, dropped, not a rejection
        (symbol(0, 9_999, Coding::Plain, &RIGHT), false),
    ];
    assert_eq!(t, RIGHT.len());
    let before = b.stats().frames_rejected;
    let late_before = receiver_coding(&b).late_symbols;
    let mut expected = 0;
    for (i, (f, rejected)) in hostile.iter().enumerate() {
        let _ = b.handle_datagram(now, &packet(0, 10_000 + i as u64, std::slice::from_ref(f)));
        expected += u64::from(*rejected);
    }
    assert_eq!(b.stats().frames_rejected - before, expected);
    assert_eq!(receiver_coding(&b).late_symbols - late_before, 1);
    got.extend(transfer_from(&mut a, &mut b, &mut now, &mut src, 20_000, 0));
    assert!(got == d, "{} of {} bytes", got.len(), d.len());
}

/// Hostile feedback against a sender holding one block, in both formats (`compact_feedback`
/// on and off): each frame is refused and counted (none panics), and the transfer that
/// follows delivers exactly what was written.
#[test]
fn hostile_feedback_is_refused_and_counted() {
    for compact in [false, true] {
        let c = cfg_with(FmtcpConfig {
            compact_feedback: compact,
            ..FmtcpConfig::default()
        });
        let (mut a, mut b) = pair_of(c);
        let d = data(130_000);
        let mut src = Source::new(&d);
        let mut now = Instant::ZERO;
        src.pump(&mut a);
        let mut buf = vec![0u8; 2048];
        let mut flight = 0;
        while a.poll_transmit(now, &mut buf).is_some() {
            flight += 1;
        }
        // Fewer symbols than block 0 has (k = 24): no other block is open, block 0 is held.
        assert!((1..24).contains(&flight), "first flight {flight}");
        // Runs `start, n, n × state` (module docs, "Feedback"): a block never sent, a count
        // above what was sent, a run starting inside a block, a run longer than its body, a
        // truncated varint, a run past the last block sent.
        let body = |start: u64, states: &[u64], cut: usize| {
            let mut v = Vec::new();
            put_varint(&mut v, start);
            put_varint(&mut v, states.len() as u64);
            for &x in states {
                put_varint(&mut v, x);
            }
            v.truncate(v.len() - cut);
            v
        };
        let bodies = [
            body(1_000_000, &[0], 0),
            body(0, &[1 << 20], 0),
            body(5, &[0], 0),
            body(0, &[1; 9], 7),
            body(0, &[1 << 20], 2),
            body(0, &[1; 8], 0),
        ];
        let fb = |block, count, decoded| {
            Frame::Feedback(FeedbackFrame {
                block,
                count,
                decoded,
            })
        };
        let mut bad: Vec<Frame<'_>> = if compact {
            // The runs above, and a FEEDBACK frame that would be valid in the other format.
            let mut v: Vec<Frame<'_>> = bodies
                .iter()
                .map(|body| Frame::Scheme {
                    kind: FEEDBACK_KIND,
                    body,
                })
                .collect();
            v.push(fb(0, 1, false));
            v
        } else {
            // A block never sent, a count above what was sent, a count beyond the symbol id
            // space, and a run that would be valid in the other format.
            vec![
                fb(1_000_000, 0, true),
                fb(0, 1 << 20, false),
                fb(0, 1 << 40, false),
                Frame::Scheme {
                    kind: FEEDBACK_KIND,
                    body: &bodies[5][..3],
                },
            ]
        };
        // A private feedback kind this scheme does not use.
        bad.push(Frame::Scheme {
            kind: 0x80,
            body: &[1, 2, 3],
        });
        let before = a.stats().feedback_rejected;
        for (i, f) in bad.iter().enumerate() {
            let _ = a.handle_datagram(now, &packet(1, 20_000 + i as u64, std::slice::from_ref(f)));
        }
        assert_eq!(
            a.stats().feedback_rejected - before,
            bad.len() as u64,
            "compact_feedback {compact}"
        );
        let got = transfer_from(&mut a, &mut b, &mut now, &mut src, 20_000, 0);
        assert!(
            got == d,
            "compact_feedback {compact}: {} of {} bytes",
            got.len(),
            d.len()
        );
    }
}

#[test]
fn invalid_configurations_are_refused() {
    let mut c = cfg(Code::Raptorq);
    c.recv_buffer = 16 << 10;
    assert!(
        Connection::new(c, 2).is_err(),
        "block larger than the receive buffer"
    );
    let mut c = cfg(Code::Raptorq);
    c.scheme = SchemeConfig::of(
        "fmtcp",
        &FmtcpConfig {
            symbols_per_packet: 0,
            ..FmtcpConfig::default()
        },
    )
    .unwrap();
    assert!(Connection::new(c, 2).is_err());
    for m in [-1.0, f64::NAN, 1e9] {
        let f = FmtcpConfig {
            penalize_margin: m,
            ..FmtcpConfig::default()
        };
        assert!(f.geometry(1400).is_err(), "penalize_margin {m}");
    }
    // Adaptive δ̂ bounds: 0 < delta_min ≤ delta_max < 1 (δ̂ = 1 would never make a block
    // δ-complete once 1 − P(all arrive) rounds to 1).
    for (lo, hi) in [
        (0.0, 0.9),
        (0.5, 0.4),
        (0.1, 1.0),
        (f64::NAN, 0.9),
        (0.1, f64::NAN),
    ] {
        let f = FmtcpConfig {
            adaptive_delta: true,
            delta_min: lo,
            delta_max: hi,
            ..FmtcpConfig::default()
        };
        assert!(f.geometry(1400).is_err(), "delta_min {lo} delta_max {hi}");
    }
    // Geometry for MSS 1400: T = 1366, k = 24; two symbols per packet: T = 669, k = 49
    // (T_max = (1400 − 2·20)/2 = 680).
    let g = FmtcpConfig::default().geometry(1400).unwrap();
    assert_eq!((g.symbol, g.k), (1366, 24));
    let g2 = FmtcpConfig {
        symbols_per_packet: 2,
        ..FmtcpConfig::default()
    }
    .geometry(1400)
    .unwrap();
    assert_eq!((g2.symbol, g2.k), (669, 49));
}

/// Blocks are named by their first stream byte, so a hostile peer could name overlapping
/// ones: a block overlapping one being decoded, or reusing its id with another length, is
/// refused and counted.
#[test]
fn overlapping_blocks_are_refused() {
    let (_, mut b) = pair(Code::Raptorq);
    static RIGHT: [u8; 1366] = [0xAB; 1366];
    overlapping_blocks_are_refused_by(&mut b, &RIGHT);
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 128,
        rng_seed: proptest::test_runner::RngSeed::Fixed(crate::PROPTEST_SEED),
        ..ProptestConfig::default()
    })]
    /// Arbitrary frame bytes with a valid checksum, fed to an fmtcp receiver before a real
    /// transfer: no panic, and without a forged SYMBOL frame (the transport is not
    /// authenticated, so a well-formed forged symbol is indistinguishable from a real one)
    /// the bytes read are exactly a prefix of those written.
    #[test]
    fn garbage_never_panics_or_corrupts(junk in proptest::collection::vec(
        (any::<u8>(), any::<u8>(), proptest::collection::vec(any::<u8>(), 0..64)), 0..16)) {
        let (mut a, mut b) = pair(Code::Raptorq);
        let d = data(70_000);
        let mut src = Source::new(&d);
        let mut now = Instant::ZERO;
        for (i, (path, kind, body)) in junk.iter().enumerate() {
            let mut pkt = vec![*kind & 0x0f];
            pkt.extend_from_slice(body);
            let _ = b.handle_datagram(now, &packet(path % 3, 30_000 + i as u64, &[]));
            let _ = b.handle_datagram(now, &wrap(ConnectionConfig::default().conn_id, path % 3, 40_000 + i as u64, &pkt));
            let _ = a.handle_datagram(now, &wrap(ConnectionConfig::default().conn_id, path % 3, 50_000 + i as u64, &pkt));
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

/// Algorithm 1 packet by packet, as the sender ran it before the closed form: the reference
/// the closed form must reproduce whenever every path has the same loss rate (then the mean
/// arrival probability of the virtual packets is exact).
fn allocate_reference(
    fp: usize,
    paths: &[PathEstimate],
    blocks: &mut [Arrivals],
    per_packet: usize,
    delta_hat: f64,
) -> Vec<(usize, usize)> {
    let mut virtual_sent = vec![0u64; paths.len()];
    for _ in 0..4096 {
        let mut best = fp;
        let mut best_eat = paths[fp].eat(virtual_sent[fp]);
        for (g, pe) in paths.iter().enumerate() {
            if !pe.active || g == fp {
                continue;
            }
            let e = pe.eat(virtual_sent[g]);
            if e < best_eat {
                best = g;
                best_eat = e;
            }
        }
        let f = best;
        let q = 1.0 - paths[f].loss;
        let mut v: Vec<(usize, usize)> = Vec::new();
        let mut s = 0;
        for (i, b) in blocks.iter_mut().enumerate() {
            if s >= per_packet {
                break;
            }
            let mut vi = 0;
            while s < per_packet && b.failure() >= delta_hat {
                b.add(q);
                vi += 1;
                s += 1;
            }
            if vi > 0 {
                v.push((i, vi));
            }
        }
        if f == fp || v.is_empty() {
            return if f == fp { v } else { Vec::new() };
        }
        virtual_sent[f] += 1;
    }
    Vec::new()
}

/// The closed-form allocation (virtual packets counted per path, filled in bulk) gives the
/// same packet as the packet-by-packet Algorithm 1 on 2 000 random cases with a common loss
/// rate (0, 1/4 or 1/2: exact in the 1/4096 quantisation), 2-8 paths, partly sent blocks.
#[test]
fn closed_form_allocation_matches_algorithm1_packet_by_packet() {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut rnd = |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let mut checked_nonempty = 0;
    for _ in 0..2000 {
        let loss = [0.0, 0.25, 0.5][rnd(3) as usize];
        let np = 2 + rnd(7) as usize;
        let paths: Vec<PathEstimate> = (0..np)
            .map(|_| PathEstimate {
                active: rnd(8) != 0,
                loss,
                edt: 0.005 + rnd(300) as f64 / 1000.0,
                rt: 0.01 + rnd(600) as f64 / 1000.0,
                tau: rnd(100) as f64 / 1000.0,
                space: rnd(20),
                cwnd: 1 + rnd(60),
            })
            .collect();
        let nb = 1 + rnd(12) as usize;
        let blocks: Vec<Arrivals> = (0..nb)
            .map(|_| {
                let mut a = Arrivals::new(1 + rnd(24) as usize);
                if rnd(2) == 0 {
                    a.add_many(rnd(30), 1.0 - loss);
                }
                a
            })
            .collect();
        let fp = rnd(np as u64) as usize;
        let pp = 1 + rnd(3) as usize;
        let want = allocate_reference(fp, &paths, &mut blocks.clone(), pp, 0.05);
        let got = allocate_packet(fp, &paths, &blocks, pp, 0.05, true);
        assert_eq!(got, want, "fp {fp}, paths {paths:?}, pp {pp}");
        if !got.is_empty() {
            checked_nonempty += 1;
        }
    }
    assert!(
        checked_nonempty > 200,
        "too few cases with a packet: {checked_nonempty}"
    );
}
