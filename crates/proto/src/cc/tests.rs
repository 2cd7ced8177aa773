use super::*;
use crate::time::Duration;

fn view(id: usize, cwnd: u64, ssthresh: u64, rtt_ms: u64) -> PathView {
    PathView {
        id,
        active: true,
        state: crate::path::PathState::Active,
        mss: 1000,
        cwnd,
        ssthresh,
        bytes_in_flight: cwnd,
        packets_in_flight: cwnd / 1000,
        srtt: Some(Duration::from_millis(rtt_ms)),
        min_rtt: Some(Duration::from_millis(rtt_ms)),
        latest_rtt: Some(Duration::from_millis(rtt_ms)),
        rto: Duration::from_millis(200),
        loss_rate: 0.0,
        in_recovery: false,
        oldest_unacked_sent: None,
        loss_threshold: 3,
        cwnd_limited: true,
        flight_decrease: None,
    }
}

fn ack(bytes: u64) -> AckEvent {
    AckEvent {
        now: Instant::ZERO,
        bytes_acked: bytes,
        rtt_sample: None,
    }
}

#[test]
fn newreno_slow_start_then_avoidance() {
    let mut cc = NewReno::default();
    // Slow start: +bytes acked, capped at ssthresh; the rest goes to avoidance.
    let w = cc.on_ack(0, &ack(2000), &[view(0, 10_000, 11_000, 100)]);
    assert_eq!(w.cwnd, 11_000 + 1000 * 1000 / 11_000);
    // Avoidance: one full window acknowledged adds exactly one MSS.
    let mut v = view(0, 10_000, 5_000, 100);
    for _ in 0..10 {
        let w = cc.on_ack(0, &ack(1000), &[v]);
        v.cwnd = w.cwnd;
    }
    assert!((10_950..=11_000).contains(&v.cwnd), "{}", v.cwnd);
    // Decrease halves with a floor of 2 MSS.
    assert_eq!(
        cc.on_congestion_event(0, Instant::ZERO, &[view(0, 10_000, 20_000, 100)]),
        Window {
            cwnd: 5_000,
            ssthresh: 5_000
        }
    );
    assert_eq!(
        cc.on_congestion_event(0, Instant::ZERO, &[view(0, 3_000, 20_000, 100)])
            .cwnd,
        2_000
    );
    assert_eq!(
        cc.on_timeout(0, Instant::ZERO, &[view(0, 10_000, 20_000, 100)]),
        Window {
            cwnd: 1000,
            ssthresh: 5_000
        }
    );
}

#[test]
fn lia_alpha_matches_hand_computation() {
    // Two paths: 10 kB @ 100 ms, 20 kB @ 200 ms.
    // total = 30000; max(cwnd/rtt^2) = max(1e6, 5e5) = 1e6; sum(cwnd/rtt) = 1e5 + 1e5 = 2e5.
    // alpha = 30000 * 1e6 / 4e10 = 0.75.
    let paths = [view(0, 10_000, 1, 100), view(1, 20_000, 1, 200)];
    assert!((lia::lia_alpha(&paths) - 0.75).abs() < 1e-12);
    // Increase on path 0 for 1000 bytes: min(0.75*1000*1000/30000, 1000*1000/10000) = 25.
    let mut cc = Lia::default();
    assert_eq!(cc.on_ack(0, &ack(1000), &paths).cwnd, 10_025);
}

#[test]
fn lia_equal_paths_give_half_of_reno_each() {
    // Two equal paths: alpha = 2w * (w/r^2) / (2w/r)^2 = 1/2; increase = 0.5*MSS*acked/2w,
    // i.e. a quarter of Reno's per path, half in total: together as aggressive as one TCP.
    let paths = [view(0, 10_000, 1, 100), view(1, 10_000, 1, 100)];
    assert!((lia::lia_alpha(&paths) - 0.5).abs() < 1e-12);
    let mut cc = Lia::default();
    let w = cc.on_ack(0, &ack(10_000), &paths);
    assert_eq!(w.cwnd, 10_250);
}

