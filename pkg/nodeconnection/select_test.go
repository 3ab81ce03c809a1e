package nodeconnection

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

func node(name string, labels map[string]string) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func TestPairs(t *testing.T) {
	nodes := []corev1.Node{
		node("c", map[string]string{"zone": "b", "tier": "ssd"}),
		node("a", map[string]string{"zone": "a", "tier": "ssd"}),
		node("b", map[string]string{"zone": "a"}),
	}
	expr := func(key, op string, values ...string) []linstorv1.SelectorTerm {
		return []linstorv1.SelectorTerm{{MatchLabels: []linstorv1.MatchLabelExpression{{Key: key, Op: linstorv1.MatchOperator(op), Values: values}}}}
	}
	cases := []struct {
		name  string
		terms []linstorv1.SelectorTerm
		want  []Pair
	}{
		{"empty selects all", nil, []Pair{{"a", "b"}, {"a", "c"}, {"b", "c"}}},
		{"Exists", expr("tier", "Exists"), []Pair{{"a", "c"}}},
		{"DoesNotExist", expr("rack", "DoesNotExist"), []Pair{{"a", "b"}, {"a", "c"}, {"b", "c"}}},
		{"In", expr("zone", "In", "a"), []Pair{{"a", "b"}}},
		{"NotIn", expr("zone", "NotIn", "a"), nil},
		{"NotIn with absent label", expr("tier", "NotIn", "hdd"), []Pair{{"a", "b"}, {"a", "c"}, {"b", "c"}}},
		{"Same", expr("zone", "Same"), []Pair{{"a", "b"}}},
		{"NotSame", expr("zone", "NotSame"), []Pair{{"a", "c"}, {"b", "c"}}},
		{"terms are ORed", append(expr("zone", "Same"), expr("tier", "Exists")...), []Pair{{"a", "b"}, {"a", "c"}}},
		{"expressions are ANDed", []linstorv1.SelectorTerm{{MatchLabels: []linstorv1.MatchLabelExpression{{Key: "zone", Op: "NotSame"}, {Key: "tier", Op: "Exists"}}}}, []Pair{{"a", "c"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, Pairs(tc.terms, nodes)); d != "" {
				t.Errorf("pairs (-want +got):\n%s", d)
			}
		})
	}
}

func TestDesired(t *testing.T) {
	spec := &linstorv1.LinstorNodeConnectionSpec{
		Properties: []linstorv1.Property{{Name: "DrbdOptions/Net/protocol", Value: "A"}},
		Paths:      []linstorv1.ConnectionPath{{Name: "data", Interface: "data-nic"}},
	}
	want := map[string]string{"DrbdOptions/Net/protocol": "A", "Paths/data/a": "data-nic", "Paths/data/c": "data-nic"}
	if d := cmp.Diff(want, Desired(spec, Pair{"a", "c"})); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}
