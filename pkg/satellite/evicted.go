package satellite

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// RestoreSettle is how long Kubernetes must report an evicted node and its satellite
// pod ready before the operator restores the node in LINSTOR. A node that just died is
// still reported Ready, and its pods too, until kube-controller-manager's
// node-monitor-grace-period passes (50 s by default; nodelifecycle config
// v1alpha1.SetDefaults_NodeLifecycleControllerConfiguration): two minutes outlast it
// with room, and are nothing next to LINSTOR's own AutoEvictAfterTime (60 minutes).
const RestoreSettle = 2 * time.Minute

// Evicted is what the operator sees of a node LINSTOR evicted.
//
// LINSTOR never connects to an EVICTED node: the reconnector drops it
// (ReconnectorTask.add and getFailedPeers skip Node.Flags.EVICTED), `node reconnect`
// refuses it (CtrlNodeApiCallHandler.reconnectNodesInTransaction: "evicted and will not
// be reconnected. Use node restore"), and only restoreNode hands it back to the
// reconnector. So LINSTOR reports it OFFLINE whether or not its satellite runs, and
// "LINSTOR sees it ONLINE" cannot be asked before the restore. (A controller that
// starts connects once to every node it knows, evicted ones included:
// ConnectNodesInitializer; so an evicted node can be ONLINE after a controller restart.)
// What stands in for it is what Kubernetes reports: the node Ready and the satellite pod
// Ready, its readiness probe being a TCP connect to the port LINSTOR connects to.
type Evicted struct {
	Node *corev1.Node
	// Pods of the node's satellite DaemonSet.
	Pods []corev1.Pod
	// Connection is LINSTOR's connection status of the node.
	Connection string
	// BackSince is when the operator first saw Kubernetes report the node and its
	// satellite pod ready, with the node evicted, and ever since; zero: not yet.
	BackSince time.Time
	// LastRestore is when the operator last restored this node; zero: not since it
	// started.
	LastRestore time.Time
}

// RestoreDecision says whether to restore an evicted node, or why it stays evicted.
type RestoreDecision struct {
	Restore bool
	// Back: Kubernetes reports the node and its satellite pod ready now (the caller
	// keeps BackSince from the first decision that says so, and forgets it otherwise).
	Back bool
	// Wait says why the node stays evicted ("" when it is restored).
	Wait string
	// RecheckAfter is when the decision may change by time alone (zero: only a change
	// of what is observed changes it).
	RecheckAfter time.Duration
}

// RestoreEvicted decides whether an evicted node is back, so that the operator restores
// it in LINSTOR. It is back when Kubernetes reports the node Ready and a satellite pod
// running and Ready on it, and either
//   - LINSTOR already sees the satellite ONLINE, or
//   - both have held for settle (a node that just died is reported ready a while
//     longer), and the pod became ready after the operator last restored the node. A
//     node evicted again after a restore did not come back (LINSTOR cannot reach the
//     satellite although Kubernetes can) or was evicted again by an admin: restoring
//     it again would only undo that. A restarted satellite pod tries again.
func RestoreEvicted(o Evicted, settle time.Duration, now time.Time) RestoreDecision {
	if ready, why := nodeReady(o.Node); !ready {
		return RestoreDecision{Wait: "LINSTOR evicted the node; it stays evicted while " + why}
	}
	pod, why := readySatellitePod(o.Pods, o.Node.Name)
	if pod == nil {
		return RestoreDecision{Wait: "LINSTOR evicted the node; it stays evicted while " + why}
	}
	if o.Connection == "ONLINE" {
		return RestoreDecision{Restore: true, Back: true}
	}
	readySince, _ := podReady(pod)
	if !o.LastRestore.IsZero() && !readySince.After(o.LastRestore) {
		return RestoreDecision{Back: true, Wait: fmt.Sprintf("LINSTOR evicted the node again after the operator restored it at %s, and its satellite pod %s has been ready since before then: "+
			"LINSTOR could not reach the satellite, or the node was evicted on purpose. Restore it with `linstor node restore %s` once LINSTOR can reach it, or restart the satellite pod to let the operator try again",
			o.LastRestore.UTC().Format(time.RFC3339), pod.Name, o.Node.Name)}
	}
	since := o.BackSince
	if since.IsZero() {
		since = now
	}
	if wait := since.Add(settle).Sub(now); wait > 0 {
		return RestoreDecision{Back: true, RecheckAfter: wait, Wait: fmt.Sprintf("LINSTOR evicted the node; Kubernetes reports it and its satellite pod %s ready since %s, and the operator restores it once that has held for %s",
			pod.Name, since.UTC().Format(time.RFC3339), settle)}
	}
	return RestoreDecision{Restore: true, Back: true}
}

// nodeReady: the node's Ready condition is True; otherwise what it says.
func nodeReady(node *corev1.Node) (bool, string) {
	for _, c := range node.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		if c.Status == corev1.ConditionTrue {
			return true, ""
		}
		return false, fmt.Sprintf("Kubernetes reports node %s Ready=%s (%s: %s)", node.Name, c.Status, c.Reason, c.Message)
	}
	return false, fmt.Sprintf("Kubernetes reports no Ready condition for node %s", node.Name)
}

// readySatellitePod is the satellite pod running and ready on the node; otherwise why
// there is none.
func readySatellitePod(pods []corev1.Pod, node string) (*corev1.Pod, string) {
	why := "no satellite pod runs on the node"
	for i := range pods {
		p := &pods[i]
		switch {
		case p.Spec.NodeName != node:
			continue
		case p.DeletionTimestamp != nil:
			why = fmt.Sprintf("the satellite pod %s is terminating", p.Name)
		case p.Status.Phase != corev1.PodRunning:
			why = fmt.Sprintf("the satellite pod %s is %s, not Running", p.Name, p.Status.Phase)
		case !isReady(p):
			why = fmt.Sprintf("the satellite pod %s is not Ready", p.Name)
		default:
			return p, ""
		}
	}
	return nil, why
}

// podReady: the pod's Ready condition is True, and since when.
func podReady(p *corev1.Pod) (time.Time, bool) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time, true
		}
	}
	return time.Time{}, false
}

func isReady(p *corev1.Pod) bool { _, ok := podReady(p); return ok }
