//! `tributary perf`: memory-to-memory throughput tests with iperf3's habits (`-s` server,
//! `-t` duration, `-i` interval, `-R` reverse, `-J` JSON), per path. See `docs/udp.md`.

use crate::net_cmds::{finish_qlog, parse_addr, parse_path, parse_secs, start_qlog, ConnArgs};
use anyhow::bail;
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use tributary_net::keys;
use tributary_net::perf::{Interval, PathSample, PathTotal, Side};
use tributary_net::qlog::QlogDir;
use tributary_net::{
    Content, Listener, PerfOptions, PerfReport, ServerEvent, Service, TransferOptions, UdpDriver,
};

/// Arguments of `tributary perf`.
#[derive(Args, Debug)]
pub struct PerfArgs {
    /// Run as a server: take tests on the --listen addresses until interrupted.
    #[arg(short = 's', long, requires = "listen", conflicts_with_all = ["paths", "reverse", "json"])]
    pub server: bool,
    /// Server: local address to listen on (repeat for more).
    #[arg(long = "listen", value_name = "ADDR", value_parser = parse_addr)]
    pub listen: Vec<SocketAddr>,
    /// Client: one path LOCAL=REMOTE (repeat for more; path i is the i-th).
    #[arg(long = "path", value_name = "LOCAL=REMOTE", value_parser = parse_path,
          required_unless_present = "server")]
    pub paths: Vec<(SocketAddr, SocketAddr)>,
    /// Client: seconds to send.
    #[arg(short = 't', long = "time", default_value_t = 10.0, value_parser = parse_secs)]
    pub time: f64,
    /// Seconds between reports.
    #[arg(short = 'i', long, default_value_t = 1.0, value_parser = parse_secs)]
    pub interval: f64,
    /// Client: the server sends and the client receives.
    #[arg(short = 'R', long)]
    pub reverse: bool,
    /// Client: print the whole report as JSON at the end instead of text as it goes.
    #[arg(short = 'J', long)]
    pub json: bool,
    /// Client: the server's public key file (pinned).
    #[arg(long, value_name = "FILE")]
    pub peer_key: Option<PathBuf>,
    /// Server: file of the client public keys to accept.
    #[arg(long, value_name = "FILE")]
    pub peers: Option<PathBuf>,
    /// Server: longest test accepted, seconds.
    #[arg(long, default_value_t = 3600.0, value_parser = parse_secs)]
    pub max_time: f64,
    /// Server: most tests at once.
    #[arg(long, default_value_t = 16)]
    pub max_connections: usize,
    /// Server: handle one test, then exit.
    #[arg(short = '1', long)]
    pub one_off: bool,
    #[command(flatten)]
    pub conn: ConnArgs,
}

/// `tributary perf`.
pub fn perf(a: PerfArgs) -> anyhow::Result<()> {
    if a.server {
        server(&a)
    } else {
        client(&a)
    }
}

fn client(a: &PerfArgs) -> anyhow::Result<()> {
    if a.reverse && a.conn.insecure {
        bail!("-R needs the handshake (it carries the request to the server): drop --insecure");
    }
    let cfg = a.conn.config(a.paths.len())?;
    let peers = match &a.peer_key {
        Some(p) => vec![keys::read_public_key(p, "server public key")?],
        None => Vec::new(),
    };
    let creds = a.conn.credentials(peers, "--peer-key")?;
    let qlog = a.conn.qlog_dir("client")?;
    let duration = Duration::from_secs_f64(a.time);
    let mut d = match &creds {
        None => UdpDriver::connect(cfg, &a.paths, a.conn.sockets())?,
        Some(c) => UdpDriver::connect_secure_with_limits(
            cfg,
            &a.paths,
            a.conn.sockets(),
            c,
            Content::Perf {
                reverse: a.reverse,
                duration_ms: duration.as_millis().try_into().unwrap_or(u64::MAX),
            },
            &a.conn.limits(),
        )
        .map_err(|e| a.conn.connect_error(e))?,
    };
    start_qlog(&mut d, &qlog)?;
    let opts = PerfOptions {
        duration,
        interval: Duration::from_secs_f64(a.interval),
        reverse: a.reverse,
        idle_timeout: a.conn.timeout(),
    };
    if !a.json {
        let remotes: Vec<String> = a.paths.iter().map(|p| p.1.to_string()).collect();
        println!(
            "tributary perf to {} ({} path(s), {}, {}{}), {} for {:.1} s",
            remotes.join(", "),
            a.paths.len(),
            a.conn.scheme.name(),
            a.conn.cc.name(),
            if creds.is_some() { "" } else { ", insecure" },
            if a.reverse {
                "receiving (-R)"
            } else {
                "sending"
            },
            a.time
        );
        println!("{}", header());
    }
    let json = a.json;
    let mut printed: Option<Interval> = None;
    let r = tributary_net::perf_client(&mut d, &opts, &mut |i| {
        if !json {
            print_interval(i);
            printed = Some(i.clone());
        }
    });
    drop(d);
    let r = r?;
    if json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        if let (Some(p), Some(last)) = (&printed, r.local.intervals.last()) {
            print_remainder(p, last);
        }
        print_summary(&r);
    }
    finish_qlog(qlog)
}

