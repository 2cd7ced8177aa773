#!/usr/bin/env bash
# The same scenario in the simulator and through the emulator, with this stack's schemes
# (default tcp, mptcp and fmtcp; SCHEMES="nc-mptcp cmt-sctp hmtp" for others: each must be a
# variant of the mix files): `tributary emulate --transfer --compare` on the path mixes
# scenarios/emulate/mix-*.toml (MIXES="bursty" for some; default all four), seeds 1..REPS
# (the simulator runs with the same seed).
# Existing results of other schemes in OUT are kept; a run's own files are rewritten.
# Results: docs/data/emu/vs-sim/*.json; table: scripts/emu-vs-sim-report.py. Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-emu-deps.sh
cargo build --release -q -p tributary
T=$PWD/target/release/tributary
out=${OUT:-docs/data/emu/vs-sim}
reps=${REPS:-3}
schemes=${SCHEMES:-tcp mptcp fmtcp}
mkdir -p "$out"
for mix in ${MIXES:-symmetric rtt lossy bursty}; do
  f=scenarios/emulate/mix-$mix.toml
  for r in $(seq "$reps"); do
    for s in $schemes; do
      tag=$mix-$s-$r
      echo "== $tag"
      if [[ $s == tcp ]]; then sel=(--flow single); else sel=(--flow multi --variant "$s"); fi
      "$T" emulate "$f" "${sel[@]}" --seed "$r" --transfer --compare --json "$out/$tag.json" \
        2>"$out/$tag.log" || { echo "failed: see $out/$tag.log"; exit 1; }
    done
  done
done
python3 scripts/emu-vs-sim-report.py "$out"
