//! RaptorQ (RFC 6330) for one source block, through the `raptorq` crate.
//!
//! The crate asserts on some inputs (an encoding symbol id ≥ 2^24, a payload of the wrong
//! size, a block too large for its tables); everything is validated here first, so bad input
//! is an [`Error`]. One source block of k symbols of T bytes, no sub-blocking, alignment 1.
//!
//! Encoding symbol ids (ESIs) follow the crate and RFC 6330: 0..k are the source symbols, k and
//! above are repair symbols, up to 2^24 − 1. RaptorQ decoding is probabilistic: from exactly k
//! symbols it succeeds with probability ≈ 99 %, each extra symbol dividing the failure
//! probability by about 100 (RFC 6330 §1, measured in `docs/codec.md`). The decoder therefore
//! attempts a decode whenever it holds at least k distinct symbols and is not complete, and
//! reports completion in every [`RaptorqProgress`].

use crate::error::{check_len, Error, Result};
use crate::raptorq_rows::{self, Basis, Held, Rows};
use ::raptorq::{
    EncodingPacket, ObjectTransmissionInformation, PayloadId, SourceBlockDecoder,
    SourceBlockEncoder,
};
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// Repair symbols an encoder of at most [`raptorq_rows::MAX_K`] source symbols writes from
/// rows (k multiply-adds each) before it computes the intermediate symbols once and uses
/// the crate (see `docs/codec.md`, "Small blocks without the solver").
const ROWS_ENCODE_LIMIT: usize = 16;
/// Missing source symbols up to which a decoder of at most [`raptorq_rows::MAX_K`] source
/// symbols solves from rows (about m·k multiply-adds) instead of calling the crate's solver.
const ROWS_DECODE_LIMIT: usize = 16;

/// Largest k of one source block (K'max of RFC 6330 §5.1.2).
pub const MAX_SOURCE_SYMBOLS: usize = 56_403;
/// Largest symbol size T in bytes (a 16-bit field in RFC 6330).
pub const MAX_SYMBOL_SIZE: usize = u16::MAX as usize;
/// Encoding symbol ids are 24-bit.
pub const MAX_ENCODING_SYMBOL_ID: u32 = (1 << 24) - 1;

/// The source block size k and symbol size T, validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RaptorqConfig {
    k: usize,
    symbol_size: usize,
}

impl RaptorqConfig {
    /// k source symbols of `symbol_size` bytes. Errors if k ∉ 1..=[`MAX_SOURCE_SYMBOLS`] or
    /// T ∉ 1..=[`MAX_SYMBOL_SIZE`].
    pub fn new(k: usize, symbol_size: usize) -> Result<Self> {
        if !(1..=MAX_SOURCE_SYMBOLS).contains(&k) {
            return Err(Error::BlockSizeOutOfRange {
                k,
                min: 1,
                max: MAX_SOURCE_SYMBOLS,
            });
        }
        if !(1..=MAX_SYMBOL_SIZE).contains(&symbol_size) {
            return Err(Error::SymbolSizeOutOfRange {
                size: symbol_size,
                min: 1,
                max: MAX_SYMBOL_SIZE,
            });
        }
        Ok(Self { k, symbol_size })
    }

    /// k, the number of source symbols.
    pub fn k(&self) -> usize {
        self.k
    }

    /// T, the symbol size in bytes.
    pub fn symbol_size(&self) -> usize {
        self.symbol_size
    }

    /// k·T, the bytes of the block.
    pub fn block_bytes(&self) -> usize {
        self.k * self.symbol_size
    }

    fn oti(&self) -> ObjectTransmissionInformation {
        // Bounds above keep k·T ≤ 56403·65535 < 2^32, well inside the crate's limits.
        ObjectTransmissionInformation::new(
            self.block_bytes() as u64,
            self.symbol_size as u16,
            1,
            1,
            1,
        )
    }

    fn check_esi(&self, esi: u32) -> Result<()> {
        if esi > MAX_ENCODING_SYMBOL_ID {
            return Err(Error::UnknownSymbol {
                id: u64::from(esi),
                limit: u64::from(MAX_ENCODING_SYMBOL_ID) + 1,
            });
        }
        Ok(())
    }
}

