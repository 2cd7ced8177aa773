#!/usr/bin/env python3
"""Table and figures of scripts/kernel-mptcp.sh's results (docs/experiments/kernel.md)."""
import glob, json, os, re, statistics, sys

sys.path.insert(0, os.path.dirname(__file__))
import svgplot

d = sys.argv[1] if len(sys.argv) > 1 else "docs/data/emu/kernel"
figs = sys.argv[2] if len(sys.argv) > 2 else "docs/figures"
SECS = 15.0
runs = {}  # (scenario, config) -> [goodput]
sims = {}
series = {}  # (scenario, config, rep) -> [(t, mbps)]
for f in sorted(glob.glob(f"{d}/*.json")):
    if f.endswith(".emu.json"):
        continue
    m = re.match(r"(\w+)-(kernel|ours)-(.+)-(\d+)\.json$", os.path.basename(f))
    sc, who, cfg, rep = m.groups()
    j = json.load(open(f))
    if who == "kernel":
        pts = [(t, v) for t, v in j["series"] if t <= SECS + 1e-9]
        g = sum(v for _, v in pts) * 0.1 / SECS
        name = "kernel " + cfg.replace("-", " ")
    else:
        pts = [(t, v) for t, v in j.get("series", []) if t <= SECS + 1e-9]
        g = j["goodput_mbps"]
        name = "tributary " + cfg
        sims.setdefault((sc, name), []).append(j["sim_goodput_mbps"])
    runs.setdefault((sc, name), []).append(g)
    series[(sc, name, int(rep))] = pts

scenarios = ["hetero", "failure", "smallbuf"]
configs = sorted({c for _, c in runs}, key=lambda c: (not c.startswith("kernel mptcp"), not c.startswith("kernel"), c))
print("| configuration | " + " | ".join(scenarios) + " |")
print("|---|" + "---|" * len(scenarios))
for c in configs:
    cells = []
    for sc in scenarios:
        v = runs.get((sc, c))
        if not v:
            cells.append("—")
            continue
        s = f"{statistics.mean(v):.2f}" + (f" ({', '.join(f'{x:.2f}' for x in v)})" if len(v) > 1 else "")
        if (sc, c) in sims:
            s += f"; sim {statistics.mean(sims[(sc, c)]):.2f}"
        cells.append(s)
    print(f"| {c} | " + " | ".join(cells) + " |")

vals = [[statistics.mean(runs[(sc, c)]) if (sc, c) in runs else None for sc in scenarios] for c in configs]
errs = [[(min(runs[(sc, c)]), max(runs[(sc, c)])) if (sc, c) in runs else None for sc in scenarios] for c in configs]
svgplot.bars(f"{figs}/kernel-goodput.svg", "Goodput over identical emulated paths (mean; bars: min-max over runs)",
             "goodput (Mbit/s)", ["two paths, delay + loss", "path failure 5-10 s", "128 KiB receive buffer"],
             configs, vals, errs)


def smooth(pts, k=5):
    return [(pts[i][0], statistics.mean(v for _, v in pts[max(0, i - k + 1):i + 1])) for i in range(len(pts))]


pick = [c for c in ["kernel mptcp cubic", "kernel mptcp reno", "kernel mptcp bbr", "tributary mptcp", "tributary fmtcp"] if series.get(("failure", c, 1))]
svgplot.lines(f"{figs}/kernel-failure-series.svg", "Path failure (Wi-Fi path down 5-10 s), goodput over 0.5 s, run 1",
              "time since the sender started (s)", "goodput (Mbit/s)",
              [(c, smooth(series[("failure", c, 1)])) for c in pick], shade=(5, 10))
print(f"\nfigures: {figs}/kernel-goodput.svg, {figs}/kernel-failure-series.svg")
