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
//! [`LtDecoder::solve`] completes it exactly (whenever the GF(2) rank is k, like Gaussian
//! elimination) by inactivation decoding (RFC 6330 §5.4.2): the elimination runs on bit-packed
//! rows only, and the payloads are then computed in one pass whose XOR count follows the
//! residual symbols' degrees plus a small dense core. [`LtDecoder::with_elimination`] makes the
//! decoder track the GF(2) rank of what it received and run that completion as soon as the
//! rank reaches k.

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

/// Marks a row slot of the [`RankTracker`] arena as absent.
const NO_ROW: u32 = u32::MAX;

/// Echelon basis, over GF(2) and without payloads, of the received symbols' *residual* rows:
/// their neighbour sets restricted to the sources not yet known. Tells exactly when the
/// received symbols determine the block.
///
/// Let R be the row space of everything received and D the sources known (every known source
/// is determined, so e_i ∈ R for i ∈ D). Then rank R = |D| + rank P(R), P the projection onto
/// the unknown sources; this tracker holds an echelon basis of P(R). When a source n becomes
/// known, e_n ∈ P(R), so the basis has a row whose lowest unknown bit is n: dropping that row
/// and masking bit n out of the others leaves an echelon basis of the new P(R) (the others keep
/// their lowest unknown bit). Bits of known sources are left in the stored rows and ignored
/// through `unknown`, so a newly known source costs O(1).
#[derive(Debug, Clone)]
struct RankTracker {
    words: usize,
    /// Arena slot of the row whose lowest unknown bit is b, or [`NO_ROW`].
    pivot: Vec<u32>,
    arena: Vec<u64>,
    free: Vec<u32>,
    /// Bit i set while source i is unknown.
    unknown: Vec<u64>,
    /// rank P(R).
    rank: usize,
    scratch: Vec<u64>,
}

impl RankTracker {
    fn new(k: usize) -> Self {
        let words = k.div_ceil(64);
        let mut unknown = vec![u64::MAX; words];
        if k % 64 != 0 {
            unknown[words - 1] = (1u64 << (k % 64)) - 1;
        }
        Self {
            words,
            pivot: vec![NO_ROW; k],
            arena: Vec::new(),
            free: Vec::new(),
            unknown,
            rank: 0,
            scratch: vec![0; words],
        }
    }

    /// Adds a residual row (its neighbours, all unknown).
    fn insert(&mut self, neighbours: &[u32]) {
        let Self {
            words,
            pivot,
            arena,
            free,
            unknown,
            rank,
            scratch: v,
        } = self;
        let words = *words;
        v.fill(0);
        for &n in neighbours {
            v[n as usize / 64] |= 1 << (n % 64);
        }
        let mut w = 0;
        while w < words {
            let x = v[w] & unknown[w];
            if x == 0 {
                w += 1;
                continue;
            }
            let b = w * 64 + x.trailing_zeros() as usize;
            let slot = pivot[b];
            if slot == NO_ROW {
                let slot = free.pop().unwrap_or_else(|| {
                    arena.resize(arena.len() + words, 0);
                    (arena.len() / words - 1) as u32
                });
                let s = slot as usize * words;
                arena[s..s + words].copy_from_slice(v);
                pivot[b] = slot;
                *rank += 1;
                return;
            }
            let s = slot as usize * words;
            for (x, r) in v[w..].iter_mut().zip(&arena[s + w..s + words]) {
                *x ^= r;
            }
        }
    }

    /// Source n became known.
    fn forget(&mut self, n: usize) {
        self.unknown[n / 64] &= !(1 << (n % 64));
        let slot = std::mem::replace(&mut self.pivot[n], NO_ROW);
        if slot != NO_ROW {
            self.free.push(slot);
            self.rank -= 1;
        }
    }
}

/// Role of an unknown source (a column) in an inactivation plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Column {
    Unresolved,
    /// Released by a row: its value is that row minus its other (earlier) columns.
    Pivot,
    /// Inactivated: solved in the dense core.
    Inactive,
}

