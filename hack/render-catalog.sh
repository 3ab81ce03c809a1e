#!/usr/bin/env bash
# Renders the file-based catalog of package linstor-operator from the bundle
# directories (the frozen releases in bundles/ and this tree's bundle/) with opm, then
# validates it. `opm alpha render-template` refuses directories, so the olm.package and
# olm.channel blobs come from hack/catalogchannels (channels by LINSTOR line).
#
# Usage: hack/render-catalog.sh OPM OUTPUT_DIR [BUNDLE_DIR...]
# Further bundle directories join the releases (test/olm publishes test-only releases
# built from this tree that way).
set -euo pipefail
opm=$1
out=$2
shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out/linstor-operator"
if [ "$#" -gt 0 ] && [ "$(cd "$out" && pwd)" = "$root/catalog" ]; then
  echo "render-catalog: the project's catalog/ holds only real releases (bundles/ and bundle/), not $*" >&2
  exit 1
fi
index="$out/linstor-operator/index.yaml"

bundles=("$root"/bundles/*/ "$root/bundle" "$@")
{
(cd "$root" && go run ./hack/catalogchannels "${bundles[@]}")
for b in "${bundles[@]}"; do
  echo "---"
  "$opm" render "$b" -o yaml
done
} > "$index.tmp"
# opm render separates documents itself; drop the empty ones our separators leave.
awk 'BEGIN{RS="\n---\n"; ORS=""} { sub(/^---\n/, ""); if ($0 ~ /[^ \n]/) { print "---\n" $0; if ($0 !~ /\n$/) print "\n" } }' "$index.tmp" > "$index"
rm "$index.tmp"
"$opm" validate "$out"
echo "catalog rendered and validated: $index" >&2
