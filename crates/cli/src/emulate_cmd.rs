//! `tributary emulate FILE`: the paths of a scenario between two network namespaces (see
//! `tributary-emu` and `docs/emulate.md`), with commands run on both sides, or this stack's
//! transfer of the scenario's flow (`--transfer`), optionally next to the simulator's run of
//! the same scenario (`--compare`).

use crate::net_cmds::{finish_qlog, start_qlog};
use anyhow::{bail, Context, Result};
use clap::Args;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration as StdDuration, Instant as StdInstant};
use tributary_emu::{netns, signals, Emulator, Options};
use tributary_lab::run::repetition_seed;
use tributary_lab::Scenario;
use tributary_net::qlog::QlogDir;
use tributary_net::{SocketOptions, TransferOptions, UdpDriver};
use tributary_proto::qlog::VantagePoint;
use tributary_sim::{FlowKind, SimConfig};

/// Arguments of `tributary emulate`.
#[derive(Debug, Args)]
pub struct EmulateArgs {
    /// Scenario file (its links, the paths of one flow, its timed events).
    pub file: PathBuf,
    /// Which `[[flows]]` entry's paths to emulate (default: the first).
    #[arg(long, value_name = "NAME")]
    pub flow: Option<String>,
    /// Which variant (default: the first).
    #[arg(long, value_name = "NAME")]
    pub variant: Option<String>,
    /// Which sweep point, by label (default: the first).
    #[arg(long, value_name = "LABEL")]
    pub point: Option<String>,
    /// Master seed (replaces the file's; the links use repetition 0's seed, as `run` does).
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Shell command run in the receiving namespace (side b) first.
    #[arg(long, value_name = "CMD")]
    pub receiver: Option<String>,
    /// Shell command run in the sending namespace (side a); the emulation ends when it
    /// exits (after the receiver has had `--grace` seconds to finish).
    #[arg(long, value_name = "CMD")]
    pub sender: Option<String>,
    /// Seconds between starting the receiver and the sender.
    #[arg(long, default_value_t = 0.5, value_name = "SECS")]
    pub receiver_head_start: f64,
    /// Seconds the receiver may take to exit after the sender did.
    #[arg(long, default_value_t = 5.0, value_name = "SECS")]
    pub grace: f64,
    /// Stop after this many seconds (default: when the sender exits, or on Ctrl-C).
    #[arg(long, value_name = "SECS")]
    pub time: Option<f64>,
    /// Run the scenario's flow with this stack (its scheme, congestion control, buffers)
    /// over the emulated paths, for the scenario's duration (or its `bytes`), and report
    /// the goodput.
    #[arg(long, conflicts_with_all = ["sender", "receiver"])]
    pub transfer: bool,
    /// With --transfer: also run the simulator on the same scenario and seed, and print
    /// both.
    #[arg(long, requires = "transfer")]
    pub compare: bool,
    /// With --transfer: write qlog traces of both ends of this stack's connection into this
    /// directory (`sender-<id>.sqlog`, `receiver-<id>.sqlog`, as `tributary send/recv
    /// --qlog`; no file is overwritten). The simulator's twin is traced by `tributary run
    /// FILE --seed S --qlog DIR`.
    #[arg(long, value_name = "DIR", requires = "transfer")]
    pub qlog: Option<PathBuf>,
    /// Write the run's numbers (paths, link counters, emulator accuracy) as JSON here.
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Do not run the packet loop at real-time priority (SCHED_FIFO); expect late packets
    /// on a loaded machine.
    #[arg(long)]
    pub no_realtime: bool,
    /// First two bytes of the path addresses (path i: S.S.i.1 and S.S.i.2).
    #[arg(long, default_value = "10.77", value_parser = parse_subnet)]
    pub subnet: [u8; 2],
}

fn parse_subnet(s: &str) -> Result<[u8; 2], String> {
    let parts: Vec<&str> = s.split('.').collect();
    match parts.as_slice() {
        [a, b] => match (a.parse(), b.parse()) {
            (Ok(a), Ok(b)) => Ok([a, b]),
            _ => Err(format!("`{s}` is not two bytes like 10.77")),
        },
        _ => Err(format!("`{s}` is not two bytes like 10.77")),
    }
}

