//! Accuracy of the emulator: UDP datagrams at a paced rate through one emulated path, with
//! the realised rate, one-way delay and loss measured by the receiver, and the emulator's CPU
//! cost. Needs root. Used by `scripts/emu-accuracy.sh`; results in `docs/emulate.md`.
//!
//! ```text
//! cargo run --release -p tributary-emu --example accuracy -- \
//!     --rate 100e6 --delay-ms 20 --loss 0.01 --load 1.1 --seconds 5
//! ```
//!
//! `--load` is the offered rate over the link rate (on the wire, 28 bytes of IPv4 + UDP
//! headers per datagram): above 1 the queue stays busy and the receiver sees the link rate;
//! below 1 nothing queues and the delay is the propagation delay plus one serialization.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tributary_emu::{netns, thread_cpu_s, Emulator, Options};

struct Args {
    rate: f64,
    delay_ms: f64,
    loss: f64,
    load: f64,
    seconds: f64,
    size: usize,
    queue: u64,
    realtime: bool,
    rt_endpoints: bool,
    mtu: u32,
}

/// Puts the calling thread under SCHED_FIFO at `prio` (below the emulator's 10).
fn realtime(prio: i32) {
    let p = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: sched_setscheduler on the calling thread with a valid sched_param.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) };
}

fn parse() -> Args {
    let mut a = Args {
        rate: 100e6,
        delay_ms: 20.0,
        loss: 0.0,
        load: 1.1,
        seconds: 5.0,
        size: 1472,
        queue: 1000,
        realtime: true,
        rt_endpoints: false,
        mtu: 1500,
    };
    let v: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < v.len() {
        let val = || v.get(i + 1).expect("missing value").clone();
        match v[i].as_str() {
            "--rate" => a.rate = val().parse().expect("rate"),
            "--delay-ms" => a.delay_ms = val().parse().expect("delay"),
            "--loss" => a.loss = val().parse().expect("loss"),
            "--load" => a.load = val().parse().expect("load"),
            "--seconds" => a.seconds = val().parse().expect("seconds"),
            "--size" => a.size = val().parse().expect("size"),
            "--queue" => a.queue = val().parse().expect("queue"),
            "--mtu" => a.mtu = val().parse().expect("mtu"),
            "--no-realtime" => {
                a.realtime = false;
                i -= 1;
            }
            // The traffic generator and receiver at real-time priority too (below the
            // emulator): measures the emulator rather than its competition for the CPU.
            "--rt-endpoints" => {
                a.rt_endpoints = true;
                i -= 1;
            }
            other => panic!("unknown argument {other}"),
        }
        i += 2;
    }
    assert!(
        a.size >= 16 && a.size + 28 <= a.mtu as usize,
        "--size must be in 16..=MTU-28"
    );
    a
}

