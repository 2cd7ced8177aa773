//! Frames: the typed contents of a packet.
//!
//! | type | frame | body |
//! |---|---|---|
//! | 0x00 | PADDING | (a run of zero bytes) |
//! | 0x01 | PING | — |
//! | 0x02 | ACK | path, largest, ack delay (µs), first range, range count, (gap, length)*, data ack, max data |
//! | 0x03 | DATA | offset, length, bytes |
//! | 0x04 | STREAM_END | final size |
//! | 0x05 | CLOSE | code |
//! | 0x06 | SYMBOL | block, symbol id, payload (plain coding) |
//! | 0x07 | FEEDBACK | block, count, flags |
//! | 0x08 | SCHEME | kind, length-prefixed body (scheme-private) |
//! | 0x09 | ACK_FLOOR | path, packet number |
//! | 0x0a | MESSAGE | id, offset, length, flags |
//! | 0x0b | ABANDON | id, offset, length, flags |
//! | 0x0c | SYMBOL_SEED | block, symbol id, seed, payload |
//! | 0x0d | SYMBOL_COEFFICIENTS | block, symbol id, coefficients (length-prefixed), payload |
//! | 0x0e | ACK_TS | ACK's fields, then the receive time of `largest` (µs, receiver's clock) |
//!
//! The three SYMBOL types are one frame, [`Frame::Symbol`], whose [`Coding`] is told by the
//! type byte rather than by a byte of its own (wire version 5; version 4 had SYMBOL only, with
//! a coding byte after the symbol id): a plain symbol, the usual one, has the DATA frame's
//! header plus its symbol id.
//!
//! ACK_TS is an ACK with a timestamp, sent instead of ACK only when the connection was
//! configured for it ([`crate::ConnectionConfig::ack_timestamps`], which both ends share),
//! so a peer that does not know the type never receives it.

use super::{check_varint, varint_len, Reader, WireError, Writer};
use crate::ranges::RangeSet;
use std::ops::Range;

const PADDING: u8 = 0x00;
const PING: u8 = 0x01;
const ACK: u8 = 0x02;
const DATA: u8 = 0x03;
const STREAM_END: u8 = 0x04;
const CLOSE: u8 = 0x05;
const SYMBOL: u8 = 0x06;
const FEEDBACK: u8 = 0x07;
const SCHEME: u8 = 0x08;
const ACK_FLOOR: u8 = 0x09;
const MESSAGE: u8 = 0x0a;
const ABANDON: u8 = 0x0b;
const SYMBOL_SEED: u8 = 0x0c;
const SYMBOL_COEFFICIENTS: u8 = 0x0d;
const ACK_TS: u8 = 0x0e;

/// SCHEME kinds from this value up are feedback (receiver → sender) and not ack-eliciting;
/// kinds below travel with the data to the receiving half.
pub const SCHEME_FEEDBACK_KINDS: u64 = 0x80;

/// One frame, borrowing its payload from the datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame<'a> {
    /// `n` bytes of padding.
    Padding(usize),
    /// Asks for an acknowledgement (keep-alive, window probe).
    Ping,
    /// Acknowledgement of one path's packets plus connection-level state.
    Ack(AckFrame<'a>),
    /// Stream bytes at a data-sequence offset.
    Data {
        /// Stream offset of the first byte (the data sequence number).
        offset: u64,
        /// The bytes.
        data: &'a [u8],
    },
    /// The stream ends at `final_size` bytes.
    StreamEnd {
        /// Total stream length.
        final_size: u64,
    },
    /// The sender is done with the connection.
    Close {
        /// Application-defined reason (0 = normal).
        code: u64,
    },
    /// An encoded symbol of a coded scheme.
    Symbol(SymbolFrame<'a>),
    /// Decoder feedback of a coded scheme (receiver → sender).
    Feedback(FeedbackFrame),
    /// Sender → receiver: every packet of `path` below `floor` is settled (acknowledged or
    /// given up), so the receiver may stop reporting it in ACK ranges.
    AckFloor {
        /// The path.
        path: u8,
        /// Lowest packet number still of interest.
        floor: u64,
    },
    /// Sender → receiver: stream bytes `[offset, offset + len)` are message `id`.
    Message(MessageFrame),
    /// Sender → receiver: message `id` (`[offset, offset + len)`) is given up: no more of its
    /// bytes will come; the receiver skips them.
    Abandon(MessageFrame),
    /// A scheme-private frame; the scheme parses `body` itself.
    Scheme {
        /// Scheme-defined sub-type.
        kind: u64,
        /// Opaque body.
        body: &'a [u8],
    },
}

/// A message's identity and place in the stream (MESSAGE and ABANDON frames).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageFrame {
    /// Message number (messages are numbered in the order they were written, from 0).
    pub id: u64,
    /// Stream offset of its first byte.
    pub offset: u64,
    /// Length in bytes.
    pub len: u64,
    /// The sender may abandon it (flag bit 0); a receiver honours ABANDON only for such.
    pub abandonable: bool,
}

