//! Mahimahi packet-delivery traces: time-varying link service.
//!
//! A trace file (Mahimahi's `mm-link` format, e.g. its `traces/*.up` and `*.down` files) has
//! one non-negative integer per line, a time in milliseconds; each line is one *delivery
//! opportunity* at which the link can send up to 1504 bytes (Mahimahi's `PACKET_SIZE`, the
//! largest TUN payload it expects). Several lines with the same time are several opportunities
//! in that millisecond. The times are non-decreasing and the trace repeats with a period equal
//! to its last time, which must be positive.
//!
//! Service follows Mahimahi's link queue: the packet at the head of the queue consumes the
//! bytes of each opportunity in turn (a packet larger than what an opportunity has left
//! continues at the next one), several small packets can share one opportunity, and an
//! opportunity nobody is queued for is wasted. A packet leaves at the opportunity that carries
//! its last byte. An opportunity at time `t` serves packets that arrived at or before `t`.

use std::path::Path;
use std::sync::Arc;
use tributary_proto::time::{Duration, Instant};

/// Bytes one delivery opportunity carries (Mahimahi's `PACKET_SIZE`).
pub const TRACE_OPPORTUNITY_BYTES: u64 = 1504;

/// A trace that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceError(pub String);

impl std::fmt::Display for TraceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TraceError {}

/// A loaded packet-delivery trace (cheap to clone: the opportunities are shared).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DeliveryTrace {
    /// Where the trace came from (file name), for reports and errors.
    pub source: String,
    /// Opportunity times in milliseconds from the start of one period, non-decreasing; the
    /// last is the period.
    opportunities_ms: Arc<[u64]>,
}

