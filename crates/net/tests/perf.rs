//! `tributary perf`'s engine on loopback: forward and reverse tests whose reports add up
//! (intervals to totals, paths to the stream, the two ends to each other), with every
//! registered scheme and congestion controller.

use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// `perf`'s linger after the end of a stream (`LINGER` in crates/net/src/perf.rs).
const LINGER: Duration = Duration::from_secs(2);
use tributary_net::perf::{PerfRole, Side};
use tributary_net::{
    perf_client, perf_serve, Content, Limits, Listener, PerfDone, PerfOptions, PerfReport, Service,
    SocketOptions, UdpDriver,
};
use tributary_proto::cc::{CcConfig, Controllers};
use tributary_proto::handshake::Credentials;
use tributary_proto::registry::describe;
use tributary_proto::scheme::{SchemeConfig, Schemes};
use tributary_proto::ConnectionConfig;

fn local() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

const PSK: [u8; 32] = [5; 32];

/// A perf server on two sockets that takes `tests` tests, then stops; returns the client's
/// paths and the server's results.
fn server(
    tests: u64,
) -> (
    Vec<(SocketAddr, SocketAddr)>,
    thread::JoinHandle<Vec<PerfDone>>,
) {
    let mut d = UdpDriver::listen_secure(
        &[local(), local()],
        SocketOptions::default(),
        Listener {
            creds: Credentials::Psk(PSK),
            limits: Limits::default(),
            max_connections: 4,
            admission: tributary_net::Admission::default(),
            service: Service::Perf {
                max_duration: Duration::from_secs(5),
            },
        },
    )
    .unwrap();
    let paths = d.local_addrs().iter().map(|&r| (local(), r)).collect();
    let h = thread::spawn(move || {
        let done = Arc::new(Mutex::new(Vec::new()));
        let stop = AtomicBool::new(false);
        let sink = Arc::clone(&done);
        perf_serve(
            &mut d,
            Duration::from_secs(10),
            Duration::from_millis(100),
            &stop,
            Some(tests),
            |e| eprintln!("server: {e:?}"),
            move |t| sink.lock().unwrap().push(t),
        )
        .unwrap();
        let v = done.lock().unwrap().clone();
        v
    });
    (paths, h)
}

fn client(
    paths: &[(SocketAddr, SocketAddr)],
    cfg: ConnectionConfig,
    secs: f64,
    reverse: bool,
) -> PerfReport {
    let duration = Duration::from_secs_f64(secs);
    let mut d = UdpDriver::connect_secure(
        cfg,
        paths,
        SocketOptions::default(),
        &Credentials::Psk(PSK),
        Content::Perf {
            reverse,
            duration_ms: duration.as_millis() as u64,
        },
    )
    .unwrap();
    let opts = PerfOptions {
        duration,
        interval: Duration::from_millis(100),
        reverse,
        idle_timeout: Duration::from_secs(10),
    };
    let mut live = Vec::new();
    let r = perf_client(&mut d, &opts, &mut |i| live.push(i.clone())).unwrap();
    // Every interval shown live is in the report (the last may have been extended).
    assert!(live.len() >= r.local.intervals.len().saturating_sub(1));
    for (a, b) in live.iter().zip(&r.local.intervals) {
        assert_eq!(a.start, b.start);
    }
    r
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0)
}

/// Intervals tile the test, and add up to the totals, per path and over the stream.
fn check_side(s: &Side, paths: usize) {
    assert!(!s.intervals.is_empty());
    let mut t = 0.0;
    for i in &s.intervals {
        assert!(
            close(i.start, t),
            "interval starts at {} after {t}",
            i.start
        );
        assert!(i.end > i.start);
        assert!(close(
            i.mbps,
            i.bytes as f64 * 8.0 / (i.end - i.start) / 1e6
        ));
        assert_eq!(i.paths.len(), paths);
        t = i.end;
    }
    assert!(close(s.seconds, t));
    let sum: u64 = s.intervals.iter().map(|i| i.bytes).sum();
    assert_eq!(
        s.bytes, sum,
        "stream bytes differ from the sum of the intervals"
    );
    assert!(close(s.mbps, s.bytes as f64 * 8.0 / s.seconds / 1e6));
    assert_eq!(s.paths.len(), paths);
    for p in &s.paths {
        let sum: u64 = s.intervals.iter().map(|i| i.paths[p.path].bytes).sum();
        assert_eq!(
            p.bytes, sum,
            "path {} total differs from its intervals",
            p.path
        );
        match s.role {
            PerfRole::Sender => {
                let lost: u64 = s
                    .intervals
                    .iter()
                    .map(|i| i.paths[p.path].lost.unwrap())
                    .sum();
                assert_eq!(p.lost, Some(lost));
                for i in &s.intervals {
                    let q = &i.paths[p.path];
                    if q.bytes > 0 {
                        assert!(q.rtt_ms.is_some_and(|r| r > 0.0) && q.cwnd.is_some());
                    }
                }
            }
            PerfRole::Receiver => assert_eq!(p.lost, None),
        }
    }
    // What crossed the paths carries the stream: the sender's payload bytes at least the
    // stream bytes acknowledged; the receiver's datagram bytes at least those delivered.
    let path_sum: u64 = s.paths.iter().map(|p| p.bytes).sum();
    assert!(path_sum >= s.bytes, "{path_sum} < {}", s.bytes);
}

