//! RaptorQ repair symbols as linear combinations of the source symbols, for small blocks.
//!
//! RFC 6330's encoding is linear over its octet field (GF(2^8) with the polynomial
//! x^8 + x^4 + x^3 + x^2 + 1, §5.7): the intermediate symbols are C = A⁻¹·D, where D is the
//! k source symbols after S + H zero symbols and followed by K' − k zero padding symbols
//! (§5.3.3.4), and each repair symbol is a sum of intermediate symbols (§5.3.5.3). So repair
//! symbol e is Σᵢ g_e(i)·sᵢ for a row g_e of k octets that depends only on k and e.
//!
//! The rows come from the `raptorq` crate itself: encoding the k×k identity block (symbol i
//! is the k-byte unit vector i) gives g_e as repair symbol e. With the rows,
//!
//! * a repair symbol costs k multiply-adds of T bytes, against the crate's computing all
//!   K' + S + H intermediate symbols of the block first;
//! * a block missing m source symbols, with repair symbols r₁, r₂, … received, is decoded by
//!   solving the m×m system Σ_{i∈M} g_r(i)·sᵢ = r − Σ_{i∉M} g_r(i)·sᵢ, about m·k
//!   multiply-adds, against the crate's solving for all intermediate symbols.
//!
//! Both give the crate's bytes exactly. Decodability is the same too: A is invertible (the
//! systematic index of RFC 6330 §5.6 guarantees it), so the received symbols determine the
//! intermediate symbols exactly when they determine the source symbols, that is when the
//! received repair rows restricted to the missing columns have rank m.
//!
//! The rows cost O(k²) bytes to produce, so they serve blocks of up to [`MAX_K`] symbols;
//! the identity encoders of the last few k used are kept in a small process-wide cache.

use crate::gf256;
use ::raptorq::{ObjectTransmissionInformation, SourceBlockEncoder};
use std::sync::{Arc, Mutex, OnceLock};

/// Largest k served by rows. The identity block is k² bytes (64 KiB here); above this k a
/// row costs more than a sixteenth of the crate's intermediate symbols (`docs/codec.md`).
pub(crate) const MAX_K: usize = 256;

/// RFC 6330's octet field: reduction polynomial x^8 + x^4 + x^3 + x^2 + 1, generator 2
/// (§5.7.2, the OCT_EXP and OCT_LOG tables).
const POLYNOMIAL: u16 = 0x11D;

const fn build_exp_log() -> ([u8; 512], [u8; 256]) {
    gf256::exp_log_tables(POLYNOMIAL, 2)
}

const EXP_LOG: ([u8; 512], [u8; 256]) = build_exp_log();
static EXP: [u8; 512] = EXP_LOG.0;
static LOG: [u8; 256] = EXP_LOG.1;

/// Product of two octets.
#[inline]
fn mul(a: u8, b: u8) -> u8 {
    if a == 0 || b == 0 {
        0
    } else {
        EXP[LOG[a as usize] as usize + LOG[b as usize] as usize]
    }
}

/// Inverse of a non-zero octet.
#[inline]
fn inv(a: u8) -> u8 {
    debug_assert_ne!(a, 0);
    EXP[255 - LOG[a as usize] as usize]
}

const fn build_nibbles() -> [[[u8; 16]; 2]; 256] {
    let (exp, log) = build_exp_log();
    let mut t = [[[0u8; 16]; 2]; 256];
    let mut c = 1;
    while c < 256 {
        let mut i = 1;
        while i < 16 {
            t[c][0][i] = exp[log[c] as usize + log[i] as usize];
            t[c][1][i] = exp[log[c] as usize + log[i << 4] as usize];
            i += 1;
        }
        c += 1;
    }
    t
}

/// The split tables of multiplication by each octet: products with the low and high nibble.
static NIBBLES: [[[u8; 16]; 2]; 256] = build_nibbles();

/// `dst ^= c·src` over RaptorQ octets; `dst` and `src` have the same length.
#[inline]
fn mul_add(dst: &mut [u8], src: &[u8], c: u8) {
    if c != 0 {
        let [lo, hi] = &NIBBLES[c as usize];
        gf256::mul_add_nibbles(dst, src, lo, hi);
    }
}

/// The rows g_e of one k: the crate's encoder of the k×k identity block.
pub(crate) struct Rows {
    k: usize,
    identity: SourceBlockEncoder,
}

impl std::fmt::Debug for Rows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rows").field("k", &self.k).finish()
    }
}

/// How many k the process keeps rows for; the oldest is dropped first.
const CACHE: usize = 8;

