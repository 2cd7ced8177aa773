#!/bin/sh
# Runs the stress suite (scenarios/stress/, issue 14) and prints the Markdown summary of
# docs/experiments/stress.md. Usage: scripts/stress.sh [OUTDIR] [extra `tributary run` args]
# (e.g. `--repetitions 1` for a quick look). Results: OUTDIR/<case>.json (default /tmp/stress).
set -eu
out=${1:-/tmp/stress}
[ $# -gt 0 ] && shift
mkdir -p "$out"
cargo build --release -p tributary
for f in three-paths random-loss bursty-8 surge failure; do
    nice -n 10 target/release/tributary run "scenarios/stress/$f.toml" --jobs 1 \
        --json "$out/$f.json" "$@" >/dev/null
    echo "done: $f" >&2
done
python3 scripts/stress-summary.py "$out"/three-paths.json "$out"/random-loss.json \
    "$out"/bursty-8.json "$out"/surge.json "$out"/failure.json
