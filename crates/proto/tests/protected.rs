//! Protected connections (AEAD on every packet, keys from the Noise handshake): a transfer
//! completes, and every forged, replayed, truncated or foreign datagram is refused and counted
//! without touching the stream.

use crate::common;

use common::{transfer, wrap, Source};
use tributary_proto::handshake::{accept, generate_keypair, Credentials, Initiator, Timestamp};
use tributary_proto::protect::{Protection, SessionKeys};
use tributary_proto::{Connection, ConnectionConfig, DatagramError, Event, Instant};

/// Keys from a real handshake (IK with pinned keys).
fn handshake(seed: u8) -> (SessionKeys, SessionKeys) {
    let (ci, pi) = generate_keypair([1; 32]);
    let (cr, pr) = generate_keypair([2; 32]);
    let ini = Credentials::Keys {
        private: ci,
        peers: vec![pr],
        psk: None,
    };
    let res = Credentials::Keys {
        private: cr,
        peers: vec![pi],
        psk: None,
    };
    let mut i = Initiator::new(&ini, 77, b"offer", [seed; 32], Timestamp::default()).unwrap();
    let a = accept(&res, i.packet(), [4; 32]).unwrap();
    let (rk, resp) = a.respond(b"answer").unwrap();
    (i.read(&resp).unwrap().keys, rk)
}

fn pair(cfg: &ConnectionConfig, seed: u8) -> (Connection, Connection) {
    let (ka, kb) = handshake(seed);
    let mut a = Connection::new(cfg.clone(), 2).unwrap();
    let mut b = Connection::new(cfg.clone(), 0).unwrap();
    a.set_protection(Protection::new(&ka));
    b.set_protection(Protection::new(&kb));
    (a, b)
}

fn data(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 31 % 251) as u8).collect()
}

#[test]
fn protected_transfer_delivers_every_byte_with_losses() {
    let cfg = ConnectionConfig::default();
    let (mut a, mut b) = pair(&cfg, 3);
    assert_eq!(a.max_datagram(), cfg.max_datagram() + 12);
    let d = data(300_000);
    let mut now = Instant::ZERO;
    let mut at = 0;
    let mut got = Vec::new();
    while at < d.len() {
        at += a.write(&d[at..]);
        got.extend(transfer(&mut a, &mut b, &mut now, 50, 7));
    }
    a.close();
    got.extend(transfer(&mut a, &mut b, &mut now, 100_000, 7));
    assert!(got == d, "stream differs");
    assert!(b.is_finished() && a.is_all_acked());
    let s = b.stats();
    assert_eq!((s.auth_failures, s.replays, s.malformed), (0, 0, 0));
}

#[test]
fn forged_replayed_and_foreign_datagrams_are_refused() {
    let cfg = ConnectionConfig::default();
    let (mut a, mut b) = pair(&cfg, 3);
    let now = Instant::ZERO;
    a.write(b"hello");
    a.close();
    let mut buf = vec![0u8; 2048];
    let t = a.poll_transmit(now, &mut buf).unwrap();
    let pkt = buf[..t.len].to_vec();
    // Unprotected packets that are perfectly valid for an unprotected connection (the
    // attacks of issue 10: a forged CLOSE, STREAM_END, DATA, PING with a huge number).
    let id = cfg.conn_id;
    for body in [
        vec![0x05, 0x00],
        vec![0x04, 0x03],
        vec![0x03, 0x00, 0x03, b'b', b'a', b'd'],
        vec![0x01],
    ] {
        let forged = wrap(id, 0, (1 << 61) + 3, &body);
        assert!(matches!(
            b.handle_datagram(now, &forged),
            Err(DatagramError::Protection(_))
        ));
    }
    // Every truncation and every bit flip of a genuine packet.
    for n in 0..pkt.len() {
        assert!(b.handle_datagram(now, &pkt[..n]).is_err());
    }
    for i in 0..pkt.len() {
        let mut bad = pkt.clone();
        bad[i] ^= 0x01;
        assert!(b.handle_datagram(now, &bad).is_err(), "flip at {i}");
    }
    // A packet sealed with another connection's keys.
    // (Another handshake: another ephemeral key, other session keys.)
    let (mut c, _) = pair(&cfg, 5);
    c.write(b"other");
    let t = c.poll_transmit(now, &mut buf).unwrap();
    assert!(matches!(
        b.handle_datagram(now, &buf[..t.len]),
        Err(DatagramError::Protection(_))
    ));
    // The genuine packet is accepted once, then refused as a replay.
    let r = b.handle_datagram(now, &pkt).unwrap();
    assert!(r.fresh && r.newest);
    assert!(b.handle_datagram(now, &pkt).is_err());
    let s = b.stats();
    assert!(s.auth_failures >= pkt.len() as u64, "{s:?}");
    assert_eq!(s.replays, 1);
    let mut out = [0u8; 16];
    assert_eq!(b.read(&mut out), 5);
    assert_eq!(&out[..5], b"hello");
    // Nothing of the forged frames reached the stream: no CLOSE event, and the stream ends
    // where the genuine STREAM_END says (5), not at the forged 3.
    let mut ev = Vec::new();
    while let Some(e) = b.poll_event() {
        ev.push(e);
    }
    assert!(
        !ev.iter().any(|e| matches!(e, Event::Closed { .. })),
        "{ev:?}"
    );
    assert!(b.is_finished());
}

