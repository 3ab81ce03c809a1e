package satellite

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

func term(reqs ...corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchExpressions: reqs}
}

func req(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

func requiredAffinity(terms ...corev1.NodeSelectorTerm) *linstorv1.SatelliteSpec {
	return &linstorv1.SatelliteSpec{ComponentSpec: linstorv1.ComponentSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms},
	}}}}
}

// Every rule that keeps a satellite pod off a node keeps the LinstorSatellite off it too,
// matched as the scheduler matches: terms ORed, expressions of a term ANDed.
func TestSelected(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"storage": "ssd", "zone": "a"}}}
	cases := []struct {
		name    string
		spec    linstorv1.LinstorClusterSpec
		want    bool
		wantErr string
	}{
		{name: "nothing set selects every node", want: true},
		{name: "cluster nodeSelector matches", spec: linstorv1.LinstorClusterSpec{NodeSelector: map[string]string{"storage": "ssd"}}, want: true},
		{name: "cluster nodeSelector does not match", spec: linstorv1.LinstorClusterSpec{NodeSelector: map[string]string{"storage": "hdd"}}},
		{name: "nodeAffinity: one of two terms matches", want: true, spec: linstorv1.LinstorClusterSpec{NodeAffinity: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
			term(req("zone", corev1.NodeSelectorOpIn, "b")), term(req("zone", corev1.NodeSelectorOpIn, "a", "c")),
		}}}},
		{name: "nodeAffinity: expressions of a term are ANDed", spec: linstorv1.LinstorClusterSpec{NodeAffinity: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
			term(req("zone", corev1.NodeSelectorOpIn, "a"), req("storage", corev1.NodeSelectorOpNotIn, "ssd")),
		}}}},
		{name: "nodeAffinity: DoesNotExist", spec: linstorv1.LinstorClusterSpec{NodeAffinity: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
			term(req("storage", corev1.NodeSelectorOpDoesNotExist)),
		}}}},
		{name: "nodeAffinity: matchFields on the node name", want: true, spec: linstorv1.LinstorClusterSpec{NodeAffinity: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
			{MatchFields: []corev1.NodeSelectorRequirement{req("metadata.name", corev1.NodeSelectorOpIn, "n1")}},
		}}}},
		{name: "nodeAffinity: matchFields takes one name per requirement, as in a pod", wantErr: "must have one element",
			spec: linstorv1.LinstorClusterSpec{NodeAffinity: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
				{MatchFields: []corev1.NodeSelectorRequirement{req("metadata.name", corev1.NodeSelectorOpIn, "n1", "n2")}},
			}}}},
		{name: "nodeAffinity: matchFields on another name", spec: linstorv1.LinstorClusterSpec{NodeAffinity: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
			{MatchFields: []corev1.NodeSelectorRequirement{req("metadata.name", corev1.NodeSelectorOpIn, "n2")}},
		}}}},
		{name: "nodeAffinity: an empty term matches nothing", spec: linstorv1.LinstorClusterSpec{NodeAffinity: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{}}}}},
		{name: "nodeAffinity with no terms cannot be decided", wantErr: "spec.nodeAffinity: nodeSelectorTerms is empty",
			spec: linstorv1.LinstorClusterSpec{NodeAffinity: &corev1.NodeSelector{}}},
		{name: "nodeAffinity: an unparsable term that nothing else outvotes is an error", wantErr: "spec.nodeAffinity",
			spec: linstorv1.LinstorClusterSpec{NodeAffinity: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term(req("zone", "Near", "a"))}}}},
		{name: "nodeAffinity: a matching term outvotes an unparsable one (as the scheduler)", want: true,
			spec: linstorv1.LinstorClusterSpec{NodeAffinity: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term(req("zone", "Near", "a")), term(req("zone", corev1.NodeSelectorOpExists))}}}},
		{name: "nodeSelector and nodeAffinity both apply", spec: linstorv1.LinstorClusterSpec{NodeSelector: map[string]string{"storage": "hdd"},
			NodeAffinity: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term(req("zone", corev1.NodeSelectorOpExists))}}}},
		{name: "satellite pods' nodeSelector excludes the node", spec: linstorv1.LinstorClusterSpec{Satellite: &linstorv1.SatelliteSpec{ComponentSpec: linstorv1.ComponentSpec{NodeSelector: map[string]string{"zone": "b"}}}}},
		{name: "satellite pods' nodeSelector matches", want: true, spec: linstorv1.LinstorClusterSpec{Satellite: &linstorv1.SatelliteSpec{ComponentSpec: linstorv1.ComponentSpec{NodeSelector: map[string]string{"zone": "a"}}}}},
		{name: "satellite pods' required affinity excludes the node", spec: linstorv1.LinstorClusterSpec{Satellite: requiredAffinity(term(req("zone", corev1.NodeSelectorOpNotIn, "a")))}},
		{name: "satellite pods' required affinity matches", want: true, spec: linstorv1.LinstorClusterSpec{Satellite: requiredAffinity(term(req("zone", corev1.NodeSelectorOpIn, "a")))}},
		{name: "satellite pods' preferred affinity does not decide", want: true, spec: linstorv1.LinstorClusterSpec{Satellite: &linstorv1.SatelliteSpec{ComponentSpec: linstorv1.ComponentSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 1, Preference: term(req("zone", corev1.NodeSelectorOpIn, "b"))}},
		}}}}}},
		{name: "satellite pods' affinity with no terms cannot be decided", wantErr: "spec.satellite.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution",
			spec: linstorv1.LinstorClusterSpec{Satellite: requiredAffinity()}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Name: "linstor"}, Spec: tc.spec}
			got, err := Selected(c, node)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Selected error = %v, want one containing %q", err, tc.wantErr)
				}
				if got {
					t.Fatal("an undecidable rule selected the node")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("Selected = %t, want %t", got, tc.want)
			}
			// Desired follows the same decision.
			d, err := Desired(c, nil, node)
			if err != nil || d.Selected != tc.want {
				t.Fatalf("Desired: selected %t (%v), want %t", d.Selected, err, tc.want)
			}
		})
	}
}

