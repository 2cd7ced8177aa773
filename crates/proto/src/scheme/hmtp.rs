//! `hmtp`: the Heterogeneous Multi-path Transport Protocol of Hwang, Saha, Choi, Lim & Obele
//! (`shared/papers/hmtp.txt`; steps and equations cited by their numbers there): LT-coded
//! chunks striped over the paths by their congestion windows, no retransmission.
//!
//! **Chunks (§III-A step 1).** The stream is cut into chunks of k packets of T bytes
//! (T = MSS − [`FRAME_HEADER`], so one symbol frame fills a packet). A chunk opens when k·T
//! written bytes are available beyond the previous chunk and inside the flow-control window;
//! when fewer are available, the chunk is *forced* open with what there is after
//! `force_after` (a small or slow writer is not stuck), and at once when the stream is closed.
//! A chunk of n < k·T bytes has its own k_c = ⌈n/T⌉ (the last symbol is zero-padded).
//!
//! **Messages that may be given up (video frames; beyond the paper).** A chunk ends where
//! such a message begins or ends ([`SendCtx::abandonable_cut`]), so a frame given up never
//! leaves a chunk partly owed; an open chunk every byte of which was given up stops sending
//! (it counts as finished), and the next chunk begins after abandoned bytes
//! ([`SendCtx::skip_abandoned`]), as `fmtcp` and `nc-mptcp` do. Streams without such messages
//! (bulk, files) are cut exactly as before.
//!
//! **Encoding (steps 2–3, Eqs. 1–4).** `tributary_codec::lt` with the robust soliton
//! distribution for (k_c, c, δ). Each symbol travels in a SCHEME frame (kind
//! [`SYMBOL_KIND`]) whose body is `chunk id, chunk start offset, chunk length, seed` (varints)
//! followed by the T symbol bytes; the seed and the chunk id, with the connection id as the
//! code key ([`LtParams::with_key`]), key the PRNG that both ends run to find the symbol's
//! degree and neighbours. Seeds count up from 0 within a chunk. (Keying by the connection id,
//! since 2026-11-27: the simulator gives every connection of every repetition its own id, so
//! repetitions draw different codes, not only different losses.)
//!
//! **Sending (steps 4–6).** Per chunk the sender sends k'_c = ⌈(1 + ε)·k_c⌉ symbols (paper:
//! ε = 0.137, "1137 packets decode 1000"), then starts the next chunk without waiting
//! (pipelining, step 5). Once every symbol sent for a chunk is settled (acknowledged by its
//! path or declared lost) and the chunk is not reported decoded, the sender adds
//! max(α, k'_c − received) symbols, `received` being the larger of the receiver's count
//! (FEEDBACK frames) and the symbols its paths acknowledged (step 6; the paper leaves α
//! open: topping up to k'_c is what "smaller than k'" calls for, α symbols more once k'_c
//! arrived and did not decode, step 9). Chunks owing extra symbols go first, oldest first; a
//! path that has window space always gets a symbol if any chunk may send one, so paths are
//! used by their windows (the paper's HMTP leaves path allocation to SCTP). Lost symbols are
//! never re-sent; they only lower `received` (the paper's "new symbol takes the lost TSN").
//!
//! **Receiving (steps 7–9).** Symbols go to the chunk's decoder whatever their order: the
//! peeling decoder of the paper or, by default, peeling with Gaussian-elimination completion
//! (`decoder`; `docs/codec.md`: peeling alone needs ≈ 1205 symbols for k = 1000, c = 0.057,
//! so 1137 fail 99 % of the time; with elimination 1137 decode in 999 of 1000 trials). Every
//! ACK carries a FEEDBACK frame per open chunk (symbols received) and per decoded chunk not
//! yet in order (decoded flag); the receiver asks for an immediate ACK when a chunk reaches
//! k'_c symbols or decodes. A decoded chunk is inserted into the receive buffer at its stream
//! offset; in-order delivery and flow control are the engine's.
//!
//! **Memory.** In the paper the fountain layer sits above SCTP and holds the symbols of the
//! chunks being decoded outside SCTP's 64 KB receive buffer. Here that memory *is* the
//! receive buffer: a chunk is sent, and accepted, only when it lies wholly below the
//! flow-control limit, so `recv_buffer` must hold at least one chunk (k·T bytes, 1.35 MiB
//! for k = 1000 and MSS 1400), and two or more for chunks to pipeline.
//!
//! **Hostile frames.** Malformed bodies, symbols of the wrong size, chunks longer than k·T or
//! past the window or the stream end, a chunk id reused with another start or length, chunks
//! overlapping another open chunk, seeds beyond [`max_seed`], more than
//! [`MAX_SYMBOLS_FACTOR`]·k_c symbols for one chunk, or more than [`MAX_OPEN_CHUNKS`] open
//! decoders: dropped, the frame counted as rejected by the engine
//! (`ConnectionStats::frames_rejected`) and by kind here (`hostile` counters). Symbols of chunks
//! already decoded are dropped and counted as late (normal). Feedback naming a chunk never
//! sent or more symbols than were sent is refused the same way at the sender.

