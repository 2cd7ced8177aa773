//! `fmtcp` in the simulator (which checks every delivered byte against those written
//! on every run): exact delivery over clean and faulty paths, the head-of-line case against
//! `mptcp`, coding overhead, and the allocation switch. Paths as the FMTCP paper's §VI:
//! subflow 1 100 ms one-way, 0.1 % loss; 10 Mbit/s; LIA.

use crate::common;
use common::*;
use tributary_proto::scheme::fmtcp::Code;
use tributary_proto::scheme::{CodingStats, FmtcpConfig, SchemeConfig};
use tributary_proto::time::Duration;
use tributary_sim::*;

fn fmtcp() -> SchemeConfig {
    SchemeConfig::named("fmtcp").unwrap()
}

fn fmtcp_greedy() -> SchemeConfig {
    SchemeConfig::of(
        "fmtcp",
        &FmtcpConfig {
            allocation: false,
            ..FmtcpConfig::default()
        },
    )
    .unwrap()
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
        conn(scheme, cc("lia"), buffer),
        FlowKind::Multipath,
    );
    if let Some(b) = bytes {
        f.app = file(b);
    }
    let cfg = sim(links, vec![f], secs, seed);
    run(cfg).unwrap().flows.remove(0)
}

/// Mean over seeds 1..=n of `f(seed)`.
fn mean(n: u64, f: impl Fn(u64) -> f64) -> f64 {
    (1..=n).map(&f).sum::<f64>() / n as f64
}

/// RaptorQ on seeds 1 and 2, LT on seed 3.
#[test]
fn delivers_exactly_over_clean_lossy_and_faulty_paths() {
    let faulty = || {
        let mut l = two_paths(0.02, 100);
        for link in &mut l {
            link.forward.reorder_prob = 0.05;
            link.forward.reorder_delay = Duration::from_millis(30);
            link.forward.duplicate_prob = 0.02;
            link.forward.corrupt_prob = 0.01;
        }
        l
    };
    let cases: Vec<(&str, Vec<LinkConfig>)> = vec![
        (
            "clean",
            vec![
                link("a", 10_000_000, 20, 100, 0.0),
                link("b", 10_000_000, 40, 100, 0.0),
            ],
        ),
        ("lossy 1 % / 10 %", two_paths(0.10, 100)),
        ("lossy 50 %", two_paths(0.50, 100)),
        ("reorder+dup+corrupt", faulty()),
    ];
    // 3 MB + 1234 bytes: 91 full blocks and a short one.
    let bytes = 3_000_000 + 1234;
    let lt = SchemeConfig::of(
        "fmtcp",
        &FmtcpConfig {
            code: Code::Lt,
            ..FmtcpConfig::default()
        },
    )
    .unwrap();
    for (name, links) in cases {
        for (scheme, seed) in [(fmtcp(), 1), (fmtcp(), 2), (lt.clone(), 3)] {
            // `run` fails if a single delivered byte differs from what was written.
            let r = run_flow(links.clone(), scheme, 128 << 10, 300, seed, Some(bytes));
            assert_eq!(r.bytes_delivered, bytes, "{name} seed {seed}");
            assert!(r.completion_s.is_some(), "{name} seed {seed}: unfinished");
        }
    }
}

/// Applications that write less than a block and then wait for an answer must complete with
/// fmtcp as with any reliable scheme: `web` (300-byte requests written by the receiving end,
/// objects whose tails are shorter than a block) and `request-response`, on the §VI paths and
/// on one lossless path. Regression: fmtcp waited for a full 32 KiB block before sending
/// anything, so the first request never left and `web` never completed in the comparison
/// suite (docs/compare.md before 2026-11-23).
#[test]
fn fmtcp_completes_applications_that_write_less_than_a_block() {
    let cases = vec![
        ("§VI paths", two_paths(0.01, 100)),
        ("one path", vec![link("a", 10_000_000, 20, 100, 0.0)]),
    ];
    assert_short_writes_complete(fmtcp(), cases);
}

