//! The ChaCha8 key stream that LT neighbour generation reads, one 64-byte block at a time.
//!
//! The stream is exactly `rand_chacha::ChaCha8Rng::from_seed(key)`'s (Bernstein's ChaCha with 8
//! rounds: the constants "expand 32-byte k", the 256-bit key, a 64-bit block counter from 0
//! and a 64-bit stream id 0; each block is the state after four double rounds plus the input
//! state, read as sixteen little-endian words). `rand_chacha` always computes four blocks
//! (256 bytes) per refill, while an LT symbol of degree d < 8 needs only one: here a block is
//! computed when it is first read. The tests compare both streams word by word.

/// ChaCha8 output of one key as a stream of 64-bit words (`ChaCha8Rng::next_u64`'s: the low
/// word first).
pub(crate) struct ChaCha8Words {
    key: [u32; 8],
    counter: u64,
    buf: [u32; 16],
    /// Next word of `buf` to hand out; 16 when a new block is needed.
    next: usize,
}

impl ChaCha8Words {
    /// The stream of `key` (32 bytes, read as eight little-endian words), from block 0.
    pub(crate) fn new(key: &[u8; 32]) -> Self {
        let mut k = [0u32; 8];
        for (w, b) in k.iter_mut().zip(key.chunks_exact(4)) {
            *w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        }
        Self {
            key: k,
            counter: 0,
            buf: [0; 16],
            next: 16,
        }
    }

    /// The next 64 bits of the stream (two words, the first in the low half).
    #[inline]
    pub(crate) fn next_u64(&mut self) -> u64 {
        if self.next == 16 {
            block(&self.key, self.counter, &mut self.buf);
            self.counter = self.counter.wrapping_add(1);
            self.next = 0;
        }
        let (lo, hi) = (self.buf[self.next], self.buf[self.next + 1]);
        self.next += 2;
        (u64::from(hi) << 32) | u64::from(lo)
    }
}

const SIGMA: [u32; 4] = [0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574];

/// The input state of block `counter`.
fn initial(key: &[u32; 8], counter: u64) -> [u32; 16] {
    let mut s = [0u32; 16];
    s[..4].copy_from_slice(&SIGMA);
    s[4..12].copy_from_slice(key);
    s[12] = counter as u32;
    s[13] = (counter >> 32) as u32;
    s
}

