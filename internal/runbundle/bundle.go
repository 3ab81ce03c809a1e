package runbundle

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/linstor-operator/linstor-operator/internal/bundle"
)

// The registry+v1 annotations (bundle/metadata/annotations.yaml) run-bundle reads.
const (
	annotationPackage        = "operators.operatorframework.io.bundle.package.v1"
	annotationChannels       = "operators.operatorframework.io.bundle.channels.v1"
	annotationDefaultChannel = "operators.operatorframework.io.bundle.channel.default.v1"
)

// Bundle is what run-bundle needs from a registry+v1 bundle directory.
type Bundle struct {
	Dir            string
	Package        string
	Channels       []string
	DefaultChannel string
	// SourceCommit is the commit a frozen release was built from, "" for this tree's.
	SourceCommit string
	// CSV is the bundle's ClusterServiceVersion: its name is the Subscription's startingCSV,
	// its install modes decide the OperatorGroup.
	CSV *operatorsv1alpha1.ClusterServiceVersion
}

// ReadBundle reads metadata/annotations.yaml and the ClusterServiceVersion of the bundle
// directory dir.
func ReadBundle(dir string) (*Bundle, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "metadata", "annotations.yaml"))
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w (is it a bundle directory? make bundle writes one)", dir, err)
	}
	var meta struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.Unmarshal(raw, &meta); err != nil {
		return nil, fmt.Errorf("bundle %s: metadata/annotations.yaml: %w", dir, err)
	}
	b := &Bundle{
		Dir:            dir,
		Package:        meta.Annotations[annotationPackage],
		DefaultChannel: meta.Annotations[annotationDefaultChannel],
		SourceCommit:   meta.Annotations[bundle.SourceCommitAnnotation],
	}
	for _, c := range strings.Split(meta.Annotations[annotationChannels], ",") {
		if c = strings.TrimSpace(c); c != "" {
			b.Channels = append(b.Channels, c)
		}
	}
	if b.Package == "" {
		return nil, fmt.Errorf("bundle %s: metadata/annotations.yaml has no %s", dir, annotationPackage)
	}
	if len(b.Channels) == 0 {
		return nil, fmt.Errorf("bundle %s: metadata/annotations.yaml has no %s", dir, annotationChannels)
	}

	files, err := filepath.Glob(filepath.Join(dir, "manifests", "*.yaml"))
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var head struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal(raw, &head); err != nil {
			return nil, fmt.Errorf("bundle %s: %s: %w", dir, filepath.Base(f), err)
		}
		if head.Kind != operatorsv1alpha1.ClusterServiceVersionKind {
			continue
		}
		if b.CSV != nil {
			return nil, fmt.Errorf("bundle %s: more than one ClusterServiceVersion in manifests/", dir)
		}
		b.CSV = &operatorsv1alpha1.ClusterServiceVersion{}
		if err := yaml.Unmarshal(raw, b.CSV); err != nil {
			return nil, fmt.Errorf("bundle %s: %s: %w", dir, filepath.Base(f), err)
		}
	}
	if b.CSV == nil || b.CSV.Name == "" {
		return nil, fmt.Errorf("bundle %s: no named ClusterServiceVersion in manifests/", dir)
	}
	return b, nil
}

// Channel is the channel to subscribe to: requested (the CHANNEL variable) if the bundle
// belongs to it, else the bundle's default channel.
func (b *Bundle) Channel(requested string) (string, error) {
	if requested != "" {
		if !slices.Contains(b.Channels, requested) {
			return "", fmt.Errorf("CHANNEL %q: bundle %s is only in channels %s", requested, b.CSV.Name, strings.Join(b.Channels, ","))
		}
		return requested, nil
	}
	if b.DefaultChannel != "" {
		return b.DefaultChannel, nil
	}
	if len(b.Channels) == 1 {
		return b.Channels[0], nil
	}
	return "", fmt.Errorf("bundle %s has no default channel (%s) and is in channels %s: set CHANNEL",
		b.CSV.Name, annotationDefaultChannel, strings.Join(b.Channels, ","))
}

