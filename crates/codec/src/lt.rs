//! LT codes with the robust soliton degree distribution, as specified in the HMTP paper
//! (`shared/papers/hmtp.txt`, Eqs. 1–4).
//!
//! **Distribution.** With k source symbols, a constant c > 0 and a target failure probability
//! δ ∈ (0, 1):
//!
//! * ideal soliton (Eq. 1): ρ(1) = 1/k, ρ(d) = 1/(d(d−1)) for d = 2..k;
//! * S = c·ln(k/δ)·√k (Eq. 2), the expected number of degree-1 symbols;
//! * τ(d) = S/(dk) for d < k/S, τ(k/S) = S·ln(S/δ)/k, τ(d) = 0 beyond (Eq. 3);
//! * β = Σ ρ(d) + τ(d), μ(d) = (ρ(d) + τ(d))/β (Eq. 4).
//!
//! The paper leaves k/S unrounded; we put the spike at `M = round(k/S)` clamped to 1..=k (so
//! τ(d) = S/(dk) for d = 1..M−1). Luby's analysis says kβ received symbols decode with
//! probability ≥ 1 − δ; [`RobustSoliton::beta`] exposes β.
//!
//! **Symbols.** An encoded symbol is identified by [`LtSymbolId`] `(block, seed)`. Both sides
//! run the same procedure on it: a ChaCha8 stream keyed by `(block, seed)` gives the degree d
//! (inverse CDF of μ on a 53-bit uniform), then d distinct neighbours, each drawn as
//! `⌊x·k / 2^64⌋` for the next 64-bit output x and redrawn if already chosen. The symbol is the
//! XOR of its neighbours. Nothing else travels on the wire.
//!
//! **Decoding.** [`LtDecoder`] is the message-passing (peeling) decoder HMTP uses: a symbol
//! whose undecoded neighbours drop to one releases that source, which is then XORed out of every
//! other symbol containing it. Peeling can stall with enough symbols for a unique solution;
//! [`LtDecoder::solve`] completes it by Gaussian elimination over GF(2) on the residual
//! symbols, and [`LtDecoder::with_elimination`] makes the decoder track the GF(2) rank of what it
//! received and run that completion as soon as the rank reaches k.

use crate::error::{check_len, Error, Result};
use crate::gf256::Kernel;
use crate::known::Known;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use std::sync::Arc;

/// Largest supported number of source symbols per block.
pub const MAX_SOURCE_SYMBOLS: usize = 1 << 16;
/// Largest supported symbol size in bytes.
pub const MAX_SYMBOL_SIZE: usize = 1 << 16;

/// The robust soliton distribution μ of HMTP Eqs. 1–4 over degrees 1..=k.
#[derive(Debug, Clone, PartialEq)]
pub struct RobustSoliton {
    k: usize,
    c: f64,
    delta: f64,
    s: f64,
    spike: usize,
    beta: f64,
    /// `cdf[d − 1] = P(degree ≤ d)`.
    cdf: Vec<f64>,
}

impl RobustSoliton {
    /// The distribution for k source symbols, constant c and target failure probability δ.
    ///
    /// Errors if k ∉ 1..=[`MAX_SOURCE_SYMBOLS`], c is not a positive finite number, δ ∉ (0, 1),
    /// or S ≤ δ (then τ(k/S) = S·ln(S/δ)/k would be negative and μ not a distribution).
    pub fn new(k: usize, c: f64, delta: f64) -> Result<Self> {
        if !(1..=MAX_SOURCE_SYMBOLS).contains(&k) {
            return Err(Error::BlockSizeOutOfRange {
                k,
                min: 1,
                max: MAX_SOURCE_SYMBOLS,
            });
        }
        if !(c.is_finite() && c > 0.0) {
            return Err(Error::InvalidParameter {
                name: "c",
                reason: "must be a positive finite number",
            });
        }
        if !(delta > 0.0 && delta < 1.0) {
            return Err(Error::InvalidParameter {
                name: "delta",
                reason: "must be in (0, 1)",
            });
        }
        let kf = k as f64;
        let s = c * (kf / delta).ln() * kf.sqrt();
        if s <= delta {
            return Err(Error::InvalidParameter {
                name: "c",
                reason: "too small: S = c·ln(k/δ)·√k must exceed δ",
            });
        }
        let spike = ((kf / s).round() as usize).clamp(1, k);
        let mut weights = vec![0.0; k];
        for (i, w) in weights.iter_mut().enumerate() {
            let d = i + 1;
            let df = d as f64;
            let rho = if d == 1 {
                1.0 / kf
            } else {
                1.0 / (df * (df - 1.0))
            };
            let tau = if d < spike {
                s / (df * kf)
            } else if d == spike {
                s * (s / delta).ln() / kf
            } else {
                0.0
            };
            *w = rho + tau;
        }
        let beta: f64 = weights.iter().sum();
        let mut acc = 0.0;
        let cdf = weights
            .iter()
            .map(|w| {
                acc += w / beta;
                acc
            })
            .collect();
        Ok(Self {
            k,
            c,
            delta,
            s,
            spike,
            beta,
            cdf,
        })
    }