use super::{
    FrameSource, LossKind, PacketTag, RecvCtx, SchemeError, SchemeFactory, SchemeReceiver,
    SchemeSender, SendCtx, SentInfo,
};
use crate::config::ConnectionConfig;
use crate::registry::{self, Entry, Factory, OptionDoc, Options};
use crate::time::{Duration, Instant};
use crate::wire::{put_varint, FeedbackFrame, Frame, PacketWriter};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use tributary_codec::lt::{LtDecoder, LtEncoder, LtParams, LtSymbolId};

/// SCHEME frame kind of an HMTP symbol (a payload kind, below 0x80: ack-eliciting).
pub const SYMBOL_KIND: u64 = 0x48;
/// Largest SCHEME frame header of a symbol: type (1), kind (1), body length (2), chunk id
/// (≤ 4), start (≤ 8), length (≤ 4), seed (≤ 4).
pub const FRAME_HEADER: usize = 24;
/// The receiver keeps at most this many chunks being decoded.
pub const MAX_OPEN_CHUNKS: usize = 64;
/// The receiver holds at most this many symbols per source symbol of a chunk.
pub const MAX_SYMBOLS_FACTOR: usize = 4;

/// Largest seed accepted for a chunk of `k` source symbols (a sender that needs more has lost
/// most of its packets for a long time; the bound keeps a hostile sender from making the
/// receiver hold unbounded symbols).
pub fn max_seed(k: usize) -> u64 {
    (MAX_SYMBOLS_FACTOR * k + 1024) as u64
}

/// The decoder the receiver runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DecoderKind {
    /// Message passing only (the paper's decoder).
    Peeling,
    /// Peeling, completed by exact GF(2) elimination (inactivation decoding) as soon as the rank
    /// reaches k.
    Elimination,
}

/// Options of the `hmtp` scheme.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HmtpConfig {
    /// Source packets per chunk.
    pub k: usize,
    /// Robust soliton constant c (Eq. 2).
    pub c: f64,
    /// Robust soliton δ (Eqs. 2–3).
    pub delta: f64,
    /// k' = ⌈(1 + ε)·k⌉ symbols are sent per chunk before waiting for its count.
    pub epsilon: f64,
    /// Symbols added at least when a chunk's symbols are all settled and it is not decoded.
    pub alpha: usize,
    /// A partial chunk is forced open after waiting this long for more data.
    pub force_after: Duration,
    /// The receiver's decoder.
    pub decoder: DecoderKind,
}

impl Default for HmtpConfig {
    fn default() -> Self {
        HmtpConfig {
            k: 1000,
            c: 0.057,
            delta: 0.03,
            epsilon: 0.137,
            alpha: 10,
            force_after: Duration::from_millis(100),
            decoder: DecoderKind::Elimination,
        }
    }
}

impl HmtpConfig {
    /// Symbol size T for a connection MSS.
    pub fn symbol_size(&self, mss: usize) -> usize {
        mss.saturating_sub(FRAME_HEADER)
    }

    /// Bytes of a full chunk (k·T) for a connection MSS.
    pub fn chunk_bytes(&self, mss: usize) -> u64 {
        (self.k * self.symbol_size(mss)) as u64
    }

    /// k'_c for a chunk of `k` source symbols.
    pub fn k_prime(&self, k: usize) -> u64 {
        ((k as f64) * (1.0 + self.epsilon)).ceil().max(k as f64) as u64
    }

