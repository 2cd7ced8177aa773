//! Random linear network coding over GF(2^8), one generation at a time.
//!
//! A generation is g source symbols of T bytes. A coded symbol is `Σ cᵢ·sᵢ` for a coefficient
//! vector `c ∈ GF(2^8)^g`, described on the wire by a [`Coding`]:
//!
//! * [`Coding::Source`]: source symbol i itself (a unit vector; the systematic part);
//! * [`Coding::Seeded`]: coefficients expanded from a 4-byte seed by [`seeded_coefficients`];
//! * [`Coding::Explicit`]: the g coefficients themselves (for recoding, or a scheme that wants
//!   to choose them).
//!
//! **Why the seed expander is ChaCha8.** The coefficient generator must not be linear over
//! GF(2). If it were (an LFSR, xorshift, a plain Galois-field LCG), every output bit would be a
//! GF(2)-linear function of the 32 seed bits, so all coefficient vectors of all seeds would lie
//! in the GF(2)-span of 32 fixed vectors; their GF(2^8)-span then has dimension at most 32, and a
//! generation with g > 32 could never be decoded from seeded symbols alone, however many arrive.
//! ChaCha mixes with 32-bit modular additions, which are not GF(2)-linear, and its output is
//! indistinguishable from uniform, so seeded vectors behave like uniformly random ones (the
//! tests check the full-rank probability against the theory for uniform vectors). Its stream
//! is also fixed by the algorithm, so sender and receiver agree across platforms and versions.
//!
//! [`RlncMode`] maps a per-generation symbol counter to a [`Coding`]: systematic mode sends the
//! g source symbols first and then seeded repair symbols; non-systematic mode sends only seeded
//! symbols.
//!
//! The [`RlncDecoder`] is progressive: it keeps the received symbols in reduced row-echelon
//! form (Gauss–Jordan, one row per pivot column, stored in the slot of its pivot), so each push
//! reports the rank, whether the symbol was innovative, and any source symbol whose row became a
//! unit vector is released at once ([`RlncDecoder::pop_decoded`]).

use crate::error::{check_len, Error, Result};
use crate::gf256::{self, Kernel};
use crate::known::Known;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use std::sync::OnceLock;

/// Largest supported generation size g.
pub const MAX_GENERATION_SIZE: usize = 1024;
/// Largest supported symbol size T in bytes.
pub const MAX_SYMBOL_SIZE: usize = 1 << 16;

/// Generation size and symbol size, validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RlncConfig {
    generation_size: usize,
    symbol_size: usize,
}

impl RlncConfig {
    /// g source symbols of `symbol_size` bytes. Errors if g ∉ 1..=[`MAX_GENERATION_SIZE`] or
    /// the size ∉ 1..=[`MAX_SYMBOL_SIZE`].
    pub fn new(generation_size: usize, symbol_size: usize) -> Result<Self> {
        if !(1..=MAX_GENERATION_SIZE).contains(&generation_size) {
            return Err(Error::BlockSizeOutOfRange {
                k: generation_size,
                min: 1,
                max: MAX_GENERATION_SIZE,
            });
        }
        if !(1..=MAX_SYMBOL_SIZE).contains(&symbol_size) {
            return Err(Error::SymbolSizeOutOfRange {
                size: symbol_size,
                min: 1,
                max: MAX_SYMBOL_SIZE,
            });
        }
        Ok(Self {
            generation_size,
            symbol_size,
        })
    }

    /// g, the number of source symbols per generation.
    pub fn generation_size(&self) -> usize {
        self.generation_size
    }

    /// T, the symbol size in bytes.
    pub fn symbol_size(&self) -> usize {
        self.symbol_size
    }

    /// g·T, the bytes of one generation.
    pub fn generation_bytes(&self) -> usize {
        self.generation_size * self.symbol_size
    }
}

/// How a coded symbol was formed from the generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coding<'a> {
    /// Source symbol i, uncoded.
    Source(u32),
    /// Coefficients from [`seeded_coefficients`] with this seed.
    Seeded(u32),
    /// These g coefficients.
    Explicit(&'a [u8]),
}

/// Which symbols a sender emits for a generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RlncMode {
    /// The g source symbols first, then seeded repair symbols.
    Systematic,
    /// Seeded symbols only.
    NonSystematic,
}