    /// k, the number of source symbols.
    pub fn k(&self) -> usize {
        self.k
    }

    /// The constant c.
    pub fn c(&self) -> f64 {
        self.c
    }

    /// The target failure probability δ.
    pub fn delta(&self) -> f64 {
        self.delta
    }

    /// S = c·ln(k/δ)·√k (Eq. 2).
    pub fn s(&self) -> f64 {
        self.s
    }

    /// The degree of the spike, round(k/S) clamped to 1..=k.
    pub fn spike(&self) -> usize {
        self.spike
    }

    /// The normalisation β = Σ ρ + τ (Eq. 4); kβ is Luby's number of symbols for success with
    /// probability ≥ 1 − δ.
    pub fn beta(&self) -> f64 {
        self.beta
    }

    /// μ(d), zero outside 1..=k.
    pub fn pmf(&self, d: usize) -> f64 {
        match d {
            0 => 0.0,
            1 => self.cdf[0],
            d if d <= self.k => self.cdf[d - 1] - self.cdf[d - 2],
            _ => 0.0,
        }
    }

    /// Mean degree Σ d·μ(d).
    pub fn mean_degree(&self) -> f64 {
        (1..=self.k).map(|d| d as f64 * self.pmf(d)).sum()
    }

    /// The degree for a uniform `u ∈ [0, 1)` (inverse CDF).
    pub fn degree_for(&self, u: f64) -> usize {
        (self.cdf.partition_point(|&x| x <= u) + 1).min(self.k)
    }
}

/// Validated parameters of an LT code: k, symbol size and the degree distribution.
#[derive(Debug, Clone)]
pub struct LtParams {
    symbol_size: usize,
    dist: Arc<RobustSoliton>,
}

impl LtParams {
    /// k source symbols of `symbol_size` bytes, robust soliton with constant c and target δ.
    ///
    /// Errors as [`RobustSoliton::new`], or if the symbol size ∉ 1..=[`MAX_SYMBOL_SIZE`].
    pub fn new(k: usize, symbol_size: usize, c: f64, delta: f64) -> Result<Self> {
        if !(1..=MAX_SYMBOL_SIZE).contains(&symbol_size) {
            return Err(Error::SymbolSizeOutOfRange {
                size: symbol_size,
                min: 1,
                max: MAX_SYMBOL_SIZE,
            });
        }
        Ok(Self {
            symbol_size,
            dist: Arc::new(RobustSoliton::new(k, c, delta)?),
        })
    }

    /// k, the number of source symbols per block.
    pub fn k(&self) -> usize {
        self.dist.k
    }

    /// The symbol size in bytes.
    pub fn symbol_size(&self) -> usize {
        self.symbol_size
    }

    /// The degree distribution.
    pub fn distribution(&self) -> &RobustSoliton {
        &self.dist
    }

    /// Writes the neighbours of symbol `id` (distinct source indices, in drawing order) into
    /// `out`, replacing its contents. Sender and receiver get the same list.
    pub fn neighbours(&self, id: LtSymbolId, out: &mut Vec<u32>) {
        let k = self.dist.k;
        let mut key = [0u8; 32];
        key[..16].copy_from_slice(b"tributary-lt-v1\0");
        key[16..20].copy_from_slice(&id.block.to_le_bytes());
        key[20..24].copy_from_slice(&id.seed.to_le_bytes());
        let mut rng = ChaCha8Rng::from_seed(key);
        let u = (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
        let d = self.dist.degree_for(u);
        out.clear();
        let mut draw = || ((u128::from(rng.next_u64()) * k as u128) >> 64) as u32;
        if d <= 64 {
            while out.len() < d {
                let x = draw();
                if !out.contains(&x) {
                    out.push(x);
                }
            }
        } else {
            let mut seen = vec![0u64; k.div_ceil(64)];
            while out.len() < d {
                let x = draw();
                let (w, b) = (x as usize / 64, x % 64);
                if seen[w] & (1 << b) == 0 {
                    seen[w] |= 1 << b;
                    out.push(x);
                }
            }
        }
    }
}

/// Identity of an encoded symbol: the block it belongs to and its seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LtSymbolId {
    /// Block (HMTP chunk) id.
    pub block: u32,
    /// Seed of the symbol's degree and neighbours.
    pub seed: u32,
}

