#!/usr/bin/env python3
"""Summarises dFEC result files (tributary run FILE --json OUT) against the baseline variant.

usage: summary.py RESULTS.json [RESULTS.json ...]

For each sweep point and variant: the workload metric (bulk and web: completion time of flow
`main`, s; video: frames fully received by their deadline, % of frames) as mean ± 95 % CI
(Student t over the repetitions), the change against the baseline (`tcp` or `mptcp`) on the
same seeds (mean of the per-repetition ratios, with its CI), and the FEC overhead: parity
bytes over stream bytes delivered (%, scheme counters), as the paper's "FEC overhead".
"""
import json
import math
import sys

T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
        9: 2.262, 10: 2.228, 14: 2.145, 19: 2.093, 29: 2.045}


def t975(df):
    keys = sorted(k for k in T975 if k <= df)
    return T975[keys[-1]] if keys else float("nan")


def mci(xs):
    xs = [x for x in xs if x is not None and not math.isnan(x)]
    if not xs:
        return float("nan"), float("nan"), 0
    m = sum(xs) / len(xs)
    if len(xs) < 2:
        return m, float("nan"), len(xs)
    s = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))
    return m, t975(len(xs) - 1) * s / math.sqrt(len(xs)), len(xs)


def metric(flow):
    app = flow.get("app") or {}
    if app.get("name") == "video":
        r = app["receiver"]
        frames = r.get("frames") or 0
        return 100.0 * r.get("on_time", 0) / frames if frames else None
    return flow.get("completion_s")


def fec_overhead(flow):
    s = (flow.get("scheme") or {}).get("sender") or {}
    paths = s.get("paths")
    if not isinstance(paths, list) or not flow.get("bytes_delivered"):
        return None
    parity = sum(p.get("parity_bytes", 0) for p in paths)
    return 100.0 * parity / flow["bytes_delivered"]


def main():
    for path in sys.argv[1:]:
        res = json.load(open(path))
        runs = {}
        kind = None
        for r in res["runs"]:
            f = next(f for f in r["flows"] if f["name"] == "main")
            kind = (f.get("app") or {}).get("name", kind)
            runs[(r["sweep"], r["variant"], r["repetition"])] = f
        variants = res["variants"]
        base = "tcp" if "tcp" in variants else "mptcp"
        what = "on-time frames %" if kind == "video" else "completion s"
        better = "higher" if kind == "video" else "lower"
        print(f"## {res['scenario']} ({what}, {better} is better; baseline {base}; "
              f"{res['repetitions']} repetitions)\n")
        print("| point | variant | metric | vs baseline | FEC overhead % | unfinished |")
        print("|---|---|---|---|---|---|")
        for pt in res["sweep_points"]:
            for v in variants:
                vals, rel, ovh, unf = [], [], [], 0
                for rep in range(res["repetitions"]):
                    f = runs.get((pt, v, rep))
                    b = runs.get((pt, base, rep))
                    if f is None:
                        continue
                    x = metric(f)
                    if x is None:
                        unf += 1
                        continue
                    vals.append(x)
                    o = fec_overhead(f)
                    if o is not None:
                        ovh.append(o)
                    bx = metric(b) if b else None
                    if bx:
                        rel.append(100.0 * (x / bx - 1.0))
                m, c, n = mci(vals)
                rm, rc, _ = mci(rel)
                om, oc, _ = mci(ovh)
                rel_s = "" if v == base else f"{rm:+.1f} ± {rc:.1f} %"
                ovh_s = f"{om:.2f} ± {oc:.2f}" if ovh else ""
                print(f"| {pt} | {v} | {m:.3f} ± {c:.3f} | {rel_s} | {ovh_s} | {unf or ''} |")
        print()


if __name__ == "__main__":
    main()
