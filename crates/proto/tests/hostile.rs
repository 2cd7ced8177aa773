//! Hostile and malformed input: the connection drops and counts it, never panics, and keeps
//! working afterwards.

use crate::common;

use common::{transfer, wrap};
use proptest::prelude::*;
use tributary_proto::wire::{Frame, FrameIter};
use tributary_proto::{Connection, ConnectionConfig, DatagramError, Instant};

fn pair() -> (Connection, Connection) {
    let cfg = ConnectionConfig::default();
    (
        Connection::new(cfg.clone(), 2).unwrap(),
        Connection::new(cfg, 2).unwrap(),
    )
}

#[test]
fn typed_errors_for_each_kind_of_bad_datagram() {
    let (mut a, _) = pair();
    let now = Instant::ZERO;
    assert!(matches!(
        a.handle_datagram(now, &[]),
        Err(DatagramError::Wire(_))
    ));
    assert!(matches!(
        a.handle_datagram(now, &[0u8; 40]),
        Err(DatagramError::Wire(_))
    ));
    assert!(matches!(
        a.handle_datagram(now, &wrap(99, 0, 0, &[0x01])),
        Err(DatagramError::WrongConnection {
            expected: 1,
            got: 99
        })
    ));
    assert!(matches!(
        a.handle_datagram(now, &wrap(1, 200, 0, &[0x01])),
        Err(DatagramError::UnknownPath(200))
    ));
    // An ACK (path 0, largest 5) for packets never sent: the numbers are ignored and
    // counted, the datagram is accepted (its other contents would be used).
    let ack = [0x02, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00, 0x40, 0x64];
    assert!(a.handle_datagram(now, &wrap(1, 0, 0, &ack)).is_ok());
    assert_eq!(a.stats().ack_ranges_ignored, 1);
    // An ACK for a path this end never opened: ignored and counted.
    let ack = [0x02, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x64];
    assert!(a.handle_datagram(now, &wrap(1, 0, 1, &ack)).is_ok());
    assert_eq!(a.stats().acks_ignored, 1);
    // A packet number far above the largest received: dropped.
    assert!(matches!(
        a.handle_datagram(now, &wrap(1, 0, 1 << 40, &[0x01])),
        Err(DatagramError::Protocol(_))
    ));
    assert_eq!(a.stats().pn_jumps, 1);
    // Unknown frame type.
    assert!(matches!(
        a.handle_datagram(now, &wrap(1, 0, 2, &[0x7f])),
        Err(DatagramError::Wire(_))
    ));
    let s = a.stats();
    assert_eq!(s.malformed, 3);
    assert_eq!(s.rejected, 3);
}

/// Forged packet numbers cannot stall a transfer (before: two PINGs with a huge packet
/// number made the receiver acknowledge numbers the sender never sent, and the sender then
/// rejected every ACK datagram — data acknowledgement and window updates included).
#[test]
fn forged_packet_numbers_do_not_stall_a_transfer() {
    let (mut a, mut b) = pair();
    let now = Instant::ZERO;
    // Huge numbers on the path the sender uses, before it starts.
    for pn in [(1u64 << 40), (1 << 40) + 1, 1 << 19] {
        let _ = b.handle_datagram(now, &wrap(1, 0, pn, &[0x01]));
    }
    // An ACK to the sender naming numbers far above anything sent, with a bogus data ack.
    let ack = [
        0x02, 0x00, 0x80, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x10, 0x00, 0x00, 0x00,
    ];
    let _ = a.handle_datagram(now, &wrap(1, 0, 0, &ack));
    let data: Vec<u8> = (0..500_000u32).map(|i| (i % 253) as u8).collect();
    let mut t = now;
    let mut src = common::Source::new(&data);
    let got = common::transfer_from(&mut a, &mut b, &mut t, &mut src, 50_000, 0);
    assert_eq!(got, data);
    assert!(a.is_all_acked());
}