fn header() -> String {
    format!(
        "{:>13}  {:<6} {:>12} {:>10} {:>9} {:>10} {:>6}",
        "interval s", "path", "bytes", "Mbit/s", "rtt ms", "cwnd", "lost"
    )
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or("-".into(), |v| v.to_string())
}

fn path_line(span: &str, p: &PathSample) -> String {
    format!(
        "{span:>13}  {:<6} {:>12} {:>10.1} {:>9} {:>10} {:>6}",
        p.path,
        p.bytes,
        p.mbps,
        opt(p.rtt_ms.map(|r| format!("{r:.2}"))),
        opt(p.cwnd),
        opt(p.lost)
    )
}

fn print_interval(i: &Interval) {
    for l in interval_lines(i) {
        println!("{l}");
    }
}

fn interval_lines(i: &Interval) -> Vec<String> {
    let span = format!("{:.2}-{:.2}", i.start, i.end);
    let mut lines: Vec<String> = i.paths.iter().map(|p| path_line(&span, p)).collect();
    if i.paths.len() != 1 {
        lines.push(format!(
            "{span:>13}  {:<6} {:>12} {:>10.1}",
            "all", i.bytes, i.mbps
        ));
    }
    lines
}

/// If the end of the test was folded into the last interval after it was printed (a
/// remainder shorter than a tenth of an interval), prints the remainder, so that the
/// printed lines add up to the summary.
fn print_remainder(printed: &Interval, last: &Interval) {
    for l in remainder_lines(printed, last) {
        println!("{l}");
    }
}

/// The lines of [`print_remainder`]: none unless `last` is `printed` extended. The rate
/// over a few milliseconds would mean nothing, so it is shown as `-`; RTT and window are
/// those at the end.
fn remainder_lines(printed: &Interval, last: &Interval) -> Vec<String> {
    if last.start != printed.start || last.end <= printed.end {
        return Vec::new();
    }
    // Milliseconds: both ends can round to the same hundredth.
    let span = format!("{:.3}-{:.3}", printed.end, last.end);
    let mut lines: Vec<String> = last
        .paths
        .iter()
        .zip(&printed.paths)
        .map(|(p, q)| {
            let lost = p.lost.map(|l| l.saturating_sub(q.lost.unwrap_or(0)));
            format!(
                "{span:>13}  {:<6} {:>12} {:>10} {:>9} {:>10} {:>6}",
                p.path,
                p.bytes.saturating_sub(q.bytes),
                "-",
                opt(p.rtt_ms.map(|r| format!("{r:.2}"))),
                opt(p.cwnd),
                opt(lost)
            )
        })
        .collect();
    if last.paths.len() != 1 {
        lines.push(format!(
            "{span:>13}  {:<6} {:>12} {:>10}",
            "all",
            last.bytes.saturating_sub(printed.bytes),
            "-"
        ));
    }
    lines
}

fn print_side(name: &str, s: &Side) {
    let span = format!("0.00-{:.2}", s.seconds);
    for p in &s.paths {
        println!("{}", total_line(&span, p));
    }
    println!(
        "{span:>13}  {:<6} {:>12} {:>10.1}  {name} (stream bytes, goodput)",
        "all", s.bytes, s.mbps
    );
}