/// The head-of-line case of §III: a small shared buffer and a lossy or slow subflow 2.
/// `mptcp` here has reinjection and penalisation (Linux), which already soften the blocking;
/// fmtcp is still clearly ahead (the paper's claim: ratio > 1). Regression snapshot: means over
/// 3 seeds of 100 s; measured ratios 1.34 and 1.42 at 64 KiB, 1.20 and 1.20 at 128 KiB (seeds
/// 1-3), asserted with about 10 % of margin. The first case is now 1.18 (fmtcp 1.725, mptcp
/// 1.458 Mbit/s), so its snapshot is 1.10. What moved it (bisected 2026-11-23, this case,
/// seeds 1-3; docs/experiments/fmtcp.md "The head-of-line snapshot"): 1.31 at 5e28dee; mptcp
/// +7.5 % over e9f2bdc (scheme interface) and the lab-scale/netsec merges -> 1.23; then
/// ebf13bd's RFC 7661 rule (a window that did not limit sending may not grow), alone: fmtcp
/// 1.808 -> 1.725 with it toggled off/on, mptcp 1.439 -> 1.458 (the ack-delay change: no
/// effect). With the 64 KiB buffer flow control, not cwnd, limits sending, so sub1's window
/// no longer inflates; Algorithm 1 (Eq. 10) then finds sub1 full more often and gives more
/// symbols to the lossy sub2 (seed 1: 1259 packets there instead of 1033). Rerun on
/// `9045516` (2026-11-27, after the timer, probe, full-block and failover fixes): 1.19, 1.26,
/// 1.15, 1.13 for the four cases below; on `88a5e36` (silly-window avoidance: mptcp no
/// longer sends the 64 KiB window's 1,136-byte remnant alone) 1.19, 1.29, 1.15, 1.14, the
/// same on `47fa44d` (repeated timeouts hold ssthresh). The thresholds are unchanged.
#[test]
fn fmtcp_beats_mptcp_in_the_head_of_line_case() {
    for (buffer, loss2, delay2, min_ratio) in [
        (64 << 10, 0.05, 100, 1.10),
        (64 << 10, 0.20, 100, 1.20),
        (128 << 10, 0.20, 100, 1.10),
        (128 << 10, 0.01, 500, 1.10),
    ] {
        let g = |s: SchemeConfig| {
            mean(3, |seed| {
                run_flow(two_paths(loss2, delay2), s.clone(), buffer, 100, seed, None).goodput_mbps
            })
        };
        let (f, m) = (g(fmtcp()), g(mptcp()));
        eprintln!("buffer {buffer} loss {loss2} delay {delay2}: fmtcp {f:.3} mptcp {m:.3}");
        assert!(
            f >= min_ratio * m,
            "buffer {buffer}, loss {loss2}, delay {delay2}: fmtcp {f:.3} vs mptcp {m:.3} Mbit/s"
        );
    }
}

/// Coding overhead (symbols sent / source symbols − 1) at 1 % loss on subflow 2 (Table II
/// case 5), on a finite transfer so that nothing is left in flight: one symbol per packet,
/// 24 source symbols per 32 KiB block, so overhead = data packets / (24 · blocks) − 1. The
/// packet count also holds the few packets that carry only STREAM_END, so this is an upper
/// bound. Target ≤ 5 % (issue 4).
#[test]
fn coding_overhead_at_one_percent_loss_is_below_five_percent() {
    let bytes: u64 = 200 * 32768;
    let oh = mean(3, |seed| {
        let r = run_flow(
            two_paths(0.01, 100),
            fmtcp(),
            128 << 10,
            600,
            seed,
            Some(bytes),
        );
        assert_eq!(r.bytes_delivered, bytes);
        let sent: u64 = r.paths.iter().map(|p| p.packets_sent).sum();
        sent as f64 / (24.0 * 200.0) - 1.0
    });
    eprintln!("overhead at 1 %: {:.2} %", oh * 100.0);
    assert!(oh <= 0.05, "overhead {:.2} %", oh * 100.0);
    assert!(oh > 0.0, "losses must cost something");
}

