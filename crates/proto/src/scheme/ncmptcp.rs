//! `nc-mptcp`: network-coded subflows beside regular ones, after Li, Lukyanenko and Cui,
//! "Network Coding Based Multipath TCP" (`shared/papers/nc-mptcp.txt`; equations cited by
//! their number there).
//!
//! **Generations (§III, Definition 1).** The stream is cut into generations of
//! `generation_size` segments of T bytes, T = MSS − 20 (room for the largest SYMBOL frame
//! header, [`SYMBOL_OVERHEAD`]), each starting where the previous one ends. A generation is
//! named on the wire by its first stream byte; a full one (G·T bytes) uses the plain coding, a
//! shorter one (below) carries its byte length in the SYMBOL frame's seed field (fmtcp's
//! convention) and has its own k = ⌈len/T⌉. Every packet carries one SYMBOL frame: block =
//! the generation's first stream byte, id = n. With k the generation's segment count, `n < k` is *source segment n itself* (a unit vector: what
//! regular subflows send) and `n ≥ k` is the random linear combination over GF(2^8) whose
//! coefficients the codec expands from seed n (`tributary_codec::rlnc`, systematic numbering:
//! what NC subflows send). A full generation may also arrive with explicit coefficients
//! (`Coding::Coefficients`, k bytes); this sender never sends them, the receiver accepts them
//! (recoding is legal RLNC) and refuses any other length.
//!
//! **Which subflows are NC (§IV-C).** `nc_paths` lists them explicitly; empty (the default)
//! applies the paper's rule: with two or more active paths, the one with the largest rate
//! estimate X (below) is the NC subflow — "selecting the relatively fast subflow as a NC
//! subflow is always a better choice" — provided Eq. 10 holds (R_r/R_n ≥ 0.03 for every regular
//! subflow r; otherwise the next fastest that satisfies it). The choice is re-evaluated on every
//! packet with 25 % hysteresis (another path must be 1.25× faster to take over), so roles follow
//! the paths. With one path there is no NC subflow: the scheme is ARQ over source segments.
//!
//! **Estimators.** R_i = smoothed RTT (the RTO before a sample); p̂_i = the path's loss-rate
//! estimate ([`PathView::loss_rate`], EWMA over W = 100 packets) floored at 10⁻⁴ (the lower end
//! of §IV-C's range); X_i (Eq. 1, in segments per second) = min(1/(R_i√p̂_i), cwnd_i/R_i): Eq. 1
//! ignores the link rate (at p = 10⁻⁴ and 120 ms it predicts 100 segments per RTT on a
//! 5 Mbit/s path), so it is capped by what the window actually sends. The loss range of
//! §IV-B is the estimator's sampling range, p ∈ (p̂ − zσ, p̂ + zσ) with σ = √(p̂(1−p̂)/W),
//! `z` = 2 by default, clamped to (10⁻⁴, 0.5) (§IV-C's range).
//!
//! **Scheduling (§IV-A, Eqs. 1–3).** S_f (first unsent segment) = k·(first generation still
//! being allocated) + the packets already allocated to it. A path i with window space aims at
//! S_s = S_f + Σ_{R_j > R_i} X_j·(R_j − R_i)/2 (Eq. 3), so faster subflows work ahead and the
//! slower ones fill the segments before, and all finish a generation in about the same
//! interval. Path i then serves, in this order: (1) a generation being *repaired* (see below),
//! oldest first; (2) the first generation at or after S_s's that still needs packets; (3) an
//! earlier one that needs packets. A regular subflow contributes a lost source segment of it
//! (retransmission), else its next unsent source segment, else nothing (it never sends more than
//! the k source segments: redundancy is the NC subflows' job, which is what Eq. 5 says); an NC
//! subflow contributes a fresh coded segment. Generations are opened only when they lie wholly
//! below the peer's flow-control limit.
//!
//! **Short generations (not in the paper, which codes a bulk stream).** A generation shorter
//! than G·T is opened when the stream ends inside it, and when the sender is idle (no open
//! generation needs packets, by Eq. 4 below) while the application has written less than a
//! generation beyond the last one although a full one would fit both the flow-control window
//! and the send buffer: the written bytes go out at once instead of waiting for data that may
//! never come (a web request, an object's tail; without this a 300-byte request waited
//! forever). A sender limited by flow control, by a full send buffer (the writer is blocked,
//! more bytes come as soon as it drains) or still busy with open generations waits for full
//! ones, and [`SchemeSender::write_ahead`] asks the connection to let a bulk writer keep a
//! whole generation written ahead, so a bulk transfer keeps the paper's generation size
//! (Fig. 3 runs open no short generation). At most [`MAX_OPEN_GENERATIONS`] generations are
//! open at either end.
//!
//! **Redundancy (§IV-B, Theorems 1–2).** A generation needs `need` = k − (innovative packets
//! the receiver is known to hold: the larger of its reported rank r(D) and the acknowledged
//! packets) more packets. It "needs packets" until Eq. 4 holds for what is outstanding, with
//! every packet counted at its path's worst-case loss p^max:
//! `Σ_outstanding (1 − p_i^max) ≥ need` — Eq. 4, `|C|(1−p_n) + |G'|(1−p_r) ≥ |G|`, applied to
//! the packets whose fate is open. So the redundancy follows the estimated loss ranges, as
//! Theorem 2 prescribes its minimum |G'|. Theorem 2 with Eq. 6 (the planned split of a
//! generation between regular and NC subflows from Eq. 1's rate ratio) is computed by
//! [`theorem2_regular`] and [`eq6_coded`]; with `plan = true` a regular subflow sends at most
//! ⌈|G'|⌉ first-time source segments of a generation (Theorem 2's split); by default
//! (`plan = false`) the split is the one the paths' actual sending produces, because Eq. 1's
//! rates ignore link capacity (docs/experiments/nc-mptcp.md compares both).
//!
//! **Retransmit or send the next (§IV-B, last paragraph).** Every ACK carries the receiver's
//! decoding-matrix status (FEEDBACK frames, at most 8: generation, rank, decoded flag; newly
//! decoded generations first, each in three ACKs, then the open ones oldest first), and the
//! receiver asks for an immediate ACK when a generation completes, so the fastest subflow's
//! ACKs carry it first.
//!
//! **Repairs (`repair = "feedback"`, the default).** Once a generation has been fully
//! allocated (Eq. 4 held), its *rank deficit* is `need` = k − max(reported rank, acknowledged
//! packets) (+ what a head stall added, below). It is being *repaired* exactly while the
//! deficit exceeds its packets in flight — a packet counts as in flight until it is
//! acknowledged or the engine declares it lost (per-path RACK/RTO, RFC 8985), with no timer of
//! the scheme's own and no re-evaluation of Eq. 4 when the loss estimates move — so a repair
//! sends exactly the missing number of packets. A generation being repaired goes before any
//! new data on every subflow (a regular one retransmits a lost source segment, an NC one sends
//! a new combination, innovative for whatever is missing). A regular segment lost is thus
//! always repaired before new data, as MPTCP retransmits it, but by whichever subflow can send
//! first; this is the paper's argument that NC-MPTCP does no worse than MPTCP. Fallback when
//! feedback stops: when the engine reports the stream head stalled (about two RTOs without
//! progress, backed off while it lasts) the head generation owes one more packet.
//! `repair = "timer"` keeps the rule before 2026-11-23 for comparison: Eq. 4 re-evaluated with
//! the current estimates for repairs too, and a packet outstanding longer than 5/4·R + 25 ms
//! on its path no longer counted as arriving (it fired for segments of a slow subflow that
//! were late, not lost: docs/experiments/nc-mptcp.md, Fig. 4).
//!
//! **Unblocking (`unblock = true`; off by default; not in the paper's text).** An NC subflow that
//! has nothing else to send (no generation needs packets: the sender is limited by flow
//! control or the written data) sends combinations for the generation that blocks delivery
//! (the oldest open one) while its rank deficit exceeds the packets of it in flight on NC
//! subflows. So a generation that waits only for a slow subflow's segments is completed by the
//! fast NC subflow, with capacity that would otherwise go unused, and the slow segments arrive
//! as late symbols. Counted apart (`coded_unblock`) from the repairs. Off by default: it lifts
//! bulk goodput with a slow subflow (docs/experiments/nc-mptcp.md, Fig. 4 and Table II), but in
//! the comparison suite's `shared` mix with BBR and the `video` application it delivers fewer
//! frames on time (258 of 375 against 354 without it, 2026-11-26). Its earlier stall there
//! (9 frames) was a BBR bug, fixed since (a window cut to 4 MSS never grew back).
//!
//! **Receiver.** One progressive RLNC decoder per generation inside the receive window;
//! regular segments enter it as unit vectors. Every source segment that becomes known (a
//! regular segment at once, coded ones as the matrix reduces) is inserted into the receive
//! buffer at its stream offset, so in-order delivery and flow control are the engine's.
//! Symbols of generations already decoded or below the in-order point are dropped and counted
//! (`late_symbols`); non-innovative ones are counted (`non_innovative`). Symbols of the wrong
//! size, generations beyond the receive window or the stream end or overflowing the offset
//! space, a new generation starting below the delivered data or overlapping a known one, a
//! known one with another length, more than [`MAX_OPEN_GENERATIONS`] open, explicit
//! coefficients of the wrong length are refused (the engine counts them, `frames_rejected`);
//! FEEDBACK naming a generation never sent, an offset inside the open generations that starts
//! none, a rank above the generation's size ("rank overflow") or above the packets sent is
//! refused (`feedback_rejected`). The transport is not authenticated without `protect`: a well-formed
//! forged symbol is indistinguishable from a real one, as a forged DATA frame is for `mptcp`.

