//! The scheme interface's hooks, each exercised by a test scheme defined outside the crate
//! (plugged in with `SchemeConfig::custom`): packet numbers visible while filling and on
//! ack/loss, timers on both halves, immediate-ACK requests, validated recovery marks, and
//! feedback that does not make ACKs acknowledge each other.

use crate::common;

use common::wrap;
use std::sync::{Arc, Mutex};
use tributary_proto::registry::{Factory, Options};
use tributary_proto::scheme::{
    ArqConfig, ArqReceiver, ArqSender, FrameSource, LossKind, PacketTag, RecvCtx, SchemeConfig,
    SchemeError, SchemeFactory, SchemeReceiver, SchemeSender, SendCtx, SentInfo,
};
use tributary_proto::wire::{self, Frame, FrameIter, PacketWriter};
use tributary_proto::{Connection, ConnectionConfig, Duration, Instant};

/// A probe frame: the sender writes the number of the packet it fills.
const PROBE: u64 = 0x10;
/// A recovery mark request: body = path (1 byte) + packet number (8 bytes, big endian).
const MARK: u64 = 0x11;
/// Receiver feedback, in every ACK.
const FEEDBACK: u64 = 0x80;

/// What the test scheme saw, shared with the test.
#[derive(Debug, Default)]
struct Log {
    /// (path, pn) of every packet the sender filled with a probe.
    probes_filled: Vec<(usize, u64)>,
    /// (path, pn) of every probe packet acknowledged, and when.
    probes_acked: Vec<(usize, u64, Instant)>,
    /// Probe frames whose body matched the packet number they arrived in.
    probes_matching: u64,
    /// Probe frames that did not.
    probes_mismatching: u64,
    /// Feedback frames the sender got.
    feedback: u64,
    /// Sender timer firings and when.
    sender_timer: Vec<Instant>,
    /// Receiver timer firings and when.
    receiver_timer: Vec<Instant>,
}

#[derive(Debug)]
struct Hooks {
    log: Arc<Mutex<Log>>,
    /// Sender: fire once at this time, then put a probe in the next packet.
    sender_timer: Option<Instant>,
    /// Receiver: fire once at this time and ask for an ACK on path 0.
    receiver_timer: Option<Instant>,
    /// Receiver: ask for an immediate ACK when a probe arrives.
    ack_probes: bool,
    /// Receiver: write a feedback frame into every ACK.
    feedback: bool,
}

impl Factory for Hooks {
    fn options(&self) -> Options {
        Options::new()
    }
}

impl SchemeFactory for Hooks {
    fn build(&self, _cfg: &ConnectionConfig) -> (Box<dyn SchemeSender>, Box<dyn SchemeReceiver>) {
        (
            Box::new(HooksSender {
                arq: ArqSender::new("hooks", ArqConfig::default()),
                log: Arc::clone(&self.log),
                timer: self.sender_timer,
                probe_due: false,
            }),
            Box::new(HooksReceiver {
                arq: ArqReceiver,
                log: Arc::clone(&self.log),
                timer: self.receiver_timer,
                ack_probes: self.ack_probes,
                feedback: self.feedback,
            }),
        )
    }
}

/// Tag marking a probe packet (the ARQ tags use real stream offsets, far below).
const PROBE_TAG: PacketTag = PacketTag {
    a: u64::MAX - 1,
    b: 0,
};

#[derive(Debug)]
struct HooksSender {
    arq: ArqSender,
    log: Arc<Mutex<Log>>,
    timer: Option<Instant>,
    probe_due: bool,
}