fn parse_secs(v: f64, what: &str) -> Result<StdDuration> {
    if !(v.is_finite() && (0.0..1e9).contains(&v)) {
        bail!("{what} must be a non-negative number of seconds");
    }
    Ok(StdDuration::from_secs_f64(v))
}

/// Picks (config, flow index, flow group name) as asked.
fn select(a: &EmulateArgs, s: &Scenario) -> Result<(SimConfig, usize, String)> {
    let v = match &a.variant {
        None => 0,
        Some(n) => s
            .variants
            .iter()
            .position(|x| x == n)
            .with_context(|| format!("no variant `{n}` (known: {})", s.variants.join(", ")))?,
    };
    let p = match &a.point {
        None => 0,
        Some(l) => s
            .points
            .iter()
            .position(|x| &x.label == l)
            .with_context(|| {
                let labels: Vec<&str> = s.points.iter().map(|p| p.label.as_str()).collect();
                format!("no sweep point `{l}` (known: {})", labels.join(", "))
            })?,
    };
    let c = s.config(v, p);
    let g = match &a.flow {
        None => &c.groups[0],
        Some(n) => c.groups.iter().find(|g| &g.name == n).with_context(|| {
            let names: Vec<&str> = c.groups.iter().map(|g| g.name.as_str()).collect();
            format!("no flow `{n}` (known: {})", names.join(", "))
        })?,
    };
    let mut sim = c.sim.clone();
    sim.seed = repetition_seed(a.seed.unwrap_or(s.seed), 0);
    Ok((sim, g.flows.start, g.name.clone()))
}

/// Runs `tributary emulate`.
pub fn emulate(a: EmulateArgs) -> Result<()> {
    if let Some(why) = netns::unavailable() {
        bail!("cannot emulate here: {why}");
    }
    let scenario = Scenario::load(&a.file)?;
    let (cfg, flow, flow_name) = select(&a, &scenario)?;
    let head_start = parse_secs(a.receiver_head_start, "--receiver-head-start")?;
    let grace = parse_secs(a.grace, "--grace")?;
    let limit = a.time.map(|t| parse_secs(t, "--time")).transpose()?;
    signals::install().context("cannot install signal handlers")?;
    let opts = Options {
        subnet: a.subnet,
        realtime: !a.no_realtime,
        ..Options::default()
    };
    let mut emu = Emulator::new(&cfg, flow, &opts, |m| eprintln!("{m}"))?;
    eprintln!(
        "emulating flow `{flow_name}` of {}: sender side `{}`, receiver side `{}`",
        a.file.display(),
        emu.sender_ns(),
        emu.receiver_ns()
    );
    for (i, p) in emu.paths().iter().enumerate() {
        eprintln!(
            "  path {i} ({}): {} {} <-> {} {}",
            p.name,
            emu.sender_ns(),
            p.a,
            emu.receiver_ns(),
            p.b
        );
    }
    let outcome = if a.transfer {
        transfer(&mut emu, &cfg, flow, a.compare, a.qlog.as_deref())
    } else {
        commands(&mut emu, &a, head_start, grace, limit)
    };
    let report = summary(&emu);
    eprint!("{report}");
    if let Some(p) = &a.json {
        let json = json_report(&emu, &outcome);
        std::fs::write(p, json).with_context(|| format!("cannot write {}", p.display()))?;
    }
    drop(emu);
    if let Some(sig) = signals::received() {
        bail!("stopped by {}; namespaces removed", signals::name(sig));
    }
    outcome.map(|o| {
        if let Some(line) = o.line {
            println!("{line}");
        }
    })
}

/// What a run produced for the report.
struct Outcome {
    /// One line for standard output.
    line: Option<String>,
    /// (emulated goodput, simulated goodput) Mbit/s.
    goodput: Option<(f64, Option<f64>)>,
    /// Emulated transfer: goodput every 100 ms, (end of interval s, Mbit/s).
    series: Vec<[f64; 2]>,
}

