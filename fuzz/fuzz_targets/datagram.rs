//! Arbitrary bytes into the parser and into a live connection, both as they are and wrapped
//! in a valid header and checksum (so the frame parser, not the CRC, sees them).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tributary_proto::wire::{parse_packet, FrameIter};
use tributary_proto::{Connection, ConnectionConfig, Instant};

fuzz_target!(|data: &[u8]| {
    if let Ok((_, body)) = parse_packet(data) {
        for f in FrameIter::new(body) {
            let _ = f;
        }
    }
    for f in FrameIter::new(data) {
        let _ = f;
    }
    let mut conn = Connection::new(ConnectionConfig::default(), 2).expect("default config");
    let _ = conn.handle_datagram(Instant::ZERO, data);
    // Header: magic, the current version, conn id 1 (8 bytes), path 0, packet number 0;
    // then the input; then CRC.
    let mut pkt = vec![0x54, tributary_proto::wire::VERSION, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0];
    pkt.extend_from_slice(data);
    let crc = crc32fast::hash(&pkt);
    pkt.extend_from_slice(&crc.to_be_bytes());
    let _ = conn.handle_datagram(Instant::ZERO, &pkt);
    let mut buf = vec![0u8; conn.max_datagram()];
    while conn.poll_transmit(Instant::ZERO, &mut buf).is_some() {}
});
