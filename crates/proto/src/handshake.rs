//! The handshake: an authenticated key exchange before any data (Noise, through `snow`).
//!
//! Two messages, initiator (the end that connects) to responder and back, using one of three
//! Noise patterns chosen by the credentials (Noise specification rev. 34, §7 and §9):
//!
//! | credentials | pattern | who is authenticated |
//! |---|---|---|
//! | a pre-shared key | `Noise_NNpsk0_25519_AESGCM_SHA256` | both: whoever holds the key |
//! | key pairs, the responder's public key pinned by the initiator, the initiators' public keys listed by the responder | `Noise_IK_25519_AESGCM_SHA256` | both, by their static keys (as WireGuard, SSH) |
//! | both | `Noise_IKpsk2_25519_AESGCM_SHA256` | both, by key and PSK (WireGuard's pattern) |
//!
//! The first message's payload starts with the initiator's [`Timestamp`] (12 bytes, see
//! there; the responder refuses INITs not later than one it accepted from the same
//! identity). The first message carries the initiator's *offer* and the second the responder's
//! *answer* (opaque bytes here: the driver encodes what the ends must agree on), both
//! encrypted and authenticated by the handshake. After the second message each end takes
//! the two keys of Noise's `Split()` as the [`SessionKeys`] of [`crate::protect`].
//!
//! Randomness (the ephemeral keys) comes from a 32-byte seed the caller draws from the OS
//! for each handshake: this module reads no global generator (the sans-IO rule).
//!
//! Datagrams (first byte 0x48, 'H'; see `docs/wire.md`):
//!
//! ```text
//! INIT      'H' | version | 1 | connection id (8 B) | pattern (1 B) | length (2 B) | Noise message 1 | [cookie length (1 B) | cookie] | zero padding to 1200 B
//! RESPONSE  'H' | version | 2 | connection id (8 B) | length (2 B) | Noise message 2
//! REJECT    'H' | version | 3 | connection id (8 B) | reason (1 B)
//! RETRY     'H' | version | 4 | connection id (8 B) | cookie length (1 B) | cookie
//! ```
//!
//! **Address validation (RETRY).** A responder under a flood of INITs (fresh ephemeral keys,
//! perhaps from forged source addresses) would spend a key exchange on each. Instead it can
//! answer an INIT with RETRY, which costs it one HMAC and no state: the [`Cookies`] it mints
//! bind the initiator's address, the connection id and a time slot. The initiator repeats
//! its INIT (the same Noise message) with the cookie after the Noise message, in the padding
//! (a zero byte there means "no cookie", so INITs without one are unchanged); only an
//! initiator that receives at that address can do so. This is QUIC's Retry (RFC 9000 §8.1.2)
//! and DTLS's HelloVerifyRequest (RFC 6347 §4.2.1) in Tributary's two-message handshake. RETRY
//! is not authenticated, like REJECT: an initiator heeds it only for its own connection id,
//! at most [`MAX_RETRIES`] times per handshake.
//!
//! INIT is padded to [`INIT_MIN_LEN`] bytes so that the responder, which may not send more
//! than three times what it received from an unvalidated address (RFC 9000 §8.1), can always
//! answer. REJECT is not authenticated (the responder could not authenticate the initiator,
//! or has no room); it only names a reason, and an initiator heeds it only for its own random
//! connection id, which an off-path attacker does not know.

use crate::protect::SessionKeys;
use crate::time::Instant;
use crate::wire::VERSION;
use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};
use snow::params::{DHChoice, NoiseParams};
use snow::resolvers::{BoxedCryptoResolver, CryptoResolver, DefaultResolver, RingResolver};
use snow::types::{Cipher, Dh, Hash, Random};

/// First byte of every handshake datagram ('H').
pub const MAGIC: u8 = 0x48;
/// Handshake datagram kinds (the byte after the version): INIT, RESPONSE, REJECT, RETRY.
pub const KIND_INIT: u8 = 1;
/// See [`KIND_INIT`].
pub const KIND_RESPONSE: u8 = 2;
/// See [`KIND_INIT`].
pub const KIND_REJECT: u8 = 3;
/// See [`KIND_INIT`].
pub const KIND_RETRY: u8 = 4;
/// Bytes of keys (X25519 private and public keys, PSKs).
pub const KEY_LEN: usize = 32;
/// Smallest INIT datagram (padded): 1200 bytes, QUIC's minimum Initial size (RFC 9000 §14.1).
pub const INIT_MIN_LEN: usize = 1200;
/// Largest offer or answer carried by the handshake.
pub const MAX_PAYLOAD: usize = 8192;
/// Longest cookie a RETRY may carry.
pub const MAX_COOKIE: usize = 64;
/// RETRYs an initiator follows in one handshake (later ones are ignored).
pub const MAX_RETRIES: u32 = 2;
/// Bytes before the body of every handshake datagram.
const FIXED: usize = 3 + 8;
const NOISE_MAX: usize = 65_535;

/// A 32-byte key.
pub type Key = [u8; KEY_LEN];

/// The INIT's timestamp (WireGuard's TAI64N, counted from the Unix epoch): wall-clock
/// seconds and nanoseconds, strictly increasing per sender, the first [`Timestamp::LEN`]
/// bytes of the encrypted, authenticated payload of Noise message 1. A responder refuses an
/// INIT whose timestamp is not later than one it accepted from the same identity (see
/// `docs/udp.md`, "Replayed handshakes"). This module never reads a clock: the caller passes
/// the time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp {
    /// Seconds since 1970-01-01 00:00:00 UTC.
    pub secs: u64,
    /// Nanoseconds within the second (below 10^9).
    pub nanos: u32,
}

impl Timestamp {
    /// Bytes on the wire: seconds (8 B, big-endian), nanoseconds (4 B, big-endian).
    pub const LEN: usize = 12;

    /// The wire bytes (their lexicographic order is the timestamps' order).
    pub fn to_bytes(self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[..8].copy_from_slice(&self.secs.to_be_bytes());
        b[8..].copy_from_slice(&self.nanos.to_be_bytes());
        b
    }

