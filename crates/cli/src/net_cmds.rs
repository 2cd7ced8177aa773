//! `tributary send`, `tributary recv` and `tributary keygen`: files over real UDP paths,
//! protected by default (see `docs/udp.md`).
//!
//! With credentials (`--key`/`--peer-key`/`--peers`, or `--psk`) the handshake negotiates the
//! connection: the receiver needs none of the sender's connection options. `--insecure`
//! speaks the simulator's unprotected format instead (both ends must then agree on
//! `--scheme`, `--buffer`, `--mss` and `--conn-id`).

use crate::choice;
use anyhow::{bail, Context};
use clap::Args;
use std::fs::{File, OpenOptions};
use std::io::{BufReader, BufWriter, IsTerminal, Read, Seek, Write};
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use tributary_net::keys;
use tributary_net::qlog::QlogDir;
use tributary_net::{
    Admission, Content, Limits, Listener, NetError, Resume, RetryPolicy, ServeOptions, ServerEvent,
    Service, Sink, SocketOptions, TransferOptions, TransferProgress, UdpDriver,
};
use tributary_proto::cc::{CcConfig, Controllers};
use tributary_proto::handshake::Credentials;
use tributary_proto::qlog::VantagePoint;
use tributary_proto::sched::{SchedulerConfig, Schedulers};
use tributary_proto::scheme::{SchemeConfig, Schemes};
use tributary_proto::ConnectionConfig;

