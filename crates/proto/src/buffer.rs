//! Connection-level stream buffers.
//!
//! [`SendBuffer`] holds what the application wrote and the peer has not yet acknowledged
//! (cumulatively). [`RecvBuffer`] is the receive buffer of the papers: it holds out-of-order
//! and unread in-order bytes, and its size bounds how far ahead of the application the sender
//! may go (`max_data = read offset + capacity`) — the source of head-of-line blocking.

use crate::ranges::RangeSet;

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
    held: u64,
    dropped: u64,
    final_size: Option<u64>,
}

impl RecvBuffer {
    /// A receive buffer of `capacity` bytes.
    pub fn new(capacity: usize) -> Self {
        RecvBuffer {
            ring: vec![0; capacity.max(1)],
            read: 0,
            received: RangeSet::new(),
            held: 0,
            dropped: 0,
            final_size: None,
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
        Insert::Stored { new_bytes, dropped }
    }
    /// Copies up to `dst.len()` in-order bytes to `dst`; returns how many.
    pub fn read(&mut self, dst: &mut [u8]) -> usize {
        let n = (self.readable() as usize).min(dst.len());
        let cap = self.ring.len();
        let start = (self.read % cap as u64) as usize;
        let first = n.min(cap - start);
        dst[..first].copy_from_slice(&self.ring[start..start + first]);
        dst[first..n].copy_from_slice(&self.ring[..n - first]);
        self.consume(n as u64);
        n
    }
    /// Passes up to `max` in-order bytes to `f` (in at most two slices) without copying.
    pub fn read_with(&mut self, max: u64, mut f: impl FnMut(&[u8])) -> u64 {
        let n = self.readable().min(max) as usize;
        let cap = self.ring.len();
        let start = (self.read % cap as u64) as usize;
        let first = n.min(cap - start);
        f(&self.ring[start..start + first]);
        if n > first {
            f(&self.ring[..n - first]);
        }
        self.consume(n as u64);
        n as u64
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
