//! Congestion control.
//!
//! One controller per connection sees every path ([`PathView`]), so coupled algorithms need no
//! other plumbing: per-path state lives inside the controller, indexed by path id. The engine owns
//! the windows; a controller returns decisions ([`Window`]) rather than mutating shared state
//! (the ns-3 split of congestion *state* and *ops*). The engine also owns the recovery rule
//! — at most one reduction per window of data, RFC 6582 / RFC 9002 §7.3.2 — so controllers
//! see `on_congestion_event` once per loss episode.

mod balia;
mod bbr;
mod coupled;
mod cubic;
mod ewtcp;
mod lia;
mod mpveno;
mod newreno;
mod olia;
mod vegas;
mod veno;
mod wvegas;

pub use balia::{balia_alpha, Balia};
pub use bbr::{
    Bbr, BbrCoupled, BBR_HIGH_GAIN, COUPLED_MIN_WEIGHT, INFLIGHT_BETA, LOSS_THRESH,
    PROBE_DOWN_GAIN, PROBE_UP_GAIN, QUEUE_EVIDENCE,
};
pub use coupled::{total_cwnd, Coupled};
pub use cubic::{Cubic, CUBIC_BETA, CUBIC_C};
pub use ewtcp::{ewtcp_weight, Ewtcp};
pub use lia::Lia;
pub use mpveno::MpVeno;
pub use newreno::NewReno;
pub use olia::{olia_alpha, olia_increase, Olia};
pub use vegas::{vegas_diff, Vegas, VEGAS_ALPHA, VEGAS_BETA, VEGAS_GAMMA};
pub use veno::{veno_backlog, Veno, VENO_BETA};
pub use wvegas::{WVegas, WVEGAS_INITIAL_ALPHA, WVEGAS_TOTAL_ALPHA};

use crate::path::PathView;
pub use crate::path::RateSample;
use crate::registry::{self, Choice, Entry, Factory, Family, Options};
use crate::time::{Duration, Instant};
use std::marker::PhantomData;
use std::sync::Arc;

/// A window decision for one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Congestion window in bytes.
    pub cwnd: u64,
    /// Slow-start threshold in bytes.
    pub ssthresh: u64,
}

impl Window {
    /// The window after an undo (RFC 4015 §2's response, Linux `tcp_undo_cwnd_reduction`
    /// with `tcp_reno_undo_cwnd`): cwnd and ssthresh of path `p` become the larger of their
    /// current and `prior` values.
    pub fn undone(p: &PathView, prior: Window) -> Window {
        Window {
            cwnd: p.cwnd.max(prior.cwnd),
            ssthresh: p.ssthresh.max(prior.ssthresh),
        }
    }
}

/// What one ACK acknowledged on one path (only packets sent outside recovery count).
///
/// The engine calls [`CongestionControl::on_ack`] for every such ACK, and then keeps the
/// window from growing unless the path was window-limited ([`PathView::cwnd_limited`],
/// RFC 7661 / Linux `tcp_is_cwnd_limited`): a window may shrink on any ACK (delay-based
/// controllers), but grows only when it was what held the sender back.
#[derive(Debug, Clone, Copy)]
pub struct AckEvent {
    /// When the ACK arrived.
    pub now: Instant,
    /// Bytes newly acknowledged and eligible for window growth.
    pub bytes_acked: u64,
    /// RTT sample taken from this ACK, if any, less the peer's ack delay (RFC 9002 §5.3;
    /// raw under the `classic` profile).
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
    /// ssthresh = max(base/2, 2·MSS) (RFC 5681 §3.1, Eq. 4), base = [`PathView::decrease_base`]
    /// (cwnd as Linux does, or the flight before the timeout under `classic`).
    fn on_timeout(&mut self, path: usize, _now: Instant, paths: &[PathView]) -> Window {
        let p = &paths[path];
        Window {
            cwnd: p.mss,
            ssthresh: (p.decrease_base() / 2).max(2 * p.mss),
        }
    }

