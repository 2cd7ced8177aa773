//! Validation of the engine against models and the properties the papers start from.

use crate::common;
use common::*;
use tributary_proto::scheme::SchemeConfig;
use tributary_proto::time::Duration;
use tributary_sim::*;

const MSS: f64 = 1400.0;

/// Padhye et al., "Modeling TCP Throughput", SIGCOMM 1998, Eq. 30 (the full model):
/// packets per second for loss p, round-trip time `rtt`, timeout `t0`, `b` packets per
/// window increment, and a window limit `wmax` (packets).
fn pftk(p: f64, rtt: f64, t0: f64, b: f64, wmax: f64) -> f64 {
    let td = rtt * (2.0 * b * p / 3.0).sqrt();
    let to = t0 * (3.0 * (3.0 * b * p / 8.0).sqrt()).min(1.0) * p * (1.0 + 32.0 * p * p);
    (wmax / rtt).min(1.0 / (td + to))
}

/// One NewReno flow on a 1 Gbit/s link (far above the loss-limited rate, so the link never
/// queues) with Bernoulli loss `p` and round-trip propagation `rtt_ms`.
fn tcp_run(p: f64, rtt_ms: u64, secs: u64, seed: u64) -> SimResult {
    let l = link("l", 1_000_000_000, rtt_ms / 2, 100_000, p);
    let c = conn(tcp(), cc("new-reno"), 64 << 20);
    let cfg = sim(
        vec![l],
        vec![flow("f", vec![vec![0]], c, FlowKind::Multipath)],
        secs,
        seed,
    );
    run(cfg).unwrap()
}

/// Model check over loss 0.1–5 % and RTT 20–400 ms, with b = 1 (byte counting grows the
/// window one MSS per RTT whatever the ACK frequency), T0 = max(200 ms, RTT + 25 ms) (the RTO
/// of a path without queueing in the default `linux` profile: SRTT + 4·RTTVAR + max_ack_delay
/// with RTTVAR → 0, RFC 9002 §6.2.1, floored at the minimum RTO) and no window limit (64 MiB
/// buffer).
/// Each point runs for about 300 loss events, mean of 2 seeds; goodput is compared with the
/// model's rate × MSS × (1 − p).
///
/// Two checks (see docs/validation.md for the table):
/// - everywhere, against PFTK's triple-duplicate approximation (their Eq. 20, the
///   square-root law): our recovery (SACK ranges, lost retransmissions detected by packet
///   threshold as in QUIC) rarely falls back to a timeout, so this is the regime it lives in;
/// - against the full model (Eq. 30) wherever its timeout term is under 10 % of the time per
///   packet, i.e. wherever Reno's timeouts — which our sender avoids — do not dominate the
///   model. Elsewhere the full model underestimates us; the docs report by how much, and the
///   RTO share of loss events that explains it.
#[test]
fn tcp_matches_padhye_model() {
    let mut failures = Vec::new();
    let mut report = String::new();
    for &p in &[0.001, 0.005, 0.01, 0.02, 0.05] {
        for &rtt_ms in &[20u64, 50, 100, 200, 400] {
            let rtt = rtt_ms as f64 / 1e3;
            // The `linux` profile's timer (the default of `conn`): SRTT + max(G, 4·RTTVAR) +
            // max_ack_delay (25 ms), floored at min_rto (200 ms); RTTVAR → 0 without queueing.
            let t0 = (rtt + 0.025).max(0.2);
            let b = 1.0;
            let full_pps = pftk(p, rtt, t0, b, f64::INFINITY);
            let td_pps = 1.0 / (rtt * (2.0 * b * p / 3.0).sqrt());
            let to_share = 1.0 - full_pps / td_pps;
            let to_mbps = |pps: f64| pps * MSS * 8.0 * (1.0 - p) / 1e6;
            let secs = ((300.0 / p / full_pps) as u64).clamp(30, 20_000);
            let (mut got, mut rto, mut lost) = (0.0, 0u64, 0u64);
            for seed in 1..=2 {
                let r = tcp_run(p, rtt_ms, secs, seed);
                got += r.flows[0].goodput_mbps / 2.0;
                rto += r.flows[0].paths[0].rto_count;
                lost += r.flows[0].paths[0].packets_lost;
            }
            let err_full = got / to_mbps(full_pps) - 1.0;
            let err_td = got / to_mbps(td_pps) - 1.0;
            report.push_str(&format!(
                "| {:.1} % | {rtt_ms} | {:.3} | {:.3} | {:.3} | {:+.1} % | {:+.1} % | {:.0} % | {:.2} % |\n",
                p * 100.0,
                to_mbps(full_pps),
                to_mbps(td_pps),
                got,
                err_full * 100.0,
                err_td * 100.0,
                to_share * 100.0,
                rto as f64 / lost.max(1) as f64 * 100.0
            ));
            if err_td.abs() > 0.25 {
                failures.push(format!("p={p} rtt={rtt_ms}: {err_td:+.3} vs TD model"));
            }
            if to_share < 0.10 && err_full.abs() > 0.25 {
                failures.push(format!("p={p} rtt={rtt_ms}: {err_full:+.3} vs full model"));
            }
        }
    }
    eprintln!("| loss | RTT ms | PFTK full | PFTK TD | sim | vs full | vs TD | TO share of model | RTOs per loss |\n{report}");
    assert!(failures.is_empty(), "{failures:#?}\n{report}");
}