/// Produces encoded symbols of one block (the sender side).
#[derive(Debug, Clone)]
pub struct LtEncoder {
    params: LtParams,
    block: u32,
    data: Vec<u8>,
    neighbours: Vec<u32>,
    kernel: Kernel,
}

impl LtEncoder {
    /// An encoder for block `block` over `data`, which must be exactly k·T bytes.
    pub fn new(params: LtParams, block: u32, data: &[u8]) -> Result<Self> {
        check_len(params.k() * params.symbol_size, data.len())?;
        Ok(Self {
            params,
            block,
            data: data.to_vec(),
            neighbours: Vec::new(),
            kernel: Kernel::best(),
        })
    }

    /// The parameters.
    pub fn params(&self) -> &LtParams {
        &self.params
    }

    /// Writes the symbol with this seed into `out` (T bytes) and returns its id.
    pub fn encode(&mut self, seed: u32, out: &mut [u8]) -> Result<LtSymbolId> {
        let t = self.params.symbol_size;
        check_len(t, out.len())?;
        let id = LtSymbolId {
            block: self.block,
            seed,
        };
        self.params.neighbours(id, &mut self.neighbours);
        out.fill(0);
        for &n in &self.neighbours {
            let n = n as usize;
            // SAFETY: the kernel is available; both slices have T bytes.
            unsafe {
                self.kernel
                    .xor_unchecked(out, &self.data[n * t..(n + 1) * t])
            };
        }
        Ok(id)
    }
}

/// What one [`LtDecoder::push`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LtProgress {
    /// Source symbols that became known because of this symbol.
    pub newly_decoded: usize,
    /// Source symbols known.
    pub decoded: usize,
    /// GF(2) rank of everything received, when the decoder tracks it
    /// ([`LtDecoder::with_elimination`]).
    pub rank: Option<usize>,
    /// Whether the whole block is known.
    pub complete: bool,
}

/// Echelon form of the received neighbour sets over GF(2), without payloads: tells exactly
/// when the received symbols determine the block.
#[derive(Debug, Clone)]
struct RankTracker {
    words: usize,
    /// Row with lowest set bit b, if any.
    rows: Vec<Option<Box<[u64]>>>,
    rank: usize,
    scratch: Vec<u64>,
}

impl RankTracker {
    fn new(k: usize) -> Self {
        Self {
            words: k.div_ceil(64),
            rows: vec![None; k],
            rank: 0,
            scratch: vec![0; k.div_ceil(64)],
        }
    }

    fn insert(&mut self, neighbours: &[u32]) {
        let v = &mut self.scratch;
        v.fill(0);
        for &n in neighbours {
            v[n as usize / 64] |= 1 << (n % 64);
        }
        let mut w = 0;
        while w < self.words {
            if v[w] == 0 {
                w += 1;
                continue;
            }
            let b = w * 64 + v[w].trailing_zeros() as usize;
            match &self.rows[b] {
                Some(row) => {
                    for (x, r) in v[w..].iter_mut().zip(&row[w..]) {
                        *x ^= r;
                    }
                }
                None => {
                    self.rows[b] = Some(v.clone().into_boxed_slice());
                    self.rank += 1;
                    return;
                }
            }
        }
    }
}

/// Peeling decoder of one block, with optional Gaussian-elimination completion (the receiver
/// side).
#[derive(Debug, Clone)]
pub struct LtDecoder {
    params: LtParams,
    block: u32,
    kernel: Kernel,
    data: Vec<u8>,
    known: Known,
    received: usize,
    /// Stored symbols: payload (already XORed with their decoded neighbours), undecoded
    /// neighbours, count of undecoded neighbours, whether still useful.
    sym_data: Vec<u8>,
    sym_neigh: Vec<u32>,
    sym_start: Vec<usize>,
    sym_remaining: Vec<u32>,
    sym_active: Vec<bool>,
    /// Stored symbols containing each undecoded source.
    adjacency: Vec<Vec<u32>>,
    ripple: Vec<u32>,
    neighbours: Vec<u32>,
    tracker: Option<RankTracker>,
}

