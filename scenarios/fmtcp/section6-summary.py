#!/usr/bin/env python3
"""Tables for docs/experiments/fmtcp.md from `tributary run ... --json FILE` output.

Usage: section6-summary.py FILE.json [--overhead] [--windows A-B,C-D,...]

Per (sweep point, variant): goodput, mean block delay and jitter (std of block delay), each
as mean ± 95 % CI over repetitions (Student t), and with --overhead the coding overhead of
the coded schemes from fmtcp's own counters (`flows[].scheme.sender`: symbols sent / source
symbols of the blocks opened − 1; the blocks still open when a bulk run stops count whole, so
this slightly understates it), or from older files' `flows[].coding.overhead`. (The generic
`flows[].overhead`, payload sent / bytes delivered − 1, is the measure every scheme shares.)
With --windows (runs with sample_interval), the mean goodput of each time window [A, B) s
from the goodput series, and its ratio to the first window; also the block delay p95 and
max over mean.
"""
import json
import math
import sys
from collections import defaultdict

T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
       9: 2.262, 10: 2.228, 14: 2.145, 19: 2.093}


def ci(xs):
    n = len(xs)
    m = sum(xs) / n
    if n < 2:
        return m, float("nan")
    s = math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))
    t = T95.get(n - 1, 1.96)
    return m, t * s / math.sqrt(n)


def windows(d, spec):
    wins = [tuple(float(x) for x in w.split("-")) for w in spec.split(",")]
    rows = defaultdict(lambda: defaultdict(list))
    for r in d["runs"]:
        f = r["flows"][0]
        key = (r["sweep"], r["variant"])
        means = []
        for a, b in wins:
            xs = [g for t, g in f["series"] if a < t <= b]
            means.append(sum(xs) / len(xs))
        for i, m in enumerate(means):
            rows[key][f"{wins[i][0]:g}-{wins[i][1]:g} s"].append(m)
            if i > 0:
                rows[key][f"ratio {i}"].append(m / means[0])
        bd = f["block_delay"]
        rows[key]["p95/mean"].append(bd["p95_ms"] / bd["mean_ms"])
        rows[key]["max/mean"].append(bd["max_ms"] / bd["mean_ms"])
    cols = list(next(iter(rows.values())).keys())
    print("| point | variant | " + " | ".join(cols) + " |")
    print("|" + "---|" * (len(cols) + 2))
    for (s, v), c in rows.items():
        print(f"| {s} | {v} | " + " | ".join("%.2f ± %.2f" % ci(c[k]) for k in cols) + " |")


def main():
    d = json.load(open(sys.argv[1]))
    if "--windows" in sys.argv:
        windows(d, sys.argv[sys.argv.index("--windows") + 1])
        return
    overhead = "--overhead" in sys.argv
    rows = defaultdict(lambda: defaultdict(list))
    for r in d["runs"]:
        f = r["flows"][0]
        key = (r["sweep"], r["variant"])
        rows[key]["goodput"].append(f["goodput_mbps"])
        bd = f.get("block_delay")
        if bd:
            rows[key]["delay"].append(bd["mean_ms"])
            rows[key]["jitter"].append(bd["jitter_ms"])
        tx = (f.get("scheme") or {}).get("sender") or {}
        coding = f.get("coding")
        if tx.get("source_symbols"):
            # fmtcp's counters: symbols sent / source symbols of the blocks opened − 1.
            rows[key]["overhead"].append((tx["symbols_sent"] / tx["source_symbols"] - 1) * 100)
        elif coding:
            rows[key]["overhead"].append(coding["overhead"] * 100)
    sweeps = list(dict.fromkeys(k[0] for k in rows))
    variants = list(dict.fromkeys(k[1] for k in rows))
    head = "| point | variant | goodput Mbit/s | block delay ms | jitter ms |"
    if overhead:
        head += " overhead % |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for s in sweeps:
        for v in variants:
            c = rows[(s, v)]
            cells = [f"{m:.2f} ± {h:.2f}" for m, h in [ci(c["goodput"])]]
            for k in ["delay", "jitter"] + (["overhead"] if overhead else []):
                if c[k]:
                    m, h = ci(c[k])
                    cells.append(f"{m:.0f} ± {h:.0f}" if k != "overhead" else f"{m:.1f} ± {h:.1f}")
                else:
                    cells.append("-")
            print(f"| {s} | {v} | " + " | ".join(cells) + " |")


main()
