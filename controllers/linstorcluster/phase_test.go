package linstorcluster

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// The console's list of instances shows status.phase: one word from the conditions.
func TestClusterPhase(t *testing.T) {
	cond := func(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason}
	}
	available := cond(linstorv1.ConditionAvailable, metav1.ConditionTrue, linstorv1.ReasonAsExpected)
	unavailable := cond(linstorv1.ConditionAvailable, metav1.ConditionFalse, linstorv1.ReasonSatellitesNotReady)
	degraded := cond(linstorv1.ConditionDegraded, metav1.ConditionTrue, linstorv1.ReasonInvalidSpec)
	healthy := cond(linstorv1.ConditionDegraded, metav1.ConditionFalse, linstorv1.ReasonAsExpected)
	upgrading := cond(linstorv1.ConditionProgressing, metav1.ConditionTrue, linstorv1.ReasonUpgradeInProgress)
	satellitesComing := cond(linstorv1.ConditionProgressing, metav1.ConditionTrue, linstorv1.ReasonSatellitesNotReady)
	for _, tc := range []struct {
		name       string
		conditions []metav1.Condition
		want       linstorv1.ClusterPhase
	}{
		{"nothing observed yet", nil, linstorv1.ClusterProgressing},
		{"starting", []metav1.Condition{unavailable, healthy, satellitesComing}, linstorv1.ClusterProgressing},
		{"available", []metav1.Condition{available, healthy}, linstorv1.ClusterAvailable},
		{"available while satellites join", []metav1.Condition{available, healthy, satellitesComing}, linstorv1.ClusterAvailable},
		{"degraded beats available", []metav1.Condition{available, degraded}, linstorv1.ClusterDegraded},
		{"upgrading explains the rest", []metav1.Condition{unavailable, degraded, upgrading}, linstorv1.ClusterUpgrading},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := clusterPhase(tc.conditions); got != tc.want {
				t.Errorf("clusterPhase = %s, want %s", got, tc.want)
			}
		})
	}
}
