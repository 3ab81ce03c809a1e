#!/usr/bin/env bash
# Builds the Prometheus server from source through the Go module proxy, once, into
# bin/prometheus/prometheus-<version>. Prints the binary's path. test/monitoring runs it on
# loopback: it scrapes the LINSTOR emulator and the operator's metrics and evaluates
# config/prometheus/rules.yaml, so each alert is seen firing in a real Prometheus.
# As for promtool (hack/build-promtool.sh): `go install pkg@version` builds in a module of its
# own, so the project's go.mod never gains Prometheus, and remove_all_sd leaves out the
# service-discovery plugins (cloud SDKs); the tests scrape static targets only. Without the
# builtinassets tag the web UI is not embedded; the HTTP API the tests use is all there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=${PROMETHEUS_VERSION:-v0.316.0}
bin="$root/bin/prometheus/prometheus-$version"
if [ ! -x "$bin" ]; then
  echo ">> building prometheus $version (one-time, a few minutes on 2 cores)" >&2
  start=$SECONDS
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && GOBIN="$tmp" CGO_ENABLED=0 go install -tags remove_all_sd -trimpath -ldflags "-s -w" \
    "github.com/prometheus/prometheus/cmd/prometheus@$version")
  mkdir -p "$(dirname "$bin")"
  mv "$tmp/prometheus" "$bin"
  echo ">> built prometheus in $((SECONDS - start))s" >&2
fi
echo "$bin"