    /// The latest congestion response of `path` (an [`Self::on_congestion_event`] caused by
    /// losses) proved spurious: every packet whose loss caused it was acknowledged after all
    /// (`ConnectionConfig::reorder_tolerance`). `prior` is the path's window just before that
    /// response. Called only for the most recent `on_congestion_event` of the path, and never
    /// after a timeout came between. By default the window is restored as Linux's
    /// `tcp_undo_cwnd_reduction` with `tcp_reno_undo_cwnd` does (RFC 4015 §2's response):
    /// cwnd and ssthresh become the larger of their current and prior values. A controller
    /// with state of its own restores that too (CUBIC: RFC 9438 §4.9).
    fn on_spurious_congestion(
        &mut self,
        path: usize,
        _now: Instant,
        prior: Window,
        paths: &[PathView],
    ) -> Window {
        Window::undone(&paths[path], prior)
    }

    /// A packet of `bytes` was sent on `path`.
    fn on_packet_sent(&mut self, _path: usize, _now: Instant, _bytes: u64, _paths: &[PathView]) {}

    /// Whether this controller reads delivery-rate samples ([`Self::on_delivery`]). The
    /// engine keeps the per-packet delivery-rate bookkeeping only for controllers that say
    /// yes (asked once, when the connection is built); the default, `false`, saves it for
    /// the loss- and delay-based controllers, which never look at a sample.
    fn wants_delivery_rate(&self) -> bool {
        false
    }

    /// The delivery-rate sample of an ACK on `path` (draft-cheng-iccrg-delivery-rate-estimation
    /// §3.3; see [`RateSample`]), given after `on_ack` and loss detection for that ACK, for
    /// every ACK that newly acknowledged packets of the path (in recovery too), if
    /// [`Self::wants_delivery_rate`] is true. Model-based controllers (BBR) set their window
    /// here; `None` (the default) leaves it as it is.
    fn on_delivery(
        &mut self,
        _path: usize,
        _rs: &RateSample,
        _paths: &[PathView],
    ) -> Option<Window> {
        None
    }

    /// The rate (bytes per second) at which the engine must pace `path`'s data packets, if
    /// this controller sets one (a rate-based controller such as BBR); `None` (the default)
    /// leaves pacing to the configuration (`ConnectionConfig::pacing`: `N · cwnd / SRTT`,
    /// RFC 9002 §7.7). Asked before every data packet of the path; 0 means "do not pace".
    fn pacing_rate(&self, _path: usize, _paths: &[PathView]) -> Option<u64> {
        None
    }
}

/// How a controller is configured and built: the object a [`CcConfig`] holds.
pub trait CcFactory: Factory {
    /// A fresh controller for one connection.
    fn build(&self) -> Box<dyn CongestionControl>;
}

/// The factory of a controller without options.
pub struct Plain<T>(PhantomData<fn() -> T>);

impl<T> std::fmt::Debug for Plain<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Plain")
    }
}

impl<T> Factory for Plain<T> {
    fn options(&self) -> Options {
        Options::new()
    }
}

impl<T: CongestionControl + Default + 'static> CcFactory for Plain<T> {
    fn build(&self) -> Box<dyn CongestionControl> {
        Box::new(T::default())
    }
}

/// `make` of a registry entry for a controller without options.
pub fn plain<T: CongestionControl + Default + 'static>(
    o: Options,
) -> Result<Arc<dyn CcFactory>, String> {
    registry::no_options(&o)?;
    Ok(Arc::new(Plain::<T>(PhantomData)))
}

/// The controller family (see [`crate::registry`]).
#[derive(Debug)]
pub struct Controllers;

impl Family for Controllers {
    type Factory = dyn CcFactory;
    const KIND: &'static str = "congestion controller";
    fn entries() -> &'static [Entry<dyn CcFactory>] {
        CONTROLLERS
    }
    fn default_name() -> &'static str {
        "new-reno"
    }
}

/// A chosen controller (`cc = "..."` in scenario files).
pub type CcConfig = Choice<Controllers>;

const fn entry(
    name: &'static str,
    aliases: &'static [&'static str],
    summary: &'static str,
    make: fn(Options) -> Result<Arc<dyn CcFactory>, String>,
) -> Entry<dyn CcFactory> {
    Entry {
        name,
        aliases,
        summary,
        options: &[],
        make,
    }
}