impl SchemeSender for HooksSender {
    fn name(&self) -> &'static str {
        "hooks"
    }
    fn poll_packet(
        &mut self,
        ctx: &mut SendCtx<'_>,
        path: usize,
        pkt: &mut PacketWriter<'_>,
    ) -> Option<PacketTag> {
        if self.probe_due {
            let pn = pkt.header().pn;
            let body = pn.to_be_bytes();
            pkt.push(&Frame::Scheme {
                kind: PROBE,
                body: &body,
            })
            .ok()?;
            self.probe_due = false;
            self.log.lock().unwrap().probes_filled.push((path, pn));
            return Some(PROBE_TAG);
        }
        self.arq.poll_packet(ctx, path, pkt)
    }
    fn on_acked(&mut self, ctx: &mut SendCtx<'_>, pkt: &SentInfo) {
        if pkt.tag == PROBE_TAG {
            let mut l = self.log.lock().unwrap();
            l.probes_acked.push((pkt.path, pkt.pn, ctx.now));
            return;
        }
        self.arq.on_acked(ctx, pkt);
    }
    fn on_lost(&mut self, ctx: &mut SendCtx<'_>, pkt: &SentInfo, kind: LossKind) {
        if pkt.tag != PROBE_TAG {
            self.arq.on_lost(ctx, pkt, kind);
        }
    }
    fn on_data_ack(&mut self, ctx: &mut SendCtx<'_>) {
        self.arq.on_data_ack(ctx);
    }
    fn on_feedback(&mut self, _ctx: &mut SendCtx<'_>, f: &Frame<'_>) -> Result<(), SchemeError> {
        match f {
            Frame::Scheme { kind: FEEDBACK, .. } => {
                self.log.lock().unwrap().feedback += 1;
                Ok(())
            }
            _ => Err(SchemeError::Unexpected),
        }
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.timer
    }
    fn on_timeout(&mut self, ctx: &mut SendCtx<'_>) {
        self.timer = None;
        self.probe_due = true;
        self.log.lock().unwrap().sender_timer.push(ctx.now);
    }
}

#[derive(Debug)]
struct HooksReceiver {
    arq: ArqReceiver,
    log: Arc<Mutex<Log>>,
    timer: Option<Instant>,
    ack_probes: bool,
    feedback: bool,
}

impl SchemeReceiver for HooksReceiver {
    fn on_frame(
        &mut self,
        ctx: &mut RecvCtx<'_>,
        from: FrameSource,
        frame: &Frame<'_>,
    ) -> Result<(), SchemeError> {
        match frame {
            Frame::Scheme { kind: PROBE, body } => {
                let pn = u64::from_be_bytes(
                    body[..8]
                        .try_into()
                        .map_err(|_| SchemeError::Invalid("probe body"))?,
                );
                let mut l = self.log.lock().unwrap();
                if pn == from.pn {
                    l.probes_matching += 1;
                } else {
                    l.probes_mismatching += 1;
                }
                if self.ack_probes {
                    ctx.request_ack(from.path);
                }
                Ok(())
            }
            Frame::Scheme { kind: MARK, body } if body.len() == 9 => {
                let pn = u64::from_be_bytes(body[1..9].try_into().unwrap());
                ctx.mark_recovered(usize::from(body[0]), pn);
                Ok(())
            }
            other => self.arq.on_frame(ctx, from, other),
        }
    }
    fn write_feedback(&mut self, _now: Instant, _path: usize, pkt: &mut PacketWriter<'_>) {
        if self.feedback {
            let _ = pkt.push(&Frame::Scheme {
                kind: FEEDBACK,
                body: b"fb",
            });
        }
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.timer
    }
    fn on_timeout(&mut self, ctx: &mut RecvCtx<'_>) {
        self.timer = None;
        self.log.lock().unwrap().receiver_timer.push(ctx.now);
        ctx.request_ack(0);
    }
}

fn config(h: Hooks) -> ConnectionConfig {
    ConnectionConfig {
        scheme: SchemeConfig::custom("hooks", Arc::new(h)),
        ..ConnectionConfig::default()
    }
}

fn hooks(log: &Arc<Mutex<Log>>) -> Hooks {
    Hooks {
        log: Arc::clone(log),
        sender_timer: None,
        receiver_timer: None,
        ack_probes: false,
        feedback: false,
    }
}

/// Steps both connections over a lossless network with a one-way delay of `delay`, for
/// `secs` simulated seconds, stepping to the next timer when nothing is in flight. Returns
/// the datagrams each side sent after `count_from`.
fn run(
    a: &mut Connection,
    b: &mut Connection,
    delay: Duration,
    start: Instant,
    secs: u64,
    count_from: Instant,
) -> (u64, u64) {
    run_from(
        a,
        b,
        delay,
        start,
        secs,
        count_from,
        &mut common::Source::new(&[]),
    )
}