use super::{
    FrameSource, LossKind, PacketTag, RecvCtx, SchemeError, SchemeFactory, SchemeReceiver,
    SchemeSender, SendCtx, SentInfo,
};
use crate::config::ConnectionConfig;
use crate::path::PathView;
use crate::registry::{self, Entry, Factory, OptionDoc, Options};
use crate::time::{Duration, Instant};
use crate::wire::{Coding, FeedbackFrame, Frame, PacketWriter, SymbolFrame};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use tributary_codec::rlnc::{self, RlncConfig, RlncDecoder, RlncEncoder};

/// Bytes of the MSS left for the SYMBOL frame header: type (1, which also tells the coding),
/// generation id = its first stream byte (varint, ≤ 8), segment number (varint, ≤ 4 below
/// 2^30), the length of a short generation (varint, ≤ 4), payload length (2): 19, plus one
/// byte that wire version 4 spent on a coding byte, kept so that T (1380 B at MSS 1400) and
/// every reported nc-mptcp geometry stay as they were.
pub const SYMBOL_OVERHEAD: usize = 20;
/// Most generations open at once, at the sender and at the receiver (a short generation can
/// be one byte: this bounds the decoders a peer can make the receiver hold).
pub const MAX_OPEN_GENERATIONS: usize = 4096;
/// Loss rates are kept in §IV-C's range (0.0001, 0.5).
const P_MIN: f64 = 1e-4;
/// Upper end of the loss range.
const P_MAX: f64 = 0.5;
/// Packets the path's loss estimator averages over (W).
const LOSS_WINDOW: f64 = 100.0;
/// Another path must be this much faster to become the NC subflow.
const HYSTERESIS: f64 = 1.25;
/// Eq. 10: R_r/R_n ≥ 0.03.
const EQ10_MIN_RATIO: f64 = 0.03;
/// Feedback frames per ACK.
const MAX_FEEDBACK: usize = 8;
/// ACKs that carry a newly decoded generation's status before it gives way to others.
const FRESH_REPORTS: u8 = 3;

/// Options of the `nc-mptcp` scheme.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NcMptcpConfig {
    /// Segments per generation, |G|.
    pub generation_size: usize,
    /// The NC subflows by path index; empty = the paper's rule (the fastest subflow, Eq. 10).
    pub nc_paths: Vec<usize>,
    /// Width of the loss range in standard deviations of the estimator (module docs).
    pub z: f64,
    /// Eq. 3 offsets (false: every path starts at S_f).
    pub offset: bool,
    /// Cap each generation's regular share at Theorem 2's |G'| (Eq. 1 rates).
    pub plan: bool,
    /// How a generation that was fully allocated is repaired (module docs, "Repairs").
    pub repair: Repair,
    /// Idle NC subflows send combinations for the generation that blocks delivery, up to its
    /// reported rank deficit (module docs, "Unblocking"; off by default).
    pub unblock: bool,
}

/// Repair rule of `nc-mptcp` (module docs, "Repairs").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Repair {
    /// The rank deficit (generation size − reported rank, or − acknowledged packets) against
    /// the packets still in flight: exactly the missing number, when the engine declares
    /// packets lost or the reported rank shows them missing.
    #[default]
    Feedback,
    /// The rule before 2026-11-23: Eq. 4 re-evaluated with the current loss estimates, and a
    /// packet unacknowledged 5/4·R + 25 ms after it was sent counted as lost.
    Timer,
}

impl Default for NcMptcpConfig {
    fn default() -> Self {
        NcMptcpConfig {
            generation_size: 16,
            nc_paths: Vec::new(),
            z: 2.0,
            offset: true,
            plan: false,
            repair: Repair::Feedback,
            unblock: false,
        }
    }
}

impl NcMptcpConfig {
    /// Segment (symbol) size for an MSS, or why the configuration is invalid.
    pub fn segment_size(&self, mss: usize) -> Result<usize, String> {
        if !(1..=rlnc::MAX_GENERATION_SIZE).contains(&self.generation_size) {
            return Err(format!(
                "generation_size must be within 1..={}",
                rlnc::MAX_GENERATION_SIZE
            ));
        }
        if !(self.z.is_finite() && (0.0..=10.0).contains(&self.z)) {
            return Err("z must be within 0..=10".into());
        }
        let t = mss.saturating_sub(SYMBOL_OVERHEAD);
        if t == 0 || t > rlnc::MAX_SYMBOL_SIZE {
            return Err(format!("MSS {mss} leaves no valid segment size"));
        }
        Ok(t)
    }
}

impl Factory for NcMptcpConfig {
    fn options(&self) -> Options {
        registry::options_of(self)
    }
}

impl SchemeFactory for NcMptcpConfig {
    fn validate(&self, cfg: &ConnectionConfig) -> Result<(), String> {
        let t = self.segment_size(cfg.mss)?;
        let gen = t * self.generation_size;
        if gen > cfg.recv_buffer {
            return Err(format!(
                "nc-mptcp generation ({gen} bytes) exceeds the receive buffer {}",
                cfg.recv_buffer
            ));
        }
        if let Some(&p) = self.nc_paths.iter().find(|&&p| p >= 64) {
            return Err(format!("nc_paths: path {p} out of range"));
        }
        Ok(())
    }
    fn validate_paths(&self, paths: usize) -> Result<(), String> {
        // An index beyond the connection's paths would silently leave no NC subflow.
        match self.nc_paths.iter().find(|&&p| p >= paths) {
            Some(&p) => Err(format!(
                "nc_paths: path index {p}, but the connection has {paths} path(s) (indices 0..={})",
                paths - 1
            )),
            None => Ok(()),
        }
    }
    fn build(&self, cfg: &ConnectionConfig) -> (Box<dyn SchemeSender>, Box<dyn SchemeReceiver>) {
        let t = self
            .segment_size(cfg.mss)
            .unwrap_or_else(|e| panic!("invalid nc-mptcp configuration: {e}"));
        (
            Box::new(NcSender::new(self.clone(), t)),
            Box::new(NcReceiver::new(self.generation_size, t)),
        )
    }
}

/// Registry entry of `nc-mptcp`.
pub(crate) const ENTRY: Entry<dyn SchemeFactory> = Entry {
    name: "nc-mptcp",
    aliases: &["ncmptcp"],
    summary: "NC-MPTCP: RLNC subflows beside regular ones, Eq. 3 offsets, Theorem 1-2 \
              redundancy, rank feedback (Li, Lukyanenko, Cui)",
    options: &[
        OptionDoc {
            key: "generation_size",
            doc: "segments per generation |G|",
        },
        OptionDoc {
            key: "nc_paths",
            doc: "path indices of the NC subflows; empty: the fastest subflow (Eq. 10)",
        },
        OptionDoc {
            key: "z",
            doc: "loss range = estimate ± z standard deviations",
        },
        OptionDoc {
            key: "offset",
            doc: "Eq. 3 offsets between subflows of different RTT",
        },
        OptionDoc {
            key: "plan",
            doc: "cap the regular share of a generation at Theorem 2's |G'|",
        },
        OptionDoc {
            key: "repair",
            doc: "\"feedback\": repair the rank deficit not covered by packets in flight; \"timer\": Eq. 4 re-evaluated, overdue packets counted lost",
        },
        OptionDoc {
            key: "unblock",
            doc: "an idle NC subflow covers the rank deficit of the generation blocking delivery",
        },
    ],
    make: |o| Ok(Arc::new(registry::from_options::<NcMptcpConfig>(o)?)),
};

