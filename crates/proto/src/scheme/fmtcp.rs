//! `fmtcp`: fountain-coded multipath transfer with expected-arrival-time allocation, after Cui
//! et al., "FMTCP: A Fountain Code-based Multipath Transmission Control Protocol"
//! (`shared/papers/fmtcp.txt`; equations cited by their number there).
//!
//! **Blocks and symbols (§IV-B).** The stream is cut into blocks of `block_size` bytes (32 KiB
//! by default, as in the paper), each starting where the previous one ends. Each block is
//! split into k source symbols of T bytes, with `symbols_per_packet` symbols per packet (1 by
//! default). T is the largest size for which the packet's SYMBOL frames fit in the MSS,
//! evened out so the block divides into k nearly equal symbols:
//! `T_max = ⌊(MSS − 19·s)/s⌋` (19 = largest SYMBOL frame header), `k = ⌈B/T_max⌉`,
//! `T = ⌈B/k⌉`. With MSS 1400, s = 1: T = 1366 B, k = 24 (16 padding bytes per block).
//! A block is named on the wire by its first stream byte (SYMBOL `block` field, feedback runs);
//! a full block uses the plain coding, a short one (below) has its own k = ⌈len/T⌉ and
//! carries its byte length in the SYMBOL frame's seed field. Symbols come from RaptorQ
//! (RFC 6330; id = ESI, source symbols first) or, selectable, from the LT code of
//! `tributary_codec::lt` (id = seed; the code is keyed by the connection id,
//! [`LtParams::with_key`], so that every connection, and in the simulator every repetition,
//! draws its own lists).
//!
//! **Full packets (`full_symbols`, off by default; the paper fixes the block at 32 KB and
//! says nothing of the symbol size).** The evened-out T above leaves each packet 34 bytes
//! (2.4 %) short of `mptcp`'s 1400 stream bytes, so on a path whose congestion window is
//! limited by per-packet loss the same number of packets carries 2.4 % less of the stream
//! (docs/experiments/stress.md, "Framing and late symbols"). With `full_symbols`, T = T_max =
//! `⌊(MSS − 19·(s − 1))/s⌋` (the datagram budget holds one frame header beside the MSS
//! payload, as for DATA) and a full block is `⌊block_size/T⌋` whole symbols: with MSS 1400,
//! s = 1, 32 KiB: T = 1400 B, k = 23, blocks of 32 200 B (a block smaller than one symbol
//! keeps k = 1, T = its size). Eq. 4 and Algorithm 1 are unchanged; only the unit they count
//! in is larger.
//!
//! **Short blocks (not in the paper, which codes a bulk stream).** A block shorter than
//! `block_size` is opened when the stream ends inside it, and when the sender is idle (every
//! open block is δ-complete) while the application has written less than a block beyond the
//! last one and a full block would fit the flow-control window: the written bytes go out at
//! once as a short block instead of waiting for data that may never come (a request, a web
//! object's tail, a video frame; without this a 300-byte request waited forever for 32 KiB).
//! A sender limited by flow control or still busy with open blocks waits for full blocks,
//! and so does one whose application's last write was cut short by the connection's room
//! (`SendCtx::writer_waiting`: a bulk writer, whose next write comes as soon as room opens),
//! so a bulk transfer keeps the paper's block size. At most [`MAX_OPEN_BLOCKS`] blocks are open
//! at either end.
//!
//! **No retransmission.** A packet lost on a path makes its block owe more symbols; they are
//! new symbols (next ESI), sent on whichever path the allocator picks.
//!
//! **Redundancy (§V-A, Eq. 4).** For each pending block the sender estimates the probability
//! δ_b that the symbols still outstanding will not complete it: `need` symbols are missing
//! (k̂ minus what the receiver is known to hold, from path ACKs and feedback counts) and each
//! symbol in flight on path f arrives with probability 1 − p_f, so the number of arrivals is
//! a sum of binomials and δ_b = P(arrivals < need). With all symbols on one path and `need =
//! ŵ_f`, `ŵ_f + l_b` in flight, this is exactly Eq. 4; the expected window ŵ_f of the paper is
//! the block's unacknowledged symbols (those whose fate is not known yet). A block with
//! δ_b < δ̂ is δ-complete (Definition 2): the sender moves on to the next block without
//! waiting for acknowledgements; a detected loss raises δ_b again and the block gets new
//! symbols. Symbols sent once the block already had k̂ symbols outstanding or received and no
//! unreplaced loss are the l_b of Eq. 4, counted as "appended" (Eq. 7's r_f = (k̂ + l_b)/k_b).
//! k̂ = k for RaptorQ (≈ 99 % of blocks decode from k symbols; a block reported as holding k̂
//! symbols but not decoded owes one more). For LT, k̂ = ⌈(1 + `lt_overhead`)·k⌉ (default
//! 0.25): at k = 24 LT needs on average 12–15 % more than k symbols with a long tail, and
//! every symbol beyond k̂ costs a feedback round trip (measured in docs/experiments/fmtcp.md,
//! 2026-11-22: k̂ = k + 2 gave 1.1 Mbit/s against 1.37–1.43 with k̂ = 1.25k).
//!
//! **Allocation (§V-B, Algorithm 1).** When path f_p has window space, every path's expected
//! delivery time (EDT, Eq. 8), response time (RT, Eq. 9) and expected arrival time (EAT,
//! Eq. 10) are computed; the path with the smallest EAT is virtually given the next packet,
//! filled from the first blocks that are not δ-complete (virtually counted as in flight on
//! that path), and its EAT is advanced, until f_p is the chosen path: f_p then sends what it
//! was given, possibly nothing (the faster paths are expected to deliver everything pending
//! earlier). Algorithm 1's line 14 sets the chosen path's EAT to EDT + RT − τ (its next packet
//! waits for the window to open, RT − τ from now); taken literally, a path whose window is full
//! would then keep the same EAT for every further virtual packet. We generalise it with the
//! ACK clock: the n-th virtual packet of a path with s free packets in a window of c packets
//! has EAT = EDT for n < s (Eq. 10, first case), else EDT + max(RT − τ, 0) + (n − s)·RT/c
//! (Eq. 10's second case for the first one, then one window per response time), so a fast
//! path absorbs as many packets as it can deliver before the slower path's EDT, no more.
//! These virtual packets are counted in closed form per path and filled into the blocks in
//! bulk at their mean arrival probability ([`allocate_with`]), and each block's δ_b is cached
//! until its counts change or a path's loss estimate drifts by more than 10 % (+0.001), so a
//! packet costs O(paths + blocks) instead of rebuilding every block's distribution and
//! stepping through every virtual packet (docs/performance.md). With `allocation = false` the scheme is the
//! paper's greedy baseline (Fig. 14): f_p takes symbols of the first block that is not
//! δ-complete.
//!
//! **Opportunistic repair (not in the paper; `repair`, off by default: the default is the
//! paper's scheme).** Algorithm 1 counts a
//! symbol on a slow path as arriving, so once every block inside the receive window is
//! δ-complete the fast paths fall silent and the window waits for the slow path's symbols:
//! with a small buffer, throughput drops to about one window per slow one-way delay
//! (docs/experiments/stress.md: 64 KiB, 300 ms slow path, fmtcp 2.9 Mbit/s against mptcp's
//! 5.1, a third of its traffic on the slow path). MPTCP handles the same case with
//! opportunistic reinjection (Raiciu et al., NSDI 2012, §4.2), which `mptcp` has; this is its
//! coded counterpart. When a path has window space, Algorithm 1 gives it nothing and no new
//! block can be opened (flow control, or the stream's end), the path sends symbols for the
//! oldest undecoded blocks (the first 4) whose δ_b, counting only the symbols in flight on
//! paths with EDT no later than its own, is still ≥ δ̂. Any symbol helps a fountain-coded
//! block, so what the slow path delivers later is merely redundant (`late_symbols`); the
//! symbols sent so are counted as `repair_symbols`. It never displaces Eq. 4 or Algorithm 1:
//! it only uses capacity they would leave idle. It costs a little where the paper's scheme is
//! already ahead (§III head-of-line case, 64 KiB, 5 % loss: 1.68 against 1.77 Mbit/s; see
//! docs/experiments/stress.md). With `penalize` (on by default, acts only with `repair`), as MPTCP
//! penalises the path holding the blocking segment, the path whose symbols of the oldest
//! repaired block are expected to arrive last has its window reduced, at most once per its
//! RTT, if they are expected after the repair symbol: a path's symbols of the block are
//! expected at the send time of its latest one plus its EDT (Eq. 8; the FMTCP paper's
//! expected arrival time, Eqs. 8–10, for a symbol already sent), the repair symbol at now +
//! EDT of the repairing path. (Ranking by EDT alone, as first done, penalised a clean path
//! whose symbols were merely sent later, about to arrive: docs/experiments/stress.md,
//! bursty-8.) Without penalisation an unpenalised slow path keeps a large window, and a
//! coupled controller (LIA) then leaves the fast path almost no increase (measured: the fast
//! path stuck at 1 MSS).
//! Counting also the symbols of slower paths expected to arrive before the repair symbol
//! (send time of the path's latest symbol of the block + EDT_g ≤ now + EDT_f) was tried
//! against late symbols and rejected: it removes about a third of the repair symbols and a
//! fifth of the late ones, but the head block then waits for the slow path more often
//! (bursty-8 256 KiB over 30 paired seeds: 0.909× `mptcp` against 0.965×, 6 % fewer packets
//! sent; docs/experiments/stress.md, "Framing and late symbols"). The late repair symbols
//! are the price of not waiting for the slow path.
//!
//! **Adaptive δ̂ (`adaptive_delta`, off by default; not in the paper, which fixes δ̂).** Eq. 4's
//! appended symbols insure a block against decoding failure; what a failure costs depends on
//! the flow-control window. The (l+1)-th appended symbol is useful only if the block would
//! fail without it, i.e. with probability at most δ_b(l); its cost is one symbol; a failure
//! costs C symbols of sending opportunity. Appending while δ_b(l)·C > 1 is Eq. 4's stopping
//! rule with δ̂ = 1/C (an upper bound on the benefit, so it errs towards redundancy). C is
//! estimated at every packet: a failed block is repaired after the response time RT_f
//! (Eq. 9) of the path that lost the symbol (weighted by rate_f·p_f over the paths) plus the
//! smallest EDT (Eq. 8) for the replacement, D = Σ w_f RT_f + min_g EDT_g; meanwhile the
//! paths could send R·D symbols, R = Σ_f (cwnd_f/MSS_f)/RTT_f; of these, the stream bytes
//! below the flow-control limit of which nothing was sent yet (untouched open blocks and the
//! room not yet opened) can still be sent during the stall, so C = R·D − room/T. With a small
//! receive buffer the sender is window-limited, C is large and δ̂ small (down to `delta_min`,
//! default 0.005: more redundancy than the paper's 0.05); with a large one C ≤ 0 and δ̂ =
//! `delta_max` (default 0.9: at k = 23 and p ≤ 9 % no appended symbol at all, i.e. ARQ's
//! overhead). δ̂ is rounded down to 2^(j/4) so it changes seldom (the δ-complete prefix and
//! the fill memos are recomputed when it does). Eq. 4 and Algorithm 1 are unchanged; only
//! their target moves. Measured over 30 paired seeds on the stress suite
//! (docs/experiments/stress.md, "Adaptive δ̂"): the 4 MiB gap to `mptcp` falls from 1.3–2.2 %
//! to 0.0–0.4 %; small buffers change by −0.4 to +1.8 %.
//!
//! **Abandoned messages (not in the paper).** A partially reliable application (live video)
//! abandons late messages; the receiver holds their bytes without data, so its in-order point
//! may move into a block. Such a block is still decoded: its bytes above that point are owed.
//! The sender finishes blocks whose every byte is abandoned and opens the next block after
//! abandoned bytes, as ARQ skips them. With `cut_at_messages` (the default) a block also
//! ends where an abandonable message begins or ends, so no block is partly abandoned: a
//! block is one frame or a piece of one (docs/experiments/stress.md, "Blocks across an
//! abandoned message"). A plain byte stream (no such messages) is cut as before. A path
//! sends no symbol of a block whose message has a deadline at the peer before the path could
//! deliver it ([`SendCtx::in_time`]; Algorithm 1 by itself counts such a symbol as arriving,
//! late): the block is left to faster paths (docs/experiments/video.md, "Paths that cannot
//! make the deadline").
//!
//! **Estimators.** p_f = the path's loss-rate estimate ([`PathView::loss_rate`]: EWMA of packet
//! outcomes over about 100 packets, starting at 0), capped at 0.95 in Eqs. 8–10 and 4.
//! RTT_f = smoothed RTT (RFC 6298; the RTO before the first sample), RTO_f = the path's current
//! RTO, DT_f = RTT_f/2 (as the paper), τ_f = now − send time of the oldest unacknowledged
//! packet, window in packets = cwnd / MSS.
//!
//! **Receiver.** One decoder per block inside the receive window; a decoded block is inserted
//! into the receive buffer at its stream offset, so in-order delivery and flow control are the
//! engine's. Blocks are only sent, and only accepted, when they lie wholly below the
//! flow-control limit (`max_data`); `block_size` must not exceed the receive buffer. Every ACK
//! carries feedback (below) for the blocks decoded out of order and the blocks being decoded.
//! Symbols for blocks already decoded are dropped and
//! counted as late (`late_symbols`, normal with redundancy); symbols for blocks outside the
//! window or past the stream end, ids out of range, wrong sizes or lengths are dropped and
//! counted by the engine (`ConnectionStats::frames_rejected`).
//!
//! **Feedback (the paper's receiver reports each block's state; the encoding is ours).** By
//! default (`compact_feedback`, on since 2026-11-28) one
//! SCHEME frame of kind [`FEEDBACK_KIND`] per ACK lists the receiver's blocks in stream order
//! as runs of consecutive blocks (a run ends where the receiver holds nothing of the next
//! block, whose length it cannot know): `start, n, n × state`, varints, where `start` is the
//! run's first block id and a state is 0 for a decoded block and c + 1 for a block of which c
//! symbols arrived. The sender walks its own blocks from `start` (they are contiguous), so a
//! block costs one byte (two from 63 symbols) instead of the 7 of a FEEDBACK frame per block
//! (type, id, count, flags; 11 beyond the stream's first GiB), which made fmtcp's ACKs
//! 3.4–5.5 % of the stream's bytes against 2.4 % for `mptcp` with 4 MiB buffers
//! (docs/experiments/stress.md, "Feedback as runs of blocks"), and handling one frame per
//! block made up about a seventh of fmtcp's simulator cost (14 % of its instructions per
//! packet on the 8-path benchmark; docs/performance.md, "Feedback as runs by default").
//! What does not fit the ACK packet is left out from the end. A run that starts below the
//! sender's first held block is from an ACK overtaken by a later one and is skipped (counts
//! only grow); a run naming a block never sent, starting inside a block, running past the
//! last block sent, a count above the symbols sent or a truncated body is refused
//! (`feedback_rejected`). With `compact_feedback = false` every ACK carries one
//! FEEDBACK frame per block instead (received-symbol count, decoded flag), decoded blocks
//! first, as many as fit: the encoding the documented paper reproductions were measured with,
//! and which their scenario files keep.