impl RlncMode {
    /// The coding of the `n`-th symbol sent for a generation of `generation_size` symbols:
    /// systematic mode sends `Source(n)` for n < g and `Seeded(n)` after; non-systematic mode
    /// always `Seeded(n)`. Seeds are distinct within a generation.
    pub fn coding(self, generation_size: usize, n: u32) -> Coding<'static> {
        match self {
            RlncMode::Systematic if (n as usize) < generation_size => Coding::Source(n),
            _ => Coding::Seeded(n),
        }
    }
}

/// Expands `seed` into `out.len()` uniformly random coefficients with ChaCha8 (see the module
/// documentation for why a GF(2)-nonlinear generator is needed).
///
/// The expansion does not depend on the generation, so the first [`CACHED_COEFFICIENTS`]
/// bytes of the streams of seeds below [`CACHED_SEEDS`] are computed once per process and
/// copied from then on (a ChaCha8 call computes four 64-byte blocks to hand out 16 bytes).
pub fn seeded_coefficients(seed: u32, out: &mut [u8]) {
    if out.len() <= CACHED_COEFFICIENTS {
        if let Some(cell) = SEEDED_CACHE.get(seed as usize) {
            let prefix = cell.get_or_init(|| {
                let mut p = [0u8; CACHED_COEFFICIENTS];
                expand_seed(seed, &mut p);
                p
            });
            if let Ok(o) = <&mut [u8; 16]>::try_from(&mut *out) {
                // g = 16 (the usual size): a fixed-size copy, inlined (not a `memcpy` call).
                o.copy_from_slice(&prefix[..16]);
            } else {
                out.copy_from_slice(&prefix[..out.len()]);
            }
            return;
        }
    }
    expand_seed(seed, out);
}

/// Seeds whose coefficient prefix [`seeded_coefficients`] caches.
pub const CACHED_SEEDS: usize = 1024;
/// Coefficients cached per seed (generations up to this size use the cache).
pub const CACHED_COEFFICIENTS: usize = 64;

static SEEDED_CACHE: [OnceLock<[u8; CACHED_COEFFICIENTS]>; CACHED_SEEDS] =
    [const { OnceLock::new() }; CACHED_SEEDS];

/// The ChaCha8 key stream of `seed` (key = "tributary-rlnc-1" ‖ seed, little-endian ‖ zeros;
/// nonce and counter zero), its first `out.len()` bytes.
fn expand_seed(seed: u32, out: &mut [u8]) {
    let mut key = [0u8; 32];
    key[..16].copy_from_slice(b"tributary-rlnc-1");
    key[16..20].copy_from_slice(&seed.to_le_bytes());
    ChaCha8Rng::from_seed(key).fill_bytes(out);
}

/// Checks a coding against a configuration and writes its coefficient vector into `out`.
fn coefficients_into(config: &RlncConfig, coding: Coding<'_>, out: &mut [u8]) -> Result<()> {
    let g = config.generation_size;
    match coding {
        Coding::Source(i) => {
            if i as usize >= g {
                return Err(Error::UnknownSymbol {
                    id: u64::from(i),
                    limit: g as u64,
                });
            }
            if let Ok(o) = <&mut [u8; 16]>::try_from(&mut *out) {
                // g = 16: a fixed-size store, inlined (not a `memset` call).
                *o = [0; 16];
            } else {
                out.fill(0);
            }
            out[i as usize] = 1;
        }
        Coding::Seeded(seed) => seeded_coefficients(seed, out),
        Coding::Explicit(c) => {
            check_len(g, c.len())?;
            out.copy_from_slice(c);
        }
    }
    Ok(())
}

/// Terms handed to the multi-source kernel per call.
const COMBINE_GROUP: usize = 16;

