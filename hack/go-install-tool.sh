#!/usr/bin/env bash
# go-install-tool.sh NAME PACKAGE VERSION [TAGS]: builds a Go command from source through
# the Go module proxy, once, into bin/NAME/NAME-VERSION, and prints the binary's path.
# `go install pkg@version` builds in a module of its own, so the project's go.mod never
# gains the tool's dependencies. The build-*.sh scripts say why each tool is needed.
set -euo pipefail
name=$1 package=$2 version=$3 tags=${4:-}
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/bin/$name/$name-$version"
if [ ! -x "$bin" ]; then
  echo ">> building $name $version (one-time, a minute or a few on 2 cores)" >&2
  start=$SECONDS
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && GOBIN="$tmp" CGO_ENABLED=0 go install ${tags:+-tags "$tags"} -trimpath -ldflags "-s -w" "$package@$version")
  mkdir -p "$(dirname "$bin")"
  mv "$tmp/$(basename "$package")" "$bin"
  echo ">> built $name in $((SECONDS - start))s" >&2
fi
echo "$bin"
