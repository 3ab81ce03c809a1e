# linstor-operator Makefile: the kubebuilder go/v4 targets, plus the local Kubernetes
# binaries (built from source, see hack/build-k8s-binaries.sh) and the demo.

VERSION ?= 0.3.0
IMAGE_TAG_BASE ?= quay.io/linstor-operator/linstor-operator
IMG ?= $(IMAGE_TAG_BASE):v$(VERSION)
BUNDLE_IMG ?= $(IMAGE_TAG_BASE)-bundle:v$(VERSION)
CATALOG_IMG ?= $(IMAGE_TAG_BASE)-catalog:v$(VERSION)
CHANNELS ?= stable,stable-linstor-1.33
DEFAULT_CHANNEL ?= stable

# The Kubernetes minor follows k8s.io/api in go.mod.
K8S_VERSION ?= v1.34.2
ETCD_VERSION ?= v3.5.21
LINSTOR_OPENAPI_SPEC ?= $(abspath ../shared/linstor/rest_v1_openapi.yaml)

GOBIN_DIR := $(abspath bin)
CONTROLLER_TOOLS_VERSION ?= v0.19.0
KUSTOMIZE_VERSION ?= v5.7.1
CONTROLLER_GEN ?= $(GOBIN_DIR)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
KUSTOMIZE ?= $(GOBIN_DIR)/kustomize-$(KUSTOMIZE_VERSION)
KUBEBUILDER_ASSETS ?= $(GOBIN_DIR)/k8s/$(K8S_VERSION)
OPM ?= $(GOBIN_DIR)/opm/opm-v1.73.0
PROMTOOL_VERSION ?= v0.316.0
PROMTOOL ?= $(GOBIN_DIR)/promtool/promtool-$(PROMTOOL_VERSION)
PROMETHEUS_VERSION ?= v0.316.0
PROMETHEUS ?= $(GOBIN_DIR)/prometheus/prometheus-$(PROMETHEUS_VERSION)
VERSITYGW_VERSION ?= v1.8.0
VERSITYGW ?= $(GOBIN_DIR)/versitygw/versitygw-$(VERSITYGW_VERSION)

SHELL = /usr/bin/env bash -o pipefail
.SHELLFLAGS = -ec

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Display this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: controller-gen ## Generate CRDs, RBAC and webhook configuration (CRDs trimmed by hack/crdtrim).
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd webhook paths="./..." output:crd:artifacts:config=config/crd/bases
	go run ./hack/crdtrim config/crd/bases

.PHONY: generate
generate: controller-gen ## Generate DeepCopy methods.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./..."

.PHONY: fmt
fmt: ## Run go fmt.
	go fmt ./...

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

.PHONY: envtest-assets
envtest-assets: ## Build kube-apiserver and etcd from source (cached in bin/k8s/<version>).
	K8S_VERSION=$(K8S_VERSION) ETCD_VERSION=$(ETCD_VERSION) hack/build-k8s-binaries.sh kube-apiserver etcd

.PHONY: test-e2e
test-e2e: manifests kwok-assets ## Run only the end-to-end tests on a kwok-simulated cluster.
	go test ./test/e2e -count=1 -v -timeout 15m

.PHONY: kwok-assets
kwok-assets: ## Build the simulated cluster: control plane, etcd and kwok (cached in bin/).
	K8S_VERSION=$(K8S_VERSION) ETCD_VERSION=$(ETCD_VERSION) hack/build-k8s-binaries.sh kube-apiserver etcd kube-controller-manager kube-scheduler >/dev/null
	hack/build-kwok.sh >/dev/null

.PHONY: olm-assets
olm-assets: ## Build OLM's olm and catalog operators from source and copy OLM's CRDs (cached in bin/olm/).
	hack/build-olm.sh >/dev/null

.PHONY: test
test: manifests generate fmt vet envtest-assets kwok-assets olm-assets opm promtool prometheus versitygw config-check ## Run all tests: unit, fuzz round trips, LINSTOR API conformance, real kube-apiserver, bundle and catalog, alert rules, end to end on kwok.
	KUBEBUILDER_ASSETS=$(KUBEBUILDER_ASSETS) CONTROLLER_GEN=$(CONTROLLER_GEN) OPM=$(OPM) PROMTOOL=$(PROMTOOL) PROMETHEUS=$(PROMETHEUS) VERSITYGW=$(VERSITYGW) \
	LINSTOR_OPENAPI_SPEC=$(LINSTOR_OPENAPI_SPEC) \
	go test ./... -count=1 -timeout 30m