    /// Reads the wire bytes; `None` if the nanoseconds are out of range.
    pub fn from_bytes(b: [u8; Self::LEN]) -> Option<Self> {
        let mut s = [0u8; 8];
        s.copy_from_slice(&b[..8]);
        let mut n = [0u8; 4];
        n.copy_from_slice(&b[8..]);
        let t = Timestamp {
            secs: u64::from_be_bytes(s),
            nanos: u32::from_be_bytes(n),
        };
        (t.nanos < 1_000_000_000).then_some(t)
    }

    /// Nanoseconds since 1970 (every timestamp fits: 2^64 s × 10^9 < 2^128).
    pub fn as_nanos(self) -> u128 {
        u128::from(self.secs) * 1_000_000_000 + u128::from(self.nanos)
    }

    /// One nanosecond later (saturating at the largest timestamp).
    pub fn next(self) -> Self {
        if self.nanos + 1 < 1_000_000_000 {
            Timestamp {
                nanos: self.nanos + 1,
                ..self
            }
        } else if self.secs < u64::MAX {
            Timestamp {
                secs: self.secs + 1,
                nanos: 0,
            }
        } else {
            self
        }
    }
}

/// What authenticates the two ends.
#[derive(Clone, PartialEq, Eq)]
pub enum Credentials {
    /// A pre-shared key only: anyone holding it is a legitimate peer.
    Psk(Key),
    /// Static key pairs. `peers`: on an initiator, exactly the responder's public key (pinned);
    /// on a responder, the initiators' public keys it accepts. With `psk`, a pre-shared key
    /// is mixed in as well.
    Keys {
        /// This end's X25519 private key.
        private: Key,
        /// The peer public keys (see above).
        peers: Vec<Key>,
        /// An optional pre-shared key.
        psk: Option<Key>,
    },
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credentials::Psk(_) => f.write_str("Credentials::Psk(..)"),
            Credentials::Keys { peers, psk, .. } => f
                .debug_struct("Credentials::Keys")
                .field("peers", &peers.len())
                .field("psk", &psk.is_some())
                .finish_non_exhaustive(),
        }
    }
}

/// The Noise pattern, as it travels in INIT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// `NNpsk0`: pre-shared key only.
    Psk = 1,
    /// `IK`: static keys, the responder's pinned.
    Keys = 2,
    /// `IKpsk2`: static keys and a pre-shared key.
    KeysPsk = 3,
}

impl Pattern {
    fn from_u8(b: u8) -> Option<Self> {
        match b {
            1 => Some(Pattern::Psk),
            2 => Some(Pattern::Keys),
            3 => Some(Pattern::KeysPsk),
            _ => None,
        }
    }
    fn params(self) -> NoiseParams {
        let name = match self {
            Pattern::Psk => "Noise_NNpsk0_25519_AESGCM_SHA256",
            Pattern::Keys => "Noise_IK_25519_AESGCM_SHA256",
            Pattern::KeysPsk => "Noise_IKpsk2_25519_AESGCM_SHA256",
        };
        // The names are constants that snow knows.
        name.parse().expect("valid Noise pattern name")
    }
    /// How a user would name it.
    pub fn describe(self) -> &'static str {
        match self {
            Pattern::Psk => "pre-shared key only",
            Pattern::Keys => "key pairs",
            Pattern::KeysPsk => "key pairs and a pre-shared key",
        }
    }
}

impl Credentials {
    /// The pattern these credentials use.
    pub fn pattern(&self) -> Pattern {
        match self {
            Credentials::Psk(_) => Pattern::Psk,
            Credentials::Keys { psk: None, .. } => Pattern::Keys,
            Credentials::Keys { psk: Some(_), .. } => Pattern::KeysPsk,
        }
    }
}

/// Why a REJECT was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RejectReason {
    /// The responder could not authenticate the INIT: unknown public key, wrong pinned key
    /// for the responder, or a different pre-shared key.
    Auth = 1,
    /// The two ends use different kinds of credentials (PSK only versus key pairs).
    Mode = 2,
    /// The responder has no room for another connection.
    Busy = 3,
    /// The connection id is already in use at the responder (draw another one).
    InUse = 4,
    /// The responder is handling more handshakes than it allows per second (try later).
    RateLimited = 5,
    /// The INIT authenticated but its timestamp is not later than one the responder already
    /// accepted from the same identity (a replay, or a sender whose clock is behind).
    Stale = 6,
    /// The INIT authenticated but its timestamp is ahead of the responder's clock by more
    /// than the responder tolerates (the sender's clock, or the responder's, is wrong).
    ClockAhead = 7,
}

impl RejectReason {
    fn from_u8(b: u8) -> Option<Self> {
        match b {
            1 => Some(RejectReason::Auth),
            2 => Some(RejectReason::Mode),
            3 => Some(RejectReason::Busy),
            4 => Some(RejectReason::InUse),
            5 => Some(RejectReason::RateLimited),
            6 => Some(RejectReason::Stale),
            7 => Some(RejectReason::ClockAhead),
            _ => None,
        }
    }
}

impl std::fmt::Display for RejectReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RejectReason::Auth => {
                "authentication failed: the receiver does not accept this key (or the \
                 pinned receiver key, or the pre-shared key, differs)"
            }
            RejectReason::Mode => {
                "authentication failed: the receiver uses another kind of credentials \
                 (pre-shared key only versus key pairs)"
            }
            RejectReason::Busy => "the receiver has no room for another connection",
            RejectReason::InUse => "the connection id is in use at the receiver",
            RejectReason::RateLimited => {
                "the receiver is handling too many handshakes per second (try again later)"
            }
            RejectReason::Stale => {
                "the receiver accepted a handshake with a later timestamp from this identity \
                 (this clock is behind the one that made it, or another sender shares the key)"
            }
            RejectReason::ClockAhead => {
                "the receiver's clock is behind this one by more than it tolerates: set both \
                 clocks right (NTP), or raise the receiver's --clock-tolerance"
            }
        })
    }
}