impl Rows {
    /// The rows of `k` (1..=[`MAX_K`]), from the process-wide cache or built.
    pub(crate) fn get(k: usize) -> Arc<Rows> {
        debug_assert!((1..=MAX_K).contains(&k));
        static ROWS: OnceLock<Mutex<Vec<Arc<Rows>>>> = OnceLock::new();
        let cache = ROWS.get_or_init(|| Mutex::new(Vec::new()));
        let lookup = |rows: &[Arc<Rows>]| rows.iter().find(|r| r.k == k).cloned();
        if let Some(r) = lookup(&cache.lock().unwrap_or_else(|p| p.into_inner())) {
            return r;
        }
        let mut identity = vec![0u8; k * k];
        for i in 0..k {
            identity[i * k + i] = 1;
        }
        // k ≤ MAX_K keeps k² and the symbol size k inside the crate's limits.
        let oti = ObjectTransmissionInformation::new((k * k) as u64, k as u16, 1, 1, 1);
        let built = Arc::new(Rows {
            k,
            identity: SourceBlockEncoder::new(0, &oti, &identity),
        });
        let mut rows = cache.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(r) = lookup(&rows) {
            return r;
        }
        if rows.len() >= CACHE {
            rows.remove(0);
        }
        rows.push(Arc::clone(&built));
        built
    }

    /// g_e for the repair symbol with ESI `esi` (≥ k, < 2^24): k octets.
    pub(crate) fn row(&self, esi: u32) -> Vec<u8> {
        debug_assert!(esi as usize >= self.k);
        let mut packets = self.identity.repair_packets(esi - self.k as u32, 1);
        packets.pop().map(|p| p.split().1).unwrap_or_default()
    }

    /// Writes the repair symbol with ESI `esi` of the block `data` (k symbols of `out.len()`
    /// bytes) into `out`.
    pub(crate) fn encode(&self, esi: u32, data: &[u8], out: &mut [u8]) {
        let t = out.len();
        out.fill(0);
        for (s, &g) in data.chunks_exact(t).zip(&self.row(esi)) {
            mul_add(out, s, g);
        }
    }
}

/// A repair symbol held by a decoder: its ESI, its row (empty for a block above [`MAX_K`])
/// and its bytes.
#[derive(Debug, Clone)]
pub(crate) struct Held {
    pub(crate) esi: u32,
    pub(crate) row: Vec<u8>,
    pub(crate) payload: Vec<u8>,
}

/// Which held repair symbols a decoder chose so far: an echelon basis of their rows
/// restricted to the missing source symbols, kept between attempts so that an attempt after
/// a new repair symbol reduces only that symbol's row (a peer sending many repair symbols
/// that add no rank costs O(m²) octet operations each, not a pass over all held). Rebuilt
/// when a source symbol arrives, as the missing set then changes.
#[derive(Debug, Clone, Default)]
pub(crate) struct Basis {
    /// The number of missing symbols it was built for (the set only shrinks).
    missing: usize,
    /// Held repair symbols examined.
    seen: usize,
    /// (pivot column, row normalised at its pivot), reduced against the earlier rows.
    rows: Vec<(usize, Vec<u8>)>,
    /// Index in `held` of each row's repair symbol.
    chosen: Vec<usize>,
}

/// Whether the repair symbols `held` determine the missing source symbols (`have[i]` false):
/// extends `basis`, the choice of earlier calls, until it holds as many independent rows,
/// restricted to the missing symbols, as there are missing symbols. Scalar work only, O(m²)
/// octet operations per repair symbol examined.
pub(crate) fn determined(have: &[bool], held: &[Held], basis: &mut Basis) -> bool {
    let missing: Vec<usize> = (0..have.len()).filter(|&i| !have[i]).collect();
    let m = missing.len();
    if basis.missing != m || basis.seen > held.len() {
        *basis = Basis {
            missing: m,
            ..Basis::default()
        };
    }
    while basis.chosen.len() < m && basis.seen < held.len() {
        let r = basis.seen;
        basis.seen += 1;
        let mut v: Vec<u8> = missing.iter().map(|&i| held[r].row[i]).collect();
        for (p, b) in &basis.rows {
            let f = v[*p];
            if f != 0 {
                for (x, &y) in v.iter_mut().zip(b) {
                    *x ^= mul(f, y);
                }
            }
        }
        if let Some(p) = v.iter().position(|&x| x != 0) {
            let s = inv(v[p]);
            for x in &mut v {
                *x = mul(*x, s);
            }
            basis.rows.push((p, v));
            basis.chosen.push(r);
        }
    }
    basis.chosen.len() == m
}