// ---------------------------------------------------------------------------- the model

/// Eq. 1: X ≈ MSS/(R·√p), in segments per second (MSS = 1), for R in seconds.
pub fn eq1_rate(rtt: f64, p: f64) -> f64 {
    1.0 / (rtt.max(1e-6) * p.clamp(P_MIN, 1.0).sqrt())
}

/// Eq. 3's offset of path `i` in segments: Σ_{R_j > R_i} X_j·(R_j − R_i)/2, for paths given as
/// (R in seconds, X in segments per second, usable).
pub fn eq3_offset(i: usize, paths: &[(f64, f64, bool)]) -> f64 {
    eq3_offset_of(paths[i].0, paths.iter().copied())
}

/// Eq. 3's offset of a path of RTT `ri` among `paths` (R, X, usable).
fn eq3_offset_of(ri: f64, paths: impl Iterator<Item = (f64, f64, bool)>) -> f64 {
    paths
        .filter(|&(rj, _, ok)| ok && rj > ri)
        .map(|(rj, xj, _)| xj * (rj - ri) / 2.0)
        .sum()
}

/// Theorem 2 (Eq. 9): the smallest |G'| (source segments on regular subflows) for a
/// generation of `g` segments, with r = R_r/R_n and the loss ranges of regular
/// (`pr_min`, `pr_max`) and NC (`pn_max`) subflows.
pub fn theorem2_regular(g: f64, r: f64, pr_min: f64, pr_max: f64, pn_max: f64) -> f64 {
    let pr_min = pr_min.clamp(P_MIN, P_MAX);
    let pr_max = pr_max.clamp(pr_min, P_MAX);
    let pn_max = pn_max.clamp(P_MIN, P_MAX);
    let c = r * (1.0 - pn_max) / (2.0 * (pr_min * pn_max).sqrt());
    let pr = if c >= 1.0 { pr_min } else { pr_max };
    g / ((1.0 - pr_min) + r * (pr.sqrt() / pn_max.sqrt()) * (1.0 - pn_max))
}

/// Eq. 6: |C| = |G'|·R_r√p_r/(R_n√p_n) = |G'|·r·√(p_r/p_n).
pub fn eq6_coded(g_regular: f64, r: f64, pr: f64, pn: f64) -> f64 {
    g_regular * r * (pr.clamp(P_MIN, P_MAX) / pn.clamp(P_MIN, P_MAX)).sqrt()
}

/// Eq. 4 for what is outstanding: expected innovative arrivals `Σ (1 − p_i^max)` cover
/// `need`.
pub fn eq4_holds(arrival_probabilities: impl IntoIterator<Item = f64>, need: u32) -> bool {
    let mut sum = 0.0;
    for q in arrival_probabilities {
        sum += q;
        if sum >= f64::from(need) - 1e-9 {
            return true;
        }
    }
    need == 0
}

/// The largest arrival probability of `arrival` (at least 0), if every one is finite and
/// non-negative: then every term of [`eq4_holds`]'s sums (an arrival probability, or 0 for an
/// overdue packet) lies within [0, this bound], as [`eq4_cannot_hold`] requires. `None`
/// otherwise.
fn arrival_bound(arrival: &[(f64, Instant)]) -> Option<f64> {
    let mut max = 0.0f64;
    for &(q, _) in arrival {
        if !(q.is_finite() && q >= 0.0) {
            return None;
        }
        max = max.max(q);
    }
    Some(max)
}

/// Whether [`eq4_holds`] is certainly false for `n` terms each within [0, `q_max`] (finite),
/// without summing them: for `need` ≥ 1, n·q_max below `need` by more than the rounding of a
/// sum of n terms.
///
/// Exact, not an approximation: `eq4_holds` adds the terms in order and stops at the first
/// partial sum ≥ `need` − 10⁻⁹. Rounding is monotone, so with non-negative terms the partial
/// sums never decrease and each is at most the last, and by induction the last is at most
/// n·q_max·(1 + u)^(n−1), u = 2⁻⁵³, which is below n·q_max·(1 + 1.2·10⁻¹⁶·n) for
/// n ≤ 2²⁰. The bound below uses a factor 1 + (n + 4)·10⁻¹⁵, which covers that and the
/// rounding of its own three operations; if even it is below the threshold, so is every
/// partial sum, and `eq4_holds` returns false.
fn eq4_cannot_hold(n: usize, q_max: f64, need: u32) -> bool {
    if need == 0 || n > 1 << 20 {
        return false;
    }
    let n = n as f64;
    n * q_max * (1.0 + (n + 4.0) * 1e-15) < f64::from(need) - 1e-9
}

/// What the scheduler knows of one path.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PathModel {
    /// Carries new data.
    pub active: bool,
    /// R in seconds.
    pub rtt: f64,
    /// p̂ within (10⁻⁴, 0.5).
    pub loss: f64,
    /// Upper end of the loss range.
    pub loss_max: f64,
    /// Lower end of the loss range.
    pub loss_min: f64,
    /// X in segments per second (Eq. 1, capped by cwnd/R).
    pub rate: f64,
}

impl PathModel {
    /// The estimates of the module docs from a path view; `z` is the range width.
    pub fn from_view(v: &PathView, z: f64) -> Self {
        let rtt = v.rtt_or_rto().as_secs_f64().max(1e-6);
        let p = v.loss_rate.clamp(P_MIN, P_MAX);
        let sigma = (p * (1.0 - p) / LOSS_WINDOW).sqrt();
        let cwnd = (v.cwnd as f64 / v.mss.max(1) as f64).max(1.0);
        PathModel {
            active: v.active,
            rtt,
            loss: p,
            loss_max: (p + z * sigma).clamp(P_MIN, P_MAX),
            loss_min: (p - z * sigma).clamp(P_MIN, P_MAX),
            rate: eq1_rate(rtt, p).min(cwnd / rtt),
        }
    }
}

/// The paper's NC subflow rule (§IV-C): the active path with the largest rate X such that
/// Eq. 10 holds for every other active path, keeping `current` unless another is
/// 1.25 times faster (`HYSTERESIS`). `None` with fewer than two active paths.
pub fn choose_nc(paths: &[PathModel], current: Option<usize>) -> Option<usize> {
    let active = || (0..paths.len()).filter(|&i| paths[i].active);
    // Fewer than two active paths: no NC subflow.
    active().nth(1)?;
    let eq10 = |n: usize| active().all(|r| r == n || paths[r].rtt / paths[n].rtt >= EQ10_MIN_RATIO);
    let mut best: Option<usize> = None;
    for i in active() {
        if !eq10(i) {
            continue;
        }
        if best.is_none_or(|b| paths[i].rate > paths[b].rate) {
            best = Some(i);
        }
    }
    match (current, best) {
        (Some(c), Some(b)) if c < paths.len() && paths[c].active && eq10(c) => {
            if paths[b].rate > HYSTERESIS * paths[c].rate {
                Some(b)
            } else {
                Some(c)
            }
        }
        (_, b) => b,
    }
}

// ---------------------------------------------------------------------------- sender

/// Counters of `nc-mptcp` (sender and receiver halves fill different ones).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NcStats {
    /// Generations opened (sender).
    pub generations: u64,
    /// Of those, short generations opened because the sender was idle with less than a
    /// generation written (module docs, "Short generations"; the stream's end excluded).
    pub short_generations: u64,
    /// Generations decoded (receiver), or reported decoded by FEEDBACK before the cumulative
    /// acknowledgement passed them (sender).
    pub generations_decoded: u64,
    /// Source segments of the generations opened.
    pub source_segments: u64,
    /// Source segments sent for the first time on regular subflows.
    pub regular_sent: u64,
    /// Source segments sent again (lost ones, on any regular subflow).
    pub regular_resent: u64,
    /// Coded segments sent on NC subflows.
    pub coded_sent: u64,
    /// Coded segments sent to repair a generation (its rank deficit exceeds the packets in
    /// flight; with `repair = "timer"` also after estimate changes or overdue packets).
    pub coded_repairs: u64,
    /// Coded segments an idle NC subflow sent for the generation blocking delivery (`unblock`).
    pub coded_unblock: u64,
    /// Times the NC subflow changed (automatic choice).
    pub nc_switches: u64,
    /// Symbols received (receiver).
    pub symbols_received: u64,
    /// Symbols that did not raise the rank (receiver).
    pub non_innovative: u64,
    /// Symbols of generations already decoded or delivered (receiver).
    pub late_symbols: u64,
}

