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