#[test]
fn tcp_fills_a_clean_link() {
    // 10 Mbit/s, 100 ms RTT, 512 KiB buffer (> BDP + queue): at least 90 % of capacity.
    let cfg = sim(
        vec![link("l", 10_000_000, 50, 100, 0.0)],
        vec![flow(
            "f",
            vec![vec![0]],
            conn(tcp(), cc("new-reno"), 512 << 10),
            FlowKind::Multipath,
        )],
        60,
        1,
    );
    let g = run(cfg).unwrap().flows[0].goodput_mbps;
    assert!(g >= 9.0, "goodput {g} Mbit/s");
}

#[test]
fn mptcp_aggregates_two_clean_paths() {
    for cc in [cc("lia"), cc("new-reno")] {
        let cfg = sim(
            vec![
                link("a", 10_000_000, 50, 100, 0.0),
                link("b", 10_000_000, 50, 100, 0.0),
            ],
            vec![flow(
                "f",
                vec![vec![0], vec![1]],
                conn(mptcp(), cc.clone(), 4 << 20),
                FlowKind::Multipath,
            )],
            60,
            1,
        );
        let g = run(cfg).unwrap().flows[0].goodput_mbps;
        assert!(g >= 18.0, "{cc:?}: goodput {g} Mbit/s, below 90 % of 20");
    }
}

/// The head-of-line problem: 64 KiB buffer, path 1 100 ms RTT 0.1 % loss, path 2 100 ms RTT
/// 5 % loss. MPTCP falls below two independent TCPs and even below TCP on path 1 alone.
#[test]
fn mptcp_head_of_line_blocking_with_small_buffer() {
    let links = || {
        vec![
            link("a", 10_000_000, 50, 100, 0.001),
            link("b", 10_000_000, 50, 100, 0.05),
        ]
    };
    let buf = 64 << 10;
    let g = |scheme: SchemeConfig, kind: FlowKind, paths: Vec<Vec<usize>>| {
        let mut sum = 0.0;
        for seed in 1..=3 {
            let cfg = sim(
                links(),
                vec![flow(
                    "f",
                    paths.clone(),
                    conn(scheme.clone(), cc("lia"), buf),
                    kind,
                )],
                100,
                seed,
            );
            sum += run(cfg).unwrap().flows[0].goodput_mbps;
        }
        sum / 3.0
    };
    let mp = g(mptcp(), FlowKind::Multipath, vec![vec![0], vec![1]]);
    let two_tcp = g(tcp(), FlowKind::PerPath, vec![vec![0], vec![1]]);
    let tcp1 = g(tcp(), FlowKind::Multipath, vec![vec![0]]);
    eprintln!("mptcp {mp:.3}  2-tcp {two_tcp:.3}  tcp(path 1) {tcp1:.3} Mbit/s");
    assert!(
        mp < 0.8 * two_tcp,
        "mptcp {mp} not clearly below 2-TCP {two_tcp}"
    );
    assert!(mp < tcp1, "mptcp {mp} not below single TCP {tcp1}");
    // With a large buffer the problem goes away: MPTCP at least matches TCP on path 1.
    let big = {
        let cfg = sim(
            links(),
            vec![flow(
                "f",
                vec![vec![0], vec![1]],
                conn(mptcp(), cc("lia"), 8 << 20),
                FlowKind::Multipath,
            )],
            100,
            1,
        );
        run(cfg).unwrap().flows[0].goodput_mbps
    };
    assert!(
        big > tcp1 * 0.95,
        "mptcp with 8 MiB buffer {big} vs tcp {tcp1}"
    );
}

