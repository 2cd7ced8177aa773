#!/usr/bin/env python3
"""Table and figure of scripts/emu-vs-sim.sh's results: emulated vs simulated goodput."""
import glob, json, os, re, statistics, sys

sys.path.insert(0, os.path.dirname(__file__))
import svgplot

d = sys.argv[1] if len(sys.argv) > 1 else "docs/data/emu/vs-sim"
figs = sys.argv[2] if len(sys.argv) > 2 else "docs/figures"
res = {}
for f in sorted(glob.glob(f"{d}/*.json")):
    mix, scheme, rep = re.match(r"(\w+)-([\w-]+)-(\d+)\.json$", os.path.basename(f)).groups()
    j = json.load(open(f))
    res.setdefault((mix, scheme), []).append((j["goodput_mbps"], j["sim_goodput_mbps"], j["lateness_p99_us"], j["cpu_s"] / j["wall_s"]))
mixes = [m for m in ["symmetric", "rtt", "lossy", "bursty"] if any(k[0] == m for k in res)]
known = ["tcp", "mptcp", "fmtcp", "dfec", "nc-mptcp", "cmt-sctp", "hmtp"]
schemes = [s for s in known if any(k[1] == s for k in res)] + sorted({k[1] for k in res} - set(known))
print("| mix | scheme | emulated (per seed) | simulated (per seed) | emulated / simulated (mean) | within ±10 % | emulator lateness p99 | emulator CPU |")
print("|---|---|---|---|---|---|---|---|")
ratios = []
for m in mixes:
    for s in schemes:
        v = res.get((m, s))
        if not v:
            continue
        e = statistics.mean(x[0] for x in v)
        si = statistics.mean(x[1] for x in v)
        r = e / si
        ratios.append(((m, s), r))
        print(f"| {m} | {s} | {e:.2f} ({', '.join(f'{x[0]:.2f}' for x in v)}) | {si:.2f} ({', '.join(f'{x[1]:.2f}' for x in v)}) | {r:.3f} | {'yes' if abs(r-1) <= 0.10 else '**no**'} | {max(x[2] for x in v)} us | {statistics.mean(x[3] for x in v)*100:.0f} % |")
vals = [[statistics.mean(x[0] for x in res[(m, s)]) if (m, s) in res else None for m in mixes] for s in schemes] + \
       [[statistics.mean(x[1] for x in res[(m, s)]) if (m, s) in res else None for m in mixes] for s in schemes]
names = [f"{s} emulated" for s in schemes] + [f"{s} simulated" for s in schemes]
# Order: emulated/simulated next to each other per scheme.
n = len(schemes)
order = [i for k in range(n) for i in (k, k + n)]
svgplot.bars(f"{figs}/emu-vs-sim.svg", "Same scenario: emulator vs simulator (mean goodput over seeds)",
             "goodput (Mbit/s)", mixes, [names[i] for i in order], [vals[i] for i in order])
print(f"\nfigure: {figs}/emu-vs-sim.svg")
