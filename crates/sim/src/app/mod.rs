//! Applications: what a flow's two ends do with their connection.
//!
//! An application is a pair of halves built per connection by an [`AppFactory`] chosen from
//! the [`Applications`] registry (`app = "video"` or `app = { name = "video", ... }` in a
//! scenario file). Each half writes (stream bytes, messages, or raw datagrams for an
//! unreliable source) and reads through its [`AppIo`], and measures. The event loop knows
//! nothing of any particular application: it calls [`AppHalf::poll`] when the flow starts,
//! after every input to the half's endpoint and at the half's wake-up time; it hands each half
//! its connection's events; and it asks the halves whether they are [done](AppHalf::done)
//! (the flow's completion). Adding an application is one module and one line in
//! [`APPLICATIONS`].
//!
//! Every byte an application writes comes from the flow's deterministic [`Source`] and every
//! byte it reads passes through the verifying [`Sink`]: a wrong byte fails the run.

mod bulk;
mod onoff;
mod reqresp;
mod video;
mod web;

use crate::data::{Sink, Source};
use std::fmt;
use tributary_proto::buffer::ReadPiece;
use tributary_proto::message::{MessageId, MessageOptions, WriteError};
use tributary_proto::registry::{Choice, Entry, Factory, Family};
use tributary_proto::time::Instant;
use tributary_proto::{Connection, Event};

pub use bulk::{BulkConfig, FileConfig};
pub use onoff::{OffTimes, OnOffConfig};
pub use reqresp::RequestResponseConfig;
pub use video::VideoConfig;
pub use web::WebConfig;

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
    /// Ends by itself ([`AppHalf::done`]); the flow's completion time is reported.
    Finite,
    /// Runs for the whole simulation (a bulk transfer).
    Endless,
    /// Never ends, but does not keep the run going (background traffic).
    Background,
}

/// What an application's options are checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct FlowShape {
    /// Connections of the flow: 1, or one per path for `n-tcp`.
    pub connections: usize,
    /// Paths of the flow.
    pub paths: usize,
    /// The connections' largest datagram.
    pub max_datagram: usize,
}

impl FlowShape {
    /// A flow of `connections` connections over `paths` paths.
    pub fn new(connections: usize, paths: usize, max_datagram: usize) -> Self {
        FlowShape {
            connections,
            paths,
            max_datagram,
        }
    }
}

/// An application's configuration and factory (a registry entry's product).
pub trait AppFactory: Factory {
    /// Whether it ends by itself.
    fn lifetime(&self) -> Lifetime;

    /// Checks the options against the flow.
    fn validate(&self, _flow: &FlowShape) -> Result<(), String> {
        Ok(())
    }

    /// Whether its connections should carry the receiver's ACK timestamps
    /// (`ConnectionConfig::ack_timestamps`) unless the flow says otherwise: applications
    /// whose messages are given up by the peer's deadline want them.
    fn ack_timestamps(&self) -> bool {
        false
    }

    /// The (sending, receiving) halves for one connection.
    fn build(&self, ctx: &AppContext) -> (Box<dyn AppHalf>, Box<dyn AppHalf>);
}

/// One end of an application: the *sending* half runs at the flow's first endpoint (the
/// data source of `bulk` or `file`, the server of a web page, the client of
/// request/response), the *receiving* half at the other. Both halves may write and read
/// (requests go one way, answers the other); each direction has its own deterministic source
/// and verifying sink.
pub trait AppHalf: Send + fmt::Debug {
    /// Reads and writes what it wants to: called when the flow starts, after every input to
    /// its endpoint (an ACK may have freed send buffer, a datagram brought data), and at
    /// [`AppHalf::next_wake`].
    fn poll(&mut self, io: &mut AppIo<'_>);

    /// A connection event at this end (messages received or abandoned, stream finished, ...).
    fn on_event(&mut self, _io: &mut AppIo<'_>, _event: &Event) {}

    /// A raw datagram arrived (applications that send with [`AppIo::send_datagram`]).
    fn on_datagram(&mut self, _now: Instant, _datagram: &RawDatagram) {}

    /// When `poll` must be called next even if nothing happens to the connection.
    fn next_wake(&self) -> Option<Instant> {
        None
    }

    /// True once this half's work is complete; a [`Lifetime::Finite`] flow completes when
    /// both halves of every connection are done. Sending halves are usually done at once (the
    /// receiver decides).
    fn done(&self) -> bool;

    /// The half's own measurements (reported under the application's name; numbers are
    /// summed over connections).
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

impl RawDatagram {
    /// Bytes a raw datagram needs for its sequence number, send time and check word.
    pub const HEADER: usize = 24;
}

/// One end of the connection as its application half sees it.
#[derive(Debug)]
pub struct AppIo<'a> {
    pub(crate) now: Instant,
    pub(crate) conn: &'a mut Connection,
    pub(crate) src: &'a mut Source,
    pub(crate) sink: &'a mut Sink,
    pub(crate) datagrams: &'a mut Vec<usize>,
}

impl AppIo<'_> {
    /// Current time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Stream bytes the connection accepts now.
    pub fn write_capacity(&self) -> usize {
        self.conn.write_capacity()
    }

    /// Writes up to `n` next stream bytes (from this end's source); returns how many were
    /// accepted.
    pub fn write(&mut self, n: usize) -> usize {
        let n = self.conn.write_from_source(n);
        self.src.advance(n);
        n
    }

    /// The largest message [`AppIo::write_message`] accepts now.
    pub fn message_capacity(&self) -> usize {
        self.conn.message_capacity()
    }

    /// Writes one message of `len` bytes (from this end's source), all or nothing.
    pub fn write_message(
        &mut self,
        len: usize,
        opts: MessageOptions,
    ) -> Result<MessageId, WriteError> {
        let id = self.conn.write_message_from_source(self.now, len, opts)?;
        self.src.advance(len);
        Ok(id)
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

    /// In-order stream bytes ready to read.
    pub fn readable(&self) -> u64 {
        self.conn.readable()
    }

    /// Reads up to `max` in-order stream bytes, skipping abandoned messages (each slice is
    /// checked against what the peer wrote, at its offset); returns how many.
    pub fn read(&mut self, max: u64) -> u64 {
        let sink = &mut *self.sink;
        self.conn.read_pieces(max, |off, piece| match piece {
            ReadPiece::Bytes(s) => sink.consume_at(off, s),
            // Checked by the connection as they arrived, against this sink's stream.
            ReadPiece::Checked(n) => sink.consume_checked(off, n),
        })
    }

    /// Stream bytes read so far (skipped ranges not counted).
    pub fn read_total(&self) -> u64 {
        self.sink.bytes()
    }

    /// True once the peer's whole stream was read.
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
pub static APPLICATIONS: &[Entry<dyn AppFactory>] = &[
    bulk::BULK,
    bulk::FILE,
    video::ENTRY,
    web::ENTRY,
    reqresp::ENTRY,
    onoff::ENTRY,
];
