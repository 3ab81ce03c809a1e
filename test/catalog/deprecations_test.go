package catalog

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/linstor-operator/linstor-operator/internal/bundle"
	"github.com/linstor-operator/linstor-operator/test/envtest"
)

// No channel or release is retired, so the catalog has no olm.deprecations. A retirement
// (bundle.Retired) renders as one that opm accepts, for a channel and for a release, and
// opm refuses one that names what the catalog does not have.
func TestRetirementsRenderAsDeprecations(t *testing.T) {
	raw, err := os.ReadFile(catalogFile())
	if err != nil {
		t.Fatal(err)
	}
	deprecations := 0
	for _, b := range parse(t, raw) {
		if b.Schema == "olm.deprecations" {
			deprecations++
		}
	}
	if want := min(len(bundle.Retired), 1); deprecations != want {
		t.Errorf("the catalog has %d olm.deprecations blobs, want %d for %d retirements", deprecations, want, len(bundle.Retired))
	}

	dirs := releaseDirs(t)
	var releases []bundle.CatalogRelease
	var rendered []string
	for _, d := range dirs {
		r, err := bundle.ReadCatalogRelease(d)
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, r)
		out, err := exec.Command(envtest.OPMBinary(t), "render", d, "-o", "yaml").Output()
		if err != nil {
			t.Fatalf("opm render %s: %v", d, err)
		}
		rendered = append(rendered, string(out))
	}
	validate := func(retired []bundle.Retirement) (string, error) {
		blobs, err := bundle.CatalogBlobs(releases, retired)
		if err != nil {
			return "", err
		}
		var b strings.Builder
		for _, blob := range blobs {
			out, _ := yaml.Marshal(blob)
			b.WriteString("---\n" + string(out))
		}
		for _, r := range rendered {
			b.WriteString(r)
		}
		dir := filepath.Join(t.TempDir(), "catalog")
		if err := os.MkdirAll(filepath.Join(dir, bundle.Package), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, bundle.Package, "index.yaml"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(envtest.OPMBinary(t), "validate", dir).CombinedOutput(); err != nil {
			return b.String(), fmt.Errorf("%w: %s", err, out)
		}
		return b.String(), nil
	}
	retired := []bundle.Retirement{
		{Channel: "stable-linstor-1.31", Message: "LINSTOR 1.31 gets no more releases: switch to stable-linstor-1.33."},
		{Bundle: "linstor-operator.v0.1.0", Message: "0.1.0 is retired: upgrade."},
	}
	catalog, err := validate(retired)
	if err != nil {
		t.Fatalf("opm validate refuses the retirements: %v", err)
	}
	if !strings.Contains(catalog, "schema: olm.deprecations") || !strings.Contains(catalog, "name: stable-linstor-1.31") {
		t.Errorf("no olm.deprecations blob naming the channel:\n%s", catalog)
	}
	if _, err := validate([]bundle.Retirement{{Channel: "stable-linstor-1.29", Message: "gone"}}); err == nil {
		t.Error("opm validate accepts retiring a channel the catalog does not have")
	}
	if _, err := validate([]bundle.Retirement{{Channel: "stable", Bundle: "linstor-operator.v0.1.0", Message: "both"}}); err == nil {
		t.Error("a retirement naming both a channel and a bundle is accepted")
	}
}
