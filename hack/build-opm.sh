#!/usr/bin/env bash
# Builds opm (operator-registry) from source through the Go module proxy, once, into
# bin/opm/opm-<version>. Prints the binary's path.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=v1.73.0
bin="$root/bin/opm/opm-$version"
if [ ! -x "$bin" ]; then
  echo ">> building opm $version (one-time, a few minutes on 2 cores)" >&2
  mkdir -p "$(dirname "$bin")"
  (cd "$root/hack/tools/opm" && CGO_ENABLED=0 go build -tags containers_image_openpgp -trimpath -ldflags "-s -w" \
    -o "$bin.tmp" github.com/operator-framework/operator-registry/cmd/opm)
  mv "$bin.tmp" "$bin"
fi
echo "$bin"
