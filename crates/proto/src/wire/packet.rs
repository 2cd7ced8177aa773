//! Packet header and trailer.
//!
//! ```text
//! +--------+---------+-----------------+---------+--------------------+-----------+
//! | 0x54   | version | connection id   | path id | packet number      | frames... | CRC-32 |
//! | 1 byte | 1 byte  | 8 bytes (BE)    | 1 byte  | varint (1-8 bytes) |           | 4 (BE) |
//! +--------+---------+-----------------+---------+--------------------+-----------+
//! ```
//! The CRC-32 (IEEE) covers every byte before it, so a datagram corrupted anywhere is rejected.

use super::frame::{self, Coding, FeedbackFrame, Frame};
use super::{check_varint, varint_len, Reader, WireError, Writer};
use crate::ranges::RangeSet;

/// First byte of every datagram ('T').
pub const MAGIC: u8 = 0x54;
/// The only version spoken (5: a SYMBOL frame's coding is told by its frame type; 4 had a
/// coding byte in the frame; 3 had no timestamp in the handshake's INIT; 2 had no ack delay
/// in ACK frames; 1 had 32-bit connection ids).
pub const VERSION: u8 = 5;
/// Length of the CRC-32 trailer.
pub const CHECKSUM_LEN: usize = 4;
/// Longest possible header.
pub const MAX_HEADER_LEN: usize = FIXED_HEADER_LEN + 8;
/// Header bytes before the packet number: marker, version, connection id, path id.
pub const FIXED_HEADER_LEN: usize = 2 + 8 + 1;
const MIN_LEN: usize = FIXED_HEADER_LEN + 1 + CHECKSUM_LEN;

/// Largest DATA payload `r` when `base` bytes remain after the frame's type and offset:
/// `base - l` for the smallest length-field size `l` of 1, 2, 4, 8 bytes whose varint
/// holds `base - l` (0 if none). The bounds are where `varint_len(base - l) <= l` holds:
/// below 2^6, 2^14, 2^30 for 1, 2, 4 bytes; 8 bytes hold any length.
#[inline(always)]
fn data_room_after_header(base: usize) -> usize {
    if base == 0 {
        0
    } else if base <= 1 << 6 {
        base - 1
    } else if base <= (1 << 14) + 1 {
        base - 2
    } else if base <= (1 << 30) + 3 {
        base - 4
    } else {
        base - 8
    }
}

/// The fixed part of every packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Connection identifier (random, 64 bits, when a handshake chose it).
    pub conn_id: u64,
    /// Path the packet was sent on (its packet-number space).
    pub path: u8,
    /// Packet number within the path; never reused.
    pub pn: u64,
}

impl Header {
    /// Encoded length.
    pub fn len(&self) -> usize {
        FIXED_HEADER_LEN + varint_len(self.pn)
    }
    /// Never true; present for API symmetry with `len`.
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// Validates a datagram (length, marker, version, checksum) and returns its header and the
/// frame bytes. Iterate the frames with [`crate::wire::FrameIter`].
pub fn parse_packet(datagram: &[u8]) -> Result<(Header, &[u8]), WireError> {
    let (hdr, body, frames, expected) = split_packet(datagram)?;
    if crc32fast::hash(body) != expected {
        return Err(WireError::Checksum);
    }
    Ok((hdr, frames))
}

/// [`parse_packet`] without recomputing the checksum, for a datagram the caller knows to be
/// byte for byte what a [`PacketWriter`] finished (a simulator that delivered it through
/// links which did not alter it). Length, marker, version and header are validated as
/// usual; debug builds still compare the checksum and panic on a mismatch, which would
/// mean the caller's promise was false. Never use it for bytes from a network.
pub fn parse_packet_intact(datagram: &[u8]) -> Result<(Header, &[u8]), WireError> {
    let (hdr, body, frames, expected) = split_packet(datagram)?;
    debug_assert_eq!(
        crc32fast::hash(body),
        expected,
        "parse_packet_intact: the datagram is not what was written"
    );
    Ok((hdr, frames))
}

/// Writes the CRC-32 trailer of a datagram written with [`Trailer::Crc32Deferred`] (or
/// rewrites a present one): afterwards it is what [`Trailer::Crc32`] would have written.
/// Returns false, changing nothing, for a datagram shorter than a header and trailer.
pub fn seal_checksum(datagram: &mut [u8]) -> bool {
    if datagram.len() < MIN_LEN {
        return false;
    }
    let (body, trailer) = datagram.split_at_mut(datagram.len() - CHECKSUM_LEN);
    trailer.copy_from_slice(&crc32fast::hash(body).to_be_bytes());
    true
}

/// A datagram split by [`split_packet`]: the header, the checksummed body, the frame bytes
/// and the checksum the trailer carries.
type Split<'a> = (Header, &'a [u8], &'a [u8], u32);

/// Length check and header (see [`Split`]). Inlined into its two callers: a call returned
/// the split through memory.
#[inline]
fn split_packet(datagram: &[u8]) -> Result<Split<'_>, WireError> {
    if datagram.len() < MIN_LEN {
        return Err(WireError::TooShort {
            len: datagram.len(),
            min: MIN_LEN,
        });
    }
    let body_len = datagram.len() - CHECKSUM_LEN;
    let (body, trailer) = datagram.split_at(body_len);
    let (hdr, hlen) = parse_header(body)?;
    let expected = u32::from_be_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
    Ok((hdr, body, &body[hlen..], expected))
}

