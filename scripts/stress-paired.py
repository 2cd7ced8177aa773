#!/usr/bin/env python3
"""Per-seed paired ratios of every variant against `mptcp` from `tributary run --json` reports
(docs/experiments/stress.md, "Framing and late symbols").

Usage: scripts/stress-paired.py report.json [report.json ...]

Per sweep point and variant: mean of the per-seed goodput ratio (same repetition, same sweep
point) ± 95 % interval (Student's t; before 2026-11-27 evening 1.96 for any n other than 30, which only the 30-seed files used), seeds where it is >= 1, and the
exact decomposition ratio = packets x stream bytes per packet x efficiency (geometric means of
the per-seed factors; efficiency = delivered / payload bytes sent), overhead, late symbols
(fmtcp's receiver counter over symbols sent), forward wire bytes per packet, and reverse (ACK)
bytes per delivered stream byte.
"""
import json, sys, math, collections
from t95 import ci

def gm(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))

def getp(run):
    f = run["flows"][0] if "flows" in run else run
    return f

for path in sys.argv[1:]:
    r = json.load(open(path))
    runs = r["runs"]
    by = collections.defaultdict(dict)
    for u in runs:
        by[(u["sweep"], u["variant"])][u["repetition"]] = u
    points = []
    for (s, v) in by:
        if s not in points: points.append(s)
    print(f"## {r['scenario']}")
    for pt in points:
        m = by[(pt, "mptcp")]
        for (s, v), rs in by.items():
            if s != pt: continue
            rat, pk, bpp, eff, oh, late, wpp, rev = [], [], [], [], [], [], [], []
            for rep, u in rs.items():
                fu, fm = getp(u), getp(m[rep])
                rat.append(fu["goodput_mbps"] / fm["goodput_mbps"])
                def stats(f):
                    pks = sum(p["packets_sent"] for p in f["paths"])
                    pay = sum(p["payload_bytes_sent"] for p in f["paths"])
                    return pks, pay, f["bytes_delivered"]
                a, b = stats(fu), stats(fm)
                pk.append(a[0] / b[0]); bpp.append((a[1] / a[0]) / (b[1] / b[0]))
                eff.append((a[2] / a[1]) / (b[2] / b[1]))
                oh.append(a[1] / a[2] - 1)
                fw = sum(l["forward"]["bytes"] for l in u["links"]); fo = sum(l["forward"]["offered"] for l in u["links"])
                wpp.append(fw / fo)
                rev.append(sum(l["reverse"]["bytes"] for l in u["links"]) / fu["bytes_delivered"])
                sc = fu.get("scheme") or {}
                rx = sc.get("receiver") or {}; tx = sc.get("sender") or {}
                if tx.get("symbols_sent"):
                    late.append(rx.get("late_symbols", 0) / tx["symbols_sent"])
            mu, c = ci(rat)
            wins = sum(x >= 1 for x in rat)
            l = f"{100*sum(late)/len(late):.1f}" if late else "-"
            print(f"{pt:>10} {v:<16} ratio {mu:.3f} ± {c:.3f} wins {wins:2}/{len(rat)}  pk {gm(pk):.4f} bpp {gm(bpp):.4f} eff {gm(eff):.4f}  oh {100*sum(oh)/len(oh):.1f}% late {l}% wire/pkt {sum(wpp)/len(wpp):.1f} ackB/streamB {100*sum(rev)/len(rev):.2f}%")