/// Produces any encoding symbol of one source block (the sender side).
///
/// The code is systematic: source symbols are the data itself. For blocks of up to 256
/// symbols the first repair symbols are written as linear combinations of the source
/// symbols (one row of k octets each, the same bytes as the crate's); a block that needs
/// many repair symbols has its intermediate symbols (RFC 6330 §5.3.3) computed once, by the
/// crate, and serves the rest from them.
#[derive(Debug)]
pub struct RaptorqEncoder {
    config: RaptorqConfig,
    data: Vec<u8>,
    /// The crate's encoder with the intermediate symbols, computed when first needed.
    inner: OnceLock<SourceBlockEncoder>,
    /// The rows of this k, fetched on the first repair symbol written from them.
    rows: OnceLock<Arc<Rows>>,
    /// Repair symbols written from rows so far.
    from_rows: AtomicUsize,
}

impl Clone for RaptorqEncoder {
    fn clone(&self) -> Self {
        Self {
            config: self.config,
            data: self.data.clone(),
            inner: self.inner.clone(),
            rows: self.rows.clone(),
            from_rows: AtomicUsize::new(self.from_rows.load(Ordering::Relaxed)),
        }
    }
}

impl RaptorqEncoder {
    /// An encoder over `data`, which must be exactly k·T bytes. Taken by value: the source
    /// symbols are served from it without another copy.
    pub fn new(config: RaptorqConfig, data: Vec<u8>) -> Result<Self> {
        check_len(config.block_bytes(), data.len())?;
        Ok(Self {
            config,
            data,
            inner: OnceLock::new(),
            rows: OnceLock::new(),
            from_rows: AtomicUsize::new(0),
        })
    }

    fn inner(&self) -> &SourceBlockEncoder {
        self.inner
            .get_or_init(|| SourceBlockEncoder::new(0, &self.config.oti(), &self.data))
    }

    /// The rows, if the next `n` repair symbols are to be written from them: a small block
    /// whose intermediate symbols are not computed yet, within [`ROWS_ENCODE_LIMIT`].
    fn rows_for(&self, n: usize) -> Option<&Rows> {
        if self.config.k > raptorq_rows::MAX_K || self.inner.get().is_some() {
            return None;
        }
        let used = self.from_rows.load(Ordering::Relaxed);
        if used + n > ROWS_ENCODE_LIMIT {
            return None;
        }
        self.from_rows.store(used + n, Ordering::Relaxed);
        Some(self.rows.get_or_init(|| Rows::get(self.config.k)))
    }

    /// The configuration.
    pub fn config(&self) -> &RaptorqConfig {
        &self.config
    }

    /// Gives the block back, so a sender can reuse its buffer for the next block.
    pub fn into_data(self) -> Vec<u8> {
        self.data
    }

    /// Writes the symbol with encoding symbol id `esi` into `out` (T bytes).
    ///
    /// Errors if `out` is not T bytes or `esi` > [`MAX_ENCODING_SYMBOL_ID`].
    pub fn encode(&self, esi: u32, out: &mut [u8]) -> Result<()> {
        let t = self.config.symbol_size;
        check_len(t, out.len())?;
        self.config.check_esi(esi)?;
        let k = self.config.k as u32;
        if esi < k {
            let i = esi as usize;
            out.copy_from_slice(&self.data[i * t..(i + 1) * t]);
        } else if let Some(rows) = self.rows_for(1) {
            rows.encode(esi, &self.data, out);
        } else {
            let packet = self.inner().repair_packets(esi - k, 1);
            out.copy_from_slice(packet[0].data());
        }
        Ok(())
    }

    /// Writes `out.len() / T` consecutive repair symbols, the first with ESI `first_esi`
    /// (which must be ≥ k), into `out`. Faster than symbol-by-symbol for batches.
    ///
    /// Errors if `out` is not a multiple of T, `first_esi` < k, or the last id would exceed
    /// [`MAX_ENCODING_SYMBOL_ID`].
    pub fn encode_repair(&self, first_esi: u32, out: &mut [u8]) -> Result<()> {
        let t = self.config.symbol_size;
        let k = self.config.k as u32;
        if !out.len().is_multiple_of(t) {
            return Err(Error::LengthMismatch {
                expected: out.len() / t * t,
                actual: out.len(),
            });
        }
        if first_esi < k {
            return Err(Error::UnknownSymbol {
                id: u64::from(first_esi),
                limit: u64::from(k),
            });
        }
        let n = (out.len() / t) as u64;
        if n == 0 {
            return Ok(());
        }
        self.config
            .check_esi(u32::try_from(u64::from(first_esi) + n - 1).unwrap_or(u32::MAX))?;
        if let Some(rows) = self.rows_for(n as usize) {
            for (esi, dst) in (first_esi..).zip(out.chunks_exact_mut(t)) {
                rows.encode(esi, &self.data, dst);
            }
            return Ok(());
        }
        let packets = self.inner().repair_packets(first_esi - k, n as u32);
        for (dst, p) in out.chunks_exact_mut(t).zip(&packets) {
            dst.copy_from_slice(p.data());
        }
        Ok(())
    }
}

