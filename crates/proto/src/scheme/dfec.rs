//! Per-path XOR FEC on top of ARQ: `dfec` (TCP-dFEC on one path, MPTCP-dFEC on several) and
//! `tcp-ir` (the TCP Instant Recovery baseline), after Ferlin, Kucera, Claussen and Alay,
//! "MPTCP meets FEC: Supporting Latency-Sensitive Applications over Heterogeneous Networks"
//! (`shared/papers/mptcp-dfec.txt`; sections cited as there).
//!
//! **Data** is sent exactly as by `tcp`/`mptcp` (the [`ArqSender`] is reused, not copied): FEC
//! changes only *what* is sent in the window, never how much (§III-A: "does not change how
//! much data is sent into the network").
//!
//! **Parity (§III-A, Fig. 2).** Every data packet a path carries joins that path's current
//! block (intra-subflow FEC, §III-C: each subflow runs TCP-dFEC on its own). A block is closed
//! by one parity packet: a SCHEME frame (kind [`PARITY`], a payload frame, so it is
//! acknowledged like data) whose body names the packet numbers it covers (ascending ranges)
//! and carries the XOR of the covered *units*, a unit being `stream offset (u64 BE) ‖ length
//! (u16 BE) ‖ data`, zero-padded to the longest (the paper XORs the DSS mapping with the
//! segment, §III-C; here the offset plays the DSS). The parity is only sent from
//! [`SchemeSender::poll_packet`], i.e. when the path's congestion window has room (§III-B (i):
//! "TCP-dFEC only sends FEC if the CWND has space"). Data segments are shortened so a parity
//! (29 bytes beyond its longest unit) always fits one datagram, and so that a segment resent
//! later fits one packet whole: sized to the tightest packet a retransmission may get (a
//! 4-byte packet number and an ACK_FLOOR from the engine): 1394 bytes with the default
//! framing (MSS 1400), with or without AEAD protection. Sized to the packet at hand, a
//! segment sent in a roomier packet than its retransmission's left its last 1 to 6 bytes
//! to a packet of their own.
//!
//! **What a parity covers.** Only packets whose whole content the scheme wrote: a packet in
//! which the engine put reliable frames of its own (stream end, message announcements:
//! [`SendCtx::packet_carries_engine_frames`]) is left to ARQ, because marking it recovered would acknowledge
//! those frames too although the receiver never saw them (counted as `unprotected`).
//!
//! **Repair (§III-B (i)).** The receiver keeps the units of the last [`RECV_KEEP`] packets of
//! each path. A parity naming exactly one packet it lacks rebuilds that unit, inserts its
//! bytes at their offset and calls [`RecvCtx::mark_recovered`]: the path acknowledges the
//! packet, so a repaired loss is no congestion signal and is not retransmitted (zero-RTT
//! recovery); a parity with two or more missing packets has *failed* (counted, reported), and
//! the losses are then found and retransmitted by the ordinary ARQ, with the congestion
//! response: "the sender accounts for FEC in the congestion control … only if FEC is lost or
//! fails". A lost parity packet is a lost packet of the path (a congestion signal, as in the
//! paper); an acknowledged one grows the window as any packet does.
//!
//! **Duplicate-ACK threshold (§III-A).** "The DupACK threshold should be changed to the current
//! FEC block size to avoid early retransmissions": each path's packet threshold is set to the
//! block size, `ratio + 1` packets (ratio data packets plus the parity), whenever it changes.
//!
//! **Losses declared at the parity (ours, `lost_at_parity`, off by default).** With the
//! block-size threshold an unrepairable loss near the end of a burst (two losses in a block, or
//! a packet carrying engine frames, which no parity covers) waits for `ratio + 1` later packets
//! or the retransmission timer. With the option, when a parity is acknowledged the sender asks
//! the engine ([`Action::DeclareLost`]) to declare lost whatever it sent on the path since the
//! previous parity and is still unacknowledged: the receiver had the parity and could not
//! repair it. Measured in docs/experiments/dfec.md ("Why we differ", item 3).
//!
//! **Ratio adaptation (§III-B (ii), Eqs. 1–3, Table I).** Over periods of T = 3 RTT
//! (`period_rtts`, the path's smoothed RTT) the sender measures the residual loss of each path,
//! Eq. 1: RL_i = retransmitted / total, where *total* is the data packets sent in the period
//! and *retransmitted* the data packets declared lost in it (losses the receiver did not repair:
//! it acknowledges repaired packets, so the residual loss is what the receiver's ACKs leave
//! unacknowledged). Eq. 2 averages the last N = 2 (`periods`) such values. Eq. 3 is not
//! legible in our copy of the paper; from the text ("if the average … loss rate is higher than
//! the target, the FEC ratio is reduced, otherwise, increased … with a correction rate ε") we
//! use the multiplicative step `ratio ← ratio·(1 − ε)` if RL̄ > target, else
//! `ratio ← ratio·(1 + ε)`, after every period, with ε = 0.33, target = 1 %, start ratio 9
//! (one parity in the initial window) and the ratio bounded to [4, 256] (Table I and §III-B).
//! A period in which the path sent no data carries no information and changes nothing.
//!
//! **Idle flush (ours).** The paper's kernel sends parity every `ratio` segments; an
//! application-limited sender (video frames, web objects) would then leave its last block
//! without parity until more data comes, and its losses to the retransmission timer. With
//! `flush_idle` (default) a path that has window space but nothing else to send arms a timer
//! of `flush_rtts` = 0.25 RTT (TCP-IR's interval); if the block has not filled by then, its
//! parity goes out with the next window space, like a tail-loss probe (TLP, the paper's ref. 9).
//! The delay keeps a sender that is only briefly idle between ACKs from closing a block every
//! packet or two; a sender held back by the peer's receive window does not arm it at all.
//! Armed before the path's first RTT sample (the RTO, 1 s, stands in), the delay is
//! recomputed from the first sample, so a short first block is not left waiting 250 ms;
//! TCP-IR's interval timer follows the same rule.
//!
//! **TCP-IR (§II-B, §V-A1).** `tcp-ir` sends one parity every 0.25 RTT on a scheme timer,
//! covering the data sent since the previous one ("a hard-coded approach by sending a FEC
//! packet every 0.25 RTT"), with the default threshold (3). TCP-IR treats a repaired loss as a
//! congestion event ("In TCP-IR, both successful and failed FECs are used in the feedback,
//! and integrated into the congestion control", §III-B (i)): the receiver reports its repairs
//! (the REPORT feedback frame below) and the sender answers each new repair on a path with an
//! [`Action::Penalize`] (one window reduction, subject to the engine's one-reduction-per-window
//! rule). Difference from the draft: our parity waits for window space like any packet (the
//! engine offers no other way to send), where TCP-IR's is sent regardless of the window.
//!
//! **Feedback.** Every ACK of a path on which the receiver repaired or failed something
//! carries a REPORT frame (kind [`REPORT`], not ack-eliciting): path, repaired count, failed
//! count, cumulative, so a lost ACK loses nothing. The sender keeps them as counters (and
//! TCP-IR penalises on them).
//!
//! **Hostile input.** A parity that names no packet, more than [`MAX_BLOCK`] packets, too
//! many ranges, packet numbers at or above its own or more than [`RECV_KEEP`] below it, a unit
//! shorter than its header, a covered unit longer than the parity, or that rebuilds a unit
//! whose length field disagrees with its padding, is dropped and counted
//! (`hostile_parity`, and the engine's `frames_rejected`); a REPORT for an unknown path or
//! claiming more repairs than parities sent is refused (`feedback_rejected`).

