package runbundle

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/linstor-operator/linstor-operator/test/envtest"
)

// repoRoot is the repository's top directory (tests run in the package directory).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// writeBundle writes a minimal registry+v1 bundle directory: annotations and the given
// manifests (file name → content).
func writeBundle(t *testing.T, annotations string, manifests map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"metadata", "manifests"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "metadata", "annotations.yaml"), []byte(annotations), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, content := range manifests {
		if err := os.WriteFile(filepath.Join(dir, "manifests", name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const (
	testAnnotations = `annotations:
  operators.operatorframework.io.bundle.channel.default.v1: stable
  operators.operatorframework.io.bundle.channels.v1: candidate, stable
  operators.operatorframework.io.bundle.package.v1: demo-operator
`
	testCSV = `apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: demo-operator.v1.2.3
spec:
  installModes:
  - {type: OwnNamespace, supported: false}
  - {type: AllNamespaces, supported: true}
`
	testService = `apiVersion: v1
kind: Service
metadata: {name: metrics}
`
)

func TestReadBundle(t *testing.T) {
	dir := writeBundle(t, testAnnotations, map[string]string{"a.yaml": testService, "csv.yaml": testCSV})
	b, err := ReadBundle(dir)
	if err != nil {
		t.Fatal(err)
	}
	if b.Package != "demo-operator" || b.DefaultChannel != "stable" || !reflect.DeepEqual(b.Channels, []string{"candidate", "stable"}) {
		t.Errorf("package %q, default %q, channels %q", b.Package, b.DefaultChannel, b.Channels)
	}
	if b.CSV.Name != "demo-operator.v1.2.3" || len(b.CSV.Spec.InstallModes) != 2 {
		t.Errorf("CSV %q with install modes %v", b.CSV.Name, b.CSV.Spec.InstallModes)
	}

	for _, tc := range []struct {
		name, annotations string
		manifests         map[string]string
		want              string
	}{
		{"no package", "annotations:\n  operators.operatorframework.io.bundle.channels.v1: stable\n",
			map[string]string{"csv.yaml": testCSV}, "no operators.operatorframework.io.bundle.package.v1"},
		{"no channels", "annotations:\n  operators.operatorframework.io.bundle.package.v1: p\n",
			map[string]string{"csv.yaml": testCSV}, "no operators.operatorframework.io.bundle.channels.v1"},
		{"no CSV", testAnnotations, map[string]string{"a.yaml": testService}, "no named ClusterServiceVersion"},
		{"two CSVs", testAnnotations, map[string]string{"a.yaml": testCSV, "b.yaml": testCSV}, "more than one ClusterServiceVersion"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadBundle(writeBundle(t, tc.annotations, tc.manifests))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	if _, err := ReadBundle(t.TempDir()); err == nil || !strings.Contains(err.Error(), "make bundle") {
		t.Errorf("empty directory: error %v, want one pointing to make bundle", err)
	}
}

func TestChannel(t *testing.T) {
	csv := &operatorsv1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Name: "p.v1"}}
	for _, tc := range []struct {
		name       string
		channels   []string
		def, asked string
		want, err  string
	}{
		{name: "default channel", channels: []string{"candidate", "stable"}, def: "stable", want: "stable"},
		{name: "asked for another of its channels", channels: []string{"candidate", "stable"}, def: "stable", asked: "candidate", want: "candidate"},
		{name: "asked for a channel it is not in", channels: []string{"candidate", "stable"}, def: "stable", asked: "fast", err: `CHANNEL "fast": bundle p.v1 is only in channels candidate,stable`},
		{name: "no default, one channel", channels: []string{"alpha"}, want: "alpha"},
		{name: "no default, two channels", channels: []string{"alpha", "beta"}, err: "set CHANNEL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &Bundle{Package: "p", Channels: tc.channels, DefaultChannel: tc.def, CSV: csv}
			got, err := b.Channel(tc.asked)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func mustDecodeBlobs(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	blobs, err := decodeBlobs(data)
	if err != nil {
		t.Fatal(err)
	}
	return blobs
}

func TestCatalogBlobs(t *testing.T) {
	b := &Bundle{Package: "demo-operator", Channels: []string{"candidate", "stable"}, DefaultChannel: "stable",
		CSV: &operatorsv1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Name: "demo-operator.v1.2.3"}}}
	bundleBlob := `{"schema":"olm.bundle","name":"demo-operator.v1.2.3","package":"demo-operator","image":"","properties":[{"type":"olm.package","value":{"packageName":"demo-operator","version":"1.2.3"}}]}`

	got, err := CatalogBlobs([]byte(bundleBlob+"\n"), b, "candidate")
	if err != nil {
		t.Fatal(err)
	}
	var bundle map[string]any
	if err := json.Unmarshal([]byte(bundleBlob), &bundle); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"schema": "olm.package", "name": "demo-operator", "defaultChannel": "candidate"},
		{"schema": "olm.channel", "name": "candidate", "package": "demo-operator",
			"entries": []any{map[string]any{"name": "demo-operator.v1.2.3"}}},
		bundle,
	}
	if blobs := mustDecodeBlobs(t, got); !reflect.DeepEqual(blobs, want) {
		t.Errorf("blobs\n%v\nwant\n%v", blobs, want)
	}

	for _, tc := range []struct{ name, rendered, want string }{
		{"nothing rendered", "", "0 olm.bundle blobs"},
		{"two bundles", bundleBlob + bundleBlob, "2 olm.bundle blobs"},
		{"another bundle", strings.Replace(bundleBlob, "v1.2.3\",\"package", "v9\",\"package", 1), "want demo-operator.v1.2.3"},
		{"not a bundle", `{"schema":"olm.package","name":"x"}`, "unexpected blob of schema olm.package"},
		{"not JSON", "name: x", "opm render output"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := CatalogBlobs([]byte(tc.rendered), b, "stable"); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// The catalog made from the project's bundle directory is one opm accepts: it validates,
// and its package's default channel leads to the bundle's CSV.
func TestCatalogFromProjectBundleValidates(t *testing.T) {
	opm := envtest.OPMBinary(t)
	bundleDir := filepath.Join(repoRoot(t), "bundle")
	b, rendered := readAndRender(t, opm, bundleDir)
	channel, err := b.Channel("")
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := CatalogBlobs(rendered, b, channel)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := writeCatalog(t.TempDir(), b.Package, blobs)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(opm, "validate", dir).CombinedOutput(); err != nil {
		t.Fatalf("opm validate: %v\n%s", err, out)
	}
	decoded := mustDecodeBlobs(t, blobs)
	if len(decoded) != 3 || decoded[2]["name"] != b.CSV.Name || decoded[2]["image"] != "" {
		t.Errorf("want package, channel and the bundle %s with its manifests inline (image \"\"), got %d blobs", b.CSV.Name, len(decoded))
	}
}

// The project's catalog starts a Subscription at each release in its channels, and
// CatalogHolds says which channel or bundle is missing otherwise.
func TestCatalogHolds(t *testing.T) {
	rendered, err := render(t.Context(), envtest.OPMBinary(t), filepath.Join(repoRoot(t), "catalog"))
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := catalogPackage(rendered)
	if err != nil || pkg != "linstor-operator" {
		t.Fatalf("catalogPackage = %q, %v", pkg, err)
	}
	for _, tc := range []struct {
		pkg, channel, csv string
		wantErr           string
	}{
		{"linstor-operator", "stable", "linstor-operator.v0.2.0", ""},
		{"linstor-operator", "stable-linstor-1.33", "linstor-operator.v0.3.0", ""},
		{"linstor-operator", "stable-linstor-1.31", "linstor-operator.v0.1.0", ""},
		{"linstor-operator", "stable-linstor-1.31", "linstor-operator.v0.2.0", "channel stable-linstor-1.31 of package linstor-operator does not hold linstor-operator.v0.2.0"},
		{"linstor-operator", "fast", "linstor-operator.v0.2.0", "no channel fast of package linstor-operator (it has stable,stable-linstor-1.31,stable-linstor-1.32,stable-linstor-1.33)"},
		{"other", "stable", "linstor-operator.v0.2.0", "no channel of package other"},
	} {
		err := CatalogHolds(rendered, tc.pkg, tc.channel, tc.csv)
		if tc.wantErr == "" && err != nil {
			t.Errorf("%s/%s/%s: %v", tc.pkg, tc.channel, tc.csv, err)
		}
		if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s/%s/%s: got %v, want an error containing %q", tc.pkg, tc.channel, tc.csv, err, tc.wantErr)
		}
	}
}

// The catalog's copy of a release must be the bundle directory's: the project's catalog
// holds bundle/ and bundles/0.2.0 as they are, and a bundle changed after the catalog
// was rendered is refused.
func TestSameBundle(t *testing.T) {
	root := repoRoot(t)
	opm := envtest.OPMBinary(t)
	catalog, err := render(t.Context(), opm, filepath.Join(root, "catalog"))
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{filepath.Join(root, "bundle"), filepath.Join(root, "bundles", "0.2.0")} {
		b, rendered := readAndRender(t, opm, dir)
		if err := SameBundle(catalog, rendered, b.CSV.Name); err != nil {
			t.Errorf("%s: %v", dir, err)
		}
	}

	// bundle/ with its CSV's description changed after the catalog was rendered.
	changed := t.TempDir()
	if out, err := exec.Command("cp", "-r", filepath.Join(root, "bundle")+"/.", changed).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	csvFile := filepath.Join(changed, "manifests", "linstor-operator.clusterserviceversion.yaml")
	raw, err := os.ReadFile(csvFile)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(raw), "  description: ", "  description: Changed. ", 1)
	if edited == string(raw) {
		t.Fatal("the CSV has no spec description to change")
	}
	if err := os.WriteFile(csvFile, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	b, rendered := readAndRender(t, opm, changed)
	if err := SameBundle(catalog, rendered, b.CSV.Name); err == nil || !strings.Contains(err.Error(), "differs from the bundle directory's") {
		t.Errorf("a changed bundle: %v, want it refused", err)
	}
}

// A catalog rendered from the bundle's image (make catalog-build) holds the same bundle
// with the image's reference, which opm also lists among the related images.
func TestSameBundleFromTheBundleImage(t *testing.T) {
	root := repoRoot(t)
	opm := envtest.OPMBinary(t)
	b, rendered := readAndRender(t, opm, filepath.Join(root, "bundle"))
	blobs, err := decodeBlobs(rendered)
	if err != nil {
		t.Fatal(err)
	}
	const image = "registry.example/linstor-operator-bundle:v1"
	var fromImage []byte
	for _, blob := range blobs {
		if blob["schema"] == "olm.bundle" {
			blob["image"] = image
			related, _ := blob["relatedImages"].([]any)
			blob["relatedImages"] = append([]any{map[string]any{"name": "", "image": image}}, related...)
		}
		data, err := json.Marshal(blob)
		if err != nil {
			t.Fatal(err)
		}
		fromImage = append(fromImage, data...)
	}
	if err := SameBundle(fromImage, rendered, b.CSV.Name); err != nil {
		t.Errorf("the bundle rendered from its image: %v", err)
	}
}

// readAndRender reads a bundle directory and renders it as opm does.
func readAndRender(t *testing.T, opm, dir string) (*Bundle, []byte) {
	t.Helper()
	b, err := ReadBundle(dir)
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := render(t.Context(), opm, dir)
	if err != nil {
		t.Fatal(err)
	}
	return b, rendered
}
