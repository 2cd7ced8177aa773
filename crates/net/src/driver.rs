//! The event loop: one connection, one UDP socket per local address.

use crate::{new_connection, NetError};
use socket2::{Domain, Protocol, Socket, Type};
use std::mem::MaybeUninit;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender, TryRecvError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration as StdDuration, Instant as StdInstant};
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

/// Driver counters (the connection keeps its own, see [`Connection::stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DriverStats {
    /// Datagrams read from the sockets.
    pub datagrams_received: u64,
    /// Datagrams the connection dropped (malformed, foreign connection, protocol violation).
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
    /// Times the loop woke up.
    pub wakeups: u64,
}

/// Where a path's datagrams go: which local socket, which remote address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Route {
    socket: usize,
    remote: SocketAddr,
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
}

impl Batch {
    fn clear(&mut self) {
        self.data.clear();
        self.items.clear();
        self.recv_errors = 0;
    }
}

/// A [`Connection`] driven over real UDP sockets.
///
/// Call [`UdpDriver::poll_io`] in a loop; between calls, use [`UdpDriver::connection_mut`]
/// to write or read stream bytes and drain events, then [`UdpDriver::flush`] to send what
/// that produced. Path routing: path `i` of a sender starts on socket `i` towards the
/// remote given for it; on both ends every accepted datagram re-points its path (from its
/// header) to the socket it arrived on and the address it came from, so replies go back
/// the way the peer's datagrams came.
pub struct UdpDriver {
    conn: Connection,
    sockets: Vec<Arc<UdpSocket>>,
    local_addrs: Vec<SocketAddr>,
    routes: Vec<Option<Route>>,
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
}