    fn check(&self, mss: usize) -> Result<(), String> {
        if !(1..=tributary_codec::lt::MAX_SOURCE_SYMBOLS).contains(&self.k) {
            return Err(format!(
                "hmtp k must be within 1..={}",
                tributary_codec::lt::MAX_SOURCE_SYMBOLS
            ));
        }
        if !(0.0..=10.0).contains(&self.epsilon) {
            return Err("hmtp epsilon must be within [0, 10]".into());
        }
        if self.alpha == 0 {
            return Err("hmtp alpha must be at least 1".into());
        }
        if self.force_after.as_nanos() == 0 {
            return Err("hmtp force_after must be positive".into());
        }
        let t = self.symbol_size(mss);
        if t == 0 {
            return Err(format!("an MSS of {mss} leaves no room for an hmtp symbol"));
        }
        // S = c·ln(k/δ)·√k grows with k: k = 1 (the smallest forced chunk) binds.
        for kk in [1, self.k] {
            LtParams::new(kk, t, self.c, self.delta).map_err(|e| format!("hmtp: {e}"))?;
        }
        Ok(())
    }
}

impl Factory for HmtpConfig {
    fn options(&self) -> Options {
        registry::options_of(self)
    }
}

impl SchemeFactory for HmtpConfig {
    fn validate(&self, cfg: &ConnectionConfig) -> Result<(), String> {
        self.check(cfg.mss)?;
        let chunk = self.chunk_bytes(cfg.mss);
        if chunk > cfg.recv_buffer as u64 {
            return Err(format!(
                "hmtp chunk of {} packets is {chunk} bytes, more than the receive buffer {} \
                 (the decoder's memory; module docs)",
                self.k, cfg.recv_buffer
            ));
        }
        Ok(())
    }
    fn build(&self, cfg: &ConnectionConfig) -> (Box<dyn SchemeSender>, Box<dyn SchemeReceiver>) {
        let t = self.symbol_size(cfg.mss);
        (
            Box::new(HmtpSender::new(*self, t, cfg.conn_id)),
            Box::new(HmtpReceiver::new(*self, t, cfg.conn_id)),
        )
    }
}

/// Registry entry of `hmtp`.
pub(crate) const ENTRY: Entry<dyn SchemeFactory> = Entry {
    name: "hmtp",
    aliases: &[],
    summary: "HMTP: LT-coded chunks of k packets, k' symbols then α more when short, \
              pipelined chunks, no retransmission (Hwang et al.)",
    options: &[
        OptionDoc {
            key: "k",
            doc: "source packets per chunk (the receive buffer must hold a chunk)",
        },
        OptionDoc {
            key: "c",
            doc: "robust soliton constant c (Eq. 2)",
        },
        OptionDoc {
            key: "delta",
            doc: "robust soliton δ (Eqs. 2-3)",
        },
        OptionDoc {
            key: "epsilon",
            doc: "k' = (1 + epsilon)·k symbols sent per chunk before its count is awaited",
        },
        OptionDoc {
            key: "alpha",
            doc: "extra symbols at least, when a chunk's symbols are settled and it is not \
                  decoded (else up to k')",
        },
        OptionDoc {
            key: "force_after",
            doc: "a partial chunk is encoded after waiting this long for data",
        },
        OptionDoc {
            key: "decoder",
            doc: "\"elimination\" (peeling + Gaussian elimination) or \"peeling\"",
        },
    ],
    make: |o| Ok(Arc::new(registry::from_options::<HmtpConfig>(o)?)),
};

// ---------------------------------------------------------------------------- wire

/// One symbol frame's body, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SymbolHeader {
    /// Chunk id.
    pub chunk: u64,
    /// Stream offset of the chunk's first byte.
    pub start: u64,
    /// Chunk length in bytes.
    pub len: u64,
    /// Seed of the symbol within the chunk.
    pub seed: u64,
}

fn get_varint(b: &mut &[u8]) -> Option<u64> {
    let first = *b.first()?;
    let len = 1usize << (first >> 6);
    if b.len() < len {
        return None;
    }
    let mut v = u64::from(first & 0x3f);
    for &x in &b[1..len] {
        v = (v << 8) | u64::from(x);
    }
    *b = &b[len..];
    Some(v)
}

impl SymbolHeader {
    /// Appends the header to `out`.
    pub fn write(&self, out: &mut Vec<u8>) {
        for v in [self.chunk, self.start, self.len, self.seed] {
            put_varint(out, v);
        }
    }
    /// Parses a body into its header and symbol bytes.
    pub fn parse(mut body: &[u8]) -> Option<(SymbolHeader, &[u8])> {
        let chunk = get_varint(&mut body)?;
        let start = get_varint(&mut body)?;
        let len = get_varint(&mut body)?;
        let seed = get_varint(&mut body)?;
        Some((
            SymbolHeader {
                chunk,
                start,
                len,
                seed,
            },
            body,
        ))
    }
}

