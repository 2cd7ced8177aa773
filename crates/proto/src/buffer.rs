//! Connection-level stream buffers.
//!
//! [`SendBuffer`] holds what the application wrote and the peer has not yet acknowledged
//! (cumulatively). [`RecvBuffer`] is the receive buffer of the papers: it holds out-of-order
//! and unread in-order bytes, and its size bounds how far ahead of the application the sender
//! may go (`max_data = read offset + capacity`) — the source of head-of-line blocking.

use crate::ranges::RangeSet;
use std::ops::Range;

/// Bytes written by the application, from the cumulative acknowledgement to the end.
#[derive(Debug, Clone)]
pub struct SendBuffer {
    ring: Vec<u8>,
    /// Offset of the first byte still held.
    base: u64,
    /// Offset one past the last byte written.
    end: u64,
}

impl SendBuffer {
    /// A buffer that holds at most `capacity` unacknowledged bytes.
    pub fn new(capacity: usize) -> Self {
        SendBuffer {
            ring: vec![0; capacity.max(1)],
            base: 0,
            end: 0,
        }
    }
    /// Capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.ring.len()
    }
    /// Offset of the oldest byte held (everything below was acknowledged).
    pub fn base(&self) -> u64 {
        self.base
    }
    /// Offset one past the last byte written.
    pub fn end(&self) -> u64 {
        self.end
    }
    /// Free space for new writes.
    pub fn free(&self) -> usize {
        self.ring.len() - (self.end - self.base) as usize
    }
    /// Appends as much of `data` as fits; returns the number of bytes taken.
    pub fn write(&mut self, data: &[u8]) -> usize {
        let n = data.len().min(self.free());
        let cap = self.ring.len();
        let start = (self.end % cap as u64) as usize;
        let first = n.min(cap - start);
        self.ring[start..start + first].copy_from_slice(&data[..first]);
        self.ring[..n - first].copy_from_slice(&data[first..n]);
        self.end += n as u64;
        n
    }
    /// Appends `n` bytes (at most the free space) written in place by `fill`, which is called
    /// once or twice (the ring may wrap) with consecutive slices. Returns the bytes appended.
    pub fn write_with(&mut self, n: usize, mut fill: impl FnMut(&mut [u8])) -> usize {
        let n = n.min(self.free());
        let cap = self.ring.len();
        let start = (self.end % cap as u64) as usize;
        let first = n.min(cap - start);
        fill(&mut self.ring[start..start + first]);
        if n > first {
            fill(&mut self.ring[..n - first]);
        }
        self.end += n as u64;
        n
    }
    /// Copies the bytes at `[offset, offset + dst.len())` into `dst`. Returns false (copying
    /// nothing) if that range is not held.
    pub fn copy_out(&self, offset: u64, dst: &mut [u8]) -> bool {
        if offset < self.base || offset + dst.len() as u64 > self.end {
            return false;
        }
        let cap = self.ring.len();
        let start = (offset % cap as u64) as usize;
        let first = dst.len().min(cap - start);
        dst[..first].copy_from_slice(&self.ring[start..start + first]);
        let rest = dst.len() - first;
        dst[first..].copy_from_slice(&self.ring[..rest]);
        true
    }
    /// Frees every byte below `offset` (the peer has them).
    pub fn release_to(&mut self, offset: u64) {
        self.base = self.base.max(offset.min(self.end));
    }
}

/// Why received stream bytes were not (all) accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Insert {
    /// Stored; `new_bytes` were not held before.
    Stored {
        /// Bytes not already held.
        new_bytes: u64,
        /// Bytes that fell outside the window (beyond `max_data`) and were dropped.
        dropped: u64,
    },
}

/// The receive buffer: reassembles stream bytes and releases them in order.
#[derive(Debug, Clone)]
pub struct RecvBuffer {
    ring: Vec<u8>,
    read: u64,
    received: RangeSet,
    /// Received ranges that hold no data (abandoned messages): reading skips them.
    skipped: RangeSet,
    held: u64,
    dropped: u64,
    final_size: Option<u64>,
    /// When set, the merged received ranges that inserts touched (for message completion).
    touched: Option<Vec<Range<u64>>>,
}

