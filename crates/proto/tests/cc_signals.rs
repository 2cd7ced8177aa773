//! Honest congestion signals and the TCP profiles, each checked against the rule it
//! implements on a one-path network with delay (and, where it matters, a bottleneck rate):
//! window growth only when window-limited (RFC 7661), the ACK's ack delay subtracted from RTT
//! samples (RFC 9002 §5.3), pacing (RFC 9002 §7.7) and the controller's pacing hook, the
//! tail-loss probe (RFC 8985 §7), and the `classic` profile's per-ACK growth and
//! timer-recovered lost retransmissions (ns-3 NewReno). Each test also runs the case the rule
//! changes without it, so it fails if the rule is missing.

use crate::common::net::{data_of, Fate, Net};
use std::sync::Arc;
use tributary_proto::cc::{AckEvent, CcConfig, CcFactory, CongestionControl, NewReno, Window};
use tributary_proto::path::PathView;
use tributary_proto::registry::{Factory, Options};
use tributary_proto::scheme::SchemeConfig;
use tributary_proto::{ConnectionConfig, Duration, Instant, TcpProfile};

fn tcp(profile: TcpProfile) -> ConnectionConfig {
    ConnectionConfig {
        scheme: SchemeConfig::named("tcp").unwrap(),
        profile,
        ..ConnectionConfig::default()
    }
}

/// RFC 7661 / Linux `tcp_is_cwnd_limited`: a sender held back by the peer's receive window
/// (32 KiB here) never fills its congestion window, so that window must not grow past what
/// slow start may need (twice the largest flight). Before the rule it grew by every byte
/// acknowledged (to about the size of the transfer).
#[test]
fn window_grows_only_when_it_limits_sending() {
    let cfg = ConnectionConfig {
        recv_buffer: 32 * 1024,
        ..tcp(TcpProfile::Linux)
    };
    let mut net = Net::new(cfg, Duration::from_millis(20));
    net.transfer(4 << 20, Duration::from_secs(60));
    let p = net.a.path(0).unwrap();
    let bound = 2 * (32 * 1024 + p.mss) + 2 * p.mss;
    assert!(
        p.cwnd <= bound,
        "cwnd {} grew beyond twice the receive-window-limited flight ({bound})",
        p.cwnd
    );
    assert!(
        !p.cwnd_limited,
        "the receive window, not cwnd, limited this path"
    );
}

/// RFC 9000 §13.2.5 / RFC 9002 §5.3: lone packets wait `max_ack_delay` (25 ms) for their
/// ACK; the ACK says so and the sender's smoothed RTT is the path's 20 ms, not 45 ms. (A
/// first burst, acknowledged at once every second packet, gives the minimum RTT below which
/// RFC 9002 never lets a delay take a sample.) The `classic` profile keeps raw samples
/// (ns-3's timestamps include the delay).
#[test]
fn ack_delay_is_subtracted_from_rtt_samples() {
    for (profile, want_ms) in [(TcpProfile::Linux, 20.0), (TcpProfile::Classic, 45.0)] {
        let mut net = Net::new(tcp(profile), Duration::from_millis(10));
        // Pure delay: every packet's RTT is exactly 20 ms. (With serialisation the minimum
        // would include the burst's larger packets, and RFC 9002 refuses a subtraction that
        // takes a sample below the minimum.)
        net.rate = None;
        net.a.write(&[1u8; 10 * 1400]);
        net.run(Instant::ZERO + Duration::from_millis(200));
        for _ in 0..40 {
            net.a.write(&[1u8; 500]);
            let t = net.now + Duration::from_millis(200);
            net.run(t);
        }
        let srtt = net.a.path(0).unwrap().srtt.unwrap().as_secs_f64() * 1e3;
        assert!(
            (srtt - want_ms).abs() < 1.0,
            "{profile:?}: srtt {srtt:.2} ms, want {want_ms} ms"
        );
    }
}

