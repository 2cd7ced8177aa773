//! Recovery and coding schemes: what is sent, and how the receiver rebuilds the stream.
//!
//! A scheme has a sending half ([`SchemeSender`]) and a receiving half ([`SchemeReceiver`]).
//! The engine owns paths, windows, timers, the send buffer and the receive buffer; the scheme
//! decides the contents of each packet a path may send, learns which of its packets were
//! acknowledged or lost (by path and packet number, [`SentInfo`]), and on the receiving side
//! turns frames into stream bytes. Both halves may keep timers ([`SchemeSender::poll_timeout`],
//! [`SchemeReceiver::poll_timeout`]), driven by the connection's `poll_timeout` /
//! `handle_timeout`. This is enough for every scheme of the design table:
//! - ARQ (`tcp`, `mptcp`, `cmt-sctp`): DATA frames, re-queued on loss on a path the scheme
//!   chooses; reinjection and penalisation through [`Action`]s.
//! - Coded (`fmtcp`, `hmtp`, `nc-mptcp`): SYMBOL frames built from send-buffer blocks, decoder
//!   feedback in FEEDBACK (or SCHEME kind ≥ 0x80) frames written by the receiver into every
//!   ACK packet ([`SchemeReceiver::write_feedback`]) and read by the sender
//!   ([`SchemeSender::on_feedback`]); a receiver that needs its feedback to travel now asks
//!   for an immediate ACK ([`RecvCtx::request_ack`]); the receiver inserts decoded blocks into
//!   the receive buffer at their stream offsets.
//! - Per-path FEC (`dfec`, `tcp-ir`): SCHEME frames carry parity naming the packets it covers
//!   (the scheme sees the number of the packet it fills, [`PacketWriter::header`]); a packet
//!   recovered at the receiver is reported with [`RecvCtx::mark_recovered`] so the path
//!   acknowledges it (no congestion signal; the engine checks the number is one the peer could
//!   have sent), and [`Action::SetLossThreshold`] sets the duplicate-ACK threshold to the FEC
//!   block size; a timer sends fixed-rate FEC.
//!
//! Counters that only one scheme has are its own ([`SchemeSender::counters`],
//! [`SchemeReceiver::counters`]), reported under the scheme's name; what every scheme shares
//! (retransmitted bytes per path, rejected frames, penalisations) the engine counts.

mod arq;
pub mod cmt_sctp;
pub mod dfec;
pub mod fmtcp;
pub mod hmtp;
pub mod ncmptcp;

pub use arq::{ArqConfig, ArqReceiver, ArqSender, RtxPolicy, TcpConfig};
pub use dfec::{DfecConfig, TcpIrConfig};
pub use fmtcp::{CodingStats, FmtcpConfig};
pub use ncmptcp::NcMptcpConfig;

use crate::buffer::{RecvBuffer, SendBuffer};
use crate::config::ConnectionConfig;
use crate::message::TxMessages;
use crate::path::{PathState, PathView};
use crate::ranges::RangeSet;
use crate::registry::{Choice, Entry, Factory, Family};
use crate::time::Instant;
use crate::wire::{Frame, PacketWriter};
use std::collections::VecDeque;
use std::ops::Range;

/// What a scheme remembers about one packet it filled; handed back on ack or loss. The
/// meaning of the two words is the scheme's (e.g. ARQ: stream offset and length).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PacketTag {
    /// First word.
    pub a: u64,
    /// Second word.
    pub b: u64,
}

/// A packet a scheme filled, as handed back when it is acknowledged or lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SentInfo {
    /// The path it was sent on.
    pub path: usize,
    /// Its packet number on that path.
    pub pn: u64,
    /// The scheme's tag.
    pub tag: PacketTag,
    /// When it was sent.
    pub time_sent: Instant,
    /// Datagram size in bytes.
    pub size: u32,
}

/// How a loss was detected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LossKind {
    /// `loss_threshold` later packets on the path were acknowledged.
    Threshold,
    /// The path's retransmission timer expired.
    Timeout,
    /// The scheme declared it lost ([`Action::DeclareLost`]).
    Declared,
}

