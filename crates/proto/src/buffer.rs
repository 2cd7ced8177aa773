//! Connection-level stream buffers.
//!
//! [`SendBuffer`] holds what the application wrote and the peer has not yet acknowledged
//! (cumulatively). [`RecvBuffer`] is the receive buffer of the papers: it holds out-of-order
//! and unread in-order bytes, and its size bounds how far ahead of the application the sender
//! may go (`max_data = read offset + capacity`) — the source of head-of-line blocking.
//!
//! Both store bytes in chunks of [`CHUNK`] bytes allocated when bytes first land in them and
//! released once acknowledged (send) or read (receive): memory follows the data in flight,
//! not the configured sizes, which are limits. The receive buffer also bounds the number of
//! holes in what it holds (see [`RecvBuffer::max_holes`]): a peer cannot make its
//! bookkeeping grow without bound, and each insert costs O(log holes).

use crate::ranges::RangeSet;
use std::collections::VecDeque;
use std::ops::Range;

/// Bytes per storage chunk.
pub const CHUNK: usize = 16 * 1024;
const CHUNK64: u64 = CHUNK as u64;

fn new_chunk(spare: &mut Vec<Box<[u8]>>) -> Box<[u8]> {
    spare
        .pop()
        .unwrap_or_else(|| vec![0u8; CHUNK].into_boxed_slice())
}

/// Chunks kept for reuse instead of being freed and allocated again: at least this many, and
/// up to the most chunks a buffer has held at once less those it holds now, so its storage never
/// exceeds that peak (plus this many). A scheme that frees a large block at once (`hmtp`
/// releases a whole chunk of ≈ 1.4 MB when it is acknowledged or read) then takes its storage
/// back from the spares instead of freeing it, allocating it again and zeroing it.
const SPARE_CHUNKS: usize = 2;

/// Whether a freed chunk is kept for reuse (see [`SPARE_CHUNKS`]), with `spare` kept already,
/// `held` chunks still in use and `peak` the most ever in use at once.
fn keep_spare(spare: usize, held: usize, peak: usize) -> bool {
    spare < SPARE_CHUNKS.max(peak.saturating_sub(held))
}

/// An application stream whose bytes are a function of their offset (a generated test
/// stream, a file mapped in memory): given to a connection
/// ([`crate::Connection::set_stream_source`]), it lets the send buffer produce each byte when a
/// scheme reads it for sending instead of storing what the application wrote, so a sender holds
/// no copy of the data in flight or written ahead.
pub trait StreamSource: Send + Sync + std::fmt::Debug {
    /// Writes the stream's bytes at `[offset, offset + dst.len())` into `dst`; the same
    /// bytes every time.
    fn fill(&self, offset: u64, dst: &mut [u8]);
}

/// Why a stream source was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SourceError {
    /// Bytes were written before: a stream's bytes come from one place from its start.
    #[error("a stream source must be set before any byte is written ({written} written)")]
    AlreadyWritten {
        /// Bytes written so far.
        written: u64,
    },
}

/// The stream a receiver expects, as a function of the offset (a generated test stream):
/// given to a connection ([`crate::Connection::set_stream_check`]), it lets the receive buffer
/// check in-order bytes as they arrive and store none of those that match. Reading passes
/// such bytes as [`ReadPiece::Checked`] ([`RecvBuffer::read_pieces`]), or produces them again
/// with [`StreamSource::fill`] for the readers that take bytes ([`RecvBuffer::read_at`]).
/// Bytes that do not match, and bytes that arrive out of order, are stored as without a check.
pub trait StreamCheck: StreamSource {
    /// Whether `data` is the stream's bytes at `[offset, offset + data.len())`; by default
    /// [`StreamSource::fill`] and a comparison.
    fn matches(&self, offset: u64, data: &[u8]) -> bool {
        produce(self, offset, data.len() as u64, |at, want| {
            let from = (at - offset) as usize;
            *want == data[from..from + want.len()]
        })
    }
}

/// Produces the `n` bytes of `src` from `offset` in pieces of at most 1 KiB (on the stack),
/// passing each to `f` with its offset; stops at the first piece `f` answers `false` for and
/// returns whether none was.
fn produce<S: StreamSource + ?Sized>(
    src: &S,
    offset: u64,
    n: u64,
    mut f: impl FnMut(u64, &[u8]) -> bool,
) -> bool {
    let mut buf = [0u8; 1024];
    let mut done = 0;
    while done < n {
        let m = (n - done).min(buf.len() as u64) as usize;
        src.fill(offset + done, &mut buf[..m]);
        if !f(offset + done, &buf[..m]) {
            return false;
        }
        done += m as u64;
    }
    true
}

