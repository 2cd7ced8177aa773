//! Wire format: packet header, frames, checksum (see `docs/wire.md`).
//!
//! Parsing never panics: every accessor works on a bounds-checked [`Reader`], and every
//! malformed input is a [`WireError`]. Emission goes through [`PacketWriter`], which refuses a
//! frame that does not fit instead of truncating it.

mod frame;
mod packet;
#[cfg(test)]
mod tests;

pub use frame::{
    AckFrame, AckRanges, Coding, FeedbackFrame, Frame, FrameIter, MessageFrame, SymbolFrame,
    SCHEME_FEEDBACK_KINDS,
};
pub use packet::{
    parse_header, parse_packet, parse_packet_intact, seal_checksum, Header, PacketWriter, Trailer,
    CHECKSUM_LEN, FIXED_HEADER_LEN, MAGIC, MAX_HEADER_LEN, VERSION,
};

/// Every way a datagram can be malformed (or a frame fail to fit on emission).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The datagram cannot even hold a header and a checksum.
    #[error("datagram of {len} bytes is shorter than the minimum of {min}")]
    TooShort {
        /// Length received.
        len: usize,
        /// Smallest valid length.
        min: usize,
    },
    /// The first byte is not the protocol's marker.
    #[error("bad magic byte {0:#04x}")]
    BadMagic(u8),
    /// A version this implementation does not speak.
    #[error("unsupported version {0}")]
    UnsupportedVersion(u8),
    /// The CRC-32 trailer does not match: the datagram was corrupted.
    #[error("checksum mismatch (datagram corrupted)")]
    Checksum,
    /// A field runs past the end of the datagram.
    #[error("truncated {0}")]
    Truncated(&'static str),
    /// A frame type this implementation does not know.
    #[error("unknown frame type {0:#x}")]
    UnknownFrame(u64),
    /// A field holds a value that cannot be right.
    #[error("invalid {field}: {reason}")]
    Invalid {
        /// Which field.
        field: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A varint exceeds 2^62 - 1 on emission.
    #[error("value {0} does not fit a varint")]
    VarintRange(u64),
    /// Emission: the frame does not fit in the space left in the packet.
    #[error("frame does not fit: needs {needed} bytes, {available} left")]
    NoSpace {
        /// Bytes the frame needs.
        needed: usize,
        /// Bytes left in the packet.
        available: usize,
    },
}

/// Largest value a varint can carry (2^62 - 1, as QUIC).
pub const VARINT_MAX: u64 = (1 << 62) - 1;

/// Encoded length of a varint (QUIC RFC 9000 §16: 1, 2, 4 or 8 bytes).
pub const fn varint_len(v: u64) -> usize {
    if v < 1 << 6 {
        1
    } else if v < 1 << 14 {
        2
    } else if v < 1 << 30 {
        4
    } else {
        8
    }
}

/// Appends `v` as a varint (RFC 9000 §16) to `out`: for schemes' private SCHEME frame bodies,
/// read back with [`Reader::varint`]. `v` must not exceed [`VARINT_MAX`] (the top two bits
/// would be lost).
pub fn put_varint(out: &mut Vec<u8>, v: u64) {
    let at = out.len();
    out.resize(at + varint_len(v), 0);
    Writer {
        buf: &mut out[at..],
        pos: 0,
    }
    .varint(v);
}

/// Bounds-checked cursor over received bytes.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// Reads from the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }
    /// Bytes not yet consumed.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }
    /// True when everything was consumed.
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }
    /// Next byte.
    pub fn u8(&mut self, what: &'static str) -> Result<u8, WireError> {
        let b = *self.buf.get(self.pos).ok_or(WireError::Truncated(what))?;
        self.pos += 1;
        Ok(b)
    }
    /// Big-endian u32.
    pub fn u32(&mut self, what: &'static str) -> Result<u32, WireError> {
        let b = self.bytes(4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    /// Big-endian u64.
    pub fn u64(&mut self, what: &'static str) -> Result<u64, WireError> {
        let b = self.bytes(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_be_bytes(a))
    }
    /// QUIC-style variable-length integer.
    ///
    /// Inlined, with the one-byte form (values below 64: most frame fields) returned
    /// directly and the longer forms bounds-checked once; a truncated varint consumes the
    /// rest of the buffer, as reading it byte by byte would.
    #[inline(always)]
    pub fn varint(&mut self, what: &'static str) -> Result<u64, WireError> {
        let first = self.u8(what)?;
        let v = u64::from(first & 0x3f);
        if first < 0x40 {
            return Ok(v);
        }
        // The 2-, 4- and 8-byte forms: their fixed-size tails read as one big-endian word
        // (no loop over the bytes).
        let tail = &self.buf[self.pos..];
        let read = match first >> 6 {
            1 => tail.first_chunk().map(|&[a]| (1, [0, 0, 0, 0, 0, 0, 0, a])),
            2 => tail
                .first_chunk()
                .map(|&[a, b, c]| (3, [0, 0, 0, 0, 0, a, b, c])),
            _ => tail
                .first_chunk()
                .map(|&[a, b, c, d, e, f, g]| (7, [0, a, b, c, d, e, f, g])),
        };
        let Some((n, low)) = read else {
            self.pos = self.buf.len();
            return Err(WireError::Truncated(what));
        };
        self.pos += n;
        Ok((v << (8 * n)) | u64::from_be_bytes(low))
    }
    /// A varint that must fit `u32`.
    pub fn varint_u32(&mut self, what: &'static str) -> Result<u32, WireError> {
        let v = self.varint(what)?;
        u32::try_from(v).map_err(|_| WireError::Invalid {
            field: what,
            reason: "exceeds 32 bits",
        })
    }
    /// The next `n` bytes.
    pub fn bytes(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], WireError> {
        if self.remaining() < n {
            return Err(WireError::Truncated(what));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    /// A varint length followed by that many bytes.
    #[inline(always)]
    pub fn length_prefixed(&mut self, what: &'static str) -> Result<&'a [u8], WireError> {
        let n = self.varint(what)?;
        let n = usize::try_from(n).map_err(|_| WireError::Truncated(what))?;
        self.bytes(n, what)
    }
}

/// Cursor that writes into a fixed buffer; callers check space first (see [`PacketWriter`]).
#[derive(Debug)]
pub(crate) struct Writer<'a> {
    pub(crate) buf: &'a mut [u8],
    pub(crate) pos: usize,
}

impl Writer<'_> {
    pub(crate) fn u8(&mut self, v: u8) {
        self.buf[self.pos] = v;
        self.pos += 1;
    }
    pub(crate) fn u32(&mut self, v: u32) {
        self.bytes(&v.to_be_bytes());
    }
    // Always inlined: several per packet (header, DATA offset and length, ACK fields), and
    // the call cost as much as the write.
    #[inline(always)]
    pub(crate) fn varint(&mut self, v: u64) {
        debug_assert!(v <= VARINT_MAX);
        match varint_len(v) {
            1 => self.u8(v as u8),
            2 => self.bytes(&((v as u16) | 0x4000).to_be_bytes()),
            4 => self.bytes(&((v as u32) | 0x8000_0000).to_be_bytes()),
            _ => self.bytes(&(v | 0xc000_0000_0000_0000).to_be_bytes()),
        }
    }
    pub(crate) fn bytes(&mut self, b: &[u8]) {
        self.buf[self.pos..self.pos + b.len()].copy_from_slice(b);
        self.pos += b.len();
    }
}

/// Checks a value fits a varint before emission.
pub(crate) fn check_varint(v: u64) -> Result<u64, WireError> {
    if v > VARINT_MAX {
        Err(WireError::VarintRange(v))
    } else {
        Ok(v)
    }
}

#[cfg(test)]
mod varint_tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn varint_literals() {
        // RFC 9000 Appendix A.1 examples.
        for (bytes, v) in [
            (&[0x25u8][..], 37u64),
            (&[0x7b, 0xbd][..], 15293),
            (&[0x9d, 0x7f, 0x3e, 0x7d][..], 494_878_333),
            (
                &[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c][..],
                151_288_809_941_952_652,
            ),
        ] {
            assert_eq!(Reader::new(bytes).varint("v").unwrap(), v);
            let mut buf = [0u8; 8];
            let mut w = Writer {
                buf: &mut buf,
                pos: 0,
            };
            w.varint(v);
            let n = w.pos;
            assert_eq!(&buf[..n], bytes);
        }
    }

    /// Every proper prefix of an encoded varint is an error naming the field, and the
    /// reader has consumed the prefix (a caller that keeps reading sees an empty buffer).
    #[test]
    fn truncated_varint_is_an_error() {
        for bytes in [
            &[0x7bu8, 0xbd][..],
            &[0x9d, 0x7f, 0x3e, 0x7d][..],
            &[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c][..],
        ] {
            for n in 0..bytes.len() {
                let mut r = Reader::new(&bytes[..n]);
                assert!(matches!(r.varint("v"), Err(WireError::Truncated("v"))));
                assert!(r.is_empty());
            }
        }
    }

    proptest! {
        #[test]
        fn varint_round_trip(v in 0u64..=VARINT_MAX) {
            let mut buf = [0u8; 8];
            let mut w = Writer { buf: &mut buf, pos: 0 };
            w.varint(v);
            let n = w.pos;
            prop_assert_eq!(n, varint_len(v));
            let mut r = Reader::new(&buf[..n]);
            prop_assert_eq!(r.varint("v").unwrap(), v);
            prop_assert!(r.is_empty());
        }
    }
}
