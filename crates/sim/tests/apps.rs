//! Applications, lazy flows and arrivals, verification, observability: each feature against a
//! requirement (fixed seeds).

use crate::common;
use crate::test_tempdir::TempDir;

use common::*;
use std::sync::Arc;
use tributary_proto::registry::{Factory, Options};
use tributary_proto::scheme::{
    FrameSource, RecvCtx, SchemeConfig, SchemeError, SchemeFactory, SchemeReceiver, SchemeSender,
};
use tributary_proto::time::{Duration, Instant};
use tributary_proto::wire::Frame;
use tributary_proto::ConnectionConfig;
use tributary_sim::*;

fn app(name: &str, opts: serde_json::Value) -> AppConfig {
    AppConfig::of(name, &opts).unwrap()
}

fn one_flow(link: LinkConfig, f: FlowConfig, secs: u64) -> SimResult {
    run(sim(vec![link], vec![f], secs, 1)).unwrap()
}

fn tcp_flow(name: &str, a: AppConfig) -> FlowConfig {
    let mut f = FlowConfig::new(name, vec![vec![0]], conn(tcp(), cc("new-reno"), 1 << 20));
    f.app = a;
    f
}

/// 40 Mbit/s, 20 ms one way: a 3.4 Mbit/s video uses under a tenth of it, so every frame must
/// arrive within its capture-to-playout deadline (one RTT plus a frame's serialisation is
/// about 42 ms of the 200 ms) and playback never stalls.
#[test]
fn video_with_ample_capacity_has_every_frame_on_time() {
    let a = app("video", serde_json::json!({ "duration": "20s" }));
    let r = one_flow(link("l", 40_000_000, 20, 200, 0.0), tcp_flow("v", a), 60);
    let m = &r.flows[0].app.receiver;
    assert_eq!(r.flows[0].app.name, "video");
    assert_eq!(m["frames"], 500);
    assert_eq!(m["on_time"], 500, "{m}");
    assert_eq!(
        (m["late"].as_u64(), m["abandoned"].as_u64()),
        (Some(0), Some(0))
    );
    assert_eq!(m["stall_s"], 0.0);
    assert!(r.flows[0].completion_s.is_some());
}

/// A 6 Mbit/s video into a 3 Mbit/s link cannot keep up: with partial reliability late frames
/// are given up (the sender's buffer drains instead of growing) and every frame is accounted
/// for exactly once.
///
/// Model of what can be on time: a frame counts only when all its bytes arrive, the smallest
/// frames are the P frames (mean 30,000 B per frame, I = 5 P, GOP 12: P = 30,000 · 12 / 16 =
/// 22,500 B), and the link carries at most 3 Mbit/s × (10 s + 0.3 s) = 3,862,500 B by the
/// last deadline: at most 171 frames. Requirement: a sender that gives a frame up as soon as
/// it can no longer arrive in time (`abandon_early`, the default) delivers at least half of
/// that on time. Giving frames up only when their deadline passes at the sender (the old
/// behaviour, `abandon_early = false`) sends every frame a little too late: the oldest
/// frame not yet given up always goes first, so none arrives in time (checked: 0). The coded
/// schemes, whose senders skip abandoned bytes (`fmtcp`, `nc-mptcp`, `hmtp`), must meet the
/// same requirement. `hmtp` meets it exactly (85 of 250 here, 80–86 over the five seeds of
/// `scenarios/video/overload.toml`): it sends each frame as 1.137·k coded symbols and about
/// a third of its frame chunks are given up part-sent (docs/experiments/video.md).
#[test]
fn overloaded_video_abandons_late_frames_and_accounts_for_each() {
    let bound = 3_000_000 / 8 * 103 / 10 / 22_500;
    assert_eq!(bound, 171);
    for (scheme, early) in [
        ("tcp", true),
        ("tcp", false),
        ("fmtcp", true),
        ("nc-mptcp", true),
        ("hmtp", true),
    ] {
        let a = app(
            "video",
            serde_json::json!({ "duration": "10s", "bit_rate": "6Mbps", "deadline": "300ms",
                                "abandon_early": early }),
        );
        // hmtp's receive buffer must hold a whole chunk of k = 1000 symbols (1.38 MB).
        let buffer = if scheme == "hmtp" { 4 << 20 } else { 1 << 20 };
        let mut f = FlowConfig::new(
            "v",
            vec![vec![0]],
            conn(SchemeConfig::named(scheme).unwrap(), cc("new-reno"), buffer),
        );
        f.app = a;
        // As the lab sets it for a video that gives frames up early.
        f.conn.ack_timestamps = early;
        let r = one_flow(link("l", 3_000_000, 20, 50, 0.0), f, 60);
        let m = &r.flows[0].app.receiver;
        let n = |k: &str| m[k].as_u64().unwrap();
        assert_eq!(
            n("on_time") + n("late") + n("abandoned") + n("unresolved"),
            250
        );
        assert!(n("abandoned") > 50, "{scheme}: {m}");
        assert!(n("on_time") <= bound, "{scheme}: {m}");
        if early {
            assert!(n("on_time") >= bound / 2, "{scheme}: {m}");
        } else {
            assert!(n("on_time") < 10, "{scheme}: {m}");
        }
    }
}

