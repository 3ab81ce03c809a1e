package catalog

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/linstor-operator/linstor-operator/internal/bundle"
	"github.com/linstor-operator/linstor-operator/test/envtest"
)

type bundleAnnotations struct {
	Annotations map[string]string `json:"annotations"`
}

func readAnnotations(t *testing.T, dir string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "metadata", "annotations.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var a bundleAnnotations
	if err := yaml.Unmarshal(raw, &a); err != nil {
		t.Fatal(err)
	}
	return a.Annotations
}

// This tree's bundle says which channels it is in, and the catalog puts it in exactly
// those (channels by LINSTOR line, internal/bundle.Channels): a bundle annotation that
// disagrees would make a catalog built from the bundle image differ from this one.
func TestBundleChannelsAreTheCatalogs(t *testing.T) {
	root := envtest.RepoRoot()
	dirs, _ := filepath.Glob(filepath.Join(root, "bundles", "*"))
	dirs = append(dirs, filepath.Join(root, "bundle"))
	var all []bundle.CatalogRelease
	for _, d := range dirs {
		r, err := bundle.ReadCatalogRelease(d)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, r)
	}
	want, err := bundle.ChannelsOf(all[len(all)-1], all)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(readAnnotations(t, filepath.Join(root, "bundle"))["operators.operatorframework.io.bundle.channels.v1"], ",")
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("bundle/ declares channels %v, the catalog puts it in %v: set CHANNELS in the Makefile", got, want)
	}
}

// The catalog's channels are the ones internal/bundle.Channels decides for its releases, by
// name and entries.
func TestCatalogChannelsFollowLinstorLines(t *testing.T) {
	raw, err := os.ReadFile(catalogFile())
	if err != nil {
		t.Fatal(err)
	}
	root := envtest.RepoRoot()
	dirs, _ := filepath.Glob(filepath.Join(root, "bundles", "*"))
	var all []bundle.CatalogRelease
	for _, d := range append(dirs, filepath.Join(root, "bundle")) {
		r, err := bundle.ReadCatalogRelease(d)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, r)
	}
	want, err := bundle.Channels(all)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]entry{}
	for _, b := range parse(t, raw) {
		if b.Schema == "olm.channel" {
			got[b.Name] = b.Entries
		}
	}
	if len(got) != len(want) {
		t.Errorf("catalog channels %v, want %d", got, len(want))
	}
	for _, c := range want {
		entries := got[c.Name]
		if len(entries) != len(c.Entries) {
			t.Errorf("channel %s: %v, want %v", c.Name, entries, c.Entries)
			continue
		}
		for i, e := range c.Entries {
			if entries[i].Name != e.Name || entries[i].Replaces != e.Replaces || !slices.Equal(entries[i].Skips, e.Skips) || entries[i].SkipRange != e.SkipRange {
				t.Errorf("channel %s entry %d: %+v, want %+v", c.Name, i, entries[i], e)
			}
		}
	}
}
