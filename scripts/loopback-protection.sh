#!/usr/bin/env bash
# Loopback goodput with packet protection (--psk: Noise handshake, AES-256-GCM, replay
# window) against without (--insecure: CRC-32 only), measured side by side: the two modes
# alternate, RUNS times each, each a `tributary perf` test of SECS seconds over one path
# (memory to memory), with the CPU time (user + system) of each process.
#
# Usage: scripts/loopback-protection.sh [RUNS] [SECS] [pin]
#   pin: run the client (sender) on CPU 0 and the server (receiver) on CPU 1 (taskset),
#        so that each end has exactly one core.
# Env: B=path/to/tributary (default target/release/tributary; build it with
#      `cargo build --release -p tributary`), PORT (default 47401).
# Output: one line per run (goodput; CPU seconds of each process per GB of stream, which
# depends much less on other jobs than the goodput does), then the medians per mode and
# the ratios of the medians.
set -euo pipefail
B=${B:-target/release/tributary}
RUNS=${1:-5}
SECS=${2:-5}
PIN=${3:-}
PORT=${PORT:-47401}
[ -x "$B" ] || { echo "no $B: cargo build --release -p tributary" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$B" keygen "$dir/k.psk" --psk 2>/dev/null
srv_pin=()
cli_pin=()
if [ "$PIN" = pin ]; then
  srv_pin=(taskset -c 1)
  cli_pin=(taskset -c 0)
fi
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
printf '%-9s %4s %10s %18s %18s\n' mode run Mbit/s "sender CPU s/GB" "receiver CPU s/GB"
for i in $(seq "$RUNS"); do
  for mode in insecure psk; do
    if [ "$mode" = psk ]; then sec=(--psk "$dir/k.psk"); else sec=(--insecure); fi
    /usr/bin/time -f "%U %S" -o "$dir/srv.time" "${srv_pin[@]}" \
      "$B" perf -s -1 --listen "127.0.0.1:$PORT" "${sec[@]}" 2>"$dir/srv.log" &
    srv=$!
    sleep 0.3
    /usr/bin/time -f "%U %S" -o "$dir/cli.time" "${cli_pin[@]}" \
      "$B" perf --path "127.0.0.1:0=127.0.0.1:$PORT" "${sec[@]}" -t "$SECS" >"$dir/out.txt"
    wait "$srv"
    mbps=$(awk '/sender \(stream bytes/ {print $4}' "$dir/out.txt")
    gb=$(awk '/sender \(stream bytes/ {print $3 / 1e9}' "$dir/out.txt")
    scpu=$(awk -v gb="$gb" '{printf "%.3f", ($1 + $2) / gb}' "$dir/cli.time")
    rcpu=$(awk -v gb="$gb" '{printf "%.3f", ($1 + $2) / gb}' "$dir/srv.time")
    printf '%-9s %4d %10s %18s %18s\n' "$mode" "$i" "$mbps" "$scpu" "$rcpu"
    echo "$mbps" >>"$dir/$mode.mbps"
    echo "$scpu" >>"$dir/$mode.scpu"
    echo "$rcpu" >>"$dir/$mode.rcpu"
  done
done
echo
for mode in insecure psk; do
  printf '%-9s median %8s Mbit/s, sender CPU %s s/GB, receiver CPU %s s/GB\n' "$mode" \
    "$(median <"$dir/$mode.mbps")" "$(median <"$dir/$mode.scpu")" "$(median <"$dir/$mode.rcpu")"
done
awk -v a="$(median <"$dir/psk.mbps")" -v b="$(median <"$dir/insecure.mbps")" \
  -v s="$(median <"$dir/psk.scpu")" -v t="$(median <"$dir/insecure.scpu")" \
  -v r="$(median <"$dir/psk.rcpu")" -v q="$(median <"$dir/insecure.rcpu")" \
  'BEGIN {printf "protected / unprotected (medians): goodput %.0f %%; CPU per byte: sender %.2fx, receiver %.2fx\n", 100 * a / b, s / t, r / q}'
