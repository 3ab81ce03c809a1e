package satellite

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNodeBeingLost(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	at := func(ago time.Duration) metav1.Time { return metav1.NewTime(now.Add(-ago)) }
	ready := func(status corev1.ConditionStatus, ago time.Duration) corev1.NodeCondition {
		return corev1.NodeCondition{Type: corev1.NodeReady, Status: status, LastTransitionTime: at(ago)}
	}
	taint := func(key string, effect corev1.TaintEffect, ago time.Duration) corev1.Taint {
		added := at(ago)
		return corev1.Taint{Key: key, Effect: effect, TimeAdded: &added}
	}
	tolerateMaintenance := []corev1.Toleration{{Key: "maintenance", Operator: corev1.TolerationOpExists}}
	for _, tc := range []struct {
		name        string
		conditions  []corev1.NodeCondition
		taints      []corev1.Taint
		tolerations []corev1.Toleration
		want        bool
	}{
		{"ready, untainted", []corev1.NodeCondition{ready(corev1.ConditionTrue, time.Hour)}, nil, nil, false},
		{"NotReady a moment ago", []corev1.NodeCondition{ready(corev1.ConditionFalse, 10*time.Second)}, nil, nil, true},
		{"unreachable (Unknown) a moment ago", []corev1.NodeCondition{ready(corev1.ConditionUnknown, 10*time.Second)}, nil, nil, true},
		{"NotReady for an hour: not news", []corev1.NodeCondition{ready(corev1.ConditionFalse, time.Hour)}, nil, nil, false},
		{"no Ready condition yet", nil, nil, nil, false},
		{"untolerated NoExecute taint just added", []corev1.NodeCondition{ready(corev1.ConditionTrue, time.Hour)},
			[]corev1.Taint{taint("chaos", corev1.TaintEffectNoExecute, 5*time.Second)}, nil, true},
		{"out-of-service just added", []corev1.NodeCondition{ready(corev1.ConditionFalse, time.Hour)},
			[]corev1.Taint{taint(corev1.TaintNodeOutOfService, corev1.TaintEffectNoExecute, 5*time.Second)}, nil, true},
		{"tolerated NoExecute taint", []corev1.NodeCondition{ready(corev1.ConditionTrue, time.Hour)},
			[]corev1.Taint{taint("maintenance", corev1.TaintEffectNoExecute, 5*time.Second)}, tolerateMaintenance, false},
		{"NoSchedule taint (a cordon) evicts nothing", []corev1.NodeCondition{ready(corev1.ConditionTrue, time.Hour)},
			[]corev1.Taint{taint(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule, 5*time.Second)}, nil, false},
		{"untolerated NoExecute taint added an hour ago", []corev1.NodeCondition{ready(corev1.ConditionTrue, time.Hour)},
			[]corev1.Taint{taint("chaos", corev1.TaintEffectNoExecute, time.Hour)}, nil, false},
		{"a user's NoExecute taint (no TimeAdded: the API server records none)", []corev1.NodeCondition{ready(corev1.ConditionTrue, time.Hour)},
			[]corev1.Taint{{Key: "chaos", Effect: corev1.TaintEffectNoExecute}}, nil, true},
		{"unreachable NoExecute: the DaemonSet controller tolerates it for the pod", []corev1.NodeCondition{ready(corev1.ConditionUnknown, time.Hour)},
			[]corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := &corev1.Node{Spec: corev1.NodeSpec{Taints: tc.taints}, Status: corev1.NodeStatus{Conditions: tc.conditions}}
			if got := NodeBeingLost(node, tc.tolerations, now, 2*time.Minute); got != tc.want {
				t.Fatalf("NodeBeingLost = %t, want %t", got, tc.want)
			}
		})
	}
	if NodeBeingLost(nil, nil, now, time.Minute) {
		t.Fatal("no node: nothing is being lost")
	}
}
