#!/usr/bin/env python3
"""Writes a synthetic Mahimahi packet-delivery trace that steps between rates, for the
trace-driven scenarios (scenarios/emulate/traces/). One line per 1504-byte delivery
opportunity, times in ms; the trace repeats with the period of its last line.
Usage: make-step-trace.py OUT MBPS:SECONDS [MBPS:SECONDS ...]"""
import sys

out, steps = sys.argv[1], sys.argv[2:]
lines = []
t0 = 0
for step in steps:
    mbps, secs = (float(x) for x in step.split(":"))
    per_ms = mbps * 1e6 / 8 / 1504 / 1000  # opportunities per millisecond
    credit = 0.0
    for ms in range(t0 + 1, t0 + int(secs * 1000) + 1):
        credit += per_ms
        while credit >= 1:
            lines.append(ms)
            credit -= 1
    t0 += int(secs * 1000)
if not lines or lines[-1] != t0:
    lines.append(t0)  # the period is the last line's time
with open(out, "w") as f:
    f.write("".join(f"{ms}\n" for ms in lines))
