//! Application bytes: a deterministic source and a verifying sink.
//!
//! The source's bytes are a function of (seed, offset), so a run needs no stored copy of what
//! was written: the sink regenerates the expected bytes at each delivered slice's offset and
//! compares them. That is stronger than comparing digests at the end (the first wrong byte is
//! found where it happens, with its offset) and needs O(1) memory whatever the bytes moved.
//! The sending connection needs no stored copy either: it produces each byte as it sends it
//! ([`Stream`], a `StreamSource`), and the receiving connection stores no in-order bytes that
//! are the stream's: it checks them as they arrive ([`Stream`] as a `StreamCheck`) and the sink
//! counts them without checking them again.

use tributary_proto::buffer::{StreamCheck, StreamSource};

/// The word at 8-byte index `i` of stream `seed`.
#[inline]
fn word(seed: u64, i: u64) -> u64 {
    i.wrapping_mul(STEP) ^ seed
}

/// The multiplier of [`word`]: consecutive words' products differ by it, so the loops below
/// step the product by addition instead of multiplying at every word (same values).
const STEP: u64 = 0x9E37_79B9_7F4A_7C15;

/// Words handled per step of the block loops: independent lanes, which the compiler keeps in
/// vector registers (generating and verifying every byte is a large share of a bulk run's
/// instructions).
const LANES: usize = 8;

/// The lanes' first products, `(i + k) · STEP` for lane `k`, passed through
/// [`std::hint::black_box`] and copied out of it (so that the loops keep them in registers):
/// seeing that every lane is one induction variable plus a constant, the optimiser would
/// otherwise fold the lanes into a single scalar counter and not vectorise the loops (`fill`
/// then ran at about half the speed). The values are unchanged.
#[inline(always)]
fn lanes(i: u64) -> [u64; LANES] {
    let opaque: [u64; LANES] =
        std::hint::black_box(std::array::from_fn(|k| (i + k as u64).wrapping_mul(STEP)));
    std::array::from_fn(|k: usize| opaque[k])
}

/// Fills `dst` with the stream's bytes at `[offset, offset + dst.len())`.
pub fn fill(seed: u64, offset: u64, dst: &mut [u8]) {
    let mut o = offset;
    let mut d = dst;
    // Unaligned head.
    while !o.is_multiple_of(8) && !d.is_empty() {
        d[0] = word(seed, o / 8).to_le_bytes()[(o % 8) as usize];
        d = &mut d[1..];
        o += 1;
    }
    #[cfg(target_arch = "x86_64")]
    if x86::fill_words(seed, o / 8, d) {
        return;
    }
    fill_words(seed, o / 8, d);
}

/// Fills `d` with the stream's bytes from word `i` on (`d` starts at a word boundary): the
/// portable loops, for every CPU.
fn fill_words(seed: u64, mut i: u64, d: &mut [u8]) {
    let mut blocks = d.chunks_exact_mut(8 * LANES);
    let mut m = lanes(i);
    let stride = STEP.wrapping_mul(LANES as u64);
    for b in &mut blocks {
        for (k, c) in b.chunks_exact_mut(8).enumerate() {
            // An array assignment, not `copy_from_slice`: in builds with debug assertions
            // (the tests) the latter's precondition checks kept this loop scalar.
            let c: &mut [u8; 8] = c.try_into().expect("8-byte chunk");
            *c = (m[k] ^ seed).to_le_bytes();
        }
        for v in &mut m {
            *v = v.wrapping_add(stride);
        }
        i += LANES as u64;
    }
    let mut chunks = blocks.into_remainder().chunks_exact_mut(8);
    for c in &mut chunks {
        c.copy_from_slice(&word(seed, i).to_le_bytes());
        i += 1;
    }
    let rest = chunks.into_remainder();
    let w = word(seed, i).to_le_bytes();
    let n = rest.len();
    rest.copy_from_slice(&w[..n]);
}

