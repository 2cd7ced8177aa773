//! `tributary send` and `tributary recv`: one file over real UDP paths.
//!
//! Both ends must agree on the connection essentials: `--scheme`, `--buffer`, `--mss` and
//! `--conn-id` (the core has no handshake; the sender assumes the receiver's buffer is its
//! own). `--cc` and `--scheduler` only matter on the sending end.

use anyhow::Context;
use clap::{Args, ValueEnum};
use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;
use tributary_net::{SocketOptions, TransferOptions, UdpDriver};
use tributary_proto::cc::CcConfig;
use tributary_proto::sched::SchedulerConfig;
use tributary_proto::scheme::{ArqConfig, SchemeConfig};
use tributary_proto::ConnectionConfig;

/// Recovery scheme.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Scheme {
    /// Single-path TCP-like ARQ (exactly one path).
    Tcp,
    /// IETF-MPTCP-like ARQ with reinjection and penalisation.
    Mptcp,
}

/// Congestion controller.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Cc {
    /// Uncoupled NewReno per path.
    NewReno,
    /// Linked Increases (RFC 6356).
    Lia,
}

/// Path scheduler.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Scheduler {
    /// Lowest smoothed RTT first (Linux default).
    MinRtt,
    /// Paths in turn.
    RoundRobin,
}

/// Connection options shared by both commands.
#[derive(Args, Debug)]
pub struct ConnArgs {
    /// Recovery scheme (must match the other end).
    #[arg(long, value_enum, default_value = "mptcp")]
    pub scheme: Scheme,
    /// Connection receive buffer, bytes; suffixes K, M, G (binary) accepted (must match).
    #[arg(long, default_value = "2M", value_parser = parse_size)]
    pub buffer: usize,
    /// Largest payload per datagram, bytes (must match).
    #[arg(long, default_value_t = 1400)]
    pub mss: usize,
    /// Connection id carried in every datagram (must match).
    #[arg(long, default_value_t = 1)]
    pub conn_id: u64,
    /// Congestion controller (sender only).
    #[arg(long, value_enum, default_value = "new-reno")]
    pub cc: Cc,
    /// Path scheduler (sender only).
    #[arg(long, value_enum, default_value = "min-rtt")]
    pub scheduler: Scheduler,
    /// OS socket buffers (SO_RCVBUF/SO_SNDBUF) requested per socket, bytes.
    #[arg(long, default_value = "4M", value_parser = parse_size)]
    pub socket_buffer: usize,
    /// Send one datagram per system call instead of using UDP segmentation offload (GSO).
    #[arg(long)]
    pub no_gso: bool,
    /// Read one datagram per system call instead of using UDP receive offload (GRO).
    #[arg(long)]
    pub no_gro: bool,
    /// Give up after this many seconds without progress.
    #[arg(long, default_value_t = 30.0, value_parser = parse_secs)]
    pub timeout: f64,
}

impl ConnArgs {
    fn config(&self) -> ConnectionConfig {
        ConnectionConfig {
            conn_id: self.conn_id,
            mss: self.mss,
            recv_buffer: self.buffer,
            scheme: match self.scheme {
                Scheme::Tcp => SchemeConfig::Tcp,
                Scheme::Mptcp => SchemeConfig::Mptcp(ArqConfig::default()),
            },
            cc: match self.cc {
                Cc::NewReno => CcConfig::NewReno,
                Cc::Lia => CcConfig::Lia,
            },
            scheduler: match self.scheduler {
                Scheduler::MinRtt => SchedulerConfig::MinRtt,
                Scheduler::RoundRobin => SchedulerConfig::RoundRobin,
            },
            ..ConnectionConfig::default()
        }
    }

    fn sockets(&self) -> SocketOptions {
        SocketOptions {
            recv_buffer: self.socket_buffer,
            send_buffer: self.socket_buffer,
            gso: !self.no_gso,
            gro: !self.no_gro,
        }
    }
}

/// Arguments of `tributary send`.
#[derive(Args, Debug)]
pub struct SendArgs {
    /// File to send.
    pub file: PathBuf,
    /// One path: the local address to bind and the receiver's address, as LOCAL=REMOTE
    /// (e.g. 127.0.0.1:0=127.0.0.1:5000). Repeat for more paths; path i is the i-th.
    #[arg(long = "path", value_name = "LOCAL=REMOTE", required = true, value_parser = parse_path)]
    pub paths: Vec<(SocketAddr, SocketAddr)>,
    #[command(flatten)]
    pub conn: ConnArgs,
}

