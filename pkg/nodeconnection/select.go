package nodeconnection

import (
	"sort"

	corev1 "k8s.io/api/core/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// Pair is two node names, A < B.
type Pair struct{ A, B string }

// Pairs returns the selected pairs among nodes, sorted.
func Pairs(terms []linstorv1.SelectorTerm, nodes []corev1.Node) []Pair {
	sorted := append([]corev1.Node(nil), nodes...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var out []Pair
	for i := range sorted {
		for j := i + 1; j < len(sorted); j++ {
			if selected(terms, &sorted[i], &sorted[j]) {
				out = append(out, Pair{sorted[i].Name, sorted[j].Name})
			}
		}
	}
	return out
}

func selected(terms []linstorv1.SelectorTerm, a, b *corev1.Node) bool {
	if len(terms) == 0 {
		return true
	}
	for _, t := range terms {
		all := true
		for _, e := range t.MatchLabels {
			if !holds(e, a.Labels, b.Labels) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

func holds(e linstorv1.MatchLabelExpression, a, b map[string]string) bool {
	va, okA := a[e.Key]
	vb, okB := b[e.Key]
	in := func(v string) bool {
		for _, x := range e.Values {
			if x == v {
				return true
			}
		}
		return false
	}
	switch e.Op {
	case "", "Exists":
		return okA && okB
	case "DoesNotExist":
		return !okA && !okB
	case "In":
		return okA && okB && in(va) && in(vb)
	case "NotIn":
		return !(okA && in(va)) && !(okB && in(vb))
	case "Same":
		return okA && okB && va == vb
	case "NotSame":
		return okA && okB && va != vb
	}
	return false
}

// Desired returns the connection properties a LinstorNodeConnection wants on pair p.
func Desired(spec *linstorv1.LinstorNodeConnectionSpec, p Pair) map[string]string {
	out := map[string]string{}
	for _, prop := range spec.Properties {
		out[prop.Name] = prop.Value
	}
	for _, path := range spec.Paths {
		out["Paths/"+path.Name+"/"+p.A] = path.Interface
		out["Paths/"+path.Name+"/"+p.B] = path.Interface
	}
	return out
}
