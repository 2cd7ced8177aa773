//! Congestion control.
//!
//! One controller per connection sees every path ([`PathView`]), so coupled algorithms (LIA
//! here; OLIA, BALIA, wVegas, MPVeno in later work) need no other plumbing. The engine owns
//! the windows; a controller returns decisions ([`Window`]) rather than mutating shared state
//! (the ns-3 split of congestion *state* and *ops*). The engine also owns the recovery rule
//! — at most one reduction per window of data, RFC 6582 / RFC 9002 §7.3.2 — so controllers
//! see `on_congestion_event` once per loss episode.

mod lia;
mod newreno;

pub use lia::Lia;
pub use newreno::NewReno;

use crate::path::PathView;
use crate::time::{Duration, Instant};

/// A window decision for one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Congestion window in bytes.
    pub cwnd: u64,
    /// Slow-start threshold in bytes.
    pub ssthresh: u64,
}

/// What one ACK acknowledged on one path (only packets sent outside recovery count).
#[derive(Debug, Clone, Copy)]
pub struct AckEvent {
    /// When the ACK arrived.
    pub now: Instant,
    /// Bytes newly acknowledged and eligible for window growth.
    pub bytes_acked: u64,
    /// RTT sample taken from this ACK, if any.
    pub rtt_sample: Option<Duration>,
}

/// A congestion-control algorithm. Implementations keep per-path state indexed by path id.
pub trait CongestionControl: Send + std::fmt::Debug {
    /// Registry name.
    fn name(&self) -> &'static str;

    /// Initial window for a new path.
    fn initial_window(&self, mss: u64, initial_packets: u64) -> Window {
        Window {
            cwnd: mss * initial_packets,
            ssthresh: u64::MAX,
        }
    }

    /// Bytes were acknowledged on `path` (`paths[path]` is its state before the update).
    fn on_ack(&mut self, path: usize, ack: &AckEvent, paths: &[PathView]) -> Window;

    /// A loss was detected on `path`, first of its window: reduce once.
    fn on_congestion_event(&mut self, path: usize, now: Instant, paths: &[PathView]) -> Window;

    /// The retransmission timer of `path` expired: by default restart from one MSS with
    /// ssthresh = max(cwnd/2, 2·MSS) (RFC 5681 §3.1, Eq. 4, using cwnd as Linux does).
    fn on_timeout(&mut self, path: usize, _now: Instant, paths: &[PathView]) -> Window {
        let p = &paths[path];
        Window {
            cwnd: p.mss,
            ssthresh: (p.cwnd / 2).max(2 * p.mss),
        }
    }

    /// A packet of `bytes` was sent on `path`.
    fn on_packet_sent(&mut self, _path: usize, _now: Instant, _bytes: u64, _paths: &[PathView]) {}
}

/// Controllers selectable by name (`cc = "..."` in scenario files).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CcConfig {
    /// Uncoupled NewReno on every path (RFC 5681, RFC 6582).
    #[default]
    #[serde(alias = "newreno", alias = "reno")]
    NewReno,
    /// Linked Increases Algorithm (RFC 6356).
    Lia,
}

impl CcConfig {
    /// Every accepted name.
    pub const NAMES: &'static [&'static str] = &["new-reno", "lia"];

    /// Builds the controller.
    pub fn build(&self) -> Box<dyn CongestionControl> {
        match self {
            CcConfig::NewReno => Box::new(NewReno::default()),
            CcConfig::Lia => Box::new(Lia::default()),
        }
    }
}

/// Reno-style multiplicative decrease shared by most algorithms: halve, floor 2·MSS.
pub fn halve(p: &PathView) -> Window {
    let ssthresh = (p.cwnd / 2).max(2 * p.mss);
    Window {
        cwnd: ssthresh,
        ssthresh,
    }
}

/// Per-path fractional increase accumulator: window growth of `mss·k/cwnd` per ACK is added
/// exactly (as Linux's `snd_cwnd_cnt`), not truncated per ACK.
#[derive(Debug, Clone, Default)]
pub struct Accumulators {
    acc: Vec<f64>,
}

impl Accumulators {
    /// Adds `inc` bytes (possibly fractional) to path `path`; returns whole bytes to add now.
    pub fn add(&mut self, path: usize, inc: f64) -> u64 {
        if self.acc.len() <= path {
            self.acc.resize(path + 1, 0.0);
        }
        let a = &mut self.acc[path];
        *a += inc;
        // The epsilon absorbs representation error (0.75·1e6/3e4 evaluates to 24.999…).
        let whole = (*a + 1e-9).floor();
        *a -= whole;
        whole as u64
    }
}

/// Slow start (RFC 5681 §3.1, with appropriate byte counting as Linux): grow by the bytes
/// acknowledged, not beyond ssthresh. Returns the new window and the bytes left over for
/// congestion avoidance.
pub fn slow_start(p: &PathView, bytes_acked: u64) -> (u64, u64) {
    if p.cwnd >= p.ssthresh {
        return (p.cwnd, bytes_acked);
    }
    let room = p.ssthresh - p.cwnd;
    let used = bytes_acked.min(room);
    (p.cwnd + used, bytes_acked - used)
}

#[cfg(test)]
mod tests;