/// Requests from a scheme to the engine, applied after the call returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Action {
    /// Reduce the path's window as a congestion event would (MPTCP penalisation, Raiciu et
    /// al. NSDI 2012 §4.2), through the path's controller and the one-reduction-per-window
    /// recovery rule.
    Penalize {
        /// The path to penalise.
        path: usize,
    },
    /// Change the path's packet-threshold loss detection.
    SetLossThreshold {
        /// The path.
        path: usize,
        /// Packets; at least 1.
        packets: u64,
    },
    /// The scheme knows that the packets numbered `from..to` on `path` that are still
    /// unacknowledged once the current acknowledgement is processed are lost (e.g. FEC: the
    /// parity that could have repaired them was acknowledged, so the receiver had its
    /// chance). Each is declared lost as a threshold loss would be (congestion signal,
    /// [`SchemeSender::on_lost`] with [`LossKind::Declared`]); numbers outside what the path
    /// has outstanding are ignored.
    DeclareLost {
        /// The path.
        path: usize,
        /// First packet number.
        from: u64,
        /// One past the last packet number.
        to: u64,
    },
}

/// Per-path retransmission counters the engine keeps for every scheme.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Resent {
    pub(crate) bytes: u64,
    pub(crate) packets: u64,
}

/// What the sending half may see and do during a call.
#[derive(Debug)]
#[non_exhaustive]
pub struct SendCtx<'a> {
    /// Current time.
    pub now: Instant,
    /// Every path.
    pub paths: &'a [PathView],
    /// Stream bytes from the peer's cumulative acknowledgement to the end of what was written.
    pub send_buf: &'a SendBuffer,
    /// The peer holds every stream byte below this offset.
    pub data_ack: u64,
    /// The peer's flow-control limit: no stream byte at or beyond it may be sent.
    pub max_data: u64,
    /// Largest stream payload per packet (the MSS of the configuration).
    pub segment_size: usize,
    /// The largest window the peer has offered (`max_data - data_ack` at its widest).
    pub(crate) peer_window_max: u64,
    /// Set once the application closed the stream: its total length.
    pub final_size: Option<u64>,
    /// Deterministic randomness (seeded per connection).
    pub rng: &'a mut rand_chacha::ChaCha8Rng,
    pub(crate) actions: &'a mut Vec<Action>,
    pub(crate) resent: &'a mut Vec<Resent>,
    pub(crate) block_clock: &'a mut BlockClock,
    pub(crate) first_sent: &'a mut RangeSet,
    pub(crate) engine_frames: bool,
    pub(crate) messages: &'a TxMessages,
    /// When bytes sent now on the path being filled reach the peer (its one-way delay
    /// estimate), if known: bytes of messages due at the peer before then are not offered
    /// by [`SendCtx::next_unsent`].
    pub(crate) reach: Option<Instant>,
    /// The scheduler asks for every packet on every path (`sched::Redundant`); schemes that
    /// replicate data honour it, others may ignore it.
    pub redundant: bool,
    /// The application's last write was cut short by the connection's room
    /// ([`crate::Connection::write_capacity`], or a message that did not fit): it holds more
    /// bytes and writes them as soon as room opens (a bulk writer always is; a writer of
    /// requests or frames that fit is not). A scheme that codes in blocks waits for them
    /// rather than sending the bytes written so far as a short block.
    pub writer_waiting: bool,
}

