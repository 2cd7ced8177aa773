#!/usr/bin/env bash
# Installs ns-3.37 (Debian bookworm's libns3-dev; its pkg-config files name libgsl, hence
# libgsl-dev), a C++ compiler and pkg-config, which
# validation/ns3/build.sh needs to build the ns-3 side of the TCP validation
# (docs/experiments/validation-ns3.md). Not run by CI. Idempotent; needs root (apt-get).
set -euo pipefail
want=(libns3-dev libgsl-dev g++ pkg-config)
missing=()
for p in "${want[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
v=$(dpkg-query -W -f='${Version}' libns3-dev)
case "$v" in
  3.37*) echo "libns3-dev $v installed" ;;
  *) echo "warning: libns3-dev $v is not 3.37; the validation was written against 3.37" >&2 ;;
esac
