#!/bin/bash
# Paired CPU-time comparison of two schemes' bench files across binaries, for a VM whose speed
# drifts: every round runs, for each binary in turn, file A then file B back to back and
# records user CPU seconds and the packets each run sent (from its JSON: the data packets of
# every path of every flow); the summary gives per binary the median of the per-round ratios
# B/A of CPU time and of CPU time per packet sent (the unit issue 11's target is written in),
# and the per-round ratio of each binary's times to the first binary's. The ratio of the minima
# (best of all rounds for each file) is the least disturbed reading when the VM's speed drifts:
# identical runs of one binary vary by up to 1.7x here, while a run can only be slowed down.
#
# usage: scripts/paired-cpu.sh ROUNDS A.toml B.toml BINARY...
# e.g.   scripts/paired-cpu.sh 13 scenarios/nc-mptcp/bench/bench-mp.toml \
#            scenarios/nc-mptcp/bench/bench-nc.toml /tmp/main/tributary target/release/tributary
set -eu
rounds=$1 a=$2 b=$3
shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Data packets sent in a `tributary run --json` file.
packets() {
  python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(sum(p["packets_sent"] for r in d["runs"] for f in r["flows"] for p in f["paths"]))' "$1"
}
for r in $(seq 1 "$rounds"); do
  line="round $r load $(cut -d' ' -f1 /proc/loadavg)"
  for bin in "$@"; do
    /usr/bin/time -o "$tmp/a" -f "%U" "$bin" run "$a" --jobs 1 --json "$tmp/a.json" >/dev/null 2>&1
    /usr/bin/time -o "$tmp/b" -f "%U" "$bin" run "$b" --jobs 1 --json "$tmp/b.json" >/dev/null 2>&1
    line="$line | $bin $(tail -1 "$tmp/a") $(tail -1 "$tmp/b") $(packets "$tmp/a.json") $(packets "$tmp/b.json")"
  done
  echo "$line"
done | tee "$tmp/log"
python3 - "$tmp/log" <<'PY'
import sys, statistics as st
rows = []
for l in open(sys.argv[1]):
    parts = l.split('|')
    rows.append({p.split()[0]: tuple(map(float, p.split()[1:5])) for p in parts[1:]})
names = list(rows[0])
for n in names:
    rat = [r[n][1] / r[n][0] for r in rows]
    a = [r[n][0] for r in rows]
    b = [r[n][1] for r in rows]
    pa, pb = rows[0][n][2], rows[0][n][3]
    per = [x * pa / pb for x in rat]
    print(f"{n}: B/A median of per-round CPU ratios {st.median(rat):.2f} "
          f"(range {min(rat):.2f}-{max(rat):.2f}); median A {st.median(a):.2f} s, B {st.median(b):.2f} s")
    print(f"  packets sent A {pa:.0f}, B {pb:.0f}: B/A CPU per packet, median of per-round "
          f"ratios {st.median(per):.3f} (range {min(per):.2f}-{max(per):.2f}); "
          f"ratio of the minima {min(b) / min(a) * pa / pb:.3f} (min A {min(a):.2f} s, B {min(b):.2f} s)")
    if n != names[0]:
        for i, what in ((0, 'A'), (1, 'B')):
            r = [x[n][i] / x[names[0]][i] for x in rows]
            print(f"  {what} against {names[0]}: median per-round ratio {st.median(r):.3f}, "
                  f"faster in {sum(v < 1 for v in r)} of {len(r)} rounds")
PY