use super::{
    Action, ArqConfig, ArqReceiver, ArqSender, FrameSource, LossKind, PacketTag, RecvCtx,
    SchemeError, SchemeFactory, SchemeReceiver, SchemeSender, SendCtx, SentInfo,
};
use crate::config::ConnectionConfig;
use crate::path::{PathState, PathView};
use crate::registry::{self, Entry, Factory, OptionDoc, Options};
use crate::time::{Duration, Instant};
use crate::wire::{put_varint, varint_len, Frame, PacketWriter, Reader};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

/// SCHEME kind of a parity frame (a payload frame: ack-eliciting, counted in flight).
pub const PARITY: u64 = 0x20;
/// SCHEME kind of the receiver's repair report (feedback: kind ≥ 0x80).
pub const REPORT: u64 = 0xa0;
/// Most data packets one parity may cover (the paper's upper ratio bound, §III-B).
pub const MAX_BLOCK: usize = 256;
/// Packets per path whose units the receiver keeps, and how far below its own number a
/// parity may name a packet.
pub const RECV_KEEP: u64 = 2 * MAX_BLOCK as u64 + 64;
/// Unit header: stream offset (8) and length (2).
const UNIT_HEADER: usize = 10;
/// Bytes the parity's packet-number ranges may take (so a parity always fits a datagram).
const RANGE_BUDGET: usize = 15;
/// Most ranges a parity may name (receiver bound).
const MAX_RANGES: usize = 8;
/// SCHEME frame header: type, kind, body length (2-byte varint).
const FRAME_HEADER: usize = 4;
/// Tag marking a parity packet (ARQ tags are stream offsets, far below).
const PARITY_TAG: u64 = u64::MAX;
/// Acknowledged parities per path whose blocks [`SchemeSender::acked_by_repair`] recognises
/// (a repaired packet is acknowledged in the same ACK as its parity; this covers ACKs lost
/// in between).
const ACKED_PARITIES: usize = 16;

// ---------------------------------------------------------------------------- configuration

/// Options of the `dfec` scheme (defaults: the paper's Table I).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DfecConfig {
    /// Data packets per parity at the start (9: one parity in a 10-packet initial window).
    pub start_ratio: u32,
    /// Lower bound on the ratio (4: at most 20 % overhead).
    pub min_ratio: u32,
    /// Upper bound on the ratio (256: bounds the receiver's buffering).
    pub max_ratio: u32,
    /// Adapt the ratio (Eqs. 1–3); false keeps `start_ratio`.
    pub adaptive: bool,
    /// N: residual-loss periods averaged (Eq. 2).
    pub periods: u32,
    /// T in RTTs: length of one residual-loss period.
    pub period_rtts: f64,
    /// ε: correction rate of the ratio per period (Eq. 3).
    pub epsilon: f64,
    /// Target residual loss (fraction, 0.01 = 1 %).
    pub target: f64,
    /// Close a partial block with a parity when the path had nothing else to send for
    /// `flush_rtts` (ours; see the module docs).
    pub flush_idle: bool,
    /// Delay of the idle flush, in RTTs.
    pub flush_rtts: f64,
    /// Set each path's duplicate-ACK (packet) threshold to the block size (§III-A).
    pub threshold_follows_block: bool,
    /// Ours, beside §III-A's threshold: when a block's parity is acknowledged, the packets
    /// sent on the path since the previous parity (the block's, and those carrying engine
    /// frames that no parity covers) still unacknowledged are lost at once — the receiver
    /// had the parity and could not repair them — instead of waiting for `ratio + 1` later
    /// packets or the retransmission timer.
    pub lost_at_parity: bool,
    /// MPTCP: opportunistic reinjection (as `mptcp`).
    pub reinject: bool,
    /// MPTCP: penalisation (as `mptcp`).
    pub penalize: bool,
    /// MPTCP: failover of a timed-out path's data (as `mptcp`).
    pub failover: bool,
}

