#!/usr/bin/env bash
# Builds OLM's two operators (olm and catalog) from source through the Go module proxy,
# once, into bin/olm/<version>/, and copies OLM's CRDs from the same module into
# bin/olm/<version>/crds/. There is no image registry here, so the OLM end-to-end tests
# (test/olm) run these binaries as local processes. Prints the folder.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=v0.46.0
out="$root/bin/olm/$version"
mod=github.com/operator-framework/operator-lifecycle-manager
mkdir -p "$out"
cd "$root/hack/tools/olm"
for cmd in olm catalog; do
  [ -x "$out/$cmd" ] && continue
  echo ">> building OLM $cmd $version (one-time, a few minutes on 2 cores)" >&2
  start=$SECONDS
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/$cmd.tmp" "$mod/cmd/$cmd"
  mv "$out/$cmd.tmp" "$out/$cmd"
  echo ">> built $cmd in $((SECONDS - start))s" >&2
done
# The chart's CRDs, not deploy/upstream/quickstart/crds.yaml: the quickstart copy in the
# module is stale (its CSV schema lacks lifecycle.preStop.sleep, so the API server prunes
# the operator's preStop hook and OLM's Deployment is refused).
src=$(go list -m -f '{{.Dir}}' "$mod")
rm -rf "$out/crds"
mkdir -p "$out/crds"
cp "$src"/deploy/chart/crds/*.crd.yaml "$out/crds/"
chmod u+w "$out/crds"/*.yaml
echo "$out"
