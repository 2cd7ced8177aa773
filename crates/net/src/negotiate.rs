//! What the handshake negotiates: the sender's offer, the receiver's limits and answer.
//!
//! The offer carries the whole [`ConnectionConfig`] of the initiator (scheme and its options,
//! MSS, buffers, controller, timers, ...) and the number of paths it will use, so the
//! responder needs no copy of the initiator's options: it checks the offer against its own
//! [`Limits`] and either builds its end of the connection from it or refuses with a reason
//! the initiator prints. Offer and answer travel encrypted and authenticated inside the
//! Noise handshake, encoded as JSON (small, readable in a debugger, and the config already
//! has serde).

use crate::NetError;
use tributary_proto::ConnectionConfig;

/// The initiator's proposal.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Offer {
    /// The connection configuration both ends will use (`conn_id` and `seed` are each end's
    /// own).
    pub config: ConnectionConfig,
    /// Paths the initiator will open.
    pub paths: usize,
    /// What the initiator sends: a file (its name and size), or memory (perf).
    pub content: Content,
}

/// What a connection carries.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Content {
    /// A file: its base name (the receiver decides where it goes) and size, if known.
    File {
        /// Base name, for a server that writes each connection to its own file.
        name: Option<String>,
        /// Size in bytes, if known (a pipe has none): a receiver refuses a stream that ends
        /// elsewhere.
        size: Option<u64>,
    },
    /// Memory to memory (`tributary perf`).
    Perf,
}

/// The responder's answer.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "answer", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Answer {
    /// Go ahead.
    Accept,
    /// No: why, in words for the user.
    Refuse {
        /// The reason.
        reason: String,
    },
}

/// What a responder accepts. Every limit is checked before anything is allocated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest receive or send buffer of one connection, bytes.
    pub max_buffer: usize,
    /// Largest MSS, bytes.
    pub max_mss: usize,
    /// Most paths of one connection.
    pub max_paths: usize,
}

/// Default per-connection buffer limit: 256 MiB (ten times the bandwidth-delay product of
/// 1 Gbit/s at 200 ms).
pub const DEFAULT_MAX_BUFFER: usize = 256 << 20;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_buffer: DEFAULT_MAX_BUFFER,
            // The largest UDP payload on an IPv4 path is 65 507 bytes; the core allows 65 000.
            max_mss: 65_000,
            max_paths: 8,
        }
    }
}

impl Limits {
    /// Checks a configuration against these limits (and the core's own validation) before
    /// anything is allocated; the error names the option and both values.
    pub fn check(&self, cfg: &ConnectionConfig, paths: usize) -> Result<(), String> {
        let mib = |b: usize| b as f64 / (1 << 20) as f64;
        if cfg.recv_buffer > self.max_buffer {
            return Err(format!(
                "receive buffer of {:.1} MiB exceeds the limit of {:.1} MiB per connection",
                mib(cfg.recv_buffer),
                mib(self.max_buffer)
            ));
        }
        if cfg.send_buffer > self.max_buffer {
            return Err(format!(
                "send buffer of {:.1} MiB exceeds the limit of {:.1} MiB per connection",
                mib(cfg.send_buffer),
                mib(self.max_buffer)
            ));
        }
        if cfg.mss > self.max_mss {
            return Err(format!(
                "MSS of {} bytes exceeds the limit of {}",
                cfg.mss, self.max_mss
            ));
        }
        if paths > self.max_paths || cfg.max_paths > self.max_paths.max(1) {
            return Err(format!(
                "{} paths (max_paths {}) exceed the limit of {}",
                paths, cfg.max_paths, self.max_paths
            ));
        }
        cfg.validate(paths).map_err(|e| e.to_string())
    }
}

impl Offer {
    /// JSON bytes for the handshake.
    pub fn encode(&self) -> Result<Vec<u8>, NetError> {
        serde_json::to_vec(self).map_err(|e| NetError::Negotiation(format!("encoding: {e}")))
    }
    /// Parses an offer (from an authenticated peer, still checked like any input).
    pub fn decode(b: &[u8]) -> Result<Self, String> {
        serde_json::from_slice(b).map_err(|e| format!("malformed offer: {e}"))
    }
}

impl Answer {
    /// JSON bytes for the handshake.
    pub fn encode(&self) -> Vec<u8> {
        // Serialising two plain enums cannot fail.
        serde_json::to_vec(self).unwrap_or_default()
    }
    /// Parses an answer.
    pub fn decode(b: &[u8]) -> Result<Self, String> {
        serde_json::from_slice(b).map_err(|e| format!("malformed answer: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offer_round_trips_and_limits_name_the_option() {
        let o = Offer {
            config: ConnectionConfig::default(),
            paths: 2,
            content: Content::File {
                name: Some("a.bin".into()),
                size: Some(5),
            },
        };
        assert_eq!(Offer::decode(&o.encode().unwrap()).unwrap(), o);
        let l = Limits::default();
        assert!(l.check(&o.config, 2).is_ok());
        let big = ConnectionConfig {
            recv_buffer: 100 << 30,
            ..ConnectionConfig::default()
        };
        let e = l.check(&big, 1).unwrap_err();
        assert!(
            e.contains("receive buffer") && e.contains("102400.0 MiB"),
            "{e}"
        );
        assert!(l.check(&o.config, 9).unwrap_err().contains("paths"));
        assert!(Offer::decode(b"{\"config\": 5}").is_err());
        assert!(Offer::decode(&[0xff; 40]).is_err());
        let a = Answer::Refuse {
            reason: "no".into(),
        };
        assert_eq!(Answer::decode(&a.encode()).unwrap(), a);
    }
}