/// RFC 9002 §6.2.1: once ACK delays come off the RTT samples, the timer must add
/// `max_ack_delay` back, or a lone packet (whose ACK the receiver holds up to 25 ms) on a
/// path whose RTT is near the 200 ms floor times out although nothing was lost. 180 ms RTT,
/// no loss, 40 lone 500-byte writes a second apart: no timeout in either profile. Before the
/// allowance the `linux` profile took one per lone packet once RTTVAR had decayed (timer
/// max(200, 180 + 4·RTTVAR) ms against an ACK after 205 ms).
#[test]
fn lone_packets_with_delayed_acks_do_not_time_out() {
    for profile in [TcpProfile::Linux, TcpProfile::Classic] {
        let mut net = Net::new(tcp(profile), Duration::from_millis(90));
        net.rate = None;
        net.a.write(&[1u8; 10 * 1400]);
        net.run(Instant::ZERO + Duration::from_secs(1));
        for _ in 0..40 {
            net.a.write(&[1u8; 500]);
            let t = net.now + Duration::from_secs(1);
            net.run(t);
        }
        assert_eq!(net.read, 10 * 1400 + 40 * 500, "{profile:?}");
        let s = &net.a.stats().paths[0];
        assert_eq!(s.rto_count, 0, "{profile:?}: spurious timeouts");
    }
}

/// Data packets sent on path 0 at the same instant once an RTT was measured (after the
/// first 200 ms, well past the first sample).
fn bursts(net: &Net) -> usize {
    let s = &net.data_sends;
    s.windows(2)
        .filter(|w| w[0].0 > Instant::ZERO + Duration::from_millis(200) && w[0].0 == w[1].0)
        .count()
}

/// RFC 9002 §7.7: with pacing on, no two data packets leave at once after the first RTT
/// sample, and consecutive ones are at least `size / (2·cwnd/SRTT)` apart. Without pacing the
/// same transfer sends window bursts.
#[test]
fn pacing_spaces_data_packets() {
    let run = |pacing| {
        let cfg = ConnectionConfig {
            pacing,
            ..tcp(TcpProfile::Linux)
        };
        let mut net = Net::new(cfg, Duration::from_millis(50));
        net.rate = Some(5_000_000);
        net.transfer(3 << 20, Duration::from_secs(60));
        net
    };
    let unpaced = run(false);
    assert!(
        bursts(&unpaced) > 100,
        "unpaced: {} bursts",
        bursts(&unpaced)
    );
    let paced = run(true);
    assert_eq!(bursts(&paced), 0, "paced data packets left together");
}

/// A controller that sets its own pacing rate (as BBR will) while `pacing` is off.
#[derive(Debug, Default)]
struct FixedRate(NewReno);

const FIXED_RATE: u64 = 1_000_000;

impl CongestionControl for FixedRate {
    fn name(&self) -> &'static str {
        "fixed-rate"
    }
    fn on_ack(&mut self, path: usize, ack: &AckEvent, paths: &[PathView]) -> Window {
        self.0.on_ack(path, ack, paths)
    }
    fn on_congestion_event(&mut self, path: usize, now: Instant, paths: &[PathView]) -> Window {
        self.0.on_congestion_event(path, now, paths)
    }
    fn pacing_rate(&self, _path: usize, _paths: &[PathView]) -> Option<u64> {
        Some(FIXED_RATE)
    }
}

#[derive(Debug)]
struct FixedRateFactory;

impl Factory for FixedRateFactory {
    fn options(&self) -> Options {
        Options::new()
    }
}

impl CcFactory for FixedRateFactory {
    fn build(&self) -> Box<dyn CongestionControl> {
        Box::<FixedRate>::default()
    }
}

/// The controller's rate hook drives pacing: every data packet leaves at least
/// `size / rate` after the previous one, and the transfer takes about `bytes / rate`.
#[test]
fn controller_pacing_rate_drives_pacing() {
    let cfg = ConnectionConfig {
        cc: CcConfig::custom("fixed-rate", Arc::new(FixedRateFactory)),
        ..tcp(TcpProfile::Linux)
    };
    assert!(!cfg.pacing);
    let mut net = Net::new(cfg, Duration::from_millis(10));
    let n = 1 << 20;
    let done = net.transfer(n, Duration::from_secs(60));
    for w in net.data_sends.windows(2) {
        let gap = w[1].0.saturating_since(w[0].0).as_nanos();
        let want = w[0].1 as u64 * 1_000_000_000 / FIXED_RATE;
        assert!(gap >= want, "gap {gap} ns < {want} ns");
    }
    let secs = done.saturating_since(Instant::ZERO).as_secs_f64();
    let model = n as f64 * 1.04 / FIXED_RATE as f64; // stream bytes plus ~4 % headers
    assert!(
        (secs - model).abs() < 0.1 * model,
        "took {secs:.3} s, paced model {model:.3} s"
    );
}