/// Fig. 14: with a slow subflow 2 (500 ms, case 8) Algorithm 1 keeps the urgent symbols off
/// it, so blocks complete sooner and goodput is higher than with the greedy allocation.
#[test]
fn allocation_switch_changes_behaviour_with_a_slow_path() {
    let m = |s: SchemeConfig| {
        let rs: Vec<FlowResult> = (1..=3)
            .map(|seed| run_flow(two_paths(0.01, 500), s.clone(), 128 << 10, 100, seed, None))
            .collect();
        let g = rs.iter().map(|r| r.goodput_mbps).sum::<f64>() / 3.0;
        let d = rs
            .iter()
            .map(|r| r.block_delay.as_ref().unwrap().mean_ms)
            .sum::<f64>()
            / 3.0;
        (g, d)
    };
    let (ga, da) = m(fmtcp());
    let (gg, dg) = m(fmtcp_greedy());
    eprintln!("allocation: {ga:.3} Mbit/s {da:.0} ms; greedy: {gg:.3} Mbit/s {dg:.0} ms");
    assert!(
        da < 0.85 * dg,
        "block delay {da:.0} ms vs greedy {dg:.0} ms"
    );
    assert!(ga > 1.1 * gg, "goodput {ga:.3} vs greedy {gg:.3} Mbit/s");
}

/// The scheme's own counters reach `FlowResult::scheme` (summed over its halves): on a finite
/// transfer every block is opened and decoded and the symbol counts agree with the packet
/// counts (one symbol per packet); the generic overhead is what the payload bytes sent give,
/// and bounded below by the symbol count (every symbol carries T ≥ B/k bytes).
#[test]
fn scheme_counters_are_exported() {
    let blocks: u64 = 50;
    let r = run_flow(
        two_paths(0.05, 100),
        fmtcp(),
        128 << 10,
        300,
        1,
        Some(blocks * 32768),
    );
    assert_eq!(r.scheme.name, "fmtcp");
    let tx: CodingStats = serde_json::from_value(r.scheme.sender.clone()).unwrap();
    let rx: CodingStats = serde_json::from_value(r.scheme.receiver.clone()).unwrap();
    assert_eq!(tx.blocks, blocks);
    assert_eq!(rx.blocks_decoded, blocks);
    assert_eq!(tx.source_symbols, 24 * blocks);
    let sent: u64 = r.paths.iter().map(|p| p.packets_sent).sum();
    assert!(tx.symbols_sent > tx.source_symbols && tx.symbols_sent <= sent);
    assert!(tx.replacement_symbols > 0, "5 % loss needs replacements");
    let payload: u64 = r.paths.iter().map(|p| p.payload_bytes_sent).sum();
    assert_eq!(
        payload,
        tx.symbols_sent * 1366,
        "one 1366-byte symbol per packet"
    );
    let oh = r.overhead.expect("bytes were delivered");
    assert!((oh - (payload as f64 / r.bytes_delivered as f64 - 1.0)).abs() < 1e-12);
    assert!(oh >= tx.symbols_sent as f64 / tx.source_symbols as f64 - 1.0);
    let m = run_flow(two_paths(0.05, 100), mptcp(), 128 << 10, 20, 1, None);
    assert_eq!(m.scheme.name, "mptcp");
    assert!(m.scheme.sender.get("reinjected_bytes").is_some());
    assert!(m.overhead.unwrap() >= 0.0);
}

