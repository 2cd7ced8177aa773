//! Connection configuration.

use crate::cc::CcConfig;
use crate::sched::SchedulerConfig;
use crate::scheme::SchemeConfig;
use crate::time::Duration;

/// Everything a connection is built from. Both endpoints of a connection use the same
/// configuration (the simulator and the UDP driver both arrange that).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ConnectionConfig {
    /// Connection identifier carried in every header.
    pub conn_id: u64,
    /// Largest stream payload per packet, bytes (the MSS).
    pub mss: usize,
    /// Receive buffer, bytes: bounds out-of-order plus unread data and the flow-control limit.
    pub recv_buffer: usize,
    /// Send buffer, bytes: bounds unacknowledged written data.
    pub send_buffer: usize,
    /// Recovery/coding scheme.
    pub scheme: SchemeConfig,
    /// Congestion controller.
    pub cc: CcConfig,
    /// Path scheduler.
    pub scheduler: SchedulerConfig,
    /// Initial congestion window, packets (RFC 6928 default 10).
    pub initial_window: u64,
    /// Retransmission timeout before the first RTT sample (RFC 6298: 1 s).
    pub initial_rto: Duration,
    /// Lower bound of the retransmission timeout (Linux: 200 ms).
    pub min_rto: Duration,
    /// Upper bound of the retransmission timeout (RFC 6298 allows 60 s).
    pub max_rto: Duration,
    /// Packets acknowledged above an outstanding one before it is declared lost.
    pub loss_threshold: u64,
    /// Consecutive retransmission timeouts without an acknowledgement after which a path is
    /// reported failed (it is suspect, and gets no new data while another path is active,
    /// from the first one).
    pub fail_after_rtos: u32,
    /// Acknowledge every this many ack-eliciting packets (2 = delayed ACKs).
    pub ack_every: u32,
    /// Longest a lone packet waits for its acknowledgement.
    pub max_ack_delay: Duration,
    /// Most SACK ranges per ACK frame.
    pub max_ack_ranges: usize,
    /// Most paths a receiver accepts.
    pub max_paths: usize,
    /// Block size for the delay metrics (bytes): a block's delivery delay runs from the first
    /// transmission of any of its bytes (or symbols) to its in-order delivery, measured the
    /// same way for every scheme (FMTCP paper §VI: 32 KB blocks, also for MPTCP).
    pub metric_block: usize,
    /// Seed of the connection's deterministic generator.
    pub seed: u64,
    /// Which TCP behaviour the engine models (see [`TcpProfile`]).
    pub profile: TcpProfile,
    /// Pace every path's data packets at `N · cwnd / SRTT` (RFC 9002 §7.7; N = 2 in slow
    /// start, 1.25 after). Off by default: the papers' TCPs (ns-2/ns-3, Linux of their time
    /// without `fq`) sent window bursts. A controller that provides its own rate
    /// ([`crate::cc::CongestionControl::pacing_rate`], e.g. BBR) is paced at that rate
    /// whatever this says.
    pub pacing: bool,
    /// Tail-loss probe (RFC 8985 §7, RACK-TLP): when an ack-eliciting packet is outstanding
    /// and nothing is acknowledged for a probe timeout (2·SRTT, plus `max_ack_delay` when a
    /// single packet is in flight), send one probe packet beyond the window (new data if the
    /// scheme has some, else a PING); while on, a packet sent more than 9/8·max(SRTT, latest
    /// RTT) before one acknowledged is declared lost (RFC 9002 §6.1.2, the time threshold the
    /// probe's acknowledgement needs). Off by default (neither Linux of the papers' time nor
    /// ns-2/ns-3 NewReno had it).
    pub tail_loss_probe: bool,
    /// Congestion window validation, in the form Linux applies with its default
    /// `tcp_slow_start_after_idle` = 1 (RFC 2861, RFC 7661 §4.4; `tcp_cwnd_application_limited`
    /// and `tcp_cwnd_restart`): a path whose window did not limit sending for a
    /// retransmission timeout gives back half of the part it did not use (cwnd ← (cwnd +
    /// used)/2, used at least the initial window), and a path that sends again after more
    /// than a timeout with nothing in flight halves its window per timeout it was idle, down
    /// to the initial window; either keeps ssthresh at least ¾ of the old window. Only for
    /// window-based controllers outside recovery (a controller with its own rate, e.g. BBR,
    /// manages its window itself). Matters for multipath: a path a scheduler holds back, or a
    /// flow limited by its application, otherwise keeps a window it does not use, which
    /// coupled controllers (LIA, OLIA, BALIA) count. Off by default (the results in `docs/`
    /// were made without it).
    pub cwnd_validation: bool,
    /// Multipath: a path without an RTT sample carries no data while another path is active
    /// (before any path is measured, the first active path, the "initial subflow", carries
    /// it); it gets one PING as soon as the application has written something, and joins
    /// the scheduler's candidates once the PING's acknowledgement has measured it. As a
    /// Linux MPTCP subflow carries data only after its MP_JOIN handshake (one round trip on
    /// that path; RFC 8684 §3.2), and as multipath QUIC validates a path before it carries
    /// data (draft-ietf-quic-multipath, path validation of RFC 9000 §8.2). Without it a new
    /// path ranks first under `min-rtt` (no sample) and a short transfer's first packets go
    /// over it whatever its delay: 20 KB over a 20 ms and a 1.4 s path complete in 0.71 s
    /// instead of 0.03 s. Off by default (the results in `docs/` were made without it).
    pub probe_new_paths: bool,
    /// Reordering tolerance, as Linux (RACK-TLP's reordering window, RFC 8985 §6.2, and the
    /// undo of spurious congestion responses, RFC 4015 / Linux `tcp_try_undo_recovery`): a
    /// late acknowledgement of a packet declared lost proves the loss spurious (counted in
    /// `PathStats::spurious_losses`); once a path saw reordering, a packet past the packet
    /// threshold is declared lost only when it was sent `latest RTT + reo_wnd` ago, with
    /// `reo_wnd = min(k · min_RTT/4, SRTT)`, `k` raised by one per round trip with spurious
    /// losses and back to 1 after 16 recovery episodes without; and when every loss of a
    /// recovery episode proves spurious, the controller restores the window from before it
    /// ([`crate::cc::CongestionControl::on_spurious_congestion`]). Until a path sees
    /// reordering its losses are detected exactly as without this option, and a packet a
    /// scheme rebuilt from redundancy ([`crate::scheme::SchemeSender::acked_by_repair`]) is
    /// not reordering, so on paths that keep their packets in order nothing changes (checked
    /// run by run on every scenario file of the repository). The default follows the profile
    /// ([`TcpProfile::reorder_tolerance`]): on for `linux` (Linux has had RACK on by default
    /// since 4.18), off for `classic` (ns-2/ns-3 NewReno has none of it).
    pub reorder_tolerance: bool,
    /// Multipath: longest interval between probes of a suspect or failed path. Its
    /// retransmission timer backs off (RFC 6298 §5.5) up to this rather than `max_rto` (never
    /// below its RTO without backoff), so a path that comes back after an outage is found
    /// within about this time, at the cost of one probe per interval while it is down. A
    /// single path keeps RFC 6298's backoff (its retransmission is the probe). `None` (the
    /// default, as Linux MPTCP and the papers' simulators): up to `max_rto`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_probe_interval: Option<Duration>,
    /// Receivers send each ACK as an ACK_TS frame carrying the receive time of its largest
    /// packet (docs/wire.md), and senders derive from those times the queueing delay of the
    /// forward direction alone ([`crate::path::ForwardDelay`]). Used for messages with a
    /// deadline at the peer ([`crate::message::MessageOptions::deadline_at_peer`]), when they
    /// are given up and which paths may carry them: their one-way estimate then leaves out
    /// queueing in the ACK direction, which the round trip cannot tell apart. Off by default (an ACK grows by 1–8 bytes); the simulator turns it
    /// on for applications that use such deadlines (the `video` app with `abandon_early`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub ack_timestamps: bool,
}