/// An ACK frame. Ranges are kept encoded (validated at parse time) and decoded on iteration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AckFrame<'a> {
    /// The path whose packet numbers are acknowledged.
    pub path: u8,
    /// Largest packet number acknowledged.
    pub largest: u64,
    /// Microseconds the receiver held the ACK after receiving `largest` (RFC 9000 §13.2.5,
    /// unscaled): the sender subtracts it (capped at `max_ack_delay`) from its RTT sample.
    pub ack_delay: u64,
    /// Connection-level cumulative acknowledgement: every stream byte below is received.
    pub data_ack: u64,
    /// Flow-control limit: the sender may not send stream bytes at or beyond this offset.
    pub max_data: u64,
    /// ACK_TS only: when `largest` arrived, microseconds on the receiver's clock (any epoch:
    /// the sender uses differences of its samples, [`crate::path::ForwardDelay`]).
    pub received_at: Option<u64>,
    first_range: u64,
    range_count: u64,
    encoded_ranges: &'a [u8],
}

impl<'a> AckFrame<'a> {
    /// Acknowledged packet-number ranges, highest first.
    pub fn ranges(&self) -> AckRanges<'a> {
        AckRanges {
            r: Reader::new(self.encoded_ranges),
            next: Some(self.largest - self.first_range..self.largest + 1),
            left: self.range_count,
        }
    }

    /// The lowest acknowledged packet number: the start of the last of
    /// [`ranges`](Self::ranges) (read without walking them when there is one range).
    #[inline]
    pub fn lowest(&self) -> u64 {
        if self.range_count == 0 {
            self.largest - self.first_range
        } else {
            self.ranges().last().map_or(0, |r| r.start)
        }
    }
}

/// Iterator over the ranges of an [`AckFrame`], highest first.
#[derive(Debug, Clone)]
pub struct AckRanges<'a> {
    r: Reader<'a>,
    next: Option<Range<u64>>,
    left: u64,
}

impl Iterator for AckRanges<'_> {
    type Item = Range<u64>;
    // Inline: most ACKs hold one range, whose two calls read nothing.
    #[inline]
    fn next(&mut self) -> Option<Range<u64>> {
        let cur = self.next.take()?;
        if self.left > 0 {
            self.read_next(&cur);
        }
        Some(cur)
    }
}

impl AckRanges<'_> {
    /// Decodes the range below `cur` (one is left).
    #[inline(never)]
    fn read_next(&mut self, cur: &Range<u64>) {
        self.left -= 1;
        // Validated at parse time: neither read can fail nor underflow.
        let gap = self.r.varint("ack gap").unwrap_or(0);
        let len = self.r.varint("ack range").unwrap_or(0);
        let hi = cur.start.saturating_sub(gap + 2);
        self.next = Some(hi.saturating_sub(len)..hi + 1);
    }
}

/// How a symbol was combined from source symbols.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coding<'a> {
    /// Nothing extra: the scheme derives everything from (block, symbol id).
    Plain,
    /// Coefficients (or degree/neighbours) regenerate from this seed.
    Seed(u64),
    /// Explicit coefficients, one byte per source symbol.
    Coefficients(&'a [u8]),
}

/// An encoded symbol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolFrame<'a> {
    /// Block (or generation) number.
    pub block: u64,
    /// Encoding symbol id within the block (RFC 6330 ESI for RaptorQ).
    pub id: u32,
    /// Coding information.
    pub coding: Coding<'a>,
    /// Symbol bytes.
    pub data: &'a [u8],
}

/// Decoder feedback for one block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeedbackFrame {
    /// Block (or generation) number.
    pub block: u64,
    /// Symbols received, or rank, as the scheme defines.
    pub count: u64,
    /// The block is decoded.
    pub decoded: bool,
}

