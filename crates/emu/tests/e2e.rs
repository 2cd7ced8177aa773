//! End-to-end runs through the real emulator: namespaces, TUN devices, real UDP and TCP
//! sockets on both sides. They need root, `/dev/net/tun` and `ip`; where any is missing each
//! test prints `SKIP: <reason>` on the terminal (not captured) and passes, as documented in
//! `docs/emulate.md` (CI machines of this project run them: they are root with TUN support).

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration as StdDuration, Instant as StdInstant};
use tributary_emu::{netns, Emulator, Options};
use tributary_link::Link;
use tributary_proto::time::{Duration, Instant};
use tributary_sim::{derive_seed, LinkParams, LossModel, SimConfig};

/// One emulator test at a time: they measure timing, and the machine has two cores.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// True (after printing why, loudly) if the emulator cannot run here.
fn skip(test: &str) -> bool {
    match netns::unavailable() {
        None => false,
        Some(reason) => {
            // Straight to the terminal: libtest captures only the print macros.
            let _ = writeln!(
                std::io::stderr(),
                "SKIP: {test}: the emulator cannot run on this machine: {reason}"
            );
            true
        }
    }
}

fn scenario(text: &str) -> SimConfig {
    let s = tributary_lab::Scenario::parse(text, "test").unwrap();
    let mut c = s.config(0, 0).sim.clone();
    c.seed = 11;
    c
}

/// Runs the emulator on a thread until the returned guard is dropped.
struct Running {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<Emulator>>,
}

impl Running {
    fn start(mut emu: Emulator) -> Running {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let handle = std::thread::spawn(move || {
            emu.reset_clock();
            emu.run(|| s.load(Ordering::SeqCst)).unwrap();
            emu
        });
        Running {
            stop,
            handle: Some(handle),
        }
    }

    fn finish(mut self) -> Emulator {
        self.stop.store(true, Ordering::SeqCst);
        self.handle.take().unwrap().join().unwrap()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

const TWO_PATHS: &str = r#"
name = "e2e"
duration = "10s"

[[links]]
name = "lossy"
rate = "50Mbps"
delay = "20ms"
queue = 5000
loss = 0.1

[[links]]
name = "slow"
rate = "20Mbps"
delay = "5ms"
queue = 400

[[flows]]
name = "f"
paths = ["lossy", "slow"]
"#;

/// Sends `n` UDP datagrams of `size` bytes from side a to side b of path `path`, one every
/// `gap`, each carrying its sequence number and send time; returns (seq, send, receive) of
/// each datagram received.
fn udp_probe(
    emu_a: &str,
    emu_b: &str,
    a: Ipv4Addr,
    b: Ipv4Addr,
    n: u32,
    size: usize,
    gap: StdDuration,
) -> Vec<(u32, StdDuration, StdDuration)> {
    let base = StdInstant::now();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let ns_b = emu_b.to_string();
    let rx = std::thread::spawn(move || {
        netns::enter(&ns_b).unwrap();
        let sock = UdpSocket::bind(SocketAddr::from((b, 9000))).unwrap();
        sock.set_read_timeout(Some(StdDuration::from_millis(1500)))
            .unwrap();
        ready_tx.send(()).unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 2000];
        while let Ok(len) = sock.recv(&mut buf) {
            let t = base.elapsed();
            assert_eq!(len, size);
            let seq = u32::from_le_bytes(buf[..4].try_into().unwrap());
            let sent = u64::from_le_bytes(buf[4..12].try_into().unwrap());
            got.push((seq, StdDuration::from_nanos(sent), t));
        }
        got
    });
    ready_rx.recv().unwrap();
    let ns_a = emu_a.to_string();
    std::thread::spawn(move || {
        netns::enter(&ns_a).unwrap();
        let sock = UdpSocket::bind(SocketAddr::from((a, 0))).unwrap();
        let mut pkt = vec![0u8; size];
        let start = StdInstant::now();
        for i in 0..n {
            let due = start + gap * i;
            while StdInstant::now() < due {
                std::thread::sleep(due - StdInstant::now());
            }
            pkt[..4].copy_from_slice(&i.to_le_bytes());
            pkt[4..12].copy_from_slice(&(base.elapsed().as_nanos() as u64).to_le_bytes());
            sock.send_to(&pkt, SocketAddr::from((b, 9000))).unwrap();
        }
    })
    .join()
    .unwrap();
    rx.join().unwrap()
}

/// Same drops for the same seed, and the configured delay: 2000 datagrams over a path with
/// 10 % Bernoulli loss and 20 ms one-way delay. The queue never fills (0.2 Mbit/s offered on
/// 50 Mbit/s), so the link's random draws happen once per datagram in order: the set of lost
/// sequence numbers must be exactly the one the simulator's link model (same parameters, the
/// simulator's seed derivation) gives for the same sequence. The median one-way delay must
/// be within 5 % of the model's 20 ms + serialization (issue 15: delay "within a few
/// percent"); the emulator's own wake-up lateness is measured and reported alongside.
#[test]
fn same_drops_as_the_model_and_configured_delay() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if skip("same_drops_as_the_model_and_configured_delay") {
        return;
    }
    let cfg = scenario(TWO_PATHS);
    let emu = Emulator::new(&cfg, 0, &Options::default(), |m| eprintln!("{m}")).unwrap();
    let (ns_a, ns_b) = (emu.sender_ns().to_string(), emu.receiver_ns().to_string());
    let p0 = emu.paths()[0].clone();
    let run = Running::start(emu);
    std::thread::sleep(StdDuration::from_millis(50));
    let n = 2000;
    let size = 100; // UDP payload; 128 bytes on the wire (IPv4 + UDP headers).
    let got = udp_probe(
        &ns_a,
        &ns_b,
        p0.a,
        p0.b,
        n,
        size,
        StdDuration::from_micros(500),
    );
    let emu = run.finish();