/// Offset of the first byte of `data` that differs from the stream's bytes at `offset`.
pub fn first_mismatch(seed: u64, offset: u64, data: &[u8]) -> Option<u64> {
    if matches(seed, offset, data) {
        None
    } else {
        find_mismatch(seed, offset, data)
    }
}

/// Checks the bytes of `data` before the first word boundary of the stream at offset `o`:
/// `Err` with the offset of the first that differs, else the word-aligned offset and the
/// rest of `data`.
fn check_head(seed: u64, mut o: u64, mut d: &[u8]) -> Result<(u64, &[u8]), u64> {
    while !o.is_multiple_of(8) && !d.is_empty() {
        if d[0] != word(seed, o / 8).to_le_bytes()[(o % 8) as usize] {
            return Err(o);
        }
        d = &d[1..];
        o += 1;
    }
    Ok((o, d))
}

/// Whether `data` is the stream's bytes at `offset`: the differences of all words ORed
/// together, with no branch per block (the common case: nothing differs, and then
/// [`find_mismatch`] need not run).
fn matches(seed: u64, offset: u64, data: &[u8]) -> bool {
    let Ok((o, d)) = check_head(seed, offset, data) else {
        return false;
    };
    #[cfg(target_arch = "x86_64")]
    if let Some(ok) = x86::matches_words(seed, o / 8, d) {
        return ok;
    }
    matches_words(seed, o / 8, d)
}

/// Whether `d` is the stream's bytes from word `i` on (`d` starts at a word boundary): the
/// portable loops, for every CPU. Never inlined: on CPUs with AVX2 it does not run, and
/// inlined it made [`first_mismatch`] keep its state on the stack on every call.
#[inline(never)]
fn matches_words(seed: u64, mut i: u64, d: &[u8]) -> bool {
    let mut blocks = d.chunks_exact(8 * LANES);
    let mut m = lanes(i);
    let stride = STEP.wrapping_mul(LANES as u64);
    let mut acc = [0u64; LANES];
    for b in &mut blocks {
        for (k, c) in b.chunks_exact(8).enumerate() {
            let got = u64::from_le_bytes(c.try_into().expect("8-byte chunk"));
            acc[k] |= got ^ m[k] ^ seed;
        }
        for v in &mut m {
            *v = v.wrapping_add(stride);
        }
        i += LANES as u64;
    }
    let mut diff = acc.iter().fold(0, |a, x| a | x);
    let mut chunks = blocks.remainder().chunks_exact(8);
    for c in &mut chunks {
        diff |= u64::from_le_bytes(c.try_into().expect("8-byte chunk")) ^ word(seed, i);
        i += 1;
    }
    let rest = chunks.remainder();
    let w = word(seed, i).to_le_bytes();
    diff == 0 && rest == &w[..rest.len()]
}

/// [`first_mismatch`] of data known to differ somewhere: block by block, then the block that
/// differs word by word. Cold (only data that differs, which ends a run's check) and never
/// inlined, for the same reason as [`matches_words`].
#[cold]
#[inline(never)]
fn find_mismatch(seed: u64, offset: u64, data: &[u8]) -> Option<u64> {
    let (o, d) = match check_head(seed, offset, data) {
        Ok(aligned) => aligned,
        Err(at) => return Some(at),
    };
    let mut i = o / 8;
    // Whole blocks: one test per block of the OR of the lanes' differences; a block that
    // differs is searched word by word below.
    let mut blocks = d.chunks_exact(8 * LANES);
    let mut m = lanes(i);
    let stride = STEP.wrapping_mul(LANES as u64);
    let mut bad_block = None;
    for b in &mut blocks {
        let mut diff = 0u64;
        for (k, c) in b.chunks_exact(8).enumerate() {
            let got = u64::from_le_bytes(c.try_into().expect("8-byte chunk"));
            diff |= got ^ m[k] ^ seed;
        }
        if diff != 0 {
            bad_block = Some(b);
            break;
        }
        for v in &mut m {
            *v = v.wrapping_add(stride);
        }
        i += LANES as u64;
    }
    let tail = match bad_block {
        Some(b) => b,
        None => blocks.remainder(),
    };
    let mut chunks = tail.chunks_exact(8);
    for c in &mut chunks {
        let got = u64::from_le_bytes(c.try_into().expect("8-byte chunk"));
        let want = word(seed, i);
        if got != want {
            let byte = (got ^ want).trailing_zeros() / 8;
            return Some(i * 8 + u64::from(byte));
        }
        i += 1;
    }
    let rest = chunks.remainder();
    let w = word(seed, i).to_le_bytes();
    rest.iter()
        .zip(w)
        .position(|(a, b)| *a != b)
        .map(|k| i * 8 + k as u64)
}

