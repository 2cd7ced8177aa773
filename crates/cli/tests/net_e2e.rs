//! `tributary send` / `tributary recv` end to end: the real binary on loopback sockets.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_tributary");
/// Upper bound on any one command; the commands' own `--timeout` is shorter.
const DEADLINE: Duration = Duration::from_secs(60);

fn tmp(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("net_e2e");
    fs::create_dir_all(&dir).unwrap();
    dir.join(format!("{}-{name}", std::process::id()))
}

/// Deterministic pseudo-random bytes (xorshift64*).
fn payload(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
        })
        .collect()
}

/// Waits for `child` at most until `DEADLINE`, killing it after.
fn wait(mut child: Child) -> Output {
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > DEADLINE {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Starts `tributary recv` on `n` OS-chosen loopback ports; returns it and its addresses
/// (read from its "listening on ..." line).
fn start_receiver(n: usize, out: &PathBuf, extra: &[&str]) -> (Child, Vec<String>) {
    let mut cmd = Command::new(BIN);
    cmd.arg("recv").arg("--out").arg(out);
    for _ in 0..n {
        cmd.args(["--listen", "127.0.0.1:0"]);
    }
    let mut child = cmd
        .args(["--timeout", "20"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    err.read_line(&mut line).unwrap();
    let addrs: Vec<String> = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected receiver output: {line:?}"))
        .split(", ")
        .map(str::to_owned)
        .collect();
    assert_eq!(addrs.len(), n);
    // Keep draining stderr so the receiver never blocks on a full pipe.
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    (child, addrs)
}

fn run(args: &[&str]) -> Output {
    let child = Command::new(BIN)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait(child)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn file_over_two_loopback_paths_arrives_intact() {
    let data = payload(24 << 20, 42);
    let input = tmp("in.bin");
    let output = tmp("out.bin");
    fs::write(&input, &data).unwrap();
    let (receiver, addrs) = start_receiver(2, &output, &[]);
    let p0 = format!("127.0.0.1:0={}", addrs[0]);
    let p1 = format!("127.0.0.1:0={}", addrs[1]);
    let sent = run(&[
        "send",
        input.to_str().unwrap(),
        "--path",
        &p0,
        "--path",
        &p1,
        "--timeout",
        "20",
    ]);
    let recvd = wait(receiver);
    assert!(sent.status.success(), "send failed: {}", text(&sent.stderr));
    assert!(
        recvd.status.success(),
        "recv failed: {}",
        text(&recvd.stderr)
    );
    let got = fs::read(&output).unwrap();
    assert_eq!(got.len(), data.len());
    assert!(got == data, "received file differs from the sent one");
    // Summaries: bytes, seconds, goodput, both paths.
    let s = text(&sent.stdout);
    let r = text(&recvd.stdout);
    assert!(
        s.starts_with(&format!("sent {} bytes in ", data.len())),
        "{s}"
    );
    assert!(
        r.starts_with(&format!("received {} bytes in ", data.len())),
        "{r}"
    );
    for line in [&s, &r] {
        assert!(
            line.contains("Mbit/s") && line.contains("path 1:"),
            "{line}"
        );
    }
    let _ = fs::remove_file(input);
    let _ = fs::remove_file(output);
}

#[test]
fn tcp_scheme_over_one_path() {
    let data = payload(2 << 20, 7);
    let input = tmp("tcp-in.bin");
    let output = tmp("tcp-out.bin");
    fs::write(&input, &data).unwrap();
    let common = ["--scheme", "tcp", "--buffer", "256K", "--conn-id", "9"];
    let (receiver, addrs) = start_receiver(1, &output, &common);
    let p0 = format!("127.0.0.1:0={}", addrs[0]);
    let mut args = vec!["send", input.to_str().unwrap(), "--path", &p0];
    args.extend(common);
    let sent = run(&args);
    let recvd = wait(receiver);
    assert!(sent.status.success(), "send failed: {}", text(&sent.stderr));
    assert!(
        recvd.status.success(),
        "recv failed: {}",
        text(&recvd.stderr)
    );
    assert!(fs::read(&output).unwrap() == data);
    let _ = fs::remove_file(input);
    let _ = fs::remove_file(output);
}

#[test]
fn clear_errors() {
    // Missing file.
    let o = run(&[
        "send",
        "/nonexistent/file",
        "--path",
        "127.0.0.1:0=127.0.0.1:9",
    ]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("cannot open /nonexistent/file"),
        "{}",
        text(&o.stderr)
    );
    // Malformed path and address.
    let o = run(&["send", BIN, "--path", "127.0.0.1:0"]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("LOCAL=REMOTE"),
        "{}",
        text(&o.stderr)
    );
    let o = run(&["recv", "--listen", "not-an-address", "--out", "/dev/null"]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("not-an-address"),
        "{}",
        text(&o.stderr)
    );
    // A port that is taken.
    let taken = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = tmp("never.bin");
    let o = run(&["recv", "--listen", &addr, "--out", out.to_str().unwrap()]);
    assert!(!o.status.success());
    let e = text(&o.stderr);
    assert!(e.contains("cannot bind") && e.contains(&addr), "{e}");
    // tcp needs exactly one path.
    let remote = format!("127.0.0.1:0={addr}");
    let o = run(&[
        "send", BIN, "--scheme", "tcp", "--path", &remote, "--path", &remote,
    ]);
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("scheme"), "{}", text(&o.stderr));
    // Nobody answers: the idle timeout ends the sender, with an error.
    let t0 = Instant::now();
    let o = run(&["send", BIN, "--path", &remote, "--timeout", "0.5"]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("no progress"),
        "{}",
        text(&o.stderr)
    );
    assert!(t0.elapsed() < Duration::from_secs(10));
    // And a receiver nobody sends to, leaving no partial output behind.
    let o = run(&[
        "recv",
        "--listen",
        "127.0.0.1:0",
        "--out",
        out.to_str().unwrap(),
        "--timeout",
        "0.3",
    ]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("no progress"),
        "{}",
        text(&o.stderr)
    );
    assert!(!out.exists());
}