fn view_rtt(cwnd: u64, ssthresh: u64, srtt_ms: u64, min_ms: u64) -> PathView {
    let mut v = view(0, cwnd, ssthresh, srtt_ms);
    v.min_rtt = Some(Duration::from_millis(min_ms));
    v
}

fn ack_at(ms: u64, bytes: u64, sample_ms: Option<u64>) -> AckEvent {
    AckEvent {
        now: Instant::ZERO + Duration::from_millis(ms),
        bytes_acked: bytes,
        rtt_sample: sample_ms.map(Duration::from_millis),
    }
}

#[test]
fn cubic_decrease_fast_convergence_and_timeout() {
    let mut cc = Cubic::default();
    // β = 0.7: 100 kB → 70 kB; W_max = 100 kB.
    let w = cc.on_congestion_event(0, Instant::ZERO, &[view(0, 100_000, u64::MAX, 100)]);
    assert_eq!((w.cwnd, w.ssthresh), (70_000, 70_000));
    // Fast convergence: a loss below W_max sets W_max = 80 kB·(1 + 0.7)/2 = 68 kB, cwnd 56 kB.
    let w = cc.on_congestion_event(0, Instant::ZERO, &[view(0, 80_000, 1, 100)]);
    assert_eq!(w.cwnd, 56_000);
    // Timeout: cwnd = 1 MSS, ssthresh = 0.7·cwnd.
    let w = cc.on_timeout(0, Instant::ZERO, &[view(0, 100_000, 1, 100)]);
    assert_eq!((w.cwnd, w.ssthresh), (1000, 70_000));
}

#[test]
fn cubic_reno_friendly_then_concave_growth() {
    let mut cc = Cubic::default();
    cc.on_congestion_event(0, Instant::ZERO, &[view(0, 100_000, u64::MAX, 100)]);
    let v = [view(0, 70_000, 70_000, 100)];
    // Epoch starts at t = 0 with cwnd 70 kB: K = ∛((100000 − 70000)/(0.4·1000)) = 4.2172 s.
    // W_cubic(0) = 70000 < W_est = 70000 + 0.5294·1000·1000/70000 = 70007.56: Reno-friendly.
    assert_eq!(cc.on_ack(0, &ack_at(0, 1000, None), &v).cwnd, 70_007);
    // t = 2 s: W_est = 70015.1 < W_cubic(2) = 95640.3, so the cubic rule applies:
    // target = W_cubic(2.1) = 96204.03, increase = (96204.03 − 70000)·1000/70000 = 374.34.
    assert_eq!(cc.on_ack(0, &ack_at(2000, 1000, None), &v).cwnd, 70_374);
}

/// RFC 9438 §4.9: a reduction that proves spurious restores CUBIC's whole state (W_max, K,
/// the epoch, W_est, cwnd_prior) and the window, so the next ACK grows the window exactly as
/// if the reduction had not happened (the default undo, the window only, would start a new
/// epoch at t = 2 s from the restored window: +14 bytes, the Reno-friendly rate).
#[test]
fn cubic_undo_restores_the_state_before_the_reduction() {
    let mut reference = Cubic::default();
    reference.on_congestion_event(0, Instant::ZERO, &[view(0, 100_000, u64::MAX, 100)]);
    let v = [view(0, 70_000, 70_000, 100)];
    reference.on_ack(0, &ack_at(0, 1000, None), &v);
    let mut cc = reference.clone();
    // At t = 1 s a reduction (70 kB → 49 kB), then its undo to the prior window.
    let prior = Window {
        cwnd: 70_000,
        ssthresh: 70_000,
    };
    let w = cc.on_congestion_event(0, Instant::ZERO, &v);
    assert_eq!(w.cwnd, 49_000);
    let w = cc.on_spurious_congestion(0, Instant::ZERO, prior, &[view(0, 49_000, 49_000, 100)]);
    assert_eq!(w, prior);
    // t = 2 s: both grow by the cubic rule of the first epoch (K = 4.2172 s): +374 bytes.
    let a = reference.on_ack(0, &ack_at(2000, 1000, None), &v);
    let b = cc.on_ack(0, &ack_at(2000, 1000, None), &v);
    assert_eq!((a, b.cwnd), (b, 70_374));
}