/// The binary half of an inactivation decode (see [`LtDecoder::solve`]): which row releases
/// which source and in what order, which sources are inactivated, and how the core rows give
/// the inactivated sources. Indices: "row" is a position in `rows`, "column" a position in
/// `unknowns`.
#[derive(Debug)]
struct Plan {
    /// Source of each column.
    unknowns: Vec<u32>,
    /// Stored symbol of each row.
    rows: Vec<u32>,
    /// Columns of row r: `row_cols[row_start[r]..row_start[r + 1]]`.
    row_start: Vec<usize>,
    row_cols: Vec<u32>,
    state: Vec<Column>,
    /// (row, column) in release order; the row's other columns are earlier pivots or inactive.
    pivots: Vec<(u32, u32)>,
    /// Inactivated columns; position j is inactive variable j.
    inactive: Vec<u32>,
    /// Per pivot (same order), `iw` words: the inactive variables its value depends on.
    ivec: Vec<u64>,
    iw: usize,
    /// i core rows with independent inactive parts.
    core: Vec<u32>,
    /// Gauss–Jordan on the core: `(dst, src)` means core slot dst ^= core slot src.
    ops: Vec<(u32, u32)>,
    /// Core slot holding inactive variable j once `ops` are applied.
    owner: Vec<u32>,
}

impl Plan {
    fn cols(&self, r: usize) -> &[u32] {
        &self.row_cols[self.row_start[r]..self.row_start[r + 1]]
    }
}

/// `buf[dst] ^= buf[src]`, blocks of `t` bytes, `dst != src`.
fn xor_blocks(kernel: Kernel, buf: &mut [u8], t: usize, dst: usize, src: usize) {
    let (d, s) = if dst < src {
        let (lo, hi) = buf.split_at_mut(src * t);
        (&mut lo[dst * t..(dst + 1) * t], &hi[..t])
    } else {
        let (lo, hi) = buf.split_at_mut(dst * t);
        (&mut hi[..t], &lo[src * t..(src + 1) * t])
    };
    // SAFETY: the kernel is available; both slices have T bytes.
    unsafe { kernel.xor_unchecked(d, s) };
}

/// XORs `v` (`w` words) into row `dst` of `m` where `v` is row `src < dst` of `m`.
fn xor_words(m: &mut [u64], w: usize, dst: usize, src: usize) {
    debug_assert!(src < dst);
    let (lo, hi) = m.split_at_mut(dst * w);
    for (d, s) in hi[..w].iter_mut().zip(&lo[src * w..(src + 1) * w]) {
        *d ^= s;
    }
}

