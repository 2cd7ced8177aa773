//! One connection of the driver with its security state: handshake, packet protection, the
//! reply address of each path, path validation and the anti-amplification limit.
//!
//! Sans-IO like the core: inputs carry the socket index and the source address, outputs name
//! the socket and the destination; the driver does the I/O.
//!
//! - **Handshake** ([`tributary_proto::handshake`]): the initiator sends INIT on path 0 and
//!   repeats it (1 s, doubling) until a RESPONSE or REJECT. The responder answers from the
//!   driver ([`crate::UdpDriver`]), which owns the credentials and limits.
//! - **Reply addresses**: a path's datagrams go to the address its packets come from, but
//!   the address changes only for an authenticated packet that is the newest of its path
//!   (RFC 9000 §9.3), and only after the new address answered a challenge: a PATH_CHALLENGE
//!   with 8 random bytes, sealed, to the new address; the peer echoes them in a
//!   PATH_RESPONSE sent back where the challenge came from (RFC 9000 §8.2).
//! - **Anti-amplification** (RFC 9000 §8.1): until a path's address is validated, at most
//!   three times the bytes received from it are sent to it; the rest is dropped (the core
//!   treats it as loss) and counted.
//! - **Every path at open**: once the handshake completes, the initiator sends a challenge
//!   on each of its paths. Its answer confirms the path works; its arrival tells the
//!   responder the path's address (an authenticated challenge may set the address of a
//!   path that has none yet, never move one), so the responder can send on a path before
//!   any data came over it (perf's reverse direction). The responder's connection has
//!   every offered path from the start, each inactive (no new data) until its address is
//!   validated.
//!
//! Control packets (challenges and responses) have their own format, first byte 'C':
//!
//! ```text
//! 'C' | version | connection id (8 B) | sequence (8 B) | sealed: kind (1 B) | path (1 B) | token (8 B) | tag (16 B)
//! ```
//!
//! sealed with the connection's keys in nonce space [`SPACE_CONTROL`] (the sequence is the
//! nonce's counter and goes through a replay window).
//!
//! An unprotected session (no credentials: the simulator's format, for trusted labs and for
//! measuring the cost of protection) has none of this: every accepted datagram re-points
//! its path, as before.

use crate::negotiate::{Answer, Offer, Resume};
use std::collections::VecDeque;
use std::net::SocketAddr;
use tributary_proto::handshake::{self, HandshakeError, Initiator, RejectReason, Timestamp};
use tributary_proto::protect::{
    PacketKey, Protection, ReplayWindow, SessionKeys, SPACE_CONTROL, TAG_LEN,
};
use tributary_proto::wire::VERSION;
use tributary_proto::{Connection, Duration, Instant};

/// First byte of control packets ('C').
pub const CONTROL_MAGIC: u8 = 0x43;
const CONTROL_HDR: usize = 2 + 8 + 8;
const CONTROL_BODY: usize = 1 + 1 + 8;
const CHALLENGE: u8 = 1;
const RESPONSE: u8 = 2;
/// Amplification factor allowed towards an unvalidated address (RFC 9000 §8.1).
pub const AMPLIFICATION: u64 = 3;
/// First handshake retransmission; doubles each time (RFC 9002 §6.2.2's initial PTO).
const HANDSHAKE_RTO: Duration = Duration::from_secs(1);
/// Path challenges are repeated this often, at most [`PROBE_TRIES`] times.
const PROBE_INTERVAL: Duration = Duration::from_millis(250);
const PROBE_TRIES: u32 = 8;
/// Most addresses under validation at once per connection.
const MAX_PROBES: usize = 16;

/// Where a datagram goes: the local socket and the remote address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    /// Index of the local socket.
    pub socket: usize,
    /// Remote address.
    pub remote: SocketAddr,
}

#[derive(Debug, Clone, Copy)]
struct PathRoute {
    route: Route,
    validated: bool,
    rx_bytes: u64,
    tx_bytes: u64,
}