// A node that stops being selected by any of the new inputs goes through the same guard
// as one the nodeSelector drops: the satellites of most of the cluster are held, not
// removed. This replays what the LinstorCluster controller does (phases.go
// reconcileSatellites): the wanted set from Desired, then RemovalHeld on the rest.
func TestNarrowingSelectionIsHeld(t *testing.T) {
	var nodes []corev1.Node
	for i := 0; i < 10; i++ {
		nodes = append(nodes, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%d", i), Labels: map[string]string{"rack": fmt.Sprintf("r%d", i%5)}}})
	}
	only := func(racks ...string) *corev1.NodeSelector {
		return &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term(req("rack", corev1.NodeSelectorOpIn, racks...))}}
	}
	cases := []struct {
		name     string
		spec     linstorv1.LinstorClusterSpec
		removing int
		held     bool
	}{
		{"unchanged", linstorv1.LinstorClusterSpec{}, 0, false},
		{"nodeAffinity drops one rack (2 of 10)", linstorv1.LinstorClusterSpec{NodeAffinity: only("r0", "r1", "r2", "r3")}, 2, false},
		{"nodeAffinity keeps one rack (8 of 10)", linstorv1.LinstorClusterSpec{NodeAffinity: only("r0")}, 8, true},
		{"satellite affinity keeps one rack (8 of 10)", linstorv1.LinstorClusterSpec{Satellite: requiredAffinity(term(req("rack", corev1.NodeSelectorOpIn, "r1")))}, 8, true},
		{"satellite nodeSelector keeps one rack (8 of 10)", linstorv1.LinstorClusterSpec{Satellite: &linstorv1.SatelliteSpec{ComponentSpec: linstorv1.ComponentSpec{NodeSelector: map[string]string{"rack": "r2"}}}}, 8, true},
		{"nodeAffinity with a typo in its operator removes nothing", linstorv1.LinstorClusterSpec{NodeAffinity: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term(req("rack", "in", "r0"))}}}, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Name: "linstor"}, Spec: tc.spec}
			removal := Removal{Total: len(nodes)}
			for i := range nodes {
				d, err := Desired(c, nil, &nodes[i])
				// As the controller: an undecidable node keeps its satellite.
				if err == nil && !d.Selected {
					removal.Removing = append(removal.Removing, nodes[i].Name)
				}
			}
			if len(removal.Removing) != tc.removing {
				t.Fatalf("%d satellites to remove, want %d: %v", len(removal.Removing), tc.removing, removal.Removing)
			}
			for _, name := range removal.Removing {
				removal.Name = name
				if held := RemovalHeld(removal); (held != "") != tc.held {
					t.Fatalf("removal of %s held: %q, want held=%t", name, held, tc.held)
				}
			}
		})
	}
}

// A configuration's nodeAffinity narrows the nodes it applies to, with its nodeSelector;
// a broken one keeps the node's satellite as it is (an error) instead of rebuilding it
// without that configuration's pools.
func TestConfigurationNodeAffinity(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"disk": "nvme", "zone": "a"}}}
	cluster := &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Name: "linstor"}}
	pool := []linstorv1.StoragePool{{Name: "fast", FileThinPool: &linstorv1.FilePool{}}}
	cases := []struct {
		name      string
		selector  map[string]string
		affinity  *corev1.NodeSelector
		wantPools int
		wantErr   string
	}{
		{"no affinity", nil, nil, 1, ""},
		{"affinity matches", nil, &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term(req("disk", corev1.NodeSelectorOpIn, "nvme", "ssd"))}}, 1, ""},
		{"affinity does not match", nil, &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term(req("disk", corev1.NodeSelectorOpIn, "hdd"))}}, 0, ""},
		{"second term matches", nil, &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term(req("disk", corev1.NodeSelectorOpIn, "hdd")), term(req("zone", corev1.NodeSelectorOpExists))}}, 1, ""},
		{"selector and affinity are ANDed", map[string]string{"zone": "b"}, &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term(req("disk", corev1.NodeSelectorOpExists))}}, 0, ""},
		{"matchFields on the node name", nil, &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{req("metadata.name", corev1.NodeSelectorOpIn, "n1")}}}}, 1, ""},
		{"no terms is an error, not an empty selection", nil, &corev1.NodeSelector{}, 0, "LinstorSatelliteConfiguration nvme: spec.nodeAffinity: nodeSelectorTerms is empty"},
		{"a bad operator is an error", nil, &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term(req("disk", "in", "nvme"))}}, 0, "LinstorSatelliteConfiguration nvme: spec.nodeAffinity"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := linstorv1.LinstorSatelliteConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "nvme"},
				Spec: linstorv1.LinstorSatelliteConfigurationSpec{NodeSelector: tc.selector, NodeAffinity: tc.affinity, StoragePools: pool}}
			d, err := Desired(cluster, []linstorv1.LinstorSatelliteConfiguration{cfg}, node)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Spec.StoragePools) != tc.wantPools {
				t.Fatalf("%d pools, want %d (applied %v)", len(d.Spec.StoragePools), tc.wantPools, d.Applied)
			}
		})
	}
}
