//! Messages on the stream: a video frame, a web object — a range of stream bytes with an
//! identity, an optional deadline and a priority, multiplexed on one connection.
//!
//! The byte stream stays the default and costs nothing extra: bytes written with
//! [`Connection::write`](crate::Connection::write) belong to no message. A message is written
//! whole ([`Connection::write_message`](crate::Connection::write_message)); the sender tells
//! the receiver its boundaries in a MESSAGE frame (re-sent until acknowledged), and the
//! receiver reports it as soon as all its bytes are held, even before earlier bytes arrived
//! ([`Event::MessageReceived`](crate::Event::MessageReceived)).
//!
//! **Deadlines and partial reliability.** A message written with `abandon_late` whose
//! deadline passes before the peer acknowledged all of it is abandoned: the scheme is told not
//! to send (or re-send) its bytes, an ABANDON frame tells the receiver, which marks the range
//! as received without data, so the cumulative acknowledgement and the send buffer move past
//! it; reading skips it, and both ends report
//! [`Event::MessageAbandoned`](crate::Event::MessageAbandoned). A receiver honours an ABANDON
//! only for a message announced as abandonable with the same boundaries, so a plain byte
//! stream can never lose bytes this way.
//!
//! **Deadlines at the peer.** A message marked [`MessageOptions::at_peer`] has a deadline by
//! which the *peer* must hold it (a video frame's playout time). It is abandoned as soon as
//! it can no longer arrive whole in time: when `now + d + u / R ≥ deadline`, where `d` is the
//! one-way delay (per path `smoothed RTT − min RTT / 2`: the propagation delay taken as
//! symmetric, the queueing as on the data's direction; with the peer's ACK timestamps,
//! [`crate::ConnectionConfig::ack_timestamps`], `min RTT / 2` plus the data direction's own
//! queueing measured from them, if that is less; the least over the paths that carry
//! new data), `u` the message's bytes never sent yet, and `R` the connection's sending rate
//! (Σ over those paths of the controller's pacing rate where it sets one, as BBR does, else
//! congestion window / smoothed RTT). The estimate is optimistic: bytes
//! of earlier messages still to send, and retransmissions, are not counted. (One exception:
//! in a first slow start cwnd / smoothed RTT lags the window's growth, and a large first
//! message may be given up that slow start would have delivered in time.) Bytes already in
//! flight may still complete the message in time (the receiver then reports it received and
//! ignores the ABANDON). Before the first RTT sample the lead is zero. A sender that fell
//! behind (a video above the path's capacity) thus spends the path on messages that can
//! still arrive, instead of sending every message a little too late.
//!
//! Over several paths the same estimate also picks the path: a message's bytes are not sent
//! for the first time on a path whose one-way delay would bring them after the deadline
//! ([`SendCtx::next_unsent`](crate::scheme::SendCtx::next_unsent) leaves them for a faster
//! path; coded schemes ask [`SendCtx::in_time`](crate::scheme::SendCtx::in_time) for their
//! blocks). A packet with no data is not sent either when all it would carry is MESSAGE
//! frames of messages the path cannot deliver by their deadline, or ABANDON frames while a
//! faster path is active: they ride in another path's next packet, where the frames they
//! describe go. (A frame announced only over a satellite path is complete at the receiver
//! long before it is known there.)
//!
//! **Priority.** Lower values are more urgent ([`DEFAULT_PRIORITY`] for bytes outside
//! messages). Schemes that send new data in ranges ask the engine for the next unsent range
//! ([`SendCtx::next_unsent`](crate::scheme::SendCtx::next_unsent)), which serves the most
//! urgent message first and, within a priority, stream order.

use crate::ranges::RangeSet;
use crate::time::{Duration, Instant};
use crate::wire::MessageFrame;
use std::collections::{BTreeMap, VecDeque};
use std::ops::Range;

/// A message's number: messages are numbered in the order they were written, from 0, and
/// both ends use the same numbers.
pub type MessageId = u64;

/// Priority of bytes outside messages and of messages that do not set one.
pub const DEFAULT_PRIORITY: u8 = 128;

/// Most messages a receiver tracks at once (announced, not yet complete); MESSAGE frames
/// beyond are refused and counted.
pub const MAX_PENDING_MESSAGES: usize = 16_384;