// ---------------------------------------------------------------------------- sender

#[derive(Debug)]
struct TxChunk {
    id: u64,
    start: u64,
    len: u64,
    k: usize,
    k_prime: u64,
    enc: LtEncoder,
    next_seed: u32,
    /// Symbols that may be sent before the chunk's fate is awaited (k', then more).
    budget: u64,
    in_flight: u64,
    acked: u64,
    reported: u64,
    decoded: bool,
}

impl TxChunk {
    fn received(&self) -> u64 {
        self.acked.max(self.reported)
    }
}

/// Counters of `hmtp` (sender and receiver halves each report theirs).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HmtpStats {
    /// Chunks opened (sender).
    pub chunks: u64,
    /// Chunks opened before k packets were available (`force_after` or stream end).
    pub forced_chunks: u64,
    /// Chunks decoded (receiver) or reported decoded (sender).
    pub chunks_decoded: u64,
    /// Source symbols of the chunks opened (Σ k_c).
    pub source_symbols: u64,
    /// Symbols sent (sender).
    pub symbols_sent: u64,
    /// Symbols sent beyond k'_c after a chunk's symbols settled short (step 6).
    pub extra_symbols: u64,
    /// Rounds of extra symbols (step 6 decisions).
    pub extra_rounds: u64,
    /// Symbols that arrived for chunks already decoded (receiver).
    pub late_symbols: u64,
    /// Received symbols needed per decoded chunk beyond k_c, summed (receiver).
    pub symbols_beyond_k: u64,
    /// Hostile or malformed frames dropped, by reason (receiver: symbols; sender: feedback).
    pub hostile: BTreeMap<String, u64>,
}

impl HmtpStats {
    fn hostile(&mut self, why: &'static str) -> SchemeError {
        *self.hostile.entry(why.to_string()).or_default() += 1;
        if why.starts_with("unknown") {
            SchemeError::Unknown(why)
        } else {
            SchemeError::Invalid(why)
        }
    }
}

/// Sending half of `hmtp`.
#[derive(Debug)]
pub struct HmtpSender {
    cfg: HmtpConfig,
    t: usize,
    chunks: VecDeque<TxChunk>,
    next_id: u64,
    /// Stream offset where the next chunk starts.
    next_start: u64,
    /// Since when data for a partial chunk has been waiting.
    partial_since: Option<Instant>,
    force: bool,
    /// Chunk id of packet records `first_record..`, `None` once settled (records are
    /// numbered in sending order, so a deque replaces a map).
    records: VecDeque<Option<u64>>,
    first_record: u64,
    next_record: u64,
    /// The symbol header of the packet being written.
    body: Vec<u8>,
    /// The bytes of the last finished chunk, reused by the next one (no fresh k·T allocation
    /// per chunk).
    spare: Vec<u8>,
    /// The last chunk's LT parameters (see [`chunk_params`]).
    params: Option<LtParams>,
    /// The LT code key: the connection id (module docs).
    key: u64,
    /// [`SendCtx::abandoned_count`] when the open chunks were last checked against the
    /// abandoned ranges.
    abandoned_seen: u64,
    stats: HmtpStats,
}

impl HmtpSender {
    fn new(cfg: HmtpConfig, t: usize, key: u64) -> Self {
        HmtpSender {
            cfg,
            t,
            key,
            chunks: VecDeque::new(),
            next_id: 0,
            next_start: 0,
            partial_since: None,
            force: false,
            records: VecDeque::new(),
            first_record: 0,
            next_record: 0,
            body: Vec::with_capacity(t + FRAME_HEADER),
            spare: Vec::new(),
            params: None,
            abandoned_seen: 0,
            stats: HmtpStats::default(),
        }
    }

    /// Open chunks every byte of which belongs to messages given up (late video frames) are
    /// finished: the receiver skips their bytes. Checked once per abandonment, not per
    /// packet; a chunk opened since begins after the abandoned bytes.
    fn give_up_abandoned(&mut self, ctx: &SendCtx<'_>) {
        let count = ctx.abandoned_count();
        if count == self.abandoned_seen {
            return;
        }
        self.abandoned_seen = count;
        for c in &mut self.chunks {
            if !c.decoded && ctx.is_abandoned_range(c.start, c.start + c.len) {
                c.decoded = true;
            }
        }
    }