/// Delivers what `x` sends to `y`, dropping every `drop_every`-th datagram (counted in `n`);
/// `in_place` picks the entry point. Logs every datagram sent.
fn deliver(
    x: &mut Connection,
    y: &mut Connection,
    now: Instant,
    in_place: bool,
    (drop_every, n): (usize, &mut usize),
    log: &mut Vec<Vec<u8>>,
) -> bool {
    let mut buf = vec![0u8; 4096];
    let mut moved = false;
    while let Some(t) = x.poll_transmit(now, &mut buf) {
        moved = true;
        *n += 1;
        log.push(buf[..t.len].to_vec());
        if *n % drop_every == 0 {
            continue;
        }
        let res = if in_place {
            y.handle_datagram_mut(now, &mut buf[..t.len]).map(|_| ())
        } else {
            y.handle_datagram(now, &buf[..t.len]).map(|_| ())
        };
        assert!(res.is_ok(), "{res:?}");
    }
    moved
}

/// Runs a transfer to its end; returns every datagram sent, in order, and the bytes read.
fn pump_log(
    a: &mut Connection,
    b: &mut Connection,
    now: &mut Instant,
    in_place: bool,
    drop_every: usize,
    src: &mut Source<'_>,
) -> (Vec<Vec<u8>>, Vec<u8>) {
    let (mut log, mut got, mut n) = (Vec::new(), Vec::new(), 0usize);
    for _ in 0..20_000 {
        src.pump(a);
        let m1 = deliver(a, b, *now, in_place, (drop_every, &mut n), &mut log);
        let m2 = deliver(b, a, *now, in_place, (drop_every, &mut n), &mut log);
        b.read_with(u64::MAX, |s| got.extend_from_slice(s));
        if b.is_finished() && a.is_all_acked() {
            break;
        }
        if !(m1 || m2) {
            match [a.poll_timeout(), b.poll_timeout()]
                .into_iter()
                .flatten()
                .min()
            {
                Some(t) => *now = t.max(*now),
                None => break,
            }
            a.handle_timeout(*now);
            b.handle_timeout(*now);
        }
    }
    (log, got)
}

#[test]
fn decrypting_in_place_is_the_same_as_decrypting_a_copy() {
    let cfg = ConnectionConfig::default();
    let d = data(200_000);
    let mut runs = Vec::new();
    for in_place in [false, true] {
        let (mut a, mut b) = pair(&cfg, 5);
        let mut now = Instant::ZERO;
        let mut src = Source::new(&d);
        let (log, got) = pump_log(&mut a, &mut b, &mut now, in_place, 9, &mut src);
        assert!(got == d, "stream differs (in place: {in_place})");
        runs.push((log, format!("{:?} {:?}", a.stats(), b.stats()), now));
    }
    // Same datagrams on the wire, same counters, same end time.
    assert!(runs[0] == runs[1], "the two entry points diverged");
    // In place really decrypts where the datagram lies, and refuses replays like the copy.
    let (mut a, mut b) = pair(&cfg, 6);
    a.write(b"in place");
    let mut buf = vec![0u8; 2048];
    let t = a.poll_transmit(Instant::ZERO, &mut buf).unwrap();
    let sealed = buf[..t.len].to_vec();
    let mut copy = sealed.clone();
    b.handle_datagram_mut(Instant::ZERO, &mut copy).unwrap();
    assert_ne!(
        copy, sealed,
        "the datagram's bytes were not decrypted in place"
    );
    let mut again = sealed.clone();
    assert!(matches!(
        b.handle_datagram_mut(Instant::ZERO, &mut again),
        Err(DatagramError::Protection(_))
    ));
    assert_eq!(b.stats().replays, 1);
}