/// Parses the header at the start of `datagram` (marker, version, connection id, path,
/// packet number) without looking at the trailer; returns it and its length. Protected
/// packets ([`crate::protect`]) are parsed this way before their tag is checked.
pub fn parse_header(datagram: &[u8]) -> Result<(Header, usize), WireError> {
    let mut r = Reader::new(datagram);
    let magic = r.u8("marker")?;
    if magic != MAGIC {
        return Err(WireError::BadMagic(magic));
    }
    let version = r.u8("version")?;
    if version != VERSION {
        return Err(WireError::UnsupportedVersion(version));
    }
    let conn_id = r.u64("connection id")?;
    let path = r.u8("path id")?;
    let pn = r.varint("packet number")?;
    Ok((Header { conn_id, path, pn }, datagram.len() - r.remaining()))
}

/// What ends a packet: a CRC-32 (unprotected packets), or room for the AEAD tag that
/// [`crate::protect::Protection::seal`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Trailer {
    /// CRC-32 (IEEE) of every preceding byte.
    #[default]
    Crc32,
    /// [`crate::protect::TAG_LEN`] bytes, filled when the packet is sealed.
    Aead,
    /// Room for the CRC-32, left zero: a simulator's datagram whose checksum is computed
    /// only if a link is about to alter it ([`seal_checksum`]). Never for a network.
    Crc32Deferred,
}

impl Trailer {
    /// Bytes the trailer takes.
    pub const fn len(self) -> usize {
        match self {
            Trailer::Crc32 | Trailer::Crc32Deferred => CHECKSUM_LEN,
            Trailer::Aead => crate::protect::TAG_LEN,
        }
    }
    /// Never true; present for API symmetry with `len`.
    pub const fn is_empty(self) -> bool {
        false
    }
}

/// Builds one packet in a caller-provided buffer: header first, then frames, then
/// [`finish`](PacketWriter::finish) appends the checksum.
#[derive(Debug)]
pub struct PacketWriter<'a> {
    header: Header,
    w: Writer<'a>,
    limit: usize,
    frames: usize,
    ack_eliciting: bool,
    payload: usize,
    trailer: Trailer,
}

impl<'a> PacketWriter<'a> {
    /// Starts a packet of at most `max_len` bytes (and at most `buf.len()`) ending in a
    /// CRC-32.
    pub fn new(buf: &'a mut [u8], max_len: usize, header: Header) -> Result<Self, WireError> {
        Self::with_trailer(buf, max_len, header, Trailer::Crc32)
    }

    /// Starts a packet of at most `max_len` bytes (and at most `buf.len()`) ending in
    /// `trailer`.
    #[inline(always)]
    pub fn with_trailer(
        buf: &'a mut [u8],
        max_len: usize,
        header: Header,
        trailer: Trailer,
    ) -> Result<Self, WireError> {
        let limit = max_len.min(buf.len());
        let pn = check_varint(header.pn)?;
        let pn_len = varint_len(pn);
        let need = FIXED_HEADER_LEN + pn_len + trailer.len() + 1;
        if limit < need {
            return Err(WireError::NoSpace {
                needed: need,
                available: limit,
            });
        }
        // The fixed part as one store (`limit <= buf.len()`: the whole header fits), then
        // the packet number's varint.
        let mut fixed = [0u8; FIXED_HEADER_LEN];
        fixed[0] = MAGIC;
        fixed[1] = VERSION;
        fixed[2..10].copy_from_slice(&header.conn_id.to_be_bytes());
        fixed[10] = header.path;
        buf[..FIXED_HEADER_LEN].copy_from_slice(&fixed);
        let mut w = Writer {
            buf,
            pos: FIXED_HEADER_LEN,
        };
        w.varint(pn);
        Ok(PacketWriter {
            header,
            w,
            limit,
            frames: 0,
            ack_eliciting: false,
            payload: 0,
            trailer,
        })
    }

