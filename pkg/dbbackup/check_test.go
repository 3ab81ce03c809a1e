package dbbackup

import (
	"errors"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func table(plural, kind string, versions ...apiextensionsv1.CustomResourceDefinitionVersion) apiextensionsv1.CustomResourceDefinition {
	if versions == nil {
		versions = []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1-27-1", Served: true, Storage: true}}
	}
	return apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: Group, Scope: apiextensionsv1.ClusterScoped, Versions: versions,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind, ListKind: kind + "List"}},
	}
}

// The restore creates and updates CRDs from the backup's definitions: only ones LINSTOR
// could have written pass.
func TestCheckDumpTables(t *testing.T) {
	otherGroup := table("nodes", "Nodes")
	otherGroup.Spec.Group = "example.com"
	renamed := table("nodes", "Nodes")
	renamed.Name = "volumes." + Group
	noListKind := table("nodes", "Nodes")
	noListKind.Spec.Names.ListKind = ""
	twoStorage := table("nodes", "Nodes", apiextensionsv1.CustomResourceDefinitionVersion{Name: "a", Storage: true}, apiextensionsv1.CustomResourceDefinitionVersion{Name: "b", Storage: true})
	for _, tc := range []struct {
		name string
		crds []apiextensionsv1.CustomResourceDefinition
		want string
	}{
		{"LINSTOR's tables", []apiextensionsv1.CustomResourceDefinition{table("nodes", "Nodes"), table("volumes", "Volumes")}, ""},
		{"none (drops every table)", nil, ""},
		{"twice", []apiextensionsv1.CustomResourceDefinition{table("nodes", "Nodes"), table("nodes", "Nodes")}, "appears twice"},
		{"another group", []apiextensionsv1.CustomResourceDefinition{otherGroup}, `spec.group is "example.com"`},
		{"name not the plural", []apiextensionsv1.CustomResourceDefinition{renamed}, `spec.names.plural "nodes" does not match`},
		{"no listKind", []apiextensionsv1.CustomResourceDefinition{noListKind}, "listKind is empty"},
		{"two storage versions", []apiextensionsv1.CustomResourceDefinition{twoStorage}, "2 storage versions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkDumpTables(tc.crds)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestObjectCheck(t *testing.T) {
	check := newObjectCheck([]apiextensionsv1.CustomResourceDefinition{table("nodes", "Nodes",
		apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1-27-1", Served: true, Storage: true},
		apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1-19-1", Served: false})})
	obj := func(apiVersion, kind, name string) map[string]any {
		return map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name}}
	}
	for _, tc := range []struct {
		name string
		obj  map[string]any
		want string
	}{
		{"a row", obj(Group+"/v1-27-1", "Nodes", "n1"), ""},
		{"no name", obj(Group+"/v1-27-1", "Nodes", ""), "without metadata.name"},
		{"unknown kind", obj(Group+"/v1-27-1", "Volumes", "v1"), "not a row of a table"},
		{"unserved version", obj(Group+"/v1-19-1", "Nodes", "n1"), "not a row of a table"},
		{"another group", obj("example.com/v1-27-1", "Nodes", "n1"), "not a row of a table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := check.object(tc.obj)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestNothingWrittenWrapsBoth(t *testing.T) {
	cause := errors.New("cause")
	err := nothingWritten(cause)
	if !errors.Is(err, ErrNothingWritten) || !errors.Is(err, cause) {
		t.Fatalf("%v wraps neither", err)
	}
	if errors.Is(err, ErrPartlyRestored) {
		t.Fatalf("%v says partly restored", err)
	}
}
