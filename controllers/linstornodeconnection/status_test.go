package linstornodeconnection

import (
	"errors"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// Configured names the most important reason the connection is not configured, and
// observes the generation only when nothing is left to do.
func TestConfiguredCondition(t *testing.T) {
	tooMany := fmt.Errorf("sync: %w", &tooManyPairsError{pairs: MaxPairs + 1})
	linstorDown := errors.New("listing node connections: connection refused")
	const fenced = "LINSTOR writes wait (3 node pairs to configure): an upgrade runs"
	const progress = "150 node pairs still to configure (at most 100 LINSTOR requests per pass)"
	for _, tc := range []struct {
		name    string
		scope   scope
		reason  string
		message string
	}{
		{name: "configured", scope: scope{synced: true}, reason: linstorv1.ReasonAsExpected},
		{name: "misplaced", scope: scope{misplaced: "outside the operator's namespace linstor"},
			reason: linstorv1.ReasonWrongNamespace, message: "outside the operator's namespace linstor"},
		{name: "too many pairs: the spec must change", scope: scope{synced: true, syncErr: tooMany},
			reason: linstorv1.ReasonInvalidSpec, message: tooMany.Error()},
		{name: "LINSTOR failed", scope: scope{synced: true, syncErr: linstorDown},
			reason: linstorv1.ReasonLinstorError, message: linstorDown.Error()},
		{name: "writes fenced", scope: scope{synced: true, fenced: fenced},
			reason: linstorv1.ReasonLinstorWritesFenced, message: fenced},
		{name: "in batches", scope: scope{synced: true, progress: progress},
			reason: linstorv1.ReasonReconciling, message: progress},
		// Priorities: the first that applies is said.
		{name: "an error beats the fence", scope: scope{synced: true, syncErr: linstorDown, fenced: fenced},
			reason: linstorv1.ReasonLinstorError, message: linstorDown.Error()},
		{name: "the fence beats the batches", scope: scope{synced: true, fenced: fenced, progress: progress},
			reason: linstorv1.ReasonLinstorWritesFenced, message: fenced},
		{name: "misplaced beats everything", scope: scope{misplaced: "elsewhere", synced: true, syncErr: tooMany},
			reason: linstorv1.ReasonWrongNamespace, message: "elsewhere"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lnc := &linstorv1.LinstorNodeConnection{ObjectMeta: metav1.ObjectMeta{Name: "c", Generation: 4}}
			lnc.Status.ObservedGeneration = 3
			s := tc.scope
			s.lnc = lnc
			setConfiguredCondition(lnc, &s)
			cond := meta.FindStatusCondition(lnc.Status.Conditions, linstorv1.ConditionConfigured)
			wantStatus, wantObserved := metav1.ConditionFalse, int64(3)
			if tc.reason == linstorv1.ReasonAsExpected {
				wantStatus, wantObserved = metav1.ConditionTrue, 4
			}
			if cond == nil || cond.Status != wantStatus || cond.Reason != tc.reason || cond.Message != tc.message || cond.ObservedGeneration != 4 {
				t.Fatalf("Configured = %+v, want %s %s %q", cond, wantStatus, tc.reason, tc.message)
			}
			if lnc.Status.ObservedGeneration != wantObserved {
				t.Errorf("observedGeneration %d, want %d", lnc.Status.ObservedGeneration, wantObserved)
			}
		})
	}
}