/// `out ^= Σ coeffs[i]·symbol(i)` (`add`), or `out = Σ …` (not `add`: `out` is not read),
/// skipping zero coefficients and handing the others to the fused kernel
/// [`COMBINE_GROUP`] at a time.
fn combine<'s>(
    kernel: Kernel,
    out: &mut [u8],
    terms: impl Iterator<Item = (u8, &'s [u8])>,
    mut add: bool,
) {
    let mut group: [(u8, &[u8]); COMBINE_GROUP] = [(0, &[]); COMBINE_GROUP];
    let mut n = 0;
    for (c, s) in terms {
        if c == 0 {
            continue;
        }
        group[n] = (c, s);
        n += 1;
        if n == COMBINE_GROUP {
            // SAFETY: `kernel` is available; every term has `out.len()` bytes (callers' invariant).
            unsafe { multi(kernel, out, &group, add) };
            add = true;
            n = 0;
        }
    }
    if n > 0 || !add {
        // SAFETY: as above.
        unsafe { multi(kernel, out, &group[..n], add) };
    }
}

/// # Safety
/// `kernel` is available and every term has `out.len()` bytes.
unsafe fn multi(kernel: Kernel, out: &mut [u8], terms: &[(u8, &[u8])], add: bool) {
    unsafe {
        if add {
            kernel.mul_add_multi_unchecked(out, terms);
        } else {
            kernel.mul_multi_unchecked(out, terms);
        }
    }
}

/// `out ^= Σ c·symbol` for symbols stored as nibbles (`(c, lo, hi)`), grouping non-zero terms
/// by four for the fused split kernel.
fn combine_split<'s>(
    kernel: Kernel,
    out: &mut [u8],
    terms: impl Iterator<Item = (u8, &'s [u8], &'s [u8])>,
) {
    let mut group: [(u8, &[u8], &[u8]); 4] = [(0, &[], &[]); 4];
    let mut n = 0;
    for (c, lo, hi) in terms {
        if c == 0 {
            continue;
        }
        group[n] = (c, lo, hi);
        n += 1;
        if n == 4 {
            // SAFETY: `kernel` is available; every term has `out.len()` bytes (callers' invariant).
            unsafe { kernel.mul_add_multi_split_unchecked(out, &group) };
            n = 0;
        }
    }
    if n > 0 {
        // SAFETY: as above.
        unsafe { kernel.mul_add_multi_split_unchecked(out, &group[..n]) };
    }
}

/// Stores `src` (T bytes) as nibbles into a slot of 2·T bytes: low nibbles, then high ones.
fn store_split(slot: &mut [u8], src: &[u8]) {
    let (lo, hi) = slot.split_at_mut(src.len());
    gf256::split_nibbles(src, lo, hi);
}

/// Produces coded symbols of one generation (the sender side).
///
/// With the AVX2 kernel the encoder also keeps the generation as nibbles (2·g·T bytes), since
/// every source symbol is multiplied once per coded symbol: the split-table multiply then
/// needs no shift or masks.
#[derive(Debug, Clone)]
pub struct RlncEncoder {
    config: RlncConfig,
    data: Vec<u8>,
    /// The generation as nibbles (slot i = 2·T bytes), or empty.
    nibbles: Vec<u8>,
    coeffs: Vec<u8>,
    kernel: Kernel,
}

impl RlncEncoder {
    /// An encoder over `generation`, which must be exactly g·T bytes (symbol i is bytes
    /// `i·T..(i+1)·T`).
    pub fn new(config: RlncConfig, generation: &[u8]) -> Result<Self> {
        check_len(config.generation_bytes(), generation.len())?;
        Ok(Self::from_fn(config, |d| d.copy_from_slice(generation)))
    }

    /// An encoder whose generation `fill` writes (it is handed g·T zero bytes).
    pub fn from_fn(config: RlncConfig, fill: impl FnOnce(&mut [u8])) -> Self {
        let mut enc = Self {
            config,
            data: Vec::new(),
            nibbles: Vec::new(),
            coeffs: Vec::new(),
            kernel: Kernel::best(),
        };
        enc.reset_with(config, fill);
        enc
    }

    /// Makes this an encoder for a new generation of `config`, keeping the allocations:
    /// `fill` writes the g·T bytes of the generation (it is handed them zeroed).
    pub fn reset_with(&mut self, config: RlncConfig, fill: impl FnOnce(&mut [u8])) {
        self.reset_prefix_with(config, config.generation_bytes(), |d| {
            d.fill(0);
            fill(d)
        });
    }

