//! Tributary on real UDP sockets.
//!
//! [`UdpDriver`] runs the sans-IO [`Connection`] of `tributary-proto` on one UDP socket per
//! local address (one per path on the sending side): it maps the OS monotonic clock onto the
//! core's integer-nanosecond [`Instant`](tributary_proto::Instant), feeds it every datagram,
//! fires its timers, and sends what `poll_transmit` produces on the socket and to the address
//! that the path was last heard from. [`send_stream`] and [`receive_stream`] move one stream
//! (a file, say) over a driver; the `tributary send` / `tributary recv` commands are thin
//! wrappers around them.
//!
//! Security (see `docs/udp.md`): with credentials ([`UdpDriver::connect_secure`],
//! [`UdpDriver::listen_secure`]) a Noise handshake authenticates both ends and negotiates the
//! connection ([`negotiate`]); every packet after it is AEAD-protected with a replay window,
//! paths are validated before use and unvalidated addresses get at most three times what
//! they sent ([`session`]). Without credentials the driver speaks the simulator's
//! unprotected format, for trusted labs and for measuring what protection costs.
//!
//! Threads: one blocking receiver thread per socket pushes batches of datagrams into a
//! channel; the calling thread owns the connection, drains the channel, and sends. On Linux,
//! runs of equal-sized datagrams leave in one `sendmsg` (UDP GSO) and arrive coalesced (UDP
//! GRO) when the kernel allows; see `docs/udp.md`. Nothing here panics on
//! network input: malformed or foreign datagrams are counted and dropped (by the connection,
//! which counts them in its statistics, and by the driver in [`DriverStats`]).

#![warn(missing_docs)]

pub mod admission;
mod driver;
pub mod keys;
pub mod negotiate;
pub mod perf;
pub mod qlog;
pub mod server;
pub mod session;
mod transfer;

pub use admission::{Admission, RetryPolicy, DEFAULT_CLOCK_TOLERANCE};
pub use driver::{
    next_timestamp, DriverStats, Listener, Refusal, SocketOptions, UdpDriver, REPLAY_CACHE,
};
pub use negotiate::{Answer, Content, Limits, Offer, Resume, Service, CLOSE_RESUME_MISMATCH};
pub use perf::{perf_client, perf_serve, PerfDone, PerfOptions, PerfReport};
pub use server::{serve, ServeOptions, ServerEvent, Sink};
pub use session::{Session, SessionError, SessionStats};
pub use transfer::{
    receive_stream, receive_stream_observed, send_stream, send_stream_observed, wait_open,
    PathReport, Role, TransferOptions, TransferProgress, TransferReport, CLOSE_DONE,
};

use std::net::SocketAddr;
use tributary_proto::{ConfigError, Connection};

/// Why the driver or a transfer failed.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// The connection configuration is unusable.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// No path or no listening address was given.
    #[error("at least one {0} is required")]
    NoPaths(&'static str),
    /// A local address could not be bound (in use, not local, no permission).
    #[error("cannot bind UDP socket to {addr}: {error}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The OS error.
        error: std::io::Error,
    },
    /// A socket option or thread could not be set up.
    #[error("cannot set up UDP socket {addr}: {error}")]
    Setup {
        /// The socket's address.
        addr: SocketAddr,
        /// The OS error.
        error: std::io::Error,
    },
    /// Every receiver thread stopped (all sockets failed).
    #[error("all UDP receiver threads stopped")]
    ReceiversGone,
    /// Reading the stream to send failed.
    #[error("reading the data to send: {0}")]
    Source(std::io::Error),
    /// Writing the received stream failed.
    #[error("writing the received data: {0}")]
    Sink(std::io::Error),
    /// The transfer made no progress for the idle timeout.
    #[error("no progress for {secs:.1} s ({what}); giving up")]
    Idle {
        /// The idle timeout, seconds.
        secs: f64,
        /// What was awaited.
        what: &'static str,
    },
    /// The peer closed the connection before the transfer completed.
    #[error("the peer closed the connection (code {code}) before the transfer completed")]
    PeerClosed {
        /// The peer's reason code.
        code: u64,
    },
    /// A resource limit refuses the configuration (checked before allocating).
    #[error("{0}")]
    Limit(String),
    /// The handshake could not start (credentials).
    #[error("handshake: {0}")]
    Handshake(String),
    /// Encoding or decoding the negotiation failed.
    #[error("negotiation: {0}")]
    Negotiation(String),
    /// The receiver refused the handshake or the offer.
    #[error("the receiver refused the connection: {0}")]
    Refused(String),
    /// ICMP port unreachable: nothing listens at the address.
    #[error("{addr} is unreachable: nothing listens on that port (ICMP port unreachable)")]
    Unreachable {
        /// The receiver's address.
        addr: SocketAddr,
    },
    /// No handshake answer arrived.
    #[error("no handshake answer from {addr} within {secs:.1} s{hint}")]
    NoAnswer {
        /// The receiver's address.
        addr: SocketAddr,
        /// Seconds waited.
        secs: f64,
        /// What may be wrong.
        hint: &'static str,
    },
    /// A key file is missing, unreadable or malformed.
    #[error("{0}")]
    Key(String),
    /// Sender: the receiver's partial file is not a prefix of the file sent.
    #[error(
        "cannot resume: the receiver's partial file (first {offset} bytes) {}; remove it \
         there (or receive with --force) to start over",
        if *shorter { "is longer than this file" } else { "differs from this file" }
    )]
    ResumeMismatch {
        /// Bytes the receiver holds.
        offset: u64,
        /// This file is shorter than that.
        shorter: bool,
    },
    /// Receiver: the sender found that the partial file is not a prefix of its file.
    #[error(
        "the sender's file does not start with the bytes of the partial file, so it cannot \
         be resumed (left as it was); remove it, or receive with --force, to start over"
    )]
    ResumeRefused,
}

/// Builds the driver's connection: `paths` paths (0 for a receiver, which learns them).
fn new_connection(
    cfg: tributary_proto::ConnectionConfig,
    paths: usize,
) -> Result<Connection, NetError> {
    Ok(Connection::new(cfg, paths)?)
}
