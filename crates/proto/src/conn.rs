//! The connection: a sans-IO state machine.
//!
//! Call order (as quinn-proto): feed inputs — [`Connection::handle_datagram`],
//! [`Connection::handle_timeout`], [`Connection::write`], [`Connection::read`],
//! [`Connection::close`] — then drain [`Connection::poll_transmit`] until `None`, then ask
//! [`Connection::poll_timeout`] when to call `handle_timeout` next, then drain
//! [`Connection::poll_event`]. Nothing here reads a clock or touches a socket.

use crate::buffer::{RecvBuffer, SendBuffer};
use crate::cc::{AckEvent, CongestionControl, Window};
use crate::config::{ConfigError, ConnectionConfig, TcpProfile};
use crate::message::{
    Lead, MessageId, MessageOptions, RxMessages, RxOutcome, TxMessages, WriteError,
};
use crate::path::{
    Path, PathState, PathStats, PathView, RttEstimator, SentState, Spurious, SENT_CONTROL,
    SENT_RETRANSMISSION, SENT_STREAM_END,
};
use crate::protect::{ProtectError, Protection};
use crate::ranges::RangeSet;
use crate::sched::{SchedContext, Scheduler};
use crate::scheme::{
    Action, BlockClock, FrameSource, LossKind, RecvCtx, Resent, SchemeReceiver, SchemeSender,
    SendCtx, SentInfo,
};
use crate::time::{Duration, Instant};
use crate::trace::{TraceEvent, Tracer};
use crate::wire::{
    self, AckFrame, Frame, FrameIter, Header, MessageFrame, PacketWriter, Trailer, WireError,
};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use std::collections::{HashMap, VecDeque};

/// A datagram to send: `len` bytes at the start of the buffer given to `poll_transmit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transmit {
    /// Path to send it on.
    pub path: usize,
    /// Datagram length.
    pub len: usize,
}

/// Something the application should know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// Receiver: the application has read the whole stream.
    StreamFinished,
    /// Sender: every byte written before `close` has been acknowledged.
    AllAcked,
    /// The peer closed the connection.
    Closed {
        /// The peer's reason code.
        code: u64,
    },
    /// Receiver: every byte of message `id` is held (it may complete before earlier bytes
    /// arrive; reading still delivers the stream in order).
    MessageReceived {
        /// The message.
        id: MessageId,
        /// Stream offset of its first byte.
        offset: u64,
        /// Its length.
        len: u64,
    },
    /// A path changed state (became suspect or failed after retransmission timeouts, or
    /// active again when a packet on it was acknowledged).
    PathState {
        /// The path.
        path: usize,
        /// Its new state.
        state: PathState,
    },
    /// Sender: the message's deadline passed before the peer had all of it, so it was given
    /// up. Receiver: the sender gave it up; its bytes are skipped by reading.
    MessageAbandoned {
        /// The message.
        id: MessageId,
        /// Stream offset of its first byte.
        offset: u64,
        /// Its length.
        len: u64,
    },
}

/// What an accepted datagram was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    /// The path it belongs to (from its header): drivers route that path's replies back to
    /// where the datagram came from.
    pub path: usize,
    /// False if its packet number had been seen before (a network duplicate).
    pub fresh: bool,
    /// True if it carries the largest packet number received on its path so far: only
    /// such a packet may move the path's reply address (RFC 9000 §9.3).
    pub newest: bool,
}

/// Why a datagram was dropped. The connection is unaffected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DatagramError {
    /// Malformed or corrupted.
    #[error("malformed datagram: {0}")]
    Wire(#[from] WireError),
    /// Addressed to another connection.
    #[error("datagram for connection {got}, this is {expected}")]
    WrongConnection {
        /// This connection's id.
        expected: u64,
        /// The header's id.
        got: u64,
    },
    /// A path id beyond `max_paths`.
    #[error("path {0} exceeds the configured maximum")]
    UnknownPath(usize),
    /// Well-formed frames with impossible contents (acknowledging unsent packets, data
    /// beyond the stream end, ...).
    #[error("protocol violation: {0}")]
    Protocol(&'static str),
    /// A protected connection refused the packet: replayed, too old, or failing
    /// authentication (forged, corrupted, another connection's keys).
    #[error("{0}")]
    Protection(ProtectError),
}

/// Counters of the scheme in use: its name and each half's own counters.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SchemeCounters {
    /// Registry name.
    pub name: String,
    /// The sending half's counters (`null` if it keeps none).
    pub sender: serde_json::Value,
    /// The receiving half's counters (`null` if it keeps none).
    pub receiver: serde_json::Value,
}

/// Connection-level counters.
#[derive(Debug, Clone, Default, serde::Serialize)]
#[non_exhaustive]
pub struct ConnectionStats {
    /// Per-path counters.
    pub paths: Vec<PathStats>,
    /// The scheme's own counters.
    pub scheme: SchemeCounters,
    /// Payload frames the receiving half of the scheme refused (unknown blocks, bad sizes,
    /// frames it does not use): dropped, the packet otherwise processed.
    pub frames_rejected: u64,
    /// Feedback frames the sending half refused.
    pub feedback_rejected: u64,
    /// Recovery marks ([`RecvCtx::mark_recovered`]) for packet numbers the peer cannot have
    /// sent or that are out of the tracked window: ignored.
    pub invalid_recovery_marks: u64,
    /// ACK frames for a path never opened: ignored.
    pub acks_ignored: u64,
    /// ACK frames naming packet numbers above the largest sent (the excess is ignored, the
    /// rest of the frame processed).
    pub ack_ranges_ignored: u64,
    /// ACK frames whose data acknowledgement lies beyond the bytes written (ignored).
    pub data_acks_ignored: u64,
    /// Datagrams whose packet number lies too far above the largest received on the path
    /// ([`MAX_PN_JUMP`]): dropped.
    pub pn_jumps: u64,
    /// Recoveries of the stream's head after the data acknowledgement stopped moving.
    pub head_stalls: u64,
    /// MESSAGE/ABANDON frames refused (contradicting an earlier announcement, abandoning a
    /// message not announced as abandonable, too many pending).
    pub messages_refused: u64,
    /// Datagrams dropped as malformed or corrupted.
    pub malformed: u64,
    /// Datagrams dropped for other reasons (wrong connection, unknown path, violations).
    pub rejected: u64,
    /// Protected connections: datagrams failing authentication.
    pub auth_failures: u64,
    /// Protected connections: datagrams refused by the replay window.
    pub replays: u64,
    /// Stream bytes accepted from the application.
    pub bytes_written: u64,
    /// Stream bytes delivered to the application.
    pub bytes_read: u64,
    /// Stream bytes that arrived beyond the receive window and were dropped.
    pub window_drops: u64,
    /// Stream bytes dropped because holding them would leave too many holes in the
    /// receive buffer ([`RecvBuffer::max_holes`]).
    pub fragment_drops: u64,
    /// Highest receive-buffer occupancy seen (bytes).
    pub max_buffer_occupancy: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StreamEnd {
    Open,
    Pending,
    InFlight,
    Acked,
}

/// One endpoint of a multipath connection.
#[derive(Debug)]
pub struct Connection {
    cfg: ConnectionConfig,
    max_datagram: usize,
    /// CRC-32, or room for the AEAD tag when protected.
    trailer: Trailer,
    /// Packet protection, once keys were set.
    protect: Option<Box<Protection>>,
    paths: Vec<Path>,
    views: Vec<PathView>,
    send_buf: SendBuffer,
    recv_buf: RecvBuffer,
    tx: Box<dyn SchemeSender>,
    rx: Box<dyn SchemeReceiver>,
    cc: Box<dyn CongestionControl>,
    sched: Box<dyn Scheduler>,
    rng: ChaCha8Rng,
    actions: Vec<Action>,
    recovered: Vec<(usize, u64)>,
    ack_requests: Vec<usize>,
    candidates: Vec<usize>,
    lost: Vec<(SentInfo, LossKind)>,
    resent: Vec<Resent>,
    stats: ConnectionStats,
    /// Sender: first transmission of each metric block.
    sent_clock: BlockClock,
    /// Receiver: in-order delivery (availability to the application) of each metric block.
    delivered_clock: BlockClock,
    clocked_upto: u64,
    // Sending direction.
    peer_data_ack: u64,
    peer_max_data: u64,
    /// The largest window the peer has offered (`peer_max_data - peer_data_ack`), for the
    /// sender's silly-window avoidance.
    peer_window_max: u64,
    final_size: Option<u64>,
    stream_end: StreamEnd,
    all_acked: bool,
    persist: Option<Instant>,
    persist_backoff: u32,
    /// When the peer's data acknowledgement last moved (or data first became outstanding).
    head_since: Option<Instant>,
    head_backoff: u32,
    ping_due: bool,
    /// The application's last write was cut short by the room (see
    /// [`SendCtx::writer_waiting`]).
    writer_waiting: bool,
    /// CLOSE still to send: (code, next path).
    close_due: Option<(u64, usize)>,
    // Receiving direction.
    advertised_max_data: u64,
    window_update: bool,
    last_rx_path: usize,
    finished: bool,
    events: VecDeque<Event>,
    /// Sender: messages not yet acknowledged.
    tx_msgs: TxMessages,
    /// Receiver: messages announced, not yet complete.
    rx_msgs: RxMessages,
    /// Stream bytes the scheme sent at least once (`SendCtx::mark_sent`), above the
    /// cumulative acknowledgement.
    first_sent: RangeSet,
    /// Reliable control frames waiting for a packet.
    ctrl_pending: VecDeque<Ctrl>,
    /// Control frames in flight, by (path, packet number).
    ctrl_in_flight: HashMap<(usize, u64), Vec<Ctrl>>,
    /// Earliest time a path held back by pacing may send again (cleared by each send attempt).
    pacing_wake: Option<Instant>,
    tracer: Option<Box<dyn Tracer>>,
    /// Losses to report to the tracer: (path, pn, size, kind); filled only when tracing.
    traced_losses: Vec<(usize, u64, u32, LossKind)>,
}

/// Farthest a packet number may lie above the largest received on its path: a legitimate
/// sender's numbers jump only by the packets lost in between.
pub const MAX_PN_JUMP: u64 = 1 << 20;

/// Least a bulk writer may hold written but unsent (two fmtcp blocks of the default size; 64
/// KiB as Linux's default `tcp_notsent_lowat` leaves unbounded, a common tuned value).
pub const UNSENT_FLOOR: u64 = 64 * 1024;

/// Most reliable control frames put in one packet.
const MAX_CONTROL_PER_PACKET: usize = 8;

/// Frames of a received packet kept from its validation pass for handling (`handle_packet`);
/// a packet with more is parsed a second time.
const KEPT_FRAMES: usize = 4;

/// A control frame the connection re-sends until acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ctrl {
    Message(MessageFrame),
    Abandon(MessageFrame),
}

impl Ctrl {
    fn frame(&self) -> Frame<'static> {
        match *self {
            Ctrl::Message(m) => Frame::Message(m),
            Ctrl::Abandon(m) => Frame::Abandon(m),
        }
    }
}

/// The flags of the paths that the steps of [`Connection::poll_transmit`] after its ACKs
/// test, gathered in one pass (no path changes before a packet is sent).
#[derive(Debug, Clone, Copy)]
struct PathScan {
    /// Every path was seen (otherwise the rest is not to be used).
    complete: bool,
    /// Some path is active.
    any_active: bool,
    /// Some path owes a probe (`Path::probe_due`).
    probe_due: bool,
    /// No path has packets in flight.
    idle: bool,
}

impl PathScan {
    /// Before the first path is noted.
    const START: PathScan = PathScan {
        complete: false,
        any_active: false,
        probe_due: false,
        idle: true,
    };

    #[inline(always)]
    fn note(&mut self, p: &Path) {
        self.any_active |= p.state == PathState::Active;
        self.probe_due |= p.probe_due;
        self.idle &= p.packets_in_flight == 0;
    }
}

/// Builds a [`SendCtx`] from the connection's fields (a macro so the borrow checker sees
/// disjoint fields).
macro_rules! send_ctx {
    ($s:ident, $now:expr) => {
        SendCtx {
            now: $now,
            paths: &$s.views,
            send_buf: &$s.send_buf,
            data_ack: $s.peer_data_ack,
            max_data: $s.peer_max_data,
            peer_window_max: $s.peer_window_max,
            segment_size: $s.cfg.mss,
            final_size: $s.final_size,
            rng: &mut $s.rng,
            actions: &mut $s.actions,
            resent: &mut $s.resent,
            block_clock: &mut $s.sent_clock,
            first_sent: &mut $s.first_sent,
            engine_frames: false,
            messages: &$s.tx_msgs,
            reach: None,
            redundant: $s.sched.redundant(),
            writer_waiting: $s.writer_waiting,
        }
    };
}