/// AVX2 versions of [`fill`] and [`matches`] from the first word boundary on, chosen at run
/// time (the baseline build is SSE2 only): 32-byte vectors of four words, whole words past the
/// last 64-byte block by masked loads and stores, the last partial word as one scalar word.
/// They produce and accept exactly the bytes of the portable loops, which serve every CPU
/// without AVX2.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{word, STEP};
    use std::arch::x86_64::{
        __m256i, _mm256_add_epi64, _mm256_and_si256, _mm256_cmpgt_epi64, _mm256_loadu_si256,
        _mm256_maskload_epi64, _mm256_maskstore_epi64, _mm256_or_si256, _mm256_set1_epi64x,
        _mm256_set_epi64x, _mm256_setzero_si256, _mm256_storeu_si256, _mm256_testz_si256,
        _mm256_xor_si256,
    };

    /// Bytes per block: eight words, two vectors.
    const BLOCK: usize = 64;

    /// Whether this CPU has AVX2 (the standard library caches the answer).
    #[inline]
    fn available() -> bool {
        std::arch::is_x86_feature_detected!("avx2")
    }

    /// The words `i … i + 7` of the stream as two vectors, and the step (added to the
    /// products before the XOR with the seed) that moves them on by one block.
    struct Words {
        lo: __m256i,
        hi: __m256i,
        step: __m256i,
        seed: __m256i,
    }

    impl Words {
        #[target_feature(enable = "avx2")]
        fn new(seed: u64, i: u64) -> Self {
            let p = |k: u64| i.wrapping_add(k).wrapping_mul(STEP) as i64;
            Words {
                lo: _mm256_set_epi64x(p(3), p(2), p(1), p(0)),
                hi: _mm256_set_epi64x(p(7), p(6), p(5), p(4)),
                step: _mm256_set1_epi64x(STEP.wrapping_mul(8) as i64),
                seed: _mm256_set1_epi64x(seed as i64),
            }
        }

        /// This block's words, and on to the next block.
        #[target_feature(enable = "avx2")]
        fn next(&mut self) -> (__m256i, __m256i) {
            let out = (
                _mm256_xor_si256(self.lo, self.seed),
                _mm256_xor_si256(self.hi, self.seed),
            );
            self.lo = _mm256_add_epi64(self.lo, self.step);
            self.hi = _mm256_add_epi64(self.hi, self.step);
            out
        }
    }

    /// Lane masks of the first `n` (< 8) words of a block: all ones where the lane is below
    /// `n`.
    #[target_feature(enable = "avx2")]
    fn masks(n: usize) -> (__m256i, __m256i) {
        let n = _mm256_set1_epi64x(n as i64);
        (
            _mm256_cmpgt_epi64(n, _mm256_set_epi64x(3, 2, 1, 0)),
            _mm256_cmpgt_epi64(n, _mm256_set_epi64x(7, 6, 5, 4)),
        )
    }

    /// Fills `dst` with the stream's bytes from word `i` on (`dst` starts at a word
    /// boundary); `false` without AVX2, and then `dst` is untouched.
    #[inline]
    pub(super) fn fill_words(seed: u64, i: u64, dst: &mut [u8]) -> bool {
        if !available() {
            return false;
        }
        // SAFETY: AVX2 is available (checked above).
        unsafe { fill_avx2(seed, i, dst) };
        true
    }

    #[target_feature(enable = "avx2")]
    fn fill_avx2(seed: u64, i: u64, dst: &mut [u8]) {
        let last = i + (dst.len() / 8) as u64;
        let mut w = Words::new(seed, i);
        let mut blocks = dst.chunks_exact_mut(BLOCK);
        for b in &mut blocks {
            let (lo, hi) = w.next();
            let p = b.as_mut_ptr().cast::<__m256i>();
            // SAFETY: `b` is 64 writable bytes; unaligned stores.
            unsafe {
                _mm256_storeu_si256(p, lo);
                _mm256_storeu_si256(p.add(1), hi);
            }
        }
        let rest = blocks.into_remainder();
        let words = rest.len() / 8;
        let (lo, hi) = w.next();
        let (mlo, mhi) = masks(words);
        let p = rest.as_mut_ptr().cast::<i64>();
        // SAFETY: the masks enable only lanes of the `words` whole words `rest` holds.
        unsafe {
            _mm256_maskstore_epi64(p, mlo, lo);
            _mm256_maskstore_epi64(p.add(4), mhi, hi);
        }
        let tail = &mut rest[words * 8..];
        let n = tail.len();
        tail.copy_from_slice(&word(seed, last).to_le_bytes()[..n]);
    }

    /// Whether `data` is the stream's bytes from word `i` on (`data` starts at a word
    /// boundary); `None` without AVX2.
    #[inline]
    pub(super) fn matches_words(seed: u64, i: u64, data: &[u8]) -> Option<bool> {
        if !available() {
            return None;
        }
        // SAFETY: AVX2 is available (checked above).
        Some(unsafe { matches_avx2(seed, i, data) })
    }

    #[target_feature(enable = "avx2")]
    fn matches_avx2(seed: u64, i: u64, data: &[u8]) -> bool {
        let mut w = Words::new(seed, i);
        let mut acc = _mm256_setzero_si256();
        let mut blocks = data.chunks_exact(BLOCK);
        for b in &mut blocks {
            let (lo, hi) = w.next();
            let p = b.as_ptr().cast::<__m256i>();
            // SAFETY: `b` is 64 readable bytes; unaligned loads.
            let (x, y) = unsafe { (_mm256_loadu_si256(p), _mm256_loadu_si256(p.add(1))) };
            acc = _mm256_or_si256(
                acc,
                _mm256_or_si256(_mm256_xor_si256(x, lo), _mm256_xor_si256(y, hi)),
            );
        }
        let rest = blocks.remainder();
        let words = rest.len() / 8;
        let (lo, hi) = w.next();
        let (mlo, mhi) = masks(words);
        let p = rest.as_ptr().cast::<i64>();
        // SAFETY: the masks enable only lanes of the `words` whole words `rest` holds; the
        // others read as zero without touching memory.
        let (x, y) = unsafe {
            (
                _mm256_maskload_epi64(p, mlo),
                _mm256_maskload_epi64(p.add(4), mhi),
            )
        };
        let d = _mm256_or_si256(
            _mm256_and_si256(_mm256_xor_si256(x, lo), mlo),
            _mm256_and_si256(_mm256_xor_si256(y, hi), mhi),
        );
        acc = _mm256_or_si256(acc, d);
        let tail = &rest[words * 8..];
        let want = word(seed, i + (data.len() / 8) as u64).to_le_bytes();
        _mm256_testz_si256(acc, acc) != 0 && tail == &want[..tail.len()]
    }
}