/// RFC 8985 §7: the last data packet of a transfer is lost. With the probe, the loss is
/// repaired within one RTT plus a delayed ACK (the last acknowledgement before the probe
/// timer starts), the probe timeout 2·SRTT + max_ack_delay (one packet in flight), and two
/// RTTs (the probe's ACK, then the retransmission's) after that packet left; without it,
/// only the retransmission timer (min_rto = 1 s here) repairs it.
#[test]
fn tail_loss_probe_repairs_a_tail_loss_before_the_timer() {
    let n = 40 * 1400;
    let run = |tlp| {
        let cfg = ConnectionConfig {
            tail_loss_probe: tlp,
            min_rto: Duration::from_secs(1),
            ..tcp(TcpProfile::Linux)
        };
        let mut net = Net::new(cfg, Duration::from_millis(25));
        let mut dropped = false;
        net.fate = Box::new(move |d| {
            let last = data_of(d).is_some_and(|(o, l)| o + l as u64 == n as u64);
            let drop = last && !dropped;
            dropped |= drop;
            Fate::drop_if(drop)
        });
        let done = net.transfer(n, Duration::from_secs(30));
        let last_send = net.data_sends.iter().rev().nth(1).unwrap().0;
        let srtt = net.a.path(0).unwrap().srtt.unwrap();
        (
            done.saturating_since(last_send),
            net.a.stats().paths[0].rto_count,
            srtt,
        )
    };
    let (with, rtos, srtt) = run(true);
    let rtt = Duration::from_millis(50);
    let delay = Duration::from_millis(25);
    let bound = rtt.saturating_mul(3) + srtt.saturating_mul(2) + delay.saturating_mul(2);
    assert!(
        with <= bound + Duration::from_millis(10),
        "with TLP: {with}, bound {bound}"
    );
    assert_eq!(rtos, 0);
    let (without, rtos, _) = run(false);
    assert!(without >= Duration::from_secs(1), "without TLP: {without}");
    assert_eq!(rtos, 1);
}

/// The `classic` profile counts growth per ACK (ns-3 NewReno): in slow start with delayed
/// ACKs (b = 2) each ACK adds one MSS, so the window grows by (1 + 1/b) = 1.5× per RTT
/// instead of 2× (Linux's byte counting). After 5 RTTs from 10 packets: 10·1.5⁵ ≈ 76 packets
/// against 10·2⁵ = 320.
#[test]
fn classic_grows_per_ack() {
    for (profile, factor) in [(TcpProfile::Linux, 2.0f64), (TcpProfile::Classic, 1.5)] {
        let cfg = ConnectionConfig {
            recv_buffer: 64 << 20,
            send_buffer: 64 << 20,
            ..tcp(profile)
        };
        let mut net = Net::new(cfg, Duration::from_millis(50));
        // 1 Gbit/s: serialisation delays the rounds by a few milliseconds only.
        net.rate = Some(125_000_000);
        net.bulk_left = 32 << 20;
        // Five round trips of 100 ms and a little: the fifth round's ACKs have arrived.
        net.run(Instant::ZERO + Duration::from_millis(510));
        let p = net.a.path(0).unwrap();
        let packets = p.cwnd as f64 / p.mss as f64;
        let model = 10.0 * factor.powi(5);
        assert!(
            (packets - model).abs() < 0.15 * model,
            "{profile:?}: {packets:.1} packets after 5 RTTs, model {model:.1}"
        );
    }
}