#[derive(Debug, Clone, Copy)]
struct Probe {
    path: usize,
    route: Route,
    token: [u8; 8],
    next: Instant,
    tries: u32,
}

/// Counters of the security layer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct SessionStats {
    /// Datagrams not sent because the address was not validated yet (anti-amplification).
    pub amplification_limited: u64,
    /// Path challenges sent.
    pub challenges_sent: u64,
    /// RETRYs the responder sent and this initiator followed (address validation).
    pub retries: u64,
    /// Addresses validated by a path response.
    pub paths_validated: u64,
    /// Control packets refused (forged, replayed, malformed, unknown token).
    pub control_rejected: u64,
    /// Authenticated packets from a new address that were not the newest of their path
    /// (they cannot move a path).
    pub stale_address_changes: u64,
    /// Handshake datagrams ignored (forged, wrong id, duplicates beyond the budget).
    pub handshake_ignored: u64,
}

/// Bytes of the datagrams accepted on each path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct PathCounters {
    rx_bytes: Vec<u64>,
}

/// How a session failed before its transfer could start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionError {
    /// The responder sent REJECT.
    Rejected(RejectReason),
    /// The responder authenticated us and refused the offer.
    Refused(String),
    /// A RESPONSE arrived that did not authenticate (wrong pinned key or PSK, or forged).
    BadResponse,
}

enum Phase {
    /// Initiator waiting for the RESPONSE.
    Handshake {
        init: Box<Initiator>,
        next: Instant,
        backoff: u32,
    },
    Open,
}

struct Security {
    id: u64,
    send: PacketKey,
    recv: PacketKey,
    next_seq: u64,
    window: ReplayWindow,
    probes: Vec<Probe>,
    /// Responder: the INIT it answered and its RESPONSE, to answer a repeated INIT.
    handshake: Option<(Vec<u8>, Vec<u8>)>,
}

/// One connection and its security state.
pub struct Session {
    id: u64,
    conn: Connection,
    phase: Phase,
    sec: Option<Security>,
    routes: Vec<Option<PathRoute>>,
    out: VecDeque<(Route, Vec<u8>)>,
    error: Option<SessionError>,
    stats: SessionStats,
    /// 8-byte tokens for path challenges, drawn from the OS by the driver in advance.
    tokens: Vec<[u8; 8]>,
    offer: Option<Offer>,
    peer: Option<handshake::Key>,
    /// Initiator: the prefix the responder holds (its answer), to check and skip.
    resume: Option<Resume>,
    counters: PathCounters,
    /// Responder: where the INIT came from.
    origin: Option<SocketAddr>,
    /// An authenticated packet (not a handshake message) came from the peer: the peer
    /// holds the keys, so this is no replayed INIT.
    confirmed: bool,
    /// Driver clock when the session was created (the oldest half-open one is evicted
    /// first, see `UdpDriver`).
    pub(crate) born: Instant,
    /// Initiator: REJECT "stale" came and the driver is to restart the handshake with a new
    /// ephemeral key and a later timestamp ([`Session::restart_handshake`]).
    wants_restart: bool,
    /// Initiator: handshakes restarted after REJECT "stale".
    stale_restarts: u32,
}