/// Arguments of `tributary recv`.
#[derive(Args, Debug)]
pub struct RecvArgs {
    /// Local address to receive on (repeat for more; one per path is typical).
    #[arg(long = "listen", value_name = "ADDR", required = true, value_parser = parse_addr)]
    pub listen: Vec<SocketAddr>,
    /// Where to write the received file (removed again if the transfer fails).
    #[arg(long)]
    pub out: PathBuf,
    /// Seconds to keep acknowledging after the stream ended, unless the sender's CLOSE
    /// arrives first.
    #[arg(long, default_value_t = 2.0, value_parser = parse_secs)]
    pub linger: f64,
    #[command(flatten)]
    pub conn: ConnArgs,
}

/// `tributary send`.
pub fn send(a: SendArgs) -> anyhow::Result<()> {
    let file = File::open(&a.file).with_context(|| format!("cannot open {}", a.file.display()))?;
    let mut d = UdpDriver::connect(a.conn.config(), &a.paths, a.conn.sockets())?;
    let opts = TransferOptions {
        idle_timeout: Duration::from_secs_f64(a.conn.timeout),
        ..TransferOptions::default()
    };
    let src = BufReader::with_capacity(1 << 20, file);
    let r = tributary_net::send_stream(&mut d, src, &opts)?;
    println!("{r}");
    Ok(())
}

/// `tributary recv`.
pub fn recv(a: RecvArgs) -> anyhow::Result<()> {
    let mut d = UdpDriver::listen(a.conn.config(), &a.listen, a.conn.sockets())?;
    let file =
        File::create(&a.out).with_context(|| format!("cannot create {}", a.out.display()))?;
    let addrs: Vec<String> = d.local_addrs().iter().map(|s| s.to_string()).collect();
    eprintln!("listening on {}", addrs.join(", "));
    let opts = TransferOptions {
        idle_timeout: Duration::from_secs_f64(a.conn.timeout),
        linger: Duration::from_secs_f64(a.linger),
    };
    let res = tributary_net::receive_stream(&mut d, BufWriter::with_capacity(1 << 20, file), &opts);
    match res {
        Ok(r) => {
            println!("{r}");
            Ok(())
        }
        Err(e) => {
            let _ = std::fs::remove_file(&a.out);
            Err(e.into())
        }
    }
}

fn parse_addr(s: &str) -> Result<SocketAddr, String> {
    if let Ok(a) = s.parse() {
        return Ok(a);
    }
    s.to_socket_addrs()
        .map_err(|e| format!("`{s}` is not an address HOST:PORT ({e})"))?
        .next()
        .ok_or_else(|| format!("`{s}` resolves to no address"))
}

fn parse_path(s: &str) -> Result<(SocketAddr, SocketAddr), String> {
    let Some((local, remote)) = s.split_once('=') else {
        return Err(format!(
            "`{s}` is not LOCAL=REMOTE (e.g. 127.0.0.1:0=127.0.0.1:5000)"
        ));
    };
    let (local, remote) = (parse_addr(local)?, parse_addr(remote)?);
    if local.is_ipv4() != remote.is_ipv4() {
        return Err(format!("`{s}` mixes IPv4 and IPv6"));
    }
    Ok((local, remote))
}

fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let t = t.strip_suffix(['B', 'b']).unwrap_or(t);
    let (num, mul) = match t.char_indices().last() {
        Some((i, 'K' | 'k')) => (&t[..i], 1usize << 10),
        Some((i, 'M' | 'm')) => (&t[..i], 1 << 20),
        Some((i, 'G' | 'g')) => (&t[..i], 1 << 30),
        _ => (t, 1),
    };
    num.trim()
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(mul))
        .ok_or_else(|| format!("`{s}` is not a size in bytes (e.g. 65536, 64K, 2M)"))
}

fn parse_secs(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v < 1e9 => Ok(v),
        _ => Err(format!("`{s}` is not a positive number of seconds")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("65536"), Ok(65536));
        assert_eq!(parse_size("64K"), Ok(65536));
        assert_eq!(parse_size("64KB"), Ok(65536));
        assert_eq!(parse_size("2M"), Ok(2 << 20));
        assert_eq!(parse_size("1g"), Ok(1 << 30));
        assert!(parse_size("x").is_err());
        assert!(parse_size("").is_err());
        assert!(parse_size("-1").is_err());
    }

    #[test]
    fn paths() {
        let (l, r) = parse_path("127.0.0.1:0=127.0.0.2:5000").unwrap();
        assert_eq!(l, "127.0.0.1:0".parse().unwrap());
        assert_eq!(r, "127.0.0.2:5000".parse().unwrap());
        assert!(parse_path("127.0.0.1:0").is_err());
        assert!(parse_path("127.0.0.1:0=nonsense").is_err());
        assert!(parse_path("127.0.0.1:0=[::1]:5000").is_err());
    }

    #[test]
    fn seconds() {
        assert_eq!(parse_secs("1.5"), Ok(1.5));
        assert!(parse_secs("0").is_err());
        assert!(parse_secs("nan").is_err());
    }
}