/// The stream with one seed as a connection's [`StreamSource`]: the sending connection
/// produces each byte when it sends it, from [`fill`], instead of storing what was written.
#[derive(Debug, Clone, Copy)]
pub struct Stream(pub u64);

impl StreamSource for Stream {
    fn fill(&self, offset: u64, dst: &mut [u8]) {
        fill(self.0, offset, dst);
    }
}

/// The receiving connection checks in-order bytes against the stream as they arrive and
/// stores none of those that match; the [`Sink`] of the same seed then counts them unchecked.
impl StreamCheck for Stream {
    fn matches(&self, offset: u64, data: &[u8]) -> bool {
        matches(self.0, offset, data)
    }
}

/// Counts the stream's bytes written, in order (the connection produces them from its
/// [`Stream`]).
#[derive(Debug, Clone)]
pub struct Source {
    seed: u64,
    written: u64,
}

impl Source {
    /// The stream with this seed.
    pub fn new(seed: u64) -> Self {
        Source { seed, written: 0 }
    }

    /// Bytes written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Counts the next `n` bytes as written (the connection produces them from the
    /// [`Stream`] of this seed).
    pub fn advance(&mut self, n: usize) {
        self.written += n as u64;
    }

    /// This stream as a connection's source.
    pub fn stream(&self) -> Stream {
        Stream(self.seed)
    }
}