impl Frame<'_> {
    /// True if the receiver must acknowledge a packet carrying this frame. FEEDBACK and
    /// SCHEME frames of kind ≥ 0x80 (scheme feedback) ride in ACK packets, which are never
    /// acknowledged (every ACK carries fresh feedback).
    pub fn is_ack_eliciting(&self) -> bool {
        !matches!(
            self,
            Frame::Padding(_) | Frame::Ack(_) | Frame::Close { .. } | Frame::Feedback(_)
        ) && !self.is_scheme_feedback()
    }

    /// A SCHEME frame of kind ≥ [`SCHEME_FEEDBACK_KINDS`]: feedback to the sending half.
    pub fn is_scheme_feedback(&self) -> bool {
        matches!(self, Frame::Scheme { kind, .. } if *kind >= SCHEME_FEEDBACK_KINDS)
    }

    /// Bytes of payload the frame carries: stream bytes (DATA), symbol bytes (SYMBOL), the
    /// body of a SCHEME frame; 0 for control frames.
    pub fn payload_len(&self) -> usize {
        match self {
            Frame::Data { data, .. } => data.len(),
            Frame::Symbol(s) => s.data.len(),
            Frame::Scheme { body, .. } => body.len(),
            _ => 0,
        }
    }

    /// Bytes this frame takes on the wire.
    pub fn encoded_len(&self) -> Result<usize, WireError> {
        Ok(match self {
            Frame::Padding(n) => *n,
            Frame::Ping => 1,
            Frame::Ack(a) => {
                1 + 1
                    + varint_len(check_varint(a.largest)?)
                    + varint_len(check_varint(a.ack_delay)?)
                    + varint_len(a.first_range)
                    + varint_len(a.range_count)
                    + a.encoded_ranges.len()
                    + varint_len(check_varint(a.data_ack)?)
                    + varint_len(check_varint(a.max_data)?)
                    + match a.received_at {
                        Some(t) => varint_len(check_varint(t)?),
                        None => 0,
                    }
            }
            Frame::Data { offset, data } => data_header_len(*offset, data.len())? + data.len(),
            Frame::StreamEnd { final_size } => 1 + varint_len(check_varint(*final_size)?),
            Frame::Close { code } => 1 + varint_len(check_varint(*code)?),
            Frame::AckFloor { floor, .. } => ack_floor_len(*floor)?,
            Frame::Message(m) | Frame::Abandon(m) => {
                1 + varint_len(check_varint(m.id)?)
                    + varint_len(check_varint(m.offset)?)
                    + varint_len(check_varint(m.len)?)
                    + 1
            }
            Frame::Symbol(s) => {
                symbol_header_len(s.block, s.id, s.coding, s.data.len())? + s.data.len()
            }
            Frame::Feedback(f) => feedback_len(f)?,
            Frame::Scheme { kind, body } => scheme_header_len(*kind, body.len())? + body.len(),
        })
    }

    /// Writes the frame; the caller has checked `encoded_len` against the space left.
    pub(crate) fn emit(&self, w: &mut Writer<'_>) {
        match self {
            Frame::Padding(n) => {
                for _ in 0..*n {
                    w.u8(PADDING);
                }
            }
            Frame::Ping => w.u8(PING),
            Frame::Ack(a) => {
                w.u8(if a.received_at.is_some() { ACK_TS } else { ACK });
                w.u8(a.path);
                w.varint(a.largest);
                w.varint(a.ack_delay);
                w.varint(a.first_range);
                w.varint(a.range_count);
                w.bytes(a.encoded_ranges);
                w.varint(a.data_ack);
                w.varint(a.max_data);
                if let Some(t) = a.received_at {
                    w.varint(t);
                }
            }
            Frame::Data { offset, data } => {
                emit_data_header(w, *offset, data.len());
                w.bytes(data);
            }
            Frame::StreamEnd { final_size } => {
                w.u8(STREAM_END);
                w.varint(*final_size);
            }
            Frame::Close { code } => {
                w.u8(CLOSE);
                w.varint(*code);
            }
            Frame::Message(m) | Frame::Abandon(m) => {
                w.u8(if matches!(self, Frame::Message(_)) {
                    MESSAGE
                } else {
                    ABANDON
                });
                w.varint(m.id);
                w.varint(m.offset);
                w.varint(m.len);
                w.u8(u8::from(m.abandonable));
            }
            Frame::AckFloor { path, floor } => emit_ack_floor(w, *path, *floor),
            Frame::Symbol(s) => {
                emit_symbol_header(w, s.block, s.id, s.coding, s.data.len());
                w.bytes(s.data);
            }
            Frame::Feedback(f) => emit_feedback(w, f),
            Frame::Scheme { kind, body } => {
                emit_scheme_header(w, *kind, body.len());
                w.bytes(body);
            }
        }
    }
}