/// The `classic` profile recovers a lost retransmission by the retransmission timer (ns-3:
/// RFC 6675's NextSeg never resends a segment twice); `linux` detects it like any loss (its
/// new packet number is overtaken by later ones).
#[test]
fn classic_recovers_a_lost_retransmission_by_the_timer() {
    for (profile, want_rto) in [(TcpProfile::Linux, false), (TcpProfile::Classic, true)] {
        let cfg = ConnectionConfig {
            min_rto: Duration::from_secs(1),
            ..tcp(profile)
        };
        let mut net = Net::new(cfg, Duration::from_millis(25));
        let target = 30 * 1400u64;
        let mut drops = 0;
        net.fate = Box::new(move |d| {
            let hit = data_of(d).is_some_and(|(o, l)| o <= target && target < o + l as u64);
            let drop = hit && drops < 2;
            drops += u32::from(drop);
            Fate::drop_if(drop)
        });
        let done = net.transfer(2 << 20, Duration::from_secs(60));
        let rtos = net.a.stats().paths[0].rto_count;
        assert_eq!(
            rtos > 0,
            want_rto,
            "{profile:?}: {rtos} timeouts, done at {done:?}"
        );
    }
}

/// The `classic` timer restarts only when SND.UNA advances (ns-3): once the retransmission of
/// the oldest segment is lost, acknowledgements of later packets do not push the timeout back,
/// so it fires at most one RTO (min 1 s here) after that retransmission left. (A timer
/// restarted by every acknowledgement would wait until the later packets stop coming.)
#[test]
fn classic_timer_restarts_only_when_snd_una_advances() {
    let cfg = ConnectionConfig {
        min_rto: Duration::from_secs(1),
        ..tcp(TcpProfile::Classic)
    };
    let mut net = Net::new(cfg, Duration::from_millis(25));
    let target = 30 * 1400u64;
    let mut drops = 0;
    net.fate = Box::new(move |d| {
        let hit = data_of(d).is_some_and(|(o, l)| o <= target && target < o + l as u64);
        let drop = hit && drops < 2;
        drops += u32::from(drop);
        Fate::drop_if(drop)
    });
    // Run until the timer fires, noting when.
    net.a.write(&vec![0u8; 8 << 20]);
    let mut fired = None;
    for ms in 1..20_000u64 {
        net.run(Instant::ZERO + Duration::from_millis(ms));
        net.a.write(&vec![0u8; 1 << 20]);
        if net.a.stats().paths[0].rto_count > 0 {
            fired = Some(net.now);
            break;
        }
    }
    let fired = fired.expect("the lost retransmission must be recovered by the timer");
    let sends: Vec<Instant> = net
        .data_offsets
        .iter()
        .filter(|&&(_, o)| o <= target && target < o + 1400)
        .map(|&(t, _)| t)
        .collect();
    assert!(
        sends.len() >= 2,
        "the segment was sent {} times",
        sends.len()
    );
    let retransmitted = sends[1];
    // Data kept flowing after the retransmission (so a restart-on-every-ACK timer would
    // have been pushed back past the bound).
    assert!(net
        .data_sends
        .iter()
        .any(|&(t, _)| t > retransmitted + Duration::from_millis(500)));
    let rto = Duration::from_secs(1) + Duration::from_millis(60);
    assert!(
        fired <= retransmitted + rto,
        "timer fired at {fired:?}, retransmission left at {retransmitted:?}"
    );
}

/// The window and flight of `a`'s path just before and after its first congestion event,
/// with one data packet (the 40th) dropped in slow start; steps of 10 µs, so that at most
/// one ACK arrives per step (the bottleneck spaces packets 112 µs apart).
fn first_reduction(profile: TcpProfile) -> (PathView, PathView) {
    let mut net = Net::new(tcp(profile), Duration::from_millis(25));
    let target = 40 * 1400u64;
    let mut dropped = false;
    net.fate = Box::new(move |d| {
        let hit = data_of(d).is_some_and(|(o, l)| o <= target && target < o + l as u64);
        let drop = hit && !dropped;
        dropped |= drop;
        Fate::drop_if(drop)
    });
    net.bulk_left = 8 << 20;
    let mut before = net.a.path(0).unwrap();
    for step in 1..200_000u64 {
        net.run(Instant::ZERO + Duration::from_micros(10 * step));
        let now = net.a.path(0).unwrap();
        if net.a.stats().paths[0].congestion_events > 0 {
            return (before, now);
        }
        before = now;
    }
    panic!("{profile:?}: no congestion event");
}

