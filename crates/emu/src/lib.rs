//! Tributary's user-space path emulator: the paths of a scenario between two network
//! namespaces, with the simulator's own link model applied to real packets.
//!
//! [`Emulator::new`] creates two network namespaces, `a` (the sending side) and `b` (the
//! receiving side), and for each path of one flow of a compiled scenario a TUN device in
//! each: path `i` is `tun<i>` with address `10.77.<i>.1/24` in `a` and `10.77.<i>.2/24` in
//! `b` (the `10.77` prefix is [`Options::subnet`]). Every packet the kernel of one side sends
//! on `tun<i>` is read by the emulator, taken through the path's links by the shared link
//! model ([`tributary_link`]: rate or Mahimahi trace, drop-tail queue, delay, loss, reordering,
//! duplication, corruption, down/up, timed changes) in [`network::Network`], and written to
//! the other side's `tun<i>` when the model says it arrives. The forward direction of the
//! links carries `a → b`, the reverse direction `b → a`, exactly as data and ACKs in the
//! simulator. Any IP traffic crosses: this stack over UDP, kernel TCP and MPTCP, ping, iperf3.
//!
//! Time is the monotonic clock since the emulator's origin ([`Emulator::reset_clock`]),
//! converted to the same integer-nanosecond [`Instant`] the simulator uses; timed changes and
//! traces count from it.
//!
//! Clean-up: the TUN devices are not persistent (the kernel removes them when the process
//! exits, however it exits); the namespaces are deleted when the [`Emulator`] is dropped
//! (normal exit, error, panic, or SIGINT/SIGTERM through [`signals`]); namespaces left by an
//! emulator killed with SIGKILL are found and deleted by the next one ([`netns::remove_stale`]).

#![warn(missing_docs)]

pub mod netns;
pub mod network;
pub mod signals;
pub mod tun;

use netns::Netns;
use network::{Network, Route};
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use tributary_proto::time::{Duration, Instant};
use tributary_sim::{LinkStats, SimConfig};
use tun::Tun;

/// Why the emulator could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum EmuError {
    /// The scenario cannot be emulated as asked.
    #[error("{0}")]
    Config(String),
    /// Setting up namespaces or devices failed.
    #[error("setting up the emulated paths: {0}")]
    Setup(io::Error),
    /// Reading or writing packets failed.
    #[error("emulating: {0}")]
    Io(io::Error),
}

/// Emulator options.
#[derive(Debug, Clone)]
pub struct Options {
    /// First two bytes of the addresses: path `i` is `S.S.i.1` (side a) and `S.S.i.2` (b).
    pub subnet: [u8; 2],
    /// MTU of the TUN devices.
    pub mtu: u32,
    /// Run the packet loop under SCHED_FIFO (real-time priority 10) so that it wakes up on
    /// time on a loaded machine; the previous policy is restored when [`Emulator::run`]
    /// returns. On this project's shared 2-core VM under load, it cut the 99th percentile of
    /// wake-up lateness from about 1 ms to under 0.1 ms (docs/emulate.md). The kernel's
    /// real-time throttling (95 % by default) keeps other processes alive.
    pub realtime: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            subnet: [10, 77],
            mtu: 1500,
            realtime: true,
        }
    }
}

/// One emulated path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmuPath {
    /// The path's name in the scenario (its link names joined by `+` for multi-link paths).
    pub name: String,
    /// Interface name on both sides.
    pub device: String,
    /// Address of side a (sender).
    pub a: Ipv4Addr,
    /// Address of side b (receiver).
    pub b: Ipv4Addr,
}

/// Counters of a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EmuStats {
    /// Packets read from side a, per path.
    pub from_a: Vec<u64>,
    /// Packets read from side b, per path.
    pub from_b: Vec<u64>,
    /// Packets written (delivered), per path, towards b and towards a.
    pub to_b: Vec<u64>,
    /// Packets written towards a, per path.
    pub to_a: Vec<u64>,
    /// Packets the kernel refused when written (counted as lost).
    pub write_errors: u64,
    /// Lateness of deliveries (real write time minus the model's arrival time).
    pub lateness: Lateness,
    /// CPU time the emulator's thread used while running (user + system), seconds.
    pub cpu_s: f64,
    /// Wall time of the run, seconds.
    pub wall_s: f64,
}