impl Default for DfecConfig {
    fn default() -> Self {
        DfecConfig {
            start_ratio: 9,
            min_ratio: 4,
            max_ratio: 256,
            adaptive: true,
            periods: 2,
            period_rtts: 3.0,
            epsilon: 0.33,
            target: 0.01,
            flush_idle: true,
            flush_rtts: 0.25,
            threshold_follows_block: true,
            lost_at_parity: false,
            reinject: true,
            penalize: true,
            failover: true,
        }
    }
}

impl DfecConfig {
    /// Checks the options, or says what is wrong.
    pub fn check(&self) -> Result<(), String> {
        let (lo, st, hi) = (self.min_ratio, self.start_ratio, self.max_ratio);
        if !(1 <= lo && lo <= st && st <= hi && hi as usize <= MAX_BLOCK) {
            return Err(format!(
                "dfec needs 1 <= min_ratio <= start_ratio <= max_ratio <= {MAX_BLOCK} \
                 (got {lo}, {st}, {hi})"
            ));
        }
        if self.periods == 0 || self.periods > 1000 {
            return Err(format!(
                "dfec periods must be 1..=1000 (got {})",
                self.periods
            ));
        }
        if !(self.period_rtts > 0.0 && self.period_rtts <= 1000.0) {
            return Err("dfec period_rtts must be in (0, 1000]".into());
        }
        if !(self.epsilon > 0.0 && self.epsilon < 1.0) {
            return Err("dfec epsilon must be in (0, 1)".into());
        }
        if !(self.flush_rtts > 0.0 && self.flush_rtts <= 100.0) {
            return Err("dfec flush_rtts must be in (0, 100]".into());
        }
        if !(0.0..1.0).contains(&self.target) {
            return Err("dfec target must be in [0, 1)".into());
        }
        Ok(())
    }

    fn arq(&self) -> ArqConfig {
        ArqConfig {
            reinject: self.reinject,
            penalize: self.penalize,
            failover: self.failover,
        }
    }
}

impl Factory for DfecConfig {
    fn options(&self) -> Options {
        registry::options_of(self)
    }
}

impl SchemeFactory for DfecConfig {
    fn validate(&self, _cfg: &ConnectionConfig) -> Result<(), String> {
        self.check()
    }
    fn build(&self, _cfg: &ConnectionConfig) -> (Box<dyn SchemeSender>, Box<dyn SchemeReceiver>) {
        (
            Box::new(FecSender::new("dfec", self.arq(), Mode::Dynamic(*self))),
            Box::new(FecReceiver::new()),
        )
    }
}

/// Options of the `tcp-ir` scheme.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TcpIrConfig {
    /// Interval between parities, in RTTs (0.25 in TCP-IR).
    pub interval_rtts: f64,
    /// A repaired loss reduces the window (TCP-IR, §III-B (i)).
    pub repair_is_congestion: bool,
}

impl Default for TcpIrConfig {
    fn default() -> Self {
        TcpIrConfig {
            interval_rtts: 0.25,
            repair_is_congestion: true,
        }
    }
}

impl Factory for TcpIrConfig {
    fn options(&self) -> Options {
        registry::options_of(self)
    }
}

impl SchemeFactory for TcpIrConfig {
    fn validate(&self, _cfg: &ConnectionConfig) -> Result<(), String> {
        if !(self.interval_rtts > 0.0 && self.interval_rtts <= 100.0) {
            return Err("tcp-ir interval_rtts must be in (0, 100]".into());
        }
        Ok(())
    }
    fn max_paths(&self) -> Option<usize> {
        Some(1)
    }
    fn build(&self, _cfg: &ConnectionConfig) -> (Box<dyn SchemeSender>, Box<dyn SchemeReceiver>) {
        let arq = ArqConfig {
            reinject: false,
            penalize: false,
            failover: false,
        };
        (
            Box::new(FecSender::new("tcp-ir", arq, Mode::Timer(*self))),
            Box::new(FecReceiver::new()),
        )
    }
}

/// Registry entry of `dfec`.
pub(crate) const DFEC: Entry<dyn SchemeFactory> = Entry {
    name: "dfec",
    aliases: &["tcp-dfec", "mptcp-dfec"],
    summary: "TCP-dFEC / MPTCP-dFEC: ARQ plus adaptive XOR parity inside each path's window \
              (Ferlin et al., MPTCP meets FEC)",
    options: &[
        OptionDoc {
            key: "start_ratio",
            doc: "data packets per parity at the start (9)",
        },
        OptionDoc {
            key: "min_ratio",
            doc: "lower bound on the ratio (4)",
        },
        OptionDoc {
            key: "max_ratio",
            doc: "upper bound on the ratio (256, at most 256)",
        },
        OptionDoc {
            key: "adaptive",
            doc: "adapt the ratio from the residual loss (false: fixed start_ratio)",
        },
        OptionDoc {
            key: "periods",
            doc: "N, residual-loss periods averaged (2)",
        },
        OptionDoc {
            key: "period_rtts",
            doc: "T, one period in RTTs (3)",
        },
        OptionDoc {
            key: "epsilon",
            doc: "correction rate of the ratio per period (0.33)",
        },
        OptionDoc {
            key: "target",
            doc: "target residual loss, fraction (0.01)",
        },
        OptionDoc {
            key: "flush_idle",
            doc: "close a partial block when the path has nothing else to send",
        },
        OptionDoc {
            key: "flush_rtts",
            doc: "delay of the idle flush in RTTs (0.25)",
        },
        OptionDoc {
            key: "threshold_follows_block",
            doc: "duplicate-ACK threshold = FEC block size",
        },
        OptionDoc {
            key: "lost_at_parity",
            doc: "a block's unacknowledged packets are lost once its parity is acknowledged",
        },
        OptionDoc {
            key: "reinject",
            doc: "MPTCP opportunistic reinjection (as mptcp)",
        },
        OptionDoc {
            key: "penalize",
            doc: "MPTCP penalisation (as mptcp)",
        },
        OptionDoc {
            key: "failover",
            doc: "MPTCP failover of a timed-out path's data (as mptcp)",
        },
    ],
    make: |o| Ok(Arc::new(registry::from_options::<DfecConfig>(o)?)),
};