/// Connection options shared by both commands.
#[derive(Args, Debug)]
pub struct ConnArgs {
    /// Recovery scheme.
    #[arg(long, default_value = "mptcp", value_parser = choice::parse::<Schemes>,
          long_help = choice::help::<Schemes>("Recovery scheme (the sender's choice; the handshake tells the receiver)"))]
    pub scheme: SchemeConfig,
    /// Connection receive buffer, bytes; suffixes K, M, G (binary) accepted.
    #[arg(long, default_value = "2M", value_parser = parse_size)]
    pub buffer: usize,
    /// Largest payload per datagram, bytes.
    #[arg(long, default_value_t = 1400)]
    pub mss: usize,
    /// Largest --buffer accepted (this end's, and a receiver's limit on offers).
    #[arg(long, default_value = "256M", value_parser = parse_size)]
    pub max_buffer: usize,
    /// Congestion controller (sender).
    #[arg(long, default_value = "new-reno", value_parser = choice::parse::<Controllers>,
          long_help = choice::help::<Controllers>("Congestion controller (sender)"))]
    pub cc: CcConfig,
    /// Path scheduler (sender).
    #[arg(long, default_value = "min-rtt", value_parser = choice::parse::<Schedulers>,
          long_help = choice::help::<Schedulers>("Path scheduler (sender)"))]
    pub scheduler: SchedulerConfig,
    /// OS socket buffers (SO_RCVBUF/SO_SNDBUF) requested per socket, bytes.
    #[arg(long, default_value = "4M", value_parser = parse_size)]
    pub socket_buffer: usize,
    /// Send one datagram per system call instead of using UDP segmentation offload (GSO).
    #[arg(long)]
    pub no_gso: bool,
    /// Read one datagram per system call instead of using UDP receive offload (GRO).
    #[arg(long)]
    pub no_gro: bool,
    /// Give up after this many seconds without progress (and without a handshake answer).
    #[arg(long, default_value_t = 30.0, value_parser = parse_secs)]
    pub timeout: f64,
    /// This end's private key file (`tributary keygen`).
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// A pre-shared key file (`tributary keygen --psk`), alone or with key pairs.
    #[arg(long, value_name = "FILE")]
    pub psk: Option<PathBuf>,
    /// No handshake and no protection: the simulator's datagrams (CRC-32 only), for trusted
    /// labs and for measuring what protection costs. Anyone on the path can read, forge
    /// and end the transfer.
    #[arg(long)]
    pub insecure: bool,
    /// With --insecure: the connection id both ends must be given.
    #[arg(long, default_value_t = 1)]
    pub conn_id: u64,
    /// No progress line (it is shown on standard error only when that is a terminal).
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Receiver: when to make a sender prove its address with a RETRY cookie before any key
    /// exchange: auto (only while handshakes arrive faster than half the budget), always
    /// (one more round trip per connection), never.
    #[arg(long, default_value = "auto", value_name = "WHEN")]
    pub retry: RetryPolicy,
    /// Receiver: most key exchanges per second, all senders together (0: unlimited); an
    /// INIT beyond it is refused as "rate limited" without any cryptography.
    #[arg(long, default_value_t = 200, value_name = "N")]
    pub handshake_rate: u32,
    /// Receiver: most key exchanges per second for one address that proved itself with a
    /// cookie (0: unlimited).
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub handshake_rate_per_address: u32,
    /// Receiver: how far the clocks of senders sharing a key (one pre-shared key on several
    /// hosts) may disagree, seconds: a handshake up to this much older than the latest of
    /// its key still gets in (replays are recognised), one more than this ahead of this
    /// host's clock is refused as "clock ahead". 0: accept only handshakes later than every
    /// earlier one of the key (WireGuard's rule), with no bound ahead.
    #[arg(long, default_value_t = 60.0, value_name = "SECS", value_parser = parse_secs_or_zero)]
    pub clock_tolerance: f64,
    /// Write a qlog trace (JSON-SEQ, loadable in qvis) of each connection into this existing
    /// directory, as `sender-<id>.sqlog` or `receiver-<id>.sqlog` (`perf`: `client-`,
    /// `server-`; `-2`, `-3`, … when the name is taken: no file is overwritten).
    #[arg(long, value_name = "DIR")]
    pub qlog: Option<PathBuf>,
    /// Multipath: probe a path that stopped answering at least every this many seconds
    /// (its retransmission timer backs off no further), so a link that comes back after an
    /// outage is used again within about this time; default: back off up to 60 s (RFC 6298,
    /// as Linux MPTCP). At least 0.2 (the minimum RTO). E.g. 1 for Wi-Fi + cellular bonding.
    #[arg(long, value_name = "SECS", value_parser = parse_secs)]
    pub max_probe_interval: Option<f64>,
    /// Congestion window validation as the Linux kernel does it by default: a path whose
    /// window went unused for a retransmission timeout gives back half the unused part, and
    /// a path idle for longer restarts near its initial window (RFC 2861, RFC 7661). For
    /// traffic that does not fill the paths (video, interactive) and for schedulers that
    /// hold paths back; off by default, as in the simulator.
    #[arg(long)]
    pub cwnd_validation: bool,
    /// Tail-loss probe (RFC 8985 §7, on by default in Linux): when nothing is acknowledged
    /// for about two RTTs, send one probe so a lost tail is found without waiting for the
    /// retransmission timeout. Sender side; off by default, as in the simulator.
    #[arg(long)]
    pub tail_loss_probe: bool,
    /// Measure each extra path with one probe before it carries data, as a Linux MPTCP
    /// subflow carries data only after its join handshake: otherwise the first packets of a
    /// short transfer may go over a slow path before its delay is known. Sender side; off by
    /// default, as in the simulator.
    #[arg(long)]
    pub probe_new_paths: bool,
    /// Reordering tolerance as Linux (RACK's adaptive reordering window, RFC 8985 §6.2, and
    /// the undo of congestion responses to losses that prove spurious) is on by default, as
    /// in the simulator: a path that reorders packets is not taken for a lossy one, and one
    /// that does not behaves as without it. This turns it off (every packet three behind
    /// the largest acknowledged is lost, as classic TCP). Sender side.
    #[arg(long)]
    pub no_reorder_tolerance: bool,
    /// For bonding real links, in one flag: what the Linux kernel does by default and the
    /// simulator leaves off for the papers' sake (`--tail-loss-probe`, `--cwnd-validation`,
    /// `--probe-new-paths`), and what links that drop out need (`--max-probe-interval 1`
    /// unless given). docs/udp.md, "Bonding two real interfaces", with what it gains and
    /// costs (web pages 14-27 % sooner, bulk 1-2.5 % lower in the simulator; with `--scheme
    /// dfec` give the other three flags instead: the probe's time threshold pre-empts parity
    /// repairs). Sender side.
    #[arg(long)]
    pub bonding: bool,
}

/// `--bonding`'s probe interval of a path that stopped answering, seconds (docs/udp.md: one
/// small packet per second while a link is down; +4-6 % on the simulator's failure case).
const BONDING_PROBE_INTERVAL: f64 = 1.0;

