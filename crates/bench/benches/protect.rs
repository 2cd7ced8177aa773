//! What packet protection costs the core, side by side (criterion): a sender and a receiver
//! move a 4 MiB stream in memory (no sockets, no loss), unprotected (CRC-32), protected
//! with the receiver decrypting a copy of each datagram (`handle_datagram`, what the driver
//! did before), and protected decrypting in place (`handle_datagram_mut`, what it does
//! now). Throughput is stream bytes; both ends' work is in one thread, so the figures are
//! CPU cost per byte of the two ends together, without the kernel's. Plus the primitives
//! per 1448-byte datagram: CRC-32, seal, open (and AES-128-GCM's seal, for comparison).
//! Results: `docs/performance.md`.
//!
//! `cargo bench -p tributary-bench --bench protect -- --measurement-time 3 --warm-up-time 1`

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use tributary_proto::protect::{PacketKey, Protection, SessionKeys};
use tributary_proto::{Connection, ConnectionConfig, Duration, Instant};

const STREAM: usize = 4 << 20;

#[derive(Clone, Copy, Debug)]
enum Mode {
    Plain,
    Copy,
    InPlace,
}

fn keys() -> (SessionKeys, SessionKeys) {
    let (a, b) = ([7u8; 32], [9u8; 32]);
    (
        SessionKeys { send: a, recv: b },
        SessionKeys { send: b, recv: a },
    )
}

/// One whole transfer; returns the bytes read (so that nothing is optimised away).
fn transfer(mode: Mode, data: &[u8]) -> usize {
    let cfg = ConnectionConfig {
        recv_buffer: 8 << 20,
        send_buffer: 8 << 20,
        ..ConnectionConfig::default()
    };
    let mut a = Connection::new(cfg.clone(), 1).unwrap();
    let mut b = Connection::new(cfg, 0).unwrap();
    if !matches!(mode, Mode::Plain) {
        let (ka, kb) = keys();
        a.set_protection(Protection::new(&ka));
        b.set_protection(Protection::new(&kb));
    }
    // The sender takes no more than the peer's receive window allows (memory follows the
    // data in flight), so the rest is written as the window opens.
    let mut written = 0;
    let mut buf = vec![0u8; 2048];
    let mut now = Instant::ZERO;
    let mut read = 0;
    while !(b.is_finished() && a.is_all_acked()) {
        if written < data.len() {
            written += a.write(&data[written..]);
            if written == data.len() {
                a.close();
            }
        }
        let mut moved = false;
        while let Some(t) = a.poll_transmit(now, &mut buf) {
            moved = true;
            let _ = match mode {
                Mode::InPlace => b.handle_datagram_mut(now, &mut buf[..t.len]),
                _ => b.handle_datagram(now, &buf[..t.len]),
            };
        }
        while let Some(t) = b.poll_transmit(now, &mut buf) {
            moved = true;
            let _ = match mode {
                Mode::InPlace => a.handle_datagram_mut(now, &mut buf[..t.len]),
                _ => a.handle_datagram(now, &buf[..t.len]),
            };
        }
        read += b.read_with(u64::MAX, |s| {
            black_box(s);
        }) as usize;
        // A millisecond per round: ACK clocking grows the window as on a real path.
        now += Duration::from_millis(1);
        if !moved {
            a.handle_timeout(now);
            b.handle_timeout(now);
        }
    }
    read
}

fn connection(c: &mut Criterion) {
    let data: Vec<u8> = (0..STREAM).map(|i| (i * 7 % 251) as u8).collect();
    let mut g = c.benchmark_group("transfer_4MiB");
    g.throughput(Throughput::Bytes(STREAM as u64));
    g.sample_size(20);
    for mode in [Mode::Plain, Mode::Copy, Mode::InPlace] {
        g.bench_function(BenchmarkId::from_parameter(format!("{mode:?}")), |b| {
            b.iter(|| assert_eq!(transfer(mode, black_box(&data)), STREAM))
        });
    }
    g.finish();
}

