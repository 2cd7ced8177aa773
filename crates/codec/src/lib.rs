//! Erasure codes for Tributary, as pure math with no transport knowledge.
//!
//! * [`raptorq`]: RaptorQ (RFC 6330) through the `raptorq` crate, behind validated types;
//!   blocks of up to 256 symbols encode and decode their first repair symbols from rows of
//!   source-symbol coefficients instead of the crate's solver (same bytes).
//! * [`lt`]: LT codes with the robust soliton distribution of the HMTP paper (Eqs. 1–4),
//!   symbols identified by `(block, seed)`, a peeling decoder and an optional
//!   Gaussian-elimination completion.
//! * [`rlnc`]: random linear network coding over GF(2^8) with a progressive decoder.
//! * [`parity`]: XOR parity over a group of packets of different lengths.
//! * [`gf256`]: GF(2^8) arithmetic and the SIMD slice kernels everything above runs on.
//!
//! Every code has a per-block encoder that writes symbol i into a caller buffer, and a
//! per-block decoder with `push(id, bytes) -> Result<progress>` and accessors for what is
//! decoded. Bad input (wrong lengths, unknown ids, parameters out of range) is an [`Error`],
//! never a panic. Measured overhead and throughput are in `docs/codec.md`.
#![warn(missing_docs)]

pub mod error;
pub mod gf256;
mod known;
pub mod lt;
pub mod parity;
pub mod raptorq;
mod raptorq_rows;
pub mod rlnc;

pub use error::{Error, Result};

/// Xorshift32 (Marsaglia): a small deterministic generator for the tests' inputs.
#[cfg(test)]
pub(crate) fn xorshift(mut x: u32) -> impl FnMut() -> u32 {
    move || {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x
    }
}