/// A piece of in-order bytes passed by [`RecvBuffer::read_pieces`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadPiece<'a> {
    /// Stored bytes.
    Bytes(&'a [u8]),
    /// This many bytes that arrived in order and matched the buffer's [`StreamCheck`]: they
    /// are the stream's bytes, not stored.
    Checked(u64),
}

/// Bytes written by the application, from the cumulative acknowledgement to the end.
///
/// With a [`StreamSource`] the bytes are not stored: [`SendBuffer::copy_out`] produces them
/// from the source. Debug builds (the tests') store them anyway and check every copy against
/// the source, so the storage path keeps being exercised wherever the source is used.
#[derive(Debug, Clone)]
pub struct SendBuffer {
    /// Chunk i holds offsets `[chunk_base + i·CHUNK, chunk_base + (i+1)·CHUNK)`.
    chunks: VecDeque<Box<[u8]>>,
    chunk_base: u64,
    /// Offset of the first byte still held.
    base: u64,
    /// Offset one past the last byte written.
    end: u64,
    limit: usize,
    spare: Vec<Box<[u8]>>,
    /// Most chunks held at once.
    peak: usize,
    /// One past the highest byte ever copied out for sending (a `Cell` because copying out
    /// is a read): the bytes above it were written but never sent.
    frontier: std::cell::Cell<u64>,
    /// The application's stream, when its bytes are a function of their offset.
    source: Option<std::sync::Arc<dyn StreamSource>>,
    /// Whether, with a source, the bytes are stored as well, to check every copy against the
    /// source: in debug builds (the tests').
    store_sourced: bool,
}