/// Why a packet is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Why {
    /// First allocation of a generation (Eq. 3, Eq. 4).
    New,
    /// A repair (module docs, "Repairs").
    Repair,
    /// An idle NC subflow covering the blocking generation (module docs, "Unblocking").
    Unblock,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Src {
    Unsent,
    Sent,
    Lost,
    Acked,
}

#[derive(Debug, Clone, Copy)]
struct Outstanding {
    path: usize,
    pn: u64,
    sent: Instant,
}

#[derive(Debug)]
struct TxGen {
    /// First stream byte; also the generation's id on the wire.
    start: u64,
    len: u64,
    k: u32,
    enc: RlncEncoder,
    src: Vec<Src>,
    next_src: u32,
    next_seed: u32,
    /// First transmissions (regular + coded) before the generation was first satisfied.
    allocated: u32,
    regular_first: u32,
    out: Vec<Outstanding>,
    acked: u32,
    rank: u32,
    decoded: bool,
    /// Eq. 4 held once: a later shortfall is a repair.
    satisfied_once: bool,
    /// Extra packets owed after a head stall.
    boost: u32,
}

impl TxGen {
    fn need(&self) -> u32 {
        if self.decoded {
            return 0;
        }
        let got = self.rank.max(self.acked);
        let base = if got < self.k { self.k - got } else { 1 };
        base + self.boost
    }

    /// Whether Eq. 4 fails for what is outstanding; `paths[i]` = (arrival probability
    /// 1 − p_i^max, packets sent before this time are overdue). With `feedback`, a generation
    /// already satisfied once needs packets only while its rank deficit exceeds the packets in
    /// flight (module docs, "Repairs").
    /// `q_max` is [`arrival_bound`] of `paths`.
    fn needs_packets(&self, paths: &[(f64, Instant)], feedback: bool, q_max: Option<f64>) -> bool {
        let need = self.need();
        if need == 0 {
            return false;
        }
        if self.out.len() < need as usize {
            // Every arrival probability is at most 1: Eq. 4 cannot hold.
            return true;
        }
        if feedback && self.satisfied_once {
            // Every packet in flight counts until it is acknowledged or declared lost.
            return false;
        }
        if q_max.is_some_and(|m| eq4_cannot_hold(self.out.len(), m, need)) {
            // The usual case while a generation is being allocated (as many packets out as
            // it needs, each arriving with probability below 1), decided without the sum.
            return true;
        }
        let q = self.out.iter().map(|o| match paths.get(o.path) {
            Some(&(q, due)) if o.sent >= due => q,
            _ => 0.0,
        });
        !eq4_holds(q, need)
    }
}

/// A packet's [`PacketTag::b`]: its symbol number `n` in the low 32 bits, the low 32 bits of
/// its generation's sequence number above, so that an acknowledgement finds the generation
/// without dividing its id by the generation size ([`NcSender::position`]). `a` is the
/// generation's id, which settles which generation it is.
fn tag_b(n: u32, seq: u64) -> u64 {
    u64::from(n) | (seq & 0xffff_ffff) << 32
}

/// A packet on a path of RTT `rtt` seconds should have been acknowledged this long after it
/// was sent: 5/4·R + 25 ms.
fn overdue_wait(rtt: f64) -> Duration {
    Duration::from_secs_f64(rtt * 1.25 + 0.025)
}

/// Packets sent before the returned time should have been acknowledged by `now`, for the
/// path's [`overdue_wait`] `wait`.
fn overdue_before_wait(wait: Duration, now: Instant) -> Instant {
    Instant::from_nanos(now.as_nanos().saturating_sub(wait.as_nanos()))
}

/// The fields of a [`PathView`] that [`PathModel::from_view`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ModelKey {
    rtt: Duration,
    loss_bits: u64,
    cwnd: u64,
    mss: u64,
    active: bool,
}

impl ModelKey {
    fn of(v: &PathView) -> Self {
        ModelKey {
            rtt: v.rtt_or_rto(),
            loss_bits: v.loss_rate.to_bits(),
            cwnd: v.cwnd,
            mss: v.mss,
            active: v.active,
        }
    }
}

/// Sending half of `nc-mptcp`.
#[derive(Debug)]
pub struct NcSender {
    cfg: NcMptcpConfig,
    seg: usize,
    gens: VecDeque<TxGen>,
    /// Stream offset where the next generation starts.
    next_start: u64,
    /// [`SendCtx::abandoned_count`] when the open generations were last checked against the
    /// abandoned ranges.
    abandoned_seen: u64,
    nc: Option<usize>,
    /// Encoders of finished generations, reused (at most [`SPARE_ENCODERS`]).
    spare: Vec<RlncEncoder>,
    /// Per-packet work buffers, kept to avoid allocating on every packet: the path models,
    /// their (arrival probability, overdue time) and the positions of the open generations
    /// that need packets, in increasing order.
    models: Vec<PathModel>,
    arrival: Vec<(f64, Instant)>,
    needs: Vec<usize>,
    /// Per path, the view fields `models[i]` was computed from and the overdue wait of its
    /// RTT (`overdue_before`): a model is recomputed only when they change (between two ACKs
    /// of a path, polls see the same view; same inputs, same floating-point results).
    model_keys: Vec<Option<ModelKey>>,
    waits: Vec<Duration>,
    /// `choose_nc`'s last (current, result), valid while no path model has changed (it is a
    /// function of the models and `current` only).
    nc_memo: Option<(Option<usize>, Option<usize>)>,
    /// Sequence number (generations opened before it) of `gens[0]`.
    seq_base: u64,
    /// Generations from this sequence number on are *untouched*: nothing sent, acknowledged,
    /// reported or owed for them yet, so each needs packets (its `need` is k, nothing is
    /// outstanding) and Eq. 4 has never held for it.
    untouched_from: u64,
    /// With `repair = "feedback"`: the sequence numbers, ascending, of every touched open
    /// generation that may need packets — all not yet satisfied by Eq. 4 (their sums change
    /// with time), and the satisfied ones whose rank deficit may exceed their packets in
    /// flight (that changes only with events: packets acknowledged or lost, a head stall).
    /// The others need no packets, so [`NcSender::needs`] looks at these and the untouched
    /// ones only.
    watch: Vec<u64>,
    stats: NcStats,
}

impl NcSender {
    fn new(cfg: NcMptcpConfig, seg: usize) -> Self {
        NcSender {
            cfg,
            seg,
            gens: VecDeque::new(),
            next_start: 0,
            abandoned_seen: 0,
            nc: None,
            spare: Vec::new(),
            models: Vec::new(),
            arrival: Vec::new(),
            needs: Vec::new(),
            model_keys: Vec::new(),
            waits: Vec::new(),
            nc_memo: None,
            seq_base: 0,
            untouched_from: 0,
            watch: Vec::new(),
            stats: NcStats::default(),
        }
    }

    /// Records that the generation at position `gi` is no longer untouched (before anything
    /// about it changes): it and the untouched ones before it go on the watch list.
    fn mark_touched(&mut self, gi: usize) {
        let seq = self.seq_base + gi as u64;
        if seq >= self.untouched_from {
            // Above every watched sequence number: the list stays sorted.
            self.watch.extend(self.untouched_from..=seq);
            self.untouched_from = seq + 1;
        }
    }

    /// Puts the generation at position `gi` on the watch list if, satisfied by Eq. 4 once,
    /// its rank deficit now exceeds its packets in flight (after an event that can make it
    /// so; see `watch`).
    fn touch(&mut self, gi: usize) {
        let Some(g) = self.gens.get(gi) else {
            return;
        };
        if g.satisfied_once && g.out.len() < g.need() as usize {
            let seq = self.seq_base + gi as u64;
            if let Err(at) = self.watch.binary_search(&seq) {
                self.watch.insert(at, seq);
            }
        }
    }

    fn gen_bytes(&self) -> u64 {
        (self.seg * self.cfg.generation_size) as u64
    }

    /// Position of the open generation whose id (first stream byte) is `id`. Generations
    /// are consecutive and nearly always full, so the position is first guessed from the
    /// offset and checked; the search is the fallback (short generations).
    fn position(&self, id: u64) -> Option<usize> {
        let first = self.gens.front()?.start;
        let guess = (id.checked_sub(first)? / self.gen_bytes().max(1)) as usize;
        if self.gens.get(guess).is_some_and(|g| g.start == id) {
            return Some(guess);
        }
        self.gens.binary_search_by_key(&id, |g| g.start).ok()
    }