impl Connection {
    /// A connection over `paths` paths (a receiver may pass 0 and learn paths from packets).
    pub fn new(cfg: ConnectionConfig, paths: usize) -> Result<Self, ConfigError> {
        cfg.validate(paths)?;
        let (tx, rx) = cfg.scheme.factory().build(&cfg);
        let mut c = Connection {
            max_datagram: cfg.max_datagram(),
            trailer: Trailer::Crc32,
            protect: None,
            paths: Vec::new(),
            views: Vec::new(),
            send_buf: SendBuffer::new(cfg.send_buffer.max(cfg.recv_buffer)),
            recv_buf: RecvBuffer::new(cfg.recv_buffer),
            tx,
            rx,
            cc: cfg.cc.factory().build(),
            sched: cfg.scheduler.factory().build(),
            rng: ChaCha8Rng::seed_from_u64(cfg.seed),
            actions: Vec::new(),
            recovered: Vec::new(),
            ack_requests: Vec::new(),
            candidates: Vec::new(),
            lost: Vec::new(),
            resent: Vec::new(),
            stats: ConnectionStats::default(),
            sent_clock: BlockClock::new(cfg.metric_block),
            delivered_clock: BlockClock::new(cfg.metric_block),
            clocked_upto: 0,
            peer_data_ack: 0,
            // Both ends share the configuration, so the peer's initial window is known.
            peer_max_data: cfg.recv_buffer as u64,
            peer_window_max: cfg.recv_buffer as u64,
            final_size: None,
            stream_end: StreamEnd::Open,
            all_acked: false,
            persist: None,
            persist_backoff: 0,
            head_since: None,
            head_backoff: 0,
            ping_due: false,
            writer_waiting: false,
            close_due: None,
            advertised_max_data: cfg.recv_buffer as u64,
            window_update: false,
            last_rx_path: 0,
            finished: false,
            events: VecDeque::new(),
            tx_msgs: TxMessages::default(),
            rx_msgs: RxMessages::default(),
            first_sent: RangeSet::new(),
            ctrl_pending: VecDeque::new(),
            ctrl_in_flight: HashMap::new(),
            pacing_wake: None,
            tracer: None,
            traced_losses: Vec::new(),
            cfg,
        };
        for _ in 0..paths {
            c.add_path();
        }
        Ok(c)
    }

    fn add_path(&mut self) {
        let id = self.paths.len();
        let mss = self.max_datagram as u64;
        let w = self.cc.initial_window(mss, self.cfg.initial_window);
        // Linux profile: samples have the peer's ACK delay subtracted, so the timer adds
        // max_ack_delay back (RFC 9002 §6.2.1); classic samples are raw (ns-3).
        let allowance = match self.cfg.profile {
            TcpProfile::Linux => self.cfg.max_ack_delay,
            TcpProfile::Classic => Duration::ZERO,
        };
        let rtt = RttEstimator::new(self.cfg.initial_rto, self.cfg.min_rto, self.cfg.max_rto)
            .with_ack_delay_allowance(allowance);
        let mut p = Path::new(id, mss, w.cwnd, rtt, self.cfg.loss_threshold);
        p.ssthresh = w.ssthresh;
        p.rate_samples = self.cc.wants_delivery_rate();
        // Classic (ns-3): decreases from the flight, whole packets in the window.
        p.decrease_from_flight = self.cfg.profile == TcpProfile::Classic;
        p.whole_packet_window = self.cfg.profile == TcpProfile::Classic;
        self.views.push(p.view());
        self.paths.push(p);
    }

    /// Sends every event of this connection to `tracer` from now on (see [`crate::trace`]).
    pub fn set_tracer(&mut self, tracer: Box<dyn Tracer>) {
        self.tracer = Some(tracer);
    }

    /// Stops tracing and returns the tracer.
    pub fn take_tracer(&mut self) -> Option<Box<dyn Tracer>> {
        self.tracer.take()
    }

    fn trace_metrics(&mut self, now: Instant, p: usize) {
        if let Some(t) = &mut self.tracer {
            t.event(
                now,
                &TraceEvent::MetricsUpdated {
                    view: &self.views[p],
                },
            );
        }
    }

    /// Protects every packet from now on (call before the first datagram either way):
    /// packets sent are sealed, packets received must authenticate and pass the replay
    /// window (see [`crate::protect`]). Datagrams grow by the tag's 12 extra bytes.
    pub fn set_protection(&mut self, p: Protection) {
        if self.protect.is_none() {
            self.max_datagram += Trailer::Aead.len() - Trailer::Crc32.len();
        }
        self.trailer = Trailer::Aead;
        self.protect = Some(Box::new(p));
    }

    /// For a simulator only: datagrams leave [`poll_transmit`](Self::poll_transmit) with their
    /// CRC-32 trailer left zero ([`Trailer::Crc32Deferred`]). The caller computes it with
    /// [`wire::seal_checksum`] before anything could alter the datagram (a link flipping a
    /// bit) and delivers unaltered datagrams with
    /// [`handle_datagram_intact`](Self::handle_datagram_intact), which does not read it.
    /// No effect on a protected connection (its tag is always computed). Never for datagrams
    /// that leave the process.
    pub fn defer_checksums(&mut self) {
        if self.trailer == Trailer::Crc32 {
            self.trailer = Trailer::Crc32Deferred;
        }
    }

    /// True if packets are protected.
    pub fn is_protected(&self) -> bool {
        self.protect.is_some()
    }

    /// The configuration.
    pub fn config(&self) -> &ConnectionConfig {
        &self.cfg
    }

    /// Number of paths.
    pub fn path_count(&self) -> usize {
        self.paths.len()
    }

    /// A read-only view of path `i`.
    pub fn path(&self, i: usize) -> Option<PathView> {
        self.paths.get(i).map(Path::view)
    }

    /// Stops using path `i` for new packets (its outstanding packets still count).
    pub fn set_path_active(&mut self, i: usize, active: bool) {
        if let Some(p) = self.paths.get_mut(i) {
            p.state = if active {
                PathState::Active
            } else {
                PathState::Closed
            };
            p.probe_due = false;
            self.sync_view(i);
        }
    }

    /// Moves path `p` to `state` (unless closed), telling the scheme and the application.
    fn set_path_state(&mut self, now: Instant, p: usize, state: PathState) {
        let old = self.paths[p].state;
        if old == state || old == PathState::Closed {
            return;
        }
        self.paths[p].state = state;
        // A suspect or failed path of a multipath connection only carries probes: their
        // interval may be capped (`max_probe_interval`), so a path that comes back is found.
        let probed = matches!(state, PathState::Suspect | PathState::Failed);
        self.paths[p].probe_cap = self
            .cfg
            .max_probe_interval
            .filter(|_| probed && self.paths.len() > 1);
        self.sync_view(p);
        self.events.push_back(Event::PathState { path: p, state });
        let mut ctx = send_ctx!(self, now);
        self.tx.on_path_state(&mut ctx, p, state);
    }

    fn any_active(&self) -> bool {
        self.paths.iter().any(|p| p.state == PathState::Active)
    }

    /// Re-snapshots path `p`. Invariant: between calls into the connection every view is
    /// current — whatever changes a path's state re-snapshots that path.
    fn sync_view(&mut self, p: usize) {
        self.paths[p].write_view(&mut self.views[p]);
    }

    // ------------------------------------------------------------------ application side

    /// Appends stream bytes; returns how many were taken: at most
    /// [`Connection::write_capacity`] (0 after `close`).
    pub fn write(&mut self, data: &[u8]) -> usize {
        let mut at = 0;
        self.write_with(data.len(), |dst| {
            dst.copy_from_slice(&data[at..at + dst.len()]);
            at += dst.len();
        })
    }

    /// Appends up to `n` stream bytes (at most [`Connection::write_capacity`]) produced in
    /// place by `fill` (called with consecutive slices); returns how many were appended (0
    /// after `close`).
    ///
    /// With a stream source set ([`Connection::set_stream_source`]) it appends nothing: use
    /// [`Connection::write_from_source`].
    pub fn write_with(&mut self, n: usize, fill: impl FnMut(&mut [u8])) -> usize {
        let cap = n.min(self.write_capacity());
        let written = self.send_buf.write_with(cap, fill);
        self.wrote(n, written)
    }

    /// Takes the application's stream from `source` (bytes as a function of their offset)
    /// instead of from writes: the send buffer then stores nothing and produces each byte when
    /// a scheme reads it for sending (see [`crate::buffer::StreamSource`]). Must be called
    /// before anything is written; afterwards write with [`Connection::write_from_source`] and
    /// [`Connection::write_message_from_source`].
    pub fn set_stream_source(
        &mut self,
        source: std::sync::Arc<dyn crate::buffer::StreamSource>,
    ) -> Result<(), crate::buffer::SourceError> {
        self.send_buf.set_source(source)
    }

    /// Checks the peer's in-order stream bytes against `check` as they arrive, storing none
    /// of those that match (see [`crate::buffer::StreamCheck`]); read them with
    /// [`Connection::read_pieces`] (the other reads produce them again from `check`).
    pub fn set_stream_check(&mut self, check: std::sync::Arc<dyn crate::buffer::StreamCheck>) {
        self.recv_buf.set_check(check);
    }

    /// Appends the stream source's next bytes, up to `n` (at most
    /// [`Connection::write_capacity`]); returns how many were appended (0 after `close`, or
    /// without a source).
    pub fn write_from_source(&mut self, n: usize) -> usize {
        let written = self
            .send_buf
            .write_from_source(n.min(self.write_capacity()));
        self.wrote(n, written)
    }

    /// Counts `written` of `wanted` bytes appended.
    fn wrote(&mut self, wanted: usize, written: usize) -> usize {
        self.stats.bytes_written += written as u64;
        // Bytes left over: the application writes again as soon as room opens.
        self.writer_waiting = written < wanted && self.final_size.is_none();
        written
    }

    /// How many stream bytes the application may write now (0 after `close`): what fits in
    /// the send buffer, and no more than the peer's receive window can take — bytes beyond
    /// it could not be sent anyway, so a source produces them only when they can be
    /// (memory follows the data in flight). Messages are not held to the window
    /// ([`Connection::message_capacity`]).
    pub fn write_capacity(&self) -> usize {
        if self.final_size.is_some() {
            return 0;
        }
        let window = self.peer_max_data.saturating_sub(self.send_buf.end());
        // Like Linux's TCP_NOTSENT_LOWAT: keep at most one aggregate congestion window (and
        // at least UNSENT_FLOOR) of bytes written but not yet sent. A pump of the connection
        // sends at most the free congestion window, so this never starves the sender, and a
        // source waiting on a slow or blocked connection holds no more than that.
        let cwnd: u64 = self.paths.iter().map(|p| p.cwnd).sum();
        let floor = UNSENT_FLOOR.max(self.tx.write_ahead());
        let unsent_room = cwnd
            .max(floor)
            .saturating_sub(self.send_buf.unsent() as u64);
        self.send_buf
            .free()
            .min(usize::try_from(window.min(unsent_room)).unwrap_or(usize::MAX))
    }

    /// Writes one message of `len` bytes, produced in place by `fill` (called with one or two
    /// consecutive slices): all of it or nothing. See [`crate::message`].
    ///
    /// With a stream source set it is refused ([`WriteError::FromSource`]): use
    /// [`Connection::write_message_from_source`].
    pub fn write_message(
        &mut self,
        now: Instant,
        len: usize,
        opts: MessageOptions,
        fill: impl FnMut(&mut [u8]),
    ) -> Result<MessageId, WriteError> {
        if self.send_buf.has_source() {
            return Err(WriteError::FromSource);
        }
        self.append_message(now, len, opts, Some(fill))
    }

    /// Writes the stream source's next `len` bytes as one message: all of it or nothing, as
    /// [`Connection::write_message`] (refused without a source: [`WriteError::NoSource`]).
    pub fn write_message_from_source(
        &mut self,
        now: Instant,
        len: usize,
        opts: MessageOptions,
    ) -> Result<MessageId, WriteError> {
        if !self.send_buf.has_source() {
            return Err(WriteError::NoSource);
        }
        self.append_message(now, len, opts, None::<fn(&mut [u8])>)
    }

    /// [`Connection::write_message`] with `fill`'s bytes, or the stream source's without.
    fn append_message(
        &mut self,
        now: Instant,
        len: usize,
        opts: MessageOptions,
        fill: Option<impl FnMut(&mut [u8])>,
    ) -> Result<MessageId, WriteError> {
        if self.final_size.is_some() {
            return Err(WriteError::Closed);
        }
        let available = self.send_buf.free();
        self.writer_waiting = len > available;
        if len > available {
            return Err(WriteError::WouldBlock {
                needed: len,
                available,
            });
        }
        let start = self.send_buf.end();
        let n = match fill {
            Some(fill) => self.send_buf.write_with(len, fill),
            None => self.send_buf.write_from_source(len),
        };
        debug_assert_eq!(n, len);
        self.stats.bytes_written += n as u64;
        let m = self.tx_msgs.add(start, start + n as u64, opts);
        self.ctrl_pending.push_back(Ctrl::Message(m));
        // A deadline already past abandons the message at once.
        self.expire_messages(now);
        Ok(m.id)
    }