impl DeliveryTrace {
    /// Parses trace text; `source` names it in errors. Blank lines are skipped.
    pub fn parse(text: &str, source: &str) -> Result<DeliveryTrace, TraceError> {
        let mut v: Vec<u64> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let t = line.trim();
            if t.is_empty() {
                continue;
            }
            let ms: u64 = t.parse().map_err(|_| {
                TraceError(format!(
                    "{source}:{}: `{t}` is not a time in whole milliseconds",
                    i + 1
                ))
            })?;
            if ms > u64::MAX / 1_000_000 / 2 {
                return Err(TraceError(format!(
                    "{source}:{}: {ms} ms is too large",
                    i + 1
                )));
            }
            if let Some(&prev) = v.last() {
                if ms < prev {
                    return Err(TraceError(format!(
                        "{source}:{}: times must not decrease ({ms} after {prev})",
                        i + 1
                    )));
                }
            }
            v.push(ms);
        }
        match v.last() {
            None => Err(TraceError(format!(
                "{source}: the trace has no delivery opportunity"
            ))),
            Some(0) => Err(TraceError(format!(
                "{source}: the trace must last a positive time (its last time is 0 ms)"
            ))),
            Some(_) => Ok(DeliveryTrace {
                source: source.to_string(),
                opportunities_ms: v.into(),
            }),
        }
    }

    /// Reads and parses a trace file.
    pub fn load(path: &Path) -> Result<DeliveryTrace, TraceError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| TraceError(format!("cannot read trace file {}: {e}", path.display())))?;
        DeliveryTrace::parse(&text, &path.display().to_string())
    }

    /// Opportunities per period.
    pub fn len(&self) -> usize {
        self.opportunities_ms.len()
    }

    /// Never true (a trace has at least one opportunity); for API completeness.
    pub fn is_empty(&self) -> bool {
        self.opportunities_ms.is_empty()
    }

    /// The period after which the trace repeats.
    pub fn period(&self) -> Duration {
        Duration::from_millis(self.period_ms())
    }

    fn period_ms(&self) -> u64 {
        *self
            .opportunities_ms
            .last()
            .expect("a trace is never empty")
    }

    /// Long-run service rate in bit/s: opportunities × 1504 bytes per period.
    pub fn mean_rate_bps(&self) -> u64 {
        let bits = self.len() as u128 * TRACE_OPPORTUNITY_BYTES as u128 * 8 * 1000;
        (bits / self.period_ms() as u128).max(1) as u64
    }

    /// Time of opportunity `k` (counted over all periods from time zero).
    pub fn opportunity(&self, k: u64) -> Instant {
        let n = self.len() as u64;
        let ms = (k / n) * self.period_ms() + self.opportunities_ms[(k % n) as usize];
        Instant::from_nanos(ms.saturating_mul(1_000_000))
    }

    /// Index of the first opportunity at or after `t`.
    pub fn first_at_or_after(&self, t: Instant) -> u64 {
        let n = self.len() as u64;
        let period_ns = self.period_ms() * 1_000_000;
        let cycle = t.as_nanos() / period_ns;
        let within = t.as_nanos() - cycle * period_ns;
        if within == 0 && cycle > 0 {
            // The previous period's opportunities at its very end (time = period) are at `t`.
            let p = self.period_ms();
            let i = self.opportunities_ms.partition_point(|&ms| ms < p) as u64;
            return (cycle - 1) * n + i;
        }
        let i = self
            .opportunities_ms
            .partition_point(|&ms| ms * 1_000_000 < within) as u64;
        // i == n moves to the first opportunity of the next period.
        cycle * n + i
    }

    /// Serves a packet of `wire` bytes arriving at `now`. The link's service state is the
    /// first opportunity not yet used up, `next`, and the bytes it has left, `left` (a new
    /// link: `(0, TRACE_OPPORTUNITY_BYTES)`). Returns the new state and the packet's departure.
    pub(crate) fn serve(
        &self,
        now: Instant,
        next: u64,
        left: u64,
        wire: u64,
    ) -> (u64, u64, Instant) {
        // An opportunity that has passed with nobody queued is wasted.
        let (mut k, mut left) = if self.opportunity(next) >= now {
            (next, left)
        } else {
            (self.first_at_or_after(now), TRACE_OPPORTUNITY_BYTES)
        };
        if wire <= left {
            left -= wire;
        } else {
            let rest = wire - left;
            let more = rest.div_ceil(TRACE_OPPORTUNITY_BYTES);
            k += more;
            left = more * TRACE_OPPORTUNITY_BYTES - rest;
        }
        let dep = self.opportunity(k);
        if left == 0 {
            (k + 1, TRACE_OPPORTUNITY_BYTES, dep)
        } else {
            (k, left, dep)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Instant {
        Instant::from_nanos(v * 1_000_000)
    }

    #[test]
    fn parse_errors_name_the_line() {
        assert!(DeliveryTrace::parse("", "t")
            .unwrap_err()
            .0
            .contains("no delivery"));
        assert!(DeliveryTrace::parse("0\n0\n", "t")
            .unwrap_err()
            .0
            .contains("positive"));
        let e = DeliveryTrace::parse("1\n2\nx\n", "t").unwrap_err().0;
        assert!(e.contains("t:3") && e.contains("`x`"), "{e}");
        let e = DeliveryTrace::parse("5\n3\n", "t").unwrap_err().0;
        assert!(e.contains("t:2") && e.contains("decrease"), "{e}");
        assert!(DeliveryTrace::parse("-1\n", "t").is_err());
    }

    #[test]
    fn mean_rate_of_one_opportunity_per_ms() {
        // 1 opportunity/ms × 1504 B = 12.032 Mbit/s (Mahimahi's 12 Mbit/s trace).
        let t = DeliveryTrace::parse("1\n", "t").unwrap();
        assert_eq!(t.mean_rate_bps(), 12_032_000);
        assert_eq!(t.period(), Duration::from_millis(1));
    }

    #[test]
    fn opportunities_repeat_with_the_period() {
        let t = DeliveryTrace::parse("0\n3\n3\n10\n", "t").unwrap();
        let times: Vec<u64> = (0..9)
            .map(|k| t.opportunity(k).as_nanos() / 1_000_000)
            .collect();
        assert_eq!(times, vec![0, 3, 3, 10, 10, 13, 13, 20, 20]);
        assert_eq!(t.first_at_or_after(ms(0)), 0);
        assert_eq!(t.first_at_or_after(ms(1)), 1);
        assert_eq!(t.first_at_or_after(ms(3)), 1);
        assert_eq!(t.first_at_or_after(Instant::from_nanos(3_000_001)), 3);
        assert_eq!(t.first_at_or_after(ms(11)), 5);
        // The period's last opportunity (10 ms) is the first at or after 10 ms.
        assert_eq!(t.first_at_or_after(ms(10)), 3);
        assert_eq!(t.first_at_or_after(ms(20)), 7);
        let u = DeliveryTrace::parse("10\n", "u").unwrap();
        assert_eq!(u.first_at_or_after(ms(0)), 0);
        assert_eq!(u.first_at_or_after(ms(10)), 0);
        assert_eq!(u.first_at_or_after(ms(100)), 9);
        assert_eq!(u.opportunity(9), ms(100));
    }

    #[test]
    fn packets_share_and_span_opportunities() {
        // One opportunity every 10 ms.
        let t = DeliveryTrace::parse("10\n", "t").unwrap();
        // 500 B at 0: served by the opportunity at 10 ms, 1004 B left.
        let (k, left, dep) = t.serve(ms(0), 0, TRACE_OPPORTUNITY_BYTES, 500);
        assert_eq!((k, left, dep), (0, 1004, ms(10)));
        // 1000 B at 5 ms shares it.
        let (k, left, dep) = t.serve(ms(5), k, left, 1000);
        assert_eq!((k, left, dep), (0, 4, ms(10)));
        // 1500 B at 6 ms: 4 B in the first, 1496 B in the next (20 ms).
        let (k, left, dep) = t.serve(ms(6), k, left, 1500);
        assert_eq!((k, left, dep), (1, 8, ms(20)));
        // At 25 ms the 8 B left at 20 ms are gone (wasted): next opportunity is 30 ms.
        let (k, left, dep) = t.serve(ms(25), k, left, 100);
        assert_eq!((k, left, dep), (2, 1404, ms(30)));
        // A 4000 B packet at 100 ms needs three opportunities: 100, 110, 120 ms.
        let (k, left, dep) = t.serve(ms(100), k, left, 4000);
        assert_eq!((k, left, dep), (11, 3 * 1504 - 4000, ms(120)));
        // A packet that uses an opportunity up moves the state to the next one.
        let (k, left, dep) = t.serve(ms(120), k, left, 3 * 1504 - 4000);
        assert_eq!((k, left, dep), (12, 1504, ms(120)));
        let (_, _, dep) = t.serve(ms(120), k, left, 1);
        assert_eq!(dep, ms(130));
    }
}