    fn chunk_mut(&mut self, id: u64) -> Option<&mut TxChunk> {
        let first = self.chunks.front()?.id;
        self.chunks
            .get_mut(usize::try_from(id.checked_sub(first)?).ok()?)
    }

    fn drop_finished(&mut self, ack: u64) {
        while self
            .chunks
            .front()
            .is_some_and(|c| c.decoded || c.start + c.len <= ack)
        {
            if let Some(c) = self.chunks.pop_front() {
                self.spare = c.enc.into_data();
            }
        }
    }

    /// Opens the next chunk if its data is there (or forced) and it fits the window.
    fn open_chunk(&mut self, ctx: &mut SendCtx<'_>) -> bool {
        let full = (self.cfg.k * self.t) as u64;
        // Bytes of messages given up are not sent: the chunk begins after them.
        let start = ctx.skip_abandoned(self.next_start.max(ctx.data_ack));
        let mut end = start + full;
        let mut forced = false;
        if let Some(f) = ctx.final_size {
            if start >= f {
                return false;
            }
            if end > f {
                end = f;
                forced = true;
            }
        }
        // A chunk ends where a message that may be given up begins or ends (module docs).
        end = ctx.abandonable_cut(start, end);
        let written = ctx.send_buf.end();
        if written <= start {
            self.partial_since = None;
            return false;
        }
        if end > written {
            // A partial chunk: wait for more data up to force_after.
            let since = *self.partial_since.get_or_insert(ctx.now);
            if !self.force && ctx.now < since + self.cfg.force_after {
                return false;
            }
            end = written;
            forced = true;
        }
        if end > ctx.max_data {
            if forced && ctx.max_data > start && end - start < full {
                end = ctx.max_data;
            } else {
                return false;
            }
        }
        let Ok(id) = u32::try_from(self.next_id) else {
            return false;
        };
        let len = end - start;
        let k = (len as usize).div_ceil(self.t);
        // The spare buffer's old bytes are overwritten: the chunk's, then zero padding.
        let mut data = std::mem::take(&mut self.spare);
        data.resize(k * self.t, 0);
        if !ctx.send_buf.copy_out(start, &mut data[..len as usize]) {
            self.spare = data;
            return false;
        }
        data[len as usize..].fill(0);
        let Some(params) = chunk_params(&mut self.params, k, self.t, self.key, &self.cfg) else {
            return false;
        };
        let Ok(enc) = LtEncoder::from_vec(params, id, data) else {
            return false;
        };
        let k_prime = self.cfg.k_prime(k);
        self.chunks.push_back(TxChunk {
            id: self.next_id,
            start,
            len,
            k,
            k_prime,
            enc,
            next_seed: 0,
            budget: k_prime,
            in_flight: 0,
            acked: 0,
            reported: 0,
            decoded: false,
        });
        self.stats.chunks += 1;
        self.stats.source_symbols += k as u64;
        if forced {
            self.stats.forced_chunks += 1;
        }
        self.next_id += 1;
        self.next_start = end;
        self.partial_since = None;
        self.force = false;
        true
    }

    /// Step 6: a chunk whose symbols are all settled and that is not decoded gets more.
    fn top_up(&mut self) {
        for c in &mut self.chunks {
            let sent = u64::from(c.next_seed);
            if !c.decoded && sent >= c.budget && c.in_flight == 0 {
                let short = c.k_prime.saturating_sub(c.received());
                let extra = short.max(self.cfg.alpha as u64);
                c.budget = sent + extra;
                self.stats.extra_rounds += 1;
            }
        }
    }

    fn emit(
        &mut self,
        ctx: &mut SendCtx<'_>,
        ci: usize,
        pkt: &mut PacketWriter<'_>,
    ) -> Option<PacketTag> {
        let c = &mut self.chunks[ci];
        let seed = c.next_seed;
        if u64::from(seed) > max_seed(c.k) {
            return None;
        }
        self.body.clear();
        SymbolHeader {
            chunk: c.id,
            start: c.start,
            len: c.len,
            seed: u64::from(seed),
        }
        .write(&mut self.body);
        // The symbol is encoded straight into the packet, after its header.
        let (header, t) = (&self.body, self.t);
        let enc = &mut c.enc;
        let written = pkt
            .push_scheme_with(SYMBOL_KIND, header.len() + t, |out| {
                let (h, sym) = out.split_at_mut(header.len());
                h.copy_from_slice(header);
                enc.encode(seed, sym).is_ok()
            })
            .ok()?;
        if !written {
            return None;
        }
        if seed == 0 {
            ctx.mark_sent(c.start, c.start + c.len);
        }
        if u64::from(seed) >= c.k_prime {
            self.stats.extra_symbols += 1;
        }
        c.next_seed += 1;
        c.in_flight += 1;
        self.stats.symbols_sent += 1;
        let rec = self.next_record;
        self.next_record += 1;
        self.records.push_back(Some(c.id));
        Some(PacketTag { a: rec, b: c.id })
    }