    /// Makes this an encoder for a new generation of `config` whose first `len` bytes
    /// (at most g·T) `fill` writes completely, the rest being zero; the allocations are kept
    /// and the `len` bytes are not zeroed first (they are handed over with stale contents).
    pub fn reset_prefix_with(
        &mut self,
        config: RlncConfig,
        len: usize,
        fill: impl FnOnce(&mut [u8]),
    ) {
        let t = config.symbol_size;
        let bytes = config.generation_bytes();
        let len = len.min(bytes);
        self.config = config;
        // Stale bytes are fine where `fill` writes; the tail of a short generation is zeroed.
        self.data.truncate(len);
        self.data.resize(len, 0);
        fill(&mut self.data);
        self.data.resize(bytes, 0);
        self.coeffs.clear();
        self.coeffs.resize(config.generation_size, 0);
        if self.kernel.prefers_split() {
            // Every slot is overwritten below, so stale bytes are not zeroed first (zeroing
            // the 2·g·T bytes was most of a reused generation's cost with AVX2); only growth is.
            self.nibbles.truncate(2 * bytes);
            self.nibbles.resize(2 * bytes, 0);
            for (slot, src) in self
                .nibbles
                .chunks_exact_mut(2 * t)
                .zip(self.data.chunks_exact(t))
            {
                store_split(slot, src);
            }
        } else {
            self.nibbles.clear();
        }
    }

    /// The configuration.
    pub fn config(&self) -> &RlncConfig {
        &self.config
    }

    /// Source symbol i.
    pub fn source_symbol(&self, i: usize) -> Option<&[u8]> {
        let t = self.config.symbol_size;
        self.data.get(i * t..(i + 1) * t)
    }

    /// Writes the symbol described by `coding` into `out` (T bytes).
    ///
    /// Errors if `out` is not T bytes, a source index is ≥ g, or explicit coefficients are not
    /// g bytes.
    pub fn encode(&mut self, coding: Coding<'_>, out: &mut [u8]) -> Result<()> {
        let t = self.config.symbol_size;
        check_len(t, out.len())?;
        if let Coding::Source(i) = coding {
            let i = i as usize;
            let src = self.source_symbol(i).ok_or(Error::UnknownSymbol {
                id: i as u64,
                limit: self.config.generation_size as u64,
            })?;
            out.copy_from_slice(src);
            return Ok(());
        }
        coefficients_into(&self.config, coding, &mut self.coeffs)?;
        if self.kernel.has_strided() {
            // SAFETY: the kernel is available; `data` holds g symbols of T = `out.len()` bytes.
            unsafe {
                self.kernel
                    .mul_multi_strided_unchecked(out, &self.coeffs, &self.data, t, false)
            };
        } else if self.nibbles.is_empty() {
            combine(
                self.kernel,
                out,
                self.coeffs.iter().copied().zip(self.data.chunks_exact(t)),
                false,
            );
        } else {
            out.fill(0);
            combine_split(
                self.kernel,
                out,
                self.coeffs
                    .iter()
                    .zip(self.nibbles.chunks_exact(2 * t))
                    .map(|(&c, slot)| (c, &slot[..t], &slot[t..])),
            );
        }
        Ok(())
    }
}

/// What one [`RlncDecoder::push`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RlncProgress {
    /// Whether the symbol increased the rank.
    pub innovative: bool,
    /// Rank after the symbol (≤ g).
    pub rank: usize,
    /// Source symbols that became known because of this symbol.
    pub newly_decoded: usize,
    /// Whether the whole generation is known.
    pub complete: bool,
}

