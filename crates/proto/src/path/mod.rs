//! Paths: unreliable, congestion-controlled packet channels.
//!
//! Each path numbers its packets and never reuses a number (as QUIC), acknowledges with SACK
//! ranges, estimates RTT (RFC 6298), and detects loss by packet threshold or timeout. What a
//! lost packet carried, and whether it is re-sent, is the scheme's business.

mod rate;
mod reorder;
mod rtt;

pub(crate) use rate::DeliveryRate;
pub use rate::RateSample;
pub(crate) use reorder::{Reordering, Spurious};
pub use reorder::{MAX_LOST_RECORDS, REO_WND_PERSIST};
pub use rtt::{ForwardDelay, RttEstimator};

use crate::ranges::RangeSet;
use crate::scheme::{PacketTag, SentInfo};
use crate::time::{Duration, Instant};
use std::collections::VecDeque;

/// Whether a path is usable, as the engine judges it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum PathState {
    /// Carries new data.
    #[default]
    Active,
    /// Its retransmission timer expired and nothing was acknowledged since ("potentially
    /// failed", as Linux MPTCP): while another path is active it gets no new data, only the
    /// engine's probes, one per (backed-off) retransmission timeout.
    Suspect,
    /// `fail_after_rtos` consecutive timeouts without an acknowledgement: treated as
    /// Suspect, and reported as failed. Any acknowledgement makes the path active again.
    Failed,
    /// Closed by the application: never used again.
    Closed,
}

/// A read-only snapshot of one path, given to congestion controllers, schedulers and schemes.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct PathView {
    /// Path index.
    pub id: usize,
    /// The path carries new data ([`PathState::Active`]); coupled controllers count only
    /// such paths.
    pub active: bool,
    /// The engine's judgement of the path.
    pub state: PathState,
    /// Maximum datagram size counted by the window (bytes).
    pub mss: u64,
    /// Congestion window (bytes).
    pub cwnd: u64,
    /// Slow-start threshold (bytes).
    pub ssthresh: u64,
    /// Bytes sent and neither acknowledged nor declared lost.
    pub bytes_in_flight: u64,
    /// Packets sent and neither acknowledged nor declared lost.
    pub packets_in_flight: u64,
    /// Smoothed RTT, once measured.
    pub srtt: Option<Duration>,
    /// Smallest RTT seen.
    pub min_rtt: Option<Duration>,
    /// Most recent RTT sample.
    pub latest_rtt: Option<Duration>,
    /// Current retransmission timeout (with backoff).
    pub rto: Duration,
    /// Smoothed loss-rate estimate (see [`LossEstimator`]).
    pub loss_rate: f64,
    /// In fast recovery (a congestion event within the last window).
    pub in_recovery: bool,
    /// Send time of the oldest packet in flight.
    pub oldest_unacked_sent: Option<Instant>,
    /// Loss-detection packet threshold.
    pub loss_threshold: u64,
    /// The window limited sending during this round trip or the previous one (RFC 7661's
    /// "cwnd-limited", the rule of Linux `tcp_is_cwnd_limited`: in slow start, cwnd is below
    /// twice the largest flight; after it, the largest flight left no room for a full
    /// packet). The engine lets a window grow only then.
    pub cwnd_limited: bool,
    /// `Some(bytes in flight)` when a multiplicative decrease applies to the flight rather
    /// than to cwnd (the `classic` profile; see [`PathView::decrease_base`]); `None` (the
    /// `linux` profile) for cwnd.
    pub flight_decrease: Option<u64>,
}

impl PathView {
    /// A fresh active path `id` with window `cwnd` (bytes) and datagram size `mss`, nothing
    /// in flight and no RTT sample yet; the fields are public, set what a test needs.
    pub fn new(id: usize, mss: u64, cwnd: u64) -> Self {
        PathView {
            id,
            active: true,
            state: PathState::Active,
            mss,
            cwnd,
            ssthresh: u64::MAX,
            bytes_in_flight: 0,
            packets_in_flight: 0,
            srtt: None,
            min_rtt: None,
            latest_rtt: None,
            rto: Duration::from_secs(1),
            loss_rate: 0.0,
            in_recovery: false,
            oldest_unacked_sent: None,
            loss_threshold: 3,
            cwnd_limited: true,
            flight_decrease: None,
        }
    }