/// A DATA frame's body (after its type byte): offset, length-prefixed payload, and the
/// check that their sum does not overflow. Inlined into both of `FrameIter`'s parsers.
#[inline(always)]
fn parse_data<'a>(r: &mut Reader<'a>) -> Result<Frame<'a>, WireError> {
    let offset = r.varint("data offset")?;
    let data = r.length_prefixed("data payload")?;
    if offset.checked_add(data.len() as u64).is_none() {
        return Err(WireError::Invalid {
            field: "data offset",
            reason: "offset + length overflows",
        });
    }
    Ok(Frame::Data { offset, data })
}

/// Bytes an ACK_FLOOR frame takes.
pub(crate) fn ack_floor_len(floor: u64) -> Result<usize, WireError> {
    Ok(2 + varint_len(check_varint(floor)?))
}

/// Writes an ACK_FLOOR frame; the caller has checked [`ack_floor_len`] against the space
/// left.
pub(crate) fn emit_ack_floor(w: &mut Writer<'_>, path: u8, floor: u64) {
    w.u8(ACK_FLOOR);
    w.u8(path);
    w.varint(floor);
}

/// Bytes a FEEDBACK frame takes.
pub(crate) fn feedback_len(f: &FeedbackFrame) -> Result<usize, WireError> {
    Ok(1 + varint_len(check_varint(f.block)?) + varint_len(check_varint(f.count)?) + 1)
}

/// Writes a FEEDBACK frame; the caller has checked [`feedback_len`] against the space left.
pub(crate) fn emit_feedback(w: &mut Writer<'_>, f: &FeedbackFrame) {
    w.u8(FEEDBACK);
    w.varint(f.block);
    w.varint(f.count);
    w.u8(u8::from(f.decoded));
}

pub(crate) fn data_header_len(offset: u64, len: usize) -> Result<usize, WireError> {
    Ok(1 + varint_len(check_varint(offset)?) + varint_len(len as u64))
}

pub(crate) fn scheme_header_len(kind: u64, len: usize) -> Result<usize, WireError> {
    Ok(1 + varint_len(check_varint(kind)?) + varint_len(len as u64))
}

/// The bytes [`Frame::Scheme`] writes before its body.
pub(crate) fn emit_scheme_header(w: &mut Writer<'_>, kind: u64, len: usize) {
    w.u8(SCHEME);
    w.varint(kind);
    w.varint(len as u64);
}

/// Bytes [`Frame::Symbol`] writes before its `len` symbol bytes.
pub(crate) fn symbol_header_len(
    block: u64,
    id: u32,
    coding: Coding<'_>,
    len: usize,
) -> Result<usize, WireError> {
    let coding = match coding {
        Coding::Plain => 0,
        Coding::Seed(seed) => varint_len(check_varint(seed)?),
        Coding::Coefficients(c) => varint_len(c.len() as u64) + c.len(),
    };
    Ok(1 + varint_len(check_varint(block)?)
        + varint_len(u64::from(id))
        + coding
        + varint_len(len as u64))
}

/// The bytes [`Frame::Symbol`] writes before its `len` symbol bytes.
pub(crate) fn emit_symbol_header(
    w: &mut Writer<'_>,
    block: u64,
    id: u32,
    coding: Coding<'_>,
    len: usize,
) {
    w.u8(match coding {
        Coding::Plain => SYMBOL,
        Coding::Seed(_) => SYMBOL_SEED,
        Coding::Coefficients(_) => SYMBOL_COEFFICIENTS,
    });
    w.varint(block);
    w.varint(u64::from(id));
    match coding {
        Coding::Plain => {}
        Coding::Seed(seed) => w.varint(seed),
        Coding::Coefficients(c) => {
            w.varint(c.len() as u64);
            w.bytes(c);
        }
    }
    w.varint(len as u64);
}

#[inline(always)]
pub(crate) fn emit_data_header(w: &mut Writer<'_>, offset: u64, len: usize) {
    w.u8(DATA);
    w.varint(offset);
    w.varint(len as u64);
}