#[test]
fn vegas_diff_and_per_round_steps() {
    // cwnd 20 packets, RTT 125 ms, BaseRTT 100 ms: Diff = 20·25/125 = 4 packets.
    assert!((vegas::vegas_diff(20_000, 1000, 0.125, 0.1) - 4.0).abs() < 1e-12);
    let mut cc = Vegas::default();
    let v = [view_rtt(20_000, 10_000, 100, 100)];
    // The first sampled ACK opens a round; nothing changes.
    assert_eq!(
        cc.on_ack(0, &ack_at(1000, 1000, Some(100)), &v).cwnd,
        20_000
    );
    // An ACK for a packet sent at 1.1 s (> round start 1.0 s) closes it: Diff = 0 < α, +1 MSS.
    assert_eq!(
        cc.on_ack(0, &ack_at(1200, 1000, Some(100)), &v).cwnd,
        21_000
    );
    // Within the next round (packet sent at 1.15 s, before 1.2 s): no change.
    assert_eq!(
        cc.on_ack(0, &ack_at(1300, 1000, Some(150)), &v).cwnd,
        20_000
    );
    // Round closes with min RTT 150 ms: Diff = 20·50/150 = 6.7 > β = 4: −1 MSS, ssthresh follows.
    let w = cc.on_ack(0, &ack_at(1500, 1000, Some(150)), &v);
    assert_eq!((w.cwnd, w.ssthresh), (19_000, 10_000));
    let v = [view_rtt(19_000, 19_000, 100, 100)];
    cc.on_ack(0, &ack_at(1600, 1000, Some(150)), &v);
    let w = cc.on_ack(0, &ack_at(1800, 1000, Some(150)), &v);
    assert_eq!((w.cwnd, w.ssthresh), (18_000, 18_000));
    // Between α and β: unchanged (cwnd 15 packets at 125/100 ms: Diff = 3).
    let v = [view_rtt(15_000, 10_000, 100, 100)];
    cc.on_ack(0, &ack_at(2000, 1000, Some(125)), &v);
    assert_eq!(
        cc.on_ack(0, &ack_at(2200, 1000, Some(125)), &v).cwnd,
        15_000
    );
    // Losses halve.
    assert_eq!(cc.on_congestion_event(0, Instant::ZERO, &v).cwnd, 7_500);
}

#[test]
fn vegas_leaves_slow_start_when_backlog_exceeds_gamma() {
    let mut cc = Vegas::default();
    let v = [view_rtt(20_000, u64::MAX, 100, 100)];
    // Slow start: +bytes acked.
    assert_eq!(
        cc.on_ack(0, &ack_at(1000, 1000, Some(125)), &v).cwnd,
        21_000
    );
    // Round end: cwnd 21 packets, Diff = 21·25/125 = 4.2 > γ = 1: window
    // min(21000, 21000·100/125 + 1000) = 17800 and ssthresh = window (slow start over).
    let w = cc.on_ack(0, &ack_at(1200, 1000, Some(125)), &v);
    assert_eq!((w.cwnd, w.ssthresh), (17_800, 17_800));
}