/// Registry entry of `tcp-ir`.
pub(crate) const TCP_IR: Entry<dyn SchemeFactory> = Entry {
    name: "tcp-ir",
    aliases: &[],
    summary: "TCP Instant Recovery: one XOR parity every 0.25 RTT on a timer, repairs \
              count as congestion (exactly one path)",
    options: &[
        OptionDoc {
            key: "interval_rtts",
            doc: "interval between parities in RTTs (0.25)",
        },
        OptionDoc {
            key: "repair_is_congestion",
            doc: "a repaired loss reduces the window, as in TCP-IR",
        },
    ],
    make: |o| Ok(Arc::new(registry::from_options::<TcpIrConfig>(o)?)),
};

// ---------------------------------------------------------------------------- wire helpers

/// Ascending runs `(first, len)` of sorted, distinct packet numbers.
fn runs(pns: &[u64]) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for &pn in pns {
        match out.last_mut() {
            Some((first, len)) if *first + *len == pn => *len += 1,
            _ => out.push((pn, 1)),
        }
    }
    out
}

/// Encoded size of the ranges: first pn, range count, then (gap, length) per range (the
/// first gap is 0).
fn ranges_len(pns: &[u64]) -> usize {
    let r = runs(pns);
    let Some(&(first, _)) = r.first() else {
        return 0;
    };
    let mut n = varint_len(first) + varint_len(r.len() as u64);
    let mut end = first;
    for &(s, l) in &r {
        n += varint_len(s - end) + varint_len(l);
        end = s + l;
    }
    n
}

fn encode_ranges(out: &mut Vec<u8>, pns: &[u64]) {
    let r = runs(pns);
    let first = r.first().map_or(0, |x| x.0);
    put_varint(out, first);
    put_varint(out, r.len() as u64);
    let mut end = first;
    for &(s, l) in &r {
        put_varint(out, s - end);
        put_varint(out, l);
        end = s + l;
    }
}

/// XORs `src` into the front of `acc`, growing `acc` with zeros if needed.
fn xor_into(acc: &mut Vec<u8>, src: &[u8]) {
    if acc.len() < src.len() {
        acc.resize(src.len(), 0);
    }
    for (a, b) in acc.iter_mut().zip(src) {
        *a ^= b;
    }
}

fn unit_header(offset: u64, len: usize) -> [u8; UNIT_HEADER] {
    let mut h = [0u8; UNIT_HEADER];
    h[..8].copy_from_slice(&offset.to_be_bytes());
    h[8..].copy_from_slice(&(len as u16).to_be_bytes());
    h
}

// ---------------------------------------------------------------------------- sender

#[derive(Debug, Clone, Copy)]
enum Mode {
    Dynamic(DfecConfig),
    Timer(TcpIrConfig),
}

/// One path's FEC state at the sender.
#[derive(Debug, Default)]
struct PathFec {
    /// XOR of the block's units so far.
    parity: Vec<u8>,
    /// Packet numbers of the block's data packets, ascending.
    pns: Vec<u64>,
    /// The block must be closed by the next packet this path sends.
    due: bool,
    /// When the current block's parity is due (TCP-IR's interval; dFEC's idle flush).
    deadline: Option<Instant>,
    /// The deadline was armed before the path had an RTT sample, with the RTO standing in
    /// for the RTT: (armed at, delay in RTTs). The first sample re-arms it from the real
    /// RTT (see [`PathFec::arm`]).
    provisional: Option<(Instant, f64)>,
    /// Data packets per parity (real-valued; rounded when used).
    ratio: f64,
    /// Threshold last requested from the engine (0: none yet).
    threshold: u64,
    /// Parities in flight: (parity's packet number, the first packet number sent after the
    /// previous parity), ascending.
    open_parities: VecDeque<(u64, u64)>,
    /// The same pairs of the latest [`ACKED_PARITIES`] parities acknowledged: a packet between
    /// them acknowledged after its parity was rebuilt by the receiver
    /// ([`SchemeSender::acked_by_repair`]).
    acked_parities: VecDeque<(u64, u64)>,
    /// Packet number of the last parity sent.
    last_parity: Option<u64>,
    /// End of the current residual-loss period.
    period_end: Option<Instant>,
    period_sent: u64,
    period_lost: u64,
    /// Last N residual-loss values (Eq. 2).
    history: VecDeque<f64>,
    /// Cumulative repairs and failures the receiver reported.
    repaired: u64,
    failed: u64,
    // Counters.
    parities: u64,
    parity_bytes: u64,
    parities_acked: u64,
    parities_lost: u64,
    parities_skipped: u64,
    data_packets: u64,
    /// Sum of the ratio at each data packet sent (mean ratio = this / data packets).
    ratio_sum: f64,
    residual_losses: u64,
    ratio_changes: u64,
    /// Data packets left out of every block because they carried engine frames.
    unprotected: u64,
}

impl PathFec {
    fn block_limit(&self, mode: &Mode) -> usize {
        match mode {
            Mode::Dynamic(_) => (self.ratio.round() as usize).clamp(1, MAX_BLOCK),
            Mode::Timer(_) => MAX_BLOCK,
        }
    }

