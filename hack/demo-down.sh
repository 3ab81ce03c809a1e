#!/usr/bin/env bash
# Stops what a killed `make demo` left behind: kube-apiserver and etcd processes started
# from this repository's bin/k8s whose parent is gone (they were re-parented to init).
# Processes of a running demo or test keep their parent and are left alone.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
stopped=0
for pid in $(pgrep -f "$root/bin/k8s/" || true); do
  if [ "$(ps -o ppid= -p "$pid" | tr -d ' ')" = "1" ]; then
    echo "stopping orphaned $(ps -o comm= -p "$pid") (pid $pid)"
    kill "$pid" 2>/dev/null || true
    stopped=$((stopped + 1))
  fi
done
echo "demo-down: stopped $stopped orphaned processes"