/// Why a handshake datagram was refused or a handshake failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    /// Not a well-formed handshake datagram.
    #[error("malformed handshake datagram: {0}")]
    Malformed(&'static str),
    /// A handshake datagram of another kind than expected.
    #[error("unexpected handshake datagram")]
    Unexpected,
    /// The peer uses other credentials (pattern) than this end.
    #[error("the peer uses {theirs} but this end uses {ours}")]
    Mode {
        /// This end's pattern.
        ours: &'static str,
        /// The peer's pattern.
        theirs: &'static str,
    },
    /// The Noise message did not decrypt or authenticate.
    #[error(
        "authentication failed: the peer's handshake does not verify (wrong pinned key or \
         pre-shared key)"
    )]
    Auth,
    /// The initiator authenticated with a key that is not in the responder's list.
    #[error("authentication failed: public key {0} is not among the accepted peers")]
    UnknownPeer(String),
    /// The responder refused (REJECT).
    #[error("{0}")]
    Rejected(RejectReason),
    /// An offer or answer beyond [`MAX_PAYLOAD`].
    #[error("handshake payload of {0} bytes exceeds the limit of {MAX_PAYLOAD}")]
    TooLarge(usize),
    /// The credentials are unusable (e.g. an initiator with no or several pinned keys).
    #[error("unusable credentials: {0}")]
    Credentials(&'static str),
    /// A handshake datagram of another wire version.
    #[error(
        "handshake of wire version {0}, but this end speaks version {VERSION}: upgrade the \
         older end"
    )]
    Version(u8),
    /// The responder asked for address validation (RETRY): send [`Initiator::packet`] again,
    /// now (it carries the cookie).
    #[error("the receiver asked to validate this address (RETRY); repeat the INIT")]
    Retry,
}

/// A parsed handshake datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Message<'a> {
    /// INIT: pattern and Noise message 1.
    Init {
        /// Connection id drawn by the initiator.
        conn_id: u64,
        /// The pattern byte.
        pattern: u8,
        /// Noise message 1.
        noise: &'a [u8],
        /// The cookie of a RETRY the initiator repeats, if any.
        cookie: Option<&'a [u8]>,
    },
    /// RESPONSE: Noise message 2.
    Response {
        /// The connection id.
        conn_id: u64,
        /// Noise message 2.
        noise: &'a [u8],
    },
    /// REJECT with its reason.
    Reject {
        /// The connection id.
        conn_id: u64,
        /// Why.
        reason: RejectReason,
    },
    /// RETRY: repeat the INIT with this cookie.
    Retry {
        /// The connection id.
        conn_id: u64,
        /// The cookie (1 to [`MAX_COOKIE`] bytes).
        cookie: &'a [u8],
    },
}

impl Message<'_> {
    /// The connection id the datagram names.
    pub fn conn_id(&self) -> u64 {
        match *self {
            Message::Init { conn_id, .. }
            | Message::Response { conn_id, .. }
            | Message::Reject { conn_id, .. }
            | Message::Retry { conn_id, .. } => conn_id,
        }
    }
}

/// True if `datagram` claims to be a handshake datagram (first byte 'H').
pub fn is_handshake(datagram: &[u8]) -> bool {
    datagram.first() == Some(&MAGIC)
}

/// Parses a handshake datagram (never panics).
pub fn parse(d: &[u8]) -> Result<Message<'_>, HandshakeError> {
    if d.len() < FIXED {
        return Err(HandshakeError::Malformed(
            "shorter than the handshake header",
        ));
    }
    if d[0] != MAGIC {
        return Err(HandshakeError::Malformed("not a handshake datagram"));
    }
    if d[1] != VERSION {
        return Err(HandshakeError::Version(d[1]));
    }
    let mut id = [0u8; 8];
    id.copy_from_slice(&d[3..11]);
    let conn_id = u64::from_be_bytes(id);
    let body = &d[FIXED..];
    let noise = |b: &'_ [u8]| -> Result<(), HandshakeError> {
        if b.len() < 2 {
            return Err(HandshakeError::Malformed("truncated length"));
        }
        Ok(())
    };
    match d[2] {
        KIND_INIT => {
            let (&pattern, rest) = body
                .split_first()
                .ok_or(HandshakeError::Malformed("truncated pattern"))?;
            noise(rest)?;
            let n = usize::from(u16::from_be_bytes([rest[0], rest[1]]));
            let noise = rest
                .get(2..2 + n)
                .ok_or(HandshakeError::Malformed("truncated Noise message"))?;
            let cookie = match rest.get(2 + n).copied().unwrap_or(0) {
                0 => None,
                c => Some(
                    rest.get(3 + n..3 + n + usize::from(c))
                        .filter(|c| c.len() <= MAX_COOKIE)
                        .ok_or(HandshakeError::Malformed("truncated cookie"))?,
                ),
            };
            Ok(Message::Init {
                conn_id,
                pattern,
                noise,
                cookie,
            })
        }
        KIND_RESPONSE => {
            noise(body)?;
            let n = usize::from(u16::from_be_bytes([body[0], body[1]]));
            let noise = body
                .get(2..2 + n)
                .ok_or(HandshakeError::Malformed("truncated Noise message"))?;
            Ok(Message::Response { conn_id, noise })
        }
        KIND_REJECT => {
            let &code = body
                .first()
                .ok_or(HandshakeError::Malformed("truncated reason"))?;
            let reason =
                RejectReason::from_u8(code).ok_or(HandshakeError::Malformed("unknown reason"))?;
            Ok(Message::Reject { conn_id, reason })
        }
        KIND_RETRY => {
            let (&n, rest) = body
                .split_first()
                .ok_or(HandshakeError::Malformed("truncated cookie length"))?;
            let n = usize::from(n);
            if n == 0 || n > MAX_COOKIE || rest.len() != n {
                return Err(HandshakeError::Malformed("bad cookie length"));
            }
            Ok(Message::Retry {
                conn_id,
                cookie: rest,
            })
        }
        _ => Err(HandshakeError::Malformed("unknown handshake type")),
    }
}

fn header(kind: u8, conn_id: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(INIT_MIN_LEN);
    v.extend_from_slice(&[MAGIC, VERSION, kind]);
    v.extend_from_slice(&conn_id.to_be_bytes());
    v
}

/// A REJECT datagram.
pub fn reject_packet(conn_id: u64, reason: RejectReason) -> Vec<u8> {
    let mut v = header(KIND_REJECT, conn_id);
    v.push(reason as u8);
    v
}

/// A RETRY datagram carrying `cookie` (1 to [`MAX_COOKIE`] bytes; longer ones are cut).
pub fn retry_packet(conn_id: u64, cookie: &[u8]) -> Vec<u8> {
    let c = &cookie[..cookie.len().min(MAX_COOKIE)];
    let mut v = header(KIND_RETRY, conn_id);
    v.push(c.len() as u8);
    v.extend_from_slice(c);
    v
}