/// Early abandonment must not give up frames for queueing in the ACK direction. A 3.4 Mbit/s
/// video over 10 Mbit/s, 20 ms, whose reverse direction runs at 60 kbit/s, below its
/// ACKs' ≈ 70 kbit/s: the ACKs queue, and the RTT grows to ≈ 200 ms against 40 ms. Every
/// frame still arrives in time (checked: all 500 with `abandon_early = false`).
/// Requirement: with the receiver's ACK timestamps (`ack_timestamps`, which the lab turns on
/// for such a video) early abandonment costs at most 1 % of the frames. Without them the
/// one-way estimate (SRTT − minRTT/2) counts the ACK queue as the data's and gives frames up:
/// checked to cost more than that here, so the case does exercise the difference.
#[test]
fn ack_queueing_does_not_make_early_abandonment_give_frames_up() {
    let run_with = |early: bool, timestamps: bool| {
        let a = app(
            "video",
            serde_json::json!({ "duration": "20s", "abandon_early": early }),
        );
        let mut f = tcp_flow("v", a);
        f.conn.ack_timestamps = timestamps;
        let mut l = link("l", 10_000_000, 20, 100, 0.0);
        l.reverse = LinkParams::new(60_000, Duration::from_millis(20), 30);
        let r = one_flow(l, f, 30);
        r.flows[0].app.receiver["on_time"].as_u64().unwrap()
    };
    let late = run_with(false, false);
    assert_eq!(late, 500);
    let with = run_with(true, true);
    assert!(with >= late * 99 / 100, "{with} of {late}");
    let without = run_with(true, false);
    assert!(without < late * 99 / 100, "{without} of {late}");
}

/// A path that cannot deliver a frame by its deadline must not carry it. Fast path 10 Mbit/s,
/// 20 ms one way, 1 % loss; satellite 20 Mbit/s, 300 ms one way, beyond the video's 200 ms
/// deadline. Requirement: RFC 6356's goal 1 (a multipath flow does at least as well as a
/// single-path TCP on its best path) read for frames on time, with the 10 % tolerance of
/// `cc_goals::goal1_improve_throughput`: `mptcp` over OLIA (which meets goal 1 there) gets at
/// least 0.9 × the frames a TCP on the fast path alone gets (3 seeds each). Before bytes and
/// announcements of frames stopped going over the satellite (docs/experiments/video.md,
/// "Paths that cannot make the deadline"; the same links as scenarios/video/satellite.toml,
/// whose seeds gave OLIA 63–105 of 500 frames on time against TCP's 439–462) it failed by
/// far. LIA stays below the bound (its coupled increase still counts the idle satellite
/// window), so the test uses OLIA.
#[test]
fn frames_do_not_take_a_path_that_cannot_deliver_them_in_time() {
    let links = || {
        let mut sat = link("sat", 20_000_000, 300, 1000, 0.0);
        sat.reverse = LinkParams::new(20_000_000, Duration::from_millis(300), 1000);
        vec![link("fast", 10_000_000, 20, 70, 0.01), sat]
    };
    let frames = |scheme: SchemeConfig, cc_name: &str, paths: Vec<Vec<usize>>| {
        (1..=3)
            .map(|seed| {
                let a = app("video", serde_json::json!({ "duration": "20s" }));
                let mut f = FlowConfig::new(
                    "v",
                    paths.clone(),
                    conn(scheme.clone(), cc(cc_name), 1 << 20),
                );
                f.app = a;
                f.conn.ack_timestamps = true;
                let r = run(sim(links(), vec![f], 30, seed)).unwrap();
                r.flows[0].app.receiver["on_time"].as_u64().unwrap()
            })
            .sum::<u64>()
    };
    let single = frames(tcp(), "new-reno", vec![vec![0]]);
    let multi = frames(mptcp(), "olia", vec![vec![0], vec![1]]);
    assert!(
        single > 1_000,
        "the fast path alone carries the video: {single}"
    );
    assert!(
        multi * 10 >= single * 9,
        "{multi} frames on time against {single}"
    );
}