use super::{
    Action, FrameSource, LossKind, PacketTag, RecvCtx, SchemeError, SchemeFactory, SchemeReceiver,
    SchemeSender, SendCtx, SentInfo,
};
use crate::buffer::SendBuffer;
use crate::config::ConnectionConfig;
use crate::path::PathView;
use crate::registry::{self, Entry, Factory, OptionDoc, Options};
use crate::time::Instant;
use crate::wire::{
    put_varint, varint_len, Coding, FeedbackFrame, Frame, PacketWriter, Reader, SymbolFrame,
};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::hash::BuildHasherDefault;
use std::sync::Arc;
use tributary_codec::lt::{mix64, LtDecoder, LtEncoder, LtParams, LtSymbolId};
use tributary_codec::raptorq::{
    RaptorqConfig, RaptorqDecoder, RaptorqEncoder, MAX_ENCODING_SYMBOL_ID,
};

/// Largest SYMBOL frame header: type (which also tells the coding), block id (the block's
/// first stream byte, varint ≤ 8 B), id (≤ 4 B), short-block length (seed varint, ≤ 4 B), data
/// length (2 B). (20 in wire version 4, which had a coding byte; T and k are the same with 19
/// for one and two symbols per packet.)
const SYMBOL_HEADER: usize = 19;
/// Loss rates are capped here in Eqs. 4 and 8–10 (Eq. 8 diverges at p = 1).
const MAX_LOSS: f64 = 0.95;
/// Bound on virtual packets per allocation (Algorithm 1 ends far earlier in practice).
const MAX_VIRTUAL_PACKETS: usize = 4096;
/// Opportunistic repair looks at this many blocks from the head of the window.
const REPAIR_BLOCKS: usize = 4;
/// Most blocks open at once, at the sender and at the receiver (short blocks can be as small
/// as one byte: this bounds the decoders a peer can make the receiver hold).
pub const MAX_OPEN_BLOCKS: usize = 4096;

/// The LT generator key of the block starting at stream byte `start` (both ends).
fn lt_key(start: u64) -> u32 {
    (start ^ (start >> 32)) as u32
}

/// The fountain code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Code {
    /// RaptorQ (RFC 6330), systematic.
    Raptorq,
    /// LT with the robust soliton distribution (parameters `lt_c`, `lt_delta`).
    Lt,
}

/// Options of the `fmtcp` scheme.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FmtcpConfig {
    /// Block size in bytes (the paper's 32 KB); at most the receive buffer.
    pub block_size: usize,
    /// Symbols per packet; the symbol size follows from the MSS (module docs).
    pub symbols_per_packet: usize,
    /// The fountain code.
    pub code: Code,
    /// δ̂, the acceptable decoding-failure probability of Definition 2 / Eq. 4.
    pub delta: f64,
    /// Algorithm 1 (expected-arrival-time allocation); false = greedy first pending block.
    pub allocation: bool,
    /// Opportunistic repair when the flow-control window blocks (not in the paper; module
    /// docs).
    pub repair: bool,
    /// With `repair`: reduce the window of slower paths holding symbols of a repaired block.
    pub penalize: bool,
    /// With `penalize`: a path is penalised only if its symbols of the repaired block are
    /// expected later than the repair symbol by more than this many response times (Eq. 9) of
    /// the repairing path.
    pub penalize_margin: f64,
    /// Symbols as large as `mptcp`'s segments (the MSS), and the block the largest whole
    /// number of them within `block_size` (module docs, "Full packets"; not in the paper,
    /// which fixes neither).
    pub full_symbols: bool,
    /// Adaptive δ̂ (module docs, "Adaptive δ̂"; not in the paper): Eq. 4's target is chosen
    /// per packet as the cost of one symbol over the cost of a decoding failure, within
    /// [`delta_min`](Self::delta_min), [`delta_max`](Self::delta_max); `delta` is then unused.
    pub adaptive_delta: bool,
    /// Feedback as runs of consecutive blocks in one SCHEME frame, about a byte per block
    /// (the default), instead of one FEEDBACK frame per block (module docs, "Feedback"; not
    /// in the paper).
    pub compact_feedback: bool,
    /// Blocks end where an abandonable message (a live-video frame) begins or ends, so that
    /// abandoning it never leaves a block partly owed (module docs, "Abandoned messages";
    /// not in the paper, which has no messages). No effect on a plain byte stream.
    pub cut_at_messages: bool,
    /// With `adaptive_delta`: the smallest δ̂ (most redundancy).
    pub delta_min: f64,
    /// With `adaptive_delta`: the largest δ̂, used when a decoding failure costs no goodput.
    pub delta_max: f64,
    /// LT: robust soliton constant c.
    pub lt_c: f64,
    /// LT: robust soliton δ.
    pub lt_delta: f64,
    /// LT: k̂ = ⌈(1 + lt_overhead)·k⌉, the symbols expected to decode a block.
    pub lt_overhead: f64,
}

impl Default for FmtcpConfig {
    fn default() -> Self {
        FmtcpConfig {
            block_size: 32 * 1024,
            symbols_per_packet: 1,
            code: Code::Raptorq,
            delta: 0.05,
            allocation: true,
            repair: false,
            penalize: true,
            penalize_margin: 2.0,
            full_symbols: false,
            adaptive_delta: false,
            compact_feedback: true,
            cut_at_messages: true,
            delta_min: 0.005,
            delta_max: 0.9,
            lt_c: 0.1,
            lt_delta: 0.05,
            lt_overhead: 0.25,
        }
    }
}

/// Block geometry shared by both halves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Block size B in bytes.
    pub block: u64,
    /// Symbol size T in bytes.
    pub symbol: usize,
    /// Source symbols of a full block.
    pub k: usize,
    /// Symbols per packet.
    pub per_packet: usize,
}

impl FmtcpConfig {
    /// The block geometry for a connection MSS (see the module docs), or why it is invalid.
    pub fn geometry(&self, mss: usize) -> Result<Geometry, String> {
        let s = self.symbols_per_packet;
        if s == 0 {
            return Err("symbols_per_packet must be at least 1".into());
        }
        if self.block_size == 0 {
            return Err("block_size must be at least 1 byte".into());
        }
        if !(self.delta > 0.0 && self.delta < 1.0) {
            return Err("delta must be in (0, 1)".into());
        }
        if !(self.delta_min > 0.0 && self.delta_min <= self.delta_max && self.delta_max < 1.0) {
            return Err(
                "delta_min and delta_max must satisfy 0 < delta_min <= delta_max < 1".into(),
            );
        }
        if !(0.0..=100.0).contains(&self.penalize_margin) {
            return Err("penalize_margin must be in [0, 100]".into());
        }
        if !(0.0..=10.0).contains(&self.lt_overhead) {
            return Err("lt_overhead must be in [0, 10]".into());
        }
        let t_max = if self.full_symbols {
            // The datagram budget (`DATAGRAM_OVERHEAD`) holds one frame header beside the MSS
            // payload, and a SYMBOL header fits it; further frames each need their header.
            mss.saturating_sub(SYMBOL_HEADER * (s - 1)) / s
        } else {
            mss.saturating_sub(SYMBOL_HEADER * s) / s
        };
        if t_max == 0 {
            return Err(format!("{s} symbols per packet do not fit an MSS of {mss}"));
        }
        let (b, k, t) = if self.full_symbols && self.block_size >= t_max {
            // Whole symbols of T_max bytes: no padding, and every packet as full as a DATA
            // packet of `mptcp` (module docs, "Full packets").
            let k = self.block_size / t_max;
            (k * t_max, k, t_max)
        } else {
            let b = self.block_size;
            let k = b.div_ceil(t_max);
            (b, k, b.div_ceil(k))
        };
        let kmax = match self.code {
            Code::Raptorq => tributary_codec::raptorq::MAX_SOURCE_SYMBOLS,
            Code::Lt => tributary_codec::lt::MAX_SOURCE_SYMBOLS,
        };
        if k > kmax {
            return Err(format!("block of {k} symbols exceeds the code's {kmax}"));
        }
        if self.code == Code::Lt {
            // S = c·ln(k/δ)·√k grows with k, so k = 1 (the shortest final block) is the
            // binding case for the robust soliton's validity.
            for kk in [1, k] {
                LtParams::new(kk, t, self.lt_c, self.lt_delta).map_err(|e| e.to_string())?;
            }
        }
        Ok(Geometry {
            block: b as u64,
            symbol: t,
            k,
            per_packet: s,
        })
    }

    /// Builds both halves for a connection MSS, the LT code keyed by `code_key` (both ends
    /// must use the same; the factory passes the connection id). Panics only on an invalid
    /// configuration, which [`crate::ConnectionConfig::validate`] refuses beforehand.
    pub fn build(&self, mss: usize, code_key: u64) -> (FmtcpSender, FmtcpReceiver) {
        let g = self
            .geometry(mss)
            .unwrap_or_else(|e| panic!("invalid fmtcp configuration: {e}"));
        (
            FmtcpSender::new(*self, g, code_key),
            FmtcpReceiver::new(*self, g, code_key),
        )
    }
}

impl Factory for FmtcpConfig {
    fn options(&self) -> Options {
        registry::options_of(self)
    }
}

impl SchemeFactory for FmtcpConfig {
    fn validate(&self, cfg: &ConnectionConfig) -> Result<(), String> {
        self.geometry(cfg.mss)?;
        if self.block_size > cfg.recv_buffer {
            return Err(format!(
                "fmtcp block_size {} exceeds the receive buffer {}",
                self.block_size, cfg.recv_buffer
            ));
        }
        Ok(())
    }
    fn build(&self, cfg: &ConnectionConfig) -> (Box<dyn SchemeSender>, Box<dyn SchemeReceiver>) {
        // The LT code key: the connection id (module docs, "Blocks and symbols").
        let (tx, rx) = FmtcpConfig::build(self, cfg.mss, cfg.conn_id);
        (Box::new(tx), Box::new(rx))
    }
}

