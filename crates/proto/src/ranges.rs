//! A set of non-overlapping half-open `u64` ranges.
//!
//! Used for received packet numbers (SACK state), received stream bytes (reassembly), the
//! stream bytes sent once, and abandoned messages. The highest range is kept on its own: the
//! common case — extending it (in-order arrival), or trimming it from below when everything
//! under it was consumed — touches nothing else, and a set of one range allocates nothing.
//! The ranges below it live in a sorted ring buffer while they are few (at most
//! [`SMALL_MAX`]: a binary search and a short move, as cheap as it gets for the few holes of
//! normal reordering) and in a B-tree keyed by start once there are more, so every operation
//! costs O(log n) however a hostile peer fragments the set (an insert can never become
//! quadratic; the representation changes back below [`SMALL_BACK`], so switching costs O(1)
//! amortised). [`RangeSet::insert_bounded`] refuses to grow the set beyond a given number of
//! ranges (a bounded number of holes, as smoltcp's assembler).

use std::collections::{btree_map, vec_deque, BTreeMap, VecDeque};
use std::ops::Range;

/// Most ranges below the highest kept in the sorted ring buffer; one more moves them to the
/// B-tree.
pub const SMALL_MAX: usize = 32;
/// A B-tree that shrinks to this many ranges moves back to the ring buffer.
pub const SMALL_BACK: usize = 8;

/// The ranges below the highest: (start, end), sorted by start, disjoint, non-adjacent.
#[derive(Clone, Debug)]
enum Below {
    Small(VecDeque<(u64, u64)>),
    Large(BTreeMap<u64, u64>),
}

impl Default for Below {
    fn default() -> Self {
        Below::Small(VecDeque::new())
    }
}

impl Below {
    fn len(&self) -> usize {
        match self {
            Below::Small(v) => v.len(),
            Below::Large(m) => m.len(),
        }
    }
    fn first(&self) -> Option<(u64, u64)> {
        match self {
            Below::Small(v) => v.front().copied(),
            Below::Large(m) => m.first_key_value().map(|(&s, &e)| (s, e)),
        }
    }
    /// The range with the greatest start below `x`.
    fn last_before(&self, x: u64) -> Option<(u64, u64)> {
        match self {
            Below::Small(v) => {
                let i = v.partition_point(|&(s, _)| s < x);
                i.checked_sub(1).map(|i| v[i])
            }
            Below::Large(m) => m.range(..x).next_back().map(|(&s, &e)| (s, e)),
        }
    }
    /// The range with the smallest start in `[x, y]`.
    fn first_in(&self, x: u64, y: u64) -> Option<(u64, u64)> {
        match self {
            Below::Small(v) => {
                let i = v.partition_point(|&(s, _)| s < x);
                v.get(i).copied().filter(|&(s, _)| s <= y)
            }
            Below::Large(m) => m.range(x..=y).next().map(|(&s, &e)| (s, e)),
        }
    }
    /// Sets the range starting at `s` (new, or replacing the one with that start).
    fn insert(&mut self, s: u64, e: u64) {
        match self {
            Below::Small(v) => {
                let i = v.partition_point(|&(k, _)| k < s);
                match v.get_mut(i) {
                    Some(x) if x.0 == s => x.1 = e,
                    _ => v.insert(i, (s, e)),
                }
                if v.len() > SMALL_MAX {
                    *self = Below::Large(v.drain(..).collect());
                }
            }
            Below::Large(m) => {
                m.insert(s, e);
            }
        }
    }
    /// Removes the range starting at `s` (which must exist).
    fn remove(&mut self, s: u64) {
        match self {
            Below::Small(v) => {
                let i = v.partition_point(|&(k, _)| k < s);
                debug_assert!(v.get(i).is_some_and(|x| x.0 == s));
                v.remove(i);
            }
            Below::Large(m) => {
                m.remove(&s);
                self.shrink();
            }
        }
    }
    fn pop_first(&mut self) -> Option<(u64, u64)> {
        match self {
            Below::Small(v) => v.pop_front(),
            Below::Large(m) => {
                let r = m.pop_first();
                self.shrink();
                r
            }
        }
    }
    fn shrink(&mut self) {
        if let Below::Large(m) = self {
            if m.len() <= SMALL_BACK {
                *self = Below::Small(std::mem::take(m).into_iter().collect());
            }
        }
    }
    fn iter(&self) -> BelowIter<'_> {
        match self {
            Below::Small(v) => BelowIter::Small(v.iter()),
            Below::Large(m) => BelowIter::Large(m.iter()),
        }
    }
}