impl SendBuffer {
    /// A buffer that holds at most `capacity` unacknowledged bytes (nothing is allocated
    /// until bytes are written).
    pub fn new(capacity: usize) -> Self {
        SendBuffer {
            chunks: VecDeque::new(),
            chunk_base: 0,
            base: 0,
            end: 0,
            limit: capacity.max(1),
            spare: Vec::new(),
            peak: 0,
            frontier: std::cell::Cell::new(0),
            source: None,
            store_sourced: cfg!(debug_assertions),
        }
    }
    /// Takes the stream's bytes from `source` from now on (see [`StreamSource`]); refused once
    /// a byte was written.
    pub fn set_source(
        &mut self,
        source: std::sync::Arc<dyn StreamSource>,
    ) -> Result<(), SourceError> {
        if self.end > 0 {
            return Err(SourceError::AlreadyWritten { written: self.end });
        }
        self.source = Some(source);
        Ok(())
    }
    /// Whether the bytes come from a [`StreamSource`].
    pub fn has_source(&self) -> bool {
        self.source.is_some()
    }
    /// Capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.limit
    }
    /// Bytes written that no scheme has copied out yet (never sent, never encoded).
    pub fn unsent(&self) -> usize {
        (self.end - self.frontier.get().max(self.base)) as usize
    }
    /// Changes the capacity (bytes already held stay, even above a smaller capacity).
    pub fn set_capacity(&mut self, capacity: usize) {
        self.limit = capacity.max(1);
    }
    /// Offset of the oldest byte held (everything below was acknowledged).
    pub fn base(&self) -> u64 {
        self.base
    }
    /// Offset one past the last byte written.
    pub fn end(&self) -> u64 {
        self.end
    }
    /// Bytes held.
    pub fn held(&self) -> usize {
        (self.end - self.base) as usize
    }
    /// Free space for new writes.
    pub fn free(&self) -> usize {
        self.limit.saturating_sub(self.held())
    }
    /// Bytes of storage allocated now.
    pub fn allocated(&self) -> usize {
        (self.chunks.len() + self.spare.len()) * CHUNK
    }
    /// Appends as much of `data` as fits; returns the number of bytes taken.
    pub fn write(&mut self, data: &[u8]) -> usize {
        let mut at = 0;
        self.write_with(data.len(), |dst| {
            dst.copy_from_slice(&data[at..at + dst.len()]);
            at += dst.len();
        })
    }
    /// Appends the next `n` bytes of the stream source (at most the free space); returns the
    /// bytes appended: 0 without a source.
    pub fn write_from_source(&mut self, n: usize) -> usize {
        match &self.source {
            None => 0,
            Some(_) if !self.store_sourced => {
                let n = n.min(self.free());
                self.end += n as u64;
                n
            }
            Some(source) => {
                let source = source.clone();
                let mut at = self.end;
                self.store_with(n, |dst| {
                    source.fill(at, dst);
                    at += dst.len() as u64;
                })
            }
        }
    }
    /// Appends `n` bytes (at most the free space) written in place by `fill`, which is called
    /// with consecutive slices (one per storage chunk touched). Returns the bytes appended: 0
    /// when the bytes come from a stream source ([`SendBuffer::write_from_source`]).
    pub fn write_with(&mut self, n: usize, fill: impl FnMut(&mut [u8])) -> usize {
        if self.source.is_some() {
            return 0;
        }
        self.store_with(n, fill)
    }
    fn store_with(&mut self, n: usize, mut fill: impl FnMut(&mut [u8])) -> usize {
        let n = n.min(self.free());
        let mut left = n;
        while left > 0 {
            let pos = self.end - self.chunk_base;
            let idx = (pos / CHUNK64) as usize;
            let off = (pos % CHUNK64) as usize;
            if idx == self.chunks.len() {
                let c = new_chunk(&mut self.spare);
                self.chunks.push_back(c);
                self.peak = self.peak.max(self.chunks.len());
            }
            let m = left.min(CHUNK - off);
            fill(&mut self.chunks[idx][off..off + m]);
            self.end += m as u64;
            left -= m;
        }
        n
    }
    /// Copies the bytes at `[offset, offset + dst.len())` into `dst`. Returns false (copying
    /// nothing) if that range is not held.
    pub fn copy_out(&self, offset: u64, dst: &mut [u8]) -> bool {
        if !self.take_uncopied(offset, dst.len() as u64) {
            return false;
        }
        if let Some(source) = &self.source {
            source.fill(offset, dst);
            if self.store_sourced {
                self.stored(offset, dst.len(), |at, s| {
                    assert!(
                        dst[at..at + s.len()] == *s,
                        "stream source and stored bytes differ in [{offset}, +{})",
                        dst.len()
                    );
                });
            }
            return true;
        }
        self.stored(offset, dst.len(), |at, s| {
            dst[at..at + s.len()].copy_from_slice(s);
        });
        true
    }
    /// Passes the stored bytes of `[offset, offset + len)` to `f`, one slice per chunk, with
    /// each slice's position in the range.
    fn stored(&self, offset: u64, len: usize, mut f: impl FnMut(usize, &[u8])) {
        let mut done = 0;
        while done < len {
            let pos = offset + done as u64 - self.chunk_base;
            let (idx, off) = ((pos / CHUNK64) as usize, (pos % CHUNK64) as usize);
            let m = (len - done).min(CHUNK - off);
            f(done, &self.chunks[idx][off..off + m]);
            done += m;
        }
    }
    /// Takes `[offset, offset + len)` for sending without copying it (a scheme that reads
    /// the bytes later, while this buffer still holds them): counts them as copied out, as
    /// [`SendBuffer::copy_out`] would. Returns false (taking nothing) if the range is not held.
    pub fn take_uncopied(&self, offset: u64, len: u64) -> bool {
        if offset < self.base || offset + len > self.end {
            return false;
        }
        if offset + len > self.frontier.get() {
            self.frontier.set(offset + len);
        }
        true
    }
    /// Frees every byte below `offset` (the peer has them).
    pub fn release_to(&mut self, offset: u64) {
        self.base = self.base.max(offset.min(self.end));
        while !self.chunks.is_empty() && self.chunk_base + CHUNK64 <= self.base {
            if let Some(c) = self.chunks.pop_front() {
                if keep_spare(self.spare.len(), self.chunks.len(), self.peak) {
                    self.spare.push(c);
                }
            }
            self.chunk_base += CHUNK64;
        }
        if self.chunks.is_empty() {
            // Nothing held from the next chunk boundary on: restart the storage there.
            self.chunk_base = self.base - self.base % CHUNK64;
        }
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
    /// Not stored: holding it would leave more than [`RecvBuffer::max_holes`] holes.
    TooFragmented,
}