impl SendCtx<'_> {
    /// Asks the engine for `action` (applied when the call returns).
    pub fn request(&mut self, action: Action) {
        self.actions.push(action);
    }

    /// Counts `bytes` of stream data sent again on `path` (retransmission or reinjection);
    /// reported per path for every scheme.
    pub fn count_retransmission(&mut self, path: usize, bytes: u64) {
        if self.resent.len() <= path {
            self.resent.resize(path + 1, Resent::default());
        }
        self.resent[path].bytes += bytes;
        self.resent[path].packets += 1;
    }

    /// Records that stream bytes `[start, end)` (or symbols coding them) are being sent for
    /// the first time, for the block-delay metric. Call it when a packet first carries any
    /// part of that range; later calls for the same bytes change nothing.
    pub fn mark_sent(&mut self, start: u64, end: u64) {
        self.block_clock.mark(start, end, self.now);
        if end > start {
            self.first_sent
                .insert(start.max(self.data_ack).min(end)..end);
        }
    }

    /// The next range of written stream bytes below `limit` that was never sent
    /// ([`SendCtx::mark_sent`]) and is not abandoned, most urgent message first (see
    /// [`crate::message`]); for a plain byte stream, simply the bytes after those sent.
    pub fn next_unsent(&self, limit: u64) -> Option<Range<u64>> {
        let limit = limit.min(self.send_buf.end());
        self.messages
            .next_unsent(self.first_sent, self.data_ack, limit, self.reach)
    }

    /// True if new data cannot be sent because of the peer's receive window (not because
    /// the application wrote nothing more): every written byte below the window was sent
    /// and the written stream reaches the window's end. What ARQ's opportunistic
    /// reinjection waits for.
    pub fn window_limited(&self) -> bool {
        if self.send_buf.end() < self.max_data {
            return false;
        }
        // Bytes held back from this path for their deadline (`reach`) are still unsent: the
        // window is not what stops them, so they are asked for without it.
        let limit = self.max_data.min(self.send_buf.end());
        self.messages
            .next_unsent(self.first_sent, self.data_ack, limit, None)
            .is_none_or(|r| self.cut_remnant(&r, self.segment_size))
    }

    /// Sender-side silly-window avoidance's test ([`SendCtx::next_unsent_in_window`]).
    fn cut_remnant(&self, r: &Range<u64>, full: usize) -> bool {
        let len = r.end - r.start;
        let cut =
            r.end == self.max_data && (self.writer_waiting || self.send_buf.end() > self.max_data);
        let remnant = len < full as u64 && len < self.peer_window_max / 2;
        cut && remnant
    }

    /// The next range of new data worth sending now ([`SendCtx::next_unsent`] below the
    /// peer's window), or `None` if it is a remnant the window cut short. Sender-side
    /// silly-window avoidance (RFC 1122 §4.2.3.4, RFC 9293 §3.8.6.2.1): a range the window
    /// cut (the application has bytes beyond it, or is waiting to write them) goes out only if
    /// it fills a segment of `full` bytes or is at least half the largest window the peer
    /// has offered; otherwise it waits until the window opens further (the peer's ACKs, or
    /// the persist timer's probe when nothing is in flight). Data the window does not cut
    /// (the application wrote no more) goes out at once, as a pushed segment does in TCP.
    pub fn next_unsent_in_window(&self, full: usize) -> Option<Range<u64>> {
        let r = self.next_unsent(self.max_data)?;
        (!self.cut_remnant(&r, full)).then_some(r)
    }

    /// In [`SchemeSender::poll_packet`]: the engine already put reliable frames of its own
    /// (stream end, message announcements) into this packet. Such a packet must not be
    /// rebuilt and marked recovered by coding ([`RecvCtx::mark_recovered`] acknowledges the
    /// whole packet, and the receiver would never see those frames).
    pub fn packet_carries_engine_frames(&self) -> bool {
        self.engine_frames
    }

    /// True if some byte of `[start, end)` belongs to a pending message the application may
    /// abandon: the peer may skip it, and the cumulative acknowledgement (with it the send
    /// buffer's release) may pass those bytes before a block covering the range is done. A
    /// scheme that reads a block from the send buffer after opening it must copy such a
    /// block instead.
    pub fn may_abandon(&self, start: u64, end: u64) -> bool {
        self.messages.abandonable_in(start, end)
    }

    /// False if stream byte `offset` belongs to a message whose deadline at the peer comes
    /// before bytes sent now on the path being filled would arrive (its one-way delay
    /// estimate; module docs of [`crate::message`], "Deadlines at the peer"): a coded scheme
    /// leaves such a block to faster paths. True when nothing is known.
    pub fn in_time(&self, offset: u64) -> bool {
        self.reach
            .is_none_or(|r| !self.messages.due_before(offset, r))
    }

    /// True if stream byte `offset` belongs to an abandoned message: do not send it again.
    pub fn is_abandoned(&self, offset: u64) -> bool {
        !self.messages.abandoned.is_empty() && self.messages.abandoned.contains(offset)
    }

    /// Where a block of the stream that begins at `start` and would end at `end` ends
    /// instead so as not to mix an abandonable message's bytes with others: at the first
    /// start or end of such a message strictly inside, else `end`. Blocks cut so are never
    /// partly abandoned.
    pub fn abandonable_cut(&self, start: u64, end: u64) -> u64 {
        self.messages.abandonable_cut(start, end)
    }

    /// Messages abandoned so far on this connection: it changes exactly when bytes become
    /// abandoned, so a scheme that checked its open blocks against the abandoned ranges need
    /// not check them again before it does.
    pub fn abandoned_count(&self) -> u64 {
        self.messages.abandoned_count
    }

    /// True if every byte of `[start, end)` belongs to abandoned messages: the peer skips
    /// the whole range, so a scheme need send nothing more for it (a coding block over it
    /// included).
    pub fn is_abandoned_range(&self, start: u64, end: u64) -> bool {
        !self.messages.abandoned.is_empty() && self.messages.abandoned.contains_range(start..end)
    }

    /// True if some byte of `[start, end)` belongs to an abandoned message not yet below the
    /// peer's cumulative acknowledgement (the ranges are pruned after
    /// [`SchemeSender::on_data_ack`], so that call still sees the bytes it passes).
    pub fn touches_abandoned(&self, start: u64, end: u64) -> bool {
        let a = &self.messages.abandoned;
        start < end
            && !a.is_empty()
            && (a.contains(start) || a.next_start_after(start).is_some_and(|s| s < end))
    }

    /// The first byte at or after `offset` that is not in an abandoned message (`offset`
    /// itself if it is not): where a scheme that opens ranges in stream order goes on.
    pub fn skip_abandoned(&self, offset: u64) -> u64 {
        if self.messages.abandoned.is_empty() {
            return offset;
        }
        self.messages
            .abandoned
            .range_containing(offset)
            .map_or(offset, |r| r.end)
    }
}