/// [`run`], with `src` writing into `a` as it accepts bytes.
fn run_from(
    a: &mut Connection,
    b: &mut Connection,
    delay: Duration,
    start: Instant,
    secs: u64,
    count_from: Instant,
    src: &mut common::Source<'_>,
) -> (u64, u64) {
    let mut now = start;
    let end = start + Duration::from_secs(secs);
    let mut buf = vec![0u8; 2048];
    // (arrival time, to b?, bytes)
    let mut wire: Vec<(Instant, bool, Vec<u8>)> = Vec::new();
    let (mut from_a, mut from_b) = (0u64, 0u64);
    let mut sink = Vec::new();
    while now < end {
        src.pump(a);
        while let Some(t) = a.poll_transmit(now, &mut buf) {
            from_a += u64::from(now >= count_from);
            wire.push((now + delay, true, buf[..t.len].to_vec()));
        }
        while let Some(t) = b.poll_transmit(now, &mut buf) {
            from_b += u64::from(now >= count_from);
            wire.push((now + delay, false, buf[..t.len].to_vec()));
        }
        b.read_with(u64::MAX, |s| sink.extend_from_slice(s));
        let next_wire = wire.iter().map(|w| w.0).min();
        let next = [next_wire, a.poll_timeout(), b.poll_timeout()]
            .into_iter()
            .flatten()
            .min();
        let Some(next) = next else { break };
        now = next.max(now);
        if now >= end {
            break;
        }
        let (due, rest): (Vec<_>, Vec<_>) = wire.drain(..).partition(|w| w.0 <= now);
        wire = rest;
        for (_, to_b, d) in due {
            if to_b {
                let _ = b.handle_datagram(now, &d);
            } else {
                let _ = a.handle_datagram(now, &d);
            }
        }
        a.handle_timeout(now);
        b.handle_timeout(now);
    }
    (from_a, from_b)
}

#[test]
fn sender_timer_fires_and_probe_carries_its_packet_number() {
    let log = Arc::new(Mutex::new(Log::default()));
    let t = Instant::ZERO + Duration::from_millis(700);
    let h = Hooks {
        sender_timer: Some(t),
        ..hooks(&log)
    };
    let (mut a, mut b) = (
        Connection::new(config(h), 1).unwrap(),
        Connection::new(config(hooks(&log)), 1).unwrap(),
    );
    assert_eq!(
        a.poll_timeout(),
        Some(t),
        "the scheme's timer drives the connection's"
    );
    a.write(&[7u8; 50_000]);
    a.close();
    run(
        &mut a,
        &mut b,
        Duration::from_millis(10),
        Instant::ZERO,
        5,
        Instant::ZERO,
    );
    let l = log.lock().unwrap();
    assert_eq!(l.sender_timer, vec![t]);
    assert_eq!(l.probes_filled.len(), 1);
    assert_eq!((l.probes_matching, l.probes_mismatching), (1, 0));
    // The ack callback names the same path and packet number that was filled.
    assert_eq!(l.probes_acked.len(), 1);
    let (p, pn, _) = l.probes_acked[0];
    assert_eq!((p, pn), l.probes_filled[0]);
}

#[test]
fn receiver_can_ask_for_an_immediate_ack() {
    // Delayed ACKs would hold a lone packet for max_ack_delay (here 150 ms, below the 200 ms
    // minimum RTO); with the request the probe is acknowledged one round trip (20 ms) after
    // the timer fired.
    for ack_probes in [false, true] {
        let log = Arc::new(Mutex::new(Log::default()));
        let t = Instant::ZERO + Duration::from_secs(1);
        let tx = Hooks {
            sender_timer: Some(t),
            ..hooks(&log)
        };
        let rx = Hooks {
            ack_probes,
            ..hooks(&log)
        };
        let slow_acks = |mut c: ConnectionConfig| {
            c.ack_every = 1000;
            c.max_ack_delay = Duration::from_millis(150);
            c
        };
        let (mut a, mut b) = (
            Connection::new(slow_acks(config(tx)), 1).unwrap(),
            Connection::new(slow_acks(config(rx)), 1).unwrap(),
        );
        a.write(&[1u8; 100]);
        a.close();
        run(
            &mut a,
            &mut b,
            Duration::from_millis(10),
            Instant::ZERO,
            4,
            Instant::ZERO,
        );
        let l = log.lock().unwrap();
        assert_eq!(l.probes_acked.len(), 1, "{ack_probes}: {l:?}");
        let (_, _, acked) = l.probes_acked[0];
        let rtt = acked - t;
        if ack_probes {
            assert_eq!(rtt, Duration::from_millis(20), "immediate ACK");
        } else {
            assert!(rtt >= Duration::from_millis(150), "delayed ACK: {rtt}");
        }
    }
}

