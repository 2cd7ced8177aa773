//! The event loop: one connection, one UDP socket per local address.

use crate::admission::{Admission, Guard, Verdict};
use crate::negotiate::{Answer, Content, Limits, Offer, Service};
use crate::session::{self, Route, Session};
use crate::{new_connection, NetError};
use ring::rand::{SecureRandom, SystemRandom};
use socket2::{Domain, Protocol, Socket, Type};
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap, HashSet, VecDeque};
use std::mem::MaybeUninit;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration as StdDuration, Instant as StdInstant, SystemTime, UNIX_EPOCH};
use tributary_proto::handshake::{
    self, Credentials, HandshakeError, Initiator, Key, RejectReason, Timestamp,
};
use tributary_proto::trace::Tracer;
use tributary_proto::{Connection, ConnectionConfig, Instant};

/// How often an idle receiver thread looks at the stop flag (bounds the time `drop` takes).
const STOP_POLL: StdDuration = StdDuration::from_millis(50);
/// Datagrams a receiver thread hands over at once, and that the loop handles before it sends
/// what they triggered: large enough to amortise wake-ups, small enough that ACKs leave
/// promptly.
const BATCH: usize = 64;
/// Batches queued between the receiver threads and the loop (so at most 4096 datagrams);
/// beyond it a thread blocks and the kernel socket buffer absorbs (or drops) the excess, as
/// it would without threads.
const QUEUE: usize = 64;
/// Largest datagram read from a socket (the UDP maximum: never truncate).
const MAX_UDP: usize = 65_536;
/// Ephemeral keys of accepted INITs remembered to refuse their replays (32 bytes each).
pub const REPLAY_CACHE: usize = 4096;
/// Least time between two refusals logged for INITs of another wire version (each is
/// counted in [`DriverStats::handshakes_old_version`]; anybody can send them).
const VERSION_LOG_EVERY: tributary_proto::Duration = tributary_proto::Duration::from_secs(10);

/// The timestamp of this process's next INIT: the wall clock (seconds and nanoseconds
/// since the Unix epoch), or one nanosecond after the previous INIT's if the clock did not
/// advance (or went back), so that the INITs of one process are strictly increasing.
pub fn next_timestamp() -> Timestamp {
    static LAST: Mutex<Timestamp> = Mutex::new(Timestamp { secs: 0, nanos: 0 });
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| Timestamp {
            secs: d.as_secs(),
            nanos: d.subsec_nanos(),
        })
        .unwrap_or_default();
    // A poisoned lock still holds a valid timestamp.
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    let t = now.max(last.next());
    *last = t;
    t
}

/// This host's wall clock in nanoseconds since 1970 (0 if it is set before 1970).
fn wall_clock_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// Socket options of the driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SocketOptions {
    /// `SO_RCVBUF` requested for every socket, bytes (the kernel may cap it at
    /// `net.core.rmem_max`). Bursts of a whole congestion window land here.
    pub recv_buffer: usize,
    /// `SO_SNDBUF` requested for every socket, bytes (capped at `net.core.wmem_max`).
    pub send_buffer: usize,
    /// Hand runs of equal-sized datagrams of one path to the kernel in one `sendmsg` with
    /// UDP generic segmentation offload (Linux; turned off by itself if refused).
    pub gso: bool,
    /// Let the kernel coalesce arriving datagrams (UDP GRO, Linux), read many per call.
    pub gro: bool,
}

impl Default for SocketOptions {
    fn default() -> Self {
        SocketOptions {
            recv_buffer: 4 << 20,
            send_buffer: 4 << 20,
            gso: true,
            gro: true,
        }
    }
}

/// Driver counters (each connection keeps its own, see [`Connection::stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DriverStats {
    /// Datagrams read from the sockets.
    pub datagrams_received: u64,
    /// Datagrams dropped (malformed, foreign connection, forged, replayed, violations).
    pub datagrams_dropped: u64,
    /// Datagrams handed to the OS.
    pub datagrams_sent: u64,
    /// `sendmsg` calls that carried several datagrams with GSO.
    pub gso_sends: u64,
    /// Sends the OS refused (counted and treated as losses).
    pub send_errors: u64,
    /// Datagrams for a path with no known remote address (dropped).
    pub unroutable: u64,
    /// Socket read errors (other than timeouts) seen by the receiver threads.
    pub recv_errors: u64,
    /// ICMP "port unreachable" reports (connected sockets: `ECONNREFUSED`).
    pub unreachable: u64,
    /// Handshakes refused (authentication, limits, no room).
    pub handshakes_refused: u64,
    /// Connections accepted.
    pub handshakes_accepted: u64,
    /// INITs dropped without any cryptography because an INIT with the same ephemeral key
    /// was accepted recently (replays).
    pub handshakes_replayed: u64,
    /// Half-open connections (never confirmed by an authenticated packet of the peer: a
    /// replayed INIT, or a sender that vanished after its INIT) dropped to make room for a
    /// newer authenticated handshake when the listener was full.
    pub handshakes_evicted: u64,
    /// RETRYs sent: INITs asked to prove their address first (see [`Admission`]).
    pub retries_sent: u64,
    /// INITs whose cookie did not verify (forged, expired, or from another address).
    pub cookies_invalid: u64,
    /// INITs refused with REJECT "rate limited" (key-exchange budget spent).
    pub handshakes_rate_limited: u64,
    /// INITs that authenticated but carried a timestamp not later than one already accepted
    /// from the same identity (replays that left the ephemeral-key cache, or an earlier
    /// run's): refused with REJECT "stale" before any connection state exists.
    pub handshakes_stale: u64,
    /// INITs that authenticated but were stamped further ahead of this receiver's clock
    /// than its clock tolerance ([`Admission::clock_tolerance`]): REJECT "clock ahead".
    pub handshakes_clock_ahead: u64,
    /// INITs of another wire version (dropped; the first in every 10 s is logged as a
    /// refusal naming both versions).
    pub handshakes_old_version: u64,
    /// Times the loop woke up.
    pub wakeups: u64,
}

/// What a listening driver accepts (protected mode).
#[derive(Debug, Clone)]
pub struct Listener {
    /// Its credentials (private key and accepted peer keys, or a PSK).
    pub creds: Credentials,
    /// Limits every offer is checked against.
    pub limits: Limits,
    /// Most connections at once (further INITs get REJECT "busy").
    pub max_connections: usize,
    /// What is served: files (with the prefix held, to resume) or perf tests. Offers of
    /// anything else are refused with the reason.
    pub service: Service,
    /// Address validation and key-exchange budget ([`Admission::default`]: RETRY under
    /// load, 200 key exchanges per second).
    pub admission: Admission,
}

/// A refused handshake, for the log.
#[derive(Debug, Clone)]
pub struct Refusal {
    /// Who asked.
    pub from: SocketAddr,
    /// Why it was refused.
    pub reason: String,
}

/// Datagrams read from one socket in one go: their bytes back to back in `data`, their
/// sources and lengths in `items`. Batches travel back to their thread for reuse, so the
/// steady state allocates nothing.
#[derive(Default)]
struct Batch {
    socket: usize,
    data: Vec<u8>,
    items: Vec<(SocketAddr, usize)>,
    recv_errors: u64,
    refused: u64,
}

impl Batch {
    fn clear(&mut self) {
        self.data.clear();
        self.items.clear();
        self.recv_errors = 0;
        self.refused = 0;
    }
}

