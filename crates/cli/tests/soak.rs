//! The server soak of issue 10: `tributary recv --out-dir` (the real binary) serves a
//! steady stream of protected transfers for `SOAK_SECS` seconds (default 600) while hostile
//! traffic hits the same port: random datagrams, truncated and forged handshakes, a
//! genuine INIT replayed, a wrong key, and senders that vanish mid-transfer. Every few
//! seconds the server's resident memory, open descriptors and threads are read from
//! `/proc`. Requirements checked: every genuine transfer completes with the right bytes;
//! after the load stops and the abandoned connections time out, the descriptors and threads
//! are back to their count before the load; memory does not grow (the last minute of load
//! against the first minute after warm-up, with 10 % allowed for allocator noise — a
//! tolerance of the measurement, not a requirement).
//!
//! Ignored by default (it takes SOAK_SECS plus a few); run with
//! `SOAK_SECS=600 cargo test --release -p tributary --test integration -- --ignored --nocapture soak::`.
//! Results: `docs/udp.md`, "Server soak".

use std::fs;
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};
use tributary_net::{send_stream, Content, SocketOptions, TransferOptions, UdpDriver};
use tributary_proto::handshake::{Credentials, Initiator, Timestamp};
use tributary_proto::ConnectionConfig;

const BIN: &str = env!("CARGO_BIN_EXE_tributary");
const PSK: [u8; 32] = [0x5a; 32];

fn payload(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
        })
        .collect()
}

struct Xorshift(u64);
impl Xorshift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Resident memory (KiB), open descriptors and threads of process `pid`.
fn sample(pid: u32) -> (u64, usize, u64) {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let fds = fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count());
    (field("VmRSS:"), fds, field("Threads:"))
}

fn file(name: String, size: usize) -> Content {
    Content::File {
        name: Some(name),
        size: Some(size as u64),
        resumable: false,
    }
}

/// Waits for the server to have renamed `path` into place, then compares and removes it.
fn check_and_remove(path: &Path, want: &[u8]) -> bool {
    let t0 = Instant::now();
    while !path.exists() && t0.elapsed() < Duration::from_secs(5) {
        thread::sleep(Duration::from_millis(20));
    }
    let ok = fs::read(path).is_ok_and(|got| got == want);
    let _ = fs::remove_file(path);
    ok
}