impl LtDecoder {
    /// A peeling-only decoder for block `block` (the HMTP decoder).
    pub fn new(params: LtParams, block: u32) -> Self {
        let k = params.k();
        Self {
            kernel: Kernel::best(),
            data: vec![0; k * params.symbol_size],
            known: Known::new(k),
            received: 0,
            sym_data: Vec::new(),
            sym_neigh: Vec::new(),
            sym_start: Vec::new(),
            sym_remaining: Vec::new(),
            sym_active: Vec::new(),
            adjacency: vec![Vec::new(); k],
            ripple: Vec::new(),
            neighbours: Vec::new(),
            tracker: None,
            params,
            block,
        }
    }

    /// A decoder that also tracks the GF(2) rank of the received symbols and completes a
    /// stalled peel by Gaussian elimination as soon as the rank reaches k. Costs about
    /// rank·k/64 word operations per symbol.
    pub fn with_elimination(params: LtParams, block: u32) -> Self {
        let mut d = Self::new(params, block);
        d.tracker = Some(RankTracker::new(d.params.k()));
        d
    }

    /// The parameters.
    pub fn params(&self) -> &LtParams {
        &self.params
    }

    /// Adds a received symbol.
    ///
    /// Errors (and changes nothing) if the symbol belongs to another block or `payload` is not
    /// T bytes.
    pub fn push(&mut self, id: LtSymbolId, payload: &[u8]) -> Result<LtProgress> {
        let t = self.params.symbol_size;
        check_len(t, payload.len())?;
        if id.block != self.block {
            return Err(Error::UnknownSymbol {
                id: u64::from(id.block),
                limit: u64::from(self.block),
            });
        }
        self.received += 1;
        let before = self.known.count();
        if !self.is_complete() {
            self.params.neighbours(id, &mut self.neighbours);
            if let Some(tr) = &mut self.tracker {
                tr.insert(&self.neighbours);
            }
            self.store(payload);
            self.peel();
            let full_rank = self
                .tracker
                .as_ref()
                .is_some_and(|tr| tr.rank == tr.rows.len());
            if !self.is_complete() && full_rank {
                self.solve();
            }
        }
        Ok(LtProgress {
            newly_decoded: self.known.count() - before,
            decoded: self.known.count(),
            rank: self.rank(),
            complete: self.is_complete(),
        })
    }

    /// Stores the symbol whose neighbours are in `self.neighbours`, reduced by the sources
    /// already known.
    fn store(&mut self, payload: &[u8]) {
        let t = self.params.symbol_size;
        let idx = self.sym_remaining.len() as u32;
        let off = self.sym_data.len();
        self.sym_data.extend_from_slice(payload);
        let start = self.sym_neigh.len();
        for &n in &self.neighbours {
            let n = n as usize;
            if self.known.contains(n) {
                // SAFETY: the kernel is available; both slices have T bytes.
                unsafe {
                    self.kernel.xor_unchecked(
                        &mut self.sym_data[off..off + t],
                        &self.data[n * t..(n + 1) * t],
                    )
                };
            } else {
                self.sym_neigh.push(n as u32);
            }
        }
        let remaining = (self.sym_neigh.len() - start) as u32;
        if remaining == 0 {
            // Carries nothing new: forget it.
            self.sym_data.truncate(off);
            self.sym_neigh.truncate(start);
            return;
        }
        for &n in &self.sym_neigh[start..] {
            self.adjacency[n as usize].push(idx);
        }
        self.sym_start.push(start);
        self.sym_remaining.push(remaining);
        self.sym_active.push(true);
        if remaining == 1 {
            self.ripple.push(idx);
        }
    }

    fn symbol_neighbours(&self, e: usize) -> &[u32] {
        let end = self
            .sym_start
            .get(e + 1)
            .copied()
            .unwrap_or(self.sym_neigh.len());
        &self.sym_neigh[self.sym_start[e]..end]
    }