    /// The header of the packet being built: its path and packet number.
    pub fn header(&self) -> Header {
        self.header
    }

    /// Bytes still available for frames.
    pub fn remaining(&self) -> usize {
        self.limit - self.trailer.len() - self.w.pos
    }

    /// Number of frames written so far.
    pub fn frame_count(&self) -> usize {
        self.frames
    }

    /// Bytes of the frames written so far (`remaining() + frames_len()` is the room of the
    /// empty packet).
    pub fn frames_len(&self) -> usize {
        self.w.pos - self.header.len()
    }

    /// Payload bytes written so far: the bytes carried by DATA, SYMBOL and SCHEME frames
    /// (stream data, symbols, parity; not their headers).
    pub fn payload_len(&self) -> usize {
        self.payload
    }

    /// True if a frame that requires acknowledgement was written.
    pub fn is_ack_eliciting(&self) -> bool {
        self.ack_eliciting
    }

    /// Appends `frame`, or fails without writing anything if it does not fit.
    pub fn push(&mut self, f: &Frame<'_>) -> Result<(), WireError> {
        let needed = f.encoded_len()?;
        self.reserve(needed)?;
        f.emit(&mut self.w);
        self.payload += f.payload_len();
        self.note(f.is_ack_eliciting());
        Ok(())
    }

    /// Appends a FEEDBACK frame: the bytes and packet state of `push(&Frame::Feedback(f))`,
    /// without going through the general frame's length and emit dispatch (a receiver
    /// writes several per acknowledgement).
    pub fn push_feedback(&mut self, f: FeedbackFrame) -> Result<(), WireError> {
        let needed = frame::feedback_len(&f)?;
        self.reserve(needed)?;
        frame::emit_feedback(&mut self.w, &f);
        // The packet state `Frame::Feedback` itself says (no payload); a known variant, so
        // this folds to a constant.
        let frame = Frame::Feedback(f);
        self.payload += frame.payload_len();
        self.note(frame.is_ack_eliciting());
        Ok(())
    }

    /// Appends an ACK_FLOOR frame: the bytes and packet state of
    /// `push(&Frame::AckFloor { path, floor })`, without going through the general frame's
    /// length and emit dispatch (a sender writes one in about every other data packet).
    pub fn push_ack_floor(&mut self, path: u8, floor: u64) -> Result<(), WireError> {
        let needed = frame::ack_floor_len(floor)?;
        self.reserve(needed)?;
        frame::emit_ack_floor(&mut self.w, path, floor);
        // The packet state `Frame::AckFloor` itself says; a known variant, so this folds to
        // a constant.
        let frame = Frame::AckFloor { path, floor };
        self.payload += frame.payload_len();
        self.note(frame.is_ack_eliciting());
        Ok(())
    }