impl ConnArgs {
    pub(crate) fn config(&self, paths: usize) -> anyhow::Result<ConnectionConfig> {
        let cfg = ConnectionConfig {
            conn_id: self.conn_id,
            mss: self.mss,
            recv_buffer: self.buffer,
            send_buffer: self
                .buffer
                .max(ConnectionConfig::default().send_buffer.min(self.max_buffer)),
            scheme: self.scheme.clone(),
            cc: self.cc.clone(),
            scheduler: self.scheduler.clone(),
            max_probe_interval: self
                .max_probe_interval
                .or(self.bonding.then_some(BONDING_PROBE_INTERVAL))
                .map(tributary_proto::Duration::from_secs_f64),
            cwnd_validation: self.cwnd_validation || self.bonding,
            tail_loss_probe: self.tail_loss_probe || self.bonding,
            probe_new_paths: self.probe_new_paths || self.bonding,
            reorder_tolerance: !self.no_reorder_tolerance,
            ..ConnectionConfig::default()
        };
        // Options that cannot work (the message names the field), then resource limits,
        // before anything is allocated.
        cfg.validate(paths).map_err(|e| anyhow::anyhow!("{e}"))?;
        self.limits()
            .check(&cfg, paths)
            .map_err(|e| self.connect_error(NetError::Limit(e)))?;
        Ok(cfg)
    }

    /// A sender's connect error; one of this end's resource limits names the options.
    pub(crate) fn connect_error(&self, e: NetError) -> anyhow::Error {
        match e {
            NetError::Limit(e) => {
                anyhow::anyhow!("{e} (--buffer; raise --max-buffer if the machine has the memory)")
            }
            e => e.into(),
        }
    }

    pub(crate) fn admission(&self) -> Admission {
        Admission {
            retry: self.retry,
            handshakes_per_sec: self.handshake_rate,
            per_address_per_sec: self.handshake_rate_per_address,
            clock_tolerance: Duration::from_secs_f64(self.clock_tolerance),
        }
    }

    pub(crate) fn limits(&self) -> Limits {
        Limits {
            max_buffer: self.max_buffer,
            ..Limits::default()
        }
    }

    pub(crate) fn sockets(&self) -> SocketOptions {
        SocketOptions {
            recv_buffer: self.socket_buffer,
            send_buffer: self.socket_buffer,
            gso: !self.no_gso,
            gro: !self.no_gro,
        }
    }

    /// The qlog directory of `--qlog`, checked (it must exist and be writable).
    /// `role` names the files; `sender` and `client` are qlog's client vantage point.
    pub(crate) fn qlog_dir(&self, role: &'static str) -> anyhow::Result<Option<QlogDir>> {
        let Some(dir) = &self.qlog else {
            return Ok(None);
        };
        let vantage = if role == "sender" || role == "client" {
            VantagePoint::Client
        } else {
            VantagePoint::Server
        };
        Ok(Some(QlogDir::new(dir, role, vantage)?))
    }

    pub(crate) fn timeout(&self) -> Duration {
        Duration::from_secs_f64(self.timeout)
    }

    /// The credentials: `peers` are the pinned receiver key (sender) or the accepted sender
    /// keys (receiver). `None` with --insecure.
    pub(crate) fn credentials(
        &self,
        peers: Vec<[u8; 32]>,
        peer_flag: &str,
    ) -> anyhow::Result<Option<Credentials>> {
        let psk = match &self.psk {
            Some(p) => Some(keys::read_key(p, "PSK file")?),
            None => None,
        };
        match (self.insecure, &self.key, psk) {
            (true, None, None) if peers.is_empty() => Ok(None),
            (true, ..) => bail!("--insecure takes no keys"),
            (false, Some(k), psk) => {
                if peers.is_empty() {
                    bail!("--key needs {peer_flag}");
                }
                Ok(Some(Credentials::Keys {
                    private: keys::read_private_key(k)?,
                    peers,
                    psk,
                }))
            }
            (false, None, Some(psk)) if peers.is_empty() => Ok(Some(Credentials::Psk(psk))),
            (false, None, Some(_)) => bail!("{peer_flag} needs --key"),
            (false, None, None) => bail!(
                "no credentials: give --key and {peer_flag} (key pairs from `tributary keygen`), \
                 or --psk (a key from `tributary keygen --psk`), or --insecure for the \
                 unprotected lab format"
            ),
        }
    }
}

