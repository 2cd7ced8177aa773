//! Reordering tolerance (`ConnectionConfig::reorder_tolerance`) on a one-path network whose
//! forward direction holds chosen data packets back: spurious losses are recognised from the
//! late acknowledgement of the original (packet numbers are never reused), the congestion
//! response they caused is undone (RFC 4015 §2; Linux `tcp_try_undo_recovery`), and once the
//! path saw reordering, RACK's reordering window (RFC 8985 §6.2) keeps reordering within it
//! from being declared lost at all, while a real loss is still found without a timeout. Each
//! test runs the case without the option too, so it fails if the mechanism is missing.

use crate::common::net::{Fate, Net};
use tributary_proto::cc::CcConfig;
use tributary_proto::scheme::SchemeConfig;
use tributary_proto::trace::{TraceEvent, Tracer};
use tributary_proto::wire::{parse_packet, Frame, FrameIter};
use tributary_proto::{ConnectionConfig, Duration, Instant};

fn is_data(d: &[u8]) -> bool {
    parse_packet(d)
        .is_ok_and(|(_, body)| FrameIter::new(body).any(|f| matches!(f, Ok(Frame::Data { .. }))))
}

/// One path: one-way `delay`, a 100 Mbit/s bottleneck (unbounded queue) from `a` to `b`;
/// `fate` decides what happens to the `i`-th data datagram (0-based, first transmissions and
/// retransmissions alike): an extra delay (reordering: it is overtaken) or loss.
fn network(cfg: ConnectionConfig, delay: Duration, mut fate: Box<dyn FnMut(u64) -> Fate>) -> Net {
    let mut net = Net::new(cfg, delay);
    let mut data_sent = 0u64;
    net.fate = Box::new(move |d| {
        if !is_data(d) {
            return Fate::Deliver(Duration::ZERO);
        }
        data_sent += 1;
        fate(data_sent - 1)
    });
    net
}

fn cfg(tolerance: bool, cc: &str) -> ConnectionConfig {
    ConnectionConfig {
        scheme: SchemeConfig::named("tcp").unwrap(),
        cc: CcConfig::named(cc).unwrap(),
        recv_buffer: 16 << 20,
        send_buffer: 32 << 20,
        reorder_tolerance: tolerance,
        ..ConnectionConfig::default()
    }
}

/// Holds the data datagrams numbered in `held` back by `by`.
fn hold(held: Vec<u64>, by: Duration) -> Box<dyn FnMut(u64) -> Fate> {
    Box::new(move |i| {
        if held.contains(&i) {
            Fate::Deliver(by)
        } else {
            Fate::Deliver(Duration::ZERO)
        }
    })
}

/// A NewReno connection over a 50 ms path that holds data packet 300 back by 10 ms.
fn one_held_packet(tolerance: bool) -> Net {
    network(
        cfg(tolerance, "new-reno"),
        Duration::from_millis(25),
        hold(vec![300], Duration::from_millis(10)),
    )
}

/// One data packet held back 10 ms on a 50 ms path is overtaken by dozens: the packet
/// threshold declares it lost and the window is cut. Its original's acknowledgement then
/// proves the loss spurious (counted), and as it was the episode's only loss, the window
/// comes back (RFC 4015 §2's response). Without the option: the loss stands, nothing counted.
#[test]
fn a_late_original_proves_the_loss_spurious_and_the_reduction_is_undone() {
    for tolerance in [true, false] {
        let mut net = one_held_packet(tolerance);
        net.transfer(2 << 20, Duration::from_secs(30));
        let s = net.a.stats().paths[0];
        assert_eq!(s.packets_lost, 1, "tolerance {tolerance}: {s:?}");
        assert_eq!(s.congestion_events, 1, "tolerance {tolerance}: {s:?}");
        let p = net.a.path(0).unwrap();
        if tolerance {
            assert_eq!((s.spurious_losses, s.undos), (1, 1), "{s:?}");
            // Slow start resumed (ssthresh restored to "none").
            assert_eq!(p.ssthresh, u64::MAX, "{p:?}");
        } else {
            assert_eq!((s.spurious_losses, s.undos), (0, 0), "{s:?}");
            assert!(p.ssthresh < u64::MAX, "{p:?}");
        }
    }
}

