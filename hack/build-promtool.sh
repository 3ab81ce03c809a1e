#!/usr/bin/env bash
# Builds promtool (Prometheus's rule checker and rule unit-test runner) from source through
# the Go module proxy, once, into bin/promtool/promtool-<version>. Prints the binary's path.
# `go install pkg@version` builds in a module of its own, so the project's go.mod never
# gains Prometheus. remove_all_sd leaves out the service-discovery plugins (cloud SDKs),
# which rule checks and rule tests never use: half the build.
set -euo pipefail
exec "$(dirname "$0")/go-install-tool.sh" promtool github.com/prometheus/prometheus/cmd/promtool "${PROMTOOL_VERSION:-v0.316.0}" remove_all_sd