/// `classic` reduces from the bytes in flight, `linux` from cwnd. RFC 5681 §3.1 Eq. 4 sets
/// ssthresh = max(FlightSize/2, 2·SMSS), and ns-3.37 (`TcpSocketBase::EnterRecovery` passes
/// `BytesInFlight()`, the RFC 6675 pipe without SACKed or lost segments, to
/// `TcpNewReno::GetSsThresh`) does so; Linux halves cwnd (`tcp_reno_ssthresh`). When the third
/// later packet is acknowledged, the pipe is cwnd less the lost packet and those
/// acknowledged, so with small windows (high loss) the two differ by a packet or two per
/// reduction.
#[test]
fn classic_reduces_from_the_flight() {
    let (before, after) = first_reduction(TcpProfile::Linux);
    assert!(
        after.ssthresh >= before.cwnd / 2,
        "linux: ssthresh {} from cwnd {} (flight {})",
        after.ssthresh,
        before.cwnd,
        after.bytes_in_flight
    );
    let (before, after) = first_reduction(TcpProfile::Classic);
    // Nothing may be sent at the event (the flight exceeds the halved window), so the flight
    // read after it is the flight the reduction saw.
    assert!(after.bytes_in_flight >= after.cwnd, "{after:?}");
    assert_eq!(
        after.ssthresh,
        (after.bytes_in_flight / 2).max(2 * after.mss),
        "classic: ssthresh from the flight"
    );
    // The lost packet and those acknowledged above it left the pipe (here 2.5 packets: the
    // window grew on the same ACKs), so half the pipe is at least one MSS below cwnd/2.
    assert!(
        after.ssthresh + after.mss <= before.cwnd / 2,
        "classic: ssthresh {} not below cwnd/2 = {} by the packets out of the pipe",
        after.ssthresh,
        before.cwnd / 2
    );
}

/// `classic` sends a data packet only when a whole packet fits in the window, as ns-3
/// (`TcpSocketBase::AvailableWindow` / `SendPendingData` send no partial window: an initial
/// window of 10 segments is 10 segments); `linux` sends while the flight is below the window
/// (RFC 9002 §7, which lets it overshoot by one packet: here an 11th, since a packet of 1400
/// bytes of data is smaller than the MSS the window counts). At small windows (2–4 packets,
/// 3 % loss at 20 ms) that extra packet is a quarter of the rate.
#[test]
fn classic_window_holds_whole_packets() {
    for (profile, want) in [(TcpProfile::Linux, 11), (TcpProfile::Classic, 10)] {
        let cfg = ConnectionConfig {
            mss: 1400,
            initial_window: 10,
            ..tcp(profile)
        };
        let mut net = Net::new(cfg, Duration::from_millis(25));
        net.bulk_left = 1 << 20;
        net.run(Instant::ZERO + Duration::from_millis(10));
        assert_eq!(
            net.data_sends.len(),
            want,
            "{profile:?}: data packets in the first round trip"
        );
    }
}