    /// The window a multiplicative decrease applies to ([`crate::cc::halve`] and the default
    /// timeout rule): cwnd under the `linux` profile (Linux `tcp_recalc_ssthresh`), the
    /// bytes in flight under `classic` — RFC 5681 §3.1 Eq. 4's FlightSize, as ns-3's
    /// `TcpNewReno::GetSsThresh` is given `BytesInFlight()` (RFC 6675 pipe: lost and SACKed
    /// segments excluded, as the engine's flight) on entering recovery, and the flight
    /// before a retransmission timeout.
    pub fn decrease_base(&self) -> u64 {
        self.flight_decrease.unwrap_or(self.cwnd)
    }

    /// Free congestion-window space in bytes.
    pub fn window_space(&self) -> u64 {
        self.cwnd.saturating_sub(self.bytes_in_flight)
    }
    /// SRTT, or the RTO as a pessimistic stand-in before the first sample.
    pub fn rtt_or_rto(&self) -> Duration {
        self.srtt.unwrap_or(self.rto)
    }
}

/// Loss-rate estimator: an exponentially weighted average of per-packet outcomes
/// (1 = lost, 0 = acknowledged) with weight 1/`window`, so it tracks roughly the last
/// `window` packets. It starts at 0 (optimistic, as a fresh TCP).
#[derive(Debug, Clone, Copy)]
pub struct LossEstimator {
    rate: f64,
    weight: f64,
}

impl LossEstimator {
    /// Averages over about `window` packets.
    pub fn new(window: u32) -> Self {
        LossEstimator {
            rate: 0.0,
            weight: 1.0 / f64::from(window.max(1)),
        }
    }
    /// Records acknowledged packets.
    pub fn on_acked(&mut self, n: u64) {
        for _ in 0..n.min(4096) {
            self.rate -= self.weight * self.rate;
        }
    }
    /// Records one lost packet.
    pub fn on_lost(&mut self) {
        self.rate += self.weight * (1.0 - self.rate);
    }
    /// Current estimate in [0, 1].
    pub fn rate(&self) -> f64 {
        self.rate
    }
}

/// Counters per path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PathStats {
    /// Datagrams sent (all kinds).
    pub packets_sent: u64,
    /// Bytes sent (all datagrams).
    pub bytes_sent: u64,
    /// Ack-eliciting packets acknowledged.
    pub packets_acked: u64,
    /// Bytes of acknowledged packets (whole datagrams).
    pub bytes_acked: u64,
    /// Ack-eliciting packets declared lost (threshold or timeout).
    pub packets_lost: u64,
    /// Retransmission timeouts.
    pub rto_count: u64,
    /// Congestion events (window reductions).
    pub congestion_events: u64,
    /// Datagrams received on this path.
    pub packets_received: u64,
    /// Duplicate datagrams received (already seen packet numbers).
    pub duplicates_received: u64,
    /// Payload bytes sent (stream data, symbols, parity: see
    /// [`PacketWriter::payload_len`](crate::wire::PacketWriter::payload_len)); over the stream
    /// bytes delivered, it gives every scheme's redundancy the same way.
    pub payload_bytes_sent: u64,
    /// Stream bytes the scheme sent again on this path (retransmissions, reinjections).
    pub retransmitted_bytes: u64,
    /// Packets that carried stream bytes sent again.
    pub retransmitted_packets: u64,
    /// Penalisations applied to this path (window reductions asked by the scheme).
    pub penalizations: u64,
    /// Packets declared lost whose original was acknowledged afterwards: spurious loss
    /// declarations (counted with `ConnectionConfig::reorder_tolerance` only; left out of
    /// serialised results while 0).
    #[serde(skip_serializing_if = "is_zero")]
    pub spurious_losses: u64,
    /// Congestion responses undone because every loss that caused them proved spurious
    /// (`ConnectionConfig::reorder_tolerance`; left out of serialised results while 0).
    #[serde(skip_serializing_if = "is_zero")]
    pub undos: u64,
}

