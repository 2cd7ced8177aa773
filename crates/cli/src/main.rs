//! `tributary`: run experiments on the simulator, transfer files over real UDP paths.

mod bench_cmd;
mod choice;
mod emulate_cmd;
mod list_cmd;
mod merge_cmd;
mod net_cmds;
mod perf_cmd;
mod plot_cmd;
mod run_cmd;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "tributary",
    version,
    about = "Coded multipath transport and its laboratory"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a scenario file on the simulator and report the results.
    Run(run_cmd::RunArgs),
    /// Join the results files of a sweep's shards into the report of the whole sweep.
    Merge(merge_cmd::MergeArgs),
    /// Render figures (PNG and SVG) from a `run --json` results file.
    Plot(plot_cmd::PlotArgs),
    /// Send a file over one or more real UDP paths.
    Send(net_cmds::SendArgs),
    /// Receive a file on one or more UDP addresses, or serve many (`--out-dir`).
    Recv(net_cmds::RecvArgs),
    /// Measure throughput memory to memory, per path, as iperf3 (client, or server with -s).
    Perf(perf_cmd::PerfArgs),
    /// Create a key pair (or with --psk a pre-shared key) for send/recv.
    Keygen(net_cmds::KeygenArgs),
    /// Measure simulator speed (delivered packets per wall-clock second).
    Bench(bench_cmd::BenchArgs),
    /// List the registered schemes, congestion controllers, schedulers and applications with
    /// their options.
    List(list_cmd::ListArgs),
    /// Emulate a scenario's paths between two network namespaces (root; see docs/emulate.md).
    Emulate(emulate_cmd::EmulateArgs),
}

fn main() -> ExitCode {
    // The Rust runtime ignores SIGPIPE, so a write to a closed pipe (`tributary list | head`)
    // fails and `println!` panics with a backtrace. Restore the default action: the process
    // ends quietly when the reader of its output goes away, as other Unix tools do. The only
    // pipes this program writes are its standard output and error (sockets are UDP, which
    // raises no SIGPIPE; results go to files).
    #[cfg(unix)]
    // SAFETY: first statement of `main`, before any thread exists; `signal` with `SIG_DFL`
    // installs no handler code.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    let res = match cli.cmd {
        Cmd::Run(a) => run_cmd::run(a),
        Cmd::Merge(a) => merge_cmd::merge(a),
        Cmd::Plot(a) => plot_cmd::plot(a),
        Cmd::Send(a) => net_cmds::send(a),
        Cmd::Recv(a) => net_cmds::recv(a),
        Cmd::Perf(a) => perf_cmd::perf(a),
        Cmd::Keygen(a) => net_cmds::keygen(a),
        Cmd::Bench(a) => bench_cmd::bench(a),
        Cmd::List(a) => list_cmd::list(a),
        Cmd::Emulate(a) => emulate_cmd::emulate(a),
    };
    match res {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