/// Traces `d`'s connections into `q` (if given); an error if the trace of a connection that
/// already exists (a sender's, an unprotected receiver's) cannot be created.
pub(crate) fn start_qlog(d: &mut UdpDriver, q: &Option<QlogDir>) -> anyhow::Result<()> {
    if let Some(q) = q {
        d.set_tracer_factory(q.factory());
        if let Some(e) = q.errors().first() {
            bail!("{e}");
        }
    }
    Ok(())
}

/// After the driver (and so every tracer) was dropped: names the trace files written and
/// fails on a trace that could not be created or written completely.
pub(crate) fn finish_qlog(q: Option<QlogDir>) -> anyhow::Result<()> {
    let Some(q) = q else { return Ok(()) };
    for f in q.files() {
        eprintln!("qlog trace: {}", f.display());
    }
    let errors = q.errors();
    if !errors.is_empty() {
        bail!("qlog: {}", errors.join("; "));
    }
    Ok(())
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
    /// The receiver's public key file (pinned).
    #[arg(long, value_name = "FILE")]
    pub peer_key: Option<PathBuf>,
    #[command(flatten)]
    pub conn: ConnArgs,
}

/// Arguments of `tributary recv`.
#[derive(Args, Debug)]
pub struct RecvArgs {
    /// Local address to receive on (repeat for more; one per path is typical).
    #[arg(long = "listen", value_name = "ADDR", required = true, value_parser = parse_addr)]
    pub listen: Vec<SocketAddr>,
    /// Receive one file here (`-`: standard output). It is written to FILE.part and renamed
    /// once complete; an existing FILE or FILE.part is an error without --force.
    #[arg(long, conflicts_with = "out_dir", required_unless_present = "out_dir")]
    pub out: Option<PathBuf>,
    /// Serve: accept connections until interrupted, each into its own file in DIR (named
    /// after the sender's file, never overwriting one without --force), logging each.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// File of the sender public keys to accept, one per line (`#` comments), as SSH's
    /// authorized_keys.
    #[arg(long, value_name = "FILE")]
    pub peers: Option<PathBuf>,
    /// Overwrite an existing output file (and its .part).
    #[arg(long, conflicts_with = "resume")]
    pub force: bool,
    /// Continue an interrupted transfer: keep the bytes in FILE.part and receive only the
    /// rest. The sender checks that they are the first bytes of its file (SHA-256) before
    /// sending the others; if not, nothing is changed and both ends say so. Without a
    /// FILE.part, a fresh transfer.
    #[arg(long, requires = "out")]
    pub resume: bool,
    /// Server: most connections at once.
    #[arg(long, default_value_t = 1024)]
    pub max_connections: usize,
    /// Seconds to keep acknowledging after the stream ended, unless the sender's CLOSE
    /// arrives first.
    #[arg(long, default_value_t = 2.0, value_parser = parse_secs)]
    pub linger: f64,
    #[command(flatten)]
    pub conn: ConnArgs,
}

/// Arguments of `tributary keygen`.
#[derive(Args, Debug)]
pub struct KeygenArgs {
    /// Private key file to create (the public key goes to FILE.pub); never overwritten.
    pub file: PathBuf,
    /// Create a pre-shared key instead of a key pair.
    #[arg(long)]
    pub psk: bool,
}

/// `tributary keygen`.
pub fn keygen(a: KeygenArgs) -> anyhow::Result<()> {
    if a.psk {
        keys::generate_psk(&a.file)?;
        eprintln!(
            "wrote a pre-shared key to {} (mode 0600); copy it to the other end",
            a.file.display()
        );
    } else {
        let public = keys::generate_key_pair(&a.file)?;
        eprintln!(
            "wrote the private key to {} (mode 0600) and the public key to {}.pub",
            a.file.display(),
            a.file.display()
        );
        println!("{public}");
    }
    Ok(())
}

