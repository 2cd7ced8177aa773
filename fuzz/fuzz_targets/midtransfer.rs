//! Packet processing of a protected connection in mid-transfer: a sender and a receiver
//! (keys from a real handshake) exchange part of a stream, then the input is fed to both as
//! (a) a raw datagram and (b) frames sealed with the genuine key (an authenticated but
//! hostile peer), each through both entry points (`handle_datagram` on a shared slice and
//! `handle_datagram_mut`, which decrypts in place), then the transfer resumes. Nothing may panic, and whatever the receiver
//! delivers must be a prefix of the stream or bytes the hostile frames themselves carried.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use tributary_proto::handshake::{accept, Credentials, Initiator, Timestamp};
use tributary_proto::protect::{PacketKey, Protection, SessionKeys, TAG_LEN};
use tributary_proto::wire::{Header, PacketWriter, Trailer};
use tributary_proto::{Connection, ConnectionConfig, Duration, Instant};

fn keys() -> &'static (SessionKeys, SessionKeys) {
    static K: OnceLock<(SessionKeys, SessionKeys)> = OnceLock::new();
    K.get_or_init(|| {
        let c = Credentials::Psk([7; 32]);
        let mut i = Initiator::new(&c, 9, b"o", [1; 32], Timestamp::default()).unwrap();
        let (rk, resp) = accept(&c, i.packet(), [2; 32]).unwrap().respond(b"a").unwrap();
        (i.read(&resp).unwrap().keys, rk)
    })
}

fn pump(a: &mut Connection, b: &mut Connection, now: &mut Instant, rounds: usize, got: &mut Vec<u8>) {
    let mut buf = vec![0u8; 4096];
    for _ in 0..rounds {
        let mut moved = false;
        while let Some(t) = a.poll_transmit(*now, &mut buf) {
            let _ = b.handle_datagram_mut(*now, &mut buf[..t.len]);
            moved = true;
        }
        while let Some(t) = b.poll_transmit(*now, &mut buf) {
            let _ = a.handle_datagram(*now, &buf[..t.len]);
            moved = true;
        }
        b.read_with(u64::MAX, |s| got.extend_from_slice(s));
        if !moved {
            *now += Duration::from_millis(5);
            a.handle_timeout(*now);
            b.handle_timeout(*now);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let (ka, kb) = keys();
    let cfg = ConnectionConfig { conn_id: 9, recv_buffer: 64 << 10, ..ConnectionConfig::default() };
    let mut a = Connection::new(cfg.clone(), 2).unwrap();
    let mut b = Connection::new(cfg, 0).unwrap();
    a.set_protection(Protection::new(ka));
    b.set_protection(Protection::new(kb));
    // Small enough that set-up does not dominate, large enough that the input lands with
    // data in flight, out-of-order ranges held and acknowledgements pending.
    let stream: Vec<u8> = (0..80_000u32).map(|i| (i % 253) as u8).collect();
    let mut now = Instant::ZERO;
    let mut got = Vec::new();
    let w = a.write(&stream[..40_000]);
    pump(&mut a, &mut b, &mut now, 6, &mut got);
    // (a) raw, to both ends, through both entry points.
    let _ = b.handle_datagram(now, data);
    let _ = a.handle_datagram(now, data);
    let _ = b.handle_datagram_mut(now, &mut data.to_vec());
    let _ = a.handle_datagram_mut(now, &mut data.to_vec());
    // (b) sealed with the genuine key of a -> b, path and packet number from the input.
    let mut authenticated_frames_accepted = false;
    if data.len() >= 3 {
        let hdr = Header { conn_id: 9, path: data[0] % 4, pn: 1_000 + u64::from(data[1]) * 7 };
        let mut buf = vec![0u8; data.len() + 64];
        let n = buf.len();
        if let Ok(pw) = PacketWriter::with_trailer(&mut buf, n, hdr, Trailer::Aead) {
            let hlen = n - pw.remaining() - TAG_LEN;
            buf.truncate(hlen);
            buf.extend_from_slice(&data[2..]);
            let (aad, body) = buf.split_at_mut(hlen);
            let tag = PacketKey::new(&ka.send).seal(0, hdr.path, hdr.pn, aad, body);
            buf.extend_from_slice(&tag);
            // Through the in-place entry when the input's third byte is odd, else the copy.
            authenticated_frames_accepted = if data[2] & 1 == 1 {
                b.handle_datagram_mut(now, &mut buf).is_ok()
            } else {
                b.handle_datagram(now, &buf).is_ok()
            };
        }
    }
    let w2 = a.write(&stream[w..]);
    a.close();
    pump(&mut a, &mut b, &mut now, 40, &mut got);
    // Unless a packet sealed with the genuine key was accepted (a peer holding the key may
    // write what it likes), the receiver's bytes are a prefix of the stream written.
    if !authenticated_frames_accepted {
        assert!(stream[..w + w2].starts_with(&got), "wrong bytes delivered");
    }
});
