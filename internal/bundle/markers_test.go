package bundle

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMarkersBelowAFieldAndRelativeDependencies: a path= marker describes a path below
// its field and wins over the field type's own marker there; a fieldDependency is made
// absolute from the object holding the field, at each place a type is used.
func TestMarkersBelowAFieldAndRelativeDependencies(t *testing.T) {
	dir := t.TempDir()
	src := `package v1

// +operator-sdk:csv:customresourcedefinitions:displayName="Thing"
type Thing struct {
	Spec ThingSpec ` + "`json:\"spec\"`" + `
}

type ThingSpec struct {
	// a is one channel.
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="A"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,path=secret,displayName="Hidden",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:hidden"}
	A *Channel ` + "`json:\"a,omitempty\"`" + `
	// b is another.
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="B"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,path=affinity.nodeAffinity,displayName="Node Affinity",description="Nodes, by labels.",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:nodeAffinity"}
	B *Channel ` + "`json:\"b,omitempty\"`" + `
}

type Channel struct {
	// mode of the channel.
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Mode"
	Mode string ` + "`json:\"mode\"`" + `
	// secret of the channel.
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Secret",xDescriptors={"urn:alm:descriptor:io.kubernetes:Secret","urn:alm:descriptor:com.tectonic.ui:fieldDependency:mode:Secret"}
	Secret string ` + "`json:\"secret\"`" + `
}
`
	if err := os.WriteFile(filepath.Join(dir, "thing_types.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	kinds, err := readMarkers(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	names := map[string]string{}
	for _, d := range kinds["Thing"].Spec {
		got[d.Path] = d.XDescriptors
		names[d.Path] = d.DisplayName + "|" + d.Description
	}
	want := map[string][]string{
		"a":                       nil,
		"a.mode":                  nil,
		"a.secret":                {"urn:alm:descriptor:com.tectonic.ui:hidden"},
		"b":                       nil,
		"b.mode":                  nil,
		"b.secret":                {"urn:alm:descriptor:io.kubernetes:Secret", "urn:alm:descriptor:com.tectonic.ui:fieldDependency:b.mode:Secret"},
		"b.affinity.nodeAffinity": {"urn:alm:descriptor:com.tectonic.ui:nodeAffinity"},
	}
	if len(got) != len(want) {
		t.Errorf("descriptors %v, want %v", got, want)
	}
	for path, xd := range want {
		g, ok := got[path]
		if !ok || len(g) != len(xd) {
			t.Errorf("%s: %v, want %v", path, g, xd)
			continue
		}
		for i := range xd {
			if g[i] != xd[i] {
				t.Errorf("%s: %v, want %v", path, g, xd)
			}
		}
	}
	if names["b.affinity.nodeAffinity"] != "Node Affinity|Nodes, by labels." || names["a.secret"] != "Hidden|" {
		t.Errorf("display names and descriptions of path= markers: %v", names)
	}
}