/// Stateless address-validation cookies of a responder (see the module docs): 4 bytes of
/// time slot and 16 bytes of HMAC-SHA256 over the slot, the connection id and the
/// initiator's address, under a key drawn once per responder. A cookie is valid in the slot
/// it was minted in and the next one ([`Cookies::SLOT_SECS`] each).
pub struct Cookies {
    key: ring::hmac::Key,
}

impl std::fmt::Debug for Cookies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Cookies")
    }
}

impl Cookies {
    /// Length of a slot in seconds.
    pub const SLOT_SECS: u64 = 10;
    /// Bytes of a cookie.
    pub const LEN: usize = 20;

    /// Cookies under a key made from 32 bytes of OS randomness.
    pub fn new(secret: [u8; 32]) -> Self {
        Cookies {
            key: ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &secret),
        }
    }

    fn tag(&self, slot: u32, conn_id: u64, addr: &[u8]) -> ring::hmac::Tag {
        let mut ctx = ring::hmac::Context::with_key(&self.key);
        ctx.update(&slot.to_be_bytes());
        ctx.update(&conn_id.to_be_bytes());
        ctx.update(addr);
        ctx.sign()
    }

    /// The cookie for an INIT of connection `conn_id` from `addr` (the address as bytes,
    /// e.g. IP and port) at `now`.
    pub fn mint(&self, now: Instant, conn_id: u64, addr: &[u8]) -> [u8; Self::LEN] {
        let slot = (now.as_nanos() / 1_000_000_000 / Self::SLOT_SECS) as u32;
        let mut c = [0u8; Self::LEN];
        c[..4].copy_from_slice(&slot.to_be_bytes());
        c[4..].copy_from_slice(&self.tag(slot, conn_id, addr).as_ref()[..16]);
        c
    }

    /// True if `cookie` was minted by these cookies for `conn_id` and `addr`, in the slot of
    /// `now` or the one before (constant-time comparison of the tag).
    pub fn verify(&self, now: Instant, conn_id: u64, addr: &[u8], cookie: &[u8]) -> bool {
        if cookie.len() != Self::LEN {
            return false;
        }
        let slot = u32::from_be_bytes([cookie[0], cookie[1], cookie[2], cookie[3]]);
        let current = (now.as_nanos() / 1_000_000_000 / Self::SLOT_SECS) as u32;
        if slot != current && slot.wrapping_add(1) != current {
            return false;
        }
        let tag = self.tag(slot, conn_id, addr);
        // Every byte compared, whatever differs (no early exit for a forger to time).
        let diff = tag.as_ref()[..16]
            .iter()
            .zip(&cookie[4..])
            .fold(0u8, |d, (a, b)| d | (a ^ b));
        std::hint::black_box(diff) == 0
    }
}

/// Binds the handshake to the connection id and pattern (an attacker who changes either in
/// the clear header makes the handshake fail).
fn prologue(conn_id: u64, pattern: Pattern) -> Vec<u8> {
    let mut p = b"tributary handshake v2".to_vec();
    // The version byte is in the clear header; binding it here means an INIT of another
    // version relabelled as this one fails to authenticate (whose payload would otherwise
    // be read with this version's layout, e.g. offer bytes as a timestamp).
    p.push(VERSION);
    p.extend_from_slice(&conn_id.to_be_bytes());
    p.push(pattern as u8);
    p
}

/// The ephemeral keys' randomness: ChaCha20 seeded by the caller.
struct SeededRandom(ChaCha20Rng);

impl Random for SeededRandom {
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), snow::Error> {
        self.0.fill_bytes(dest);
        Ok(())
    }
}

/// ring for hashing and the AEAD, snow's own X25519, and the caller's seed for randomness.
struct Resolver {
    seed: [u8; 32],
}

impl CryptoResolver for Resolver {
    fn resolve_rng(&self) -> Option<Box<dyn Random>> {
        Some(Box::new(SeededRandom(ChaCha20Rng::from_seed(self.seed))))
    }
    fn resolve_dh(&self, choice: &DHChoice) -> Option<Box<dyn Dh>> {
        DefaultResolver.resolve_dh(choice)
    }
    fn resolve_hash(&self, choice: &snow::params::HashChoice) -> Option<Box<dyn Hash>> {
        RingResolver.resolve_hash(choice)
    }
    fn resolve_cipher(&self, choice: &snow::params::CipherChoice) -> Option<Box<dyn Cipher>> {
        RingResolver.resolve_cipher(choice)
    }
}

fn builder<'a>(pattern: Pattern, seed: [u8; 32]) -> snow::Builder<'a> {
    let r: BoxedCryptoResolver = Box::new(Resolver { seed });
    snow::Builder::with_resolver(pattern.params(), r)
}

/// A new X25519 key pair `(private, public)` from 32 bytes of OS randomness.
pub fn generate_keypair(seed: [u8; 32]) -> (Key, Key) {
    let mut dh = DefaultResolver
        .resolve_dh(&DHChoice::Curve25519)
        .expect("snow's X25519");
    let mut rng = SeededRandom(ChaCha20Rng::from_seed(seed));
    // Infallible with this generator.
    dh.generate(&mut rng).expect("X25519 key generation");
    let mut private = [0u8; KEY_LEN];
    let mut public = [0u8; KEY_LEN];
    private.copy_from_slice(dh.privkey());
    public.copy_from_slice(dh.pubkey());
    (private, public)
}

/// The public key of an X25519 private key.
pub fn public_key(private: &Key) -> Key {
    let mut dh = DefaultResolver
        .resolve_dh(&DHChoice::Curve25519)
        .expect("snow's X25519");
    dh.set(private);
    let mut public = [0u8; KEY_LEN];
    public.copy_from_slice(dh.pubkey());
    public
}

fn noise_err(_: snow::Error) -> HandshakeError {
    HandshakeError::Auth
}

fn keys(hs: &mut snow::HandshakeState, initiator: bool) -> SessionKeys {
    // Split() (Noise §5.2): the first key protects initiator -> responder.
    let (k1, k2) = hs.dangerously_get_raw_split();
    if initiator {
        SessionKeys { send: k1, recv: k2 }
    } else {
        SessionKeys { send: k2, recv: k1 }
    }
}