/// How to send a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct MessageOptions {
    /// When the message stops being useful (sender's clock).
    pub deadline: Option<Instant>,
    /// Lower is more urgent.
    pub priority: u8,
    /// Give the message up when the deadline passes before the peer acknowledged all of it.
    pub abandon_late: bool,
    /// The deadline is when the peer must hold the message: with `abandon_late` it is given
    /// up as soon as it can no longer arrive whole in time (module docs, "Deadlines at the
    /// peer"), not when the deadline passes at the sender.
    pub at_peer: bool,
}

impl Default for MessageOptions {
    fn default() -> Self {
        MessageOptions {
            deadline: None,
            priority: DEFAULT_PRIORITY,
            abandon_late: false,
            at_peer: false,
        }
    }
}

impl MessageOptions {
    /// A deadline; with `abandon` the message is given up once it passes.
    pub fn with_deadline(mut self, deadline: Instant, abandon: bool) -> Self {
        self.deadline = Some(deadline);
        self.abandon_late = abandon;
        self
    }

    /// The deadline is when the peer must hold the message (see [`MessageOptions::at_peer`]).
    pub fn deadline_at_peer(mut self, at_peer: bool) -> Self {
        self.at_peer = at_peer;
        self
    }

    /// A priority (lower is more urgent).
    pub fn with_priority(mut self, priority: u8) -> Self {
        self.priority = priority;
        self
    }
}

/// Why a message could not be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// The stream was closed.
    #[error("the stream is closed")]
    Closed,
    /// The message does not fit the send buffer now (messages are written whole).
    #[error("message of {needed} bytes does not fit: {available} bytes free")]
    WouldBlock {
        /// The message's length.
        needed: usize,
        /// Free send-buffer space now.
        available: usize,
    },
    /// The connection takes its bytes from a stream source
    /// ([`crate::Connection::set_stream_source`]): write with
    /// [`crate::Connection::write_message_from_source`].
    #[error("the stream's bytes come from its stream source: write from the source")]
    FromSource,
    /// [`crate::Connection::write_message_from_source`] without a stream source.
    #[error("no stream source was set")]
    NoSource,
}

#[derive(Debug, Clone, Copy)]
struct TxMsg {
    id: MessageId,
    start: u64,
    end: u64,
    opts: MessageOptions,
    abandoned: bool,
}

impl TxMsg {
    /// It has a deadline at the peer.
    fn due_at_peer(&self) -> bool {
        self.opts.at_peer && self.opts.deadline.is_some()
    }

    /// Its deadline at the peer comes before `reach`.
    fn too_late_for(&self, reach: Instant) -> bool {
        self.opts.at_peer && self.opts.deadline.is_some_and(|d| d < reach)
    }
}

/// The sender's messages not yet acknowledged.
#[derive(Debug, Default)]
pub(crate) struct TxMessages {
    msgs: VecDeque<TxMsg>,
    next_id: MessageId,
    /// Ranges of abandoned messages not yet below the cumulative acknowledgement.
    pub(crate) abandoned: RangeSet,
    /// Messages pending with a priority other than the default.
    prioritized: usize,
    /// Messages pending with a deadline at the peer.
    at_peer: usize,
    /// Messages abandoned so far: a scheme that checked its state against the abandoned
    /// ranges need not check again until this changes.
    pub(crate) abandoned_count: u64,
}

impl TxMessages {
    /// Records a message written at `[start, end)`; returns its id and MESSAGE frame.
    pub(crate) fn add(&mut self, start: u64, end: u64, opts: MessageOptions) -> MessageFrame {
        let id = self.next_id;
        self.next_id += 1;
        if opts.priority != DEFAULT_PRIORITY {
            self.prioritized += 1;
        }
        let m = TxMsg {
            id,
            start,
            end,
            opts,
            abandoned: false,
        };
        if m.due_at_peer() {
            self.at_peer += 1;
        }
        self.msgs.push_back(m);
        MessageFrame {
            id,
            offset: start,
            len: end - start,
            abandonable: opts.abandon_late,
        }
    }

    /// The peer holds everything below `ack`: forget those messages. (The check for none,
    /// a stream without messages, is inlined.)
    #[inline]
    pub(crate) fn on_data_ack(&mut self, ack: u64) {
        if self.holds_any() {
            self.forget_acked(ack);
        }
    }

