//! qlog traces of real-socket connections (`--qlog DIR` of `tributary send/recv/perf`): a
//! protected loopback transfer traced at both ends, the receiver's connection created by the
//! handshake (so through the driver's tracer factory). Issue 8 asks for qlog traces "from the
//! UDP driver, loadable in qvis": JSON-SEQ records (RFC 7464), a qlog header, and events for
//! packets sent, received and lost and metrics updated, with path ids. The tests check the
//! files parse that way, that every packet the connection counted is in its trace, and that
//! trace files never overwrite a user's file.

use crate::test_tempdir::TempDir;
use std::net::SocketAddr;
use std::path::Path;
use std::thread;
use std::time::Duration;
use tributary_net::qlog::QlogDir;
use tributary_net::{
    receive_stream, send_stream, Content, Limits, Listener, Service, SocketOptions,
    TransferOptions, UdpDriver,
};
use tributary_proto::handshake::Credentials;
use tributary_proto::qlog::VantagePoint;
use tributary_proto::ConnectionConfig;

fn local() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// A fresh empty directory under the system's temporary directory, removed when the test
/// passes.
fn temp_dir(name: &str) -> TempDir {
    TempDir::new(&format!("qlog-{name}"))
}

/// The records of a JSON-SEQ file: each is 0x1E, one JSON text, and a line feed.
fn records(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(
        text.starts_with('\u{1e}'),
        "{}: not JSON-SEQ",
        path.display()
    );
    text.split('\u{1e}')
        .skip(1)
        .map(|r| {
            assert!(r.ends_with('\n'), "record without its line feed: {r:?}");
            serde_json::from_str(r).unwrap_or_else(|e| panic!("bad record {r:?}: {e}"))
        })
        .collect()
}

/// Events per path id with name `name`.
fn count(events: &[serde_json::Value], name: &str, path: u64) -> u64 {
    events
        .iter()
        .filter(|e| e["name"] == name && e["data"]["path_id"] == path)
        .count() as u64
}

fn check_trace(recs: &[serde_json::Value], vantage: &str) {
    let head = &recs[0];
    assert_eq!(head["qlog_format"], "JSON-SEQ");
    assert_eq!(head["qlog_version"], "0.3");
    assert_eq!(head["trace"]["vantage_point"]["type"], vantage);
    let mut last = 0.0;
    for e in &recs[1..] {
        let t = e["time"].as_f64().expect("event time");
        assert!(t >= last, "time went back: {t} after {last}");
        last = t;
        assert!(e["name"].is_string() && e["data"].is_object(), "{e}");
        assert!(
            e["data"]["path_id"].is_u64(),
            "event without a path id: {e}"
        );
    }
}

#[test]
fn protected_transfer_traced_at_both_ends() {
    let dir = temp_dir("transfer");
    let psk = [7u8; 32];
    let mut rx = UdpDriver::listen_secure(
        &[local(), local()],
        SocketOptions::default(),
        Listener {
            creds: Credentials::Psk(psk),
            limits: Limits::default(),
            max_connections: 1,
            admission: tributary_net::Admission::default(),
            service: Service::Files { resume: None },
        },
    )
    .unwrap();
    let rq = QlogDir::new(&dir, "receiver", VantagePoint::Server).unwrap();
    rx.set_tracer_factory(rq.factory());
    assert!(rq.files().is_empty(), "no connection yet, so no file");
    let paths: Vec<_> = rx.local_addrs().iter().map(|&r| (local(), r)).collect();
    let opts = TransferOptions {
        idle_timeout: Duration::from_secs(20),
        linger: Duration::from_millis(300),
    };
    let recv = thread::spawn(move || {
        let mut out = Vec::new();
        let r = receive_stream(&mut rx, &mut out, &opts).unwrap();
        drop(rx);
        (r, out)
    });
    let data: Vec<u8> = (0..2_000_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
    let mut tx = UdpDriver::connect_secure(
        ConnectionConfig::default(),
        &paths,
        SocketOptions::default(),
        &Credentials::Psk(psk),
        Content::File {
            name: None,
            size: Some(data.len() as u64),
            resumable: false,
        },
    )
    .unwrap();
    let sq = QlogDir::new(&dir, "sender", VantagePoint::Client).unwrap();
    tx.set_tracer_factory(sq.factory());
    let id = tx.session().unwrap().id();
    let s = send_stream(&mut tx, &data[..], &opts).unwrap();
    drop(tx);
    let (r, out) = recv.join().unwrap();
    assert!(out == data, "received bytes differ");
    assert!(sq.errors().is_empty() && rq.errors().is_empty());

    let sent_file = dir.join(format!("sender-{id:016x}.sqlog"));
    assert_eq!(sq.files(), vec![sent_file.clone()]);
    assert_eq!(
        rq.files(),
        vec![dir.join(format!("receiver-{id:016x}.sqlog"))]
    );
    let tx_recs = records(&sent_file);
    let rx_recs = records(&rq.files()[0]);
    check_trace(&tx_recs, "client");
    check_trace(&rx_recs, "server");
    // Every packet each end counted is in its trace, on its path.
    for p in &s.paths {
        let path = p.path as u64;
        assert_eq!(
            count(&tx_recs, "transport:packet_sent", path),
            p.packets_sent
        );
        assert_eq!(
            count(&tx_recs, "transport:packet_received", path),
            p.packets_received
        );
    }
    for p in &r.paths {
        let path = p.path as u64;
        assert_eq!(
            count(&rx_recs, "transport:packet_received", path),
            p.packets_received
        );
        assert_eq!(
            count(&rx_recs, "transport:packet_sent", path),
            p.packets_sent
        );
    }
    assert!(count(&tx_recs, "recovery:metrics_updated", 0) > 0);
    let lost: u64 = s.paths.iter().map(|p| p.packets_lost).sum();
    let lost_events = tx_recs
        .iter()
        .filter(|e| e["name"] == "recovery:packet_lost")
        .count() as u64;
    assert_eq!(lost_events, lost);
    // Data went out in the traced packets' frames.
    assert!(tx_recs.iter().any(|e| e["name"] == "transport:packet_sent"
        && e["data"]["frames"]
            .as_array()
            .is_some_and(|f| !f.is_empty())));
}

#[test]
fn trace_files_never_overwrite_and_bad_directories_are_errors() {
    let dir = temp_dir("names");
    let mine = dir.join("sender-0000000000000007.sqlog");
    std::fs::write(&mine, "mine").unwrap();
    let q = QlogDir::new(&dir, "sender", VantagePoint::Client).unwrap();
    let (t, path) = q.tracer(7).unwrap();
    drop(t);
    assert_eq!(path, dir.join("sender-0000000000000007-2.sqlog"));
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "mine");
    let (_, third) = q.tracer(7).unwrap();
    assert_eq!(third, dir.join("sender-0000000000000007-3.sqlog"));
    // The probe file of the writability check is gone.
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");

    let missing = dir.join("missing");
    let e = QlogDir::new(&missing, "sender", VantagePoint::Client).unwrap_err();
    assert!(e.to_string().contains("missing"), "{e}");
    let e = QlogDir::new(&mine, "sender", VantagePoint::Client).unwrap_err();
    assert!(e.to_string().contains("not a directory"), "{e}");
}