/// RFC 5681 §3.1 (the note after Eq. 4): a timeout that follows a timeout with nothing
/// acknowledged in between holds ssthresh constant (Linux and ns-3 do the same). A bulk
/// transfer whose path loses every data packet for 3 s times out four times or more; ssthresh
/// after the last of them must equal what the first set (half the window before the outage).
/// Before, each further timeout recomputed it from the one-packet window the previous one left,
/// collapsing it to 2 MSS, and the path crawled back up from there.
#[test]
fn repeated_timeouts_hold_ssthresh() {
    for profile in [TcpProfile::Linux, TcpProfile::Classic] {
        let mut net = Net::new(tcp(profile), Duration::from_millis(25));
        net.bulk_left = 1 << 30;
        let down = std::rc::Rc::new(std::cell::Cell::new(false));
        let d = down.clone();
        net.fate = Box::new(move |p| Fate::drop_if(d.get() && data_of(p).is_some()));
        net.run(Instant::ZERO + Duration::from_secs(2));
        let mss = net.a.path(0).unwrap().mss;
        down.set(true);
        let mut first = None;
        while net.a.stats().paths[0].rto_count < 4
            && net.now < Instant::ZERO + Duration::from_secs(60)
        {
            let t = net.now + Duration::from_millis(10);
            net.run(t);
            if first.is_none() && net.a.stats().paths[0].rto_count == 1 {
                first = Some(net.a.path(0).unwrap().ssthresh);
            }
        }
        let first = first.expect("a timeout");
        let last = net.a.path(0).unwrap().ssthresh;
        assert!(net.a.stats().paths[0].rto_count >= 4, "{profile:?}");
        assert!(
            first > 4 * mss,
            "{profile:?}: ssthresh {first} after the first timeout"
        );
        assert_eq!(
            last, first,
            "{profile:?}: ssthresh after the fourth timeout"
        );
    }
}

/// Congestion window validation (`cwnd_validation`, Linux's default rules: RFC 2861,
/// RFC 7661 §4.4). A bulk transfer grows the window over 1 s on a 100 Mbit/s, 50 ms path;
/// then the source pauses. (1) Restart after idle (`tcp_cwnd_restart`): after 2 s with
/// nothing in flight (several RTOs), the first packets sent again leave the window at the
/// initial window (one halving per RTO idle, floored at the initial window) with ssthresh at
/// least ¾ of the old window; without the option the whole old window is usable at once.
/// (2) Application-limited decay (`tcp_cwnd_application_limited`): a source that then writes
/// one packet every 20 ms (far below the window) for 2 s must see the window shrink towards
/// what it uses; without the option it keeps the window it grew.
#[test]
fn cwnd_validation_restarts_after_idle_and_decays_unused_windows() {
    for on in [false, true] {
        let cfg = ConnectionConfig {
            cwnd_validation: on,
            ..tcp(TcpProfile::Linux)
        };
        // (1) restart after idle
        let mut net = Net::new(cfg.clone(), Duration::from_millis(25));
        let iw = cfg.initial_window * net.a.path(0).unwrap().mss;
        net.bulk_left = 4 << 20;
        net.run(Instant::ZERO + Duration::from_secs(1));
        net.bulk_left = 0;
        // Let the flight drain, then stay idle (the network's clock stops at its last event).
        net.run(Instant::ZERO + Duration::from_secs(3));
        net.now = net.now.max(Instant::ZERO + Duration::from_secs(3));
        let grown = net.a.path(0).unwrap().cwnd;
        assert!(grown > 8 * iw, "on {on}: window {grown} after 1 s of bulk");
        assert_eq!(net.a.path(0).unwrap().packets_in_flight, 0);
        net.bulk_left = 1400;
        net.pump();
        let after = net.a.path(0).unwrap();
        if on {
            assert!(after.cwnd <= iw, "on: window {} after 2 s idle", after.cwnd);
            assert!(
                after.ssthresh >= grown * 3 / 4,
                "on: ssthresh {}",
                after.ssthresh
            );
        } else {
            assert_eq!(after.cwnd, grown, "off: the window must stay");
        }
        // (2) application-limited decay
        let mut net = Net::new(cfg, Duration::from_millis(25));
        net.bulk_left = 4 << 20;
        net.run(Instant::ZERO + Duration::from_secs(1));
        let grown = net.a.path(0).unwrap().cwnd;
        net.bulk_left = 0;
        let mut t = Instant::ZERO + Duration::from_secs(1);
        while t < Instant::ZERO + Duration::from_secs(3) {
            t += Duration::from_millis(20);
            net.run(t);
            net.now = net.now.max(t);
            net.bulk_left += 1400;
        }
        let now = net.a.path(0).unwrap().cwnd;
        if on {
            assert!(
                now < grown / 4,
                "on: window {now} of {grown} after 2 s of trickle"
            );
        } else {
            assert_eq!(now, grown, "off: a window that does not limit must stay");
        }
    }
}