    /// Whether any message or abandoned range is held: without, [`Self::on_data_ack`]
    /// changes nothing.
    #[inline]
    pub(crate) fn holds_any(&self) -> bool {
        !self.msgs.is_empty() || !self.abandoned.is_empty()
    }

    fn forget_acked(&mut self, ack: u64) {
        while self.msgs.front().is_some_and(|m| m.end <= ack) {
            if let Some(m) = self.msgs.pop_front() {
                if m.opts.priority != DEFAULT_PRIORITY {
                    self.prioritized -= 1;
                }
                if m.due_at_peer() {
                    self.at_peer -= 1;
                }
            }
        }
        self.abandoned.remove_below(ack);
    }

    /// True if a pending message that may be abandoned (`abandon_late`) overlaps
    /// `[start, end)`: the peer may skip its bytes, so the cumulative acknowledgement can
    /// pass them while other bytes of the range are still owed.
    pub(crate) fn abandonable_in(&self, start: u64, end: u64) -> bool {
        // Messages are kept in stream order and do not overlap: skip those ending at or
        // before `start`, then look only at the ones that begin before `end`.
        let first = self.msgs.partition_point(|m| m.end <= start);
        self.msgs
            .range(first..)
            .take_while(|m| m.start < end)
            .any(|m| m.opts.abandon_late)
    }

    /// The first boundary (start or end) of a pending abandonable message strictly inside
    /// `(start, end)`, else `end`: where a scheme coding the stream in blocks cuts one so
    /// that no block holds bytes of an abandonable message and bytes outside it.
    pub(crate) fn abandonable_cut(&self, start: u64, end: u64) -> u64 {
        let first = self.msgs.partition_point(|m| m.end <= start);
        for m in self.msgs.range(first..) {
            if m.start >= end {
                break;
            }
            if !m.opts.abandon_late {
                continue;
            }
            if m.start > start {
                return m.start;
            }
            if m.end < end {
                return m.end;
            }
        }
        end
    }

    /// Some pending message has a deadline at the peer.
    pub(crate) fn has_at_peer(&self) -> bool {
        self.at_peer > 0
    }

    /// Stream byte `offset` belongs to a pending message whose deadline at the peer comes
    /// before `reach`.
    pub(crate) fn due_before(&self, offset: u64, reach: Instant) -> bool {
        if self.at_peer == 0 {
            return false;
        }
        let i = self.msgs.partition_point(|m| m.end <= offset);
        self.msgs
            .get(i)
            .is_some_and(|m| m.start <= offset && m.too_late_for(reach))
    }

    /// No message pending (written and not yet below the cumulative acknowledgement).
    pub(crate) fn is_empty(&self) -> bool {
        self.msgs.is_empty()
    }

    /// When the next message is due to be abandoned: its deadline, or for a deadline at the
    /// peer, its deadline less `lead`'s estimate of the time it needs to arrive.
    pub(crate) fn next_deadline(&self, lead: &Lead<'_>) -> Option<Instant> {
        if self.msgs.is_empty() {
            return None;
        }
        self.msgs
            .iter()
            .filter(|m| m.opts.abandon_late && !m.abandoned)
            .filter_map(|m| m.opts.deadline.map(|d| lead.due_at(m, d)))
            .min()
    }

    /// Abandons every abandonable message due at `now` ([`TxMessages::next_deadline`]) that
    /// the peer has not acknowledged whole (`lead.ack`): their ABANDON frames.
    pub(crate) fn expire(&mut self, now: Instant, lead: &Lead<'_>) -> Vec<MessageFrame> {
        let mut out = Vec::new();
        let ack = lead.ack;
        for m in &mut self.msgs {
            let due = m.opts.abandon_late
                && !m.abandoned
                && m.end > ack
                && m.opts.deadline.is_some_and(|d| lead.due_at(m, d) <= now);
            if due {
                m.abandoned = true;
                self.abandoned_count += 1;
                self.abandoned.insert(m.start.max(ack)..m.end);
                out.push(MessageFrame {
                    id: m.id,
                    offset: m.start,
                    len: m.end - m.start,
                    abandonable: true,
                });
            }
        }
        out
    }