/// Per-block times for the delay metrics: index = stream offset / block size. A driver that
/// has consumed the times below some block drops them ([`BlockClock::forget_before`]), so the
/// clock holds only the blocks in flight, however many bytes the connection moves.
#[derive(Debug, Clone, Default)]
pub struct BlockClock {
    block: u64,
    /// Index of `times[0]`.
    base: usize,
    times: VecDeque<Option<Instant>>,
    /// Byte range of a block known marked (or forgotten): marks inside it change nothing.
    marked: (u64, u64),
}

impl BlockClock {
    /// Blocks of `block` bytes.
    pub fn new(block: usize) -> Self {
        BlockClock {
            block: block.max(1) as u64,
            base: 0,
            times: VecDeque::new(),
            marked: (0, 0),
        }
    }
    /// Sets the time of every block intersecting `[start, end)` that has none yet (blocks
    /// already forgotten are left alone).
    #[inline]
    pub fn mark(&mut self, start: u64, end: u64, now: Instant) {
        // Common case: inside the block the last mark found or left marked (packets are much
        // smaller than blocks; a block stays marked until forgotten, and marks below the
        // forgotten ones change nothing either). Told apart inline, the rest out of line.
        if end <= start || (start >= self.marked.0 && end <= self.marked.1) {
            return;
        }
        self.mark_outside(start, end, now);
    }

