package webhooks

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateNodeSelector checks a LinstorCluster's spec.nodeAffinity as the Pod API checks
// a required node affinity: the operator would otherwise find out only when deciding
// which nodes get satellites, and then keeps every satellite as it is (pkg/satellite).
func validateNodeSelector(path *field.Path, sel *corev1.NodeSelector) field.ErrorList {
	if sel == nil {
		return nil
	}
	terms := path.Child("nodeSelectorTerms")
	if len(sel.NodeSelectorTerms) == 0 {
		return field.ErrorList{field.Required(terms, "must have at least one node selector term; remove nodeAffinity to select every node")}
	}
	var errs field.ErrorList
	for i, term := range sel.NodeSelectorTerms {
		errs = append(errs, validateNodeSelectorTerm(terms.Index(i), term)...)
	}
	return errs
}