/// Registry entry of `fmtcp`.
pub(crate) const ENTRY: Entry<dyn SchemeFactory> = Entry {
    name: "fmtcp",
    aliases: &[],
    summary: "FMTCP: fountain-coded blocks, Eq. 4 redundancy, expected-arrival-time \
              allocation (Cui et al.)",
    options: &[
        OptionDoc {
            key: "block_size",
            doc: "bytes per coded block (at most the receive buffer)",
        },
        OptionDoc {
            key: "symbols_per_packet",
            doc: "symbols per packet; the symbol size follows from the MSS",
        },
        OptionDoc {
            key: "code",
            doc: "\"raptorq\" or \"lt\"",
        },
        OptionDoc {
            key: "delta",
            doc: "acceptable decoding-failure probability δ̂ of Eq. 4",
        },
        OptionDoc {
            key: "allocation",
            doc: "Algorithm 1 allocation (false: greedy first pending block)",
        },
        OptionDoc {
            key: "repair",
            doc: "opportunistic repair of the window's head blocks from faster paths when \
                  flow control blocks (not in the paper)",
        },
        OptionDoc {
            key: "penalize",
            doc: "with repair: reduce the window of slower paths holding symbols of a \
                  repaired block (as mptcp's penalisation)",
        },
        OptionDoc {
            key: "penalize_margin",
            doc: "with penalize: only paths whose symbols are expected later than the repair \
                  by more than this many response times (Eq. 9) of the repairing path",
        },
        OptionDoc {
            key: "full_symbols",
            doc: "symbols of one MSS (as full as mptcp's DATA packets), blocks a whole number \
                  of them within block_size (not in the paper)",
        },
        OptionDoc {
            key: "adaptive_delta",
            doc: "choose Eq. 4's δ̂ per packet as one symbol's cost over a decoding failure's \
                  (the goodput a stalled flow-control window loses), within delta_min and \
                  delta_max; not in the paper",
        },
        OptionDoc {
            key: "compact_feedback",
            doc: "feedback as runs of consecutive blocks in one frame, about a byte per block \
                  (false: one FEEDBACK frame per block, the default until 2026-11-28, which \
                  the paper reproductions keep); not in the paper",
        },
        OptionDoc {
            key: "cut_at_messages",
            doc: "end blocks at the boundaries of abandonable messages (live-video frames), \
                  so that abandoning one leaves no block partly owed; no effect on a byte \
                  stream; not in the paper",
        },
        OptionDoc {
            key: "delta_min",
            doc: "with adaptive_delta: smallest δ̂",
        },
        OptionDoc {
            key: "delta_max",
            doc: "with adaptive_delta: largest δ̂ (a failure costs nothing)",
        },
        OptionDoc {
            key: "lt_c",
            doc: "LT robust soliton c",
        },
        OptionDoc {
            key: "lt_delta",
            doc: "LT robust soliton δ",
        },
        OptionDoc {
            key: "lt_overhead",
            doc: "LT: symbols expected per block = (1 + lt_overhead)·k",
        },
    ],
    make: |o| Ok(Arc::new(registry::from_options::<FmtcpConfig>(o)?)),
};

// ---------------------------------------------------------------------------- the model

/// Eq. 4: probability that more than `l` of `w + l` packets are lost at loss rate `p`, i.e.
/// that a block sent as ŵ_f = `w` needed packets plus `l` appended ones fails to decode.
pub fn eq4_failure(w: u64, l: u64, p: f64) -> f64 {
    let n = w + l;
    let p = p.clamp(0.0, 1.0);
    // P(losses ≤ l) by the binomial pmf, accumulated in log space for large n.
    let mut ok = 0.0;
    for j in 0..=l.min(n) {
        ok += binom_pmf(n, j, p);
    }
    (1.0 - ok).max(0.0)
}

fn binom_pmf(n: u64, j: u64, p: f64) -> f64 {
    if p == 0.0 {
        return if j == 0 { 1.0 } else { 0.0 };
    }
    if p == 1.0 {
        return if j == n { 1.0 } else { 0.0 };
    }
    let mut ln_c = 0.0;
    for i in 0..j {
        ln_c += ((n - i) as f64).ln() - ((i + 1) as f64).ln();
    }
    (ln_c + j as f64 * p.ln() + (n - j) as f64 * (1.0 - p).ln()).exp()
}

/// l_b* of §V-A: the smallest l with δ_b(l) ≤ δ̂ (Eq. 4), searched up to `w` (and returned as
/// `w` + 1 beyond).
pub fn appended_symbols(w: u64, p: f64, delta_hat: f64) -> u64 {
    (0..=w.max(64))
        .find(|&l| eq4_failure(w, l, p) <= delta_hat)
        .unwrap_or(w.max(64) + 1)
}

/// Distribution of the number of arrivals among independent symbols, capped at `need`
/// (`prob[need]` = P(at least `need` arrive)). δ_b = 1 − `prob[need]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Arrivals {
    prob: Vec<f64>,
    /// Symbols added so far, at most `need`: `prob[i]` is zero for `top < i < need` (i
    /// arrivals out of fewer than i symbols), so [`add`](Self::add) leaves those entries alone.
    top: usize,
}

impl Arrivals {
    /// Nothing in flight yet, `need` symbols missing.
    pub fn new(need: usize) -> Self {
        Self::new_in(need, Vec::new())
    }

    /// [`new`](Self::new), in `buf`'s allocation.
    fn new_in(need: usize, mut buf: Vec<f64>) -> Self {
        buf.clear();
        buf.resize(need + 1, 0.0);
        buf[0] = 1.0;
        Arrivals { prob: buf, top: 0 }
    }
    /// One more symbol in flight, arriving with probability `q`.
    pub fn add(&mut self, q: f64) {
        let n = self.prob.len() - 1;
        if n == 0 {
            return;
        }
        let q = q.clamp(0.0, 1.0);
        let r = 1.0 - q;
        let p = &mut self.prob[..=n];
        p[n] += p[n - 1] * q;
        // p[i] ← p[i]·(1 − q) + p[i − 1]·q for i = n−1 … 1, each from the old values: written
        // upwards with the old p[i − 1] carried, the same products and sums in the same
        // order per element (a form the compiler vectorises).
        // Entries above `top + 1` stay zero (0·(1 − q) + 0·q = +0): they are not written,
        // which leaves every value bit-identical to the full pass.
        let mut prev = p[0];
        for x in &mut p[1..(self.top + 2).min(n)] {
            let cur = *x;
            *x = cur * r + prev * q;
            prev = cur;
        }
        p[0] *= r;
        self.top = (self.top + 1).min(n);
    }
    /// Adds `count` symbols of arrival probability `q`.
    pub fn add_many(&mut self, count: u64, q: f64) {
        for _ in 0..count {
            self.add(q);
            if self.failure() < 1e-12 {
                break;
            }
        }
    }
    /// Symbols missing (`need`).
    pub fn need(&self) -> usize {
        self.prob.len() - 1
    }
    /// True if nothing is in flight yet (no symbol added).
    pub fn is_fresh(&self) -> bool {
        self.prob[0] == 1.0
    }
    /// δ_b: probability that fewer than `need` arrive.
    pub fn failure(&self) -> f64 {
        let n = self.prob.len() - 1;
        (1.0 - self.prob[n]).max(0.0)
    }
}

/// What the allocator needs to know about one path (Eqs. 8–10).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PathEstimate {
    /// Usable (active).
    pub active: bool,
    /// Loss probability p_f.
    pub loss: f64,
    /// EDT_f (Eq. 8), seconds.
    pub edt: f64,
    /// RT_f (Eq. 9), seconds.
    pub rt: f64,
    /// τ_f: time since the oldest unacknowledged packet was sent, seconds.
    pub tau: f64,
    /// Free window space in packets (w_f of Eq. 10, rounded up).
    pub space: u64,
    /// Congestion window in packets (at least 1).
    pub cwnd: u64,
}

/// Eq. 8: EDT_f = p·RTO/(1 − p) + DT_f, with DT_f = RTT/2.
pub fn edt(p: f64, rtt: f64, rto: f64) -> f64 {
    let p = p.clamp(0.0, MAX_LOSS);
    p * rto / (1.0 - p) + rtt / 2.0
}

/// Eq. 9: RT_f = (1 − p)·RTT + p·RTO.
pub fn rt(p: f64, rtt: f64, rto: f64) -> f64 {
    let p = p.clamp(0.0, MAX_LOSS);
    (1.0 - p) * rtt + p * rto
}

impl PathEstimate {
    /// Estimates from a path view at `now`.
    pub fn from_view(v: &PathView, now: Instant) -> Self {
        let p = v.loss_rate.clamp(0.0, MAX_LOSS);
        let rtt = v.rtt_or_rto().as_secs_f64();
        let rto = v.rto.as_secs_f64();
        let tau = v
            .oldest_unacked_sent
            .map_or(0.0, |t| now.saturating_since(t).as_secs_f64());
        let mss = v.mss.max(1);
        PathEstimate {
            active: v.active,
            loss: p,
            edt: edt(p, rtt, rto),
            rt: rt(p, rtt, rto),
            tau,
            space: v.window_space().div_ceil(mss),
            cwnd: (v.cwnd / mss).max(1),
        }
    }

    /// Eq. 10, generalised to the n-th packet from now (module docs): EDT while the window has
    /// space, then EDT + max(RT − τ, 0) + (n − s)·RT/c as the ACK clock opens the window.
    pub fn eat(&self, n: u64) -> f64 {
        if n < self.space {
            self.edt
        } else {
            let m = (n - self.space) as f64;
            self.edt + (self.rt - self.tau).max(0.0) + m * self.rt / self.cwnd as f64
        }
    }
}

/// Number of virtual packets path `pe` is expected to deliver strictly before time `e`
/// (Eq. 10 as generalised in the module docs), at most `cap`.
pub fn packets_before(pe: &PathEstimate, e: f64, cap: u64) -> u64 {
    if pe.edt >= e || e.is_nan() {
        return 0;
    }
    let a = (pe.rt - pe.tau).max(0.0);
    if pe.edt + a >= e {
        return pe.space.min(cap);
    }
    // eat(space + m) = edt + a + m·rt/c < e  ⇔  m < x: ⌈x⌉ such m, then nudged so that the
    // count agrees with `eat` itself at the boundary (rounding).
    let step = pe.rt / pe.cwnd.max(1) as f64;
    let x = (e - pe.edt - a) / step;
    if !(step > 0.0 && x.is_finite()) {
        return cap;
    }
    let mut n = pe
        .space
        .saturating_add(x.ceil().max(0.0).min(cap as f64) as u64);
    while n > pe.space && pe.eat(n - 1) >= e {
        n -= 1;
    }
    while n < cap && pe.eat(n) < e {
        n += 1;
    }
    n.min(cap)
}

/// Symbols of arrival probability `q` a block with distribution `a` still needs to become
/// δ-complete (0 if it is), at most `cap`.
pub fn fill_count(a: &Arrivals, q: f64, delta_hat: f64, cap: usize) -> usize {
    if a.failure() < delta_hat {
        return 0;
    }
    let mut b = a.clone();
    let mut n = 0;
    while n < cap && b.failure() >= delta_hat {
        b.add(q);
        n += 1;
    }
    n
}

/// Memo of [`fill_count`] for blocks with nothing in flight (keyed by missing symbols and the
/// quantised arrival probability): such blocks are all alike. The key packs both into one
/// `u64`; its values are bounded (symbols of a block, 4,096 steps of the probability), so
/// the table cannot grow beyond that and a cheap hash will do.
#[derive(Debug, Default)]
pub struct FillMemo(HashMap<u64, usize, BuildHasherDefault<MemoHasher>>);

/// Hasher of [`FillMemo`]'s packed keys: SplitMix64's finaliser ([`mix64`]), so that keys
/// differing only in their high bits (the missing symbols) still land in different buckets.
#[derive(Debug, Default, Clone, Copy)]
struct MemoHasher(u64);

impl std::hash::Hasher for MemoHasher {
    fn finish(&self) -> u64 {
        mix64(self.0)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = x;
    }
}

impl FillMemo {
    /// One key per (missing symbols, probability on the [`Q_STEP`] grid): the probability's
    /// step count (1 to 4,096) in the low 13 bits, the missing symbols above.
    fn key(need: usize, qbar: f64) -> u64 {
        ((need as u64) << 13) | (qbar / Q_STEP) as u64
    }
}