/// Checks every delivered slice against the stream at its offset.
#[derive(Debug, Clone)]
pub struct Sink {
    seed: u64,
    read: u64,
    bytes: u64,
    /// First wrong byte seen (its stream offset).
    corrupt_at: Option<u64>,
}

impl Sink {
    /// A sink for the stream with this seed.
    pub fn new(seed: u64) -> Self {
        Sink {
            seed,
            read: 0,
            bytes: 0,
            corrupt_at: None,
        }
    }

    /// Consumes the next in-order bytes.
    pub fn consume(&mut self, data: &[u8]) {
        let at = self.read;
        self.consume_at(at, data);
    }

    /// Checks bytes delivered at stream offset `offset` (out of order, or after a skipped
    /// range); counts them as read.
    pub fn consume_at(&mut self, offset: u64, data: &[u8]) {
        if self.corrupt_at.is_none() {
            self.corrupt_at = first_mismatch(self.seed, offset, data);
        }
        self.read = self.read.max(offset + data.len() as u64);
        self.bytes += data.len() as u64;
    }

    /// Counts `len` bytes at stream offset `offset` as read without checking them: the
    /// receiving connection checked them as they arrived, against this sink's
    /// [`Sink::stream`].
    pub fn consume_checked(&mut self, offset: u64, len: u64) {
        self.read = self.read.max(offset + len);
        self.bytes += len;
    }

    /// The stream this sink expects, as a connection's [`StreamCheck`].
    pub fn stream(&self) -> Stream {
        Stream(self.seed)
    }

    /// End of the highest slice delivered: the stream offset reading has reached (skipped
    /// ranges included).
    pub fn read(&self) -> u64 {
        self.read
    }