/// `tributary send`.
pub fn send(a: SendArgs) -> anyhow::Result<()> {
    let cfg = a.conn.config(a.paths.len())?;
    let peers = match &a.peer_key {
        Some(p) => vec![keys::read_public_key(p, "receiver public key")?],
        None => Vec::new(),
    };
    let creds = a.conn.credentials(peers, "--peer-key")?;
    let qlog = a.conn.qlog_dir("sender")?;
    let file = File::open(&a.file).with_context(|| format!("cannot open {}", a.file.display()))?;
    let size = file
        .metadata()
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.len());
    let mut d = match &creds {
        None => UdpDriver::connect(cfg, &a.paths, a.conn.sockets())?,
        Some(c) => {
            let name = a.file.file_name().map(|n| n.to_string_lossy().into_owned());
            UdpDriver::connect_secure_with_limits(
                cfg,
                &a.paths,
                a.conn.sockets(),
                c,
                Content::File {
                    name,
                    size,
                    resumable: true,
                },
                &a.conn.limits(),
            )
            .map_err(|e| a.conn.connect_error(e))?
        }
    };
    start_qlog(&mut d, &qlog)?;
    let opts = TransferOptions {
        idle_timeout: a.conn.timeout(),
        ..TransferOptions::default()
    };
    let src = BufReader::with_capacity(1 << 20, file);
    let bar = progress_bar(a.conn.quiet, size);
    let r = tributary_net::send_stream_observed(&mut d, src, &opts, &mut |p| bar.show(p));
    bar.done();
    drop(d);
    let r = r?;
    println!("{r}");
    finish_qlog(qlog)
}

/// A progress line on standard error, if it is a terminal and not `--quiet`.
struct Bar(Option<indicatif::ProgressBar>);

