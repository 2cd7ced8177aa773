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
    let (child, addrs, _) = start_receiver_logged(n, out, extra);
    (child, addrs)
}

/// [`start_receiver`], also returning the rest of its standard error once it exits.
fn start_receiver_logged(
    n: usize,
    out: &PathBuf,
    extra: &[&str],
) -> (Child, Vec<String>, std::thread::JoinHandle<String>) {
    let mut cmd = Command::new(BIN);
    cmd.arg("recv").arg("--out").arg(out);
    for _ in 0..n {
        cmd.args(["--listen", "127.0.0.1:0"]);
    }
    if !extra.contains(&"--timeout") {
        cmd.args(["--timeout", "20"]);
    }
    let mut child = cmd
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
    let log = std::thread::spawn(move || {
        let mut all = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut all);
        all
    });
    (child, addrs, log)
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
    let (receiver, addrs) = start_receiver(2, &output, &["--insecure"]);
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
        "--insecure",
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
    let common = [
        "--scheme",
        "tcp",
        "--buffer",
        "256K",
        "--conn-id",
        "9",
        "--insecure",
    ];
    transfer_intact("tcp", 7, 1, &common, &[]);
}

/// Sends 2 MiB over `paths` loopback paths with `common` options on both ends and
/// `sender_only` on the sender; both ends must succeed and the file arrive intact.
fn transfer_intact(name: &str, seed: u64, paths: usize, common: &[&str], sender_only: &[&str]) {
    let data = payload(2 << 20, seed);
    let input = tmp(&format!("{name}-in.bin"));
    let output = tmp(&format!("{name}-out.bin"));
    fs::write(&input, &data).unwrap();
    let (receiver, addrs) = start_receiver(paths, &output, common);
    let specs: Vec<String> = addrs.iter().map(|a| format!("127.0.0.1:0={a}")).collect();
    let mut args = vec!["send", input.to_str().unwrap()];
    for p in &specs {
        args.extend(["--path", p.as_str()]);
    }
    args.extend(sender_only);
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
        "--insecure",
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
    let o = run(&[
        "recv",
        "--listen",
        &addr,
        "--out",
        out.to_str().unwrap(),
        "--insecure",
    ]);
    assert!(!o.status.success());
    let e = text(&o.stderr);
    assert!(e.contains("cannot bind") && e.contains(&addr), "{e}");
    // tcp needs exactly one path.
    let remote = format!("127.0.0.1:0={addr}");
    let o = run(&[
        "send",
        BIN,
        "--scheme",
        "tcp",
        "--path",
        &remote,
        "--path",
        &remote,
        "--insecure",
    ]);
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("scheme"), "{}", text(&o.stderr));
    // Nobody answers: the idle timeout ends the sender, with an error.
    let t0 = Instant::now();
    let o = run(&[
        "send",
        BIN,
        "--path",
        &remote,
        "--timeout",
        "0.5",
        "--insecure",
    ]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("no progress"),
        "{}",
        text(&o.stderr)
    );
    assert!(t0.elapsed() < Duration::from_secs(10));
    // Nothing listens: ICMP port unreachable ends an unprotected sender (`send`, `perf`) at
    // once, as it ends a protected one's handshake, naming the address (here path 1's).
    let closed = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string();
    let path1 = format!("127.0.0.1:0={closed}");
    for cmd in [&["send", BIN][..], &["perf"][..]] {
        let mut args = cmd.to_vec();
        args.extend(["--path", &remote, "--path", &path1, "--insecure"]);
        args.extend(["--timeout", "5"]);
        let t0 = Instant::now();
        let o = run(&args);
        assert!(!o.status.success());
        let e = text(&o.stderr);
        assert!(
            e.contains(&format!("{closed} is unreachable: nothing listens")),
            "{e}"
        );
        assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    }
    // And a receiver nobody sends to, leaving no partial output behind.
    let o = run(&[
        "recv",
        "--listen",
        "127.0.0.1:0",
        "--out",
        out.to_str().unwrap(),
        "--timeout",
        "0.3",
        "--insecure",
    ]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("no progress"),
        "{}",
        text(&o.stderr)
    );
    assert!(!out.exists());
}

