package bundle

import (
	"fmt"
	"path/filepath"
	"sort"

	"sigs.k8s.io/yaml"
)

// The files a submission to the community operator catalogs carries beside the bundle
// directories, mirroring those repositories' layout (operators/<package>/):
//
//   - CommunityOpenShiftDir, for community-operators-prod (OpenShift's community catalog),
//     whose pipeline (redhat-openshift-ecosystem/operator-pipelines) builds the
//     catalogs from a catalog template in File-Based Catalog mode: ci.yaml with
//     fbc.enabled and a catalog_mapping to catalog-templates/basic.yaml, an
//     olm.template.basic whose olm.channel blobs are this catalog's (the per-channel way-in
//     entries need it; a graph from the CSVs alone cannot express them). That pipeline
//     refuses a ci.yaml with both fbc.enabled and updateGraph (its read-config task), so
//     this one has no updateGraph.
//   - CommunityOperatorHubDir, for k8s-operatorhub/community-operators (OperatorHub.io),
//     whose catalog is built from the CSVs: ci.yaml with updateGraph: replaces-mode, the
//     graph of each CSV's replaces, skips and olm.skipRange (UpgradeEdges), which every
//     channel of this catalog follows.
const (
	CommunityOpenShiftDir   = "community/openshift/operators/" + Package
	CommunityOperatorHubDir = "community/operatorhub/operators/" + Package
	BasicTemplateFile       = "catalog-templates/basic.yaml"
	BasicTemplateSchema     = "olm.template.basic"
	PackageDescription      = "Runs LINSTOR storage clusters (controller, satellites with DRBD, CSI, HA controller) and upgrades them safely."
)

// Retirement marks a channel or a release retired: OLM shows the message on the
// Subscriptions that follow the channel or run the release (an olm.deprecations entry).
// Exactly one of Channel and Bundle (a CSV name) is set.
type Retirement struct {
	Channel, Bundle, Message string
}

// Retired lists what is retired. No channel or release is: every LINSTOR line of the
// catalog still gets its patch upgrades, and every release is a step of a channel.
var Retired []Retirement

// CatalogBlobs are the olm.package and olm.channel blobs of the catalog of releases, and an
// olm.deprecations blob when something is retired (hack/render-catalog.sh writes them
// before the bundles).
func CatalogBlobs(releases []CatalogRelease, retired []Retirement) ([]map[string]any, error) {
	blobs := []map[string]any{{
		"schema": "olm.package", "name": Package, "defaultChannel": StableChannel, "description": PackageDescription,
	}}
	channels, err := Channels(releases)
	if err != nil {
		return nil, err
	}
	for _, c := range channels {
		blobs = append(blobs, map[string]any{"schema": "olm.channel", "package": Package, "name": c.Name, "entries": c.Entries})
	}
	if len(retired) == 0 {
		return blobs, nil
	}
	var entries []any
	for _, r := range retired {
		ref := map[string]any{"schema": "olm.channel", "name": r.Channel}
		if (r.Channel == "") == (r.Bundle == "") || r.Message == "" {
			return nil, fmt.Errorf("retirement %+v: name a channel or a bundle, and say why", r)
		}
		if r.Bundle != "" {
			ref = map[string]any{"schema": "olm.bundle", "name": r.Bundle}
		}
		entries = append(entries, map[string]any{"reference": ref, "message": r.Message})
	}
	return append(blobs, map[string]any{"schema": "olm.deprecations", "package": Package, "entries": entries}), nil
}

// BundleImage is the bundle image of a release: make bundle-build's BUNDLE_IMG for that
// version, IMAGE_TAG_BASE-bundle:v<version>.
func BundleImage(imageTagBase string, r CatalogRelease) string {
	return fmt.Sprintf("%s-bundle:v%s", imageTagBase, r.Version)
}

// CommunityOptions choose the community files.
type CommunityOptions struct {
	// ImageTagBase is the Makefile's IMAGE_TAG_BASE: bundles are referenced by image.
	ImageTagBase string
	// Reviewers are the GitHub logins whose pull requests the pipelines merge unreviewed.
	Reviewers []string
	// OpenShiftCatalogs are the OpenShift catalog versions (v4.18, ...) of the mapping.
	OpenShiftCatalogs []string
	// Retired are the template's olm.deprecations, as the catalog's.
	Retired []Retirement
}

// CommunityFiles are the community files by path under the repository root.
func CommunityFiles(releases []CatalogRelease, o CommunityOptions) (map[string][]byte, error) {
	if len(o.Reviewers) == 0 {
		return nil, fmt.Errorf("no reviewers: both pipelines' ci.yaml schema wants at least one")
	}
	blobs, err := CatalogBlobs(releases, o.Retired)
	if err != nil {
		return nil, err
	}
	sorted := sortedReleases(releases)
	entries := make([]any, 0, len(blobs)+len(sorted))
	for _, b := range blobs {
		entries = append(entries, b)
	}
	for _, r := range sorted {
		entries = append(entries, map[string]any{"schema": "olm.bundle", "image": BundleImage(o.ImageTagBase, r)})
	}
	template, err := yaml.Marshal(map[string]any{"schema": BasicTemplateSchema, "entries": entries})
	if err != nil {
		return nil, err
	}
	catalogs := append([]string(nil), o.OpenShiftCatalogs...)
	sort.Slice(catalogs, func(i, j int) bool { a, _ := minor(catalogs[i]); b, _ := minor(catalogs[j]); return a < b })
	openshift, err := yaml.Marshal(map[string]any{
		"reviewers": o.Reviewers,
		"fbc": map[string]any{
			"enabled": true,
			// Catalogs are promoted to the next OpenShift after review: a new OpenShift
			// may need a release of its own (its Kubernetes, RHCOS kernels for DRBD).
			"version_promotion_strategy": "review-needed",
			"catalog_mapping": []any{map[string]any{
				"template_name": filepath.Base(BasicTemplateFile), "type": BasicTemplateSchema, "catalog_names": catalogs,
			}},
		},
	})
	if err != nil {
		return nil, err
	}
	operatorhub, err := yaml.Marshal(map[string]any{"reviewers": o.Reviewers, "updateGraph": "replaces-mode"})
	if err != nil {
		return nil, err
	}
	header := "# Generated by `make catalog` (internal/bundle/community.go). Do not edit.\n"
	return map[string][]byte{
		filepath.Join(CommunityOpenShiftDir, "ci.yaml"):         append([]byte(header+"---\n"), openshift...),
		filepath.Join(CommunityOpenShiftDir, BasicTemplateFile): append([]byte(header+"---\n"), template...),
		filepath.Join(CommunityOperatorHubDir, "ci.yaml"):       append([]byte(header+"---\n"), operatorhub...),
	}, nil
}

// OpenShiftCatalogsFrom lists the OpenShift catalogs from the oldest the bundle allows
// (OpenShiftVersions) to the newest of the table.
func OpenShiftCatalogsFrom(oldest string) ([]string, error) {
	from, err := minor(oldest)
	if err != nil {
		return nil, err
	}
	var out []string
	for ocp := range OpenShiftKubernetes {
		if m, _ := minor(ocp); m >= from {
			out = append(out, "v"+ocp)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no OpenShift catalog from %s in the table", oldest)
	}
	sort.Slice(out, func(i, j int) bool { a, _ := minor(out[i]); b, _ := minor(out[j]); return a < b })
	return out, nil
}