impl std::fmt::Debug for UdpDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UdpDriver")
            .field("local_addrs", &self.local_addrs)
            .field("routes", &self.routes)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl UdpDriver {
    /// A sending endpoint: path `i` binds `paths[i].0` and sends to `paths[i].1`.
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
        let mut d = Self::bind(conn, &locals, opts)?;
        d.routes = paths
            .iter()
            .enumerate()
            .map(|(i, &(_, remote))| Some(Route { socket: i, remote }))
            .collect();
        Ok(d)
    }

    /// A receiving endpoint listening on every address of `addrs`; it learns the paths and
    /// the peer's addresses from the datagrams that arrive.
    pub fn listen(
        cfg: ConnectionConfig,
        addrs: &[SocketAddr],
        opts: SocketOptions,
    ) -> Result<Self, NetError> {
        if addrs.is_empty() {
            return Err(NetError::NoPaths("listening address"));
        }
        let conn = new_connection(cfg, 0)?;
        Self::bind(conn, addrs, opts)
    }

    fn bind(conn: Connection, addrs: &[SocketAddr], opts: SocketOptions) -> Result<Self, NetError> {
        let mut sockets = Vec::with_capacity(addrs.len());
        let mut local_addrs = Vec::with_capacity(addrs.len());
        for &addr in addrs {
            let s = open_socket(addr, opts)?;
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
        let maxd = conn.max_datagram();
        let gso = opts.gso && gso::MAX_SEGMENTS > 1 && 2 * maxd <= gso::MAX_BYTES;
        let buf = if gso {
            let n = (gso::MAX_BYTES / maxd).min(gso::MAX_SEGMENTS);
            vec![0; n * maxd]
        } else {
            vec![0; maxd]
        };
        Ok(UdpDriver {
            conn,
            sockets,
            local_addrs,
            routes: Vec::new(),
            rx,
            pools,
            stop,
            threads,
            epoch: StdInstant::now(),
            buf,
            gso,
            stats: DriverStats::default(),
        })
    }

    /// The bound local addresses, one per socket (with the OS-chosen port for port 0).
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.local_addrs
    }

    /// The remote address path `path` currently sends to, if known.
    pub fn remote(&self, path: usize) -> Option<SocketAddr> {
        self.routes.get(path).copied().flatten().map(|r| r.remote)
    }

    /// The connection.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// The connection, to write, read, close or drain events. Call [`UdpDriver::flush`]
    /// afterwards so that what this produced is sent.
    pub fn connection_mut(&mut self) -> &mut Connection {
        &mut self.conn
    }

    /// Driver counters.
    pub fn stats(&self) -> DriverStats {
        self.stats
    }

    /// The core's clock: nanoseconds since the driver was created.
    pub fn now(&self) -> Instant {
        let ns = self.epoch.elapsed().as_nanos();
        Instant::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
    }

    /// Waits until a datagram arrives, the connection's timer expires, or `max_wait`
    /// passes; handles up to a batch of queued datagrams and the timer, and sends what they
    /// triggered. Returns after one batch so that the caller can move stream bytes in
    /// between (a receiver that only read once the queue ran dry would close its own
    /// window under a steady stream). Returns an error only if every receiver thread has
    /// stopped.
    pub fn poll_io(&mut self, max_wait: StdDuration) -> Result<(), NetError> {
        let now = self.now();
        let mut wait = max_wait;
        if let Some(t) = self.conn.poll_timeout() {
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
        self.flush();
        Ok(())
    }

    fn on_timer(&mut self) {
        let now = self.now();
        if self.conn.poll_timeout().is_some_and(|t| t <= now) {
            self.conn.handle_timeout(now);
        }
    }

    fn on_batch(&mut self, mut b: Batch) {
        self.stats.recv_errors += b.recv_errors;
        let mut at = 0;
        for &(from, len) in &b.items {
            let data = &b.data[at..at + len];
            at += len;
            self.stats.datagrams_received += 1;
            let now = self.now();
            match self.conn.handle_datagram(now, data) {
                Ok(r) => {
                    if self.routes.len() <= r.path {
                        self.routes.resize(r.path + 1, None);
                    }
                    self.routes[r.path] = Some(Route {
                        socket: b.socket,
                        remote: from,
                    });
                }
                Err(_) => self.stats.datagrams_dropped += 1,
            }
        }
        b.clear();
        // The thread may be gone (it stops on its own errors); then the batch is dropped.
        let _ = self.pools[b.socket].send(b);
    }

    /// Closes the connection: sends a CLOSE frame with `code` on every path (fire and
    /// forget).
    pub fn close(&mut self, code: u64) {
        self.conn.close_connection(code);
        self.flush();
    }

    /// Sends every datagram the connection has ready.
    pub fn flush(&mut self) {
        self.send_at_most(usize::MAX);
    }

    /// Sends up to `n` datagrams. Consecutive datagrams of one path and one size (a flight
    /// of data packets) are written back to back and, with GSO, handed to the kernel in one
    /// `sendmsg` (the last one of a run may be shorter, as GSO allows).
    fn send_at_most(&mut self, n: usize) {
        let maxd = self.conn.max_datagram();
        let mut run: Option<Run> = None;
        let mut used = 0;
        for _ in 0..n {
            let now = self.now();
            let Some(t) = self
                .conn
                .poll_transmit(now, &mut self.buf[used..used + maxd])
            else {
                break;
            };
            let Some(route) = self.routes.get(t.path).copied().flatten() else {
                self.stats.unroutable += 1;
                continue;
            };
            match &mut run {
                Some(r)
                    if r.route == route && t.len <= r.segment && r.count < gso::MAX_SEGMENTS =>
                {
                    r.count += 1;
                    used += t.len;
                    if t.len < r.segment {
                        self.send_run(r, used);
                        (run, used) = (None, 0);
                    }
                }
                Some(r) => {
                    // A different path or a larger datagram: send the run, start anew.
                    let r = *r;
                    self.send_run(&r, used);
                    self.buf.copy_within(used..used + t.len, 0);
                    run = Some(Run::new(route, t.len));
                    used = t.len;
                }
                None => {
                    run = Some(Run::new(route, t.len));
                    used = t.len;
                }
            }
            if used + maxd > self.buf.len() {
                if let Some(r) = run.take() {
                    self.send_run(&r, used);
                }
                used = 0;
            }
        }
        if let Some(r) = run {
            self.send_run(&r, used);
        }
    }

    /// Sends the run of datagrams in `self.buf[..len]`.
    fn send_run(&mut self, r: &Run, len: usize) {
        let data = &self.buf[..len];
        let socket = &self.sockets[r.route.socket];
        if r.count > 1 && self.gso {
            match gso::send(socket, data, r.segment, r.route.remote) {
                Ok(()) => {
                    self.stats.gso_sends += 1;
                    self.stats.datagrams_sent += r.count as u64;
                    return;
                }
                Err(e) if gso::unsupported(&e) => self.gso = false,
                Err(_) => {
                    self.stats.send_errors += r.count as u64;
                    return;
                }
            }
        }
        for d in data.chunks(r.segment) {
            match socket.send_to(d, r.route.remote) {
                Ok(_) => self.stats.datagrams_sent += 1,
                Err(_) => self.stats.send_errors += 1,
            }
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