/// Writes an ACK frame for `ranges` (at most `max_ranges` of the highest ranges) into `out`,
/// returning its length, or `None` if `ranges` is empty or `out` is too small. With
/// `received_at` (µs) it is an ACK_TS frame.
#[allow(clippy::too_many_arguments)]
pub(crate) fn encode_ack(
    out: &mut [u8],
    path: u8,
    ranges: &RangeSet,
    max_ranges: usize,
    ack_delay: u64,
    data_ack: u64,
    max_data: u64,
    received_at: Option<u64>,
) -> Result<Option<usize>, WireError> {
    let Some(first) = ranges.last() else {
        return Ok(None);
    };
    let largest = check_varint(first.end - 1)?;
    check_varint(ack_delay)?;
    check_varint(data_ack)?;
    check_varint(max_data)?;
    if let Some(t) = received_at {
        check_varint(t)?;
    }
    let first_range = first.end - 1 - first.start;
    let count = ranges.len().min(max_ranges) - 1;
    let rest = || ranges.iter().rev().skip(1).take(count);
    // The sizing pass only when the frame might not fit: a varint takes at most 8 bytes
    // (type and path one byte each, six or seven more fields, two per further range).
    let fields = 6 + usize::from(received_at.is_some());
    if 2 + 8 * (fields + 2 * count) > out.len() {
        let mut need = 2
            + received_at.map_or(0, varint_len)
            + varint_len(largest)
            + varint_len(ack_delay)
            + varint_len(first_range)
            + varint_len(count as u64)
            + varint_len(data_ack)
            + varint_len(max_data);
        let mut prev_start = first.start;
        for r in rest() {
            need += varint_len(prev_start - r.end - 1) + varint_len(r.end - 1 - r.start);
            prev_start = r.start;
        }
        if need > out.len() {
            return Ok(None);
        }
    }
    let mut w = Writer { buf: out, pos: 0 };
    w.u8(if received_at.is_some() { ACK_TS } else { ACK });
    w.u8(path);
    w.varint(largest);
    w.varint(ack_delay);
    w.varint(first_range);
    w.varint(count as u64);
    if count > 0 {
        let mut prev_start = first.start;
        for r in rest() {
            // QUIC encoding (RFC 9000 §19.3.1): gap = previous smallest - this largest - 2.
            w.varint(prev_start - r.end - 1);
            w.varint(r.end - 1 - r.start);
            prev_start = r.start;
        }
    }
    w.varint(data_ack);
    w.varint(max_data);
    if let Some(t) = received_at {
        w.varint(t);
    }
    Ok(Some(w.pos))
}

/// Iterator over the frames of a packet body; stops at the first error.
#[derive(Debug, Clone)]
pub struct FrameIter<'a> {
    r: Reader<'a>,
    failed: bool,
}

impl<'a> FrameIter<'a> {
    /// Iterates the frames in `payload` (as returned by [`super::parse_packet`]).
    pub fn new(payload: &'a [u8]) -> Self {
        FrameIter {
            r: Reader::new(payload),
            failed: false,
        }
    }

    /// [`Iterator::next`] written into `slot` (which then holds the frame or the error)
    /// instead of returned: `false`, and `slot` untouched, at the end. A receiver keeping
    /// the frames it parses thus builds each where it keeps it, with no copy.
    #[inline]
    pub(crate) fn next_into(&mut self, slot: &mut Result<Frame<'a>, WireError>) -> bool {
        if self.failed || self.r.is_empty() {
            return false;
        }
        // DATA, the frame of every data packet, parsed here, in line and into `slot`, by the
        // same `parse_data` as `parse_one`'s, which parses (and reports) any other frame,
        // and a DATA frame that fails it, from the same position.
        if self.r.buf.get(self.r.pos) == Some(&DATA) {
            let mut r = self.r.clone();
            r.pos += 1;
            if let Ok(f) = parse_data(&mut r) {
                *slot = Ok(f);
                self.r = r;
                return true;
            }
        }
        *slot = self.parse_one();
        self.failed = slot.is_err();
        true
    }

