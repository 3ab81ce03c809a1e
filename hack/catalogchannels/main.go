// Command catalogchannels prints the olm.package and olm.channel blobs of the catalog for
// the given bundle directories (hack/render-catalog.sh): channels by LINSTOR line, decided
// by internal/bundle.Channels.
package main

import (
	"fmt"
	"os"

	"sigs.k8s.io/yaml"

	"github.com/linstor-operator/linstor-operator/internal/bundle"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: catalogchannels BUNDLE_DIR...")
		os.Exit(2)
	}
	var releases []bundle.CatalogRelease
	for _, dir := range os.Args[1:] {
		r, err := bundle.ReadCatalogRelease(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "catalogchannels:", err)
			os.Exit(1)
		}
		releases = append(releases, r)
	}
	blobs := []any{map[string]any{
		"schema": "olm.package", "name": bundle.Package, "defaultChannel": bundle.StableChannel,
		"description": "Runs LINSTOR storage clusters (controller, satellites with DRBD, CSI, HA controller) and upgrades them safely.",
	}}
	channels, err := bundle.Channels(releases)
	if err != nil {
		fmt.Fprintln(os.Stderr, "catalogchannels:", err)
		os.Exit(1)
	}
	for _, c := range channels {
		blobs = append(blobs, map[string]any{"schema": "olm.channel", "package": bundle.Package, "name": c.Name, "entries": c.Entries})
	}
	for _, b := range blobs {
		out, err := yaml.Marshal(b)
		if err != nil {
			fmt.Fprintln(os.Stderr, "catalogchannels:", err)
			os.Exit(1)
		}
		fmt.Printf("---\n%s", out)
	}
}
