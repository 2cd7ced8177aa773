//! Wire tests: literal bytes, round trips, and arbitrary input never panicking.

use super::*;
use crate::ranges::RangeSet;
use proptest::prelude::*;

fn header() -> Header {
    Header {
        conn_id: 0x0102_0304_0506_0708,
        path: 1,
        pn: 5,
    }
}

#[test]
fn literal_ping_packet() {
    let mut buf = [0u8; 64];
    let mut w = PacketWriter::new(&mut buf, 64, header()).unwrap();
    w.push(&Frame::Ping).unwrap();
    assert!(w.is_ack_eliciting());
    let n = w.finish();
    let bytes = [
        0x54, 0x05, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x01, 0x05, 0x01,
    ];
    let crc = crc32fast::hash(&bytes);
    let mut expected = bytes.to_vec();
    expected.extend_from_slice(&crc.to_be_bytes());
    assert_eq!(&buf[..n], &expected[..]);
    let (h, body) = parse_packet(&buf[..n]).unwrap();
    assert_eq!(h, header());
    assert_eq!(
        FrameIter::new(body).collect::<Result<Vec<_>, _>>().unwrap(),
        vec![Frame::Ping]
    );
}

/// A simulator's datagram written with the CRC-32 deferred is the checksummed datagram with
/// a zero trailer, refused by the checksum check until sealed, and byte for byte the
/// checksummed one once sealed; a buffer too short to be a datagram is left as it is.
#[test]
fn deferred_checksum_seals_to_the_checksummed_datagram() {
    let mut a = [0u8; 64];
    let mut w = PacketWriter::new(&mut a, 64, header()).unwrap();
    w.push_data_with(300, 3, |d| d.copy_from_slice(b"abc"))
        .unwrap();
    let n = w.finish();
    let mut b = [0xAAu8; 64];
    let mut w = PacketWriter::with_trailer(&mut b, 64, header(), Trailer::Crc32Deferred).unwrap();
    w.push_data_with(300, 3, |d| d.copy_from_slice(b"abc"))
        .unwrap();
    assert_eq!(w.finish(), n);
    assert_eq!(&b[..n - CHECKSUM_LEN], &a[..n - CHECKSUM_LEN]);
    assert_eq!(&b[n - CHECKSUM_LEN..n], &[0, 0, 0, 0]);
    assert_eq!(parse_packet(&b[..n]), Err(WireError::Checksum));
    assert!(seal_checksum(&mut b[..n]));
    assert_eq!(&b[..n], &a[..n]);
    assert!(parse_packet(&b[..n]).is_ok());
    let mut short = [1u8, 2, 3];
    assert!(!seal_checksum(&mut short));
    assert_eq!(short, [1, 2, 3]);
}

#[test]
fn literal_data_frame() {
    let mut buf = [0u8; 64];
    let mut w = PacketWriter::new(&mut buf, 64, header()).unwrap();
    w.push_data_with(300, 3, |d| d.copy_from_slice(b"abc"))
        .unwrap();
    let n = w.finish();
    // DATA, offset 300 as a 2-byte varint (0x41 0x2c), length 3, payload.
    assert_eq!(&buf[12..19], &[0x03, 0x41, 0x2c, 0x03, b'a', b'b', b'c']);
    let (_, body) = parse_packet(&buf[..n]).unwrap();
    assert_eq!(
        FrameIter::new(body).next().unwrap().unwrap(),
        Frame::Data {
            offset: 300,
            data: b"abc"
        }
    );
}