/// The pending blocks as [`allocate_with`] reads them, in stream order.
pub trait BlockView {
    /// Number of pending blocks.
    fn len(&self) -> usize;
    /// True if there is none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Arrival distribution of block `i`.
    fn get(&mut self, i: usize) -> &Arrivals;
    /// [`fill_count`] of block `i` at arrival probability `q` (implementations may memoise).
    fn fill(&mut self, i: usize, q: f64, delta_hat: f64, cap: usize) -> usize {
        fill_count(self.get(i), q, delta_hat, cap)
    }
}

impl BlockView for &[Arrivals] {
    fn len(&self) -> usize {
        <[Arrivals]>::len(self)
    }
    fn get(&mut self, i: usize) -> &Arrivals {
        &self[i]
    }
}

/// Arrival probabilities are quantised to this step in the bulk part of Algorithm 1.
const Q_STEP: f64 = 1.0 / 4096.0;

/// Algorithm 1 (AllocatePacket): symbols per pending block for the packet of path `fp`.
///
/// `blocks` are the pending blocks in stream order with their arrival distributions (not
/// modified). Returns `(block index, symbols)` for `fp`'s packet of `per_packet` symbols at
/// most, empty if the faster paths are expected to complete every pending block first. With
/// `allocate = false`, `fp` is simply filled from the first blocks that are not δ-complete
/// (the greedy baseline of §V-B).
pub fn allocate_packet(
    fp: usize,
    paths: &[PathEstimate],
    blocks: &[Arrivals],
    per_packet: usize,
    delta_hat: f64,
    allocate: bool,
) -> Vec<(usize, usize)> {
    let mut memo = FillMemo::default();
    allocate_with(
        fp,
        paths,
        &mut { blocks },
        per_packet,
        delta_hat,
        allocate,
        &mut memo,
    )
}

/// [`allocate_packet`] over any [`BlockView`], with a memo for blocks with nothing in flight.
///
/// Algorithm 1 hands virtual packets, one at a time, to the path with the smallest EAT until
/// `fp` is that path. `fp`'s own EAT stays eat_fp(0) all along, so the virtual packets are
/// exactly, for every other active path g, its packets with EAT below eat_fp(0) (ties go to
/// `fp`): [`packets_before`] counts them in closed form (V in all). They fill the pending
/// blocks in stream order, each block up to δ-completeness. The one simplification against
/// the packet-by-packet loop: these V virtual packets are counted with their mean arrival
/// probability q̄ (weighted by each path's count, quantised to 1/4096) instead of in EAT
/// order with each path's own; a sum of Bernoulli variables with a common mean is more spread
/// with equal probabilities than with unequal ones, so q̄ errs towards more symbols, never
/// fewer. `fp`'s packet then continues where they stopped, with its own probability. Cost:
/// O(paths + blocks walked) instead of O(V · (paths + blocks)).
pub fn allocate_with(
    fp: usize,
    paths: &[PathEstimate],
    blocks: &mut impl BlockView,
    per_packet: usize,
    delta_hat: f64,
    allocate: bool,
    memo: &mut FillMemo,
) -> Vec<(usize, usize)> {
    const CAP: usize = MAX_VIRTUAL_PACKETS * 16;
    let mut first = 0;
    let mut carry: Option<Arrivals> = None;
    if allocate {
        let e = paths[fp].eat(0);
        let (mut v, mut qsum) = (0u64, 0.0);
        for (g, pe) in paths.iter().enumerate() {
            if g == fp || !pe.active {
                continue;
            }
            let k = packets_before(pe, e, MAX_VIRTUAL_PACKETS as u64);
            v += k;
            qsum += k as f64 * (1.0 - pe.loss);
        }
        if v >= MAX_VIRTUAL_PACKETS as u64 {
            // As the packet-by-packet loop, which gives up after this many virtual packets.
            return Vec::new();
        }
        if v > 0 {
            let qbar = ((qsum / v as f64 / Q_STEP).round() * Q_STEP).clamp(Q_STEP, 1.0);
            let mut r = v as usize * per_packet;
            let mut landed = false;
            // Runs of fresh blocks share one key: the last one looked up is kept at hand.
            let mut last: Option<(u64, usize)> = None;
            for i in 0..blocks.len() {
                let a = blocks.get(i);
                if a.failure() < delta_hat {
                    continue;
                }
                let m = if a.is_fresh() {
                    let key = FillMemo::key(a.need(), qbar);
                    match last {
                        Some((k, m)) if k == key => m,
                        _ => {
                            let m = *memo
                                .0
                                .entry(key)
                                .or_insert_with(|| fill_count(a, qbar, delta_hat, CAP));
                            last = Some((key, m));
                            m
                        }
                    }
                } else {
                    blocks.fill(i, qbar, delta_hat, CAP)
                };
                if m <= r {
                    r -= m;
                    continue;
                }
                let mut b = blocks.get(i).clone();
                for _ in 0..r {
                    b.add(qbar);
                }
                carry = Some(b);
                first = i;
                landed = true;
                break;
            }
            if !landed {
                return Vec::new();
            }
        }
    }
    // Lines 3–13 for fp: fill one packet from the first blocks that are not δ-complete.
    let q = 1.0 - paths[fp].loss;
    let mut out: Vec<(usize, usize)> = Vec::new();
    let mut s = 0;
    for i in first..blocks.len() {
        if s >= per_packet {
            break;
        }
        let mut b = match carry.take() {
            Some(b) => b,
            None => {
                let a = blocks.get(i);
                if a.failure() < delta_hat {
                    continue;
                }
                a.clone()
            }
        };
        let mut vi = 0;
        while s < per_packet && b.failure() >= delta_hat {
            b.add(q);
            vi += 1;
            s += 1;
        }
        if vi > 0 {
            out.push((i, vi));
        }
    }
    out
}

// ---------------------------------------------------------------------------- sender

/// The block `[start, start + len)` of the send buffer in `buf` (reused), zero-padded to
/// `padded` bytes (k·T); `None` if the buffer no longer holds it.
fn copy_block(
    send_buf: &SendBuffer,
    start: u64,
    len: u64,
    padded: usize,
    mut buf: Vec<u8>,
) -> Option<Vec<u8>> {
    buf.clear();
    buf.resize(padded, 0);
    send_buf
        .copy_out(start, &mut buf[..len as usize])
        .then_some(buf)
}

/// A RaptorQ encoder over a block of `k` symbols of `t` bytes (`data`: k·t bytes).
fn raptorq_encoder(k: usize, t: usize, data: Vec<u8>) -> Encoder {
    let c = RaptorqConfig::new(k, t).expect("geometry validated");
    Encoder::Raptorq(RaptorqEncoder::new(c, data).expect("block of k·T bytes"))
}

#[derive(Debug)]
enum Encoder {
    /// A RaptorQ block of `k` symbols not copied yet: its source symbols (the data itself,
    /// the code being systematic) are read from the send buffer, which holds the block's
    /// bytes until the block is finished (every byte of it acknowledged, or decoded); the
    /// block is copied into an encoder only for its first repair symbol. Blocks with bytes the
    /// application may abandon are copied when they open ([`SendCtx::may_abandon`]).
    Deferred {
        k: usize,
    },
    Raptorq(RaptorqEncoder),
    Lt(LtEncoder),
}

#[derive(Debug)]
struct TxBlock {
    /// First stream byte; also the block's id on the wire.
    start: u64,
    /// Stream bytes of the block (B, or less for a short block).
    len: u64,
    /// k̂: symbols the receiver is expected to need.
    k_hat: u64,
    enc: Encoder,
    next_id: u32,
    sent: u64,
    acked: u64,
    reported: u64,
    decoded: bool,
    /// Some of its bytes belong to abandoned messages: the block finishes without the
    /// receiver decoding it (or decodes only its other bytes), so it is counted apart from
    /// the decoded blocks ([`CodingStats::abandoned_blocks`]).
    abandoned: bool,
    in_flight: Vec<u64>,
    /// Per path: when its latest symbol of this block was sent.
    last_sent: Vec<Option<Instant>>,
    lost_unreplaced: u64,
    /// Packets carrying symbols of this block that a path reported lost (Fig. 6).
    lost_packets: u64,
    /// Cached arrival distribution (δ_b): dropped when the block's counts change, and for
    /// every block when a path's loss estimate drifts (`FmtcpSender::loss_ref`).
    arr: Option<Arrivals>,
    /// The buffer of the last dropped `arr`, reused by the next rebuild.
    spare: Vec<f64>,
    /// Memo of [`fill_count`] on `arr`, per quantised q; emptied with `arr`.
    fill: FillCache,
}

/// [`fill_count`] results of one block's current distribution at the last few arrival
/// probabilities asked. Algorithm 1 asks each path's poll at the mean probability of the
/// *other* paths' virtual packets, so the polls of different paths ask different q of the same
/// unchanged block; one entry made them evict each other.
#[derive(Debug, Default, Clone, Copy)]
struct FillCache {
    /// (q bits, count), the first `len` valid.
    entries: [(u64, usize); FILL_CACHE],
    len: u8,
    /// Slot the next new entry overwrites once all are used (oldest first).
    next: u8,
}

/// Entries of a [`FillCache`].
const FILL_CACHE: usize = 4;

impl FillCache {
    fn get(&self, bits: u64) -> Option<usize> {
        self.entries[..usize::from(self.len)]
            .iter()
            .find(|e| e.0 == bits)
            .map(|e| e.1)
    }
    fn put(&mut self, bits: u64, n: usize) {
        if usize::from(self.len) < FILL_CACHE {
            self.entries[usize::from(self.len)] = (bits, n);
            self.len += 1;
        } else {
            self.entries[usize::from(self.next)] = (bits, n);
            self.next = (self.next + 1) % FILL_CACHE as u8;
        }
    }
    fn clear(&mut self) {
        self.len = 0;
        self.next = 0;
    }
}

/// The symbols one packet carried: (block id, count) per block; one block inline (always so
/// with one symbol per packet), no allocation per packet.
#[derive(Debug)]
enum Record {
    One((u64, u32)),
    Many(Vec<(u64, u32)>),
}

impl Record {
    fn items(&self) -> &[(u64, u32)] {
        match self {
            Record::One(x) => std::slice::from_ref(x),
            Record::Many(v) => v,
        }
    }
}

/// Hasher of the sender's own sequential record ids (never a peer's value): a Fibonacci
/// multiply spreads consecutive ids over the table's control bits, at a fraction of SipHash's
/// cost per packet.
#[derive(Debug, Default, Clone, Copy)]
struct SeqHasher(u64);

impl std::hash::Hasher for SeqHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = x.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

impl TxBlock {
    /// Symbols still missing at the receiver, as far as the sender knows.
    fn need(&self) -> u64 {
        if self.decoded {
            return 0;
        }
        let got = self.acked.max(self.reported);
        if got < self.k_hat {
            self.k_hat - got
        } else {
            1
        }
    }

    /// The arrival distribution of the block's symbols in flight, built in `buf` (its
    /// allocation is reused).
    fn arrivals_in(&self, paths: &[PathEstimate], buf: Vec<f64>) -> Arrivals {
        let mut a = Arrivals::new_in(self.need() as usize, buf);
        for (p, &n) in self.in_flight.iter().enumerate() {
            let q = 1.0 - paths.get(p).map_or(MAX_LOSS, |e| e.loss);
            a.add_many(n, q);
        }
        a
    }

    /// Drops the cached distribution (the block's counts or the loss estimates changed) and
    /// the fill counts memoised on it, keeping its buffer for the next rebuild. The only
    /// place a distribution is dropped, so a rebuilt one always starts with an empty memo.
    fn invalidate(&mut self) {
        if let Some(a) = self.arr.take() {
            self.spare = a.prob;
        }
        self.fill.clear();
    }

    /// The cached arrival distribution, rebuilt if it was dropped.
    #[inline]
    fn cached(&mut self, paths: &[PathEstimate]) -> &Arrivals {
        if self.arr.is_none() {
            self.rebuild(paths);
        }
        self.arr.get_or_insert_with(|| Arrivals::new(0))
    }

    /// Rebuilds the dropped distribution (out of line: Algorithm 1's walk over the pending
    /// blocks mostly finds it cached).
    #[inline(never)]
    fn rebuild(&mut self, paths: &[PathEstimate]) {
        let buf = std::mem::take(&mut self.spare);
        self.arr = Some(self.arrivals_in(paths, buf));
    }