fn summary(emu: &Emulator) -> String {
    let st = emu.stats();
    let mut s = String::new();
    for (i, p) in emu.paths().iter().enumerate() {
        s += &format!(
            "path {i} ({}): a->b {} read, {} delivered; b->a {} read, {} delivered\n",
            p.name, st.from_a[i], st.to_b[i], st.from_b[i], st.to_a[i]
        );
    }
    for (name, f, r) in emu.link_stats() {
        if f.offered + r.offered == 0 {
            continue;
        }
        s += &format!(
            "link {name}: forward {} offered, {} queue / {} random / {} down drops; \
             reverse {} offered, {} queue / {} random / {} down drops\n",
            f.offered,
            f.queue_drops,
            f.random_drops,
            f.down_drops,
            r.offered,
            r.queue_drops,
            r.random_drops,
            r.down_drops
        );
    }
    s += &format!(
        "emulator: {:.2} s CPU over {:.2} s ({:.0} %); deliveries late by {:.1} us on \
         average, 99 % within {} us, at most {:.2} ms; {} write errors\n",
        st.cpu_s,
        st.wall_s,
        100.0 * st.cpu_s / st.wall_s.max(1e-9),
        st.lateness.mean_us(),
        st.lateness.quantile_us(0.99),
        st.lateness.max_ns as f64 / 1e6,
        st.write_errors
    );
    s
}

fn json_report(emu: &Emulator, out: &Result<Outcome>) -> String {
    let st = emu.stats();
    let links: Vec<serde_json::Value> = emu
        .link_stats()
        .into_iter()
        .map(|(name, f, r)| serde_json::json!({"name": name, "forward": f, "reverse": r}))
        .collect();
    let (emu_g, sim_g, series) = match out {
        Ok(Outcome {
            goodput: Some((e, s)),
            series,
            ..
        }) => (Some(*e), *s, series.clone()),
        _ => (None, None, Vec::new()),
    };
    let v = serde_json::json!({
        "paths": emu.paths().iter().enumerate().map(|(i, p)| serde_json::json!({
            "name": p.name, "a": p.a.to_string(), "b": p.b.to_string(),
            "from_a": st.from_a[i], "to_b": st.to_b[i],
            "from_b": st.from_b[i], "to_a": st.to_a[i],
        })).collect::<Vec<_>>(),
        "links": links,
        "cpu_s": st.cpu_s,
        "wall_s": st.wall_s,
        "lateness_mean_us": st.lateness.mean_us(),
        "lateness_p99_us": st.lateness.quantile_us(0.99),
        "lateness_max_us": st.lateness.max_ns as f64 / 1e3,
        "write_errors": st.write_errors,
        "goodput_mbps": emu_g,
        "sim_goodput_mbps": sim_g,
        "series": series,
    });
    serde_json::to_string_pretty(&v).expect("JSON") + "\n"
}

/// Starts `cmd` with `sh -c` inside namespace `ns`, in its own process group.
fn spawn_in(ns: &str, cmd: &str, emu: &Emulator) -> Result<Child> {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns, "sh", "-c", cmd])
        .env("TRIB_NS_A", emu.sender_ns())
        .env("TRIB_NS_B", emu.receiver_ns())
        .env("TRIB_PATHS", emu.paths().len().to_string())
        .process_group(0);
    for (i, p) in emu.paths().iter().enumerate() {
        c.env(format!("TRIB_A{i}"), p.a.to_string())
            .env(format!("TRIB_B{i}"), p.b.to_string());
    }
    c.spawn()
        .with_context(|| format!("cannot start `{cmd}` in {ns}"))
}