/// Progressive Gauss–Jordan decoder of one generation (the receiver side).
///
/// **Payload work is deferred.** The elimination runs on the coefficient vectors only (g bytes
/// per row); beside each reduced row the decoder keeps its *transform*, the combination of the
/// received innovative payloads (stored as they arrived) that the row stands for. A payload is
/// computed only when its row becomes a unit vector, once, as one fused combination of received
/// payloads. So a non-innovative symbol costs no payload arithmetic, a source symbol on a free
/// column costs a copy, and a generation received as c coded symbols costs c·g payload
/// multiply-adds in all (the eager form reduced every arriving payload against every stored row
/// and every stored row against each new pivot: the same count, but as single-source passes
/// over the payload instead of fused ones, plus the work spent on symbols that never decode
/// anything early). Which symbols become known, and when, is the same as with eager reduction:
/// the coefficient matrix goes through the same steps.
///
/// A row and its transform are stored side by side (2·g bytes), so each row operation is one
/// kernel call over both, and reducing an arriving vector against the stored rows is one
/// fused multi-source combination.
#[derive(Debug, Clone)]
pub struct RlncDecoder {
    config: RlncConfig,
    kernel: Kernel,
    /// Row with pivot p lives at `rows[p·2g..]`: its g coefficients, then its transform (over
    /// received payloads, g bytes); a decoded source symbol i at `data[i·T..]`.
    rows: Vec<u8>,
    data: Vec<u8>,
    /// The s-th innovative payload received, at `raw[s·W..]`: W = T bytes, or W = 2·T as
    /// nibbles (low, then high) when `split` (the AVX2 kernel; each is multiplied up to g times).
    raw: Vec<u8>,
    split: bool,
    has_row: Vec<bool>,
    /// 0xff at the columns without a row (the only places a stored row can be non-zero
    /// besides its pivot), 0 at the others (g bytes): [`RlncDecoder::is_unit`]'s mask.
    free_mask: Vec<u8>,
    /// Rows that are not unit vectors yet.
    pending: Vec<usize>,
    known: Known,
    rank: usize,
    received: usize,
    /// The arriving row and its transform (2·g bytes).
    scratch: Vec<u8>,
    /// The arriving coefficients before reduction (g bytes).
    multipliers: Vec<u8>,
    /// `add_row`'s work list: (row, multiplier) of the rows a new pivot is eliminated from.
    targets: Vec<(usize, u8)>,
}

impl RlncDecoder {
    /// An empty decoder.
    pub fn new(config: RlncConfig) -> Self {
        let kernel = Kernel::best();
        let mut d = Self {
            config,
            kernel,
            rows: Vec::new(),
            data: Vec::new(),
            raw: Vec::new(),
            split: kernel.prefers_split(),
            has_row: Vec::new(),
            free_mask: Vec::new(),
            pending: Vec::new(),
            known: Known::new(0),
            rank: 0,
            received: 0,
            scratch: Vec::new(),
            multipliers: Vec::new(),
            targets: Vec::new(),
        };
        d.reset(config);
        d
    }

    /// Makes this decoder an empty one for `config`, keeping its allocations (a receiver that
    /// decodes one generation after another need not allocate and zero its buffers each time).
    pub fn reset(&mut self, config: RlncConfig) {
        let g = config.generation_size;
        self.config = config;
        // Stored rows, decoded symbols and received payloads are always written before they
        // are read, so stale bytes from an earlier generation are never seen; the buffers only
        // need their sizes.
        self.rows.resize(2 * g * g, 0);
        self.data.resize(config.generation_bytes(), 0);
        let raw = config.generation_bytes() * if self.split { 2 } else { 1 };
        self.raw.resize(raw, 0);
        self.has_row.clear();
        self.has_row.resize(g, false);
        self.free_mask.clear();
        self.free_mask.resize(g, 0xff);
        self.pending.clear();
        self.known.reset(g);
        self.rank = 0;
        self.received = 0;
        self.scratch.resize(2 * g, 0);
        self.multipliers.resize(g, 0);
    }

    /// The configuration.
    pub fn config(&self) -> &RlncConfig {
        &self.config
    }

    /// Adds a received symbol.
    ///
    /// Errors (and changes nothing) if `payload` is not T bytes, a source index is ≥ g, or
    /// explicit coefficients are not g bytes.
    pub fn push(&mut self, coding: Coding<'_>, payload: &[u8]) -> Result<RlncProgress> {
        let g = self.config.generation_size;
        let t = self.config.symbol_size;
        check_len(t, payload.len())?;
        coefficients_into(&self.config, coding, &mut self.scratch[..g])?;
        self.received += 1;
        let before = self.known.count();
        let innovative = if self.rank == g {
            false
        } else if let Coding::Source(i) = coding {
            let i = i as usize;
            if self.has_row[i] {
                self.insert_scratch(payload)
            } else {
                // A unit vector on a free column is already reduced and already decoded:
                // store it directly (its transform is the unit vector of its payload slot).
                let s = self.rank;
                let row = &mut self.rows[2 * i * g..2 * (i + 1) * g];
                row.fill(0);
                row[i] = 1;
                row[g + s] = 1;
                self.store_raw(s, payload);
                self.data[i * t..(i + 1) * t].copy_from_slice(payload);
                self.add_row(i, true);
                true
            }
        } else {
            self.insert_scratch(payload)
        };
        Ok(RlncProgress {
            innovative,
            rank: self.rank,
            newly_decoded: self.known.count() - before,
            complete: self.is_complete(),
        })
    }

