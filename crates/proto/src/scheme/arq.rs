//! ARQ schemes: `tcp` (one path) and `mptcp` (IETF-MPTCP as the FMTCP paper's baseline).
//!
//! Data-sequence mapping: every DATA frame carries its stream offset (the data sequence
//! number); the path packet number plays the subflow sequence number. A loss re-queues the
//! segment on the path that lost it (the baseline behaviour that lets a lossy path hold the
//! receive window hostage). Optionally, as in Raiciu et al., "How Hard Can It Be? Designing
//! and Implementing a Deployable Multipath TCP", NSDI 2012, §4.2:
//! - *opportunistic reinjection*: a path with window space that cannot send new data because
//!   the receive window is full re-sends the segment at the left edge of the window, if
//!   another path carried it and it is not yet acknowledged;
//! - *penalisation*: the path that holds that segment has its window halved (at most once per
//!   its RTT);
//!
//! Independently of those (`failover`, on by default): data of a path whose retransmission
//! timer expired — the engine then marks the path suspect and offers it no new data while
//! another path is active — is re-sent on the other paths (Linux MPTCP reinjects on subflow
//! RTO); and when the peer's cumulative acknowledgement stops moving for about two timeouts
//! the engine asks for the head of the stream, which goes out again on the first path that
//! can take it (with one path, the path's own retransmissions already do that).
//!
//! **Retransmission policy** ([`RtxPolicy`]): which path re-sends a segment a path lost.
//! `tcp`/`mptcp` use [`RtxPolicy::Same`]; `cmt-sctp` selects any of the five policies of
//! Iyengar, Amer & Stewart, "Retransmission Policies for Concurrent Multipath Transfer Using
//! SCTP Multihoming", ICON 2004, §3. The choice is made when the loss is reported, i.e. after
//! the engine has applied the loss's window reduction (fast retransmit) or the timeout's
//! collapse to one packet, as SCTP does before it picks the retransmission's destination.
//!
//! Under the `redundant` scheduler ([`SendCtx::redundant`]) every path also carries a copy of
//! each segment the other paths sent, oldest unacknowledged first, before any new data
//! (counted as `redundant_bytes`).

use super::{
    Action, FrameSource, LossKind, PacketTag, RecvCtx, SchemeError, SchemeFactory, SchemeReceiver,
    SchemeSender, SendCtx, SentInfo,
};
use crate::config::ConnectionConfig;
use crate::path::PathState;
use crate::registry::{self, Entry, Factory, OptionDoc, Options};
use crate::time::Instant;
use crate::wire::{Frame, PacketWriter};
use std::collections::VecDeque;
use std::sync::Arc;

/// Options of the `mptcp` scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ArqConfig {
    /// Opportunistic reinjection of the segment blocking the receive window.
    pub reinject: bool,
    /// Reduce the window of the path holding the blocking segment (with `reinject`).
    pub penalize: bool,
    /// Re-send a timed-out (suspect) path's data on the other paths, and the stream's head
    /// when the cumulative acknowledgement stalls.
    pub failover: bool,
}

impl Default for ArqConfig {
    fn default() -> Self {
        ArqConfig {
            reinject: true,
            penalize: true,
            failover: true,
        }
    }
}

impl Factory for ArqConfig {
    fn options(&self) -> Options {
        registry::options_of(self)
    }
}

impl SchemeFactory for ArqConfig {
    fn build(&self, _cfg: &ConnectionConfig) -> (Box<dyn SchemeSender>, Box<dyn SchemeReceiver>) {
        (
            Box::new(ArqSender::new("mptcp", *self)),
            Box::new(ArqReceiver),
        )
    }
}

/// The `tcp` scheme: ARQ on exactly one path (no options).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpConfig;

impl Factory for TcpConfig {
    fn options(&self) -> Options {
        Options::new()
    }
}

impl SchemeFactory for TcpConfig {
    fn max_paths(&self) -> Option<usize> {
        Some(1)
    }
    fn build(&self, _cfg: &ConnectionConfig) -> (Box<dyn SchemeSender>, Box<dyn SchemeReceiver>) {
        let cfg = ArqConfig {
            reinject: false,
            penalize: false,
            failover: false,
        };
        (Box::new(ArqSender::new("tcp", cfg)), Box::new(ArqReceiver))
    }
}

/// Registry entry of `tcp`.
pub(crate) const TCP: Entry<dyn SchemeFactory> = Entry {
    name: "tcp",
    aliases: &[],
    summary: "single-path TCP-like ARQ (exactly one path)",
    options: &[],
    make: |o| {
        registry::no_options(&o)?;
        Ok(Arc::new(TcpConfig))
    },
};