/// Records the loss, spurious-loss and undo events of a trace, in order.
#[derive(Debug, Clone, Default)]
struct Events(std::sync::Arc<std::sync::Mutex<Vec<(&'static str, u64)>>>);

impl Tracer for Events {
    fn event(&mut self, _now: Instant, event: &TraceEvent<'_>) {
        let e = match *event {
            TraceEvent::PacketLost { pn, .. } => ("lost", pn),
            TraceEvent::SpuriousLoss { pn, .. } => ("spurious", pn),
            TraceEvent::CongestionUndone { path } => ("undone", path as u64),
            _ => return,
        };
        self.0.lock().unwrap().push(e);
    }
}

/// The trace (qlog's `tributary:spurious_loss` and `tributary:congestion_undone`) says what the
/// counters count, for the packet that was declared lost: a user debugging a real link that
/// reorders sees which losses were not. Without the option: the loss only.
#[test]
fn the_trace_names_the_spurious_loss_and_the_undo() {
    for tolerance in [true, false] {
        let mut net = one_held_packet(tolerance);
        let events = Events::default();
        net.a.set_tracer(Box::new(events.clone()));
        net.transfer(2 << 20, Duration::from_secs(30));
        let got = events.0.lock().unwrap().clone();
        let lost = got.iter().find(|e| e.0 == "lost").expect("one loss").1;
        if tolerance {
            assert_eq!(got, [("lost", lost), ("spurious", lost), ("undone", 0)]);
        } else {
            assert_eq!(got, [("lost", lost)]);
        }
    }
}

/// RFC 8985 §6.2: once a path saw reordering, reordering within the reordering window
/// (min_RTT/4 = 12.5 ms here; packets held back 10 ms) causes no loss declaration at all:
/// of five packets held back, only the first is declared lost (and proves spurious).
/// Without the option every one of them is a loss and a congestion event.
#[test]
fn reordering_within_the_window_is_not_declared_lost() {
    let held = vec![300, 1000, 1500, 2000, 2500];
    for tolerance in [true, false] {
        let mut net = network(
            cfg(tolerance, "new-reno"),
            Duration::from_millis(25),
            hold(held.clone(), Duration::from_millis(10)),
        );
        net.transfer(6 << 20, Duration::from_secs(30));
        let s = net.a.stats().paths[0];
        if tolerance {
            assert_eq!(
                (s.packets_lost, s.spurious_losses, s.undos),
                (1, 1, 1),
                "{s:?}"
            );
        } else {
            assert_eq!((s.packets_lost, s.congestion_events), (5, 5), "{s:?}");
        }
    }
}

/// The window adapts (RFC 8985 §6.2 step 4). A 50 ms path whose sender is held to about
/// 60 % of the path's capacity by the receive window (256 KiB), so no queue forms and the RTT
/// stays at its minimum: the first window is min_RTT/4 = 12.5 ms and packets held back 20 ms
/// are declared lost, spuriously; each round trip with a spurious loss widens the window by
/// min_RTT/4, so from the first such round (25 ms) on, later reorderings of 20 ms are
/// tolerated: of five held packets only the first is declared lost. With the window fixed
/// at min_RTT/4 (no adaptation) all five would be.
#[test]
fn the_reordering_window_grows_with_spurious_losses() {
    let held = vec![300, 1000, 1500, 2000, 2500];
    let mut c = cfg(true, "new-reno");
    c.recv_buffer = 256 << 10;
    let mut net = network(
        c,
        Duration::from_millis(25),
        hold(held, Duration::from_millis(20)),
    );
    net.transfer(6 << 20, Duration::from_secs(30));
    let s = net.a.stats().paths[0];
    assert_eq!((s.packets_lost, s.spurious_losses), (1, 1), "{s:?}");
}

/// A real loss after reordering was seen is still found by the packet threshold once the
/// reordering window has passed (the reordering timer or the next ACK), not by the
/// retransmission timer, and its congestion response is not undone.
#[test]
fn a_real_loss_after_reordering_is_found_and_not_undone() {
    for tolerance in [true, false] {
        let mut net = network(
            cfg(tolerance, "cubic"),
            Duration::from_millis(25),
            Box::new(|i| match i {
                300 => Fate::Deliver(Duration::from_millis(10)),
                1500 => Fate::Drop,
                _ => Fate::Deliver(Duration::ZERO),
            }),
        );
        net.transfer(4 << 20, Duration::from_secs(30));
        let s = net.a.stats().paths[0];
        assert_eq!(s.rto_count, 0, "{s:?}");
        if tolerance {
            // 300: lost, spurious, undone; 1500: lost for real, one more congestion event.
            assert_eq!(
                (
                    s.packets_lost,
                    s.spurious_losses,
                    s.undos,
                    s.congestion_events
                ),
                (2, 1, 1, 2),
                "{s:?}"
            );
            assert!(net.a.path(0).unwrap().ssthresh < u64::MAX);
        } else {
            assert_eq!(
                (s.packets_lost, s.undos, s.congestion_events),
                (2, 0, 2),
                "{s:?}"
            );
        }
    }
}

/// Every controller goes through the undo (`CongestionControl::on_spurious_congestion`):
/// after the one spurious loss of a 1 MiB transfer (in slow start), each ends with a window
/// within 10 % of the one it reaches when no packet is held back — RFC 4015 §2's goal, the
/// connection continues as if the spurious retransmission had not happened (the default
/// rule, CUBIC's state restore of RFC 9438 §4.9; BBR took no reduction and keeps its window).
/// Without the option, the loss-based controllers end far lower (checked for NewReno).
#[test]
fn every_controller_undoes_a_spurious_reduction() {
    let end = |tolerance: bool, cc: &str, held: Vec<u64>| {
        let mut net = network(
            cfg(tolerance, cc),
            Duration::from_millis(25),
            hold(held, Duration::from_millis(10)),
        );
        net.transfer(1 << 20, Duration::from_secs(30));
        (net.a.path(0).unwrap().cwnd, net.a.stats().paths[0])
    };
    for entry in tributary_proto::cc::CONTROLLERS {
        let (clean, _) = end(true, entry.name, vec![]);
        let (cwnd, s) = end(true, entry.name, vec![300]);
        assert_eq!(
            (s.spurious_losses, s.undos),
            (1, 1),
            "{}: {s:?}",
            entry.name
        );
        assert!(
            cwnd.abs_diff(clean) * 10 <= clean,
            "{}: window {cwnd} after the undo, {clean} without reordering",
            entry.name
        );
    }
    let (clean, _) = end(false, "new-reno", vec![]);
    let (cwnd, _) = end(false, "new-reno", vec![300]);
    assert!(cwnd * 2 < clean, "{cwnd} vs {clean}");
}
