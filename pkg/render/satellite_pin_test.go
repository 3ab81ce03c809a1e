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
	for _, tc := range []struct {
		name     string
		affinity *corev1.Affinity
		patch    []byte
	}{
		{"no affinity", nil, nil},
		{"required terms of the user (ORed)", sameZoneA, nil},
		{"preferred terms only", preferOnly, nil},
		{"a patch naming another node", nil, patchToOtherNode},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := &linstorv1.SatelliteSpec{ComponentSpec: linstorv1.ComponentSpec{Affinity: tc.affinity}}
			if tc.patch != nil {
				spec.PodTemplate = &runtime.RawExtension{Raw: tc.patch}
			}
			c := cluster(linstorv1.LinstorClusterSpec{Satellite: spec})
			for _, own := range nodes {
				objs, err := Satellite(c, &linstorv1.LinstorSatellite{ObjectMeta: metav1.ObjectMeta{Name: own.Name, Namespace: "storage"}}, own, images.Default())
				if err != nil {
					t.Fatal(err)
				}
				pod := &corev1.Pod{Spec: objs[0].(*appsv1.DaemonSet).Spec.Template.Spec}
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