/// Block `counter` of the key stream, word by word (the reference the SIMD path is tested
/// against, and the path on other architectures).
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn block_scalar(key: &[u32; 8], counter: u64, out: &mut [u32; 16]) {
    let input = initial(key, counter);
    let mut x = input;
    fn qr(x: &mut [u32; 16], a: usize, b: usize, c: usize, d: usize) {
        x[a] = x[a].wrapping_add(x[b]);
        x[d] = (x[d] ^ x[a]).rotate_left(16);
        x[c] = x[c].wrapping_add(x[d]);
        x[b] = (x[b] ^ x[c]).rotate_left(12);
        x[a] = x[a].wrapping_add(x[b]);
        x[d] = (x[d] ^ x[a]).rotate_left(8);
        x[c] = x[c].wrapping_add(x[d]);
        x[b] = (x[b] ^ x[c]).rotate_left(7);
    }
    for _ in 0..4 {
        qr(&mut x, 0, 4, 8, 12);
        qr(&mut x, 1, 5, 9, 13);
        qr(&mut x, 2, 6, 10, 14);
        qr(&mut x, 3, 7, 11, 15);
        qr(&mut x, 0, 5, 10, 15);
        qr(&mut x, 1, 6, 11, 12);
        qr(&mut x, 2, 7, 8, 13);
        qr(&mut x, 3, 4, 9, 14);
    }
    for (o, (a, b)) in out.iter_mut().zip(x.iter().zip(&input)) {
        *o = a.wrapping_add(*b);
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn block(key: &[u32; 8], counter: u64, out: &mut [u32; 16]) {
    block_scalar(key, counter, out);
}

/// Block `counter` with the state's four rows in four SSE2 registers (SSE2 is part of every
/// x86-64 CPU): a column round is four quarter rounds at once, a diagonal round the same
/// after rotating rows 1–3 by one, two and three words.
#[cfg(target_arch = "x86_64")]
fn block(key: &[u32; 8], counter: u64, out: &mut [u32; 16]) {
    use std::arch::x86_64::*;
    let input = initial(key, counter);
    // SAFETY: SSE2 is enabled on every x86_64 target; the loads and stores are unaligned ones
    // of 16 bytes inside `input` and `out` (16 words each).
    unsafe {
        #[inline(always)]
        unsafe fn rotl<const L: i32, const R: i32>(x: __m128i) -> __m128i {
            unsafe { _mm_or_si128(_mm_slli_epi32::<L>(x), _mm_srli_epi32::<R>(x)) }
        }
        #[inline(always)]
        unsafe fn round(a: &mut __m128i, b: &mut __m128i, c: &mut __m128i, d: &mut __m128i) {
            unsafe {
                *a = _mm_add_epi32(*a, *b);
                *d = rotl::<16, 16>(_mm_xor_si128(*d, *a));
                *c = _mm_add_epi32(*c, *d);
                *b = rotl::<12, 20>(_mm_xor_si128(*b, *c));
                *a = _mm_add_epi32(*a, *b);
                *d = rotl::<8, 24>(_mm_xor_si128(*d, *a));
                *c = _mm_add_epi32(*c, *d);
                *b = rotl::<7, 25>(_mm_xor_si128(*b, *c));
            }
        }
        let p = input.as_ptr().cast::<__m128i>();
        let (a0, b0, c0, d0) = (
            _mm_loadu_si128(p),
            _mm_loadu_si128(p.add(1)),
            _mm_loadu_si128(p.add(2)),
            _mm_loadu_si128(p.add(3)),
        );
        let (mut a, mut b, mut c, mut d) = (a0, b0, c0, d0);
        for _ in 0..4 {
            round(&mut a, &mut b, &mut c, &mut d);
            // Diagonals into columns: row 1 left by one word, row 2 by two, row 3 by three.
            b = _mm_shuffle_epi32::<0x39>(b);
            c = _mm_shuffle_epi32::<0x4e>(c);
            d = _mm_shuffle_epi32::<0x93>(d);
            round(&mut a, &mut b, &mut c, &mut d);
            b = _mm_shuffle_epi32::<0x93>(b);
            c = _mm_shuffle_epi32::<0x4e>(c);
            d = _mm_shuffle_epi32::<0x39>(d);
        }
        let o = out.as_mut_ptr().cast::<__m128i>();
        _mm_storeu_si128(o, _mm_add_epi32(a, a0));
        _mm_storeu_si128(o.add(1), _mm_add_epi32(b, b0));
        _mm_storeu_si128(o.add(2), _mm_add_epi32(c, c0));
        _mm_storeu_si128(o.add(3), _mm_add_epi32(d, d0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha8Rng;
    use rand_core::{RngCore, SeedableRng};

    fn keys() -> Vec<[u8; 32]> {
        let mut g = ChaCha8Rng::seed_from_u64(99);
        let mut v = vec![[0u8; 32], [0xff; 32]];
        for _ in 0..200 {
            let mut k = [0u8; 32];
            g.fill_bytes(&mut k);
            v.push(k);
        }
        v
    }

    /// The stream equals `rand_chacha`'s over several blocks (so across refills of both).
    #[test]
    fn stream_is_rand_chachas() {
        for key in keys() {
            let mut a = ChaCha8Words::new(&key);
            let mut b = ChaCha8Rng::from_seed(key);
            for i in 0..70 {
                assert_eq!(a.next_u64(), b.next_u64(), "key {key:?} word {i}");
            }
        }
    }

    /// The SIMD block equals the word-by-word one, also for counters whose high word is set.
    #[test]
    fn block_paths_agree() {
        for key in keys() {
            let mut k = [0u32; 8];
            for (w, b) in k.iter_mut().zip(key.chunks_exact(4)) {
                *w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
            for counter in [0, 1, 7, u64::from(u32::MAX), 1 << 32, u64::MAX] {
                let (mut x, mut y) = ([0u32; 16], [0u32; 16]);
                block(&k, counter, &mut x);
                block_scalar(&k, counter, &mut y);
                assert_eq!(x, y, "counter {counter}");
            }
        }
    }
}