/// `full_symbols` (module docs, "Full packets"). Requirement: every packet carries as many
/// stream bytes as an `mptcp` DATA packet (the MSS, 1400 B) and no block is padded, while the
/// transfer stays exact (the simulator checks every byte). With MSS 1400 and 32 KiB blocks:
/// T = 1400, k = ⌊32768/1400⌋ = 23, blocks of 32 200 B. A finite transfer of whole blocks over
/// lossy paths: each packet's payload is one 1400-byte symbol and every block is decoded.
#[test]
fn full_symbols_fill_packets_like_mptcp() {
    let cfg = FmtcpConfig {
        full_symbols: true,
        ..FmtcpConfig::default()
    };
    let g = cfg.geometry(1400).unwrap();
    assert_eq!((g.symbol, g.k, g.block), (1400, 23, 32_200));
    let blocks: u64 = 50;
    let r = run_flow(
        two_paths(0.05, 100),
        SchemeConfig::of("fmtcp", &cfg).unwrap(),
        128 << 10,
        300,
        1,
        Some(blocks * 32_200),
    );
    assert_eq!(r.bytes_delivered, blocks * 32_200);
    let tx: CodingStats = serde_json::from_value(r.scheme.sender.clone()).unwrap();
    let rx: CodingStats = serde_json::from_value(r.scheme.receiver.clone()).unwrap();
    // Every block opened is decoded; a block may be opened short when the sender is idle
    // before the application wrote a whole block (module docs, "Short blocks"), so the
    // source symbols are whole symbols of 1400 bytes: at least total/1400 and, with less than
    // one symbol of padding per block, fewer than total/1400 + blocks.
    assert_eq!(tx.blocks, rx.blocks_decoded);
    assert!(tx.blocks >= blocks);
    assert!(tx.source_symbols >= blocks * 23);
    assert!(tx.source_symbols < blocks * 23 + tx.blocks);
    let payload: u64 = r.paths.iter().map(|p| p.payload_bytes_sent).sum();
    assert_eq!(
        payload,
        tx.symbols_sent * 1400,
        "one 1400-byte symbol per packet"
    );
}

/// Fig. 6's record: lost packets per finished block. Lossless paths put every block in bin
/// 0; 10 % loss on subflow 2 fills bins 1+. Every block the sender saw finished is counted:
/// all but the last few, whose acknowledgement is still in flight when the run stops at the
/// flow's completion.
#[test]
fn lost_per_block_histogram() {
    let bytes = 3_000_000 + 1234;
    let clean = vec![
        link("a", 10_000_000, 20, 1000, 0.0),
        link("b", 10_000_000, 40, 1000, 0.0),
    ];
    let r = run_flow(clean, fmtcp(), 128 << 10, 300, 1, Some(bytes));
    assert!(r.completion_s.is_some());
    let c: CodingStats = serde_json::from_value(r.scheme.sender.clone()).unwrap();
    assert_eq!(c.lost_per_block.len(), 1, "{c:?}");
    assert!(c.lost_per_block[0] <= c.blocks && c.lost_per_block[0] + 4 >= c.blocks);

    let r = run_flow(
        two_paths(0.10, 100),
        fmtcp(),
        128 << 10,
        300,
        1,
        Some(bytes),
    );
    assert!(r.completion_s.is_some());
    let c: CodingStats = serde_json::from_value(r.scheme.sender.clone()).unwrap();
    let total: u64 = c.lost_per_block.iter().sum();
    assert!(total <= c.blocks && total + 4 >= c.blocks, "{c:?}");
    assert!(c.lost_per_block.iter().skip(1).sum::<u64>() > 0, "{c:?}");
}