/// The SYMBOL frames as docs/wire.md lays them out (wire version 5): the frame type tells the
/// coding, so a plain symbol is the DATA frame above (type, block in place of the offset,
/// length, bytes) plus its symbol id, one byte here; the seed and the coefficients follow the
/// id in their own types.
#[test]
fn literal_symbol_frames() {
    let cases: [(Coding<'_>, &[u8]); 3] = [
        (
            Coding::Plain,
            &[0x06, 0x41, 0x2c, 0x05, 0x03, b'a', b'b', b'c'],
        ),
        (
            Coding::Seed(7),
            &[0x0c, 0x41, 0x2c, 0x05, 0x07, 0x03, b'a', b'b', b'c'],
        ),
        (
            Coding::Coefficients(&[1, 2]),
            &[0x0d, 0x41, 0x2c, 0x05, 0x02, 1, 2, 0x03, b'a', b'b', b'c'],
        ),
    ];
    for (coding, want) in cases {
        let mut buf = [0u8; 64];
        let mut w = PacketWriter::new(&mut buf, 64, header()).unwrap();
        let f = Frame::Symbol(SymbolFrame {
            block: 300,
            id: 5,
            coding,
            data: b"abc",
        });
        w.push(&f).unwrap();
        let n = w.finish();
        assert_eq!(&buf[12..12 + want.len()], want, "{coding:?}");
        let (_, body) = parse_packet(&buf[..n]).unwrap();
        assert_eq!(FrameIter::new(body).next().unwrap().unwrap(), f);
    }
}

/// A SCHEME frame written in place is byte for byte the frame `push` writes (with the same
/// packet state: payload, ack-eliciting or not), and a declined fill leaves nothing behind.
#[test]
fn scheme_frame_written_in_place_equals_push() {
    for (kind, body) in [
        (0x01u64, vec![9u8; 200]),
        (0x85, vec![1, 2, 3]),
        (0x10, vec![]),
    ] {
        let mut a = [0u8; 512];
        let mut wa = PacketWriter::new(&mut a, 512, header()).unwrap();
        wa.push(&Frame::Scheme { kind, body: &body }).unwrap();
        let (pa, ea) = (wa.payload_len(), wa.is_ack_eliciting());
        let na = wa.finish();
        let mut b = [0u8; 512];
        let mut wb = PacketWriter::new(&mut b, 512, header()).unwrap();
        assert_eq!(wb.push_scheme_with(kind, 5, |_| false), Ok(false));
        assert_eq!((wb.frame_count(), wb.payload_len()), (0, 0));
        let wrote = wb.push_scheme_with(kind, body.len(), |out| {
            out.copy_from_slice(&body);
            true
        });
        assert_eq!(wrote, Ok(true));
        assert_eq!((wb.payload_len(), wb.is_ack_eliciting()), (pa, ea));
        let nb = wb.finish();
        assert_eq!(&a[..na], &b[..nb], "kind {kind:#x}");
    }
    let mut c = [0u8; 64];
    let mut wc = PacketWriter::new(&mut c, 64, header()).unwrap();
    assert!(matches!(
        wc.push_scheme_with(1, 100, |_| true),
        Err(WireError::NoSpace { .. })
    ));
}

/// Two packets of at most `max` bytes, written by `write` (the general `push` into the
/// first, a direct writer into the second), end with the same state and the same bytes.
fn same_packets(max: usize, write: impl FnOnce(&mut PacketWriter<'_>, &mut PacketWriter<'_>)) {
    let mut a = [0u8; 64];
    let mut b = [0u8; 64];
    let mut wa = PacketWriter::new(&mut a, max, header()).unwrap();
    let mut wb = PacketWriter::new(&mut b, max, header()).unwrap();
    write(&mut wa, &mut wb);
    assert_eq!(
        (wa.frame_count(), wa.payload_len(), wa.is_ack_eliciting()),
        (wb.frame_count(), wb.payload_len(), wb.is_ack_eliciting())
    );
    let (na, nb) = (wa.finish(), wb.finish());
    assert_eq!(&a[..na], &b[..nb], "max {max}");
}

/// A FEEDBACK frame written by `push_feedback` is byte for byte the frame `push` writes,
/// with the same packet state, and fails the same way when it does not fit or a value is
/// not a varint.
#[test]
fn feedback_frame_written_directly_equals_push() {
    let frames = [
        (0u64, 0u64, false),
        (63, 64, true),
        (1 << 20, 16, false),
        (super::VARINT_MAX, 1 << 40, true),
    ];
    // Room for every frame, for the first two only, and for none.
    for max in [64usize, 26, 17] {
        same_packets(max, |wa, wb| {
            for &(block, count, decoded) in &frames {
                let f = FeedbackFrame {
                    block,
                    count,
                    decoded,
                };
                assert_eq!(
                    wa.push(&Frame::Feedback(f)),
                    wb.push_feedback(f),
                    "max {max}"
                );
            }
        });
    }
    let mut c = [0u8; 64];
    let mut wc = PacketWriter::new(&mut c, 64, header()).unwrap();
    let bad = FeedbackFrame {
        block: super::VARINT_MAX + 1,
        count: 0,
        decoded: false,
    };
    assert_eq!(wc.push(&Frame::Feedback(bad)), wc.push_feedback(bad));
    assert!(wc.push_feedback(bad).is_err());
}

#[test]
fn intact_parse_agrees_and_still_validates_the_header() {
    let mut buf = [0u8; 64];
    let mut w = PacketWriter::new(&mut buf, 64, header()).unwrap();
    w.push_data_with(300, 3, |d| d.copy_from_slice(b"abc"))
        .unwrap();
    let n = w.finish();
    assert_eq!(parse_packet_intact(&buf[..n]), parse_packet(&buf[..n]));
    // What does not need the checksum is still checked: length, marker, version.
    assert!(matches!(
        parse_packet_intact(&buf[..5]),
        Err(WireError::TooShort { .. })
    ));
    let mut bad = buf;
    bad[0] ^= 0xff;
    assert!(matches!(
        parse_packet_intact(&bad[..n]),
        Err(WireError::BadMagic(_))
    ));
}

/// Debug builds (the tests') catch a caller whose "intact" datagram was altered.
#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "not what was written")]
fn intact_parse_of_an_altered_datagram_panics_in_debug_builds() {
    let mut buf = [0u8; 64];
    let mut w = PacketWriter::new(&mut buf, 64, header()).unwrap();
    w.push(&Frame::Ping).unwrap();
    let n = w.finish();
    buf[n - 6] ^= 1;
    let _ = parse_packet_intact(&buf[..n]);
}

#[test]
fn corruption_is_detected() {
    let mut buf = [0u8; 64];
    let mut w = PacketWriter::new(&mut buf, 64, header()).unwrap();
    w.push(&Frame::StreamEnd { final_size: 9 }).unwrap();
    let n = w.finish();
    for byte in 0..n {
        for bit in 0..8 {
            let mut c = buf;
            c[byte] ^= 1 << bit;
            assert!(parse_packet(&c[..n]).is_err(), "flip {byte}.{bit} accepted");
        }
    }
}

#[test]
fn frame_that_does_not_fit_is_refused_whole() {
    let mut buf = [0u8; 32];
    let mut w = PacketWriter::new(&mut buf, 32, header()).unwrap();
    let before = w.remaining();
    let big = [7u8; 40];
    assert!(matches!(
        w.push(&Frame::Data {
            offset: 0,
            data: &big
        }),
        Err(WireError::NoSpace { .. })
    ));
    assert_eq!(w.remaining(), before);
    let room = w.data_room(0);
    w.push_data_with(0, room, |d| d.fill(1)).unwrap();
    assert_eq!(w.remaining(), 0);
}

#[test]
fn ack_fits_exactly_when_its_bytes_fit() {
    // The encoder sizes the frame only when the worst case (8 bytes per varint) may not
    // fit; at every output length the frame is either written whole, with the same bytes
    // as in a roomy buffer, or not at all.
    let mut set = RangeSet::new();
    set.insert(0..3);
    set.insert(70..71);
    set.insert(1 << 31..1 << 32);
    // Most fields take 8 bytes, so a bound of fewer bytes per varint would be wrong here.
    let (delay, data_ack, max_data) = (1 << 40, 1 << 31, 1 << 35);
    // Plain ACK (six fields) and ACK_TS (seven).
    for (ts, fields) in [(None, 6), (Some(1 << 50), 7)] {
        let mut roomy = [0u8; 256];
        let n = frame::encode_ack(&mut roomy, 1, &set, 16, delay, data_ack, max_data, ts)
            .unwrap()
            .unwrap();
        assert!(
            n < 2 + 8 * (fields + 2 * 2),
            "the test must reach the sizing pass"
        );
        assert!(
            n > 2 + 4 * (fields + 2 * 2),
            "a 4-byte bound must be too small"
        );
        for len in 0..roomy.len() {
            let mut out = vec![0u8; len];
            let got =
                frame::encode_ack(&mut out, 1, &set, 16, delay, data_ack, max_data, ts).unwrap();
            if len < n {
                assert_eq!(got, None, "length {len}");
            } else {
                assert_eq!(got, Some(n), "length {len}");
                assert_eq!(out[..n], roomy[..n]);
            }
        }
    }
}

#[test]
fn ack_ranges_round_trip_and_reject_underflow() {
    let mut set = RangeSet::new();
    set.insert(0..3);
    set.insert(5..6);
    set.insert(10..20);
    let mut buf = [0u8; 128];
    let mut w = PacketWriter::new(&mut buf, 128, header()).unwrap();
    assert!(w.push_ack(1, &set, 16, 25_000, 1234, 99_999, None).unwrap());
    let n = w.finish();
    let (_, body) = parse_packet(&buf[..n]).unwrap();
    let Frame::Ack(a) = FrameIter::new(body).next().unwrap().unwrap() else {
        panic!("not an ack")
    };
    assert_eq!(a.ranges().collect::<Vec<_>>(), vec![10..20, 5..6, 0..3]);
    assert_eq!(
        (a.path, a.largest, a.ack_delay, a.data_ack, a.max_data),
        (1, 19, 25_000, 1234, 99_999)
    );
    assert_eq!(a.received_at, None);
    assert_eq!(body[0], 0x02);

    // The same with a receive time: an ACK_TS frame, one varint longer.
    let mut buf2 = [0u8; 128];
    let mut w = PacketWriter::new(&mut buf2, 128, header()).unwrap();
    assert!(w
        .push_ack(1, &set, 16, 25_000, 1234, 99_999, Some(300_000_000))
        .unwrap());
    let n2 = w.finish();
    assert_eq!(n2, n + 4);
    let (_, body) = parse_packet(&buf2[..n2]).unwrap();
    assert_eq!(body[0], 0x0e);
    let Frame::Ack(t) = FrameIter::new(body).next().unwrap().unwrap() else {
        panic!("not an ack")
    };
    assert_eq!(t.ranges().collect::<Vec<_>>(), vec![10..20, 5..6, 0..3]);
    assert_eq!((t.largest, t.received_at), (19, Some(300_000_000)));
    assert_eq!(Frame::Ack(t.clone()).encoded_len().unwrap(), body.len());
    // Cut anywhere, it is an error, never a frame.
    for cut in 1..body.len() {
        assert!(
            FrameIter::new(&body[..cut]).next().unwrap().is_err(),
            "cut at {cut}"
        );
    }

    // An ACK whose first range reaches below zero.
    let bad = [0x02, 0x00, 0x01, 0x00, 0x05, 0x00, 0x00, 0x00];
    assert!(matches!(
        FrameIter::new(&bad).next().unwrap(),
        Err(WireError::Invalid { .. })
    ));
    // A gap that reaches below zero.
    let bad = [0x02, 0x00, 0x03, 0x00, 0x00, 0x01, 0x03, 0x00, 0x00, 0x00];
    assert!(FrameIter::new(&bad).next().unwrap().is_err());
}

#[test]
fn ack_delay_is_parsed_whatever_its_value_and_truncation_is_an_error() {
    // path 0, largest 4, ack delay = the largest varint (8 bytes: 0xff ...), first range 0,
    // no more ranges, data ack 0, max data 0: well-formed (the sender caps the delay).
    let mut ok = vec![0x02, 0x00, 0x04];
    ok.extend_from_slice(&[0xff; 8]);
    ok.extend_from_slice(&[0x00, 0x00, 0x00, 0x00]);
    let Some(Ok(Frame::Ack(a))) = FrameIter::new(&ok).next() else {
        panic!("a maximal ack delay must parse");
    };
    assert_eq!((a.largest, a.ack_delay), (4, VARINT_MAX));
    assert_eq!(a.ranges().collect::<Vec<_>>(), vec![4..5]);
    // Cut inside the delay, and right after it: errors naming the field, no panic.
    for cut in [4, 11] {
        let err = FrameIter::new(&ok[..cut]).next().unwrap().unwrap_err();
        assert!(matches!(err, WireError::Truncated(_)), "{cut}: {err:?}");
    }
    // A delay too large for a varint cannot be written.
    let mut set = RangeSet::new();
    set.insert(0..1);
    let mut buf = [0u8; 128];
    let mut w = PacketWriter::new(&mut buf, 128, header()).unwrap();
    assert!(w.push_ack(0, &set, 4, VARINT_MAX + 1, 0, 0, None).is_err());
}

fn arb_frame() -> impl Strategy<Value = (u8, u64, u64, Vec<u8>, u32)> {
    (
        0u8..11,
        0u64..=VARINT_MAX,
        0u64..=VARINT_MAX >> 2,
        proptest::collection::vec(any::<u8>(), 0..300),
        any::<u32>(),
    )
}

fn build<'a>(k: u8, a: u64, b: u64, data: &'a [u8], id: u32) -> Frame<'a> {
    match k {
        0 => Frame::Ping,
        1 => Frame::Data { offset: b, data },
        2 => Frame::StreamEnd { final_size: a },
        3 => Frame::Close { code: a },
        4 => Frame::Symbol(SymbolFrame {
            block: a,
            id,
            coding: match b % 3 {
                0 => Coding::Plain,
                1 => Coding::Seed(b),
                _ => Coding::Coefficients(&data[..data.len() / 2]),
            },
            data,
        }),
        5 => Frame::Feedback(FeedbackFrame {
            block: a,
            count: b,
            decoded: id.is_multiple_of(2),
        }),
        6 => Frame::Scheme {
            kind: b,
            body: data,
        },
        7 => Frame::Message(MessageFrame {
            id: a,
            offset: b,
            len: u64::from(id),
            abandonable: id.is_multiple_of(2),
        }),
        8 => Frame::Abandon(MessageFrame {
            id: a >> 1,
            offset: b >> 1,
            len: u64::from(id),
            abandonable: true,
        }),
        _ => Frame::Padding(1 + (id % 5) as usize),
    }
}

