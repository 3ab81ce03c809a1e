package render

import (
	"encoding/json"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/images"
)

// Whatever affinity the user sets or a patch leaves, a satellite's DaemonSet can only
// ever schedule on its own node: it matches its node and no other, checked with the
// scheduler's own required-affinity evaluation.
func TestSatelliteDaemonSetSchedulesOnlyOnItsNode(t *testing.T) {
	zone := func(z string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-" + z, Labels: map[string]string{"zone": z, "storage": "yes"}}}
	}
	nodes := []*corev1.Node{zone("a"), zone("b"), zone("c")}
	sameZoneA := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{
			{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}},
			{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "storage", Operator: corev1.NodeSelectorOpExists}}},
		}}}}
	preferOnly := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{
		{Weight: 1, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"b"}}}}}}}}
	patchToOtherNode, _ := json.Marshal(map[string]any{"spec": map[string]any{"affinity": map[string]any{"nodeAffinity": map[string]any{
		"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{"nodeSelectorTerms": []any{
			map[string]any{"matchFields": []any{map[string]any{"key": "metadata.name", "operator": "In", "values": []string{"node-c"}}}},
		}}}}}})
	toOtherNode := `{"spec": {"template": {"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-c"]}]}]}}}}}}}`
	for _, tc := range []struct {
		name     string
		affinity *corev1.Affinity
		patch    []byte
		patches  []linstorv1.Patch
	}{
		{"no affinity", nil, nil, nil},
		{"required terms of the user (ORed)", sameZoneA, nil, nil},
		{"preferred terms only", preferOnly, nil, nil},
		{"a podTemplate naming another node", nil, patchToOtherNode, nil},
		{"a strategic-merge patch naming another node", nil, nil, []linstorv1.Patch{{Patch: toOtherNode}}},
		{"a JSON 6902 patch replacing the affinity", nil, nil, []linstorv1.Patch{{Patch: `[{"op": "replace", "path": "/spec/template/spec/affinity", "value": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "Exists"}]}]}}}}]`}}},
		{"a JSON 6902 patch removing the affinity", sameZoneA, nil, []linstorv1.Patch{{Patch: `[{"op": "remove", "path": "/spec/template/spec/affinity"}]`}}},
		{"a patch setting nodeName", nil, nil, []linstorv1.Patch{{Patch: `{"spec": {"template": {"spec": {"nodeName": "node-c"}}}}`}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := &linstorv1.SatelliteSpec{ComponentSpec: linstorv1.ComponentSpec{Affinity: tc.affinity}}
			if tc.patch != nil {
				spec.PodTemplate = &runtime.RawExtension{Raw: tc.patch}
			}
			c := cluster(linstorv1.LinstorClusterSpec{Satellite: spec})
			for _, own := range nodes {
				sat := &linstorv1.LinstorSatellite{ObjectMeta: metav1.ObjectMeta{Name: own.Name, Namespace: "storage"}, Spec: linstorv1.LinstorSatelliteSpec{Patches: tc.patches}}
				objs, err := Satellite(c, sat, own, images.Default())
				if err != nil {
					t.Fatal(err)
				}
				if objs, err = WithSatellitePatches(c, sat, objs); err != nil {
					t.Fatal(err)
				}
				podSpec := objs[0].(*appsv1.DaemonSet).Spec.Template.Spec
				if podSpec.NodeName != "" {
					t.Fatalf("the DaemonSet of %s names node %q", own.Name, podSpec.NodeName)
				}
				pod := &corev1.Pod{Spec: podSpec}
				required := nodeaffinity.GetRequiredNodeAffinity(pod)
				for _, n := range nodes {
					ok, err := required.Match(n)
					if err != nil {
						t.Fatal(err)
					}
					if ok != (n.Name == own.Name) {
						t.Errorf("the DaemonSet of %s matches %s: %v", own.Name, n.Name, ok)
					}
				}
			}
		})
	}
}
