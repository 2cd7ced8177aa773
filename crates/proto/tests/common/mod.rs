//! Helpers shared by the connection-level integration tests.
#![allow(dead_code)]

use tributary_proto::wire::{Header, PacketWriter, CHECKSUM_LEN};
use tributary_proto::{Connection, Duration, Instant};

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
    let mut got = Vec::new();
    let mut buf = vec![0u8; 2048];
    let mut sent = 0usize;
    for _ in 0..rounds {
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