/// Connections driven over real UDP sockets.
///
/// A sender ([`connect`](Self::connect), [`connect_secure`](Self::connect_secure)) has one
/// connection; a receiver ([`listen`](Self::listen), [`listen_secure`](Self::listen_secure))
/// has one (unprotected) or accepts many (protected: one per handshake, demultiplexed by
/// connection id). Call [`UdpDriver::poll_io`] in a loop; between calls, use
/// [`UdpDriver::connection_mut`] (the first connection) or [`UdpDriver::session_mut`] to
/// write or read stream bytes and drain events, then [`UdpDriver::flush`] to send what that
/// produced. Routing and path validation: see [`Session`].
pub struct UdpDriver {
    sessions: HashMap<u64, Session>,
    /// The sender's connection, or the first one accepted.
    primary: Option<u64>,
    listener: Option<Listener>,
    accepted: VecDeque<u64>,
    refusals: VecDeque<Refusal>,
    /// Sessions that received datagrams or had timers since the last flush.
    dirty: Vec<u64>,
    /// Sessions that received datagrams or had timers since the last
    /// [`take_touched`](UdpDriver::take_touched).
    touched: Vec<u64>,
    touched_set: HashSet<u64>,
    /// Each session's earliest deadline (lazy: an entry whose session has a later deadline
    /// now, or no longer exists, is dropped when it comes up).
    timers: BinaryHeap<Reverse<(Instant, u64)>>,
    /// The deadline each session has in `timers`.
    armed: HashMap<u64, Instant>,
    replays: ReplayCache,
    /// Ephemeral keys of INITs refused as stale: a repeat gets REJECT "stale" again
    /// without a key exchange.
    stale: ReplayCache,
    /// Greatest INIT timestamp accepted per identity (see [`Freshness`]).
    freshness: Freshness,
    /// When an INIT of another version was last logged.
    version_logged: Option<Instant>,
    guard: Guard,
    sockets: Vec<Arc<UdpSocket>>,
    local_addrs: Vec<SocketAddr>,
    rx: Receiver<Batch>,
    /// Per socket: returns handled batches to its thread.
    pools: Vec<Sender<Batch>>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    epoch: StdInstant,
    /// Outgoing datagrams, back to back (room for one GSO run).
    buf: Vec<u8>,
    /// Use UDP GSO (cleared if the kernel refuses it).
    gso: bool,
    stats: DriverStats,
    /// The socket that first reported ICMP port unreachable.
    unreachable_socket: Option<usize>,
    /// Gives each new connection a tracer ([`UdpDriver::set_tracer_factory`]).
    tracers: Option<TracerFactory>,
}

/// Makes a tracer for the connection with the given id (or none).
type TracerFactory = Box<dyn FnMut(u64) -> Option<Box<dyn Tracer>> + Send>;

impl std::fmt::Debug for UdpDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UdpDriver")
            .field("local_addrs", &self.local_addrs)
            .field("sessions", &self.sessions.len())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// 32 bytes from the OS's generator.
pub(crate) fn os_random<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    // The OS generator does not fail on any supported system; if it did, a zero seed
    // would be catastrophic, so stop.
    SystemRandom::new()
        .fill(&mut b)
        .expect("the operating system's random number generator failed");
    b
}

impl UdpDriver {
    /// An unprotected sending endpoint: path `i` binds `paths[i].0` and sends to
    /// `paths[i].1`. Both ends must be configured alike (no handshake). As with
    /// [`connect_secure`](Self::connect_secure), the sockets are connected to their remote,
    /// so that an ICMP "port unreachable" is reported ([`DriverStats::unreachable`]).
    pub fn connect(
        cfg: ConnectionConfig,
        paths: &[(SocketAddr, SocketAddr)],
        opts: SocketOptions,
    ) -> Result<Self, NetError> {
        if paths.is_empty() {
            return Err(NetError::NoPaths("path"));
        }
        let conn = new_connection(cfg, paths.len())?;
        let locals: Vec<SocketAddr> = paths.iter().map(|p| p.0).collect();
        let remotes: Vec<SocketAddr> = paths.iter().map(|p| p.1).collect();
        let mut d = Self::bind(&locals, opts, Some(&remotes))?;
        let routes = Self::routes(paths);
        let s = Session::plain(conn, &routes);
        d.insert(s);
        Ok(d)
    }

    /// A protected sending endpoint: runs the handshake with `creds` (which pin the
    /// receiver's key, or hold the PSK), offering `cfg`, `paths.len()` paths and `content`;
    /// data flows once the receiver accepted. The connection id is drawn at random. The
    /// sockets are connected to their remote, so that an ICMP "port unreachable" is
    /// reported ([`DriverStats::unreachable`]).
    ///
    /// `cfg` is checked against the default [`Limits`] (256 MiB of buffer per connection);
    /// [`connect_secure_with_limits`](Self::connect_secure_with_limits) takes this end's own.
    pub fn connect_secure(
        cfg: ConnectionConfig,
        paths: &[(SocketAddr, SocketAddr)],
        opts: SocketOptions,
        creds: &Credentials,
        content: Content,
    ) -> Result<Self, NetError> {
        let limits = Limits {
            max_paths: 255,
            ..Limits::default()
        };
        Self::connect_secure_with_limits(cfg, paths, opts, creds, content, &limits)
    }

    /// [`connect_secure`](Self::connect_secure), checking `cfg` against `limits` (this
    /// end's resource limits, e.g. a larger [`Limits::max_buffer`]) before anything is
    /// allocated: a configuration beyond them is [`NetError::Limit`], naming the limit.
    pub fn connect_secure_with_limits(
        mut cfg: ConnectionConfig,
        paths: &[(SocketAddr, SocketAddr)],
        opts: SocketOptions,
        creds: &Credentials,
        content: Content,
        limits: &Limits,
    ) -> Result<Self, NetError> {
        if paths.is_empty() {
            return Err(NetError::NoPaths("path"));
        }
        cfg.conn_id = u64::from_be_bytes(os_random());
        cfg.seed = u64::from_be_bytes(os_random());
        limits.check(&cfg, paths.len()).map_err(NetError::Limit)?;
        let offer = Offer {
            config: cfg.clone(),
            paths: paths.len(),
            content,
        }
        .encode()?;
        let init = Initiator::new(creds, cfg.conn_id, &offer, os_random(), next_timestamp())
            .map_err(|e| NetError::Handshake(e.to_string()))?;
        let conn = new_connection(cfg, paths.len())?;
        let locals: Vec<SocketAddr> = paths.iter().map(|p| p.0).collect();
        let remotes: Vec<SocketAddr> = paths.iter().map(|p| p.1).collect();
        let mut d = Self::bind(&locals, opts, Some(&remotes))?;
        let routes = Self::routes(paths);
        let now = d.now();
        let mut s = Session::initiator(conn, init, &routes, now);
        s.add_tokens((0..8).map(|_| os_random()));
        d.insert(s);
        Ok(d)
    }

    fn routes(paths: &[(SocketAddr, SocketAddr)]) -> Vec<Route> {
        paths
            .iter()
            .enumerate()
            .map(|(i, &(_, remote))| Route { socket: i, remote })
            .collect()
    }

    fn insert(&mut self, mut s: Session) {
        let id = s.id();
        if let Some(f) = &mut self.tracers {
            if let Some(t) = f(id) {
                s.connection_mut().set_tracer(t);
            }
        }
        self.primary.get_or_insert(id);
        self.sessions.insert(id, s);
        self.arm(id);
    }

    /// Puts session `id`'s deadline in the timer heap, unless an earlier or equal one is
    /// there (that one fires, finds the session not due, and re-arms it).
    fn arm(&mut self, id: u64) {
        let Some(t) = self.sessions.get(&id).and_then(Session::poll_timeout) else {
            return;
        };
        if self.armed.get(&id).is_none_or(|&a| t < a) {
            self.armed.insert(id, t);
            self.timers.push(Reverse((t, id)));
        }
    }

    fn touch(&mut self, id: u64) {
        if self.touched_set.insert(id) {
            self.touched.push(id);
        }
    }

    /// The connections that received datagrams or ran timers since the last call (each
    /// once), appended to `out`: a server visits only these instead of all.
    pub fn take_touched(&mut self, out: &mut Vec<u64>) {
        out.append(&mut self.touched);
        self.touched_set.clear();
    }

    /// An unprotected receiving endpoint listening on every address of `addrs`; it learns
    /// the paths and the peer's addresses from the datagrams that arrive.
    pub fn listen(
        cfg: ConnectionConfig,
        addrs: &[SocketAddr],
        opts: SocketOptions,
    ) -> Result<Self, NetError> {
        if addrs.is_empty() {
            return Err(NetError::NoPaths("listening address"));
        }
        let conn = new_connection(cfg, 0)?;
        let mut d = Self::bind(addrs, opts, None)?;
        d.insert(Session::plain(conn, &[]));
        Ok(d)
    }