    fn in_flight_total(&self) -> u64 {
        self.in_flight.iter().sum()
    }
}

/// Drops the entries of `map` (non-overlapping ranges keyed by their start, of length
/// `len(value)`) that end at or below `below`; one starting below it and ending above it
/// stays.
fn forget_below<V>(map: &mut BTreeMap<u64, V>, below: u64, len: impl Fn(&V) -> u64) {
    if map.first_key_value().is_none_or(|(&k, _)| k >= below) {
        return;
    }
    let mut keep = map.split_off(&below);
    if let Some((&k, v)) = map.last_key_value() {
        if k + len(v) > below {
            if let Some(v) = map.remove(&k) {
                keep.insert(k, v);
            }
        }
    }
    *map = keep;
}

/// The sender's pending blocks from `skip` on, as Algorithm 1 reads them: distributions
/// (re)built on first access, [`fill_count`] memoised per block.
struct SenderBlocks<'a> {
    blocks: &'a mut VecDeque<TxBlock>,
    est: &'a [PathEstimate],
    skip: usize,
}

impl BlockView for SenderBlocks<'_> {
    fn len(&self) -> usize {
        self.blocks.len() - self.skip
    }
    fn get(&mut self, i: usize) -> &Arrivals {
        let est = self.est;
        self.blocks[self.skip + i].cached(est)
    }
    fn fill(&mut self, i: usize, q: f64, delta_hat: f64, cap: usize) -> usize {
        let b = &mut self.blocks[self.skip + i];
        if let Some(n) = b.fill.get(q.to_bits()) {
            return n;
        }
        let n = fill_count(b.cached(self.est), q, delta_hat, cap);
        b.fill.put(q.to_bits(), n);
        n
    }
}

/// Sending half of `fmtcp`.
#[derive(Debug)]
pub struct FmtcpSender {
    cfg: FmtcpConfig,
    geo: Geometry,
    blocks: VecDeque<TxBlock>,
    /// Stream offset where the next block starts.
    next_start: u64,
    /// Per packet in flight (by [`PacketTag::a`]): the symbols it carried.
    records: HashMap<u64, Record, BuildHasherDefault<SeqHasher>>,
    /// Reused to collect a packet's symbols.
    items_scratch: Vec<(u64, u32)>,
    /// [`SendCtx::abandoned_count`] when the open blocks were last checked against the
    /// abandoned ranges.
    abandoned_seen: u64,
    next_record: u64,
    block_buf: Vec<u8>,
    /// The LT code key ([`LtParams::with_key`]): the connection id.
    code_key: u64,
    stats: CodingStats,
    /// Loss estimates the cached distributions were computed with.
    loss_ref: Vec<f64>,
    /// The first `complete` blocks are δ-complete with a valid cache (Algorithm 1 skips
    /// them); lowered when a block's counts change.
    complete: usize,
    /// Per path: when it was last penalised.
    last_penalty: Vec<Option<Instant>>,
    /// Path estimates of the current call (reused buffer).
    est: Vec<PathEstimate>,
    memo: FillMemo,
    /// δ̂ in force (the configured one, or the adaptive one of this call).
    delta: f64,
}

/// A cached δ_b is recomputed when a path's loss estimate moved by more than this fraction
/// of the value it was computed with (plus [`DRIFT_ABS`]).
const DRIFT_REL: f64 = 0.1;
/// Absolute part of the drift tolerance.
const DRIFT_ABS: f64 = 0.001;

impl FmtcpSender {
    fn new(cfg: FmtcpConfig, geo: Geometry, code_key: u64) -> Self {
        FmtcpSender {
            cfg,
            geo,
            blocks: VecDeque::new(),
            next_start: 0,
            records: HashMap::default(),
            items_scratch: Vec::new(),
            abandoned_seen: 0,
            next_record: 0,
            block_buf: Vec::new(),
            code_key,
            stats: CodingStats::default(),
            loss_ref: Vec::new(),
            complete: 0,
            last_penalty: Vec::new(),
            est: Vec::new(),
            memo: FillMemo::default(),
            delta: cfg.delta,
        }
    }

    /// Path estimates for this call; drops every cached δ_b if a loss estimate drifted.
    fn estimates(&mut self, ctx: &SendCtx<'_>) {
        self.est.clear();
        self.est.extend(
            ctx.paths
                .iter()
                .map(|v| PathEstimate::from_view(v, ctx.now)),
        );
        let drift = self.loss_ref.len() != self.est.len()
            || self
                .est
                .iter()
                .zip(&self.loss_ref)
                .any(|(e, &r)| (e.loss - r).abs() > DRIFT_REL * r + DRIFT_ABS);
        if drift {
            self.loss_ref.clear();
            self.loss_ref.extend(self.est.iter().map(|e| e.loss));
            for b in &mut self.blocks {
                b.invalidate();
            }
            self.complete = 0;
        }
        if self.cfg.adaptive_delta {
            let d = self.adaptive_delta(ctx);
            if d != self.delta {
                // The δ-complete prefix and the fill memos were computed with the old δ̂.
                self.delta = d;
                self.complete = 0;
                self.memo.0.clear();
                for b in &mut self.blocks {
                    b.fill.clear();
                }
            }
        }
    }

    /// Adaptive δ̂ (module docs, "Adaptive δ̂"): one symbol over the expected stall cost of a
    /// decoding failure, both in symbols, clamped to [delta_min, delta_max] and rounded down
    /// to a quarter of a binary order of magnitude (so that it changes seldom).
    fn adaptive_delta(&self, ctx: &SendCtx<'_>) -> f64 {
        let (lo, hi) = (self.cfg.delta_min, self.cfg.delta_max);
        // Aggregate rate in symbols per second: Σ_f (cwnd_f / MSS_f) / RTT_f.
        let mut rate = 0.0;
        // Recovery delay: the loss is learnt after the response time RT_f (Eq. 9) of the path
        // that lost it, weighted by where losses happen (rate_f · p_f), and the replacement
        // arrives after the smallest EDT (Eq. 8).
        let (mut wsum, mut rtsum, mut edt_min) = (0.0, 0.0, f64::INFINITY);
        for (v, e) in ctx.paths.iter().zip(&self.est) {
            if !e.active {
                continue;
            }
            let rtt = v.rtt_or_rto().as_secs_f64().max(1e-6);
            let r = (v.cwnd as f64 / v.mss.max(1) as f64) / rtt;
            rate += r;
            let w = r * e.loss;
            wsum += w;
            rtsum += w * e.rt;
            edt_min = edt_min.min(e.edt);
        }
        if wsum <= 0.0 || !edt_min.is_finite() {
            // No loss expected anywhere: no failure to insure against.
            return hi;
        }
        let d = rtsum / wsum + edt_min;
        let per_symbol = self.geo.symbol as f64;
        // Room: stream bytes below the flow-control limit of which no symbol was sent yet
        // (blocks open but untouched, and what is not open yet); a stall shorter than the
        // time to send them costs nothing.
        let untouched: u64 = self
            .blocks
            .iter()
            .rev()
            .take_while(|b| b.sent == 0)
            .map(|b| b.len)
            .sum();
        let room = (ctx.max_data.saturating_sub(self.next_start) + untouched) as f64 / per_symbol;
        let cost = rate * self.geo.per_packet as f64 * d - room;
        if cost <= 1.0 / hi {
            return hi;
        }
        let x = (1.0 / cost).clamp(lo, hi);
        // Quantise: 2^(⌊4·log2 x⌋/4), kept within the bounds.
        (((x.log2() * 4.0).floor() / 4.0).exp2()).clamp(lo, hi)
    }

    /// The block geometry.
    pub fn geometry(&self) -> Geometry {
        self.geo
    }

    /// Position of the open block whose id (first stream byte) is `id`.
    fn position(&self, id: u64) -> Option<usize> {
        // Blocks are contiguous and all but short ones are `geo.block` long: try the index
        // that gives, then search (the same answer either way).
        let first = self.blocks.front()?.start;
        let guess = id
            .checked_sub(first)
            .map(|d| d / self.geo.block.max(1))
            .and_then(|i| usize::try_from(i).ok());
        if let Some(i) = guess {
            if self.blocks.get(i).is_some_and(|b| b.start == id) {
                return Some(i);
            }
        }
        self.blocks.binary_search_by_key(&id, |b| b.start).ok()
    }

    fn block_mut(&mut self, id: u64) -> Option<&mut TxBlock> {
        let pos = self.position(id)?;
        // Callers change the block's counts: it leaves the complete prefix.
        self.complete = self.complete.min(pos);
        self.blocks.get_mut(pos)
    }

    /// Drops the finished blocks at the front (acknowledged up to `ack` or reported decoded)
    /// and records their lost packets in the per-block histogram.
    fn drop_finished(&mut self, ack: u64) {
        while self
            .blocks
            .front()
            .is_some_and(|b| b.start + b.len <= ack || b.decoded)
        {
            if let Some(b) = self.blocks.pop_front() {
                self.complete = self.complete.saturating_sub(1);
                self.stats.record_block_losses(b.lost_packets);
                let k = b.len.div_ceil(self.geo.symbol as u64);
                if b.abandoned {
                    self.stats.abandoned_blocks += 1;
                    self.stats.abandoned_source_symbols += k;
                    self.stats.abandoned_symbols_sent += b.sent;
                } else {
                    self.stats.finished_source_symbols += k;
                    self.stats.finished_symbols_sent += b.sent;
                }
            }
        }
    }

    /// Open blocks every byte of which belongs to abandoned messages are finished: the
    /// receiver skips their bytes, so their symbols would be sent for nothing (and, sent
    /// in stream order ahead of fresh data, would keep a sender that fell behind late for
    /// every later message). A block only partly abandoned stays: its other bytes are owed.
    /// Both are marked abandoned, so that the coding overhead counts only blocks the
    /// receiver decoded. The blocks are checked once per abandonment, not per packet: a
    /// block opened since begins after the abandoned bytes ([`SendCtx::skip_abandoned`] in
    /// `refresh`) and is marked when it is opened.
    fn give_up_abandoned(&mut self, ctx: &SendCtx<'_>) {
        let count = ctx.abandoned_count();
        if count == self.abandoned_seen {
            return;
        }
        self.abandoned_seen = count;
        for (i, b) in self.blocks.iter_mut().enumerate() {
            let (start, end) = (b.start, b.start + b.len);
            if !b.abandoned && ctx.touches_abandoned(start, end) {
                b.abandoned = true;
            }
            if !b.decoded && ctx.is_abandoned_range(start, end) {
                b.decoded = true;
                b.invalidate();
                self.complete = self.complete.min(i);
            }
        }
    }

    /// True if no new block can be opened: the next one does not fit below the peer's
    /// flow-control limit, or the stream ended and every block is open.
    fn window_blocked(&self, ctx: &SendCtx<'_>) -> bool {
        let start = self.next_start;
        let mut end = start + self.geo.block;
        if let Some(f) = ctx.final_size {
            if start >= f {
                return true;
            }
            end = end.min(f);
        }
        end > ctx.max_data
    }

    /// Opportunistic repair (module docs): symbols for the oldest undecoded blocks whose
    /// δ_b, counting only the symbols in flight on paths expected to deliver no later than
    /// `path` (EDT_g ≤ EDT_path), is still at least δ̂.
    fn repair_plan(&self, path: usize) -> Vec<(usize, usize)> {
        let Some(me) = self.est.get(path) else {
            return Vec::new();
        };
        let q = 1.0 - me.loss;
        let pp = self.geo.per_packet;
        let mut out = Vec::new();
        let mut s = 0;
        for (i, b) in self.blocks.iter().enumerate().take(REPAIR_BLOCKS) {
            if b.decoded {
                continue;
            }
            let mut a = Arrivals::new(b.need() as usize);
            for (g, &n) in b.in_flight.iter().enumerate() {
                match self.est.get(g) {
                    Some(e) if e.edt <= me.edt => a.add_many(n, 1.0 - e.loss),
                    _ => {}
                }
            }
            let mut vi = 0;
            while s < pp && a.failure() >= self.delta {
                a.add(q);
                vi += 1;
                s += 1;
            }
            if vi > 0 {
                out.push((i, vi));
            }
            if s >= pp {
                break;
            }
        }
        out
    }