    /// Reduces the coefficient vector in `scratch` against the stored rows (tracking the
    /// transform in the second half of `scratch`) and stores the symbol if it is innovative.
    /// No payload arithmetic happens here.
    fn insert_scratch(&mut self, payload: &[u8]) -> bool {
        let g = self.config.generation_size;
        let s = self.rank;
        let (coeffs, trans) = self.scratch.split_at_mut(g);
        trans.fill(0);
        trans[s] = 1;
        // Rows are reduced (zero in every other pivot column), so the multiplier of row j is
        // the symbol's original coefficient j, whatever order rows are subtracted in: the
        // reduction is one combination of the stored rows with those coefficients.
        for ((m, &c), &has) in self.multipliers.iter_mut().zip(&*coeffs).zip(&self.has_row) {
            *m = if has { c } else { 0 };
        }
        if self.kernel.has_strided() {
            // SAFETY: the kernel is available; `rows` holds g rows of 2·g bytes.
            unsafe {
                self.kernel.mul_multi_strided_unchecked(
                    &mut self.scratch,
                    &self.multipliers,
                    &self.rows,
                    2 * g,
                    true,
                )
            };
        } else {
            combine(
                self.kernel,
                &mut self.scratch,
                self.multipliers
                    .iter()
                    .copied()
                    .zip(self.rows.chunks_exact(2 * g)),
                true,
            );
        }
        let Some(p) = first_nonzero(&self.scratch[..g]) else {
            return false;
        };
        let inv = gf256::inv(self.scratch[p]).unwrap_or(1);
        // SAFETY: the kernel is available; both slices have 2·g bytes.
        unsafe {
            self.kernel.mul_unchecked(
                &mut self.rows[2 * p * g..2 * (p + 1) * g],
                &self.scratch,
                inv,
            );
        }
        self.store_raw(s, payload);
        self.add_row(p, false);
        true
    }

    /// Registers the normalised row stored at pivot `p` and eliminates column p from every
    /// other row (keeping the form reduced), releasing rows that become unit vectors.
    /// `decoded`: row p is a source symbol whose payload is already in `data`.
    fn add_row(&mut self, p: usize, decoded: bool) {
        let g = self.config.generation_size;
        self.has_row[p] = true;
        self.rank += 1;
        self.free_mask[p] = 0;
        // Only rows that are not unit vectors can be non-zero in column p. All row operations
        // first, then the unit checks: a check reads bytes the vector kernel has just stored
        // (a masked store, which the CPU cannot forward to a byte load: checking each row right
        // after its operation stalled on every row). A row not touched here cannot have become
        // a unit vector (its non-zero free column was not p), so checking every pending row
        // finds the same rows, in the same order, as checking only the touched ones.
        self.targets.clear();
        for &r in &self.pending {
            let m = self.rows[2 * r * g + p];
            if m != 0 {
                self.targets.push((r, m));
            }
        }
        // SAFETY: the kernel is available; `rows` holds g rows of 2·g bytes; row p is not
        // pending (it gets its row only now), so no target is p.
        unsafe {
            self.kernel
                .mul_add_rows_unchecked(&mut self.rows, 2 * g, 2 * g, p, &self.targets)
        };
        let mut i = 0;
        while i < self.pending.len() {
            let r = self.pending[i];
            if self.is_unit(r) {
                self.pending.swap_remove(i);
                self.materialize(r);
                continue;
            }
            i += 1;
        }
        if decoded {
            self.mark_decoded(p);
        } else if self.is_unit(p) {
            self.materialize(p);
        } else {
            self.pending.push(p);
        }
    }