    /// A protected receiving endpoint: accepts handshakes that authenticate with
    /// `listener.creds` and whose offer fits `listener.limits`, up to
    /// `listener.max_connections` at once. New connections appear in
    /// [`accept`](Self::accept).
    pub fn listen_secure(
        addrs: &[SocketAddr],
        opts: SocketOptions,
        listener: Listener,
    ) -> Result<Self, NetError> {
        if addrs.is_empty() {
            return Err(NetError::NoPaths("listening address"));
        }
        Self::bind(addrs, opts, None).map(|mut d| {
            d.listener = Some(listener);
            d
        })
    }

    fn bind(
        addrs: &[SocketAddr],
        opts: SocketOptions,
        connect_to: Option<&[SocketAddr]>,
    ) -> Result<Self, NetError> {
        let mut sockets = Vec::with_capacity(addrs.len());
        let mut local_addrs = Vec::with_capacity(addrs.len());
        for (i, &addr) in addrs.iter().enumerate() {
            let s = open_socket(addr, opts)?;
            if let Some(r) = connect_to.and_then(|c| c.get(i)) {
                s.connect(r)
                    .map_err(|error| NetError::Setup { addr, error })?;
            }
            let local = s
                .local_addr()
                .map_err(|error| NetError::Setup { addr, error })?;
            local_addrs.push(local);
            sockets.push(Arc::new(s));
        }
        let (tx, rx) = mpsc::sync_channel(QUEUE);
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::with_capacity(sockets.len());
        let mut pools = Vec::with_capacity(sockets.len());
        for (i, s) in sockets.iter().enumerate() {
            let (pool_tx, pool_rx) = mpsc::channel();
            pools.push(pool_tx);
            let addr = local_addrs[i];
            let h = s
                .try_clone()
                .map(Socket::from)
                .and_then(|s| {
                    let (tx, flag) = (tx.clone(), Arc::clone(&stop));
                    std::thread::Builder::new()
                        .name(format!("udp-rx-{addr}"))
                        .spawn(move || receive_loop(i, &s, &tx, &pool_rx, &flag))
                })
                .map_err(|error| NetError::Setup { addr, error });
            match h {
                Ok(h) => threads.push(h),
                Err(e) => {
                    stop.store(true, Ordering::Relaxed);
                    for t in threads {
                        let _ = t.join();
                    }
                    return Err(e);
                }
            }
        }
        let gso = opts.gso && gso::MAX_SEGMENTS > 1;
        Ok(UdpDriver {
            sessions: HashMap::new(),
            primary: None,
            listener: None,
            accepted: VecDeque::new(),
            refusals: VecDeque::new(),
            dirty: Vec::new(),
            touched: Vec::new(),
            touched_set: HashSet::new(),
            timers: BinaryHeap::new(),
            armed: HashMap::new(),
            replays: ReplayCache::default(),
            stale: ReplayCache::default(),
            freshness: Freshness::default(),
            version_logged: None,
            guard: Guard::new(os_random()),
            sockets,
            local_addrs,
            rx,
            pools,
            stop,
            threads,
            epoch: StdInstant::now(),
            buf: vec![0; gso::MAX_BYTES.max(MAX_UDP) + MAX_UDP],
            gso,
            stats: DriverStats::default(),
            unreachable_socket: None,
            tracers: None,
        })
    }

