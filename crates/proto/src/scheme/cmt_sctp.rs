//! `cmt-sctp`: Concurrent Multipath Transfer with SCTP (Iyengar, Amer & Stewart, "Concurrent
//! Multipath Transfer Using SCTP Multihoming Over Independent End-to-End Paths", IEEE/ACM ToN
//! 14(5), 2006), the HMTP paper's baseline, with the five retransmission policies of their
//! ICON 2004 paper selectable (`rtx`; the HMTP paper uses RTX-CWND, the default here).
//!
//! It is the engine's ARQ machinery (`scheme/arq.rs`) with the policy as a parameter
//! ([`RtxPolicy`]) and neither MPTCP's opportunistic reinjection nor its penalisation (CMT has
//! neither). How SCTP's pieces map onto the engine:
//! - **TSN and SACK.** Every DATA frame carries its connection-wide stream offset, which plays
//!   the TSN (byte- rather than chunk-numbered); the ACK's cumulative data acknowledgement and
//!   the per-path SACK ranges of packet numbers carry what SCTP's cumulative TSN ack and gap
//!   blocks carry. The receive buffer is shared by all paths and advertised as one window
//!   (`max_data`), SCTP's a_rwnd.
//! - **Split fast retransmit (SFR, ToN §III-A)** is inherent: loss is detected per path from
//!   the path's own packet numbers (3 later packets of *the same path* acknowledged), never
//!   from reordering across paths, which is what SFR achieves with per-destination
//!   "highest TSN acked" bookkeeping.
//! - **Cwnd update for CMT (CUC, ToN §III-B)** is inherent: each path's window grows with the
//!   acknowledgement of that path's packet numbers, whether or not the connection's
//!   cumulative acknowledgement moved (CUC's per-destination pseudo-cumack).
//! - **Delayed ACK for CMT (DAC, ToN §III-C)** is inherent in effect: the receiver sends an
//!   immediate ACK only on a gap in one path's own packet numbers (a loss on that path), not
//!   on TSN reordering across paths, so reordering does not defeat delayed ACKs. DAC's
//!   explicit "number of packets since last SACK" field is not needed, since loss detection
//!   never counts missing reports across paths.
//! - Per-path congestion control is the connection's controller (`cc = "new-reno"` gives
//!   CMT's independent per-destination SCTP windows); SCTP's RTO.Min of 1 s (RFC 4960 §15) is
//!   the scenario's `min_rto`, not built in.
//! - Retransmission timeouts: the engine marks the path suspect and collapses its window
//!   before the loss is reported, so the policy sees the reduced window, as in SCTP where the
//!   T3 expiry precedes the choice of destination. With `rtx = "same"`, timed-out data is
//!   also offered to the other paths (the ARQ `failover` behaviour).

use super::arq::{ArqConfig, ArqReceiver, ArqSender, RtxPolicy};
use super::{SchemeFactory, SchemeReceiver, SchemeSender};
use crate::config::ConnectionConfig;
use crate::registry::{self, Entry, Factory, OptionDoc, Options};
use std::sync::Arc;

/// Options of the `cmt-sctp` scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CmtSctpConfig {
    /// Retransmission policy.
    pub rtx: RtxPolicy,
}

impl Default for CmtSctpConfig {
    fn default() -> Self {
        CmtSctpConfig {
            rtx: RtxPolicy::Cwnd,
        }
    }
}

impl Factory for CmtSctpConfig {
    fn options(&self) -> Options {
        registry::options_of(self)
    }
}

impl SchemeFactory for CmtSctpConfig {
    fn build(&self, _cfg: &ConnectionConfig) -> (Box<dyn SchemeSender>, Box<dyn SchemeReceiver>) {
        let arq = ArqConfig {
            reinject: false,
            penalize: false,
            failover: true,
        };
        (
            Box::new(ArqSender::new("cmt-sctp", arq).with_policy(self.rtx)),
            Box::new(ArqReceiver),
        )
    }
}

/// Registry entry of `cmt-sctp`.
pub(crate) const ENTRY: Entry<dyn SchemeFactory> = Entry {
    name: "cmt-sctp",
    aliases: &[],
    summary: "CMT-SCTP: one TSN space striped over the paths, per-path loss detection \
              (SFR/CUC/DAC), retransmission policy RTX-SAME/ASAP/CWND/SSTHRESH/LOSSRATE \
              (Iyengar et al.)",
    options: &[OptionDoc {
        key: "rtx",
        doc: "retransmission policy: \"same\", \"asap\", \"cwnd\" (default, as in the HMTP \
              paper), \"ssthresh\" or \"lossrate\"",
    }],
    make: |o| Ok(Arc::new(registry::from_options::<CmtSctpConfig>(o)?)),
};
