package satellite

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// Node-failure defaults: LINSTOR's own auto-evict waits 60 minutes
// (DrbdOptions/AutoEvictAfterTime) and stops above 34% disconnected nodes
// (AutoEvictMaxDisconnectedNodes).
const (
	DefaultEvictAfter        = time.Hour
	MinEvictAfter            = 5 * time.Minute
	DefaultMaxEvicted        = 1
	DefaultMaxOfflinePercent = 34
)

// TaintOutOfService is the taint an admin sets on a node that is shut down
// (non-graceful node shutdown, KEP-2268): Kubernetes then force-deletes its pods and
// detaches its volumes. The operator reads it the same way: the node will not come
// back on its own, so its replicas need not wait evictAfter.
const TaintOutOfService = "node.kubernetes.io/out-of-service"

// FailedNode is what the eviction decision sees of one node.
type FailedNode struct {
	Spec *linstorv1.NodeFailureSpec
	Node *corev1.Node
	// Connection is LINSTOR's connection status of the node.
	Connection string
	// Known: the replica health was read (not too long ago); Holds are the resources
	// that need the node (replicahealth Report.Holding); ConnectedPeers are nodes whose
	// DRBD still reports a connection to it.
	Known          bool
	Holds          []DrainHold
	ConnectedPeers []string
	// Evicted counts the nodes LINSTOR has EVICTED now; Offline and Satellites count
	// the satellite nodes LINSTOR reports OFFLINE and all of them.
	Evicted, Offline, Satellites int
}

// EvictDecision says whether to evict the node, or why not.
type EvictDecision struct {
	Evict bool
	// Wait says why a failed node is not evicted ("" for a healthy node).
	Wait         string
	RecheckAfter time.Duration
}

// DecideEviction applies the node-failure policy to one node. A node is evicted only
// when the policy is Evict, Kubernetes has reported it NotReady for evictAfter (or it
// is tainted out-of-service), LINSTOR reports its satellite OFFLINE (not merely
// VERSION_MISMATCH or connecting), no DRBD peer reports a connection to it (its
// satellite may be gone while DRBD there still serves a workload: LINSTOR's own
// auto-evict waits for that too, ReconnectorTask.getFailedPeers@v1.33.3), fewer than
// maxEvicted nodes are evicted, no more than maxOfflinePercent of the satellites are
// OFFLINE (many at once is an outage or a partition, not one failed node), and no
// resource needs the node: evicting a node whose replica may be the last UpToDate one
// leaves LINSTOR nothing to rebuild from.
func DecideEviction(in FailedNode, now time.Time) EvictDecision {
	ready, notReadySince := readiness(in.Node)
	if ready || in.Connection == "ONLINE" {
		return EvictDecision{}
	}
	if in.Connection != "OFFLINE" {
		return EvictDecision{Wait: fmt.Sprintf("the node is NotReady, and LINSTOR reports its satellite %s, not OFFLINE: nothing is moved", in.Connection)}
	}
	outOfService := hasTaint(in.Node, TaintOutOfService)
	spec := in.Spec
	if spec == nil || spec.Policy != linstorv1.NodeFailureEvict {
		return EvictDecision{Wait: "spec.nodeFailure.policy is Off: the node's replicas wait for it to come back"}
	}
	after := DefaultEvictAfter
	if spec.EvictAfter != nil {
		after = max(spec.EvictAfter.Duration, MinEvictAfter)
	}
	if !outOfService {
		if notReadySince.IsZero() {
			notReadySince = now
		}
		if wait := notReadySince.Add(after).Sub(now); wait > 0 {
			return EvictDecision{RecheckAfter: wait, Wait: fmt.Sprintf("the node is NotReady since %s and its satellite %s; it is evicted at %s (spec.nodeFailure.evictAfter %s) unless it comes back, or at once when tainted %s",
				notReadySince.UTC().Format(time.RFC3339), in.Connection, notReadySince.Add(after).UTC().Format(time.RFC3339), after, TaintOutOfService)}
		}
	}
	if !in.Known {
		return EvictDecision{RecheckAfter: time.Minute, Wait: "the node is due for eviction, but LINSTOR's resource states are unknown: nothing is moved on what is not seen"}
	}
	if len(in.ConnectedPeers) > 0 {
		return EvictDecision{Wait: fmt.Sprintf("the node is due for eviction, but DRBD on %s still reports a connection to it: DRBD there may still serve a workload, so its replicas stay",
			strings.Join(in.ConnectedPeers, ", "))}
	}
	if holds := in.Holds; len(holds) > 0 {
		var what []string
		for i, h := range holds {
			if i == 5 {
				what = append(what, fmt.Sprintf("and %d more", len(holds)-5))
				break
			}
			what = append(what, h.Resource+" ("+h.Reason+")")
		}
		return EvictDecision{Wait: "the node is due for eviction, but it may hold the last UpToDate copy of " + strings.Join(what, ", ") + ": its replicas wait for it"}
	}
	maxEvicted := DefaultMaxEvicted
	if spec.MaxEvicted != nil {
		maxEvicted = int(*spec.MaxEvicted)
	}
	if in.Evicted >= maxEvicted {
		return EvictDecision{Wait: fmt.Sprintf("the node is due for eviction, but %d node(s) are evicted already (spec.nodeFailure.maxEvicted %d)", in.Evicted, maxEvicted)}
	}
	maxOffline := DefaultMaxOfflinePercent
	if spec.MaxOfflinePercent != nil {
		maxOffline = int(*spec.MaxOfflinePercent)
	}
	if in.Satellites > 0 && in.Offline*100 > maxOffline*in.Satellites {
		return EvictDecision{Wait: fmt.Sprintf("the node is due for eviction, but %d of %d satellites are OFFLINE, more than spec.nodeFailure.maxOfflinePercent %d%%: an outage or a partition, not a failed node",
			in.Offline, in.Satellites, maxOffline)}
	}
	return EvictDecision{Evict: true}
}

// readiness: whether the node is Ready, and since when it is not (zero: unknown).
func readiness(node *corev1.Node) (bool, time.Time) {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue, c.LastTransitionTime.Time
		}
	}
	return false, time.Time{}
}

func hasTaint(node *corev1.Node, key string) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}
