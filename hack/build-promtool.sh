#!/usr/bin/env bash
# Builds promtool (Prometheus's rule checker and rule unit-test runner) from source through
# the Go module proxy, once, into bin/promtool/promtool-<version>. Prints the binary's path.
# `go install pkg@version` builds in a module of its own, so the project's go.mod never
# gains Prometheus. remove_all_sd leaves out the service-discovery plugins (cloud SDKs),
# which rule checks and rule tests never use: half the build.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=${PROMTOOL_VERSION:-v0.316.0}
bin="$root/bin/promtool/promtool-$version"
if [ ! -x "$bin" ]; then
  echo ">> building promtool $version (one-time, a few minutes on 2 cores)" >&2
  start=$SECONDS
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && GOBIN="$tmp" CGO_ENABLED=0 go install -tags remove_all_sd -trimpath -ldflags "-s -w" \
    "github.com/prometheus/prometheus/cmd/promtool@$version")
  mkdir -p "$(dirname "$bin")"
  mv "$tmp/promtool" "$bin"
  echo ">> built promtool in $((SECONDS - start))s" >&2
fi
echo "$bin"
