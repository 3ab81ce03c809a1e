package lifecycle

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	lapi "github.com/LINBIT/golinstor/client"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// MaxLostNodes is how many acknowledged nodes status.lostNodes holds (the CRD's limit).
const MaxLostNodes = 256

// SeenNode is what the controller saw of a node that an acknowledgement names or that
// status.lostNodes records.
type SeenNode struct {
	// InLinstor: LINSTOR has the node; Name is then LINSTOR's spelling and
	// ConnectionStatus what LINSTOR reports.
	InLinstor        bool
	Name             string
	ConnectionStatus string
	// KubernetesNode: a Kubernetes Node of that name exists.
	KubernetesNode bool
	// SatellitePod is the state of a satellite pod of the cluster bound to the node
	// that may run there (SatellitePodState): "Running", "Terminating", "Pending"; ""
	// when there is none.
	SatellitePod string
	// DrbdConnected names the replicas on other nodes whose DRBD reports its
	// connection to this node Connected (DrbdConnectedTo): "pvc-1 on node-a".
	DrbdConnected []string
}

// LostNodesInput is what the acknowledgement is decided from.
type LostNodesInput struct {
	// Annotation is names.AnnotationAcknowledgeLostNodes' value ("" when absent).
	Annotation string
	// Recorded is status.lostNodes.
	Recorded []linstorv1.LostNode
	// Seen maps the lower-cased name (LINSTOR's node names are case-insensitive) of
	// every node the annotation names or Recorded holds to what was seen of it; nil
	// when nothing could be looked at (LINSTOR did not answer).
	Seen map[string]SeenNode
	Now  time.Time
}

// LostNodesOutput is the decision.
type LostNodesOutput struct {
	// Lost is the new status.lostNodes, sorted by name.
	Lost []linstorv1.LostNode
	// NotHonoured says, per named node, why its acknowledgement is not honoured.
	NotHonoured []string
	// Events: an acknowledgement recorded or dropped (the controller says a refusal,
	// once per change).
	Events []Event
	// Unknown: nothing could be looked at; Lost is what was recorded.
	Unknown bool
}

// NeedsLostNodes says whether the acknowledgement must be looked at this pass.
func NeedsLostNodes(annotation string, recorded []linstorv1.LostNode) bool {
	return strings.TrimSpace(annotation) != "" || len(recorded) > 0
}

// AcknowledgedNames parses the annotation: names trimmed, empty ones dropped, each
// once (compared case-insensitively, as LINSTOR compares node names), in order.
func AcknowledgedNames(annotation string) []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range strings.Split(annotation, ",") {
		n = strings.TrimSpace(n)
		if n == "" || seen[strings.ToLower(n)] {
			continue
		}
		seen[strings.ToLower(n)] = true
		out = append(out, n)
	}
	return out
}