    /// The bound local addresses, one per socket (with the OS-chosen port for port 0).
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.local_addrs
    }

    /// The remote address of the first socket that reported ICMP port unreachable
    /// ([`DriverStats::unreachable`]), if any did: a sender's socket is connected to it.
    pub fn unreachable(&self) -> Option<SocketAddr> {
        self.unreachable_socket
            .and_then(|i| self.sockets.get(i))
            .and_then(|s| s.peer_addr().ok())
    }

    /// The remote address path `path` of the first connection currently sends to.
    pub fn remote(&self, path: usize) -> Option<SocketAddr> {
        self.primary_session().and_then(|s| s.remote(path))
    }

    fn primary_session(&self) -> Option<&Session> {
        self.primary.and_then(|id| self.sessions.get(&id))
    }

    /// The first connection (the sender's, or the first accepted), if any yet.
    pub fn session(&self) -> Option<&Session> {
        self.primary_session()
    }

    /// The first connection, mutable.
    pub fn session_mut(&mut self) -> Option<&mut Session> {
        self.primary.and_then(|id| self.sessions.get_mut(&id))
    }

    /// Connection `id`.
    pub fn session_by_id(&self, id: u64) -> Option<&Session> {
        self.sessions.get(&id)
    }

    /// Connection `id`, mutable.
    pub fn session_by_id_mut(&mut self, id: u64) -> Option<&mut Session> {
        self.sessions.get_mut(&id)
    }

    /// Traces connections: `f(connection id)` is called now for each connection that exists
    /// (a sender's, an unprotected receiver's) and later for each one accepted; the tracer it
    /// returns, if any, receives that connection's events (see
    /// [`crate::qlog::QlogDir::factory`] for qlog files). Tracing costs nothing when unset.
    pub fn set_tracer_factory(
        &mut self,
        mut f: impl FnMut(u64) -> Option<Box<dyn Tracer>> + Send + 'static,
    ) {
        let mut ids: Vec<u64> = self.sessions.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            if let (Some(t), Some(s)) = (f(id), self.sessions.get_mut(&id)) {
                s.connection_mut().set_tracer(t);
            }
        }
        self.tracers = Some(Box::new(f));
    }

    /// The first connection's core, if any yet.
    pub fn connection(&self) -> Option<&Connection> {
        self.primary_session().map(Session::connection)
    }

    /// The first connection's core, to write, read, close or drain events. Call
    /// [`UdpDriver::flush`] afterwards so that what this produced is sent.
    pub fn connection_mut(&mut self) -> Option<&mut Connection> {
        self.session_mut().map(Session::connection_mut)
    }

    /// Remembers the ephemeral keys of the last `n` accepted INITs (default
    /// [`REPLAY_CACHE`]) to drop their replays before any key exchange. A smaller cache
    /// costs memory less and lets older replays reach the key exchange, where the
    /// timestamp check refuses them (tests use it to show that).
    pub fn set_replay_cache(&mut self, n: usize) {
        self.replays.capacity = n;
        self.replays.trim();
    }

    /// The next connection accepted since the last call (listening, protected).
    pub fn accept(&mut self) -> Option<u64> {
        self.accepted.pop_front()
    }

    /// The next handshake refused since the last call.
    pub fn refusal(&mut self) -> Option<Refusal> {
        self.refusals.pop_front()
    }

    /// Forgets connection `id` (its datagrams are dropped from now on).
    pub fn remove(&mut self, id: u64) -> Option<Session> {
        if self.primary == Some(id) {
            self.primary = None;
        }
        self.armed.remove(&id);
        if self.touched_set.remove(&id) {
            self.touched.retain(|&t| t != id);
        }
        self.sessions.remove(&id)
    }

    /// Number of connections.
    pub fn session_count(&self) -> usize {
        self.sessions.len()
    }

    /// Driver counters.
    pub fn stats(&self) -> DriverStats {
        DriverStats {
            retries_sent: self.guard.retries_sent,
            cookies_invalid: self.guard.cookies_invalid,
            handshakes_rate_limited: self.guard.rate_limited,
            ..self.stats
        }
    }

    /// The core's clock: nanoseconds since the driver was created.
    pub fn now(&self) -> Instant {
        let ns = self.epoch.elapsed().as_nanos();
        Instant::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
    }

    /// Waits until a datagram arrives, a connection's timer expires, or `max_wait` passes;
    /// handles up to a batch of queued datagrams and the timers, and sends what they
    /// triggered. Returns after one batch so that the caller can move stream bytes in
    /// between (a receiver that only read once the queue ran dry would close its own
    /// window under a steady stream). Returns an error only if every receiver thread has
    /// stopped.
    pub fn poll_io(&mut self, max_wait: StdDuration) -> Result<(), NetError> {
        self.poll_input(max_wait)?;
        let dirty = std::mem::take(&mut self.dirty);
        for &id in &dirty {
            self.flush_session(id);
        }
        self.dirty = dirty;
        self.dirty.clear();
        Ok(())
    }

    /// [`UdpDriver::poll_io`] without its sending: the datagrams and timers are handled, and
    /// what they trigger goes out at the caller's next [`UdpDriver::flush`] (which the caller
    /// must make). For a loop whose application reacts to the input — a receiver that reads,
    /// freeing window, a sender that writes into the window an acknowledgement opened — so
    /// that the connection transmits after it, as the simulator orders them (application,
    /// then transmissions): a receiver's ACK then advertises the window its read opened
    /// instead of the one before (measured on real sockets, docs/emulate.md).
    pub fn poll_input(&mut self, max_wait: StdDuration) -> Result<(), NetError> {
        let now = self.now();
        let mut wait = max_wait;
        if let Some(Reverse((t, _))) = self.timers.peek() {
            wait = wait.min(StdDuration::from_nanos(t.saturating_since(now).as_nanos()));
        }
        let first = if wait.is_zero() {
            match self.rx.try_recv() {
                Ok(m) => Some(m),
                Err(TryRecvError::Empty) => None,
                Err(TryRecvError::Disconnected) => return Err(NetError::ReceiversGone),
            }
        } else {
            match self.rx.recv_timeout(wait) {
                Ok(m) => Some(m),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => return Err(NetError::ReceiversGone),
            }
        };
        self.stats.wakeups += 1;
        let mut handled = 0;
        let mut next = first;
        while let Some(b) = next.take() {
            handled += b.items.len();
            self.on_batch(b);
            if handled < BATCH {
                next = self.rx.try_recv().ok();
            }
        }
        self.on_timer();
        Ok(())
    }

    /// Runs the timers that are due: O(log n) per due deadline, not a scan of every
    /// connection.
    fn on_timer(&mut self) {
        let now = self.now();
        while let Some(&Reverse((t, id))) = self.timers.peek() {
            if t > now {
                break;
            }
            self.timers.pop();
            if self.armed.get(&id) != Some(&t) {
                continue; // stale: superseded by an earlier deadline, or removed
            }
            self.armed.remove(&id);
            let Some(s) = self.sessions.get_mut(&id) else {
                continue;
            };
            if s.poll_timeout().is_some_and(|d| d <= now) {
                s.handle_timeout(now);
                if !self.dirty.contains(&id) {
                    self.dirty.push(id);
                }
                self.touch(id);
            } else {
                self.arm(id);
            }
        }
    }

    fn on_batch(&mut self, mut b: Batch) {
        self.stats.recv_errors += b.recv_errors;
        self.stats.unreachable += b.refused;
        if b.refused > 0 {
            self.unreachable_socket.get_or_insert(b.socket);
        }
        let mut at = 0;
        for &(from, len) in &b.items {
            // Decrypted in place: the batch's bytes are not needed afterwards.
            let data = &mut b.data[at..at + len];
            at += len;
            self.stats.datagrams_received += 1;
            let now = self.now();
            let route = Route {
                socket: b.socket,
                remote: from,
            };
            let ok = match session::conn_id_of(data) {
                Some(id) => match self.sessions.get_mut(&id) {
                    Some(s) => {
                        let ok = s.handle_datagram_mut(now, route, data);
                        if s.wants_restart() {
                            // REJECT "stale": a new INIT, later timestamp, new ephemeral key.
                            s.restart_handshake(now, os_random(), next_timestamp());
                        }
                        if !self.dirty.contains(&id) {
                            self.dirty.push(id);
                        }
                        self.touch(id);
                        ok
                    }
                    None => self.on_new(route, data),
                },
                None => false,
            };
            if !ok {
                self.stats.datagrams_dropped += 1;
            }
        }
        b.clear();
        // The thread may be gone (it stops on its own errors); then the batch is dropped.
        let _ = self.pools[b.socket].send(b);
    }

    /// A datagram for no known connection: an INIT is a new connection if it authenticates
    /// and its offer fits the limits.
    fn on_new(&mut self, from: Route, data: &[u8]) -> bool {
        let Some(l) = &self.listener else {
            return false;
        };
        let (conn_id, noise, cookie) = match handshake::parse(data) {
            Ok(handshake::Message::Init {
                conn_id,
                noise,
                cookie,
                ..
            }) => (conn_id, noise, cookie),
            Err(e @ HandshakeError::Version(_)) if data.get(2) == Some(&handshake::KIND_INIT) => {
                // An INIT of another version: no answer (that sender could not read one of
                // this version), but the receiver's user learns why nobody connects.
                self.stats.handshakes_old_version += 1;
                let now = self.now();
                if self
                    .version_logged
                    .is_none_or(|t| now.saturating_since(t) >= VERSION_LOG_EVERY)
                {
                    self.version_logged = Some(now);
                    self.refusals.push_back(Refusal {
                        from: from.remote,
                        reason: e.to_string(),
                    });
                }
                return false;
            }
            _ => return false,
        };
        // Every pattern's first message starts with the initiator's ephemeral public key,
        // fresh for every handshake: an accepted one seen again is a replay. Dropped before
        // any key exchange, and without an answer.
        let ephemeral: Option<[u8; 32]> = noise.get(..32).and_then(|e| e.try_into().ok());
        if ephemeral.is_some_and(|e| self.replays.contains(&e)) {
            self.stats.handshakes_replayed += 1;
            return false;
        }
        // One refused as stale, again: the same REJECT (12 bytes, smaller than the INIT),
        // so that a genuine sender whose REJECT was lost still learns it, and no key
        // exchange; counted as a replay, not logged again.
        if ephemeral.is_some_and(|e| self.stale.contains(&e)) {
            self.stats.handshakes_replayed += 1;
            self.send_direct(
                from,
                &handshake::reject_packet(conn_id, RejectReason::Stale),
            );
            return false;
        }
        // Address validation and the key-exchange budget (crate::admission), before any
        // key exchange: RETRY (32 bytes) and REJECT are smaller than the 1200-byte INIT.
        let adm = l.admission;
        let now = self.now();
        match self.guard.judge(&adm, now, conn_id, from.remote, cookie) {
            Verdict::Admit => {}
            Verdict::Retry(c) => {
                self.send_direct(from, &handshake::retry_packet(conn_id, &c));
                return false;
            }
            Verdict::OverBudget => {
                self.refuse(
                    from,
                    conn_id,
                    RejectReason::RateLimited,
                    "key-exchange budget spent (rate limited)".into(),
                );
                return false;
            }
        }
        let Some(l) = &self.listener else {
            return false;
        };
        // REJECT and refusal answers are smaller than the 1200-byte INIT: no amplification.
        // When full, a half-open connection (nobody has shown it holds its keys: a replayed
        // INIT of an earlier run, whose ephemeral key this process never saw, or a sender
        // that vanished) gives way to an INIT that authenticates and is fresh (its timestamp
        // later than any accepted from its identity, below), preferably one of the same
        // identity; a confirmed one never does. Without this, one replayed INIT would hold
        // `recv --out`'s only slot until its idle timeout.
        let evict = if self.sessions.len() >= l.max_connections {
            let oldest = self
                .sessions
                .values()
                .filter(|s| s.origin().is_some() && !s.is_confirmed())
                .min_by_key(|s| (s.born, s.id()))
                .map(Session::id);
            match oldest {
                Some(id) => Some(id),
                None => {
                    self.refuse(from, conn_id, RejectReason::Busy, "no room (busy)".into());
                    return false;
                }
            }
        } else {
            None
        };
        let a = match handshake::accept(&l.creds, data, os_random()) {
            Ok(a) => a,
            Err(e) => {
                match e.reject_reason() {
                    Some(r) => self.refuse(from, conn_id, r, e.to_string()),
                    None => self.stats.handshakes_refused += 1,
                }
                return false;
            }
        };
        // WireGuard's rule (Donenfeld, NDSS 2017, §5.1) with a tolerance for identities
        // shared by hosts whose clocks differ (`Freshness`): an authenticated INIT must be
        // later than every one accepted before from its identity, or at most the clock
        // tolerance older and not accepted before, so an INIT replayed after it left the
        // ephemeral-key cache, or from an earlier run of this receiver once that identity
        // connected, creates nothing. Answered with REJECT "stale" (12 bytes, only heeded by
        // the owner of the connection id: a genuine sender that lost a race with another of
        // the same identity starts again with a later timestamp). One too far ahead of this
        // receiver's clock gets REJECT "clock ahead" (it would lock the identity's other
        // hosts out until the receiver restarts).
        let identity = a.peer;
        let tolerance = adm.clock_tolerance.as_nanos();
        let stamp = a.timestamp.as_nanos();
        let eph = ephemeral.unwrap_or_default();
        let clock = wall_clock_nanos();
        let verdict = self
            .freshness
            .judge(&identity, stamp, &eph, clock, tolerance);
        match verdict {
            Freshening::Stale => {
                self.stats.handshakes_stale += 1;
                if let Some(e) = ephemeral {
                    self.stale.insert(e);
                }
                self.refuse(
                    from,
                    conn_id,
                    RejectReason::Stale,
                    format!(
                        "stale handshake (timestamp {}.{:09} not later than one accepted from \
                         this identity, beyond the clock tolerance of {:?}, or accepted \
                         before: a replay, or a sender whose clock is behind)",
                        a.timestamp.secs, a.timestamp.nanos, adm.clock_tolerance
                    ),
                );
                return false;
            }
            Freshening::Ahead => {
                self.stats.handshakes_clock_ahead += 1;
                let ahead = stamp.saturating_sub(clock) / 1_000_000;
                self.refuse(
                    from,
                    conn_id,
                    RejectReason::ClockAhead,
                    format!(
                        "handshake stamped {}.{:09}, {}.{:03} s ahead of this clock (tolerance \
                         {:?}): a sender's clock, or this one, is wrong",
                        a.timestamp.secs,
                        a.timestamp.nanos,
                        ahead / 1000,
                        ahead % 1000,
                        adm.clock_tolerance
                    ),
                );
                return false;
            }
            // Not newer than what holds the listener's places: only free room.
            Freshening::Tolerated if evict.is_some() => {
                self.refuse(from, conn_id, RejectReason::Busy, "no room (busy)".into());
                return false;
            }
            Freshening::Newest | Freshening::Tolerated => {}
        }
        self.freshness.remember(identity, stamp, eph, tolerance);
        if let Some(e) = ephemeral {
            self.replays.insert(e);
        }
        let Some(l) = &self.listener else {
            return false;
        };
        let limits = l.limits;
        let service = l.service.clone();
        let offer = Offer::decode(&a.offer);
        let checked = offer.and_then(|o| limits.check(&o.config, o.paths).map(|()| o));
        let served = checked.and_then(|o| service.check(&o.content).map(|r| (o, r)));
        let built = served.and_then(|(o, resume)| {
            let cfg = ConnectionConfig {
                conn_id,
                seed: u64::from_be_bytes(os_random()),
                ..o.config.clone()
            };
            // Every offered path exists from the start (so that this end can send on a
            // path before it carried data: perf's reverse direction); each is used once
            // its address is validated (see `Session::responder`).
            Connection::new(cfg, o.paths)
                .map(|c| (o, c, resume))
                .map_err(|e| e.to_string())
        });
        let peer = a.peer;
        match built {
            Err(reason) => {
                if let Ok((_, pkt)) = a.respond(
                    &Answer::Refuse {
                        reason: reason.clone(),
                    }
                    .encode(),
                ) {
                    self.send_direct(from, &pkt);
                }
                self.stats.handshakes_refused += 1;
                self.refusals.push_back(Refusal {
                    from: from.remote,
                    reason: format!("offer refused: {reason}"),
                });
                false
            }
            Ok((offer, conn, resume)) => {
                let Ok((keys, pkt)) = a.respond(&Answer::Accept { resume }.encode()) else {
                    return false;
                };
                if let Some(old) = evict {
                    // A half-open connection of the same identity gives way first: this
                    // INIT is newer than the one that made it.
                    let same = self
                        .sessions
                        .values()
                        .filter(|s| {
                            s.origin().is_some()
                                && !s.is_confirmed()
                                && s.peer_key() == identity.as_ref()
                        })
                        .min_by_key(|s| (s.born, s.id()))
                        .map(Session::id);
                    self.evict(same.unwrap_or(old));
                }
                let mut s = Session::responder(conn_id, conn, &keys, data, pkt, from);
                s.born = self.now();
                s.add_tokens((0..8).map(|_| os_random()));
                s.set_offer(offer, peer);
                self.insert(s);
                self.accepted.push_back(conn_id);
                self.dirty.push(conn_id);
                self.touch(conn_id);
                self.stats.handshakes_accepted += 1;
                true
            }
        }
    }

    /// Drops half-open session `id` for a newer handshake (see `on_new`), with a refusal
    /// that says so.
    fn evict(&mut self, id: u64) {
        let from = self.sessions.get(&id).and_then(Session::origin);
        self.accepted.retain(|&a| a != id);
        self.dirty.retain(|&a| a != id);
        self.remove(id);
        self.stats.handshakes_evicted += 1;
        if let Some(from) = from {
            self.refusals.push_back(Refusal {
                from,
                reason: format!(
                    "half-open connection {id:016x} dropped for a newer handshake (no \
                     authenticated packet came after its INIT: a replay, or a sender that \
                     vanished)"
                ),
            });
        }
    }

    fn refuse(&mut self, from: Route, conn_id: u64, r: RejectReason, why: String) {
        self.stats.handshakes_refused += 1;
        self.send_direct(from, &handshake::reject_packet(conn_id, r));
        self.refusals.push_back(Refusal {
            from: from.remote,
            reason: why,
        });
    }

    fn send_direct(&mut self, to: Route, pkt: &[u8]) {
        match self.sockets[to.socket].send_to(pkt, to.remote) {
            Ok(_) => self.stats.datagrams_sent += 1,
            Err(_) => self.stats.send_errors += 1,
        }
    }

    /// Closes the first connection: sends a CLOSE frame with `code` on every path (fire and
    /// forget).
    pub fn close(&mut self, code: u64) {
        if let Some(c) = self.connection_mut() {
            c.close_connection(code);
        }
        self.flush();
    }

    /// Sends every datagram every connection has ready.
    pub fn flush(&mut self) {
        let ids: Vec<u64> = self.sessions.keys().copied().collect();
        for id in ids {
            self.flush_session(id);
        }
        self.dirty.clear();
    }

    /// Sends what each of the connections `ids` has ready.
    pub fn flush_some(&mut self, ids: &[u64]) {
        for &id in ids {
            self.flush_session(id);
        }
    }

    /// Sends every datagram connection `id` has ready. Consecutive datagrams of one route
    /// and one size (a flight of data packets) are written back to back and, with GSO,
    /// handed to the kernel in one `sendmsg` (the last one of a run may be shorter, as GSO
    /// allows).
    pub fn flush_session(&mut self, id: u64) {
        let Some(s) = self.sessions.get_mut(&id) else {
            return;
        };
        if s.needs_tokens() {
            s.add_tokens((0..8).map(|_| os_random()));
        }
        let maxd = s.connection().max_datagram().max(handshake::INIT_MIN_LEN);
        let mut run: Option<Run> = None;
        let mut used = 0;
        let epoch = self.epoch;
        loop {
            let ns = epoch.elapsed().as_nanos();
            let now = Instant::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX));
            let Some((route, len)) = s.poll_transmit(now, &mut self.buf[used..used + maxd]) else {
                break;
            };
            match &mut run {
                Some(r)
                    if r.route == route
                        && len <= r.segment
                        && r.count < gso::MAX_SEGMENTS
                        && used + len <= gso::MAX_BYTES =>
                {
                    r.count += 1;
                    used += len;
                    if len < r.segment {
                        let r = *r;
                        send_run(
                            &self.sockets,
                            &mut self.gso,
                            &mut self.stats,
                            &mut self.unreachable_socket,
                            &self.buf,
                            &r,
                            used,
                        );
                        (run, used) = (None, 0);
                    }
                }
                Some(r) => {
                    // A different route or a larger datagram: send the run, start anew.
                    let r = *r;
                    send_run(
                        &self.sockets,
                        &mut self.gso,
                        &mut self.stats,
                        &mut self.unreachable_socket,
                        &self.buf,
                        &r,
                        used,
                    );
                    self.buf.copy_within(used..used + len, 0);
                    run = Some(Run::new(route, len));
                    used = len;
                }
                None => {
                    run = Some(Run::new(route, len));
                    used = len;
                }
            }
            if used + maxd > self.buf.len() {
                if let Some(r) = run.take() {
                    send_run(
                        &self.sockets,
                        &mut self.gso,
                        &mut self.stats,
                        &mut self.unreachable_socket,
                        &self.buf,
                        &r,
                        used,
                    );
                }
                used = 0;
            }
        }
        if let Some(r) = run {
            send_run(
                &self.sockets,
                &mut self.gso,
                &mut self.stats,
                &mut self.unreachable_socket,
                &self.buf,
                &r,
                used,
            );
        }
        // Sending may move the session's deadlines (RTO armed, persist probe).
        self.arm(id);
    }
}

