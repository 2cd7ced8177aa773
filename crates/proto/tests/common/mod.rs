//! Helpers shared by the connection-level integration tests.
#![allow(dead_code)]

pub mod net;

use tributary_proto::wire::{Coding, Frame, Header, PacketWriter, SymbolFrame, CHECKSUM_LEN};
use tributary_proto::{Connection, ConnectionConfig, Duration, Instant};

/// A datagram with a valid header and checksum around arbitrary frame bytes.
pub fn wrap(conn_id: u64, path: u8, pn: u64, body: &[u8]) -> Vec<u8> {
    let mut buf = vec![0u8; 4096];
    let hdr = Header { conn_id, path, pn };
    let room = PacketWriter::new(&mut buf, 4096, hdr).unwrap().remaining();
    buf.truncate(4096 - room - CHECKSUM_LEN);
    buf.extend_from_slice(body);
    let crc = crc32fast::hash(&buf);
    buf.extend_from_slice(&crc.to_be_bytes());
    buf
}

/// Bytes an application writes as the connection accepts them (`write_capacity` limits a
/// bulk writer to what can be sent soon), closing the stream after the last one.
#[allow(dead_code)]
#[derive(Debug)]
pub struct Source<'d> {
    data: &'d [u8],
    off: usize,
}

#[allow(dead_code)]
impl<'d> Source<'d> {
    /// All of `data`, nothing written yet.
    pub fn new(data: &'d [u8]) -> Self {
        Source { data, off: 0 }
    }
    /// Writes what `a` accepts now; closes `a` once everything is written.
    pub fn pump(&mut self, a: &mut Connection) {
        if self.off < self.data.len() {
            self.off += a.write(&self.data[self.off..]);
            if self.off == self.data.len() {
                a.close();
            }
        }
    }
}

/// Moves datagrams both ways over a zero-delay "network" that drops every `drop`-th packet
/// from `a` to `b` (never, with 0), advancing time by 5 ms when nothing moves so timers fire,
/// until `b` finished reading and `a` saw everything acknowledged, or `rounds` pass. Returns
/// everything `b` read.
pub fn transfer(
    a: &mut Connection,
    b: &mut Connection,
    now: &mut Instant,
    rounds: usize,
    drop: usize,
) -> Vec<u8> {
    transfer_from(a, b, now, &mut Source::new(&[]), rounds, drop)
}

/// [`transfer`], with `src` writing into `a` before every round.
pub fn transfer_from(
    a: &mut Connection,
    b: &mut Connection,
    now: &mut Instant,
    src: &mut Source<'_>,
    rounds: usize,
    drop: usize,
) -> Vec<u8> {
    let mut got = Vec::new();
    let mut buf = vec![0u8; 2048];
    let mut sent = 0usize;
    for _ in 0..rounds {
        src.pump(a);
        let mut moved = false;
        while let Some(t) = a.poll_transmit(*now, &mut buf) {
            sent += 1;
            if drop == 0 || !sent.is_multiple_of(drop) {
                let _ = b.handle_datagram(*now, &buf[..t.len]);
            }
            moved = true;
        }
        while let Some(t) = b.poll_transmit(*now, &mut buf) {
            let _ = a.handle_datagram(*now, &buf[..t.len]);
            moved = true;
        }
        b.read_with(u64::MAX, |s| got.extend_from_slice(s));
        if b.is_finished() && a.is_all_acked() {
            break;
        }
        if !moved {
            *now += Duration::from_millis(5);
            a.handle_timeout(*now);
            b.handle_timeout(*now);
        }
    }
    got
}