    /// The largest message [`Connection::write_message`] accepts now: the free send
    /// buffer (0 after `close`).
    pub fn message_capacity(&self) -> usize {
        if self.final_size.is_some() {
            0
        } else {
            self.send_buf.free()
        }
    }

    fn expire_messages(&mut self, now: Instant) {
        if self.tx_msgs.is_empty() {
            return;
        }
        // Borrows only the fields it reads, so `tx_msgs` can change while it is held.
        let lead = lead_of(
            &self.paths,
            &*self.cc,
            &self.views,
            &self.first_sent,
            self.peer_data_ack,
        );
        if self.tx_msgs.next_deadline(&lead).is_none_or(|d| d > now) {
            return;
        }
        for a in self.tx_msgs.expire(now, &lead) {
            self.ctrl_pending.push_back(Ctrl::Abandon(a));
            self.events.push_back(Event::MessageAbandoned {
                id: a.id,
                offset: a.offset,
                len: a.len,
            });
        }
    }

    /// Ends the stream after the bytes written so far.
    pub fn close(&mut self) {
        if self.final_size.is_none() {
            self.final_size = Some(self.send_buf.end());
            self.stream_end = StreamEnd::Pending;
            self.writer_waiting = false;
        }
    }

    /// Sends a CLOSE frame on every path at the next `poll_transmit` (fire and forget).
    pub fn close_connection(&mut self, code: u64) {
        self.close_due = Some((code, 0));
    }

    /// In-order bytes ready to read.
    pub fn readable(&self) -> u64 {
        self.recv_buf.readable()
    }

    /// Reads in-order stream bytes into `dst`.
    pub fn read(&mut self, dst: &mut [u8]) -> usize {
        let n = self.recv_buf.read(dst);
        self.after_read(n as u64);
        n
    }

    /// Passes up to `max` in-order bytes to `f` without copying (but for bytes checked as
    /// they arrived, produced again: [`Connection::set_stream_check`]); returns how many.
    /// Bytes of abandoned messages are skipped.
    pub fn read_with(&mut self, max: u64, f: impl FnMut(&[u8])) -> u64 {
        let n = self.recv_buf.read_with(max, f);
        self.after_read(n);
        n
    }

    /// Like [`Connection::read_with`], with each slice's stream offset (abandoned messages
    /// leave gaps).
    pub fn read_at(&mut self, max: u64, f: impl FnMut(u64, &[u8])) -> u64 {
        let n = self.recv_buf.read_at(max, f);
        self.after_read(n);
        n
    }

