//! A bulk transfer over kernel TCP or MPTCP (IPPROTO_MPTCP sockets), for the comparison of
//! Linux MPTCP with this stack over emulated paths (`scripts/kernel-mptcp.sh`). iperf3 of
//! Debian 12 (3.12) has no MPTCP option, hence this tool.
//!
//! ```text
//! bulk server 10.77.0.2:6000 [--mptcp] [--rcvbuf BYTES] [--out FILE.json]
//! bulk client 10.77.0.2:6000 [--mptcp] [--cc cubic] [--seconds S]
//! ```
//!
//! The server accepts one connection, reads until the client closes, and writes a JSON
//! object: bytes, seconds (from the first byte to the end), goodput, and the goodput every
//! 100 ms from the moment it accepted the connection.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd};
use std::time::{Duration, Instant};

const IPPROTO_MPTCP: libc::c_int = 262;

fn socket(mptcp: bool) -> libc::c_int {
    let proto = if mptcp {
        IPPROTO_MPTCP
    } else {
        libc::IPPROTO_TCP
    };
    // SAFETY: socket(2) with constant arguments.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, proto) };
    if fd < 0 {
        panic!(
            "socket({}): {}",
            if mptcp { "MPTCP" } else { "TCP" },
            std::io::Error::last_os_error()
        );
    }
    fd
}

fn sockaddr(a: SocketAddr) -> libc::sockaddr_in {
    let SocketAddr::V4(v4) = a else {
        panic!("IPv4 only")
    };
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: v4.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes(v4.ip().octets()),
        },
        sin_zero: [0; 8],
    }
}

fn setopt(fd: libc::c_int, level: libc::c_int, name: libc::c_int, val: &[u8]) {
    // SAFETY: setsockopt with a buffer of the given length.
    let r = unsafe { libc::setsockopt(fd, level, name, val.as_ptr().cast(), val.len() as _) };
    if r != 0 {
        panic!(
            "setsockopt {level}/{name}: {}",
            std::io::Error::last_os_error()
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let role = args.first().map(String::as_str).unwrap_or("");
    let addr: SocketAddr = args
        .get(1)
        .and_then(|a| a.parse().ok())
        .expect("usage: bulk server|client ADDR:PORT [options]");
    let opt = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let mptcp = args.iter().any(|a| a == "--mptcp");
    match role {
        "server" => {
            let fd = socket(mptcp);
            setopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_REUSEADDR,
                &1i32.to_ne_bytes(),
            );
            if let Some(b) = opt("--rcvbuf") {
                let b: i32 = b.parse().expect("--rcvbuf");
                setopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, &b.to_ne_bytes());
            }
            let sa = sockaddr(addr);
            // SAFETY: bind/listen on our socket with a valid sockaddr_in.
            unsafe {
                if libc::bind(
                    fd,
                    (&sa as *const libc::sockaddr_in).cast(),
                    size_of_val(&sa) as _,
                ) != 0
                {
                    panic!("bind {addr}: {}", std::io::Error::last_os_error());
                }
                if libc::listen(fd, 4) != 0 {
                    panic!("listen: {}", std::io::Error::last_os_error());
                }
            }
            // SAFETY: `fd` is a listening stream socket we own.
            let l = unsafe { TcpListener::from_raw_fd(fd) };
            let (mut s, peer) = l.accept().expect("accept");
            let accepted = Instant::now();
            let mut buf = vec![0u8; 1 << 20];
            let mut total = 0u64;
            let mut first: Option<Instant> = None;
            let mut series: Vec<[f64; 2]> = Vec::new();
            let mut bucket = 0u64;
            let mut bucket_end = Duration::from_millis(100);
            loop {
                let n = s.read(&mut buf).expect("read");
                let now = accepted.elapsed();
                while now >= bucket_end {
                    series.push([bucket_end.as_secs_f64(), bucket as f64 * 8.0 / 0.1 / 1e6]);
                    bucket = 0;
                    bucket_end += Duration::from_millis(100);
                }
                if n == 0 {
                    break;
                }
                first.get_or_insert_with(Instant::now);
                total += n as u64;
                bucket += n as u64;
            }
            let secs = first.map_or(0.0, |f| f.elapsed().as_secs_f64());
            let out = serde_json::json!({
                "mptcp": mptcp,
                "peer": peer.to_string(),
                "bytes": total,
                "seconds": secs,
                "goodput_mbps": total as f64 * 8.0 / secs.max(1e-9) / 1e6,
                "series": series,
            });
            match opt("--out") {
                Some(p) => std::fs::write(&p, out.to_string() + "\n").expect("write --out"),
                None => println!("{out}"),
            }
        }
        "client" => {
            let fd = socket(mptcp);
            if let Some(cc) = opt("--cc") {
                setopt(fd, libc::IPPROTO_TCP, libc::TCP_CONGESTION, cc.as_bytes());
            }
            let sa = sockaddr(addr);
            // SAFETY: connect on our socket with a valid sockaddr_in.
            if unsafe {
                libc::connect(
                    fd,
                    (&sa as *const libc::sockaddr_in).cast(),
                    size_of_val(&sa) as _,
                )
            } != 0
            {
                panic!("connect {addr}: {}", std::io::Error::last_os_error());
            }
            // SAFETY: `fd` is a connected stream socket we own.
            let mut s = unsafe { TcpStream::from_raw_fd(fd) };
            let secs: f64 = opt("--seconds").map_or(10.0, |s| s.parse().expect("--seconds"));
            let end = Instant::now() + Duration::from_secs_f64(secs);
            let buf = vec![0x5au8; 256 << 10];
            while Instant::now() < end {
                s.write_all(&buf).expect("write");
            }
            s.shutdown(std::net::Shutdown::Write).expect("shutdown");
            // Wait for the server to close (all data read).
            let mut b = [0u8; 16];
            let _ = s.read(&mut b);
            let _ = s.as_raw_fd();
        }
        _ => panic!("usage: bulk server|client ADDR:PORT [options]"),
    }
}