/// Every frame of `body` as `next_into` (the receiver's parse) gives them, until it stops.
fn frames_into(body: &[u8]) -> Vec<Result<Frame<'_>, WireError>> {
    let mut it = FrameIter::new(body);
    let mut out = Vec::new();
    let mut slot = Ok(Frame::Ping);
    while it.next_into(&mut slot) {
        out.push(slot.clone());
    }
    out
}

proptest! {
    /// `next_into` (with DATA frames parsed in line) gives what `next` gives, frame for
    /// frame and error for error: on arbitrary bytes, and on bytes that start as a DATA frame
    /// with any offset and length prefix (cut, overlong, overflowing) followed by anything.
    #[test]
    fn next_into_is_next(
        bytes in proptest::collection::vec(any::<u8>(), 0..64),
        offset in prop_oneof![0u64..64, 0u64..=VARINT_MAX, (VARINT_MAX - 300)..=VARINT_MAX],
        len in 0u64..400,
        data_first: bool,
    ) {
        let mut body = Vec::new();
        if data_first {
            let mut head = [0u8; 32];
            let n = {
                let mut w = Writer { buf: &mut head, pos: 0 };
                w.u8(0x03); // DATA
                w.varint(offset);
                w.varint(len);
                w.pos
            };
            body.extend_from_slice(&head[..n]);
        }
        body.extend_from_slice(&bytes);
        let want: Vec<_> = FrameIter::new(&body).collect();
        prop_assert_eq!(frames_into(&body), want);
    }

    #[test]
    fn frames_round_trip(frames in proptest::collection::vec(arb_frame(), 1..5), pn in 0u64..=VARINT_MAX, path: u8) {
        let built: Vec<Frame<'_>> = frames.iter().map(|(k, a, b, d, id)| build(*k, *a, *b, d, *id)).collect();
        let mut buf = vec![0u8; 4096];
        let h = Header { conn_id: 7, path, pn };
        let mut w = PacketWriter::new(&mut buf, 4096, h).unwrap();
        for f in &built {
            prop_assert_eq!(f.encoded_len().unwrap(), {
                let before = w.remaining();
                w.push(f).unwrap();
                before - w.remaining()
            });
        }
        let n = w.finish();
        let (h2, body) = parse_packet(&buf[..n]).unwrap();
        prop_assert_eq!(h2, h);
        let parsed: Vec<Frame<'_>> = FrameIter::new(body).collect::<Result<_, _>>().unwrap();
        // Adjacent padding frames merge on parse; compare with merged padding.
        let mut expected: Vec<Frame<'_>> = Vec::new();
        for f in built {
            match (expected.last_mut(), &f) {
                (Some(Frame::Padding(n)), Frame::Padding(m)) => *n += m,
                _ => expected.push(f),
            }
        }
        prop_assert_eq!(parsed, expected);
    }

    #[test]
    fn ack_round_trip(starts in proptest::collection::vec((0u64..10_000, 1u64..50), 1..40), delay in 0u64..=VARINT_MAX, ts in proptest::option::of(0u64..=VARINT_MAX)) {
        let mut set = RangeSet::new();
        for (s, l) in starts { set.insert(s..s + l); }
        let mut buf = vec![0u8; 2048];
        let mut w = PacketWriter::new(&mut buf, 2048, header()).unwrap();
        prop_assert!(w.push_ack(0, &set, 64, delay, 0, 0, ts).unwrap());
        let n = w.finish();
        let (_, body) = parse_packet(&buf[..n]).unwrap();
        let Some(Ok(Frame::Ack(a))) = FrameIter::new(body).next() else { panic!() };
        let got: Vec<_> = a.ranges().collect();
        let want: Vec<_> = set.iter().rev().collect();
        prop_assert_eq!(got, want);
        prop_assert_eq!(a.ack_delay, delay);
        prop_assert_eq!(a.received_at, ts);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        if let Ok((_, body)) = parse_packet(&bytes) {
            for f in FrameIter::new(body) { let _ = f.map(|f| f.encoded_len()); }
        }
        // Frames without the checksum layer too (the fuzz target does the same).
        for f in FrameIter::new(&bytes) {
            if let Ok(Frame::Ack(a)) = f { for r in a.ranges() { prop_assert!(r.start < r.end); } }
        }
    }
}

/// An ACK_FLOOR frame written by `push_ack_floor` is byte for byte the frame `push` writes,
/// with the same packet state, and fails the same way when it does not fit or the floor is
/// not a varint.
#[test]
fn ack_floor_written_directly_equals_push() {
    let frames = [
        (0u8, 0u64),
        (1, 63),
        (7, 64),
        (255, 1 << 20),
        (3, super::VARINT_MAX),
    ];
    // Room for every frame, for some, and for none.
    for max in [64usize, 30, 24, 17] {
        same_packets(max, |wa, wb| {
            for &(path, floor) in &frames {
                assert_eq!(
                    wa.push(&Frame::AckFloor { path, floor }),
                    wb.push_ack_floor(path, floor),
                    "max {max}"
                );
            }
        });
    }
    let mut c = [0u8; 64];
    let mut wc = PacketWriter::new(&mut c, 64, header()).unwrap();
    let bad = super::VARINT_MAX + 1;
    assert_eq!(
        wc.push(&Frame::AckFloor {
            path: 0,
            floor: bad
        }),
        wc.push_ack_floor(0, bad)
    );
    assert!(wc.push_ack_floor(0, bad).is_err());
}