    /// Appends a DATA frame whose `len` payload bytes are written by `fill` directly into the
    /// packet (no intermediate copy).
    pub fn push_data_with(
        &mut self,
        offset: u64,
        len: usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<(), WireError> {
        let needed = frame::data_header_len(offset, len)? + len;
        self.reserve(needed)?;
        frame::emit_data_header(&mut self.w, offset, len);
        let start = self.w.pos;
        fill(&mut self.w.buf[start..start + len]);
        self.w.pos += len;
        self.payload += len;
        self.note(true);
        Ok(())
    }

    /// Appends a SCHEME frame of `kind` whose `len` body bytes are written by `fill` directly
    /// into the packet (no intermediate copy). Fails without writing anything if it does not
    /// fit; if `fill` returns `false` the frame is taken back and the result is `Ok(false)`.
    pub fn push_scheme_with(
        &mut self,
        kind: u64,
        len: usize,
        fill: impl FnOnce(&mut [u8]) -> bool,
    ) -> Result<bool, WireError> {
        let needed = frame::scheme_header_len(kind, len)? + len;
        self.reserve(needed)?;
        let at = self.w.pos;
        frame::emit_scheme_header(&mut self.w, kind, len);
        Ok(self.fill_body(at, len, kind < frame::SCHEME_FEEDBACK_KINDS, fill))
    }

    /// Appends a SYMBOL frame whose `len` symbol bytes are written by `fill` directly into
    /// the packet (no intermediate copy; the bytes are those [`Frame::Symbol`] writes). Fails
    /// without writing anything if it does not fit; if `fill` returns `false` the frame is
    /// taken back and the result is `Ok(false)`.
    pub fn push_symbol_with(
        &mut self,
        block: u64,
        id: u32,
        coding: Coding<'_>,
        len: usize,
        fill: impl FnOnce(&mut [u8]) -> bool,
    ) -> Result<bool, WireError> {
        let needed = frame::symbol_header_len(block, id, coding, len)? + len;
        self.reserve(needed)?;
        let at = self.w.pos;
        frame::emit_symbol_header(&mut self.w, block, id, coding, len);
        Ok(self.fill_body(at, len, true, fill))
    }

    /// After a frame header written from `at` (room for `len` more bytes reserved): lets
    /// `fill` write the body in place; `false` from it takes the whole frame back.
    fn fill_body(
        &mut self,
        at: usize,
        len: usize,
        eliciting: bool,
        fill: impl FnOnce(&mut [u8]) -> bool,
    ) -> bool {
        let start = self.w.pos;
        if !fill(&mut self.w.buf[start..start + len]) {
            self.w.pos = at;
            return false;
        }
        self.w.pos += len;
        self.payload += len;
        self.note(eliciting);
        true
    }

    /// Largest DATA payload that fits at `offset` in the space left (0 if none).
    pub fn data_room(&self, offset: u64) -> usize {
        let fixed = 1 + varint_len(offset);
        let Some(base) = self.remaining().checked_sub(fixed) else {
            return 0;
        };
        data_room_after_header(base)
    }

    /// Appends an ACK frame for the highest `max_ranges` ranges of `ranges`, with
    /// `ack_delay` microseconds since the largest was received, and with `received_at` (the
    /// largest's receive time, µs on this end's clock) as an ACK_TS frame. Returns `false`
    /// (writing nothing) if `ranges` is empty or the frame does not fit.
    #[allow(clippy::too_many_arguments)]
    pub fn push_ack(
        &mut self,
        path: u8,
        ranges: &RangeSet,
        max_ranges: usize,
        ack_delay: u64,
        data_ack: u64,
        max_data: u64,
        received_at: Option<u64>,
    ) -> Result<bool, WireError> {
        let start = self.w.pos;
        let end = start + self.remaining();
        match frame::encode_ack(
            &mut self.w.buf[start..end],
            path,
            ranges,
            max_ranges,
            ack_delay,
            data_ack,
            max_data,
            received_at,
        )? {
            Some(n) => {
                self.w.pos += n;
                self.note(false);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Appends the checksum (or reserves the tag's room) and returns the datagram length.
    #[inline]
    pub fn finish(mut self) -> usize {
        match self.trailer {
            Trailer::Crc32 => {
                let crc = crc32fast::hash(&self.w.buf[..self.w.pos]);
                self.w.u32(crc);
            }
            Trailer::Aead => self.w.pos += Trailer::Aead.len(),
            Trailer::Crc32Deferred => self.w.u32(0),
        }
        self.w.pos
    }

    fn reserve(&self, needed: usize) -> Result<(), WireError> {
        let available = self.remaining();
        if needed > available {
            Err(WireError::NoSpace { needed, available })
        } else {
            Ok(())
        }
    }

    fn note(&mut self, eliciting: bool) {
        self.frames += 1;
        self.ack_eliciting |= eliciting;
    }
}

#[cfg(test)]
mod data_room_tests {
    use super::{data_room_after_header, varint_len};

    /// The first form of [`PacketWriter::data_room`]'s search: the smallest length-field size
    /// whose varint holds the rest.
    fn searched(base: usize) -> usize {
        for l in [1usize, 2, 4, 8] {
            if let Some(r) = base.checked_sub(l) {
                if varint_len(r as u64) <= l {
                    return r;
                }
            }
        }
        0
    }

    #[test]
    fn data_room_bounds_equal_the_search() {
        let mut bases: Vec<usize> = (0..20_000).collect();
        for edge in [1usize << 6, 1 << 14, 1 << 30, 1 << 62] {
            bases.extend(edge.saturating_sub(16)..edge + 16);
        }
        bases.extend([usize::MAX - 1, usize::MAX]);
        for b in bases {
            assert_eq!(data_room_after_header(b), searched(b), "base {b}");
        }
    }
}