/// The coding overhead of a flow cut off by the end of the run (issue 14: it used to be
/// negative, down to −10 %, because the source symbols of blocks opened inside a large
/// receive window but not yet sent were counted). Now it covers the finished blocks only,
/// for which at least k symbols were sent each, so it is never negative; the engine's generic
/// `overhead` (payload sent / delivered − 1) is never negative either.
#[test]
fn coding_overhead_of_an_unfinished_flow_is_not_negative() {
    let r = run_flow(two_paths(0.01, 100), fmtcp(), 4 << 20, 5, 1, None);
    assert!(r.completion_s.is_none(), "the bulk flow must be cut off");
    let s: CodingStats = serde_json::from_value(r.scheme.sender.clone()).unwrap();
    let old = s.symbols_sent as f64 / s.source_symbols as f64 - 1.0;
    eprintln!(
        "old {old:.3}, new {:.3}, generic {:?}",
        s.overhead(),
        r.overhead
    );
    assert!(old < 0.0, "the case must show the old failure ({old})");
    assert!(s.finished_source_symbols > 0);
    assert!(s.overhead() >= 0.0, "{}", s.overhead());
    assert!(r.overhead.unwrap() >= 0.0);
}

/// The coding overhead with live video whose late frames are abandoned (issue 14: "a
/// coding-overhead metric that means what it says; never negative"). A 3.4 Mbit/s video over
/// two 4 Mbit/s paths that both go down for 1.5 s: the frames of the outage are abandoned,
/// many of them before all their symbols were sent. Such blocks finish without being
/// decoded; counted with the finished blocks they made the figure negative (their symbols
/// sent fall short of their source symbols). Now they are counted apart, and the overhead
/// of the decoded blocks is not negative, with blocks cut at frame boundaries (the default)
/// and with blocks that straddle frames (`cut_at_messages = false`: partly abandoned
/// blocks).
#[test]
fn coding_overhead_with_abandoned_video_frames_is_not_negative() {
    for cut in [true, false] {
        let scheme = SchemeConfig::of(
            "fmtcp",
            &FmtcpConfig {
                cut_at_messages: cut,
                ..FmtcpConfig::default()
            },
        )
        .unwrap();
        let mut f = flow(
            "v",
            vec![vec![0], vec![1]],
            conn(scheme, cc("lia"), 1 << 20),
            FlowKind::Multipath,
        );
        f.app = AppConfig::of("video", &serde_json::json!({ "duration": "10s" })).unwrap();
        let links = vec![
            link("a", 4_000_000, 10, 50, 0.01),
            link("b", 4_000_000, 30, 50, 0.0),
        ];
        let mut cfg = sim(links, vec![f], 60, 1);
        for (at, up) in [(4000, false), (5500, true)] {
            for l in 0..2 {
                cfg.changes.push(TimedChange {
                    at: Duration::from_millis(at),
                    link: l,
                    direction: Direction::Both,
                    change: LinkChange {
                        up: Some(up),
                        ..LinkChange::default()
                    },
                });
            }
        }
        let r = run(cfg).unwrap().flows.remove(0);
        let s: CodingStats = serde_json::from_value(r.scheme.sender.clone()).unwrap();
        let rx = &r.app.receiver;
        assert!(rx["abandoned"].as_u64().unwrap() > 10, "cut {cut}: {rx}");
        assert!(rx["on_time"].as_u64().unwrap() > 150, "cut {cut}: {rx}");
        assert!(s.abandoned_blocks > 0, "cut {cut}: {s:?}");
        // What the old counters gave: abandoned blocks counted as finished.
        let lumped = (s.finished_symbols_sent + s.abandoned_symbols_sent) as f64
            / (s.finished_source_symbols + s.abandoned_source_symbols) as f64
            - 1.0;
        eprintln!(
            "cut {cut}: {s:?} lumped {lumped:.3} overhead {:.3} {rx}",
            s.overhead()
        );
        assert!(
            lumped < 0.0,
            "cut {cut}: the case must show the old failure ({lumped})"
        );
        assert!(s.overhead() >= 0.0, "cut {cut}: {}", s.overhead());
    }
}

