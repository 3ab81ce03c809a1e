package satellite

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

func expandProp(name, ref, nameTemplate, valueTemplate, delimiter string) linstorv1.NodeProperty {
	return linstorv1.NodeProperty{Name: name, ExpandFrom: &linstorv1.NodePropertyExpansion{
		NodeFieldRef: ref, NameTemplate: nameTemplate, ValueTemplate: valueTemplate, Delimiter: delimiter}}
}

func TestDesiredExpandFrom(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1",
		Labels: map[string]string{
			"topology.example.com/zone": "z1", "topology.example.com/rack": "r7", "topology.example.com/row": "$2",
			"other.example.com/zone": "x", "feature.example.com/gpu-a100.present": "true", "feature.example.com/nvme.present": "true",
			"feature.example.com/odd name.present": "true",
		},
		Annotations: map[string]string{"site.example.com/room": "b12"},
	}}
	cluster := &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Name: "linstor"}}
	one := func(props ...linstorv1.NodeProperty) []linstorv1.LinstorSatelliteConfiguration {
		return []linstorv1.LinstorSatelliteConfiguration{cfg("c", nil, linstorv1.LinstorSatelliteConfigurationSpec{Properties: props})}
	}
	cases := []struct {
		name    string
		configs []linstorv1.LinstorSatelliteConfiguration
		want    []linstorv1.Property
		skipped string // in the configuration's skipped list
	}{
		{name: "nameTemplate: one property per key, in key order, $1 and $2",
			configs: one(expandProp("Aux/topology/", "metadata.labels['topology.example.com/*']", "$1", "", "")),
			// A "$2" inside a value is not expanded again.
			want: []linstorv1.Property{{Name: "Aux/topology/rack", Value: "r7"}, {Name: "Aux/topology/row", Value: "$2"}, {Name: "Aux/topology/zone", Value: "z1"}}},
		{name: "nameTemplate with text around, valueTemplate using both",
			configs: one(expandProp("Aux/", "metadata.annotations['site.example.com/*']", "site-$1", "$1=$2", "")),
			want:    []linstorv1.Property{{Name: "Aux/site-room", Value: "room=b12"}}},
		{name: "a suffix after the *",
			configs: one(expandProp("Aux/feature/", "metadata.labels['feature.example.com/*.present']", "$1", "", "")),
			want:    []linstorv1.Property{{Name: "Aux/feature/gpu-a100", Value: "true"}, {Name: "Aux/feature/nvme", Value: "true"}},
			skipped: `property "Aux/feature/odd name" (from label "feature.example.com/odd name.present" of node n1) is not a property name`},
		{name: "no nameTemplate: values joined with the default delimiter in key order",
			configs: one(expandProp("Aux/zones", "metadata.labels['*.example.com/zone']", "", "", "")),
			want:    []linstorv1.Property{{Name: "Aux/zones", Value: "x,z1"}}},
		{name: "no nameTemplate: delimiter and valueTemplate",
			configs: one(expandProp("Aux/zones", "metadata.labels['*.example.com/zone']", "", "$1:$2", " ")),
			want:    []linstorv1.Property{{Name: "Aux/zones", Value: "other:x topology:z1"}}},
		{name: "no key matches: no property",
			configs: one(expandProp("Aux/none", "metadata.labels['nothing.example.com/*']", "", "", ""), expandProp("Aux/none/", "metadata.labels['nothing.example.com/*']", "$1", "", "")),
			want:    nil},
		{name: "a literal of a generated name wins over the expansion",
			configs: one(expandProp("Aux/topology/", "metadata.labels['topology.example.com/*']", "$1", "", ""), linstorv1.NodeProperty{Name: "Aux/topology/zone", Value: "pinned"}),
			want:    []linstorv1.Property{{Name: "Aux/topology/rack", Value: "r7"}, {Name: "Aux/topology/row", Value: "$2"}, {Name: "Aux/topology/zone", Value: "pinned"}}},
		{name: "a valueFrom of a generated name wins even where its label is missing",
			configs: one(expandProp("Aux/topology/", "metadata.labels['topology.example.com/*']", "$1", "", ""),
				linstorv1.NodeProperty{Name: "Aux/topology/zone", ValueFrom: &linstorv1.NodePropertySource{NodeFieldRef: "metadata.labels['nope']"}}),
			want: []linstorv1.Property{{Name: "Aux/topology/rack", Value: "r7"}, {Name: "Aux/topology/row", Value: "$2"}}},
		{name: "two keys generating one name: the first by key order is kept",
			configs: one(expandProp("Aux/present/", "metadata.labels['feature.example.com/*']", "$2", "$1", "")),
			want:    []linstorv1.Property{{Name: "Aux/present/true", Value: "gpu-a100.present"}},
			skipped: `is also made from key "feature.example.com/gpu-a100.present"`},
		{name: "a generated name LINSTOR refuses is skipped, the rest applies",
			configs: one(expandProp("DrbdOptions/", "metadata.labels['topology.example.com/*']", "$1", "", ""), linstorv1.NodeProperty{Name: "Aux/x", Value: "1"}),
			want:    []linstorv1.Property{{Name: "Aux/x", Value: "1"}},
			skipped: `property "DrbdOptions/rack" (from label "topology.example.com/rack" of node n1) is refused`},
		{name: "a generated name over 256 characters is skipped",
			configs: one(expandProp("Aux/"+strings.Repeat("a", 250), "metadata.labels['topology.example.com/*']", "$1", "", "")),
			want:    nil,
			skipped: "longer than 256 characters"},
		{name: "a later configuration's expandFrom replaces an earlier literal of the same name",
			configs: []linstorv1.LinstorSatelliteConfiguration{
				cfg("a", nil, linstorv1.LinstorSatelliteConfigurationSpec{Properties: []linstorv1.NodeProperty{{Name: "Aux/zones", Value: "literal"}}}),
				cfg("b", nil, linstorv1.LinstorSatelliteConfigurationSpec{Properties: []linstorv1.NodeProperty{expandProp("Aux/zones", "metadata.labels['*.example.com/zone']", "", "", ";")}}),
			},
			want: []linstorv1.Property{{Name: "Aux/zones", Value: "x;z1"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Desired(cluster, tc.configs, node)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, d.Spec.Properties); diff != "" {
				t.Errorf("properties (-want +got):\n%s", diff)
			}
			owner := tc.configs[len(tc.configs)-1].Name
			got := strings.Join(d.Skipped[owner], "\n")
			if tc.skipped == "" && len(d.Skipped) > 0 {
				t.Errorf("skipped %v, want none", d.Skipped)
			}
			if !strings.Contains(got, tc.skipped) {
				t.Errorf("skipped for %s:\n%s\nwant it to contain %q", owner, got, tc.skipped)
			}
		})
	}
}