.PHONY: config-check
config-check: kustomize ## Build every kustomize overlay (deploy, manifests, samples, scorecard, prometheus).
	@for d in default manifests samples scorecard prometheus crd rbac; do \
		$(KUSTOMIZE) build config/$$d >/dev/null || { echo "kustomize build config/$$d failed"; exit 1; }; \
	done; echo "kustomize overlays build"

.PHONY: fuzz
fuzz: ## Run the native fuzz targets for a while each.
	go test ./api/v1alpha1/ -run '^$$' -fuzz FuzzConversionAnnotation -fuzztime 30s

##@ Build

.PHONY: build
build: manifests generate fmt vet ## Build the manager binary.
	go build -o bin/manager .

.PHONY: run
run: manifests generate fmt vet ## Run the operator against the cluster in KUBECONFIG, running LINSTOR in NAMESPACE (default linstor; its config/rbac must be installed: make deploy).
	go run . --metrics-bind-address=0 --leader-elect=false --namespace=$(or $(NAMESPACE),linstor)

.PHONY: demo
demo: kwok-assets kubectl ## Run the operator on a local kwok cluster (NODES=3) with the LINSTOR emulator (Ctrl-C stops it).
	go run ./cmd/demo

.PHONY: kubectl
kubectl: ## Build kubectl from the same Kubernetes source (cached in bin/k8s/<version>); `make demo` prints a command using it.
	K8S_VERSION=$(K8S_VERSION) ETCD_VERSION=$(ETCD_VERSION) hack/build-k8s-binaries.sh kubectl >/dev/null

.PHONY: demo-down
demo-down: ## Stop what a killed `make demo` left running.
	hack/demo-down.sh

.PHONY: emulator
emulator: ## Run the LINSTOR REST emulator on :3370.
	go run ./cmd/linstor-emulator --listen 127.0.0.1:3370

# CONTAINER_TOOL is docker, podman or buildah, global flags allowed (CONTAINER_TOOL="buildah
# --storage-driver vfs"); buildah builds with `bud`. CONTAINER_BUILD_FLAGS and
# CONTAINER_PUSH_FLAGS pass the rest, e.g. "--isolation chroot --build-arg
# BUILDER_IMAGE=…" and "--tls-verify=false" for a plain-HTTP registry (README, "Building the images").
CONTAINER_TOOL ?= docker
CONTAINER_BUILD_FLAGS ?=
CONTAINER_PUSH_FLAGS ?=
CONTAINER_BUILD = $(CONTAINER_TOOL) $(if $(filter buildah,$(notdir $(firstword $(CONTAINER_TOOL)))),bud,build) $(CONTAINER_BUILD_FLAGS)
CONTAINER_PUSH = $(CONTAINER_TOOL) push $(CONTAINER_PUSH_FLAGS)

.PHONY: docker-build
docker-build: ## Build the operator image IMG with CONTAINER_TOOL (docker, podman or buildah).
	$(CONTAINER_BUILD) -t $(IMG) .

.PHONY: docker-push
docker-push: ## Push the operator image IMG.
	$(CONTAINER_PUSH) $(IMG)

.PHONY: test-images
test-images: envtest-assets kwok-assets olm-assets opm ## Build the operator, bundle and catalog images with buildah from local base images, push them to a registry on loopback, check what comes back, and run test/olm with the image's /manager (root; Debian's buildah, docker-registry, busybox-static).
	TEST_IMAGES=1 KUBEBUILDER_ASSETS=$(KUBEBUILDER_ASSETS) OPM=$(OPM) go test ./test/images -count=1 -v -timeout 40m

##@ Deployment

ifndef ignore-not-found
  ignore-not-found = false
endif

.PHONY: install
install: manifests kustomize ## Install CRDs into the cluster in KUBECONFIG.
	$(KUSTOMIZE) build config/crd | kubectl apply --server-side -f -

.PHONY: uninstall
uninstall: manifests kustomize ## Uninstall CRDs (deletes every LINSTOR custom resource!).
	$(KUSTOMIZE) build config/crd | kubectl delete --ignore-not-found=$(ignore-not-found) -f -

.PHONY: deploy
deploy: manifests kustomize ## Deploy the operator to the cluster in KUBECONFIG.
	cd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)
	$(KUSTOMIZE) build config/default | kubectl apply --server-side -f -

