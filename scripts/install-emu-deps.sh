#!/usr/bin/env bash
# Installs what `tributary emulate` and the kernel-MPTCP experiment need on a Debian machine:
# iproute2 (`ip netns`, `ip mptcp`) always; with --experiments also iperf3 (kernel TCP/MPTCP
# traffic; `--mptcp` needs iperf3 >= 3.16) and procps (sysctl).
# Idempotent: installs only what is missing. Needs root (apt-get).
set -euo pipefail
want=(iproute2)
if [[ "${1:-}" == "--experiments" ]]; then
  want+=(iperf3 procps)
fi
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
if [[ ! -e /dev/net/tun ]]; then
  echo "warning: /dev/net/tun is missing: the emulator cannot create TUN devices here" >&2
fi
