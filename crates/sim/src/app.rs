//! Application byte streams: a deterministic source and a verifying sink.
//!
//! The source's bytes are a function of (seed, offset), so a run needs no stored copy of what
//! was written; both ends hash what passes through them (XXH3), and at the end the sink's
//! digest must equal the digest of the same-length prefix of what the source wrote.

use xxhash_rust::xxh3::Xxh3;

/// Hash-state snapshots are kept every this many bytes written.
const SNAPSHOT_EVERY: u64 = 1 << 20;

/// The word at 8-byte index `i` of stream `seed`.
#[inline]
fn word(seed: u64, i: u64) -> u64 {
    i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ seed
}

/// Fills `dst` with the stream's bytes at `[offset, offset + dst.len())`.
pub fn fill(seed: u64, offset: u64, dst: &mut [u8]) {
    let mut o = offset;
    let mut d = dst;
    // Unaligned head.
    while !o.is_multiple_of(8) && !d.is_empty() {
        d[0] = word(seed, o / 8).to_le_bytes()[(o % 8) as usize];
        d = &mut d[1..];
        o += 1;
    }
    let mut i = o / 8;
    let mut chunks = d.chunks_exact_mut(8);
    for c in &mut chunks {
        c.copy_from_slice(&word(seed, i).to_le_bytes());
        i += 1;
    }
    let rest = chunks.into_remainder();
    let w = word(seed, i).to_le_bytes();
    let n = rest.len();
    rest.copy_from_slice(&w[..n]);
}

/// Generates the stream and remembers its hash.
#[derive(Clone)]
pub struct Source {
    seed: u64,
    written: u64,
    hasher: Xxh3,
    snapshots: Vec<Xxh3>,
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Source")
            .field("seed", &self.seed)
            .field("written", &self.written)
            .finish()
    }
}

impl Source {
    /// The stream with this seed.
    pub fn new(seed: u64) -> Self {
        Source {
            seed,
            written: 0,
            hasher: Xxh3::new(),
            snapshots: vec![Xxh3::new()],
        }
    }

    /// Bytes produced so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Produces the next `dst.len()` bytes.
    pub fn produce(&mut self, dst: &mut [u8]) {
        fill(self.seed, self.written, dst);
        let mut rest: &[u8] = dst;
        while !rest.is_empty() {
            let to_snap = SNAPSHOT_EVERY - self.written % SNAPSHOT_EVERY;
            let n = (rest.len() as u64).min(to_snap) as usize;
            self.hasher.update(&rest[..n]);
            self.written += n as u64;
            rest = &rest[n..];
            if self.written.is_multiple_of(SNAPSHOT_EVERY) {
                self.snapshots.push(self.hasher.clone());
            }
        }
    }

    /// Digest of the first `len` bytes produced (`None` if more than was produced).
    pub fn digest_of_prefix(&self, len: u64) -> Option<u64> {
        if len > self.written {
            return None;
        }
        let k = (len / SNAPSHOT_EVERY) as usize;
        let mut h = self.snapshots.get(k)?.clone();
        let mut off = k as u64 * SNAPSHOT_EVERY;
        let mut buf = vec![0u8; 64 * 1024];
        while off < len {
            let n = ((len - off) as usize).min(buf.len());
            fill(self.seed, off, &mut buf[..n]);
            h.update(&buf[..n]);
            off += n as u64;
        }
        Some(h.digest())
    }
}

/// Hashes what the application reads.
#[derive(Clone)]
pub struct Sink {
    read: u64,
    hasher: Xxh3,
}

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sink").field("read", &self.read).finish()
    }
}

impl Default for Sink {
    fn default() -> Self {
        Sink {
            read: 0,
            hasher: Xxh3::new(),
        }
    }
}

impl Sink {
    /// Consumes delivered bytes.
    pub fn consume(&mut self, data: &[u8]) {
        self.hasher.update(data);
        self.read += data.len() as u64;
    }
    /// Bytes consumed.
    pub fn read(&self) -> u64 {
        self.read
    }
    /// Digest of everything consumed.
    pub fn digest(&self) -> u64 {
        self.hasher.digest()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_is_position_consistent() {
        let mut whole = vec![0u8; 100];
        fill(9, 3, &mut whole);
        for start in 0..100 {
            let mut part = vec![0u8; 100 - start];
            fill(9, 3 + start as u64, &mut part);
            assert_eq!(&part[..], &whole[start..]);
        }
    }

    #[test]
    fn prefix_digests_match_a_sink() {
        let mut s = Source::new(5);
        let mut buf = vec![0u8; 777_777];
        for _ in 0..4 {
            s.produce(&mut buf);
        }
        for len in [0u64, 1, 1 << 20, (1 << 20) + 5, 3_111_108] {
            let mut sink = Sink::default();
            let mut b = vec![0u8; len as usize];
            fill(5, 0, &mut b);
            sink.consume(&b);
            assert_eq!(s.digest_of_prefix(len), Some(sink.digest()), "{len}");
        }
        // One wrong byte changes the digest.
        let mut b = vec![0u8; 1000];
        fill(5, 0, &mut b);
        b[500] ^= 1;
        let mut sink = Sink::default();
        sink.consume(&b);
        assert_ne!(s.digest_of_prefix(1000), Some(sink.digest()));
        assert_eq!(s.digest_of_prefix(u64::MAX), None);
    }
}