    let mut model = Link::new(
        cfg.links[0].forward.clone(),
        derive_seed(cfg.seed, &[1, 0, 0]),
    );
    let mut expected = Vec::new();
    let mut t = Instant::ZERO;
    for i in 0..n {
        t += Duration::from_micros(500);
        if model.offer(t, 128, 128).arrival.is_some() {
            expected.push(i);
        }
    }
    let mut received: Vec<u32> = got.iter().map(|g| g.0).collect();
    received.sort_unstable();
    assert_eq!(
        received.len(),
        expected.len(),
        "received {} of {n}, model delivers {}",
        received.len(),
        expected.len()
    );
    assert_eq!(
        received, expected,
        "the emulator dropped other packets than the model"
    );
    let stats = &emu.link_stats()[0].1;
    assert_eq!(stats.offered, n as u64);
    assert_eq!(stats.random_drops, (n as usize - expected.len()) as u64);

    let mut delays: Vec<f64> = got
        .iter()
        .map(|&(_, s, r)| (r - s).as_secs_f64() * 1e3)
        .collect();
    delays.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let median = delays[delays.len() / 2];
    let want = 20.0 + 128.0 * 8.0 / 50e6 * 1e3;
    let late = &emu.stats().lateness;
    eprintln!(
        "one-way delay: min {:.3} median {median:.3} max {:.3} ms (model {want:.3} ms); \
         emulator lateness mean {:.1} us, 99 % under {} us",
        delays[0],
        delays[delays.len() - 1],
        late.mean_us(),
        late.quantile_us(0.99)
    );
    assert!(
        delays[0] >= want - 0.01,
        "a packet arrived early: {}",
        delays[0]
    );
    assert!(
        (median / want - 1.0).abs() < 0.05,
        "median {median} ms vs {want} ms"
    );
}

