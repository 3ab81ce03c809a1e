package satellite

import (
	"fmt"
	"strings"

	"github.com/linstor-operator/linstor-operator/pkg/linstorstate"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	lapi "github.com/LINBIT/golinstor/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// RemovalSafety is what a satellite's Delete or Evacuate is judged by before it asks
// LINSTOR to delete or evacuate its node.
type RemovalSafety struct {
	// Node is the LINSTOR node; ConnectionStatus what LINSTOR reports of it.
	Node             string
	ConnectionStatus string
	// Lost holds the lower-cased names of the nodes acknowledged lost (the
	// LinstorCluster's status.lostNodes, lifecycle.LostNames).
	Lost map[string]bool
	// Resources holds every replica of every resource with a replica on Node.
	Resources []lapi.ResourceWithVolumes
}

// NodeLost says whether Node is acknowledged as gone for good and LINSTOR still reaches
// no satellite there (an acknowledgement recorded before the node came back is stale):
// its removal counts the surviving replicas and uses LINSTOR's node lost.
func (in RemovalSafety) NodeLost() bool {
	return in.Lost[strings.ToLower(in.Node)] && gone(in.ConnectionStatus)
}

// Hold says why a removal waits: Reason is a condition reason, "" when it may go.
type Hold struct {
	Reason  string
	Message string
}

// DeleteHeld says whether the LINSTOR node may be deleted now: the last step of Delete
// and of Evacuate. It waits
//   - while the satellite is away but its DRBD still runs (linstorstate.RunningWhileOffline):
//     a replica there may be in use, and its peers would drop it; an acknowledgement
//     as lost does not change that (it may be stale: DRBD answering says the machine
//     is back);
//   - for a node acknowledged lost, while a resource on it has no surviving copy
//     (linstorstate.LostNodeCopies);
//   - while the node holds the only up-to-date, connected copy of a resource
//     (linstorstate.LastCopies): LINSTOR would delete it with its data.
func DeleteHeld(in RemovalSafety) Hold {
	if running := linstorstate.RunningWhileOffline(in.Node, in.ConnectionStatus, in.Resources); len(running) > 0 {
		return runningHold("not deleting", in, running)
	}
	if in.NodeLost() {
		return lostHold(in)
	}
	last := linstorstate.LastCopies(in.Node, in.Resources)
	if len(last) == 0 {
		return Hold{}
	}
	var advice string
	switch {
	case gone(in.ConnectionStatus):
		advice = "waiting for the node to come back; " + lostHint(in.Node)
	case len(linstorstate.EvacuationHazards(in.Node, in.Resources)) > 0:
		advice = "waiting for the replication links to come back and the replicas to be UpToDate; deletionPolicy Evacuate would not move them now either"
	default:
		advice = "move or delete those volumes, or use deletionPolicy Evacuate, which moves them first"
	}
	return Hold{Reason: linstorv1.ReasonHoldsLastReplica, Message: fmt.Sprintf(
		"node %s holds the only up-to-date copy of %s: deleting it would destroy that data; %s", in.Node, describeCopies(last), advice)}
}

// EvacuateHeld says whether LINSTOR may be asked to evacuate the node now (first, and
// again when a replica was stuck). It waits
//   - while the satellite is away but its DRBD still runs: LINSTOR deletes a diskless
//     replica (and one with enough peers) at once, cutting off what uses it there;
//   - for a node acknowledged lost, while a resource on it has no surviving copy;
//   - while the satellite is away and the node holds the only copy of a resource:
//     nothing can be copied from it;
//   - while LINSTOR's evacuation could lose data (linstorstate.EvacuationHazards): the
//     node's replica is the last copy and not UpToDate, or a peer LINSTOR counts as
//     UpToDate is cut off from it.
func EvacuateHeld(in RemovalSafety) Hold {
	if running := linstorstate.RunningWhileOffline(in.Node, in.ConnectionStatus, in.Resources); len(running) > 0 {
		return runningHold("not evacuating", in, running)
	}
	if in.NodeLost() {
		return lostHold(in)
	}
	if in.ConnectionStatus != "ONLINE" {
		if last := linstorstate.LastCopies(in.Node, in.Resources); len(last) > 0 {
			msg := fmt.Sprintf("not evacuating node %s yet: its satellite is %s and the node holds the only up-to-date copy of %s, so nothing can be copied from it; waiting for the node to come back",
				in.Node, or(in.ConnectionStatus, "not connected"), describeCopies(last))
			if gone(in.ConnectionStatus) {
				msg += "; " + lostHint(in.Node)
			}
			return Hold{Reason: linstorv1.ReasonHoldsLastReplica, Message: msg}
		}
	}
	hazards := linstorstate.EvacuationHazards(in.Node, in.Resources)
	if len(hazards) == 0 {
		return Hold{}
	}
	msg := fmt.Sprintf("not evacuating node %s yet: LINSTOR's evacuation could lose the newest data of %s; waiting for the replication links to come back and the replicas to be UpToDate",
		in.Node, describeCopies(hazards))
	if gone(in.ConnectionStatus) {
		msg += "; " + lostHint(in.Node)
	}
	return Hold{Reason: linstorv1.ReasonHoldsLastReplica, Message: msg}
}

func lostHold(in RemovalSafety) Hold {
	copies := linstorstate.LostNodeCopies(in.Node, in.Lost, in.Resources)
	if len(copies) == 0 {
		return Hold{}
	}
	return Hold{Reason: linstorv1.ReasonHoldsLastReplica, Message: fmt.Sprintf(
		"node %s is acknowledged lost (%s), but no survivor is a safe copy of %s: removing the node would drop that data for good; bring the machine back, or delete those volumes",
		in.Node, names.AnnotationAcknowledgeLostNodes, describeCopies(copies))}
}

func runningHold(what string, in RemovalSafety, running []linstorstate.LastCopy) Hold {
	return Hold{Reason: linstorv1.ReasonNodeOffline, Message: fmt.Sprintf(
		"%s node %s: the satellite is %s while its peers still see its DRBD connected: DRBD runs there, and whether a replica there is in use is unknown (%s); waiting for the satellite to come back",
		what, in.Node, or(in.ConnectionStatus, "not connected"), describeCopies(running))}
}

// gone: LINSTOR reaches no satellite process on the node, the states a node can be
// acknowledged lost in (lifecycle.LostNodes).
func gone(status string) bool { return status == "OFFLINE" || status == "UNKNOWN" }

func lostHint(node string) string {
	return fmt.Sprintf("if it is gone for good, acknowledge it on the LinstorCluster (annotation %s=%s): its removal then counts the surviving UpToDate replicas as the copies",
		names.AnnotationAcknowledgeLostNodes, node)
}

// describeCopies names the resources and why, bounded as listed is.
func describeCopies(copies []linstorstate.LastCopy) string {
	names := make([]string, len(copies))
	for i, c := range copies {
		names[i] = fmt.Sprintf("%s (%s)", c.Resource, c.Why)
	}
	return listed(names)
}

func or(s, dflt string) string {
	if s == "" {
		return dflt
	}
	return s
}