/// Times an initiator restarts its handshake after REJECT "stale" (another INIT of the same
/// identity with a later timestamp was accepted first: senders sharing a pre-shared key that
/// start at once) before it reports the REJECT.
pub const STALE_RESTARTS: u32 = 8;

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id)
            .field("open", &self.is_open())
            .field("routes", &self.routes)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// An unprotected session: routes as given (sender) or learned (receiver).
    pub fn plain(conn: Connection, routes: &[Route]) -> Self {
        let id = conn.config().conn_id;
        let mut s = Session::new(id, conn, Phase::Open, None);
        s.set_routes(routes);
        s
    }

    /// An initiator: sends `init` on path 0 until answered; `routes` are the sender's paths
    /// (validated: the user chose them).
    pub fn initiator(conn: Connection, init: Initiator, routes: &[Route], now: Instant) -> Self {
        let id = init.conn_id();
        let phase = Phase::Handshake {
            init: Box::new(init),
            next: now,
            backoff: 0,
        };
        let mut s = Session::new(id, conn, phase, None);
        s.set_routes(routes);
        s
    }

    /// A responder after it answered `init_packet` (from `from`) with `response`.
    pub fn responder(
        id: u64,
        mut conn: Connection,
        keys: &SessionKeys,
        init_packet: &[u8],
        response: Vec<u8>,
        from: Route,
    ) -> Self {
        conn.set_protection(Protection::new(keys));
        // Paths carry new data once validated (they exist already: see the module doc).
        for p in 0..conn.path_count() {
            conn.set_path_active(p, false);
        }
        let mut sec = Security::new(id, keys);
        sec.handshake = Some((init_packet.to_vec(), response.clone()));
        let mut s = Session::new(id, conn, Phase::Open, Some(sec));
        s.out.push_back((from, response));
        s.origin = Some(from.remote);
        s
    }

    fn new(id: u64, conn: Connection, phase: Phase, sec: Option<Security>) -> Self {
        Session {
            id,
            conn,
            phase,
            sec,
            routes: Vec::new(),
            out: VecDeque::new(),
            error: None,
            stats: SessionStats::default(),
            tokens: Vec::new(),
            offer: None,
            peer: None,
            resume: None,
            counters: PathCounters::default(),
            origin: None,
            confirmed: false,
            born: Instant::ZERO,
            wants_restart: false,
            stale_restarts: 0,
        }
    }

    fn set_routes(&mut self, routes: &[Route]) {
        self.routes = routes
            .iter()
            .map(|&route| {
                Some(PathRoute {
                    route,
                    validated: true,
                    rx_bytes: 0,
                    tx_bytes: 0,
                })
            })
            .collect();
    }

    /// The connection id.
    pub fn id(&self) -> u64 {
        self.id
    }
    /// The connection.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }
    /// The connection, to write, read and drain events.
    pub fn connection_mut(&mut self) -> &mut Connection {
        &mut self.conn
    }
    /// True once the handshake completed (always for unprotected sessions).
    pub fn is_open(&self) -> bool {
        matches!(self.phase, Phase::Open)
    }
    /// True if packets are protected.
    pub fn is_protected(&self) -> bool {
        self.sec.is_some()
    }
    /// Why the handshake failed, if it did.
    pub fn error(&self) -> Option<&SessionError> {
        self.error.as_ref()
    }
    /// Counters.
    pub fn stats(&self) -> SessionStats {
        self.stats
    }
    /// Where path `p` currently sends, if known.
    pub fn remote(&self, p: usize) -> Option<SocketAddr> {
        self.routes
            .get(p)
            .copied()
            .flatten()
            .map(|r| r.route.remote)
    }
    /// True if path `p`'s address is validated.
    pub fn validated(&self, p: usize) -> bool {
        self.routes
            .get(p)
            .copied()
            .flatten()
            .is_some_and(|r| r.validated)
    }
    /// Initiator: true if the handshake is to be restarted with a later timestamp (REJECT
    /// "stale"); the driver calls [`Session::restart_handshake`].
    pub fn wants_restart(&self) -> bool {
        self.wants_restart
    }
    /// Initiator: starts the handshake again with a new ephemeral key (`seed`, from the OS)
    /// and `timestamp` (later than the last), sending the new INIT at once.
    pub fn restart_handshake(&mut self, now: Instant, seed: [u8; 32], timestamp: Timestamp) {
        self.wants_restart = false;
        if let Phase::Handshake { init, next, .. } = &mut self.phase {
            if init.restart(seed, timestamp).is_ok() {
                self.stale_restarts += 1;
                self.error = None;
                *next = now;
            }
        }
    }
    /// Responder: the address the handshake came from.
    pub fn origin(&self) -> Option<SocketAddr> {
        self.origin
    }
    /// Responder: records what the initiator offered and its public key.
    pub fn set_offer(&mut self, offer: Offer, peer: Option<handshake::Key>) {
        self.offer = Some(offer);
        self.peer = peer;
    }
    /// Responder: what the initiator offered.
    pub fn offer(&self) -> Option<&Offer> {
        self.offer.as_ref()
    }
    /// Responder: the initiator's public key (key-pair credentials).
    pub fn peer_key(&self) -> Option<&handshake::Key> {
        self.peer.as_ref()
    }
    /// Gives the session random tokens for path challenges (the driver draws them).
    pub fn add_tokens(&mut self, t: impl IntoIterator<Item = [u8; 8]>) {
        self.tokens.extend(t);
    }
    /// Initiator: the prefix the responder already holds, if it asked to resume.
    pub fn resume(&self) -> Option<&Resume> {
        self.resume.as_ref()
    }
    /// Bytes of the datagrams accepted on path `p` so far.
    pub fn path_bytes_received(&self, p: usize) -> u64 {
        self.counters.rx_bytes.get(p).copied().unwrap_or(0)
    }
    /// True if it has fewer than a few tokens left.
    pub fn needs_tokens(&self) -> bool {
        self.sec.is_some() && self.tokens.len() < 4
    }

    // ------------------------------------------------------------------ input

    /// Handles one datagram from `from`. Returns false if it was dropped.
    pub fn handle_datagram(&mut self, now: Instant, from: Route, data: &[u8]) -> bool {
        match data.first() {
            Some(&handshake::MAGIC) => self.on_handshake(now, from, data),
            Some(&CONTROL_MAGIC) => self.on_control(now, from, data),
            _ if !self.is_open() => false,
            _ => {
                let r = self.conn.handle_datagram(now, data);
                self.on_packet(now, from, data.len(), r)
            }
        }
    }

    /// Like [`handle_datagram`](Self::handle_datagram), decrypting a packet where it lies
    /// (no copy); the bytes of `data` are unspecified afterwards.
    pub fn handle_datagram_mut(&mut self, now: Instant, from: Route, data: &mut [u8]) -> bool {
        match data.first() {
            Some(&handshake::MAGIC) => self.on_handshake(now, from, data),
            Some(&CONTROL_MAGIC) => {
                let ok = self.on_control(now, from, data);
                self.confirmed |= ok;
                ok
            }
            _ if !self.is_open() => false,
            _ => {
                let len = data.len();
                let r = self.conn.handle_datagram_mut(now, data);
                let ok = self.on_packet(now, from, len, r);
                self.confirmed |= ok;
                ok
            }
        }
    }

    /// True once a packet other than a handshake message was accepted from the peer
    /// (authenticated, when protected). A responder's session that is not confirmed may be
    /// a replayed INIT: nobody holds its keys.
    pub fn is_confirmed(&self) -> bool {
        self.confirmed
    }

    fn on_packet(
        &mut self,
        now: Instant,
        from: Route,
        len: usize,
        r: Result<tributary_proto::Received, tributary_proto::DatagramError>,
    ) -> bool {
        let Ok(r) = r else {
            return false;
        };
        let p = r.path;
        if self.routes.len() <= p {
            self.routes.resize(p + 1, None);
        }
        let len = len as u64;
        if self.counters.rx_bytes.len() <= p {
            self.counters.rx_bytes.resize(p + 1, 0);
        }
        self.counters.rx_bytes[p] += len;
        let Some(sec) = &mut self.sec else {
            // Unprotected: every accepted datagram re-points its path.
            self.routes[p] = Some(PathRoute {
                route: from,
                validated: true,
                rx_bytes: 0,
                tx_bytes: 0,
            });
            return true;
        };
        match &mut self.routes[p] {
            Some(pr) if pr.route == from => pr.rx_bytes += len,
            slot => {
                if !r.newest {
                    self.stats.stale_address_changes += 1;
                    return true;
                }
                if slot.is_none() {
                    // A new path: reply there within the amplification limit until the
                    // challenge is answered.
                    *slot = Some(PathRoute {
                        route: from,
                        validated: false,
                        rx_bytes: len,
                        tx_bytes: 0,
                    });
                }
                probe(sec, &mut self.tokens, p, from, now);
            }
        }
        true
    }

    fn on_handshake(&mut self, now: Instant, from: Route, data: &[u8]) -> bool {
        match &mut self.phase {
            Phase::Handshake { init, .. } => match init.read(data) {
                Ok(est) => {
                    match Answer::decode(&est.answer) {
                        Ok(Answer::Accept { resume }) => {
                            self.conn.set_protection(Protection::new(&est.keys));
                            let mut sec = Security::new(self.id, &est.keys);
                            // Every path at open (module doc).
                            for (p, r) in self.routes.iter().enumerate() {
                                if let Some(r) = r {
                                    probe(&mut sec, &mut self.tokens, p, r.route, now);
                                }
                            }
                            self.sec = Some(sec);
                            self.resume = resume;
                            self.phase = Phase::Open;
                            self.error = None;
                        }
                        Ok(Answer::Refuse { reason }) => {
                            self.error = Some(SessionError::Refused(reason))
                        }
                        Err(e) => self.error = Some(SessionError::Refused(e)),
                    }
                    true
                }
                Err(HandshakeError::Rejected(RejectReason::Stale))
                    if self.stale_restarts < STALE_RESTARTS =>
                {
                    self.wants_restart = true;
                    true
                }
                Err(HandshakeError::Rejected(r)) => {
                    self.error = Some(SessionError::Rejected(r));
                    true
                }
                Err(HandshakeError::Retry) => {
                    // The INIT now carries the cookie: send it at once, from the address
                    // the responder saw (path 0's route).
                    if let Phase::Handshake { next, .. } = &mut self.phase {
                        *next = now;
                    }
                    self.stats.retries += 1;
                    true
                }
                Err(HandshakeError::Auth) => {
                    // Kept until the handshake times out: a forged RESPONSE must not end
                    // it, but if nothing better comes this is the likely cause.
                    self.error = Some(SessionError::BadResponse);
                    self.stats.handshake_ignored += 1;
                    false
                }
                Err(_) => {
                    self.stats.handshake_ignored += 1;
                    false
                }
            },
            Phase::Open => {
                // A repeated INIT (our RESPONSE was lost): answer again with the same
                // RESPONSE, within the amplification budget of that address.
                let resend = self.sec.as_ref().and_then(|s| s.handshake.as_ref());
                match resend {
                    Some((init, resp)) if init.as_slice() == data => {
                        let resp = resp.clone();
                        self.out.push_back((from, resp));
                        true
                    }
                    _ => {
                        self.stats.handshake_ignored += 1;
                        false
                    }
                }
            }
        }
    }

    fn on_control(&mut self, now: Instant, from: Route, data: &[u8]) -> bool {
        let Some(sec) = &mut self.sec else {
            return false;
        };
        let ok = (|| {
            if data.len() != CONTROL_HDR + CONTROL_BODY + TAG_LEN || data[1] != VERSION {
                return None;
            }
            if u64::from_be_bytes(data[2..10].try_into().ok()?) != sec.id {
                return None;
            }
            let seq = u64::from_be_bytes(data[10..18].try_into().ok()?);
            if !sec.window.check(seq) {
                return None;
            }
            let mut buf = data.to_vec();
            let (aad, sealed) = buf.split_at_mut(CONTROL_HDR);
            let body = sec.recv.open(SPACE_CONTROL, 0, seq, aad, sealed).ok()?;
            let (kind, path) = (body[0], usize::from(body[1]));
            let mut token = [0u8; 8];
            token.copy_from_slice(&body[2..10]);
            sec.window.accept(seq);
            Some((kind, path, token))
        })();
        let Some((kind, path, token)) = ok else {
            self.stats.control_rejected += 1;
            return false;
        };
        match kind {
            CHALLENGE => {
                // Echo to where the challenge came from (RFC 9000 §8.2.2).
                let pkt = sec.seal(RESPONSE, path as u8, token);
                self.out.push_back((from, pkt));
                // An authenticated challenge on a path with no address yet gives it one,
                // unvalidated (amplification-limited) until it answers our own challenge.
                let known = self.routes.get(path).copied().flatten().is_some();
                if !known && path < self.conn.path_count() {
                    if self.routes.len() <= path {
                        self.routes.resize(path + 1, None);
                    }
                    self.routes[path] = Some(PathRoute {
                        route: from,
                        validated: false,
                        rx_bytes: data.len() as u64,
                        tx_bytes: 0,
                    });
                    probe(sec, &mut self.tokens, path, from, now);
                }
                true
            }
            RESPONSE => {
                let Some(i) = sec
                    .probes
                    .iter()
                    .position(|q| q.token == token && q.route == from && q.path == path)
                else {
                    self.stats.control_rejected += 1;
                    return false;
                };
                let q = sec.probes.swap_remove(i);
                if self.routes.len() <= q.path {
                    self.routes.resize(q.path + 1, None);
                }
                let old = self.routes[q.path];
                self.routes[q.path] = Some(PathRoute {
                    route: q.route,
                    validated: true,
                    rx_bytes: old.map_or(0, |o| o.rx_bytes),
                    tx_bytes: 0,
                });
                if old.is_none_or(|o| !o.validated) {
                    self.conn.set_path_active(q.path, true);
                }
                self.stats.paths_validated += 1;
                true
            }
            _ => {
                self.stats.control_rejected += 1;
                false
            }
        }
    }

    // ------------------------------------------------------------------ timers

    /// When [`handle_timeout`](Self::handle_timeout) must run next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let mut t = match &self.phase {
            Phase::Handshake { next, .. } => Some(*next),
            Phase::Open => self.conn.poll_timeout(),
        };
        if let Some(sec) = &self.sec {
            for q in &sec.probes {
                t = Some(t.map_or(q.next, |x: Instant| x.min(q.next)));
            }
        }
        t
    }

    /// Runs expired timers.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.is_open() && self.conn.poll_timeout().is_some_and(|t| t <= now) {
            self.conn.handle_timeout(now);
        }
    }

    // ------------------------------------------------------------------ output

    /// The next datagram to send, written into `buf` (at least
    /// [`Connection::max_datagram`] and 1200 bytes long).
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<(Route, usize)> {
        // Queued control and handshake datagrams first.
        while let Some((route, pkt)) = self.out.pop_front() {
            if pkt.len() > buf.len() || !self.budget(route, pkt.len()) {
                self.stats.amplification_limited += 1;
                continue;
            }
            buf[..pkt.len()].copy_from_slice(&pkt);
            return Some((route, pkt.len()));
        }
        if let Phase::Handshake {
            init,
            next,
            backoff,
        } = &mut self.phase
        {
            if *next > now {
                return None;
            }
            *next = now + HANDSHAKE_RTO.saturating_mul(1 << (*backoff).min(6));
            *backoff += 1;
            let route = self.routes.first().copied().flatten()?.route;
            let p = init.packet();
            let n = p.len().min(buf.len());
            buf[..n].copy_from_slice(&p[..n]);
            return Some((route, n));
        }
        if let Some(sec) = &mut self.sec {
            for q in &mut sec.probes {
                if q.next <= now && q.tries < PROBE_TRIES {
                    q.tries += 1;
                    q.next = now + PROBE_INTERVAL;
                    let (route, token, path) = (q.route, q.token, q.path);
                    let pkt = sec.seal(CHALLENGE, path as u8, token);
                    self.stats.challenges_sent += 1;
                    buf[..pkt.len()].copy_from_slice(&pkt);
                    // Challenges count against the budget of unvalidated addresses too,
                    // but are small and few; they are always sent.
                    return Some((route, pkt.len()));
                }
            }
            sec.probes.retain(|q| q.tries < PROBE_TRIES || q.next > now);
        }
        loop {
            let t = self.conn.poll_transmit(now, buf)?;
            let Some(pr) = self.routes.get(t.path).copied().flatten() else {
                continue;
            };
            if !self.budget(pr.route, t.len) {
                self.stats.amplification_limited += 1;
                continue;
            }
            return Some((pr.route, t.len));
        }
    }

    /// Anti-amplification: may `len` bytes go to `route` now? Counts them if so.
    fn budget(&mut self, route: Route, len: usize) -> bool {
        if self.sec.is_none() {
            return true;
        }
        let Some(pr) = self
            .routes
            .iter_mut()
            .flatten()
            .find(|pr| pr.route == route)
        else {
            // The responder's first RESPONSE goes to the INIT's address before any path
            // exists: the INIT (1200 bytes, padded) pays for it.
            return len <= handshake::INIT_MIN_LEN * AMPLIFICATION as usize;
        };
        if pr.validated {
            return true;
        }
        if pr.tx_bytes + len as u64 > AMPLIFICATION * pr.rx_bytes {
            return false;
        }
        pr.tx_bytes += len as u64;
        true
    }
}