    /// Open generations every byte of which belongs to abandoned messages are finished: the
    /// receiver skips their bytes, so their packets would be sent for nothing (and, sent
    /// ahead of fresh data, would keep a sender that fell behind late for every later
    /// message). Checked once per abandonment, not per packet: a generation opened since
    /// begins after the abandoned bytes ([`SendCtx::skip_abandoned`] in `refresh`).
    fn give_up_abandoned(&mut self, ctx: &SendCtx<'_>) {
        let count = ctx.abandoned_count();
        if count == self.abandoned_seen {
            return;
        }
        self.abandoned_seen = count;
        for gi in 0..self.gens.len() {
            let g = &self.gens[gi];
            if !g.decoded && ctx.is_abandoned_range(g.start, g.start + g.len) {
                self.mark_touched(gi);
                self.gens[gi].decoded = true;
            }
        }
    }

    fn drop_finished(&mut self, ack: u64) {
        while self
            .gens
            .front()
            .is_some_and(|g| g.start + g.len <= ack || g.decoded)
        {
            if let Some(g) = self.gens.pop_front() {
                if self.spare.len() < SPARE_ENCODERS {
                    self.spare.push(g.enc);
                }
                self.seq_base += 1;
                let base = self.seq_base;
                if self.watch.first().is_some_and(|&s| s < base) {
                    self.watch.remove(0);
                }
                self.untouched_from = self.untouched_from.max(base);
            }
        }
    }

    /// Opens the generations that lie wholly below the flow-control limit and the written data.
    /// With `short` (the sender is idle: no open generation needs packets), the written bytes
    /// that do not make a full generation yet are opened as a short generation, provided a full
    /// one would fit the flow-control window (module docs, "Short generations"). Returns
    /// whether a generation was opened.
    fn refresh(&mut self, ctx: &mut SendCtx<'_>, short: bool) -> bool {
        self.give_up_abandoned(ctx);
        self.drop_finished(ctx.data_ack);
        let b = self.gen_bytes();
        let mut opened = false;
        loop {
            if self.gens.len() >= MAX_OPEN_GENERATIONS {
                return opened;
            }
            if self.next_start < ctx.data_ack {
                // The receiver already holds it (or skipped it: an abandoned message).
                self.next_start = ctx.data_ack;
            }
            // Bytes of abandoned messages (late video frames) are not sent: the next
            // generation begins after them, as ARQ goes on with the next unsent byte.
            self.next_start = ctx.skip_abandoned(self.next_start);
            let start = self.next_start;
            let Some(mut end) = start.checked_add(b) else {
                return opened;
            };
            if let Some(f) = ctx.final_size {
                if start >= f {
                    return opened;
                }
                end = end.min(f);
            }
            if end > ctx.max_data {
                return opened;
            }
            // A generation ends where an abandonable message (a video frame) begins or ends,
            // so that abandoning it never leaves a generation partly owed (the receiver
            // refuses a generation that begins below its in-order point).
            end = ctx.abandonable_cut(start, end);
            let written = ctx.send_buf.end();
            if end > written {
                // A short generation only if the application could have written the rest
                // and did not: a full send buffer means more bytes come as soon as it drains.
                let room = ctx.send_buf.free() as u64 >= end - written;
                if !short || written <= start || !room {
                    return opened;
                }
                end = written;
            }
            let len = end - start;
            let k = (len as usize).div_ceil(self.seg);
            let Ok(c) = RlncConfig::new(k, self.seg) else {
                return opened;
            };
            // The generation is copied from the send buffer straight into an encoder (a
            // finished generation's, when one is spare); the tail of a short one stays zero.
            let mut copied = false;
            let fill = |d: &mut [u8]| {
                copied = ctx.send_buf.copy_out(start, &mut d[..len as usize]);
            };
            let enc = match self.spare.pop() {
                Some(mut e) => {
                    // Not zeroed first: the copy overwrites the `len` bytes.
                    e.reset_prefix_with(c, len as usize, fill);
                    e
                }
                None => RlncEncoder::from_fn(c, fill),
            };
            if !copied {
                self.spare.push(enc);
                return opened;
            }
            self.stats.generations += 1;
            self.stats.source_segments += k as u64;
            if len < b && ctx.final_size.is_none_or(|f| end < f) {
                self.stats.short_generations += 1;
            }
            // Untouched: its sequence number is at least `untouched_from`.
            self.gens.push_back(TxGen {
                start,
                len,
                k: k as u32,
                enc,
                src: vec![Src::Unsent; k],
                next_src: 0,
                next_seed: k as u32,
                allocated: 0,
                regular_first: 0,
                out: Vec::new(),
                acked: 0,
                rank: 0,
                decoded: false,
                satisfied_once: false,
                boost: 0,
            });
            self.next_start = end;
            opened = true;
        }
    }

    /// Which open generations need packets (Eq. 4 fails for what is outstanding; their
    /// positions, in increasing order), marking those that Eq. 4 satisfies (their later
    /// shortfalls are repairs), and S_f's generation: the first one still being allocated.
    ///
    /// The positions come as `needs` (ascending) and, with `repair = "feedback"`, every
    /// position from the returned `tail` on (the untouched generations; `tail` is the number
    /// of open generations with `repair = "timer"`), all above those in `needs`.
    fn needs(
        &mut self,
        arrival: &[(f64, Instant)],
        needs: &mut Vec<usize>,
    ) -> (Option<usize>, usize) {
        let mut first_open = None;
        let feedback = self.cfg.repair == Repair::Feedback;
        let q_max = arrival_bound(arrival);
        needs.clear();
        let mut visit = |gi: usize, g: &mut TxGen| {
            let n = g.needs_packets(arrival, feedback, q_max);
            if !n && !g.decoded && !g.out.is_empty() {
                g.satisfied_once = true;
            }
            if n {
                if !g.satisfied_once && first_open.is_none() {
                    first_open = Some(gi);
                }
                needs.push(gi);
            }
            n
        };
        if feedback {
            // Only the watched generations can need packets; a satisfied one that does not
            // leaves the list until an event puts it back (`touch`).
            let (base, gens) = (self.seq_base, &mut self.gens);
            self.watch.retain(|&seq| {
                let gi = (seq - base) as usize;
                let g = &mut gens[gi];
                visit(gi, g) || !g.satisfied_once
            });
            // Untouched generations need packets and were never satisfied (what `visit`
            // finds for them).
            let tail = ((self.untouched_from - base) as usize).min(self.gens.len());
            if tail < self.gens.len() && first_open.is_none() {
                first_open = Some(tail);
            }
            (first_open, tail)
        } else {
            for (gi, g) in self.gens.iter_mut().enumerate() {
                visit(gi, g);
            }
            (first_open, self.gens.len())
        }
    }

    /// Whether `path` is an NC subflow now.
    fn is_nc(&self, path: usize) -> bool {
        if self.cfg.nc_paths.is_empty() {
            self.nc == Some(path)
        } else {
            self.cfg.nc_paths.contains(&path)
        }
    }

    /// Theorem 2's cap on a generation's first-time regular segments (with `plan`).
    fn regular_cap(&self, models: &[PathModel], k: u32) -> u32 {
        if !self.cfg.plan {
            return k;
        }
        let (mut regular, mut nc) = (Vec::new(), Vec::new());
        for (i, m) in models.iter().enumerate() {
            if m.active {
                if self.is_nc(i) {
                    nc.push(*m)
                } else {
                    regular.push(*m)
                }
            }
        }
        if regular.is_empty() || nc.is_empty() {
            return k;
        }
        let avg = |v: &[PathModel], f: fn(&PathModel) -> f64| {
            v.iter().map(f).sum::<f64>() / v.len() as f64
        };
        let r = avg(&regular, |m| m.rtt) / avg(&nc, |m| m.rtt);
        let g = theorem2_regular(
            f64::from(k),
            r,
            avg(&regular, |m| m.loss_min),
            avg(&regular, |m| m.loss_max),
            avg(&nc, |m| m.loss_max),
        );
        (g.ceil().max(1.0) as u32).min(k)
    }

    /// What `path` could send for generation `gi`: Some(n) = symbol number.
    fn candidate(&self, gi: usize, nc: bool, cap: u32, repair: bool) -> Option<u32> {
        let g = &self.gens[gi];
        if nc {
            return (g.next_seed < u32::MAX).then_some(g.next_seed);
        }
        if let Some(i) = g.src.iter().position(|&s| s == Src::Lost) {
            return Some(i as u32);
        }
        if g.next_src < g.k && (repair || g.regular_first < cap) {
            return Some(g.next_src);
        }
        None
    }