/// Distribution of delivery lateness in power-of-two microsecond buckets.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Lateness {
    /// Deliveries counted.
    pub count: u64,
    /// Sum, nanoseconds.
    pub sum_ns: u128,
    /// Largest, nanoseconds.
    pub max_ns: u64,
    /// `buckets[k]`: deliveries at most 2^k µs late (k = 0: up to 1 µs).
    pub buckets: [u64; 24],
}

impl Lateness {
    fn add(&mut self, ns: u64) {
        self.count += 1;
        self.sum_ns += ns as u128;
        self.max_ns = self.max_ns.max(ns);
        let us = ns.div_ceil(1000).max(1);
        let k = (64 - (us - 1).leading_zeros()) as usize;
        self.buckets[k.min(23)] += 1;
    }

    /// Mean lateness, microseconds.
    pub fn mean_us(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum_ns as f64 / self.count as f64 / 1000.0
        }
    }

    /// Upper bound (a power of two, µs) below which fraction `q` of deliveries lie.
    pub fn quantile_us(&self, q: f64) -> u64 {
        let want = (q * self.count as f64).ceil() as u64;
        let mut seen = 0;
        for (k, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= want {
                return 1 << k;
            }
        }
        1 << 23
    }
}

/// The running emulator: namespaces, devices and the network model.
#[derive(Debug)]
pub struct Emulator {
    // Devices first: they close before the namespaces are deleted.
    tuns: Vec<Tun>,
    /// `routes[t]`: the route of packets read from `tuns[t]`.
    routes: Vec<usize>,
    net: Network,
    /// What `net` was built from, to build it afresh at a new time zero.
    cfg: SimConfig,
    route_defs: Vec<Route>,
    paths: Vec<EmuPath>,
    origin: std::time::Instant,
    stats: EmuStats,
    realtime: bool,
    a: Netns,
    b: Netns,
}

/// The two devices of path `i` are `tuns[2 i]` (side a) and `tuns[2 i + 1]` (side b).
fn tun_index(path: usize, side_b: bool) -> usize {
    2 * path + side_b as usize
}

