//! Applications: what a flow's two ends do with their connection.
//!
//! An application is a pair of halves built per connection by an [`AppFactory`] chosen from
//! the [`Applications`] registry (`app = "video"` or `app = { name = "video", ... }` in a
//! scenario file). The sending half writes (stream bytes, later messages, or raw datagrams for
//! an unreliable source); the receiving half reads and measures. The event loop knows nothing
//! of any particular application: it calls [`AppSender::poll`] when the flow starts, after
//! every input to the sending endpoint and at the half's wake-up time, and likewise for
//! [`AppReceiver::poll`]; it hands each half its connection's events; and it asks the
//! receiving half whether the application is [done](AppReceiver::done) (the flow's
//! completion). Adding an application is one module and one line in [`APPLICATIONS`].
//!
//! Every byte an application writes comes from the flow's deterministic [`Source`] and every
//! byte it reads passes through the verifying [`Sink`]: a wrong byte fails the run.

mod bulk;
mod onoff;

use crate::data::{Sink, Source};
use std::fmt;
use tributary_proto::registry::{Choice, Entry, Factory, Family};
use tributary_proto::time::Instant;
use tributary_proto::{Connection, Event};

pub use bulk::{BulkConfig, FileConfig};
pub use onoff::{OffTimes, OnOffConfig};

/// What a connection of a flow is, for the factory building its application halves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct AppContext {
    /// This connection's index within the flow (several for `n-tcp`).
    pub index: usize,
    /// Connections of the flow.
    pub connections: usize,
    /// When the flow starts.
    pub start: Instant,
    /// A seed for the application's own randomness (independent of every other stream).
    pub seed: u64,
    /// Largest datagram the connection sends (bounds raw datagrams too).
    pub max_datagram: usize,
}

/// How long an application runs, which decides when a run may stop early: when every flow
/// is done and none is [`Lifetime::Endless`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifetime {
    /// Ends by itself ([`AppReceiver::done`]); the flow's completion time is reported.
    Finite,
    /// Runs for the whole simulation (a bulk transfer).
    Endless,
    /// Never ends, but does not keep the run going (background traffic).
    Background,
}

/// An application's configuration and factory (a registry entry's product).
pub trait AppFactory: Factory {
    /// Whether it ends by itself.
    fn lifetime(&self) -> Lifetime;

    /// Checks the options against the flow: `connections` is 1, or one per path for `n-tcp`;
    /// `max_datagram` the connections' largest datagram.
    fn validate(&self, _connections: usize, _max_datagram: usize) -> Result<(), String> {
        Ok(())
    }

    /// The two halves for one connection.
    fn build(&self, ctx: &AppContext) -> (Box<dyn AppSender>, Box<dyn AppReceiver>);
}

