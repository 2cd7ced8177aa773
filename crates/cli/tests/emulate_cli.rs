//! End-to-end `tributary emulate`: commands in both namespaces, this stack's transfer next
//! to the simulator, clean-up on SIGTERM and after SIGKILL. These need root, `/dev/net/tun`
//! and `ip`; where any is missing each test prints `SKIP: <reason>` on the terminal (not
//! captured) and passes (documented in docs/emulate.md).

use crate::test_tempdir::TempDir;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn skip(test: &str) -> bool {
    match tributary_emu::netns::unavailable() {
        None => false,
        Some(reason) => {
            let _ = writeln!(
                std::io::stderr(),
                "SKIP: {test}: the emulator cannot run on this machine: {reason}"
            );
            true
        }
    }
}

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_tributary")
}

/// A scenario file in a directory of its own, removed with what the test wrote beside it when
/// the directory is dropped at the end of the test.
fn scenario(name: &str, text: &str) -> (TempDir, PathBuf) {
    let d = TempDir::new(&format!("emulate-cli-{name}"));
    let p = d.join(name);
    std::fs::write(&p, text).unwrap();
    (d, p)
}

fn namespaces() -> Vec<String> {
    std::fs::read_dir("/run/netns")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default()
}

const ONE_PATH: &str = r#"
name = "one"
duration = "3s"
[[links]]
name = "p"
rate = "10Mbps"
delay = "15ms"
[[flows]]
name = "f"
paths = ["p"]
scheme = "tcp"
"#;

/// Commands run in the namespaces with the paths' addresses in their environment, and the
/// run ends when the sender exits. The sender's shell checks that it is in namespace a
/// (`ip netns identify`) and that the receiver's address answers over the emulated path is
/// beyond shell tools: the kernel-traffic checks are in crates/emu/tests/e2e.rs.
#[test]
fn commands_run_in_the_namespaces() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if skip("commands_run_in_the_namespaces") {
        return;
    }
    let (_dir, file) = scenario("one.toml", ONE_PATH);
    let d = file.parent().unwrap();
    let out_a = d.join("a.txt");
    let out_b = d.join("b.txt");
    let st = Command::new(bin())
        .args(["emulate", file.to_str().unwrap()])
        .arg("--receiver")
        .arg(format!(
            "echo \"$(ip netns identify $$) $TRIB_B0 $TRIB_PATHS\" > {}",
            out_b.display()
        ))
        .arg("--sender")
        .arg(format!(
            "echo \"$(ip netns identify $$) $TRIB_A0 $TRIB_NS_B\" > {}; exit 3",
            out_a.display()
        ))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&st.stderr);
    // The sender's failure is the run's failure.
    assert!(!st.status.success(), "{stderr}");
    assert!(stderr.contains("sender exited with"), "{stderr}");
    let a = std::fs::read_to_string(&out_a).unwrap();
    let b = std::fs::read_to_string(&out_b).unwrap();
    let fields_a: Vec<&str> = a.split_whitespace().collect();
    let fields_b: Vec<&str> = b.split_whitespace().collect();
    assert!(
        fields_a[0].starts_with("trib-") && fields_a[0].ends_with("-a"),
        "{a}"
    );
    assert_eq!(fields_a[1], "10.77.0.1");
    assert!(
        fields_b[0].ends_with("-b") && fields_b[0] == fields_a[2],
        "{a} / {b}"
    );
    assert_eq!(&fields_b[1..], ["10.77.0.2", "1"]);
    assert!(!namespaces()
        .iter()
        .any(|n| n == fields_a[0] || n == fields_b[0]));
}