#[test]
fn receiver_timer_fires() {
    let log = Arc::new(Mutex::new(Log::default()));
    let t = Instant::ZERO + Duration::from_millis(1500);
    let rx = Hooks {
        receiver_timer: Some(t),
        ..hooks(&log)
    };
    let (mut a, mut b) = (
        Connection::new(config(hooks(&log)), 1).unwrap(),
        Connection::new(config(rx), 0).unwrap(),
    );
    assert_eq!(b.poll_timeout(), Some(t));
    a.write(&[1u8; 3000]);
    a.close();
    run(
        &mut a,
        &mut b,
        Duration::from_millis(10),
        Instant::ZERO,
        3,
        Instant::ZERO,
    );
    assert_eq!(log.lock().unwrap().receiver_timer, vec![t]);
}

#[test]
fn feedback_in_acks_does_not_make_acks_acknowledge_each_other() {
    // Both ends write feedback into every ACK. Once the transfer is over, nothing may be
    // sent: feedback frames are not ack-eliciting, so an ACK carrying one is not answered.
    let log = Arc::new(Mutex::new(Log::default()));
    let fb = || Hooks {
        feedback: true,
        ..hooks(&log)
    };
    let (mut a, mut b) = (
        Connection::new(config(fb()), 1).unwrap(),
        Connection::new(config(fb()), 0).unwrap(),
    );
    let data = [3u8; 200_000];
    let mut src = common::Source::new(&data);
    let quiet_from = Instant::ZERO + Duration::from_secs(5);
    let (after_a, after_b) = run_from(
        &mut a,
        &mut b,
        Duration::from_millis(10),
        Instant::ZERO,
        60,
        quiet_from,
        &mut src,
    );
    assert!(b.is_finished() && a.is_all_acked());
    assert_eq!(b.stats().bytes_read, data.len() as u64);
    assert!(
        log.lock().unwrap().feedback > 0,
        "feedback reached the sender"
    );
    assert_eq!(
        (after_a, after_b),
        (0, 0),
        "datagrams sent after the transfer"
    );
}

/// The ACK frame a connection sends next, as (largest, ranges).
fn next_ack(c: &mut Connection, now: Instant) -> Vec<std::ops::Range<u64>> {
    let mut buf = vec![0u8; 2048];
    let t = c.poll_transmit(now, &mut buf).expect("an ACK");
    let (_, payload) = wire::parse_packet(&buf[..t.len]).unwrap();
    for f in FrameIter::new(payload) {
        if let Ok(Frame::Ack(a)) = f {
            return a.ranges().collect();
        }
    }
    panic!("no ACK frame");
}

#[test]
fn recovery_marks_are_validated() {
    let log = Arc::new(Mutex::new(Log::default()));
    let mut cfg = config(hooks(&log));
    cfg.ack_every = 1;
    let id = cfg.conn_id;
    let mut b = Connection::new(cfg, 0).unwrap();
    let now = Instant::ZERO;
    let mark = |path: u8, pn: u64| {
        let mut body = vec![path];
        body.extend_from_slice(&pn.to_be_bytes());
        body
    };
    let scheme = |body: &[u8]| {
        let mut v = vec![0x08, MARK as u8, body.len() as u8];
        v.extend_from_slice(body);
        v
    };
    // Packets 0, 1 and 3 arrive (PINGs); 2 is lost.
    for pn in [0, 1, 3] {
        b.handle_datagram(now, &wrap(id, 0, pn, &[0x01])).unwrap();
    }
    assert_eq!(next_ack(&mut b, now), vec![3..4, 0..2]);
    // Marks the peer cannot have sent: above the largest received, on an unknown path.
    b.handle_datagram(now, &wrap(id, 0, 4, &scheme(&mark(0, 9))))
        .unwrap();
    b.handle_datagram(now, &wrap(id, 0, 5, &scheme(&mark(5, 1))))
        .unwrap();
    assert_eq!(b.stats().invalid_recovery_marks, 2);
    // A valid mark: packet 2 is acknowledged as if it had arrived.
    b.handle_datagram(now, &wrap(id, 0, 6, &scheme(&mark(0, 2))))
        .unwrap();
    let ranges = next_ack(&mut b, now);
    assert_eq!(ranges, vec![0..7], "{ranges:?}");
    assert_eq!(b.stats().invalid_recovery_marks, 2);
    // Farther back than the bound from the largest received.
    b.handle_datagram(now, &wrap(id, 0, 5000, &[0x01])).unwrap();
    b.handle_datagram(now, &wrap(id, 0, 5001, &scheme(&mark(0, 5001 - 4097))))
        .unwrap();
    assert_eq!(b.stats().invalid_recovery_marks, 3);
}