// LostNodes decides which acknowledged nodes are honoured. A node is honoured only while
// it is certainly gone: LINSTOR has it, reports it OFFLINE (no connection to any
// satellite process; UNKNOWN: no peer at all) and no satellite pod of the cluster runs
// on it. A node whose satellite answers in any way (ONLINE, CONNECTED,
// VERSION_MISMATCH, ...) or whose satellite pod runs is not gone, whatever the
// annotation says. An entry goes when the annotation no longer names it, when LINSTOR
// no longer has the node, or when it is no longer gone.
func LostNodes(in LostNodesInput) LostNodesOutput {
	var out LostNodesOutput
	recorded := map[string]linstorv1.LostNode{}
	for _, l := range in.Recorded {
		recorded[strings.ToLower(l.Name)] = l
	}
	if in.Seen == nil {
		// Nothing could be looked at: what was decided last stands.
		out.Unknown = NeedsLostNodes(in.Annotation, in.Recorded)
		out.Lost = append([]linstorv1.LostNode(nil), in.Recorded...)
		for i := range out.Lost {
			out.Lost[i] = *out.Lost[i].DeepCopy()
		}
		return out
	}
	named := map[string]bool{}
	for _, name := range AcknowledgedNames(in.Annotation) {
		key := strings.ToLower(name)
		named[key] = true
		seen := in.Seen[key]
		why := notGone(name, seen)
		prev, was := recorded[key]
		switch {
		case why != "":
			out.NotHonoured = append(out.NotHonoured, why)
			if was {
				out.Events = append(out.Events, Event{Warning: true, Reason: "LostNodeWithdrawn",
					Message: fmt.Sprintf("Node %s is no longer treated as lost, although %s names it: %s", prev.Name, names.AnnotationAcknowledgeLostNodes, why)})
			}
		case len(out.Lost) == MaxLostNodes:
			out.NotHonoured = append(out.NotHonoured, fmt.Sprintf("%s: at most %d nodes can be acknowledged as lost", name, MaxLostNodes))
		default:
			l := linstorv1.LostNode{Name: seen.Name, Message: lostMessage(seen)}
			if was && prev.AcknowledgedAt != nil {
				l.AcknowledgedAt = prev.AcknowledgedAt.DeepCopy()
			} else {
				now := metav1.NewTime(in.Now)
				l.AcknowledgedAt = &now
			}
			if !was {
				out.Events = append(out.Events, Event{Reason: "LostNodeAcknowledged", Message: fmt.Sprintf(
					"Node %s is acknowledged as gone for good (%s): %s", seen.Name, names.AnnotationAcknowledgeLostNodes, l.Message)})
			}
			out.Lost = append(out.Lost, l)
		}
	}
	for _, l := range in.Recorded {
		key := strings.ToLower(l.Name)
		switch {
		case named[key]:
		case !in.Seen[key].InLinstor:
			out.Events = append(out.Events, Event{Reason: "LostNodeForgotten", Message: fmt.Sprintf(
				"Node %s was acknowledged as lost and LINSTOR no longer has it", l.Name)})
		default:
			out.Events = append(out.Events, Event{Reason: "LostNodeForgotten", Message: fmt.Sprintf(
				"%s no longer names node %s: upgrades judge it again like every node", names.AnnotationAcknowledgeLostNodes, l.Name)})
		}
	}
	sort.Slice(out.Lost, func(i, j int) bool { return strings.ToLower(out.Lost[i].Name) < strings.ToLower(out.Lost[j].Name) })
	return out
}

// notGone says why a named node cannot be acknowledged as lost ("" when it can). OFFLINE
// only says that LINSTOR's controller cannot reach the satellite: the machine may be
// partitioned from it while its DRBD still replicates, so what its DRBD peers and its
// kubelet report counts as well.
func notGone(name string, n SeenNode) string {
	const fence = "fence or power off the machine first, then delete its Kubernetes Node"
	switch {
	case !n.InLinstor:
		return fmt.Sprintf("%s: LINSTOR has no node of that name", name)
	case n.ConnectionStatus != "OFFLINE" && n.ConnectionStatus != "UNKNOWN":
		return fmt.Sprintf("%s: LINSTOR reports it %s, so its satellite answers: it is not gone", n.Name, or(n.ConnectionStatus, "without a connection status"))
	case len(n.DrbdConnected) > 0:
		return fmt.Sprintf("%s: DRBD reports a connection to it as Connected (%s): its DRBD runs, whatever LINSTOR reports of its satellite; %s",
			n.Name, upTo(n.DrbdConnected, maxListed), fence)
	case n.SatellitePod == "Running":
		return fmt.Sprintf("%s: its satellite pod is Running; if the machine is gone for good, %s", n.Name, fence)
	case n.SatellitePod == "Terminating":
		return fmt.Sprintf("%s: its satellite pod is Terminating: its kubelet has not confirmed that it stopped, so it may still run; %s", n.Name, fence)
	case n.SatellitePod != "":
		return fmt.Sprintf("%s: a satellite pod is %s on it and starts if the machine comes back; %s", n.Name, n.SatellitePod, fence)
	}
	return ""
}

func lostMessage(n SeenNode) string {
	where := "its Kubernetes Node is gone"
	if n.KubernetesNode {
		where = "no satellite pod runs on its Kubernetes Node"
	}
	return fmt.Sprintf("LINSTOR reports it %s, no DRBD peer reports a connection to it, and %s; an upgrade's Preflight, Satellites and Verify proceed without it and its replicas, and its LinstorSatellite may be removed counting the surviving UpToDate replicas",
		n.ConnectionStatus, where)
}

// LostNames is the set of acknowledged nodes, lower-cased.
func LostNames(lost []linstorv1.LostNode) map[string]bool {
	out := make(map[string]bool, len(lost))
	for _, l := range lost {
		out[strings.ToLower(l.Name)] = true
	}
	return out
}