    /// The next range of stream bytes in `[from, limit)` never sent (`first_sent`) and not
    /// abandoned, most urgent first. With `reach` (when bytes sent now on the path asked for
    /// would reach the peer), bytes of messages whose deadline at the peer comes before it
    /// are left for a faster path (module docs, "Deadlines at the peer").
    #[inline]
    pub(crate) fn next_unsent(
        &self,
        first_sent: &RangeSet,
        from: u64,
        limit: u64,
        reach: Option<Instant>,
    ) -> Option<Range<u64>> {
        // A plain stream (no message with a priority or a deadline at the peer, nothing
        // abandoned, the bytes sent so far in one range), told apart inline.
        if self.prioritized == 0
            && (reach.is_none() || self.at_peer == 0)
            && self.abandoned.is_empty()
            && first_sent.len() <= 1
        {
            return plain_unsent(first_sent, from, limit);
        }
        self.next_unsent_any(first_sent, from, limit, reach)
    }

    /// [`Self::next_unsent`] in every case but the plain stream's.
    #[inline(never)]
    fn next_unsent_any(
        &self,
        first_sent: &RangeSet,
        from: u64,
        limit: u64,
        reach: Option<Instant>,
    ) -> Option<Range<u64>> {
        let reach = reach.filter(|_| self.at_peer > 0);
        if self.prioritized == 0 && reach.is_none() {
            return unsent_in(first_sent, &self.abandoned, from, limit);
        }
        // Segments: every message at its priority, the bytes between messages at the default.
        let mut segs: Vec<(u8, u64, u64)> = Vec::with_capacity(2 * self.msgs.len() + 1);
        let mut pos = from;
        for m in &self.msgs {
            if m.end <= from {
                continue;
            }
            if m.start > pos {
                segs.push((DEFAULT_PRIORITY, pos, m.start));
            }
            if !m.abandoned && !reach.is_some_and(|r| m.too_late_for(r)) {
                segs.push((m.opts.priority, m.start.max(from), m.end));
            }
            pos = pos.max(m.end);
        }
        segs.push((DEFAULT_PRIORITY, pos, u64::MAX));
        segs.sort_by_key(|&(p, s, _)| (p, s));
        segs.into_iter()
            .find_map(|(_, s, e)| unsent_in(first_sent, &self.abandoned, s.max(from), e.min(limit)))
    }
}

/// The unsent bytes of a plain stream in `[from, limit)`, the bytes sent at least once being
/// `first_sent`, at most one range: everything after them (or before them, if they start
/// above `from`).
#[inline(always)]
fn plain_unsent(first_sent: &RangeSet, from: u64, limit: u64) -> Option<Range<u64>> {
    let start = match first_sent.first() {
        Some(r) if r.start <= from => r.end.max(from),
        Some(r) if r.start < limit => return Some(from..r.start),
        _ => from,
    };
    (start < limit).then_some(start..limit)
}

/// What the sender knows of how long a message takes to reach the peer (module docs,
/// "Deadlines at the peer").
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lead<'a> {
    /// One-way delay estimate of the best path carrying new data (zero if unknown).
    pub owd: Duration,
    /// Sending rate, bytes per second (0 if unknown: then only `owd` counts).
    pub rate: u64,
    /// Stream bytes sent at least once, above `ack`.
    pub sent: &'a RangeSet,
    /// The peer's cumulative acknowledgement.
    pub ack: u64,
}

impl Lead<'_> {
    /// When message `m` with deadline `d` is abandoned: `d`, or for a deadline at the peer
    /// `d − owd − unsent / rate` (never before the clock's origin).
    fn due_at(&self, m: &TxMsg, d: Instant) -> Instant {
        if !m.opts.at_peer {
            return d;
        }
        let mut lead = self.owd.as_nanos();
        if self.rate > 0 {
            let from = m.start.max(self.ack);
            let unsent = m.end.saturating_sub(from) - self.sent.covered(from..m.end.max(from));
            let t = u128::from(unsent) * 1_000_000_000 / u128::from(self.rate);
            lead = lead.saturating_add(u64::try_from(t).unwrap_or(u64::MAX));
        }
        Instant::from_nanos(d.as_nanos().saturating_sub(lead))
    }
}

