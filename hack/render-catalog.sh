#!/usr/bin/env bash
# Renders the file-based catalog of package linstor-operator from the bundle
# directories with opm, then validates it. `opm alpha render-template` refuses
# directories, so the olm.package and olm.channel blobs are written here.
#
# Usage: hack/render-catalog.sh OPM OUTPUT_DIR
set -euo pipefail
opm=$1
out=$2
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out/linstor-operator"
index="$out/linstor-operator/index.yaml"

{
cat <<'YAML'
---
schema: olm.package
name: linstor-operator
defaultChannel: stable
description: Runs LINSTOR storage clusters (controller, satellites with DRBD, CSI, HA controller) and upgrades them safely.
YAML
for channel in candidate stable; do
cat <<YAML
---
schema: olm.channel
package: linstor-operator
name: $channel
entries:
- name: linstor-operator.v0.1.0
- name: linstor-operator.v0.2.0
  replaces: linstor-operator.v0.1.0
  skipRange: '>=0.1.0 <0.2.0'
YAML
done
echo "---"
"$opm" render "$root/bundles/0.1.0" -o yaml
echo "---"
"$opm" render "$root/bundle" -o yaml
} > "$index.tmp"
# opm render separates documents itself; drop the empty ones our separators leave.
awk 'BEGIN{RS="\n---\n"; ORS=""} { sub(/^---\n/, ""); if ($0 ~ /[^ \n]/) { print "---\n" $0; if ($0 !~ /\n$/) print "\n" } }' "$index.tmp" > "$index"
rm "$index.tmp"
"$opm" validate "$out"
echo "catalog rendered and validated: $index" >&2
