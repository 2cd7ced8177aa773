#!/usr/bin/env python3
"""TCP NewReno validation against ns-3.37 (docs/experiments/validation-ns3.md).

Runs the grid of scenarios/validation/ns3-grid.toml in ns-3 (validation/ns3/tcp-grid.cc,
same parameters, RngRun = 1..repetitions) and in Tributary (`tributary run`, variants
`classic` and `linux`), then prints a Markdown table: mean goodput per point, each
profile's ratio to ns-3, and whether `classic` is within +-25 %.

Needs scripts/install-ns3.sh and a release build (`cargo build --release -p tributary`).
Usage: scripts/ns3-validate.py [--reps N] [--out DIR]   (not run by CI)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCEN = os.path.join(ROOT, "scenarios/validation/ns3-grid.toml")
# Must match the scenario's sweep (one-way delays and losses) and duration.
DELAYS_MS = [10, 100]
LOSSES = [0.005, 0.01, 0.03]
DURATION_S = 60


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(ROOT, "target/ns3"))
    ap.add_argument("--reuse-ns3", action="store_true",
                    help="only use the ns-3 results already in OUT/grid-ns3.jsonl")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    ns3 = subprocess.run([os.path.join(ROOT, "validation/ns3/build.sh")], check=True,
                         capture_output=True, text=True).stdout.strip().splitlines()[-1]
    trib = os.path.join(ROOT, "target/release/tributary")
    ns3_file = os.path.join(a.out, "grid-ns3.jsonl")
    ns3_rows = []
    if os.path.exists(ns3_file):
        # Runs already done (an interrupted run resumes; delete the file to start over).
        ns3_rows = [json.loads(line) for line in open(ns3_file) if line.strip()]
    if not a.reuse_ns3:
        run_ns3(ns3, ns3_file, a.reps, ns3_rows)
    if os.environ.get("NS3_ONLY"):
        return
    if not os.path.exists(trib):
        sys.exit("build tributary first: cargo build --release -p tributary")
    report(a, trib, ns3_rows)


def run_ns3(ns3, ns3_file, reps, ns3_rows):
    done = {(x["rtt_ms"], x["loss"], x["run"], x["time_s"]) for x in ns3_rows}
    with open(ns3_file, "a") as f:
        for d in DELAYS_MS:
            for p in LOSSES:
                for r in range(1, reps + 1):
                    if (2 * d, p, r, DURATION_S) in done:
                        continue
                    out = subprocess.run(
                        ["nice", "-n", "10", ns3, f"--rtt={2 * d}", f"--loss={p}",
                         f"--time={DURATION_S}", f"--run={r}"],
                        check=True, capture_output=True, text=True).stdout.strip()
                    f.write(out + "\n")
                    f.flush()
                    ns3_rows.append(json.loads(out))
                    print(out, file=sys.stderr)


def report(a, trib, ns3_rows):
    ours = os.path.join(a.out, "grid-tributary.json")
    subprocess.run(["nice", "-n", "10", trib, "run", SCEN, "--jobs", "1", "--repetitions",
                    str(a.reps), "--json", ours, "--format", "json"],
                   check=True, stdout=subprocess.DEVNULL)
    rep = json.load(open(ours))

    def ns3_mean(d, p):
        v = [x["goodput_bps"] / 1e6 for x in ns3_rows
             if x["rtt_ms"] == 2 * d and abs(x["loss"] - p) < 1e-12
             and x["time_s"] == DURATION_S and x["run"] <= a.reps]
        return statistics.mean(v), (statistics.stdev(v) if len(v) > 1 else 0.0)

    def ours_mean(variant, d, p):
        v = []
        for run in rep["runs"]:
            sv = run["sweep_values"]
            delay = str(sv.get("links.link.delay"))
            loss = float(sv.get("links.link.loss"))
            if run["variant"] == variant and delay == f"{d}ms" and abs(loss - p) < 1e-12:
                v.append(run["flows"][0]["goodput_mbps"])
        return statistics.mean(v), (statistics.stdev(v) if len(v) > 1 else 0.0)

    print("| RTT | loss | ns-3 Mbit/s | classic Mbit/s | classic/ns-3 | within ±25 % | "
          "linux Mbit/s | linux/ns-3 |")
    print("|---|---|---|---|---|---|---|---|")
    misses = 0
    for d in DELAYS_MS:
        for p in LOSSES:
            n, ns = ns3_mean(d, p)
            c, cs = ours_mean("classic", d, p)
            l, ls = ours_mean("linux", d, p)
            ok = abs(c / n - 1) <= 0.25
            misses += not ok
            print(f"| {2 * d} ms | {p * 100:g} % | {n:.3f} ± {ns:.3f} | {c:.3f} ± {cs:.3f} | "
                  f"{c / n:.2f} | {'yes' if ok else '**no**'} | {l:.3f} ± {ls:.3f} | "
                  f"{l / n:.2f} |")
    print(f"\n{misses} point(s) outside ±25 % (mean ± standard deviation over {a.reps} runs)")


if __name__ == "__main__":
    main()
