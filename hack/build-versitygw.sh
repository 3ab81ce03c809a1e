#!/usr/bin/env bash
# Builds versitygw (Versity's Apache-2.0 S3 gateway; its POSIX backend serves a directory
# as buckets) from source through the Go module proxy, once, into
# bin/versitygw/versitygw-<version>. Prints the binary's path. The tests of offsite
# backups run it on loopback as the real S3 server (internal/s3server). `go install
# pkg@version` builds in a module of its own, so the project's go.mod never gains it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=${VERSITYGW_VERSION:-v1.8.0}
bin="$root/bin/versitygw/versitygw-$version"
if [ ! -x "$bin" ]; then
  echo ">> building versitygw $version (one-time, about a minute on 2 cores)" >&2
  start=$SECONDS
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && GOBIN="$tmp" CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" \
    "github.com/versity/versitygw/cmd/versitygw@$version")
  mkdir -p "$(dirname "$bin")"
  mv "$tmp/versitygw" "$bin"
  echo ">> built versitygw in $((SECONDS - start))s" >&2
fi
echo "$bin"
