//! A one-path network between two connections, with a bottleneck rate, a delay and a
//! per-datagram fate (loss or extra delay), for the congestion-signal and reordering tests.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use tributary_proto::wire::{parse_packet, Frame, FrameIter};
use tributary_proto::{Connection, ConnectionConfig, Duration, Instant};

/// A datagram in flight: (arrival, sequence, towards `b`, bytes).
pub type InFlight = Reverse<(Instant, u64, bool, Vec<u8>)>;
/// What the forward direction does with an `a → b` datagram.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fate {
    /// Delivered after the path's delay plus this extra delay (reordering: overtaken).
    Deliver(Duration),
    /// Lost.
    Drop,
}

impl Fate {
    /// Lost if `drop`, else delivered on time.
    pub fn drop_if(drop: bool) -> Fate {
        if drop {
            Fate::Drop
        } else {
            Fate::Deliver(Duration::ZERO)
        }
    }
}

/// Decides the fate of each `a → b` datagram.
pub type FateFn = Box<dyn FnMut(&[u8]) -> Fate>;

/// A one-path network: one-way `delay`, a bottleneck of `rate` bytes/s (100 Mbit/s unless
/// a test changes it; unbounded queue) from `a` to `b`; `fate` decides what happens to each `a → b` datagram.
pub struct Net {
    pub a: Connection,
    pub b: Connection,
    pub now: Instant,
    pub delay: Duration,
    pub rate: Option<u64>,
    pub busy_until: Instant,
    pub seq: u64,
    pub queue: BinaryHeap<InFlight>,
    pub fate: FateFn,
    /// (time, size) of every datagram `a` sent carrying stream data.
    pub data_sends: Vec<(Instant, usize)>,
    /// (time, stream offset) of every DATA frame `a` sent.
    pub data_offsets: Vec<(Instant, u64)>,
    pub read: u64,
    /// Bytes `a`'s application still writes, as fast as the connection accepts them (a bulk
    /// source: the connection offers a bulk writer about one window of unsent bytes).
    pub bulk_left: u64,
}

/// Stream offset and length of the DATA frame in a datagram, if any.
pub fn data_of(d: &[u8]) -> Option<(u64, usize)> {
    let (_, body) = parse_packet(d).ok()?;
    FrameIter::new(body).find_map(|f| match f {
        Ok(Frame::Data { offset, data }) => Some((offset, data.len())),
        _ => None,
    })
}

impl Net {
    /// Two connections of `cfg` on a one-path network with one-way `delay`.
    pub fn new(cfg: ConnectionConfig, delay: Duration) -> Net {
        Net {
            a: Connection::new(cfg.clone(), 1).unwrap(),
            b: Connection::new(cfg, 1).unwrap(),
            now: Instant::ZERO,
            delay,
            rate: Some(12_500_000),
            busy_until: Instant::ZERO,
            seq: 0,
            queue: BinaryHeap::new(),
            fate: Box::new(|_| Fate::Deliver(Duration::ZERO)),
            data_sends: Vec::new(),
            data_offsets: Vec::new(),
            read: 0,
            bulk_left: 0,
        }
    }

    pub fn pump(&mut self) {
        while self.bulk_left > 0 {
            let n = self
                .a
                .write_with(self.bulk_left.min(1 << 20) as usize, |d| d.fill(0));
            if n == 0 {
                break;
            }
            self.bulk_left -= n as u64;
        }
        let mut buf = vec![0u8; 4096];
        while let Some(t) = self.a.poll_transmit(self.now, &mut buf) {
            let d = buf[..t.len].to_vec();
            if let Some((offset, _)) = data_of(&d) {
                self.data_sends.push((self.now, t.len));
                self.data_offsets.push((self.now, offset));
            }
            let mut at = self.now;
            if let Some(r) = self.rate {
                let start = self.busy_until.max(self.now);
                self.busy_until = start + Duration::from_nanos(t.len as u64 * 1_000_000_000 / r);
                at = self.busy_until;
            }
            if let Fate::Deliver(extra) = (self.fate)(&d) {
                self.seq += 1;
                self.queue
                    .push(Reverse((at + self.delay + extra, self.seq, true, d)));
            }
        }
        while let Some(t) = self.b.poll_transmit(self.now, &mut buf) {
            self.seq += 1;
            let d = buf[..t.len].to_vec();
            self.queue
                .push(Reverse((self.now + self.delay, self.seq, false, d)));
        }
        self.read += self.b.read_with(u64::MAX, |_| {});
    }

    /// Runs until `until` or until `b` read everything and `a` saw it acknowledged.
    pub fn run(&mut self, until: Instant) {
        loop {
            self.pump();
            if self.b.is_finished() && self.a.is_all_acked() {
                return;
            }
            let mut next = self.queue.peek().map(|Reverse(e)| e.0);
            for t in [self.a.poll_timeout(), self.b.poll_timeout()]
                .into_iter()
                .flatten()
            {
                next = Some(next.map_or(t, |n: Instant| n.min(t)));
            }
            let Some(next) = next else { return };
            if next > until {
                self.now = until;
                return;
            }
            self.now = self.now.max(next);
            while self.queue.peek().is_some_and(|Reverse(e)| e.0 <= self.now) {
                let Reverse((_, _, to_b, d)) = self.queue.pop().unwrap();
                let c = if to_b { &mut self.b } else { &mut self.a };
                let _ = c.handle_datagram(self.now, &d);
            }
            for c in [&mut self.a, &mut self.b] {
                if c.poll_timeout().is_some_and(|t| t <= self.now) {
                    c.handle_timeout(self.now);
                }
            }
        }
    }

    /// Writes `n` bytes, closes, and runs to completion (at most `limit`); returns the time.
    pub fn transfer(&mut self, n: usize, limit: Duration) -> Instant {
        let data = vec![7u8; n];
        let mut off = 0;
        let end = self.now + limit;
        while off < n && self.now < end {
            off += self.a.write(&data[off..]);
            if off == n {
                self.a.close();
            }
            let step = self.now + Duration::from_millis(1);
            self.run(step.min(end));
        }
        self.run(end);
        assert!(
            self.b.is_finished() && self.a.is_all_acked(),
            "transfer of {n} bytes not done by {:?}",
            self.now
        );
        assert_eq!(self.read, n as u64);
        self.now
    }
}