impl Emulator {
    /// Sets up the paths of flow `flow` of `cfg` (its links and timed changes, seeded by
    /// `cfg.seed` as in the simulator). Deletes stale namespaces of killed emulators first,
    /// telling `notice` about each.
    pub fn new(
        cfg: &SimConfig,
        flow: usize,
        opts: &Options,
        mut notice: impl FnMut(&str),
    ) -> Result<Emulator, EmuError> {
        let f = cfg.flows.get(flow).ok_or_else(|| {
            EmuError::Config(format!(
                "flow {flow} does not exist (the scenario has {})",
                cfg.flows.len()
            ))
        })?;
        if f.paths.len() > 255 {
            return Err(EmuError::Config("at most 255 paths can be emulated".into()));
        }
        if !(576..=65535).contains(&opts.mtu) {
            return Err(EmuError::Config(format!(
                "MTU {} is not in 576..=65535",
                opts.mtu
            )));
        }
        cfg.validate()
            .map_err(|e| EmuError::Config(format!("invalid scenario: {e}")))?;
        for m in netns::remove_stale() {
            notice(&m);
        }
        let id = netns::next_id();
        let a = Netns::create(id, "a").map_err(EmuError::Setup)?;
        let b = Netns::create(id, "b").map_err(EmuError::Setup)?;
        let mut net = Network::new(cfg, 0);
        let mut route_defs = Vec::new();
        let mut paths = Vec::new();
        let mut routes = Vec::new();
        let n = f.paths.len();
        let mut tuns_a = Vec::new();
        let mut tuns_b = Vec::new();
        for (ns, out) in [(&a, &mut tuns_a), (&b, &mut tuns_b)] {
            let made = ns
                .run(|| -> io::Result<Vec<Tun>> {
                    // No IPv6 on the emulated devices: no router solicitations or MLD reports
                    // disturb the links' packet sequences.
                    std::fs::write("/proc/sys/net/ipv6/conf/default/disable_ipv6", "1").or_else(
                        |e| {
                            if e.kind() == io::ErrorKind::NotFound {
                                Ok(())
                            } else {
                                Err(e)
                            }
                        },
                    )?;
                    (0..n).map(|i| Tun::create(&format!("tun{i}"))).collect()
                })
                .map_err(EmuError::Setup)?
                .map_err(EmuError::Setup)?;
            *out = made;
        }
        let mut tuns = Vec::new();
        for (i, (ta, tb)) in tuns_a.into_iter().zip(tuns_b).enumerate() {
            let route = &f.paths[i];
            let name = route
                .iter()
                .map(|&l| cfg.links[l].name.as_str())
                .collect::<Vec<_>>()
                .join("+");
            let addr_a = Ipv4Addr::new(opts.subnet[0], opts.subnet[1], i as u8, 1);
            let addr_b = Ipv4Addr::new(opts.subnet[0], opts.subnet[1], i as u8, 2);
            let dev = ta.name().to_string();
            for (ns, addr) in [(&a, addr_a), (&b, addr_b)] {
                let mtu = opts.mtu.to_string();
                netns::ip(&["-n", ns.name(), "link", "set", &dev, "mtu", &mtu])
                    .map_err(EmuError::Setup)?;
                netns::ip(&[
                    "-n",
                    ns.name(),
                    "addr",
                    "add",
                    &format!("{addr}/24"),
                    "dev",
                    &dev,
                ])
                .map_err(EmuError::Setup)?;
                netns::ip(&["-n", ns.name(), "link", "set", &dev, "up"])
                    .map_err(EmuError::Setup)?;
            }
            // a → b over the forward directions; b → a back over the reverse ones.
            let fwd_route = Route {
                hops: route.iter().map(|&l| 2 * l).collect(),
                dest: tun_index(i, true),
            };
            let rev_route = Route {
                hops: route.iter().rev().map(|&l| 2 * l + 1).collect(),
                dest: tun_index(i, false),
            };
            route_defs.push(fwd_route.clone());
            route_defs.push(rev_route.clone());
            let fwd = net.add_route(fwd_route);
            let rev = net.add_route(rev_route);
            routes.push(fwd);
            routes.push(rev);
            tuns.push(ta);
            tuns.push(tb);
            paths.push(EmuPath {
                name,
                device: dev,
                a: addr_a,
                b: addr_b,
            });
        }
        Ok(Emulator {
            tuns,
            routes,
            net,
            cfg: cfg.clone(),
            route_defs,
            stats: EmuStats {
                from_a: vec![0; n],
                from_b: vec![0; n],
                to_a: vec![0; n],
                to_b: vec![0; n],
                ..EmuStats::default()
            },
            paths,
            origin: std::time::Instant::now(),
            realtime: opts.realtime,
            a,
            b,
        })
    }

    /// The sending side's namespace (`ip netns exec NAME command`).
    pub fn sender_ns(&self) -> &str {
        self.a.name()
    }

    /// The receiving side's namespace.
    pub fn receiver_ns(&self) -> &str {
        self.b.name()
    }

    /// The paths, in the flow's order.
    pub fn paths(&self) -> &[EmuPath] {
        &self.paths
    }

    /// Makes now time zero of the links (timed changes and traces count from it). Call it
    /// before traffic starts. The links start afresh, as at the start of a simulation: packets
    /// still in flight are dropped, and the link counters restart (the path counters of
    /// [`Emulator::stats`] keep counting).
    pub fn reset_clock(&mut self) {
        self.origin = std::time::Instant::now();
        let mut net = Network::new(&self.cfg, 0);
        for r in &self.route_defs {
            net.add_route(r.clone());
        }
        self.net = net;
    }

    /// The emulator's time: monotonic time since the origin.
    pub fn now(&self) -> Instant {
        Instant::from_nanos(self.origin.elapsed().as_nanos() as u64)
    }

    /// Per link: name, forward and reverse counters.
    pub fn link_stats(&self) -> Vec<(String, LinkStats, LinkStats)> {
        self.net.stats()
    }

    /// Counters so far.
    pub fn stats(&self) -> &EmuStats {
        &self.stats
    }

