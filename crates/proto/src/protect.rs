//! Packet protection: every packet after the handshake is sealed with an AEAD.
//!
//! The cipher is AES-256-GCM from `ring` (its assembly uses AES-NI and carry-less multiply
//! where the CPU has them). A protected packet is the ordinary header (see `docs/wire.md`),
//! then the frames encrypted, then a 16-byte tag instead of the CRC-32:
//!
//! - the header is the associated data: authenticated, not encrypted (a receiver must read
//!   the connection id to find the keys, and the path and packet number to build the nonce);
//! - the nonce is `space (1 B) | 0 0 | path (1 B) | packet number (8 B, BE)`. Packet numbers are
//!   never reused on a path and each direction has its own key (the two halves of the
//!   handshake's split), so a nonce is never used twice under one key. `space` separates the
//!   packets of the connection ([`SPACE_DATA`]) from the driver's own control packets
//!   ([`SPACE_CONTROL`], path validation) that share the key;
//! - a [`ReplayWindow`] per path refuses a packet number seen before, or older than the
//!   window, *before* decryption (cheap) and records it only *after* authentication (so a
//!   forged packet cannot poison the window). RFC 4303 §3.4.3 (ESP's anti-replay window)
//!   is the model.
//!
//! The keys come from the caller (the handshake, [`crate::handshake`]); nothing here draws
//! randomness.

use crate::wire::{self, Header, WireError};
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM};

/// Bytes of the authentication tag that replaces the CRC-32 trailer.
pub const TAG_LEN: usize = 16;
/// Bytes of one direction's key.
pub const KEY_LEN: usize = 32;
/// Packet numbers behind the largest one received on a path that are still accepted (once
/// each). Older ones are refused: 1024 packets is several windows of reordering at
/// loopback speeds (WireGuard keeps 2048 bits, ESP 32 to 1024).
pub const REPLAY_WINDOW: u64 = 1024;
/// Nonce space of the connection's packets.
pub const SPACE_DATA: u8 = 0;
/// Nonce space of the driver's control packets (path challenges and responses).
pub const SPACE_CONTROL: u8 = 1;

/// Why a protected packet was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtectError {
    /// The header cannot be parsed.
    #[error("malformed header: {0}")]
    Wire(#[from] WireError),
    /// The packet number was seen before or is older than the replay window.
    #[error("replayed or too old packet {pn} on path {path}")]
    Replay {
        /// Path id of the header.
        path: u8,
        /// Packet number of the header.
        pn: u64,
    },
    /// The tag does not verify: forged, corrupted, or sealed with other keys.
    #[error("authentication failed (forged, corrupted, or another connection's keys)")]
    Auth,
}

/// One direction's AEAD key.
pub struct PacketKey(LessSafeKey);

impl std::fmt::Debug for PacketKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PacketKey(..)")
    }
}

impl PacketKey {
    /// A key from 32 secret bytes.
    pub fn new(key: &[u8; KEY_LEN]) -> Self {
        // Infallible: the length is AES-256's.
        let k = UnboundKey::new(&AES_256_GCM, key).expect("32-byte AES-256-GCM key");
        PacketKey(LessSafeKey::new(k))
    }

    /// Encrypts `payload` in place, authenticating `aad` too; returns the tag. The caller
    /// guarantees that `(space, path, pn)` is never used twice with this key.
    pub fn seal(
        &self,
        space: u8,
        path: u8,
        pn: u64,
        aad: &[u8],
        payload: &mut [u8],
    ) -> [u8; TAG_LEN] {
        let tag = self
            .0
            .seal_in_place_separate_tag(nonce(space, path, pn), Aad::from(aad), payload)
            // ring fails only for inputs longer than GCM's limit (2^36 bytes).
            .expect("AEAD input within GCM limits");
        let mut t = [0u8; TAG_LEN];
        t.copy_from_slice(tag.as_ref());
        t
    }

    /// Decrypts `sealed` (ciphertext then tag) in place; returns the plaintext.
    pub fn open<'a>(
        &self,
        space: u8,
        path: u8,
        pn: u64,
        aad: &[u8],
        sealed: &'a mut [u8],
    ) -> Result<&'a mut [u8], ProtectError> {
        self.0
            .open_in_place(nonce(space, path, pn), Aad::from(aad), sealed)
            .map_err(|_| ProtectError::Auth)
    }
}

