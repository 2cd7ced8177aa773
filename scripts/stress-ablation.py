#!/usr/bin/env python3
"""Which of FMTCP's mechanisms holds fmtcp below `mptcp` on the stress suite (issue 14, item 1;
docs/experiments/stress.md, "Mechanism ablation and steady state").

Usage: scripts/stress-ablation.py [OUTDIR] [--repetitions N] [--jobs N] [--bin PATH]

For each file of scenarios/stress/ (three-paths, random-loss, bursty-8, surge, failure) it
writes into OUTDIR (default /tmp/stress-ablation) a copy with five variants on the same seeds
and LIA: `mptcp`; the suite's `fmtcp` (repair, full_symbols, adaptive_delta); without
Algorithm 1 (`allocation = false`); without Eq. 4's appended symbols (δ̂ held at 0.999, so
no block gets a symbol beyond its k source symbols in advance: Eq. 4's failure probability
for k symbols sent is below 0.999 whenever p < 26 % at k = 23); and without both. Each copy
runs for the suite's 30 s and again for 60 s (the same seeds: the first 30 s of a 60-s run are
the 30-s run, so the difference of the two delivered byte counts is what the flow delivered
from 30 s to 60 s, with the fixed costs of start-up and of the cut-off at the end cancelling
on average). A result file that exists in OUTDIR is reused, so an interrupted run resumes.

Prints per sweep point and variant, against `mptcp` on the same seed (mean of per-seed ratios
± 95 % Student-t half-width, seeds at or above 1):
  - the suite's 30-s goodput ratio;
  - the steady-state ratio (delivered 30-60 s over `mptcp`'s);
  - the fixed deficit (mptcp − variant delivered bytes) at 30 s and at 60 s: a per-run cost
    stays the same, a rate difference doubles.
"""
import argparse, collections, json, os, pathlib, re, subprocess, sys
import statistics as st

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from t95 import ci  # noqa: E402

CASES = ["three-paths", "random-loss", "bursty-8", "surge", "failure"]
SUITE = 'name = "fmtcp", repair = true, full_symbols = true, adaptive_delta = true'
NO_EQ4 = "delta_min = 0.999, delta_max = 0.999"
VARIANTS = [
    ("mptcp", None),
    ("fmtcp", SUITE),
    ("fmtcp-noalloc", SUITE + ", allocation = false"),
    ("fmtcp-noeq4", SUITE + ", " + NO_EQ4),
    ("fmtcp-neither", SUITE + ", allocation = false, " + NO_EQ4),
]


def scenario(src: str, reps: int, duration: str) -> str:
    head, _, _ = src.partition("[[variants]]")
    sweep = src[src.index("[sweep]"):]
    head, n = re.subn(r"(?m)^repetitions = \d+", f"repetitions = {reps}", head)
    head, m = re.subn(r'(?m)^duration = "[^"]*"', f'duration = "{duration}"', head)
    if n != 1 or m != 1:
        raise SystemExit("a stress file lost its `repetitions` or `duration` line")
    out = [head]
    for name, scheme in VARIANTS:
        out.append(f'[[variants]]\nname = "{name}"\n')
        if scheme:
            out.append(f'set = {{ "flows.bulk.scheme" = {{ {scheme} }} }}\n')
        out.append("\n")
    return "".join(out) + sweep


def size_of(point):
    """Sort key of a sweep point such as `buffer=128KiB`: its size in bytes."""
    m = re.search(r"(\d+)(KiB|MiB)$", point)
    return int(m.group(1)) * (1024 if m.group(2) == "KiB" else 1 << 20) if m else 0


def delivered(path):
    runs = json.load(open(path))["runs"]
    return {(u["sweep"], u["variant"], u["repetition"]): (u["seed"], u["flows"][0])
            for u in runs}


def main():
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("outdir", nargs="?", default="/tmp/stress-ablation")
    ap.add_argument("--repetitions", type=int, default=30)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--bin", default="target/release/tributary")
    a = ap.parse_args()
    root = pathlib.Path(__file__).resolve().parent.parent
    out = pathlib.Path(a.outdir)
    out.mkdir(parents=True, exist_ok=True)
    if not pathlib.Path(a.bin).exists():
        raise SystemExit(f"{a.bin} not found: run `cargo build --release -p tributary` first")
    for case in CASES:
        src = (root / "scenarios" / "stress" / f"{case}.toml").read_text()
        for dur in ("30s", "60s"):
            toml = out / f"{case}-{dur}.toml"
            js = out / f"{case}-{dur}.json"
            text = scenario(src, a.repetitions, dur)
            if js.exists() and toml.exists() and toml.read_text() == text:
                continue
            toml.write_text(text)
            subprocess.run(["nice", "-n", "10", a.bin, "run", str(toml), "--jobs",
                            str(a.jobs), "--json", str(js)], check=True,
                           stdout=subprocess.DEVNULL)
            print(f"done: {case} {dur}", file=sys.stderr)
    print("| case | point | variant | 30-s ratio (wins) | steady 30-60 s (wins) | "
          "deficit at 30 s, kB | at 60 s, kB |")
    print("|---|---|---|---|---|---|---|")
    for case in CASES:
        r30 = delivered(out / f"{case}-30s.json")
        r60 = delivered(out / f"{case}-60s.json")
        points = sorted({s for (s, _, _) in r30}, key=size_of)
        for s in points:
            for v, _ in VARIANTS[1:]:
                reps = sorted(k for (s2, v2, k) in r30 if (s2, v2) == (s, v))
                rat, steady, d30, d60 = [], [], [], []
                for k in reps:
                    (seed, f30), (seed60, f60) = r30[(s, v, k)], r60[(s, v, k)]
                    (_, m30), (_, m60) = r30[(s, "mptcp", k)], r60[(s, "mptcp", k)]
                    assert seed == seed60, "30-s and 60-s runs must share seeds"
                    rat.append(f30["goodput_mbps"] / m30["goodput_mbps"])
                    mf = m60["bytes_delivered"] - m30["bytes_delivered"]
                    steady.append((f60["bytes_delivered"] - f30["bytes_delivered"]) / mf)
                    d30.append((m30["bytes_delivered"] - f30["bytes_delivered"]) / 1e3)
                    d60.append((m60["bytes_delivered"] - f60["bytes_delivered"]) / 1e3)

                def fmt(xs, digits=3):
                    mu, c = ci(xs)
                    return f"{mu:.{digits}f} ± {c:.{digits}f}"
                wins = lambda xs: sum(x >= 1 for x in xs)
                print(f"| {case} | {s.split('=')[-1]} | {v} | {fmt(rat)} ({wins(rat)}) | "
                      f"{fmt(steady)} ({wins(steady)}; median {st.median(steady):.4f}) | "
                      f"{fmt(d30, 0)} | {fmt(d60, 0)} |")


if __name__ == "__main__":
    main()