#[test]
fn same_seed_same_result_different_seed_different_result() {
    let mk = |seed| {
        let mut l2 = link("b", 8_000_000, 30, 50, 0.02);
        l2.forward.reorder_prob = 0.01;
        l2.forward.reorder_delay = Duration::from_millis(5);
        l2.forward.duplicate_prob = 0.01;
        l2.forward.corrupt_prob = 0.01;
        sim(
            vec![link("a", 10_000_000, 20, 100, 0.01), l2],
            vec![flow(
                "f",
                vec![vec![0], vec![1]],
                conn(mptcp(), cc("lia"), 256 << 10),
                FlowKind::Multipath,
            )],
            30,
            seed,
        )
    };
    let a = run(mk(7)).unwrap();
    let b = run(mk(7)).unwrap();
    assert_eq!(a, b);
    let c = run(mk(8)).unwrap();
    assert_ne!(a.flows[0].bytes_delivered, c.flows[0].bytes_delivered);
}

#[test]
fn faults_are_survived_and_corruption_rejected() {
    let mut l = link("a", 10_000_000, 20, 100, 0.01);
    l.forward.corrupt_prob = 0.02;
    l.forward.duplicate_prob = 0.02;
    l.forward.reorder_prob = 0.02;
    l.forward.reorder_delay = Duration::from_millis(15);
    l.reverse.corrupt_prob = 0.02;
    let mut f = flow(
        "f",
        vec![vec![0]],
        conn(tcp(), cc("new-reno"), 1 << 20),
        FlowKind::Multipath,
    );
    f.app = file(5_000_000);
    let r = run(sim(vec![l], vec![f], 120, 3)).unwrap();
    let fl = &r.flows[0];
    assert_eq!(fl.bytes_delivered, 5_000_000);
    assert!(fl.completion_s.is_some());
    // Corrupted datagrams were rejected by their checksum (the digest check in `run` proves
    // none was delivered); only those still in flight when the transfer ended are missing.
    let corrupted = r.links[0].forward.corrupted + r.links[0].reverse.corrupted;
    assert!(corrupted > 50, "{corrupted}");
    assert!(fl.malformed_dropped <= corrupted);
    assert!(
        fl.malformed_dropped + 5 >= corrupted,
        "{} of {corrupted}",
        fl.malformed_dropped
    );
}

#[test]
fn link_down_and_up_mid_transfer() {
    let mut f = flow(
        "f",
        vec![vec![0], vec![1]],
        conn(mptcp(), cc("lia"), 1 << 20),
        FlowKind::Multipath,
    );
    f.app = file(20_000_000);
    let mut cfg = sim(
        vec![
            link("a", 10_000_000, 20, 100, 0.0),
            link("b", 10_000_000, 20, 100, 0.0),
        ],
        vec![f],
        120,
        1,
    );
    let down = LinkChange {
        up: Some(false),
        ..Default::default()
    };
    let up = LinkChange {
        up: Some(true),
        ..Default::default()
    };
    cfg.changes = vec![
        TimedChange {
            at: Duration::from_secs(2),
            link: 1,
            direction: Direction::Both,
            change: down,
        },
        TimedChange {
            at: Duration::from_secs(5),
            link: 1,
            direction: Direction::Both,
            change: up,
        },
    ];
    let r = run(cfg).unwrap();
    let fl = &r.flows[0];
    assert_eq!(fl.bytes_delivered, 20_000_000);
    let t = fl.completion_s.unwrap();
    // 20 MB over 2×10 Mbit/s takes ≈ 8.3 s; with path b down for 3 s at most ≈ 8.3 + 3 + RTO slack.
    assert!(t > 8.0 && t < 16.0, "completion {t}");
    assert!(r.links[1].forward.down_drops > 0);
}

#[test]
fn loss_surge_changes_goodput_over_time() {
    let mut f = flow(
        "f",
        vec![vec![0]],
        conn(tcp(), cc("new-reno"), 4 << 20),
        FlowKind::Multipath,
    );
    f.app = AppConfig::default();
    let mut cfg = sim(vec![link("a", 10_000_000, 25, 100, 0.0)], vec![f], 60, 1);
    cfg.sample_interval = Some(Duration::from_secs(1));
    cfg.changes = vec![TimedChange {
        at: Duration::from_secs(20),
        link: 0,
        direction: Direction::Forward,
        change: LinkChange {
            loss: Some(LossModel::Bernoulli { p: 0.1 }),
            ..Default::default()
        },
    }];
    let r = run(cfg).unwrap();
    let s = &r.flows[0].series;
    assert_eq!(s.len(), 60);
    let before: f64 = s[10..20].iter().map(|x| x[1]).sum::<f64>() / 10.0;
    let after: f64 = s[30..60].iter().map(|x| x[1]).sum::<f64>() / 30.0;
    assert!(before > 9.0 && after < 2.0, "before {before} after {after}");
}

