// Command catalogchannels prints the olm.package and olm.channel blobs of the catalog for
// the given bundle directories (hack/render-catalog.sh): channels by LINSTOR line, decided
// by internal/bundle.Channels. With -community ROOT it writes the community catalog files
// instead (internal/bundle.CommunityFiles: ci.yaml for each pipeline and the
// olm.template.basic catalog template referencing the releases' bundle images).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/linstor-operator/linstor-operator/internal/bundle"
)

func main() {
	community := flag.String("community", "", "write the community files under this repository root instead of printing the blobs")
	imageTagBase := flag.String("image-tag-base", "", "IMAGE_TAG_BASE: bundle images are <base>-bundle:v<version> (with -community)")
	reviewers := flag.String("reviewers", "", "comma-separated GitHub logins for the pipelines' ci.yaml (with -community)")
	flag.Parse()
	if flag.NArg() < 1 {
		fmt.Fprintln(os.Stderr, "usage: catalogchannels [-community ROOT -image-tag-base BASE -reviewers LOGINS] BUNDLE_DIR...")
		os.Exit(2)
	}
	if err := run(*community, *imageTagBase, *reviewers, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "catalogchannels:", err)
		os.Exit(1)
	}
}

func run(community, imageTagBase, reviewers string, dirs []string) error {
	var releases []bundle.CatalogRelease
	for _, dir := range dirs {
		r, err := bundle.ReadCatalogRelease(dir)
		if err != nil {
			return err
		}
		releases = append(releases, r)
	}
	if community != "" {
		catalogs, err := bundle.OpenShiftCatalogsFrom(bundle.OpenShiftVersions)
		if err != nil {
			return err
		}
		files, err := bundle.CommunityFiles(releases, bundle.CommunityOptions{
			ImageTagBase: imageTagBase, Reviewers: strings.FieldsFunc(reviewers, func(r rune) bool { return r == ',' }), OpenShiftCatalogs: catalogs,
			Retired: bundle.Retired,
		})
		if err != nil {
			return err
		}
		for path, content := range files {
			full := filepath.Join(community, path)
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(full, content, 0o644); err != nil {
				return err
			}
		}
		return nil
	}
	blobs, err := bundle.CatalogBlobs(releases, bundle.Retired)
	if err != nil {
		return err
	}
	for _, b := range blobs {
		out, err := yaml.Marshal(b)
		if err != nil {
			return err
		}
		fmt.Printf("---\n%s", out)
	}
	return nil
}
