#!/bin/sh
# §V-C setting of the dFEC paper over real UDP sockets through `tributary emulate` (root):
# bulk, mptcp and dfec, seeds 1-3, both settings, with and without injected loss.
# Output: one line per run (docs/data/dfec/realnet-emulated.txt; docs/experiments/dfec.md).
cd "$(dirname "$0")/.."
for s in smartphone satellite; do for c in "" -bloat; do for v in mptcp dfec; do for seed in 1 2 3; do
 f=scenarios/dfec/realnet-$s-bulk$c.toml
 out=$(timeout 300 ./target/release/tributary emulate $f --transfer --compare --variant $v --seed $seed 2>&1 | grep -E "goodput:|emulator:")
 echo "$s$c $v $seed | $(echo $out | tr '\n' ' ')"
done; done; done; done