    /// Moves packets until `stop()` returns true (it is asked at least every 10 ms).
    pub fn run(&mut self, mut stop: impl FnMut() -> bool) -> Result<(), EmuError> {
        // Wake-ups as precise as the hrtimer allows (the default slack is 50 µs).
        // SAFETY: prctl(PR_SET_TIMERSLACK) only changes this thread's timer slack.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
        let _rt = self.realtime.then(Realtime::enter);
        let cpu0 = thread_cpu_s();
        let wall0 = std::time::Instant::now();
        let mut buf = vec![0u8; 65536];
        let mut fds: Vec<libc::pollfd> = self
            .tuns
            .iter()
            .map(|t| libc::pollfd {
                fd: t.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let mut last_stop_check = wall0;
        let res = loop {
            let now = self.now();
            self.deliver(now);
            let wall = std::time::Instant::now();
            if wall.duration_since(last_stop_check) >= std::time::Duration::from_millis(10)
                || fds.iter().all(|f| f.revents == 0)
            {
                last_stop_check = wall;
                if stop() {
                    break Ok(());
                }
            }
            let wait = match self.net.next_deadline() {
                Some(t) => t
                    .saturating_since(self.now())
                    .min(Duration::from_millis(10)),
                None => Duration::from_millis(10),
            };
            let ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: wait.as_nanos() as libc::c_long,
            };
            // SAFETY: `fds` is a valid array of pollfd; `ts` outlives the call.
            let r = unsafe { libc::ppoll(fds.as_mut_ptr(), fds.len() as _, &ts, std::ptr::null()) };
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                break Err(EmuError::Io(e));
            }
            if r == 0 {
                continue;
            }
            for (t, fd) in fds.iter().enumerate() {
                if fd.revents == 0 {
                    continue;
                }
                if fd.revents & (libc::POLLERR | libc::POLLNVAL) != 0 {
                    return Err(EmuError::Io(io::Error::other(format!(
                        "device {} failed",
                        self.tuns[t].name()
                    ))));
                }
                // A bounded batch per device, so one busy device cannot starve the others
                // or the deliveries.
                for _ in 0..64 {
                    match self.tuns[t].recv(&mut buf) {
                        Ok(n) => {
                            let now = self.now();
                            self.deliver(now);
                            let path = t / 2;
                            if t % 2 == 0 {
                                self.stats.from_a[path] += 1;
                            } else {
                                self.stats.from_b[path] += 1;
                            }
                            self.net.inject(now, self.routes[t], &buf[..n]);
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(e) => return Err(EmuError::Io(e)),
                    }
                }
            }
        };
        self.stats.cpu_s += thread_cpu_s() - cpu0;
        self.stats.wall_s += wall0.elapsed().as_secs_f64();
        res
    }

    /// Writes every packet due by `now`.
    fn deliver(&mut self, now: Instant) {
        let Emulator {
            tuns, net, stats, ..
        } = self;
        net.advance(now, |d| {
            let late = now.saturating_since(d.at).as_nanos();
            stats.lateness.add(late);
            let path = d.dest / 2;
            if d.dest % 2 == 1 {
                stats.to_b[path] += 1;
            } else {
                stats.to_a[path] += 1;
            }
            if tuns[d.dest].send(&d.packet).is_err() {
                stats.write_errors += 1;
            }
        });
    }
}

/// The calling thread under SCHED_FIFO until dropped (then its previous policy again).
struct Realtime {
    policy: libc::c_int,
    param: libc::sched_param,
    entered: bool,
}

impl Realtime {
    fn enter() -> Realtime {
        // SAFETY: sched_getscheduler/getparam/setscheduler on the calling thread (pid 0)
        // with a valid sched_param.
        unsafe {
            let policy = libc::sched_getscheduler(0);
            let mut param: libc::sched_param = std::mem::zeroed();
            libc::sched_getparam(0, &mut param);
            let rt = libc::sched_param { sched_priority: 10 };
            let entered = policy >= 0 && libc::sched_setscheduler(0, libc::SCHED_FIFO, &rt) == 0;
            Realtime {
                policy,
                param,
                entered,
            }
        }
    }
}

impl Drop for Realtime {
    fn drop(&mut self) {
        if self.entered {
            // SAFETY: restores the policy read in `enter` for the calling thread.
            unsafe { libc::sched_setscheduler(0, self.policy, &self.param) };
        }
    }
}

/// CPU time (user + system) of the calling thread, seconds.
pub fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}