/// The first range in `[from, limit)` in neither `sent` nor `abandoned`.
fn unsent_in(sent: &RangeSet, abandoned: &RangeSet, from: u64, limit: u64) -> Option<Range<u64>> {
    let mut start = from;
    loop {
        if start >= limit {
            return None;
        }
        if let Some(r) = sent.range_containing(start) {
            start = r.end;
        } else if let Some(r) = abandoned.range_containing(start) {
            start = r.end;
        } else {
            break;
        }
    }
    let mut end = limit;
    for next in [
        sent.next_start_after(start),
        abandoned.next_start_after(start),
    ]
    .into_iter()
    .flatten()
    {
        end = end.min(next);
    }
    Some(start..end)
}

/// What the receiver learnt from a MESSAGE or ABANDON frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RxOutcome {
    /// Nothing to report now.
    Nothing,
    /// The frame contradicts what was announced, or too many messages are pending: dropped.
    Refused,
    /// Skip this message's bytes and report it abandoned.
    Abandon(MessageFrame),
    /// Its bytes are all held already: report it received.
    Complete(MessageFrame),
}

/// The receiver's announced messages not yet reported.
#[derive(Debug, Default)]
pub(crate) struct RxMessages {
    /// Announced, not yet complete or abandoned: by offset (several may share an offset
    /// only if empty), with the id index beside.
    by_offset: BTreeMap<(u64, MessageId), MessageFrame>,
    by_id: BTreeMap<MessageId, u64>,
    /// ABANDON frames that arrived before their MESSAGE frame.
    early_abandons: BTreeMap<MessageId, MessageFrame>,
    /// Ids already reported (complete or abandoned).
    done: RangeSet,
}

impl RxMessages {
    /// A MESSAGE frame; `covered` tells if a range is already held.
    pub(crate) fn on_message(
        &mut self,
        m: MessageFrame,
        covered: impl Fn(u64, u64) -> bool,
    ) -> RxOutcome {
        if self.done.contains(m.id) {
            return RxOutcome::Nothing;
        }
        if let Some(&off) = self.by_id.get(&m.id) {
            return if self.by_offset.get(&(off, m.id)) == Some(&m) {
                RxOutcome::Nothing
            } else {
                RxOutcome::Refused
            };
        }
        if self.by_id.len() >= MAX_PENDING_MESSAGES {
            return RxOutcome::Refused;
        }
        if let Some(a) = self.early_abandons.remove(&m.id) {
            self.insert(m);
            return self.abandon(a);
        }
        if covered(m.offset, m.len) {
            self.done.insert(m.id..m.id + 1);
            return RxOutcome::Complete(m);
        }
        self.insert(m);
        RxOutcome::Nothing
    }

    fn insert(&mut self, m: MessageFrame) {
        self.by_id.insert(m.id, m.offset);
        self.by_offset.insert((m.offset, m.id), m);
    }

    fn remove(&mut self, id: MessageId) -> Option<MessageFrame> {
        let off = self.by_id.remove(&id)?;
        self.by_offset.remove(&(off, id))
    }

    /// An ABANDON frame.
    pub(crate) fn on_abandon(&mut self, a: MessageFrame) -> RxOutcome {
        if self.done.contains(a.id) {
            return RxOutcome::Nothing;
        }
        if !self.by_id.contains_key(&a.id) {
            if self.early_abandons.len() >= MAX_PENDING_MESSAGES {
                return RxOutcome::Refused;
            }
            self.early_abandons.insert(a.id, a);
            return RxOutcome::Nothing;
        }
        self.abandon(a)
    }

    fn abandon(&mut self, a: MessageFrame) -> RxOutcome {
        let Some(&off) = self.by_id.get(&a.id) else {
            return RxOutcome::Refused;
        };
        match self.by_offset.get(&(off, a.id)) {
            Some(m) if m.abandonable && m.offset == a.offset && m.len == a.len => {
                let m = *m;
                self.remove(a.id);
                self.done.insert(a.id..a.id + 1);
                RxOutcome::Abandon(m)
            }
            _ => RxOutcome::Refused,
        }
    }