/// The sending application.
pub trait AppSender: Send + fmt::Debug {
    /// Writes what it wants to: called when the flow starts, after every input to the
    /// sending endpoint (an ACK may have freed send buffer), and at [`AppSender::next_wake`].
    fn poll(&mut self, io: &mut SendIo<'_>);

    /// A connection event at the sending end.
    fn on_event(&mut self, _io: &mut SendIo<'_>, _event: &Event) {}

    /// When `poll` must be called next even if nothing happens to the connection.
    fn next_wake(&self) -> Option<Instant> {
        None
    }

    /// The half's own measurements (reported under the application's name).
    fn metrics(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
}

/// The receiving application.
pub trait AppReceiver: Send + fmt::Debug {
    /// Reads what it wants to: called after every datagram and at [`AppReceiver::next_wake`].
    fn poll(&mut self, io: &mut RecvIo<'_>);

    /// A connection event at the receiving end.
    fn on_event(&mut self, _io: &mut RecvIo<'_>, _event: &Event) {}

    /// A raw datagram arrived (applications that send with [`SendIo::send_datagram`]).
    fn on_datagram(&mut self, _now: Instant, _datagram: &RawDatagram) {}

    /// When `poll` must be called next even if nothing arrives.
    fn next_wake(&self) -> Option<Instant> {
        None
    }

    /// True once the application's work is complete (the flow's completion time).
    fn done(&self) -> bool;

    /// The half's own measurements (reported under the application's name).
    fn metrics(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
}

/// A raw datagram as its receiver sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawDatagram {
    /// Sequence number given by the sender (from 0).
    pub seq: u64,
    /// When it was sent.
    pub sent: Instant,
    /// Its length in bytes.
    pub len: usize,
}

/// The sending end as the sending application sees it.
#[derive(Debug)]
pub struct SendIo<'a> {
    pub(crate) now: Instant,
    pub(crate) conn: &'a mut Connection,
    pub(crate) src: &'a mut Source,
    pub(crate) datagrams: &'a mut Vec<usize>,
}

impl SendIo<'_> {
    /// Current time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Stream bytes the connection accepts now.
    pub fn write_capacity(&self) -> usize {
        self.conn.write_capacity()
    }

    /// Writes up to `n` next stream bytes (from the flow's source); returns how many were
    /// accepted.
    pub fn write(&mut self, n: usize) -> usize {
        let src = &mut *self.src;
        self.conn.write_with(n, |dst| src.produce(dst))
    }

    /// Stream bytes written so far.
    pub fn written(&self) -> u64 {
        self.src.written()
    }

    /// Ends the stream after what was written.
    pub fn close(&mut self) {
        self.conn.close();
    }

    /// Sends a raw datagram of `len` bytes (at least [`RawDatagram::HEADER`], at most the
    /// connection's largest datagram) on the flow's first path, outside the connection: no
    /// reliability, no congestion control.
    pub fn send_datagram(&mut self, len: usize) {
        self.datagrams.push(len);
    }

    /// The connection (read-only: counters, path views).
    pub fn connection(&self) -> &Connection {
        self.conn
    }
}

impl RawDatagram {
    /// Bytes a raw datagram needs for its sequence number, send time and check word.
    pub const HEADER: usize = 24;
}

/// The receiving end as the receiving application sees it.
#[derive(Debug)]
pub struct RecvIo<'a> {
    pub(crate) now: Instant,
    pub(crate) conn: &'a mut Connection,
    pub(crate) sink: &'a mut Sink,
}

impl RecvIo<'_> {
    /// Current time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// In-order stream bytes ready to read.
    pub fn readable(&self) -> u64 {
        self.conn.readable()
    }

    /// Reads up to `max` in-order stream bytes, skipping abandoned messages (each slice is
    /// checked against what was written at its offset); returns how many.
    pub fn read(&mut self, max: u64) -> u64 {
        let sink = &mut *self.sink;
        self.conn.read_at(max, |off, s| sink.consume_at(off, s))
    }

    /// Stream bytes read so far (skipped ranges not counted).
    pub fn read_total(&self) -> u64 {
        self.sink.bytes()
    }

    /// Stream offset reading has reached (skipped ranges included).
    pub fn read_offset(&self) -> u64 {
        self.sink.read()
    }

    /// True once the whole stream was read.
    pub fn is_finished(&self) -> bool {
        self.conn.is_finished()
    }

    /// The connection (read-only: counters, path views).
    pub fn connection(&self) -> &Connection {
        self.conn
    }
}

/// The application family (see [`tributary_proto::registry`]).
#[derive(Debug)]
pub struct Applications;

impl Family for Applications {
    type Factory = dyn AppFactory;
    const KIND: &'static str = "application";
    fn entries() -> &'static [Entry<dyn AppFactory>] {
        APPLICATIONS
    }
    fn default_name() -> &'static str {
        "bulk"
    }
}

/// A chosen application (`app = ...` in scenario files).
pub type AppConfig = Choice<Applications>;

/// Every application selectable by name: one line per application.
pub static APPLICATIONS: &[Entry<dyn AppFactory>] = &[bulk::BULK, bulk::FILE, onoff::ENTRY];