/// The configured rate: 25 Mbit/s of 1200-byte datagrams offered for 1 s to a 20 Mbit/s
/// path whose 400-packet queue holds the excess: while the queue is busy, datagrams leave at
/// exactly the link rate, so the receiver's arrival rate must be within 3 % of 20 Mbit/s on
/// the wire (issue 15: rate "within a few percent"). The queue then overflows as the model
/// says: drops = offered − (what the link can serve + the queue).
#[test]
fn configured_rate_and_drop_tail_queue() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if skip("configured_rate_and_drop_tail_queue") {
        return;
    }
    let cfg = scenario(TWO_PATHS);
    let emu = Emulator::new(&cfg, 0, &Options::default(), |m| eprintln!("{m}")).unwrap();
    let (ns_a, ns_b) = (emu.sender_ns().to_string(), emu.receiver_ns().to_string());
    let p1 = emu.paths()[1].clone();
    let run = Running::start(emu);
    std::thread::sleep(StdDuration::from_millis(50));
    let size = 1200; // 1228 bytes on the wire
    let wire = 1228.0 * 8.0;
    // 25 Mbit/s: one datagram every 393 us, for 1 s.
    let gap = StdDuration::from_nanos((wire / 25e6 * 1e9) as u64);
    let n = 2545;
    let got = udp_probe(&ns_a, &ns_b, p1.a, p1.b, n, size, gap);
    let emu = run.finish();
    // Arrival rate from the 100th to the last arrival (the queue is busy by then).
    let k = 100;
    let span = (got[got.len() - 1].2 - got[k].2).as_secs_f64();
    let rate = (got.len() - 1 - k) as f64 * wire / span;
    let s = &emu.link_stats()[1].1;
    eprintln!(
        "rate {:.3} Mbit/s (configured 20), received {} of {n}, queue drops {}",
        rate / 1e6,
        got.len(),
        s.queue_drops
    );
    assert!((rate / 20e6 - 1.0).abs() < 0.03, "{rate}");
    assert_eq!(s.offered, n as u64);
    assert_eq!(got.len() as u64, n as u64 - s.queue_drops);
    assert!(s.queue_drops > 0, "the queue should have overflowed");
}

/// Any IP traffic: a kernel TCP connection over the 20 Mbit/s path moves 4 MB intact, at a
/// goodput that cannot exceed the link rate and, with no loss and a BDP-sized queue, reaches
/// at least half of it (kernel CUBIC on a 10 ms round trip; a broken emulator that stalls
/// packets would fall far below).
#[test]
fn kernel_tcp_crosses_intact() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if skip("kernel_tcp_crosses_intact") {
        return;
    }
    let cfg = scenario(TWO_PATHS);
    let emu = Emulator::new(&cfg, 0, &Options::default(), |m| eprintln!("{m}")).unwrap();
    let (ns_a, ns_b) = (emu.sender_ns().to_string(), emu.receiver_ns().to_string());
    let p1 = emu.paths()[1].clone();
    let run = Running::start(emu);
    let len = 4_000_000usize;
    let data: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
    let (tx, rx) = std::sync::mpsc::channel();
    let b = p1.b;
    let server = std::thread::spawn(move || {
        netns::enter(&ns_b).unwrap();
        let l = TcpListener::bind(SocketAddr::from((b, 9001))).unwrap();
        tx.send(()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got).unwrap();
        got
    });
    rx.recv().unwrap();
    let sent = data.clone();
    let start = StdInstant::now();
    std::thread::spawn(move || {
        netns::enter(&ns_a).unwrap();
        let mut s = TcpStream::connect(SocketAddr::from((b, 9001))).unwrap();
        s.write_all(&sent).unwrap();
    })
    .join()
    .unwrap();
    let got = server.join().unwrap();
    let secs = start.elapsed().as_secs_f64();
    let emu = run.finish();
    assert!(got == data, "TCP data differs after the emulated path");
    let mbps = len as f64 * 8.0 / secs / 1e6;
    eprintln!(
        "kernel TCP: {mbps:.2} Mbit/s goodput over a 20 Mbit/s path; {:?}",
        emu.stats()
    );
    assert!(mbps < 20.0 && mbps > 10.0, "{mbps}");
}