/// Page load time ≥ the page's bytes at the bottleneck rate plus one RTT (the first request
/// must cross before any byte comes back); with every object behind object 0, ≥ two RTTs.
#[test]
fn web_page_load_time_respects_transfer_time_and_rtts() {
    let sizes = [30_000u64, 60_000, 60_000, 20_000, 20_000, 10_000];
    let a = app("web", serde_json::json!({ "objects": sizes }));
    let r = one_flow(link("l", 10_000_000, 25, 100, 0.0), tcp_flow("w", a), 60);
    let m = &r.flows[0].app.receiver;
    let plt = m["page_load_s"].as_f64().expect("page loaded");
    let bytes: u64 = sizes.iter().sum();
    let floor = bytes as f64 * 8.0 / 10e6 + 0.050;
    assert!(plt >= floor, "page load {plt} < {floor}");
    assert!(plt >= 2.0 * 0.050, "{plt}");
    assert!((r.flows[0].completion_s.unwrap() - plt).abs() < 1e-9);
    let per: Vec<f64> = m["object_completion_s"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    // Object 0 (the dependency of all others) completes first.
    assert!(per.iter().all(|&t| t >= per[0]), "{per:?}");
    assert_eq!(r.flows[0].bytes_delivered, bytes);
}

/// Each request's completion ≥ one RTT plus the response's serialisation; with one request
/// outstanding they cannot overlap, so the flow lasts at least their sum.
#[test]
fn request_response_completes_every_request_after_an_rtt() {
    let a = app(
        "request-response",
        serde_json::json!({ "requests": 20, "response_size": "50KB" }),
    );
    let r = one_flow(link("l", 10_000_000, 10, 100, 0.0), tcp_flow("rr", a), 60);
    let m = &r.flows[0].app.sender;
    assert_eq!(m["completed"], 20, "{m}");
    let c = &m["completion_ms"];
    let floor_ms = 20.0 + 50_000.0 * 8.0 / 10e6 * 1e3;
    assert!(c["p50"].as_f64().unwrap() >= floor_ms, "{c}");
    assert!(r.flows[0].completion_s.unwrap() * 1e3 >= 20.0 * floor_ms);
}

// -------------------------------------------------------------- verification

/// tcp's receiving half with one bit of one DATA frame flipped after the checksum: the
/// delivered stream is wrong although every packet was valid on the wire.
#[derive(Debug)]
struct CorruptingRx {
    inner: Box<dyn SchemeReceiver>,
    done: bool,
}

impl SchemeReceiver for CorruptingRx {
    fn on_frame(
        &mut self,
        ctx: &mut RecvCtx<'_>,
        from: FrameSource,
        frame: &Frame<'_>,
    ) -> Result<(), SchemeError> {
        if let Frame::Data { offset, data } = frame {
            if !self.done && *offset > 100_000 && !data.is_empty() {
                self.done = true;
                let mut bad = data.to_vec();
                bad[0] ^= 0x10;
                let f = Frame::Data {
                    offset: *offset,
                    data: &bad,
                };
                return self.inner.on_frame(ctx, from, &f);
            }
        }
        self.inner.on_frame(ctx, from, frame)
    }
}

#[derive(Debug)]
struct Corrupting;

impl Factory for Corrupting {
    fn options(&self) -> Options {
        Options::new()
    }
}

impl SchemeFactory for Corrupting {
    fn build(&self, cfg: &ConnectionConfig) -> (Box<dyn SchemeSender>, Box<dyn SchemeReceiver>) {
        let (tx, rx) = tcp().factory().build(cfg);
        (
            tx,
            Box::new(CorruptingRx {
                inner: rx,
                done: false,
            }),
        )
    }
}

#[test]
fn a_corrupted_delivery_fails_the_run_at_its_offset() {
    let mut f = tcp_flow("bad", file(1_000_000));
    f.conn.scheme = SchemeConfig::custom("tcp", Arc::new(Corrupting));
    let e = run(sim(
        vec![link("l", 10_000_000, 10, 100, 0.0)],
        vec![f],
        30,
        1,
    ))
    .unwrap_err();
    match &e {
        SimError::Corrupted { flow, offset, .. } => {
            assert_eq!(flow, "bad");
            assert!(*offset > 100_000, "{e}");
        }
        other => panic!("expected a corruption error, got {other}"),
    }
    assert!(e.to_string().contains("does not match"), "{e}");
}

// -------------------------------------------------------------- flows and arrivals

/// 2000 Poisson arrivals of 20 kB transfers (2 per 10 ms on 100 Mbit/s: 3 % load) complete,
/// each no faster than one RTT plus its bytes at the link rate, with few flows alive at once
/// (they are built when they arrive and released when done).
#[test]
fn arrivals_run_thousands_of_short_flows() {
    let mut cfg = sim(vec![link("l", 100_000_000, 5, 200, 0.0)], vec![], 120, 3);
    let t = tcp_flow("t", file(20_000));
    cfg.arrivals = vec![ArrivalConfig {
        name: "short".into(),
        template: t,
        rate: 200.0,
        start: Duration::ZERO,
        count: Some(2000),
        until: None,
    }];
    let r = run(cfg).unwrap();
    assert!(r.flows.is_empty());
    let g = &r.arrivals[0];
    assert_eq!((g.flows, g.completed), (2000, 2000));
    assert_eq!(g.bytes_delivered, 2000 * 20_000);
    let c = g.completion_s.as_ref().unwrap();
    assert!(c.max >= c.p99 && c.p99 >= c.p50 && c.p50 >= c.mean * 0.5);
    let floor = 0.010 + 20_000.0 * 8.0 / 100e6;
    assert!(c.p50 >= floor, "{c:?}");
    // Mean arrival gap 5 ms against completions of tens of ms: a handful live at once.
    assert!(g.max_concurrent < 50, "{}", g.max_concurrent);
    // The run ends when the last flow is done, long before 120 s.
    assert!(r.sim_seconds < 15.0, "{}", r.sim_seconds);
    // Same seed, same aggregate.
    let mut cfg2 = sim(vec![link("l", 100_000_000, 5, 200, 0.0)], vec![], 120, 3);
    cfg2.arrivals = vec![ArrivalConfig {
        name: "short".into(),
        template: tcp_flow("t", file(20_000)),
        rate: 200.0,
        start: Duration::ZERO,
        count: Some(2000),
        until: None,
    }];
    assert_eq!(run(cfg2).unwrap().arrivals, r.arrivals);
}

#[test]
fn arrival_groups_must_end() {
    let mut cfg = sim(vec![link("l", 10_000_000, 5, 100, 0.0)], vec![], 10, 1);
    cfg.arrivals = vec![ArrivalConfig {
        name: "bulk".into(),
        template: tcp_flow("t", AppConfig::default()),
        rate: 1.0,
        start: Duration::ZERO,
        count: Some(3),
        until: None,
    }];
    let e = run(cfg).unwrap_err().to_string();
    assert!(e.contains("does not end by itself"), "{e}");
}

/// Arrivals the network cannot carry end the run with an error, not with memory exhausted
/// (found by held-out testing: 100,000 arrivals per second of 10 kB transfers over 10 Mbit/s
/// piled up to 8 GB in 5 s; at a billion per second the process ran until killed). Here 2,000
/// per second of 20 kB transfers offer 320 Mbit/s to a 10 Mbit/s link, so flows pile up and
/// pass a `max_live_flows` of 40; the same arrivals at 20 per second (3 % load) stay far below
/// it and complete. An arrival process expected to start more than `MAX_ARRIVALS` flows is
/// refused before the run, as are more configured flows than `max_live_flows`.
#[test]
fn overload_by_arrivals_is_an_error_and_the_limits_are_checked() {
    let with = |rate: f64, count: Option<u64>, until: Option<u64>| {
        let mut cfg = sim(vec![link("l", 10_000_000, 5, 100, 0.0)], vec![], 30, 4);
        cfg.max_live_flows = 40;
        cfg.arrivals = vec![ArrivalConfig {
            name: "g".into(),
            template: tcp_flow("t", file(20_000)),
            rate,
            start: Duration::ZERO,
            count,
            until: until.map(Duration::from_secs),
        }];
        cfg
    };
    let e = run(with(2_000.0, Some(2_000), None)).unwrap_err();
    match &e {
        tributary_sim::SimError::Overloaded { flow, live } => {
            assert_eq!(*live, 40);
            assert!(flow.starts_with("g#"), "{flow}");
        }
        other => panic!("{other}"),
    }
    let r = run(with(20.0, Some(200), None)).unwrap();
    assert_eq!(r.arrivals[0].completed, 200);
    assert!(r.arrivals[0].max_concurrent < 40);
    // Expected arrivals: rate × window, or count if smaller.
    let e = run(with(1e9, None, Some(5))).unwrap_err().to_string();
    assert!(e.contains("about 5000000000 flows would arrive"), "{e}");
    let ok = with(1e9, Some(tributary_sim::MAX_ARRIVALS as u64), Some(5));
    assert!(ok.validate().is_ok());
    let mut many = with(20.0, Some(10), None);
    many.flows = (0..41)
        .map(|i| tcp_flow(&format!("f{i}"), file(1_000)))
        .collect();
    let e = run(many).unwrap_err().to_string();
    assert!(
        e.contains("41 flows (copies included) are more than max_live_flows (40)"),
        "{e}"
    );
}

/// Flows that start later exist only from their start: the run ends when the last is done.
#[test]
fn flows_start_when_told_and_results_survive_their_release() {
    let mut a = tcp_flow("a", file(500_000));
    let mut b = tcp_flow("b", file(500_000));
    a.start = Duration::from_secs(1);
    b.start = Duration::from_secs(5);
    let r = run(sim(
        vec![link("l", 10_000_000, 10, 100, 0.0)],
        vec![a, b],
        60,
        1,
    ))
    .unwrap();
    for f in &r.flows {
        assert_eq!(f.bytes_delivered, 500_000);
        // 0.4 s of serialisation plus slow start over a 20 ms RTT.
        let c = f.completion_s.unwrap();
        assert!(c > 0.4 && c < 2.0, "{} {c}", f.name);
    }
    assert!(
        r.sim_seconds > 5.4 && r.sim_seconds < 7.0,
        "{}",
        r.sim_seconds
    );
}

// -------------------------------------------------------------- background traffic

/// An on-off source offers `rate` × on/(on + off) on average, without reliability: every
/// datagram it sent was either received or dropped by the link.
#[test]
fn on_off_source_offers_its_mean_load_unreliably() {
    let a = app(
        "on-off",
        serde_json::json!({ "rate": "4Mbps", "on": "1s", "off": "1s", "on_shape": 2.5 }),
    );
    let mut f = tcp_flow("bg", a);
    f.conn.mss = 1200;
    let r = one_flow(link("l", 10_000_000, 10, 100, 0.0), f, 600);
    let s = &r.flows[0].app.sender;
    let rx = &r.flows[0].app.receiver;
    let sent = s["bytes_sent"].as_u64().unwrap() as f64;
    let mean_rate = sent * 8.0 / 600.0;
    assert!((mean_rate - 2e6).abs() < 0.25 * 2e6, "mean {mean_rate}");
    let l = &r.links[0].forward;
    let got = rx["datagrams_received"].as_u64().unwrap();
    let dropped = l.queue_drops + l.random_drops + l.down_drops;
    assert!(got + dropped <= s["datagrams_sent"].as_u64().unwrap());
    // Those not accounted for were still on the link (10 ms of 4 Mbit/s: 5 datagrams).
    assert!(
        got + dropped + 10 >= s["datagrams_sent"].as_u64().unwrap(),
        "{s} {rx} {l:?}"
    );
    // Nothing of it is acknowledged or retransmitted: no connection traffic at all.
    assert_eq!(r.flows[0].paths[0].packets_sent, 0);
    // Background traffic does not keep the run going: it lasts the configured time.
    assert!((r.sim_seconds - 600.0).abs() < 1e-9);
    // The one-way delay is at least the propagation delay.
    assert!(rx["delay_ms"]["p50"].as_f64().unwrap() >= 10.0);
}

/// A greedy TCP competitor marked `background = true` does not keep the run going: the run
/// stops when the measured file transfer is done (not at the 300 s limit), and the competitor
/// really competed (it moved data and the file took longer than alone). Without the flag the
/// same competitor keeps the run to its full duration (the stop rule of docs/scenarios.md).
#[test]
fn background_bulk_competes_without_keeping_the_run_going() {
    let run_with = |bg: Option<bool>| {
        let mut flows = vec![tcp_flow("file", file(2_000_000))];
        if let Some(background) = bg {
            flows.push(tcp_flow(
                "greedy",
                app("bulk", serde_json::json!({ "background": background })),
            ));
        }
        run(sim(vec![link("l", 10_000_000, 10, 50, 0.0)], flows, 300, 1)).unwrap()
    };
    let alone = run_with(None);
    let shared = run_with(Some(true));
    let held = run_with(Some(false));
    let done = |r: &SimResult| r.flows[0].completion_s.expect("the file completes");
    assert!(
        (alone.sim_seconds - done(&alone)).abs() < 1.0,
        "{}",
        alone.sim_seconds
    );
    assert!(
        (shared.sim_seconds - done(&shared)).abs() < 1.0,
        "a background flow kept the run going to {} s (file done at {} s)",
        shared.sim_seconds,
        done(&shared)
    );
    assert!(shared.flows[1].bytes_delivered > 0);
    assert!(
        done(&shared) > 1.2 * done(&alone),
        "{} vs {}",
        done(&shared),
        done(&alone)
    );
    assert!(
        (held.sim_seconds - 300.0).abs() < 1e-9,
        "{}",
        held.sim_seconds
    );
}

// -------------------------------------------------------------- observability

/// Per-path series: one sample per interval while the flow lives; the throughput column
/// integrates to the path's acknowledged bytes; link counters conserve packets.
#[test]
fn path_series_and_link_counters_add_up() {
    let mut cfg = sim(
        vec![
            link("a", 10_000_000, 20, 50, 0.01),
            link("b", 5_000_000, 40, 50, 0.0),
        ],
        vec![FlowConfig::new(
            "mp",
            vec![vec![0], vec![1]],
            conn(mptcp(), cc("lia"), 1 << 20),
        )],
        20,
        4,
    );
    cfg.sample_interval = Some(Duration::from_millis(500));
    let r = run(cfg).unwrap();
    let f = &r.flows[0];
    assert_eq!(f.path_series.len(), 2);
    for (p, s) in f.path_series.iter().enumerate() {
        assert_eq!(s.t_s.len(), 40);
        for col in [
            s.cwnd_bytes.len(),
            s.srtt_ms.len(),
            s.in_flight_bytes.len(),
            s.throughput_mbps.len(),
            s.losses.len(),
            s.retransmitted_bytes.len(),
        ] {
            assert_eq!(col, 40);
        }
        let mean: f64 = s.throughput_mbps.iter().sum::<f64>() / 40.0;
        let whole = f.paths[p].throughput_mbps;
        assert!(
            (mean - whole).abs() <= 0.02 * whole + 0.05,
            "path {p}: {mean} vs {whole}"
        );
        let lost: u64 = s.losses.iter().sum();
        assert!(lost <= f.paths[p].packets_lost);
        assert!(s
            .srtt_ms
            .iter()
            .flatten()
            .all(|&ms| ms >= 2.0 * [20.0, 40.0][p]));
    }
    assert!(f.path_series[0].losses.iter().sum::<u64>() > 0);
    for l in &r.links {
        for d in [l.forward, l.reverse] {
            let out = d.delivered + d.queue_drops + d.random_drops + d.down_drops;
            // What is neither delivered nor dropped is still on the link at the end.
            assert!(out <= d.offered && d.offered - out < 200, "{d:?}");
        }
    }
    assert!(r.links[0].forward.random_drops > 0);
}

/// Packets held back for reordering die with a link that goes down meanwhile, as those in
/// its FIFO do.
#[test]
fn reordered_packets_do_not_survive_a_link_going_down() {
    let mut l = link("l", 10_000_000, 10, 100, 0.0);
    l.forward.reorder_prob = 1.0;
    l.forward.reorder_delay = Duration::from_millis(100);
    let mut cfg = sim(vec![l], vec![tcp_flow("f", file(2_000_000))], 60, 1);
    let change = |at_ms, up| TimedChange {
        at: Duration::from_millis(at_ms),
        link: 0,
        direction: Direction::Forward,
        change: LinkChange {
            up: Some(up),
            ..Default::default()
        },
    };
    cfg.changes = vec![change(500, false), change(520, true)];
    let r = run(cfg).unwrap();
    let d = r.links[0].forward;
    // Every packet is reordered; those offered in the 110 ms before the outage were in
    // flight (held back) when the link went down.
    assert!(d.down_drops > 10, "{d:?}");
    assert_eq!(r.flows[0].bytes_delivered, 2_000_000);
}

/// qlog traces parse as JSON text sequences and count what the results count.
#[test]
fn qlog_traces_parse_and_match_the_counters() {
    let dir = TempDir::new("qlog");
    let mut f = tcp_flow("traced", file(3_000_000));
    f.qlog = true;
    let mut cfg = sim(vec![link("l", 10_000_000, 10, 40, 0.01)], vec![f], 60, 2);
    cfg.qlog_dir = Some(dir.to_path_buf());
    let r = run(cfg.clone()).unwrap();
    let read = |role: &str| -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(dir.join(format!("traced-c0-{role}.sqlog"))).unwrap();
        assert!(text.starts_with('\u{1e}'));
        text.split('\u{1e}')
            .skip(1)
            .map(|rec| {
                assert!(rec.ends_with('\n'));
                serde_json::from_str(rec).unwrap()
            })
            .collect()
    };
    let count = |recs: &[serde_json::Value], name: &str| {
        recs.iter().filter(|r| r["name"] == name).count() as u64
    };
    let s = read("sender");
    let rx = read("receiver");
    assert_eq!(s[0]["qlog_format"], "JSON-SEQ");
    assert_eq!(s[0]["trace"]["vantage_point"]["type"], "client");
    let p = &r.flows[0].paths[0];
    assert_eq!(count(&s, "transport:packet_sent"), p.packets_sent);
    assert_eq!(count(&s, "recovery:packet_lost"), p.packets_lost);
    assert!(p.packets_lost > 0);
    assert!(count(&s, "recovery:metrics_updated") > 0);
    // The receiver received what the link delivered of the sender's packets, minus those
    // arriving after the flow was done.
    let got = count(&rx, "transport:packet_received");
    let delivered = r.links[0].forward.delivered;
    assert!(
        got <= delivered && got + 5 >= delivered,
        "{got} {delivered}"
    );
    assert!(s[1..]
        .windows(2)
        .all(|w| w[0]["time"].as_f64() <= w[1]["time"].as_f64()));
    // Existing traces are never overwritten.
    let e = run(cfg).unwrap_err().to_string();
    assert!(e.contains("qlog"), "{e}");
}

