package webhooks

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

func TestNodePropertySources(t *testing.T) {
	expand := func(name, ref, nameTemplate, valueTemplate, delimiter string) linstorv1.NodeProperty {
		return linstorv1.NodeProperty{Name: name, ExpandFrom: &linstorv1.NodePropertyExpansion{NodeFieldRef: ref, NameTemplate: nameTemplate, ValueTemplate: valueTemplate, Delimiter: delimiter}}
	}
	const zone = "metadata.labels['topology.example.com/*']"
	cases := []struct {
		name  string
		props []linstorv1.NodeProperty
		want  []string // field paths refused, in order; none when empty
	}{
		{"one property per key", []linstorv1.NodeProperty{expand("Aux/topology/", zone, "$1", "$2", "")}, nil},
		{"joined, annotations, a suffix", []linstorv1.NodeProperty{expand("Aux/zones", "metadata.annotations['site/*.zone']", "", "$1=$2", ";")}, nil},
		{"a literal sharing a name with the expansion's prefix and output", []linstorv1.NodeProperty{
			expand("Aux/topology/", zone, "$1", "", ""), {Name: "Aux/topology/zone", Value: "pinned"},
		}, nil},
		{"no * in the key", []linstorv1.NodeProperty{expand("Aux/zone", "metadata.labels['topology.example.com/zone']", "", "", "")},
			[]string{"spec.properties[0].expandFrom.nodeFieldRef"}},
		{"two * in the key", []linstorv1.NodeProperty{expand("Aux/zone", "metadata.labels['*/*']", "", "", "")},
			[]string{"spec.properties[0].expandFrom.nodeFieldRef"}},
		{"not a label or annotation", []linstorv1.NodeProperty{expand("Aux/zone", "spec.taints['*']", "", "", "")},
			[]string{"spec.properties[0].expandFrom.nodeFieldRef"}},
		{"an unknown template variable", []linstorv1.NodeProperty{expand("Aux/t/", zone, "$3", "${2}", "")},
			[]string{"spec.properties[0].expandFrom.nameTemplate", "spec.properties[0].expandFrom.valueTemplate"}},
		{"a name template with characters no property name has", []linstorv1.NodeProperty{expand("Aux/t/", zone, "$1 x", "", "")},
			[]string{"spec.properties[0].expandFrom.nameTemplate"}},
		{"nameTemplate and delimiter together", []linstorv1.NodeProperty{expand("Aux/t/", zone, "$1", "", ",")},
			[]string{"spec.properties[0].expandFrom.delimiter"}},
		{"a joined property LINSTOR does not know", []linstorv1.NodeProperty{expand("Foo/zones", zone, "", "", "")},
			[]string{"spec.properties[0].name"}},
		{"a * in valueFrom", []linstorv1.NodeProperty{{Name: "Aux/zone", ValueFrom: &linstorv1.NodePropertySource{NodeFieldRef: zone}}},
			[]string{"spec.properties[0].valueFrom.nodeFieldRef"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &linstorv1.LinstorSatelliteConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: linstorv1.LinstorSatelliteConfigurationSpec{Properties: tc.props}}
			// Through SpecErrors, as the webhook: the whole LSC validation.
			errs := SpecErrors(cfg)
			var got []string
			for _, e := range errs {
				got = append(got, e.Field)
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Fatalf("refused %v, want %v: %v", got, tc.want, errs)
			}
		})
	}
}