/// Ends a child and its process group: SIGTERM, then SIGKILL after a second.
fn end(child: &mut Child) {
    if matches!(child.try_wait(), Ok(Some(_))) {
        return;
    }
    let pgid = child.id() as i32;
    // SAFETY: kill(2) on the process group we created for this child.
    unsafe { libc::kill(-pgid, libc::SIGTERM) };
    let t = StdInstant::now();
    while t.elapsed() < StdDuration::from_secs(1) {
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        std::thread::sleep(StdDuration::from_millis(20));
    }
    // SAFETY: as above.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    let _ = child.wait();
}

/// Runs the emulator while the user's commands run (or until Ctrl-C / --time).
fn commands(
    emu: &mut Emulator,
    a: &EmulateArgs,
    head_start: StdDuration,
    grace: StdDuration,
    limit: Option<StdDuration>,
) -> Result<Outcome> {
    let mut receiver = match &a.receiver {
        Some(cmd) => Some(spawn_in(emu.receiver_ns(), cmd, emu)?),
        None => None,
    };
    if receiver.is_some() {
        // Carry packets while the receiver starts (its set-up may already use the paths).
        let t = StdInstant::now();
        emu.run(|| t.elapsed() >= head_start || signals::received().is_some())?;
    }
    emu.reset_clock();
    let mut sender = match &a.sender {
        Some(cmd) => Some(spawn_in(emu.sender_ns(), cmd, emu)?),
        None => None,
    };
    if sender.is_none() && receiver.is_none() {
        eprintln!(
            "run commands with `ip netns exec {} CMD` (sender side) and `ip netns exec {} CMD` \
             (receiver side); Ctrl-C stops the emulator and removes the namespaces",
            emu.sender_ns(),
            emu.receiver_ns()
        );
    }
    let start = StdInstant::now();
    let mut sender_done: Option<(StdInstant, std::process::ExitStatus)> = None;
    let mut receiver_status = None;
    let res = emu.run(|| {
        if signals::received().is_some() || limit.is_some_and(|l| start.elapsed() >= l) {
            return true;
        }
        if let (Some(s), None) = (sender.as_mut(), sender_done) {
            if let Ok(Some(st)) = s.try_wait() {
                sender_done = Some((StdInstant::now(), st));
            }
        }
        if let (Some(r), None) = (receiver.as_mut(), receiver_status) {
            if let Ok(Some(st)) = r.try_wait() {
                receiver_status = Some(st);
            }
        }
        match sender_done {
            Some((t, _)) => receiver.is_none() || receiver_status.is_some() || t.elapsed() >= grace,
            // Without a sender, a receiver that exits ends the run.
            None => sender.is_none() && receiver.is_some() && receiver_status.is_some(),
        }
    });
    for c in [sender.as_mut(), receiver.as_mut()].into_iter().flatten() {
        end(c);
    }
    res?;
    let mut failed = Vec::new();
    if let Some((_, st)) = sender_done {
        if !st.success() {
            failed.push(format!("sender exited with {st}"));
        }
    }
    if let Some(st) = receiver_status {
        if !st.success() {
            failed.push(format!("receiver exited with {st}"));
        }
    } else if receiver.is_some() && signals::received().is_none() && limit.is_none() {
        failed.push(format!(
            "receiver still running {grace:?} after the sender exited; stopped"
        ));
    }
    if !failed.is_empty() {
        bail!("{}", failed.join("; "));
    }
    Ok(Outcome {
        line: None,
        goodput: None,
        series: Vec::new(),
    })
}

/// Yields `limit` bytes, or bytes until `deadline` if `limit` is `None`.
struct Source {
    left: Option<u64>,
    deadline: StdInstant,
    counter: u64,
}

impl Read for Source {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = match self.left {
            Some(l) => (l as usize).min(buf.len()),
            None if StdInstant::now() >= self.deadline => 0,
            None => buf.len(),
        };
        for b in &mut buf[..n] {
            *b = self.counter as u8;
            self.counter = self
                .counter
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1);
        }
        if let Some(l) = &mut self.left {
            *l -= n as u64;
        }
        Ok(n)
    }
}