/// INIT timestamps accepted from each identity: the initiator's static public key (IK,
/// IKpsk2), or, with a pre-shared key only (NNpsk0), the one identity "holder of the PSK"
/// (`None`): NNpsk0 authenticates no individual sender. Only INITs that authenticated are
/// entered, so the map holds at most one entry per accepted peer key plus one: its bound is
/// the listener's configuration, and it never evicts (an evicted entry would let that
/// identity's old INITs in again). In memory: a restarted receiver starts empty.
///
/// WireGuard's rule (Donenfeld, NDSS 2017, §5.1) accepts only an INIT later than every one
/// accepted before from its identity. Hosts that share a key (one PSK on several hosts)
/// with clocks apart would then lock each other out, so an INIT up to the clock tolerance
/// `W` older than the latest is accepted too, unless this very INIT (timestamp and
/// ephemeral key) was accepted before: every INIT accepted within `W` of the latest is
/// kept, so a replay inside the window is always recognised, whatever became of the
/// ephemeral-key cache. The set is bounded by the key-exchange budget times `W` and by
/// [`FRESH_WINDOW_MAX`] per identity; beyond that the oldest entry leaves and `floor`
/// rises to it (nothing at or below the floor is accepted again). `W = 0` is WireGuard's
/// rule exactly.
struct Freshness {
    ids: HashMap<Option<Key>, Fresh>,
    /// Most entries per identity's window ([`FRESH_WINDOW_MAX`]; tests lower it).
    cap: usize,
}