/// Peeling decoder of one block, with optional exact completion by inactivation decoding (the
/// receiver side).
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
    /// stalled peel ([`LtDecoder::solve`]) as soon as the rank reaches k. The tracking works on
    /// the residual rows (sources not yet peeled) and costs at most rank·k/64 word operations
    /// per symbol.
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
            self.store(payload);
            self.peel();
            let k = self.params.k();
            let full_rank = self
                .tracker
                .as_ref()
                .is_some_and(|tr| self.known.count() + tr.rank == k);
            if !self.is_complete() && full_rank {
                let solved = self.solve();
                debug_assert!(solved, "full rank but the inactivation decode failed");
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
    /// already known, and adds its residual row to the rank tracker.
    fn store(&mut self, payload: &[u8]) {
        let t = self.params.symbol_size;
        if self.sym_data.capacity() == 0 {
            // About k symbols are stored before a block completes: one allocation.
            self.sym_data.reserve(self.params.k() * t);
        }
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
        if let Some(tr) = &mut self.tracker {
            tr.insert(&self.sym_neigh[start..]);
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
        if let Some(tr) = &mut self.tracker {
            tr.forget(i);
        }
    }

    /// Completes decoding from the symbols the peel could not use, by inactivation decoding
    /// (the method RFC 6330 §5.4.2 describes for RaptorQ, applied to LT rows). Returns whether
    /// the block is now complete; if the received symbols do not determine the block (their
    /// GF(2) rank is below k), nothing changes and the result is `false`. The outcome is the
    /// same as Gaussian elimination's: complete exactly when the rank is k.
    ///
    /// First on the bit-level rows only: peel; when no row has a single unresolved source,
    /// take a row of least unresolved degree and *inactivate* all its unresolved sources but
    /// the one of fewest rows (they become unknowns of a small dense core), and go on peeling.
    /// Each released source is then its row's payload plus a combination of inactive
    /// variables; the rows not used to release anything give equations in the inactive
    /// variables only (the Schur complement of the triangular peeled part), solved by
    /// Gauss–Jordan; full rank ⇔ that core has full rank. Only then are payloads touched: each
    /// released source's payload with the inactive part left out, in release order; the
    /// core's right-hand sides; the core's row operations; and each released source finished
    /// by adding its inactive variables or by re-reading its row, whichever is fewer XORs. The
    /// payload work is about twice the residual rows' degrees plus the core's i² (i inactive
    /// sources), instead of Gauss–Jordan's rows × unknowns.
    pub fn solve(&mut self) -> bool {
        if self.is_complete() {
            return true;
        }
        let Some(plan) = self.plan() else {
            return false;
        };
        self.execute(&plan);
        true
    }

    /// The binary half of [`LtDecoder::solve`]; `None` when the rank is below k.
    fn plan(&self) -> Option<Plan> {
        let k = self.params.k();
        let mut col_of = vec![u32::MAX; k];
        let mut unknowns = Vec::new();
        for i in 0..k {
            if !self.known.contains(i) {
                col_of[i] = unknowns.len() as u32;
                unknowns.push(i as u32);
            }
        }
        let u = unknowns.len();
        let rows: Vec<u32> = (0..self.sym_active.len() as u32)
            .filter(|&e| self.sym_active[e as usize])
            .collect();
        if rows.len() < u {
            return None;
        }
        let m = rows.len();
        let mut row_start = Vec::with_capacity(m + 1);
        let mut row_cols = Vec::new();
        for &e in &rows {
            row_start.push(row_cols.len());
            row_cols.extend(
                self.symbol_neighbours(e as usize)
                    .iter()
                    .filter(|&&n| !self.known.contains(n as usize))
                    .map(|&n| col_of[n as usize]),
            );
        }
        row_start.push(row_cols.len());
        // Columns → rows.
        let mut col_start = vec![0usize; u + 1];
        for &c in &row_cols {
            col_start[c as usize + 1] += 1;
        }
        for c in 0..u {
            col_start[c + 1] += col_start[c];
        }
        let mut fill = col_start.clone();
        let mut col_rows = vec![0u32; row_cols.len()];
        for r in 0..m {
            for &c in &row_cols[row_start[r]..row_start[r + 1]] {
                col_rows[fill[c as usize]] = r as u32;
                fill[c as usize] += 1;
            }
        }
        let col_degree = |c: u32| col_start[c as usize + 1] - col_start[c as usize];

        // Peeling with inactivation. `count[r]`: unresolved columns of row r. Every row
        // containing an unresolved column is unused (a row releases only its last one).
        let mut count: Vec<u32> = (0..m)
            .map(|r| (row_start[r + 1] - row_start[r]) as u32)
            .collect();
        let mut state = vec![Column::Unresolved; u];
        let mut used = vec![false; m];
        let mut ripple: Vec<u32> = (0..m as u32).filter(|&r| count[r as usize] == 1).collect();
        // Rows whose count dropped to 2 (checked when popped): where inactivation looks first.
        let mut pairs: Vec<u32> = (0..m as u32).filter(|&r| count[r as usize] == 2).collect();
        let mut pivots = Vec::with_capacity(u);
        let mut inactive = Vec::new();
        let mut resolved = 0;
        let mut cols = Vec::new();
        while resolved < u {
            let chosen = if let Some(r) = ripple.pop() {
                let r = r as usize;
                if used[r] || count[r] != 1 {
                    continue;
                }
                let c = *row_cols[row_start[r]..row_start[r + 1]]
                    .iter()
                    .find(|&&c| state[c as usize] == Column::Unresolved)?;
                used[r] = true;
                state[c as usize] = Column::Pivot;
                pivots.push((r as u32, c));
                cols.clear();
                cols.push(c);
                &cols
            } else {
                // Stalled. A row of least unresolved degree ≥ 2 (2 if any, from `pairs`);
                // none means an unresolved column that no row contains: rank < k.
                while pairs
                    .last()
                    .is_some_and(|&r| used[r as usize] || count[r as usize] != 2)
                {
                    pairs.pop();
                }
                let r = match pairs.last() {
                    Some(&r) => r as usize,
                    None => (0..m)
                        .filter(|&r| !used[r] && count[r] >= 2)
                        .min_by_key(|&r| count[r])?,
                };
                cols.clear();
                cols.extend(
                    row_cols[row_start[r]..row_start[r + 1]]
                        .iter()
                        .filter(|&&c| state[c as usize] == Column::Unresolved),
                );
                let keep = (0..cols.len()).min_by_key(|&j| col_degree(cols[j]))?;
                cols.swap_remove(keep);
                for &c in &cols {
                    state[c as usize] = Column::Inactive;
                    inactive.push(c);
                }
                &cols
            };
            for &c in chosen {
                resolved += 1;
                for &r2 in &col_rows[col_start[c as usize]..col_start[c as usize + 1]] {
                    let r2 = r2 as usize;
                    count[r2] -= 1;
                    if count[r2] == 1 && !used[r2] {
                        ripple.push(r2 as u32);
                    }
                    if count[r2] == 2 && !used[r2] {
                        pairs.push(r2 as u32);
                    }
                }
            }
        }

        // Inactive dependence of each pivot, in release order.
        let i = inactive.len();
        let iw = i.div_ceil(64);
        let mut inact_idx = vec![u32::MAX; u];
        for (j, &c) in inactive.iter().enumerate() {
            inact_idx[c as usize] = j as u32;
        }
        let mut piv_idx = vec![u32::MAX; u];
        let mut ivec = vec![0u64; pivots.len() * iw];
        for (p, &(r, c)) in pivots.iter().enumerate() {
            piv_idx[c as usize] = p as u32;
            let r = r as usize;
            for &c2 in &row_cols[row_start[r]..row_start[r + 1]] {
                if c2 == c {
                    continue;
                }
                match state[c2 as usize] {
                    Column::Inactive => {
                        let j = inact_idx[c2 as usize] as usize;
                        ivec[p * iw + j / 64] ^= 1 << (j % 64);
                    }
                    _ => xor_words(&mut ivec, iw, p, piv_idx[c2 as usize] as usize),
                }
            }
        }

        // The core: unused rows as equations in the inactive variables. Pick i independent
        // ones (forward elimination on copies), then record Gauss–Jordan on them.
        let mut core = Vec::with_capacity(i);
        let mut core_vecs: Vec<u64> = Vec::with_capacity(i * iw);
        if i > 0 {
            let mut basis: Vec<Option<Vec<u64>>> = vec![None; i];
            let mut v = vec![0u64; iw];
            for r in (0..m).filter(|&r| !used[r]) {
                v.fill(0);
                for &c2 in &row_cols[row_start[r]..row_start[r + 1]] {
                    if state[c2 as usize] == Column::Inactive {
                        let j = inact_idx[c2 as usize] as usize;
                        v[j / 64] ^= 1 << (j % 64);
                    } else {
                        let p = piv_idx[c2 as usize] as usize;
                        for (x, y) in v.iter_mut().zip(&ivec[p * iw..(p + 1) * iw]) {
                            *x ^= y;
                        }
                    }
                }
                let original = v.clone();
                let mut w = 0;
                while w < iw {
                    if v[w] == 0 {
                        w += 1;
                        continue;
                    }
                    let j = w * 64 + v[w].trailing_zeros() as usize;
                    match &basis[j] {
                        Some(b) => {
                            for (x, y) in v[w..].iter_mut().zip(&b[w..]) {
                                *x ^= y;
                            }
                        }
                        None => {
                            basis[j] = Some(v.clone());
                            core.push(r as u32);
                            core_vecs.extend_from_slice(&original);
                            break;
                        }
                    }
                }
                if core.len() == i {
                    break;
                }
            }
            if core.len() < i {
                return None;
            }
        }
        let mut ops = Vec::new();
        let mut owner = vec![u32::MAX; i];
        let mut assigned = vec![false; i];
        for j in 0..i {
            let (w, b) = (j / 64, 1u64 << (j % 64));
            let p = (0..i).find(|&s| !assigned[s] && core_vecs[s * iw + w] & b != 0)?;
            assigned[p] = true;
            owner[j] = p as u32;
            for s in 0..i {
                if s != p && core_vecs[s * iw + w] & b != 0 {
                    let (d, src) = if s < p {
                        let (lo, hi) = core_vecs.split_at_mut(p * iw);
                        (&mut lo[s * iw..(s + 1) * iw], &hi[..iw])
                    } else {
                        let (lo, hi) = core_vecs.split_at_mut(s * iw);
                        (&mut hi[..iw], &lo[p * iw..(p + 1) * iw])
                    };
                    for (x, y) in d.iter_mut().zip(src) {
                        *x ^= y;
                    }
                    ops.push((s as u32, p as u32));
                }
            }
        }
        Some(Plan {
            unknowns,
            rows,
            row_start,
            row_cols,
            state,
            pivots,
            inactive,
            ivec,
            iw,
            core,
            ops,
            owner,
        })
    }

    /// The payload half of [`LtDecoder::solve`].
    fn execute(&mut self, plan: &Plan) {
        let t = self.params.symbol_size;
        let kernel = self.kernel;
        let src = |n: u32| n as usize;
        let sym = |e: u32| e as usize * t..(e as usize + 1) * t;
        // 1. Each pivot without its inactive part, in release order (earlier pivots are ready).
        for &(r, c) in &plan.pivots {
            let n = src(plan.unknowns[c as usize]);
            let e = plan.rows[r as usize];
            self.data[n * t..(n + 1) * t].copy_from_slice(&self.sym_data[sym(e)]);
            for &c2 in plan.cols(r as usize) {
                if c2 != c && plan.state[c2 as usize] == Column::Pivot {
                    xor_blocks(
                        kernel,
                        &mut self.data,
                        t,
                        n,
                        src(plan.unknowns[c2 as usize]),
                    );
                }
            }
        }
        // 2. Right-hand sides of the core rows.
        let i = plan.inactive.len();
        let mut rhs = vec![0u8; i * t];
        for (s, &r) in plan.core.iter().enumerate() {
            let out = &mut rhs[s * t..(s + 1) * t];
            out.copy_from_slice(&self.sym_data[sym(plan.rows[r as usize])]);
            for &c2 in plan.cols(r as usize) {
                if plan.state[c2 as usize] == Column::Pivot {
                    let n = src(plan.unknowns[c2 as usize]);
                    // SAFETY: the kernel is available; both slices have T bytes.
                    unsafe { kernel.xor_unchecked(out, &self.data[n * t..(n + 1) * t]) };
                }
            }
        }
        // 3. The core's Gauss–Jordan, then the inactive sources.
        for &(d, s) in &plan.ops {
            xor_blocks(kernel, &mut rhs, t, d as usize, s as usize);
        }
        for (j, &c) in plan.inactive.iter().enumerate() {
            let n = src(plan.unknowns[c as usize]);
            let s = plan.owner[j] as usize;
            self.data[n * t..(n + 1) * t].copy_from_slice(&rhs[s * t..(s + 1) * t]);
        }
        // 4. Finish each pivot, in release order: add its inactive variables, or recompute it
        //    from its row (all other columns final by now), whichever is fewer XORs.
        let iw = plan.iw;
        for (p, &(r, c)) in plan.pivots.iter().enumerate() {
            let n = src(plan.unknowns[c as usize]);
            let deps = &plan.ivec[p * iw..(p + 1) * iw];
            let weight: u32 = deps.iter().map(|x| x.count_ones()).sum();
            let cols = plan.cols(r as usize);
            if weight as usize <= cols.len() {
                for (w, &x) in deps.iter().enumerate() {
                    let mut x = x;
                    while x != 0 {
                        let j = w * 64 + x.trailing_zeros() as usize;
                        x &= x - 1;
                        let z = src(plan.unknowns[plan.inactive[j] as usize]);
                        xor_blocks(kernel, &mut self.data, t, n, z);
                    }
                }
            } else {
                let e = plan.rows[r as usize];
                self.data[n * t..(n + 1) * t].copy_from_slice(&self.sym_data[sym(e)]);
                for &c2 in cols {
                    if c2 != c {
                        xor_blocks(
                            kernel,
                            &mut self.data,
                            t,
                            n,
                            src(plan.unknowns[c2 as usize]),
                        );
                    }
                }
            }
        }
        for &n in &plan.unknowns {
            self.mark_decoded(n as usize);
        }
        self.sym_active.iter_mut().for_each(|a| *a = false);
        self.adjacency.iter_mut().for_each(Vec::clear);
        self.ripple.clear();
    }

    /// GF(2) rank of the received symbols, if tracked ([`LtDecoder::with_elimination`]).
    pub fn rank(&self) -> Option<usize> {
        self.tracker.as_ref().map(|tr| self.known.count() + tr.rank)
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