/// The TCP behaviour the engine models where legitimate implementations differ.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TcpProfile {
    /// Linux-like (the default): windows grow by the bytes acknowledged (appropriate byte
    /// counting, RFC 3465, as Linux's `tcp_cong_avoid_ai`), a lost retransmission is detected
    /// like any other loss (every packet has a fresh number, as QUIC or Linux RACK), the
    /// retransmission timer restarts on every acknowledgement of new packets, RTT samples
    /// have the peer's ACK delay subtracted (RFC 9000 §13.2.5, RFC 9002 §5.3) and the timer
    /// adds `max_ack_delay` back (RFC 9002 §6.2.1: max(min_rto, SRTT + 4·RTTVAR +
    /// max_ack_delay)).
    #[default]
    Linux,
    /// ns-2/ns-3 NewReno (`TcpNewReno` of ns-3.37): growth counted per ACK — at most one MSS
    /// acknowledged per ACK counts (RFC 3465 with L = 1 SMSS; one MSS per ACK in slow start,
    /// MSS²/cwnd per ACK in congestion avoidance, so ½ MSS per RTT with delayed ACKs); a
    /// packet that carried a retransmission is recovered only by the retransmission timer
    /// (RFC 6675 `NextSeg` never resends a segment twice); the timer restarts only when the
    /// packet holding the oldest unacknowledged byte is acknowledged (ns-3 restarts it when
    /// SND.UNA advances: acknowledgements of later packets and losses do not restart it);
    /// RTT samples are raw (ns-3's timestamp echo includes the delayed-ACK wait); a
    /// multiplicative decrease halves the bytes in flight, not cwnd (RFC 5681 §3.1 Eq. 4's
    /// FlightSize, as ns-3 passes `BytesInFlight()` to `GetSsThresh`; see
    /// [`crate::path::PathView::decrease_base`]); data goes out only while a whole packet
    /// fits in the window (ns-3's `AvailableWindow`), not while the flight is below it.
    Classic,
}

