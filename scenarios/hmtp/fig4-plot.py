#!/usr/bin/env python3
"""Renders HMTP Fig. 4 (δ' versus c) from the CSV lines the codec example prints on stderr:

    cargo run --release -p tributary-codec --example hmtp_fig4 -- 200 2> fig4.csv
    python3 scenarios/hmtp/fig4-plot.py fig4.csv docs/figures/hmtp/hmtp-fig4.svg
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import svgplot  # noqa: E402

series = {}
for line in open(sys.argv[1]):
    f = line.strip().split(",")
    if len(f) != 6 or f[0] != "fig4":
        continue
    _, c, k, dec, n, p = f
    series.setdefault(f"k={k} {dec} at {n}", []).append((float(c), float(p)))
named = sorted(series.items())
named.append(("target δ = 0.03", [(0.02, 0.03), (0.2, 0.03)]))
svgplot.lines(sys.argv[2], "HMTP Fig. 4: real decoding failure δ' vs c (δ = 0.03)", "c",
              "decoding failure probability δ'", named)