/// Starts validating `route` for path `p` (unless already under way), with a token from
/// `tokens` (none left: nothing happens; the driver refills them).
fn probe(sec: &mut Security, tokens: &mut Vec<[u8; 8]>, p: usize, route: Route, now: Instant) {
    // Bounded: an on-path attacker rewriting source addresses cannot make a session
    // probe without end.
    if sec.probes.len() >= MAX_PROBES || sec.probes.iter().any(|q| q.path == p && q.route == route)
    {
        return;
    }
    if let Some(token) = tokens.pop() {
        sec.probes.push(Probe {
            path: p,
            route,
            token,
            next: now,
            tries: 0,
        });
    }
}

impl Security {
    fn new(id: u64, keys: &SessionKeys) -> Self {
        Security {
            id,
            send: PacketKey::new(&keys.send),
            recv: PacketKey::new(&keys.recv),
            next_seq: 0,
            window: ReplayWindow::default(),
            probes: Vec::new(),
            handshake: None,
        }
    }

    fn seal(&mut self, kind: u8, path: u8, token: [u8; 8]) -> Vec<u8> {
        let seq = self.next_seq;
        self.next_seq += 1;
        let mut v = Vec::with_capacity(CONTROL_HDR + CONTROL_BODY + TAG_LEN);
        v.extend_from_slice(&[CONTROL_MAGIC, VERSION]);
        v.extend_from_slice(&self.id.to_be_bytes());
        v.extend_from_slice(&seq.to_be_bytes());
        v.push(kind);
        v.push(path);
        v.extend_from_slice(&token);
        let (aad, body) = v.split_at_mut(CONTROL_HDR);
        let tag = self.send.seal(SPACE_CONTROL, 0, seq, aad, body);
        v.extend_from_slice(&tag);
        v
    }
}

/// The connection id of a datagram of any kind (packet, handshake, control), if it has one.
pub fn conn_id_of(d: &[u8]) -> Option<u64> {
    let at = match *d.first()? {
        handshake::MAGIC => 3,
        CONTROL_MAGIC => 2,
        tributary_proto::wire::MAGIC => 2,
        _ => return None,
    };
    Some(u64::from_be_bytes(d.get(at..at + 8)?.try_into().ok()?))
}