/// Every controller selectable by name: one line per controller.
pub static CONTROLLERS: &[Entry<dyn CcFactory>] = &[
    entry(
        "new-reno",
        &["newreno", "reno"],
        "uncoupled NewReno per path (RFC 5681, RFC 6582)",
        plain::<NewReno>,
    ),
    entry(
        "cubic",
        &[],
        "CUBIC (RFC 9438), uncoupled per path",
        plain::<Cubic>,
    ),
    entry(
        "vegas",
        &[],
        "TCP Vegas (Brakmo & Peterson 1995), uncoupled per path",
        plain::<Vegas>,
    ),
    entry(
        "veno",
        &[],
        "TCP Veno (Fu & Liew 2003), uncoupled per path",
        plain::<Veno>,
    ),
    entry(
        "lia",
        &[],
        "Linked Increases Algorithm (RFC 6356), coupled",
        plain::<Lia>,
    ),
    entry(
        "ewtcp",
        &[],
        "Equally-weighted TCP (Honda et al. 2009): Reno per path, increase weighted by 1/n²",
        plain::<Ewtcp>,
    ),
    entry(
        "coupled",
        &[],
        "fully coupled AIMD (Kelly & Voice 2005; Han et al. 2006)",
        plain::<Coupled>,
    ),
    entry(
        "olia",
        &[],
        "Opportunistic LIA (Khalili et al., CoNEXT 2012), coupled",
        plain::<Olia>,
    ),
    entry(
        "balia",
        &[],
        "Balanced Linked Adaptation (Peng et al., ToN 2016), coupled",
        plain::<Balia>,
    ),
    entry(
        "wvegas",
        &[],
        "weighted Vegas (Cao et al., ICNP 2012), coupled delay-based",
        plain::<WVegas>,
    ),
    entry(
        "mpveno",
        &[],
        "multipath Veno (Le, ATC 2013), coupled",
        plain::<MpVeno>,
    ),
    entry(
        "bbr",
        &["bbr1"],
        "BBR per path, paced: v1 Startup/Drain/ProbeRTT (draft-cardwell-iccrg-bbr-congestion-control-00) with v3 ProbeBW phases, inflight_hi and bw_lo/inflight_lo (draft-cardwell-ccwg-bbr), responding only to losses that show a full queue",
        plain::<Bbr>,
    ),
    entry(
        "bbr-coupled",
        &[],
        "BBR (as bbr) per path with probing headroom shared across paths (shared-bottleneck fairness), coupled",
        plain::<BbrCoupled>,
    ),
];

/// Reno-style multiplicative decrease shared by most algorithms: halve, floor 2·MSS (RFC 5681
/// §3.1 Eq. 4). What is halved is [`PathView::decrease_base`]: cwnd (`linux`), or the bytes in
/// flight (`classic`, Eq. 4's FlightSize as ns-3 applies it).
pub fn halve(p: &PathView) -> Window {
    let ssthresh = (p.decrease_base() / 2).max(2 * p.mss);
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
    #[inline]
    pub fn add(&mut self, path: usize, inc: f64) -> u64 {
        if self.acc.len() <= path {
            self.acc.resize(path + 1, 0.0);
        }
        let a = &mut self.acc[path];
        *a += inc;
        // The epsilon absorbs representation error (0.75·1e6/3e4 evaluates to 24.999…).
        let (whole, n) = floor_u64(*a + 1e-9);
        *a -= whole;
        n
    }
}