    /// Penalisation after a repair (module docs): of the paths holding symbols of the first
    /// repaired block (the oldest undecoded one, which holds the window), the one whose
    /// symbols are expected to arrive last (send time of its latest symbol of the block plus
    /// EDT_g, Eq. 8), if later than the repair symbol's arrival (now + EDT of `path`), has its
    /// window reduced, at most once per its RTT, as `mptcp` penalises the path holding the
    /// segment at the window's edge.
    fn penalize_slower(&mut self, ctx: &mut SendCtx<'_>, path: usize, items: &[(u64, u32)]) {
        if !self.cfg.penalize {
            return;
        }
        let Some(me) = self
            .est
            .get(path)
            .map(|e| e.edt + self.cfg.penalize_margin * e.rt)
        else {
            return;
        };
        let Some(b) = items
            .first()
            .and_then(|&(id, _)| self.position(id))
            .and_then(|i| self.blocks.get(i))
        else {
            return;
        };
        let mut worst: Option<(usize, f64)> = None;
        for (g, &n) in b.in_flight.iter().enumerate() {
            let (Some(e), Some(Some(sent))) = (self.est.get(g), b.last_sent.get(g)) else {
                continue;
            };
            // Expected arrival of g's symbols of the block, in seconds from now.
            let eat = e.edt - ctx.now.saturating_since(*sent).as_secs_f64();
            if n > 0 && g != path && eat > me && worst.is_none_or(|(_, w)| eat > w) {
                worst = Some((g, eat));
            }
        }
        let Some((g, _)) = worst else {
            return;
        };
        if g >= ctx.paths.len() {
            return;
        }
        if self.last_penalty.len() < ctx.paths.len() {
            self.last_penalty.resize(ctx.paths.len(), None);
        }
        let rtt = ctx.paths[g].rtt_or_rto();
        if self.last_penalty[g].is_none_or(|t| ctx.now >= t + rtt) {
            self.last_penalty[g] = Some(ctx.now);
            self.stats.penalizations += 1;
            ctx.request(Action::Penalize { path: g });
        }
    }

    /// Extends the prefix of δ-complete blocks (`complete`) as far as it goes.
    fn advance_complete(&mut self) {
        let est = &self.est;
        let delta = self.delta;
        while let Some(b) = self.blocks.get_mut(self.complete) {
            if b.cached(est).failure() >= delta {
                break;
            }
            self.complete += 1;
        }
    }

    /// Drops finished blocks and opens new ones inside the flow-control window. With `short`
    /// (the sender is idle: every open block is δ-complete), the written bytes that do not
    /// make a full block yet are opened as a short block, if a full block would fit the
    /// flow-control window (module docs, "Short blocks").
    fn refresh(&mut self, ctx: &mut SendCtx<'_>, short: bool) {
        self.give_up_abandoned(ctx);
        self.drop_finished(ctx.data_ack);
        let b = self.geo.block;
        loop {
            if self.blocks.len() >= MAX_OPEN_BLOCKS {
                return;
            }
            if self.next_start < ctx.data_ack {
                // The receiver already holds it (or skipped it: an abandoned message).
                self.next_start = ctx.data_ack;
            }
            // Bytes of abandoned messages (late video frames) are not sent: the next block
            // begins after them, as ARQ goes on with the next unsent byte. The ABANDON frame
            // the engine sends tells the receiver to skip them.
            self.next_start = ctx.skip_abandoned(self.next_start);
            let start = self.next_start;
            let mut end = start + b;
            if let Some(f) = ctx.final_size {
                if start >= f {
                    return;
                }
                end = end.min(f);
            }
            if end > ctx.max_data {
                return;
            }
            // A block ends where an abandonable message (a video frame) begins or ends, so
            // that abandoning it never leaves a block partly owed.
            if self.cfg.cut_at_messages {
                end = ctx.abandonable_cut(start, end);
            }
            if end > ctx.send_buf.end() {
                // A writer with bytes left over fills the block as soon as room opens.
                if !short || ctx.writer_waiting || ctx.send_buf.end() <= start {
                    return;
                }
                end = ctx.send_buf.end();
            }
            let len = end - start;
            let t = self.geo.symbol;
            let k = (len as usize).div_ceil(t);
            // A RaptorQ block the send buffer keeps whole until it is finished is read from
            // there; one with abandonable bytes (which the peer may skip, letting the buffer
            // release them early) is copied now.
            let (enc, k_hat) = if self.cfg.code == Code::Raptorq && !ctx.may_abandon(start, end) {
                if !ctx.send_buf.take_uncopied(start, len) {
                    return;
                }
                (Encoder::Deferred { k }, k as u64)
            } else {
                let buf = std::mem::take(&mut self.block_buf);
                let Some(data) = copy_block(ctx.send_buf, start, len, k * t, buf) else {
                    return;
                };
                match self.cfg.code {
                    Code::Raptorq => (raptorq_encoder(k, t, data), k as u64),
                    Code::Lt => {
                        let p = LtParams::new(k, t, self.cfg.lt_c, self.cfg.lt_delta)
                            .expect("geometry validated")
                            .with_key(self.code_key);
                        let e =
                            LtEncoder::new(p, lt_key(start), &data).expect("block of k·T bytes");
                        self.block_buf = data;
                        let k_hat = (k as f64 * (1.0 + self.cfg.lt_overhead)).ceil() as u64;
                        (Encoder::Lt(e), k_hat.max(k as u64))
                    }
                }
            };
            self.stats.source_symbols += k as u64;
            self.stats.blocks += 1;
            self.blocks.push_back(TxBlock {
                start,
                len,
                k_hat,
                enc,
                next_id: 0,
                sent: 0,
                acked: 0,
                reported: 0,
                decoded: false,
                abandoned: ctx.touches_abandoned(start, end),
                in_flight: vec![0; ctx.paths.len()],
                last_sent: vec![None; ctx.paths.len()],
                lost_unreplaced: 0,
                lost_packets: 0,
                arr: None,
                spare: Vec::new(),
                fill: FillCache::default(),
            });
            self.next_start = end;
            if end - start < b && ctx.final_size.is_none() {
                self.stats.short_blocks += 1;
            }
        }
    }

    /// Writes one new symbol of block `bi` into `pkt`; false if it does not fit.
    fn emit_symbol(
        &mut self,
        ctx: &mut SendCtx<'_>,
        bi: usize,
        path: usize,
        pkt: &mut PacketWriter<'_>,
    ) -> bool {
        let full = self.geo.block;
        let b = &mut self.blocks[bi];
        let id = b.next_id;
        if id > MAX_ENCODING_SYMBOL_ID {
            return false;
        }
        let coding = if b.len == full {
            Coding::Plain
        } else {
            Coding::Seed(b.len)
        };
        let t = self.geo.symbol;
        if let Encoder::Deferred { k } = b.enc {
            if id as usize >= k {
                // The first repair symbol: the encoder needs the whole block, still in the
                // send buffer.
                let Some(data) = copy_block(ctx.send_buf, b.start, b.len, k * t, Vec::new()) else {
                    return false;
                };
                b.enc = raptorq_encoder(k, t, data);
            }
        }
        // The encoder writes the symbol straight into the packet (the bytes `Frame::Symbol`
        // would write; no intermediate copy); a source symbol of a deferred block comes
        // straight from the send buffer.
        let (enc, send_buf, start, len) = (&mut b.enc, ctx.send_buf, b.start, b.len);
        let pushed = pkt.push_symbol_with(start, id, coding, t, |dst| match enc {
            Encoder::Deferred { .. } => {
                let from = u64::from(id) * t as u64;
                let n = (len - from).min(t as u64) as usize;
                dst[n..].fill(0);
                send_buf.copy_out(start + from, &mut dst[..n])
            }
            Encoder::Raptorq(e) => e.encode(id, dst).is_ok(),
            Encoder::Lt(e) => e.encode(id, dst).is_ok(),
        });
        if pushed != Ok(true) {
            return false;
        }
        if b.sent == 0 {
            ctx.mark_sent(b.start, b.start + b.len);
        }
        let st = &mut self.stats;
        st.symbols_sent += 1;
        if b.lost_unreplaced > 0 {
            b.lost_unreplaced -= 1;
            st.replacement_symbols += 1;
        } else if b.acked.max(b.reported) + b.in_flight_total() >= b.k_hat {
            st.appended_symbols += 1;
        }
        b.next_id += 1;
        b.sent += 1;
        b.invalidate();
        self.complete = self.complete.min(bi);
        if b.in_flight.len() <= path {
            b.in_flight.resize(path + 1, 0);
        }
        b.in_flight[path] += 1;
        if b.last_sent.len() <= path {
            b.last_sent.resize(path + 1, None);
        }
        b.last_sent[path] = Some(ctx.now);
        true
    }

    fn settle(&mut self, path: usize, tag: PacketTag, lost: bool) {
        let Some(record) = self.records.remove(&tag.a) else {
            return;
        };
        for &(index, n) in record.items() {
            if let Some(b) = self.block_mut(index) {
                let n = u64::from(n);
                if let Some(f) = b.in_flight.get_mut(path) {
                    *f = f.saturating_sub(n);
                }
                b.invalidate();
                if lost {
                    b.lost_unreplaced += n;
                    b.lost_packets += 1;
                } else {
                    b.acked += n;
                }
            }
        }
    }
}

impl SchemeSender for FmtcpSender {
    fn name(&self) -> &'static str {
        "fmtcp"
    }

    fn poll_packet(
        &mut self,
        ctx: &mut SendCtx<'_>,
        path: usize,
        pkt: &mut PacketWriter<'_>,
    ) -> Option<PacketTag> {
        self.refresh(ctx, false);
        if self.blocks.is_empty() {
            // Idle with nothing open: written bytes short of a block go out now (module
            // docs, "Short blocks").
            self.refresh(ctx, true);
        }
        if self.blocks.is_empty() || path >= ctx.paths.len() {
            return None;
        }
        self.estimates(ctx);
        self.advance_complete();
        if self.complete == self.blocks.len() {
            // Idle: written bytes short of a block go out now (module docs, "Short blocks").
            self.refresh(ctx, true);
            self.advance_complete();
        }
        if self.blocks.is_empty() {
            return None;
        }
        let est = &self.est;
        let delta = self.delta;
        let skip = self.complete;
        let mut view = SenderBlocks {
            blocks: &mut self.blocks,
            est,
            skip,
        };
        let mut alloc = allocate_with(
            path,
            est,
            &mut view,
            self.geo.per_packet,
            delta,
            self.cfg.allocation,
            &mut self.memo,
        );
        for a in &mut alloc {
            a.0 += skip;
        }
        // A block of a message this path cannot deliver by its deadline at the peer is left
        // to faster paths (`SendCtx::in_time`).
        alloc.retain(|&(bi, _)| ctx.in_time(self.blocks[bi].start));
        let mut repair = false;
        if alloc.is_empty() && self.cfg.repair && self.window_blocked(ctx) {
            alloc = self.repair_plan(path);
            alloc.retain(|&(bi, _)| ctx.in_time(self.blocks[bi].start));
            repair = !alloc.is_empty();
        }
        let mut items = std::mem::take(&mut self.items_scratch);
        items.clear();
        'outer: for (bi, n) in alloc {
            for _ in 0..n {
                if !self.emit_symbol(ctx, bi, path, pkt) {
                    break 'outer;
                }
                let index = self.blocks[bi].start;
                match items.last_mut() {
                    Some((i, c)) if *i == index => *c += 1,
                    _ => items.push((index, 1)),
                }
            }
        }
        if items.is_empty() {
            self.items_scratch = items;
            return None;
        }
        let n: u32 = items.iter().map(|&(_, c)| c).sum();
        if repair {
            self.stats.repair_symbols += u64::from(n);
            self.penalize_slower(ctx, path, &items);
        }
        let id = self.next_record;
        self.next_record += 1;
        let record = match items[..] {
            [one] => Record::One(one),
            _ => Record::Many(items.clone()),
        };
        self.items_scratch = items;
        self.records.insert(id, record);
        Some(PacketTag {
            a: id,
            b: u64::from(n),
        })
    }

    fn on_acked(&mut self, _ctx: &mut SendCtx<'_>, pkt: &SentInfo) {
        self.settle(pkt.path, pkt.tag, false);
    }

    fn on_lost(&mut self, _ctx: &mut SendCtx<'_>, pkt: &SentInfo, _kind: LossKind) {
        self.settle(pkt.path, pkt.tag, true);
    }

    fn on_data_ack(&mut self, ctx: &mut SendCtx<'_>) {
        // The acknowledgement may pass abandoned bytes: mark their blocks before they are
        // dropped (the engine prunes the abandoned ranges after this call).
        self.give_up_abandoned(ctx);
        self.drop_finished(ctx.data_ack);
    }

    fn counters(&self) -> serde_json::Value {
        serde_json::to_value(&self.stats).unwrap_or_default()
    }

    fn on_feedback(&mut self, ctx: &mut SendCtx<'_>, frame: &Frame<'_>) -> Result<(), SchemeError> {
        // Only the format the connection's configuration says (both ends have it).
        match *frame {
            Frame::Scheme {
                kind: FEEDBACK_KIND,
                body,
            } if self.cfg.compact_feedback => self.on_runs(body)?,
            Frame::Feedback(f) if !self.cfg.compact_feedback => {
                if f.count > u64::from(MAX_ENCODING_SYMBOL_ID) + 1 {
                    return Err(SchemeError::Invalid("symbol count beyond the id space"));
                }
                if f.block >= self.next_start {
                    return Err(SchemeError::Unknown("feedback for a block never sent"));
                }
                // A block no longer held finished already.
                if let Some(p) = self.position(f.block) {
                    self.note_feedback(p, f.count, f.decoded)?;
                }
            }
            _ => return Err(SchemeError::Unexpected),
        }
        self.drop_finished(ctx.data_ack);
        Ok(())
    }
}

