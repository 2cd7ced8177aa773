#!/usr/bin/env bash
# Builds validation/ns3/tcp-grid.cc against the system's ns-3 (scripts/install-ns3.sh) into
# target/ns3/tcp-grid. Not run by CI.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out="$root/target/ns3"
mkdir -p "$out"
mods="ns3-core ns3-network ns3-internet ns3-point-to-point ns3-applications ns3-traffic-control"
if ! pkg-config --exists $mods; then
  echo "ns-3 development files not found: run scripts/install-ns3.sh first" >&2
  exit 1
fi
if [[ "$out/tcp-grid" -nt "$here/tcp-grid.cc" && "$out/tcp-grid" -nt "$0" ]]; then
  echo "$out/tcp-grid"
  exit 0
fi
g++ -O2 -std=c++17 -o "$out/tcp-grid" "$here/tcp-grid.cc" $(pkg-config --cflags --libs $mods)
echo "$out/tcp-grid"