    fn settle(&mut self, tag: PacketTag, acked: bool) {
        let Some(id) = tag
            .a
            .checked_sub(self.first_record)
            .and_then(|i| self.records.get_mut(usize::try_from(i).ok()?))
            .and_then(Option::take)
        else {
            return;
        };
        while self.records.front().is_some_and(Option::is_none) {
            self.records.pop_front();
            self.first_record += 1;
        }
        if let Some(c) = self.chunk_mut(id) {
            c.in_flight = c.in_flight.saturating_sub(1);
            if acked {
                c.acked += 1;
            }
        }
        self.top_up();
    }
}

impl SchemeSender for HmtpSender {
    fn name(&self) -> &'static str {
        "hmtp"
    }

    /// Two whole chunks: the one being encoded and the next (chunks are pipelined, §III).
    fn write_ahead(&self) -> u64 {
        2 * (self.cfg.k * self.t) as u64
    }

    fn poll_packet(
        &mut self,
        ctx: &mut SendCtx<'_>,
        _path: usize,
        pkt: &mut PacketWriter<'_>,
    ) -> Option<PacketTag> {
        self.give_up_abandoned(ctx);
        self.drop_finished(ctx.data_ack);
        // Oldest chunk with budget left first: extra symbols of short chunks, then the
        // k' symbols of the newest; when every open chunk has sent its budget, the next chunk
        // opens (pipelining: no wait for feedback).
        loop {
            if let Some(ci) = self
                .chunks
                .iter()
                .position(|c| !c.decoded && u64::from(c.next_seed) < c.budget)
            {
                return self.emit(ctx, ci, pkt);
            }
            if !self.open_chunk(ctx) {
                return None;
            }
        }
    }

    fn on_acked(&mut self, _ctx: &mut SendCtx<'_>, pkt: &SentInfo) {
        self.settle(pkt.tag, true);
    }

    fn on_lost(&mut self, _ctx: &mut SendCtx<'_>, pkt: &SentInfo, _kind: LossKind) {
        self.settle(pkt.tag, false);
    }

    fn on_data_ack(&mut self, ctx: &mut SendCtx<'_>) {
        self.drop_finished(ctx.data_ack);
    }

    fn on_feedback(&mut self, ctx: &mut SendCtx<'_>, frame: &Frame<'_>) -> Result<(), SchemeError> {
        let Frame::Feedback(FeedbackFrame {
            block,
            count,
            decoded,
        }) = *frame
        else {
            return Err(self.stats.hostile("unexpected feedback frame"));
        };
        if block >= self.next_id {
            return Err(self.stats.hostile("unknown chunk in feedback"));
        }
        if count > max_seed(self.cfg.k) + 1 {
            return Err(self.stats.hostile("more symbols reported than sent"));
        }
        if let Some(c) = self.chunk_mut(block) {
            if count > u64::from(c.next_seed) {
                return Err(self.stats.hostile("more symbols reported than sent"));
            }
            c.reported = c.reported.max(count);
            if decoded && !c.decoded {
                c.decoded = true;
                self.stats.chunks_decoded += 1;
            }
        }
        self.drop_finished(ctx.data_ack);
        self.top_up();
        Ok(())
    }

    fn poll_timeout(&self) -> Option<Instant> {
        if self.force {
            return None;
        }
        self.partial_since.map(|t| t + self.cfg.force_after)
    }

    fn on_timeout(&mut self, ctx: &mut SendCtx<'_>) {
        if self
            .partial_since
            .is_some_and(|t| ctx.now >= t + self.cfg.force_after)
        {
            self.force = true;
        }
    }

    fn counters(&self) -> serde_json::Value {
        serde_json::to_value(&self.stats).unwrap_or_default()
    }
}

// ---------------------------------------------------------------------------- receiver