#[test]
fn data_beyond_the_window_is_dropped_not_stored() {
    let (_, mut b) = pair();
    // DATA at offset 3 MiB (4-byte varint 0x80300000), beyond the 2 MiB window, 3 bytes.
    let body = [0x03, 0x80, 0x30, 0x00, 0x00, 0x03, b'x', b'y', b'z'];
    b.handle_datagram(Instant::ZERO, &wrap(1, 0, 0, &body))
        .unwrap();
    assert_eq!(b.readable(), 0);
    assert_eq!(b.stats().window_drops, 3);
}

#[test]
fn clean_pair_transfers_and_finishes() {
    let (mut a, mut b) = pair();
    let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    let mut off = 0;
    let mut now = Instant::ZERO;
    let mut got = Vec::new();
    while off < data.len() {
        off += a.write(&data[off..]);
        if off == data.len() {
            a.close();
        }
        got.extend(transfer(&mut a, &mut b, &mut now, 50, 0));
    }
    got.extend(transfer(&mut a, &mut b, &mut now, 10_000, 0));
    assert!(b.is_finished());
    assert!(a.is_all_acked());
    assert_eq!(got, data);
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        rng_seed: proptest::test_runner::RngSeed::Fixed(crate::PROPTEST_SEED),
        ..ProptestConfig::default()
    })]
    /// Arbitrary frame bytes with a valid checksum, fed to the receiver before a real
    /// transfer: no panic, and the receiver never delivers a byte that was not written.
    #[test]
    fn garbage_never_corrupts_delivery(junk in proptest::collection::vec(
        (any::<u8>(), any::<u8>(), proptest::collection::vec(any::<u8>(), 0..64)), 0..16)) {
        let (mut a, mut b) = pair();
        let data: Vec<u8> = (0..50_000u32).map(|i| (i * 7 % 251) as u8).collect();
        prop_assert_eq!(a.write(&data), data.len());
        a.close();
        let mut now = Instant::ZERO;
        for (path, pn, body) in &junk {
            // Only to the receiver: a forged ACK to the sender can acknowledge data that was
            // never delivered, which no checksum can tell from the truth.
            let _ = b.handle_datagram(now, &wrap(1, path % 3, u64::from(*pn), body));
            let _ = b.handle_datagram(now, body);
        }
        let got = transfer(&mut a, &mut b, &mut now, 2_000, 0);
        // The transport is not authenticated: a forged DATA frame with a valid checksum is
        // indistinguishable from a real one. Where the junk holds none, what was read must
        // be exactly a prefix of what was written.
        let forged_data = junk.iter().any(|(_, _, body)| {
            FrameIter::new(body).any(|f| matches!(f, Ok(Frame::Data { .. })))
        });
        if !forged_data {
            prop_assert_eq!(&got[..], &data[..got.len()]);
        }
    }
}

#[test]
fn empty_stream_finishes_on_both_ends() {
    let (mut a, mut b) = pair();
    a.close();
    let mut now = Instant::ZERO;
    let got = transfer(&mut a, &mut b, &mut now, 1_000, 0);
    assert!(got.is_empty());
    assert!(b.is_finished());
    assert!(a.is_all_acked());
    assert_eq!(a.poll_event(), Some(tributary_proto::Event::AllAcked));
}

/// The data is delivered, then the sender closes and the lone packet carrying STREAM_END is
/// lost, and only then do the data's ACKs arrive: the data is all acknowledged, but the sender
/// must not report `AllAcked` before the receiver knows the stream ended.
#[test]
fn all_acked_waits_for_the_stream_end() {
    let (mut a, mut b) = pair();
    let data = vec![7u8; 10_000];
    assert_eq!(a.write(&data), data.len());
    let now = Instant::ZERO;
    let mut buf = vec![0u8; 2048];
    while let Some(t) = a.poll_transmit(now, &mut buf) {
        b.handle_datagram(now, &buf[..t.len]).unwrap();
    }
    let mut held = Vec::new();
    while let Some(t) = b.poll_transmit(now, &mut buf) {
        held.push(buf[..t.len].to_vec());
    }
    assert!(!held.is_empty());
    a.close();
    let t = a
        .poll_transmit(now, &mut buf)
        .expect("the stream end is sent");
    let (_, body) = tributary_proto::wire::parse_packet(&buf[..t.len]).unwrap();
    assert!(FrameIter::new(body).any(|f| matches!(f, Ok(Frame::StreamEnd { .. }))));
    // ... and lost. Now the held ACKs acknowledge every byte.
    for ack in &held {
        a.handle_datagram(now, ack).unwrap();
    }
    assert!(
        !a.is_all_acked(),
        "AllAcked while the receiver cannot know the end"
    );
    let mut now = now;
    let got = transfer(&mut a, &mut b, &mut now, 10_000, 0);
    assert_eq!(got, data);
    assert!(b.is_finished());
    assert!(a.is_all_acked());
}