#[test]
fn shared_bottleneck_is_shared_fairly() {
    // Dumbbell: two TCP flows with private access links share one 10 Mbit/s bottleneck.
    let links = vec![
        link("acc1", 100_000_000, 1, 1000, 0.0),
        link("acc2", 100_000_000, 1, 1000, 0.0),
        link("bottleneck", 10_000_000, 20, 100, 0.0),
    ];
    let c = conn(tcp(), cc("new-reno"), 4 << 20);
    let flows = vec![
        flow("f1", vec![vec![0, 2]], c.clone(), FlowKind::Multipath),
        flow("f2", vec![vec![1, 2]], c, FlowKind::Multipath),
    ];
    let r = run(sim(links, flows, 120, 1)).unwrap();
    let (a, b) = (r.flows[0].goodput_mbps, r.flows[1].goodput_mbps);
    let jain = (a + b).powi(2) / (2.0 * (a * a + b * b));
    assert!(a + b > 9.0, "{a} + {b}");
    assert!(jain > 0.95, "jain {jain}: {a} vs {b}");
}

/// One NewReno `tcp` flow on a 10 Mbit/s, 20 ms link (seed 1), for the configuration checks.
fn one_tcp_flow(secs: u64) -> SimConfig {
    sim(
        vec![link("a", 10_000_000, 20, 100, 0.0)],
        vec![flow(
            "f",
            vec![vec![0]],
            conn(tcp(), cc("new-reno"), 1 << 20),
            FlowKind::Multipath,
        )],
        secs,
        1,
    )
}

#[test]
fn invalid_configurations_are_errors() {
    let ok = || one_tcp_flow(10);
    let mut c = ok();
    c.flows[0].paths = vec![vec![3]];
    assert!(run(c).unwrap_err().to_string().contains("refers to link 3"));
    let mut c = ok();
    c.flows[0].paths = vec![vec![0], vec![0]];
    assert!(run(c)
        .unwrap_err()
        .to_string()
        .contains("`tcp` uses at most 1 path"));
    let mut c = ok();
    c.links[0].forward.loss = LossModel::Bernoulli { p: 1.5 };
    assert!(run(c)
        .unwrap_err()
        .to_string()
        .contains("not a probability"));
    let mut c = ok();
    c.links[0].forward.rate_bps = 0;
    assert!(run(c)
        .unwrap_err()
        .to_string()
        .contains("rate must be positive"));
    let mut c = ok();
    c.flows[0].conn.recv_buffer = 10;
    assert!(run(c).unwrap_err().to_string().contains("recv_buffer"));
}

/// A byte-limited queue below one datagram of a flow crossing it drops every full packet
/// (the packet being serialized counts against the limit), so the flow could deliver
/// nothing: an error, not a silent zero (found by held-out testing: `queue = "100B"` ran
/// and reported 0 Mbit/s). One datagram exactly is accepted.
#[test]
fn a_byte_queue_below_one_datagram_is_an_error() {
    let with_queue = |q: QueueLimit| {
        let mut c = one_tcp_flow(2);
        c.links[0].forward.queue = q;
        c
    };
    let wire = with_queue(QueueLimit::Packets(1)).flows[0]
        .conn
        .max_datagram() as u64
        + with_queue(QueueLimit::Packets(1)).header_overhead;
    let e = run(with_queue(QueueLimit::Bytes(wire - 1)))
        .unwrap_err()
        .to_string();
    assert!(e.contains("less than one datagram of this flow"), "{e}");
    let r = run(with_queue(QueueLimit::Bytes(wire))).expect("one datagram fits");
    assert!(r.flows[0].bytes_delivered > 0);
}

#[test]
fn block_delay_is_measured_for_every_block() {
    // 10 Mbit/s, 50 ms one way, 4 MiB buffer, 20 s bulk: a 32 KiB block needs at least its
    // serialisation (23.4 packets of ~1450 wire bytes ≈ 27 ms) plus the propagation delay.
    let cfg = sim(
        vec![link("l", 10_000_000, 50, 100, 0.0)],
        vec![flow(
            "f",
            vec![vec![0]],
            conn(tcp(), cc("new-reno"), 4 << 20),
            FlowKind::Multipath,
        )],
        20,
        1,
    );
    let r = run(cfg).unwrap();
    let f = &r.flows[0];
    let bd = f.block_delay.clone().expect("blocks were delivered");
    assert_eq!(bd.blocks, f.bytes_delivered / (32 * 1024));
    let floor_ms = 50.0 + 32768.0 * 1450.0 / 1400.0 * 8.0 / 10e6 * 1e3;
    assert!(bd.mean_ms >= floor_ms, "mean {} < {floor_ms}", bd.mean_ms);
    assert!(bd.p95_ms >= bd.mean_ms && bd.max_ms >= bd.p95_ms);
    assert!(bd.jitter_ms.is_finite() && bd.jitter_ms > 0.0);
}

