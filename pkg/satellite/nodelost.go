package satellite

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
)

// NodeBeingLost says whether Kubernetes shows the node being lost: its Ready condition
// turned False or Unknown within window before now, or it has a NoExecute taint the
// satellite's pod does not tolerate (the taint manager evicts it; out-of-service
// included). LINSTOR reports the satellite ONLINE until its own connection fails, and
// sends no event then: while this holds and LINSTOR still says ONLINE, the observer
// looks every second. A node that stays NotReady while its satellite keeps running (a
// kubelet down) costs one window, not a steady state: only a recent change counts. An
// untolerated NoExecute taint cannot last with the satellite ONLINE (its pod is
// evicted); the API server records no time for a taint a user adds, so one without
// TimeAdded counts, one with it (the node lifecycle controller's) only while recent.
// The DaemonSet controller's own tolerations count as the pod's.
func NodeBeingLost(node *corev1.Node, tolerations []corev1.Toleration, now time.Time, window time.Duration) bool {
	if node == nil {
		return false
	}
	recent := func(t time.Time) bool { return !t.IsZero() && now.Sub(t) < window }
	if ready, since := readiness(node); !ready && recent(since) {
		return true
	}
	tolerated := daemonPodTolerations(corev1.PodSpec{Tolerations: tolerations})
	for i := range node.Spec.Taints {
		t := &node.Spec.Taints[i]
		if t.Effect != corev1.TaintEffectNoExecute || t.TimeAdded != nil && !recent(t.TimeAdded.Time) {
			continue
		}
		if !corev1helpers.TolerationsTolerateTaint(tolerated, t) {
			return true
		}
	}
	return false
}
