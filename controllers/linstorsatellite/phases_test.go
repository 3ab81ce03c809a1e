package linstorsatellite

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	lapi "github.com/LINBIT/golinstor/client"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/linstor/observer"
)

// TestLooksForOnline: when the observer is asked to look every second for a satellite
// to come ONLINE. The satellite pod's readiness is not an input: the DaemonSet's status
// trails the pod, and LINSTOR connects to the satellite as soon as it listens.
func TestLooksForOnline(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	available := func(status metav1.ConditionStatus, ago time.Duration) *metav1.Condition {
		return &metav1.Condition{Type: linstorv1.ConditionAvailable, Status: status, LastTransitionTime: metav1.NewTime(now.Add(-ago))}
	}
	for _, tc := range []struct {
		name       string
		connection string
		available  *metav1.Condition
		want       bool
	}{
		{"a new satellite, never observed", "OFFLINE", nil, true},
		{"registered, connecting", "CONNECTED", available(metav1.ConditionFalse, time.Second), true},
		{"registered a minute ago, its pod not reported ready yet", "OFFLINE", available(metav1.ConditionFalse, time.Minute), true},
		{"went OFFLINE a moment ago", "OFFLINE", available(metav1.ConditionFalse, 10*time.Second), true},
		{"OFFLINE for longer than settling: the observer's own pace", "OFFLINE", available(metav1.ConditionFalse, settling+time.Second), false},
		{"ONLINE", "ONLINE", available(metav1.ConditionTrue, time.Hour), false},
		{"ONLINE, the status not saved yet", "ONLINE", available(metav1.ConditionFalse, time.Second), false},
		{"another version: looked for while settling (the satellite is being replaced)", "VERSION_MISMATCH", available(metav1.ConditionFalse, time.Second), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := looksForOnline(tc.connection, tc.available, now); got != tc.want {
				t.Errorf("looksForOnline(%s) = %t, want %t", tc.connection, got, tc.want)
			}
		})
	}
}

// countingSource serves one snapshot and counts the cycles that read it.
type countingSource struct {
	snap  *observer.Snapshot
	reads atomic.Int32
}

func (c *countingSource) Read(context.Context, *linstorv1.LinstorCluster, bool) (*observer.Snapshot, error) {
	c.reads.Add(1)
	return c.snap, nil
}

func (c *countingSource) Follow(ctx context.Context, _ *linstorv1.LinstorCluster, _ func(string)) error {
	<-ctx.Done()
	return ctx.Err()
}

// A satellite registered but not ONLINE, whose DaemonSet does not report its pod ready
// yet (kube-controller-manager updates it late on a loaded control plane), makes the
// observer look again within a second or two, not at its 30 s interval: LINSTOR sends
// no event when it connects to a satellite, and the node's pools wait for that cycle.
// Measured at 100 nodes before: LINSTOR had 37 more satellites ONLINE than the
// operator had seen for 12 s, with no cycle at all (bench timeline, seconds 27-38).
func TestObserveLinstorLooksSoonForAConnectingSatellite(t *testing.T) {
	src := &countingSource{snap: observer.NewSnapshot("1.33.3", []lapi.Node{{Name: "n1", Type: "SATELLITE", ConnectionStatus: "OFFLINE"}}, nil)}
	obs := observer.New(src, 30*time.Second, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { _ = obs.Start(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	cluster := &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", UID: "u"}}
	obs.Observe(cluster)
	key := types.NamespacedName{Namespace: "ns", Name: "c"}
	waitFor(t, 5*time.Second, func() bool { return obs.Snapshot(key) != nil })

	r := &Reconciler{Observer: obs}
	s := statusScope(func(s *scope) {
		s.key, s.snap, s.fresh = key, obs.Snapshot(key), true
		// The DaemonSet's status has not caught up with the pod: not an input any more.
	})
	before := src.reads.Load()
	if _, err := r.observeLinstor(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if s.connection != "OFFLINE" {
		t.Fatalf("connection %q", s.connection)
	}
	waitFor(t, 3*time.Second, func() bool { return src.reads.Load() > before })
}

func waitFor(t *testing.T, limit time.Duration, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s", limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestUntoleratedNoExecute(t *testing.T) {
	node := func(taints ...corev1.Taint) *corev1.Node { return &corev1.Node{Spec: corev1.NodeSpec{Taints: taints}} }
	dead := corev1.Taint{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoExecute}
	custom := corev1.Taint{Key: "maintenance", Effect: corev1.TaintEffectNoExecute}
	noSchedule := corev1.Taint{Key: "maintenance", Effect: corev1.TaintEffectNoSchedule}
	tolerateUnreachable := []corev1.Toleration{{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}
	for _, tc := range []struct {
		name string
		node *corev1.Node
		want bool
	}{
		{"no taints", node(), false},
		{"a tolerated NoExecute", node(dead), false},
		{"an untolerated NoExecute evicts the guard", node(dead, custom), true},
		{"NoSchedule does not evict a bound pod", node(noSchedule), false},
	} {
		if got := untoleratedNoExecute(tc.node, tolerateUnreachable); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