    /// Bytes delivered (skipped ranges not counted).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The stream offset of the first delivered byte that was not what was written.
    pub fn corrupt_at(&self) -> Option<u64> {
        self.corrupt_at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stream's byte at `offset`, computed the slow way (the reference for the block
    /// loops of `fill` and `first_mismatch`).
    fn byte_at(seed: u64, offset: u64) -> u8 {
        word(seed, offset / 8).to_le_bytes()[(offset % 8) as usize]
    }

    #[test]
    fn block_loops_match_the_bytewise_definition() {
        let seed = 0x0123_4567_89AB_CDEF;
        for offset in 0..17u64 {
            for len in 0..160usize {
                let mut buf = vec![0u8; len];
                fill(seed, offset, &mut buf);
                let want: Vec<u8> = (0..len as u64).map(|k| byte_at(seed, offset + k)).collect();
                assert_eq!(buf, want, "fill at {offset}, {len} bytes");
                assert_eq!(first_mismatch(seed, offset, &buf), None);
                for at in 0..len {
                    let mut bad = buf.clone();
                    bad[at] ^= 0x80;
                    assert_eq!(
                        first_mismatch(seed, offset, &bad),
                        Some(offset + at as u64),
                        "flip at {at} of {len} bytes from {offset}"
                    );
                    // A second, later difference does not hide the first.
                    if at + 1 < len {
                        bad[len - 1] ^= 1;
                        assert_eq!(first_mismatch(seed, offset, &bad), Some(offset + at as u64));
                    }
                }
            }
        }
    }

    /// The word-aligned loops, portable and (where the CPU has AVX2) vectorised, at every
    /// length of up to three blocks and a half and every position of a flipped bit: the same
    /// bytes and the same verdicts as the definition. (`fill` and `first_mismatch` take the
    /// AVX2 path where it exists, so this is what keeps the portable one tested there.)
    #[test]
    fn portable_and_vector_word_loops_agree_with_the_definition() {
        let seed = 0xFEDC_BA98_7654_3210;
        for i in [0u64, 1, 7, 1 << 40, u64::MAX / 8 - 40] {
            for len in 0..232usize {
                let want: Vec<u8> = (0..len as u64).map(|k| byte_at(seed, i * 8 + k)).collect();
                let mut buf = vec![0xA5u8; len];
                fill_words(seed, i, &mut buf);
                assert_eq!(buf, want, "portable fill, word {i}, {len} bytes");
                assert!(matches_words(seed, i, &want));
                #[cfg(target_arch = "x86_64")]
                {
                    let mut buf = vec![0x5Au8; len];
                    if x86::fill_words(seed, i, &mut buf) {
                        assert_eq!(buf, want, "AVX2 fill, word {i}, {len} bytes");
                    }
                    assert_ne!(x86::matches_words(seed, i, &want), Some(false));
                }
                for at in 0..len {
                    let mut bad = want.clone();
                    bad[at] ^= 1 << (at % 8);
                    assert!(
                        !matches_words(seed, i, &bad),
                        "portable, flip at {at} of {len}"
                    );
                    #[cfg(target_arch = "x86_64")]
                    assert_ne!(
                        x86::matches_words(seed, i, &bad),
                        Some(true),
                        "AVX2, flip at {at} of {len}"
                    );
                }
            }
        }
    }

    #[test]
    fn fill_is_position_consistent() {
        let mut whole = vec![0u8; 100];
        fill(9, 3, &mut whole);
        for start in 0..100 {
            let mut part = vec![0u8; 100 - start];
            fill(9, 3 + start as u64, &mut part);
            assert_eq!(&part[..], &whole[start..]);
        }
    }

    #[test]
    fn sink_accepts_the_stream_and_finds_the_first_wrong_byte() {
        let mut buf = vec![0u8; 10_007];
        fill(5, 0, &mut buf);
        // Any split of the stream verifies.
        let mut sink = Sink::new(5);
        for part in buf.chunks(333) {
            sink.consume(part);
        }
        assert_eq!((sink.read(), sink.corrupt_at()), (10_007, None));
        // Every single-bit flip, at every alignment, is found at its offset.
        for at in [0usize, 1, 7, 8, 9, 15, 4_000, 10_000, 10_006] {
            for bit in [0u8, 3, 7] {
                let mut bad = buf.clone();
                bad[at] ^= 1 << bit;
                let mut sink = Sink::new(5);
                sink.consume(&bad[..3]);
                sink.consume(&bad[3..]);
                assert_eq!(sink.corrupt_at(), Some(at as u64), "byte {at} bit {bit}");
            }
        }
        // Another stream's bytes (another flow's data) are rejected.
        let mut sink = Sink::new(6);
        sink.consume(&buf);
        assert_eq!(sink.corrupt_at(), Some(0));
        // Out-of-order slices verify at their offsets.
        let mut sink = Sink::new(5);
        sink.consume_at(5_000, &buf[5_000..6_000]);
        sink.consume_at(0, &buf[..5_000]);
        assert_eq!((sink.read(), sink.corrupt_at()), (6_000, None));
        sink.consume_at(100, &buf[101..200]);
        assert!(sink.corrupt_at().is_some());
    }
}
