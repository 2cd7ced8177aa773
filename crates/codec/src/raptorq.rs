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
use ::raptorq::{
    EncodingPacket, ObjectTransmissionInformation, PayloadId, SourceBlockDecoder,
    SourceBlockEncoder,
};
use std::collections::HashSet;

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
#[derive(Debug, Clone)]
pub struct RaptorqEncoder {
    config: RaptorqConfig,
    data: Vec<u8>,
    /// The intermediate symbols (RFC 6330 §5.3.3), computed on the first repair symbol:
    /// the source symbols are the data itself (systematic code), so a block sent without
    /// repair never pays for them.
    inner: std::sync::OnceLock<SourceBlockEncoder>,
}

impl RaptorqEncoder {
    /// An encoder over `data`, which must be exactly k·T bytes. Taken by value: the source
    /// symbols are served from it without another copy.
    pub fn new(config: RaptorqConfig, data: Vec<u8>) -> Result<Self> {
        check_len(config.block_bytes(), data.len())?;
        Ok(Self {
            config,
            data,
            inner: std::sync::OnceLock::new(),
        })
    }

    fn inner(&self) -> &SourceBlockEncoder {
        self.inner
            .get_or_init(|| SourceBlockEncoder::new(0, &self.config.oti(), &self.data))
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
/// in order: they are written straight into the block's buffer and the `raptorq` crate is
/// not involved. The crate's decoder is created only when the first repair symbol arrives,
/// and is then given every source symbol held so far. It sees the same symbols, and tries its
/// solves at the same pushes, as a decoder given every symbol from the start: before a repair
/// symbol it could only have told "too few symbols" or "every source symbol is here".
#[derive(Debug, Clone)]
pub struct RaptorqDecoder {
    config: RaptorqConfig,
    /// The source symbols received, at their places in the block (allocated on the first).
    block: Vec<u8>,
    /// Which source symbols `block` holds.
    have: Vec<bool>,
    /// The crate's decoder, from the first repair symbol on.
    inner: Option<SourceBlockDecoder>,
    /// Distinct repair symbols received.
    repairs: HashSet<u32>,
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
            } else if (esi as usize) >= k {
                // The first repair symbol: the crate's decoder gets every symbol held.
                let mut inner = SourceBlockDecoder::new(
                    0,
                    &self.config.oti(),
                    self.config.block_bytes() as u64,
                );
                let sources = self
                    .have
                    .iter()
                    .enumerate()
                    .filter(|(_, h)| **h)
                    .map(|(i, _)| {
                        EncodingPacket::new(
                            PayloadId::new(0, i as u32),
                            self.block[i * t..(i + 1) * t].to_vec(),
                        )
                    });
                let repair = EncodingPacket::new(PayloadId::new(0, esi), payload.to_vec());
                self.result = inner.decode(sources.chain(std::iter::once(repair)));
                self.inner = Some(inner);
            }
            if self.result.is_some() {
                self.inner = None;
                self.block = Vec::new();
            }
        }
        Ok(RaptorqProgress {
            new_symbol,
            received: self.received(),
            complete: self.is_complete(),
        })
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