pub(crate) fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Farthest below the largest packet number received that a recovery mark may reach.
pub const MAX_RECOVERY_DISTANCE: u64 = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SentState {
    Outstanding,
    Acked,
    Lost,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct SentPacket {
    pub(crate) time_sent: Instant,
    pub(crate) size: u32,
    pub(crate) tag: Option<PacketTag>,
    /// [`SENT_STREAM_END`], [`SENT_CONTROL`].
    pub(crate) flags: u8,
    pub(crate) state: SentState,
    /// Delivery-rate snapshot taken at send time (see [`rate`]).
    pub(crate) rate: rate::SendSnapshot,
}

/// The packet carries the STREAM_END frame.
pub(crate) const SENT_STREAM_END: u8 = 1;
/// The packet carries reliable control frames (MESSAGE, ABANDON) kept by the connection.
pub(crate) const SENT_CONTROL: u8 = 2;
/// The scheme counted a retransmission in the packet
/// ([`SendCtx::count_retransmission`](crate::scheme::SendCtx::count_retransmission)).
pub(crate) const SENT_RETRANSMISSION: u8 = 4;

impl SentPacket {
    /// What the scheme is told about this packet (number `pn` on `path`).
    pub(crate) fn info(&self, path: usize, pn: u64, tag: PacketTag) -> SentInfo {
        SentInfo {
            path,
            pn,
            tag,
            time_sent: self.time_sent,
            size: self.size,
        }
    }
}

/// All state of one path at one endpoint.
#[derive(Debug, Clone)]
pub struct Path {
    pub(crate) id: usize,
    pub(crate) state: PathState,
    /// Retransmission timeouts since the last acknowledgement.
    pub(crate) consecutive_rtos: u32,
    /// A probe (PING) is owed: the path is suspect and another path is active.
    pub(crate) probe_due: bool,
    /// `probe_new_paths`: the PING that measures this path before it carries data was sent.
    pub(crate) join_probed: bool,
    pub(crate) mss: u64,
    // --- sending side ---
    pub(crate) next_pn: u64,
    /// Ack-eliciting packets from `sent_base` upward (packet numbers of non-eliciting packets
    /// are recorded too, already in the `Acked` state, to keep indexing O(1)).
    pub(crate) sent: VecDeque<SentPacket>,
    pub(crate) sent_base: u64,
    pub(crate) bytes_in_flight: u64,
    pub(crate) packets_in_flight: u64,
    pub(crate) largest_acked: Option<u64>,
    pub(crate) rtt: RttEstimator,
    /// Forward queueing from the peer's ACK timestamps (`ConnectionConfig::ack_timestamps`).
    pub(crate) forward: ForwardDelay,
    pub(crate) cwnd: u64,
    pub(crate) ssthresh: u64,
    pub(crate) recovery_start: Option<Instant>,
    pub(crate) rto_deadline: Option<Instant>,
    /// Longest the retransmission timer may back off to while the path is only probed
    /// (suspect or failed in a multipath connection, `ConnectionConfig::max_probe_interval`).
    pub(crate) probe_cap: Option<Duration>,
    pub(crate) loss_threshold: u64,
    /// Multiplicative decreases apply to the bytes in flight, not cwnd (the `classic`
    /// profile; see [`PathView::decrease_base`]).
    pub(crate) decrease_from_flight: bool,
    /// Data goes out only while a whole packet (`mss`) fits in the window (the `classic`
    /// profile, as ns-3's `TcpSocketBase::AvailableWindow`); otherwise while the flight is
    /// below the window (RFC 9002 §7; a window may be overshot by one packet).
    pub(crate) whole_packet_window: bool,
    pub(crate) loss: LossEstimator,
    pub(crate) stats: PathStats,
    /// First packet number sent in the current round trip: its acknowledgement ends it.
    pub(crate) round_end: u64,
    /// Largest bytes in flight after a send, this round and the one before.
    pub(crate) round_max_flight: u64,
    pub(crate) prev_round_max_flight: u64,
    /// Packets below this number were examined by loss detection (settled, or kept for the
    /// retransmission timer by the classic profile).
    pub(crate) loss_scan: u64,
    /// Pacing: earliest time the next data packet may leave.
    pub(crate) next_send: Instant,
    /// Window validation (`ConnectionConfig::cwnd_validation`): the window a new path
    /// starts with (the restart and the floor of a decay).
    pub(crate) initial_cwnd: u64,
    /// Window validation: the largest flight since the window last limited sending, and
    /// when it did (or was last decayed).
    pub(crate) cwv_used: u64,
    pub(crate) cwv_stamp: Instant,
    /// When this path last sent an ack-eliciting packet (restart after idle).
    pub(crate) last_sent: Option<Instant>,
    /// Tail-loss probe: when the probe timeout expires.
    pub(crate) tlp_deadline: Option<Instant>,
    /// A tail-loss probe is owed.
    pub(crate) tlp_due: bool,
    /// A probe was sent and nothing new was acknowledged since (one probe per tail).
    pub(crate) tlp_sent: bool,
    /// Delivery-rate estimation (draft-cheng-iccrg-delivery-rate-estimation).
    pub(crate) rate: DeliveryRate,
    /// The controller reads delivery-rate samples
    /// ([`CongestionControl::wants_delivery_rate`](crate::cc::CongestionControl::wants_delivery_rate)):
    /// only then do sent packets take a snapshot and ACKs build a sample.
    pub(crate) rate_samples: bool,
    /// Bytes declared lost on this path (the delivery-rate samples report the increase).
    pub(crate) bytes_lost: u64,
    /// Reordering tolerance (`ConnectionConfig::reorder_tolerance`): the adaptive reordering
    /// window, the packets declared lost, the undo of the latest congestion response.
    pub(crate) reo: Reordering,
    // --- receiving side ---
    /// When the largest packet number received arrived (for the ACK's ack delay).
    pub(crate) largest_received_at: Option<Instant>,
    pub(crate) received: RangeSet,
    /// Packet numbers below this are no longer tracked (settled per the sender, or pruned).
    pub(crate) rx_floor: u64,
    /// The peer's ACKs still report packets below our lowest outstanding one.
    pub(crate) floor_due: bool,
    pub(crate) largest_received: Option<u64>,
    pub(crate) unacked_eliciting: u32,
    pub(crate) ack_deadline: Option<Instant>,
    pub(crate) ack_now: bool,
}

impl Path {
    /// The retransmission timeout to arm: the estimator's (with backoff), no longer than
    /// the probe cap while one applies (never below the RTO without backoff).
    pub(crate) fn timer(&self) -> Duration {
        let rto = self.rtt.rto();
        match self.probe_cap {
            Some(cap) => rto.min(cap.max(self.rtt.base_rto())),
            None => rto,
        }
    }

    pub(crate) fn new(id: usize, mss: u64, cwnd: u64, rtt: RttEstimator, thr: u64) -> Self {
        Path {
            id,
            state: PathState::Active,
            consecutive_rtos: 0,
            probe_due: false,
            join_probed: false,
            mss,
            next_pn: 0,
            sent: VecDeque::new(),
            sent_base: 0,
            bytes_in_flight: 0,
            packets_in_flight: 0,
            largest_acked: None,
            rtt,
            forward: ForwardDelay::default(),
            cwnd,
            ssthresh: u64::MAX,
            recovery_start: None,
            rto_deadline: None,
            probe_cap: None,
            loss_threshold: thr,
            decrease_from_flight: false,
            whole_packet_window: false,
            loss: LossEstimator::new(100),
            stats: PathStats::default(),
            round_end: 0,
            initial_cwnd: cwnd,
            cwv_used: 0,
            cwv_stamp: Instant::ZERO,
            last_sent: None,
            round_max_flight: 0,
            prev_round_max_flight: 0,
            loss_scan: 0,
            next_send: Instant::ZERO,
            tlp_deadline: None,
            tlp_due: false,
            tlp_sent: false,
            largest_received_at: None,
            rate: DeliveryRate::default(),
            rate_samples: false,
            bytes_lost: 0,
            reo: Reordering::default(),
            received: RangeSet::new(),
            rx_floor: 0,
            floor_due: false,
            largest_received: None,
            unacked_eliciting: 0,
            ack_deadline: None,
            ack_now: false,
        }
    }

    /// The read-only view.
    pub fn view(&self) -> PathView {
        self.make_view()
    }

    /// Writes the read-only view into `v` field by field (no snapshot built and copied
    /// in); the same values as [`Self::view`]. Every field is named, so a new one must be
    /// written here too.
    pub(crate) fn write_view(&self, v: &mut PathView) {
        let PathView {
            id,
            active,
            state,
            mss,
            cwnd,
            ssthresh,
            bytes_in_flight,
            packets_in_flight,
            srtt,
            min_rtt,
            latest_rtt,
            rto,
            loss_rate,
            in_recovery,
            oldest_unacked_sent,
            loss_threshold,
            cwnd_limited,
            flight_decrease,
        } = v;
        let oldest = self.oldest_outstanding_sent();
        *id = self.id;
        *active = self.state == PathState::Active;
        *state = self.state;
        *mss = self.mss;
        *cwnd = self.cwnd;
        *ssthresh = self.ssthresh;
        *bytes_in_flight = self.bytes_in_flight;
        *packets_in_flight = self.packets_in_flight;
        *srtt = self.rtt.srtt();
        *min_rtt = self.rtt.min_rtt();
        *latest_rtt = self.rtt.latest();
        *rto = self.timer();
        *loss_rate = self.loss.rate();
        *in_recovery = matches!((self.recovery_start, oldest), (Some(r), Some(t)) if t <= r);
        *oldest_unacked_sent = oldest;
        *loss_threshold = self.loss_threshold;
        *cwnd_limited = self.cwnd_limited();
        *flight_decrease = self.decrease_from_flight.then_some(self.bytes_in_flight);
        debug_assert_eq!(*v, self.make_view(), "path snapshot written wrong");
    }

    #[inline(always)]
    fn make_view(&self) -> PathView {
        let oldest = self.oldest_outstanding_sent();
        PathView {
            id: self.id,
            active: self.state == PathState::Active,
            state: self.state,
            mss: self.mss,
            cwnd: self.cwnd,
            ssthresh: self.ssthresh,
            bytes_in_flight: self.bytes_in_flight,
            packets_in_flight: self.packets_in_flight,
            srtt: self.rtt.srtt(),
            min_rtt: self.rtt.min_rtt(),
            latest_rtt: self.rtt.latest(),
            rto: self.timer(),
            loss_rate: self.loss.rate(),
            in_recovery: matches!((self.recovery_start, oldest), (Some(r), Some(t)) if t <= r),
            oldest_unacked_sent: oldest,
            loss_threshold: self.loss_threshold,
            cwnd_limited: self.cwnd_limited(),
            flight_decrease: self.decrease_from_flight.then_some(self.bytes_in_flight),
        }
    }

    /// Brings `v`, this path's snapshot from before an ack-eliciting [`Self::on_sent`] (and
    /// current then), up to date after it, without re-taking the whole snapshot: a send
    /// changes only the flight (bytes, packets, the largest flight of the round), hence
    /// `cwnd_limited` and `flight_decrease`, and, from an empty flight, the oldest
    /// outstanding packet and with it `in_recovery`. Debug builds compare with [`Self::view`].
    pub(crate) fn refresh_view_after_send(&self, v: &mut PathView) {
        v.bytes_in_flight = self.bytes_in_flight;
        v.packets_in_flight = self.packets_in_flight;
        v.cwnd_limited = self.cwnd_limited();
        v.flight_decrease = self.decrease_from_flight.then_some(self.bytes_in_flight);
        if v.oldest_unacked_sent.is_none() {
            let oldest = self.oldest_outstanding_sent();
            v.oldest_unacked_sent = oldest;
            v.in_recovery = matches!((self.recovery_start, oldest), (Some(r), Some(t)) if t <= r);
        }
        debug_assert_eq!(*v, self.view(), "incremental path snapshot diverged");
    }

    /// Brings `v`, this path's snapshot from before its window (cwnd, ssthresh) was set
    /// (and current then), up to date after it: the window changes only those two and
    /// `cwnd_limited`. Debug builds compare with [`Self::view`].
    pub(crate) fn refresh_view_after_window(&self, v: &mut PathView) {
        v.cwnd = self.cwnd;
        v.ssthresh = self.ssthresh;
        v.cwnd_limited = self.cwnd_limited();
        debug_assert_eq!(*v, self.view(), "incremental path snapshot diverged");
    }

    /// RFC 7661 / Linux `tcp_is_cwnd_limited`: in slow start the window counts as limiting
    /// while it is below twice the largest flight of this round trip or the previous one
    /// (slow start may double it); after slow start, while that flight left no room for
    /// another full packet.
    pub(crate) fn cwnd_limited(&self) -> bool {
        let flight = self
            .round_max_flight
            .max(self.prev_round_max_flight)
            .max(self.bytes_in_flight);
        if self.cwnd < self.ssthresh {
            self.cwnd < 2 * flight
        } else {
            flight + self.mss > self.cwnd
        }
    }

    /// The packet that holds ns-3's SND.UNA (the oldest unacknowledged stream byte), for the
    /// classic profile's timer rule: the oldest outstanding packet that carried a
    /// retransmission if there is one (it carries data older than anything sent after the
    /// original), else the oldest outstanding packet. O(packets in flight); classic only.
    pub(crate) fn classic_head(&self) -> Option<u64> {
        let mut oldest = None;
        for (i, sp) in self.sent.iter().enumerate() {
            if sp.state != SentState::Outstanding {
                continue;
            }
            let pn = self.sent_base + i as u64;
            if sp.flags & SENT_RETRANSMISSION != 0 {
                return Some(pn);
            }
            oldest.get_or_insert(pn);
        }
        oldest
    }

    /// The acknowledgement of packet `pn` (the largest newly acknowledged) ends the round
    /// if `pn` was sent after the round began.
    pub(crate) fn on_round_ack(&mut self, pn: u64) {
        if pn >= self.round_end {
            self.prev_round_max_flight = self.round_max_flight;
            self.round_max_flight = self.bytes_in_flight;
            self.round_end = self.next_pn;
        }
    }

    /// Counters.
    pub fn stats(&self) -> &PathStats {
        &self.stats
    }

    /// Allocates the next packet number.
    pub(crate) fn take_pn(&mut self) -> u64 {
        let pn = self.next_pn;
        self.next_pn += 1;
        pn
    }

    /// Records a sent packet (after `take_pn`).
    #[inline(always)]
    pub(crate) fn on_sent(
        &mut self,
        pn: u64,
        now: Instant,
        size: usize,
        eliciting: bool,
        tag: Option<PacketTag>,
        flags: u8,
    ) {
        self.stats.packets_sent += 1;
        self.stats.bytes_sent += size as u64;
        if !eliciting {
            if self.sent.is_empty() {
                self.sent_base = pn + 1;
            } else {
                self.push_sent(pn, now, 0, None, 0, SentState::Acked);
            }
            return;
        }
        if self.sent.is_empty() {
            self.sent_base = pn;
        }
        self.push_sent(pn, now, size as u32, tag, flags, SentState::Outstanding);
        if self.rate_samples {
            let snap = self.rate.on_send(now, self.packets_in_flight == 0);
            if let Some(p) = self.sent.back_mut() {
                p.rate = snap;
            }
        }
        self.bytes_in_flight += size as u64;
        self.packets_in_flight += 1;
        self.last_sent = Some(now);
        self.round_max_flight = self.round_max_flight.max(self.bytes_in_flight);
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(now + self.timer());
        }
    }

    fn push_sent(
        &mut self,
        pn: u64,
        now: Instant,
        size: u32,
        tag: Option<PacketTag>,
        flags: u8,
        state: SentState,
    ) {
        debug_assert_eq!(pn, self.sent_base + self.sent.len() as u64);
        self.sent.push_back(SentPacket {
            time_sent: now,
            size,
            tag,
            flags,
            state,
            rate: rate::SendSnapshot {
                delivered: 0,
                delivered_time: now,
                first_sent_time: now,
                app_limited: false,
            },
        });
    }

    pub(crate) fn oldest_outstanding_sent(&self) -> Option<Instant> {
        if self.packets_in_flight == 0 {
            return None;
        }
        // Usually the front: settled packets are trimmed off it.
        if let Some(p) = self.sent.front() {
            if p.state == SentState::Outstanding {
                return Some(p.time_sent);
            }
        }
        self.sent
            .iter()
            .find(|p| p.state == SentState::Outstanding)
            .map(|p| p.time_sent)
    }

    /// Drops settled packets from the front of the window.
    pub(crate) fn trim_front(&mut self) {
        while let Some(p) = self.sent.front() {
            if p.state == SentState::Outstanding {
                break;
            }
            self.sent.pop_front();
            self.sent_base += 1;
        }
    }

    /// Marks `pn` as settled (acked or lost), updating in-flight counters. Returns the packet
    /// if it was outstanding.
    pub(crate) fn settle(&mut self, pn: u64, state: SentState) -> Option<SentPacket> {
        let idx = pn.checked_sub(self.sent_base)? as usize;
        let p = self.sent.get_mut(idx)?;
        if p.state != SentState::Outstanding {
            return None;
        }
        p.state = state;
        let p = *p;
        self.bytes_in_flight -= u64::from(p.size);
        self.packets_in_flight -= 1;
        Some(p)
    }

    /// Records a received packet number; returns false for a duplicate (or one too old to
    /// tell, below the tracked window).
    pub(crate) fn on_received(&mut self, pn: u64, now: Instant) -> bool {
        self.stats.packets_received += 1;
        if pn < self.rx_floor || self.received.contains(pn) {
            self.stats.duplicates_received += 1;
            return false;
        }
        self.received.insert(pn..pn + 1);
        if self.largest_received.is_none_or(|l| pn > l) {
            self.largest_received = Some(pn);
            self.largest_received_at = Some(now);
        }
        true
    }

    /// Records packet `pn`, lost in the network and rebuilt by the scheme, as received (so it
    /// is acknowledged). Refused (false) unless the peer can have sent it: below the largest
    /// number received, at most [`MAX_RECOVERY_DISTANCE`] below it, and not below the floor
    /// of what is still tracked. A number already received is accepted and changes nothing.
    pub(crate) fn mark_recovered(&mut self, pn: u64) -> bool {
        let Some(largest) = self.largest_received else {
            return false;
        };
        if pn >= largest || largest - pn > MAX_RECOVERY_DISTANCE || pn < self.rx_floor {
            return false;
        }
        self.received.insert(pn..pn + 1);
        true
    }

    /// Bounds the SACK state to the newest `max` ranges.
    pub(crate) fn prune_received(&mut self, max: usize) {
        while self.received.len() > max {
            if let Some(r) = self.received.pop_first() {
                self.rx_floor = self.rx_floor.max(r.end);
            }
        }
    }

    /// The sender settled everything below `floor`: stop reporting it.
    pub(crate) fn raise_floor(&mut self, floor: u64) {
        if floor > self.rx_floor {
            // Keep the highest range so the ACK still names the largest packet received.
            let keep_from = self.received.max_end().map_or(floor, |e| floor.min(e - 1));
            self.received.remove_below(keep_from);
            self.rx_floor = keep_from;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_estimator_tracks_rate() {
        let mut e = LossEstimator::new(100);
        for i in 0..100_000u64 {
            if i % 50 == 0 {
                e.on_lost();
            } else {
                e.on_acked(1);
            }
        }
        assert!((e.rate() - 0.02).abs() < 0.01, "{}", e.rate());
    }
}