/// The outcome of a completed handshake on the initiator.
#[derive(Debug)]
pub struct Established {
    /// The connection's keys.
    pub keys: SessionKeys,
    /// The responder's answer to the offer.
    pub answer: Vec<u8>,
}

/// The initiator's half: builds INIT, then reads the RESPONSE (or REJECT).
pub struct Initiator {
    hs: snow::HandshakeState,
    conn_id: u64,
    packet: Vec<u8>,
    /// What rebuilds the same state (same seed, same ephemeral key) after a RESPONSE that
    /// failed to authenticate: snow's state is not usable after a failed read.
    creds: Credentials,
    offer: Vec<u8>,
    seed: [u8; 32],
    timestamp: Timestamp,
    /// Where the Noise message ends in `packet` (the cookie goes there).
    noise_end: usize,
    retries: u32,
    cookie: Option<Vec<u8>>,
}

impl std::fmt::Debug for Initiator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Initiator")
            .field("conn_id", &self.conn_id)
            .finish_non_exhaustive()
    }
}

impl Initiator {
    /// Starts a handshake for connection `conn_id` carrying `offer`; `seed` is 32 bytes of
    /// OS randomness for the ephemeral key, `timestamp` the sender's wall-clock time, later
    /// than that of any INIT it sent before (see [`Timestamp`]).
    pub fn new(
        creds: &Credentials,
        conn_id: u64,
        offer: &[u8],
        seed: [u8; 32],
        timestamp: Timestamp,
    ) -> Result<Self, HandshakeError> {
        if offer.len() + Timestamp::LEN > MAX_PAYLOAD {
            return Err(HandshakeError::TooLarge(offer.len()));
        }
        let pattern = creds.pattern();
        let pro = prologue(conn_id, pattern);
        let b = builder(pattern, seed)
            .prologue(&pro)
            .map_err(|_| HandshakeError::Credentials("prologue"))?;
        let b = match creds {
            Credentials::Psk(psk) => b
                .psk(0, psk)
                .map_err(|_| HandshakeError::Credentials("pre-shared key"))?,
            Credentials::Keys {
                private,
                peers,
                psk,
            } => {
                let [peer] = peers.as_slice() else {
                    return Err(HandshakeError::Credentials(
                        "an initiator pins exactly one receiver public key",
                    ));
                };
                let b = b
                    .local_private_key(private)
                    .and_then(|b| b.remote_public_key(peer))
                    .map_err(|_| HandshakeError::Credentials("key pair"))?;
                match psk {
                    Some(psk) => b
                        .psk(2, psk)
                        .map_err(|_| HandshakeError::Credentials("pre-shared key"))?,
                    None => b,
                }
            }
        };
        let mut hs = b
            .build_initiator()
            .map_err(|_| HandshakeError::Credentials("Noise initiator"))?;
        let mut msg = vec![0u8; NOISE_MAX];
        let mut payload = Vec::with_capacity(Timestamp::LEN + offer.len());
        payload.extend_from_slice(&timestamp.to_bytes());
        payload.extend_from_slice(offer);
        let n = hs.write_message(&payload, &mut msg).map_err(noise_err)?;
        let mut packet = header(KIND_INIT, conn_id);
        packet.push(pattern as u8);
        packet.extend_from_slice(&(n as u16).to_be_bytes());
        packet.extend_from_slice(&msg[..n]);
        let noise_end = packet.len();
        if packet.len() < INIT_MIN_LEN {
            packet.resize(INIT_MIN_LEN, 0);
        }
        Ok(Initiator {
            hs,
            conn_id,
            packet,
            creds: creds.clone(),
            offer: offer.to_vec(),
            seed,
            timestamp,
            noise_end,
            retries: 0,
            cookie: None,
        })
    }

    /// Puts `cookie` after the Noise message (in the padding, or beyond it).
    fn set_cookie(&mut self, cookie: &[u8]) {
        self.packet.truncate(self.noise_end);
        self.packet.push(cookie.len() as u8);
        self.packet.extend_from_slice(cookie);
        if self.packet.len() < INIT_MIN_LEN {
            self.packet.resize(INIT_MIN_LEN, 0);
        }
        self.cookie = Some(cookie.to_vec());
    }

    /// Starts the handshake again with a new ephemeral key (`seed`) and a later
    /// `timestamp` (after a REJECT "stale": the responder accepted a later INIT of this
    /// identity); the same connection id and offer, no cookie.
    pub fn restart(&mut self, seed: [u8; 32], timestamp: Timestamp) -> Result<(), HandshakeError> {
        let mut fresh = Initiator::new(&self.creds, self.conn_id, &self.offer, seed, timestamp)?;
        fresh.retries = self.retries;
        // The cookie binds the address and the connection id, both unchanged.
        if let Some(c) = self.cookie.take() {
            fresh.set_cookie(&c);
        }
        *self = fresh;
        Ok(())
    }

    /// The timestamp this INIT carries.
    pub fn timestamp(&self) -> Timestamp {
        self.timestamp
    }

    /// RETRYs followed so far.
    pub fn retries(&self) -> u32 {
        self.retries
    }

    /// The INIT datagram (send it again, unchanged, if no answer comes).
    pub fn packet(&self) -> &[u8] {
        &self.packet
    }

    /// The connection id.
    pub fn conn_id(&self) -> u64 {
        self.conn_id
    }

    /// Reads the responder's datagram. A RESPONSE completes the handshake; a REJECT for
    /// this connection id is [`HandshakeError::Rejected`]. On any error the initiator can
    /// still read a later datagram (a forged one does not end the handshake).
    pub fn read(&mut self, datagram: &[u8]) -> Result<Established, HandshakeError> {
        match parse(datagram)? {
            Message::Response { conn_id, noise } if conn_id == self.conn_id => {
                let mut answer = vec![0u8; NOISE_MAX];
                let n = match self.hs.read_message(noise, &mut answer) {
                    Ok(n) => n,
                    Err(e) => {
                        // Start again from the same seed: the same INIT, so the genuine
                        // RESPONSE still completes after a forged one.
                        let mut fresh = Initiator::new(
                            &self.creds,
                            self.conn_id,
                            &self.offer,
                            self.seed,
                            self.timestamp,
                        )?;
                        fresh.retries = self.retries;
                        if let Some(c) = self.cookie.take() {
                            fresh.set_cookie(&c);
                        }
                        *self = fresh;
                        return Err(noise_err(e));
                    }
                };
                answer.truncate(n);
                let keys = keys(&mut self.hs, true);
                Ok(Established { keys, answer })
            }
            Message::Reject { conn_id, reason } if conn_id == self.conn_id => {
                Err(HandshakeError::Rejected(reason))
            }
            Message::Retry { conn_id, cookie }
                if conn_id == self.conn_id && self.retries < MAX_RETRIES =>
            {
                self.retries += 1;
                self.set_cookie(cookie);
                Err(HandshakeError::Retry)
            }
            _ => Err(HandshakeError::Unexpected),
        }
    }
}

