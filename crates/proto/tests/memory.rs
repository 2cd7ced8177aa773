//! Memory follows the data in flight, not the configured buffers (issue "Engine that does not
//! stall, lie or bloat": a bulk source filled its whole send buffer at start, 1,000 flows took
//! 4.8 GB).

use crate::common;

use common::{transfer_from, Source};
use tributary_proto::conn::UNSENT_FLOOR;
use tributary_proto::{Connection, ConnectionConfig, Instant};

/// A bulk writer may hold at most max(aggregate cwnd, UNSENT_FLOOR) bytes written but not
/// sent, whatever the buffers allow (2 MiB receive window, 4 MiB send buffer by default);
/// as packets leave, exactly as many bytes may be written again.
#[test]
fn a_bulk_writer_holds_at_most_a_window_unsent() {
    let cfg = ConnectionConfig::default();
    let mut a = Connection::new(cfg, 2).unwrap();
    let big = vec![7u8; 4 << 20];
    let now = Instant::ZERO;
    let n = a.write(&big);
    // The initial windows (10 packets per path) are below the floor.
    assert_eq!(n as u64, UNSENT_FLOOR);
    assert_eq!(a.write_capacity(), 0);
    let mut buf = vec![0u8; 2048];
    let mut sent_payload = 0usize;
    while let Some(t) = a.poll_transmit(now, &mut buf) {
        sent_payload += t.len;
    }
    assert!(sent_payload > 0);
    let cap = a.write_capacity();
    // What left (payload minus headers) may be written again, no more.
    assert!(
        cap > 0 && cap <= sent_payload,
        "{cap} after {sent_payload} sent"
    );
}

/// The limit never starves a transfer: a writer that writes whenever it is offered room gets
/// every byte through.
#[test]
fn a_limited_writer_still_delivers_everything() {
    let cfg = ConnectionConfig::default();
    let (mut a, mut b) = (
        Connection::new(cfg.clone(), 1).unwrap(),
        Connection::new(cfg, 1).unwrap(),
    );
    let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 241) as u8).collect();
    let mut src = Source::new(&data);
    let mut now = Instant::ZERO;
    let got = transfer_from(&mut a, &mut b, &mut now, &mut src, 100_000, 0);
    assert!(got == data, "{} of {} bytes", got.len(), data.len());
    assert!(a.is_all_acked());
}