/// Registry entry of `mptcp`.
pub(crate) const MPTCP: Entry<dyn SchemeFactory> = Entry {
    name: "mptcp",
    aliases: &[],
    summary: "IETF-MPTCP-like ARQ: data-sequence mapping, same-path retransmission, \
              reinjection and penalisation (Raiciu et al., NSDI 2012)",
    options: &[
        OptionDoc {
            key: "reinject",
            doc: "opportunistic reinjection of the segment blocking the receive window",
        },
        OptionDoc {
            key: "penalize",
            doc: "reduce the window of the path holding that segment",
        },
        OptionDoc {
            key: "failover",
            doc: "re-send a timed-out path's data on the other paths, and the stream's head \
                  when the cumulative acknowledgement stalls",
        },
    ],
    make: |o| Ok(Arc::new(registry::from_options::<ArqConfig>(o)?)),
};

/// Where a lost segment is re-sent (Iyengar, Amer & Stewart, ICON 2004, §3). Only active
/// paths ([`PathState::Active`]) are candidates; with none, the path that lost it. Ties are
/// broken at random (the connection's seeded generator).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RtxPolicy {
    /// RTX-SAME: on the path that lost it.
    #[default]
    Same,
    /// RTX-ASAP: on the first path that has window space for it.
    Asap,
    /// RTX-CWND: on the path with the largest congestion window.
    Cwnd,
    /// RTX-SSTHRESH: on the path with the largest slow-start threshold.
    Ssthresh,
    /// RTX-LOSSRATE: on the path with the lowest loss rate (the engine's per-path estimate,
    /// [`crate::path::PathView::loss_rate`]).
    Lossrate,
}

