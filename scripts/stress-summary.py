#!/usr/bin/env python3
"""Summarises stress-suite reports (tributary run --json) as Markdown tables.

Usage: scripts/stress-summary.py report.json [report.json ...]

Per scenario and sweep point: goodput (mean ± 95 % CI over repetitions) of every variant, the
fmtcp/mptcp ratio, per-path throughput of fmtcp and mptcp, block delay and overhead.
"""
import json
import sys


def fmt(e, d=2):
    if not e:
        return "-"
    m, ci = e["mean"], e.get("ci95")
    return f"{m:.{d}f}" + (f" ± {ci:.{d}f}" if ci else "")


for path in sys.argv[1:]:
    r = json.load(open(path))
    rows = [s for s in r["summary"] if not s["aggregate"]]
    points = []
    for s in rows:
        if s["sweep"] not in points:
            points.append(s["sweep"])
    print(f"### {r['scenario']}: {r['description']} ({r['repetitions']} repetitions)\n")
    print("| point | variant | goodput Mbit/s | block delay ms | overhead % | per path Mbit/s |")
    print("|---|---|---|---|---|---|")
    for pt in points:
        by = {s["variant"]: s for s in rows if s["sweep"] == pt}
        for v, s in by.items():
            per = ", ".join(f"{p['name']} {p['throughput_mbps']['mean']:.2f}" for p in s["paths"])
            print(f"| {pt or '-'} | {v} | {fmt(s['goodput_mbps'])} | {fmt(s['block_delay_ms'], 0)} "
                  f"| {fmt(s['overhead_pct'], 1)} | {per} |")
        if "fmtcp" in by and "mptcp" in by:
            f, m = by["fmtcp"]["goodput_mbps"]["mean"], by["mptcp"]["goodput_mbps"]["mean"]
            print(f"| {pt or '-'} | **fmtcp / mptcp** | **{f / m:.3f}** | | | |")
    print()