/// An INIT the responder authenticated: the offer and who made it. Answer it with
/// [`Accepted::respond`].
pub struct Accepted {
    hs: snow::HandshakeState,
    /// The connection id the initiator drew.
    pub conn_id: u64,
    /// The initiator's offer.
    pub offer: Vec<u8>,
    /// The initiator's static public key (key-pair patterns).
    pub peer: Option<Key>,
    /// The INIT's timestamp (authenticated with the offer).
    pub timestamp: Timestamp,
}

impl std::fmt::Debug for Accepted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Accepted")
            .field("conn_id", &self.conn_id)
            .field("offer", &self.offer.len())
            .finish_non_exhaustive()
    }
}

/// Reads an INIT on the responder: checks the pattern against `creds`, authenticates it,
/// and checks the initiator's key against the accepted list. An error says which REJECT
/// to send, if any ([`HandshakeError::reject_reason`]).
pub fn accept(
    creds: &Credentials,
    datagram: &[u8],
    seed: [u8; 32],
) -> Result<Accepted, HandshakeError> {
    let Message::Init {
        conn_id,
        pattern,
        noise,
        ..
    } = parse(datagram)?
    else {
        return Err(HandshakeError::Unexpected);
    };
    let theirs = Pattern::from_u8(pattern).ok_or(HandshakeError::Malformed("unknown pattern"))?;
    let ours = creds.pattern();
    if theirs != ours {
        return Err(HandshakeError::Mode {
            ours: ours.describe(),
            theirs: theirs.describe(),
        });
    }
    let pro = prologue(conn_id, ours);
    let b = builder(ours, seed)
        .prologue(&pro)
        .map_err(|_| HandshakeError::Credentials("prologue"))?;
    let b = match creds {
        Credentials::Psk(psk) => b
            .psk(0, psk)
            .map_err(|_| HandshakeError::Credentials("pre-shared key"))?,
        Credentials::Keys { private, psk, .. } => {
            let b = b
                .local_private_key(private)
                .map_err(|_| HandshakeError::Credentials("key pair"))?;
            match psk {
                Some(psk) => b
                    .psk(2, psk)
                    .map_err(|_| HandshakeError::Credentials("pre-shared key"))?,
                None => b,
            }
        }
    };
    let mut hs = b
        .build_responder()
        .map_err(|_| HandshakeError::Credentials("Noise responder"))?;
    let mut offer = vec![0u8; NOISE_MAX];
    let n = hs.read_message(noise, &mut offer).map_err(noise_err)?;
    offer.truncate(n);
    let ts: [u8; Timestamp::LEN] = offer
        .get(..Timestamp::LEN)
        .and_then(|t| t.try_into().ok())
        .ok_or(HandshakeError::Malformed("no timestamp in INIT"))?;
    let timestamp =
        Timestamp::from_bytes(ts).ok_or(HandshakeError::Malformed("timestamp out of range"))?;
    offer.drain(..Timestamp::LEN);
    let peer = match creds {
        Credentials::Psk(_) => None,
        Credentials::Keys { peers, .. } => {
            let mut k = [0u8; KEY_LEN];
            let remote = hs
                .get_remote_static()
                .ok_or(HandshakeError::Malformed("no static key in INIT"))?;
            if remote.len() != KEY_LEN {
                return Err(HandshakeError::Malformed("static key length"));
            }
            k.copy_from_slice(remote);
            if !peers.contains(&k) {
                return Err(HandshakeError::UnknownPeer(encode_key(&k)));
            }
            Some(k)
        }
    };
    Ok(Accepted {
        hs,
        conn_id,
        offer,
        peer,
        timestamp,
    })
}

impl Accepted {
    /// Writes the RESPONSE carrying `answer`; returns the keys and the datagram.
    pub fn respond(mut self, answer: &[u8]) -> Result<(SessionKeys, Vec<u8>), HandshakeError> {
        if answer.len() > MAX_PAYLOAD {
            return Err(HandshakeError::TooLarge(answer.len()));
        }
        let mut msg = vec![0u8; NOISE_MAX];
        let n = self.hs.write_message(answer, &mut msg).map_err(noise_err)?;
        let mut packet = header(KIND_RESPONSE, self.conn_id);
        packet.extend_from_slice(&(n as u16).to_be_bytes());
        packet.extend_from_slice(&msg[..n]);
        Ok((keys(&mut self.hs, false), packet))
    }
}

impl HandshakeError {
    /// The REJECT a responder sends for this failure to read an INIT (`None`: stay silent,
    /// e.g. for malformed datagrams, which anybody can send).
    pub fn reject_reason(&self) -> Option<RejectReason> {
        match self {
            HandshakeError::Auth | HandshakeError::UnknownPeer(_) => Some(RejectReason::Auth),
            HandshakeError::Mode { .. } => Some(RejectReason::Mode),
            _ => None,
        }
    }
}