impl RtxPolicy {
    /// The path that re-sends a segment `lost_on` lost, or `None` for "whichever path has
    /// space first" (RTX-ASAP).
    pub fn choose(
        self,
        paths: &[crate::path::PathView],
        lost_on: usize,
        rng: &mut rand_chacha::ChaCha8Rng,
    ) -> Option<usize> {
        use rand_core::Rng;
        // Larger is better for every policy; loss rate is negated.
        let score = |v: &crate::path::PathView| -> f64 {
            match self {
                RtxPolicy::Cwnd => v.cwnd as f64,
                RtxPolicy::Ssthresh => v.ssthresh as f64,
                RtxPolicy::Lossrate => -v.loss_rate,
                RtxPolicy::Same | RtxPolicy::Asap => 0.0,
            }
        };
        match self {
            RtxPolicy::Same => return Some(lost_on),
            RtxPolicy::Asap => return None,
            _ => {}
        }
        let best = paths
            .iter()
            .filter(|v| v.active)
            .map(score)
            .fold(f64::NEG_INFINITY, f64::max);
        let ties: Vec<usize> = paths
            .iter()
            .filter(|v| v.active && score(v) == best)
            .map(|v| v.id)
            .collect();
        match ties.len() {
            0 => Some(lost_on),
            1 => Some(ties[0]),
            n => Some(ties[(rng.next_u64() % n as u64) as usize]),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Seg {
    offset: u64,
    len: u32,
    /// Path that carried it first.
    path: u8,
    /// Acknowledged on some path (it is in the peer's receive buffer).
    acked: bool,
    /// Bit per path it was opportunistically reinjected on.
    reinjected: u32,
    /// Bit per path that carried a redundant copy (`redundant` scheduler).
    copied: u32,
}

/// Sending half of `tcp`/`mptcp`.
#[derive(Debug)]
pub struct ArqSender {
    name: &'static str,
    cfg: ArqConfig,
    policy: RtxPolicy,
    segs: VecDeque<Seg>,
    /// Per path: lost segments the policy gave it to re-send.
    retx: Vec<VecDeque<(u64, u32)>>,
    /// RTX-ASAP: lost segments for whichever path has space first.
    retx_any: VecDeque<(u64, u32)>,
    /// Lost segments re-sent on another path than the one that lost them.
    moved_retransmissions: u64,
    /// Segments of a timed-out path, offered to the other paths: (offset, length, from).
    failover: VecDeque<(u64, u32, usize)>,
    /// The stream's head after a stall, for the first path that can take it.
    head: VecDeque<(u64, u32)>,
    last_penalty: Vec<Option<Instant>>,
    /// Stream bytes sent on another path than the one that first carried them.
    reinjected_bytes: u64,
    /// Per path: stream offset below which it has carried or skipped every segment
    /// (`redundant` scheduler).
    copy_cursor: Vec<u64>,
    /// Stream bytes sent as redundant copies (`redundant` scheduler).
    redundant_bytes: u64,
}

impl ArqSender {
    /// A sender registered as `name`.
    pub fn new(name: &'static str, cfg: ArqConfig) -> Self {
        ArqSender {
            name,
            cfg,
            policy: RtxPolicy::Same,
            segs: VecDeque::new(),
            retx: Vec::new(),
            retx_any: VecDeque::new(),
            moved_retransmissions: 0,
            failover: VecDeque::new(),
            head: VecDeque::new(),
            last_penalty: Vec::new(),
            reinjected_bytes: 0,
            copy_cursor: Vec::new(),
            redundant_bytes: 0,
        }
    }

    /// The same sender with retransmission policy `policy` (default [`RtxPolicy::Same`]).
    pub fn with_policy(mut self, policy: RtxPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Per-path state for `n` paths (grown once; the test is inline).
    #[inline(always)]
    fn ensure_paths(&mut self, n: usize) {
        if self.retx.len() < n {
            self.grow_paths(n);
        }
    }

    #[cold]
    #[inline(never)]
    fn grow_paths(&mut self, n: usize) {
        self.retx.resize_with(n, VecDeque::new);
        self.last_penalty.resize(n, None);
        self.copy_cursor.resize(n, 0);
    }

    fn seg_index(&self, offset: u64) -> Option<usize> {
        // Acknowledgements usually name segments already released by the cumulative
        // acknowledgement (below the first held) or the first one.
        match self.segs.front() {
            None => return None,
            Some(s) if offset < s.offset => return None,
            Some(s) if offset == s.offset => return Some(0),
            _ => {}
        }
        let i = self.segs.partition_point(|s| s.offset < offset);
        (i < self.segs.len() && self.segs[i].offset == offset).then_some(i)
    }

    /// Writes `[offset, offset+len)` (trimmed to what the peer lacks and what fits); returns
    /// the tag, or `None` if nothing of it is still needed.
    #[inline(always)]
    fn emit(
        ctx: &mut SendCtx<'_>,
        pkt: &mut PacketWriter<'_>,
        offset: u64,
        len: u32,
    ) -> Option<(PacketTag, u32)> {
        let end = offset + u64::from(len);
        let start = offset.max(ctx.data_ack);
        if start >= end {
            return None;
        }
        let room = pkt.data_room(start).min(ctx.segment_size);
        let n = ((end - start) as usize).min(room);
        if n == 0 {
            return None;
        }
        let buf = ctx.send_buf;
        pkt.push_data_with(start, n, |dst| {
            let ok = buf.copy_out(start, dst);
            debug_assert!(ok, "segment outside the send buffer");
        })
        .ok()?;
        Some((
            PacketTag {
                a: start,
                b: n as u64,
            },
            n as u32,
        ))
    }

    /// Redundant scheduling (`sched::Redundant`): the oldest segment not yet acknowledged
    /// that `path` has neither sent first nor copied. Segments skipped here (acknowledged,
    /// first sent on `path`, copied) never need this path again, so a cursor moves past them.
    fn redundant_copy(
        &mut self,
        ctx: &mut SendCtx<'_>,
        path: usize,
        pkt: &mut PacketWriter<'_>,
    ) -> Option<PacketTag> {
        let bit = 1u32 << (path % 32);
        let from = self.copy_cursor[path].max(ctx.data_ack);
        let mut i = self
            .segs
            .partition_point(|s| s.offset + u64::from(s.len) <= from);
        while let Some(&s) = self.segs.get(i) {
            let end = s.offset + u64::from(s.len);
            if s.acked
                || usize::from(s.path) == path
                || s.copied & bit != 0
                || ctx.is_abandoned(s.offset)
            {
                self.copy_cursor[path] = end;
                i += 1;
                continue;
            }
            let (tag, _) = Self::emit(ctx, pkt, s.offset, s.len)?;
            self.segs[i].copied |= bit;
            self.copy_cursor[path] = end;
            ctx.count_retransmission(path, tag.b);
            self.redundant_bytes += tag.b;
            return Some(tag);
        }
        None
    }

    /// The first segment of `queue` still needed, written into `pkt` (what does not fit
    /// stays queued). Empty queues, the usual case, are told apart inline.
    #[inline(always)]
    fn serve_queue(
        queue: &mut VecDeque<(u64, u32)>,
        ctx: &mut SendCtx<'_>,
        pkt: &mut PacketWriter<'_>,
    ) -> Option<PacketTag> {
        if queue.is_empty() {
            return None;
        }
        Self::serve_nonempty(queue, ctx, pkt)
    }

    #[inline(never)]
    fn serve_nonempty(
        queue: &mut VecDeque<(u64, u32)>,
        ctx: &mut SendCtx<'_>,
        pkt: &mut PacketWriter<'_>,
    ) -> Option<PacketTag> {
        while let Some((off, len)) = queue.pop_front() {
            if off + u64::from(len) <= ctx.data_ack || ctx.is_abandoned(off) {
                continue;
            }
            let Some((tag, n)) = Self::emit(ctx, pkt, off, len) else {
                // No room in this packet: the segment stays queued for the next one.
                queue.push_front((off, len));
                return None;
            };
            let sent_end = tag.a + u64::from(n);
            let end = off + u64::from(len);
            if sent_end < end {
                queue.push_front((sent_end, (end - sent_end) as u32));
            }
            return Some(tag);
        }
        None
    }
}

impl SchemeSender for ArqSender {
    fn name(&self) -> &'static str {
        self.name
    }

    fn poll_packet(
        &mut self,
        ctx: &mut SendCtx<'_>,
        path: usize,
        pkt: &mut PacketWriter<'_>,
    ) -> Option<PacketTag> {
        self.ensure_paths(ctx.paths.len());
        // 1. Lost data the retransmission policy gave this path (RTX-SAME: what it lost),
        //    then (RTX-ASAP) lost data for any path with space.
        if let Some(tag) = Self::serve_queue(&mut self.retx[path], ctx, pkt) {
            ctx.count_retransmission(path, tag.b);
            return Some(tag);
        }
        if let Some(tag) = Self::serve_queue(&mut self.retx_any, ctx, pkt) {
            ctx.count_retransmission(path, tag.b);
            return Some(tag);
        }
        // 2. The stream's head after a stall.
        if let Some(tag) = Self::serve_queue(&mut self.head, ctx, pkt) {
            ctx.count_retransmission(path, tag.b);
            self.reinjected_bytes += tag.b;
            return Some(tag);
        }
        // 3. Data stranded on a path whose timer expired, offered to the others.
        if let Some(i) = self.failover.iter().position(|&(_, _, from)| from != path) {
            let (off, len, from) = self.failover.remove(i).unwrap_or_default();
            let mut q = VecDeque::from([(off, len)]);
            let sent = Self::serve_queue(&mut q, ctx, pkt);
            // What this packet could not hold (the tail of a segment longer than its room,
            // or all of it) stays offered; dropping it left a hole that only the head-stall
            // timer, one segment per stall, would fill.
            for (k, (o, l)) in q.into_iter().enumerate() {
                self.failover.insert(i + k, (o, l, from));
            }
            if let Some(tag) = sent {
                ctx.count_retransmission(path, tag.b);
                self.reinjected_bytes += tag.b;
                return Some(tag);
            }
        }
        // 3b. Redundant scheduling: copies of what the other paths sent, oldest first.
        if ctx.redundant && ctx.paths.len() > 1 {
            if let Some(tag) = self.redundant_copy(ctx, path, pkt) {
                return Some(tag);
            }
        }
        // 4. New data, within the receive window (most urgent message first).
        let full = ctx.segment_size.min(pkt.data_room(ctx.max_data));
        if let Some(r) = ctx.next_unsent_in_window(full) {
            let len = (r.end - r.start).min(u64::from(u32::MAX)) as u32;
            let (tag, n) = Self::emit(ctx, pkt, r.start, len)?;
            let seg = Seg {
                offset: tag.a,
                len: n,
                path: path as u8,
                acked: false,
                reinjected: 0,
                copied: 0,
            };
            if self.segs.back().is_none_or(|s| s.offset < tag.a) {
                self.segs.push_back(seg);
            } else {
                let i = self.segs.partition_point(|s| s.offset < tag.a);
                self.segs.insert(i, seg);
            }
            ctx.mark_sent(tag.a, tag.a + u64::from(n));
            return Some(tag);
        }
        // 5. Blocked by the receive window: reinject the segment at its left edge.
        if !self.cfg.reinject || !ctx.window_limited() {
            return None;
        }
        let head = *self.segs.front()?;
        let bit = 1u32 << (path % 32);
        if usize::from(head.path) == path
            || head.acked
            || head.reinjected & bit != 0
            || ctx.is_abandoned(head.offset)
        {
            return None;
        }
        let (tag, _) = Self::emit(ctx, pkt, head.offset, head.len)?;
        if let Some(s) = self.segs.front_mut() {
            s.reinjected |= bit;
        }
        ctx.count_retransmission(path, tag.b);
        self.reinjected_bytes += tag.b;
        let slow = usize::from(head.path);
        if self.cfg.penalize && slow < ctx.paths.len() {
            let rtt = ctx.paths[slow].rtt_or_rto();
            let due = self.last_penalty[slow].is_none_or(|t| ctx.now >= t + rtt);
            if due {
                self.last_penalty[slow] = Some(ctx.now);
                ctx.request(Action::Penalize { path: slow });
            }
        }
        Some(tag)
    }

    fn on_acked(&mut self, _ctx: &mut SendCtx<'_>, pkt: &SentInfo) {
        // Only the segment's mark: nothing here reads the per-path state (every method that
        // does sizes it first, `ensure_paths`).
        if let Some(i) = self.seg_index(pkt.tag.a) {
            self.segs[i].acked = true;
        }
    }

    fn on_lost(&mut self, ctx: &mut SendCtx<'_>, pkt: &SentInfo, kind: LossKind) {
        let (path, tag) = (pkt.path, pkt.tag);
        self.ensure_paths(ctx.paths.len());
        if tag.a + tag.b <= ctx.data_ack {
            return;
        }
        let len = tag.b as u32;
        match self.policy.choose(ctx.paths, path, ctx.rng) {
            Some(p) if p < self.retx.len() => {
                if p != path {
                    self.moved_retransmissions += 1;
                }
                self.retx[p].push_back((tag.a, len));
            }
            Some(_) => self.retx[path].push_back((tag.a, len)),
            None => self.retx_any.push_back((tag.a, len)),
        }
        if self.policy != RtxPolicy::Same {
            // The policy already chose among the active paths.
            return;
        }
        if kind == LossKind::Timeout && self.cfg.failover && ctx.paths.len() > 1 {
            self.failover.push_back((tag.a, len, path));
        }
    }

    fn on_path_state(&mut self, ctx: &mut SendCtx<'_>, path: usize, state: PathState) {
        self.ensure_paths(ctx.paths.len());
        if self.cfg.failover && matches!(state, PathState::Suspect | PathState::Failed) {
            // What the path still owes goes to the others too (it stays queued here, in
            // case the path comes back first; whatever arrives first is acknowledged).
            for &(off, len) in &self.retx[path] {
                if !self.failover.iter().any(|&(o, _, _)| o == off) {
                    self.failover.push_back((off, len, path));
                }
            }
        }
    }

    fn on_head_stalled(&mut self, ctx: &mut SendCtx<'_>) {
        if !self.cfg.failover || ctx.paths.len() < 2 {
            return;
        }
        if let Some(s) = self.segs.front() {
            if s.offset <= ctx.data_ack && self.head.is_empty() {
                self.head.push_back((s.offset, s.len));
            }
        }
    }

    fn on_data_ack(&mut self, ctx: &mut SendCtx<'_>) {
        while let Some(s) = self.segs.front() {
            if s.offset + u64::from(s.len) > ctx.data_ack {
                break;
            }
            self.segs.pop_front();
        }
        let ack = ctx.data_ack;
        if self.failover.is_empty() {
            return;
        }
        self.failover.retain(|&(o, l, _)| o + u64::from(l) > ack);
    }

    fn counters(&self) -> serde_json::Value {
        let mut c = serde_json::json!({
            "reinjected_bytes": self.reinjected_bytes,
            "redundant_bytes": self.redundant_bytes,
        });
        if self.policy != RtxPolicy::Same {
            c["moved_retransmissions"] = self.moved_retransmissions.into();
        }
        c
    }
}

/// Receiving half of `tcp`/`mptcp`: DATA frames go to the receive buffer at their offsets.
#[derive(Debug, Default)]
pub struct ArqReceiver;

impl SchemeReceiver for ArqReceiver {
    fn on_frame(
        &mut self,
        ctx: &mut RecvCtx<'_>,
        _from: FrameSource,
        frame: &Frame<'_>,
    ) -> Result<(), SchemeError> {
        match frame {
            Frame::Data { offset, data } => {
                ctx.recv_buf.insert(*offset, data);
                Ok(())
            }
            _ => Err(SchemeError::Unexpected),
        }
    }
}
