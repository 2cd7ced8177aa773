#!/usr/bin/env python3
"""Side-by-side speed of Tributary's simulator and ns-3.37 (docs/performance.md).

One bulk TCP flow at 10 Mbit/s for 300 s and at 100 Mbit/s for 30 s (100 ms RTT, no random
loss), alternating ns-3 (validation/ns3/tcp-grid.cc) and `tributary run` (scenarios/validation/
speed-*.toml) N times each on the same machine, so both see the same load. Reports, per case,
the median wall time and median CPU time (user + sys of the process) of each, their ratios,
and the goodput of each (a sanity check that both moved the same traffic).

Needs scripts/install-ns3.sh and `cargo build --release -p tributary`.
Usage: scripts/ns3-speed.py [--runs N]   (not run by CI)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = [("10 Mbit/s, 300 s", 10, 300, 100, "speed-10m.toml"),
         ("100 Mbit/s, 30 s", 100, 30, 1000, "speed-100m.toml")]


def timed(cmd):
    """(wall s, cpu s, stdout) of one process."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if status != 0:
        sys.exit(f"failed: {' '.join(cmd)}")
    return wall, ru.ru_utime + ru.ru_stime, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    ns3 = subprocess.run([os.path.join(ROOT, "validation/ns3/build.sh")], check=True,
                         capture_output=True, text=True).stdout.strip().splitlines()[-1]
    trib = os.path.join(ROOT, "target/release/tributary")
    print("| case | ns-3 wall s | ours wall s | wall ratio | ns-3 CPU s | ours CPU s | "
          "CPU ratio | ns-3 Mbit/s | ours Mbit/s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, rate, secs, queue, scen in CASES:
        nw, nc, ow, oc = [], [], [], []
        ng = og = 0.0
        for _ in range(a.runs):
            w, c, out = timed([ns3, f"--rate={rate}", "--rtt=100", f"--time={secs}",
                               f"--queue={queue}"])
            nw.append(w)
            nc.append(c)
            ng = json.loads(out)["goodput_bps"] / 1e6
            w, c, out = timed([trib, "run", os.path.join(ROOT, "scenarios/validation", scen),
                               "--jobs", "1", "--format", "json"])
            ow.append(w)
            oc.append(c)
            og = json.loads(out)["runs"][0]["flows"][0]["goodput_mbps"]
        m = statistics.median
        print(f"| {label} | {m(nw):.3f} | {m(ow):.4f} | {m(nw) / m(ow):.1f}x | {m(nc):.3f} | "
              f"{m(oc):.4f} | {m(nc) / m(oc):.1f}x | {ng:.2f} | {og:.2f} |")
        print(f"  walls ns-3 {['%.3f' % x for x in nw]} ours {['%.4f' % x for x in ow]}",
              file=sys.stderr)
        # A run on this kind of VM can only be slowed, never sped up: the fastest runs of
        # each side are the other steady reading besides the medians.
        print(f"  fastest CPU: ns-3 {min(nc):.3f} s, ours {min(oc):.4f} s, "
              f"ratio {min(nc) / min(oc):.1f}x", file=sys.stderr)


if __name__ == "__main__":
    main()