impl FmtcpSender {
    /// A compact feedback body: runs of `start, n, n × state` (module docs, "Feedback").
    fn on_runs(&mut self, body: &[u8]) -> Result<(), SchemeError> {
        let mut r = Reader::new(body);
        let bad = |_| SchemeError::Invalid("truncated feedback");
        while !r.is_empty() {
            let start = r.varint("block").map_err(bad)?;
            let n = r.varint("run length").map_err(bad)?;
            if start >= self.next_start {
                return Err(SchemeError::Unknown("feedback for a block never sent"));
            }
            // A run starting below the first block held is older than what finished that
            // block (an ACK overtaken by a later one): its entries are parsed and skipped, the
            // later report already said as much or more (counts only grow).
            let mut pos = match self.position(start) {
                Some(p) => Some(p),
                None if self.blocks.front().is_none_or(|b| start < b.start) => None,
                None => {
                    return Err(SchemeError::Invalid(
                        "feedback for a block starting elsewhere",
                    ))
                }
            };
            // Every entry takes at least one byte: a run longer than the body fails its read.
            for _ in 0..n {
                let state = r.varint("block state").map_err(bad)?;
                let Some(p) = pos else { continue };
                // State 0: decoded; c + 1: c symbols held.
                self.note_feedback(p, state.saturating_sub(1), state == 0)?;
                pos = Some(p + 1);
            }
        }
        Ok(())
    }