    /// [`Self::mark`] of a range not inside the block known marked.
    #[inline(never)]
    fn mark_outside(&mut self, start: u64, end: u64, now: Instant) {
        let first = ((start / self.block) as usize).max(self.base);
        let last = ((end - 1) / self.block) as usize;
        if last < first {
            return;
        }
        let lo = last as u64 * self.block;
        self.marked = (lo, lo.saturating_add(self.block));
        if first == last
            && self
                .times
                .get(first - self.base)
                .is_some_and(|t| t.is_some())
        {
            return;
        }
        if self.base + self.times.len() <= last {
            self.times.resize(last + 1 - self.base, None);
        }
        for t in self.times.range_mut(first - self.base..=last - self.base) {
            t.get_or_insert(now);
        }
    }
    /// Time of block `i`, if marked and not forgotten.
    pub fn get(&self, i: usize) -> Option<Instant> {
        i.checked_sub(self.base)
            .and_then(|k| self.times.get(k).copied().flatten())
    }
    /// Number of blocks with a slot (marked or not), forgotten ones included: the next block
    /// index.
    pub fn len(&self) -> usize {
        self.base + self.times.len()
    }
    /// True if no block was marked.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Block size in bytes.
    pub fn block_size(&self) -> u64 {
        self.block
    }
    /// Drops the times of the blocks below `i`.
    pub fn forget_before(&mut self, i: usize) {
        let n = i.saturating_sub(self.base).min(self.times.len());
        self.times.drain(..n);
        self.base = self.base.max(i);
    }
}

/// The sending half of a scheme.
pub trait SchemeSender: Send + std::fmt::Debug {
    /// Registry name.
    fn name(&self) -> &'static str;

    /// `path` has window space: write frames into `pkt` and return a tag, or `None` if there
    /// is nothing to send on this path now (the engine then offers another path). The
    /// packet's number is `pkt.header().pn`. Not called before the application wrote its
    /// first byte (there is nothing to send or code).
    fn poll_packet(
        &mut self,
        ctx: &mut SendCtx<'_>,
        path: usize,
        pkt: &mut PacketWriter<'_>,
    ) -> Option<PacketTag>;

