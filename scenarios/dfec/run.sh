#!/bin/sh
# Runs every dFEC reproduction scenario and summarises it (docs/experiments/dfec.md).
# usage: scenarios/dfec/run.sh OUTDIR: JSON results, tables and summaries go to OUTDIR; a
# scenario whose JSON is already there is skipped (never overwritten). Figures (the files'
# [[plots]]) go to OUTDIR/figures; docs/figures/dfec holds the committed ones.
set -eu
out=${1:?usage: run.sh OUTDIR}
here=$(dirname "$0")
bin=${TRIBUTARY:-target/release/tributary}
mkdir -p "$out"
for f in tcp-bulk mptcp-bulk tcp-bulk-tcpbg mptcp-bulk-tcpbg tcp-web mptcp-web \
         tcp-video-25ms tcp-video-100ms tcp-video-400ms \
         mptcp-video-25ms mptcp-video-100ms mptcp-video-400ms \
         realnet-smartphone-bulk realnet-smartphone-bulk-bloat realnet-smartphone-video \
         realnet-smartphone-video-bloat realnet-smartphone-web \
         realnet-satellite-bulk realnet-satellite-bulk-bloat realnet-satellite-video \
         realnet-satellite-video-bloat realnet-satellite-web \
         tcp-bulk-40MB tcp-bulk-40MB-tcpbg realnet-smartphone-bulk-bloat-40MB; do
    if [ -e "$out/$f.json" ]; then
        echo "skip $f: $out/$f.json exists" >&2
        continue
    fi
    nice -n 10 "$bin" run --jobs 1 "$here/$f.toml" --json "$out/$f.json" --plots "$out/figures" > "$out/$f.txt"
    python3 "$here/summary.py" "$out/$f.json" > "$out/$f.md"
    echo "done $f $(date -u +%H:%M:%S)" >&2
done