impl Default for Freshness {
    fn default() -> Self {
        Freshness {
            ids: HashMap::new(),
            cap: FRESH_WINDOW_MAX,
        }
    }
}

/// One identity's timestamps (see [`Freshness`]).
struct Fresh {
    /// The latest accepted, in nanoseconds since 1970.
    latest: u128,
    /// Nothing at or below this is accepted (entries that left a full window).
    floor: u128,
    /// Accepted INITs newer than `latest - W`: (timestamp, ephemeral key).
    window: BTreeSet<(u128, [u8; 32])>,
}

/// Most INITs one identity keeps in its tolerance window (48 B each): at the default
/// budget of 200 key exchanges per second and 60 s of tolerance, 12,000 fit.
const FRESH_WINDOW_MAX: usize = 65_536;

/// What [`Freshness::judge`] says about an authenticated INIT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Freshening {
    /// Later than every INIT accepted from its identity: it may take a half-open
    /// connection's place when the listener is full.
    Newest,
    /// Within the tolerance below the latest and not seen before: accepted, but it takes
    /// only free room (it is not newer than what is there).
    Tolerated,
    /// At or below the window, or this very INIT again: REJECT "stale".
    Stale,
    /// Ahead of the receiver's clock by more than the tolerance: REJECT "clock ahead".
    Ahead,
}

impl Freshness {
    /// Judges the INIT of `who` stamped `t` (nanoseconds since 1970) with ephemeral key
    /// `e`, at receiver wall-clock time `now`, with tolerance `w` (nanoseconds; zero:
    /// WireGuard's rule, and no bound ahead). Nothing is remembered: see
    /// [`Freshness::remember`].
    fn judge(&self, who: &Option<Key>, t: u128, e: &[u8; 32], now: u128, w: u128) -> Freshening {
        if w > 0 && t > now.saturating_add(w) {
            return Freshening::Ahead;
        }
        let Some(f) = self.ids.get(who) else {
            return Freshening::Newest;
        };
        if t <= f.floor || t <= f.latest.saturating_sub(w) || f.window.contains(&(t, *e)) {
            Freshening::Stale
        } else if t > f.latest {
            Freshening::Newest
        } else {
            Freshening::Tolerated
        }
    }

    /// Remembers an INIT judged [`Freshening::Newest`] or [`Freshening::Tolerated`] and
    /// accepted.
    fn remember(&mut self, who: Option<Key>, t: u128, e: [u8; 32], w: u128) {
        let f = self.ids.entry(who).or_insert(Fresh {
            latest: t,
            floor: 0,
            window: BTreeSet::new(),
        });
        f.latest = f.latest.max(t);
        if w > 0 {
            f.window.insert((t, e));
        }
        // Entries that fell out of the window (all of them when w = 0).
        let low = f.latest.saturating_sub(w);
        while f.window.first().is_some_and(|&(ts, _)| ts <= low) {
            f.window.pop_first();
        }
        while f.window.len() > self.cap {
            if let Some((ts, _)) = f.window.pop_first() {
                f.floor = f.floor.max(ts);
            }
        }
    }
}

/// Ephemeral keys of the most recent accepted INITs, oldest evicted first.
struct ReplayCache {
    order: VecDeque<[u8; 32]>,
    set: HashSet<[u8; 32]>,
    capacity: usize,
}

impl Default for ReplayCache {
    fn default() -> Self {
        ReplayCache {
            order: VecDeque::new(),
            set: HashSet::new(),
            capacity: REPLAY_CACHE,
        }
    }
}

impl ReplayCache {
    fn contains(&self, e: &[u8; 32]) -> bool {
        self.set.contains(e)
    }

    fn insert(&mut self, e: [u8; 32]) {
        if !self.set.insert(e) {
            return;
        }
        self.order.push_back(e);
        self.trim();
    }

    /// Forgets the oldest keys beyond the capacity.
    fn trim(&mut self) {
        while self.order.len() > self.capacity {
            if let Some(old) = self.order.pop_front() {
                self.set.remove(&old);
            }
        }
    }
}

/// Sends the run of datagrams in `buf[..len]`. An ICMP port unreachable that a connected
/// socket reports on a send (`ECONNREFUSED`; the receiving thread may not see it then) is
/// counted as [`DriverStats::unreachable`] too, and its socket noted in `unreachable`.
fn send_run(
    sockets: &[Arc<UdpSocket>],
    use_gso: &mut bool,
    stats: &mut DriverStats,
    unreachable: &mut Option<usize>,
    buf: &[u8],
    r: &Run,
    len: usize,
) {
    let data = &buf[..len];
    let socket = &sockets[r.route.socket];
    let mut failed = |e: &std::io::Error, n: usize, stats: &mut DriverStats| {
        stats.send_errors += n as u64;
        if e.kind() == std::io::ErrorKind::ConnectionRefused {
            stats.unreachable += 1;
            unreachable.get_or_insert(r.route.socket);
        }
    };
    if r.count > 1 && *use_gso {
        match gso::send(socket, data, r.segment, r.route.remote) {
            Ok(()) => {
                stats.gso_sends += 1;
                stats.datagrams_sent += r.count as u64;
                return;
            }
            Err(e) if gso::unsupported(&e) => *use_gso = false,
            Err(e) => {
                failed(&e, r.count, stats);
                return;
            }
        }
    }
    for d in data.chunks(r.segment) {
        match socket.send_to(d, r.route.remote) {
            Ok(_) => stats.datagrams_sent += 1,
            Err(e) => failed(&e, 1, stats),
        }
    }
}

/// Datagrams of one route and one size waiting in the send buffer.
#[derive(Debug, Clone, Copy)]
struct Run {
    route: Route,
    segment: usize,
    count: usize,
}