    /// Like [`Connection::read_at`], passing the bytes that were checked as they arrived
    /// ([`Connection::set_stream_check`]) as [`crate::buffer::ReadPiece::Checked`].
    pub fn read_pieces(
        &mut self,
        max: u64,
        f: impl FnMut(u64, crate::buffer::ReadPiece<'_>),
    ) -> u64 {
        let n = self.recv_buf.read_pieces(max, f);
        self.after_read(n);
        n
    }

    /// Offset of the next stream byte reading will return (or skip).
    pub fn read_offset(&self) -> u64 {
        self.recv_buf.read_offset()
    }

    /// The flow-control limit to advertise: the receive buffer's, moved only in steps of at
    /// least min(buffer / 2, MSS) bytes. Receiver-side silly-window avoidance (RFC 1122
    /// §4.2.3.3, RFC 9293 §3.8.6.2.2): an application reading a few bytes at a time would
    /// otherwise open the window a few bytes at a time and draw packets of that size.
    fn window_edge(&self) -> u64 {
        let edge = self.recv_buf.max_data();
        let step = (self.recv_buf.capacity() / 2).min(self.cfg.mss as u64);
        if edge >= self.advertised_max_data.saturating_add(step) {
            edge
        } else {
            self.advertised_max_data
        }
    }

    fn after_read(&mut self, n: u64) {
        self.stats.bytes_read += n;
        let cap = self.recv_buf.capacity();
        let threshold = (cap / 4).max(2 * self.cfg.mss as u64);
        if self.recv_buf.max_data() >= self.advertised_max_data + threshold {
            self.window_update = true;
        }
        if !self.finished && self.recv_buf.is_finished() {
            self.finished = true;
            self.events.push_back(Event::StreamFinished);
        }
    }

    /// True once the whole stream was read.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// True once everything written before `close` was acknowledged.
    pub fn is_all_acked(&self) -> bool {
        self.all_acked
    }

    /// Stream bytes the peer has acknowledged cumulatively (it holds every byte below).
    pub fn data_acked(&self) -> u64 {
        self.peer_data_ack
    }

    /// Receive-buffer occupancy now (bytes held: out of order plus unread).
    pub fn buffer_occupancy(&self) -> u64 {
        self.recv_buf.held()
    }

    /// Counters.
    pub fn stats(&self) -> ConnectionStats {
        let mut s = self.stats.clone();
        s.window_drops = self.recv_buf.dropped();
        s.fragment_drops = self.recv_buf.fragment_drops();
        s.paths = self.paths.iter().map(|p| p.stats).collect();
        for (p, r) in s.paths.iter_mut().zip(&self.resent) {
            p.retransmitted_bytes = r.bytes;
            p.retransmitted_packets = r.packets;
        }
        s.scheme = SchemeCounters {
            name: self.tx.name().to_string(),
            sender: self.tx.counters(),
            receiver: self.rx.counters(),
        };
        s
    }

    /// Next event, if any.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    // ------------------------------------------------------------------ network input

    /// Processes one received datagram. A protected connection decrypts a copy of it (in a
    /// buffer it keeps); [`handle_datagram_mut`](Self::handle_datagram_mut) saves that copy.
    pub fn handle_datagram(
        &mut self,
        now: Instant,
        data: &[u8],
    ) -> Result<Received, DatagramError> {
        let Some(prot) = &mut self.protect else {
            return self.handle_plain(now, data);
        };
        let mut scratch = std::mem::take(&mut prot.scratch);
        scratch.clear();
        scratch.extend_from_slice(data);
        let res = self.handle_datagram_mut(now, &mut scratch);
        if let Some(prot) = &mut self.protect {
            prot.scratch = scratch;
        }
        res
    }

    /// Processes one received datagram that the caller knows to be byte for byte what the
    /// peer's [`poll_transmit`](Self::poll_transmit) wrote: a simulator that delivered it
    /// through links which flipped no bit of it. Without protection the checksum is then not
    /// recomputed (the bytes are the ones it was computed over; debug builds still check and
    /// panic if the promise was false); header and frames are validated as always, and a
    /// protected connection authenticates as usual. Otherwise the same as
    /// [`handle_datagram`](Self::handle_datagram). Never use it for bytes from a network.
    pub fn handle_datagram_intact(
        &mut self,
        now: Instant,
        data: &[u8],
    ) -> Result<Received, DatagramError> {
        if self.protect.is_some() {
            return self.handle_datagram(now, data);
        }
        self.handle_parsed(now, wire::parse_packet_intact(data))
    }

    /// Processes one received datagram that may be overwritten: a protected connection
    /// decrypts it in place (no copy), so the bytes of `data` are unspecified afterwards.
    /// Otherwise the same as [`handle_datagram`](Self::handle_datagram).
    pub fn handle_datagram_mut(
        &mut self,
        now: Instant,
        data: &mut [u8],
    ) -> Result<Received, DatagramError> {
        let Some(mut prot) = self.protect.take() else {
            return self.handle_plain(now, data);
        };
        let res = match prot.open_in_place(data) {
            Ok((hdr, frames, _)) => {
                let frames = &data[frames];
                let r = self.handle_packet(now, hdr, frames);
                self.count_result(now, r, hdr, frames)
            }
            Err(e) => {
                match e {
                    ProtectError::Wire(_) => self.stats.malformed += 1,
                    ProtectError::Replay { .. } => self.stats.replays += 1,
                    ProtectError::Auth => self.stats.auth_failures += 1,
                }
                Err(DatagramError::Protection(e))
            }
        };
        self.protect = Some(prot);
        res
    }

    fn handle_plain(&mut self, now: Instant, data: &[u8]) -> Result<Received, DatagramError> {
        self.handle_parsed(now, wire::parse_packet(data))
    }

    /// An unprotected datagram once its checksum was checked (or need not be): a malformed
    /// one is counted, the frames of a valid one handled.
    fn handle_parsed(
        &mut self,
        now: Instant,
        parsed: Result<(wire::Header, &[u8]), wire::WireError>,
    ) -> Result<Received, DatagramError> {
        let (hdr, payload) = match parsed {
            Ok(x) => x,
            Err(e) => {
                self.stats.malformed += 1;
                return Err(e.into());
            }
        };
        let r = self.handle_packet(now, hdr, payload);
        self.count_result(now, r, hdr, payload)
    }

    /// Counts a datagram's fate and traces an accepted one (`frames`: its plaintext frames).
    fn count_result(
        &mut self,
        now: Instant,
        res: Result<Received, DatagramError>,
        header: Header,
        frames: &[u8],
    ) -> Result<Received, DatagramError> {
        match &res {
            Err(DatagramError::Wire(_)) => self.stats.malformed += 1,
            Err(_) => self.stats.rejected += 1,
            Ok(r) => {
                if let Some(t) = &mut self.tracer {
                    t.event(
                        now,
                        &TraceEvent::PacketReceived {
                            path: r.path,
                            header,
                            frames,
                        },
                    );
                }
            }
        }
        res
    }

    fn handle_packet(
        &mut self,
        now: Instant,
        hdr: Header,
        payload: &[u8],
    ) -> Result<Received, DatagramError> {
        if hdr.conn_id != self.cfg.conn_id {
            return Err(DatagramError::WrongConnection {
                expected: self.cfg.conn_id,
                got: hdr.conn_id,
            });
        }
        let p = usize::from(hdr.path);
        if p >= self.cfg.max_paths {
            return Err(DatagramError::UnknownPath(p));
        }
        // Validate every frame before acting on any, so a bad frame cannot leave a packet
        // half-processed. The first few parsed frames are kept for handling below (a data
        // packet or an ACK has one to three), so most packets are parsed once.
        let mut eliciting = false;
        // Each frame is parsed into its slot (the spare past the kept ones), not copied there.
        // (Built element by element: an array of the constant was copied whole from a
        // template, every byte of all four slots, on every packet.)
        let mut kept: [_; KEPT_FRAMES] = std::array::from_fn(|_| Ok(Frame::Ping));
        let mut spare = Ok(Frame::Ping);
        let mut count = 0;
        let mut frames = FrameIter::new(payload);
        loop {
            let slot = match kept.get_mut(count) {
                Some(slot) => slot,
                None => &mut spare,
            };
            if !frames.next_into(slot) {
                break;
            }
            match slot {
                Ok(f) => eliciting |= f.is_ack_eliciting(),
                Err(e) => return Err(e.clone().into()),
            }
            count += 1;
        }
        let largest = self.paths.get(p).and_then(|x| x.largest_received);
        if hdr.pn > largest.unwrap_or(0).saturating_add(MAX_PN_JUMP) {
            self.stats.pn_jumps += 1;
            return Err(DatagramError::Protocol(
                "packet number too far above the largest received",
            ));
        }
        while self.paths.len() <= p {
            self.add_path();
        }
        let fresh = self.paths[p].on_received(hdr.pn, now);
        let newest = fresh && self.paths[p].largest_received == Some(hdr.pn);
        self.last_rx_path = p;
        if fresh {
            let out_of_order = self.paths[p].largest_received.is_some_and(|l| l != hdr.pn)
                || self.paths[p].received.len() > 1;
            let mut urgent = false;
            if count <= KEPT_FRAMES {
                for f in kept[..count].iter().flatten() {
                    // DATA, most packets' frame, straight to the scheme: what `handle_frame`
                    // does with it, without entering that large function.
                    urgent |= if let Frame::Data { .. } = f {
                        self.scheme_frame(now, p, hdr.pn, f);
                        false
                    } else {
                        self.handle_frame(now, p, hdr.pn, f)?
                    };
                }
            } else {
                // More frames than were kept: parse again (every one is valid).
                for f in FrameIter::new(payload).flatten() {
                    urgent |= self.handle_frame(now, p, hdr.pn, &f)?;
                }
            }
            self.apply_receiver_requests();
            self.complete_messages();
            if eliciting {
                let ack_every = self.cfg.ack_every;
                let delay = self.cfg.max_ack_delay;
                let path = &mut self.paths[p];
                path.unacked_eliciting += 1;
                if path.unacked_eliciting >= ack_every || out_of_order || urgent {
                    path.ack_now = true;
                } else if path.ack_deadline.is_none() {
                    path.ack_deadline = Some(now + delay);
                }
            }
            let held = self.recv_buf.held();
            self.stats.max_buffer_occupancy = self.stats.max_buffer_occupancy.max(held);
            self.clock_deliveries(now);
        } else if eliciting {
            // A duplicate: the ACK that covered it may have been lost.
            self.paths[p].ack_now = true;
        }
        let max = self.cfg.max_ack_ranges;
        self.paths[p].prune_received(max);
        Ok(Received {
            path: p,
            fresh,
            newest,
        })
    }

    /// Returns true if the frame asks for an immediate acknowledgement.
    fn handle_frame(
        &mut self,
        now: Instant,
        p: usize,
        pn: u64,
        f: &Frame<'_>,
    ) -> Result<bool, DatagramError> {
        match f {
            Frame::Padding(_) => Ok(false),
            Frame::Ping => Ok(true),
            Frame::Ack(a) => {
                self.on_ack_frame(now, a);
                Ok(false)
            }
            Frame::StreamEnd { final_size } => {
                if !self.recv_buf.set_final_size(*final_size) {
                    return Err(DatagramError::Protocol("inconsistent stream end"));
                }
                Ok(true)
            }
            Frame::Close { code } => {
                self.events.push_back(Event::Closed { code: *code });
                Ok(false)
            }
            Frame::Message(m) | Frame::Abandon(m) if !self.message_in_reach(m) => {
                self.stats.messages_refused += 1;
                Ok(false)
            }
            Frame::Message(m) => {
                self.recv_buf.track_touched(true);
                let buf = &self.recv_buf;
                let out = self.rx_msgs.on_message(*m, |o, l| buf.covers(o, l));
                self.message_outcome(out);
                Ok(false)
            }
            Frame::Abandon(m) => {
                let out = self.rx_msgs.on_abandon(*m);
                self.message_outcome(out);
                Ok(false)
            }
            Frame::AckFloor { path, floor } => {
                if let Some(pp) = self.paths.get_mut(usize::from(*path)) {
                    pp.raise_floor(*floor);
                }
                Ok(false)
            }
            Frame::Feedback(_) => self.feedback(now, f).map(|_| false),
            Frame::Scheme { .. } if f.is_scheme_feedback() => self.feedback(now, f).map(|_| false),
            Frame::Data { .. } | Frame::Symbol(_) | Frame::Scheme { .. } => {
                self.scheme_frame(now, p, pn, f);
                Ok(false)
            }
        }
    }

    /// Hands a data-carrying frame (DATA, SYMBOL, or a SCHEME frame that is not feedback) to
    /// the receiving half of the scheme; a rejection drops that frame only.
    #[inline]
    fn scheme_frame(&mut self, now: Instant, p: usize, pn: u64, f: &Frame<'_>) {
        let mut ctx = RecvCtx {
            now,
            recv_buf: &mut self.recv_buf,
            recovered: &mut self.recovered,
            ack_requests: &mut self.ack_requests,
        };
        if self
            .rx
            .on_frame(&mut ctx, FrameSource { path: p, pn }, f)
            .is_err()
        {
            self.stats.frames_rejected += 1;
        }
    }

    /// Whether a MESSAGE or ABANDON frame's range lies where the peer can have written: a
    /// message is written whole into the peer's send buffer, which starts at our
    /// acknowledged point (at most our in-order point) and holds at most its configured size
    /// (the same configuration on both ends) or the window we advertised. Anything beyond is
    /// forged; honoured, its abandonment would move the in-order point arbitrarily far, and
    /// per-block bookkeeping (the delivery clock) with it.
    fn message_in_reach(&self, m: &MessageFrame) -> bool {
        let room = self.cfg.send_buffer.max(self.cfg.recv_buffer) as u64;
        let reach = self
            .recv_buf
            .contiguous_end()
            .saturating_add(room)
            .max(self.advertised_max_data)
            .max(self.recv_buf.max_data());
        m.offset.checked_add(m.len).is_some_and(|end| end <= reach)
    }

    fn message_outcome(&mut self, out: RxOutcome) {
        match out {
            RxOutcome::Nothing => {}
            RxOutcome::Refused => self.stats.messages_refused += 1,
            RxOutcome::Complete(m) => self.events.push_back(Event::MessageReceived {
                id: m.id,
                offset: m.offset,
                len: m.len,
            }),
            RxOutcome::Abandon(m) => {
                self.recv_buf.skip(m.offset, m.len);
                self.events.push_back(Event::MessageAbandoned {
                    id: m.id,
                    offset: m.offset,
                    len: m.len,
                });
            }
        }
    }

    /// Reports the announced messages whose bytes are now all held.
    fn complete_messages(&mut self) {
        for r in self.recv_buf.take_touched() {
            let ev = &mut self.events;
            self.rx_msgs.received(r, |m| {
                ev.push_back(Event::MessageReceived {
                    id: m.id,
                    offset: m.offset,
                    len: m.len,
                })
            });
        }
    }

    /// Marks the metric blocks that became available in order (whole blocks, or the last
    /// partial block once the stream end is known).
    fn clock_deliveries(&mut self, now: Instant) {
        let end = self.recv_buf.contiguous_end();
        let b = self.delivered_clock.block_size();
        let whole = end / b * b;
        let upto = match self.recv_buf.final_size() {
            Some(f) if end == f => end,
            _ => whole,
        };
        if upto > self.clocked_upto {
            self.delivered_clock.mark(self.clocked_upto, upto, now);
            self.clocked_upto = upto;
        }
    }

    /// Sender: when each metric block was first transmitted (index = offset / block size).
    pub fn block_sent_times(&self) -> &BlockClock {
        &self.sent_clock
    }

    /// Receiver: when each metric block became available to the application in order.
    pub fn block_delivered_times(&self) -> &BlockClock {
        &self.delivered_clock
    }

    /// Drops both block clocks' times below block `i` (a driver that has paired them), so
    /// they hold only the blocks in flight.
    pub fn forget_blocks_before(&mut self, i: usize) {
        self.sent_clock.forget_before(i);
        self.delivered_clock.forget_before(i);
    }

    fn feedback(&mut self, now: Instant, f: &Frame<'_>) -> Result<(), DatagramError> {
        let mut ctx = send_ctx!(self, now);
        // A rejected feedback frame is dropped and counted; the packet stays valid.
        if self.tx.on_feedback(&mut ctx, f).is_err() {
            self.stats.feedback_rejected += 1;
        }
        self.apply_actions(now);
        Ok(())
    }

    /// Applies what the receiving half asked for: recovery marks (validated) and immediate
    /// acknowledgements. (Inlined: after most packets there are none and only this check
    /// is left; the work is not.)
    #[inline]
    fn apply_receiver_requests(&mut self) {
        if !(self.recovered.is_empty() && self.ack_requests.is_empty()) {
            self.apply_pending_receiver_requests();
        }
    }

    #[inline(never)]
    fn apply_pending_receiver_requests(&mut self) {
        for (rp, pn) in std::mem::take(&mut self.recovered) {
            let ok = self
                .paths
                .get_mut(rp)
                .is_some_and(|path| path.mark_recovered(pn));
            if !ok {
                self.stats.invalid_recovery_marks += 1;
            }
        }
        for p in std::mem::take(&mut self.ack_requests) {
            if let Some(path) = self.paths.get_mut(p) {
                if !path.received.is_empty() {
                    path.ack_now = true;
                }
            }
        }
    }

    fn on_ack_frame(&mut self, now: Instant, a: &AckFrame<'_>) {
        let p = usize::from(a.path);
        if p >= self.paths.len() {
            // A path this end never opened: nothing of ours to acknowledge there.
            self.stats.acks_ignored += 1;
            return;
        }
        // Connection level: flow control and the cumulative acknowledgement.
        if a.max_data > self.peer_max_data {
            self.peer_max_data = a.max_data;
            self.persist_backoff = 0;
            self.peer_window_max = self
                .peer_window_max
                .max(self.peer_max_data.saturating_sub(self.peer_data_ack));
        }
        let mut data_acked = false;
        if a.data_ack > self.send_buf.end() {
            self.stats.data_acks_ignored += 1;
        } else if a.data_ack > self.peer_data_ack {
            data_acked = true;
            self.peer_data_ack = a.data_ack;
            self.head_backoff = 0;
            self.send_buf.release_to(a.data_ack);
            // The send buffer holds at least the peer's window: what may be in flight
            // beyond its cumulative acknowledgement (so reinjection is never starved).
            let window = self
                .peer_max_data
                .saturating_sub(self.peer_data_ack)
                .min(1 << 40) as usize;
            self.send_buf.set_capacity(self.cfg.send_buffer.max(window));
            self.first_sent.remove_below(a.data_ack);
            // The head moved; with nothing outstanding, the clock starts at the next send.
            self.head_since = (!self.first_sent.is_empty()).then_some(now);
            self.persist_backoff = 0;
            // The scheme hears of it below, through the context of this ACK's packets.
        }
        // Path level: newly acknowledged packets.
        let mut cc_bytes = 0u64;
        let mut newly_largest: Option<(u64, Instant)> = None;
        let mut any = false;
        let mut head_acked = false;
        // The path's state before the ACK, read through one borrow.
        let path = &mut self.paths[p];
        if a.lowest() < path.sent_base {
            path.floor_due = true;
        }
        // Settled packets never stay at the front: whatever settles one trims after it.
        debug_assert!(path
            .sent
            .front()
            .is_none_or(|sp| sp.state == SentState::Outstanding));
        // Classic: the packet holding ns-3's SND.UNA (see `Path::classic_head`).
        let head = if self.cfg.profile == TcpProfile::Classic {
            path.classic_head()
        } else {
            None
        };
        let prior_in_flight = path.bytes_in_flight;
        let lost_before = (path.bytes_lost, path.stats.packets_lost);
        let largest_before = path.largest_acked;
        if a.largest >= path.next_pn {
            // Numbers never sent: only the part below what was sent counts.
            self.stats.ack_ranges_ignored += 1;
        }
        // One scheme context for the ACK: the cumulative acknowledgement's call and the
        // packets' (nothing it carries changes in between, unless messages are held).
        let mut ctx = send_ctx!(self, now);
        if data_acked {
            self.tx.on_data_ack(&mut ctx);
            if self.tx_msgs.holds_any() {
                // After the scheme: it may still look at the abandoned bytes the ACK passed.
                self.tx_msgs.on_data_ack(a.data_ack);
                // The packets' calls see the messages as they are now.
                ctx = send_ctx!(self, now);
            }
        }
        let mut stream_end_acked = false;
        // One borrow of the path for every packet (the scheme's calls reach no path).
        let path = &mut self.paths[p];
        for r in a.ranges() {
            let lo = r.start.max(path.sent_base);
            let hi = r.end.min(path.next_pn);
            if hi <= path.sent_base {
                break;
            }
            for pn in (lo..hi).rev() {
                let Some(sp) = path.settle(pn, SentState::Acked) else {
                    continue;
                };
                any = true;
                if self.cfg.reorder_tolerance {
                    // A packet below the largest acknowledged is reordering, unless the scheme
                    // rebuilt it from redundancy (a repair comes after the packets behind it
                    // by design); the scheme is asked only then.
                    let below =
                        largest_before.filter(|&l| pn < l && !self.tx.acked_by_repair(p, pn));
                    path.reo.on_acked(pn, below);
                }
                head_acked |= head == Some(pn);
                path.stats.packets_acked += 1;
                path.stats.bytes_acked += u64::from(sp.size);
                path.loss.on_acked(1);
                if path.rate_samples {
                    path.rate
                        .on_acked(now, sp.time_sent, u64::from(sp.size), &sp.rate);
                }
                if path.recovery_start.is_none_or(|rs| sp.time_sent > rs) {
                    cc_bytes += u64::from(sp.size);
                }
                if newly_largest.is_none_or(|(l, _)| pn > l) {
                    newly_largest = Some((pn, sp.time_sent));
                }
                if sp.flags & SENT_STREAM_END != 0 && self.stream_end == StreamEnd::InFlight {
                    self.stream_end = StreamEnd::Acked;
                    stream_end_acked = true;
                }
                if sp.flags & SENT_CONTROL != 0 {
                    self.ctrl_in_flight.remove(&(p, pn));
                }
                if let Some(tag) = sp.tag {
                    let info = sp.info(p, pn, tag);
                    self.tx.on_acked(&mut ctx, &info);
                }
            }
        }
        if data_acked || stream_end_acked {
            // After the loop: the check looks at nothing the loop changes but the stream
            // end's state, and the scheme's calls above push no events.
            self.check_all_acked();
        }
        let mut undo = None;
        if self.cfg.reorder_tolerance {
            // Packet numbers are never reused: an acknowledged packet the path declared lost
            // arrived after all, and its loss was spurious, unless the scheme rebuilt it from
            // redundancy (asked after the loop above, so the scheme saw this ACK's repairs).
            let tx = &self.tx;
            let mut tracer = self.tracer.as_mut();
            let path = &mut self.paths[p];
            // With no loss records (most ACKs) there is nothing to expire: the timeout is
            // not computed.
            if !path.reo.lost.is_empty() {
                path.reo.expire(now, path.rtt.base_rto());
            }
            if !path.reo.lost.is_empty() {
                let next_pn = path.next_pn;
                let mut spurious = 0u64;
                for r in a.ranges() {
                    path.reo.take_acked(
                        r.start,
                        r.end.min(next_pn),
                        next_pn,
                        |pn| tx.acked_by_repair(p, pn),
                        |pn, s| {
                            spurious += 1;
                            if let Spurious::Undo(w) = s {
                                undo = Some(w);
                            }
                            if let Some(t) = tracer.as_mut() {
                                t.event(now, &TraceEvent::SpuriousLoss { path: p, pn });
                            }
                        },
                    );
                }
                path.stats.spurious_losses += spurious;
            }
        }
        let classic = self.cfg.profile == TcpProfile::Classic;
        let max_ack_delay = self.cfg.max_ack_delay;
        let path = &mut self.paths[p];
        let largest = a.largest.min(path.next_pn.saturating_sub(1));
        path.largest_acked = Some(path.largest_acked.map_or(largest, |l| l.max(largest)));
        let mut rtt_sample = None;
        if let Some((pn, sent)) = newly_largest {
            path.on_round_ack(pn);
            if pn == a.largest {
                // RFC 9002 §5.3: the peer's ack delay, capped at max_ack_delay (both ends
                // share the configuration), comes off the sample; classic keeps it raw.
                let delay = if classic {
                    Duration::ZERO
                } else {
                    Duration::from_micros(a.ack_delay.min(1 << 40)).min(max_ack_delay)
                };
                rtt_sample = Some(path.rtt.update_with_delay(now - sent, delay));
                if let Some(t) = a.received_at {
                    path.forward.on_sample(sent.as_nanos(), t);
                }
            }
        }
        path.trim_front();
        // Classic (ns-3): the timer restarts only when SND.UNA advances, i.e. the packet
        // holding it is acknowledged; otherwise on any newly acknowledged packet.
        let restart = if classic { head_acked } else { any };
        if any {
            path.consecutive_rtos = 0;
            path.probe_due = false;
            path.tlp_sent = false;
        }
        if restart {
            path.rtt.reset_backoff();
        }
        // The view (`sync_view`), through the same borrow of the path.
        let view = &mut self.views[p];
        path.write_view(view);
        if restart {
            // The view just taken holds the path's timer (`Path::timer`): nothing it
            // depends on changes between the snapshot and here.
            debug_assert_eq!(view.rto, path.timer());
            path.rto_deadline = (path.packets_in_flight > 0).then(|| now + view.rto);
        }
        if any && matches!(path.state, PathState::Suspect | PathState::Failed) {
            self.set_path_state(now, p, PathState::Active);
        }
        if let Some(prior) = undo {
            self.undo_congestion(now, p, prior);
        }
        // Window growth, then loss detection (RFC 9002 order).
        if cc_bytes > 0 {
            let view = &self.views[p];
            let (old, limited) = (view.cwnd, view.cwnd_limited);
            // Classic: at most one MSS per ACK counts (RFC 3465 with L = 1 SMSS): ns-3
            // NewReno's per-ACK growth.
            let bytes_acked = if classic {
                cc_bytes.min(self.paths[p].mss)
            } else {
                cc_bytes
            };
            let ev = AckEvent {
                now,
                bytes_acked,
                rtt_sample,
            };
            let mut w = self.cc.on_ack(p, &ev, &self.views);
            if !limited {
                // RFC 7661: a window that did not limit sending is not validated by this
                // ACK, so it may not grow (it may shrink).
                w.cwnd = w.cwnd.min(old);
            }
            // The view is current: synced above, and the controller changes no path.
            self.apply_window_to_current(p, w);
        }
        self.validate_window(now, p, None);
        self.detect_losses(now, p);
        self.arm_tlp(now, p);
        // The delivery-rate sample of this ACK, with the losses it revealed.
        let path = &mut self.paths[p];
        let lost = (
            path.bytes_lost - lost_before.0,
            path.stats.packets_lost - lost_before.1,
        );
        let min_rtt = path.rtt.min_rtt();
        let sample = if path.rate_samples {
            path.rate.finish(now, min_rtt, lost, prior_in_flight)
        } else {
            None
        };
        if let Some(rs) = sample {
            if let Some(w) = self.cc.on_delivery(p, &rs, &self.views) {
                self.apply_window(p, w);
            }
        }
        self.apply_actions(now);
        if any {
            self.trace_metrics(now, p);
        }
    }

    /// Every loss behind path `p`'s latest congestion response proved spurious: the
    /// controller restores the window from before it (`prior`), and the path leaves recovery
    /// (RFC 4015 §2; Linux `tcp_try_undo_recovery` returns to the Open state), so a real
    /// loss found later is a congestion event of its own.
    fn undo_congestion(&mut self, now: Instant, p: usize, prior: Window) {
        let path = &mut self.paths[p];
        path.recovery_start = None;
        path.stats.undos += 1;
        if let Some(t) = &mut self.tracer {
            t.event(now, &TraceEvent::CongestionUndone { path: p });
        }
        self.sync_view(p);
        let w = self.cc.on_spurious_congestion(p, now, prior, &self.views);
        self.apply_window(p, w);
        self.trace_metrics(now, p);
    }

    /// Declares the packets of path `p` lost that the largest acknowledgement (by count,
    /// or by time with the tail-loss probe) or the reordering window shows lost. Inlined:
    /// when the first packet the scan would look at is absent or outstanding and not lost
    /// by count, and time plays no part (no probe), the scan's first step would end it, and
    /// only its bookkeeping is done here; the scan is not.
    #[inline]
    fn detect_losses(&mut self, now: Instant, p: usize) {
        let path = &mut self.paths[p];
        let Some(largest) = path.largest_acked else {
            return;
        };
        if !self.cfg.tail_loss_probe {
            let pn = path.loss_scan.max(path.sent_base);
            let first = path.sent.get((pn - path.sent_base) as usize);
            if first.is_none_or(|sp| {
                sp.state == SentState::Outstanding && pn + path.loss_threshold > largest
            }) {
                if self.cfg.reorder_tolerance {
                    path.reo.deadline = None;
                }
                path.loss_scan = pn;
                self.after_losses(now, p, false, false);
                return;
            }
        }
        self.scan_losses(now, p, largest);
    }

    #[inline(never)]
    fn scan_losses(&mut self, now: Instant, p: usize, largest: u64) {
        let path = &mut self.paths[p];
        let thr = path.loss_threshold;
        let classic = self.cfg.profile == TcpProfile::Classic;
        // RACK-TLP's companion (RFC 9002 §6.1.2): with the probe on, a packet sent 9/8 of
        // an RTT before one that was acknowledged is lost too.
        let time_lost_before = if self.cfg.tail_loss_probe {
            let rtt = path.rtt.srtt().unwrap_or(Duration::ZERO);
            let rtt = rtt.max(path.rtt.latest().unwrap_or(Duration::ZERO));
            let delay = Duration::from_nanos(rtt.as_nanos() / 8 * 9).max(Duration::from_millis(1));
            Some(Instant::from_nanos(
                now.as_nanos().saturating_sub(delay.as_nanos()),
            ))
        } else {
            None
        };
        // RFC 8985 §6.2 (reordering tolerance): once the path saw reordering, a packet is
        // lost only once it was sent RACK.rtt + reo_wnd ago (RACK.rtt: the latest RTT
        // sample); the reordering timer declares it then if no ACK does.
        let hold = if self.cfg.reorder_tolerance {
            let reo_wnd = path.reo.reo_wnd(path.rtt.min_rtt(), path.rtt.srtt());
            path.reo.deadline = None;
            (reo_wnd > Duration::ZERO).then(|| {
                path.rtt
                    .latest()
                    .unwrap_or(Duration::ZERO)
                    .saturating_add(reo_wnd)
            })
        } else {
            None
        };
        let mut congestion = false;
        let mut any_lost = false;
        // Both callers trimmed the settled packets off the front (`on_ack_frame` after its
        // loop, the reordering timer just before the call).
        debug_assert!(path
            .sent
            .front()
            .is_none_or(|sp| sp.state == SentState::Outstanding));
        let mut pn = path.loss_scan.max(path.sent_base);
        loop {
            let path = &self.paths[p];
            let Some(&sp) = path.sent.get((pn - path.sent_base) as usize) else {
                break;
            };
            let by_count = pn + thr <= largest;
            let by_time = pn < largest && time_lost_before.is_some_and(|t| sp.time_sent <= t);
            if sp.state == SentState::Outstanding && !by_count && !by_time {
                break;
            }
            if let Some(h) = hold {
                let lost_at = sp.time_sent + h;
                if sp.state == SentState::Outstanding && lost_at > now {
                    self.paths[p].reo.deadline = Some(lost_at);
                    break;
                }
            }
            pn += 1;
            // Classic (ns-3 with RFC 6675 NextSeg): a retransmission is never declared lost
            // by the threshold; only the retransmission timer recovers it.
            if classic && sp.flags & SENT_RETRANSMISSION != 0 {
                continue;
            }
            if let Some(c) = self.lose(now, p, pn - 1, LossKind::Threshold) {
                any_lost = true;
                congestion |= c;
            }
        }
        let path = &mut self.paths[p];
        path.loss_scan = pn;
        // The front was outstanding: only a packet declared lost can have settled it.
        if any_lost {
            path.trim_front();
        }
        self.after_losses(now, p, any_lost, congestion);
    }

    /// Declares outstanding packet `pn` of path `p` lost (`kind` says how it was found):
    /// loss counters, stream-end and control-frame bookkeeping, the scheme's and the
    /// tracer's queues. `None` if it was not outstanding; else whether the loss is a
    /// congestion signal (sent after the path's recovery started).
    fn lose(&mut self, now: Instant, p: usize, pn: u64, kind: LossKind) -> Option<bool> {
        let path = &mut self.paths[p];
        let sp = path.settle(pn, SentState::Lost)?;
        path.stats.packets_lost += 1;
        path.bytes_lost += u64::from(sp.size);
        path.loss.on_lost();
        let congestion = path.recovery_start.is_none_or(|rs| sp.time_sent > rs);
        if self.cfg.reorder_tolerance {
            // Threshold losses are remembered so that a late acknowledgement proves them
            // spurious; a timeout's or the scheme's declaration makes its episode final.
            if kind == LossKind::Threshold {
                path.reo.on_lost(pn, now, congestion);
            } else {
                path.reo.on_final_loss(congestion);
            }
        }
        if sp.flags & SENT_STREAM_END != 0 && self.stream_end == StreamEnd::InFlight {
            self.stream_end = StreamEnd::Pending;
        }
        if sp.flags & SENT_CONTROL != 0 {
            if let Some(c) = self.ctrl_in_flight.remove(&(p, pn)) {
                self.ctrl_pending.extend(c);
            }
        }
        if let Some(tag) = sp.tag {
            self.lost.push((sp.info(p, pn, tag), kind));
        }
        if self.tracer.is_some() {
            self.traced_losses.push((p, pn, sp.size, kind));
        }
        Some(congestion)
    }

    /// After packets of path `p` were declared lost: the view, one congestion event if any
    /// loss signals congestion, and the losses reported to the scheme and the tracer.
    /// (Inlined: after most ACKs nothing was lost and only the report's check is left.)
    #[inline]
    fn after_losses(&mut self, now: Instant, p: usize, any_lost: bool, congestion: bool) {
        if any_lost || congestion {
            self.after_found_losses(now, p, any_lost, congestion);
        } else {
            self.report_lost(now);
        }
    }

    #[inline(never)]
    fn after_found_losses(&mut self, now: Instant, p: usize, any_lost: bool, congestion: bool) {
        // The view was current before (trimming settled packets changes nothing in it).
        if any_lost {
            self.sync_view(p);
        }
        if congestion {
            let path = &mut self.paths[p];
            let prior = Window {
                cwnd: path.cwnd,
                ssthresh: path.ssthresh,
            };
            path.recovery_start = Some(now);
            path.stats.congestion_events += 1;
            self.sync_view(p);
            let w = self.cc.on_congestion_event(p, now, &self.views);
            self.apply_window(p, w);
            if self.cfg.reorder_tolerance {
                self.paths[p].reo.on_congestion_response(prior);
            }
        }
        self.report_lost(now);
    }

    /// Reports the losses declared since the last call to the tracer and the scheme (most
    /// calls have none and no tracer: that check is inlined, the work is not).
    #[inline]
    fn report_lost(&mut self, now: Instant) {
        if self.tracer.is_some() || !self.lost.is_empty() {
            self.report_lost_now(now);
        }
    }

    #[inline(never)]
    fn report_lost_now(&mut self, now: Instant) {
        if let Some(t) = &mut self.tracer {
            for (path, pn, size, kind) in self.traced_losses.drain(..) {
                t.event(
                    now,
                    &TraceEvent::PacketLost {
                        path,
                        pn,
                        size,
                        kind,
                    },
                );
            }
        }
        if self.lost.is_empty() {
            return;
        }
        let lost = std::mem::take(&mut self.lost);
        for (info, kind) in &lost {
            let mut ctx = send_ctx!(self, now);
            self.tx.on_lost(&mut ctx, info, *kind);
        }
        self.lost = lost;
        self.lost.clear();
    }

    fn on_rto(&mut self, now: Instant, p: usize) {
        let path = &mut self.paths[p];
        path.stats.rto_count += 1;
        // The decrease applies to what was in flight before the timeout declared it lost
        // (ns-3 `TcpSocketBase::ReTxTimeout` takes `BytesInFlight()` first).
        let flight_decrease = path.view().flight_decrease;
        let (base, n) = (path.sent_base, path.sent.len() as u64);
        for pn in base..base + n {
            self.lose(now, p, pn, LossKind::Timeout);
        }
        let path = &mut self.paths[p];
        path.trim_front();
        path.rto_deadline = None;
        path.tlp_deadline = None;
        path.tlp_due = false;
        self.sync_view(p);
        self.views[p].flight_decrease = flight_decrease;
        let mut w = self.cc.on_timeout(p, now, &self.views);
        let path = &mut self.paths[p];
        // RFC 5681 §3.1 (the note after Eq. 4): when the timer expires again with nothing
        // acknowledged since the last expiry, ssthresh is held constant — as Linux
        // (`tcp_enter_loss` recomputes it only on entering Loss) and ns-3 (`ReTxTimeout`,
        // not when already in CA_LOSS with the head retransmitted) do. Recomputing it from
        // the one-packet window of the previous timeout collapsed it to 2 MSS, and a path
        // back from an outage or a loss burst crawled up from there.
        if path.consecutive_rtos > 0 {
            w.ssthresh = path.ssthresh;
        }
        path.recovery_start = Some(now);
        path.stats.congestion_events += 1;
        path.reo.on_final_response();
        path.rtt.back_off();
        path.consecutive_rtos += 1;
        let state = if path.consecutive_rtos >= self.cfg.fail_after_rtos {
            PathState::Failed
        } else {
            PathState::Suspect
        };
        self.apply_window(p, w);
        self.set_path_state(now, p, state);
        // While another path carries the data, this one only gets probes, one per timeout.
        // When every path is suspect the scheme may resend on this one (its retransmission
        // is then the probe); if it sends nothing here, a probe still goes out
        // (`transmit_probe`), or the path would end with nothing in flight, no timer and no
        // data for the rest of the connection. A single path's retransmission is its probe.
        if self.paths[p].state != PathState::Closed {
            self.paths[p].probe_due = self.paths.len() > 1;
        }
        self.report_lost(now);
        self.apply_actions(now);
        self.trace_metrics(now, p);
    }

    /// Congestion window validation ([`ConnectionConfig::cwnd_validation`]) of path `p`,
    /// after it sent (`idle_since`: when it last sent before, if its flight was empty) or was
    /// acknowledged. Linux's rules (`tcp_cwnd_restart`, `tcp_cwnd_application_limited`;
    /// RFC 2861 §3, RFC 7661 §4.4). Off, the check is all that is left (inlined).
    #[inline]
    fn validate_window(&mut self, now: Instant, p: usize, idle_since: Option<Instant>) {
        if self.cfg.cwnd_validation {
            self.validate_window_on(now, p, idle_since);
        }
    }

    #[inline(never)]
    fn validate_window_on(&mut self, now: Instant, p: usize, idle_since: Option<Instant>) {
        if self.views[p].in_recovery || self.cc.pacing_rate(p, &self.views).is_some() {
            return;
        }
        let path = &mut self.paths[p];
        let rto = path.rtt.base_rto();
        let iw = path.initial_cwnd;
        let mut w = Window {
            cwnd: path.cwnd,
            ssthresh: path.ssthresh,
        };
        // Restart after idle: one halving per whole timeout without anything in flight.
        if let Some(t) = idle_since {
            let mut idle = now.saturating_since(t);
            let restart = iw.min(w.cwnd);
            if idle > rto && w.cwnd > restart {
                w.ssthresh = w.ssthresh.max(w.cwnd / 2 + w.cwnd / 4);
                while idle > rto && w.cwnd > restart {
                    w.cwnd /= 2;
                    idle = idle - rto;
                }
                w.cwnd = w.cwnd.max(restart);
            }
            path.cwv_used = 0;
            path.cwv_stamp = now;
        }
        // Application- (or scheduler-) limited for a timeout: give back half the unused part.
        if path.cwnd_limited() {
            path.cwv_used = 0;
            path.cwv_stamp = now;
        } else {
            path.cwv_used = path.cwv_used.max(path.bytes_in_flight);
            if now.saturating_since(path.cwv_stamp) >= rto {
                let used = path.cwv_used.max(iw);
                if used < w.cwnd {
                    w.ssthresh = w.ssthresh.max(w.cwnd / 2 + w.cwnd / 4);
                    w.cwnd = (w.cwnd + used) / 2;
                }
                path.cwv_used = 0;
                path.cwv_stamp = now;
            }
        }
        if w.cwnd != path.cwnd || w.ssthresh != path.ssthresh {
            self.apply_window(p, w);
            self.trace_metrics(now, p);
        }
    }

    fn apply_window(&mut self, p: usize, w: Window) {
        let path = &mut self.paths[p];
        path.cwnd = w.cwnd.max(path.mss);
        path.ssthresh = w.ssthresh.max(2 * path.mss);
        path.write_view(&mut self.views[p]);
    }

    /// [`Self::apply_window`] when path `p`'s view is current: only the window's part of
    /// the view is brought up to date.
    fn apply_window_to_current(&mut self, p: usize, w: Window) {
        let path = &mut self.paths[p];
        path.cwnd = w.cwnd.max(path.mss);
        path.ssthresh = w.ssthresh.max(2 * path.mss);
        path.refresh_view_after_window(&mut self.views[p]);
    }

    /// Applies the scheme's pending actions, if any (most calls find none: that check is
    /// inlined, the work is not).
    #[inline]
    fn apply_actions(&mut self, now: Instant) {
        if !self.actions.is_empty() {
            self.apply_pending_actions(now);
        }
    }

    #[inline(never)]
    fn apply_pending_actions(&mut self, now: Instant) {
        // Losses an action declares reach the scheme, which may request more: a few rounds,
        // then the rest waits for the next call.
        for _ in 0..4 {
            if self.actions.is_empty() {
                return;
            }
            self.apply_actions_once(now);
        }
    }

    fn apply_actions_once(&mut self, now: Instant) {
        for a in std::mem::take(&mut self.actions) {
            match a {
                // A penalisation is a congestion event of that path: through its controller
                // (whose state, e.g. CUBIC's epoch, must know) and the recovery rule (at most
                // one reduction per window of data).
                Action::Penalize { path } => {
                    let Some(pp) = self.paths.get_mut(path) else {
                        continue;
                    };
                    if pp.view().in_recovery {
                        continue;
                    }
                    pp.recovery_start = Some(now);
                    pp.stats.penalizations += 1;
                    pp.reo.on_final_response();
                    self.sync_view(path);
                    let w = self.cc.on_congestion_event(path, now, &self.views);
                    self.apply_window(path, w);
                }
                Action::SetLossThreshold { path, packets } => {
                    if let Some(pp) = self.paths.get_mut(path) {
                        pp.loss_threshold = packets.max(1);
                        self.sync_view(path);
                    }
                }
                Action::DeclareLost { path, from, to } => {
                    let Some(pp) = self.paths.get(path) else {
                        continue;
                    };
                    // Only what the path still tracks: bounded by its packets in flight.
                    let (from, to) = (from.max(pp.sent_base), to.min(pp.next_pn));
                    let mut congestion = false;
                    let mut any_lost = false;
                    for pn in from..to {
                        if let Some(c) = self.lose(now, path, pn, LossKind::Declared) {
                            any_lost = true;
                            congestion |= c;
                        }
                    }
                    if any_lost {
                        self.paths[path].trim_front();
                        self.after_losses(now, path, any_lost, congestion);
                    }
                }
            }
        }
    }

    /// Everything written was acknowledged *and* the receiver learnt where the stream ends
    /// (the STREAM_END frame may travel in a packet lost after the data arrived by another
    /// path).
    fn check_all_acked(&mut self) {
        if !self.all_acked
            && self.final_size == Some(self.peer_data_ack)
            && self.stream_end == StreamEnd::Acked
        {
            self.all_acked = true;
            self.events.push_back(Event::AllAcked);
        }
    }

    // ------------------------------------------------------------------ timers

    /// Processes expired timers.
    pub fn handle_timeout(&mut self, now: Instant) {
        for p in 0..self.paths.len() {
            if self.paths[p].rto_deadline.is_some_and(|t| t <= now) {
                self.on_rto(now, p);
            }
            if self.paths[p].reo.deadline.is_some_and(|t| t <= now) {
                // RACK's reordering timer (RFC 8985 §6.2 step 5).
                self.paths[p].reo.deadline = None;
                self.paths[p].trim_front();
                self.detect_losses(now, p);
                self.apply_actions(now);
            }
            if self.paths[p].tlp_deadline.is_some_and(|t| t <= now) {
                let path = &mut self.paths[p];
                path.tlp_deadline = None;
                if path.packets_in_flight > 0 {
                    path.tlp_due = true;
                    path.tlp_sent = true;
                }
            }
            let path = &mut self.paths[p];
            if path.ack_deadline.is_some_and(|t| t <= now) {
                path.ack_deadline = None;
                path.ack_now = true;
            }
        }
        if self.persist.is_some_and(|t| t <= now) {
            self.persist = None;
            self.persist_backoff = (self.persist_backoff + 1).min(16);
            self.ping_due = true;
        }
        self.expire_messages(now);
        if self.head_deadline().is_some_and(|t| t <= now) {
            self.stats.head_stalls += 1;
            self.head_since = Some(now);
            self.head_backoff = (self.head_backoff + 1).min(6);
            let mut ctx = send_ctx!(self, now);
            self.tx.on_head_stalled(&mut ctx);
            self.apply_actions(now);
        }
        if self.tx.poll_timeout().is_some_and(|t| t <= now) {
            let mut ctx = send_ctx!(self, now);
            self.tx.on_timeout(&mut ctx);
            self.apply_actions(now);
        }
        if self.rx.poll_timeout().is_some_and(|t| t <= now) {
            let mut ctx = RecvCtx {
                now,
                recv_buf: &mut self.recv_buf,
                recovered: &mut self.recovered,
                ack_requests: &mut self.ack_requests,
            };
            self.rx.on_timeout(&mut ctx);
            self.apply_receiver_requests();
        }
    }

    /// When `handle_timeout` must be called next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        // Called after every input: no intermediate collections.
        fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
            match (a, b) {
                (Some(x), Some(y)) => Some(x.min(y)),
                (x, None) => x,
                (None, y) => y,
            }
        }
        let mut t = earliest(self.persist, self.pacing_wake);
        for p in &self.paths {
            t = earliest(t, p.rto_deadline);
            t = earliest(t, p.ack_deadline);
            t = earliest(t, p.tlp_deadline);
            t = earliest(t, p.reo.deadline);
        }
        t = earliest(t, self.tx.poll_timeout());
        t = earliest(t, self.rx.poll_timeout());
        if !self.tx_msgs.is_empty() {
            t = earliest(t, self.tx_msgs.next_deadline(&self.lead()));
        }
        earliest(t, self.head_deadline())
    }

    // ------------------------------------------------------------------ network output

    /// Writes the next datagram to send into `buf` (at least `max_datagram` bytes long).
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        let mut scan = PathScan::START;
        let mut t = self.transmit_control(now, buf, &mut scan);
        if t.is_none() {
            // No path changes before a packet is sent: the pass over the paths that looked
            // for ACKs serves every later step.
            if !scan.complete {
                scan = self.scan_paths();
            }
            // Probes of suspect paths while another path is active, before data.
            t = self
                .transmit_probe(now, buf, true, scan)
                .or_else(|| self.transmit_join_probe(now, buf))
                .or_else(|| self.transmit_data(now, buf, scan.any_active))
                .or_else(|| self.transmit_probe(now, buf, false, scan));
        }
        let Some(t) = t else {
            self.arm_persist(now, scan.idle);
            return None;
        };
        if let Some(tr) = &mut self.tracer {
            if let Ok((header, hlen)) = wire::parse_header(&buf[..t.len]) {
                let frames = &buf[hlen..t.len - self.trailer.len()];
                tr.event(
                    now,
                    &TraceEvent::PacketSent {
                        path: t.path,
                        header,
                        frames,
                    },
                );
            }
        }
        if let Some(p) = &self.protect {
            // Cannot fail: the packet was just written with an AEAD trailer.
            let sealed = p.seal(&mut buf[..t.len]);
            debug_assert!(sealed.is_ok());
        }
        Some(t)
    }

    /// Largest datagram `poll_transmit` writes.
    pub fn max_datagram(&self) -> usize {
        self.max_datagram
    }

    /// The paths' flags the steps of `poll_transmit` after its ACKs test, in one pass.
    fn scan_paths(&self) -> PathScan {
        let mut scan = PathScan::START;
        for p in &self.paths {
            scan.note(p);
        }
        scan.complete = true;
        scan
    }

    /// ACKs, CLOSE and a requested PING (the probes and data follow in `poll_transmit`).
    /// `scan` is filled (complete) if the pass for ACKs went over every path.
    fn transmit_control(
        &mut self,
        now: Instant,
        buf: &mut [u8],
        scan: &mut PathScan,
    ) -> Option<Transmit> {
        let mut seen = PathScan::START;
        // ACKs, each on the path whose packets it acknowledges.
        for p in 0..self.paths.len() {
            seen.note(&self.paths[p]);
            let due = self.paths[p].ack_now || (self.window_update && p == self.last_rx_path);
            if !due || self.paths[p].received.is_empty() {
                continue;
            }
            let pn = self.paths[p].take_pn();
            let hdr = self.header(p, pn);
            let mut w =
                PacketWriter::with_trailer(buf, self.max_datagram, hdr, self.trailer).ok()?;
            let max_data = self.window_edge();
            // RFC 9000 §13.2.5: time since the largest acknowledged packet arrived.
            let ack_delay = self.paths[p]
                .largest_received_at
                .map_or(0, |t| now.saturating_since(t).as_nanos() / 1000);
            // ACK_TS: when the largest arrived, µs on this end's clock.
            let received_at = if self.cfg.ack_timestamps {
                self.paths[p]
                    .largest_received_at
                    .map(|t| t.as_nanos() / 1000)
            } else {
                None
            };
            let ok = w
                .push_ack(
                    p as u8,
                    &self.paths[p].received,
                    self.cfg.max_ack_ranges,
                    ack_delay,
                    self.recv_buf.contiguous_end(),
                    max_data,
                    received_at,
                )
                .ok()?;
            debug_assert!(ok);
            self.rx.write_feedback(now, p, &mut w);
            let len = w.finish();
            let path = &mut self.paths[p];
            path.ack_now = false;
            path.ack_deadline = None;
            path.unacked_eliciting = 0;
            path.on_sent(pn, now, len, false, None, 0);
            self.advertised_max_data = max_data;
            self.window_update = false;
            return Some(Transmit { path: p, len });
        }
        seen.complete = true;
        *scan = seen;
        if let Some((code, p)) = self.close_due.take() {
            if p < self.paths.len() {
                let pn = self.paths[p].take_pn();
                let hdr = self.header(p, pn);
                let mut w =
                    PacketWriter::with_trailer(buf, self.max_datagram, hdr, self.trailer).ok()?;
                w.push(&Frame::Close { code }).ok()?;
                let len = w.finish();
                self.paths[p].on_sent(pn, now, len, false, None, 0);
                if p + 1 < self.paths.len() {
                    self.close_due = Some((code, p + 1));
                }
                return Some(Transmit { path: p, len });
            }
        }
        if self.ping_due {
            self.ping_due = false;
            let p = self.best_path()?;
            return self.send_ping(now, p, buf);
        }
        None
    }

    /// `probe_new_paths`: the path that carries data before any is measured (as Linux
    /// MPTCP's initial subflow): the first active one.
    fn initial_path(&self) -> Option<usize> {
        self.paths.iter().position(|p| p.state == PathState::Active)
    }

    /// `probe_new_paths`: one PING on each active path other than the initial one that has
    /// no RTT sample and nothing in flight, once the application has written something (the
    /// path then carries data only after the PING's acknowledgement measured it; see
    /// `transmit_data`).
    fn transmit_join_probe(&mut self, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        if !self.cfg.probe_new_paths || self.send_buf.end() == 0 {
            return None;
        }
        let initial = self.initial_path();
        let p = self.paths.iter().enumerate().position(|(i, p)| {
            Some(i) != initial
                && p.state == PathState::Active
                && !p.join_probed
                && p.rtt.srtt().is_none()
                && p.packets_in_flight == 0
        })?;
        self.paths[p].join_probed = true;
        self.send_ping(now, p, buf)
    }

    /// Probes of suspect paths: one per retransmission timeout (the timer backs off). With
    /// `active`, only while some path is active (before data: the suspect path gets no
    /// data then); without, only while none is (after data: the scheme may use the suspect
    /// paths then, and a path it left empty gets its probe). `scan`: the paths' flags.
    fn transmit_probe(
        &mut self,
        now: Instant,
        buf: &mut [u8],
        active: bool,
        scan: PathScan,
    ) -> Option<Transmit> {
        if scan.any_active != active || !scan.probe_due {
            return None;
        }
        for p in 0..self.paths.len() {
            let path = &self.paths[p];
            if path.probe_due && path.packets_in_flight == 0 {
                self.paths[p].probe_due = false;
                return self.send_ping(now, p, buf);
            }
        }
        None
    }

    /// Some other active path's one-way delay estimate ([`one_way`]) is below `d`.
    fn faster_path_than(&self, p: usize, d: Duration) -> bool {
        self.paths.iter().enumerate().any(|(i, q)| {
            i != p && q.state == PathState::Active && one_way(q).is_some_and(|e| e < d)
        })
    }

    /// What a message with a deadline at the peer needs to arrive ([`lead_of`]).
    fn lead(&self) -> Lead<'_> {
        lead_of(
            &self.paths,
            &*self.cc,
            &self.views,
            &self.first_sent,
            self.peer_data_ack,
        )
    }

    /// When the head of the stream counts as stalled: data sent and not cumulatively
    /// acknowledged for twice the largest base retransmission timeout of the active paths
    /// (doubled per stall that followed, up to 64×), since the acknowledgement last moved.
    #[inline]
    fn head_deadline(&self) -> Option<Instant> {
        let since = self.head_since?;
        if self
            .first_sent
            .max_end()
            .is_none_or(|e| e <= self.peer_data_ack)
        {
            return None;
        }
        let rto = self
            .paths
            .iter()
            .filter(|p| p.state == PathState::Active)
            .map(|p| p.rtt.base_rto())
            .max()?;
        Some(since + rto.saturating_mul(2 << self.head_backoff))
    }

    /// Sends a lone PING on path `p` (a probe: it elicits an acknowledgement).
    fn send_ping(&mut self, now: Instant, p: usize, buf: &mut [u8]) -> Option<Transmit> {
        let hdr = self.header(p, self.paths[p].next_pn);
        let mut w = PacketWriter::with_trailer(buf, self.max_datagram, hdr, self.trailer).ok()?;
        w.push(&Frame::Ping).ok()?;
        let len = w.finish();
        let pn = self.paths[p].take_pn();
        self.paths[p].on_sent(pn, now, len, true, None, 0);
        self.sync_view(p);
        Some(Transmit { path: p, len })
    }

    /// Data (or a tail-loss probe) on the best candidate path; `any_active`: whether some
    /// path is active.
    fn transmit_data(
        &mut self,
        now: Instant,
        buf: &mut [u8],
        any_active: bool,
    ) -> Option<Transmit> {
        // New data goes on active paths; only when none is left does the scheme use the
        // suspect ones (a single path after a timeout: its retransmission is its probe).
        self.candidates.clear();
        self.pacing_wake = None;
        // The measured path with the lowest smoothed RTT among those whose window has room
        // but whose pacer holds them until a later slot.
        let mut held: Option<(usize, Duration)> = None;
        // Some path, usable or not, owes a tail-loss probe.
        let mut tlp_any = false;
        // `probe_new_paths`: while a path is active, unmeasured paths wait for their probe;
        // before any active path is measured, the initial one carries the data.
        let join_gate = self.cfg.probe_new_paths && any_active;
        let initial = if join_gate
            && !self
                .paths
                .iter()
                .any(|p| p.state == PathState::Active && p.rtt.srtt().is_some())
        {
            self.initial_path()
        } else {
            None
        };
        for i in 0..self.paths.len() {
            let p = &self.paths[i];
            tlp_any |= p.tlp_due;
            let usable = match p.state {
                PathState::Active => true,
                PathState::Closed => false,
                _ => !any_active,
            };
            if !usable || (join_gate && p.rtt.srtt().is_none() && Some(i) != initial) {
                continue;
            }
            // A tail-loss probe may exceed the window and is not paced (RFC 8985 §7.3).
            if p.tlp_due {
                self.candidates.push(i);
                continue;
            }
            let full = if p.whole_packet_window {
                p.bytes_in_flight + p.mss > p.cwnd
            } else {
                p.bytes_in_flight >= p.cwnd
            };
            if full {
                continue;
            }
            if p.next_send > now && self.pacing_rate(i).is_some() {
                let t = p.next_send;
                self.pacing_wake = Some(self.pacing_wake.map_or(t, |w| w.min(t)));
                if let Some(r) = self.views[i].srtt {
                    if held.is_none_or(|(_, b)| r < b) {
                        held = Some((i, r));
                    }
                }
                continue;
            }
            self.candidates.push(i);
        }
        if self.candidates.is_empty() {
            return None;
        }
        self.sched.rank(&self.views, &mut self.candidates);
        let unsent = {
            let sent_to = self
                .first_sent
                .max_end()
                .unwrap_or(0)
                .max(self.peer_data_ack);
            let ctx = SchedContext::new(
                now,
                &self.views,
                self.send_buf.end().saturating_sub(sent_to),
                self.peer_max_data.saturating_sub(self.peer_data_ack),
            );
            self.sched.hold_back(&ctx, &mut self.candidates);
            ctx.unsent_bytes
        };
        if let Some((h, _)) = held {
            if self.waits_for_paced(now, h, self.candidates.first().copied(), unsent) {
                // The due paths stay idle by the sender's choice: their rate samples are
                // application-limited (delivery-rate estimation §3.4), so a controller
                // that measures bandwidth does not read the wait as a slower path.
                for &c in &self.candidates {
                    let path = &mut self.paths[c];
                    path.rate.mark_app_limited(path.bytes_in_flight);
                }
                return None;
            }
        }
        // An end whose application never wrote (a pure receiver) has nothing a scheme could
        // send or code and no engine frame waiting: its paths are application-limited, as a
        // scheme asked would answer, without building a packet. (As for a packet built and
        // dropped, a pending ACK_FLOOR is given up.)
        let idle = self.send_buf.end() == 0
            && self.stream_end != StreamEnd::Pending
            && self.ctrl_pending.is_empty();
        let mut result = None;
        // By index: the loop calls `&mut self` methods; nothing in it changes the candidates.
        for k in 0..self.candidates.len() {
            let p = self.candidates[k];
            if idle {
                let path = &mut self.paths[p];
                path.floor_due = false;
                path.rate.mark_app_limited(path.bytes_in_flight);
                continue;
            }
            let pn = self.paths[p].next_pn;
            let hdr = self.header(p, pn);
            let Ok(mut w) = PacketWriter::with_trailer(buf, self.max_datagram, hdr, self.trailer)
            else {
                break;
            };
            if self.paths[p].floor_due {
                let floor = self.paths[p].sent_base;
                if w.push_ack_floor(p as u8, floor).is_ok() {
                    self.paths[p].floor_due = false;
                }
            }
            let with_end = self.stream_end == StreamEnd::Pending;
            if with_end {
                let fs = self.final_size.unwrap_or(0);
                if w.push(&Frame::StreamEnd { final_size: fs }).is_err() {
                    continue;
                }
            }
            // Reliable control frames ride first (a few per packet, leaving room for data);
            // they leave the queue only if the packet is sent.
            let mut ctrl = 0;
            // One-way delay of this path, wanted only while messages are due at the peer.
            let reach = if self.tx_msgs.has_at_peer() {
                one_way(&self.paths[p])
            } else {
                None
            };
            for c in self.ctrl_pending.iter().take(MAX_CONTROL_PER_PACKET) {
                if w.push(&c.frame()).is_err() {
                    break;
                }
                ctrl += 1;
            }
            let resent_before = self.resent.get(p).map_or(0, |r| r.packets);
            let tag = {
                let mut ctx = send_ctx!(self, now);
                ctx.engine_frames = with_end || ctrl > 0;
                ctx.reach = reach.map(|d| now + d);
                self.tx.poll_packet(&mut ctx, p, &mut w)
            };
            // With nothing else to carry them, announcements of messages due at the peer
            // before this path could deliver them wait for a faster path (the data they
            // describe goes there, `SendCtx::next_unsent`, and a receiver that learned of a
            // message only over this path would learn of it too late to count it on time),
            // and so do abandonments, if a faster path is active: they ride in its packets.
            let ctrl_waits = tag.is_none()
                && ctrl > 0
                && reach.is_some_and(|d| {
                    self.ctrl_pending.iter().take(ctrl).all(|c| match c {
                        Ctrl::Message(m) => self.tx_msgs.due_before(m.offset, now + d),
                        Ctrl::Abandon(_) => self.faster_path_than(p, d),
                    })
                });
            if tag.is_none() && !with_end && (ctrl == 0 || ctrl_waits) {
                // Window space and nothing to send: application-limited (delivery-rate
                // estimation §3.4).
                let path = &mut self.paths[p];
                path.rate.mark_app_limited(path.bytes_in_flight);
                continue;
            }
            let resent = self.resent.get(p).map_or(0, |r| r.packets) > resent_before;
            self.paths[p].stats.payload_bytes_sent += w.payload_len() as u64;
            let len = w.finish();
            let path = &mut self.paths[p];
            let pn = path.take_pn();
            let mut flags = 0;
            if with_end {
                flags |= SENT_STREAM_END;
                self.stream_end = StreamEnd::InFlight;
            }
            if ctrl > 0 {
                flags |= SENT_CONTROL;
                let sent: Vec<Ctrl> = self.ctrl_pending.drain(..ctrl).collect();
                self.ctrl_in_flight.insert((p, pn), sent);
            }
            if resent {
                flags |= SENT_RETRANSMISSION;
            }
            let idle_since = path.last_sent.filter(|_| path.packets_in_flight == 0);
            path.on_sent(pn, now, len, true, tag, flags);
            path.tlp_due = false;
            self.paths[p].refresh_view_after_send(&mut self.views[p]);
            self.validate_window(now, p, idle_since);
            self.pace(now, p, len);
            self.arm_tlp(now, p);
            self.cc.on_packet_sent(p, now, len as u64, &self.views);
            self.sched.on_sent(p);
            if self.head_since.is_none() {
                self.head_since = Some(now);
            }
            self.apply_actions(now);
            result = Some(Transmit { path: p, len });
            break;
        }
        if result.is_some() {
            self.persist = None;
            return result;
        }
        // A tail-loss probe with no data to carry: a PING, whose acknowledgement lets the
        // time threshold declare the tail lost. (No path's flag changed since the scan.)
        if !tlp_any {
            return None;
        }
        let probe = self.paths.iter().position(|p| p.tlp_due)?;
        self.paths[probe].tlp_due = false;
        let t = self.send_ping(now, probe, buf);
        if t.is_some() {
            self.persist = None;
        }
        t
    }

    /// Whether to send nothing now and wait for the pacing slot of path `h` (window room,
    /// its pacer holding it until a later slot) rather than send on `d`, the first
    /// candidate that may send now, with `unsent` stream bytes never sent (the queue it
    /// weighs is [`Connection::send_queue`]).
    ///
    /// A paced path is as busy as a Linux subflow whose queue drains at its pacing rate:
    /// Linux MPTCP (`mptcp_subflow_get_send`) gives data to the subflow with the least
    /// "linger time" (queued bytes over pacing rate), so a slow path gets data only when
    /// what the fast one holds would take longer to drain. Here the same idea is put as
    /// ECF's test (Lim et al., CoNEXT 2017, Algorithm 1: wait for the fastest path when it
    /// finishes the send queue and its round trip before one round trip of the slower
    /// path), with the pacing rate r_h in place of cwnd_f / RTT_f:
    /// `wait_h + unsent / r_h + SRTT_h < SRTT_d`. Without this rule every pacer slot the
    /// fast path waits for hands a packet to the slower path; with BBR (always paced) on
    /// 100 Mbit/s / 5 ms + 0.5 Mbit/s / 300 ms that halved the goodput of the fast path
    /// alone (docs/experiments/bbr.md, "Paced paths and the slower path"). For a bulk
    /// writer the queue is the receive window: a packet sent on `d` holds the window's
    /// head for about SRTT_d, and if `h` alone would fill the whole window sooner, `h`
    /// would stall behind it; otherwise `d` adds capacity and sends.
    ///
    /// Never waits when `d` has no RTT sample (it is being measured), when `h` is not
    /// faster than `d`, or under a redundant scheduler (every path carries every packet).
    fn waits_for_paced(&self, now: Instant, h: usize, d: Option<usize>, unsent: u64) -> bool {
        let Some(d) = d else {
            return false;
        };
        if self.sched.redundant() {
            return false;
        }
        let (Some(rtt_h), Some(rtt_d)) = (self.views[h].srtt, self.views[d].srtt) else {
            return false;
        };
        if rtt_h >= rtt_d {
            return false;
        }
        let Some(rate) = self.pacing_rate(h) else {
            return false;
        };
        let wait = self.paths[h].next_send.saturating_since(now);
        let drain = Duration::from_nanos(
            (u128::from(self.send_queue(unsent)) * 1_000_000_000 / u128::from(rate.max(1)))
                .min(u128::from(u64::MAX)) as u64,
        );
        wait.saturating_add(drain).saturating_add(rtt_h) < rtt_d
    }

    /// The send queue [`Connection::waits_for_paced`] weighs, given the `unsent` stream
    /// bytes never sent: stream bytes neither acknowledged by the peer nor in flight on a
    /// path (a coded scheme that tracks its own sending owes symbols for all of them), at
    /// least the unsent ones. A writer that waits for room has more than it could write (the
    /// connection keeps at most about a window unsent, `write_capacity`): its queue is what
    /// the peer's receive window lets it have outstanding.
    fn send_queue(&self, unsent: u64) -> u64 {
        let in_flight: u64 = self.paths.iter().map(|p| p.bytes_in_flight).sum();
        let owed = self
            .send_buf
            .end()
            .saturating_sub(self.peer_data_ack)
            .saturating_sub(in_flight)
            .max(unsent);
        if self.writer_waiting {
            owed.max(self.peer_max_data.saturating_sub(self.peer_data_ack))
        } else {
            owed
        }
    }

    /// The pacing rate of path `p` in bytes per second, if it is paced: the controller's
    /// ([`CongestionControl::pacing_rate`]), else with `pacing` on RFC 9002 §7.7's
    /// `N · cwnd / SRTT` — N = 2 in slow start, 1.25 after (Linux's
    /// `tcp_pacing_ss_ratio`/RFC 9002's suggestion) — once an RTT was measured.
    fn pacing_rate(&self, p: usize) -> Option<u64> {
        if let Some(r) = self.cc.pacing_rate(p, &self.views) {
            return (r > 0).then_some(r);
        }
        if !self.cfg.pacing {
            return None;
        }
        let path = &self.paths[p];
        let srtt = path.rtt.srtt()?.as_nanos().max(1);
        let n = if path.cwnd < path.ssthresh { 2.0 } else { 1.25 };
        let rate = n * path.cwnd as f64 * 1e9 / srtt as f64;
        Some((rate as u64).max(1))
    }

    /// After a data packet of `len` bytes on path `p`: the next may leave `len / rate` later
    /// (no credit is kept for time the path spent idle: at most one packet leaves at once).
    fn pace(&mut self, now: Instant, p: usize, len: usize) {
        let Some(rate) = self.pacing_rate(p) else {
            return;
        };
        let gap = Duration::from_nanos((len as u128 * 1_000_000_000 / u128::from(rate)) as u64);
        let path = &mut self.paths[p];
        path.next_send = path.next_send.max(now) + gap;
    }

    /// Arms path `p`'s tail-loss probe (RFC 8985 §7.2): with packets in flight, an RTT
    /// measured and no probe sent since the last acknowledgement, PTO = 2·SRTT, plus
    /// `max_ack_delay` when a single packet is in flight (the receiver may delay its ACK),
    /// and never later than the retransmission timer.
    fn arm_tlp(&mut self, now: Instant, p: usize) {
        if !self.cfg.tail_loss_probe {
            return;
        }
        let delay = self.cfg.max_ack_delay;
        let path = &mut self.paths[p];
        let Some(srtt) = path.rtt.srtt() else {
            return;
        };
        if path.packets_in_flight == 0 || path.tlp_sent {
            path.tlp_deadline = None;
            return;
        }
        let mut pto = srtt.saturating_mul(2);
        if path.packets_in_flight == 1 {
            pto = pto + delay;
        }
        let mut at = now + pto;
        if let Some(rto) = path.rto_deadline {
            at = at.min(rto);
        }
        path.tlp_deadline = Some(at);
    }

    fn best_path(&self) -> Option<usize> {
        let any_active = self.any_active();
        self.paths
            .iter()
            .filter(|p| match p.state {
                PathState::Active => true,
                PathState::Closed => false,
                _ => !any_active,
            })
            .min_by_key(|p| (p.rtt.srtt().unwrap_or(Duration::MAX), p.id))
            .map(|p| p.id)
    }

    /// With data outstanding and nothing in flight on any path (flow control closed, or a
    /// window update lost), probe the peer after an RTO (the persist timer of RFC 9293).
    /// `idle`: no path has packets in flight.
    fn arm_persist(&mut self, now: Instant, idle: bool) {
        let pending = self.peer_data_ack < self.send_buf.end()
            || self.stream_end == StreamEnd::Pending
            || !self.ctrl_pending.is_empty();
        if !(idle && pending) {
            self.persist = None;
            return;
        }
        if self.persist.is_none() {
            if let Some(p) = self.best_path() {
                let rto = self.paths[p].rtt.base_rto();
                self.persist = Some(now + rto.saturating_mul(1 << self.persist_backoff));
            }
        }
    }

    fn header(&self, p: usize, pn: u64) -> Header {
        Header {
            conn_id: self.cfg.conn_id,
            path: p as u8,
            pn,
        }
    }
}

