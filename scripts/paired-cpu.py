#!/usr/bin/env python3
"""CPU time (user + system, from the child's rusage) of one command under two binaries,
run alternately so that the shared VM's slow episodes hit both; prints each run, the medians,
lower quartiles, minima and the new/old ratios.

usage:
  scripts/paired-cpu.py --runs 9 OLD_BINARY NEW_BINARY -- run scenarios/validation/speed-10m.toml --jobs 1

The command's standard output is discarded; both binaries must exit 0.
"""
import argparse
import os
import statistics as st
import subprocess
import sys


def cpu(binary, args):
    with open(os.devnull, "w") as null:
        p = subprocess.Popen([binary] + args, stdout=null, stderr=null)
        _, status, ru = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{binary} {' '.join(args)} failed")
    return ru.ru_utime + ru.ru_stime


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    args = a.args[1:] if a.args[:1] == ["--"] else a.args
    old, new = [], []
    for i in range(a.runs):
        # Alternate which binary goes first, so neither always follows the other.
        order = [(a.old, old), (a.new, new)] if i % 2 == 0 else [(a.new, new), (a.old, old)]
        for b, acc in order:
            acc.append(cpu(b, args))
        print(f"run {i + 1}: old {old[-1]:.3f} s, new {new[-1]:.3f} s", flush=True)
    mo, mn = st.median(old), st.median(new)
    print(f"median: old {mo:.3f} s, new {mn:.3f} s, new/old {mn / mo:.3f} (old/new {mo / mn:.3f}x)")
    q = lambda xs: st.quantiles(xs, n=4)[0] if len(xs) >= 4 else min(xs)
    print(f"lower quartile: old {q(old):.3f} s, new {q(new):.3f} s, new/old {q(new) / q(old):.3f}")
    print(f"min:    old {min(old):.3f} s, new {min(new):.3f} s, new/old {min(new) / min(old):.3f}")


if __name__ == "__main__":
    main()