/// A key as text: standard base64 (44 characters), as WireGuard writes them.
pub fn encode_key(k: &Key) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::with_capacity(44);
    for c in k.chunks(3) {
        let b = [c[0], *c.get(1).unwrap_or(&0), *c.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= c.len() {
                s.push(char::from(A[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                s.push('=');
            }
        }
    }
    s
}

/// Parses a key written by [`encode_key`] (surrounding whitespace ignored).
pub fn decode_key(s: &str) -> Option<Key> {
    let s = s.trim().as_bytes();
    if s.len() != 44 || s[43] != b'=' || s[42] == b'=' {
        return None;
    }
    let val = |c: u8| -> Option<u32> {
        Some(u32::from(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        }))
    };
    let mut out = [0u8; KEY_LEN];
    let mut o = 0;
    for q in s.chunks(4) {
        let n = q.iter().take_while(|&&c| c != b'=').count();
        let mut v = 0u32;
        for (i, &c) in q[..n].iter().enumerate() {
            v |= val(c)? << (18 - 6 * i);
        }
        for i in 0..n.saturating_sub(1) {
            if o < KEY_LEN {
                out[o] = (v >> (16 - 8 * i)) as u8;
                o += 1;
            }
        }
    }
    // The last character's two low bits must be zero (canonical encoding).
    (o == KEY_LEN && encode_key(&out).as_bytes() == s).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(seed: u8) -> (Key, Key) {
        generate_keypair([seed; 32])
    }

    fn both(ci: &Credentials, cr: &Credentials) -> Result<(), HandshakeError> {
        let mut i = Initiator::new(ci, 0xabcdef, b"offer", [1; 32], Timestamp::default())?;
        let a = accept(cr, i.packet(), [2; 32])?;
        assert_eq!(a.offer, b"offer");
        assert_eq!(a.conn_id, 0xabcdef);
        let (rk, resp) = a.respond(b"answer")?;
        let e = i.read(&resp)?;
        assert_eq!(e.answer, b"answer");
        assert_eq!(e.keys.send, rk.recv);
        assert_eq!(e.keys.recv, rk.send);
        assert_ne!(e.keys.send, e.keys.recv);
        Ok(())
    }

    #[test]
    fn every_pattern_completes_and_wrong_credentials_fail() {
        let (ci, pi) = pair(1);
        let (cr, pr) = pair(2);
        let (_, other) = pair(3);
        let psk = [9u8; 32];
        let init = |peer, psk| Credentials::Keys {
            private: ci,
            peers: vec![peer],
            psk,
        };
        let resp = |peers, psk| Credentials::Keys {
            private: cr,
            peers,
            psk,
        };
        both(&Credentials::Psk(psk), &Credentials::Psk(psk)).unwrap();
        both(&init(pr, None), &resp(vec![other, pi], None)).unwrap();
        both(&init(pr, Some(psk)), &resp(vec![pi], Some(psk))).unwrap();
        // Wrong PSK, unknown initiator, wrong pinned responder key, mixed modes.
        assert_eq!(
            both(&Credentials::Psk(psk), &Credentials::Psk([8; 32])),
            Err(HandshakeError::Auth)
        );
        assert!(matches!(
            both(&init(pr, None), &resp(vec![other], None)),
            Err(HandshakeError::UnknownPeer(_))
        ));
        assert_eq!(
            both(&init(other, None), &resp(vec![pi], None)),
            Err(HandshakeError::Auth)
        );
        // IKpsk2 mixes the PSK in at the second message: the initiator notices.
        assert_eq!(
            both(&init(pr, Some(psk)), &resp(vec![pi], Some([8; 32]))),
            Err(HandshakeError::Auth)
        );
        assert!(matches!(
            both(&Credentials::Psk(psk), &resp(vec![pi], None)),
            Err(HandshakeError::Mode { .. })
        ));
    }

    #[test]
    fn init_is_padded_and_tampering_fails() {
        let c = Credentials::Psk([5; 32]);
        let i = Initiator::new(&c, 7, b"o", [1; 32], Timestamp::default()).unwrap();
        assert_eq!(i.packet().len(), INIT_MIN_LEN);
        // Flipping any byte of the header or the Noise message fails (the padding is not
        // covered, and does not matter).
        let Message::Init { noise, .. } = parse(i.packet()).unwrap() else {
            panic!()
        };
        let end = FIXED + 3 + noise.len();
        for at in 0..end {
            let mut bad = i.packet().to_vec();
            bad[at] ^= 1;
            assert!(accept(&c, &bad, [2; 32]).is_err(), "flip at {at} accepted");
        }
        // Truncations never panic.
        for n in 0..i.packet().len() {
            let _ = accept(&c, &i.packet()[..n], [2; 32]);
        }
    }

    #[test]
    fn reject_is_heeded_only_for_our_id() {
        let c = Credentials::Psk([5; 32]);
        let mut i = Initiator::new(&c, 7, b"o", [1; 32], Timestamp::default()).unwrap();
        assert_eq!(
            i.read(&reject_packet(8, RejectReason::Auth)).unwrap_err(),
            HandshakeError::Unexpected
        );
        assert_eq!(
            i.read(&reject_packet(7, RejectReason::Busy)).unwrap_err(),
            HandshakeError::Rejected(RejectReason::Busy)
        );
    }

    #[test]
    fn keys_as_text() {
        let (private, public) = pair(4);
        assert_eq!(public_key(&private), public);
        let s = encode_key(&public);
        assert_eq!(s.len(), 44);
        assert_eq!(decode_key(&format!("  {s}\n")), Some(public));
        assert_eq!(decode_key(&s[..43]), None);
        assert_eq!(decode_key("not a key"), None);
        let mut bad = s.clone();
        bad.replace_range(0..1, "*");
        assert_eq!(decode_key(&bad), None);
        // Known vector: 32 zero bytes.
        assert_eq!(
            encode_key(&[0; 32]),
            "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
        );
    }

    #[test]
    fn cookies_bind_address_connection_and_time() {
        let c = Cookies::new([5; 32]);
        let t = Instant::from_nanos(123 * 1_000_000_000);
        let addr = b"\x7f\0\0\x01\x1f\x90";
        let k = c.mint(t, 42, addr);
        assert!(c.verify(t, 42, addr, &k));
        // Valid in its slot and the next one, not later.
        let slot = Cookies::SLOT_SECS * 1_000_000_000;
        assert!(c.verify(Instant::from_nanos(t.as_nanos() + slot), 42, addr, &k));
        assert!(!c.verify(Instant::from_nanos(t.as_nanos() + 2 * slot), 42, addr, &k));
        assert!(!c.verify(t, 43, addr, &k), "other connection id");
        assert!(
            !c.verify(t, 42, b"\x7f\0\0\x02\x1f\x90", &k),
            "other address"
        );
        assert!(!Cookies::new([6; 32]).verify(t, 42, addr, &k), "other key");
        for i in 0..k.len() {
            let mut bad = k;
            bad[i] ^= 1;
            assert!(!c.verify(t, 42, addr, &bad), "byte {i} flipped");
        }
        assert!(!c.verify(t, 42, addr, &k[..19]));
        assert!(!c.verify(t, 42, addr, &[]));
    }

    #[test]
    fn retry_repeats_the_same_init_with_the_cookie() {
        let psk = Credentials::Psk([9; 32]);
        let mut i = Initiator::new(&psk, 7, b"offer", [1; 32], Timestamp::default()).unwrap();
        let first = i.packet().to_vec();
        assert!(matches!(
            parse(&first),
            Ok(Message::Init { cookie: None, .. })
        ));
        // Someone else's RETRY is not ours.
        assert_eq!(
            i.read(&retry_packet(8, b"xyz")).err(),
            Some(HandshakeError::Unexpected)
        );
        assert_eq!(i.packet(), &first[..]);
        assert_eq!(
            i.read(&retry_packet(7, b"cookie-1")).err(),
            Some(HandshakeError::Retry)
        );
        let second = i.packet().to_vec();
        assert_eq!(second.len(), first.len(), "the cookie fits in the padding");
        let (
            Ok(Message::Init { noise: n1, .. }),
            Ok(Message::Init {
                noise: n2, cookie, ..
            }),
        ) = (parse(&first), parse(&second))
        else {
            panic!("not INITs");
        };
        assert_eq!(n1, n2, "the same Noise message");
        assert_eq!(cookie, Some(&b"cookie-1"[..]));
        // A second RETRY replaces the cookie; beyond MAX_RETRIES they are ignored.
        assert_eq!(
            i.read(&retry_packet(7, b"c2")).err(),
            Some(HandshakeError::Retry)
        );
        assert_eq!(
            i.read(&retry_packet(7, b"c3")).err(),
            Some(HandshakeError::Unexpected)
        );
        assert_eq!(i.retries(), MAX_RETRIES);
        let Ok(Message::Init { cookie, .. }) = parse(i.packet()) else {
            panic!("not an INIT");
        };
        assert_eq!(cookie, Some(&b"c2"[..]));
        // The responder still completes the handshake from the INIT with the cookie, and a
        // forged RESPONSE in between keeps the cookie.
        assert!(i
            .read(
                &header(2, 7)
                    .into_iter()
                    .chain([0, 1, 0])
                    .collect::<Vec<_>>()
            )
            .is_err());
        let Ok(Message::Init { cookie, .. }) = parse(i.packet()) else {
            panic!("not an INIT");
        };
        assert_eq!(cookie, Some(&b"c2"[..]));
        let a = accept(&psk, i.packet(), [2; 32]).unwrap();
        let (_, resp) = a.respond(b"answer").unwrap();
        assert_eq!(i.read(&resp).unwrap().answer, b"answer");
    }

    #[test]
    fn timestamps_travel_authenticated_and_versions_are_named() {
        let psk = Credentials::Psk([5; 32]);
        let t = Timestamp {
            secs: 1_800_000_000,
            nanos: 999_999_999,
        };
        assert_eq!(Timestamp::from_bytes(t.to_bytes()), Some(t));
        assert_eq!(
            t.next(),
            Timestamp {
                secs: 1_800_000_001,
                nanos: 0
            }
        );
        assert!(t < t.next() && t.to_bytes() < t.next().to_bytes());
        let mut bad = t.to_bytes();
        bad[8..].copy_from_slice(&1_000_000_000u32.to_be_bytes());
        assert_eq!(Timestamp::from_bytes(bad), None);
        let mut i = Initiator::new(&psk, 7, b"offer", [1; 32], t).unwrap();
        let a = accept(&psk, i.packet(), [2; 32]).unwrap();
        assert_eq!((a.timestamp, a.offer.as_slice()), (t, &b"offer"[..]));
        // A restart draws a new ephemeral key and carries the new timestamp.
        let before = i.packet().to_vec();
        i.restart([3; 32], t.next()).unwrap();
        assert_ne!(i.packet(), &before[..]);
        let a = accept(&psk, i.packet(), [2; 32]).unwrap();
        assert_eq!(a.timestamp, t.next());
        let (_, resp) = a.respond(b"ok").unwrap();
        assert_eq!(i.read(&resp).unwrap().answer, b"ok");
        // Another version is named, and relabelling it does not make it authenticate.
        let mut old = before.clone();
        old[1] = VERSION - 1;
        assert_eq!(parse(&old), Err(HandshakeError::Version(VERSION - 1)));
        assert!(HandshakeError::Version(3).to_string().contains("version 3"));
        assert_eq!(reject_packet(7, RejectReason::Stale)[11], 6);
        let Ok(Message::Reject { reason, .. }) = parse(&reject_packet(7, RejectReason::Stale))
        else {
            panic!("not a REJECT");
        };
        assert_eq!(reason, RejectReason::Stale);
        let Ok(Message::Reject { reason, .. }) = parse(&reject_packet(7, RejectReason::ClockAhead))
        else {
            panic!("not a REJECT");
        };
        assert_eq!(reason, RejectReason::ClockAhead);
        assert_eq!(t.next().as_nanos() - t.as_nanos(), 1);
        assert_eq!(t.as_nanos(), 1_800_000_000_999_999_999);
    }

    #[test]
    fn malformed_retry_and_cookie_fields_are_refused() {
        let mut r = retry_packet(1, b"ok");
        r.push(0);
        assert!(parse(&r).is_err(), "trailing byte");
        let mut r = header(4, 1);
        r.push(0);
        assert!(parse(&r).is_err(), "empty cookie");
        let mut r = header(4, 1);
        r.push((MAX_COOKIE + 1) as u8);
        r.extend(std::iter::repeat_n(1u8, MAX_COOKIE + 1));
        assert!(parse(&r).is_err(), "cookie too long");
        assert!(parse(&header(4, 1)).is_err(), "no length");
        // An INIT whose cookie length runs past the datagram.
        let i = Initiator::new(
            &Credentials::Psk([9; 32]),
            7,
            b"",
            [1; 32],
            Timestamp::default(),
        )
        .unwrap();
        let Ok(Message::Init { noise, .. }) = parse(i.packet()) else {
            panic!("not an INIT");
        };
        let end = FIXED + 1 + 2 + noise.len();
        let mut bad = i.packet()[..end].to_vec();
        bad.extend_from_slice(&[10, 1, 2]);
        assert_eq!(
            parse(&bad),
            Err(HandshakeError::Malformed("truncated cookie"))
        );
    }
}
