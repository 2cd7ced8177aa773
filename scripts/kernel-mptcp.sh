#!/usr/bin/env bash
# Linux kernel MPTCP against this stack over identical emulated paths (tributary emulate),
# for the scenarios scenarios/emulate/kernel-{hetero,failure,smallbuf}.toml. Needs root.
#   kernel: MPTCP (in-kernel path manager, the server announces its second address; default
#           scheduler) with each congestion control this kernel offers, and single-path TCP;
#           traffic from crates/emu/examples/bulk.rs (IPPROTO_MPTCP sockets).
#   this stack: `tributary emulate --transfer --compare` with the scenario's mptcp and fmtcp
#           variants (flow `multi`) and tcp (flow `single`), next to the simulator.
# Results: docs/data/emu/kernel/*.json; table and figures: scripts/kernel-mptcp-report.py.
#   REPS=2 scripts/kernel-mptcp.sh   (default 1 repetition; about 20 s per run, 30 runs)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-emu-deps.sh
cargo build --release -q -p tributary -p tributary-emu --example bulk
T=$PWD/target/release/tributary
B=$PWD/target/release/examples/bulk
out=${OUT:-docs/data/emu/kernel}
reps=${REPS:-1}
mkdir -p "$out"
ccs=$(cat /proc/sys/net/ipv4/tcp_available_congestion_control)
secs=15
for sc in hetero failure smallbuf; do
  f=scenarios/emulate/kernel-$sc.toml
  rcv=""
  # Linux doubles SO_RCVBUF and keeps about half of it for payload: 128 KiB asked gives
  # a receive window of about the 128 KiB the scenario gives this stack.
  [[ $sc == smallbuf ]] && rcv="--rcvbuf 131072"
  for r in $(seq "$reps"); do
    seed=$r
    for cc in $ccs; do
      tag=$sc-kernel-mptcp-$cc-$r
      echo "== $tag"
      "$T" emulate "$f" --flow multi --seed "$seed" --json "$out/$tag.emu.json" \
        --receiver "ip mptcp limits set subflows 4 add_addr_accepted 4 && \
                    ip mptcp endpoint add \$TRIB_B1 dev tun1 signal && \
                    $B server 0.0.0.0:6000 --mptcp $rcv --out $out/$tag.json" \
        --sender "ip mptcp limits set subflows 4 add_addr_accepted 4 && \
                  $B client \$TRIB_B0:6000 --mptcp --cc $cc --seconds $secs" \
        --grace 10 2>"$out/$tag.log" || { echo "failed: see $out/$tag.log"; exit 1; }
    done
    tag=$sc-kernel-tcp-cubic-$r
    echo "== $tag"
    "$T" emulate "$f" --flow single --seed "$seed" --json "$out/$tag.emu.json" \
      --receiver "$B server \$TRIB_B0:6000 $rcv --out $out/$tag.json" \
      --sender "$B client \$TRIB_B0:6000 --cc cubic --seconds $secs" \
      --grace 10 2>"$out/$tag.log" || { echo "failed: see $out/$tag.log"; exit 1; }
    for v in mptcp fmtcp; do
      tag=$sc-ours-$v-$r
      echo "== $tag"
      "$T" emulate "$f" --flow multi --variant "$v" --seed "$seed" --transfer --compare \
        --json "$out/$tag.json" 2>"$out/$tag.log" || { echo "failed: see $out/$tag.log"; exit 1; }
    done
    tag=$sc-ours-tcp-$r
    echo "== $tag"
    "$T" emulate "$f" --flow single --seed "$seed" --transfer --compare \
      --json "$out/$tag.json" 2>"$out/$tag.log" || { echo "failed: see $out/$tag.log"; exit 1; }
  done
done
python3 scripts/kernel-mptcp-report.py "$out"
