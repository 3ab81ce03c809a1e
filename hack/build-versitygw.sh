#!/usr/bin/env bash
# Builds versitygw (Versity's Apache-2.0 S3 gateway; its POSIX backend serves a directory
# as buckets) from source through the Go module proxy, once, into
# bin/versitygw/versitygw-<version>. Prints the binary's path. The tests of offsite
# backups run it on loopback as the real S3 server (internal/s3server). `go install
# pkg@version` builds in a module of its own, so the project's go.mod never gains it.
set -euo pipefail
exec "$(dirname "$0")/go-install-tool.sh" versitygw github.com/versity/versitygw/cmd/versitygw "${VERSITYGW_VERSION:-v1.8.0}"