/// Counts bytes, and the bytes received before a deadline, and when the last byte came.
struct Sink {
    start: StdInstant,
    deadline: Option<StdInstant>,
    bytes: Arc<AtomicU64>,
    by_deadline: u64,
    last: StdDuration,
    /// Goodput (Mbit/s) over each 100 ms from the start: (end of interval s, Mbit/s).
    series: Vec<[f64; 2]>,
    bucket: u64,
}

const BUCKET: StdDuration = StdDuration::from_millis(100);

impl Sink {
    /// Closes the intervals that ended by `t` (time since the start).
    fn roll(&mut self, t: StdDuration) {
        while t >= BUCKET * (self.series.len() as u32 + 1) {
            let end = BUCKET * (self.series.len() as u32 + 1);
            let mbps = self.bucket as f64 * 8.0 / BUCKET.as_secs_f64() / 1e6;
            self.series.push([end.as_secs_f64(), mbps]);
            self.bucket = 0;
        }
    }
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let now = StdInstant::now();
        self.roll(now.duration_since(self.start));
        self.bucket += buf.len() as u64;
        if self.deadline.is_none_or(|d| now <= d) {
            self.by_deadline += buf.len() as u64;
        }
        self.bytes.fetch_add(buf.len() as u64, Ordering::Relaxed);
        self.last = now.duration_since(self.start);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// This stack's transfer of the flow over the emulated paths.
fn transfer(
    emu: &mut Emulator,
    cfg: &SimConfig,
    flow: usize,
    compare: bool,
    qlog: Option<&Path>,
) -> Result<Outcome> {
    let f = &cfg.flows[flow];
    if f.kind == FlowKind::PerPath {
        bail!(
            "--transfer runs one connection over the flow's paths; n-tcp flows are not supported"
        );
    }
    if !matches!(f.app.name(), "bulk" | "file") {
        bail!(
            "--transfer replays bulk and file flows only, not `{}`",
            f.app.name()
        );
    }
    if f.read_rate_bps().is_some() {
        bail!("--transfer does not model a limited read rate (read_rate)");
    }
    // Checked before anything starts: a bad directory is an error, not a lost trace.
    let (qlog_tx, qlog_rx) = match qlog {
        Some(dir) => (
            Some(QlogDir::new(dir, "sender", VantagePoint::Client)?),
            Some(QlogDir::new(dir, "receiver", VantagePoint::Server)?),
        ),
        None => (None, None),
    };
    let conn = f.conn.clone();
    let duration = StdDuration::from_nanos(cfg.duration.as_nanos());
    // The flow alone, as the simulator's twin (`--compare`) runs it; the emulated transfer
    // starts when that run starts the flow (`start` plus its `start_jitter` draw).
    let alone = SimConfig {
        flows: vec![f.clone()],
        ..cfg.clone()
    };
    let start_delay = StdDuration::from_nanos(tributary_sim::flow_start(&alone, 0).as_nanos());
    let listen: Vec<SocketAddr> = emu
        .paths()
        .iter()
        .enumerate()
        .map(|(i, p)| SocketAddr::from((p.b, 5000 + i as u16)))
        .collect();
    let paths: Vec<(SocketAddr, SocketAddr)> = emu
        .paths()
        .iter()
        .zip(&listen)
        .map(|(p, &l)| (SocketAddr::from((p.a, 0)), l))
        .collect();
    let (ns_a, ns_b) = (emu.sender_ns().to_string(), emu.receiver_ns().to_string());
    let opts = TransferOptions {
        idle_timeout: StdDuration::from_secs(30),
        linger: StdDuration::from_secs(1),
    };
    let sock = SocketOptions::default();
    let done = Arc::new(AtomicBool::new(false));
    let delivered = Arc::new(AtomicU64::new(0));
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<StdInstant>();
    let rconn = conn.clone();
    let rdone = done.clone();
    let rbytes = delivered.clone();
    let bytes = f.bytes();
    let receiver = std::thread::spawn(move || -> Result<(u64, StdDuration, Vec<[f64; 2]>)> {
        let r = (|| -> Result<(u64, StdDuration, Vec<[f64; 2]>)> {
            netns::enter(&ns_b)?;
            let mut d = UdpDriver::listen(rconn, &listen, sock)?;
            start_qlog(&mut d, &qlog_rx)?;
            ready_tx.send(())?;
            let start: StdInstant = go_rx.recv()?;
            let mut sink = Sink {
                start,
                deadline: bytes.is_none().then_some(start + duration),
                bytes: rbytes,
                by_deadline: 0,
                last: StdDuration::ZERO,
                series: Vec::new(),
                bucket: 0,
            };
            tributary_net::receive_stream(&mut d, &mut sink, &opts)?;
            drop(d);
            let end = sink.last.max(duration);
            sink.roll(end);
            Ok((sink.by_deadline, sink.last, sink.series))
        })();
        rdone.store(true, Ordering::SeqCst);
        let q = finish_qlog(qlog_rx);
        let r = r?;
        q?;
        Ok(r)
    });
    // Carry packets while the receiver binds; then time zero for both.
    let t = StdInstant::now();
    let mut ready = false;
    emu.run(|| {
        ready = ready || ready_rx.try_recv().is_ok();
        ready || t.elapsed() > StdDuration::from_secs(5) || done.load(Ordering::SeqCst)
    })?;
    if !ready {
        done.store(true, Ordering::SeqCst);
        return match receiver.join() {
            Ok(Err(e)) => Err(e.context("receiver")),
            _ => bail!("the receiver did not start"),
        };
    }
    emu.reset_clock();
    let start = StdInstant::now();
    go_tx.send(start)?;
    let sdone = Arc::new(AtomicBool::new(false));
    let sflag = sdone.clone();
    let sender = std::thread::spawn(move || -> Result<()> {
        let r = (|| -> Result<()> {
            netns::enter(&ns_a)?;
            std::thread::sleep(start_delay);
            let mut d = UdpDriver::connect(conn, &paths, sock)?;
            start_qlog(&mut d, &qlog_tx)?;
            let src = Source {
                left: bytes,
                deadline: start + duration,
                counter: 1,
            };
            tributary_net::send_stream(&mut d, src, &opts)?;
            Ok(())
        })();
        sflag.store(true, Ordering::SeqCst);
        let q = finish_qlog(qlog_tx);
        r?;
        q
    });
    emu.run(|| {
        signals::received().is_some()
            || (done.load(Ordering::SeqCst) && sdone.load(Ordering::SeqCst))
    })?;
    if let Some(sig) = signals::received() {
        bail!("stopped by {}", signals::name(sig));
    }
    sender
        .join()
        .map_err(|_| anyhow::anyhow!("sender thread panicked"))?
        .context("sender")?;
    let (by_deadline, last, series) = receiver
        .join()
        .map_err(|_| anyhow::anyhow!("receiver thread panicked"))?
        .context("receiver")?;
    // Goodput as the simulator defines it: bytes delivered over the flow's active time
    // (start to completion for a finite flow; start to the end of the run for a bulk one).
    let active = match bytes {
        Some(_) => last.saturating_sub(start_delay),
        None => duration.saturating_sub(start_delay),
    };
    let got = match bytes {
        Some(b) => b,
        None => by_deadline,
    };
    let emu_mbps = got as f64 * 8.0 / active.as_secs_f64().max(1e-9) / 1e6;
    let sim_mbps = if compare {
        let r = tributary_sim::run(alone).context("simulator")?;
        Some(r.flows[0].goodput_mbps)
    } else {
        None
    };
    let line = match sim_mbps {
        Some(s) => format!(
            "goodput: emulated {emu_mbps:.3} Mbit/s, simulated {s:.3} Mbit/s \
             (emulated/simulated = {:.3})",
            emu_mbps / s
        ),
        None => format!("goodput: emulated {emu_mbps:.3} Mbit/s"),
    };
    Ok(Outcome {
        line: Some(line),
        goodput: Some((emu_mbps, sim_mbps)),
        series,
    })
}
