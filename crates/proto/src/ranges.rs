//! A set of non-overlapping half-open `u64` ranges.
//!
//! Used for received packet numbers (SACK state) and received stream bytes (reassembly). The
//! common case — inserting at or just past the highest range — is O(1).

use std::ops::Range;

/// Sorted, merged, non-adjacent half-open ranges.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeSet {
    ranges: Vec<Range<u64>>,
}

impl RangeSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of disjoint ranges.
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// True if the set holds nothing.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Adds `r`; returns how many values were not in the set before.
    pub fn insert(&mut self, r: Range<u64>) -> u64 {
        if r.start >= r.end {
            return 0;
        }
        // Fast path: at or beyond the end of the last range.
        if let Some(last) = self.ranges.last_mut() {
            if r.start >= last.start && r.start <= last.end {
                let added = r.end.saturating_sub(last.end);
                if r.end > last.end {
                    last.end = r.end;
                }
                return added;
            }
            if r.start > last.end {
                self.ranges.push(r.clone());
                return r.end - r.start;
            }
        } else {
            self.ranges.push(r.clone());
            return r.end - r.start;
        }
        // General case: find the first range whose end >= r.start (it may merge).
        let i = self.ranges.partition_point(|x| x.end < r.start);
        let mut j = i;
        let mut start = r.start;
        let mut end = r.end;
        let mut covered = 0;
        while j < self.ranges.len() && self.ranges[j].start <= end {
            let x = &self.ranges[j];
            covered += x.end.min(r.end).saturating_sub(x.start.max(r.start));
            start = start.min(x.start);
            end = end.max(x.end);
            j += 1;
        }
        self.ranges.splice(i..j, std::iter::once(start..end));
        (r.end - r.start) - covered
    }

    /// True if `v` is in the set.
    pub fn contains(&self, v: u64) -> bool {
        let i = self.ranges.partition_point(|x| x.end <= v);
        i < self.ranges.len() && self.ranges[i].start <= v
    }

    /// True if every value of `r` is in the set.
    pub fn contains_range(&self, r: Range<u64>) -> bool {
        if r.start >= r.end {
            return true;
        }
        let i = self.ranges.partition_point(|x| x.end <= r.start);
        i < self.ranges.len() && self.ranges[i].start <= r.start && self.ranges[i].end >= r.end
    }

    /// The range that contains `v`, if any.
    pub fn range_containing(&self, v: u64) -> Option<Range<u64>> {
        let i = self.ranges.partition_point(|x| x.end <= v);
        self.ranges.get(i).filter(|r| r.start <= v).cloned()
    }

    /// The start of the first range beginning after `v`, if any.
    pub fn next_start_after(&self, v: u64) -> Option<u64> {
        let i = self.ranges.partition_point(|x| x.start <= v);
        self.ranges.get(i).map(|r| r.start)
    }

    /// The smallest value, if any.
    pub fn min(&self) -> Option<u64> {
        self.ranges.first().map(|r| r.start)
    }

    /// One past the largest value, if any.
    pub fn max_end(&self) -> Option<u64> {
        self.ranges.last().map(|r| r.end)
    }

    /// The lowest range.
    pub fn first(&self) -> Option<&Range<u64>> {
        self.ranges.first()
    }

    /// Drops the lowest range (used to bound SACK state).
    pub fn pop_first(&mut self) -> Option<Range<u64>> {
        if self.ranges.is_empty() {
            None
        } else {
            Some(self.ranges.remove(0))
        }
    }

    /// Removes every value below `v`.
    pub fn remove_below(&mut self, v: u64) {
        let i = self.ranges.partition_point(|x| x.end <= v);
        self.ranges.drain(..i);
        if let Some(first) = self.ranges.first_mut() {
            if first.start < v {
                first.start = v;
            }
        }
    }

    /// Ranges in ascending order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Range<u64>> + ExactSizeIterator {
        self.ranges.iter()
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
        assert_eq!(s.iter().cloned().collect::<Vec<_>>(), vec![10..40]);
        assert_eq!(s.insert(0..5), 5);
        assert_eq!(s.insert(5..10), 5);
        assert_eq!(s.iter().cloned().collect::<Vec<_>>(), vec![0..40]);
        assert!(s.contains(0) && s.contains(39) && !s.contains(40));
        s.remove_below(12);
        assert_eq!(s.min(), Some(12));
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
            let rs: Vec<_> = s.iter().cloned().collect();
            for w in rs.windows(2) {
                prop_assert!(w[0].end < w[1].start);
            }
        }
    }
}