/// Adaptive δ̂ (module docs of `fmtcp`, "Adaptive δ̂"). Requirements: (1) where the
/// flow-control window never blocks (4 MiB buffer, a bulk flow limited by its congestion
/// windows) a decoding failure costs no goodput, so Eq. 4 must append nothing: δ̂ =
/// `delta_max` = 0.9, and at k = 23 a block with its 23 symbols in flight fails with
/// probability 1 − (1 − p)^23 < 0.9 for any loss estimate p below 9.5 %, so not one appended
/// symbol, and less overhead than with the paper's δ̂, which appends some. The paths lose
/// 0.1 % and 2 % at random and their queues (5000 packets) never overflow: a slow-start
/// overshoot into a short queue drops dozens of packets at once and lifts the estimate
/// (EWMA over ~100 packets) above 9.5 %, where appending is right; (2) where the window
/// blocks (64 KiB, two blocks) Eq. 4's redundancy is kept: appended symbols are sent.
#[test]
fn adaptive_delta_appends_only_where_the_window_blocks() {
    let paper = FmtcpConfig {
        full_symbols: true,
        ..FmtcpConfig::default()
    };
    let adaptive = FmtcpConfig {
        adaptive_delta: true,
        ..paper
    };
    let go = |cfg: &FmtcpConfig, buffer: usize| {
        let links = vec![
            link("sub1", 10_000_000, 100, 5000, 0.001),
            link("sub2", 10_000_000, 100, 5000, 0.02),
        ];
        let r = run_flow(
            links,
            SchemeConfig::of("fmtcp", cfg).unwrap(),
            buffer,
            30,
            1,
            None,
        );
        let tx: CodingStats = serde_json::from_value(r.scheme.sender.clone()).unwrap();
        (tx, r.overhead.unwrap())
    };
    let (tx_p, oh_p) = go(&paper, 4 << 20);
    let (tx_a, oh_a) = go(&adaptive, 4 << 20);
    eprintln!(
        "4 MiB: appended {} / {} (paper δ̂) vs {} / {} (adaptive); overhead {:.2} % vs {:.2} %",
        tx_p.appended_symbols,
        tx_p.symbols_sent,
        tx_a.appended_symbols,
        tx_a.symbols_sent,
        oh_p * 100.0,
        oh_a * 100.0
    );
    assert!(tx_p.appended_symbols > 0, "the paper's δ̂ appends symbols");
    assert_eq!(
        tx_a.appended_symbols, 0,
        "no redundancy where the window never blocks"
    );
    assert!(oh_a < oh_p);
    let (tx_s, _) = go(&adaptive, 64 << 10);
    eprintln!(
        "64 KiB: appended {} / {} (adaptive)",
        tx_s.appended_symbols, tx_s.symbols_sent
    );
    assert!(
        tx_s.appended_symbols > 0,
        "Eq. 4 kept where the window blocks"
    );
}

/// A bulk transfer keeps the paper's block size (module docs, "Short blocks"): a short block
/// is for an application that wrote less than a block and waits, never for a bulk writer
/// whose last write the connection's room cut short (it writes the rest as soon as ACKs open
/// room). FMTCP Table II case 1 (§VI paths, 2 % loss on subflow 2, 128 KiB buffer), 60 s,
/// seeds 1-2: no short block. Before `SendCtx::writer_waiting` an ACK that opened room in
/// the middle of a pump made the sender, finding every open block complete, send the bytes
/// written so far as a short block (2 per 60-s run here; up to 49 per 200-s run in Table II),
/// shifting every later block off the 32 KiB grid the block-delay metric measures.
#[test]
fn a_bulk_writer_gets_only_full_blocks() {
    for seed in 1..=2 {
        let r = run_flow(two_paths(0.02, 100), fmtcp(), 128 << 10, 60, seed, None);
        let tx: CodingStats = serde_json::from_value(r.scheme.sender.clone()).unwrap();
        assert!(tx.blocks > 100, "seed {seed}: {} blocks", tx.blocks);
        assert_eq!(tx.short_blocks, 0, "seed {seed}: {tx:?}");
    }
}
