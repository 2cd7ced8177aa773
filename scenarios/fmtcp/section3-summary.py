#!/usr/bin/env python3
"""The tables of docs/experiments/fmtcp-section3.md from the runs' JSON reports.

    tributary run scenarios/fmtcp/section3-64KiB.toml --json s3-64.json   # and 128, 256
    python3 scenarios/fmtcp/section3-summary.py s3-64.json s3-128.json s3-256.json

One table per file: goodput mean ± 95 % CI of IETF-MPTCP (`mptcp`), MPTCP without
reinjection and penalisation (`mptcp-plain`), without timeout failover either (`mptcp-bare`,
if the file has it) and 2-TCP per Table I case, and the degradation (MPTCP − 2-TCP) / 2-TCP
of the paper's §III.
"""
import json
import sys


def describe(values):
    sub2 = values.get('links.sub2', {})
    loss = sub2.get('loss', 0)
    loss = float(loss.rstrip('%')) / 100 if isinstance(loss, str) else float(loss)
    return f"{sub2.get('delay', '?')}, {loss * 100:g} %"


def table(path):
    rep = json.load(open(path))
    rows = {}
    for s in rep['summary']:
        if s['aggregate']:
            continue
        rows[(s['variant'], s['sweep'])] = s
    variants = [v for v in ('mptcp', 'mptcp-plain', 'mptcp-bare') if (v, rep['sweep_points'][0])
                in rows]
    head = {'mptcp': 'IETF-MPTCP', 'mptcp-plain': 'no reinj./penal.',
            'mptcp-bare': 'bare (no failover either)'}
    out = [f"#### {rep['scenario']} ({rep['repetitions']} repetitions)", '',
           '| case | subflow 2 | ' + ' | '.join(head[v] for v in variants) + ' | 2-TCP | ' +
           ' | '.join(f'{head[v]} vs 2-TCP' for v in variants) + ' |',
           '|---|---|' + '---|' * (2 * len(variants) + 1)]
    for case in rep['sweep_points']:
        g = {v: rows[(v, case)]['goodput_mbps'] for v in variants + ['2-tcp']}
        cell = {v: f"{x['mean']:.2f} ± {x['ci95']:.2f}" for v, x in g.items()}
        base = g['2-tcp']['mean']
        deg = {v: (g[v]['mean'] - base) / base * 100 for v in variants}
        sweep_values = rows[('mptcp', case)]['sweep_values']
        out.append(f"| {case.split()[-1]} | {describe(sweep_values)} | " +
                   ' | '.join(cell[v] for v in variants) + f" | {cell['2-tcp']} | " +
                   ' | '.join(f'{deg[v]:+.1f} %' for v in variants) + ' |')
    return '\n'.join(out)


if __name__ == '__main__':
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    print('\n\n'.join(table(p) for p in sys.argv[1:]))
