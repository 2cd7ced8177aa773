#!/usr/bin/env python3
"""Tables for docs/experiments/nc-mptcp.md from `tributary run ... --json FILE` output.

Usage: summary.py FILE.json (or FILE.json.gz) [--detail]

One row per sweep point: goodput (Mbit/s) of every variant as mean ± 95 % CI over the
repetitions (Student t), the ratio of the nc-mptcp mean to each MPTCP variant's mean, and
nc-mptcp's redundancy from its own counters (`flows[].scheme.sender`): packets sent
(regular first + regular resent + coded) per source segment − 1.

With --detail, a second table per sweep point and variant: redundancy of every nc-mptcp
variant, repairs (coded repairs + regular retransmissions) / losses (packets the links dropped
on the data direction, random + queue) per run and "+n" unblocking combinations, the mean
block delay (ms, the flow's `block_delay.mean_ms`), and fmtcp's short blocks per run (min-max).
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
    if "--detail" in sys.argv[2:]:
        detail(d)


def detail(d):
    acc = defaultdict(lambda: defaultdict(list))
    for r in d["runs"]:
        f = r["flows"][0]
        c = acc[(r["sweep"], r["variant"])]
        tx = (f.get("scheme") or {}).get("sender") or {}
        if tx.get("source_segments"):
            sent = tx["regular_sent"] + tx["regular_resent"] + tx["coded_sent"]
            c["red"].append((sent / tx["source_segments"] - 1) * 100)
            c["rep"].append(tx["coded_repairs"] + tx["regular_resent"])
            c["unb"].append(tx["coded_unblock"])
            c["loss"].append(sum(l["forward"]["random_drops"] + l["forward"]["queue_drops"]
                                 for l in r["links"]))
        if "short_blocks" in tx:
            c["short"].append(tx["short_blocks"])
        bd = f.get("block_delay") or {}
        if bd.get("mean_ms") is not None:
            c["bd"].append(bd["mean_ms"])
    print("\n| point | variant | redundancy % | repairs / losses (+unblock) | mean block delay ms | short blocks |")
    print("|---|---|---|---|---|---|")
    for (s, v), c in acc.items():
        m = lambda k: sum(c[k]) / len(c[k])
        red = "%.1f ± %.1f" % ci(c["red"]) if c["red"] else "-"
        rep = "%.0f / %.0f (+%.0f)" % (m("rep"), m("loss"), m("unb")) if c["rep"] else "-"
        bd = "%.0f" % m("bd") if c["bd"] else "-"
        sh = "%d-%d" % (min(c["short"]), max(c["short"])) if c["short"] else "-"
        print(f"| {s} | {v} | {red} | {rep} | {bd} | {sh} |")


main()
