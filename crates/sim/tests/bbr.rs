//! BBR (`bbr`, `bbr-coupled`) against the targets of issue 14, item 2 (the numbers and the
//! design: docs/experiments/bbr.md).
//!
//! Target 1: coded schemes over BBR reach ≥ 80 % of the capacity Σ C_i·(1 − p_i) on paths
//! with 1–5 % random loss and ≥ 60 % at 30 %, single path and multipath. The capacity counts
//! every byte on the wire (headers included), so these bounds are the as stated.
//! ARQ schemes over BBR are reported beside, not bounded (the issue asks them reported): they
//! run only when `BBR_ARQ_TABLE=1` is set, because they asserted nothing and were half of this
//! binary's run time (issue 9, fresh-clone test time).
//!
//! Target 2 (share ratio ≤ 1.5 against one CUBIC and one NewReno at a drop-tail bottleneck
//! of ½, 1 and 4 BDP) is asserted by `share_ratio_against_cubic_and_new_reno`; RFC 6356
//! goals 1–3 for `bbr-coupled` are in `cc_goals.rs` beside LIA/OLIA/BALIA.
//!
//! `BBR_ARQ_TABLE=1 cargo test -p tributary-sim --release --test integration -- --nocapture bbr::`
//! prints the tables with the ARQ columns.

use crate::common;
use common::*;
use tributary_proto::scheme::SchemeConfig;
use tributary_sim::*;

const SECS: u64 = 30;
const SEED: u64 = 14;

fn scheme(name: &str) -> SchemeConfig {
    SchemeConfig::named(name).unwrap()
}

/// Goodput over capacity on one 10 Mbit/s, 50 ms path (one-BDP queue) with loss `p`.
fn single(scheme_name: &str, cc_name: &str, p: f64) -> f64 {
    let links = vec![link("l", 10_000_000, 25, 43, p)];
    let f = flow(
        "f",
        vec![vec![0]],
        conn(scheme(scheme_name), cc(cc_name), 2 << 20),
        FlowKind::Multipath,
    );
    // Mean over MULTI_SEEDS seeds, as in [`multi`]: one seed's outcome is not representative
    // (seed 14 alone gave 0.738 at 30 % on 2026-11-23 where five CLI seeds averaged
    // 0.52 ± 0.28).
    mean_goodput(&links, &f) / (10.0 * (1.0 - p))
}

/// Goodput over capacity on a Wi-Fi-like (20 Mbit/s, 20 ms RTT) plus a cellular-like
/// (10 Mbit/s, 80 ms RTT) path, both with loss `p`, one-BDP queues, 4 MiB receive buffer.
fn multi(scheme_name: &str, cc_name: &str, p: f64) -> f64 {
    let links = vec![
        link("wifi", 20_000_000, 10, 35, p),
        link("cell", 10_000_000, 40, 70, p),
    ];
    let f = flow(
        "f",
        vec![vec![0], vec![1]],
        conn(scheme(scheme_name), cc(cc_name), 4 << 20),
        FlowKind::Multipath,
    );
    // Mean over MULTI_SEEDS seeds: fmtcp over uncoupled BBR landed in one of a few discrete
    // outcomes per seed (at 30 % loss about 9, 12 or 15 Mbit/s), so one seed is not enough.
    mean_goodput(&links, &f) / (30.0 * (1.0 - p))
}

/// Seeds averaged by [`single`] and [`multi`].
const MULTI_SEEDS: u64 = 4;

/// Mean goodput (Mbit/s) of flow `f` alone on `links` over seeds `SEED..SEED + MULTI_SEEDS`.
fn mean_goodput(links: &[LinkConfig], f: &FlowConfig) -> f64 {
    let total: f64 = (SEED..SEED + MULTI_SEEDS)
        .map(|seed| {
            let r = run(sim(links.to_vec(), vec![f.clone()], SECS, seed)).unwrap();
            r.flows[0].goodput_mbps
        })
        .sum();
    total / MULTI_SEEDS as f64
}

/// The bound for loss rate `p`.
fn bound(p: f64) -> f64 {
    if p >= 0.3 {
        0.6
    } else {
        0.8
    }
}

/// Asserts the bound. (Until 2026-11-26 five cases — single 1 % and 30 %, multi bbr
/// 5 % and 30 %, multi bbr-coupled 5 % — missed it and were held to labelled regression
/// snapshots instead; all five met it once a BBR window bounded at 4 MSS could grow back
/// (docs/experiments/bbr.md, "A window frozen at the floor").)
fn check(kind: &str, cc: &str, p: f64, got: f64) {
    assert!(
        got >= bound(p),
        "{kind} fmtcp over {cc} at {p}: {got:.3} < {}",
        bound(p)
    );
}

const LOSSES: [f64; 3] = [0.01, 0.05, 0.3];