    fn emit(
        &mut self,
        ctx: &mut SendCtx<'_>,
        gi: usize,
        n: u32,
        path: usize,
        why: Why,
        pkt: &mut PacketWriter<'_>,
    ) -> Option<PacketTag> {
        let full = self.gen_bytes();
        self.mark_touched(gi);
        let g = &mut self.gens[gi];
        let coding = if n < g.k {
            rlnc::Coding::Source(n)
        } else {
            rlnc::Coding::Seeded(n)
        };
        let wire_coding = if g.len == full {
            Coding::Plain
        } else {
            Coding::Seed(g.len)
        };
        // The symbol is encoded straight into the packet (the bytes a `Frame::Symbol` of it
        // would write; no scratch copy).
        let enc = &mut g.enc;
        let pushed = pkt.push_symbol_with(g.start, n, wire_coding, self.seg, |out| {
            enc.encode(coding, out).is_ok()
        });
        if !pushed.ok()? {
            return None;
        }
        if g.allocated == 0 && g.out.is_empty() && g.acked == 0 {
            ctx.mark_sent(g.start, g.start + g.len);
        }
        let st = &mut self.stats;
        if n < g.k {
            let i = n as usize;
            if g.src[i] == Src::Unsent {
                g.next_src += 1;
                g.regular_first += 1;
                st.regular_sent += 1;
                if !g.satisfied_once {
                    g.allocated += 1;
                }
            } else {
                st.regular_resent += 1;
                ctx.count_retransmission(path, self.seg as u64);
            }
            g.src[i] = Src::Sent;
        } else {
            g.next_seed += 1;
            st.coded_sent += 1;
            if why == Why::Unblock {
                st.coded_unblock += 1;
            } else if why == Why::Repair || g.satisfied_once {
                st.coded_repairs += 1;
            } else {
                g.allocated += 1;
            }
        }
        g.boost = g.boost.saturating_sub(1);
        g.out.push(Outstanding {
            path,
            pn: pkt.header().pn,
            sent: ctx.now,
        });
        Some(PacketTag {
            a: g.start,
            b: tag_b(n, self.seq_base + gi as u64),
        })
    }

    /// [`SchemeSender::poll_packet`] with the path models and arrival probabilities of this
    /// instant; `needs` is a work buffer.
    fn poll_with(
        &mut self,
        ctx: &mut SendCtx<'_>,
        path: usize,
        pkt: &mut PacketWriter<'_>,
        models: &[PathModel],
        arrival: &[(f64, Instant)],
        needs: &mut Vec<usize>,
    ) -> Option<PacketTag> {
        if self.cfg.nc_paths.is_empty() {
            let nc = match self.nc_memo {
                Some((current, result)) if current == self.nc => result,
                _ => {
                    let result = choose_nc(models, self.nc);
                    self.nc_memo = Some((self.nc, result));
                    result
                }
            };
            if nc != self.nc && self.nc.is_some() && nc.is_some() {
                self.stats.nc_switches += 1;
            }
            self.nc = nc;
        }
        let nc = self.is_nc(path);
        let k = self.cfg.generation_size as u32;
        let cap = self.regular_cap(models, k);
        let (mut first_open, mut tail) = self.needs(arrival, needs);
        if needs.is_empty() && tail == self.gens.len() && self.refresh(ctx, true) {
            // Idle: written bytes short of a generation go out now (module docs, "Short
            // generations").
            (first_open, tail) = self.needs(arrival, needs);
        }
        if self.gens.is_empty() {
            return None;
        }
        // (1) Repairs, oldest first.
        // A generation of a message this path cannot deliver by its deadline at the peer is
        // left to faster paths (`SendCtx::in_time`), in both passes.
        for &gi in needs.iter() {
            if !self.gens[gi].satisfied_once || !ctx.in_time(self.gens[gi].start) {
                continue;
            }
            let c = self.gens[gi].k;
            if let Some(n) = self.candidate(gi, nc, c, true) {
                return self.emit(ctx, gi, n, path, Why::Repair, pkt);
            }
        }
        // (2) From Eq. 3's target on; (3) before it.
        let first = first_open.unwrap_or(self.gens.len());
        let target = if self.cfg.offset && first < self.gens.len() {
            let view = models.iter().map(|m| (m.rtt, m.rate, m.active));
            let s_f = f64::from(self.gens[first].allocated.min(self.gens[first].k));
            let lead = eq3_offset_of(models[path].rtt, view);
            first + ((s_f + lead) / f64::from(k.max(1))).floor() as usize
        } else {
            first
        };
        let target = target.min(self.gens.len());
        // The generations that need packets from the target on, then those before it.
        let split = needs.partition_point(|&gi| gi < target);
        let len = self.gens.len();
        let order = needs[split..]
            .iter()
            .copied()
            .chain(tail.max(target)..len)
            .chain(needs[..split].iter().copied())
            .chain(tail..target.max(tail));
        for gi in order {
            if !ctx.in_time(self.gens[gi].start) {
                continue;
            }
            let c = self.gens[gi].k.min(cap);
            if let Some(n) = self.candidate(gi, nc, c, false) {
                return self.emit(ctx, gi, n, path, Why::New, pkt);
            }
        }
        // (4) Nothing else to send on an NC subflow: cover the rank deficit of the generation
        // that blocks delivery with combinations on this subflow (module docs, "Unblocking").
        if self.cfg.unblock && nc {
            let g = self.gens.front()?;
            let on_nc = g.out.iter().filter(|o| self.is_nc(o.path)).count();
            if g.satisfied_once && on_nc < g.need() as usize && ctx.in_time(g.start) {
                let n = self.candidate(0, true, g.k, true)?;
                return self.emit(ctx, 0, n, path, Why::Unblock, pkt);
            }
        }
        None
    }

    /// Removes the outstanding record of a packet; returns its generation's position.
    fn settle(&mut self, info: &SentInfo) -> Option<usize> {
        // The tag names the generation's sequence number (low 32 bits): its position unless
        // it has been dropped; checked against the id, else looked up as before.
        let hint = ((info.tag.b >> 32) as u32).wrapping_sub(self.seq_base as u32) as usize;
        let gi = match self.gens.get(hint) {
            Some(g) if g.start == info.tag.a => hint,
            _ => self.position(info.tag.a)?,
        };
        let g = self.gens.get_mut(gi)?;
        let pos = g
            .out
            .iter()
            .position(|o| o.path == info.path && o.pn == info.pn)?;
        g.out.swap_remove(pos);
        Some(gi)
    }
}

