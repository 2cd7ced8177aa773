//! Streaming statistics with bounded memory: mean and variance (Welford), exact maximum, and
//! quantiles that are exact up to [`EXACT_SAMPLES`] samples and come from a log-bucketed
//! histogram (relative error below 1/128) beyond. Used for block delays, message completion
//! times and per-arrival-group completion times, so a run's memory does not grow with the
//! bytes or flows it moves.

use std::collections::BTreeMap;

/// Samples kept exactly before switching to the histogram.
pub const EXACT_SAMPLES: usize = 1024;
/// Sub-buckets per power of two in the histogram (relative bucket width 1/128).
const SUB_BITS: u32 = 7;

/// A distribution of non-negative values, summarised online.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Distribution {
    n: u64,
    mean: f64,
    m2: f64,
    max: f64,
    min: f64,
    exact: Vec<f64>,
    /// Bucket index → count (sparse), once `exact` overflowed.
    hist: BTreeMap<u32, u64>,
}

/// Values are bucketed in units of 2^-20 of their unit, so values down to about 1e-4 keep
/// the relative resolution (below it, the absolute one of about 1e-6).
const SCALE: f64 = (1u64 << 20) as f64;

/// Histogram bucket of `v`: exponent and the top `SUB_BITS` bits of the mantissa.
fn bucket(v: f64) -> u32 {
    let x = (v * SCALE).max(0.0).min(u64::MAX as f64 / 2.0) as u64;
    if x < (1 << SUB_BITS) {
        return x as u32;
    }
    let e = 63 - x.leading_zeros(); // ≥ SUB_BITS
    let shift = e - SUB_BITS;
    let mant = (x >> shift) as u32 & ((1 << SUB_BITS) - 1);
    ((shift + 1) << SUB_BITS) | mant
}

/// The midpoint of a bucket, in the value's unit.
fn bucket_value(b: u32) -> f64 {
    let hi = b >> SUB_BITS;
    if hi == 0 {
        return f64::from(b) / SCALE;
    }
    let shift = hi - 1;
    let mant = u64::from(b & ((1 << SUB_BITS) - 1)) | (1 << SUB_BITS);
    let lo = (mant << shift) as f64;
    (lo + (1u64 << shift) as f64 / 2.0) / SCALE
}

impl Distribution {
    /// Adds a sample.
    pub fn add(&mut self, v: f64) {
        self.n += 1;
        let d = v - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (v - self.mean);
        if self.n == 1 {
            self.max = v;
            self.min = v;
        } else {
            self.max = self.max.max(v);
            self.min = self.min.min(v);
        }
        if self.hist.is_empty() && self.exact.len() < EXACT_SAMPLES {
            self.exact.push(v);
            return;
        }
        for x in self.exact.drain(..) {
            *self.hist.entry(bucket(x)).or_insert(0) += 1;
        }
        *self.hist.entry(bucket(v)).or_insert(0) += 1;
    }

    /// Adds every sample of `other`.
    pub fn merge(&mut self, other: &Distribution) {
        if other.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = other.clone();
            return;
        }
        let n = self.n + other.n;
        let d = other.mean - self.mean;
        let mean = self.mean + d * other.n as f64 / n as f64;
        let m2 = self.m2 + other.m2 + d * d * self.n as f64 * other.n as f64 / n as f64;
        let (max, min) = (self.max.max(other.max), self.min.min(other.min));
        let (n0, mean0, m20) = (n, mean, m2);
        if self.hist.is_empty()
            && other.hist.is_empty()
            && self.exact.len() + other.exact.len() <= EXACT_SAMPLES
        {
            self.exact.extend_from_slice(&other.exact);
        } else {
            for x in self.exact.drain(..).chain(other.exact.iter().copied()) {
                *self.hist.entry(bucket(x)).or_insert(0) += 1;
            }
            for (b, c) in &other.hist {
                *self.hist.entry(*b).or_insert(0) += c;
            }
        }
        self.n = n0;
        self.mean = mean0;
        self.m2 = m20;
        self.max = max;
        self.min = min;
    }

    /// Samples added.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// Mean (0 without samples).
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// Population standard deviation.
    pub fn std_dev(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            (self.m2 / self.n as f64).max(0.0).sqrt()
        }
    }

    /// Largest sample.
    pub fn max(&self) -> f64 {
        self.max
    }

    /// Smallest sample.
    pub fn min(&self) -> f64 {
        self.min
    }

    /// The `q` quantile (nearest rank: the smallest sample with at least `q·n` samples at or
    /// below it); exact up to [`EXACT_SAMPLES`] samples, then a bucket midpoint (capped at the
    /// exact maximum).
    pub fn quantile(&self, q: f64) -> f64 {
        if self.n == 0 {
            return 0.0;
        }
        let rank = ((self.n as f64 * q).ceil() as u64).clamp(1, self.n);
        if self.hist.is_empty() {
            let mut s = self.exact.clone();
            s.sort_by(f64::total_cmp);
            return s[rank as usize - 1];
        }
        let mut seen = 0;
        for (b, c) in &self.hist {
            seen += c;
            if seen >= rank {
                return bucket_value(*b).clamp(self.min, self.max);
            }
        }
        self.max
    }

    /// True if quantiles are exact.
    pub fn is_exact(&self) -> bool {
        self.hist.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_below_the_limit_and_within_one_percent_above() {
        let mut d = Distribution::default();
        for i in 1..=100 {
            d.add(i as f64);
        }
        assert!(d.is_exact());
        assert_eq!(d.quantile(0.95), 95.0);
        assert_eq!(d.quantile(0.5), 50.0);
        assert_eq!(d.max(), 100.0);
        assert!((d.mean() - 50.5).abs() < 1e-12);
        // Population variance of 1..=100 is (100² − 1)/12.
        assert!((d.std_dev() - (9999.0f64 / 12.0).sqrt()).abs() < 1e-9);

        let mut big = Distribution::default();
        let n = 100_000;
        for i in 0..n {
            // A spread of magnitudes: 0.01 .. 1000.
            big.add(0.01 * 1.000_115_f64.powi(i));
        }
        assert!(!big.is_exact());
        let mut all: Vec<f64> = (0..n).map(|i| 0.01 * 1.000_115_f64.powi(i)).collect();
        all.sort_by(f64::total_cmp);
        for q in [0.01, 0.5, 0.95, 0.99] {
            let want = all[((n as f64 * q).ceil() as usize) - 1];
            let got = big.quantile(q);
            assert!((got - want).abs() <= want / 128.0, "q {q}: {got} vs {want}");
        }
        assert_eq!(big.max(), all[all.len() - 1]);
    }

    #[test]
    fn merge_equals_adding_everything() {
        let (mut a, mut b, mut all) = (
            Distribution::default(),
            Distribution::default(),
            Distribution::default(),
        );
        for i in 0..3000 {
            let v = (i * 37 % 1001) as f64 / 7.0;
            if i % 3 == 0 { &mut a } else { &mut b }.add(v);
            all.add(v);
        }
        a.merge(&b);
        assert_eq!(a.count(), all.count());
        assert!((a.mean() - all.mean()).abs() < 1e-9);
        assert!((a.std_dev() - all.std_dev()).abs() < 1e-9);
        assert_eq!(a.quantile(0.95), all.quantile(0.95));
        assert_eq!(a.max(), all.max());
    }
}