#[test]
fn forward_and_reverse_reports_add_up() {
    let (paths, h) = server(2);
    let cfg = ConnectionConfig::default();
    let f = client(&paths, cfg.clone(), 0.6, false);
    assert!(!f.reverse && f.protected && f.remote.is_none());
    assert_eq!(f.local.role, PerfRole::Sender);
    check_side(&f.local, 2);
    assert!(f.local.seconds >= 0.6, "sent for {} s", f.local.seconds);
    assert!(f.local.bytes > 0);
    for p in &f.local.paths {
        assert!(p.bytes > 0, "path {} unused", p.path);
    }
    let r = client(&paths, cfg, 0.6, true);
    assert!(r.reverse);
    assert_eq!(r.local.role, PerfRole::Receiver);
    check_side(&r.local, 2);
    let sender = r.remote.as_ref().expect("the server's report");
    assert_eq!(sender.role, PerfRole::Sender);
    check_side(sender, 2);
    assert!(sender.seconds >= 0.6);
    // The server's report covers the bytes acknowledged up to the end of its duration; the
    // client read those and the rest (the report itself among them).
    assert!(r.local.bytes > sender.bytes && sender.bytes > 0);
    for p in &r.local.paths {
        assert!(p.bytes > 0, "path {} unused in reverse", p.path);
    }
    let done = h.join().unwrap();
    assert_eq!(done.len(), 2);
    // Forward: the server received exactly what the client had acknowledged.
    let fwd = done.iter().find(|d| !d.reverse).unwrap();
    assert_eq!(fwd.side.role, PerfRole::Receiver);
    assert_eq!(fwd.side.bytes, f.local.bytes);
    check_side(&fwd.side, 2);
}

/// Every scheme (reverse: the server's end sends with it) and every controller (forward),
/// three tests at a time against one server of four connection slots: the server also has to
/// keep concurrent tests apart.
#[test]
fn every_scheme_and_controller() {
    const AT_ONCE: usize = 3;
    let schemes: Vec<&str> = describe::<Schemes>().iter().map(|d| d.name).collect();
    let ccs: Vec<&str> = describe::<Controllers>().iter().map(|d| d.name).collect();
    let (paths, h) = server((schemes.len() + ccs.len()) as u64);
    let paths = &paths;
    let one_scheme = |s: &str| {
        let cfg = ConnectionConfig {
            scheme: SchemeConfig::named(s).unwrap(),
            ..ConnectionConfig::default()
        };
        // Single-path schemes (tcp) on one path.
        let n = if cfg.validate(2).is_ok() { 2 } else { 1 };
        let t0 = Instant::now();
        let r = client(&paths[..n], cfg, 0.3, true);
        // The server closes once all it sent is acknowledged, and its CLOSE ends the client's
        // wait: the client does not sit out its linger (2 s) after every reverse test.
        let took = t0.elapsed();
        assert!(
            took < Duration::from_secs_f64(0.3) + LINGER,
            "{s}: the reverse test took {took:?}, its linger included"
        );
        assert_eq!(r.scheme, s);
        check_side(&r.local, n);
        assert!(r.local.bytes > 0, "{s}: nothing received");
    };
    let one_cc = |c: &str| {
        let cfg = ConnectionConfig {
            cc: CcConfig::named(c).unwrap(),
            ..ConnectionConfig::default()
        };
        let r = client(paths, cfg, 0.3, false);
        assert_eq!(r.cc, c);
        check_side(&r.local, 2);
        assert!(r.local.bytes > 0, "{c}: nothing acknowledged");
    };
    let tests: Vec<(&str, bool)> = schemes
        .iter()
        .map(|&s| (s, true))
        .chain(ccs.iter().map(|&c| (c, false)))
        .collect();
    for batch in tests.chunks(AT_ONCE) {
        std::thread::scope(|sc| {
            for &(name, is_scheme) in batch {
                let (one_scheme, one_cc) = (&one_scheme, &one_cc);
                sc.spawn(move || {
                    if is_scheme {
                        one_scheme(name)
                    } else {
                        one_cc(name)
                    }
                });
            }
        });
    }
    assert_eq!(
        h.join().unwrap().len(),
        tests.len(),
        "tests the server completed"
    );
}