fn process_cpu_s() -> f64 {
    // SAFETY: getrusage writes one rusage.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn main() {
    let a = parse();
    if let Some(why) = netns::unavailable() {
        eprintln!("cannot run: {why}");
        std::process::exit(2);
    }
    let text = format!(
        r#"
name = "accuracy"
duration = "1000s"
[[links]]
name = "p"
rate = {}
delay = "{}ms"
queue = {}
loss = {}
[[flows]]
name = "f"
paths = ["p"]
"#,
        a.rate as u64, a.delay_ms, a.queue, a.loss
    );
    let s = tributary_lab::Scenario::parse(&text, "accuracy").unwrap();
    let mut cfg = s.config(0, 0).sim.clone();
    cfg.seed = 1;
    let opts = Options {
        realtime: a.realtime,
        mtu: a.mtu,
        ..Options::default()
    };
    let mut emu = Emulator::new(&cfg, 0, &opts, |m| eprintln!("{m}")).unwrap();
    let (ns_a, ns_b) = (emu.sender_ns().to_string(), emu.receiver_ns().to_string());
    let p = emu.paths()[0].clone();
    let stop = Arc::new(AtomicBool::new(false));
    let st = stop.clone();
    let emu_thread = std::thread::spawn(move || {
        emu.reset_clock();
        emu.run(|| st.load(Ordering::SeqCst)).unwrap();
        emu
    });

    let wire_bits = (a.size + 28) as f64 * 8.0;
    let gap_ns = wire_bits / (a.rate * a.load) * 1e9;
    let n = (a.seconds * 1e9 / gap_ns) as u64;
    let base = Instant::now();
    let sent = Arc::new(AtomicU64::new(0));
    let (tx, rx) = std::sync::mpsc::channel();
    let size = a.size;
    let rt = a.rt_endpoints;
    let receiver = std::thread::spawn(move || {
        netns::enter(&ns_b).unwrap();
        if rt {
            realtime(5);
        }
        let sock = UdpSocket::bind(SocketAddr::from((p.b, 9000))).unwrap();
        // A large socket buffer: the receiving application must not be the bottleneck.
        let big: libc::c_int = 64 << 20;
        // SAFETY: setsockopt with a c_int value (SO_RCVBUFFORCE: root may exceed rmem_max).
        unsafe {
            use std::os::fd::AsRawFd;
            libc::setsockopt(
                sock.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVBUFFORCE,
                (&big as *const libc::c_int).cast(),
                4,
            );
        }
        sock.set_read_timeout(Some(Duration::from_millis(1000)))
            .unwrap();
        tx.send(()).unwrap();
        let mut arrivals: Vec<(u64, u64, u64)> = Vec::with_capacity(n as usize);
        let mut buf = vec![0u8; 65536];
        while let Ok(len) = sock.recv(&mut buf) {
            let t = base.elapsed().as_nanos() as u64;
            if len != size {
                continue;
            }
            let seq = u64::from_le_bytes(buf[..8].try_into().unwrap());
            let sent = u64::from_le_bytes(buf[8..16].try_into().unwrap());
            arrivals.push((seq, sent, t));
        }
        arrivals
    });
    rx.recv().unwrap();
    let sent2 = sent.clone();
    let sender = std::thread::spawn(move || {
        netns::enter(&ns_a).unwrap();
        if rt {
            realtime(5);
        }
        let sock = UdpSocket::bind(SocketAddr::from((p.a, 0))).unwrap();
        sock.connect(SocketAddr::from((p.b, 9000))).unwrap();
        let mut pkt = vec![0u8; size];
        let start = Instant::now();
        let cpu0 = thread_cpu_s();
        for i in 0..n {
            let due = Duration::from_nanos((i as f64 * gap_ns) as u64);
            loop {
                let now = start.elapsed();
                if now >= due {
                    break;
                }
                let left = due - now;
                if left > Duration::from_micros(200) {
                    std::thread::sleep(left - Duration::from_micros(100));
                } else {
                    std::hint::spin_loop();
                }
            }
            pkt[..8].copy_from_slice(&i.to_le_bytes());
            pkt[8..16].copy_from_slice(&(base.elapsed().as_nanos() as u64).to_le_bytes());
            // ENOBUFS (the device queue full) counts as a datagram not sent.
            if sock.send(&pkt).is_ok() {
                sent2.fetch_add(1, Ordering::Relaxed);
            }
        }
        (start.elapsed().as_secs_f64(), thread_cpu_s() - cpu0)
    });
    let cpu_start = process_cpu_s();
    let (send_secs, sender_cpu) = sender.join().unwrap();
    let arrivals = receiver.join().unwrap();
    let process_cpu = process_cpu_s() - cpu_start;
    stop.store(true, Ordering::SeqCst);
    let emu = emu_thread.join().unwrap();

    let sent = sent.load(Ordering::Relaxed);
    let got = arrivals.len() as u64;
    // Rate: arrivals between 20 % and 90 % of the sending time (steady state).
    let t0 = arrivals.first().map_or(0, |x| x.2);
    let lo = t0 + (send_secs * 0.2 * 1e9) as u64;
    let hi = t0 + (send_secs * 0.9 * 1e9) as u64;
    let window: Vec<_> = arrivals.iter().filter(|x| x.2 >= lo && x.2 <= hi).collect();
    let rate = if window.len() > 1 {
        (window.len() - 1) as f64 * wire_bits
            / ((window[window.len() - 1].2 - window[0].2) as f64 / 1e9)
    } else {
        0.0
    };
    let mut delays: Vec<f64> = arrivals.iter().map(|x| (x.2 - x.1) as f64 / 1e6).collect();
    delays.sort_by(|x, y| x.partial_cmp(y).unwrap());
    let q = |f: f64| {
        delays
            .get(((delays.len() as f64 - 1.0) * f) as usize)
            .copied()
            .unwrap_or(f64::NAN)
    };
    let model_delay = a.delay_ms + wire_bits / a.rate * 1e3;
    let link = emu.link_stats()[0].1;
    let es = emu.stats();
    let expected_rate = a.rate.min(a.rate * a.load);
    let out = serde_json::json!({
        "rate_mbps": a.rate / 1e6,
        "rt_endpoints": a.rt_endpoints,
        "load": a.load,
        "delay_ms": a.delay_ms,
        "loss": a.loss,
        "size": a.size,
        "mtu": a.mtu,
        "seconds": send_secs,
        "sent": sent,
        "received": got,
        "offered_to_link": link.offered,
        "queue_drops": link.queue_drops,
        "random_drops": link.random_drops,
        "realised_rate_mbps": rate / 1e6,
        "rate_error": rate / expected_rate - 1.0,
        "delay_model_ms": model_delay,
        "delay_p50_ms": q(0.5),
        "delay_p99_ms": q(0.99),
        "delay_min_ms": q(0.0),
        "delay_p50_error": q(0.5) / model_delay - 1.0,
        "realised_loss": 1.0 - got as f64 / sent.max(1) as f64,
        "model_loss": link.random_drops as f64 / link.offered.max(1) as f64,
        "kernel_drops_before_emulator": sent.saturating_sub(link.offered),
        "lost_after_model": link.offered - link.queue_drops - link.random_drops - got.min(link.offered),
        "emulator_cpu_fraction": es.cpu_s / es.wall_s,
        "sender_cpu_fraction": sender_cpu / send_secs,
        "process_cpu_fraction": process_cpu / send_secs,
        "lateness_mean_us": es.lateness.mean_us(),
        "lateness_p99_us": es.lateness.quantile_us(0.99),
        "lateness_max_ms": es.lateness.max_ns as f64 / 1e6,
    });
    println!("{out}");
}