#[test]
fn veno_backlog_gates_increase_and_picks_decrease() {
    // cwnd 30 packets, RTT 150 ms, BaseRTT 100 ms: N = 30·50/150 = 10 ≥ β = 3.
    let v = [view_rtt(30_000, 10_000, 150, 100)];
    assert!((veno::veno_backlog(&v[0], None) - 10.0).abs() < 1e-9);
    let mut cc = Veno::default();
    // Congested: increase only every other window of ACKs: first window none, second +1 MSS.
    assert_eq!(cc.on_ack(0, &ack_at(0, 30_000, Some(150)), &v).cwnd, 30_000);
    assert_eq!(cc.on_ack(0, &ack_at(0, 30_000, Some(150)), &v).cwnd, 31_000);
    assert_eq!(cc.on_ack(0, &ack_at(0, 30_000, Some(150)), &v).cwnd, 30_000);
    // Congestive loss (N ≥ β): halve.
    assert_eq!(cc.on_congestion_event(0, Instant::ZERO, &v).cwnd, 15_000);
    // No backlog (RTT = BaseRTT): Reno increase 1000·3000/30000 = 100; loss is random: ×4/5.
    let v = [view_rtt(30_000, 10_000, 100, 100)];
    assert_eq!(cc.on_ack(0, &ack_at(0, 3000, Some(100)), &v).cwnd, 30_100);
    let w = cc.on_congestion_event(0, Instant::ZERO, &v);
    assert_eq!((w.cwnd, w.ssthresh), (24_000, 24_000));
}

#[test]
fn every_name_parses_and_builds_its_controller() {
    use serde::de::{value::StrDeserializer, Deserialize, IntoDeserializer};
    for name in CcConfig::names() {
        let de: StrDeserializer<'_, serde::de::value::Error> = name.into_deserializer();
        let cfg = CcConfig::deserialize(de).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(cfg.factory().build().name(), name);
    }
    // Aliases and unknown names.
    assert_eq!(CcConfig::named("reno").unwrap().name(), "new-reno");
    let err = CcConfig::named("bbr9").unwrap_err();
    assert!(
        err.contains("unknown congestion controller `bbr9`") && err.contains("lia"),
        "{err}"
    );
    let err = CcConfig::with_options("lia", registry_opts(&[("x", 1)])).unwrap_err();
    assert!(err.contains("takes no options"), "{err}");
}

fn registry_opts(kv: &[(&str, i64)]) -> crate::registry::Options {
    kv.iter()
        .map(|(k, v)| ((*k).to_string(), serde_json::Value::from(*v)))
        .collect()
}

#[test]
fn ewtcp_weights_increase_by_one_over_n_squared() {
    let mut cc = Ewtcp::default();
    // Two paths: a = 1/4 of Reno's 1000·10000/10000 = 1000 bytes.
    let two = [view(0, 10_000, 1, 100), view(1, 10_000, 1, 300)];
    assert_eq!(cc.on_ack(0, &ack(10_000), &two).cwnd, 10_250);
    // Three paths: a = 1/9; 1000/9 = 111.1.
    let three = [view(0, 9_000, 1, 100), view(1, 1, 1, 1), view(2, 1, 1, 1)];
    assert_eq!(cc.on_ack(0, &ack(9_000), &three).cwnd, 9_111);
    assert_eq!(cc.on_congestion_event(0, Instant::ZERO, &two).cwnd, 5_000);
}

#[test]
fn coupled_increases_by_total_and_decreases_by_half_total() {
    let mut cc = Coupled::default();
    let paths = [view(0, 10_000, 1, 100), view(1, 30_000, 1, 100)];
    // +MSS·acked/w_total = 1000·10000/40000 = 250.
    assert_eq!(cc.on_ack(0, &ack(10_000), &paths).cwnd, 10_250);
    // Loss on path 1: 30000 − 40000/2 = 10000; on path 0: 10000 − 20000 < 0, floor 2·MSS.
    assert_eq!(
        cc.on_congestion_event(1, Instant::ZERO, &paths).cwnd,
        10_000
    );
    assert_eq!(cc.on_congestion_event(0, Instant::ZERO, &paths).cwnd, 2_000);
}