    /// Stores the s-th innovative payload.
    fn store_raw(&mut self, s: usize, payload: &[u8]) {
        let t = self.config.symbol_size;
        if self.split {
            store_split(&mut self.raw[2 * s * t..2 * (s + 1) * t], payload);
        } else {
            self.raw[s * t..(s + 1) * t].copy_from_slice(payload);
        }
    }

    /// Computes source symbol `r` (its row is a unit vector) from the received payloads its
    /// transform names, in one fused pass written straight into `data`, and marks it decoded.
    fn materialize(&mut self, r: usize) {
        let g = self.config.generation_size;
        let t = self.config.symbol_size;
        let raw = &self.raw;
        let out = &mut self.data[r * t..(r + 1) * t];
        let transform = &self.rows[2 * r * g + g..2 * r * g + g + self.rank];
        let row = transform.iter();
        if self.kernel.has_strided() {
            // The transform's terms straight from the received payloads (stride T); the same
            // non-zero terms as `combine` gathers, without building the group first.
            // SAFETY: the kernel is available; `raw` holds at least `rank` payloads of T bytes.
            unsafe {
                self.kernel.mul_multi_strided_unchecked(
                    out,
                    transform,
                    &raw[..self.rank * t],
                    t,
                    false,
                )
            };
        } else if self.split {
            out.fill(0);
            combine_split(
                self.kernel,
                out,
                row.zip(raw.chunks_exact(2 * t))
                    .map(|(&c, slot)| (c, &slot[..t], &slot[t..])),
            );
        } else {
            combine(
                self.kernel,
                out,
                row.zip(raw.chunks_exact(t)).map(|(&c, s)| (c, s)),
                false,
            );
        }
        self.mark_decoded(r);
    }

    /// Whether the row with pivot `r` is a unit vector. Rows are normalised and zero in every
    /// other pivot column, so it suffices that they are zero in the free columns.
    fn is_unit(&self, r: usize) -> bool {
        let g = self.config.generation_size;
        zero_where_masked(&self.rows[2 * r * g..2 * r * g + g], &self.free_mask)
    }

    fn mark_decoded(&mut self, i: usize) {
        self.known.mark(i);
    }

    /// Current rank (number of innovative symbols received).
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Symbols pushed so far, innovative or not (malformed ones not counted).
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
        let t = self.config.symbol_size;
        self.is_decoded(i).then(|| &self.data[i * t..(i + 1) * t])
    }

    /// The index of a source symbol decoded since the last call, in the order they became
    /// known; read it with [`RlncDecoder::source_symbol`].
    pub fn pop_decoded(&mut self) -> Option<usize> {
        self.known.pop()
    }

    /// The whole generation (g·T bytes), once complete.
    pub fn data(&self) -> Result<&[u8]> {
        if self.is_complete() {
            Ok(&self.data)
        } else {
            Err(Error::NotDecoded {
                decoded: self.known.count(),
                k: self.config.generation_size,
            })
        }
    }

    /// Consumes the decoder and returns the generation, once complete.
    pub fn into_data(self) -> Result<Vec<u8>> {
        self.data()?;
        Ok(self.data)
    }
}

/// The index of the first non-zero byte of `a`, 16 bytes at a time: the pivot column of a
/// reduced coefficient vector. A byte loop's exit branch mispredicted on most coded symbols
/// (the pivot moves along the free columns); here each 16-byte word is one test and a
/// `trailing_zeros`. Exact: `(x & 0x7f) + 0x7f` carries into bit 7 of its own byte iff the low
/// seven bits are not all zero, and cannot carry out of the byte.
fn first_nonzero(a: &[u8]) -> Option<usize> {
    const LOW7: u128 = u128::from_le_bytes([0x7f; 16]);
    let (words, rest) = a.as_chunks::<16>();
    for (w, x) in words.iter().enumerate() {
        let x = u128::from_le_bytes(*x);
        // Bit 7 of byte i is set iff byte i of `x` is non-zero.
        let nonzero = (((x & LOW7) + LOW7) | x) & !LOW7;
        if nonzero != 0 {
            return Some(16 * w + nonzero.trailing_zeros() as usize / 8);
        }
    }
    rest.iter()
        .position(|&c| c != 0)
        .map(|i| 16 * words.len() + i)
}