    /// Message passing: resolve degree-one symbols until none is left.
    fn peel(&mut self) {
        let t = self.params.symbol_size;
        while let Some(e) = self.ripple.pop() {
            let e = e as usize;
            if !self.sym_active[e] || self.sym_remaining[e] != 1 {
                continue;
            }
            self.sym_active[e] = false;
            let Some(&n) = self
                .symbol_neighbours(e)
                .iter()
                .find(|&&n| !self.known.contains(n as usize))
            else {
                continue;
            };
            let n = n as usize;
            self.data[n * t..(n + 1) * t].copy_from_slice(&self.sym_data[e * t..(e + 1) * t]);
            self.mark_decoded(n);
            for e2 in std::mem::take(&mut self.adjacency[n]) {
                let e2 = e2 as usize;
                if !self.sym_active[e2] {
                    continue;
                }
                // SAFETY: the kernel is available; both slices have T bytes.
                unsafe {
                    self.kernel.xor_unchecked(
                        &mut self.sym_data[e2 * t..(e2 + 1) * t],
                        &self.data[n * t..(n + 1) * t],
                    )
                };
                self.sym_remaining[e2] -= 1;
                match self.sym_remaining[e2] {
                    0 => self.sym_active[e2] = false,
                    1 => self.ripple.push(e2 as u32),
                    _ => {}
                }
            }
        }
    }

    fn mark_decoded(&mut self, i: usize) {
        self.known.mark(i);
    }

    /// Completes decoding by Gaussian elimination over GF(2) on the symbols the peel could not
    /// use. Returns whether the block is now complete; if the received symbols do not determine
    /// the block, nothing changes and the result is `false`.
    pub fn solve(&mut self) -> bool {
        if self.is_complete() {
            return true;
        }
        let t = self.params.symbol_size;
        let k = self.params.k();
        let mut col_of = vec![u32::MAX; k];
        let unknowns: Vec<usize> = (0..k).filter(|&i| !self.known.contains(i)).collect();
        for (c, &i) in unknowns.iter().enumerate() {
            col_of[i] = c as u32;
        }
        let u = unknowns.len();
        let words = u.div_ceil(64);
        let active: Vec<usize> = (0..self.sym_active.len())
            .filter(|&e| self.sym_active[e])
            .collect();
        if active.len() < u {
            return false;
        }
        let mut bits = vec![0u64; active.len() * words];
        let mut payload = vec![0u8; active.len() * t];
        for (r, &e) in active.iter().enumerate() {
            for &n in self.symbol_neighbours(e) {
                if !self.known.contains(n as usize) {
                    let c = col_of[n as usize] as usize;
                    bits[r * words + c / 64] |= 1 << (c % 64);
                }
            }
            payload[r * t..(r + 1) * t].copy_from_slice(&self.sym_data[e * t..(e + 1) * t]);
        }
        // Gauss–Jordan: after column c is processed, row c is its pivot and no other row has
        // bit c.
        let rows = active.len();
        for c in 0..u {
            let (w, b) = (c / 64, 1u64 << (c % 64));
            let Some(p) = (c..rows).find(|&r| bits[r * words + w] & b != 0) else {
                return false;
            };
            if p != c {
                for x in 0..words {
                    bits.swap(c * words + x, p * words + x);
                }
                let (lo, hi) = payload.split_at_mut(p * t);
                lo[c * t..(c + 1) * t].swap_with_slice(&mut hi[..t]);
            }
            for r in 0..rows {
                if r == c || bits[r * words + w] & b == 0 {
                    continue;
                }
                let (dst_bits, src_bits, dst_pay, src_pay) = if r < c {
                    let (lo, hi) = bits.split_at_mut(c * words);
                    let (plo, phi) = payload.split_at_mut(c * t);
                    (
                        &mut lo[r * words..(r + 1) * words],
                        &hi[..words],
                        &mut plo[r * t..(r + 1) * t],
                        &phi[..t],
                    )
                } else {
                    let (lo, hi) = bits.split_at_mut(r * words);
                    let (plo, phi) = payload.split_at_mut(r * t);
                    (
                        &mut hi[..words],
                        &lo[c * words..(c + 1) * words],
                        &mut phi[..t],
                        &plo[c * t..(c + 1) * t],
                    )
                };
                for (d, s) in dst_bits[w..].iter_mut().zip(&src_bits[w..]) {
                    *d ^= s;
                }
                // SAFETY: the kernel is available; both slices have T bytes.
                unsafe { self.kernel.xor_unchecked(dst_pay, src_pay) };
            }
        }
        for (c, &i) in unknowns.iter().enumerate() {
            self.data[i * t..(i + 1) * t].copy_from_slice(&payload[c * t..(c + 1) * t]);
            self.mark_decoded(i);
        }
        self.sym_active.iter_mut().for_each(|a| *a = false);
        self.adjacency.iter_mut().for_each(Vec::clear);
        true
    }

