//! Silly-window avoidance (RFC 1122 §4.2.3.3-4, RFC 9293 §3.8.6.2): a receive window that
//! opens a few bytes at a time must not draw packets of a few bytes, whichever end is to
//! blame. Every scheme whose data goes out as ARQ segments (`tcp`, `mptcp`, `dfec`, `tcp-ir`,
//! `cmt-sctp`), one path, no loss, a 64 KiB receive buffer.

use tributary_proto::scheme::SchemeConfig;
use tributary_proto::wire::{parse_packet, Frame, FrameIter};
use tributary_proto::{Connection, ConnectionConfig, Duration, Instant};

use crate::common::{data, Source};

const ARQ_SCHEMES: [&str; 5] = ["tcp", "mptcp", "dfec", "tcp-ir", "cmt-sctp"];

/// A full segment is 1,394-1,400 bytes (the MSS less what a packet's other frames take);
/// anything below this is a fragment of one.
const SHORT: usize = 1_300;

fn cfg(scheme: &str, recv_buffer: usize) -> ConnectionConfig {
    ConnectionConfig {
        scheme: SchemeConfig::named(scheme).unwrap(),
        recv_buffer,
        ..ConnectionConfig::default()
    }
}

/// What a transfer of `d` showed: the bytes read, the DATA frame lengths (with offsets) `a`
/// sent, and every flow-control limit `b` advertised, in order.
struct Seen {
    got: Vec<u8>,
    data_frames: Vec<(u64, usize)>,
    max_data: Vec<u64>,
}

/// Moves `d` from `a` to `b` over a zero-delay network (5 ms steps when nothing moves, so
/// timers fire); `b`'s application reads at most `read_per_round` bytes per round.
fn transfer(a: &mut Connection, b: &mut Connection, d: &[u8], read_per_round: u64) -> Seen {
    let mut src = Source::new(d);
    let mut now = Instant::ZERO;
    let mut buf = vec![0u8; 2048];
    let mut seen = Seen {
        got: Vec::new(),
        data_frames: Vec::new(),
        max_data: Vec::new(),
    };
    for _ in 0..2_000_000 {
        src.pump(a);
        let mut moved = false;
        while let Some(t) = a.poll_transmit(now, &mut buf) {
            let p = &buf[..t.len];
            if let Ok((_, body)) = parse_packet(p) {
                for f in FrameIter::new(body).flatten() {
                    if let Frame::Data { offset, data } = f {
                        seen.data_frames.push((offset, data.len()));
                    }
                }
            }
            let _ = b.handle_datagram(now, p);
            moved = true;
        }
        while let Some(t) = b.poll_transmit(now, &mut buf) {
            let p = &buf[..t.len];
            if let Ok((_, body)) = parse_packet(p) {
                for f in FrameIter::new(body).flatten() {
                    if let Frame::Ack(ack) = f {
                        seen.max_data.push(ack.max_data);
                    }
                }
            }
            let _ = a.handle_datagram(now, p);
            moved = true;
        }
        let n = b.read_with(read_per_round, |s| seen.got.extend_from_slice(s));
        if b.is_finished() && a.is_all_acked() {
            break;
        }
        if !moved && n == 0 {
            now += Duration::from_millis(5);
            a.handle_timeout(now);
            b.handle_timeout(now);
        }
    }
    seen
}

/// DATA frames shorter than a segment, other than the one ending the stream.
fn fragments(seen: &Seen, end: u64) -> Vec<(u64, usize)> {
    seen.data_frames
        .iter()
        .copied()
        .filter(|&(off, len)| len < SHORT && off + len as u64 != end)
        .collect()
}

/// An application reading 100 bytes at a time: the window opens by 100 bytes per read. The
/// transfer completes and sends whole segments only (before 2026-11-27 a slow reader drew
/// data packets of 1-100 bytes).
#[test]
fn a_slow_reader_draws_no_small_packets() {
    let d = data(400_000);
    for scheme in ARQ_SCHEMES {
        let mut a = Connection::new(cfg(scheme, 64 << 10), 1).unwrap();
        let mut b = Connection::new(cfg(scheme, 64 << 10), 1).unwrap();
        let seen = transfer(&mut a, &mut b, &d, 100);
        assert!(
            seen.got == d,
            "{scheme}: {} of {} bytes",
            seen.got.len(),
            d.len()
        );
        let short = fragments(&seen, d.len() as u64);
        assert!(short.is_empty(), "{scheme}: short DATA frames {short:?}");
    }
}

/// Receiver side (RFC 1122 §4.2.3.3): the advertised limit moves in steps of at least
/// min(buffer / 2, MSS), however little the application reads at a time.
#[test]
fn the_window_opens_in_steps_of_at_least_a_segment() {
    let d = data(200_000);
    let c = cfg("tcp", 64 << 10);
    let step = (c.recv_buffer as u64 / 2).min(c.mss as u64);
    let mut a = Connection::new(c.clone(), 1).unwrap();
    let mut b = Connection::new(c, 1).unwrap();
    let seen = transfer(&mut a, &mut b, &d, 37);
    assert!(seen.got == d);
    let moves: Vec<u64> = seen
        .max_data
        .windows(2)
        .map(|w| w[1] - w[0])
        .filter(|&m| m > 0)
        .collect();
    assert!(moves.len() > 5, "{} window moves", moves.len());
    let small: Vec<u64> = moves.iter().copied().filter(|&m| m < step).collect();
    assert!(small.is_empty(), "steps below {step}: {small:?}");
}

/// Sender side (RFC 1122 §4.2.3.4): with a fast reader the window opens a segment at a time,
/// but a buffer that is no multiple of the segment leaves a remnant at the window's edge.
/// The sender keeps it for the next segment rather than sending it alone (before
/// 2026-11-27, one remnant packet each time the window filled).
#[test]
fn a_remnant_of_the_window_waits_for_a_full_segment() {
    let d = data(1_000_000);
    for scheme in ARQ_SCHEMES {
        // 46 segments and 300 bytes.
        let buffer = 46 * 1400 + 300;
        let mut a = Connection::new(cfg(scheme, buffer), 1).unwrap();
        let mut b = Connection::new(cfg(scheme, buffer), 1).unwrap();
        let seen = transfer(&mut a, &mut b, &d, u64::MAX);
        assert!(seen.got == d, "{scheme}");
        let short = fragments(&seen, d.len() as u64);
        assert!(short.is_empty(), "{scheme}: short DATA frames {short:?}");
    }
}