#[derive(Debug, Clone)]
enum BelowIter<'a> {
    Small(vec_deque::Iter<'a, (u64, u64)>),
    Large(btree_map::Iter<'a, u64, u64>),
}

impl BelowIter<'_> {
    fn next(&mut self) -> Option<(u64, u64)> {
        match self {
            BelowIter::Small(i) => i.next().copied(),
            BelowIter::Large(i) => i.next().map(|(&s, &e)| (s, e)),
        }
    }
    fn next_back(&mut self) -> Option<(u64, u64)> {
        match self {
            BelowIter::Small(i) => i.next_back().copied(),
            BelowIter::Large(i) => i.next_back().map(|(&s, &e)| (s, e)),
        }
    }
    fn len(&self) -> usize {
        match self {
            BelowIter::Small(i) => i.len(),
            BelowIter::Large(i) => i.len(),
        }
    }
}

/// Sorted, merged, non-adjacent half-open ranges.
#[derive(Clone, Debug, Default)]
pub struct RangeSet {
    /// Every range below `last`.
    below: Below,
    /// The highest range (start, end); `None` only when the set is empty. Every range in
    /// `below` ends before its start.
    last: Option<(u64, u64)>,
}

impl PartialEq for RangeSet {
    fn eq(&self, other: &Self) -> bool {
        self.last == other.last && self.iter().eq(other.iter())
    }
}

impl Eq for RangeSet {}

/// An insert would exceed the set's bound on ranges; nothing was inserted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooFragmented;

/// Iterator over a [`RangeSet`]'s ranges in ascending order.
#[derive(Debug, Clone)]
pub struct Iter<'a> {
    below: BelowIter<'a>,
    last: Option<(u64, u64)>,
}

