#!/usr/bin/env python3
"""Markdown table (medians over repetitions) of scripts/emu-accuracy.sh's JSON lines."""
import json, statistics, sys
from collections import defaultdict

rows = defaultdict(list)
for line in open(sys.argv[1]):
    d = json.loads(line)
    rows[(d["kind"], d["rate_mbps"], d["mtu"])].append(d)

def med(v):
    return statistics.median(v)

print("| test | link | rate realised (error) | one-way delay p50 / p99 (model) | loss realised (model's draws) | lateness p99 | emulator CPU | whole process CPU | load avg |")
print("|---|---|---|---|---|---|---|---|---|")
for (kind, rate, mtu), ds in rows.items():
    link = f"{rate:g} Mbit/s" + (f", MTU {mtu}" if mtu != 1500 else "")
    rr = med([d["realised_rate_mbps"] for d in ds])
    re = med([d["rate_error"] for d in ds])
    if kind.startswith("rate"):
        rate_s = f"{rr:.1f} ({re*100:+.2f} %)"
        delay_s = "(queueing)"
        loss_s = f"{med([d['realised_loss'] for d in ds])*100:.2f} % (0)"
    else:
        rate_s = f"{rr:.1f} offered at 0.5"
        delay_s = f"{med([d['delay_p50_ms'] for d in ds]):.3f} / {med([d['delay_p99_ms'] for d in ds]):.3f} ms ({ds[0]['delay_model_ms']:.3f})"
        loss_s = f"{med([d['realised_loss'] for d in ds])*100:.3f} % ({med([d['model_loss'] for d in ds])*100:.3f} %)"
    lat = med([d["lateness_p99_us"] for d in ds])
    cpu = med([d["emulator_cpu_fraction"] for d in ds])
    pcpu = med([d["process_cpu_fraction"] for d in ds])
    load = ", ".join(d["load_avg"] for d in ds)
    print(f"| {kind} | {link} | {rate_s} | {delay_s} | {loss_s} | {lat:.0f} us | {cpu*100:.0f} % | {pcpu*100:.0f} % | {load} |")
