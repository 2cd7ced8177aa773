//! A tracer sees every packet sent, received and lost, and the congestion state after each
//! change: its counts equal the connection's own counters.

use crate::common;

use std::sync::{Arc, Mutex};
use tributary_proto::trace::{TraceEvent, Tracer};
use tributary_proto::{Connection, ConnectionConfig, Instant};

#[derive(Debug, Default)]
struct Counts {
    sent: u64,
    received: u64,
    lost: u64,
    metrics: u64,
    bad_pn: u64,
}

#[derive(Debug)]
struct Counter(Arc<Mutex<Counts>>);

impl Tracer for Counter {
    fn event(&mut self, _now: Instant, ev: &TraceEvent<'_>) {
        let mut c = self.0.lock().unwrap();
        match ev {
            TraceEvent::PacketSent { header, frames, .. }
            | TraceEvent::PacketReceived { header, frames, .. } => {
                // The frames decode, and their packet's header is a real one.
                let ok = tributary_proto::wire::FrameIter::new(frames).all(|f| f.is_ok());
                if !ok || header.conn_id != 1 {
                    c.bad_pn += 1;
                }
                if matches!(ev, TraceEvent::PacketSent { .. }) {
                    c.sent += 1;
                } else {
                    c.received += 1;
                }
            }
            TraceEvent::PacketLost { .. } => c.lost += 1,
            TraceEvent::MetricsUpdated { .. } => c.metrics += 1,
            _ => {}
        }
    }
}

#[test]
fn tracer_counts_match_the_connection_counters() {
    let cfg = ConnectionConfig::default();
    let (mut a, mut b) = (
        Connection::new(cfg.clone(), 2).unwrap(),
        Connection::new(cfg, 0).unwrap(),
    );
    let ca = Arc::new(Mutex::new(Counts::default()));
    let cb = Arc::new(Mutex::new(Counts::default()));
    a.set_tracer(Box::new(Counter(Arc::clone(&ca))));
    b.set_tracer(Box::new(Counter(Arc::clone(&cb))));
    let data = vec![9u8; 300_000];
    let mut now = Instant::ZERO;
    let mut src = common::Source::new(&data);
    let got = common::transfer_from(&mut a, &mut b, &mut now, &mut src, 100_000, 11);
    assert_eq!(got.len(), data.len());
    let (sa, sb) = (a.stats(), b.stats());
    let sum = |s: &tributary_proto::ConnectionStats,
               f: fn(&tributary_proto::path::PathStats) -> u64| {
        s.paths.iter().map(f).sum::<u64>()
    };
    let (ca, cb) = (ca.lock().unwrap(), cb.lock().unwrap());
    assert_eq!(ca.sent, sum(&sa, |p| p.packets_sent));
    assert_eq!(cb.sent, sum(&sb, |p| p.packets_sent));
    assert_eq!(
        cb.received,
        sum(&sb, |p| p.packets_received - p.duplicates_received)
    );
    assert_eq!(ca.lost, sum(&sa, |p| p.packets_lost));
    assert!(ca.lost > 0 && ca.metrics > 0);
    assert_eq!(ca.bad_pn + cb.bad_pn, 0);
}