impl Iterator for Iter<'_> {
    type Item = Range<u64>;
    fn next(&mut self) -> Option<Range<u64>> {
        match self.below.next() {
            Some((s, e)) => Some(s..e),
            None => self.last.take().map(|(s, e)| s..e),
        }
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.below.len() + usize::from(self.last.is_some());
        (n, Some(n))
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Range<u64>> {
        match self.last.take() {
            Some((s, e)) => Some(s..e),
            None => self.below.next_back().map(|(s, e)| s..e),
        }
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl RangeSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of disjoint ranges.
    #[inline]
    pub fn len(&self) -> usize {
        self.below.len() + usize::from(self.last.is_some())
    }

    /// True if the set holds nothing.
    pub fn is_empty(&self) -> bool {
        self.last.is_none()
    }

    /// Adds `r`; returns how many values were not in the set before.
    pub fn insert(&mut self, r: Range<u64>) -> u64 {
        self.insert_bounded(r, usize::MAX).unwrap_or(0)
    }

    /// Adds `r` unless that would leave more than `max_ranges` ranges (then nothing changes);
    /// returns how many values were not in the set before.
    ///
    /// Inlined for its common cases, in-order arrival: `r` starting within the highest
    /// range (that extends it and touches nothing else), or the set empty (a receive buffer
    /// whose bytes were all read). Every other case is `insert_other`, out of
    /// line.
    #[inline]
    pub fn insert_bounded(
        &mut self,
        r: Range<u64>,
        max_ranges: usize,
    ) -> Result<u64, TooFragmented> {
        if r.start < r.end {
            match &mut self.last {
                Some((s, e)) if r.start >= *s && r.start <= *e => {
                    let added = r.end.saturating_sub(*e);
                    *e = (*e).max(r.end);
                    return Ok(added);
                }
                last @ None if max_ranges > 0 => {
                    *last = Some((r.start, r.end));
                    return Ok(r.end - r.start);
                }
                _ => {}
            }
        }
        self.insert_other(r, max_ranges)
    }

    /// [`RangeSet::insert_bounded`] in the cases it does not inline: `r` empty, the set
    /// empty with no range allowed, or `r` not starting within the highest range.
    #[inline(never)]
    fn insert_other(&mut self, r: Range<u64>, max_ranges: usize) -> Result<u64, TooFragmented> {
        if r.start >= r.end {
            return Ok(0);
        }
        let Some((s, e)) = self.last else {
            debug_assert_eq!(max_ranges, 0, "insert_bounded stores into an empty set");
            return Err(TooFragmented);
        };
        debug_assert!(
            r.start < s || r.start > e,
            "insert_bounded extends the highest range"
        );
        if r.start > e {
            if self.len() >= max_ranges {
                return Err(TooFragmented);
            }
            self.below.insert(s, e);
            self.last = Some((r.start, r.end));
            return Ok(r.end - r.start);
        }
        if r.end >= s {
            // Below the highest range's start and reaching it: merged into it, with every
            // range below that starts within `r` (all end before `s`, so inside `r`) and the
            // one before `r.start` if it reaches it. Creates no range.
            let mut start = r.start;
            let mut covered = e.min(r.end) - s;
            while let Some((ms, me)) = self.below.first_in(r.start, s) {
                covered += me - ms;
                self.below.remove(ms);
            }
            if let Some((ps, pe)) = self.below.last_before(r.start) {
                if pe >= r.start {
                    covered += pe.min(r.end) - r.start;
                    start = ps;
                    self.below.remove(ps);
                }
            }
            self.last = Some((start, r.end.max(e)));
            return Ok((r.end - r.start) - covered);
        }
        // Wholly below the highest range, not touching it: merge with the range before
        // `r.start` if it reaches it and with every range starting within `r`.
        let pred = self
            .below
            .last_before(r.start)
            .filter(|&(_, pe)| pe >= r.start);
        if pred.is_none() && self.below.first_in(r.start, r.end).is_none() {
            if self.len() >= max_ranges {
                return Err(TooFragmented);
            }
            self.below.insert(r.start, r.end);
            return Ok(r.end - r.start);
        }
        let (mut start, mut end, mut covered) = (r.start, r.end, 0);
        if let Some((ps, pe)) = pred {
            covered += pe.min(r.end) - r.start;
            start = ps;
            end = end.max(pe);
        }
        while let Some((ms, me)) = self.below.first_in(r.start, r.end) {
            covered += me.min(r.end) - ms;
            end = end.max(me);
            self.below.remove(ms);
        }
        self.below.insert(start, end);
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
        let (ls, le) = self.last?;
        if v >= ls {
            return (v < le).then_some(ls..le);
        }
        let (s, e) = self.below.last_before(v.checked_add(1)?)?;
        (v < e).then_some(s..e)
    }

    /// The start of the first range beginning after `v`, if any.
    pub fn next_start_after(&self, v: u64) -> Option<u64> {
        let (ls, _) = self.last?;
        if ls <= v {
            return None;
        }
        let next = v
            .checked_add(1)
            .and_then(|x| self.below.first_in(x, u64::MAX));
        Some(next.map_or(ls, |(s, _)| s))
    }

    /// How many values of `r` are in the set.
    pub fn covered(&self, r: Range<u64>) -> u64 {
        let mut x = r.start;
        let mut n = 0;
        while x < r.end {
            if let Some(c) = self.range_containing(x) {
                let e = c.end.min(r.end);
                n += e - x;
                x = e;
            } else {
                match self.next_start_after(x) {
                    Some(s) if s < r.end => x = s,
                    _ => break,
                }
            }
        }
        n
    }

    /// The smallest value, if any.
    pub fn min(&self) -> Option<u64> {
        self.first().map(|r| r.start)
    }

    /// One past the largest value, if any.
    #[inline]
    pub fn max_end(&self) -> Option<u64> {
        self.last.map(|(_, e)| e)
    }

    /// The lowest range.
    #[inline]
    pub fn first(&self) -> Option<Range<u64>> {
        self.below.first().or(self.last).map(|(s, e)| s..e)
    }

    /// The highest range.
    #[inline]
    pub fn last(&self) -> Option<Range<u64>> {
        self.last.map(|(s, e)| s..e)
    }

    /// Drops the lowest range (used to bound SACK state).
    pub fn pop_first(&mut self) -> Option<Range<u64>> {
        match self.below.pop_first() {
            Some((s, e)) => Some(s..e),
            None => self.last.take().map(|(s, e)| s..e),
        }
    }

    /// Removes every value below `v`.
    ///
    /// Inlined for the common case, one range (an in-order receiver's packet numbers, a
    /// sender's stream sent in order): only the highest range is looked at. Every other
    /// case is `remove_below_other`, out of line.
    #[inline]
    pub fn remove_below(&mut self, v: u64) {
        if matches!(&self.below, Below::Small(b) if b.is_empty()) {
            self.trim_last_below(v);
        } else {
            self.remove_below_other(v);
        }
    }

    /// Removes the values below `v` from the highest range.
    #[inline]
    fn trim_last_below(&mut self, v: u64) {
        if let Some((s, e)) = self.last {
            if e <= v {
                self.last = None;
            } else if s < v {
                self.last = Some((v, e));
            }
        }
    }

    /// [`RangeSet::remove_below`] with ranges below the highest one.
    #[inline(never)]
    fn remove_below_other(&mut self, v: u64) {
        while let Some((s, e)) = self.below.first() {
            if e <= v {
                self.below.pop_first();
            } else {
                if s < v {
                    self.below.pop_first();
                    self.below.insert(v, e);
                }
                return;
            }
        }
        self.trim_last_below(v);
    }

    /// Removes the ranges that lie wholly below `v`; a range that straddles `v` stays whole
    /// (cheaper than [`RangeSet::remove_below`] for a reader that only needs the set above a
    /// moving point: in-order reading then never touches the ranges' storage).
    pub fn remove_ranges_below(&mut self, v: u64) {
        while let Some((_, e)) = self.below.first() {
            if e <= v {
                self.below.pop_first();
            } else {
                return;
            }
        }
        if self.last.is_some_and(|(_, e)| e <= v) {
            self.last = None;
        }
    }

    /// Ranges in ascending order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            below: self.below.iter(),
            last: self.last,
        }
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
    fn remove_ranges_below_keeps_a_straddling_range_whole() {
        let mut s = RangeSet::new();
        s.insert(0..10);
        s.insert(20..30);
        s.insert(40..50);
        s.remove_ranges_below(25);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![20..30, 40..50]);
        s.remove_ranges_below(30);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![40..50]);
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
    fn switches_to_the_tree_and_back() {
        let mut s = RangeSet::new();
        for i in 0..100u64 {
            s.insert(10 * i..10 * i + 5);
        }
        assert!(matches!(s.below, Below::Large(_)));
        assert_eq!(s.len(), 100);
        s.remove_below(950);
        assert!(matches!(s.below, Below::Small(_)));
        assert_eq!(
            s.iter().collect::<Vec<_>>(),
            vec![950..955, 960..965, 970..975, 980..985, 990..995]
        );
        // Filling every hole merges all into the highest range.
        assert_eq!(s.insert(900..1000), 100 - 25);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![900..1000]);
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

    /// A plain model: a sorted vector of merged, non-adjacent ranges, rebuilt naively.
    #[derive(Default, Clone)]
    struct Model(Vec<(u64, u64)>);

    impl Model {
        fn insert_bounded(&mut self, r: Range<u64>, max: usize) -> Result<u64, TooFragmented> {
            if r.start >= r.end {
                return Ok(0);
            }
            let touching = self
                .0
                .iter()
                .filter(|&&(s, e)| e >= r.start && s <= r.end)
                .count();
            if touching == 0 && self.0.len() >= max {
                return Err(TooFragmented);
            }
            let before: u64 = self.0.iter().map(|(s, e)| e - s).sum();
            let (mut s0, mut e0) = (r.start, r.end);
            self.0.retain(|&(s, e)| {
                if e >= r.start && s <= r.end {
                    s0 = s0.min(s);
                    e0 = e0.max(e);
                    false
                } else {
                    true
                }
            });
            self.0.push((s0, e0));
            self.0.sort();
            let after: u64 = self.0.iter().map(|(s, e)| e - s).sum();
            Ok(after - before)
        }
    }

    proptest! {
        /// Every operation agrees with the plain model, including the bound on ranges and
        /// the operations that touch the highest range (kept outside the tree).
        #[test]
        fn matches_a_plain_model(
            ops in proptest::collection::vec((0u8..6, 0u64..300, 0u64..40), 0..120),
            max in 1usize..8,
            small in proptest::bool::ANY,
            many in proptest::collection::vec((0u8..6, 0u64..900, 0u64..8), 0..400),
            big_max in 1usize..100,
        ) {
            // Few wide ranges and a small bound, or many narrow ones (the B-tree and the
            // switches between representations).
            let (ops, max) = if small { (ops, max) } else { (many, big_max) };
            let mut s = RangeSet::new();
            let mut m = Model::default();
            for (op, a, l) in ops {
                match op {
                    0..=2 => prop_assert_eq!(s.insert_bounded(a..a + l, max), m.insert_bounded(a..a + l, max)),
                    3 => {
                        s.remove_below(a);
                        m.0.retain(|&(_, e)| e > a);
                        for r in &mut m.0 { r.0 = r.0.max(a); }
                    }
                    4 => {
                        s.remove_ranges_below(a);
                        m.0.retain(|&(_, e)| e > a);
                    }
                    _ => {
                        let want = (!m.0.is_empty()).then(|| m.0.remove(0)).map(|(s, e)| s..e);
                        prop_assert_eq!(s.pop_first(), want);
                    }
                }
                let want: Vec<Range<u64>> = m.0.iter().map(|&(s, e)| s..e).collect();
                prop_assert_eq!(s.iter().collect::<Vec<_>>(), want.clone());
                prop_assert_eq!(s.iter().rev().collect::<Vec<_>>(), want.iter().rev().cloned().collect::<Vec<_>>());
                prop_assert_eq!(s.iter().len(), want.len());
                prop_assert_eq!(s.len(), want.len());
                prop_assert_eq!(s.is_empty(), want.is_empty());
                prop_assert_eq!(s.first(), want.first().cloned());
                prop_assert_eq!(s.last(), want.last().cloned());
                prop_assert_eq!(s.min(), want.first().map(|r| r.start));
                prop_assert_eq!(s.max_end(), want.last().map(|r| r.end));
                for v in [a, a + l, a.saturating_sub(1), 0, 150, 340] {
                    let cont = want.iter().find(|r| r.contains(&v)).cloned();
                    prop_assert_eq!(s.range_containing(v), cont);
                    let next = want.iter().map(|r| r.start).find(|&st| st > v);
                    prop_assert_eq!(s.next_start_after(v), next);
                    let span = v..v + l;
                    let covered = span.is_empty() || want.iter().any(|r| r.start <= span.start && span.end <= r.end);
                    prop_assert_eq!(s.contains_range(span.clone()), covered);
                    let count: u64 = want
                        .iter()
                        .map(|r| r.end.min(span.end).saturating_sub(r.start.max(span.start)))
                        .sum();
                    prop_assert_eq!(s.covered(span.start..span.end + 3 * l), count + want
                        .iter()
                        .map(|r| r.end.min(span.end + 3 * l).saturating_sub(r.start.max(span.end)))
                        .sum::<u64>());
                    prop_assert_eq!(s.covered(span), count);
                }
            }
        }

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