impl Run {
    fn new(route: Route, segment: usize) -> Self {
        Run {
            route,
            // Never 0 (the core writes no empty datagrams), so that `chunks` cannot panic.
            segment: segment.max(1),
            count: 1,
        }
    }
}

/// UDP generic segmentation offload (Linux ≥ 4.18): one `sendmsg` carries many datagrams of
/// `segment` bytes (the last may be shorter), which the kernel (or the NIC) splits.
#[cfg(target_os = "linux")]
mod gso {
    use socket2::{
        MaybeUninitSlice, MsgHdr, MsgHdrMut, SockAddr, SockAddrStorage, SockRef, Socket,
    };
    use std::io::IoSlice;
    use std::mem::MaybeUninit;
    use std::net::{SocketAddr, UdpSocket};
    use std::os::fd::AsRawFd;

    /// Bytes one GSO send may carry (the UDP length limit, with room for headers).
    pub(super) const MAX_BYTES: usize = 65_000;
    /// Datagrams one GSO send may carry (the kernel's `UDP_MAX_SEGMENTS`).
    pub(super) const MAX_SEGMENTS: usize = 64;

    pub(super) fn send(
        s: &UdpSocket,
        data: &[u8],
        segment: usize,
        to: SocketAddr,
    ) -> std::io::Result<()> {
        let control = control(u16::try_from(segment).unwrap_or(u16::MAX));
        let addr = SockAddr::from(to);
        let bufs = [IoSlice::new(data)];
        let msg = MsgHdr::new()
            .with_addr(&addr)
            .with_buffers(&bufs)
            .with_control(&control);
        SockRef::from(s).sendmsg(&msg, 0).map(|_| ())
    }

    /// The kernel or the device cannot segment: fall back to one datagram per send.
    pub(super) fn unsupported(e: &std::io::Error) -> bool {
        matches!(
            e.raw_os_error(),
            Some(libc::EIO | libc::EINVAL | libc::ENOPROTOOPT | libc::EOPNOTSUPP)
        )
    }

    /// Control buffer bytes for one `UDP_GRO` message (an `int`), with room to spare.
    pub(super) const CONTROL: usize = 64;

    /// Asks the kernel to coalesce arriving datagrams of one flow (`UDP_GRO`, Linux >= 5.0).
    pub(super) fn enable_gro(s: &Socket) {
        let one: libc::c_int = 1;
        // SAFETY: a valid socket, and `optval` points at an `int` of the given size.
        let _ = unsafe {
            libc::setsockopt(
                s.as_raw_fd(),
                libc::SOL_UDP,
                libc::UDP_GRO,
                (&one as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
    }

    /// Reads one datagram (or, with GRO, a run of them); returns its length, its source and
    /// the GRO segment size if the kernel coalesced.
    pub(super) fn recv(
        s: &Socket,
        buf: &mut [MaybeUninit<u8>],
        control: &mut [MaybeUninit<u8>],
        flags: libc::c_int,
    ) -> std::io::Result<(usize, Option<SocketAddr>, Option<usize>)> {
        // SAFETY: an all-zero `sockaddr_storage` is valid (family AF_UNSPEC), and its full
        // size is a valid length for it.
        let mut addr = unsafe {
            SockAddr::new(
                SockAddrStorage::zeroed(),
                std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t,
            )
        };
        let mut bufs = [MaybeUninitSlice::new(buf)];
        let mut msg = MsgHdrMut::new()
            .with_addr(&mut addr)
            .with_buffers(&mut bufs)
            .with_control(control);
        let n = s.recvmsg(&mut msg, flags)?;
        let clen = msg.control_len();
        let segment = gro_segment(super::init(control, clen));
        Ok((n, addr.as_socket(), segment))
    }

    /// The `UDP_GRO` segment size in received control messages, if any.
    fn gro_segment(mut c: &[u8]) -> Option<usize> {
        let hdr = std::mem::size_of::<libc::cmsghdr>();
        // SAFETY: CMSG_LEN only computes a size.
        let data_at = unsafe { libc::CMSG_LEN(0) } as usize;
        let align = std::mem::size_of::<usize>();
        while c.len() >= hdr {
            // SAFETY: `c` holds at least `size_of::<cmsghdr>()` bytes; the read is unaligned.
            let h: libc::cmsghdr = unsafe { std::ptr::read_unaligned(c.as_ptr().cast()) };
            let len = h.cmsg_len as usize;
            if len < data_at || len > c.len() {
                return None;
            }
            if h.cmsg_level == libc::SOL_UDP && h.cmsg_type == libc::UDP_GRO && len >= data_at + 4 {
                let v = i32::from_ne_bytes(c[data_at..data_at + 4].try_into().ok()?);
                return usize::try_from(v).ok().filter(|&v| v > 0);
            }
            let next = len.div_ceil(align) * align;
            c = c.get(next..)?;
        }
        None
    }

    /// A `UDP_SEGMENT` control message.
    fn control(segment: u16) -> Vec<u8> {
        // SAFETY: CMSG_SPACE/CMSG_LEN only compute sizes.
        let (space, len, data_at) = unsafe {
            (
                libc::CMSG_SPACE(2) as usize,
                libc::CMSG_LEN(2),
                libc::CMSG_LEN(0) as usize,
            )
        };
        // SAFETY: `cmsghdr` is plain old data (integers, possibly padding): all-zero is valid.
        let mut hdr: libc::cmsghdr = unsafe { std::mem::zeroed() };
        hdr.cmsg_len = len as _;
        hdr.cmsg_level = libc::SOL_UDP;
        hdr.cmsg_type = libc::UDP_SEGMENT;
        let mut buf = vec![0u8; space];
        let n = std::mem::size_of::<libc::cmsghdr>();
        // SAFETY: reads the `n` bytes of `hdr`, which lives for the whole statement.
        let bytes =
            unsafe { std::slice::from_raw_parts((&hdr as *const libc::cmsghdr).cast::<u8>(), n) };
        buf[..n].copy_from_slice(bytes);
        buf[data_at..data_at + 2].copy_from_slice(&segment.to_ne_bytes());
        buf
    }

    #[cfg(test)]
    mod tests {
        use super::gro_segment;

        fn cmsg(level: libc::c_int, ty: libc::c_int, value: i32) -> Vec<u8> {
            // SAFETY: as in `control`.
            let mut hdr: libc::cmsghdr = unsafe { std::mem::zeroed() };
            hdr.cmsg_len = unsafe { libc::CMSG_LEN(4) } as _;
            hdr.cmsg_level = level;
            hdr.cmsg_type = ty;
            let n = std::mem::size_of::<libc::cmsghdr>();
            let mut v = vec![0u8; unsafe { libc::CMSG_SPACE(4) } as usize];
            // SAFETY: reads the bytes of `hdr`.
            let b = unsafe { std::slice::from_raw_parts((&hdr as *const libc::cmsghdr).cast(), n) };
            v[..n].copy_from_slice(b);
            let at = unsafe { libc::CMSG_LEN(0) } as usize;
            v[at..at + 4].copy_from_slice(&value.to_ne_bytes());
            v
        }

        #[test]
        fn finds_the_gro_segment_size() {
            let gro = cmsg(libc::SOL_UDP, libc::UDP_GRO, 1448);
            assert_eq!(gro_segment(&gro), Some(1448));
            let mut two = cmsg(libc::SOL_IP, libc::IP_TOS, 0);
            two.extend(&gro);
            assert_eq!(gro_segment(&two), Some(1448));
            assert_eq!(gro_segment(&[]), None);
            assert_eq!(gro_segment(&cmsg(libc::SOL_UDP, libc::UDP_GRO, -1)), None);
            // Truncated or lying lengths are ignored, never read past the end.
            assert_eq!(gro_segment(&gro[..gro.len() - 6]), None);
            let mut bad = gro.clone();
            bad[0] = 0xff;
            assert_eq!(gro_segment(&bad), None);
        }
    }
}

/// Elsewhere than on Linux there is no GSO: runs are sent one datagram at a time.
#[cfg(not(target_os = "linux"))]
mod gso {
    use socket2::Socket;
    use std::mem::MaybeUninit;
    use std::net::{SocketAddr, UdpSocket};

    pub(super) const MAX_BYTES: usize = 0;
    pub(super) const MAX_SEGMENTS: usize = 1;
    pub(super) const CONTROL: usize = 0;

    pub(super) fn enable_gro(_: &Socket) {}

    pub(super) fn recv(
        s: &Socket,
        buf: &mut [MaybeUninit<u8>],
        _: &mut [MaybeUninit<u8>],
        flags: std::ffi::c_int,
    ) -> std::io::Result<(usize, Option<SocketAddr>, Option<usize>)> {
        let (n, from) = s.recv_from_with_flags(buf, flags)?;
        Ok((n, from.as_socket(), None))
    }

    pub(super) fn send(_: &UdpSocket, _: &[u8], _: usize, _: SocketAddr) -> std::io::Result<()> {
        Err(std::io::ErrorKind::Unsupported.into())
    }

    pub(super) fn unsupported(_: &std::io::Error) -> bool {
        true
    }
}

impl Drop for UdpDriver {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Drop the receiving end first, so that a thread blocked on a full queue wakes up.
        let (_, closed) = mpsc::sync_channel(0);
        drop(std::mem::replace(&mut self.rx, closed));
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn open_socket(addr: SocketAddr, opts: SocketOptions) -> Result<UdpSocket, NetError> {
    let setup = |error| NetError::Setup { addr, error };
    let s =
        Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP)).map_err(setup)?;
    // Best effort: the kernel caps both at its maxima, and a smaller buffer only costs
    // drops under bursts, which the transport recovers from.
    let _ = s.set_recv_buffer_size(opts.recv_buffer);
    let _ = s.set_send_buffer_size(opts.send_buffer);
    s.bind(&addr.into())
        .map_err(|error| NetError::Bind { addr, error })?;
    s.set_read_timeout(Some(STOP_POLL)).map_err(setup)?;
    if opts.gro {
        // Best effort too: without it every datagram is read on its own.
        gso::enable_gro(&s);
    }
    Ok(s.into())
}

fn receive_loop(
    i: usize,
    s: &Socket,
    tx: &SyncSender<Batch>,
    pool: &Receiver<Batch>,
    stop: &AtomicBool,
) {
    let mut buf = vec![MaybeUninit::<u8>::uninit(); MAX_UDP];
    let mut control = [MaybeUninit::<u8>::uninit(); gso::CONTROL];
    let mut batch = Batch {
        socket: i,
        ..Batch::default()
    };
    while !stop.load(Ordering::Relaxed) {
        // Block (up to STOP_POLL) for the first datagram, then take what is already queued.
        match gso::recv(s, &mut buf, &mut control, 0) {
            Ok((n, from, segment)) => batch.push(from, &buf, n, segment),
            Err(e) if is_timeout(&e) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                // ICMP port unreachable on a connected socket: report it at once.
                batch.refused += 1;
            }
            Err(_) => {
                // Transient (e.g. an ICMP error reported on some platforms): count it and
                // back off a little so a persistent error cannot spin a core.
                batch.recv_errors += 1;
                std::thread::sleep(StdDuration::from_millis(1));
            }
        }
        while cfg!(unix) && batch.items.len() < BATCH {
            match gso::recv(s, &mut buf, &mut control, DONT_WAIT) {
                Ok((n, from, segment)) => batch.push(from, &buf, n, segment),
                Err(_) => break,
            }
        }
        let mut next = pool.try_recv().unwrap_or_default();
        next.socket = i;
        if tx.send(std::mem::replace(&mut batch, next)).is_err() {
            return;
        }
    }
}

impl Batch {
    /// Appends the `n` bytes read into `buf`: one datagram, or with GRO several of
    /// `segment` bytes each (the last may be shorter).
    fn push(
        &mut self,
        from: Option<SocketAddr>,
        buf: &[MaybeUninit<u8>],
        n: usize,
        segment: Option<usize>,
    ) {
        // Datagrams from non-IP addresses cannot happen on UDP/IP sockets; skip them.
        let Some(from) = from else { return };
        let bytes = init(buf, n);
        self.data.extend_from_slice(bytes);
        let seg = segment.filter(|&g| g > 0).unwrap_or(bytes.len().max(1));
        if bytes.is_empty() {
            self.items.push((from, 0));
        }
        for d in bytes.chunks(seg) {
            self.items.push((from, d.len()));
        }
    }
}

/// The first `n` bytes of `buf`, which a read has just written.
fn init(buf: &[MaybeUninit<u8>], n: usize) -> &[u8] {
    let n = n.min(buf.len());
    // SAFETY: the system call that returned `n` initialised the first `n` bytes of `buf`
    // (`n <= buf.len()`); `MaybeUninit<u8>` has the layout of `u8`.
    unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), n) }
}

