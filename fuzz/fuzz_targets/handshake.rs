//! The handshake on hostile bytes: the responder reading an arbitrary INIT (raw, and a
//! valid INIT mutated by the input), the initiator reading an arbitrary RESPONSE/REJECT, the
//! parser. INITs carry a timestamp (wire version 4). Nothing may panic; nothing but the genuine messages may complete a handshake.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use tributary_proto::handshake::{self, accept, generate_keypair, Credentials, Initiator, Timestamp};

/// The INIT's timestamp (authenticated: a mutated INIT that still authenticates carries it).
const TS: Timestamp = Timestamp { secs: 1_800_000_000, nanos: 123_456_789 };

struct Fixture {
    client: Credentials,
    server: Credentials,
    init: Vec<u8>,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let (ci, pi) = generate_keypair([1; 32]);
        let (cr, pr) = generate_keypair([2; 32]);
        let client = Credentials::Keys { private: ci, peers: vec![pr], psk: None };
        let server = Credentials::Keys { private: cr, peers: vec![pi], psk: None };
        let init = Initiator::new(&client, 5, b"{\"offer\":1}", [3; 32], TS).unwrap().packet().to_vec();
        Fixture { client, server, init }
    })
}

fuzz_target!(|data: &[u8]| {
    let f = fixture();
    let _ = handshake::parse(data);
    // Raw bytes as an INIT.
    let _ = accept(&f.server, data, [4; 32]);
    let _ = accept(&Credentials::Psk([9; 32]), data, [4; 32]);
    // A genuine INIT with the input XORed over it: any change must fail authentication
    // (or, if it only touched the padding, still yield the genuine offer).
    let mut m = f.init.clone();
    for (i, b) in data.iter().enumerate() {
        if let Some(x) = m.get_mut(i % f.init.len()) {
            *x ^= b;
        }
    }
    if let Ok(a) = accept(&f.server, &m, [4; 32]) {
        assert_eq!(a.offer, b"{\"offer\":1}");
        assert_eq!(a.conn_id, 5);
        assert_eq!(a.timestamp, TS);
    }
    // The initiator reading arbitrary bytes, then still completing with the genuine answer.
    let mut i = Initiator::new(&f.client, 5, b"{\"offer\":1}", [3; 32], TS).unwrap();
    assert!(i.read(data).is_err() || data.first() == Some(&handshake::MAGIC));
    let a = accept(&f.server, i.packet(), [4; 32]).unwrap();
    let (_, resp) = a.respond(b"ok").unwrap();
    let e = i.read(&resp).unwrap();
    assert_eq!(e.answer, b"ok");
});
