package linstorcluster

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// A cluster the operator may not manage says so in every condition, and blocks no
// operator upgrade: nothing of it is running under this operator.
func TestInactiveClusterConditions(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*scope)
		reason string
		says   string
	}{
		{"outside the operator's namespace", func(s *scope) { s.outsideNamespace = "linstor" }, linstorv1.ReasonWrongNamespace, `namespace "linstor"`},
		{"a duplicate", func(s *scope) { s.duplicateOf = "linstor/first" }, linstorv1.ReasonDuplicateCluster, "linstor/first is older"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "elsewhere", Name: "linstor", Generation: 2}}
			s := newScope(c)
			tc.mutate(s)
			setStatus(c, s, true)
			want := map[string]metav1.ConditionStatus{
				linstorv1.ConditionAvailable:   metav1.ConditionFalse,
				linstorv1.ConditionDegraded:    metav1.ConditionTrue,
				linstorv1.ConditionUpgradeable: metav1.ConditionTrue,
			}
			for typ, status := range want {
				cond := meta.FindStatusCondition(c.Status.Conditions, typ)
				if cond == nil || cond.Status != status {
					t.Fatalf("%s = %+v, want %s", typ, cond, status)
				}
				if typ != linstorv1.ConditionUpgradeable && (cond.Reason != tc.reason || !strings.Contains(cond.Message, tc.says)) {
					t.Errorf("%s: reason %q message %q, want %q saying %q", typ, cond.Reason, cond.Message, tc.reason, tc.says)
				}
			}
		})
	}
}