/// One-way delay estimate of a path, once it has an RTT sample: smoothed RTT − min RTT / 2
/// (propagation taken as symmetric, queueing as on the data's direction), or with the peer's
/// ACK timestamps min RTT / 2 plus the forward queueing they measure, if that is less.
fn one_way(p: &Path) -> Option<Duration> {
    let (srtt, min) = (p.rtt.srtt()?, p.rtt.min_rtt()?);
    let half = Duration::from_nanos(min.as_nanos() / 2);
    let d = srtt.saturating_sub(half);
    // Forward queueing can be no more than the round trip's; capping there keeps a forged
    // or drifting timestamp from ever giving a frame up earlier than without.
    Some(match p.forward.queueing() {
        Some(q) => d.min(half.saturating_add(q)),
        None => d,
    })
}

/// What a message with a deadline at the peer needs to arrive ([`MessageOptions::at_peer`]):
/// the one-way delay of the best path that carries new data (smoothed RTT − min RTT / 2:
/// propagation taken as symmetric, queueing as on the data's direction; with the peer's ACK
/// timestamps, [`ConnectionConfig::ack_timestamps`], min RTT / 2 plus the forward queueing
/// they measure, if that is less, so queueing in the ACK direction no longer counts) and
/// the sending rate (Σ over those paths of the controller's pacing rate where it sets one,
/// as BBR does, else congestion window / smoothed RTT); zero before any RTT sample.
///
/// [`MessageOptions::at_peer`]: crate::message::MessageOptions::at_peer
fn lead_of<'a>(
    paths: &'a [Path],
    cc: &dyn CongestionControl,
    views: &[PathView],
    sent: &'a RangeSet,
    ack: u64,
) -> Lead<'a> {
    let mut owd: Option<Duration> = None;
    let mut rate: u128 = 0;
    for (i, p) in paths.iter().enumerate() {
        if p.state != PathState::Active {
            continue;
        }
        let (Some(srtt), Some(d)) = (p.rtt.srtt(), one_way(p)) else {
            continue;
        };
        owd = Some(owd.map_or(d, |o| o.min(d)));
        rate += match cc.pacing_rate(i, views) {
            Some(r) if r > 0 => u128::from(r),
            _ => u128::from(p.cwnd) * 1_000_000_000 / u128::from(srtt.as_nanos().max(1)),
        };
    }
    Lead {
        owd: owd.unwrap_or(Duration::ZERO),
        rate: u64::try_from(rate).unwrap_or(u64::MAX),
        sent,
        ack,
    }
}
