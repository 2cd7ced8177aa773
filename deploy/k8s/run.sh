#!/usr/bin/env bash
# Runs the sweep of deploy/k8s/sweep-job.yaml, waits for every shard, then merges.
#   deploy/k8s/run.sh [TIMEOUT]   (default 24h; kubectl's current context and namespace)
set -euo pipefail
cd "$(dirname "$0")"
timeout=${1:-24h}
kubectl apply -f sweep-job.yaml
kubectl wait --for=condition=complete --timeout="$timeout" job/tributary-sweep
kubectl apply -f merge-job.yaml
kubectl wait --for=condition=complete --timeout=1h job/tributary-merge
kubectl logs job/tributary-merge