/// A path's line of the summary; losses that proved spurious (reordering) are named.
fn total_line(span: &str, p: &PathTotal) -> String {
    let spurious = match p.spurious {
        Some(n) if n > 0 => format!("  ({n} spurious: reordered, not lost)"),
        _ => String::new(),
    };
    format!(
        "{span:>13}  {:<6} {:>12} {:>10.1} {:>9} {:>10} {:>6}{spurious}",
        p.path,
        p.bytes,
        p.mbps,
        "",
        "",
        opt(p.lost)
    )
}

fn print_summary(r: &PerfReport) {
    println!("- - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - -");
    match &r.remote {
        Some(sender) => {
            println!("sender (the server), as it reported:");
            for i in &sender.intervals {
                print_interval(i);
            }
            print_side("sender", sender);
            println!("receiver (this end):");
            print_side("receiver", &r.local);
        }
        None => print_side(if r.reverse { "receiver" } else { "sender" }, &r.local),
    }
}

fn server(a: &PerfArgs) -> anyhow::Result<()> {
    let peers = match &a.peers {
        Some(p) => keys::read_key_list(p)?,
        None => Vec::new(),
    };
    let creds = a.conn.credentials(peers, "--peers")?;
    let qlog = a.conn.qlog_dir("server")?;
    let interval = Duration::from_secs_f64(a.interval);
    let Some(creds) = creds else {
        return insecure_server(a, &qlog);
    };
    let mut d = UdpDriver::listen_secure(
        &a.listen,
        a.conn.sockets(),
        Listener {
            creds,
            limits: a.conn.limits(),
            admission: a.conn.admission(),
            max_connections: a.max_connections,
            service: Service::Perf {
                max_duration: Duration::from_secs_f64(a.max_time),
            },
        },
    )?;
    start_qlog(&mut d, &qlog)?;
    let addrs: Vec<String> = d.local_addrs().iter().map(|s| s.to_string()).collect();
    eprintln!("perf server listening on {}", addrs.join(", "));
    let stop = AtomicBool::new(false);
    let r = tributary_net::perf_serve(
        &mut d,
        a.conn.timeout(),
        interval,
        &stop,
        a.one_off.then_some(1),
        |e| match e {
            ServerEvent::Accepted { id, from, offer } => {
                let (reverse, ms) = match offer.content {
                    Content::Perf {
                        reverse,
                        duration_ms,
                    } => (reverse, duration_ms),
                    Content::File { .. } => (false, 0),
                };
                eprintln!(
                    "{id:016x}: test from {} ({}, {}, {} path(s), {:.1} s{})",
                    from.map_or("?".into(), |f| f.to_string()),
                    offer.config.scheme.name(),
                    offer.config.cc.name(),
                    offer.paths,
                    ms as f64 / 1e3,
                    if reverse { ", reverse: sending" } else { "" }
                )
            }
            ServerEvent::Failed { id, bytes, error } => {
                eprintln!("{id:016x}: failed after {bytes} bytes: {error}")
            }
            ServerEvent::Refused(r) => eprintln!("refused {}: {}", r.from, r.reason),
            ServerEvent::Done { .. } => {}
        },
        |done| {
            eprintln!(
                "{:016x}: done, {} {} bytes in {:.2} s: {:.1} Mbit/s",
                done.id,
                if done.reverse { "sent" } else { "received" },
                done.side.bytes,
                done.side.seconds,
                done.side.mbps
            );
        },
    );
    drop(d);
    r?;
    finish_qlog(qlog)
}

