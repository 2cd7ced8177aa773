#!/usr/bin/env python3
"""Tables for docs/experiments/nc-mptcp.md from `tributary run ... --json FILE` output.

Usage: summary.py FILE.json (or FILE.json.gz)

One row per sweep point: goodput (Mbit/s) of every variant as mean ± 95 % CI over the
repetitions (Student t), the ratio of the nc-mptcp mean to each MPTCP variant's mean, and
nc-mptcp's redundancy from its own counters (`flows[].scheme.sender`): packets sent
(regular first + regular resent + coded) per source segment − 1.
"""
import gzip
import json
import math
import sys
from collections import defaultdict

T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
       9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 14: 2.145, 19: 2.093, 29: 2.045}


def ci(xs):
    n = len(xs)
    m = sum(xs) / n
    if n < 2:
        return m, float("nan")
    s = math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))
    return m, T95.get(n - 1, 1.96) * s / math.sqrt(n)


def main():
    path = sys.argv[1]
    d = json.load(gzip.open(path, "rt") if path.endswith(".gz") else open(path))
    good = defaultdict(list)
    red = defaultdict(list)
    for r in d["runs"]:
        f = r["flows"][0]
        key = (r["sweep"], r["variant"])
        good[key].append(f["goodput_mbps"])
        tx = (f.get("scheme") or {}).get("sender") or {}
        if tx.get("source_segments"):
            sent = tx["regular_sent"] + tx["regular_resent"] + tx["coded_sent"]
            red[key].append((sent / tx["source_segments"] - 1) * 100)
    sweeps = list(dict.fromkeys(k[0] for k in good))
    variants = list(dict.fromkeys(k[1] for k in good))
    mptcps = [v for v in variants if v.startswith("mptcp")]
    reps = min(len(v) for v in good.values())
    print(f"({reps} repetitions per cell; mean ± 95 % CI)\n")
    cols = variants + [f"nc/{v}" for v in mptcps if "nc-mptcp" in variants]
    if red:
        cols.append("nc-mptcp redundancy %")
    print("| point | " + " | ".join(cols) + " |")
    print("|" + "---|" * (len(cols) + 1))
    for s in sweeps:
        cells = []
        for v in variants:
            m, h = ci(good[(s, v)])
            cells.append(f"{m:.2f} ± {h:.2f}")
        if "nc-mptcp" in variants:
            nc = ci(good[(s, "nc-mptcp")])[0]
            for v in mptcps:
                cells.append(f"{nc / ci(good[(s, v)])[0]:.2f}")
        if red:
            xs = red.get((s, "nc-mptcp"))
            cells.append("%.1f ± %.1f" % ci(xs) if xs else "-")
        print(f"| {s} | " + " | ".join(cells) + " |")


main()
