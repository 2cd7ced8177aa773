//! Simulator speed benchmarks (run by `tributary bench`; results in `docs/performance.md`).
//!
//! Speed is measured, never asserted in tests: machines are shared and noisy.

use crate::app::AppConfig;
use crate::config::{FlowConfig, FlowKind, LinkConfig, SimConfig};
use crate::link::LinkParams;
use tributary_proto::cc::CcConfig;
use tributary_proto::scheme::SchemeConfig;
use tributary_proto::time::Duration;
use tributary_proto::ConnectionConfig;

/// A named benchmark case.
#[derive(Debug, Clone)]
pub struct BenchCase {
    /// Short name.
    pub name: &'static str,
    /// What it simulates.
    pub description: &'static str,
    /// The simulation.
    pub config: SimConfig,
}

fn named(scheme: &str) -> SchemeConfig {
    SchemeConfig::named(scheme).expect("registered scheme")
}

fn cc(name: &str) -> CcConfig {
    CcConfig::named(name).expect("registered controller")
}

fn clean_link(name: &str) -> LinkConfig {
    // 10 Mbit/s, 50 ms each way (100 ms RTT), 100-packet drop-tail queue, no loss.
    let p = LinkParams::new(10_000_000, Duration::from_millis(50), 100);
    LinkConfig {
        name: name.into(),
        forward: p.clone(),
        reverse: p,
    }
}

fn bulk(paths: Vec<Vec<usize>>, scheme: SchemeConfig, cc: CcConfig) -> FlowConfig {
    FlowConfig {
        name: "bulk".into(),
        paths,
        conn: ConnectionConfig {
            scheme,
            cc,
            // Above bandwidth-delay product plus queue: the window, not the buffer, limits.
            recv_buffer: 512 << 10,
            send_buffer: 1 << 20,
            ..ConnectionConfig::default()
        },
        kind: FlowKind::Multipath,
        start: Duration::ZERO,
        start_jitter: Duration::ZERO,
        app: AppConfig::default(),
        qlog: false,
    }
}

/// Eight heterogeneous paths for the fmtcp/mptcp cost comparison (issue 14): 50 down to
/// 10 Mbit/s, one-way delays 5-100 ms, Bernoulli loss 0-1 %, queues of one BDP.
fn eight_paths() -> Vec<LinkConfig> {
    let spec: [(u64, u64, f64); 8] = [
        (50, 5, 0.0),
        (40, 10, 0.001),
        (30, 15, 0.002),
        (25, 25, 0.005),
        (20, 35, 0.0),
        (15, 50, 0.01),
        (10, 75, 0.002),
        (10, 100, 0.005),
    ];
    spec.iter()
        .enumerate()
        .map(|(i, &(mbps, ms, loss))| {
            let rate = mbps * 1_000_000;
            let bdp = (rate * 2 * ms / 1000 / 8 / 1500).max(20);
            let mut fwd = LinkParams::new(rate, Duration::from_millis(ms), bdp);
            if loss > 0.0 {
                fwd.loss = crate::link::LossModel::Bernoulli { p: loss };
            }
            LinkConfig {
                name: format!("p{i}"),
                forward: fwd,
                reverse: LinkParams::new(rate, Duration::from_millis(ms), bdp),
            }
        })
        .collect()
}

fn bulk_4mib(scheme: SchemeConfig) -> FlowConfig {
    let mut f = bulk((0..8).map(|i| vec![i]).collect(), scheme, cc("lia"));
    f.conn.recv_buffer = 4 << 20;
    f.conn.send_buffer = 8 << 20;
    f
}

/// The reference cases: one `tcp` bulk flow over a 10 Mbit/s, 100 ms RTT, loss-free
/// link for 300 simulated seconds, and the same with `mptcp` (LIA) over two such links; and
/// `hmtp` (k = 1000) over the two links, for the HMTP issue's per-packet cost target (≤ 3×
/// `mptcp`); and issue 14's cost comparison, `mptcp` and `fmtcp` (LIA) over eight
/// heterogeneous paths with a 4 MiB receive buffer for 10 simulated seconds.
pub fn cases() -> Vec<BenchCase> {
    let sim = |links, flow| SimConfig {
        links,
        flows: vec![flow],
        changes: vec![],
        duration: Duration::from_secs(300),
        seed: 1,
        header_overhead: 28,
        max_live_flows: crate::DEFAULT_MAX_LIVE_FLOWS,
        sample_interval: None,
        arrivals: vec![],
        qlog_dir: None,
    };
    vec![
        BenchCase {
            name: "tcp-10M-100ms-300s",
            description: "tcp bulk, 1 path 10 Mbit/s 100 ms RTT, 300 s",
            config: sim(
                vec![clean_link("l")],
                bulk(vec![vec![0]], named("tcp"), cc("new-reno")),
            ),
        },
        BenchCase {
            name: "mptcp-2x10M-100ms-300s",
            description: "mptcp (LIA) bulk, 2 paths 10 Mbit/s 100 ms RTT, 300 s",
            config: sim(
                vec![clean_link("a"), clean_link("b")],
                bulk(vec![vec![0], vec![1]], named("mptcp"), cc("lia")),
            ),
        },
        BenchCase {
            name: "hmtp-2x10M-100ms-300s",
            description: "hmtp (k = 1000, peeling + elimination, NewReno) bulk, 2 paths \
                          10 Mbit/s 100 ms RTT, 300 s (receive buffer 3 MiB: two chunks)",
            config: sim(vec![clean_link("a"), clean_link("b")], {
                let mut f = bulk(vec![vec![0], vec![1]], named("hmtp"), cc("new-reno"));
                f.conn.recv_buffer = 3 << 20;
                f.conn.send_buffer = 4 << 20;
                f
            }),
        },
        BenchCase {
            name: "mptcp-8paths-4MiB-10s",
            description: "mptcp (LIA) bulk, 8 paths 10-50 Mbit/s 10-200 ms RTT 0-1 % loss, \
                          4 MiB buffer, 10 s",
            config: SimConfig {
                duration: Duration::from_secs(10),
                ..sim(eight_paths(), bulk_4mib(named("mptcp")))
            },
        },
        BenchCase {
            name: "fmtcp-8paths-4MiB-10s",
            description: "fmtcp (LIA) bulk, the same 8 paths, 4 MiB buffer, 10 s",
            config: SimConfig {
                duration: Duration::from_secs(10),
                ..sim(eight_paths(), bulk_4mib(named("fmtcp")))
            },
        },
    ]
}

/// One timed run.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Measurement {
    /// Data packets delivered to receivers.
    pub packets: u64,
    /// Events processed.
    pub events: u64,
    /// Wall-clock seconds.
    pub wall_seconds: f64,
}

impl Measurement {
    /// Delivered data packets per wall-clock second.
    pub fn packets_per_second(&self) -> f64 {
        self.packets as f64 / self.wall_seconds
    }
}

/// Runs `case` once, timing it with the OS monotonic clock.
pub fn measure(case: &BenchCase) -> Result<Measurement, crate::SimError> {
    let t = std::time::Instant::now();
    let r = crate::run(case.config.clone())?;
    Ok(Measurement {
        packets: r.data_packets_delivered,
        events: r.events,
        wall_seconds: t.elapsed().as_secs_f64(),
    })
}
