# The base images are build arguments so that a machine that cannot pull them can pass its
# own (hack/build-base-images.sh makes both); the defaults are the public images. The Go
# version is go.mod's.
ARG BUILDER_IMAGE=docker.io/library/golang:1.25
ARG RUNTIME_IMAGE=gcr.io/distroless/static:nonroot

# Build the manager binary.
FROM ${BUILDER_IMAGE} AS builder
ARG TARGETOS
ARG TARGETARCH

WORKDIR /workspace
COPY go.mod go.sum ./
RUN go mod download

# What the binary links and embeds, nothing else (test/images compares these with go list).
COPY main.go main.go
COPY api/ api/
COPY controllers/ controllers/
COPY pkg/ pkg/
COPY internal/manager/ internal/manager/
# pkg/webhooks checks older versions' writes against the generated CRDs config/crd embeds.
COPY config/crd/embed.go config/crd/
COPY config/crd/bases/ config/crd/bases/
# The monitoring objects the operator creates: the alerts and the Grafana dashboard.
COPY config/prometheus/embed.go config/prometheus/rules.yaml config/prometheus/
COPY config/grafana/embed.go config/grafana/linstor.json config/grafana/

# Static binary: the distroless base has no libc to link against.
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} go build -trimpath -ldflags="-s -w" -o manager main.go

FROM ${RUNTIME_IMAGE}
LABEL name="linstor-operator" \
      summary="Runs LINSTOR storage clusters on Kubernetes" \
      description="Deploys the LINSTOR controller, satellites with DRBD, the CSI driver and the HA controller, and upgrades them safely." \
      license="Apache-2.0"
WORKDIR /
COPY --from=builder /workspace/manager .
COPY LICENSE /licenses/LICENSE
USER 65532:65532

ENTRYPOINT ["/manager"]