/// What one [`RaptorqDecoder::push`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RaptorqProgress {
    /// Whether the symbol was new (not a duplicate ESI).
    pub new_symbol: bool,
    /// Distinct symbols received.
    pub received: usize,
    /// Whether the block is decoded.
    pub complete: bool,
}

/// Collects symbols of one source block and decodes it (the receiver side).
///
/// The code is systematic, so a block whose k source symbols all arrive is its source symbols
/// in order: they are written straight into the block's buffer. Repair symbols are held until
/// a decoding attempt (every new symbol once k distinct ones are held) needs them:
///
/// * for a block of up to 256 symbols the repair symbols' rows tell, without touching symbol
///   bytes, whether the symbols held determine the block; if they do, a block missing at
///   most 16 source symbols is solved from the rows (an m×m system over the missing
///   symbols; see `docs/codec.md`), and one missing more by the crate's decoder, once;
/// * for a larger block the `raptorq` crate's decoder is created at the first repair
///   symbol, given every symbol held, and from then on given each new symbol.
///
/// Both succeed at exactly the same pushes, with the same bytes: a solve succeeds if and only
/// if the symbols held determine the block.
#[derive(Debug, Clone)]
pub struct RaptorqDecoder {
    config: RaptorqConfig,
    /// The source symbols received, at their places in the block (allocated on the first).
    block: Vec<u8>,
    /// Which source symbols `block` holds.
    have: Vec<bool>,
    /// The crate's decoder, once an attempt needed it.
    inner: Option<SourceBlockDecoder>,
    /// Distinct repair symbols received.
    repairs: HashSet<u32>,
    /// The repair symbols received while `inner` is `None`: ESI, bytes and (for a small
    /// block) the row.
    held: Vec<Held>,
    /// The rows of this k, for a small block, fetched with the first repair symbol.
    rows: Option<Arc<Rows>>,
    /// The repair symbols chosen by earlier attempts from rows.
    basis: Basis,
    source_received: usize,
    result: Option<Vec<u8>>,
    attempts: usize,
}

