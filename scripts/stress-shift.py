#!/usr/bin/env python3
"""When a variant falls behind `mptcp`: the paired difference of the bytes delivered by time t
(docs/experiments/stress.md, "The 4 MiB points over 120 s").

Usage: scripts/stress-shift.py report.json [report.json ...]

The reports come from `tributary run FILE --json F` of a file with `sample_interval` set (the
per-flow goodput series). For every sweep point and variant other than `mptcp`, and a few
times t: the mean over repetitions of (bytes `mptcp` delivered by t) - (bytes the variant
delivered by t), same repetition, in KB, +/- the 95 % half-width (Student's t). A difference
that grows in proportion to t is a rate difference; one that appears early and then stays is a
fixed cost per run (start-up), which a longer run dilutes. Delivered means delivered in order
to the application, so any single time is a snapshot that leaves out what the receiver holds
(data above a hole, undecoded blocks); read the trend, not one column.
"""
import collections
import json
import sys

from t95 import ci

def delivered_by(flow, t, step):
    """Bytes delivered in the sampling intervals ending at or before t (series in Mbit/s)."""
    return sum(g * step * 1e6 / 8 for (tt, g) in flow["series"] if tt <= t + 1e-9)


def main(paths):
    if not paths:
        sys.exit(__doc__)
    for path in paths:
        try:
            r = json.load(open(path))
        except (OSError, ValueError) as e:
            sys.exit(f"{path}: {e}")
        by = collections.defaultdict(dict)
        for u in r["runs"]:
            by[(u["sweep"], u["variant"])][u["repetition"]] = u["flows"][0]
        print(f"## {r['scenario']}")
        for (pt, v), rs in by.items():
            if v == "mptcp" or (pt, "mptcp") not in by:
                continue
            m = by[(pt, "mptcp")]
            some = next(iter(rs.values()))
            if not some.get("series"):
                sys.exit(f"{path}: no goodput series; set sample_interval in the scenario")
            s = some["series"]
            step = s[0][0] if len(s) == 1 else s[1][0] - s[0][0]
            end = s[-1][0]
            times = sorted({round(float(t), 6) for t in (2, 5, 10, 20, 30, 60, 90, 120, end) if t <= end + 1e-9})
            cells = []
            for t in times:
                d = [(delivered_by(m[k], t, step) - delivered_by(f, t, step)) / 1e3
                     for k, f in rs.items() if k in m]
                mu, c = ci(d)
                cells.append(f"{t:g} s {mu:7.0f} ± {c:4.0f}")
            print(f"{pt:>10} {v:<14} mptcp - variant, KB:  " + " | ".join(cells))


if __name__ == "__main__":
    main(sys.argv[1:])
