#!/usr/bin/env bash
# Builds the Kubernetes control plane (and etcd) from source through the Go
# module proxy and caches each binary under bin/k8s/<version>/. setup-envtest
# cannot download here, so this is how envtest and the simulated cluster get
# a real kube-apiserver. kubectl comes from the same source tree, for the command
# `make demo` prints on a machine that has none. A binary that already exists is
# never rebuilt.
#
# Usage: hack/build-k8s-binaries.sh [kube-apiserver|etcd|kube-controller-manager|kube-scheduler|kubectl]...
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
k8s_version=${K8S_VERSION:-v1.34.2}
etcd_version=${ETCD_VERSION:-v3.5.21}
out="$root/bin/k8s/$k8s_version"
mkdir -p "$out"

minor=${k8s_version#v1.}; minor=${minor%%.*}
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$k8s_version \
 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor \
 -X k8s.io/component-base/version.gitTreeState=clean"

build() { # name module-dir package ldflags
  local name=$1 dir=$2 pkg=$3 flags=$4
  if [ -x "$out/$name" ]; then return 0; fi
  echo ">> building $name into $out (one-time, a few minutes on 2 cores)" >&2
  local start=$SECONDS
  (cd "$root/hack/tools/$dir" && CGO_ENABLED=0 go build -trimpath -ldflags "$flags" -o "$out/$name.tmp" "$pkg")
  mv "$out/$name.tmp" "$out/$name"
  echo ">> built $name in $((SECONDS - start))s" >&2
}

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(kube-apiserver etcd)
for t in "${targets[@]}"; do
  case $t in
    kube-apiserver|kube-controller-manager|kube-scheduler|kubectl)
      build "$t" k8s "k8s.io/kubernetes/cmd/$t" "$ldflags" ;;
    etcd)
      build etcd etcd go.etcd.io/etcd/server/v3 "-s -w" ;;
    *) echo "unknown binary: $t" >&2; exit 2 ;;
  esac
done
echo "$out"