.PHONY: undeploy
undeploy: kustomize ## Undeploy the operator.
	$(KUSTOMIZE) build config/default | kubectl delete --ignore-not-found=$(ignore-not-found) -f -

##@ Packaging

# BUNDLE_CREATED_AT is fixed per release so that regenerating the bundle is reproducible.
BUNDLE_CREATED_AT ?= 2026-11-24T00:00:00Z
# IMAGE_DIGESTS: a file of "<image reference> sha256:<digest>" lines pins every image of
# the bundle by digest, for disconnected mirrors (docs/olm.md).
IMAGE_DIGESTS ?=

.PHONY: bundle
bundle: manifests generate ## Generate the OLM bundle: bundle/, bundle.Dockerfile (see docs/olm.md).
	go run ./hack/bundlegen -root . -out bundle -version $(VERSION) -image $(IMG) \
		-channels $(CHANNELS) -default-channel $(DEFAULT_CHANNEL) -created-at $(BUNDLE_CREATED_AT) \
		$(if $(IMAGE_DIGESTS),-image-digests $(IMAGE_DIGESTS))

.PHONY: bundle-build
bundle-build: ## Build the bundle image BUNDLE_IMG.
	$(CONTAINER_BUILD) -f bundle.Dockerfile -t $(BUNDLE_IMG) .

.PHONY: bundle-push
bundle-push: ## Push the bundle image BUNDLE_IMG.
	$(CONTAINER_PUSH) $(BUNDLE_IMG)

.PHONY: opm
opm: ## Build opm from source (cached in bin/opm/).
	hack/build-opm.sh >/dev/null

.PHONY: versitygw
versitygw: ## Build the versitygw S3 gateway from source (cached in bin/versitygw/); offsite backup tests run it on loopback as the real S3 server.
	VERSITYGW_VERSION=$(VERSITYGW_VERSION) hack/build-versitygw.sh >/dev/null

.PHONY: promtool
promtool: ## Build promtool from source (cached in bin/promtool/); test/alerts checks and unit-tests the alert rules with it.
	PROMTOOL_VERSION=$(PROMTOOL_VERSION) hack/build-promtool.sh >/dev/null

.PHONY: prometheus
prometheus: ## Build the Prometheus server from source (cached in bin/prometheus/); test/monitoring runs it to see the alerts fire.
	PROMETHEUS_VERSION=$(PROMETHEUS_VERSION) hack/build-prometheus.sh >/dev/null

# COMMUNITY_REVIEWERS: the GitHub logins the community pipelines' ci.yaml names reviewers.
COMMUNITY_REVIEWERS ?= linstor-operator