/// The receive buffer: reassembles stream bytes and releases them in order.
#[derive(Debug, Clone)]
pub struct RecvBuffer {
    /// Chunk i holds offsets `[chunk_base + i·CHUNK, ...)`; `None` until a byte lands in it.
    chunks: VecDeque<Option<Box<[u8]>>>,
    chunk_base: u64,
    capacity: u64,
    read: u64,
    received: RangeSet,
    /// Received ranges that hold no data (abandoned messages): reading skips them.
    skipped: RangeSet,
    held: u64,
    dropped: u64,
    fragment_drops: u64,
    max_holes: usize,
    final_size: Option<u64>,
    /// When set, the merged received ranges that inserts touched (for message completion).
    touched: Option<Vec<Range<u64>>>,
    spare: Vec<Box<[u8]>>,
    /// Chunks allocated in `chunks` now, and the most at once.
    live: usize,
    peak: usize,
    /// The stream expected, if known: in-order bytes that match it are not stored.
    check: Option<std::sync::Arc<dyn StreamCheck>>,
    /// The bytes of `[read, checked_end)` arrived in order, matched `check` and are not
    /// stored (none when `checked_end <= read`). They are received, so `checked_end` never
    /// passes the contiguous end.
    checked_end: u64,
}

impl RecvBuffer {
    /// A receive buffer of `capacity` bytes (nothing is allocated until bytes arrive).
    pub fn new(capacity: usize) -> Self {
        RecvBuffer {
            chunks: VecDeque::new(),
            chunk_base: 0,
            capacity: capacity.max(1) as u64,
            read: 0,
            received: RangeSet::new(),
            skipped: RangeSet::new(),
            held: 0,
            dropped: 0,
            fragment_drops: 0,
            // One hole per 512 bytes of window: more than a sender of full segments can
            // cause (one per segment lost), few enough to bound the bookkeeping.
            max_holes: (capacity / 512).clamp(64, 1 << 16),
            final_size: None,
            touched: None,
            spare: Vec::new(),
            live: 0,
            peak: 0,
            check: None,
            checked_end: 0,
        }
    }
    /// Checks in-order bytes against `check` as they arrive from now on, storing none of those
    /// that match (see [`StreamCheck`]).
    pub fn set_check(&mut self, check: std::sync::Arc<dyn StreamCheck>) {
        self.check = Some(check);
    }
    /// Capacity in bytes.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }
    /// Most separate ranges of bytes held at once (so at most that many holes); data that
    /// would exceed it is dropped ([`RecvBuffer::fragment_drops`]).
    pub fn max_holes(&self) -> usize {
        self.max_holes
    }
    /// Bytes of storage allocated now.
    pub fn allocated(&self) -> usize {
        (self.chunks.iter().flatten().count() + self.spare.len()) * CHUNK
    }
    /// Offset of the next byte the application will read.
    pub fn read_offset(&self) -> u64 {
        self.read
    }
    /// Every byte below this offset has been received (the connection-level data ACK).
    #[inline]
    pub fn contiguous_end(&self) -> u64 {
        match self.received.first() {
            Some(r) if r.start <= self.read => r.end,
            _ => self.read,
        }
    }
    /// The flow-control limit to advertise.
    pub fn max_data(&self) -> u64 {
        self.read + self.capacity
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
    /// Bytes dropped because holding them would exceed [`RecvBuffer::max_holes`].
    pub fn fragment_drops(&self) -> u64 {
        self.fragment_drops
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
        let end = offset + len;
        // The common case, in-order arrival: the bytes extend the highest range held (or
        // start a first one at or above the read point), inside the window and the final
        // size, so all of them are stored and none dropped; the general bounds below give
        // the same.
        let (lo, hi, dropped) = if len > 0
            && offset >= self.read
            && end <= self.max_data()
            && self.final_size.is_none_or(|f| end <= f)
            && self.received.max_end().is_none_or(|e| e == offset)
        {
            (offset, end, 0)
        } else {
            let mut lo = offset.max(self.read);
            let mut hi = end.min(self.max_data());
            if let Some(f) = self.final_size {
                hi = hi.min(f);
            }
            let dropped = end.saturating_sub(hi.max(offset));
            self.dropped += dropped;
            if lo >= hi {
                return Insert::Stored {
                    new_bytes: 0,
                    dropped,
                };
            }
            // Skip what is already contiguous (common for duplicates).
            lo = lo.max(self.contiguous_end().min(hi));
            if lo >= hi {
                return Insert::Stored {
                    new_bytes: 0,
                    dropped,
                };
            }
            (lo, hi, dropped)
        };
        let new_bytes = match self.received.insert_bounded(lo..hi, self.max_holes) {
            Ok(n) => n,
            Err(_) => {
                self.fragment_drops += hi - lo;
                return Insert::TooFragmented;
            }
        };
        let src = &data[(lo - offset) as usize..(hi - offset) as usize];
        // Bytes that extend the checked in-order bytes (`lo` is then the contiguous end, as
        // `checked_end` never passes it and `lo` is at or above it) and are the stream's
        // need no storage: reading passes them as checked.
        match &self.check {
            Some(c) if lo == self.checked_end.max(self.read) && c.matches(lo, src) => {
                self.checked_end = hi;
            }
            _ => self.store(lo, src),
        }
        self.held += new_bytes;
        if new_bytes > 0 {
            self.touch(lo);
        }
        Insert::Stored { new_bytes, dropped }
    }
    /// Copies `src` into storage at `offset` (inside the window).
    fn store(&mut self, offset: u64, src: &[u8]) {
        let mut done = 0;
        while done < src.len() {
            let pos = offset + done as u64 - self.chunk_base;
            let (idx, off) = ((pos / CHUNK64) as usize, (pos % CHUNK64) as usize);
            while self.chunks.len() <= idx {
                self.chunks.push_back(None);
            }
            let c = match &mut self.chunks[idx] {
                Some(c) => c,
                slot => {
                    self.live += 1;
                    self.peak = self.peak.max(self.live);
                    slot.insert(new_chunk(&mut self.spare))
                }
            };
            let m = (src.len() - done).min(CHUNK - off);
            c[off..off + m].copy_from_slice(&src[done..done + m]);
            done += m;
        }
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
    /// Passes up to `max` in-order bytes to `f` without copying (bytes checked as they
    /// arrived are produced again, see [`RecvBuffer::read_at`]), skipping abandoned ranges;
    /// returns how many were passed.
    pub fn read_with(&mut self, max: u64, mut f: impl FnMut(&[u8])) -> u64 {
        self.read_at(max, |_, s| f(s))
    }
    /// Passes up to `max` in-order bytes to `f` with their stream offsets, without copying
    /// (one call per storage chunk; bytes checked as they arrived, which are not stored, are
    /// produced again by the [`StreamCheck`]); abandoned ranges are skipped (the read point
    /// passes them, `f` never sees them). Returns the data bytes passed.
    pub fn read_at(&mut self, max: u64, mut f: impl FnMut(u64, &[u8])) -> u64 {
        let check = self.check.clone();
        self.read_pieces(max, |at, piece| match piece {
            ReadPiece::Bytes(s) => f(at, s),
            ReadPiece::Checked(n) => {
                // Checked bytes are the stream's: produced again for a reader of bytes.
                let c = check.as_ref().expect("checked bytes have a check");
                produce(c.as_ref(), at, n, |o, s| {
                    f(o, s);
                    true
                });
            }
        })
    }
    /// Like [`RecvBuffer::read_at`], passing bytes checked as they arrived (see
    /// [`StreamCheck`]) as [`ReadPiece::Checked`] instead of producing them again.
    pub fn read_pieces(&mut self, max: u64, mut f: impl FnMut(u64, ReadPiece<'_>)) -> u64 {
        let mut passed = 0u64;
        // Reading never passes the contiguous end, so it stays where it is: the range that
        // ends there is dropped only once the read point reaches it, and no range starts at
        // its end (ranges are merged).
        let end = self.contiguous_end();
        // The common case, a reader that takes all there is of a stream whose bytes were all
        // checked as they arrived, nothing skipped: one piece (what the loop below passes).
        if self.checked_end == end
            && end > self.read
            && end - self.read <= max
            && self.skipped.is_empty()
        {
            let n = end - self.read;
            f(self.read, ReadPiece::Checked(n));
            self.consume(n);
            return n;
        }
        while self.read < end {
            let skip = self.skipped.first();
            // A skipped range at the read point is consumed without being passed.
            if let Some(r) = &skip {
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
            let data_end = skip.map_or(end, |r| r.start.min(end));
            if self.read < self.checked_end {
                let n = (data_end.min(self.checked_end) - self.read).min(max - passed);
                f(self.read, ReadPiece::Checked(n));
                self.consume(n);
                passed += n;
                continue;
            }
            let pos = self.read - self.chunk_base;
            let (idx, off) = ((pos / CHUNK64) as usize, (pos % CHUNK64) as usize);
            let n = (data_end - self.read)
                .min(max - passed)
                .min((CHUNK - off) as u64) as usize;
            match self.chunks.get(idx).and_then(Option::as_ref) {
                Some(c) => f(self.read, ReadPiece::Bytes(&c[off..off + n])),
                None => debug_assert!(false, "held bytes without storage"),
            }
            self.consume(n as u64);
            passed += n as u64;
        }
        passed
    }
    fn consume(&mut self, n: u64) {
        self.read += n;
        self.held -= n;
        // The first range may start below the read point: every method reads it that way.
        self.received.remove_ranges_below(self.read);
        // Release the chunks read past.
        while !self.chunks.is_empty() && self.chunk_base + CHUNK64 <= self.read {
            if let Some(Some(c)) = self.chunks.pop_front() {
                self.live -= 1;
                if keep_spare(self.spare.len(), self.live, self.peak) {
                    self.spare.push(c);
                }
            }
            self.chunk_base += CHUNK64;
        }
        if self.chunks.is_empty() {
            self.chunk_base = self.read - self.read % CHUNK64;
        }
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

    /// Byte `o` is `o · 7 + 3` (mod 256).
    #[derive(Debug)]
    struct Affine;

    impl StreamSource for Affine {
        fn fill(&self, offset: u64, dst: &mut [u8]) {
            for (k, b) in dst.iter_mut().enumerate() {
                *b = ((offset + k as u64) * 7 + 3) as u8;
            }
        }
    }

    fn affine(from: u64, len: usize) -> Vec<u8> {
        let mut v = vec![0; len];
        Affine.fill(from, &mut v);
        v
    }

    /// With a stream source the buffer keeps its accounting (capacity, unsent, release) and
    /// copies out the source's bytes, across chunk boundaries and after releases; it stores
    /// nothing unless checking (debug builds), and both ways give the same bytes.
    #[test]
    fn a_sourced_buffer_copies_out_the_source_bytes_and_stores_nothing() {
        for store in [false, true] {
            let mut b = SendBuffer::new(3 * CHUNK);
            b.store_sourced = store;
            assert!(b.set_source(std::sync::Arc::new(Affine)).is_ok());
            assert_eq!(b.write_with(10, |_| unreachable!("not called")), 0);
            assert_eq!(b.write_from_source(2 * CHUNK + 100), 2 * CHUNK + 100);
            assert_eq!(
                b.write_from_source(2 * CHUNK),
                CHUNK - 100,
                "the capacity holds"
            );
            assert_eq!((b.held(), b.free(), b.unsent()), (3 * CHUNK, 0, 3 * CHUNK));
            assert_eq!(b.allocated(), if store { 3 * CHUNK } else { 0 });
            let mut out = vec![0; 3000];
            let at = CHUNK as u64 - 1000;
            assert!(b.copy_out(at, &mut out));
            assert_eq!(out, affine(at, 3000), "store {store}");
            assert_eq!(b.unsent(), 3 * CHUNK - (at as usize + 3000));
            b.release_to(CHUNK as u64 + 5);
            assert!(!b.copy_out(CHUNK as u64, &mut out[..10]), "released");
            assert_eq!(b.write_from_source(CHUNK), CHUNK);
            let end = b.end();
            assert!(b.copy_out(end - 40, &mut out[..40]));
            assert_eq!(out[..40], affine(end - 40, 40)[..]);
            assert!(
                !b.copy_out(end - 40, &mut out[..41]),
                "beyond what was written"
            );
        }
    }

    /// A source whose bytes change between calls (each call adds one to every byte).
    #[derive(Debug, Default)]
    struct Drifting(std::sync::atomic::AtomicU8);

    impl StreamSource for Drifting {
        fn fill(&self, _offset: u64, dst: &mut [u8]) {
            let v = self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            dst.fill(v);
        }
    }

    /// The check of debug builds has force: a copy that differs from what the source gave
    /// when the bytes were written is caught.
    #[test]
    #[should_panic(expected = "stream source and stored bytes differ")]
    fn a_source_that_changes_its_bytes_is_caught_when_storing() {
        let mut b = SendBuffer::new(100);
        b.store_sourced = true;
        assert!(b
            .set_source(std::sync::Arc::new(Drifting::default()))
            .is_ok());
        assert_eq!(b.write_from_source(50), 50);
        let mut out = [0u8; 10];
        b.copy_out(0, &mut out);
    }

    #[test]
    fn a_source_is_refused_once_bytes_were_written() {
        let mut b = SendBuffer::new(100);
        assert_eq!(b.write(b"abc"), 3);
        assert_eq!(
            b.set_source(std::sync::Arc::new(Affine)),
            Err(SourceError::AlreadyWritten { written: 3 })
        );
        assert!(!b.has_source());
        assert_eq!(b.write_from_source(10), 0, "no source: nothing written");
    }

    #[test]
    fn a_range_taken_uncopied_counts_as_sent_and_must_be_held() {
        let mut b = SendBuffer::new(100);
        assert_eq!(b.write(&[7; 100]), 100);
        assert_eq!(b.unsent(), 100);
        assert!(b.take_uncopied(0, 40));
        assert_eq!(b.unsent(), 60, "as copy_out of the same range would");
        assert!(!b.take_uncopied(90, 20), "beyond what was written");
        assert_eq!(b.unsent(), 60);
        b.release_to(50);
        assert!(!b.take_uncopied(40, 10), "below what the buffer holds");
        assert!(b.take_uncopied(50, 50));
        assert_eq!(b.unsent(), 0);
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

    #[test]
    fn storage_follows_the_data_not_the_capacity() {
        // 64 MiB capacities; 1 MiB moved through in 1400-byte pieces, acknowledged and read
        // as it goes: at most a few chunks are ever allocated.
        let mut s = SendBuffer::new(64 << 20);
        let mut r = RecvBuffer::new(64 << 20);
        assert_eq!((s.allocated(), r.allocated()), (0, 0));
        let piece = [7u8; 1400];
        let mut out = [0u8; 1400];
        let mut peak = 0;
        for i in 0..750u64 {
            assert_eq!(s.write(&piece), 1400);
            assert!(s.copy_out(i * 1400, &mut out));
            r.insert(i * 1400, &out);
            s.release_to(r.contiguous_end());
            r.read_with(u64::MAX, |_| {});
            peak = peak.max(s.allocated() + r.allocated());
        }
        assert!(peak <= 6 * CHUNK, "{peak}");
    }

    #[test]
    fn storage_freed_in_bulk_is_reused_and_stays_under_the_peak() {
        // Blocks of 100 chunks written, copied out and delivered whole, then acknowledged
        // and read whole (as `hmtp` does with its chunks): from the second block on no chunk
        // is allocated (the spares cover it), and storage never exceeds one block plus
        // SPARE_CHUNKS.
        let block = 100 * CHUNK;
        let mut s = SendBuffer::new(4 * block);
        let mut r = RecvBuffer::new(4 * block);
        let mut out = vec![0u8; block];
        for b in 0..4u64 {
            let at = b * block as u64;
            assert_eq!(s.write(&vec![b as u8; block]), block);
            assert!(s.copy_out(at, &mut out));
            r.insert(at, &out);
            assert!(
                s.allocated() <= block + SPARE_CHUNKS * CHUNK,
                "{}",
                s.allocated()
            );
            assert!(
                r.allocated() <= block + SPARE_CHUNKS * CHUNK,
                "{}",
                r.allocated()
            );
            s.release_to(r.contiguous_end());
            let mut n = 0;
            r.read_with(u64::MAX, |d| {
                assert!(d.iter().all(|&x| x == b as u8));
                n += d.len();
            });
            assert_eq!(n, block);
            // Everything freed is kept for the next block.
            assert_eq!((s.held(), s.allocated()), (0, block));
            assert_eq!(r.allocated(), block);
        }
    }

    #[test]
    fn holes_are_bounded() {
        let mut r = RecvBuffer::new(64 * 512); // 64 holes at most
        assert_eq!(r.max_holes(), 64);
        for i in 0..64u64 {
            assert!(matches!(
                r.insert(10 * i + 5, b"x"),
                Insert::Stored { new_bytes: 1, .. }
            ));
        }
        // A 65th separate piece is refused and counted; filling a hole is not refused.
        assert_eq!(r.insert(10_000, b"y"), Insert::TooFragmented);
        assert_eq!(r.fragment_drops(), 1);
        // Filling the hole between the first two pieces merges them: one range fewer.
        assert!(matches!(
            r.insert(6, b"abcdefghi"),
            Insert::Stored { new_bytes: 9, .. }
        ));
        assert_eq!(
            r.insert(10_000, b"y"),
            Insert::Stored {
                new_bytes: 1,
                dropped: 0
            }
        );
    }

    /// The default check: [`StreamSource::fill`] and a comparison.
    impl StreamCheck for Affine {}

    /// Reads everything with `read_pieces`: (offset, bytes or checked length) per piece.
    fn pieces(r: &mut RecvBuffer, max: u64) -> Vec<(u64, Result<Vec<u8>, u64>)> {
        let mut v = Vec::new();
        r.read_pieces(max, |at, p| {
            v.push((
                at,
                match p {
                    ReadPiece::Bytes(s) => Ok(s.to_vec()),
                    ReadPiece::Checked(n) => Err(n),
                },
            ))
        });
        v
    }

    /// With a check, in-order bytes that are the stream's are not stored and are read as
    /// checked; bytes out of order, and in-order bytes that differ, are stored and read as
    /// bytes; `read_at` produces the checked bytes again.
    #[test]
    fn in_order_bytes_that_match_the_check_are_not_stored() {
        let mut r = RecvBuffer::new(1 << 20);
        r.set_check(std::sync::Arc::new(Affine));
        assert!(matches!(
            r.insert(0, &affine(0, 3000)),
            Insert::Stored {
                new_bytes: 3000,
                ..
            }
        ));
        assert!(matches!(
            r.insert(3000, &affine(3000, 2000)),
            Insert::Stored {
                new_bytes: 2000,
                ..
            }
        ));
        assert_eq!((r.allocated(), r.held(), r.readable()), (0, 5000, 5000));
        assert_eq!(pieces(&mut r, 1200), vec![(0, Err(1200))]);
        // Out of order: stored; then the hole filled in order (checked), the stored bytes
        // after it read as bytes.
        r.insert(6000, &affine(6000, 1000));
        assert_eq!(r.allocated(), CHUNK);
        r.insert(5000, &affine(5000, 1000));
        assert_eq!((r.held(), r.readable()), (5800, 5800));
        assert_eq!(
            pieces(&mut r, u64::MAX),
            vec![(1200, Err(4800)), (6000, Ok(affine(6000, 1000)))]
        );
        // In order but not the stream's: stored, read as the bytes that arrived.
        let mut bad = affine(7000, 100);
        bad[50] ^= 1;
        r.insert(7000, &bad);
        // In order after it: not checked (the stored bytes come first), stored.
        r.insert(7100, &affine(7100, 100));
        let mut out = Vec::new();
        assert_eq!(r.read_at(u64::MAX, |_, s| out.extend_from_slice(s)), 200);
        assert_eq!(out[..100], bad[..]);
        assert_eq!(out[100..], affine(7100, 100)[..]);
        // Everything read: in-order bytes are checked again, and `read_at` produces them.
        r.insert(7200, &affine(7200, 2500));
        let mut out = Vec::new();
        r.read_at(u64::MAX, |at, s| {
            assert_eq!(at, 7200 + out.len() as u64);
            out.extend_from_slice(s);
        });
        assert_eq!(out, affine(7200, 2500));
    }

    proptest! {
        /// A check changes nothing a reader or the connection sees: any arrival order of
        /// overlapping segments, some of them altered, some ranges skipped, read in pieces of
        /// any size, gives the same results, counts and bytes with and without a check.
        #[test]
        fn a_check_changes_nothing_a_reader_sees(
            ops in proptest::collection::vec((0u64..3000, 1usize..700, 0u8..10, 1u64..900), 1..80),
            cap in 200usize..4000,
        ) {
            let mut plain = RecvBuffer::new(cap);
            let mut checked = RecvBuffer::new(cap);
            checked.set_check(std::sync::Arc::new(Affine));
            let (mut a, mut b) = (Vec::new(), Vec::new());
            for (at, len, kind, max) in ops {
                // Mostly in order (at the contiguous end), else anywhere.
                let at = if kind < 6 { plain.contiguous_end() } else { at };
                let mut data = affine(at, len);
                if kind == 7 {
                    data[len / 2] ^= 0x40;
                }
                if kind == 8 {
                    prop_assert_eq!(plain.skip(at, len as u64), checked.skip(at, len as u64));
                } else {
                    prop_assert_eq!(plain.insert(at, &data), checked.insert(at, &data));
                }
                prop_assert_eq!(
                    (plain.held(), plain.readable(), plain.contiguous_end(), plain.max_data()),
                    (checked.held(), checked.readable(), checked.contiguous_end(), checked.max_data())
                );
                let na = plain.read_at(max, |o, s| a.push((o, s.to_vec())));
                let nb = checked.read_at(max, |o, s| b.push((o, s.to_vec())));
                prop_assert_eq!(na, nb);
                prop_assert_eq!(plain.read_offset(), checked.read_offset());
            }
            let flat = |v: &[(u64, Vec<u8>)]| {
                v.iter().flat_map(|(o, s)| (0..s.len()).map(move |k| (o + k as u64, s[k]))).collect::<Vec<_>>()
            };
            prop_assert_eq!(flat(&a), flat(&b));
        }

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