fn nonce(space: u8, path: u8, pn: u64) -> Nonce {
    let mut n = [0u8; 12];
    n[0] = space;
    n[3] = path;
    n[4..].copy_from_slice(&pn.to_be_bytes());
    Nonce::assume_unique_for_key(n)
}

/// Which packet numbers of one path were accepted: the largest, and a bitmap of the
/// [`REPLAY_WINDOW`] numbers below it.
#[derive(Debug, Clone)]
pub struct ReplayWindow {
    largest: Option<u64>,
    bits: [u64; (REPLAY_WINDOW / 64) as usize],
}

impl Default for ReplayWindow {
    fn default() -> Self {
        ReplayWindow {
            largest: None,
            bits: [0; (REPLAY_WINDOW / 64) as usize],
        }
    }
}

impl ReplayWindow {
    /// True if `pn` may be new: above the largest, or inside the window and not yet seen.
    pub fn check(&self, pn: u64) -> bool {
        match self.largest {
            None => true,
            Some(l) if pn > l => true,
            Some(l) => {
                let age = l - pn;
                age < REPLAY_WINDOW && !self.bit(pn)
            }
        }
    }

    /// Records `pn` (after [`check`](Self::check) and authentication); returns true if it is
    /// the largest so far (the newest packet of the path).
    pub fn accept(&mut self, pn: u64) -> bool {
        match self.largest {
            Some(l) if pn <= l => {
                self.set(pn);
                false
            }
            prev => {
                // Clear the bits of the numbers the window slides over.
                let from = prev.map_or(pn.saturating_sub(REPLAY_WINDOW - 1), |l| {
                    (l + 1).max(pn.saturating_sub(REPLAY_WINDOW - 1))
                });
                if pn - from >= REPLAY_WINDOW {
                    self.bits = [0; (REPLAY_WINDOW / 64) as usize];
                } else {
                    for x in from..pn {
                        self.clear(x);
                    }
                }
                self.largest = Some(pn);
                self.set(pn);
                true
            }
        }
    }

    /// The largest packet number accepted.
    pub fn largest(&self) -> Option<u64> {
        self.largest
    }

    fn slot(pn: u64) -> (usize, u64) {
        let i = pn % REPLAY_WINDOW;
        ((i / 64) as usize, 1u64 << (i % 64))
    }
    fn bit(&self, pn: u64) -> bool {
        let (w, m) = Self::slot(pn);
        self.bits[w] & m != 0
    }
    fn set(&mut self, pn: u64) {
        let (w, m) = Self::slot(pn);
        self.bits[w] |= m;
    }
    fn clear(&mut self, pn: u64) {
        let (w, m) = Self::slot(pn);
        self.bits[w] &= !m;
    }
}

/// Both directions' keys of a connection, as the handshake's split produced them.
#[derive(Clone, PartialEq, Eq)]
pub struct SessionKeys {
    /// Key of the packets this end sends.
    pub send: [u8; KEY_LEN],
    /// Key of the packets this end receives.
    pub recv: [u8; KEY_LEN],
}

impl std::fmt::Debug for SessionKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionKeys(..)")
    }
}

/// A connection's packet protection: seal what it sends, open and replay-check what it
/// receives. Built from [`SessionKeys`]; given to [`crate::Connection::set_protection`].
#[derive(Debug)]
pub struct Protection {
    send: PacketKey,
    recv: PacketKey,
    windows: Vec<ReplayWindow>,
    /// Decryption happens in this copy of the datagram (the caller's bytes are shared).
    pub(crate) scratch: Vec<u8>,
}