#[derive(Debug)]
struct RxChunk {
    start: u64,
    len: u64,
    k: usize,
    k_prime: u64,
    dec: LtDecoder,
    /// Seeds received, a bit per seed up to [`max_seed`] (duplicates are dropped).
    seeds: Vec<u64>,
    /// Number of seeds received.
    count: u64,
    reported_full: bool,
}

/// The LT parameters for a chunk of `k` symbols under code key `key`: `cache` if it has that
/// k (T, c, δ and the key are fixed per connection), else new ones, kept in `cache` (the
/// degree distribution's tables are built once per chunk size, not once per chunk).
fn chunk_params(
    cache: &mut Option<LtParams>,
    k: usize,
    t: usize,
    key: u64,
    cfg: &HmtpConfig,
) -> Option<LtParams> {
    if let Some(p) = cache.as_ref().filter(|p| p.k() == k) {
        return Some(p.clone());
    }
    let p = LtParams::new(k, t, cfg.c, cfg.delta).ok()?.with_key(key);
    *cache = Some(p.clone());
    Some(p)
}

/// Receiving half of `hmtp`.
#[derive(Debug)]
pub struct HmtpReceiver {
    cfg: HmtpConfig,
    t: usize,
    open: BTreeMap<u64, RxChunk>,
    /// Decoded chunks (id → end offset) not yet below the in-order point.
    done: BTreeMap<u64, u64>,
    /// The decoder of the last decoded chunk, reset for the next one (no fresh allocation of
    /// its k·T buffers per chunk).
    spare: Option<LtDecoder>,
    /// The last chunk's LT parameters (see [`chunk_params`]).
    params: Option<LtParams>,
    /// The LT code key: the connection id (module docs).
    key: u64,
    /// The in-order point at which `open` and `done` were last pruned.
    pruned_at: u64,
    stats: HmtpStats,
}

impl HmtpReceiver {
    fn new(cfg: HmtpConfig, t: usize, key: u64) -> Self {
        HmtpReceiver {
            cfg,
            t,
            key,
            open: BTreeMap::new(),
            done: BTreeMap::new(),
            spare: None,
            params: None,
            pruned_at: 0,
            stats: HmtpStats::default(),
        }
    }