    /// Parses the next frame (the reader is not empty). Never inlined: [`Iterator::next`],
    /// inlined into its callers, then costs the call only when there is a frame.
    #[inline(never)]
    fn parse_one(&mut self) -> Result<Frame<'a>, WireError> {
        let r = &mut self.r;
        let ty = r.u8("frame type")?;
        Ok(match ty {
            PADDING => {
                let mut n = 1;
                while let Ok(0) = r.clone().u8("") {
                    r.u8("padding")?;
                    n += 1;
                }
                Frame::Padding(n)
            }
            PING => Frame::Ping,
            ACK | ACK_TS => {
                let path = r.u8("ack path")?;
                let largest = r.varint("ack largest")?;
                // Any value is well-formed: the sender caps what it uses at max_ack_delay.
                let ack_delay = r.varint("ack delay")?;
                let first_range = r.varint("ack first range")?;
                if first_range > largest {
                    return Err(WireError::Invalid {
                        field: "ack first range",
                        reason: "reaches below packet number 0",
                    });
                }
                let range_count = r.varint("ack range count")?;
                let start = r.clone();
                let mut smallest = largest - first_range;
                for _ in 0..range_count {
                    let gap = r.varint("ack gap")?;
                    let len = r.varint("ack range")?;
                    let hi = smallest
                        .checked_sub(gap)
                        .and_then(|v| v.checked_sub(2))
                        .ok_or(WireError::Invalid {
                            field: "ack gap",
                            reason: "reaches below packet number 0",
                        })?;
                    smallest = hi.checked_sub(len).ok_or(WireError::Invalid {
                        field: "ack range",
                        reason: "reaches below packet number 0",
                    })?;
                }
                let used = start.remaining() - r.remaining();
                let encoded_ranges = start.clone().bytes(used, "ack ranges")?;
                let data_ack = r.varint("ack data ack")?;
                let max_data = r.varint("ack max data")?;
                // Any value is well-formed: the sender only uses differences of samples.
                let received_at = if ty == ACK_TS {
                    Some(r.varint("ack receive time")?)
                } else {
                    None
                };
                Frame::Ack(AckFrame {
                    path,
                    largest,
                    ack_delay,
                    data_ack,
                    max_data,
                    received_at,
                    first_range,
                    range_count,
                    encoded_ranges,
                })
            }
            DATA => parse_data(r)?,
            STREAM_END => Frame::StreamEnd {
                final_size: r.varint("final size")?,
            },
            CLOSE => Frame::Close {
                code: r.varint("close code")?,
            },
            MESSAGE | ABANDON => {
                let m = MessageFrame {
                    id: r.varint("message id")?,
                    offset: r.varint("message offset")?,
                    len: r.varint("message length")?,
                    abandonable: match r.u8("message flags")? {
                        0 => false,
                        1 => true,
                        _ => {
                            return Err(WireError::Invalid {
                                field: "message flags",
                                reason: "unknown flag bits",
                            })
                        }
                    },
                };
                if m.offset
                    .checked_add(m.len)
                    .is_none_or(|e| e > super::VARINT_MAX)
                {
                    return Err(WireError::Invalid {
                        field: "message length",
                        reason: "offset + length overflows",
                    });
                }
                if ty == MESSAGE {
                    Frame::Message(m)
                } else {
                    Frame::Abandon(m)
                }
            }
            ACK_FLOOR => Frame::AckFloor {
                path: r.u8("ack floor path")?,
                floor: r.varint("ack floor")?,
            },
            SYMBOL | SYMBOL_SEED | SYMBOL_COEFFICIENTS => {
                let block = r.varint("symbol block")?;
                let id = r.varint_u32("symbol id")?;
                let coding = match ty {
                    SYMBOL => Coding::Plain,
                    SYMBOL_SEED => Coding::Seed(r.varint("symbol seed")?),
                    _ => Coding::Coefficients(r.length_prefixed("symbol coefficients")?),
                };
                let data = r.length_prefixed("symbol payload")?;
                Frame::Symbol(SymbolFrame {
                    block,
                    id,
                    coding,
                    data,
                })
            }
            FEEDBACK => {
                let block = r.varint("feedback block")?;
                let count = r.varint("feedback count")?;
                let flags = r.u8("feedback flags")?;
                if flags > 1 {
                    return Err(WireError::Invalid {
                        field: "feedback flags",
                        reason: "unknown flag bits",
                    });
                }
                Frame::Feedback(FeedbackFrame {
                    block,
                    count,
                    decoded: flags == 1,
                })
            }
            SCHEME => {
                let kind = r.varint("scheme kind")?;
                let body = r.length_prefixed("scheme body")?;
                Frame::Scheme { kind, body }
            }
            other => return Err(WireError::UnknownFrame(u64::from(other))),
        })
    }
}

impl<'a> Iterator for FrameIter<'a> {
    type Item = Result<Frame<'a>, WireError>;
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.r.is_empty() {
            return None;
        }
        let res = self.parse_one();
        self.failed = res.is_err();
        Some(res)
    }
}