    /// Arms the parity deadline `rtts` round trips from `now`. Before the path's first RTT
    /// sample the RTO stands in (1 s initially: 250 ms for a quarter RTT, longer than the
    /// minimum RTO itself), so the deadline is marked provisional and [`PathFec::rearm`]
    /// recomputes it from the first sample.
    fn arm(&mut self, now: Instant, view: &PathView, rtts: f64) {
        self.deadline = Some(now + Duration::from_secs_f64(view.rtt_or_rto().as_secs_f64() * rtts));
        self.provisional = view.srtt.is_none().then_some((now, rtts));
    }

    /// A provisional deadline, once the path has an RTT sample, becomes `rtts` sampled
    /// round trips from when it was armed (possibly already past: the parity then goes out
    /// with the next window space).
    fn rearm(&mut self, view: &PathView) {
        if let (Some((at, rtts)), Some(srtt)) = (self.provisional, view.srtt) {
            self.provisional = None;
            if self.deadline.is_some() {
                self.deadline = Some(at + Duration::from_secs_f64(srtt.as_secs_f64() * rtts));
            }
        }
    }
}

/// Sending half of `dfec` and `tcp-ir`: ARQ data plus per-path parity.
#[derive(Debug)]
pub struct FecSender {
    name: &'static str,
    arq: ArqSender,
    mode: Mode,
    paths: Vec<PathFec>,
    scratch: Vec<u8>,
}

impl FecSender {
    fn new(name: &'static str, arq: ArqConfig, mode: Mode) -> Self {
        FecSender {
            name,
            arq: ArqSender::new(name, arq),
            mode,
            paths: Vec::new(),
            scratch: Vec::new(),
        }
    }

    fn ensure_paths(&mut self, n: usize) {
        let start = match self.mode {
            Mode::Dynamic(c) => f64::from(c.start_ratio),
            Mode::Timer(_) => MAX_BLOCK as f64,
        };
        while self.paths.len() < n {
            self.paths.push(PathFec {
                ratio: start,
                ..PathFec::default()
            });
        }
    }

    /// Current ratio of `path` (data packets per parity), for tests and reports.
    pub fn ratio(&self, path: usize) -> Option<f64> {
        self.paths.get(path).map(|p| p.ratio)
    }

    /// Ends residual-loss periods that are over and adapts the ratio (Eqs. 1–3).
    fn roll_period(&mut self, ctx: &SendCtx<'_>, path: usize) {
        let Mode::Dynamic(c) = self.mode else {
            return;
        };
        if !c.adaptive {
            return;
        }
        let Some(srtt) = ctx.paths.get(path).and_then(|v| v.srtt) else {
            return;
        };
        let period = Duration::from_secs_f64(srtt.as_secs_f64() * c.period_rtts);
        let st = &mut self.paths[path];
        let Some(end) = st.period_end else {
            st.period_end = Some(ctx.now + period);
            return;
        };
        if ctx.now < end {
            return;
        }
        if st.period_sent > 0 {
            // Eq. 1: residual loss of this period.
            let rl = st.period_lost as f64 / st.period_sent as f64;
            st.history.push_back(rl.min(1.0));
            while st.history.len() > c.periods as usize {
                st.history.pop_front();
            }
            // Eq. 2: mean of the last N periods.
            let avg = st.history.iter().sum::<f64>() / st.history.len() as f64;
            // Eq. 3 (as read from the text, module docs): step the ratio by ε toward the
            // target; more parity when the residual loss is above it.
            let old = st.ratio;
            let next = if avg > c.target {
                old * (1.0 - c.epsilon)
            } else {
                old * (1.0 + c.epsilon)
            };
            st.ratio = next.clamp(f64::from(c.min_ratio), f64::from(c.max_ratio));
            if st.ratio.round() != old.round() {
                st.ratio_changes += 1;
            }
        }
        st.period_sent = 0;
        st.period_lost = 0;
        st.period_end = Some(ctx.now + period);
    }

    /// Writes the parity of `path`'s block into `pkt` and starts a new block.
    fn emit_parity(&mut self, path: usize, pkt: &mut PacketWriter<'_>) -> Option<PacketTag> {
        let st = &mut self.paths[path];
        let mut body = Vec::with_capacity(RANGE_BUDGET + st.parity.len());
        encode_ranges(&mut body, &st.pns);
        body.extend_from_slice(&st.parity);
        let count = st.pns.len() as u64;
        let frame = Frame::Scheme {
            kind: PARITY,
            body: &body,
        };
        let fits = frame.encoded_len().is_ok_and(|n| n <= pkt.remaining());
        st.parity.clear();
        st.pns.clear();
        st.due = false;
        st.deadline = None;
        st.provisional = None;
        if !fits || pkt.push(&frame).is_err() {
            // Cannot happen with the segment cap of `poll_packet`; counted if it does.
            st.parities_skipped += 1;
            return None;
        }
        st.parities += 1;
        st.parity_bytes += body.len() as u64;
        let pn = pkt.header().pn;
        // Everything since the previous parity: the block and the packets between its members
        // that parity does not cover (engine frames), which the acknowledged parity, sent
        // after them, shows were overtaken.
        let since = st.last_parity.map_or(0, |l| l + 1);
        st.open_parities.push_back((pn, since));
        st.last_parity = Some(pn);
        Some(PacketTag {
            a: PARITY_TAG,
            b: count,
        })
    }
}