#[test]
fn olia_alpha_sets_and_increase() {
    // A: 10 kB @ 100 ms, B: 20 kB @ 200 ms (equal rates 1e5 B/s). M = {B}.
    let paths = [view(0, 10_000, 1, 100), view(1, 20_000, 1, 200)];
    // No losses yet (l = 0 everywhere): B = both paths, B \ M = {A}: α_A = 1/(2·1), α_B = −1/2.
    assert_eq!(olia_alpha(&paths, 0, |_| 0), 0.5);
    assert_eq!(olia_alpha(&paths, 1, |_| 0), -0.5);
    // l = (1000, 5000): l/rtt² = 1e5 vs 1.25e5, best = {B} ⊂ M: all α = 0.
    let l = [1000u64, 5000];
    assert_eq!(olia_alpha(&paths, 0, |i| l[i]), 0.0);
    assert_eq!(olia_alpha(&paths, 1, |i| l[i]), 0.0);
    // First term on A: (10000/0.1²)/(1e5 + 1e5)² = 2.5e-5 per byte·MSS: 1000·1000·2.5e-5 = 25;
    // after this ACK l_A = 1000 > l_B = 0, so A is the best, not maximal: α_A = 1/2 adds
    // 1000·1000·0.5/10000 = 50.
    assert_eq!(Olia::default().on_ack(0, &ack(1000), &paths).cwnd, 10_075);
    // On B (l_B = 1000, best and maximal: α = 0): (20000/0.04)/4e10·1e6 = 12.5.
    assert_eq!(Olia::default().on_ack(1, &ack(1000), &paths).cwnd, 20_012);
    // The α < 0 case shrinks the largest window: once l_A = 1000 makes A the best path
    // (1000/0.01 > 1000/0.04), B is in M and B \\ M = {A}.
    let mut cc = Olia::default();
    cc.on_ack(0, &ack(1000), &[view(0, 10_000, u64::MAX, 100), paths[1]]);
    // α_B = −1/2: 12.5 − 1000·1000·0.5/20000 = 12.5 − 25 = −12.5.
    assert_eq!(cc.on_ack(1, &ack(1000), &paths).cwnd, 19_987);
    assert_eq!(
        cc.on_congestion_event(1, Instant::ZERO, &paths).cwnd,
        10_000
    );
}

#[test]
fn balia_increase_and_decrease() {
    // Equal rates (x = 1e5 B/s each): α = 1, increase = 1e6·(1e5/0.1)/(2e5)² = 25, LIA's value;
    // decrease = w/2·min(1, 1.5): halve.
    let paths = [view(0, 10_000, 1, 100), view(1, 20_000, 1, 200)];
    assert_eq!(balia_alpha(&paths, 0), (1.0, 2e5));
    let mut cc = Balia::default();
    assert_eq!(cc.on_ack(0, &ack(1000), &paths).cwnd, 10_025);
    assert_eq!(cc.on_congestion_event(0, Instant::ZERO, &paths).cwnd, 5_000);
    // A: 10 kB @ 100 ms (x = 1e5), B: 60 kB @ 200 ms (x = 3e5): α_A = 3, Σx = 4e5.
    // Increase on A: 1e6·(1e5/0.1)/(4e5)² = 6.25, × (1+3)/2 × (4+3)/5 = 2.8: 17.5.
    let paths = [view(0, 10_000, 1, 100), view(1, 60_000, 1, 200)];
    assert_eq!(cc.on_ack(0, &ack(1000), &paths).cwnd, 10_017);
    // Decrease on A: 10000 − 5000·min(3, 1.5) = 2500; on B (α = 1): halve.
    assert_eq!(cc.on_congestion_event(0, Instant::ZERO, &paths).cwnd, 2_500);
    assert_eq!(
        cc.on_congestion_event(1, Instant::ZERO, &paths).cwnd,
        30_000
    );
}