#[test]
#[ignore]
fn server_soak() {
    let secs: u64 = std::env::var("SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    let dir =
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("soak-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    let psk_file = dir.join("k.psk");
    fs::write(
        &psk_file,
        tributary_proto::handshake::encode_key(&PSK) + "\n",
    )
    .unwrap();
    let out = dir.join("out");
    let mut server = Command::new(BIN)
        .args(["recv", "--listen", "127.0.0.1:0", "--out-dir"])
        .arg(&out)
        .arg("--psk")
        .arg(&psk_file)
        .args([
            "--timeout",
            "5",
            "--linger",
            "0.5",
            "--max-connections",
            "256",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = server.id();
    let mut err = BufReader::new(server.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let target: SocketAddr = line
        .split_whitespace()
        .nth(2)
        .unwrap_or_else(|| panic!("{line}"))
        .parse()
        .unwrap();
    // The server's log, counted.
    let counts: Arc<[AtomicU64; 4]> = Arc::new(Default::default());
    let c = Arc::clone(&counts);
    let log = thread::spawn(move || {
        let mut l = String::new();
        while err.read_line(&mut l).unwrap_or(0) > 0 {
            let i = if l.contains(": done, ") {
                0
            } else if l.contains(": failed ") {
                1
            } else if l.starts_with("refused ") {
                2
            } else {
                3
            };
            c[i].fetch_add(1, Ordering::Relaxed);
            l.clear();
        }
    });
    thread::sleep(Duration::from_millis(300));
    let baseline = sample(pid);
    let stop = Arc::new(AtomicBool::new(false));
    let (good, bad) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let mut workers = Vec::new();
    // Steady transfers: three senders back to back, 100 KB to 3 MB each.
    for w in 0..3u64 {
        let (stop, good, bad, out) = (
            Arc::clone(&stop),
            Arc::clone(&good),
            Arc::clone(&bad),
            out.clone(),
        );
        workers.push(thread::spawn(move || {
            let mut r = Xorshift(0x9e37 + w);
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let size = 100_000 + (r.next() % 2_900_000) as usize;
                let data = payload(size, r.next());
                let name = format!("t{w}-{i}.bin");
                i += 1;
                let ok = UdpDriver::connect_secure(
                    ConnectionConfig::default(),
                    &[("127.0.0.1:0".parse().unwrap(), target)],
                    SocketOptions::default(),
                    &Credentials::Psk(PSK),
                    file(name.clone(), size),
                )
                .ok()
                .and_then(|mut d| {
                    send_stream(
                        &mut d,
                        &data[..],
                        &TransferOptions {
                            idle_timeout: Duration::from_secs(10),
                            ..TransferOptions::default()
                        },
                    )
                    .ok()
                })
                .is_some()
                    && check_and_remove(&out.join(&name), &data);
                if ok { &good } else { &bad }.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    // Senders that vanish after the handshake and some data: the server must time them
    // out and let go of their files and state.
    {
        let (stop, out) = (Arc::clone(&stop), out.clone());
        workers.push(thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let name = format!("abandon-{i}.bin");
                i += 1;
                if let Ok(mut d) = UdpDriver::connect_secure(
                    ConnectionConfig::default(),
                    &[("127.0.0.1:0".parse().unwrap(), target)],
                    SocketOptions::default(),
                    &Credentials::Psk(PSK),
                    file(name.clone(), 10 << 20),
                ) {
                    let t0 = Instant::now();
                    while t0.elapsed() < Duration::from_millis(300) {
                        if let Some(c) = d.connection_mut() {
                            c.write(&[7u8; 65536]);
                        }
                        d.flush();
                        let _ = d.poll_io(Duration::from_millis(10));
                    }
                }
                thread::sleep(Duration::from_secs(2));
                // Failed transfers keep their .part (for --resume): clean the old ones.
                if let Ok(rd) = fs::read_dir(&out) {
                    for e in rd.flatten() {
                        let old = e.metadata().and_then(|m| m.modified()).is_ok_and(|t| {
                            t.elapsed().unwrap_or_default() > Duration::from_secs(15)
                        });
                        if e.file_name().to_string_lossy().starts_with("abandon-") && old {
                            let _ = fs::remove_file(e.path());
                        }
                    }
                }
            }
        }));
    }
    // Hostile traffic from its own socket.
    {
        let stop = Arc::clone(&stop);
        workers.push(thread::spawn(move || {
            let s = UdpSocket::bind("127.0.0.1:0").unwrap();
            let mut r = Xorshift(0x1234_5678);
            let offer = tributary_net::Offer {
                config: ConnectionConfig::default(),
                paths: 1,
                content: file("replayed.bin".into(), 1000),
            }
            .encode()
            .unwrap();
            let genuine = Initiator::new(
                &Credentials::Psk(PSK),
                0xdead,
                &offer,
                [9; 32],
                Timestamp::default(),
            )
            .unwrap()
            .packet()
            .to_vec();
            let wrong = Initiator::new(
                &Credentials::Psk([1; 32]),
                0xbeef,
                &offer,
                [8; 32],
                Timestamp::default(),
            )
            .unwrap()
            .packet()
            .to_vec();
            while !stop.load(Ordering::Relaxed) {
                for _ in 0..20 {
                    let n = (r.next() % 1500) as usize;
                    let mut d: Vec<u8> = (0..n).map(|_| r.next() as u8).collect();
                    match r.next() % 5 {
                        // Random bytes with a handshake, control or packet first byte and a
                        // random connection id.
                        0 if n > 0 => d[0] = b'H',
                        1 if n > 0 => d[0] = b'C',
                        2 if n > 0 => d[0] = b'T',
                        3 => d = genuine[..(r.next() as usize % genuine.len())].to_vec(),
                        _ => {}
                    }
                    let _ = s.send_to(&d, target);
                }
                // The genuine INIT replayed, and a handshake with the wrong key.
                let _ = s.send_to(&genuine, target);
                let _ = s.send_to(&wrong, target);
                thread::sleep(Duration::from_millis(10));
            }
        }));
    }
    let t0 = Instant::now();
    let mut samples = Vec::new();
    println!("   t s   RSS KiB   fds  threads   ok  bad  done failed refused");
    while t0.elapsed() < Duration::from_secs(secs) {
        thread::sleep(Duration::from_secs(5));
        let (rss, fds, th) = sample(pid);
        let t = t0.elapsed().as_secs_f64();
        samples.push((t, rss));
        println!(
            "{t:6.0} {rss:9} {fds:5} {th:8} {:4} {:4} {:5} {:6} {:7}",
            good.load(Ordering::Relaxed),
            bad.load(Ordering::Relaxed),
            counts[0].load(Ordering::Relaxed),
            counts[1].load(Ordering::Relaxed),
            counts[2].load(Ordering::Relaxed)
        );
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    // Abandoned connections time out (5 s) and linger ends.
    thread::sleep(Duration::from_secs(8));
    let after = sample(pid);
    println!(
        "baseline: {} KiB, {} fds, {} threads; after the load: {} KiB, {} fds, {} threads",
        baseline.0, baseline.1, baseline.2, after.0, after.1, after.2
    );
    let _ = server.kill();
    let _ = server.wait();
    let _ = log.join();
    let (ok, failed) = (good.load(Ordering::Relaxed), bad.load(Ordering::Relaxed));
    println!("transfers: {ok} correct, {failed} failed");
    assert!(ok > 0);
    assert_eq!(
        failed, 0,
        "genuine transfers failed or delivered wrong bytes"
    );
    assert_eq!(
        after.1, baseline.1,
        "open descriptors differ from before the load"
    );
    assert_eq!(after.2, baseline.2, "threads differ from before the load");
    // Memory: mean of the last minute of load against the first minute after a minute
    // of warm-up (shorter runs: their second and last quarters).
    let span = secs as f64;
    let (w0, w1) = if span >= 240.0 {
        (60.0, 120.0)
    } else {
        (span / 4.0, span / 2.0)
    };
    let mean = |from: f64, to: f64| {
        let v: Vec<u64> = samples
            .iter()
            .filter(|(t, _)| *t >= from && *t < to)
            .map(|s| s.1)
            .collect();
        v.iter().sum::<u64>() as f64 / v.len().max(1) as f64
    };
    let early = mean(w0, w1);
    let late = mean(span - (w1 - w0), span + 1.0);
    println!("RSS: {early:.0} KiB early, {late:.0} KiB late");
    assert!(
        late <= early * 1.10,
        "resident memory grew from {early:.0} to {late:.0} KiB"
    );
    let _ = fs::remove_dir_all(&dir);
}