fn keygen(name: &str, psk: bool) -> PathBuf {
    let k = tmp(name);
    let _ = fs::remove_file(&k);
    let mut pubf = k.as_os_str().to_owned();
    pubf.push(".pub");
    let _ = fs::remove_file(&pubf);
    let mut args = vec!["keygen", k.to_str().unwrap()];
    if psk {
        args.push("--psk");
    }
    let o = run(&args);
    assert!(o.status.success(), "{}", text(&o.stderr));
    k
}

fn with_pub(k: &std::path::Path) -> String {
    format!("{}.pub", k.display())
}

#[test]
fn protected_transfer_with_pinned_keys_and_file_safety() {
    let server = keygen("server.key", false);
    let client = keygen("client.key", false);
    let data = payload(3 << 20, 11);
    let input = tmp("sec-in.bin");
    let output = tmp("sec-out.bin");
    let _ = fs::remove_file(&output);
    fs::write(&input, &data).unwrap();
    let srv = ["--key", server.to_str().unwrap(), "--peers"];
    let cli_pub = with_pub(&client);
    let mut rargs: Vec<&str> = srv.to_vec();
    rargs.push(&cli_pub);
    // The receiver needs none of the sender's options: the sender's differ from defaults.
    let (receiver, addrs) = start_receiver(1, &output, &rargs);
    let p0 = format!("127.0.0.1:0={}", addrs[0]);
    let srv_pub = with_pub(&server);
    let sent = run(&[
        "send",
        input.to_str().unwrap(),
        "--path",
        &p0,
        "--key",
        client.to_str().unwrap(),
        "--peer-key",
        &srv_pub,
        "--buffer",
        "1M",
        "--mss",
        "1200",
        "--scheme",
        "tcp",
        "--cc",
        "cubic",
    ]);
    let recvd = wait(receiver);
    assert!(sent.status.success(), "send: {}", text(&sent.stderr));
    assert!(recvd.status.success(), "recv: {}", text(&recvd.stderr));
    assert!(fs::read(&output).unwrap() == data);
    let mut part = output.as_os_str().to_owned();
    part.push(".part");
    assert!(!PathBuf::from(&part).exists(), ".part left behind");
    // The output now exists: a second receiver refuses to start, and the file is intact.
    let o = run(&[
        "recv",
        "--listen",
        "127.0.0.1:0",
        "--out",
        output.to_str().unwrap(),
        "--psk",
        server.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("not overwriting"),
        "{}",
        text(&o.stderr)
    );
    assert!(fs::read(&output).unwrap() == data);
    // A sender with a key the receiver does not list is named as an authentication failure.
    let stranger = keygen("stranger.key", false);
    let _ = fs::remove_file(&output);
    let (receiver, addrs) = start_receiver(1, &output, &rargs);
    let p0 = format!("127.0.0.1:0={}", addrs[0]);
    let t0 = Instant::now();
    let o = run(&[
        "send",
        input.to_str().unwrap(),
        "--path",
        &p0,
        "--key",
        stranger.to_str().unwrap(),
        "--peer-key",
        &srv_pub,
    ]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("authentication failed"),
        "{}",
        text(&o.stderr)
    );
    assert!(t0.elapsed() < Duration::from_secs(2));
    let mut receiver = receiver;
    let _ = receiver.kill();
    let _ = receiver.wait();
    assert!(!output.exists());
}

#[test]
fn clear_errors_of_the_protected_mode() {
    let psk = keygen("e2e.psk", true);
    // No credentials at all.
    let o = run(&["send", BIN, "--path", "127.0.0.1:0=127.0.0.1:9"]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("no credentials"),
        "{}",
        text(&o.stderr)
    );
    // A buffer beyond the limit is a clear error, not an allocation abort.
    let o = run(&[
        "send",
        BIN,
        "--path",
        "127.0.0.1:0=127.0.0.1:9",
        "--psk",
        psk.to_str().unwrap(),
        "--buffer",
        "100G",
    ]);
    assert!(!o.status.success());
    let e = text(&o.stderr);
    assert!(
        e.contains("exceeds the limit") && e.contains("--max-buffer"),
        "{e}"
    );
    assert!(
        !e.contains("panicked") && !e.contains("memory allocation"),
        "{e}"
    );
    // Port unreachable within a second.
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let t0 = Instant::now();
    let o = run(&[
        "send",
        BIN,
        "--path",
        &format!("127.0.0.1:0={port}"),
        "--psk",
        psk.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("unreachable"),
        "{}",
        text(&o.stderr)
    );
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    // --max-buffer raises the sender's own limit too (`send` and `perf`): a buffer above
    // the default 256 MiB gets as far as the network (buffers fill lazily), here the
    // closed port.
    for cmd in [&["send", BIN][..], &["perf"][..]] {
        let mut args = cmd.to_vec();
        let path = format!("127.0.0.1:0={port}");
        args.extend([
            "--path",
            &path,
            "--psk",
            psk.to_str().unwrap(),
            "--buffer",
            "300M",
            "--max-buffer",
            "1G",
        ]);
        let o = run(&args);
        assert!(!o.status.success());
        let e = text(&o.stderr);
        assert!(e.contains("unreachable") && !e.contains("exceeds"), "{e}");
    }
    // The halves of a key pair swapped by mistake: refused before anything listens or
    // sends, naming the file to give instead.
    let srv = keygen("e2e-swap.key", false);
    let cli = keygen("e2e-swap-client.key", false);
    let o = run(&[
        "recv",
        "--listen",
        "127.0.0.1:0",
        "--out",
        tmp("e2e-swap.out").to_str().unwrap(),
        "--key",
        &with_pub(&srv),
        "--peers",
        &with_pub(&cli),
    ]);
    assert!(!o.status.success());
    let e = text(&o.stderr);
    assert!(e.contains("is a public key file"), "{e}");
    assert!(!tmp("e2e-swap.out").exists());
    let o = run(&[
        "send",
        BIN,
        "--path",
        &format!("127.0.0.1:0={port}"),
        "--key",
        cli.to_str().unwrap(),
        "--peer-key",
        srv.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    let e = text(&o.stderr);
    assert!(
        e.contains("is a private key") && !e.contains("unreachable"),
        "{e}"
    );
    // Unknown scheme and controller names list the known ones.
    let o = run(&[
        "send",
        BIN,
        "--path",
        "127.0.0.1:0=127.0.0.1:9",
        "--scheme",
        "quic",
    ]);
    assert!(text(&o.stderr).contains("mptcp"), "{}", text(&o.stderr));
}

#[test]
fn server_writes_each_connection_to_its_own_file() {
    let psk = keygen("srv.psk", true);
    let dir = tmp("srv-dir");
    let _ = fs::remove_dir_all(&dir);
    let mut child = Command::new(BIN)
        .args(["recv", "--listen", "127.0.0.1:0", "--out-dir"])
        .arg(&dir)
        .args(["--psk", psk.to_str().unwrap(), "--linger", "0.3"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let addr = line
        .split_whitespace()
        .nth(2)
        .unwrap_or_else(|| panic!("{line}"))
        .to_string();
    let log = std::thread::spawn(move || {
        let mut all = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut all);
        all
    });
    let inputs: Vec<(PathBuf, Vec<u8>)> = (0..3)
        .map(|i| {
            let p = tmp(&format!("srv-in-{i}.bin"));
            let d = payload(500_000 + i, 20 + i as u64);
            fs::write(&p, &d).unwrap();
            (p, d)
        })
        .collect();
    let senders: Vec<_> = inputs
        .iter()
        .map(|(p, _)| {
            Command::new(BIN)
                .arg("send")
                .arg(p)
                .args(["--path", &format!("127.0.0.1:0={addr}")])
                .args(["--psk", psk.to_str().unwrap()])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for s in senders {
        let o = wait(s);
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    // Give the server its linger, then stop it.
    std::thread::sleep(Duration::from_millis(800));
    let _ = child.kill();
    let _ = child.wait();
    let log = log.join().unwrap();
    for (p, d) in &inputs {
        let name = p.file_name().unwrap();
        let got = fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{e}; log: {log}"));
        assert!(&got == d, "{} differs", name.to_string_lossy());
    }
    assert_eq!(log.matches(": done, ").count(), 3, "{log}");
    assert_eq!(log.matches(": accepted from ").count(), 3, "{log}");
    let _ = fs::remove_dir_all(&dir);
}

fn part_of(p: &std::path::Path) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(".part");
    PathBuf::from(s)
}

/// `recv --resume` over a protected connection (PSK); returns the sender's output, the
/// receiver's, and the receiver's standard error.
fn resume_once(
    input: &std::path::Path,
    output: &std::path::Path,
    psk: &str,
) -> (Output, Output, String) {
    // A receiver whose offer was refused waits for another sender until its timeout.
    let (receiver, addrs, log) = start_receiver_logged(
        1,
        &output.to_path_buf(),
        &["--psk", psk, "--resume", "--timeout", "3"],
    );
    let p0 = format!("127.0.0.1:0={}", addrs[0]);
    let sent = run(&[
        "send",
        input.to_str().unwrap(),
        "--path",
        &p0,
        "--psk",
        psk,
        "--timeout",
        "5",
    ]);
    let r = wait(receiver);
    (sent, r, log.join().unwrap())
}

#[test]
fn an_interrupted_transfer_resumes_from_its_part_file() {
    let psk = keygen("resume.psk", true);
    let psk = psk.to_str().unwrap();
    let data = payload(6 << 20, 31);
    let input = tmp("resume-in.bin");
    fs::write(&input, &data).unwrap();
    let output = tmp("resume-out.bin");
    let part = part_of(&output);
    let _ = fs::remove_file(&output);
    let _ = fs::remove_file(&part);

    // A real interruption: the sender reads from a pipe that gives it only the first
    // 3 MiB; once the receiver has written some of them, both are killed.
    let fifo = tmp("resume.fifo");
    let _ = fs::remove_file(&fifo);
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let (mut receiver, addrs) = start_receiver(1, &output, &["--psk", psk]);
    let p0 = format!("127.0.0.1:0={}", addrs[0]);
    let mut sender = Command::new(BIN)
        .arg("send")
        .arg(&fifo)
        .args(["--path", &p0, "--psk", psk])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut w = fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    std::io::Write::write_all(&mut w, &data[..3 << 20]).unwrap();
    let t0 = Instant::now();
    while fs::metadata(&part).map_or(0, |m| m.len()) < 1 << 20 {
        assert!(t0.elapsed() < DEADLINE, "the receiver wrote nothing");
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = receiver.kill();
    let _ = sender.kill();
    let _ = receiver.wait();
    let _ = sender.wait();
    drop(w);
    let held = fs::read(&part).unwrap();
    assert!(
        !held.is_empty() && data.starts_with(&held),
        "the .part is not a prefix"
    );
    assert!(!output.exists());

    // Without --resume (or --force) the .part is refused, and the error says what to do.
    let o = run(&[
        "recv",
        "--listen",
        "127.0.0.1:0",
        "--out",
        output.to_str().unwrap(),
        "--psk",
        psk,
    ]);
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("--resume"), "{}", text(&o.stderr));

    // Resumed: only the rest is sent, and the file is whole.
    let (sent, recvd, log) = resume_once(&input, &output, psk);
    assert!(sent.status.success(), "send: {}", text(&sent.stderr));
    assert!(recvd.status.success(), "recv: {log}");
    assert!(
        log.contains(&format!("holds {} bytes", held.len())),
        "{log}"
    );
    assert!(fs::read(&output).unwrap() == data, "resumed file differs");
    assert!(!part.exists());
    let out = text(&sent.stdout);
    assert!(
        out.contains(&format!("sent {} bytes", data.len() - held.len()))
            && out.contains(&format!("(resumed at byte {})", held.len())),
        "{out}"
    );
    // Not a terminal: no progress line in the output.
    assert!(
        !text(&sent.stderr).contains("eta"),
        "{}",
        text(&sent.stderr)
    );
    assert!(
        !text(&recvd.stderr).contains("eta"),
        "{}",
        text(&recvd.stderr)
    );
    let _ = fs::remove_file(&output);
}

#[test]
fn a_part_file_that_is_not_a_prefix_is_never_resumed_or_changed() {
    let psk = keygen("resume2.psk", true);
    let psk = psk.to_str().unwrap();
    let data = payload(1 << 20, 32);
    let input = tmp("resume2-in.bin");
    fs::write(&input, &data).unwrap();
    let output = tmp("resume2-out.bin");
    let part = part_of(&output);
    let _ = fs::remove_file(&output);

    // A .part whose bytes differ from the file's (one byte changed).
    let mut bad = data[..300_000].to_vec();
    bad[123_456] ^= 1;
    fs::write(&part, &bad).unwrap();
    let (sent, recvd, log) = resume_once(&input, &output, psk);
    assert!(!sent.status.success() && !recvd.status.success());
    assert!(
        text(&sent.stderr).contains("cannot resume") && text(&sent.stderr).contains("differs"),
        "{}",
        text(&sent.stderr)
    );
    assert!(log.contains("cannot be resumed"), "{log}");
    assert_eq!(fs::read(&part).unwrap(), bad, "the .part was changed");
    assert!(!output.exists());

    // A .part longer than the file: refused in the handshake, before any data.
    let mut long = data.clone();
    long.extend_from_slice(b"more");
    fs::write(&part, &long).unwrap();
    let (sent, recvd, _) = resume_once(&input, &output, psk);
    assert!(!sent.status.success() && !recvd.status.success());
    assert!(
        text(&sent.stderr).contains("more than"),
        "{}",
        text(&sent.stderr)
    );
    assert_eq!(fs::read(&part).unwrap(), long, "the .part was changed");
    let _ = fs::remove_file(&part);
}

/// Starts `tributary perf -s -1` with `extra`; returns it and its address.
fn start_perf_server(extra: &[&str]) -> (Child, String, std::thread::JoinHandle<String>) {
    let mut child = Command::new(BIN)
        .args(["perf", "-s", "-1", "--listen", "127.0.0.1:0"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let addr = line
        .trim()
        .strip_prefix("perf server listening on ")
        .unwrap_or_else(|| panic!("unexpected server output: {line:?}"))
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    let log = std::thread::spawn(move || {
        let mut all = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut all);
        all
    });
    (child, addr, log)
}

fn json_side_totals_agree(side: &serde_json::Value) -> u64 {
    let intervals = side["intervals"].as_array().unwrap();
    assert!(!intervals.is_empty());
    let sum: u64 = intervals.iter().map(|i| i["bytes"].as_u64().unwrap()).sum();
    let total = side["bytes"].as_u64().unwrap();
    assert_eq!(sum, total, "intervals do not add up to the total");
    for p in side["paths"].as_array().unwrap() {
        let i = p["path"].as_u64().unwrap() as usize;
        let s: u64 = intervals
            .iter()
            .map(|x| x["paths"][i]["bytes"].as_u64().unwrap())
            .sum();
        assert_eq!(s, p["bytes"].as_u64().unwrap(), "path {i}");
    }
    total
}

#[test]
fn perf_client_and_server_with_json() {
    let psk = keygen("perf.psk", true);
    let psk = psk.to_str().unwrap();
    let (server, addr, log) = start_perf_server(&["--psk", psk]);
    let p = format!("127.0.0.1:0={addr}");
    let o = run(&[
        "perf", "--path", &p, "--path", &p, "--psk", psk, "-t", "0.5", "-i", "0.1", "-J",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["paths"], 2);
    assert_eq!(v["local"]["role"], "sender");
    let total = json_side_totals_agree(&v["local"]);
    assert!(v["local"]["seconds"].as_f64().unwrap() >= 0.5);
    assert!(wait(server).status.success());
    // The server received exactly what the client saw acknowledged.
    let log = log.join().unwrap();
    assert!(
        log.contains(&format!("done, received {total} bytes")),
        "{log}"
    );

    // Text: the interval lines add up to the summary, per path and over all, also when
    // the end is folded into the last interval (-t 1 -i 1: the interval closes at 1 s and
    // the last acknowledgement comes milliseconds later, usually).
    let (server, addr, _) = start_perf_server(&["--psk", psk]);
    let p = format!("127.0.0.1:0={addr}");
    let o = run(&[
        "perf", "--path", &p, "--path", &p, "--psk", psk, "-t", "1", "-i", "1",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let (lines, summary) = out.split_once("- - -").unwrap();
    let bytes = |l: &str, what: &str| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() > 2 && f[1] == what).then(|| f[2].parse::<u64>().unwrap())
    };
    for what in ["0", "1", "all"] {
        let sum: u64 = lines.lines().filter_map(|l| bytes(l, what)).sum();
        let total: Vec<u64> = summary.lines().filter_map(|l| bytes(l, what)).collect();
        assert_eq!(total, [sum], "{what}: {out}");
    }
    assert!(wait(server).status.success());

    // Reverse, text: intervals as they come, then both ends' summaries.
    let (server, addr, _) = start_perf_server(&["--psk", psk]);
    let p = format!("127.0.0.1:0={addr}");
    let o = run(&[
        "perf", "--path", &p, "--psk", psk, "-t", "0.4", "-R", "--cc", "cubic",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(
        out.contains("receiving (-R)") && out.contains("cubic"),
        "{out}"
    );
    assert!(out.contains("sender (the server)") && out.contains("receiver (this end)"));
    assert!(wait(server).status.success());
}

#[test]
fn perf_errors_are_clear() {
    // -R needs the handshake.
    let o = run(&[
        "perf",
        "--path",
        "127.0.0.1:0=127.0.0.1:9",
        "--insecure",
        "-R",
    ]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("-R needs the handshake"),
        "{}",
        text(&o.stderr)
    );
    // Nothing listening: named at once.
    let psk = keygen("perf2.psk", true);
    let psk = psk.to_str().unwrap();
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let t0 = Instant::now();
    let o = run(&[
        "perf",
        "--path",
        &format!("127.0.0.1:0=127.0.0.1:{port}"),
        "--psk",
        psk,
    ]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("unreachable"),
        "{}",
        text(&o.stderr)
    );
    assert!(t0.elapsed() < Duration::from_secs(2));
    // A file receiver refuses a perf test, and says where to go.
    let out = tmp("perf-refused.bin");
    let _ = fs::remove_file(&out);
    let (receiver, addrs) = start_receiver(1, &out, &["--psk", psk]);
    let o = run(&[
        "perf",
        "--path",
        &format!("127.0.0.1:0={}", addrs[0]),
        "--psk",
        psk,
    ]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("perf --server"),
        "{}",
        text(&o.stderr)
    );
    let mut receiver = receiver;
    let _ = receiver.kill();
    let _ = receiver.wait();
    // And a perf server refuses a test longer than its limit.
    let (server, addr, _) = start_perf_server(&["--psk", psk, "--max-time", "2"]);
    let o = run(&[
        "perf",
        "--path",
        &format!("127.0.0.1:0={addr}"),
        "--psk",
        psk,
        "-t",
        "5",
    ]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("limit of 2.0 s"),
        "{}",
        text(&o.stderr)
    );
    let mut server = server;
    let _ = server.kill();
    let _ = server.wait();
}

/// The JSON-SEQ records of a qlog file (each: 0x1E, one JSON text, a line feed).
fn qlog_records(p: &std::path::Path) -> Vec<serde_json::Value> {
    let t = fs::read_to_string(p).unwrap();
    assert!(t.starts_with('\u{1e}'), "{}: not JSON-SEQ", p.display());
    t.split('\u{1e}')
        .skip(1)
        .map(|r| serde_json::from_str(r).unwrap_or_else(|e| panic!("{r:?}: {e}")))
        .collect()
}

#[test]
fn qlog_traces_of_send_and_recv() {
    let psk = keygen("qlog.psk", true);
    let dir = tmp("qlog-dir");
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    let data = payload(1 << 20, 5);
    let input = tmp("qlog-in.bin");
    let output = tmp("qlog-out.bin");
    let _ = fs::remove_file(&output);
    fs::write(&input, &data).unwrap();
    let d = dir.to_str().unwrap();
    let common = ["--psk", psk.to_str().unwrap(), "--qlog", d];
    let (receiver, addrs, rlog) = start_receiver_logged(1, &output, &common);
    let p0 = format!("127.0.0.1:0={}", addrs[0]);
    let mut args = vec![
        "send",
        input.to_str().unwrap(),
        "--path",
        &p0,
        "--timeout",
        "20",
    ];
    args.extend(common);
    let sent = run(&args);
    let recvd = wait(receiver);
    let rlog = rlog.join().unwrap();
    assert!(sent.status.success(), "send failed: {}", text(&sent.stderr));
    assert!(recvd.status.success(), "recv failed: {rlog}");
    assert!(fs::read(&output).unwrap() == data);
    let mut names: Vec<String> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(names[0].starts_with("receiver-") && names[1].starts_with("sender-"));
    // Same connection id at both ends; each command named its file.
    assert_eq!(names[0]["receiver-".len()..], names[1]["sender-".len()..]);
    assert!(
        text(&sent.stderr).contains(&names[1]),
        "{}",
        text(&sent.stderr)
    );
    assert!(rlog.contains(&names[0]), "{rlog}");
    for (name, vantage, ev) in [
        (&names[0], "server", "transport:packet_received"),
        (&names[1], "client", "transport:packet_sent"),
    ] {
        let recs = qlog_records(&dir.join(name));
        assert_eq!(recs[0]["trace"]["vantage_point"]["type"], vantage);
        let data_frames = recs
            .iter()
            .filter(|r| r["name"] == ev)
            .filter(|r| r["data"]["frames"].to_string().contains("stream"))
            .count();
        // At least one packet per 1400-byte segment of the file carried data.
        assert!(
            data_frames >= (1 << 20) / 1400,
            "{name}: {data_frames} data packets"
        );
    }
    // A missing directory is a clear error before anything is sent (no receiver runs now).
    let missing = dir.join("nope");
    let o = run(&[
        "send",
        input.to_str().unwrap(),
        "--path",
        &p0,
        "--psk",
        psk.to_str().unwrap(),
        "--qlog",
        missing.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    let e = text(&o.stderr);
    assert!(e.contains("qlog directory") && e.contains("nope"), "{e}");
    let _ = fs::remove_dir_all(&dir);
    let _ = fs::remove_file(input);
    let _ = fs::remove_file(output);
}

/// `--cwnd-validation`, `--tail-loss-probe`, `--no-reorder-tolerance`, `--probe-new-paths`
/// and `--bonding` (all four at once; docs/udp.md, "Bonding two real interfaces", steps 4-7):
/// two-path transfers with them deliver every byte.
#[test]
fn cwnd_validation_flag_over_two_paths() {
    let common = ["--buffer", "256K", "--conn-id", "12", "--insecure"];
    transfer_intact("cwv", 11, 2, &common, &["--cc", "lia", "--cwnd-validation"]);
    transfer_intact("tlp", 13, 2, &common, &["--tail-loss-probe"]);
    transfer_intact("reo", 15, 2, &common, &["--no-reorder-tolerance"]);
    transfer_intact("pnp", 17, 2, &common, &["--probe-new-paths"]);
    transfer_intact("bond", 19, 2, &common, &["--bonding"]);
}