/// `(x.floor(), x.floor() as u64)`, without the library call for the values the window
/// arithmetic has: in [+0, 2⁵²) the truncation through `i64` (one instruction each way,
/// where `u64` takes several) is exact and equals the floor (without SSE4.1, `f64::floor`
/// is a call into libm). Anything else (−0, negative, huge, NaN) takes `floor`.
#[inline]
fn floor_u64(x: f64) -> (f64, u64) {
    if x.is_sign_positive() && x < 4_503_599_627_370_496.0 {
        let i = x as i64;
        (i as f64, i as u64)
    } else {
        let f = x.floor();
        (f, f as u64)
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

/// Adds a signed, possibly fractional `inc` (bytes) to `cwnd`, carrying the fraction in
/// `carry` (kept in [0, 1)), so that many small per-ACK changes add up exactly.
pub(crate) fn apply_fractional(carry: &mut f64, cwnd: u64, inc: f64) -> u64 {
    let total = (cwnd as f64 + *carry + inc).max(0.0);
    // The epsilon absorbs representation error, as in [`Accumulators::add`].
    let (whole, n) = floor_u64(total + 1e-9);
    *carry = (total - whole).max(0.0);
    n
}

/// Reno's congestion-avoidance increase for `bytes` acknowledged: `MSS · bytes / cwnd`
/// (RFC 5681 Eq. 3, byte-counted). The yardstick for coupled increases.
pub fn reno_increase(mss: u64, bytes: u64, cwnd: u64) -> f64 {
    mss as f64 * bytes as f64 / cwnd.max(1) as f64
}

/// A path's RTT in seconds for rate computations: SRTT, or the RTO before the first sample.
pub(crate) fn rtt_secs(p: &PathView) -> f64 {
    p.rtt_or_rto().as_secs_f64().max(1e-6)
}

/// The window after a decrease to `target` bytes: floored at 2·MSS (RFC 5681 Eq. 4's floor
/// for ssthresh), the only case in which a "decrease" can leave more than the old window.
pub(crate) fn reduced(p: &PathView, target: f64) -> Window {
    let floor = 2 * p.mss;
    let cwnd = (target.max(0.0) as u64).max(floor);
    Window {
        cwnd,
        ssthresh: cwnd,
    }
}

/// Per-path controller state, grown on demand (path ids are small dense indices).
#[derive(Debug, Clone)]
pub(crate) struct PerPath<T> {
    v: Vec<T>,
}

impl<T> Default for PerPath<T> {
    fn default() -> Self {
        PerPath { v: Vec::new() }
    }
}

impl<T: Default> PerPath<T> {
    /// State of `path`, created on first use.
    pub(crate) fn get(&mut self, path: usize) -> &mut T {
        if self.v.len() <= path {
            self.v.resize_with(path + 1, T::default);
        }
        &mut self.v[path]
    }

    /// State of `path`, if it was ever used.
    pub(crate) fn peek(&self, path: usize) -> Option<&T> {
        self.v.get(path)
    }
}

/// What one round trip of RTT samples showed (delay-based algorithms).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RoundRtt {
    /// Smallest sample of the round (seconds): Linux `tcp_vegas` uses it to filter out
    /// delayed ACKs.
    pub min: f64,
    /// Mean of the round's samples (seconds): Linux `mptcp_wvegas` uses it.
    pub mean: f64,
}

/// Splits ACKs into rounds of one RTT, as Linux Vegas does with `beg_snd_nxt`: a round ends at
/// the first ACK whose RTT sample shows that the acknowledged packet was sent after the
/// round began (its send time is `now − sample`).
#[derive(Debug, Clone, Default)]
pub(crate) struct RttRounds {
    start: Option<Instant>,
    min: f64,
    sum: f64,
    count: u32,
}

impl RttRounds {
    /// Records the ACK's sample; returns the round's RTTs if this ACK ends it.
    pub(crate) fn on_ack(&mut self, now: Instant, sample: Option<Duration>) -> Option<RoundRtt> {
        let sample = sample?;
        let s = sample.as_secs_f64();
        let start = *self.start.get_or_insert(now);
        if self.count == 0 || s < self.min {
            self.min = s;
        }
        self.sum += s;
        self.count += 1;
        let sent = now.as_nanos().saturating_sub(sample.as_nanos());
        if sent < start.as_nanos() || self.start == Some(now) && self.count == 1 {
            return None;
        }
        let r = RoundRtt {
            min: self.min,
            mean: self.sum / f64::from(self.count),
        };
        *self = RttRounds {
            start: Some(now),
            ..RttRounds::default()
        };
        Some(r)
    }

    /// Forgets the current round (after a loss: Linux re-enables Vegas only when recovery ends).
    pub(crate) fn reset(&mut self) {
        *self = RttRounds::default();
    }
}

#[cfg(test)]
mod model_tests;
#[cfg(test)]
mod tests;