/// Goodput/capacity of the ARQ `scheme_name` by `measure`, or NaN (printed as "NaN": not run)
/// unless `BBR_ARQ_TABLE=1`: the ARQ columns are reported in docs/experiments/bbr.md, never
/// asserted.
fn arq_reference(measure: impl FnOnce() -> f64) -> f64 {
    if std::env::var("BBR_ARQ_TABLE").is_ok_and(|v| v == "1") {
        measure()
    } else {
        f64::NAN
    }
}

#[test]
fn coded_single_path_over_bbr_reaches_the_capacity_targets() {
    let got: Vec<_> = std::thread::scope(|s| {
        let hs: Vec<_> = LOSSES
            .iter()
            .map(|&p| {
                s.spawn(move || {
                    let arq = arq_reference(|| single("tcp", "bbr", p));
                    (p, single("fmtcp", "bbr", p), arq)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    println!("| loss | fmtcp/bbr | tcp/bbr (ARQ, reported; NaN = not run, set BBR_ARQ_TABLE=1) |");
    for (p, c, a) in &got {
        println!("| {:.0} % | {c:.3} | {a:.3} |", p * 100.0);
    }
    for (p, c, _) in got {
        check("single", "bbr", p, c);
    }
}

#[test]
fn coded_multipath_over_bbr_reaches_the_capacity_targets() {
    let cases: Vec<(&str, f64)> = ["bbr", "bbr-coupled"]
        .iter()
        .flat_map(|&c| LOSSES.iter().map(move |&p| (c, p)))
        .collect();
    let got: Vec<_> = std::thread::scope(|s| {
        let hs: Vec<_> = cases
            .iter()
            .map(|&(c, p)| {
                s.spawn(move || {
                    let arq = arq_reference(|| multi("mptcp", c, p));
                    (c, p, multi("fmtcp", c, p), arq)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    println!("| cc | loss | fmtcp | mptcp (ARQ, reported; NaN = not run, set BBR_ARQ_TABLE=1) |");
    for (c, p, f, m) in &got {
        println!("| {c} | {:.0} % | {f:.3} | {m:.3} |", p * 100.0);
    }
    for (c, p, f, _) in got {
        check("multi", c, p, f);
    }
}

/// Target 2: one BBR flow (`tcp` over `bbr`) against one `other` flow at a 10 Mbit/s,
/// 40 ms dumbbell bottleneck with a drop-tail queue of `bdps` BDP (35 packets per BDP),
/// 60 s, the competitor starting 100 ms later. Returns BBR goodput / competitor goodput.
fn share(other: &str, bdps: f64, seed: u64) -> f64 {
    let q = ((35.0 * bdps) as u64).max(2);
    let links = vec![
        link("acc1", 100_000_000, 1, 1000, 0.0),
        link("acc2", 100_000_000, 1, 1000, 0.0),
        link("bottleneck", 10_000_000, 19, q, 0.0),
    ];
    let flows = vec![
        flow(
            "bbr",
            vec![vec![0, 2]],
            conn(scheme("tcp"), cc("bbr"), 8 << 20),
            FlowKind::Multipath,
        ),
        FlowConfig {
            start: tributary_proto::time::Duration::from_millis(100 + 37 * seed),
            start_jitter: tributary_proto::time::Duration::ZERO,
            ..flow(
                "other",
                vec![vec![1, 2]],
                conn(scheme("tcp"), cc(other), 8 << 20),
                FlowKind::Multipath,
            )
        },
    ];
    let r = run(sim(links, flows, 60, seed)).unwrap();
    r.flows[0].goodput_mbps / r.flows[1].goodput_mbps.max(1e-9)
}

/// The target: share ratio ≤ 1.5 at a buffer of 1 BDP and above (asserted at ½ BDP
/// too, which meets it).
#[test]
fn share_ratio_against_cubic_and_new_reno() {
    let cases: Vec<(&str, f64)> = ["cubic", "new-reno"]
        .iter()
        .flat_map(|&o| [0.5, 1.0, 4.0].map(move |b| (o, b)))
        .collect();
    let got: Vec<_> = std::thread::scope(|s| {
        let hs: Vec<_> = cases
            .iter()
            .map(|&(o, b)| s.spawn(move || (o, b, (share(o, b, 1) + share(o, b, 2)) / 2.0)))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    println!("| competitor | buffer (BDP) | BBR / competitor goodput |");
    for (o, b, r) in &got {
        println!("| {o} | {b} | {r:.3} |");
    }
    for (o, b, r) in got {
        // The target: at most 1.5 × the competitor at 1 BDP and above. Since the
        // BBRv3 ProbeBW phases (2026-11-26) ½ BDP meets it too, so it is asserted there as
        // well (it was a labelled regression snapshot before: 2.87 vs CUBIC, 3.05 vs
        // NewReno; docs/experiments/bbr.md).
        assert!(r <= 1.5, "{o} {b} BDP: ratio {r:.3} > 1.5");
    }
}