fn progress_bar(quiet: bool, total: Option<u64>) -> Bar {
    if quiet || !std::io::stderr().is_terminal() {
        return Bar(None);
    }
    let b = match total {
        Some(t) => indicatif::ProgressBar::new(t).with_style(
            indicatif::ProgressStyle::with_template(
                "{bytes}/{total_bytes} ({percent}%) {binary_bytes_per_sec}, {elapsed} elapsed, \
                 eta {eta}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        ),
        None => indicatif::ProgressBar::no_length().with_style(
            indicatif::ProgressStyle::with_template(
                "{bytes} {binary_bytes_per_sec}, {elapsed} elapsed",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        ),
    };
    Bar(Some(b))
}

impl Bar {
    fn show(&self, p: TransferProgress) {
        if let Some(b) = &self.0 {
            if let Some(t) = p.total.filter(|&t| b.length() != Some(t)) {
                b.set_length(t);
                b.set_style(
                    indicatif::ProgressStyle::with_template(
                        "{bytes}/{total_bytes} ({percent}%) {binary_bytes_per_sec}, {elapsed} \
                         elapsed, eta {eta}",
                    )
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
                );
            }
            b.set_position(p.offset + p.bytes);
        }
    }
    fn done(&self) {
        if let Some(b) = &self.0 {
            b.finish_and_clear();
        }
    }
}

/// `tributary recv`.
pub fn recv(a: RecvArgs) -> anyhow::Result<()> {
    let peers = match &a.peers {
        Some(p) => keys::read_key_list(p)?,
        None => Vec::new(),
    };
    let creds = a.conn.credentials(peers, "--peers")?;
    let qlog = a.conn.qlog_dir("receiver")?;
    if let Some(dir) = &a.out_dir {
        let Some(creds) = creds else {
            bail!("--out-dir serves protected connections only (give credentials, not --insecure)");
        };
        let r = serve(&a, dir, creds, &qlog);
        let q = finish_qlog(qlog);
        return r.and(q);
    }
    let out = a.out.clone().unwrap_or_default();
    let opts = TransferOptions {
        idle_timeout: a.conn.timeout(),
        linger: Duration::from_secs_f64(a.linger),
    };
    if a.resume && (creds.is_none() || out.as_os_str() == "-") {
        bail!("--resume needs a file (not -) and the handshake (not --insecure)");
    }
    // The output is checked before any datagram is read: no transfer into a file that
    // cannot be kept. Resuming hashes the partial file now (the answer carries the hash).
    let (mut sink, resume): (Box<dyn Sink>, Option<Resume>) = if out.as_os_str() == "-" {
        let w = BufWriter::with_capacity(1 << 20, std::io::stdout());
        (Box::new(StdoutSink(w)), None)
    } else {
        let (s, r) = FileSink::create(&out, a.force, a.resume)?;
        (Box::new(s), r)
    };
    let prior = resume.as_ref().map_or(0, |r| r.offset);
    let d = match creds {
        None => a
            .conn
            .config(0)
            .and_then(|c| Ok(UdpDriver::listen(c, &a.listen, a.conn.sockets())?)),
        Some(creds) => UdpDriver::listen_secure(
            &a.listen,
            a.conn.sockets(),
            Listener {
                creds,
                limits: a.conn.limits(),
                admission: a.conn.admission(),
                max_connections: 1,
                service: Service::Files { resume },
            },
        )
        .map_err(Into::into),
    };
    let mut d = match d.and_then(|mut d| start_qlog(&mut d, &qlog).map(|()| d)) {
        Ok(d) => d,
        Err(e) => {
            sink.finish(false)?;
            return Err(e);
        }
    };
    let addrs: Vec<String> = d.local_addrs().iter().map(|s| s.to_string()).collect();
    eprintln!("listening on {}", addrs.join(", "));
    if prior > 0 {
        eprintln!(
            "resuming: {} holds {prior} bytes",
            part_path(&out).display()
        );
    }
    let mut w = SinkWriter(&mut *sink, 0);
    let bar = progress_bar(a.conn.quiet, None);
    let res = tributary_net::receive_stream_observed(&mut d, &mut w, &opts, &mut |p| {
        bar.show(TransferProgress { offset: prior, ..p })
    });
    bar.done();
    let written = w.1;
    while let Some(r) = d.refusal() {
        eprintln!("refused {}: {}", r.from, r.reason);
    }
    let expected = d.session().and_then(|s| match s.offer() {
        Some(tributary_net::Offer {
            content: Content::File { size, .. },
            ..
        }) => *size,
        _ => None,
    });
    drop(d);
    match res {
        Ok(r) if expected.is_none_or(|e| e == prior + r.bytes) => {
            sink.finish(true)?;
            println!("{r}");
            finish_qlog(qlog)
        }
        Ok(r) => {
            sink.finish(false)?;
            bail!(
                "the stream ended after {} bytes but {} were announced; kept as .part",
                prior + r.bytes,
                expected.unwrap_or(0)
            )
        }
        Err(e) => {
            sink.finish(false)?;
            if written > 0 && out.as_os_str() != "-" {
                Err(anyhow::Error::from(e).context(format!(
                    "transfer failed; the {written} bytes received are in {}",
                    part_path(&out).display()
                )))
            } else {
                Err(e.into())
            }
        }
    }
}

fn serve(
    a: &RecvArgs,
    dir: &Path,
    creds: Credentials,
    qlog: &Option<QlogDir>,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut d = UdpDriver::listen_secure(
        &a.listen,
        a.conn.sockets(),
        Listener {
            creds,
            limits: a.conn.limits(),
            admission: a.conn.admission(),
            max_connections: a.max_connections,
            service: Service::Files { resume: None },
        },
    )?;
    start_qlog(&mut d, qlog)?;
    let addrs: Vec<String> = d.local_addrs().iter().map(|s| s.to_string()).collect();
    eprintln!(
        "listening on {} (serving into {})",
        addrs.join(", "),
        dir.display()
    );
    let opts = ServeOptions {
        idle_timeout: a.conn.timeout(),
        linger: Duration::from_secs_f64(a.linger),
        max_served: None,
    };
    let stop = AtomicBool::new(false);
    let force = a.force;
    let dir = dir.to_path_buf();
    tributary_net::serve(
        &mut d,
        &opts,
        &stop,
        |id, offer| {
            let name = match &offer.content {
                Content::File { name: Some(n), .. } => safe_name(n),
                _ => None,
            }
            .unwrap_or_else(|| format!("conn-{id:016x}"));
            let path = free_path(&dir, &name, force);
            let (s, _) = FileSink::create(&path, force, false)
                .map_err(|e| std::io::Error::other(e.to_string()))?;
            eprintln!("{id:016x}: writing {}", path.display());
            Ok(Box::new(s) as Box<dyn Sink>)
        },
        |e| match e {
            ServerEvent::Accepted { id, from, offer } => eprintln!(
                "{id:016x}: accepted from {} ({}, {} path(s), buffer {} B)",
                from.map_or("?".into(), |f| f.to_string()),
                offer.config.scheme.name(),
                offer.paths,
                offer.config.recv_buffer
            ),
            ServerEvent::Done { id, bytes, elapsed } => eprintln!(
                "{id:016x}: done, {bytes} bytes in {:.3} s",
                elapsed.as_secs_f64()
            ),
            ServerEvent::Failed { id, bytes, error } => {
                eprintln!("{id:016x}: failed after {bytes} bytes: {error}")
            }
            ServerEvent::Refused(r) => eprintln!("refused {}: {}", r.from, r.reason),
        },
    )?;
    Ok(())
}

/// A sender's file name as a name in the output directory: its last component, if it is
/// an ordinary name (no separators, not hidden, not `..`).
fn safe_name(n: &str) -> Option<String> {
    let base = n.rsplit(['/', '\\']).next()?;
    let ok = !base.is_empty()
        && base.len() <= 200
        && !base.starts_with('.')
        && base.chars().all(|c| !c.is_control());
    ok.then(|| base.to_string())
}

/// `dir/name`, or `dir/name.1`, `.2`, ... if that (or its .part) exists (unless `force`).
fn free_path(dir: &Path, name: &str, force: bool) -> PathBuf {
    let mut p = dir.join(name);
    let mut i = 1;
    while !force && (p.exists() || part_path(&p).exists()) {
        p = dir.join(format!("{name}.{i}"));
        i += 1;
    }
    p
}

fn part_path(p: &Path) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(".part");
    PathBuf::from(s)
}

/// A file received as NAME.part and renamed to NAME once complete and synced.
struct FileSink {
    w: BufWriter<File>,
    part: PathBuf,
    dest: PathBuf,
    /// Bytes written by this transfer.
    bytes: u64,
    /// Bytes the .part held before (resumed).
    prior: u64,
    force: bool,
}

impl FileSink {
    /// Creates NAME.part, or with `resume` continues an existing one (returning the prefix
    /// it holds, hashed, for the handshake's answer).
    fn create(dest: &Path, force: bool, resume: bool) -> anyhow::Result<(Self, Option<Resume>)> {
        let part = part_path(dest);
        if !force && dest.exists() {
            bail!(
                "{} exists; not overwriting it without --force",
                dest.display()
            );
        }
        if resume && part.exists() {
            let mut f = OpenOptions::new()
                .read(true)
                .append(true)
                .open(&part)
                .with_context(|| format!("cannot open {} to resume", part.display()))?;
            let len = f
                .metadata()
                .with_context(|| format!("cannot read {}", part.display()))?
                .len();
            let r = Resume::of((&mut f).take(len), len)
                .with_context(|| format!("cannot read {}", part.display()))?;
            f.seek(std::io::SeekFrom::End(0))
                .with_context(|| format!("cannot read {}", part.display()))?;
            let sink = FileSink {
                w: BufWriter::with_capacity(1 << 20, f),
                part,
                dest: dest.to_path_buf(),
                bytes: 0,
                prior: len,
                force,
            };
            return Ok((sink, (len > 0).then_some(r)));
        }
        if !force && part.exists() {
            bail!(
                "{} exists (an interrupted transfer); continue it with --resume, or remove \
                 it (or use --force) to start over",
                part.display()
            );
        }
        let f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&part)
            .with_context(|| format!("cannot create {}", part.display()))?;
        let sink = FileSink {
            w: BufWriter::with_capacity(1 << 20, f),
            part,
            dest: dest.to_path_buf(),
            bytes: 0,
            prior: 0,
            force,
        };
        Ok((sink, None))
    }
}

impl Sink for FileSink {
    fn write(&mut self, d: &[u8]) -> std::io::Result<()> {
        self.bytes += d.len() as u64;
        self.w.write_all(d)
    }
    fn finish(self: Box<Self>, complete: bool) -> std::io::Result<()> {
        let FileSink {
            w,
            part,
            dest,
            bytes,
            prior,
            force,
        } = *self;
        let f = w.into_inner().map_err(|e| e.into_error())?;
        if !complete {
            if bytes == 0 && prior == 0 {
                drop(f);
                // Nothing arrived: leave nothing behind.
                let _ = std::fs::remove_file(&part);
            } else {
                // Kept for --resume: make what arrived durable.
                f.sync_all()?;
            }
            return Ok(());
        }
        f.sync_all()?;
        drop(f);
        if !force && dest.exists() {
            return Err(std::io::Error::other(format!(
                "{} appeared meanwhile; the data stays in {}",
                dest.display(),
                part.display()
            )));
        }
        std::fs::rename(&part, &dest)
    }
}

struct StdoutSink(BufWriter<std::io::Stdout>);

impl Sink for StdoutSink {
    fn write(&mut self, d: &[u8]) -> std::io::Result<()> {
        self.0.write_all(d)
    }
    fn finish(mut self: Box<Self>, _: bool) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// `Write` over a sink, counting bytes.
struct SinkWriter<'a>(&'a mut dyn Sink, u64);

impl Write for SinkWriter<'_> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.write(b)?;
        self.1 += b.len() as u64;
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

pub(crate) fn parse_addr(s: &str) -> Result<SocketAddr, String> {
    if let Ok(a) = s.parse() {
        return Ok(a);
    }
    s.to_socket_addrs()
        .map_err(|e| format!("`{s}` is not an address HOST:PORT ({e})"))?
        .next()
        .ok_or_else(|| format!("`{s}` resolves to no address"))
}

pub(crate) fn parse_path(s: &str) -> Result<(SocketAddr, SocketAddr), String> {
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

pub(crate) fn parse_secs(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v < 1e9 => Ok(v),
        _ => Err(format!("`{s}` is not a positive number of seconds")),
    }
}

/// Like [`parse_secs`], zero allowed.
pub(crate) fn parse_secs_or_zero(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(0.0) => Ok(0.0),
        _ => parse_secs(s).map_err(|_| format!("`{s}` is not a number of seconds (0 or more)")),
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
    fn registry_values() {
        let p = choice::parse::<Schemes>;
        assert_eq!(p("tcp"), Ok(SchemeConfig::named("tcp").unwrap()));
        assert_eq!(p("name=\"fmtcp\"").unwrap().name(), "fmtcp");
        assert_eq!(
            p("{ name = \"fmtcp\", delta = 0.01 }").unwrap().options()["delta"],
            0.01
        );
        let e = p("quic").unwrap_err();
        assert!(e.contains("fmtcp") && e.contains("mptcp"), "{e}");
        assert_eq!(
            choice::parse::<Controllers>("olia"),
            Ok(CcConfig::named("olia").unwrap())
        );
        assert!(choice::parse::<Controllers>("nope")
            .unwrap_err()
            .contains("wvegas"));
        assert_eq!(
            choice::parse::<Schedulers>("round-robin"),
            Ok(SchedulerConfig::named("round-robin").unwrap())
        );
    }

    #[test]
    fn names_in_the_output_directory() {
        assert_eq!(safe_name("/etc/passwd").as_deref(), Some("passwd"));
        assert_eq!(safe_name("a/../../b.bin").as_deref(), Some("b.bin"));
        assert_eq!(safe_name(".."), None);
        assert_eq!(safe_name(".bashrc"), None);
        assert_eq!(safe_name("x/"), None);
        assert_eq!(safe_name("a\u{7}b"), None);
    }

    #[derive(clap::Parser)]
    struct Conn {
        #[command(flatten)]
        c: ConnArgs,
    }

    fn config(args: &[&str]) -> ConnectionConfig {
        use clap::Parser;
        let mut v = vec!["t"];
        v.extend(args);
        Conn::try_parse_from(v).unwrap().c.config(2).unwrap()
    }

    /// `--bonding` is exactly the four options docs/udp.md lists, an explicit probe interval
    /// wins, and without it the simulator's defaults hold (reordering tolerance on).
    #[test]
    fn bonding_preset() {
        let d = config(&[]);
        assert!(!d.tail_loss_probe && !d.cwnd_validation && !d.probe_new_paths);
        assert_eq!(d.max_probe_interval, None);
        assert!(d.reorder_tolerance);
        let b = config(&["--bonding"]);
        assert!(b.tail_loss_probe && b.cwnd_validation && b.probe_new_paths);
        assert_eq!(
            b.max_probe_interval,
            Some(tributary_proto::Duration::from_secs(1))
        );
        assert!(b.reorder_tolerance);
        let e = config(&["--bonding", "--max-probe-interval", "3"]);
        assert_eq!(
            e.max_probe_interval,
            Some(tributary_proto::Duration::from_secs(3))
        );
        assert!(!config(&["--no-reorder-tolerance"]).reorder_tolerance);
        // Everything else is as without the flag.
        assert_eq!(
            ConnectionConfig {
                tail_loss_probe: false,
                cwnd_validation: false,
                probe_new_paths: false,
                max_probe_interval: None,
                ..b
            },
            d
        );
    }

    #[test]
    fn seconds() {
        assert_eq!(parse_secs("1.5"), Ok(1.5));
        assert!(parse_secs("0").is_err());
        assert!(parse_secs("nan").is_err());
        assert_eq!(parse_secs_or_zero("0"), Ok(0.0));
        assert_eq!(parse_secs_or_zero("60"), Ok(60.0));
        assert!(parse_secs_or_zero("-1").is_err());
        assert!(parse_secs_or_zero("inf").is_err());
    }
}