impl Protection {
    /// Protection with these keys.
    pub fn new(keys: &SessionKeys) -> Self {
        Protection {
            send: PacketKey::new(&keys.send),
            recv: PacketKey::new(&keys.recv),
            windows: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// Seals a datagram written with a [`TAG_LEN`]-byte trailer reserved: `datagram` is
    /// header, frames, then `TAG_LEN` bytes that receive the tag.
    pub fn seal(&self, datagram: &mut [u8]) -> Result<(), WireError> {
        let (hdr, hlen) = wire::parse_header(datagram)?;
        let body_end = datagram
            .len()
            .checked_sub(TAG_LEN)
            .filter(|&e| e >= hlen)
            .ok_or(WireError::Truncated("authentication tag"))?;
        let (aad, rest) = datagram.split_at_mut(hlen);
        let (body, tag) = rest.split_at_mut(body_end - hlen);
        tag.copy_from_slice(&self.send.seal(SPACE_DATA, hdr.path, hdr.pn, aad, body));
        Ok(())
    }

    /// Opens `datagram` into `out` (cleared first): a copy of it, then
    /// [`open_in_place`](Self::open_in_place) on the copy. Returns the header, the offset of
    /// the frames in `out`, and whether it is the newest packet of its path.
    pub fn open(
        &mut self,
        datagram: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(Header, usize, bool), ProtectError> {
        // Refuse what the window or the length refuses before copying anything.
        self.precheck(datagram)?;
        out.clear();
        out.extend_from_slice(datagram);
        let (hdr, frames, newest) = self.open_in_place(out)?;
        out.truncate(frames.end);
        Ok((hdr, frames.start, newest))
    }

    /// Opens `datagram` where it lies: checks the replay window, decrypts the frames in
    /// place and authenticates them with the header, then records the packet number.
    /// Returns the header, where the plaintext frames are in `datagram`, and whether it is
    /// the newest packet of its path. The bytes of `datagram` are overwritten (on failure
    /// too: their contents are then unspecified).
    pub fn open_in_place(
        &mut self,
        datagram: &mut [u8],
    ) -> Result<(Header, std::ops::Range<usize>, bool), ProtectError> {
        let (hdr, hlen) = self.precheck(datagram)?;
        let (aad, sealed) = datagram.split_at_mut(hlen);
        let n = self
            .recv
            .open(SPACE_DATA, hdr.path, hdr.pn, aad, sealed)?
            .len();
        let p = usize::from(hdr.path);
        if self.windows.len() <= p {
            self.windows.resize_with(p + 1, ReplayWindow::default);
        }
        let newest = self.windows[p].accept(hdr.pn);
        Ok((hdr, hlen..hlen + n, newest))
    }

    /// The header and its length, if the datagram is long enough for a tag and its packet
    /// number passes the replay window (no cryptography yet).
    fn precheck(&self, datagram: &[u8]) -> Result<(Header, usize), ProtectError> {
        let (hdr, hlen) = wire::parse_header(datagram)?;
        if datagram.len() < hlen + TAG_LEN {
            return Err(WireError::Truncated("authentication tag").into());
        }
        if self
            .windows
            .get(usize::from(hdr.path))
            .is_some_and(|w| !w.check(hdr.pn))
        {
            return Err(ProtectError::Replay {
                path: hdr.path,
                pn: hdr.pn,
            });
        }
        Ok((hdr, hlen))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_window_accepts_each_number_once() {
        let mut w = ReplayWindow::default();
        assert!(w.check(5));
        assert!(w.accept(5));
        assert!(!w.check(5));
        assert!(w.check(3));
        assert!(!w.accept(3), "3 < 5 is not the newest");
        assert!(!w.check(3));
        assert!(w.check(4));
        // Slide far: everything at or below largest - window is refused.
        assert!(w.accept(5 + 3 * REPLAY_WINDOW));
        let l = 5 + 3 * REPLAY_WINDOW;
        assert!(!w.check(l - REPLAY_WINDOW));
        assert!(w.check(l - REPLAY_WINDOW + 1));
        assert!(!w.check(4), "far below the window");
        // Numbers inside the window that were never seen are still accepted once.
        for pn in (l - 10..l).rev() {
            assert!(w.check(pn));
            w.accept(pn);
            assert!(!w.check(pn));
        }
        // A slide by less than the window keeps the old bits and clears the new slots.
        assert!(w.accept(l + 100));
        assert!(!w.check(l - 5));
        assert!(w.check(l + 50));
    }

    #[test]
    fn replay_window_matches_a_set_model() {
        // Pseudo-random arrivals against a naive model (set of accepted numbers).
        let mut w = ReplayWindow::default();
        let mut seen = std::collections::BTreeSet::new();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut top = 0u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let pn = if x.is_multiple_of(4) {
                top += x % 300;
                top
            } else {
                top.saturating_sub(x % 1500)
            };
            let largest = seen.iter().next_back().copied();
            let model =
                !seen.contains(&pn) && largest.is_none_or(|l| pn > l || l - pn < REPLAY_WINDOW);
            assert_eq!(w.check(pn), model, "pn {pn} largest {largest:?}");
            if model {
                assert_eq!(w.accept(pn), largest.is_none_or(|l| pn > l));
                seen.insert(pn);
            }
        }
    }

    fn keys() -> (SessionKeys, SessionKeys) {
        let a = [7u8; 32];
        let b = [9u8; 32];
        (
            SessionKeys { send: a, recv: b },
            SessionKeys { send: b, recv: a },
        )
    }

    fn packet(path: u8, pn: u64, body: &[u8]) -> Vec<u8> {
        let hdr = Header {
            conn_id: 0xfeed,
            path,
            pn,
        };
        let mut v = vec![0u8; 2048];
        let mut w =
            wire::PacketWriter::with_trailer(&mut v, 2048, hdr, wire::Trailer::Aead).unwrap();
        w.push(&wire::Frame::Data {
            offset: 0,
            data: body,
        })
        .unwrap();
        let n = w.finish();
        v.truncate(n);
        v
    }

    #[test]
    fn seal_open_round_trip_and_tamper_detection() {
        let (ka, kb) = keys();
        let (a, mut b) = (Protection::new(&ka), Protection::new(&kb));
        let mut pkt = packet(1, 42, b"secret bytes");
        a.seal(&mut pkt).unwrap();
        assert!(
            !pkt.windows(12).any(|w| w == b"secret bytes"),
            "payload left in clear"
        );
        let mut out = Vec::new();
        // Every single-bit flip anywhere (header included) is refused.
        for i in 0..pkt.len() {
            let mut bad = pkt.clone();
            bad[i] ^= 0x10;
            assert!(b.open(&bad, &mut out).is_err(), "flip at byte {i} accepted");
        }
        let (h, at, newest) = b.open(&pkt, &mut out).unwrap();
        assert_eq!((h.path, h.pn, newest), (1, 42, true));
        let frames: Vec<_> = wire::FrameIter::new(&out[at..])
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            frames,
            vec![wire::Frame::Data {
                offset: 0,
                data: b"secret bytes"
            }]
        );
        // A replay is refused before decryption.
        assert!(matches!(
            b.open(&pkt, &mut out),
            Err(ProtectError::Replay { path: 1, pn: 42 })
        ));
        // The other direction's key does not open it.
        let mut own = packet(0, 1, b"x");
        a.seal(&mut own).unwrap();
        let mut a2 = Protection::new(&ka);
        assert_eq!(a2.open(&own, &mut out), Err(ProtectError::Auth));
        // In place: the same plaintext where the datagram lies, and the same refusals.
        let mut c = Protection::new(&kb);
        let mut pkt2 = packet(1, 43, b"in place");
        a.seal(&mut pkt2).unwrap();
        let mut copy = pkt2.clone();
        let (h, frames, newest) = c.open_in_place(&mut copy).unwrap();
        assert_eq!((h.pn, newest), (43, true));
        assert_eq!(
            wire::FrameIter::new(&copy[frames]).next().unwrap().unwrap(),
            wire::Frame::Data {
                offset: 0,
                data: b"in place"
            }
        );
        let mut again = pkt2.clone();
        assert!(matches!(
            c.open_in_place(&mut again),
            Err(ProtectError::Replay { path: 1, pn: 43 })
        ));
        let mut bad = pkt2.clone();
        bad[3] ^= 1;
        assert!(Protection::new(&kb).open_in_place(&mut bad).is_err());
        // Truncated datagrams are refused, never panic.
        for n in 0..pkt.len() {
            let _ = Protection::new(&kb).open(&pkt[..n], &mut out);
            let _ = Protection::new(&kb).open_in_place(&mut pkt.clone()[..n]);
        }
    }
}