/// SIGTERM stops the emulator, its commands and deletes its namespaces; after SIGKILL the
/// namespaces stay, and the next run deletes them and says so.
#[test]
fn cleans_up_when_killed() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if skip("cleans_up_when_killed") {
        return;
    }
    let (_dir, file) = scenario("kill.toml", ONE_PATH);
    for sig in ["TERM", "KILL"] {
        let log = file.with_extension(format!("{sig}.log"));
        let child = Command::new(bin())
            .args(["emulate", file.to_str().unwrap(), "--sender", "sleep 60"])
            .stdout(Stdio::null())
            // A file, not a pipe: after SIGKILL the orphaned `sleep` would hold a pipe open.
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let pid = child.id();
        let mine = |n: &String| n.starts_with(&format!("trib-{pid}-"));
        let t = Instant::now();
        while namespaces().iter().filter(|n| mine(n)).count() < 2 {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "namespaces never appeared"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        // Let the sender start.
        std::thread::sleep(Duration::from_millis(700));
        let ours = || namespaces().into_iter().filter(|n| mine(n)).count();
        assert!(Command::new("kill")
            .args([&format!("-{sig}"), &pid.to_string()])
            .status()
            .unwrap()
            .success());
        let out = child.wait_with_output().unwrap();
        let stderr = std::fs::read_to_string(&log).unwrap();
        assert!(!out.status.success());
        if sig == "TERM" {
            assert!(stderr.contains("stopped by SIGTERM"), "{stderr}");
            assert_eq!(ours(), 0, "namespaces left after SIGTERM");
        } else {
            assert_eq!(ours(), 2, "SIGKILL cannot be handled: the namespaces stay");
            // The next run removes them, naming them.
            let out = Command::new(bin())
                .args(["emulate", file.to_str().unwrap(), "--sender", "true"])
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{stderr}");
            assert!(
                stderr.contains(&format!("removed stale network namespace trib-{pid}-")),
                "{stderr}"
            );
            // The orphaned sender (`sleep 60`) was ended with its namespace.
            assert!(
                stderr.contains("ended the processes still in it"),
                "{stderr}"
            );
            assert_eq!(ours(), 0);
        }
    }
}

/// `--transfer --compare` runs this stack's tcp over the emulated path and the simulator on
/// the same scenario and prints both goodputs; the JSON has them and the link counters. On
/// this lossless path the two must agree within ±10 % (issue 15's requirement for the same
/// scenario in the simulator and through the emulator; the lossy mixes are measured, not
/// tested, in docs/emulate.md, because one seed's goodput over a lossy path varies more).
#[test]
fn transfer_reports_emulated_and_simulated_goodput() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if skip("transfer_reports_emulated_and_simulated_goodput") {
        return;
    }
    let (_dir, file) = scenario("transfer.toml", ONE_PATH);
    let json = file.with_extension("json");
    let qlog = file.with_extension("qlog");
    std::fs::create_dir_all(&qlog).unwrap();
    let out = Command::new(bin())
        .args([
            "emulate",
            file.to_str().unwrap(),
            "--transfer",
            "--compare",
            "--json",
        ])
        .arg(&json)
        .arg("--qlog")
        .arg(&qlog)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("goodput: emulated"), "{stdout}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let e = v["goodput_mbps"].as_f64().unwrap();
    let s = v["sim_goodput_mbps"].as_f64().unwrap();
    eprintln!("emulated {e:.3} Mbit/s, simulated {s:.3} Mbit/s");
    // Neither can exceed the 10 Mbit/s link; both must move data.
    assert!(e > 1.0 && e < 10.0 && s > 1.0 && s < 10.0, "{e} {s}");
    assert!((e / s - 1.0).abs() <= 0.10, "emulated {e} vs simulated {s}");
    assert!(v["links"][0]["forward"]["offered"].as_u64().unwrap() > 1000);
    // `--qlog`: one trace per end, each with the connection's packets.
    let mut names: Vec<String> = std::fs::read_dir(&qlog)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(
        names[0].starts_with("receiver-") && names[1].starts_with("sender-"),
        "{names:?}"
    );
    for n in &names {
        let text = std::fs::read_to_string(qlog.join(n)).unwrap();
        let sent = text.matches("transport:packet_sent").count();
        assert!(sent > 100, "{n}: {sent} packets traced");
    }
}
