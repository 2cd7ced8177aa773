//! Tributary's sans-IO multipath transport core.
//!
//! The crate does no I/O, reads no clock and owns no global randomness: every input carries
//! `now` ([`time::Instant`], integer nanoseconds) and randomness comes from a generator seeded
//! by the configuration. The same calls in the same order give the same outputs, which is what
//! lets the simulator be deterministic and the UDP driver run the very same code.
//!
//! Layout (see `docs/ARCHITECTURE.md`):
//! - [`wire`]: packet and frame formats (parse never panics);
//! - [`path`]: per-path packet numbers, SACK state, RTT (RFC 6298), loss detection;
//! - [`cc`]: congestion control trait and the algorithm family (NewReno, CUBIC, Vegas, Veno,
//!   EWTCP, Coupled, LIA, OLIA, BALIA, wVegas, MPVeno);
//! - [`sched`]: path schedulers;
//! - [`scheme`]: recovery/coding schemes (`tcp`, `mptcp`, `fmtcp`);
//! - [`conn`]: the connection state machine;
//! - [`buffer`]: send and receive buffers;
//! - [`protect`]: AEAD packet protection and the replay window (keys from the caller);
//! - [`handshake`]: the authenticated key exchange (Noise, through `snow`) that produces
//!   those keys and carries the connection's negotiation.

#![warn(missing_docs)]

pub mod buffer;
pub mod cc;
pub mod config;
pub mod conn;
pub mod handshake;
pub mod message;
pub mod path;
pub mod protect;
pub mod qlog;
pub mod ranges;
pub mod registry;
pub mod sched;
pub mod scheme;
pub mod time;
pub mod trace;
pub mod wire;

pub use config::{ConfigError, ConnectionConfig, TcpProfile};
pub use conn::{Connection, ConnectionStats, DatagramError, Event, Received, Transmit};
pub use message::{MessageId, MessageOptions, WriteError};
pub use time::{Duration, Instant};