fn primitives(c: &mut Criterion) {
    const N: usize = 1448;
    let mut g = c.benchmark_group("datagram_1448");
    g.throughput(Throughput::Bytes(N as u64));
    let body = vec![0x5au8; N - 16 - 12];
    let hdr = [0x54u8; 12];
    g.bench_function("crc32", |b| b.iter(|| crc32fast::hash(black_box(&body))));
    let key = PacketKey::new(&[3u8; 32]);
    let mut pn = 0u64;
    let mut buf = body.clone();
    g.bench_function("seal", |b| {
        b.iter(|| {
            pn += 1;
            key.seal(0, 0, pn, &hdr, black_box(&mut buf))
        })
    });
    // Open: decrypt in place, then seal again so that the next open has a ciphertext (the
    // "seal" figure above is the cost of that second half).
    let mut sealed = body.clone();
    let tag = key.seal(0, 0, 1, &hdr, &mut sealed);
    sealed.extend_from_slice(&tag);
    // The same with AES-128-GCM (QUIC's and TLS 1.3's default suite; not what the project
    // uses): how much of the cost is AES-256's four extra rounds.
    let k128 = ring::aead::LessSafeKey::new(
        ring::aead::UnboundKey::new(&ring::aead::AES_128_GCM, &[3u8; 16]).unwrap(),
    );
    g.bench_function("seal_aes128", |b| {
        b.iter(|| {
            pn += 1;
            let mut n = [0u8; 12];
            n[4..].copy_from_slice(&pn.to_be_bytes());
            k128.seal_in_place_separate_tag(
                ring::aead::Nonce::assume_unique_for_key(n),
                ring::aead::Aad::from(&hdr),
                black_box(&mut buf),
            )
            .unwrap()
        })
    });
    g.bench_function("open+seal", |b| {
        b.iter(|| {
            let n = key
                .open(0, 0, 1, &hdr, black_box(&mut sealed))
                .unwrap()
                .len();
            let tag = key.seal(0, 0, 1, &hdr, &mut sealed[..n]);
            sealed[n..].copy_from_slice(&tag);
        })
    });
    g.finish();
}

/// What one INIT costs a responder: the key exchange (`accept` + `respond`, IK with a
/// 100-byte offer) against what answering it with a RETRY costs (one cookie, no key
/// exchange): the basis of the default handshake budget (`tributary_net::Admission`).
fn handshakes(c: &mut Criterion) {
    use tributary_proto::handshake::{
        self, generate_keypair, Cookies, Credentials, Initiator, Timestamp,
    };
    let (ci, pi) = generate_keypair([1; 32]);
    let (cr, pr) = generate_keypair([2; 32]);
    let client = Credentials::Keys {
        private: ci,
        peers: vec![pr],
        psk: None,
    };
    let server = Credentials::Keys {
        private: cr,
        peers: vec![pi],
        psk: None,
    };
    let init = Initiator::new(&client, 5, &[0x42; 100], [3; 32], Timestamp::default())
        .unwrap()
        .packet()
        .to_vec();
    let mut g = c.benchmark_group("handshake_responder");
    g.bench_function("ik_key_exchange", |b| {
        b.iter(|| {
            let a = handshake::accept(&server, black_box(&init), [4; 32]).unwrap();
            a.respond(b"ok").unwrap()
        })
    });
    let cookies = Cookies::new([5; 32]);
    let addr = [127, 0, 0, 1, 0x1f, 0x90];
    g.bench_function("retry_cookie", |b| {
        b.iter(|| {
            let c = cookies.mint(Instant::ZERO, black_box(5), &addr);
            handshake::retry_packet(5, &c)
        })
    });
    g.finish();
}

criterion_group!(benches, connection, primitives, handshakes);
criterion_main!(benches);
