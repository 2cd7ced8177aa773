//! Time as integer nanoseconds.
//!
//! The core never reads a clock: every input carries `now`. The simulator starts its clock at
//! [`Instant::ZERO`]; the UDP driver maps the OS monotonic clock onto the same type. Integer
//! nanoseconds keep runs bit-identical across machines (floats are not).

use std::fmt;
use std::ops::{Add, AddAssign, Sub};
use std::str::FromStr;

/// A point in time, in nanoseconds since an arbitrary epoch (0 in the simulator).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(u64);

/// A span of time in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(u64);

impl Instant {
    /// The epoch.
    pub const ZERO: Instant = Instant(0);
    /// The latest representable instant; used as "never".
    pub const MAX: Instant = Instant(u64::MAX);

    /// An instant `ns` nanoseconds after the epoch.
    pub const fn from_nanos(ns: u64) -> Self {
        Instant(ns)
    }
    /// Nanoseconds since the epoch.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Seconds since the epoch, as a float (for reports only).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    /// Time elapsed since `earlier`, zero if `earlier` is later.
    pub fn saturating_since(self, earlier: Instant) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }
}

impl Duration {
    /// Zero length.
    pub const ZERO: Duration = Duration(0);
    /// The longest representable span.
    pub const MAX: Duration = Duration(u64::MAX);

    /// From nanoseconds.
    pub const fn from_nanos(ns: u64) -> Self {
        Duration(ns)
    }
    /// From microseconds.
    pub const fn from_micros(us: u64) -> Self {
        Duration(us * 1_000)
    }
    /// From milliseconds.
    pub const fn from_millis(ms: u64) -> Self {
        Duration(ms * 1_000_000)
    }
    /// From whole seconds.
    pub const fn from_secs(s: u64) -> Self {
        Duration(s * 1_000_000_000)
    }
    /// From fractional seconds, rounded to the nearest nanosecond; negative or NaN gives zero.
    pub fn from_secs_f64(s: f64) -> Self {
        if s.is_nan() || s <= 0.0 {
            Duration(0)
        } else {
            Duration((s * 1e9).round().min(u64::MAX as f64) as u64)
        }
    }
    /// Nanoseconds.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Microseconds (truncated).
    pub const fn as_micros(self) -> u64 {
        self.0 / 1_000
    }
    /// Milliseconds (truncated).
    pub const fn as_millis(self) -> u64 {
        self.0 / 1_000_000
    }
    /// Seconds as a float (for estimators and reports).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    /// Multiplication that saturates instead of overflowing.
    pub const fn saturating_mul(self, k: u64) -> Duration {
        Duration(self.0.saturating_mul(k))
    }
    /// Addition that saturates instead of overflowing.
    pub const fn saturating_add(self, o: Duration) -> Duration {
        Duration(self.0.saturating_add(o.0))
    }
    /// Subtraction clamped at zero.
    pub const fn saturating_sub(self, o: Duration) -> Duration {
        Duration(self.0.saturating_sub(o.0))
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d.0))
    }
}
impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        self.0 = self.0.saturating_add(d.0);
    }
}
impl Sub<Instant> for Instant {
    type Output = Duration;
    /// Saturating: an earlier minus a later instant is zero.
    fn sub(self, o: Instant) -> Duration {
        Duration(self.0.saturating_sub(o.0))
    }
}
impl Add for Duration {
    type Output = Duration;
    fn add(self, o: Duration) -> Duration {
        Duration(self.0.saturating_add(o.0))
    }
}
impl Sub for Duration {
    type Output = Duration;
    fn sub(self, o: Duration) -> Duration {
        Duration(self.0.saturating_sub(o.0))
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0;
        if ns.is_multiple_of(1_000_000_000) {
            write!(f, "{}s", ns / 1_000_000_000)
        } else if ns.is_multiple_of(1_000_000) {
            write!(f, "{}ms", ns / 1_000_000)
        } else if ns.is_multiple_of(1_000) {
            write!(f, "{}us", ns / 1_000)
        } else {
            write!(f, "{ns}ns")
        }
    }
}

/// Why a duration string was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid duration `{input}`: {reason} (examples: \"200ms\", \"1.5s\", \"50us\")")]
pub struct ParseDurationError {
    input: String,
    reason: &'static str,
}

impl FromStr for Duration {
    type Err = ParseDurationError;
    /// Parses `<number><unit>` with unit `ns`, `us`, `ms`, `s`, `min` (the number may be
    /// fractional).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = |reason| ParseDurationError {
            input: s.to_string(),
            reason,
        };
        let t = s.trim();
        let split = t
            .find(|c: char| c.is_ascii_alphabetic())
            .ok_or_else(|| err("missing unit"))?;
        let (num, unit) = t.split_at(split);
        let v: f64 = num.trim().parse().map_err(|_| err("not a number"))?;
        if !v.is_finite() || v < 0.0 {
            return Err(err("must be a finite, non-negative number"));
        }
        let scale = match unit.trim() {
            "ns" => 1.0,
            "us" | "µs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "min" => 60e9,
            _ => return Err(err("unknown unit (use ns, us, ms, s or min)")),
        };
        let ns = v * scale;
        if ns > u64::MAX as f64 / 2.0 {
            return Err(err("too large"));
        }
        Ok(Duration(ns.round() as u64))
    }
}

impl serde::Serialize for Duration {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Duration {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_display_round_trip() {
        for (s, ns) in [
            ("200ms", 200_000_000u64),
            ("1.5s", 1_500_000_000),
            ("50us", 50_000),
            ("7ns", 7),
            ("2min", 120_000_000_000),
        ] {
            let d: Duration = s.parse().unwrap();
            assert_eq!(d.as_nanos(), ns, "{s}");
            let back: Duration = d.to_string().parse().unwrap();
            assert_eq!(back, d);
        }
    }

    #[test]
    fn parse_rejects_bad_input() {
        for s in [
            "",
            "12",
            "ms",
            "-1s",
            "1.2.3s",
            "5 parsecs",
            "nans",
            "1e300s",
        ] {
            assert!(s.parse::<Duration>().is_err(), "{s} accepted");
        }
    }

    #[test]
    fn instant_arithmetic_saturates() {
        let t = Instant::from_nanos(10);
        assert_eq!(t - Instant::from_nanos(20), Duration::ZERO);
        assert_eq!(Instant::MAX + Duration::from_secs(1), Instant::MAX);
    }
}