/// `--insecure`: no handshake, so no request: forward tests only, one at a time, both ends
/// configured alike.
fn insecure_server(a: &PerfArgs, qlog: &Option<QlogDir>) -> anyhow::Result<()> {
    let opts = TransferOptions {
        idle_timeout: a.conn.timeout(),
        linger: Duration::from_secs(2),
    };
    loop {
        let mut d = UdpDriver::listen(a.conn.config(0)?, &a.listen, a.conn.sockets())?;
        start_qlog(&mut d, qlog)?;
        let addrs: Vec<String> = d.local_addrs().iter().map(|s| s.to_string()).collect();
        eprintln!(
            "perf server listening on {} (insecure: forward tests only)",
            addrs.join(", ")
        );
        // Waits for the client as long as it takes.
        let r = loop {
            match tributary_net::receive_stream(&mut d, std::io::sink(), &opts) {
                Err(tributary_net::NetError::Idle { .. }) if d.stats().datagrams_received == 0 => {}
                r => break r,
            }
        };
        drop(d);
        match r {
            Ok(r) => eprintln!("done, {r}"),
            Err(e) => eprintln!("failed: {e}"),
        }
        if a.one_off {
            return finish_qlog(qlog.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(path: usize, bytes: u64, lost: u64) -> PathSample {
        PathSample {
            path,
            bytes,
            mbps: 0.0,
            rtt_ms: Some(1.0),
            cwnd: Some(10_000),
            lost: Some(lost),
        }
    }

    /// Per path (`0`, `1`) and `all`: the bytes and losses of `lines`, summed.
    fn sums(lines: &[String]) -> Vec<(String, u64, u64)> {
        let mut out: Vec<(String, u64, u64)> = Vec::new();
        for l in lines {
            let f: Vec<&str> = l.split_whitespace().collect();
            let bytes: u64 = f[2].parse().unwrap();
            let lost: u64 = f.get(6).map_or(0, |v| v.parse().unwrap());
            match out.iter_mut().find(|(k, ..)| k == f[1]) {
                Some(e) => {
                    e.1 += bytes;
                    e.2 += lost;
                }
                None => out.push((f[1].to_owned(), bytes, lost)),
            }
        }
        out
    }

    /// The summary names losses that proved spurious, only when there are some, and a peer's
    /// report without the field (before it existed) still reads.
    #[test]
    fn spurious_losses_are_named_in_the_summary() {
        let mut p = PathTotal {
            path: 1,
            bytes: 5_000,
            mbps: 4.0,
            lost: Some(7),
            retransmitted_bytes: Some(2_800),
            spurious: Some(3),
        };
        let l = total_line("0.00-1.00", &p);
        assert!(l.ends_with("7  (3 spurious: reordered, not lost)"), "{l}");
        p.spurious = Some(0);
        assert!(total_line("0.00-1.00", &p).ends_with(" 7"));
        let old: PathTotal = serde_json::from_str(
            r#"{"path":0,"bytes":1,"mbps":0.5,"lost":2,"retransmitted_bytes":0}"#,
        )
        .unwrap();
        assert_eq!(old.spurious, None);
    }

    /// An end folded into the printed last interval: the printed lines plus the remainder
    /// add up to the final interval (the one the summary adds up), per path and over all.
    #[test]
    fn a_folded_remainder_is_printed_so_the_lines_add_up() {
        let printed = Interval {
            start: 2.0,
            end: 3.0,
            bytes: 1_000_000,
            mbps: 8.0,
            paths: vec![sample(0, 700_000, 1), sample(1, 400_000, 0)],
        };
        let last = Interval {
            start: 2.0,
            end: 3.01,
            bytes: 1_050_000,
            mbps: 8.3,
            paths: vec![sample(0, 780_000, 3), sample(1, 400_500, 0)],
        };
        let rest = remainder_lines(&printed, &last);
        assert_eq!(rest.len(), 3, "{rest:#?}");
        assert!(rest
            .iter()
            .all(|l| l.trim_start().starts_with("3.000-3.010")));
        let mut all = interval_lines(&printed);
        all.extend(rest);
        assert_eq!(sums(&all), sums(&interval_lines(&last)));
        // One path: no `all` line, as in the intervals.
        let one = |i: &Interval| Interval {
            paths: i.paths[..1].to_vec(),
            ..i.clone()
        };
        assert_eq!(remainder_lines(&one(&printed), &one(&last)).len(), 1);
    }

    /// Nothing folded (the last interval is the one printed, or a later one): no lines.
    #[test]
    fn no_remainder_without_a_fold() {
        let i = Interval {
            start: 2.0,
            end: 3.0,
            bytes: 10,
            mbps: 0.0,
            paths: vec![sample(0, 10, 0)],
        };
        assert!(remainder_lines(&i, &i).is_empty());
        let next = Interval {
            start: 3.0,
            end: 4.0,
            ..i.clone()
        };
        assert!(remainder_lines(&i, &next).is_empty());
    }
}
