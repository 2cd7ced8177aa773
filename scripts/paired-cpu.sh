#!/bin/bash
# Paired CPU-time comparison of two schemes' bench files across binaries, for a VM whose speed
# drifts: every round runs, for each binary in turn, file A then file B back to back and
# records user CPU seconds; the summary gives per binary the median of the per-round ratios
# B/A, and the per-round ratio of each binary's times to the first binary's.
#
# usage: scripts/paired-cpu.sh ROUNDS A.toml B.toml BINARY...
# e.g.   scripts/paired-cpu.sh 13 scenarios/nc-mptcp/bench/bench-mp.toml \
#            scenarios/nc-mptcp/bench/bench-nc.toml /tmp/main/tributary target/release/tributary
set -eu
rounds=$1 a=$2 b=$3
shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for r in $(seq 1 "$rounds"); do
  line="round $r load $(cut -d' ' -f1 /proc/loadavg)"
  for bin in "$@"; do
    /usr/bin/time -o "$tmp/a" -f "%U" "$bin" run "$a" --jobs 1 --json "$tmp/a.json" >/dev/null 2>&1
    /usr/bin/time -o "$tmp/b" -f "%U" "$bin" run "$b" --jobs 1 --json "$tmp/b.json" >/dev/null 2>&1
    line="$line | $bin $(tail -1 "$tmp/a") $(tail -1 "$tmp/b")"
  done
  echo "$line"
done | tee "$tmp/log"
python3 - "$tmp/log" <<'PY'
import sys, statistics as st
rows = []
for l in open(sys.argv[1]):
    parts = l.split('|')
    rows.append({p.split()[0]: tuple(map(float, p.split()[1:3])) for p in parts[1:]})
names = list(rows[0])
for n in names:
    rat = [r[n][1] / r[n][0] for r in rows]
    a = [r[n][0] for r in rows]
    b = [r[n][1] for r in rows]
    print(f"{n}: B/A median of per-round ratios {st.median(rat):.2f} "
          f"(range {min(rat):.2f}-{max(rat):.2f}); median A {st.median(a):.2f} s, B {st.median(b):.2f} s")
    if n != names[0]:
        for i, what in ((0, 'A'), (1, 'B')):
            r = [x[n][i] / x[names[0]][i] for x in rows]
            print(f"  {what} against {names[0]}: median per-round ratio {st.median(r):.3f}, "
                  f"faster in {sum(v < 1 for v in r)} of {len(r)} rounds")
PY