    /// A packet this scheme filled was acknowledged. The packets one ACK acknowledges are
    /// reported through one `ctx`: a change to one of its public fields is still there at
    /// the next call for the same ACK (restore it, as dfec's `poll_packet` does for
    /// `segment_size`).
    fn on_acked(&mut self, ctx: &mut SendCtx<'_>, pkt: &SentInfo);

    /// A packet this scheme filled was declared lost.
    fn on_lost(&mut self, ctx: &mut SendCtx<'_>, pkt: &SentInfo, kind: LossKind);

    /// The peer's cumulative acknowledgement (`ctx.data_ack`) advanced. Bytes of abandoned
    /// messages it passed are still seen as abandoned during this call
    /// ([`SendCtx::touches_abandoned`]). Called before [`Self::on_acked`] for the packets
    /// of the same ACK, which, when the connection holds no messages, get the same `ctx`
    /// (a change to one of its public fields is still there for them).
    fn on_data_ack(&mut self, _ctx: &mut SendCtx<'_>) {}

    /// Packet `pn` of `path`, being newly acknowledged, was rebuilt by the receiver from
    /// redundancy ([`RecvCtx::mark_recovered`]) rather than delivered by the network, as far
    /// as the scheme can tell. With `ConnectionConfig::reorder_tolerance` such an
    /// acknowledgement is neither reordering (RFC 8985 §6.2 step 2) nor proof that a loss was
    /// spurious: a repair arrives after the packets sent behind the lost one by design. Asked
    /// for each newly acknowledged packet, those of one ACK from the highest number down, after
    /// [`SchemeSender::on_acked`] of the higher ones; false by default.
    fn acked_by_repair(&self, _path: usize, _pn: u64) -> bool {
        false
    }

    /// A FEEDBACK or SCHEME (kind ≥ 0x80) frame arrived from the peer's receiving half. An
    /// error drops the frame and the engine counts it.
    fn on_feedback(
        &mut self,
        _ctx: &mut SendCtx<'_>,
        _frame: &Frame<'_>,
    ) -> Result<(), SchemeError> {
        Err(SchemeError::Unexpected)
    }

    /// When [`SchemeSender::on_timeout`] must be called next, if ever.
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    /// The time given by `poll_timeout` has come.
    fn on_timeout(&mut self, _ctx: &mut SendCtx<'_>) {}

    /// `path` changed state: suspect or failed after retransmission timeouts (while another
    /// path is active the engine offers it nothing, so data owed on it should move), or
    /// active again.
    fn on_path_state(&mut self, _ctx: &mut SendCtx<'_>, _path: usize, _state: PathState) {}

    /// The peer's cumulative acknowledgement has not moved for about two retransmission
    /// timeouts while data is outstanding: make sure the bytes at `ctx.data_ack` (the head of
    /// the stream) are on their way again, on a path that works. Called again, backed off,
    /// while the stall lasts.
    fn on_head_stalled(&mut self, _ctx: &mut SendCtx<'_>) {}

    /// Bytes written but not yet sent that the scheme needs buffered to form its coding
    /// units (a whole chunk before it can encode). The connection lets a bulk writer hold at
    /// least this much unsent data (besides one aggregate window and
    /// [`crate::conn::UNSENT_FLOOR`]); 0 by default.
    fn write_ahead(&self) -> u64 {
        0
    }

    /// The scheme's own counters (reported under its name); `Null` if it has none.
    fn counters(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
}

/// Where a frame came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct FrameSource {
    /// Path the packet arrived on.
    pub path: usize,
    /// Packet number that carried it.
    pub pn: u64,
}

/// What the receiving half may see and do.
#[derive(Debug)]
#[non_exhaustive]
pub struct RecvCtx<'a> {
    /// Current time.
    pub now: Instant,
    /// The receive buffer: insert stream bytes at their offsets.
    pub recv_buf: &'a mut RecvBuffer,
    pub(crate) recovered: &'a mut Vec<(usize, u64)>,
    pub(crate) ack_requests: &'a mut Vec<usize>,
}

impl RecvCtx<'_> {
    /// Reports that packet `pn` of `path`, lost in the network, was recovered by coding: the
    /// path acknowledges it as if it had arrived (dFEC: no congestion signal for a repaired
    /// loss). The engine accepts only a number below the largest received on that path,
    /// within a bounded distance of it and not below what it still tracks; any other is
    /// counted (`ConnectionStats::invalid_recovery_marks`) and ignored.
    pub fn mark_recovered(&mut self, path: usize, pn: u64) {
        self.recovered.push((path, pn));
    }

    /// Asks for an acknowledgement on `path` now instead of after the delayed-ACK policy
    /// (feedback that must travel promptly: rank reports, chunk counts).
    pub fn request_ack(&mut self, path: usize) {
        self.ack_requests.push(path);
    }
}

/// The receiving half of a scheme.
pub trait SchemeReceiver: Send + std::fmt::Debug {
    /// A payload frame (DATA, SYMBOL, SCHEME kind < 0x80) arrived. An error drops the frame
    /// (the packet stays valid) and the engine counts it.
    fn on_frame(
        &mut self,
        ctx: &mut RecvCtx<'_>,
        from: FrameSource,
        frame: &Frame<'_>,
    ) -> Result<(), SchemeError>;

    /// Append feedback to an ACK packet being built for `path` (frames that do not fit are
    /// simply left out). Feedback frames are not ack-eliciting: every ACK carries fresh ones.
    fn write_feedback(&mut self, _now: Instant, _path: usize, _pkt: &mut PacketWriter<'_>) {}

    /// When [`SchemeReceiver::on_timeout`] must be called next, if ever.
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    /// The time given by `poll_timeout` has come.
    fn on_timeout(&mut self, _ctx: &mut RecvCtx<'_>) {}

    /// The scheme's own counters (reported under its name); `Null` if it has none.
    fn counters(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
}

/// Why a scheme refused a frame. The frame is dropped and counted; the connection goes on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemeError {
    /// This scheme does not use this kind of frame.
    #[error("frame kind not used by this scheme")]
    Unexpected,
    /// The frame refers to something that does not exist (unknown or finished block, id out
    /// of range).
    #[error("frame refers to unknown state: {0}")]
    Unknown(&'static str),
    /// The frame is well-formed on the wire but its contents are inconsistent.
    #[error("invalid frame contents: {0}")]
    Invalid(&'static str),
}

/// How a scheme is configured and built: the object a [`SchemeConfig`] holds.
pub trait SchemeFactory: Factory {
    /// Checks the scheme's options against the rest of the connection's configuration.
    fn validate(&self, _cfg: &ConnectionConfig) -> Result<(), String> {
        Ok(())
    }

    /// Most paths the scheme can use (`None`: any number).
    fn max_paths(&self) -> Option<usize> {
        None
    }

    /// Checks options that name paths against the connection's `paths` paths (called only
    /// when the number is known: a receiver that learns its paths from packets passes none).
    fn validate_paths(&self, _paths: usize) -> Result<(), String> {
        Ok(())
    }

    /// Builds both halves for a connection (called only with a configuration that passed
    /// [`SchemeFactory::validate`]).
    fn build(&self, cfg: &ConnectionConfig) -> (Box<dyn SchemeSender>, Box<dyn SchemeReceiver>);
}

/// The scheme family (see [`crate::registry`]).
#[derive(Debug)]
pub struct Schemes;

impl Family for Schemes {
    type Factory = dyn SchemeFactory;
    const KIND: &'static str = "scheme";
    fn entries() -> &'static [Entry<dyn SchemeFactory>] {
        SCHEMES
    }
    fn default_name() -> &'static str {
        "mptcp"
    }
}

/// A chosen scheme with its options (`scheme = "..."` in scenario files).
pub type SchemeConfig = Choice<Schemes>;

/// Every scheme selectable by name: one line per scheme.
pub static SCHEMES: &[Entry<dyn SchemeFactory>] = &[
    arq::TCP,
    arq::MPTCP,
    fmtcp::ENTRY,
    ncmptcp::ENTRY,
    dfec::DFEC,
    dfec::TCP_IR,
    cmt_sctp::ENTRY,
    hmtp::ENTRY,
];

#[cfg(test)]
mod tests {
    use super::BlockClock;
    use crate::time::Instant;

    #[test]
    fn block_clock_keeps_first_marks_and_forgets_on_request() {
        let t = Instant::from_nanos;
        let mut c = BlockClock::new(100);
        c.mark(50, 250, t(1)); // blocks 0..=2
        c.mark(0, 400, t(2)); // block 3 new, 0..=2 keep t(1)
        assert_eq!((c.len(), c.get(0), c.get(3)), (4, Some(t(1)), Some(t(2))));
        c.forget_before(2);
        assert_eq!((c.len(), c.get(1), c.get(2)), (4, None, Some(t(1))));
        // Marks of forgotten blocks change nothing; later blocks still grow the clock.
        c.mark(0, 150, t(3));
        assert_eq!((c.len(), c.get(0), c.get(1)), (4, None, None));
        c.mark(350, 650, t(4));
        assert_eq!((c.len(), c.get(3), c.get(6)), (7, Some(t(2)), Some(t(4))));
        // Forgetting past the end leaves an empty clock that starts there.
        c.forget_before(9);
        assert_eq!((c.len(), c.get(7)), (9, None));
        c.mark(900, 901, t(5));
        assert_eq!((c.len(), c.get(9)), (10, Some(t(5))));
    }

    #[test]
    fn block_clock_marks_of_packets_inside_blocks() {
        let t = Instant::from_nanos;
        let mut c = BlockClock::new(100);
        // Packet-sized marks: the first in each block sets its time, the others keep it.
        for (k, start) in [0u64, 30, 60, 90, 120, 150, 40, 180, 210]
            .into_iter()
            .enumerate()
        {
            c.mark(start, start + 30, t(k as u64 + 1));
        }
        assert_eq!(
            (c.len(), c.get(0), c.get(1), c.get(2)),
            (3, Some(t(1)), Some(t(4)), Some(t(8)))
        );
        // A block marked, then forgotten: marks inside it change nothing.
        c.mark(260, 270, t(10));
        c.forget_before(3);
        c.mark(250, 280, t(11));
        assert_eq!((c.len(), c.get(2)), (3, None));
        c.mark(290, 310, t(12));
        assert_eq!((c.len(), c.get(2), c.get(3)), (4, None, Some(t(12))));
    }
}