#[test]
fn app_options_are_checked() {
    for (name, opts, want) in [
        ("file", serde_json::json!({}), "bytes"),
        ("file", serde_json::json!({ "bytes": 0 }), "positive"),
        ("video", serde_json::json!({ "fps": 0 }), "fps"),
        (
            "video",
            serde_json::json!({ "frame_sizes": "/nonexistent/trace" }),
            "cannot read",
        ),
        (
            "web",
            serde_json::json!({ "objects": [1000, 2000], "depends_on": [-1, 1] }),
            "earlier",
        ),
        ("on-off", serde_json::json!({ "on_shape": 1.0 }), "shape"),
        (
            "request-response",
            serde_json::json!({ "requests": 0 }),
            "positive",
        ),
        ("bulk", serde_json::json!({ "speed": 1 }), "unknown field"),
    ] {
        let e = AppConfig::of(name, &opts).unwrap_err();
        assert!(e.contains(want), "{name}: {e}");
    }
    let e = AppConfig::named("ftp").unwrap_err();
    assert!(
        e.contains("unknown application") && e.contains("video"),
        "{e}"
    );
}

#[test]
fn video_frame_sizes_come_from_a_trace_file() {
    let path = std::env::temp_dir().join(format!("tributary-frames-{}.txt", std::process::id()));
    std::fs::write(&path, "# sizes\n20000\n3000\n3000\n\n4000 # P\n").unwrap();
    let a = app(
        "video",
        serde_json::json!({ "frame_sizes": path.to_str().unwrap(), "duration": "10s" }),
    );
    let r = one_flow(link("l", 40_000_000, 20, 200, 0.0), tcp_flow("v", a), 60);
    std::fs::remove_file(&path).unwrap();
    assert_eq!(r.flows[0].app.receiver["frames"], 4);
    assert_eq!(r.flows[0].bytes_delivered, 30_000);
    let _ = Instant::ZERO;
}
