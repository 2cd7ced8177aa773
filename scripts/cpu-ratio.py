#!/usr/bin/env python3
"""CPU cost per packet of two workloads, for a VM whose speed changes under the benchmark.

On the 2-vCPU development VM identical runs of one binary take either about t or about 2t of
CPU time, in episodes of a second or so (the vCPU shares its physical core with a busy
neighbour, or is clocked down): a run can only be slowed, never sped up. So this script runs
many *short* invocations, alternating workloads and binaries, measures each one's user CPU
time exactly (rusage of the child, microseconds, not `/usr/bin/time`'s 10 ms; with `--system`
user + system time), and reports
per binary the ratio B/A of CPU time per packet from the fastest runs (minimum and lower
quartile of each workload), beside the median of the per-round ratios.

usage:
  scripts/cpu-ratio.py --rounds 40 \\
      --a 'run scenarios/nc-mptcp/bench/bench-mp.toml --repetitions 8 --jobs 1 --json {json}' \\
      --b 'run scenarios/nc-mptcp/bench/bench-nc.toml --repetitions 8 --jobs 1 --json {json}' \\
      /tmp/old/tributary target/release/tributary

`{json}` is replaced by a temporary file; the data packets sent (every path of every flow of
every run) are read from it. For commands without JSON output give the packet counts with
`--packets A B` (e.g. `tributary bench`, whose cases have fixed counts).
"""
import argparse
import json
import os
import shlex
import statistics as st
import subprocess
import sys
import tempfile


def packets(path):
    with open(path) as f:
        d = json.load(f)
    return sum(p["packets_sent"] for r in d["runs"] for fl in r["flows"] for p in fl["paths"])


def run(binary, template, tmp, system=False):
    js = os.path.join(tmp, "out.json")
    args = [binary] + [a.replace("{json}", js) for a in shlex.split(template)]
    with open(os.devnull, "w") as null:
        p = subprocess.Popen(args, stdout=null, stderr=subprocess.PIPE)
        _, status, ru = os.wait4(p.pid, 0)
        err = p.stderr.read().decode(errors="replace")
        p.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(args)} failed:\n{err}")
    n = packets(js) if "{json}" in template else None
    return ru.ru_utime + (ru.ru_stime if system else 0.0), n


def quartile(xs):
    return st.quantiles(xs, n=4)[0] if len(xs) >= 4 else min(xs)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--a", required=True, help="arguments of workload A (the reference)")
    ap.add_argument("--b", required=True, help="arguments of workload B")
    ap.add_argument("--packets", type=int, nargs=2, metavar=("A", "B"))
    ap.add_argument("--system", action="store_true",
                    help="count system CPU time too (page faults of a large run's first touch)")
    ap.add_argument("binaries", nargs="+")
    o = ap.parse_args()
    t = {(b, w): [] for b in o.binaries for w in "ab"}
    pk = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(o.rounds):
            # Alternate the order inside a round so neither workload always runs first.
            order = [(b, w) for b in o.binaries for w in ("ab" if r % 2 == 0 else "ba")]
            line = [f"round {r + 1} load {os.getloadavg()[0]:.2f}"]
            for b, w in order:
                cpu, n = run(b, o.a if w == "a" else o.b, tmp, o.system)
                t[(b, w)].append(cpu)
                if o.packets:
                    n = o.packets[0 if w == "a" else 1]
                if pk.setdefault((b, w), n) != n:
                    sys.exit(f"{b} {w}: packet count changed between runs ({pk[(b, w)]} then {n})")
                line.append(f"{os.path.basename(os.path.dirname(b)) or b}:{w} {cpu:.3f}")
            print(" | ".join(line), flush=True)
    for b in o.binaries:
        a, bb = t[(b, "a")], t[(b, "b")]
        pa, pb = pk[(b, "a")], pk[(b, "b")]
        per = lambda x, y: (y / pb) / (x / pa)
        rounds = [per(x, y) for x, y in zip(a, bb)]
        print(f"{b}: packets A {pa}, B {pb}; CPU s A min {min(a):.3f} / median {st.median(a):.3f}, "
              f"B min {min(bb):.3f} / median {st.median(bb):.3f}")
        print(f"  B/A CPU per packet: minima {per(min(a), min(bb)):.3f}, lower quartiles "
              f"{per(quartile(a), quartile(bb)):.3f}, median of per-round ratios "
              f"{st.median(rounds):.3f} (range {min(rounds):.2f}-{max(rounds):.2f})")
    if len(o.binaries) > 1:
        ref = o.binaries[0]
        for b in o.binaries[1:]:
            for w in "ab":
                print(f"{b} against {ref}, workload {w.upper()}: minima "
                      f"{min(t[(b, w)]) / min(t[(ref, w)]):.3f}, lower quartiles "
                      f"{quartile(t[(b, w)]) / quartile(t[(ref, w)]):.3f}")


if __name__ == "__main__":
    main()
