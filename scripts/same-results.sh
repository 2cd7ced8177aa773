#!/usr/bin/env bash
# Compares the --json reports of two tributary binaries on a cross-section of scenarios,
# byte for byte (the reports hold no wall-clock fields). Exit 1 if any differs.
# Usage: scripts/same-results.sh OLD_BINARY NEW_BINARY [OUT_DIR]
# The compare suite's generated scenarios (every scheme x controller x application on a mix)
# are included when target/compare/ holds them (`python3 scripts/compare.py --check` writes
# them), with one repetition each.
set -u
old=$1 new=$2 out=${3:-/tmp/same-results}
mkdir -p "$out"
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cases=(
  "scenarios/validation/speed-10m.toml"
  "scenarios/validation/speed-100m.toml"
  "scenarios/stress/three-paths.toml"
  "scenarios/stress/random-loss.toml"
  "scenarios/dfec/mptcp-bulk.toml --repetitions 2"
  "scenarios/dfec/tcp-web.toml --repetitions 2"
  "scenarios/nc-mptcp/fig3-loss.toml --repetitions 1"
  "scenarios/hmtp/fig6a.toml --repetitions 1"
  "scenarios/compare/wifi-cell.toml --repetitions 1"
  "scenarios/reorder/mptcp.toml"
  "scenarios/examples/bonding.toml"
  "scenarios/examples/heterogeneous.toml"
  "scenarios/examples/short-flow-slow-path.toml"
)
for m in wifi-cell mixed8 failure shared; do
  [ -f "target/compare/$m.toml" ] && cases+=("target/compare/$m.toml --repetitions 1")
done
fail=0
for c in "${cases[@]}"; do
  set -- $c
  f=$1; shift
  name=$(echo "$f" | tr '/' '_')
  nice -n 10 "$old" run "$f" --jobs 1 "$@" --json "$out/$name.old.json" >/dev/null 2>"$out/$name.old.err" || echo "old failed: $f"
  nice -n 10 "$new" run "$f" --jobs 1 "$@" --json "$out/$name.new.json" >/dev/null 2>"$out/$name.new.err" || echo "new failed: $f"
  if cmp -s "$out/$name.old.json" "$out/$name.new.json"; then
    echo "same   $f $*"
  else
    echo "DIFFER $f $*"; fail=1
  fi
done
exit $fail