// WithoutLostNodes is what upgrade Preflight and Verify judge: LINSTOR's nodes, replicas
// and resync states without the acknowledged nodes. It drops the nodes, their replicas,
// and the DRBD connections of the other replicas to them (keyed by the peer's node name,
// Json.apiToResourceWithVolumes); a resource with a replica on a lost node is judged
// by the disk states of its other replicas only (sync-status is per resource, and
// LINSTOR's SatelliteResourceStateDrbdUtils.allResourcesUpToDate reads the same disk
// states the view shows for each replica). The inputs are not modified.
func WithoutLostNodes(lost map[string]bool, nodes []lapi.Node, resources []lapi.ResourceWithVolumes, syncing map[string]bool) (
	[]lapi.Node, []lapi.ResourceWithVolumes, map[string]bool) {
	if len(lost) == 0 {
		return nodes, resources, syncing
	}
	isLost := func(name string) bool { return lost[strings.ToLower(name)] }
	var keptNodes []lapi.Node
	for _, n := range nodes {
		if !isLost(n.Name) {
			keptNodes = append(keptNodes, n)
		}
	}
	touched := map[string]bool{} // resource definitions with a replica on a lost node
	var keptResources []lapi.ResourceWithVolumes
	for _, r := range resources {
		if isLost(r.NodeName) {
			touched[strings.ToLower(r.Name)] = true
			continue
		}
		if r.LayerObject != nil {
			layer := withoutPeers(*r.LayerObject, isLost)
			r.LayerObject = &layer
		}
		keptResources = append(keptResources, r)
	}
	keptSyncing := make(map[string]bool, len(syncing))
	for rd, s := range syncing {
		if !touched[strings.ToLower(rd)] {
			keptSyncing[rd] = s
		}
	}
	return keptNodes, keptResources, keptSyncing
}

// withoutPeers copies a layer tree without the DRBD connections to lost peers, at any
// depth (DRBD need not be the top layer).
func withoutPeers(l lapi.ResourceLayer, isLost func(string) bool) lapi.ResourceLayer {
	if l.Drbd != nil {
		d := *l.Drbd
		if d.Connections != nil {
			conns := make(map[string]lapi.DrbdConnection, len(d.Connections))
			for peer, c := range d.Connections {
				if !isLost(peer) {
					conns[peer] = c
				}
			}
			d.Connections = conns
		}
		l.Drbd = &d
	}
	if l.Children != nil {
		children := make([]lapi.ResourceLayer, len(l.Children))
		for i, c := range l.Children {
			children[i] = withoutPeers(c, isLost)
		}
		l.Children = children
	}
	return l
}

// SatellitePodState is the most alive state of the satellite pods bound to node (pods
// are the cluster's satellite pods): "Running"; "Terminating", a pod being deleted
// whose kubelet has not confirmed that its containers stopped (on a partitioned
// machine it never does, and they run on); "Pending", one its kubelet may start; ""
// when none may run (none, or Succeeded or Failed).
func SatellitePodState(pods []corev1.Pod, node string) string {
	rank := map[string]int{"": 0, "Pending": 1, "Terminating": 2, "Running": 3}
	state := ""
	for _, p := range pods {
		if !strings.EqualFold(p.Spec.NodeName, node) {
			continue
		}
		s := ""
		switch {
		case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
		case p.DeletionTimestamp != nil:
			s = "Terminating"
		case p.Status.Phase == corev1.PodRunning:
			s = "Running"
		default:
			s = "Pending"
		}
		if rank[s] > rank[state] {
			state = s
		}
	}
	return state
}

// DrbdConnectedTo names the replicas on other nodes whose DRBD reports its connection
// to node as Connected ("<resource> on <node>", in the view's order): node's DRBD is
// then alive, whatever LINSTOR reports of its satellite. The view keys a replica's
// connections by the peer's node name and marks only "Connected" as connected
// (Json.apiToResourceWithVolumes); a satellite that is not connected to the controller
// reports none (its connection states are unset when its event stream closes:
// EventProcessor.connectionClosed, ConnectionStateEventHandler), so these are fresh.
func DrbdConnectedTo(resources []lapi.ResourceWithVolumes, node string) []string {
	var out []string
	for _, r := range resources {
		if strings.EqualFold(r.NodeName, node) || r.LayerObject == nil {
			continue
		}
		if drbdConnected(*r.LayerObject, node) {
			out = append(out, r.Name+" on "+r.NodeName)
		}
	}
	return out
}

// drbdConnected: a DRBD layer at any depth reports a Connected connection to peer.
func drbdConnected(l lapi.ResourceLayer, peer string) bool {
	if l.Drbd != nil {
		for name, c := range l.Drbd.Connections {
			if strings.EqualFold(name, peer) && c.Connected {
				return true
			}
		}
	}
	for _, c := range l.Children {
		if drbdConnected(c, peer) {
			return true
		}
	}
	return false
}
