package satellite

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

var failNow = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

func failedNode(ready corev1.ConditionStatus, since time.Duration, taints ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: ready, LastTransitionTime: metav1.NewTime(failNow.Add(-since))}}}}
	for _, t := range taints {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: t, Effect: corev1.TaintEffectNoExecute})
	}
	return n
}

// held: n1 may hold pvc-b's last good copy.
var held = []DrainHold{{Resource: "pvc-b", Reason: "state unknown and no other UpToDate replica"}}

func TestDecideEviction(t *testing.T) {
	evict := &linstorv1.NodeFailureSpec{Policy: linstorv1.NodeFailureEvict}
	tests := []struct {
		name      string
		in        FailedNode
		wantEvict bool
		wait      string // substring of Wait; "" means none
		recheck   time.Duration
	}{
		{name: "a Ready node is left alone",
			in: FailedNode{Spec: evict, Node: failedNode(corev1.ConditionTrue, 2*time.Hour), Connection: "OFFLINE", Known: true, Satellites: 3, Offline: 1}},
		{name: "NotReady but ONLINE in LINSTOR: DRBD there still works, nothing moves",
			in: FailedNode{Spec: evict, Node: failedNode(corev1.ConditionFalse, 2*time.Hour), Connection: "ONLINE", Known: true, Satellites: 3}},
		{name: "policy unset is Off: the replicas wait, and the status says so",
			in:   FailedNode{Node: failedNode(corev1.ConditionFalse, 2*time.Hour), Connection: "OFFLINE", Known: true, Satellites: 3, Offline: 1},
			wait: "policy is Off"},
		{name: "policy Off, even out-of-service: nothing moves without a policy",
			in:   FailedNode{Spec: &linstorv1.NodeFailureSpec{Policy: linstorv1.NodeFailureOff}, Node: failedNode(corev1.ConditionFalse, time.Minute, TaintOutOfService), Connection: "OFFLINE", Known: true, Satellites: 3, Offline: 1},
			wait: "policy is Off"},
		{name: "NotReady for less than evictAfter (default 1h): wait, recheck when due",
			in:   FailedNode{Spec: evict, Node: failedNode(corev1.ConditionUnknown, 20*time.Minute), Connection: "OFFLINE", Known: true, Satellites: 3, Offline: 1},
			wait: "evicted at 2026-11-27T12:40:00Z", recheck: 40 * time.Minute},
		{name: "evictAfter below the minimum counts as 5m",
			in:   FailedNode{Spec: &linstorv1.NodeFailureSpec{Policy: linstorv1.NodeFailureEvict, EvictAfter: &metav1.Duration{Duration: time.Second}}, Node: failedNode(corev1.ConditionFalse, time.Minute), Connection: "OFFLINE", Known: true, Satellites: 3, Offline: 1},
			wait: "evictAfter 5m0s", recheck: 4 * time.Minute},
		{name: "failed long enough, nothing needs it: evict",
			in:        FailedNode{Spec: evict, Node: failedNode(corev1.ConditionFalse, 61*time.Minute), Connection: "OFFLINE", Known: true, Satellites: 3, Offline: 1},
			wantEvict: true},
		{name: "out-of-service: the admin says it is shut down, no wait",
			in:        FailedNode{Spec: evict, Node: failedNode(corev1.ConditionFalse, time.Minute, TaintOutOfService), Connection: "OFFLINE", Known: true, Satellites: 3, Offline: 1},
			wantEvict: true},
		{name: "a Ready node tainted out-of-service is not evicted: Kubernetes says it runs",
			in: FailedNode{Spec: evict, Node: failedNode(corev1.ConditionTrue, time.Hour, TaintOutOfService), Connection: "OFFLINE", Known: true, Satellites: 3, Offline: 1}},
		{name: "never below one UpToDate copy: the node may hold pvc-b's last one",
			in:   FailedNode{Spec: evict, Node: failedNode(corev1.ConditionFalse, 2*time.Hour), Connection: "OFFLINE", Known: true, Holds: held, Satellites: 3, Offline: 1},
			wait: "last UpToDate copy of pvc-b"},
		{name: "VERSION_MISMATCH is not OFFLINE: the satellite runs, nothing moves",
			in:   FailedNode{Spec: evict, Node: failedNode(corev1.ConditionFalse, 2*time.Hour), Connection: "VERSION_MISMATCH", Known: true, Satellites: 3, Offline: 1},
			wait: "not OFFLINE"},
		{name: "DRBD on a peer still connected to it: its data is live (LINSTOR's auto-evict waits too)",
			in:   FailedNode{Spec: evict, Node: failedNode(corev1.ConditionFalse, 2*time.Hour), Connection: "OFFLINE", Known: true, ConnectedPeers: []string{"n2"}, Satellites: 3, Offline: 1},
			wait: "DRBD on n2 still reports a connection"},
		{name: "health unknown: nothing is moved on what is not seen",
			in:   FailedNode{Spec: evict, Node: failedNode(corev1.ConditionFalse, 2*time.Hour), Connection: "OFFLINE", Satellites: 3, Offline: 1},
			wait: "unknown", recheck: time.Minute},
		{name: "bounded: one node evicted already (default maxEvicted 1)",
			in:   FailedNode{Spec: evict, Node: failedNode(corev1.ConditionFalse, 2*time.Hour), Connection: "OFFLINE", Known: true, Satellites: 4, Offline: 1, Evicted: 1},
			wait: "1 node(s) are evicted already"},
		{name: "maxEvicted 2 allows a second",
			in:        FailedNode{Spec: &linstorv1.NodeFailureSpec{Policy: linstorv1.NodeFailureEvict, MaxEvicted: ptr.To[int32](2)}, Node: failedNode(corev1.ConditionFalse, 2*time.Hour), Connection: "OFFLINE", Known: true, Satellites: 4, Offline: 1, Evicted: 1},
			wantEvict: true},
		{name: "an outage, not a failed node: 2 of 3 satellites OFFLINE",
			in:   FailedNode{Spec: evict, Node: failedNode(corev1.ConditionFalse, 2*time.Hour), Connection: "OFFLINE", Known: true, Satellites: 3, Offline: 2},
			wait: "2 of 3 satellites are OFFLINE"},
		{name: "a node without a Ready condition waits the full time from now",
			in:   FailedNode{Spec: evict, Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, Connection: "OFFLINE", Known: true, Satellites: 3, Offline: 1},
			wait: "evicted at", recheck: time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := DecideEviction(tt.in, failNow)
			if d.Evict != tt.wantEvict {
				t.Fatalf("evict %v, want %v (wait %q)", d.Evict, tt.wantEvict, d.Wait)
			}
			if (tt.wait == "") != (d.Wait == "") || !strings.Contains(d.Wait, tt.wait) {
				t.Errorf("wait %q, want it to say %q", d.Wait, tt.wait)
			}
			if d.RecheckAfter != tt.recheck {
				t.Errorf("recheck after %s, want %s", d.RecheckAfter, tt.recheck)
			}
		})
	}
}