    /// `r` is now wholly received (a merged range of the receive buffer): reports and
    /// forgets the pending messages inside it. Costs O(log n + messages reported).
    pub(crate) fn received(&mut self, r: Range<u64>, mut report: impl FnMut(MessageFrame)) {
        let inside: Vec<(u64, MessageId)> = self
            .by_offset
            .range((r.start, 0)..)
            .take_while(|(&(off, _), m)| off < r.end && off + m.len <= r.end)
            .map(|(&k, _)| k)
            .collect();
        for (_, id) in inside {
            if let Some(m) = self.remove(id) {
                self.done.insert(id..id + 1);
                report(m);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The plain stream's inline answer (`plain_unsent`, taken by `next_unsent` when no
        /// message has a priority or a deadline at the peer, nothing is abandoned and the
        /// bytes sent form at most one range) is the general scan's (`unsent_in`).
        #[test]
        fn the_plain_streams_unsent_bytes_are_the_general_scans(
            sent in proptest::option::of((0u64..64, 0u64..64)),
            from in 0u64..64,
            limit in 0u64..64,
        ) {
            let mut first_sent = RangeSet::new();
            if let Some((a, b)) = sent {
                first_sent.insert(a.min(b)..a.max(b));
            }
            prop_assert_eq!(
                plain_unsent(&first_sent, from, limit),
                unsent_in(&first_sent, &RangeSet::new(), from, limit)
            );
        }
    }

    /// A path that would bring a message's bytes after its deadline at the peer is not
    /// offered them (module docs, "Deadlines at the peer"); a faster path is, and so is any
    /// path without an estimate. Messages without a deadline at the peer are offered as
    /// always.
    #[test]
    fn a_path_too_slow_for_a_deadline_at_the_peer_is_not_offered_its_bytes() {
        let ms = |n: u64| Instant::from_nanos(n * 1_000_000);
        let mut m = TxMessages::default();
        let at_peer = |due| {
            MessageOptions::default()
                .with_deadline(due, true)
                .deadline_at_peer(true)
        };
        m.add(0, 1_000, at_peer(ms(200)));
        m.add(1_000, 2_000, at_peer(ms(400)));
        m.add(
            2_000,
            3_000,
            MessageOptions::default().with_deadline(ms(100), true),
        );
        let sent = RangeSet::new();
        // No estimate: the plain stream, all of it. A path that arrives by 150 ms: the first
        // message (with an estimate the bytes are taken message by message).
        assert_eq!(m.next_unsent(&sent, 0, 3_000, None), Some(0..3_000));
        assert_eq!(
            m.next_unsent(&sent, 0, 3_000, Some(ms(150))),
            Some(0..1_000)
        );
        // Arriving at 300 ms: the first is too late there, the second is not.
        assert_eq!(
            m.next_unsent(&sent, 0, 3_000, Some(ms(300))),
            Some(1_000..2_000)
        );
        // Arriving at 500 ms: only the message whose deadline is the sender's.
        assert_eq!(
            m.next_unsent(&sent, 0, 3_000, Some(ms(500))),
            Some(2_000..3_000)
        );
        assert!(m.due_before(999, ms(201)) && !m.due_before(999, ms(200)));
        assert!(m.due_before(1_000, ms(401)) && !m.due_before(1_000, ms(400)));
        assert!(!m.due_before(2_500, ms(10_000)), "a deadline at the sender");
        assert!(!m.due_before(5_000, ms(10_000)), "no message there");
        // Once the at-peer messages are acknowledged, nothing is held back.
        m.on_data_ack(2_000);
        assert!(!m.has_at_peer());
        assert_eq!(
            m.next_unsent(&sent, 2_000, 3_000, Some(ms(500))),
            Some(2_000..3_000)
        );
    }

    /// A deadline at the peer: the message is due once it cannot arrive whole in time,
    /// `deadline − owd − unsent / rate` (module docs, "Deadlines at the peer"); a deadline
    /// at the sender is due when it passes, whatever the lead.
    #[test]
    fn a_deadline_at_the_peer_is_due_when_the_message_can_no_longer_arrive() {
        let ms = |n: u64| Instant::from_nanos(n * 1_000_000);
        let mut m = TxMessages::default();
        let due = ms(1000);
        // 0..100_000 at the peer, 100_000..200_000 at the sender.
        m.add(
            0,
            100_000,
            MessageOptions::default()
                .with_deadline(due, true)
                .deadline_at_peer(true),
        );
        m.add(
            100_000,
            200_000,
            MessageOptions::default().with_deadline(due, true),
        );
        let mut sent = RangeSet::new();
        // 50 ms one way, 1 MB/s: 100 kB unsent take 100 ms.
        fn lead(sent: &RangeSet) -> Lead<'_> {
            Lead {
                owd: Duration::from_millis(50),
                rate: 1_000_000,
                sent,
                ack: 0,
            }
        }
        assert_eq!(m.next_deadline(&lead(&sent)), Some(ms(850)));
        // Half of it sent: 50 ms of sending left.
        sent.insert(0..50_000);
        assert_eq!(m.next_deadline(&lead(&sent)), Some(ms(900)));
        assert!(m.expire(ms(899), &lead(&sent)).is_empty());
        let a = m.expire(ms(900), &lead(&sent));
        assert_eq!((a.len(), a[0].offset, a[0].len), (1, 0, 100_000));
        // The sender's deadline: due at 1000 ms.
        assert_eq!(m.next_deadline(&lead(&sent)), Some(due));
        assert!(m.expire(ms(999), &lead(&sent)).is_empty());
        assert_eq!(m.expire(ms(1000), &lead(&sent)).len(), 1);
        // Without a rate (no RTT sample yet) only the one-way delay counts.
        let mut m = TxMessages::default();
        m.add(
            0,
            100,
            MessageOptions::default()
                .with_deadline(due, true)
                .deadline_at_peer(true),
        );
        let none = RangeSet::new();
        let l = Lead {
            owd: Duration::ZERO,
            rate: 0,
            sent: &none,
            ack: 0,
        };
        assert_eq!(m.next_deadline(&l), Some(due));
    }

    #[test]
    fn blocks_are_cut_at_the_boundaries_of_abandonable_messages_only() {
        let mut m = TxMessages::default();
        let late = MessageOptions::default().with_deadline(Instant::from_nanos(100_000_000), true);
        let kept = MessageOptions::default().with_deadline(Instant::from_nanos(100_000_000), false);
        // No message: nothing to cut.
        assert_eq!(m.abandonable_cut(0, 1000), 1000);
        m.add(0, 100, MessageOptions::default());
        m.add(100, 200, late);
        m.add(200, 300, late);
        m.add(300, 400, kept);
        m.add(400, 5000, late);
        // Plain bytes up to an abandonable message: cut where it begins.
        assert_eq!(m.abandonable_cut(0, 1000), 100);
        assert_eq!(m.abandonable_cut(50, 150), 100);
        // Inside one: cut where it ends (the next one begins there too).
        assert_eq!(m.abandonable_cut(100, 1000), 200);
        assert_eq!(m.abandonable_cut(150, 250), 200);
        // Inside the last abandonable one before a kept message: cut at its end.
        assert_eq!(m.abandonable_cut(200, 1000), 300);
        // A kept message, then an abandonable one: cut where that begins.
        assert_eq!(m.abandonable_cut(300, 1000), 400);
        // A block wholly inside a message is not cut.
        assert_eq!(m.abandonable_cut(400, 1000), 1000);
        assert_eq!(m.abandonable_cut(120, 180), 180);
        // A boundary exactly at the block's end is no cut.
        assert_eq!(m.abandonable_cut(100, 200), 200);
        // Below the acknowledgement, messages are forgotten and cut nothing.
        m.on_data_ack(300);
        assert_eq!(m.abandonable_cut(0, 350), 350);
    }

    #[test]
    fn abandonable_in_sees_only_pending_abandonable_messages() {
        let mut m = TxMessages::default();
        let late = MessageOptions::default().with_deadline(Instant::from_nanos(100_000_000), true);
        let kept = MessageOptions::default().with_deadline(Instant::from_nanos(100_000_000), false);
        m.add(0, 100, MessageOptions::default());
        m.add(100, 200, late);
        m.add(200, 300, kept);
        assert!(!m.abandonable_in(0, 100));
        assert!(m.abandonable_in(50, 101));
        assert!(m.abandonable_in(199, 250));
        assert!(
            !m.abandonable_in(200, 400),
            "a deadline without abandon is kept"
        );
        assert!(!m.abandonable_in(300, 400), "no message there");
        m.on_data_ack(200);
        assert!(!m.abandonable_in(0, 300), "acknowledged messages are gone");
    }
}
