#!/usr/bin/env python3
"""Prints the tables of docs/experiments/platform.md from the runs' JSON (issue 5).

Usage: scripts/platform-tables.py DIR, where DIR holds the --json output of every
scenarios/platform/*.toml run as NAME.json (the reproduce loop in the doc writes them).
Per-flow values are averaged per run over the flows of a kind, then reported as mean ± 95 %
Student-t half-width over the repetitions; Jain's index is computed per run, then averaged.
"""
import json
import os
import statistics
import sys

T = {2: 12.706, 3: 4.303, 4: 3.182, 5: 2.776, 6: 2.571, 10: 2.262}


def load(dir_, name):
    with open(os.path.join(dir_, name + '.json')) as f:
        return json.load(f)


def mean_ci(col):
    n = len(col)
    half = T.get(n, 2.0) * statistics.stdev(col) / n ** 0.5 if n > 1 else 0.0
    return statistics.mean(col), half


def cell(col, digits=2):
    m, h = mean_ci(col)
    return f"{m:.{digits}f} ± {h:.{digits}f}"


def throughput(d, label):
    variants = d['variants']
    per, order = {}, []
    for r in d['runs']:
        mp = [f['goodput_mbps'] for f in r['flows'] if f['name'].startswith('mp')]
        if r['sweep'] not in order:
            order.append(r['sweep'])
        per.setdefault((r['variant'], r['sweep']), []).append(statistics.mean(mp))
    out = [f"| {label} | " + " | ".join(variants) + " | ordering |",
           "|" + "---|" * (len(variants) + 2)]
    means = {v: [] for v in variants}
    for sw in order:
        ms = {v: statistics.mean(per[(v, sw)]) for v in variants}
        for v in variants:
            means[v].append(ms[v])
        ranked = " > ".join(sorted(variants, key=lambda v: -ms[v]))
        out.append(f"| {sw.split('=')[-1]} | "
                   + " | ".join(cell(per[(v, sw)]) for v in variants) + f" | {ranked} |")
    mm = {v: statistics.mean(means[v]) for v in variants}
    out.append("| mean over points | " + " | ".join(f"{mm[v]:.2f}" for v in variants)
               + " | " + " > ".join(sorted(variants, key=lambda v: -mm[v])) + " |")
    return out


def jain(x):
    return sum(x) ** 2 / (len(x) * sum(v * v for v in x))


def fairness(d):
    rows = {}
    for r in d['runs']:
        mp = [f['goodput_mbps'] for f in r['flows'] if f['name'].startswith('mp')]
        tcp = [f['goodput_mbps'] for f in r['flows'] if f['name'].startswith('tcp')]
        m, t = statistics.mean(mp), statistics.mean(tcp)
        rows.setdefault(r['variant'], []).append(
            (jain(mp + tcp), jain(mp), m, t, m / t, sum(mp) + sum(tcp)))
    out = ["| algorithm | Jain (20 flows) | Jain (10 multipath) | multipath per flow (Mbit/s) "
           "| TCP per flow (Mbit/s) | multipath / TCP | total (Mbit/s) |", "|---|---|---|---|---|---|---|"]
    for v in d['variants']:
        xs = rows[v]
        cells = [cell([x[i] for x in xs], 3 if i < 4 else 2) for i in range(6)]
        out.append(f"| {v} | " + " | ".join(cells) + " |")
    return out


def load_balance(d, two_backgrounds):
    rows = {}
    for r in d['runs']:
        mp = next(f for f in r['flows'] if f['name'] == 'mp')
        s1 = next(p['throughput_mbps'] for p in mp['paths'] if p['name'] == 'link1')
        s2 = next(p['throughput_mbps'] for p in mp['paths'] if p['name'] == 'link2')
        vals = [mp['goodput_mbps'], s1, s2, 100 * s1 / (s1 + s2)]
        for bg in (['bg1', 'bg2'] if two_backgrounds else ['bg2']):
            vals.append(statistics.mean(
                f['goodput_mbps'] for f in r['flows'] if f['name'].startswith(bg)))
        rows.setdefault(r['variant'], []).append(vals)
    out = []
    for v in d['variants']:
        xs = rows[v]
        cells = [cell([x[i] for x in xs], 1 if i == 3 else 2) for i in range(len(xs[0]))]
        out.append(f"| {v} | " + " | ".join(cells) + " |")
    return out


def subflow_down(d, at=60.0):
    rows = {}
    for r in d['runs']:
        mps = [f for f in r['flows'] if f['name'].startswith('mp')]
        before = statistics.mean(statistics.mean(v for t, v in f['series'] if t <= at) for f in mps)
        after = statistics.mean(statistics.mean(v for t, v in f['series'] if t > at) for f in mps)
        whole = statistics.mean(statistics.mean(v for _, v in f['series']) for f in mps)
        r1 = sum(p['throughput_mbps'] for f in mps for p in f['paths'] if p['name'] == 'r1')
        r2 = sum(p['throughput_mbps'] for f in mps for p in f['paths'] if p['name'] == 'r2')
        rows.setdefault(r['variant'], []).append((before, after, whole, r1, r2))
    out = []
    for v in d['variants']:
        xs = rows[v]
        cells = [cell([x[i] for x in xs], 3) for i in range(3)]
        r1 = statistics.mean(x[3] for x in xs)
        r2 = statistics.mean(x[4] for x in xs)
        out.append(f"| {v} | " + " | ".join(cells) + f" | {r1:.2f} / {r2:.2f} |")
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    dir_ = sys.argv[1]
    for name, label in [('throughput-filesize', 'file size (MB)'), ('throughput-rtt', 'RTT (ms)'),
                        ('throughput-bandwidth', 'bandwidth (Mbit/s)'), ('throughput-loss', 'loss (%)')]:
        print(f"### {name}\n\n" + "\n".join(throughput(load(dir_, name), label)) + "\n")
    print("### throughput-subflow-down (rows)\n\n"
          + "\n".join(subflow_down(load(dir_, 'throughput-subflow-down'))) + "\n")
    for sc in (1, 2, 3):
        print(f"### loadbalance-{sc} (rows)\n\n"
              + "\n".join(load_balance(load(dir_, f'loadbalance-{sc}'), sc > 1)) + "\n")
    print("### fairness\n\n" + "\n".join(fairness(load(dir_, 'fairness'))))


if __name__ == '__main__':
    main()
