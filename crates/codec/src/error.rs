//! The one error type of the crate.
//!
//! Every public entry point validates its input before touching data (and before calling the
//! `raptorq` crate, which asserts on some inputs), so bad input from the network or a caller
//! surfaces here instead of as a panic.

/// Errors returned by the codes of this crate.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The number of source symbols of a block (k, or the generation size g) is outside what
    /// the code supports.
    #[error("block of {k} source symbols is outside the supported range {min}..={max}")]
    BlockSizeOutOfRange {
        /// The requested number of source symbols.
        k: usize,
        /// Smallest supported value.
        min: usize,
        /// Largest supported value.
        max: usize,
    },
    /// The symbol size is outside what the code supports.
    #[error("symbol size {size} is outside the supported range {min}..={max}")]
    SymbolSizeOutOfRange {
        /// The requested symbol size in bytes.
        size: usize,
        /// Smallest supported value.
        min: usize,
        /// Largest supported value.
        max: usize,
    },
    /// A buffer (source block, symbol, coefficient vector) does not have the length the
    /// configuration requires.
    #[error("buffer has {actual} bytes, {expected} expected")]
    LengthMismatch {
        /// The length the configuration requires.
        expected: usize,
        /// The length that was given.
        actual: usize,
    },
    /// A symbol identifier that this block cannot have produced (an encoding symbol id beyond
    /// the code's id space, a source index ≥ k, a block id that is not this decoder's).
    #[error("symbol id {id} is not valid here (limit {limit})")]
    UnknownSymbol {
        /// The offending identifier.
        id: u64,
        /// The exclusive upper bound (or, for a block mismatch, the expected block id).
        limit: u64,
    },
    /// A code parameter (LT `c` or `δ`, a packet count) is out of its domain.
    #[error("invalid parameter {name}: {reason}")]
    InvalidParameter {
        /// Which parameter.
        name: &'static str,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// The block is not decoded yet, so its source cannot be returned.
    #[error("block not decoded yet ({decoded} of {k} source symbols known)")]
    NotDecoded {
        /// Source symbols recovered so far.
        decoded: usize,
        /// Source symbols in the block.
        k: usize,
    },
    /// XOR parity can rebuild at most one missing packet of a group.
    #[error("{missing} packets missing, XOR parity recovers at most one")]
    TooManyMissing {
        /// How many packets of the group are missing (parity included).
        missing: usize,
    },
}

/// Result type of this crate.
pub type Result<T> = core::result::Result<T, Error>;

/// Checks `actual == expected` for a buffer length.
pub(crate) fn check_len(expected: usize, actual: usize) -> Result<()> {
    if expected == actual {
        Ok(())
    } else {
        Err(Error::LengthMismatch { expected, actual })
    }
}