.PHONY: catalog
catalog: bundle opm ## Render catalog/ (file-based catalog) from bundle/ and bundles/, and validate it; write community/ (ci.yaml, catalog template).
	hack/render-catalog.sh $(OPM) catalog
	go run ./hack/catalogchannels -community . -image-tag-base $(IMAGE_TAG_BASE) -reviewers $(COMMUNITY_REVIEWERS) bundles/*/ bundle

# BUNDLE_IMGS are the bundle images the catalog image lists, one per release of catalog/:
# the frozen releases' (bundles/<version>/) and this tree's. CATALOG_RENDER_FLAGS are opm
# render's flags for reading them, e.g. --use-http for a plain-HTTP registry. The catalog
# image's base is catalog.Dockerfile's OPM_IMAGE (a build argument, CONTAINER_BUILD_FLAGS).
BUNDLE_IMGS ?= $(foreach v,$(notdir $(wildcard bundles/*)),$(IMAGE_TAG_BASE)-bundle:v$(v)) $(BUNDLE_IMG)
CATALOG_RENDER_FLAGS ?=
CATALOG_BUILD_DIR ?= bin/catalog-build

.PHONY: catalog-build
catalog-build: opm ## Build the catalog image CATALOG_IMG: catalog/'s channels and the bundles rendered from BUNDLE_IMGS (pushed first; see docs/olm.md).
	go run ./hack/catalogimages -opm $(OPM) -catalog catalog -out $(CATALOG_BUILD_DIR)/catalog -render-flags "$(CATALOG_RENDER_FLAGS)" $(BUNDLE_IMGS)
	$(CONTAINER_BUILD) -f catalog.Dockerfile -t $(CATALOG_IMG) $(CATALOG_BUILD_DIR)

.PHONY: catalog-push
catalog-push: ## Push the catalog image CATALOG_IMG.
	$(CONTAINER_PUSH) $(CATALOG_IMG)

# run-bundle installs BUNDLE through the OLM already running in the cluster in KUBECONFIG,
# with no image: a catalog of that bundle served by opm at CATALOG_ADDRESS (state in
# bin/run-bundle/NAMESPACE/). CHANNEL empty means the bundle's default channel. CATALOG
# (for example catalog) serves that file-based catalog instead: BUNDLE=bundles/0.2.0
# CATALOG=catalog installs release 0.2.0, which OLM then upgrades along the catalog's channels.
BUNDLE ?= bundle
CATALOG ?=
CHANNEL ?=
APPROVAL ?= Automatic
CATALOG_ADDRESS ?= 127.0.0.1:50051
TIMEOUT ?= 5m

.PHONY: run-bundle
run-bundle: opm ## Install BUNDLE (default bundle/) through OLM into NAMESPACE (default linstor) and wait for the CSV (see docs/olm.md).
	go run ./cmd/run-bundle install -bundle $(BUNDLE) -namespace $(or $(NAMESPACE),linstor) -channel "$(CHANNEL)" -catalog "$(CATALOG)" \
		-approval $(APPROVAL) -catalog-address $(CATALOG_ADDRESS) -timeout $(TIMEOUT) -opm $(OPM)

.PHONY: cleanup-bundle
cleanup-bundle: ## Remove what run-bundle made in NAMESPACE (Subscription, CSV, InstallPlans, CatalogSource, its OperatorGroup, opm); keeps CRDs and LINSTOR.
	go run ./cmd/run-bundle cleanup -namespace $(or $(NAMESPACE),linstor)

##@ Tools

.PHONY: controller-gen
controller-gen: $(CONTROLLER_GEN)
$(CONTROLLER_GEN):
	$(call go-install-tool,$(CONTROLLER_GEN),sigs.k8s.io/controller-tools/cmd/controller-gen,$(CONTROLLER_TOOLS_VERSION),controller-gen)

.PHONY: kustomize
kustomize: $(KUSTOMIZE)
$(KUSTOMIZE):
	$(call go-install-tool,$(KUSTOMIZE),sigs.k8s.io/kustomize/kustomize/v5,$(KUSTOMIZE_VERSION),kustomize)

# go-install-tool installs a pinned Go tool into bin/ under a versioned name.
# $(1) target path, $(2) package, $(3) version, $(4) the binary go install writes.
define go-install-tool
@[ -f "$(1)" ] || { \
set -e; \
package=$(2)@$(3) ;\
echo "Installing $${package}" ;\
rm -f "$(1)" ;\
GOBIN="$(GOBIN_DIR)" go install $${package} ;\
mv "$(GOBIN_DIR)/$(4)" "$(1)" ;\
}
endef

.PHONY: bench-conversion
bench-conversion: manifests envtest-assets ## Latency (p50/p99) of v1alpha1 GET and UPDATE through the conversion webhook on a real API server.
	KUBEBUILDER_ASSETS=$(KUBEBUILDER_ASSETS) go test ./test/api/ -run '^$$' -bench BenchmarkConversionWebhook -benchtime 300x -count=1 -timeout 30m

.PHONY: bench-backup
bench-backup: envtest-assets versitygw ## Time and peak memory of a backup and a restore of OBJECTS (default 100000) LINSTOR database objects on a real API server, in Secrets and to and from a real S3 server (the controller's stopped window).
	BENCH_BACKUP=1 BENCH_BACKUP_OBJECTS=$(or $(OBJECTS),100000) KUBEBUILDER_ASSETS=$(KUBEBUILDER_ASSETS) VERSITYGW=$(VERSITYGW) \
		go test ./test/bench/ -run TestBackupMemory -count=1 -v -timeout 60m

.PHONY: bench
bench: kwok-assets ## Scale benchmark on kwok: NODES (default 100) nodes, time to converge, VOLUMES (default 0) resources of 3 replicas placed, then a STEADY (default 5m) window; the operator's API writes against the floor, LINSTOR requests, memory, CPU (results in bin/bench/, see docs/performance.md); PROFILE=1 saves the operator's CPU and heap profiles of the steady window.
	go run ./cmd/bench -nodes $(or $(NODES),100) -steady $(or $(STEADY),5m) $(if $(VOLUMES),-volumes $(VOLUMES)) $(if $(OPERATOR),-operator $(OPERATOR))
