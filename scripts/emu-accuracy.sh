#!/usr/bin/env bash
# Emulator accuracy: realised rate, one-way delay and loss against the configured values, and
# the CPU cost, from 10 Mbit/s to 1 Gbit/s (crates/emu/examples/accuracy.rs). Needs root.
# Writes one JSON object per run to docs/data/emu/accuracy.jsonl (or $OUT) and prints a table.
#   scripts/emu-accuracy.sh            # the full matrix, 3 repetitions (about 5 minutes)
#   REPS=1 scripts/emu-accuracy.sh     # quicker
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-emu-deps.sh
cargo build --release -q -p tributary-emu --example accuracy
bin=target/release/examples/accuracy
out=${OUT:-docs/data/emu/accuracy.jsonl}
reps=${REPS:-3}
mkdir -p "$(dirname "$out")"
: >"$out"
run() {
  local kind=$1; shift
  for r in $(seq "$reps"); do
    "$bin" "$@" | sed "s/^{/{\"kind\":\"$kind\",\"load_avg\":\"$(cut -d' ' -f1 /proc/loadavg)\",/" >>"$out"
  done
}
for rate in 10e6 100e6 500e6 1e9; do
  # Rate: 10 % more offered than the link carries, into a queue that never overflows, so the
  # link is busy from the first packet on and the receiver sees exactly the link rate.
  run rate --rate "$rate" --load 1.1 --seconds 4 --queue 400000
  # Delay and loss: half the link rate (nothing queues), 1 % Bernoulli loss.
  run delay-loss --rate "$rate" --load 0.5 --seconds 4 --loss 0.01 --delay-ms 20
done
# 1 Gbit/s with 9000-byte packets: the per-packet cost divided by six.
run rate-jumbo --rate 1e9 --load 1.1 --seconds 4 --queue 400000 --mtu 9000 --size 8972
python3 scripts/emu-accuracy-table.py "$out"
