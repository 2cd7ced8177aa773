use super::*;
use crate::time::Duration;

fn view(id: usize, cwnd: u64, ssthresh: u64, rtt_ms: u64) -> PathView {
    PathView {
        id,
        active: true,
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
