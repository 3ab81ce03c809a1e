package catalog

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/linstor-operator/linstor-operator/internal/bundle"
	"github.com/linstor-operator/linstor-operator/internal/runbundle"
	"github.com/linstor-operator/linstor-operator/test/envtest"
)

// docs/olm.md's operator-sdk commands install this release's bundle image into the CSV's
// suggested namespace, labelled as the namespace the console creates from the CSV, and
// clean up without deleting the CRDs. test/olm creates its namespace from the same block.
func TestDocumentedSDKCommands(t *testing.T) {
	root := envtest.RepoRoot()
	doc, err := os.ReadFile(filepath.Join(root, "docs", "olm.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := runbundle.ParseSDKCommands(doc)
	if err != nil {
		t.Fatal(err)
	}
	csv := readCSV(t, filepath.Join(root, "bundle"))
	if want := csv.Annotations["operatorframework.io/suggested-namespace"]; cmds.Namespace != want {
		t.Errorf("the commands install into %q, the CSV suggests %q", cmds.Namespace, want)
	}
	var template struct {
		Metadata struct {
			Name   string            `json:"name"`
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(csv.Annotations["operatorframework.io/suggested-namespace-template"]), &template); err != nil {
		t.Fatal(err)
	}
	if template.Metadata.Name != cmds.Namespace || !reflect.DeepEqual(template.Metadata.Labels, cmds.NamespaceLabels) {
		t.Errorf("the commands label namespace %s %v, the console creates %s %v", cmds.Namespace, cmds.NamespaceLabels, template.Metadata.Name, template.Metadata.Labels)
	}
	if want := bundle.BundleImage(imageTagBase(t), bundle.CatalogRelease{Version: csv.Spec.Version.Version}); cmds.BundleImage != want {
		t.Errorf("the commands run bundle %s, this release's BUNDLE_IMG is %s", cmds.BundleImage, want)
	}
	if cmds.CleanupPackage != bundle.Package || cmds.CleanupDeleteAll {
		t.Errorf("cleanup %s with delete-all %v: want %s, keeping the CRDs (--delete-all=false)", cmds.CleanupPackage, cmds.CleanupDeleteAll, bundle.Package)
	}
	t.Logf("documented: %q", cmds.Lines)
}