#[test]
fn wvegas_weights_alpha_by_rate_share_and_drains_queues() {
    let mut cc = WVegas::default();
    let paths = [
        view_rtt(20_000, 10_000, 100, 100),
        view(1, 20_000, 10_000, 100),
    ];
    // Round of 125 ms samples: diff = 20·25/125 = 4 ≥ α = 2, so α is recomputed:
    // x_A = 20000/0.125 = 160000, x_B = 20000/0.1 = 200000, α_A = 10·160/360 = 4.44 > diff: +1 MSS.
    cc.on_ack(0, &ack_at(1000, 1000, Some(125)), &paths);
    assert_eq!(
        cc.on_ack(0, &ack_at(1200, 1000, Some(125)), &paths).cwnd,
        21_000
    );
    // Next round at 150 ms: diff = 20·50/150 = 6.67; x_A = 133333, α_A = 10·0.4 = 4 < diff:
    // −1 MSS; and the queueing delay 50 ms ≥ 2 × 25 ms drains: 19000·100/(2·150) = 6333.
    cc.on_ack(0, &ack_at(1300, 1000, Some(150)), &paths);
    let w = cc.on_ack(0, &ack_at(1500, 1000, Some(150)), &paths);
    assert_eq!((w.cwnd, w.ssthresh), (6_333, 6_333));
    // Alone on one path the subflow's α is the whole α_total = 10: diff 6.67 < 10 grows.
    let mut cc = WVegas::default();
    let one = [view_rtt(20_000, 10_000, 100, 100)];
    cc.on_ack(0, &ack_at(1000, 1000, Some(150)), &one);
    assert_eq!(
        cc.on_ack(0, &ack_at(1200, 1000, Some(150)), &one).cwnd,
        21_000
    );
}

#[test]
fn mpveno_is_olia_gated_by_veno_backlog() {
    // Two paths without backlog: exactly OLIA's increase (see olia_alpha_sets_and_increase).
    let paths = [view(0, 10_000, 1, 100), view(1, 20_000, 1, 200)];
    assert_eq!(MpVeno::default().on_ack(0, &ack(1000), &paths).cwnd, 10_075);
    // One path with backlog N = 30·50/150 = 10 ≥ β: OLIA reduces to Reno (+1 MSS per window),
    // granted only every other window; the loss is congestive: halve.
    let one = [view_rtt(30_000, 10_000, 150, 100)];
    let mut cc = MpVeno::default();
    assert_eq!(
        cc.on_ack(0, &ack_at(0, 30_000, Some(150)), &one).cwnd,
        30_000
    );
    assert_eq!(
        cc.on_ack(0, &ack_at(0, 30_000, Some(150)), &one).cwnd,
        31_000
    );
    assert_eq!(cc.on_congestion_event(0, Instant::ZERO, &one).cwnd, 15_000);
    // Without backlog the loss is random: ×4/5.
    let one = [view_rtt(30_000, 10_000, 100, 100)];
    cc.on_ack(0, &ack_at(0, 1000, Some(100)), &one);
    assert_eq!(cc.on_congestion_event(0, Instant::ZERO, &one).cwnd, 24_000);
}

#[test]
fn floor_u64_matches_the_library_floor_bit_for_bit() {
    let two52 = 4_503_599_627_370_496.0_f64;
    let mut xs = vec![
        0.0,
        -0.0,
        1e-9,
        0.999_999_999,
        1.0,
        1.0 + 1e-9,
        24.999_999_999_999_996,
        25.0,
        -1e-9,
        -1.5,
        two52 - 0.5,
        two52,
        two52 + 2.0,
        1e300,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MIN_POSITIVE,
        f64::MAX,
    ];
    let mut s = 0x9e37_79b9_7f4a_7c15_u64;
    for _ in 0..10_000 {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        xs.push(f64::from_bits(s));
        xs.push((s % 1_000_000) as f64 / 997.0);
    }
    for x in xs {
        let ((a, n), b) = (floor_u64(x), x.floor());
        assert!(
            a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
            "{x:e}: {a:e} != {b:e}"
        );
        assert_eq!(n, b as u64, "{x:e}");
    }
    assert!(floor_u64(f64::NAN).0.is_nan());
    assert_eq!(floor_u64(f64::NAN).1, 0);
}
