#!/usr/bin/env bash
# Builds kwok and kwokctl from source through the Go module proxy into bin/kwok/<version>/.
# kwokctl cannot download its binaries here: the simulated cluster runs the control plane
# built by hack/build-k8s-binaries.sh and this kwok controller. A binary that already
# exists is never rebuilt.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=${KWOK_VERSION:-v0.8.0}
out="$root/bin/kwok/$version"
if [ -x "$out/kwok" ] && [ -x "$out/kwokctl" ]; then echo "$out"; exit 0; fi
echo ">> building kwok and kwokctl $version into $out (one-time, about 3 minutes on 2 cores)" >&2
start=$SECONDS
mkdir -p "$out"
GOBIN="$out" CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" \
  "sigs.k8s.io/kwok/cmd/kwok@$version" "sigs.k8s.io/kwok/cmd/kwokctl@$version"
echo ">> built kwok in $((SECONDS - start))s" >&2
echo "$out"
