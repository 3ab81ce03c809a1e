package phases

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// SetUnknownIfAbsent sets conditions not yet observed to Unknown, so every owned
// condition is present after every pass.
func SetUnknownIfAbsent(conds *[]metav1.Condition, generation int64, types ...string) {
	for _, t := range types {
		if meta.FindStatusCondition(*conds, t) == nil {
			meta.SetStatusCondition(conds, metav1.Condition{Type: t, Status: metav1.ConditionUnknown, Reason: linstorv1.ReasonNotObserved, ObservedGeneration: generation})
		}
	}
}