    /// GF(2) rank of the received symbols, if tracked ([`LtDecoder::with_elimination`]).
    pub fn rank(&self) -> Option<usize> {
        self.tracker.as_ref().map(|tr| tr.rank)
    }

    /// Symbols pushed so far (malformed ones not counted).
    pub fn received(&self) -> usize {
        self.received
    }

    /// Number of source symbols known.
    pub fn decoded_count(&self) -> usize {
        self.known.count()
    }

    /// Whether every source symbol is known.
    pub fn is_complete(&self) -> bool {
        self.known.is_complete()
    }

    /// Whether source symbol i is known.
    pub fn is_decoded(&self, i: usize) -> bool {
        self.known.contains(i)
    }

    /// Source symbol i, once known.
    pub fn source_symbol(&self, i: usize) -> Option<&[u8]> {
        let t = self.params.symbol_size;
        self.is_decoded(i).then(|| &self.data[i * t..(i + 1) * t])
    }

    /// The index of a source symbol decoded since the last call, in the order they became
    /// known.
    pub fn pop_decoded(&mut self) -> Option<usize> {
        self.known.pop()
    }

    /// The whole block (k·T bytes), once complete.
    pub fn data(&self) -> Result<&[u8]> {
        if self.is_complete() {
            Ok(&self.data)
        } else {
            Err(Error::NotDecoded {
                decoded: self.known.count(),
                k: self.params.k(),
            })
        }
    }

    /// Consumes the decoder and returns the block, once complete.
    pub fn into_data(self) -> Result<Vec<u8>> {
        self.data()?;
        Ok(self.data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distribution_matches_equations() {
        let k = 1000;
        let (c, delta) = (0.057, 0.03);
        let d = RobustSoliton::new(k, c, delta).unwrap();
        let s = c * (1000.0f64 / 0.03).ln() * 1000f64.sqrt();
        assert!((d.s() - s).abs() < 1e-12);
        assert_eq!(d.spike(), (1000.0 / s).round() as usize);
        // β by direct summation of Eqs. 1 and 3.
        let kf = k as f64;
        let mut beta = 1.0 / kf + s / kf;
        for i in 2..=k {
            let x = i as f64;
            beta += 1.0 / (x * (x - 1.0));
            if i < d.spike() {
                beta += s / (x * kf);
            }
        }
        beta += s * (s / delta).ln() / kf;
        assert!((d.beta() - beta).abs() < 1e-9, "{} vs {beta}", d.beta());
        let total: f64 = (1..=k).map(|i| d.pmf(i)).sum();
        assert!((total - 1.0).abs() < 1e-9);
        assert!((d.pmf(2) - (0.5 + s / (2.0 * kf)) / beta).abs() < 1e-12);
        // Beyond the spike τ = 0, only the ideal soliton remains.
        let m = (d.spike() + 1) as f64;
        assert!((d.pmf(d.spike() + 1) - 1.0 / (m * (m - 1.0)) / beta).abs() < 1e-12);
    }

    #[test]
    fn neighbours_are_distinct_in_range_and_reproducible() {
        let p = LtParams::new(100, 1, 0.1, 0.05).unwrap();
        let mut a = Vec::new();
        let mut b = Vec::new();
        for seed in 0..2000 {
            let id = LtSymbolId { block: 3, seed };
            p.neighbours(id, &mut a);
            p.neighbours(id, &mut b);
            assert_eq!(a, b);
            let mut s = a.clone();
            s.sort_unstable();
            s.dedup();
            assert_eq!(s.len(), a.len());
            assert!(a.iter().all(|&n| n < 100));
        }
    }

    #[test]
    fn bad_parameters_are_errors() {
        assert!(RobustSoliton::new(0, 0.1, 0.1).is_err());
        assert!(RobustSoliton::new(10, 0.0, 0.1).is_err());
        assert!(RobustSoliton::new(10, f64::NAN, 0.1).is_err());
        assert!(RobustSoliton::new(10, 0.1, 1.0).is_err());
        assert!(RobustSoliton::new(10, 0.1, 0.0).is_err());
        assert!(RobustSoliton::new(10, 1e-6, 0.5).is_err());
        assert!(LtParams::new(10, 0, 0.1, 0.1).is_err());
    }
}
