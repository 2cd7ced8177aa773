#!/usr/bin/env python3
"""Prints criterion results of the `codec` bench as a Markdown table (median time, and the
throughput in GB/s and Gbit/s, decimal units). Run after `cargo bench -p tributary-bench`.

    python3 crates/bench/benches/summary.py [target/criterion]
"""
import json
import pathlib
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "target/criterion")
rows = []
for bench in sorted(root.glob("*/**/new/benchmark.json")):
    meta = json.loads(bench.read_text())
    est = json.loads((bench.parent / "estimates.json").read_text())
    median_ns = est["median"]["point_estimate"]
    tp = meta.get("throughput") or {}
    nbytes = tp.get("Bytes") or tp.get("BytesDecimal")
    if nbytes is None:
        continue
    gbps = nbytes / median_ns  # bytes per ns = GB/s
    rows.append((meta["full_id"], median_ns, gbps))
print("| benchmark | median time | GB/s | Gbit/s |")
print("|---|---|---|---|")
for name, ns, gbps in rows:
    t = f"{ns / 1e3:.1f} µs" if ns >= 1e3 else f"{ns:.0f} ns"
    if ns >= 1e6:
        t = f"{ns / 1e6:.2f} ms"
    print(f"| `{name}` | {t} | {gbps:.2f} | {gbps * 8:.2f} |")