/// Clean-up: dropping the emulator deletes its namespaces; namespaces named after a process
/// that no longer exists (a killed emulator's) are deleted by the next emulator, with a
/// message naming them.
#[test]
fn cleans_up_and_removes_stale_namespaces() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if skip("cleans_up_and_removes_stale_namespaces") {
        return;
    }
    // A process id that existed and is gone.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let stale = format!("{}{dead}-0-a", netns::PREFIX);
    netns::ip(&["netns", "add", &stale]).unwrap();
    let mut notices = Vec::new();
    let cfg = scenario(TWO_PATHS);
    let emu = Emulator::new(&cfg, 0, &Options::default(), |m| {
        notices.push(m.to_string())
    })
    .unwrap();
    assert!(
        notices
            .iter()
            .any(|m| m.contains(&stale) && m.contains("stale")),
        "{notices:?}"
    );
    let list = || {
        std::fs::read_dir("/run/netns")
            .map(|d| {
                d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
    };
    assert!(!list().contains(&stale));
    let (a, b) = (emu.sender_ns().to_string(), emu.receiver_ns().to_string());
    assert!(list().contains(&a) && list().contains(&b));
    drop(emu);
    assert!(!list().contains(&a) && !list().contains(&b), "{:?}", list());
}

/// The model's parameters reach the emulator unchanged (a sanity check of the set-up).
#[test]
fn paths_and_addresses() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if skip("paths_and_addresses") {
        return;
    }
    let cfg = scenario(TWO_PATHS);
    let emu = Emulator::new(&cfg, 0, &Options::default(), |_| {}).unwrap();
    let p = emu.paths();
    assert_eq!(p.len(), 2);
    assert_eq!(p[0].name, "lossy");
    assert_eq!(p[1].a, Ipv4Addr::new(10, 77, 1, 1));
    assert_eq!(p[1].b, Ipv4Addr::new(10, 77, 1, 2));
    let want = LinkParams {
        loss: LossModel::Bernoulli { p: 0.1 },
        ..LinkParams::new(50_000_000, Duration::from_millis(20), 5000)
    };
    assert_eq!(cfg.links[0].forward, want);
}

/// A new time zero starts the links afresh: traffic before `reset_clock` (here a burst that
/// leaves a 0.2 s backlog in the 20 Mbit/s path's queue) must not delay traffic after it.
/// Without the fresh start, the link's busy-until time and FIFO (in the old clock) would hold
/// new packets back by the old clock's elapsed time plus the backlog.
#[test]
fn reset_clock_starts_the_links_afresh() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if skip("reset_clock_starts_the_links_afresh") {
        return;
    }
    let cfg = scenario(TWO_PATHS);
    let emu = Emulator::new(&cfg, 0, &Options::default(), |m| eprintln!("{m}")).unwrap();
    let (ns_a, ns_b) = (emu.sender_ns().to_string(), emu.receiver_ns().to_string());
    let p1 = emu.paths()[1].clone();
    let run = Running::start(emu);
    std::thread::sleep(StdDuration::from_millis(300));
    // 400 datagrams of 1228 wire bytes back to back: 0.2 s of queue at 20 Mbit/s.
    let blast = std::thread::spawn({
        let ns_a = ns_a.clone();
        move || {
            netns::enter(&ns_a).unwrap();
            let sock = UdpSocket::bind(SocketAddr::from((p1.a, 0))).unwrap();
            for _ in 0..400 {
                let _ = sock.send_to(&[0u8; 1200], SocketAddr::from((p1.b, 9999)));
            }
        }
    });
    blast.join().unwrap();
    std::thread::sleep(StdDuration::from_millis(20));
    let emu = run.finish();
    assert!(emu.link_stats()[1].1.offered >= 300);
    // Time zero again.
    let run = Running::start(emu);
    std::thread::sleep(StdDuration::from_millis(20));
    let got = udp_probe(
        &ns_a,
        &ns_b,
        p1.a,
        p1.b,
        50,
        100,
        StdDuration::from_millis(2),
    );
    let emu = run.finish();
    assert_eq!(got.len(), 50);
    let mut delays: Vec<f64> = got
        .iter()
        .map(|&(_, s, r)| (r - s).as_secs_f64() * 1e3)
        .collect();
    delays.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let want = 5.0 + 128.0 * 8.0 / 20e6 * 1e3;
    // What this test guards against holds packets back by the old clock's time plus the
    // 0.2 s backlog. The allowance is the accuracy test's (5 % of its 20 ms path, 1 ms) in
    // absolute terms: on this 5 ms path 5 % is 0.25 ms, less than the scheduling latency of a
    // loaded 2-core machine (a run right after a cold build measured 5.44 against 5.05 ms).
    assert!(
        delays[0] >= want - 0.01,
        "a packet arrived early: {}",
        delays[0]
    );
    assert!(
        (delays[25] - want).abs() < 1.0,
        "median {} ms vs {want} ms",
        delays[25]
    );
    // The counters restarted with the links.
    assert_eq!(emu.link_stats()[1].1.offered, 50);
}