// CatalogBlobs makes the private catalog served for one install: the olm.bundle blob that
// `opm render <bundle dir>` printed (rendered), then an olm.package and one olm.channel
// holding only that bundle, so OLM can resolve nothing but this bundle from it.
func CatalogBlobs(rendered []byte, b *Bundle, channel string) ([]byte, error) {
	bundles, err := decodeBlobs(rendered)
	if err != nil {
		return nil, err
	}
	for _, blob := range bundles {
		if blob["schema"] != "olm.bundle" {
			return nil, fmt.Errorf("opm render output: unexpected blob of schema %v", blob["schema"])
		}
	}
	if len(bundles) != 1 {
		return nil, fmt.Errorf("opm render output: %d olm.bundle blobs, want 1", len(bundles))
	}
	if bundles[0]["name"] != b.CSV.Name || bundles[0]["package"] != b.Package {
		return nil, fmt.Errorf("opm render output: bundle %v of package %v, want %s of package %s",
			bundles[0]["name"], bundles[0]["package"], b.CSV.Name, b.Package)
	}
	blobs := []any{
		map[string]any{"schema": "olm.package", "name": b.Package, "defaultChannel": channel},
		map[string]any{"schema": "olm.channel", "name": channel, "package": b.Package,
			"entries": []map[string]string{{"name": b.CSV.Name}}},
		bundles[0],
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	for _, blob := range blobs {
		if err := enc.Encode(blob); err != nil {
			return nil, err
		}
	}
	return out.Bytes(), nil
}

// decodeBlobs reads the JSON stream `opm render` prints.
func decodeBlobs(rendered []byte) ([]map[string]any, error) {
	var blobs []map[string]any
	dec := json.NewDecoder(bytes.NewReader(rendered))
	for {
		var blob map[string]any
		if err := dec.Decode(&blob); errors.Is(err, io.EOF) {
			return blobs, nil
		} else if err != nil {
			return nil, fmt.Errorf("opm render output: %w", err)
		}
		blobs = append(blobs, blob)
	}
}

// CatalogHolds checks that a rendered file-based catalog has channel in package pkg and
// that the channel holds bundle csv: a Subscription starting there resolves.
func CatalogHolds(rendered []byte, pkg, channel, csv string) error {
	blobs, err := decodeBlobs(rendered)
	if err != nil {
		return err
	}
	var channels []string
	for _, blob := range blobs {
		if blob["schema"] != "olm.channel" || blob["package"] != pkg {
			continue
		}
		name, _ := blob["name"].(string)
		channels = append(channels, name)
		if name != channel {
			continue
		}
		entries, _ := blob["entries"].([]any)
		for _, e := range entries {
			if entry, _ := e.(map[string]any); entry["name"] == csv {
				return nil
			}
		}
		return fmt.Errorf("the catalog's channel %s of package %s does not hold %s", channel, pkg, csv)
	}
	if len(channels) == 0 {
		return fmt.Errorf("the catalog has no channel of package %s", pkg)
	}
	return fmt.Errorf("the catalog has no channel %s of package %s (it has %s)", channel, pkg, strings.Join(channels, ","))
}

// catalogPackage is the one package a rendered catalog holds.
func catalogPackage(rendered []byte) (string, error) {
	blobs, err := decodeBlobs(rendered)
	if err != nil {
		return "", err
	}
	var pkgs []string
	for _, blob := range blobs {
		if name, _ := blob["name"].(string); blob["schema"] == "olm.package" {
			pkgs = append(pkgs, name)
		}
	}
	if len(pkgs) != 1 {
		return "", fmt.Errorf("the catalog holds packages %v, want exactly one", pkgs)
	}
	return pkgs[0], nil
}

// withoutBundleImage is a bundle blob as opm renders its directory: a catalog rendered
// from the bundle's image (make catalog-build) names the image, and opm lists it among the
// related images too, with no name.
func withoutBundleImage(blob map[string]any) map[string]any {
	image, _ := blob["image"].(string)
	if image == "" {
		return blob
	}
	out := maps.Clone(blob)
	out["image"] = ""
	related, _ := blob["relatedImages"].([]any)
	var kept []any
	for _, r := range related {
		if entry, _ := r.(map[string]any); entry["image"] != image || (entry["name"] != nil && entry["name"] != "") {
			kept = append(kept, r)
		}
	}
	if kept == nil {
		delete(out, "relatedImages")
	} else {
		out["relatedImages"] = kept
	}
	return out
}

// SameBundle checks that the catalog's olm.bundle named csv is the bundle directory's
// (bundleRendered, `opm render <dir>`): a stale catalog, or a bundle changed after the
// catalog was rendered, would install something else under the same name.
func SameBundle(catalogRendered, bundleRendered []byte, csv string) error {
	find := func(rendered []byte) (map[string]any, error) {
		blobs, err := decodeBlobs(rendered)
		if err != nil {
			return nil, err
		}
		for _, blob := range blobs {
			if blob["schema"] == "olm.bundle" && blob["name"] == csv {
				return blob, nil
			}
		}
		return nil, fmt.Errorf("no olm.bundle %s", csv)
	}
	inCatalog, err := find(catalogRendered)
	if err != nil {
		return fmt.Errorf("the catalog: %w", err)
	}
	inDir, err := find(bundleRendered)
	if err != nil {
		return fmt.Errorf("the bundle directory: %w", err)
	}
	inCatalog = withoutBundleImage(inCatalog)
	if !reflect.DeepEqual(inCatalog, inDir) {
		return fmt.Errorf("the catalog's %s differs from the bundle directory's: render the catalog again (make catalog)", csv)
	}
	return nil
}
