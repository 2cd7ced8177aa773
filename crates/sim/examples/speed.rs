//! Quick speed probe: one TCP bulk flow, 10 Mbit/s, 100 ms RTT, 300 s.
use tributary_proto::scheme::SchemeConfig;
use tributary_proto::time::Duration;
use tributary_proto::ConnectionConfig;
use tributary_sim::*;

fn main() {
    let l = LinkParams::new(10_000_000, Duration::from_millis(50), 100);
    let cfg = SimConfig {
        links: vec![LinkConfig {
            name: "l".into(),
            forward: l.clone(),
            reverse: l,
        }],
        flows: vec![FlowConfig {
            name: "f".into(),
            paths: vec![vec![0]],
            conn: ConnectionConfig {
                scheme: SchemeConfig::Tcp,
                recv_buffer: 512 << 10,
                send_buffer: 1 << 20,
                ..Default::default()
            },
            kind: FlowKind::Multipath,
            start: Duration::ZERO,
            bytes: None,
            read_rate_bps: None,
        }],
        changes: vec![],
        duration: Duration::from_secs(300),
        seed: 1,
        header_overhead: 28,
        sample_interval: None,
    };
    let t = std::time::Instant::now();
    let r = run(cfg).unwrap();
    let s = t.elapsed().as_secs_f64();
    println!(
        "{} pkts in {:.3}s = {:.0}/s, goodput {:.3}",
        r.data_packets_delivered,
        s,
        r.data_packets_delivered as f64 / s,
        r.flows[0].goodput_mbps
    );
}
