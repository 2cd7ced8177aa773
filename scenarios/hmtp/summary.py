#!/usr/bin/env python3
"""Tables for docs/experiments/hmtp.md from `tributary run scenarios/hmtp/*.toml --json FILE`.

Usage: summary.py FILE.json

Per (sweep point, variant): path 1 and path 2 throughput (acknowledged datagram bytes per
second on the path, Mbit/s), goodput (stream bytes the application read per second), RTOs per
run, retransmitted KB per path, and for hmtp its chunk counters (chunks decoded, step-6 rounds,
coding overhead = symbols sent / source symbols - 1); each as mean ± 95 % CI over the
repetitions (Student t).
"""
import json
import math
import sys
from collections import defaultdict

T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
       9: 2.262, 10: 2.228, 14: 2.145, 19: 2.093}


def ci(xs):
    n = len(xs)
    m = sum(xs) / n
    if n < 2:
        return m, float("nan")
    s = math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))
    return m, T95.get(n - 1, 1.96) * s / math.sqrt(n)


def main():
    d = json.load(open(sys.argv[1]))
    rows = defaultdict(lambda: defaultdict(list))
    order = []
    for r in d["runs"]:
        f = r["flows"][0]
        key = (r["sweep"], r["variant"])
        if key not in rows:
            order.append(key)
        c = rows[key]
        p = f["paths"]
        c["path 1 Mbit/s"].append(p[0]["throughput_mbps"])
        c["path 2 Mbit/s"].append(p[1]["throughput_mbps"])
        c["goodput Mbit/s"].append(f["goodput_mbps"])
        c["RTOs p1/p2"].append((p[0]["rto_count"], p[1]["rto_count"]))
        c["retx KB p1/p2"].append((p[0]["retransmitted_bytes"] / 1e3, p[1]["retransmitted_bytes"] / 1e3))
        s = (f.get("scheme") or {}).get("sender") or {}
        if "chunks" in s:
            c["chunks decoded"].append(((f["scheme"].get("receiver") or {}).get("chunks_decoded", 0),))
            c["step-6 rounds"].append((s.get("extra_rounds", 0),))
            src = s.get("source_symbols", 0)
            c["coding overhead %"].append(
                (100.0 * (s["symbols_sent"] / src - 1) if src else float("nan"),))
    cols = ["path 1 Mbit/s", "path 2 Mbit/s", "goodput Mbit/s", "RTOs p1/p2", "retx KB p1/p2",
            "chunks decoded", "step-6 rounds", "coding overhead %"]
    n = len(next(iter(rows.values()))["goodput Mbit/s"])
    print(f"{n} runs per row; mean ± 95 % CI (Student t)\n")
    print("| point | variant | " + " | ".join(cols) + " |")
    print("|" + "---|" * (len(cols) + 2))
    for key in order:
        c = rows[key]
        cells = []
        for k in cols:
            xs = c.get(k)
            if not xs:
                cells.append("–")
            elif isinstance(xs[0], tuple):
                parts = []
                for i in range(len(xs[0])):
                    m, _ = ci([x[i] for x in xs])
                    parts.append("%.1f" % m)
                cells.append("/".join(parts))
            else:
                m, h = ci(xs)
                cells.append("%.3f ± %.3f" % (m, h) if h == h else "%.3f" % m)
        print(f"| {key[0]} | {key[1]} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
