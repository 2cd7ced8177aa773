//! Named network namespaces (`ip netns`), entering them from a thread, and removing the ones
//! a killed emulator left behind.
//!
//! Every namespace the emulator creates is named `trib-<pid>-<n>-<side>`: the emulator's
//! process id, a counter (several emulators may run in one process, e.g. in tests) and the
//! side (`a` for the sender, `b` for the receiver). A namespace whose process no longer exists
//! is stale: [`remove_stale`] deletes it.

use std::io;
use std::os::fd::AsRawFd;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// Prefix of every namespace the emulator creates.
pub const PREFIX: &str = "trib-";

/// Where `ip netns` keeps its named namespaces.
const NETNS_DIR: &str = "/run/netns";

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A fresh id for a pair of namespaces of this process.
pub fn next_id() -> u32 {
    COUNTER.fetch_add(1, Ordering::Relaxed)
}

/// Runs `ip` with `args`; the error carries its message.
pub fn ip(args: &[&str]) -> io::Result<()> {
    let out = Command::new("ip").args(args).output().map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot run `ip` (install iproute2: scripts/install-emu-deps.sh): {e}"),
        )
    })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// A named network namespace, deleted when dropped.
#[derive(Debug)]
pub struct Netns {
    name: String,
}

impl Netns {
    /// Creates `trib-<pid>-<id>-<side>` with its loopback up; `id` from [`next_id`].
    pub fn create(id: u32, side: &str) -> io::Result<Netns> {
        let n = id;
        let name = format!("{PREFIX}{}-{n}-{side}", std::process::id());
        ip(&["netns", "add", &name])?;
        let ns = Netns { name };
        ip(&["-n", &ns.name, "link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// The namespace's name (for `ip netns exec NAME ...`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Runs `f` on a new thread inside this namespace and returns its result.
    pub fn run<T: Send>(&self, f: impl FnOnce() -> T + Send) -> io::Result<T> {
        std::thread::scope(|s| {
            s.spawn(|| {
                enter(&self.name)?;
                Ok(f())
            })
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("thread in namespace panicked")))
        })
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        if let Err(e) = ip(&["netns", "delete", &self.name]) {
            eprintln!(
                "warning: could not delete network namespace {}: {e}",
                self.name
            );
        }
    }
}

/// Moves the calling thread into the named network namespace (sockets it creates from now
/// on live there; threads it spawns start there).
pub fn enter(name: &str) -> io::Result<()> {
    let path = format!("{NETNS_DIR}/{name}");
    let f = std::fs::File::open(&path)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot open {path}: {e}")))?;
    // SAFETY: setns(2) on a descriptor we own, for the network namespace only.
    if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("setns({path}): {e}")));
    }
    Ok(())
}

/// The process id in an emulator namespace's name, if it is one.
fn owner(name: &str) -> Option<u32> {
    name.strip_prefix(PREFIX)?.split('-').next()?.parse().ok()
}

/// Deletes the namespaces left by emulators that no longer run (killed with SIGKILL, say)
/// and returns one message per namespace removed (or that could not be removed).
pub fn remove_stale() -> Vec<String> {
    let mut msgs = Vec::new();
    let Ok(dir) = std::fs::read_dir(NETNS_DIR) else {
        return msgs;
    };
    let mut names: Vec<String> = dir
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    names.sort();
    for name in names {
        let Some(pid) = owner(&name) else { continue };
        if std::path::Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        // Commands the killed emulator started there lost their network with it: end them.
        let ended = end_processes_in(&name);
        let ended = if ended.is_empty() {
            String::new()
        } else {
            format!("; ended the processes still in it: {ended:?}")
        };
        match ip(&["netns", "delete", &name]) {
            Ok(()) => msgs.push(format!(
                "removed stale network namespace {name} (left by emulator process {pid}, \
                 which no longer runs){ended}"
            )),
            Err(e) => msgs.push(format!(
                "stale network namespace {name} (process {pid} is gone) could not be removed: {e}"
            )),
        }
    }
    msgs
}

/// Sends SIGTERM to every process in namespace `name` (`ip netns pids`); returns their ids.
fn end_processes_in(name: &str) -> Vec<i32> {
    let Ok(out) = Command::new("ip").args(["netns", "pids", name]).output() else {
        return Vec::new();
    };
    let pids: Vec<i32> = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .filter(|&p| p > 1)
        .collect();
    for &p in &pids {
        // SAFETY: kill(2) of one process by id.
        unsafe { libc::kill(p, libc::SIGTERM) };
    }
    pids
}

/// Why the emulator cannot run on this machine, if it cannot: it needs root (or
/// CAP_NET_ADMIN), `/dev/net/tun` and the `ip` command.
pub fn unavailable() -> Option<String> {
    // SAFETY: geteuid(2) has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("the emulator needs root (network namespaces and TUN devices)".into());
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Some("/dev/net/tun does not exist (no TUN support)".into());
    }
    match Command::new("ip").arg("-V").output() {
        Ok(o) if o.status.success() => {}
        _ => {
            return Some(
                "the `ip` command (iproute2) is missing: run scripts/install-emu-deps.sh".into(),
            )
        }
    }
    // Creating a namespace is the real test (a container may forbid it).
    match Netns::create(next_id(), "probe") {
        Ok(ns) => {
            drop(ns);
            None
        }
        Err(e) => Some(format!("cannot create a network namespace: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_parses_only_emulator_names() {
        assert_eq!(owner("trib-1234-0-a"), Some(1234));
        assert_eq!(owner("trib-x-0-a"), None);
        assert_eq!(owner("other-1234"), None);
    }
}
