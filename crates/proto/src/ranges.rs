//! A set of non-overlapping half-open `u64` ranges.
//!
//! Used for received packet numbers (SACK state), received stream bytes (reassembly), the
//! stream bytes sent once, and abandoned messages. Ranges live in a B-tree keyed by their
//! start, so every operation costs O(log n) in the number of ranges (a hostile peer that
//! fragments the set cannot make an insert quadratic), and the common case — extending the
//! highest range — touches only the tree's last entry. [`RangeSet::insert_bounded`] refuses
//! to grow the set beyond a given number of ranges (a bounded number of holes, as smoltcp's
//! assembler).

use std::collections::BTreeMap;
use std::ops::Range;

/// Sorted, merged, non-adjacent half-open ranges.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeSet {
    /// start → end.
    map: BTreeMap<u64, u64>,
}

/// An insert would exceed the set's bound on ranges; nothing was inserted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooFragmented;

impl RangeSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of disjoint ranges.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True if the set holds nothing.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Adds `r`; returns how many values were not in the set before.
    pub fn insert(&mut self, r: Range<u64>) -> u64 {
        self.insert_bounded(r, usize::MAX).unwrap_or(0)
    }

    /// Adds `r` unless that would leave more than `max_ranges` ranges (then nothing changes);
    /// returns how many values were not in the set before.
    pub fn insert_bounded(
        &mut self,
        r: Range<u64>,
        max_ranges: usize,
    ) -> Result<u64, TooFragmented> {
        if r.start >= r.end {
            return Ok(0);
        }
        // Fast path: at or beyond the start of the highest range.
        if let Some(mut last) = self.map.last_entry() {
            let (s, e) = (*last.key(), *last.get());
            if r.start >= s && r.start <= e {
                let added = r.end.saturating_sub(e);
                if r.end > e {
                    *last.get_mut() = r.end;
                }
                return Ok(added);
            }
            if r.start > e {
                if self.map.len() >= max_ranges {
                    return Err(TooFragmented);
                }
                self.map.insert(r.start, r.end);
                return Ok(r.end - r.start);
            }
        }
        // General case: merge with the range before (if it reaches r.start) and every range
        // starting within r (or right after it).
        let mut start = r.start;
        let mut end = r.end;
        let mut covered = 0;
        if let Some((&s, &e)) = self.map.range(..r.start).next_back() {
            if e >= r.start {
                covered += e.min(r.end).saturating_sub(r.start);
                start = s;
                end = end.max(e);
            }
        }
        let merged: Vec<(u64, u64)> = self
            .map
            .range(r.start..=r.end)
            .map(|(&s, &e)| (s, e))
            .collect();
        let creates = start == r.start && merged.is_empty();
        if creates && self.map.len() >= max_ranges {
            return Err(TooFragmented);
        }
        for &(s, e) in &merged {
            covered += e.min(r.end).saturating_sub(s.max(r.start));
            end = end.max(e);
            self.map.remove(&s);
        }
        self.map.insert(start, end);
        Ok((r.end - r.start) - covered)
    }

    /// True if `v` is in the set.
    pub fn contains(&self, v: u64) -> bool {
        self.range_containing(v).is_some()
    }

    /// True if every value of `r` is in the set.
    pub fn contains_range(&self, r: Range<u64>) -> bool {
        if r.start >= r.end {
            return true;
        }
        self.range_containing(r.start)
            .is_some_and(|x| x.end >= r.end)
    }

    /// The range that contains `v`, if any.
    pub fn range_containing(&self, v: u64) -> Option<Range<u64>> {
        let (&s, &e) = self.map.range(..=v).next_back()?;
        (v < e).then_some(s..e)
    }

    /// The start of the first range beginning after `v`, if any.
    pub fn next_start_after(&self, v: u64) -> Option<u64> {
        self.map
            .range((std::ops::Bound::Excluded(v), std::ops::Bound::Unbounded))
            .next()
            .map(|(&s, _)| s)
    }

    /// The smallest value, if any.
    pub fn min(&self) -> Option<u64> {
        self.map.keys().next().copied()
    }

    /// One past the largest value, if any.
    pub fn max_end(&self) -> Option<u64> {
        self.map.values().next_back().copied()
    }

    /// The lowest range.
    pub fn first(&self) -> Option<Range<u64>> {
        self.map.first_key_value().map(|(&s, &e)| s..e)
    }

    /// The highest range.
    pub fn last(&self) -> Option<Range<u64>> {
        self.map.last_key_value().map(|(&s, &e)| s..e)
    }

    /// Drops the lowest range (used to bound SACK state).
    pub fn pop_first(&mut self) -> Option<Range<u64>> {
        self.map.pop_first().map(|(s, e)| s..e)
    }

    /// Removes every value below `v`.
    pub fn remove_below(&mut self, v: u64) {
        while let Some(first) = self.map.first_entry() {
            let (s, e) = (*first.key(), *first.get());
            if e <= v {
                first.remove();
            } else {
                if s < v {
                    first.remove();
                    self.map.insert(v, e);
                }
                break;
            }
        }
    }

    /// Ranges in ascending order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = Range<u64>> + ExactSizeIterator + '_ {
        self.map.iter().map(|(&s, &e)| s..e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn merges_and_counts() {
        let mut s = RangeSet::new();
        assert_eq!(s.insert(10..20), 10);
        assert_eq!(s.insert(30..40), 10);
        assert_eq!(s.insert(15..35), 10);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![10..40]);
        assert_eq!(s.insert(0..5), 5);
        assert_eq!(s.insert(5..10), 5);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![0..40]);
        assert!(s.contains(0) && s.contains(39) && !s.contains(40));
        s.remove_below(12);
        assert_eq!(s.min(), Some(12));
    }

    #[test]
    fn bounded_inserts_refuse_new_holes_only() {
        let mut s = RangeSet::new();
        for i in 0..4 {
            assert_eq!(s.insert_bounded(i * 10..i * 10 + 5, 4), Ok(5));
        }
        // A fifth separate range is refused; growing or merging existing ones is not.
        assert_eq!(s.insert_bounded(100..101, 4), Err(TooFragmented));
        assert_eq!(s.insert_bounded(2..3, 4), Ok(0));
        assert_eq!(s.insert_bounded(5..7, 4), Ok(2));
        assert_eq!(s.insert_bounded(7..10, 4), Ok(3));
        assert_eq!(s.len(), 3);
        assert_eq!(s.insert_bounded(100..101, 4), Ok(1));
    }

    #[test]
    fn falling_inserts_stay_cheap() {
        // Ranges inserted from the top down, each leaving a hole: the pattern that made the
        // previous vector-based set quadratic. 200 000 of them must not take long (a bound
        // on work, not a timing: it runs in well under a second even unoptimised).
        let mut s = RangeSet::new();
        for i in (0..200_000u64).rev() {
            s.insert(2 * i..2 * i + 1);
        }
        assert_eq!(s.len(), 200_000);
        assert!(s.contains(0) && !s.contains(1));
    }

    proptest! {
        #[test]
        fn matches_a_bitmap(ops in proptest::collection::vec((0u64..200, 0u64..30), 0..60)) {
            let mut s = RangeSet::new();
            let mut bits = vec![false; 256];
            for (a, l) in ops {
                let before = bits.iter().filter(|b| **b).count() as u64;
                let added = s.insert(a..a + l);
                for b in &mut bits[a as usize..(a + l) as usize] { *b = true; }
                let after = bits.iter().filter(|b| **b).count() as u64;
                prop_assert_eq!(added, after - before);
            }
            for (v, b) in bits.iter().enumerate() {
                prop_assert_eq!(s.contains(v as u64), *b);
            }
            let rs: Vec<_> = s.iter().collect();
            for w in rs.windows(2) {
                prop_assert!(w[0].end < w[1].start);
            }
            // remove_below agrees with the bitmap too.
            let mut t = s.clone();
            t.remove_below(100);
            for v in 0..256u64 {
                prop_assert_eq!(t.contains(v), v >= 100 && bits[v as usize]);
            }
        }
    }
}
