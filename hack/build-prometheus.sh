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
exec "$(dirname "$0")/go-install-tool.sh" prometheus github.com/prometheus/prometheus/cmd/prometheus "${PROMETHEUS_VERSION:-v0.316.0}" remove_all_sd