/// `MSG_DONTWAIT`: take what is queued without blocking. Elsewhere than on Unix there is no
/// such flag, and batches hold one datagram.
#[cfg(unix)]
const DONT_WAIT: std::ffi::c_int = libc::MSG_DONTWAIT;
#[cfg(not(unix))]
const DONT_WAIT: std::ffi::c_int = 0;

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock
            | std::io::ErrorKind::TimedOut
            | std::io::ErrorKind::Interrupted
    )
}

#[cfg(test)]
mod freshness_tests {
    use super::{Freshening, Freshness};
    use std::collections::{HashMap, HashSet};

    /// Random INITs of three identities, with replays of earlier ones mixed in, against
    /// the rule of `Freshness` (docs/udp.md, "Replayed handshakes"). Requirements: no INIT
    /// is ever accepted twice (replay protection, whatever the window's cap); nothing at or
    /// below `latest - W` nor beyond `now + W` is accepted; an INIT later than every
    /// accepted one of its identity and not ahead is always accepted (liveness); with
    /// W = 0, accepted exactly when later than every accepted one (WireGuard's rule); the
    /// window never holds more than its cap.
    #[test]
    fn never_accepts_an_init_twice_and_follows_the_rule() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut rnd = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for (w, cap) in [(0u128, 8usize), (50, 8), (50, 1_000), (1_000, 3)] {
            let mut f = Freshness {
                cap,
                ..Freshness::default()
            };
            let mut accepted: HashSet<(u8, u128, [u8; 32])> = HashSet::new();
            let mut sent: Vec<(u8, u128, [u8; 32])> = Vec::new();
            let mut latest: HashMap<u8, u128> = HashMap::new();
            let mut now: u128 = 10_000;
            for i in 0..20_000u32 {
                now += u128::from(rnd(3));
                let (id, t, e) = if !sent.is_empty() && rnd(4) == 0 {
                    sent[rnd(sent.len() as u64) as usize]
                } else {
                    let id = rnd(3) as u8;
                    // Clocks up to 80 behind and 80 ahead of `now`.
                    let t = now + u128::from(rnd(161)) - 80;
                    let mut e = [0u8; 32];
                    e[..4].copy_from_slice(&i.to_be_bytes());
                    (id, t, e)
                };
                sent.push((id, t, e));
                let who = (id > 0).then_some([id; 32]);
                let v = f.judge(&who, t, &e, now, w);
                let last = latest.get(&id).copied();
                let ok = matches!(v, Freshening::Newest | Freshening::Tolerated);
                if ok {
                    f.remember(who, t, e, w);
                    assert!(accepted.insert((id, t, e)), "accepted twice: {id} {t}");
                    latest.insert(id, last.map_or(t, |l| l.max(t)));
                }
                if w > 0 && t > now + w {
                    assert_eq!(v, Freshening::Ahead);
                }
                match last {
                    Some(l) if t <= l.saturating_sub(w) => assert!(!ok, "{t} <= {l} - {w}"),
                    Some(l) if t > l && (w == 0 || t <= now + w) => {
                        assert_eq!(v, Freshening::Newest)
                    }
                    None if w == 0 || t <= now + w => assert_eq!(v, Freshening::Newest),
                    _ => {}
                }
                if w == 0 {
                    assert_eq!(ok, last.is_none_or(|l| t > l), "{t} {last:?}");
                }
                assert!(f.ids.values().all(|x| x.window.len() <= cap));
            }
            assert!(accepted.len() > 1_000, "too few accepted to mean anything");
        }
    }
}