impl RecvBuffer {
    /// A receive buffer of `capacity` bytes.
    pub fn new(capacity: usize) -> Self {
        RecvBuffer {
            ring: vec![0; capacity.max(1)],
            read: 0,
            received: RangeSet::new(),
            skipped: RangeSet::new(),
            held: 0,
            dropped: 0,
            final_size: None,
            touched: None,
        }
    }
    /// Capacity in bytes.
    pub fn capacity(&self) -> u64 {
        self.ring.len() as u64
    }
    /// Offset of the next byte the application will read.
    pub fn read_offset(&self) -> u64 {
        self.read
    }
    /// Every byte below this offset has been received (the connection-level data ACK).
    pub fn contiguous_end(&self) -> u64 {
        match self.received.first() {
            Some(r) if r.start <= self.read => r.end,
            _ => self.read,
        }
    }
    /// The flow-control limit to advertise.
    pub fn max_data(&self) -> u64 {
        self.read + self.capacity()
    }
    /// Bytes held (in order but unread, and out of order).
    pub fn held(&self) -> u64 {
        self.held
    }
    /// In-order bytes ready for the application.
    pub fn readable(&self) -> u64 {
        self.contiguous_end() - self.read
    }
    /// Bytes that arrived beyond the window (or the final size) and were dropped.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
    /// The stream's final size, once known.
    pub fn final_size(&self) -> Option<u64> {
        self.final_size
    }
    /// Records the final size; false if it contradicts what was received or said before.
    pub fn set_final_size(&mut self, size: u64) -> bool {
        match self.final_size {
            Some(f) => f == size,
            None => {
                if self.received.max_end().unwrap_or(0) > size || size < self.read {
                    return false;
                }
                self.final_size = Some(size);
                true
            }
        }
    }
    /// True once the application has read the whole stream.
    pub fn is_finished(&self) -> bool {
        self.final_size == Some(self.read)
    }
    /// True if every byte of `[offset, offset+len)` is already held or read.
    pub fn has(&self, offset: u64, len: u64) -> bool {
        offset + len <= self.contiguous_end()
    }
    /// Stores `data` at stream `offset`, keeping only what lies inside the window
    /// `[read offset, max_data)` and, when known, below the final size.
    pub fn insert(&mut self, offset: u64, data: &[u8]) -> Insert {
        let len = data.len() as u64;
        let mut lo = offset.max(self.read);
        let mut hi = (offset + len).min(self.max_data());
        if let Some(f) = self.final_size {
            hi = hi.min(f);
        }
        let dropped = (offset + len).saturating_sub(hi.max(offset));
        self.dropped += dropped;
        if lo >= hi {
            return Insert::Stored {
                new_bytes: 0,
                dropped,
            };
        }
        // Skip what is already contiguous (common for duplicates).
        lo = lo.max(self.contiguous_end().min(hi));
        if lo < hi {
            let cap = self.ring.len();
            let src = &data[(lo - offset) as usize..(hi - offset) as usize];
            let start = (lo % cap as u64) as usize;
            let first = src.len().min(cap - start);
            self.ring[start..start + first].copy_from_slice(&src[..first]);
            self.ring[..src.len() - first].copy_from_slice(&src[first..]);
        }
        let new_bytes = self.received.insert(lo..hi);
        self.held += new_bytes;
        if new_bytes > 0 {
            self.touch(lo);
        }
        Insert::Stored { new_bytes, dropped }
    }
    /// Marks `[offset, offset + len)` as received without data (an abandoned message): the
    /// in-order point may pass it, and reading skips it. Bytes of it already held are
    /// discarded from reading too. Returns the bytes of the range that were not held before.
    pub fn skip(&mut self, offset: u64, len: u64) -> u64 {
        let lo = offset.max(self.read);
        let hi = offset.saturating_add(len);
        if lo >= hi {
            return 0;
        }
        self.skipped.insert(lo..hi);
        let new = self.received.insert(lo..hi);
        self.held += new;
        if new > 0 {
            self.touch(lo);
        }
        new
    }
    /// Starts (or stops) recording the merged ranges that inserts touch.
    pub(crate) fn track_touched(&mut self, on: bool) {
        if on != self.touched.is_some() {
            self.touched = on.then(Vec::new);
        }
    }
    /// The merged received ranges touched since the last call (empty unless tracking).
    pub(crate) fn take_touched(&mut self) -> Vec<Range<u64>> {
        match &mut self.touched {
            Some(t) => std::mem::take(t),
            None => Vec::new(),
        }
    }
    fn touch(&mut self, at: u64) {
        if let Some(t) = &mut self.touched {
            if let Some(r) = self.received.range_containing(at) {
                // A range that reaches the read point covers everything below it too.
                let start = if r.start <= self.read { 0 } else { r.start };
                t.push(start..r.end);
            }
        }
    }
    /// True if every byte of `[offset, offset + len)` is received (held, skipped or read).
    pub fn covers(&self, offset: u64, len: u64) -> bool {
        len == 0
            || offset + len <= self.read
            || self
                .received
                .contains_range(offset.max(self.read)..offset + len)
    }
    /// Copies up to `dst.len()` in-order bytes to `dst`, skipping abandoned ranges; returns
    /// how many were copied.
    pub fn read(&mut self, dst: &mut [u8]) -> usize {
        let mut n = 0;
        self.read_at(dst.len() as u64, |_, s| {
            dst[n..n + s.len()].copy_from_slice(s);
            n += s.len();
        });
        n
    }
    /// Passes up to `max` in-order bytes to `f` without copying, skipping abandoned ranges;
    /// returns how many were passed.
    pub fn read_with(&mut self, max: u64, mut f: impl FnMut(&[u8])) -> u64 {
        self.read_at(max, |_, s| f(s))
    }
    /// Passes up to `max` in-order bytes to `f` with their stream offsets, without copying;
    /// abandoned ranges are skipped (the read point passes them, `f` never sees them).
    /// Returns the data bytes passed.
    pub fn read_at(&mut self, max: u64, mut f: impl FnMut(u64, &[u8])) -> u64 {
        let mut passed = 0u64;
        loop {
            let end = self.contiguous_end();
            if self.read >= end {
                break;
            }
            // A skipped range at the read point is consumed without being passed.
            if let Some(r) = self.skipped.first().cloned() {
                if r.start <= self.read {
                    let to = r.end.min(end);
                    let n = to - self.read;
                    self.consume(n);
                    self.skipped.remove_below(self.read);
                    continue;
                }
            }
            if passed >= max {
                break;
            }
            let data_end = self.skipped.first().map_or(end, |r| r.start.min(end));
            let n = (data_end - self.read).min(max - passed) as usize;
            let cap = self.ring.len();
            let start = (self.read % cap as u64) as usize;
            let first = n.min(cap - start);
            f(self.read, &self.ring[start..start + first]);
            if n > first {
                f(self.read + first as u64, &self.ring[..n - first]);
            }
            self.consume(n as u64);
            passed += n as u64;
        }
        passed
    }
    fn consume(&mut self, n: u64) {
        self.read += n;
        self.held -= n;
        self.received.remove_below(self.read);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn send_buffer_wraps() {
        let mut b = SendBuffer::new(8);
        assert_eq!(b.write(b"abcdef"), 6);
        b.release_to(4);
        assert_eq!(b.write(b"ghijkl"), 6);
        assert_eq!(b.free(), 0);
        let mut out = [0u8; 8];
        assert!(b.copy_out(4, &mut out));
        assert_eq!(&out, b"efghijkl");
        assert!(!b.copy_out(2, &mut out[..2]));
    }

    #[test]
    fn recv_buffer_window_and_order() {
        let mut r = RecvBuffer::new(10);
        assert_eq!(
            r.insert(5, b"fghij"),
            Insert::Stored {
                new_bytes: 5,
                dropped: 0
            }
        );
        assert_eq!(r.readable(), 0);
        assert_eq!(r.held(), 5);
        // Beyond the window (max_data = 10): 3 bytes dropped.
        assert_eq!(
            r.insert(8, b"ijklm"),
            Insert::Stored {
                new_bytes: 0,
                dropped: 3
            }
        );
        assert_eq!(
            r.insert(0, b"abcde"),
            Insert::Stored {
                new_bytes: 5,
                dropped: 0
            }
        );
        let mut out = [0u8; 4];
        assert_eq!(r.read(&mut out), 4);
        assert_eq!(&out, b"abcd");
        assert_eq!(r.max_data(), 14);
        assert_eq!(
            r.insert(10, b"klmn"),
            Insert::Stored {
                new_bytes: 4,
                dropped: 0
            }
        );
        let mut all = Vec::new();
        r.read_with(u64::MAX, |s| all.extend_from_slice(s));
        assert_eq!(&all, b"efghijklmn");
        assert!(r.set_final_size(14));
        assert!(r.is_finished());
        assert!(!r.set_final_size(15));
    }

    proptest! {
        /// Any arrival order of any overlapping segments reassembles the original stream.
        #[test]
        fn reassembles(stream in proptest::collection::vec(any::<u8>(), 1..400),
                       cuts in proptest::collection::vec((0usize..400, 1usize..60), 1..80),
                       cap in 16usize..128) {
            let mut r = RecvBuffer::new(cap);
            let mut out = Vec::new();
            let mut segs: Vec<(usize, usize)> = cuts.into_iter()
                .map(|(a, l)| (a % stream.len(), l)).collect();
            // Make sure everything is covered eventually.
            let mut o = 0;
            while o < stream.len() { segs.push((o, 7)); o += 7; }
            for _round in 0..4 {
                for &(a, l) in &segs {
                    let end = (a + l).min(stream.len());
                    r.insert(a as u64, &stream[a..end]);
                    r.read_with(u64::MAX, |s| out.extend_from_slice(s));
                    prop_assert!(r.held() <= r.capacity());
                }
            }
            prop_assert_eq!(&out[..], &stream[..out.len()]);
            prop_assert_eq!(out.len(), stream.len());
        }
    }
}