/// A path that dies for good must not keep swallowing fresh segments at every backed-off
/// timeout (each one stalls in-order delivery until reinjected): after a short transition,
/// every second of goodput stays near the surviving path's capacity.
#[test]
fn dead_path_does_not_stall_the_connection() {
    let mut f = flow(
        "f",
        vec![vec![0], vec![1]],
        conn(mptcp(), cc("lia"), 2 << 20),
        FlowKind::Multipath,
    );
    f.app = AppConfig::default();
    let mut cfg = sim(
        vec![
            link("a", 10_000_000, 50, 100, 0.01),
            link("b", 10_000_000, 50, 100, 0.01),
        ],
        vec![f],
        120,
        1,
    );
    cfg.sample_interval = Some(Duration::from_secs(1));
    cfg.changes = vec![TimedChange {
        at: Duration::from_secs(20),
        link: 1,
        direction: Direction::Both,
        change: LinkChange {
            up: Some(false),
            ..Default::default()
        },
    }];
    let r = run(cfg).unwrap();
    let s = &r.flows[0].series;
    let worst = s[30..120]
        .iter()
        .map(|x| x[1])
        .fold(f64::INFINITY, f64::min);
    let mean = s[30..120].iter().map(|x| x[1]).sum::<f64>() / 90.0;
    // One 10 Mbit/s path with 1 % loss at 100 ms RTT carries ~1.4 Mbit/s (Padhye); a stall
    // would show as seconds of zero.
    assert!(
        worst > 0.3,
        "a one-second sample fell to {worst} Mbit/s (mean {mean})"
    );
    assert!(mean > 1.0, "mean {mean}");
}

/// Bounds on two run-wide settings that held-out testing found accepted at absurd values
/// (docs/scenarios.md): a `sample_interval` of 1 µs over 5 s took 1.6 GB and 24 s (every
/// flow and path keeps a sample per interval), and `header_overhead = 100000` put 101 KB on
/// the wire per datagram. Each is now an error naming the setting; the largest accepted
/// values run.
#[test]
fn absurd_sample_interval_and_header_overhead_are_errors() {
    let base = || one_tcp_flow(2);
    let mut c = base();
    c.sample_interval = Some(Duration::from_nanos(1_000));
    let e = run(c).unwrap_err().to_string();
    assert!(
        e.contains("sample_interval") && e.contains("at most"),
        "{e}"
    );
    let mut c = base();
    // 2 s at 2 µs: exactly MAX_SAMPLES samples.
    c.sample_interval = Some(Duration::from_nanos(2_000_000_000 / MAX_SAMPLES));
    run(c).expect("the largest sample count runs");
    // The bound on all series together (found by held-out testing: 200 flows sampled every
    // 1 ms took 1.8 GB and wrote 1.1 GB of JSON): 100 copies of the flow (one path each,
    // two series) at the largest per-series count are 200 million samples; 10 copies at
    // 1 ms over 2 s (20 series of 2,000) run.
    let copies = |n: usize, iv: Duration| {
        let mut c = base();
        let f = c.flows[0].clone();
        c.flows = (0..n)
            .map(|i| FlowConfig {
                name: format!("f{i}"),
                ..f.clone()
            })
            .collect();
        c.sample_interval = Some(iv);
        c
    };
    let e = copies(100, Duration::from_nanos(2_000_000_000 / MAX_SAMPLES))
        .validate()
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("for each of 200 series") && e.contains(&MAX_ALL_SAMPLES.to_string()),
        "{e}"
    );
    assert!(copies(10, Duration::from_millis(1)).validate().is_ok());
    let mut c = base();
    c.header_overhead = MAX_HEADER_OVERHEAD + 1;
    let e = run(c).unwrap_err().to_string();
    assert!(e.contains("header_overhead"), "{e}");
    let mut c = base();
    c.header_overhead = MAX_HEADER_OVERHEAD;
    assert!(run(c).unwrap().flows[0].bytes_delivered > 0);
}
