package satellite

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
)

// NodeBeingLost says whether Kubernetes shows, within window before now, the node being
// lost: its Ready condition turned False or Unknown, or it got a NoExecute taint the
// satellite's pod does not tolerate (the taint manager evicts it; out-of-service
// included). LINSTOR reports the satellite ONLINE until its own connection fails, and
// sends no event then: while this holds and LINSTOR still says ONLINE, the observer
// looks every second. Only recent changes count, so a node that stays NotReady while
// its satellite keeps running (a kubelet down) costs one window, not a steady state.
func NodeBeingLost(node *corev1.Node, tolerations []corev1.Toleration, now time.Time, window time.Duration) bool {
	if node == nil {
		return false
	}
	recent := func(t time.Time) bool { return !t.IsZero() && now.Sub(t) < window }
	if ready, since := readiness(node); !ready && recent(since) {
		return true
	}
	for i := range node.Spec.Taints {
		t := &node.Spec.Taints[i]
		if t.Effect != corev1.TaintEffectNoExecute || t.TimeAdded == nil || !recent(t.TimeAdded.Time) {
			continue
		}
		if !corev1helpers.TolerationsTolerateTaint(tolerations, t) {
			return true
		}
	}
	return false
}