impl SchemeSender for FecSender {
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
        self.roll_period(ctx, path);
        let pn = pkt.header().pn;
        let limit = self.paths[path].block_limit(&self.mode);
        // §III-A: duplicate-ACK threshold = block size (ratio data packets + the parity).
        if let Mode::Dynamic(c) = self.mode {
            let want = limit as u64 + 1;
            if c.threshold_follows_block && self.paths[path].threshold != want {
                self.paths[path].threshold = want;
                ctx.request(Action::SetLossThreshold {
                    path,
                    packets: want,
                });
            }
        }
        {
            let st = &mut self.paths[path];
            if !st.pns.is_empty() {
                // The parity goes out first when due, when the block is full, or when this
                // packet's number would push the ranges past what a parity can carry.
                let mut with = st.pns.clone();
                with.push(pn);
                if st.due || st.pns.len() >= limit || ranges_len(&with) > RANGE_BUDGET {
                    st.due = true;
                }
            }
        }
        if self.paths[path].due && !self.paths[path].pns.is_empty() {
            if let Some(tag) = self.emit_parity(path, pkt) {
                return Some(tag);
            }
        }
        // Frames the engine wrote before us (stream end, message announcements, ...) cannot be
        // rebuilt from parity, and a packet marked recovered counts as delivered whole: such a
        // packet stays out of the block (ARQ alone protects it).
        let foreign = ctx.packet_carries_engine_frames();
        // Data, shortened if needed so that the parity over it fits this datagram, and so that
        // a retransmission of it fits one later packet whole: no longer than the room of an
        // empty packet whose number takes 4 bytes (it grows from 1 to 2 to 4 bytes as the
        // path sends) and that carries an ACK_FLOOR (which the engine adds to some packets
        // only; its floor is below the packet number). Otherwise a segment sized to a roomier
        // packet, resent in a tighter one, leaves its last bytes (1 to 6) to a packet of their
        // own.
        let parity_room = FRAME_HEADER + RANGE_BUDGET + UNIT_HEADER;
        let wide_pn = pn.max(1 << 14);
        let floor = Frame::AckFloor {
            path: 0,
            floor: wide_pn,
        };
        let tightest = (pkt.remaining() + pkt.frames_len())
            .saturating_sub(varint_len(wide_pn) - varint_len(pn))
            .saturating_sub(floor.encoded_len().unwrap_or(0));
        let cap = pkt.remaining().min(tightest).saturating_sub(parity_room);
        let mss = ctx.segment_size;
        ctx.segment_size = mss.min(cap).min(usize::from(u16::MAX));
        let tag = if ctx.segment_size == 0 {
            None
        } else {
            self.arq.poll_packet(ctx, path, pkt)
        };
        ctx.segment_size = mss;
        let Some(tag) = tag else {
            // Idle with an open block: close it after `flush_rtts` unless it fills first.
            if let Mode::Dynamic(c) = self.mode {
                let st = &mut self.paths[path];
                // A sender held back by the peer's receive window is not idle: ACKs will
                // open it and fill the block.
                if c.flush_idle
                    && !st.pns.is_empty()
                    && st.deadline.is_none()
                    && !ctx.window_limited()
                {
                    st.arm(ctx.now, &ctx.paths[path], c.flush_rtts);
                }
            }
            return None;
        };
        if foreign {
            let st = &mut self.paths[path];
            st.unprotected += 1;
            st.data_packets += 1;
            st.ratio_sum += st.ratio;
            st.period_sent += 1;
            return Some(tag);
        }
        // The packet carries stream bytes [tag.a, tag.a + tag.b): they join the block.
        let len = tag.b as usize;
        self.scratch.resize(len, 0);
        if !ctx.send_buf.copy_out(tag.a, &mut self.scratch[..len]) {
            return Some(tag);
        }
        let st = &mut self.paths[path];
        let hdr = unit_header(tag.a, len);
        let total = UNIT_HEADER + len;
        if st.parity.len() < total {
            st.parity.resize(total, 0);
        }
        xor_into(&mut st.parity, &hdr);
        for (a, b) in st.parity[UNIT_HEADER..total]
            .iter_mut()
            .zip(&self.scratch[..len])
        {
            *a ^= b;
        }
        st.pns.push(pn);
        st.data_packets += 1;
        st.ratio_sum += st.ratio;
        st.period_sent += 1;
        match self.mode {
            Mode::Dynamic(_) => {
                if st.pns.len() >= limit {
                    st.due = true;
                }
            }
            Mode::Timer(c) => {
                if st.deadline.is_none() {
                    st.arm(ctx.now, &ctx.paths[path], c.interval_rtts);
                }
                if st.pns.len() >= MAX_BLOCK {
                    st.due = true;
                }
            }
        }
        Some(tag)
    }

    fn on_acked(&mut self, ctx: &mut SendCtx<'_>, pkt: &SentInfo) {
        self.ensure_paths(ctx.paths.len());
        self.paths[pkt.path].rearm(&ctx.paths[pkt.path]);
        if pkt.tag.a == PARITY_TAG {
            let declare = matches!(self.mode, Mode::Dynamic(c) if c.lost_at_parity);
            let st = &mut self.paths[pkt.path];
            st.parities_acked += 1;
            while let Some(&(parity, first)) = st.open_parities.front() {
                if parity > pkt.pn {
                    break;
                }
                st.open_parities.pop_front();
                if parity == pkt.pn {
                    if st.acked_parities.len() == ACKED_PARITIES {
                        st.acked_parities.pop_front();
                    }
                    st.acked_parities.push_back((parity, first));
                    // `lost_at_parity`: the receiver had this parity; what of its block is
                    // still unacknowledged once this acknowledgement is processed could not
                    // be repaired.
                    if declare {
                        ctx.request(Action::DeclareLost {
                            path: pkt.path,
                            from: first,
                            to: parity,
                        });
                    }
                }
            }
            return;
        }
        self.arq.on_acked(ctx, pkt);
    }

    fn acked_by_repair(&self, path: usize, pn: u64) -> bool {
        // Asked as `pn` is newly acknowledged: if a later parity whose block spans it was
        // acknowledged already (the engine settles an ACK's packets from the highest number
        // down, so in the same ACK too), the receiver rebuilt it from that parity.
        self.paths.get(path).is_some_and(|st| {
            st.acked_parities
                .iter()
                .any(|&(parity, first)| first <= pn && pn < parity)
        })
    }

    fn on_lost(&mut self, ctx: &mut SendCtx<'_>, pkt: &SentInfo, kind: LossKind) {
        self.ensure_paths(ctx.paths.len());
        if pkt.tag.a == PARITY_TAG {
            // A lost parity is not resent (its block's losses fall back to ARQ).
            let st = &mut self.paths[pkt.path];
            st.parities_lost += 1;
            st.open_parities.retain(|&(parity, _)| parity != pkt.pn);
            return;
        }
        // A data packet declared lost was not repaired: residual loss (Eq. 1).
        let st = &mut self.paths[pkt.path];
        st.residual_losses += 1;
        st.period_lost += 1;
        self.arq.on_lost(ctx, pkt, kind);
    }

    fn on_data_ack(&mut self, ctx: &mut SendCtx<'_>) {
        self.arq.on_data_ack(ctx);
    }

    fn on_feedback(&mut self, ctx: &mut SendCtx<'_>, frame: &Frame<'_>) -> Result<(), SchemeError> {
        let Frame::Scheme { kind: REPORT, body } = frame else {
            return Err(SchemeError::Unexpected);
        };
        let mut r = Reader::new(body);
        let bad = |_| SchemeError::Invalid("truncated report");
        let path = r.varint("path").map_err(bad)?;
        let repaired = r.varint("repaired").map_err(bad)?;
        let failed = r.varint("failed").map_err(bad)?;
        if !r.is_empty() {
            return Err(SchemeError::Invalid("trailing bytes in report"));
        }
        self.ensure_paths(ctx.paths.len());
        let path = usize::try_from(path).unwrap_or(usize::MAX);
        let st = self
            .paths
            .get_mut(path)
            .ok_or(SchemeError::Unknown("report for an unknown path"))?;
        // Each parity repairs or fails at most once.
        if repaired.saturating_add(failed) > st.parities {
            return Err(SchemeError::Invalid("more repairs than parities sent"));
        }
        let new_repairs = repaired.saturating_sub(st.repaired);
        st.repaired = st.repaired.max(repaired);
        st.failed = st.failed.max(failed);
        if let Mode::Timer(c) = self.mode {
            if c.repair_is_congestion && new_repairs > 0 {
                ctx.request(Action::Penalize { path });
            }
        }
        Ok(())
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.paths.iter().filter_map(|p| p.deadline).min()
    }

    fn on_timeout(&mut self, ctx: &mut SendCtx<'_>) {
        for st in &mut self.paths {
            if st.deadline.is_some_and(|d| d <= ctx.now) {
                st.deadline = None;
                st.provisional = None;
                st.due = true;
            }
        }
    }

    fn on_path_state(&mut self, ctx: &mut SendCtx<'_>, path: usize, state: PathState) {
        self.arq.on_path_state(ctx, path, state);
    }

    fn on_head_stalled(&mut self, ctx: &mut SendCtx<'_>) {
        self.arq.on_head_stalled(ctx);
    }

    fn counters(&self) -> serde_json::Value {
        let paths: Vec<_> = self
            .paths
            .iter()
            .map(|p| {
                serde_json::json!({
                    "ratio": p.ratio,
                    "mean_ratio": if p.data_packets > 0 {
                        p.ratio_sum / p.data_packets as f64
                    } else {
                        p.ratio
                    },
                    "parities": p.parities,
                    "parity_bytes": p.parity_bytes,
                    "parities_acked": p.parities_acked,
                    "parities_lost": p.parities_lost,
                    "parities_skipped": p.parities_skipped,
                    "data_packets": p.data_packets,
                    "residual_losses": p.residual_losses,
                    "ratio_changes": p.ratio_changes,
                    "unprotected": p.unprotected,
                    "reported_repaired": p.repaired,
                    "reported_failed": p.failed,
                })
            })
            .collect();
        serde_json::json!({
            "arq": self.arq.counters(),
            "paths": paths,
        })
    }
}