/// Deterministic test bytes (a multiplicative hash of the offset).
#[allow(dead_code)]
pub fn data(n: usize) -> Vec<u8> {
    (0..n as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect()
}

/// Writes all of `d` into `a` as it accepts bytes (closing after the last), moving 50 rounds
/// of [`transfer`] after each write, then up to `tail_rounds` more; returns what `b` read.
#[allow(dead_code)]
pub fn send_all(
    a: &mut Connection,
    b: &mut Connection,
    d: &[u8],
    drop: usize,
    tail_rounds: usize,
) -> Vec<u8> {
    let mut off = 0;
    let mut now = Instant::ZERO;
    let mut got = Vec::new();
    while off < d.len() {
        off += a.write(&d[off..]);
        if off == d.len() {
            a.close();
        }
        got.extend(transfer(a, b, &mut now, 50, drop));
    }
    got.extend(transfer(a, b, &mut now, tail_rounds, drop));
    got
}

/// A datagram of the default connection id carrying `frames` on `path` as packet `pn`.
pub fn packet(path: u8, pn: u64, frames: &[Frame<'_>]) -> Vec<u8> {
    let mut buf = vec![0u8; 2048];
    let hdr = Header {
        conn_id: ConnectionConfig::default().conn_id,
        path,
        pn,
    };
    let mut w = PacketWriter::new(&mut buf, 2048, hdr).unwrap();
    for f in frames {
        w.push(f).unwrap();
    }
    let n = w.finish();
    buf.truncate(n);
    buf
}

/// A SYMBOL frame.
pub fn symbol(block: u64, id: u32, coding: Coding<'static>, data: &'static [u8]) -> Frame<'static> {
    Frame::Symbol(SymbolFrame {
        block,
        id,
        coding,
        data,
    })
}

/// For coded schemes that name a block (generation) by its first stream byte: against the
/// receiving end `b`, a block overlapping one being decoded, or reusing its id with another
/// length, is refused and counted; adjacent blocks are not. `payload` is one symbol of the
/// scheme's size.
pub fn overlapping_blocks_are_refused(b: &mut Connection, payload: &'static [u8]) {
    let cases: [(Frame<'static>, u64); 5] = [
        // a two-symbol block at 40 000 (one repair symbol: not decodable yet)
        (symbol(40_000, 5, Coding::Seed(2000), payload), 0),
        // starting inside it, ending inside it, covering it, same id with another length
        (symbol(40_005, 0, Coding::Seed(10), payload), 1),
        (symbol(39_000, 0, Coding::Seed(1500), payload), 1),
        (symbol(30_000, 0, Coding::Plain, payload), 1),
        (symbol(40_000, 6, Coding::Seed(2001), payload), 1),
    ];
    let mut expected = 0;
    for (i, (f, rejected)) in cases.iter().enumerate() {
        let _ = b.handle_datagram(
            Instant::ZERO,
            &packet(0, 100 + i as u64, std::slice::from_ref(f)),
        );
        expected += rejected;
        assert_eq!(b.stats().frames_rejected, expected, "case {i}");
    }
    // Adjacent blocks are fine: [38 000, 40 000) and [42 000, 42 100).
    for (i, f) in [
        symbol(38_000, 5, Coding::Seed(2000), payload),
        symbol(42_000, 5, Coding::Seed(100), payload),
    ]
    .iter()
    .enumerate()
    {
        let _ = b.handle_datagram(
            Instant::ZERO,
            &packet(0, 200 + i as u64, std::slice::from_ref(f)),
        );
    }
    assert_eq!(b.stats().frames_rejected, expected);
}

/// Moves datagrams both ways for 400 rounds (5 ms steps when idle) and returns what each
/// end read: (read by `b`, read by `a`).
pub fn exchange(a: &mut Connection, b: &mut Connection, now: &mut Instant) -> (Vec<u8>, Vec<u8>) {
    let (mut at_b, mut at_a) = (Vec::new(), Vec::new());
    let mut buf = vec![0u8; 2048];
    for _ in 0..400 {
        let mut moved = false;
        while let Some(t) = a.poll_transmit(*now, &mut buf) {
            let _ = b.handle_datagram(*now, &buf[..t.len]);
            moved = true;
        }
        while let Some(t) = b.poll_transmit(*now, &mut buf) {
            let _ = a.handle_datagram(*now, &buf[..t.len]);
            moved = true;
        }
        b.read_with(u64::MAX, |s| at_b.extend_from_slice(s));
        a.read_with(u64::MAX, |s| at_a.extend_from_slice(s));
        if !moved {
            *now += Duration::from_millis(5);
            a.handle_timeout(*now);
            b.handle_timeout(*now);
        }
    }
    (at_b, at_a)
}
