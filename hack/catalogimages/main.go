// Command catalogimages writes the file-based catalog a catalog image ships (make
// catalog-build): the package and channels of the project's catalog/, and each release's
// bundle as `opm render` gives it from the release's bundle image, so that the bundles
// reference their images (catalog/ renders bundle directories: image ""). Every bundle
// catalog/ lists must come from an image, with the same content; opm validates the result.
//
// Usage: catalogimages -opm OPM -catalog catalog -out DIR [-render-flags "--use-http"] BUNDLE_IMAGE...
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

func main() {
	opm := flag.String("opm", "", "the opm binary")
	catalog := flag.String("catalog", "catalog", "the project's file-based catalog: its package and channels")
	out := flag.String("out", "", "the directory to write the catalog to (replaced)")
	renderFlags := flag.String("render-flags", "", "flags for opm render of the bundle images, e.g. --use-http for a plain-HTTP registry")
	flag.Parse()
	if *opm == "" || *out == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: catalogimages -opm OPM -catalog DIR -out DIR [-render-flags FLAGS] BUNDLE_IMAGE...")
		os.Exit(2)
	}
	if err := run(*opm, *catalog, *out, strings.Fields(*renderFlags), flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "catalogimages:", err)
		os.Exit(1)
	}
}

func run(opm, catalog, out string, renderFlags, images []string) error {
	project, err := render(opm, catalog)
	if err != nil {
		return err
	}
	fromImages, err := render(opm, append(append([]string{}, renderFlags...), images...)...)
	if err != nil {
		return err
	}
	blobs, err := merge(project, fromImages)
	if err != nil {
		return err
	}
	pkg, _ := blobs[0]["name"].(string)
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	dir := filepath.Join(out, pkg)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var index bytes.Buffer
	for _, b := range blobs {
		y, err := yaml.Marshal(b)
		if err != nil {
			return err
		}
		index.WriteString("---\n")
		index.Write(y)
	}
	if err := os.WriteFile(filepath.Join(dir, "index.yaml"), index.Bytes(), 0o644); err != nil {
		return err
	}
	if msg, err := exec.Command(opm, "validate", out).CombinedOutput(); err != nil {
		return fmt.Errorf("opm validate %s: %v\n%s", out, err, msg)
	}
	return nil
}

// blob is one object of a file-based catalog.
type blob map[string]any

func (b blob) schema() string { s, _ := b["schema"].(string); return s }
func (b blob) name() string   { s, _ := b["name"].(string); return s }

// render is opm render's output for args, as blobs.
func render(opm string, args ...string) ([]blob, error) {
	cmd := exec.Command(opm, append([]string{"render", "--output", "json"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("opm render %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var blobs []blob
	decoder := json.NewDecoder(bytes.NewReader(out))
	for {
		var b blob
		if err := decoder.Decode(&b); errors.Is(err, io.EOF) {
			return blobs, nil
		} else if err != nil {
			return nil, fmt.Errorf("opm render %s: %w", strings.Join(args, " "), err)
		}
		blobs = append(blobs, b)
	}
}

// merge is the project's catalog with its bundles replaced by those rendered from bundle
// images: the package first, then the channels and other blobs, then the bundles in the
// project's order. Each of the project's bundles must come from exactly one image, with
// the same properties (the manifests among them), and no image may add a bundle.
func merge(project, fromImages []blob) ([]blob, error) {
	var merged, bundles []blob
	var pkg string
	for _, b := range project {
		switch b.schema() {
		case "olm.package":
			if pkg != "" {
				return nil, fmt.Errorf("the catalog has packages %s and %s: one package per catalog", pkg, b.name())
			}
			pkg = b.name()
			merged = append([]blob{b}, merged...)
		case "olm.bundle":
			bundles = append(bundles, b)
		default:
			merged = append(merged, b)
		}
	}
	if pkg == "" {
		return nil, errors.New("the catalog has no olm.package")
	}
	byName := map[string]blob{}
	for _, b := range fromImages {
		image, _ := b["image"].(string)
		if b.schema() != "olm.bundle" || image == "" {
			return nil, fmt.Errorf("opm render of the bundle images gave a %s %q with image %q, want only bundles from images", b.schema(), b.name(), image)
		}
		if b["package"] != pkg {
			return nil, fmt.Errorf("bundle image %s is of package %v, not %s", image, b["package"], pkg)
		}
		if other, ok := byName[b.name()]; ok {
			return nil, fmt.Errorf("bundle images %s and %s are both %s", other["image"], image, b.name())
		}
		byName[b.name()] = b
	}
	var missing []string
	for _, want := range bundles {
		got, ok := byName[want.name()]
		if !ok {
			missing = append(missing, want.name())
			continue
		}
		delete(byName, want.name())
		if !reflect.DeepEqual(got["properties"], want["properties"]) {
			return nil, fmt.Errorf("bundle image %s holds another %s than the catalog (a rebuilt bundle not rendered into catalog/: make catalog, or build and push this bundle)", got["image"], want.name())
		}
		merged = append(merged, got)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("no bundle image given for %s, which the catalog's channels list (BUNDLE_IMGS names every release's bundle image)", strings.Join(missing, ", "))
	}
	if len(byName) > 0 {
		extra := make([]string, 0, len(byName))
		for name, b := range byName {
			extra = append(extra, fmt.Sprintf("%s (%s)", name, b["image"]))
		}
		slices.Sort(extra)
		return nil, fmt.Errorf("bundle images of releases the catalog does not list: %s (make catalog first)", strings.Join(extra, ", "))
	}
	return merged, nil
}