/// Whether `a[i] & mask[i] == 0` for every i (16 bytes at a time; `mask.len() == a.len()`).
fn zero_where_masked(a: &[u8], mask: &[u8]) -> bool {
    let (a16, a_rest) = a.as_chunks::<16>();
    let (m16, m_rest) = mask.as_chunks::<16>();
    a16.iter()
        .zip(m16)
        .all(|(x, m)| u128::from_ne_bytes(*x) & u128::from_ne_bytes(*m) == 0)
        && a_rest.iter().zip(m_rest).all(|(&x, &m)| x & m == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An encoder reused for generations of other sizes (its buffers holding the previous
    /// generation's bytes) encodes what a new one does, with every available kernel — among
    /// them the AVX2 kernel's nibble copy of the generation, which `Kernel::best` does not
    /// pick on a CPU with GFNI — and every kernel agrees with the portable one.
    #[test]
    fn reused_encoder_matches_a_new_one_with_every_kernel() {
        let mut rng = crate::xorshift(0x2545_f491);
        let mut next = move || rng() as u8;
        let with_kernel = |kernel: Kernel, c: RlncConfig, d: &[u8]| {
            let mut e = RlncEncoder::from_fn(RlncConfig::new(1, 1).unwrap(), |_| {});
            e.kernel = kernel;
            e.reset_with(c, |b| b.copy_from_slice(d));
            e
        };
        let shapes = [
            (16usize, 100usize, 1600usize),
            (16, 100, 1599),
            (3, 100, 201),
        ];
        let shapes = shapes
            .into_iter()
            .chain([(20, 37, 700), (16, 1380, 22_080), (1, 9, 1)]);
        for kernel in Kernel::available() {
            let junk: Vec<u8> = (0..16 * 1380).map(|_| next()).collect();
            let mut reused = with_kernel(kernel, RlncConfig::new(16, 1380).unwrap(), &junk);
            for (g, t, len) in shapes.clone() {
                let config = RlncConfig::new(g, t).unwrap();
                let prefix: Vec<u8> = (0..len).map(|_| next()).collect();
                let mut whole = prefix.clone();
                whole.resize(g * t, 0);
                let mut fresh = with_kernel(kernel, config, &whole);
                let mut portable = with_kernel(Kernel::Scalar, config, &whole);
                reused.reset_prefix_with(config, len, |d| d.copy_from_slice(&prefix));
                assert_eq!(reused.nibbles.is_empty(), !kernel.prefers_split());
                let (mut a, mut b, mut c) = (vec![0; t], vec![0; t], vec![0; t]);
                for n in 0..(2 * g as u32 + 3) {
                    let coding = RlncMode::Systematic.coding(g, n);
                    fresh.encode(coding, &mut a).unwrap();
                    reused.encode(coding, &mut b).unwrap();
                    portable.encode(coding, &mut c).unwrap();
                    assert_eq!(a, b, "{kernel:?}, g {g}, len {len}, symbol {n}");
                    assert_eq!(a, c, "{kernel:?} against scalar, g {g}, symbol {n}");
                }
            }
        }
    }

    /// `first_nonzero` equals the byte loop it replaced: every byte value at every position
    /// of vectors that are zero elsewhere (both sides of the 16-byte words), and random
    /// sparse vectors of every length up to 40.
    #[test]
    fn first_nonzero_matches_position() {
        let reference = |a: &[u8]| a.iter().position(|&c| c != 0);
        for len in [0, 1, 15, 16, 17, 32, 33] {
            let mut a = vec![0u8; len];
            assert_eq!(first_nonzero(&a), None);
            for i in 0..len {
                for v in 0..=255u8 {
                    a[i] = v;
                    assert_eq!(first_nonzero(&a), reference(&a), "len {len}, a[{i}] = {v}");
                }
                a[i] = 0;
            }
        }
        let mut next = crate::xorshift(0x1234_5678);
        for _ in 0..20_000 {
            let len = (next() % 41) as usize;
            let a: Vec<u8> = (0..len)
                .map(|_| {
                    if next().is_multiple_of(8) {
                        next() as u8
                    } else {
                        0
                    }
                })
                .collect();
            assert_eq!(first_nonzero(&a), reference(&a), "{a:?}");
        }
    }
}
