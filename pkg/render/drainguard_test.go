package render

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/images"
	"github.com/linstor-operator/linstor-operator/pkg/names"
)

// drainGuardFor renders node's guard from the satellite pod spec of a cluster whose
// satellites tolerate every NoSchedule taint, unschedulable included.
func drainGuardFor(t *testing.T, node string) (*linstorv1.LinstorCluster, *linstorv1.LinstorSatellite, *corev1.Pod) {
	t.Helper()
	c := cluster(linstorv1.LinstorClusterSpec{Satellite: &linstorv1.SatelliteSpec{ComponentSpec: linstorv1.ComponentSpec{Tolerations: []corev1.Toleration{
		{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "storage", Effect: corev1.TaintEffectNoSchedule},
	}}}})
	sat := &linstorv1.LinstorSatellite{ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: "storage"}}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{OSImage: "Ubuntu 24.04.1 LTS"}}}
	spec, err := SatellitePodSpec(c, sat, n, images.Default())
	if err != nil {
		t.Fatal(err)
	}
	return c, sat, DrainGuardPod(c, sat, spec)
}

func TestDrainGuardGolden(t *testing.T) {
	c, sat, pod := drainGuardFor(t, "node-1")
	golden(t, "drainguard", Objects{pod,
		DrainGuardPDB(c, sat, false, "1 resource needs this node: pvc-a: last UpToDate replica"),
		DrainGuardPDB(c, sat, true, "No resource needs this node's replicas")})
}

// The guard runs where its satellite runs, tolerating what the satellite tolerates,
// but never a cordon; its budget counts it and no other node's guard.
func TestDrainGuard(t *testing.T) {
	c, sat, pod := drainGuardFor(t, "node-1")
	if pod.Spec.NodeName != "node-1" {
		t.Errorf("guard bound to %q, want node-1", pod.Spec.NodeName)
	}
	if got, want := pod.Spec.Containers[0].Image, images.Default().Image(images.LinstorSatellite); got != want {
		t.Errorf("guard image %q, want the satellite's %q", got, want)
	}
	tolerated := map[string]bool{}
	for _, tol := range pod.Spec.Tolerations {
		tolerated[tol.Key] = true
	}
	for _, key := range []string{"dedicated", names.TaintLostQuorum, corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		if !tolerated[key] {
			t.Errorf("guard does not tolerate %s, which the satellite tolerates", key)
		}
	}
	if tolerated[corev1.TaintNodeUnschedulable] {
		t.Error("guard tolerates node.kubernetes.io/unschedulable")
	}
	sel, err := metav1.LabelSelectorAsSelector(DrainGuardPDB(c, sat, false, "").Spec.Selector)
	if err != nil {
		t.Fatal(err)
	}
	if !sel.Matches(k8slabels.Set(pod.Labels)) {
		t.Error("the budget does not select its guard")
	}
	_, _, other := drainGuardFor(t, "node-2")
	if sel.Matches(k8slabels.Set(other.Labels)) {
		t.Error("node-1's budget selects node-2's guard")
	}
	// The budget flips by an integer minAvailable alone.
	for allowed, want := range map[bool]int{false: 1, true: 0} {
		pdb := DrainGuardPDB(c, sat, allowed, "why")
		if pdb.Spec.MaxUnavailable != nil || pdb.Spec.MinAvailable.IntValue() != want || pdb.Spec.MinAvailable.Type != 0 {
			t.Errorf("allowed=%t: minAvailable %v maxUnavailable %v, want integer minAvailable %d", allowed, pdb.Spec.MinAvailable, pdb.Spec.MaxUnavailable, want)
		}
		if pdb.Annotations[names.AnnotationDrainReason] != "why" {
			t.Errorf("allowed=%t: no reason annotation", allowed)
		}
	}
}
