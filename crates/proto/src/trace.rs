//! Tracing: what a connection does, packet by packet, for tools that show it (qlog viewers,
//! plots of windows and RTTs over time).
//!
//! A driver that wants a trace gives the connection a [`Tracer`]
//! ([`Connection::set_tracer`](crate::Connection::set_tracer)); without one, tracing costs a
//! branch per event. Packet events carry the header and the plaintext frame bytes (also for
//! protected packets: sent ones before sealing, received ones after opening), so a tracer can
//! decode the frames itself (`wire::FrameIter`).

use crate::path::PathView;
use crate::scheme::LossKind;
use crate::time::Instant;
use crate::wire::Header;

/// Something that happened in a connection.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum TraceEvent<'a> {
    /// A datagram left (`poll_transmit` returned it).
    PacketSent {
        /// Path.
        path: usize,
        /// Its header (path id, packet number, connection id).
        header: Header,
        /// Its frames, unencrypted.
        frames: &'a [u8],
    },
    /// A datagram was accepted (`handle_datagram` returned `Ok`).
    PacketReceived {
        /// Path.
        path: usize,
        /// Its header.
        header: Header,
        /// Its frames, decrypted.
        frames: &'a [u8],
    },
    /// A packet sent on `path` was declared lost.
    PacketLost {
        /// Path.
        path: usize,
        /// Packet number.
        pn: u64,
        /// Datagram size.
        size: u32,
        /// How the loss was detected.
        kind: LossKind,
    },
    /// With `ConnectionConfig::reorder_tolerance`: packet `pn` of `path`, declared lost by
    /// the packet or time threshold, was acknowledged after all: the loss was spurious
    /// (reordering, not loss).
    SpuriousLoss {
        /// Path.
        path: usize,
        /// Packet number.
        pn: u64,
    },
    /// With `ConnectionConfig::reorder_tolerance`: every loss of the path's latest recovery
    /// episode proved spurious, and its congestion response was undone (RFC 4015 §2); a
    /// [`TraceEvent::MetricsUpdated`] with the restored window follows.
    CongestionUndone {
        /// Path.
        path: usize,
    },
    /// A path's congestion state changed (after an ACK, a loss or a timeout).
    MetricsUpdated {
        /// The path's new state.
        view: &'a PathView,
    },
}

/// Receives a connection's events. Called synchronously: keep it cheap (buffer, then write).
pub trait Tracer: Send + std::fmt::Debug {
    /// One event at `now`.
    fn event(&mut self, now: Instant, event: &TraceEvent<'_>);
}