    fn on_symbol(
        &mut self,
        ctx: &mut RecvCtx<'_>,
        from: FrameSource,
        body: &[u8],
    ) -> Result<(), SchemeError> {
        let Some((h, data)) = SymbolHeader::parse(body) else {
            return Err(self.stats.hostile("malformed symbol header"));
        };
        if data.len() != self.t {
            return Err(self.stats.hostile("symbol of the wrong size"));
        }
        let full = (self.cfg.k * self.t) as u64;
        if h.len == 0 || h.len > full {
            return Err(self.stats.hostile("chunk length out of range"));
        }
        let Some(end) = h.start.checked_add(h.len) else {
            return Err(self.stats.hostile("chunk beyond the stream"));
        };
        let Ok(block) = u32::try_from(h.chunk) else {
            return Err(self.stats.hostile("unknown chunk id"));
        };
        let k = (h.len as usize).div_ceil(self.t);
        if h.seed > max_seed(k) {
            return Err(self.stats.hostile("seed out of range"));
        }
        if end <= ctx.recv_buf.contiguous_end() || self.done.contains_key(&h.chunk) {
            self.stats.late_symbols += 1;
            return Ok(());
        }
        if let Some(f) = ctx.recv_buf.final_size() {
            if end > f {
                return Err(self.stats.hostile("unknown chunk past the stream end"));
            }
        }
        if end > ctx.recv_buf.max_data() {
            return Err(self
                .stats
                .hostile("unknown chunk beyond the receive window"));
        }
        if !self.open.contains_key(&h.chunk) {
            let overlaps = self
                .open
                .values()
                .any(|c| c.start < end && h.start < c.start + c.len);
            if overlaps {
                return Err(self.stats.hostile("chunk overlaps another chunk"));
            }
            if self.open.len() >= MAX_OPEN_CHUNKS {
                return Err(self.stats.hostile("too many open chunks"));
            }
            let Some(params) = chunk_params(&mut self.params, k, self.t, self.key, &self.cfg)
            else {
                return Err(self.stats.hostile("chunk length out of range"));
            };
            let dec = match (self.spare.take(), self.cfg.decoder) {
                (Some(mut d), _) => {
                    d.reset(params, block);
                    d
                }
                (None, DecoderKind::Peeling) => LtDecoder::new(params, block),
                (None, DecoderKind::Elimination) => LtDecoder::with_elimination(params, block),
            };
            self.open.insert(
                h.chunk,
                RxChunk {
                    start: h.start,
                    len: h.len,
                    k,
                    k_prime: self.cfg.k_prime(k),
                    dec,
                    seeds: vec![0; (max_seed(k) as usize + 1).div_ceil(64)],
                    count: 0,
                    reported_full: false,
                },
            );
        }
        let Some(c) = self.open.get_mut(&h.chunk) else {
            return Ok(());
        };
        if c.start != h.start || c.len != h.len {
            return Err(self.stats.hostile("chunk geometry changed"));
        }
        // h.seed ≤ max_seed(k) was checked above.
        let (w, bit) = (h.seed as usize / 64, 1u64 << (h.seed % 64));
        if c.seeds[w] & bit != 0 {
            return Err(self.stats.hostile("duplicate seed"));
        }
        c.seeds[w] |= bit;
        c.count += 1;
        let progress = c.dec.push(
            LtSymbolId {
                block,
                seed: h.seed as u32,
            },
            data,
        );
        let Ok(progress) = progress else {
            return Err(self.stats.hostile("symbol refused by the decoder"));
        };
        let count = c.count;
        if count >= c.k_prime && !c.reported_full {
            // Step 7-8: the count the sender waits for travels now.
            c.reported_full = true;
            ctx.request_ack(from.path);
        }
        if progress.complete {
            if let Some(c) = self.open.remove(&h.chunk) {
                if let Ok(bytes) = c.dec.data() {
                    ctx.recv_buf.insert(c.start, &bytes[..c.len as usize]);
                }
                self.stats.chunks_decoded += 1;
                self.stats.symbols_beyond_k += c.count.saturating_sub(c.k as u64);
                self.done.insert(h.chunk, c.start + c.len);
                self.spare = Some(c.dec);
                ctx.request_ack(from.path);
            }
        }
        // Forget what the application can now read in order. Only when the in-order point
        // moved: every entry already ends above the point of the last pass (new open chunks
        // end above the point, checked at the top; a decoded chunk that does not move it ends
        // above it), so a pass at the same point would remove nothing.
        let contiguous = ctx.recv_buf.contiguous_end();
        if contiguous != self.pruned_at {
            self.pruned_at = contiguous;
            self.done.retain(|_, &mut e| e > contiguous);
            self.open.retain(|_, c| c.start + c.len > contiguous);
        }
        Ok(())
    }
}

impl SchemeReceiver for HmtpReceiver {
    fn on_frame(
        &mut self,
        ctx: &mut RecvCtx<'_>,
        from: FrameSource,
        frame: &Frame<'_>,
    ) -> Result<(), SchemeError> {
        match frame {
            Frame::Scheme { kind, body } if *kind == SYMBOL_KIND => self.on_symbol(ctx, from, body),
            _ => Err(self.stats.hostile("unexpected frame kind")),
        }
    }

    fn write_feedback(&mut self, _now: Instant, _path: usize, pkt: &mut PacketWriter<'_>) {
        for &id in self.done.keys() {
            let f = Frame::Feedback(FeedbackFrame {
                block: id,
                count: 0,
                decoded: true,
            });
            if pkt.push(&f).is_err() {
                return;
            }
        }
        for (&id, c) in &self.open {
            let f = Frame::Feedback(FeedbackFrame {
                block: id,
                count: c.count,
                decoded: false,
            });
            if pkt.push(&f).is_err() {
                return;
            }
        }
    }

    fn counters(&self) -> serde_json::Value {
        serde_json::to_value(&self.stats).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbol_header_round_trips_and_refuses_truncation() {
        let h = SymbolHeader {
            chunk: 70_000,
            start: 5_000_000_000,
            len: 1_376_000,
            seed: 1136,
        };
        let mut b = Vec::new();
        h.write(&mut b);
        assert!(b.len() + 4 <= FRAME_HEADER, "header {} bytes", b.len());
        b.extend_from_slice(&[7; 3]);
        assert_eq!(SymbolHeader::parse(&b), Some((h, &[7u8; 3][..])));
        for cut in 0..b.len() - 3 {
            assert_eq!(SymbolHeader::parse(&b[..cut]), None, "cut at {cut}");
        }
    }

    #[test]
    fn k_prime_is_the_papers_1137_for_k_1000() {
        assert_eq!(HmtpConfig::default().k_prime(1000), 1137);
    }
}