    /// Applies one block's feedback to the block at `pos`: the receiver holds `count` symbols
    /// of it, or has decoded it.
    fn note_feedback(&mut self, pos: usize, count: u64, decoded: bool) -> Result<(), SchemeError> {
        if count > u64::from(MAX_ENCODING_SYMBOL_ID) + 1 {
            return Err(SchemeError::Invalid("symbol count beyond the id space"));
        }
        // The block's counts may change: it leaves the complete prefix.
        self.complete = self.complete.min(pos);
        let b = self
            .blocks
            .get_mut(pos)
            .ok_or(SchemeError::Unknown("feedback for a block never sent"))?;
        if count > b.sent {
            return Err(SchemeError::Invalid("more symbols reported than sent"));
        }
        if count > b.reported {
            b.reported = count;
            b.invalidate();
        }
        if decoded && !b.decoded {
            b.decoded = true;
            b.invalidate();
            self.stats.blocks_decoded += 1;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------- receiver

#[derive(Debug)]
enum Decoder {
    Raptorq(RaptorqDecoder),
    Lt(LtDecoder),
}

#[derive(Debug)]
struct RxBlock {
    len: u64,
    dec: Decoder,
}

/// Receiving half of `fmtcp`.
#[derive(Debug)]
pub struct FmtcpReceiver {
    cfg: FmtcpConfig,
    geo: Geometry,
    /// Blocks being decoded, by id (first stream byte).
    blocks: BTreeMap<u64, RxBlock>,
    /// Decoded blocks not yet below the in-order delivery point: id → length.
    done: BTreeMap<u64, u64>,
    /// The LT code key ([`LtParams::with_key`]): the connection id.
    code_key: u64,
    stats: CodingStats,
    /// Reused by [`SchemeReceiver::write_feedback`]: the blocks reported, the frame body.
    fb_items: Vec<(u64, u64, u64)>,
    fb_body: Vec<u8>,
}

impl FmtcpReceiver {
    fn new(cfg: FmtcpConfig, geo: Geometry, code_key: u64) -> Self {
        FmtcpReceiver {
            cfg,
            geo,
            blocks: BTreeMap::new(),
            done: BTreeMap::new(),
            code_key,
            stats: CodingStats::default(),
            fb_items: Vec::new(),
            fb_body: Vec::new(),
        }
    }

    fn on_symbol(&mut self, ctx: &mut RecvCtx<'_>, s: &SymbolFrame<'_>) -> Result<(), SchemeError> {
        let g = self.geo;
        if s.data.len() != g.symbol {
            return Err(SchemeError::Invalid("symbol of the wrong size"));
        }
        let start = s.block;
        let len = match s.coding {
            Coding::Plain => g.block,
            Coding::Seed(len) if len > 0 && len < g.block => len,
            _ => return Err(SchemeError::Invalid("bad block length")),
        };
        let Some(end) = start.checked_add(len) else {
            return Err(SchemeError::Unknown("block beyond the stream"));
        };
        if s.id > MAX_ENCODING_SYMBOL_ID {
            return Err(SchemeError::Invalid("symbol id out of range"));
        }
        let contiguous = ctx.recv_buf.contiguous_end();
        if end <= contiguous || self.done.get(&start) == Some(&len) {
            self.stats.late_symbols += 1;
            return Ok(());
        }
        // A block may begin below the in-order point: an abandoned message (a late video
        // frame) is held without data, so the in-order point moves to its end, which need
        // not be a block boundary. The block's bytes above that point are still owed; it is
        // decoded as any other, and the receive buffer keeps only what lies above the point.
        // (Refusing its symbols left those bytes undeliverable, so the next message was
        // abandoned too, and so on: docs/experiments/stress.md, "Blocks across an abandoned
        // message".)
        if ctx.recv_buf.final_size().is_some_and(|f| end > f) {
            return Err(SchemeError::Unknown("block past the stream end"));
        }
        if end > ctx.recv_buf.max_data() {
            return Err(SchemeError::Unknown("block beyond the receive window"));
        }
        if !self.blocks.contains_key(&start) {
            if self.overlaps(start, end) {
                return Err(SchemeError::Invalid("block overlaps another block"));
            }
            if self.blocks.len() + self.done.len() >= MAX_OPEN_BLOCKS {
                return Err(SchemeError::Invalid("too many open blocks"));
            }
        }
        let k = (len as usize).div_ceil(g.symbol);
        let cfg = self.cfg;
        let code_key = self.code_key;
        let rb = match self.blocks.entry(s.block) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => {
                let dec = match cfg.code {
                    Code::Raptorq => match RaptorqConfig::new(k, g.symbol) {
                        Ok(c) => Decoder::Raptorq(RaptorqDecoder::new(c)),
                        Err(_) => return Err(SchemeError::Invalid("bad block")),
                    },
                    Code::Lt => match LtParams::new(k, g.symbol, cfg.lt_c, cfg.lt_delta) {
                        Ok(p) => Decoder::Lt(LtDecoder::with_elimination(
                            p.with_key(code_key),
                            lt_key(start),
                        )),
                        Err(_) => return Err(SchemeError::Invalid("bad block")),
                    },
                };
                e.insert(RxBlock { len, dec })
            }
        };
        if rb.len != len {
            return Err(SchemeError::Invalid("block length changed"));
        }
        let complete = match &mut rb.dec {
            Decoder::Raptorq(d) => d.push(s.id, s.data).map(|p| p.complete),
            Decoder::Lt(d) => d
                .push(
                    LtSymbolId {
                        block: lt_key(start),
                        seed: s.id,
                    },
                    s.data,
                )
                .map(|p| p.complete),
        };
        let complete = match complete {
            Ok(c) => c,
            Err(_) => return Err(SchemeError::Invalid("symbol refused by decoder")),
        };
        if complete {
            if let Some(rb) = self.blocks.remove(&s.block) {
                let data = match &rb.dec {
                    Decoder::Raptorq(d) => d.data(),
                    Decoder::Lt(d) => d.data(),
                };
                if let Ok(data) = data {
                    ctx.recv_buf.insert(start, &data[..len as usize]);
                }
                self.done.insert(start, len);
                self.stats.blocks_decoded += 1;
            }
        }
        // Forget the blocks the application can now read in order: those ending at or below
        // the in-order point. Blocks never overlap, so at most the last one starting below it
        // reaches above it (across an abandoned message) and is kept.
        let below = ctx.recv_buf.contiguous_end();
        forget_below(&mut self.done, below, |&len| len);
        forget_below(&mut self.blocks, below, |b| b.len);
        Ok(())
    }

    /// True if stream bytes `[start, end)` overlap a block being decoded or decoded.
    fn overlaps(&self, start: u64, end: u64) -> bool {
        let before = |m: Option<(u64, u64)>| m.is_some_and(|(s, l)| s + l > start);
        let after = |m: Option<u64>| m.is_some_and(|s| s < end);
        before(self.done.range(..=start).next_back().map(|(&s, &l)| (s, l)))
            || before(
                self.blocks
                    .range(..=start)
                    .next_back()
                    .map(|(&s, b)| (s, b.len)),
            )
            || after(self.done.range(start + 1..).next().map(|(&s, _)| s))
            || after(self.blocks.range(start + 1..).next().map(|(&s, _)| s))
    }
}

impl SchemeReceiver for FmtcpReceiver {
    fn on_frame(
        &mut self,
        ctx: &mut RecvCtx<'_>,
        _from: FrameSource,
        frame: &Frame<'_>,
    ) -> Result<(), SchemeError> {
        match frame {
            Frame::Symbol(s) => self.on_symbol(ctx, s),
            _ => Err(SchemeError::Unexpected),
        }
    }

    fn counters(&self) -> serde_json::Value {
        serde_json::to_value(&self.stats).unwrap_or_default()
    }

    fn write_feedback(&mut self, _now: Instant, _path: usize, pkt: &mut PacketWriter<'_>) {
        if self.cfg.compact_feedback {
            self.write_runs(pkt);
            return;
        }
        // One FEEDBACK frame per block: those decoded, then those being decoded.
        for &b in self.done.keys() {
            let f = Frame::Feedback(FeedbackFrame {
                block: b,
                count: 0,
                decoded: true,
            });
            if pkt.push(&f).is_err() {
                return;
            }
        }
        for (&b, rb) in &self.blocks {
            let count = match &rb.dec {
                Decoder::Raptorq(d) => d.received(),
                Decoder::Lt(d) => d.received(),
            } as u64;
            let f = Frame::Feedback(FeedbackFrame {
                block: b,
                count,
                decoded: false,
            });
            if pkt.push(&f).is_err() {
                return;
            }
        }
    }
}

impl FmtcpReceiver {
    /// `compact_feedback`: one SCHEME frame of runs (module docs, "Feedback").
    fn write_runs(&mut self, pkt: &mut PacketWriter<'_>) {
        // Frame type, kind and the body's length (a varint of at most the room left).
        let room = pkt.remaining();
        let header = 1 + varint_len(FEEDBACK_KIND) + varint_len(room as u64);
        let Some(room) = room.checked_sub(header) else {
            return;
        };
        let mut items = std::mem::take(&mut self.fb_items);
        items.clear();
        // Decoded blocks awaiting in-order delivery and blocks being decoded: two sorted
        // lists, merged by id (a decoded block first on a tie, which does not occur).
        let mut done = self.done.iter().map(|(&id, &len)| (id, len, 0)).peekable();
        let mut open = self
            .blocks
            .iter()
            .map(|(&id, rb)| {
                let count = match &rb.dec {
                    Decoder::Raptorq(d) => d.received(),
                    Decoder::Lt(d) => d.received(),
                } as u64;
                (id, rb.len, count + 1)
            })
            .peekable();
        loop {
            let next = match (done.peek(), open.peek()) {
                (Some(d), Some(o)) if o.0 < d.0 => open.next(),
                (Some(_), _) => done.next(),
                (None, _) => open.next(),
            };
            match next {
                Some(item) => items.push(item),
                None => break,
            }
        }
        let mut body = std::mem::take(&mut self.fb_body);
        encode_runs(&mut body, room, &items);
        if !body.is_empty() {
            let _ = pkt.push(&Frame::Scheme {
                kind: FEEDBACK_KIND,
                body: &body,
            });
        }
        self.fb_items = items;
        self.fb_body = body;
    }
}

/// SCHEME kind of `fmtcp`'s feedback, receiver → sender (module docs, "Feedback").
pub const FEEDBACK_KIND: u64 = 0x81;

/// Writes `items` — the receiver's blocks `(id, length, state)` in increasing id, state 0 =
/// decoded, c + 1 = c symbols held — into `out` as runs of consecutive blocks, `start, n,
/// n × state` (varints), within `room` bytes: what does not fit is left out from the end.
fn encode_runs(out: &mut Vec<u8>, room: usize, items: &[(u64, u64, u64)]) {
    out.clear();
    let mut i = 0;
    while i < items.len() {
        let mut j = i + 1;
        while j < items.len() && items[j].0 == items[j - 1].0.saturating_add(items[j - 1].1) {
            j += 1;
        }
        // As many entries of the run [i, j) as fit.
        let left = room.saturating_sub(out.len());
        let start_len = varint_len(items[i].0);
        let mut n = 0;
        let mut bytes = 0;
        for it in &items[i..j] {
            let more = varint_len(it.2);
            if start_len + varint_len(n as u64 + 1) + bytes + more > left {
                break;
            }
            bytes += more;
            n += 1;
        }
        if n == 0 {
            return;
        }
        put_varint(out, items[i].0);
        put_varint(out, n as u64);
        for it in &items[i..i + n] {
            put_varint(out, it.2);
        }
        if n < j - i {
            return;
        }
        i = j;
    }
}

/// Counters of the coded schemes (symbols, Eq. 7 redundancy); zero for the others.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CodingStats {
    /// Blocks opened by the sender.
    pub blocks: u64,
    /// Blocks decoded (receiver), or reported decoded (sender).
    pub blocks_decoded: u64,
    /// Source symbols of the blocks opened (Σ k_b).
    pub source_symbols: u64,
    /// Symbols sent (all blocks, also those still open).
    pub symbols_sent: u64,
    /// Source symbols of the blocks finished (decoded, or acknowledged) at the sender,
    /// leaving out blocks with bytes of abandoned messages.
    #[serde(default)]
    pub finished_source_symbols: u64,
    /// Symbols sent for the blocks finished at the sender, leaving out blocks with bytes of
    /// abandoned messages. Coding overhead = finished_symbols_sent / finished_source_symbols
    /// − 1 (see [`CodingStats::overhead`]).
    #[serde(default)]
    pub finished_symbols_sent: u64,
    /// Blocks the sender dropped that held bytes of abandoned messages (late video frames):
    /// given up whole, or passed by the acknowledgement over the abandoned bytes. Not in
    /// the finished counts above, since the receiver did not decode them (or decoded only
    /// the bytes that were not abandoned). Omitted from reports when zero.
    #[serde(default, skip_serializing_if = "crate::path::is_zero")]
    pub abandoned_blocks: u64,
    /// Source symbols of [`CodingStats::abandoned_blocks`].
    #[serde(default, skip_serializing_if = "crate::path::is_zero")]
    pub abandoned_source_symbols: u64,
    /// Symbols sent for [`CodingStats::abandoned_blocks`]: what the abandoned frames cost.
    #[serde(default, skip_serializing_if = "crate::path::is_zero")]
    pub abandoned_symbols_sent: u64,
    /// Symbols sent in place of symbols a path reported lost.
    pub replacement_symbols: u64,
    /// Symbols appended beyond k̂ by the Eq. 4 estimate (the l_b of Eq. 7).
    pub appended_symbols: u64,
    /// Symbols that arrived for blocks already decoded (receiver).
    pub late_symbols: u64,
    /// Symbols sent by opportunistic repair (sender; `repair` option).
    #[serde(default)]
    pub repair_symbols: u64,
    /// Window reductions asked for slower paths after a repair (sender; `penalize`).
    #[serde(default)]
    pub penalizations: u64,
    /// Blocks opened shorter than `block_size` before the stream's end because the sender
    /// was idle and the application had written no more (sender; fmtcp).
    #[serde(default)]
    pub short_blocks: u64,
    /// Histogram of lost packets per finished block (sender): entry x counts the blocks
    /// for which x packets carrying their symbols were reported lost while the block was
    /// held (opened → acknowledged or reported decoded). Blocks unfinished at the end of a
    /// run are not counted; losses reported after a block finished are not counted (FMTCP
    /// Fig. 6).
    #[serde(default)]
    pub lost_per_block: Vec<u64>,
}

impl CodingStats {
    /// Adds the counters of one connection, given its sending and its receiving end: the
    /// symbol counts and the loss histogram are the sender's, the decoded and late counts the
    /// receiver's.
    pub fn add_connection(&mut self, sender: &CodingStats, receiver: &CodingStats) {
        self.blocks += sender.blocks;
        self.blocks_decoded += receiver.blocks_decoded;
        self.source_symbols += sender.source_symbols;
        self.symbols_sent += sender.symbols_sent;
        self.finished_source_symbols += sender.finished_source_symbols;
        self.finished_symbols_sent += sender.finished_symbols_sent;
        self.abandoned_blocks += sender.abandoned_blocks;
        self.abandoned_source_symbols += sender.abandoned_source_symbols;
        self.abandoned_symbols_sent += sender.abandoned_symbols_sent;
        self.replacement_symbols += sender.replacement_symbols;
        self.appended_symbols += sender.appended_symbols;
        self.late_symbols += receiver.late_symbols;
        self.repair_symbols += sender.repair_symbols;
        self.penalizations += sender.penalizations;
        self.short_blocks += sender.short_blocks;
        for (x, &n) in sender.lost_per_block.iter().enumerate() {
            self.record_block_losses_n(x, n);
        }
    }
    /// Adds one finished block with `lost` lost packets to `lost_per_block`.
    pub fn record_block_losses(&mut self, lost: u64) {
        self.record_block_losses_n(lost as usize, 1);
    }
    /// Adds `n` finished blocks with `lost` lost packets each (element-wise histogram sum).
    pub fn record_block_losses_n(&mut self, lost: usize, n: u64) {
        if self.lost_per_block.len() <= lost {
            self.lost_per_block.resize(lost + 1, 0);
        }
        self.lost_per_block[lost] += n;
    }
    /// Coding overhead of the finished blocks: symbols sent for them per source symbol,
    /// minus one. Blocks still open (in flight, or opened inside the flow-control window and
    /// not sent yet) are left out: counting their source symbols against the symbols sent so
    /// far made the figure negative for flows cut off by the end of a run. So are blocks with
    /// bytes of abandoned messages, which finish without being decoded
    /// ([`CodingStats::abandoned_blocks`]). Never negative: every block counted finished
    /// only once the receiver decoded it, which takes at least k symbols.
    pub fn overhead(&self) -> f64 {
        if self.finished_source_symbols == 0 {
            0.0
        } else {
            self.finished_symbols_sent as f64 / self.finished_source_symbols as f64 - 1.0
        }
    }
    /// Mean r_f of Eq. 7 with k̂ = k: (k̂ + l_b)/k_b averaged over blocks = 1 + appended/source.
    pub fn redundancy(&self) -> f64 {
        if self.source_symbols == 0 {
            1.0
        } else {
            1.0 + self.appended_symbols as f64 / self.source_symbols as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads a feedback body back into `(start, states)` runs.
    fn decode(body: &[u8]) -> Vec<(u64, Vec<u64>)> {
        let mut r = Reader::new(body);
        let mut runs = Vec::new();
        while !r.is_empty() {
            let start = r.varint("start").unwrap();
            let n = r.varint("n").unwrap();
            let states = (0..n).map(|_| r.varint("state").unwrap()).collect();
            runs.push((start, states));
        }
        runs
    }

    /// Runs break exactly where the next block does not start at the end of the previous one,
    /// and a block costs the bytes of its state alone (module docs, "Feedback").
    #[test]
    fn runs_split_at_gaps_and_cost_a_byte_per_block() {
        let b = 32_200;
        // Blocks 1-3 consecutive (2 decoded), a gap (block 4 unknown), 5-6, then a short
        // block 7 of 100 bytes followed at once by block 8.
        let items = vec![
            (b, b, 5),
            (2 * b, b, 0),
            (3 * b, b, 24),
            (5 * b, b, 64),
            (6 * b, b, 1),
            (7 * b, 100, 3),
            (7 * b + 100, b, 2),
        ];
        let mut out = Vec::new();
        encode_runs(&mut out, 1000, &items);
        assert_eq!(
            decode(&out),
            vec![(b, vec![5, 0, 24]), (5 * b, vec![64, 1, 3, 2])]
        );
        // Two run headers (id 4 B, n 1 B) and one byte per state but the 2-byte 64.
        assert_eq!(out.len(), 2 * 5 + 7 + 1);
    }

    /// What does not fit is left out from the end, whole entries only, and what is written
    /// parses back to a prefix of the blocks.
    #[test]
    fn runs_cut_to_the_room_keep_a_prefix() {
        let b = 32_200;
        let items: Vec<_> = (1..=40u64).map(|i| (i * b, b, i % 30)).collect();
        let mut full = Vec::new();
        encode_runs(&mut full, usize::MAX, &items);
        for room in 0..=full.len() {
            let mut out = Vec::new();
            encode_runs(&mut out, room, &items);
            assert!(out.len() <= room, "room {room}: {} bytes", out.len());
            let got: Vec<u64> = decode(&out).into_iter().flat_map(|r| r.1).collect();
            let want: Vec<u64> = items.iter().map(|x| x.2).take(got.len()).collect();
            assert_eq!(got, want, "room {room}");
            // Entries stop only when the next one does not fit: one run, every state and n
            // one byte, the start four.
            if got.len() < items.len() {
                if got.is_empty() {
                    assert!(room < 6, "room {room} left empty");
                } else {
                    assert_eq!(out.len(), room, "room {room} not filled");
                }
            }
        }
        assert_eq!(decode(&full)[0].1.len(), 40);
    }

    /// `Arrivals::add` as it was written before it skipped the zero entries above the symbols
    /// added: every entry from 1 to need − 1, each step.
    fn add_full_pass(p: &mut [f64], q: f64) {
        let n = p.len() - 1;
        if n == 0 {
            return;
        }
        let q = q.clamp(0.0, 1.0);
        let r = 1.0 - q;
        p[n] += p[n - 1] * q;
        let mut prev = p[0];
        for x in &mut p[1..n] {
            let cur = *x;
            *x = cur * r + prev * q;
            prev = cur;
        }
        p[0] *= r;
    }

    /// Skipping the entries that are still zero changes no bit of any probability, for any
    /// need (0 to 40) and any sequence of arrival probabilities (0, 1 and values between).
    #[test]
    fn arrivals_skip_only_entries_that_stay_zero() {
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let mut rnd = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for need in 0..=40usize {
            for _ in 0..20 {
                let mut a = Arrivals::new(need);
                let mut full = a.prob.clone();
                for step in 0..(2 * need + 5) {
                    let q = match rnd(5) {
                        0 => 1.0,
                        1 => 0.0,
                        _ => rnd(4097) as f64 / 4096.0,
                    };
                    a.add(q);
                    add_full_pass(&mut full, q);
                    let bits = |v: &[f64]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&a.prob), bits(&full), "need {need}, step {step}");
                }
            }
        }
    }

    /// The per-block memo of `fill_count` answers each of its last `FILL_CACHE` probabilities
    /// with the count stored for it, forgets the oldest beyond that, and nothing once cleared.
    #[test]
    fn fill_cache_keeps_the_latest_probabilities() {
        let mut c = FillCache::default();
        let key = |i: u64| (0.5 + i as f64 / 4096.0).to_bits();
        for i in 0..FILL_CACHE as u64 {
            c.put(key(i), i as usize + 10);
        }
        for i in 0..FILL_CACHE as u64 {
            assert_eq!(c.get(key(i)), Some(i as usize + 10));
        }
        c.put(key(99), 7);
        assert_eq!(c.get(key(0)), None, "the oldest entry is replaced");
        assert_eq!(c.get(key(99)), Some(7));
        assert_eq!(c.get(key(1)), Some(11));
        c.clear();
        assert!((0..100).all(|i| c.get(key(i)).is_none()));
    }
}