impl SchemeSender for NcSender {
    fn name(&self) -> &'static str {
        "nc-mptcp"
    }

    /// A whole generation: a bulk writer keeps one written ahead, so generations are full.
    fn write_ahead(&self) -> u64 {
        self.gen_bytes()
    }

    fn poll_packet(
        &mut self,
        ctx: &mut SendCtx<'_>,
        path: usize,
        pkt: &mut PacketWriter<'_>,
    ) -> Option<PacketTag> {
        self.refresh(ctx, false);
        if path >= ctx.paths.len() {
            return None;
        }
        let mut models = std::mem::take(&mut self.models);
        let mut arrival = std::mem::take(&mut self.arrival);
        let mut needs = std::mem::take(&mut self.needs);
        let n = ctx.paths.len();
        if self.model_keys.len() != n {
            self.model_keys.clear();
            self.model_keys.resize(n, None);
            self.waits.resize(n, Duration::ZERO);
            models.clear();
            self.nc_memo = None;
        }
        for (i, v) in ctx.paths.iter().enumerate() {
            let key = ModelKey::of(v);
            if self.model_keys[i] == Some(key) {
                continue;
            }
            let m = PathModel::from_view(v, self.cfg.z);
            if i < models.len() {
                models[i] = m;
            } else {
                models.push(m);
            }
            self.model_keys[i] = Some(key);
            self.waits[i] = overdue_wait(m.rtt);
            self.nc_memo = None;
        }
        arrival.clear();
        arrival.extend(
            models
                .iter()
                .zip(&self.waits)
                .map(|(m, &w)| (1.0 - m.loss_max, overdue_before_wait(w, ctx.now))),
        );
        let tag = self.poll_with(ctx, path, pkt, &models, &arrival, &mut needs);
        self.models = models;
        self.arrival = arrival;
        self.needs = needs;
        tag
    }

    fn on_acked(&mut self, _ctx: &mut SendCtx<'_>, info: &SentInfo) {
        let Some(gi) = self.settle(info) else {
            return;
        };
        let g = &mut self.gens[gi];
        let n = u64::from(info.tag.b as u32);
        if n < u64::from(g.k) {
            let s = &mut g.src[n as usize];
            if *s != Src::Acked {
                *s = Src::Acked;
                g.acked += 1;
            }
        } else {
            g.acked += 1;
        }
        self.touch(gi);
    }

    fn on_lost(&mut self, _ctx: &mut SendCtx<'_>, info: &SentInfo, _kind: LossKind) {
        let Some(gi) = self.settle(info) else {
            return;
        };
        let g = &mut self.gens[gi];
        let n = u64::from(info.tag.b as u32);
        if n < u64::from(g.k) {
            let s = &mut g.src[n as usize];
            if *s == Src::Sent {
                *s = Src::Lost;
            }
        }
        self.touch(gi);
    }

    fn on_data_ack(&mut self, ctx: &mut SendCtx<'_>) {
        self.give_up_abandoned(ctx);
        self.drop_finished(ctx.data_ack);
    }

    fn on_head_stalled(&mut self, ctx: &mut SendCtx<'_>) {
        let ack = ctx.data_ack;
        if let Some(gi) = self
            .gens
            .iter()
            .position(|g| g.start + g.len > ack && !g.decoded)
        {
            self.mark_touched(gi);
            let g = &mut self.gens[gi];
            g.boost = g.boost.saturating_add(1).min(g.k);
            g.satisfied_once = true;
            self.touch(gi);
        }
    }

    fn on_feedback(&mut self, ctx: &mut SendCtx<'_>, frame: &Frame<'_>) -> Result<(), SchemeError> {
        let Frame::Feedback(FeedbackFrame {
            block,
            count,
            decoded,
        }) = *frame
        else {
            return Err(SchemeError::Unexpected);
        };
        if block >= self.next_start {
            return Err(SchemeError::Unknown("feedback for a generation never sent"));
        }
        let pos = self.position(block);
        if pos.is_none() && self.gens.front().is_some_and(|g| block >= g.start) {
            // Not stale (it is not below the open generations) and no generation starts there.
            return Err(SchemeError::Invalid("feedback for no generation boundary"));
        }
        let k_full = self.cfg.generation_size as u64;
        if count > k_full {
            return Err(SchemeError::Invalid("rank above the generation size"));
        }
        if let Some(gi) = pos.filter(|&i| i < self.gens.len()) {
            self.mark_touched(gi);
            let g = &mut self.gens[gi];
            if count > u64::from(g.k) {
                return Err(SchemeError::Invalid("rank above the generation size"));
            }
            let sent = u64::from(g.next_src) + u64::from(g.next_seed - g.k);
            if count > sent {
                return Err(SchemeError::Invalid("rank above the packets sent"));
            }
            g.rank = g.rank.max(count as u32);
            if decoded && !g.decoded {
                g.decoded = true;
                self.stats.generations_decoded += 1;
            }
        }
        self.drop_finished(ctx.data_ack);
        Ok(())
    }

    fn counters(&self) -> serde_json::Value {
        serde_json::to_value(&self.stats).unwrap_or_default()
    }
}

// ---------------------------------------------------------------------------- receiver

#[derive(Debug)]
struct RxGen {
    len: u64,
    dec: RlncDecoder,
}

/// Receiving half of `nc-mptcp`.
#[derive(Debug)]
pub struct NcReceiver {
    g: usize,
    seg: usize,
    /// Generations being decoded, by id (first stream byte).
    gens: BTreeMap<u64, RxGen>,
    /// Decoded generations not yet below the in-order point: id → length.
    done: BTreeMap<u64, u64>,
    /// Decoded generations whose status has not yet gone out [`FRESH_REPORTS`] times.
    fresh: BTreeMap<u64, u8>,
    /// Decoders of finished generations, reset and reused for new ones (at most
    /// [`SPARE_DECODERS`]), so a generation does not allocate and zero its buffers.
    spare: Vec<RlncDecoder>,
    stats: NcStats,
}

/// Finished encoders kept for reuse by the sender.
const SPARE_ENCODERS: usize = 4;

/// Finished decoders kept for reuse by the receiver.
const SPARE_DECODERS: usize = 4;

impl NcReceiver {
    fn new(g: usize, seg: usize) -> Self {
        NcReceiver {
            g,
            seg,
            gens: BTreeMap::new(),
            done: BTreeMap::new(),
            fresh: BTreeMap::new(),
            spare: Vec::new(),
            stats: NcStats::default(),
        }
    }

    /// Keeps a finished generation's decoder for reuse.
    fn recycle(&mut self, dec: RlncDecoder) {
        if self.spare.len() < SPARE_DECODERS {
            self.spare.push(dec);
        }
    }

    fn on_symbol(
        &mut self,
        ctx: &mut RecvCtx<'_>,
        from: FrameSource,
        s: &SymbolFrame<'_>,
    ) -> Result<(), SchemeError> {
        let t = self.seg;
        let full = (t * self.g) as u64;
        if s.data.len() != t {
            return Err(SchemeError::Invalid("segment of the wrong size"));
        }
        let start = s.block;
        let len = match s.coding {
            Coding::Plain | Coding::Coefficients(_) => full,
            Coding::Seed(len) if len > 0 && len < full => len,
            Coding::Seed(_) => return Err(SchemeError::Invalid("bad generation length")),
        };
        let Some(end) = start.checked_add(len) else {
            return Err(SchemeError::Unknown("generation beyond the stream"));
        };
        let k = (len as usize).div_ceil(t);
        if let Coding::Coefficients(c) = s.coding {
            if c.len() != k {
                return Err(SchemeError::Invalid(
                    "coefficient count is not the generation size",
                ));
            }
        }
        let contiguous = ctx.recv_buf.contiguous_end();
        if end <= contiguous || self.done.get(&start) == Some(&len) {
            self.stats.late_symbols += 1;
            return Ok(());
        }
        if ctx.recv_buf.final_size().is_some_and(|f| end > f) {
            return Err(SchemeError::Unknown("generation past the stream end"));
        }
        if end > ctx.recv_buf.max_data() {
            return Err(SchemeError::Unknown("generation beyond the receive window"));
        }
        if !self.gens.contains_key(&start) {
            // A new generation starts where no delivered byte is and overlaps none known
            // (the sender cuts the stream into consecutive generations).
            if start < contiguous {
                return Err(SchemeError::Invalid("generation straddles delivered data"));
            }
            if self.overlaps(start, end) {
                return Err(SchemeError::Invalid("generation overlaps another one"));
            }
            if self.gens.len() + self.done.len() >= MAX_OPEN_GENERATIONS {
                return Err(SchemeError::Invalid("too many open generations"));
            }
        }
        let rg = match self.gens.entry(s.block) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => {
                let Ok(c) = RlncConfig::new(k, t) else {
                    return Err(SchemeError::Invalid("bad generation"));
                };
                let dec = match self.spare.pop() {
                    Some(mut d) => {
                        d.reset(c);
                        d
                    }
                    None => RlncDecoder::new(c),
                };
                e.insert(RxGen { len, dec })
            }
        };
        if rg.len != len {
            return Err(SchemeError::Invalid("generation length changed"));
        }
        let coding = match s.coding {
            Coding::Coefficients(c) => rlnc::Coding::Explicit(c),
            _ if (s.id as usize) < k => rlnc::Coding::Source(s.id),
            _ => rlnc::Coding::Seeded(s.id),
        };
        let progress = rg
            .dec
            .push(coding, s.data)
            .map_err(|_| SchemeError::Invalid("segment refused by the decoder"))?;
        self.stats.symbols_received += 1;
        if !progress.innovative {
            self.stats.non_innovative += 1;
        }
        // Every source segment that became known goes to the receive buffer at once.
        while let Some(i) = rg.dec.pop_decoded() {
            let off = (i * t) as u64;
            if off >= len {
                continue;
            }
            let n = ((len - off) as usize).min(t);
            if let Some(seg) = rg.dec.source_symbol(i) {
                ctx.recv_buf.insert(start + off, &seg[..n]);
            }
        }
        if progress.complete {
            if let Some(rg) = self.gens.remove(&start) {
                self.recycle(rg.dec);
            }
            self.done.insert(start, len);
            self.fresh.insert(start, FRESH_REPORTS);
            self.stats.generations_decoded += 1;
            // The decoding-matrix status travels now, on the path that completed it.
            ctx.request_ack(from.path);
        }
        // Forget the generations wholly below the in-order point (they do not overlap, so
        // their ends grow with their starts).
        let contiguous = ctx.recv_buf.contiguous_end();
        while let Some(e) = self.done.first_entry() {
            if e.key() + e.get() > contiguous {
                break;
            }
            self.fresh.remove(e.key());
            e.remove();
        }
        while let Some(e) = self.gens.first_entry() {
            if e.key() + e.get().len > contiguous {
                break;
            }
            let rg = e.remove();
            self.recycle(rg.dec);
        }
        Ok(())
    }

    /// Whether `[start, end)` overlaps a generation being decoded or decoded.
    fn overlaps(&self, start: u64, end: u64) -> bool {
        let before = |m: Option<(u64, u64)>| m.is_some_and(|(s, l)| s + l > start);
        let after = |m: Option<u64>| m.is_some_and(|s| s < end);
        before(
            self.gens
                .range(..=start)
                .next_back()
                .map(|(&s, g)| (s, g.len)),
        ) || before(self.done.range(..=start).next_back().map(|(&s, &l)| (s, l)))
            || after(self.gens.range(start..).next().map(|(&s, _)| s))
            || after(self.done.range(start..).next().map(|(&s, _)| s))
    }
}