// ---------------------------------------------------------------------------- receiver

#[derive(Debug, Default)]
struct RecvPath {
    /// Units of the last packets: pn → (stream offset, data).
    units: BTreeMap<u64, (u64, Vec<u8>)>,
    largest: u64,
    repaired: u64,
    failed: u64,
    useless: u64,
}

/// Receiving half of `dfec` and `tcp-ir`: DATA as ARQ, parity repairs single losses.
#[derive(Debug, Default)]
pub struct FecReceiver {
    arq: ArqReceiver,
    paths: Vec<RecvPath>,
    hostile: u64,
}

impl FecReceiver {
    fn new() -> Self {
        Self::default()
    }

    fn path(&mut self, p: usize) -> &mut RecvPath {
        if self.paths.len() <= p {
            self.paths.resize_with(p + 1, RecvPath::default);
        }
        &mut self.paths[p]
    }

    fn keep(&mut self, path: usize, pn: u64, offset: u64, data: &[u8]) {
        let st = self.path(path);
        st.largest = st.largest.max(pn);
        let floor = st.largest.saturating_sub(RECV_KEEP);
        if pn < floor {
            return;
        }
        st.units.insert(pn, (offset, data.to_vec()));
        while let Some((&first, _)) = st.units.first_key_value() {
            if first >= floor {
                break;
            }
            st.units.pop_first();
        }
    }

