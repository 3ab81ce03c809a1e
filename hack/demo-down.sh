#!/usr/bin/env bash
# Cleans up what a killed `make demo` or test run left behind:
# - kwok clusters under bin/kwok-clusters whose owner process is gone (kwokctl stops
#   their processes and removes their files); a cluster of a running demo or test is
#   left alone;
# - envtest's kube-apiserver and etcd started from bin/k8s whose parent is gone
#   (re-parented to init).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
workdir="$root/bin/kwok-clusters"
kwokctl="$root/bin/kwok/${KWOK_VERSION:-v0.8.0}/kwokctl"
deleted=0
if [ -d "$workdir/clusters" ]; then
  for dir in "$workdir"/clusters/*/; do
    [ -d "$dir" ] || continue
    name=$(basename "$dir")
    owner=$(cat "$workdir/$name.owner" 2>/dev/null || echo 0)
    if [ "$owner" != "0" ] && kill -0 "$owner" 2>/dev/null && [ "$(ps -o stat= -p "$owner" | cut -c1)" != "Z" ]; then
      echo "kwok cluster $name belongs to running process $owner: left alone"
      continue
    fi
    echo "deleting kwok cluster $name"
    KWOK_WORKDIR="$workdir" "$kwokctl" delete cluster --name "$name" >/dev/null 2>&1 || true
    # Whatever kwokctl could not stop (its pid files gone) is stopped by path.
    for pid in $(pgrep -f "$workdir/clusters/$name/" || true); do kill "$pid" 2>/dev/null || true; done
    rm -rf "$dir" "$workdir/$name.kubeconfig" "$workdir/$name.owner"
    deleted=$((deleted + 1))
  done
fi
stopped=0
for pid in $(pgrep -f "$root/bin/k8s/" || true); do
  if [ "$(ps -o ppid= -p "$pid" 2>/dev/null | tr -d ' ')" = "1" ]; then
    echo "stopping orphaned $(ps -o comm= -p "$pid") (pid $pid)"
    kill "$pid" 2>/dev/null || true
    stopped=$((stopped + 1))
  fi
done
echo "demo-down: deleted $deleted kwok clusters, stopped $stopped orphaned processes"