impl SchemeReceiver for NcReceiver {
    fn on_frame(
        &mut self,
        ctx: &mut RecvCtx<'_>,
        from: FrameSource,
        frame: &Frame<'_>,
    ) -> Result<(), SchemeError> {
        match frame {
            Frame::Symbol(s) => self.on_symbol(ctx, from, s),
            _ => Err(SchemeError::Unexpected),
        }
    }

    fn write_feedback(&mut self, _now: Instant, _path: usize, pkt: &mut PacketWriter<'_>) {
        // Generations decoded since they were last reported (up to half the frames), then the
        // open ones with their rank r(D), oldest first, then other decoded ones above the
        // in-order point. Reporting the oldest decoded ones first (as before 2026-11-23) let
        // eight generations decoded behind a blocked head fill every ACK, so the sender never
        // heard that later ones were decoded and repaired them needlessly.
        let mut items = [(0u64, 0u64, false); MAX_FEEDBACK];
        let mut n = 0;
        for &b in self.fresh.keys().take(MAX_FEEDBACK / 2) {
            items[n] = (b, 0, true);
            n += 1;
        }
        for (&b, rg) in self.gens.iter() {
            if n >= MAX_FEEDBACK {
                break;
            }
            items[n] = (b, rg.dec.rank() as u64, false);
            n += 1;
        }
        for &b in self.fresh.keys().chain(self.done.keys()) {
            if n >= MAX_FEEDBACK {
                break;
            }
            if !items[..n].iter().any(|i| i.0 == b) {
                items[n] = (b, 0, true);
                n += 1;
            }
        }
        for &(block, count, decoded) in &items[..n] {
            let f = FeedbackFrame {
                block,
                count,
                decoded,
            };
            if pkt.push_feedback(f).is_err() {
                return;
            }
            if decoded {
                if let Some(n) = self.fresh.get_mut(&block) {
                    *n -= 1;
                    if *n == 0 {
                        self.fresh.remove(&block);
                    }
                }
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
    fn eq3_gives_the_fast_path_a_lead_and_the_slowest_none() {
        // Path 0: 40 ms; path 1: 640 ms at 20 segments/s. Lead of path 0 = 20·0.6/2 = 6.
        let p = [(0.04, 500.0, true), (0.64, 20.0, true)];
        assert!((eq3_offset(0, &p) - 6.0).abs() < 1e-9);
        assert_eq!(eq3_offset(1, &p), 0.0);
        // An inactive slow path gives no lead.
        let q = [(0.04, 500.0, true), (0.64, 20.0, false)];
        assert_eq!(eq3_offset(0, &q), 0.0);
    }

    #[test]
    fn theorem2_and_eq6_satisfy_theorem1() {
        // Equal RTTs, p_r ∈ (0.01, 0.05), p_n^max = 0.01, |G| = 16.
        let (g, r) = (16.0, 1.0);
        let gr = theorem2_regular(g, r, 0.01, 0.05, 0.01);
        // c = 1·0.99/(2·√(0.01·0.01)) = 49.5 ≥ 1: g = 16/(0.99 + √0.01/√0.01·0.99) = 8.0808.
        assert!((gr - 16.0 / 1.98).abs() < 1e-9, "{gr}");
        let c = eq6_coded(gr, r, 0.01, 0.01);
        // Eq. 4 at the range ends used by Theorem 2 holds with equality.
        assert!((c * 0.99 + gr * 0.99 - g).abs() < 1e-9);
        // Eq. 5: |C| ≥ |C|p_n + |G'|p_r.
        assert!(c >= c * 0.01 + gr * 0.01);
        // c < 1 (tiny r): the p_r^max branch.
        let small = theorem2_regular(g, 0.001, 0.01, 0.05, 0.01);
        let expect = g / (0.99 + 0.001 * (0.05f64.sqrt() / 0.1) * 0.99);
        assert!((small - expect).abs() < 1e-9);
    }

    #[test]
    fn nc_subflow_is_the_fastest_with_hysteresis_and_eq10() {
        let m = |rtt: f64, rate: f64| PathModel {
            active: true,
            rtt,
            loss: 0.01,
            loss_max: 0.02,
            loss_min: 0.001,
            rate,
        };
        let paths = [m(0.1, 100.0), m(0.1, 110.0)];
        assert_eq!(choose_nc(&paths, None), Some(1));
        // 10 % faster is not enough to take over from path 0.
        assert_eq!(choose_nc(&paths, Some(0)), Some(0));
        let paths = [m(0.1, 100.0), m(0.1, 130.0)];
        assert_eq!(choose_nc(&paths, Some(0)), Some(1));
        // Eq. 10: a 10 s NC path against a 0.1 s regular one (ratio 0.01) is refused.
        let paths = [m(0.1, 100.0), m(10.0, 1000.0)];
        assert_eq!(choose_nc(&paths, None), Some(0));
        assert_eq!(choose_nc(&paths[..1], None), None);
    }

    /// `eq4_cannot_hold` never contradicts `eq4_holds`: terms drawn from two paths' arrival
    /// probabilities or 0 (overdue), in any order, including all terms equal to the bound
    /// and bounds within a few ulps of need/n, where the sum's rounding decides. And it does
    /// decide the common case (as many packets out as needed, arrival below 1).
    #[test]
    fn eq4_bound_agrees_with_the_sum() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut decided = 0;
        for round in 0..200_000 {
            let need = 1 + (next() % 40) as u32;
            let n = (next() % 48) as usize;
            let steps = (next() % 64) as i64 - 32;
            let ulps = |b: f64| f64::from_bits((b.to_bits() as i64 + steps) as u64).min(1.0);
            let q_max = match round % 4 {
                // Near need/n, a few ulps either side: the sum's rounding matters here.
                0 if n > 0 => ulps(f64::from(need) / n as f64),
                // Near where the bound starts to decide, a few ulps either side.
                3 if n > 0 => {
                    let n = n as f64;
                    ulps((f64::from(need) - 1e-9) / n / (1.0 + (n + 4.0) * 1e-15))
                }
                1 => 1.0 - (next() % 10_000) as f64 * 1e-4,
                _ => (next() % 1_000_001) as f64 / 1e6,
            };
            let other = q_max * (next() % 1001) as f64 / 1000.0;
            let all_max = next() % 2 == 0;
            let terms: Vec<f64> = (0..n)
                .map(|_| match next() % 8 {
                    _ if all_max => q_max,
                    0 => 0.0,
                    1..=3 => other,
                    _ => q_max,
                })
                .collect();
            if eq4_cannot_hold(n, q_max, need) {
                decided += 1;
                assert!(
                    !eq4_holds(terms.iter().copied(), need),
                    "n {n}, need {need}, q_max {q_max:e}, {terms:?}"
                );
            }
        }
        assert!(decided > 10_000, "{decided}");
        // 16 packets out for a generation of 16, arrival 0.998: Eq. 4 fails, decided by the bound.
        assert!(eq4_cannot_hold(16, 0.998, 16));
        assert!(!eq4_holds([0.998; 16], 16));
        // One packet more and the bound no longer decides (Eq. 4 holds).
        assert!(!eq4_cannot_hold(17, 0.998, 16));
        assert!(eq4_holds([0.998; 17], 16));
        // Bounds it must refuse: not finite, negative.
        let t = Instant::from_nanos(0);
        assert_eq!(arrival_bound(&[(0.9, t), (0.99, t)]), Some(0.99));
        assert_eq!(arrival_bound(&[]), Some(0.0));
        assert_eq!(arrival_bound(&[(0.9, t), (f64::NAN, t)]), None);
        assert_eq!(arrival_bound(&[(-0.5, t)]), None);
        assert_eq!(arrival_bound(&[(f64::INFINITY, t)]), None);
    }

    #[test]
    fn eq4_counts_expected_arrivals() {
        assert!(eq4_holds([0.9, 0.9], 1));
        assert!(!eq4_holds([0.9, 0.9], 2));
        assert!(eq4_holds([], 0));
        assert!(!eq4_holds([], 1));
    }
}
