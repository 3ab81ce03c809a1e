#!/usr/bin/env bash
# Builds, with buildah from scratch, local stand-ins for the Dockerfile's public base images,
# for machines that cannot pull them (test/images):
#   builder: this machine's Go toolchain (GOROOT), a static busybox for the Dockerfile's shell
#            RUN steps, CA certificates (go mod download talks HTTPS to the module proxy);
#   runtime: what distroless/static:nonroot gives the operator: /etc/passwd and /etc/group
#            with nonroot (65532), CA certificates, /tmp;
#   opm:     what quay.io/operator-framework/opm gives the catalog image: /bin/opm (OPM, the
#            binary make opm builds from the module proxy) run as user 1001, /tmp.
# Usage: hack/build-base-images.sh BUILDER_NAME RUNTIME_NAME [OPM_NAME]
# BUILDAH (default buildah) is the command, global flags included, e.g.
# "buildah --storage-driver vfs --root DIR --runroot DIR". Pass the names to the Dockerfile
# as --build-arg BUILDER_IMAGE=… --build-arg RUNTIME_IMAGE=…, and OPM_NAME to catalog.Dockerfile
# as --build-arg OPM_IMAGE=…. Needs root (buildah mount) and a static busybox (Debian:
# busybox-static).
set -euo pipefail
[ $# -eq 2 ] || [ $# -eq 3 ] || { echo "usage: $0 BUILDER_NAME RUNTIME_NAME [OPM_NAME]" >&2; exit 2; }
builder_name=$1
runtime_name=$2
opm_name=${3:-}
read -r -a buildah <<<"${BUILDAH:-buildah}"

goroot=$(go env GOROOT)
busybox=${BUSYBOX:-$(command -v busybox || true)}
ca_bundle=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
[ -n "$busybox" ] || { echo "FATAL: no busybox (Debian: apt-get install busybox-static)" >&2; exit 1; }
# A dynamically linked busybox would find no libc in a scratch image.
if ldd "$busybox" >/dev/null 2>&1; then
  echo "FATAL: $busybox is dynamically linked (Debian: busybox-static)" >&2; exit 1
fi
[ -f "$ca_bundle" ] || { echo "FATAL: no CA bundle at $ca_bundle (Debian: ca-certificates)" >&2; exit 1; }

# A failed step leaves no working container behind.
ctr=
trap '[ -z "$ctr" ] || "${buildah[@]}" rm "$ctr" >/dev/null 2>&1 || true' EXIT

add_common_files() {
  local mnt=$1
  mkdir -p "$mnt/etc/ssl/certs" "$mnt/tmp" "$mnt/bin"
  chmod 1777 "$mnt/tmp"
  cp "$ca_bundle" "$mnt/etc/ssl/certs/ca-certificates.crt"
}

ctr=$("${buildah[@]}" from scratch)
mnt=$("${buildah[@]}" mount "$ctr")
add_common_files "$mnt"
mkdir -p "$mnt/usr/local" "$mnt/root" "$mnt/go"
cp -a "$goroot" "$mnt/usr/local/go"
cp "$busybox" "$mnt/bin/busybox"
chroot "$mnt" /bin/busybox --install -s /bin
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$mnt/etc/passwd"
printf 'root:x:0:\n' >"$mnt/etc/group"
go_version=$(go env GOVERSION)
"${buildah[@]}" config \
  --env PATH=/go/bin:/usr/local/go/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --env GOPATH=/go --env HOME=/root \
  --env "GOPROXY=$(go env GOPROXY)" --env "GOSUMDB=$(go env GOSUMDB)" \
  --label "org.opencontainers.image.description=local builder: $go_version and busybox (hack/build-base-images.sh)" \
  --workingdir /go "$ctr"
"${buildah[@]}" unmount "$ctr" >/dev/null
"${buildah[@]}" commit -q --rm "$ctr" "$builder_name" >/dev/null
ctr=
echo "$builder_name ($go_version)"

ctr=$("${buildah[@]}" from scratch)
mnt=$("${buildah[@]}" mount "$ctr")
add_common_files "$mnt"
rmdir "$mnt/bin"
mkdir -p "$mnt/home/nonroot" "$mnt/root"
chown 65532:65532 "$mnt/home/nonroot"
# distroless/static's users and groups, nonroot among them.
cat >"$mnt/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
EOF
cat >"$mnt/etc/group" <<'EOF'
root:x:0:
nobody:x:65534:
tty:x:5:
staff:x:50:
nonroot:x:65532:
EOF
"${buildah[@]}" config --user 65532 --workingdir /home/nonroot \
  --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
  --label "org.opencontainers.image.description=local runtime base like distroless/static:nonroot (hack/build-base-images.sh)" \
  "$ctr"
"${buildah[@]}" unmount "$ctr" >/dev/null
"${buildah[@]}" commit -q --rm "$ctr" "$runtime_name" >/dev/null
ctr=
echo "$runtime_name"

[ -n "$opm_name" ] || exit 0
opm=${OPM:-$(cd "$(dirname "$0")/.." && pwd)/bin/opm/opm-v1.73.0}
[ -x "$opm" ] || { echo "FATAL: no opm at $opm (make opm)" >&2; exit 1; }
# The catalog image runs opm in a scratch image: it must not need a libc.
if ldd "$opm" >/dev/null 2>&1; then
  echo "FATAL: $opm is dynamically linked (hack/build-opm.sh builds it with CGO_ENABLED=0)" >&2; exit 1
fi
ctr=$("${buildah[@]}" from scratch)
mnt=$("${buildah[@]}" mount "$ctr")
add_common_files "$mnt"
cp "$opm" "$mnt/bin/opm"
printf 'root:x:0:0:root:/root:/sbin/nologin\nopm:x:1001:1001:opm:/tmp:/sbin/nologin\n' >"$mnt/etc/passwd"
printf 'root:x:0:\nopm:x:1001:\n' >"$mnt/etc/group"
"${buildah[@]}" config --user 1001 --entrypoint '["/bin/opm"]' \
  --label "org.opencontainers.image.description=local opm base like quay.io/operator-framework/opm: $(basename "$opm") (hack/build-base-images.sh)" \
  "$ctr"
"${buildah[@]}" unmount "$ctr" >/dev/null
"${buildah[@]}" commit -q --rm "$ctr" "$opm_name" >/dev/null
ctr=
echo "$opm_name ($(basename "$opm"))"
