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
        /// The sender can resume: given a prefix length and its hash in the answer
        /// ([`Answer::Accept`]), it checks its own first bytes against them and sends only
        /// the rest.
        #[serde(default)]
        resumable: bool,
    },
    /// Memory to memory (`tributary perf`).
    Perf {
        /// The responder sends and the initiator receives (iperf3's `-R`).
        reverse: bool,
        /// Length of the test, milliseconds (the reverse direction's sender needs it).
        duration_ms: u64,
    },
}

/// The prefix of a file a receiver already holds (an interrupted transfer's `.part`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Resume {
    /// Bytes held.
    pub offset: u64,
    /// SHA-256 of those bytes, hexadecimal.
    pub sha256: String,
}

impl Resume {
    /// The resume point of the first `offset` bytes read from `src` (errors if it holds
    /// fewer).
    pub fn of(mut src: impl std::io::Read, offset: u64) -> std::io::Result<Resume> {
        let hash = hash_prefix(&mut src, offset)?.ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("fewer than {offset} bytes"),
            )
        })?;
        Ok(Resume {
            offset,
            sha256: hash,
        })
    }
}

/// SHA-256 (hex) of the next `len` bytes of `src`, or `None` if it ends before.
pub fn hash_prefix(src: &mut impl std::io::Read, len: u64) -> std::io::Result<Option<String>> {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    let mut buf = vec![0u8; 1 << 16];
    let mut left = len;
    while left > 0 {
        let want = usize::try_from(left.min(buf.len() as u64)).unwrap_or(buf.len());
        let n = match src.read(&mut buf[..want]) {
            Ok(0) => return Ok(None),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        ctx.update(&buf[..n]);
        left -= n as u64;
    }
    let d = ctx.finish();
    Ok(Some(
        d.as_ref().iter().map(|b| format!("{b:02x}")).collect(),
    ))
}

/// The responder's answer.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "answer", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Answer {
    /// Go ahead.
    Accept {
        /// Only to an offer of a resumable file: the receiver holds this prefix already;
        /// the initiator checks it against its own first bytes and sends the rest, or
        /// closes the connection with [`CLOSE_RESUME_MISMATCH`].
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resume: Option<Resume>,
    },
    /// No: why, in words for the user.
    Refuse {
        /// The reason.
        reason: String,
    },
}

/// CLOSE code of an initiator whose first bytes differ from the receiver's prefix.
pub const CLOSE_RESUME_MISMATCH: u64 = 2;

/// What a responder serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Service {
    /// Files (`tributary recv`); `resume` is the prefix already held (`recv --resume`).
    Files {
        /// Offered to a resumable file's sender.
        resume: Option<Resume>,
    },
    /// Memory-to-memory tests (`tributary perf --server`) up to this long.
    Perf {
        /// Longest test accepted.
        max_duration: std::time::Duration,
    },
}

impl Service {
    /// Checks what an offer carries against what is served; returns the answer's resume
    /// point, or the reason for refusing.
    pub fn check(&self, content: &Content) -> Result<Option<Resume>, String> {
        match (self, content) {
            (
                Service::Files { resume },
                Content::File {
                    size, resumable, ..
                },
            ) => {
                let Some(r) = resume else {
                    return Ok(None);
                };
                if !resumable {
                    return Err(format!(
                        "the receiver holds the first {} bytes (--resume) and the sender \
                         cannot resume",
                        r.offset
                    ));
                }
                if let Some(s) = size.filter(|&s| s < r.offset) {
                    return Err(format!(
                        "the receiver's partial file holds {} bytes, more than the {s} \
                         offered: not the same file",
                        r.offset
                    ));
                }
                Ok(Some(r.clone()))
            }
            (Service::Files { .. }, Content::Perf { .. }) => Err(
                "this receiver takes files (tributary recv), not perf tests: run \
                 `tributary perf --server` there"
                    .into(),
            ),
            (Service::Perf { .. }, Content::File { .. }) => Err(
                "this is a perf server (tributary perf --server); send files to \
                 `tributary recv`"
                    .into(),
            ),
            (Service::Perf { max_duration }, Content::Perf { duration_ms, .. }) => {
                if u128::from(*duration_ms) > max_duration.as_millis() {
                    return Err(format!(
                        "a test of {:.1} s exceeds the server's limit of {:.1} s",
                        *duration_ms as f64 / 1e3,
                        max_duration.as_secs_f64()
                    ));
                }
                Ok(None)
            }
        }
    }
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
                resumable: true,
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
        let a = Answer::Accept {
            resume: Some(Resume::of(&b"hello"[..], 5).unwrap()),
        };
        assert_eq!(Answer::decode(&a.encode()).unwrap(), a);
        assert_eq!(
            Answer::decode(br#"{"answer":"accept"}"#).unwrap(),
            Answer::Accept { resume: None }
        );
    }

    #[test]
    fn prefixes_hash_like_sha256() {
        // FIPS 180-2 test vector "abc".
        assert_eq!(
            Resume::of(&b"abcdef"[..], 3).unwrap().sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(Resume::of(&b"ab"[..], 3).is_err());
        assert_eq!(
            hash_prefix(&mut &b""[..], 0).unwrap().map(|h| h.len()),
            Some(64)
        );
    }

    #[test]
    fn services_check_what_offers_carry() {
        let file = |size, resumable| Content::File {
            name: None,
            size,
            resumable,
        };
        let perf = |duration_ms| Content::Perf {
            reverse: false,
            duration_ms,
        };
        let plain = Service::Files { resume: None };
        assert_eq!(plain.check(&file(Some(9), false)), Ok(None));
        assert!(plain
            .check(&perf(1000))
            .unwrap_err()
            .contains("perf --server"));
        let r = Resume::of(&b"0123"[..], 4).unwrap();
        let res = Service::Files {
            resume: Some(r.clone()),
        };
        assert_eq!(res.check(&file(Some(9), true)), Ok(Some(r.clone())));
        assert_eq!(res.check(&file(None, true)), Ok(Some(r)));
        assert!(res
            .check(&file(Some(3), true))
            .unwrap_err()
            .contains("more than"));
        assert!(res
            .check(&file(Some(9), false))
            .unwrap_err()
            .contains("cannot resume"));
        let p = Service::Perf {
            max_duration: std::time::Duration::from_secs(10),
        };
        assert_eq!(p.check(&perf(10_000)), Ok(None));
        assert!(p
            .check(&perf(10_001))
            .unwrap_err()
            .contains("limit of 10.0 s"));
        assert!(p
            .check(&file(None, false))
            .unwrap_err()
            .contains("perf server"));
    }
}
