package reconciler

import (
	"fmt"
	"unicode/utf8"

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

// MaxMessage bounds every message the operator writes to a status: the CRD allows
// 32768 bytes for a condition, and a status patch past a limit fails, freezing the
// status; thousands of resources in one message help nobody either.
const MaxMessage = 4096

// Bound cuts msg to MaxMessage bytes on a UTF-8 boundary and says how much was left out.
func Bound(msg string) string {
	if len(msg) <= MaxMessage {
		return msg
	}
	const marker = "… (%d more bytes)"
	cut := MaxMessage - len(marker) - 8
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + fmt.Sprintf(marker, len(msg)-cut)
}

// SetCondition is meta.SetStatusCondition with a bounded message.
func SetCondition(conds *[]metav1.Condition, c metav1.Condition) {
	c.Message = Bound(c.Message)
	meta.SetStatusCondition(conds, c)
}
