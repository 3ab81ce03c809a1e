# Build the manager binary.
FROM docker.io/library/golang:1.25 AS builder
ARG TARGETOS
ARG TARGETARCH

WORKDIR /workspace
COPY go.mod go.sum ./
RUN go mod download

COPY main.go main.go
COPY api/ api/
COPY controllers/ controllers/
COPY pkg/ pkg/
# main.go links internal/manager, and pkg/webhooks embeds config/crd.
COPY internal/ internal/
COPY config/ config/

# Static binary: the distroless base has no libc to link against.
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} go build -trimpath -ldflags="-s -w" -o manager main.go

FROM gcr.io/distroless/static:nonroot
LABEL name="linstor-operator" \
      summary="Runs LINSTOR storage clusters on Kubernetes" \
      description="Deploys the LINSTOR controller, satellites with DRBD, the CSI driver and the HA controller, and upgrades them safely." \
      license="Apache-2.0"
WORKDIR /
COPY --from=builder /workspace/manager .
COPY LICENSE /licenses/LICENSE
USER 65532:65532

ENTRYPOINT ["/manager"]