    fn parity(
        &mut self,
        ctx: &mut RecvCtx<'_>,
        from: FrameSource,
        body: &[u8],
    ) -> Result<(), SchemeError> {
        let hostile = |why| Err(SchemeError::Invalid(why));
        let mut r = Reader::new(body);
        let trunc = |_| SchemeError::Invalid("truncated parity");
        let first = r.varint("first").map_err(trunc)?;
        let nranges = r.varint("ranges").map_err(trunc)?;
        if nranges == 0 || nranges > MAX_RANGES as u64 {
            return hostile("parity range count out of bounds");
        }
        let mut pns: Vec<u64> = Vec::new();
        let mut end = first;
        for _ in 0..nranges {
            let gap = r.varint("gap").map_err(trunc)?;
            let len = r.varint("len").map_err(trunc)?;
            let start = end.checked_add(gap);
            let stop = start.and_then(|s| s.checked_add(len));
            let (Some(start), Some(stop)) = (start, stop) else {
                return hostile("parity range overflows");
            };
            if len == 0 || pns.len() as u64 + len > MAX_BLOCK as u64 {
                return hostile("parity covers no packet or too many");
            }
            if stop > from.pn || start + RECV_KEEP < from.pn {
                return hostile("parity names packets it cannot cover");
            }
            pns.extend(start..stop);
            end = stop;
        }
        let parity = r.bytes(r.remaining(), "parity").map_err(trunc)?;
        if parity.len() < UNIT_HEADER || parity.len() > UNIT_HEADER + usize::from(u16::MAX) {
            return hostile("parity length out of bounds");
        }
        let st = self.path(from.path);
        let missing: Vec<u64> = pns
            .iter()
            .copied()
            .filter(|pn| !st.units.contains_key(pn))
            .collect();
        match missing.len() {
            0 => {
                st.useless += 1;
                return Ok(());
            }
            1 => {}
            _ => {
                st.failed += 1;
                ctx.request_ack(from.path);
                return Ok(());
            }
        }
        let mut acc = parity.to_vec();
        for pn in &pns {
            if let Some((off, data)) = st.units.get(pn) {
                if UNIT_HEADER + data.len() > acc.len() {
                    return hostile("a covered packet is longer than the parity");
                }
                xor_into(&mut acc, &unit_header(*off, data.len()));
                for (a, b) in acc[UNIT_HEADER..].iter_mut().zip(data) {
                    *a ^= b;
                }
            }
        }
        let mut h = [0u8; 8];
        h.copy_from_slice(&acc[..8]);
        let offset = u64::from_be_bytes(h);
        let len = usize::from(u16::from_be_bytes([acc[8], acc[9]]));
        if UNIT_HEADER + len > acc.len() || acc[UNIT_HEADER + len..].iter().any(|&b| b != 0) {
            return hostile("rebuilt packet disagrees with its length");
        }
        if offset.checked_add(len as u64).is_none() {
            return hostile("rebuilt offset overflows");
        }
        let pn = missing[0];
        let data = acc[UNIT_HEADER..UNIT_HEADER + len].to_vec();
        ctx.recv_buf.insert(offset, &data);
        st.units.insert(pn, (offset, data));
        st.repaired += 1;
        ctx.mark_recovered(from.path, pn);
        ctx.request_ack(from.path);
        Ok(())
    }
}

impl SchemeReceiver for FecReceiver {
    fn on_frame(
        &mut self,
        ctx: &mut RecvCtx<'_>,
        from: FrameSource,
        frame: &Frame<'_>,
    ) -> Result<(), SchemeError> {
        match frame {
            Frame::Data { offset, data } => {
                self.keep(from.path, from.pn, *offset, data);
                self.arq.on_frame(ctx, from, frame)
            }
            Frame::Scheme { kind: PARITY, body } => {
                let out = self.parity(ctx, from, body);
                if out.is_err() {
                    self.hostile += 1;
                }
                out
            }
            _ => Err(SchemeError::Unexpected),
        }
    }

    fn write_feedback(&mut self, _now: Instant, path: usize, pkt: &mut PacketWriter<'_>) {
        let Some(st) = self.paths.get(path) else {
            return;
        };
        if st.repaired == 0 && st.failed == 0 {
            return;
        }
        let mut body = Vec::with_capacity(12);
        put_varint(&mut body, path as u64);
        put_varint(&mut body, st.repaired);
        put_varint(&mut body, st.failed);
        let _ = pkt.push(&Frame::Scheme {
            kind: REPORT,
            body: &body,
        });
    }

    fn counters(&self) -> serde_json::Value {
        let paths: Vec<_> = self
            .paths
            .iter()
            .map(|p| {
                serde_json::json!({
                    "repaired": p.repaired,
                    "failed": p.failed,
                    "useless": p.useless,
                })
            })
            .collect();
        serde_json::json!({ "hostile_parity": self.hostile, "paths": paths })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_round_trip_and_size() {
        let pns = [5u64, 6, 7, 9, 10, 20];
        let mut out = Vec::new();
        encode_ranges(&mut out, &pns);
        assert_eq!(out.len(), ranges_len(&pns));
        let mut r = Reader::new(&out);
        let first = r.varint("f").unwrap();
        let n = r.varint("n").unwrap();
        let mut got = Vec::new();
        let mut end = first;
        for _ in 0..n {
            let s = end + r.varint("g").unwrap();
            let l = r.varint("l").unwrap();
            got.extend(s..s + l);
            end = s + l;
        }
        assert_eq!(got, pns);
    }

    #[test]
    fn defaults_are_table_one_and_bad_options_are_refused() {
        let c = DfecConfig::default();
        assert_eq!((c.start_ratio, c.min_ratio, c.max_ratio), (9, 4, 256));
        assert_eq!(
            (c.periods, c.period_rtts, c.epsilon, c.target),
            (2, 3.0, 0.33, 0.01)
        );
        assert!(c.check().is_ok());
        for bad in [
            DfecConfig {
                max_ratio: 257,
                ..c
            },
            DfecConfig { min_ratio: 10, ..c },
            DfecConfig { epsilon: 1.0, ..c },
            DfecConfig { periods: 0, ..c },
            DfecConfig {
                period_rtts: f64::NAN,
                ..c
            },
        ] {
            assert!(bad.check().is_err(), "{bad:?}");
        }
    }
}
