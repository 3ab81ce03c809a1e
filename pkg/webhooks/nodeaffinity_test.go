package webhooks

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

func TestClusterNodeAffinity(t *testing.T) {
	term := func(reqs ...corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: reqs}
	}
	cases := []struct {
		name string
		sel  *corev1.NodeSelector
		want string // field refused; "" for none
	}{
		{"unset", nil, ""},
		{"a valid term", &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term(corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}})}}, ""},
		{"no terms", &corev1.NodeSelector{}, "spec.nodeAffinity.nodeSelectorTerms"},
		{"an unknown operator", &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term(corev1.NodeSelectorRequirement{Key: "zone", Operator: "in", Values: []string{"a"}})}},
			"spec.nodeAffinity.nodeSelectorTerms[0].matchExpressions[0].operator"},
		{"matchFields on a label", &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}}},
			"spec.nodeAffinity.nodeSelectorTerms[0].matchFields[0].key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := SpecErrors(&linstorv1.LinstorCluster{Spec: linstorv1.LinstorClusterSpec{NodeAffinity: tc.sel}})
			var got []string
			for _, e := range errs {
				if strings.HasPrefix(e.Field, "spec.nodeAffinity") {
					got = append(got, e.Field)
				}
			}
			if (tc.want == "") != (len(got) == 0) || (tc.want != "" && got[0] != tc.want) {
				t.Fatalf("refused %v, want %q: %v", got, tc.want, errs)
			}
		})
	}
}