/// Found by the `datagram` fuzz target with full-size inputs (2026-11-26): a MESSAGE frame
/// announcing an abandonable message of ~3.9·10^18 bytes followed by its ABANDON made the
/// receiver skip the whole range, and its delivery clock then asked for one slot per 32 KiB
/// block of it (an allocation of 1.9·10^15 bytes: abort). A message must lie where the peer can
/// have written it (its send buffer, the same size as ours, or our window); beyond, the
/// frames are refused and counted. (Forged frames in general are the packet protection's job;
/// this bound also holds against an authenticated but hostile peer.)
#[test]
fn forged_message_beyond_reach_is_refused() {
    let (_, mut b) = pair();
    // The fuzzer's input, frame by frame: padding, MESSAGE {id 0, offset 0, len huge,
    // abandonable}, STREAM_END 0, ..., ABANDON of the same message.
    let crash: &[u8] = &[
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x00, 0x00, 0xf5, 0xf5, 0xf5,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08, 0x08, 0x08, 0x08,
        0x08, 0x08, 0x08, 0x08, 0x01, 0x08, 0x08, 0x08, 0x08, 0x00, 0x00, 0x0b, 0x00, 0x00, 0xf5,
        0xf5, 0xf5, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x04, 0x00, 0x04, 0x00, 0x00, 0x00,
    ];
    let frames: Vec<_> = FrameIter::new(crash).collect::<Result<_, _>>().unwrap();
    assert!(frames
        .iter()
        .any(|f| matches!(f, Frame::Abandon(m) if m.len > 1 << 60)));
    let _ = b.handle_datagram(Instant::ZERO, &wrap(1, 0, 0, crash));
    assert!(b.stats().messages_refused >= 2, "{:?}", b.stats());
    // Nothing was skipped: the in-order point has not moved and there is nothing to read.
    assert_eq!(b.read_with(u64::MAX, |_| {}), 0);
    let mut buf = vec![0u8; b.max_datagram()];
    while b.poll_transmit(Instant::ZERO, &mut buf).is_some() {}
    assert!(b.block_delivered_times().len() <= 1);
}

/// Every frame of a valid packet is handled, however many it carries (the first few are kept
/// from the validation pass, the others parsed again), and a packet with a malformed frame
/// anywhere is dropped before any of its frames is acted on.
#[test]
fn frames_are_handled_all_or_none_whatever_their_number() {
    let chunk: Vec<u8> = (0..10u8).collect();
    for n in 1..=9u64 {
        let frames: Vec<Frame<'_>> = (0..n)
            .map(|i| Frame::Data {
                offset: 10 * i,
                data: &chunk,
            })
            .collect();
        // Valid: all n DATA frames arrive.
        let (_, mut b) = pair();
        b.handle_datagram(Instant::ZERO, &common::packet(0, 0, &frames))
            .unwrap();
        assert_eq!(b.readable(), 10 * n, "{n} frames");
        // The same frames followed by an unknown frame type: nothing is taken.
        let (_, mut b) = pair();
        let good = common::packet(0, 0, &frames);
        let body_end = good.len() - tributary_proto::wire::CHECKSUM_LEN;
        let start = tributary_proto::wire::FIXED_HEADER_LEN + 1;
        let mut body = good[start..body_end].to_vec();
        body.push(0x7f);
        assert!(matches!(
            b.handle_datagram(Instant::ZERO, &wrap(1, 0, 0, &body)),
            Err(DatagramError::Wire(_))
        ));
        assert_eq!(b.readable(), 0, "{n} frames and a bad one");
    }
}