/// Recovers the missing source symbols of `block` (k symbols of T bytes; `have[i]` tells
/// which are present, the others are zero) from the repair symbols `held`, with the choice of
/// `basis` (see [`determined`]). Returns `false`, leaving `block` as it was, if the repair
/// rows restricted to the missing symbols have rank below their number.
pub(crate) fn solve(
    block: &mut [u8],
    have: &[bool],
    t: usize,
    held: &[Held],
    basis: &mut Basis,
) -> bool {
    if !determined(have, held, basis) {
        return false;
    }
    let missing: Vec<usize> = (0..have.len()).filter(|&i| !have[i]).collect();
    let m = missing.len();
    let chosen = &basis.chosen;
    // 2. The chosen symbols with the known source symbols' share removed:
    //    y_r = r − Σ_{i∉M} g_r(i)·sᵢ.
    let mut a: Vec<Vec<u8>> = Vec::with_capacity(m);
    let mut y = vec![0u8; m * t];
    for (yr, &r) in y.chunks_exact_mut(t).zip(chosen) {
        let h = &held[r];
        yr.copy_from_slice(&h.payload);
        for (i, s) in block.chunks_exact(t).enumerate() {
            if have[i] {
                mul_add(yr, s, h.row[i]);
            }
        }
        a.push(missing.iter().map(|&i| h.row[i]).collect());
    }
    // 3. Gauss–Jordan on the m×m system a·x = y, the same operations on y's symbols.
    for j in 0..m {
        let Some(p) = (j..m).find(|&r| a[r][j] != 0) else {
            // Unreachable: the rows were chosen independent. Report failure, not a panic.
            return false;
        };
        if p != j {
            a.swap(p, j);
            let (lo, hi) = y.split_at_mut(p * t);
            lo[j * t..(j + 1) * t].swap_with_slice(&mut hi[..t]);
        }
        let pivot_inv = inv(a[j][j]);
        for r in 0..m {
            let f = a[r][j];
            if r == j || f == 0 {
                continue;
            }
            let f = mul(f, pivot_inv);
            let (pivot_row, row) = if r < j {
                let (lo, hi) = a.split_at_mut(j);
                (&hi[0], &mut lo[r])
            } else {
                let (lo, hi) = a.split_at_mut(r);
                (&lo[j], &mut hi[0])
            };
            for (x, &v) in row.iter_mut().zip(pivot_row) {
                *x ^= mul(f, v);
            }
            let (src, dst) = if r < j {
                let (lo, hi) = y.split_at_mut(j * t);
                (&hi[..t], &mut lo[r * t..(r + 1) * t])
            } else {
                let (lo, hi) = y.split_at_mut(r * t);
                (&lo[j * t..(j + 1) * t], &mut hi[..t])
            };
            mul_add(dst, src, f);
        }
    }
    // 4. a is diagonal: sᵢ = y_j / a[j][j] for the j-th missing symbol i (its slot is zero).
    for (j, &i) in missing.iter().enumerate() {
        mul_add(
            &mut block[i * t..(i + 1) * t],
            &y[j * t..(j + 1) * t],
            inv(a[j][j]),
        );
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn octets_form_rfc_6330s_field() {
        // RFC 6330 §5.7.3: OCT_EXP[8] = 29 (x^8 reduced by 0x11D), and every non-zero octet
        // has an inverse.
        assert_eq!(EXP[8], 29);
        for a in 1..=255u8 {
            assert_eq!(mul(a, inv(a)), 1, "a = {a}");
        }
        for a in 0..=255u8 {
            let [lo, hi] = &NIBBLES[a as usize];
            for b in 0..=255u8 {
                assert_eq!(lo[usize::from(b & 15)] ^ hi[usize::from(b >> 4)], mul(a, b));
            }
        }
    }

    #[test]
    fn rows_give_the_crates_repair_symbols() {
        for (k, t) in [(1usize, 8usize), (5, 33), (24, 1400), (100, 64)] {
            let data: Vec<u8> = (0..k * t).map(|i| (i * 7 + i / 13) as u8).collect();
            let oti = ObjectTransmissionInformation::new((k * t) as u64, t as u16, 1, 1, 1);
            let crate_enc = SourceBlockEncoder::new(0, &oti, &data);
            let rows = Rows::get(k);
            for r in [0u32, 1, 2, 17, 1000, (1 << 24) - 1 - k as u32] {
                let theirs = crate_enc.repair_packets(r, 1);
                let mut ours = vec![0xAAu8; t];
                rows.encode(k as u32 + r, &data, &mut ours);
                assert_eq!(ours, theirs[0].data(), "k = {k}, repair {r}");
            }
        }
    }
}