#[test]
fn ack_and_loss_callbacks_name_path_and_packet_number() {
    // Every packet of a lossy transfer is settled exactly once, by its (path, pn), as acked
    // or lost; the numbers are those the scheme saw when it filled the packets.
    #[derive(Debug, Default)]
    struct Seen {
        filled: Vec<(usize, u64)>,
        settled: Vec<(usize, u64)>,
    }
    #[derive(Debug)]
    struct Counting(ArqSender, Arc<Mutex<Seen>>);
    impl SchemeSender for Counting {
        fn name(&self) -> &'static str {
            "counting"
        }
        fn poll_packet(
            &mut self,
            ctx: &mut SendCtx<'_>,
            path: usize,
            pkt: &mut PacketWriter<'_>,
        ) -> Option<PacketTag> {
            let tag = self.0.poll_packet(ctx, path, pkt)?;
            self.1.lock().unwrap().filled.push((path, pkt.header().pn));
            Some(tag)
        }
        fn on_acked(&mut self, ctx: &mut SendCtx<'_>, pkt: &SentInfo) {
            self.1.lock().unwrap().settled.push((pkt.path, pkt.pn));
            self.0.on_acked(ctx, pkt);
        }
        fn on_lost(&mut self, ctx: &mut SendCtx<'_>, pkt: &SentInfo, kind: LossKind) {
            self.1.lock().unwrap().settled.push((pkt.path, pkt.pn));
            self.0.on_lost(ctx, pkt, kind);
        }
        fn on_data_ack(&mut self, ctx: &mut SendCtx<'_>) {
            self.0.on_data_ack(ctx);
        }
    }
    #[derive(Debug)]
    struct F(Arc<Mutex<Seen>>);
    impl Factory for F {
        fn options(&self) -> Options {
            Options::new()
        }
    }
    impl SchemeFactory for F {
        fn build(&self, _: &ConnectionConfig) -> (Box<dyn SchemeSender>, Box<dyn SchemeReceiver>) {
            (
                Box::new(Counting(
                    ArqSender::new("counting", ArqConfig::default()),
                    Arc::clone(&self.0),
                )),
                Box::new(ArqReceiver),
            )
        }
    }
    let seen = Arc::new(Mutex::new(Seen::default()));
    let cfg = ConnectionConfig {
        scheme: SchemeConfig::custom("counting", Arc::new(F(Arc::clone(&seen)))),
        ..ConnectionConfig::default()
    };
    let (mut a, mut b) = (
        Connection::new(cfg.clone(), 2).unwrap(),
        Connection::new(cfg, 0).unwrap(),
    );
    let data: Vec<u8> = (0..400_000u32).map(|i| (i % 251) as u8).collect();
    let mut now = Instant::ZERO;
    let mut src = common::Source::new(&data);
    let got = common::transfer_from(&mut a, &mut b, &mut now, &mut src, 100_000, 9);
    assert_eq!(got, data);
    // Let what is still in flight (reinjected copies) settle.
    let (q1, q2) = run(&mut a, &mut b, Duration::ZERO, now, 30, now);
    assert!(q1 + q2 < 1000);
    let s = seen.lock().unwrap();
    let mut filled = s.filled.clone();
    let mut settled = s.settled.clone();
    filled.sort_unstable();
    settled.sort_unstable();
    assert!(filled.len() > 280, "{}", filled.len());
    assert_eq!(filled, settled);
}
