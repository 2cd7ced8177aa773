#!/usr/bin/env bash
# Runs a Tributary sweep as a Slurm job array of SHARDS shards plus a merge job that starts
# when all shards have succeeded.
#
#   deploy/slurm/submit.sh [SCENARIO] [SHARDS]
#
# e.g. deploy/slurm/submit.sh scenarios/fmtcp/section6-fig10.toml 8
# SHARDS, SCENARIO, OUT, TRIBUTARY and RUN_ARGS are passed to both jobs (see sweep.sbatch).
set -euo pipefail
cd "$(dirname "$0")/../.."
export SCENARIO=${1:-${SCENARIO:-scenarios/fmtcp/section6-fig10.toml}}
export SHARDS=${2:-${SHARDS:-8}}
export OUT=${OUT:-results/$(basename "$SCENARIO" .toml)}
export TRIBUTARY=${TRIBUTARY:-target/release/tributary}
[ -x "$TRIBUTARY" ] || cargo build --release -p tributary
"$TRIBUTARY" run "$SCENARIO" ${RUN_ARGS:-} --check --shard "0/$SHARDS"
array=$(sbatch --parsable --export=ALL --array="0-$((SHARDS - 1))" deploy/slurm/sweep.sbatch)
merge=$(sbatch --parsable --export=ALL --dependency="afterok:${array%%;*}" deploy/slurm/merge.sbatch)
echo "array job $array ($SHARDS shards), merge job $merge; results in $OUT/"