impl TcpProfile {
    /// Whether the profile tolerates reordering by default
    /// ([`ConnectionConfig::reorder_tolerance`]): `linux` does (RACK, RFC 8985), `classic`
    /// does not (ns-3.37's NewReno counts three duplicate ACKs, nothing else).
    pub fn reorder_tolerance(self) -> bool {
        match self {
            TcpProfile::Linux => true,
            TcpProfile::Classic => false,
        }
    }
}

impl Default for ConnectionConfig {
    fn default() -> Self {
        ConnectionConfig {
            conn_id: 1,
            mss: 1400,
            recv_buffer: 2 << 20,
            send_buffer: 4 << 20,
            scheme: SchemeConfig::default(),
            cc: CcConfig::default(),
            scheduler: SchedulerConfig::default(),
            initial_window: 10,
            initial_rto: Duration::from_secs(1),
            min_rto: Duration::from_millis(200),
            max_rto: Duration::from_secs(60),
            loss_threshold: 3,
            fail_after_rtos: 3,
            ack_every: 2,
            max_ack_delay: Duration::from_millis(25),
            max_ack_ranges: 32,
            max_paths: 8,
            metric_block: 32 * 1024,
            seed: 0,
            profile: TcpProfile::Linux,
            pacing: false,
            tail_loss_probe: false,
            cwnd_validation: false,
            probe_new_paths: false,
            reorder_tolerance: TcpProfile::Linux.reorder_tolerance(),
            max_probe_interval: None,
            ack_timestamps: false,
        }
    }
}

/// A configuration that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid connection configuration: `{field}` {reason}")]
pub struct ConfigError {
    /// The offending field.
    pub field: &'static str,
    /// What is wrong.
    pub reason: String,
}

/// Bytes a datagram adds around `mss` payload bytes at most: header (15), DATA frame header
/// (11), STREAM_END frame (9), checksum (4), and slack for scheme frames.
pub const DATAGRAM_OVERHEAD: usize = 48;

impl ConnectionConfig {
    /// Largest datagram this configuration produces.
    pub fn max_datagram(&self) -> usize {
        self.mss + DATAGRAM_OVERHEAD
    }

    /// Checks the configuration for `paths` paths.
    pub fn validate(&self, paths: usize) -> Result<(), ConfigError> {
        let bad = |field, reason: String| Err(ConfigError { field, reason });
        if !(64..=65_000).contains(&self.mss) {
            return bad(
                "mss",
                format!("is {} but must be within 64..=65000", self.mss),
            );
        }
        if self.recv_buffer < self.mss {
            return bad(
                "recv_buffer",
                format!(
                    "is {} but must hold at least one MSS ({})",
                    self.recv_buffer, self.mss
                ),
            );
        }
        if self.send_buffer < self.mss {
            return bad(
                "send_buffer",
                format!(
                    "is {} but must hold at least one MSS ({})",
                    self.send_buffer, self.mss
                ),
            );
        }
        if self.initial_window == 0 {
            return bad("initial_window", "must be at least 1 packet".into());
        }
        if self.loss_threshold == 0 {
            return bad("loss_threshold", "must be at least 1".into());
        }
        if self.fail_after_rtos == 0 {
            return bad("fail_after_rtos", "must be at least 1".into());
        }
        if let Some(d) = self.max_probe_interval.filter(|&d| d < self.min_rto) {
            return bad(
                "max_probe_interval",
                format!("is {d} but must be at least min_rto ({})", self.min_rto),
            );
        }
        if self.ack_every == 0 {
            return bad("ack_every", "must be at least 1".into());
        }
        if self.max_ack_ranges == 0 {
            return bad("max_ack_ranges", "must be at least 1".into());
        }
        if self.min_rto.as_nanos() == 0 || self.min_rto > self.max_rto {
            return bad(
                "min_rto",
                format!(
                    "is {} but must be > 0 and <= max_rto ({})",
                    self.min_rto, self.max_rto
                ),
            );
        }
        if self.initial_rto.as_nanos() == 0 {
            return bad("initial_rto", "must be > 0".into());
        }
        if self.metric_block == 0 {
            return bad("metric_block", "must be at least 1 byte".into());
        }
        if !(1..=255).contains(&self.max_paths) {
            return bad("max_paths", "must be within 1..=255".into());
        }
        if paths > self.max_paths {
            return bad(
                "max_paths",
                format!("is {} but {} paths were given", self.max_paths, paths),
            );
        }
        if let Err(reason) = self.scheme.factory().validate(self) {
            return bad("scheme", reason);
        }
        if paths > 0 {
            if let Err(reason) = self.scheme.factory().validate_paths(paths) {
                return bad("scheme", reason);
            }
        }
        if let Some(max) = self.scheme.factory().max_paths() {
            if paths > max {
                return bad(
                    "scheme",
                    format!(
                        "`{}` uses at most {max} path(s), {paths} given",
                        self.scheme.name()
                    ),
                );
            }
        }
        Ok(())
    }
}