impl RaptorqDecoder {
    /// An empty decoder.
    pub fn new(config: RaptorqConfig) -> Self {
        Self {
            config,
            block: Vec::new(),
            have: Vec::new(),
            inner: None,
            repairs: HashSet::new(),
            held: Vec::new(),
            rows: None,
            basis: Basis::default(),
            source_received: 0,
            result: None,
            attempts: 0,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &RaptorqConfig {
        &self.config
    }

    /// Adds the symbol with encoding symbol id `esi`; once k distinct symbols are held, each
    /// new one triggers a decoding attempt until one succeeds.
    ///
    /// Errors (and changes nothing) if `payload` is not T bytes or `esi` >
    /// [`MAX_ENCODING_SYMBOL_ID`].
    pub fn push(&mut self, esi: u32, payload: &[u8]) -> Result<RaptorqProgress> {
        let (k, t) = (self.config.k, self.config.symbol_size);
        check_len(t, payload.len())?;
        self.config.check_esi(esi)?;
        let new_symbol = self.result.is_none()
            && if (esi as usize) < k {
                if self.have.is_empty() {
                    self.have = vec![false; k];
                    // Filled as symbols arrive (see below): not zeroed ahead of them.
                    self.block = Vec::with_capacity(k * t);
                }
                !std::mem::replace(&mut self.have[esi as usize], true)
            } else {
                self.repairs.insert(esi)
            };
        if new_symbol {
            if (esi as usize) < k {
                let i = esi as usize;
                // `block` holds the bytes up to the furthest symbol received; a symbol beyond
                // them extends it, zeros standing in for the ones not yet received (each
                // overwritten when it arrives). Symbols mostly arrive in order, so the
                // block's k·T bytes are rarely zeroed first.
                if self.block.len() < (i + 1) * t {
                    self.block.resize(i * t, 0);
                    self.block.extend_from_slice(payload);
                } else {
                    self.block[i * t..(i + 1) * t].copy_from_slice(payload);
                }
                self.source_received += 1;
            }
            if self.received() >= k {
                self.attempts += 1;
            }
            if self.source_received == k {
                self.result = Some(std::mem::take(&mut self.block));
            } else if let Some(inner) = self.inner.as_mut() {
                let packet = EncodingPacket::new(PayloadId::new(0, esi), payload.to_vec());
                self.result = inner.decode(std::iter::once(packet));
            } else {
                if (esi as usize) >= k {
                    self.hold(esi, payload);
                }
                // A large block hands its symbols to the crate at the first repair symbol
                // (it decodes nothing before k symbols are held).
                if self.received() >= k || (k > raptorq_rows::MAX_K && (esi as usize) >= k) {
                    self.attempt();
                }
            }
            if self.result.is_some() {
                self.inner = None;
                self.basis = Basis::default();
                self.held = Vec::new();
                self.block = Vec::new();
            }
        }
        Ok(RaptorqProgress {
            new_symbol,
            received: self.received(),
            complete: self.is_complete(),
        })
    }

    /// Keeps a repair symbol, with its row if the block is small.
    fn hold(&mut self, esi: u32, payload: &[u8]) {
        let k = self.config.k;
        let row = if k <= raptorq_rows::MAX_K {
            self.rows.get_or_insert_with(|| Rows::get(k)).row(esi)
        } else {
            Vec::new()
        };
        let payload = payload.to_vec();
        self.held.push(Held { esi, row, payload });
    }

    /// A decoding attempt with the symbols held, before the crate's decoder exists.
    fn attempt(&mut self) {
        let (k, t) = (self.config.k, self.config.symbol_size);
        let missing = k - self.source_received;
        if k <= raptorq_rows::MAX_K {
            self.block.resize(k * t, 0);
            // No source symbol may have come yet.
            self.have.resize(k, false);
            // The rows tell whether the symbols held determine the block, without touching
            // symbol bytes: an attempt that must fail costs no solve.
            if !raptorq_rows::determined(&self.have, &self.held, &mut self.basis) {
                return;
            }
            if missing <= ROWS_DECODE_LIMIT {
                if raptorq_rows::solve(&mut self.block, &self.have, t, &self.held, &mut self.basis)
                {
                    self.result = Some(std::mem::take(&mut self.block));
                }
                return;
            }
            // Determined, with many symbols missing: the crate's solver, once.
        }
        // The crate's decoder, given every symbol held.
        let mut inner =
            SourceBlockDecoder::new(0, &self.config.oti(), self.config.block_bytes() as u64);
        let block = &self.block;
        let sources = self
            .have
            .iter()
            .enumerate()
            .filter(|(_, h)| **h)
            .map(|(i, _)| {
                EncodingPacket::new(
                    PayloadId::new(0, i as u32),
                    block[i * t..(i + 1) * t].to_vec(),
                )
            });
        let repairs = std::mem::take(&mut self.held)
            .into_iter()
            .map(|h| EncodingPacket::new(PayloadId::new(0, h.esi), h.payload));
        self.result = inner.decode(sources.chain(repairs));
        self.inner = Some(inner);
    }

    /// Distinct symbols received (counting stops once decoded).
    pub fn received(&self) -> usize {
        self.source_received + self.repairs.len()
    }

    /// Decoding attempts made so far (each with ≥ k symbols).
    pub fn attempts(&self) -> usize {
        self.attempts
    }

    /// Whether the symbols received so far were decodable (the block is decoded).
    pub fn is_complete(&self) -> bool {
        self.result.is_some()
    }

    /// The block (k·T bytes), once decoded.
    pub fn data(&self) -> Result<&[u8]> {
        self.result.as_deref().ok_or(Error::NotDecoded {
            decoded: self.source_received,
            k: self.config.k,
        })
    }

    /// Consumes the decoder and returns the block, once decoded.
    pub fn into_data(self) -> Result<Vec<u8>> {
        self.data()?;
        Ok(self.result.unwrap_or_default())
    }
}
