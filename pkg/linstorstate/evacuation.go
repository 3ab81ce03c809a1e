package linstorstate

import (
	"fmt"
	"sort"
	"strings"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"
)

// EvacuationHazards lists (sorted) the resources on node that LINSTOR's evacuation
// could lose. The operator starts no evacuation while this list is not empty.
//
// LINSTOR deletes the evacuated replica at once, instead of moving it, when it is not
// UpToDate (CtrlNodeApiCallHandler.evacuateNodeInTrasaction: allVolumesUpToDate, then
// deleteResource) or when enough peers report UpToDate. So node's diskful DRBD replica
// is a hazard when it reports a state other than UpToDate (Outdated, Inconsistent, a
// detached disk's Diskless) while no other replica is a safe copy (LastCopies): that
// replica holds the best data left. An unknown state counts as UpToDate there
// (SatelliteResourceStateDrbdUtils.allVolumesUpToDate, defaultIfUnknown), so LINSTOR
// moves such a replica.
//
// LINSTOR counts peers by the disk state they report (getUpToDatePeerCount: diskful,
// not DELETE, EVACUATE or INACTIVE, every volume UpToDate), and a DRBD 9 replica cut
// off by a failed link still reports UpToDate: with enough such peers LINSTOR deletes
// node's replica at once, otherwise its replacement may resync from the stale copy. So
// a peer that reports UpToDate but is not connected to node's replica is a hazard too.
// Peers whose state is unknown or not UpToDate are not counted by LINSTOR, so they
// are none here.
func EvacuationHazards(node string, resources []lapi.ResourceWithVolumes) []LastCopy {
	local := map[string]lapi.ResourceWithVolumes{}
	for _, r := range resources {
		if equalFold(r.NodeName, node) && Diskful(r) && HasDRBD(r) && !HasFlag(r.Flags, lapiconst.FlagDelete) {
			local[r.Name] = r
		}
	}
	reasons := map[string][]string{}
	lastWhy := map[string]string{}
	for _, c := range LastCopies(node, resources) {
		lastWhy[c.Resource] = c.Why
	}
	for name, r := range local {
		if state := notUpToDate(r); state != "" && lastWhy[name] != "" {
			reasons[name] = append(reasons[name], fmt.Sprintf(
				"%s's replica is %s and LINSTOR deletes a replica that is not UpToDate instead of moving it, while no other replica is a safe copy (%s)",
				r.NodeName, state, lastWhy[name]))
		}
	}
	for _, r := range resources {
		here, ok := local[r.Name]
		if !ok || equalFold(r.NodeName, node) || !Diskful(r) || !HasDRBD(r) || !reportsUpToDate(r) ||
			HasFlag(r.Flags, lapiconst.FlagDelete) || HasFlag(r.Flags, lapiconst.FlagEvacuate) || HasFlag(r.Flags, "INACTIVE") {
			continue
		}
		if ok, seen := replicating(here, r); !ok {
			reasons[r.Name] = append(reasons[r.Name], fmt.Sprintf("%s reports UpToDate but is not connected to %s (%s)", r.NodeName, node, seen))
		}
	}
	var out []LastCopy
	for name, why := range reasons {
		sort.Strings(why)
		out = append(out, LastCopy{Resource: name, Why: strings.Join(why, "; ")})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Resource < out[j].Resource })
	return out
}

// notUpToDate is the first known disk state of r's volumes other than UpToDate, ""
// when there is none (unknown states are not judged: LINSTOR takes them as UpToDate).
func notUpToDate(r lapi.ResourceWithVolumes) string {
	for _, v := range r.Volumes {
		if s := v.State.DiskState; s != "" && !strings.EqualFold(s, "UpToDate") {
			return s
		}
	}
	return ""
}

// Evacuation is what is left on an evacuating node, by resource name (sorted).
type Evacuation struct {
	// Moving: a replacement replica elsewhere is resyncing.
	Moving []string
	// InUse: the replica is in use on the node; LINSTOR removes it only once the
	// workload has moved away.
	InUse []string
	// Waiting: nothing is known to move, but replicas elsewhere report no state (their
	// satellite is not ONLINE): whether one of them is a replacement that moves is
	// unknown until they report. Treated as stuck: LINSTOR is asked again.
	Waiting []Waiting
	// Stuck: nothing is moving and nothing holds it; LINSTOR found no place for it and
	// does not try again by itself.
	Stuck []string
	// NotReplicated: the resource has no DRBD layer; LINSTOR does not evacuate it
	// (WARN_NOT_EVACUATING, CtrlNodeApiCallHandler.evacuateNodeInTrasaction). Its data
	// lives only on this node.
	NotReplicated []string
}

// Waiting is a resource on an evacuating node and the nodes (sorted) whose replicas of
// it report no state.
type Waiting struct {
	Resource string
	Nodes    []string
}

// Empty: nothing is left on the node.
func (e Evacuation) Empty() bool {
	return len(e.Moving)+len(e.InUse)+len(e.Waiting)+len(e.Stuck)+len(e.NotReplicated) == 0
}

// resyncing: DRBD disk states that change by themselves. A replacement LINSTOR places
// is Inconsistent until its resync from the good copies ends; Attaching and
// Negotiating pass on their own. Others (Outdated, Failed, a detached Diskless,
// Consistent, DUnknown) wait for something to happen.
var resyncing = map[string]bool{"inconsistent": true, "attaching": true, "negotiating": true}

// ObserveEvacuation classifies the replicas still on node. resources must hold every
// replica of the resources on node (to see the replacements).
func ObserveEvacuation(node string, resources []lapi.ResourceWithVolumes) Evacuation {
	moving := map[string]bool{}
	unknownAt := map[string][]string{}
	for _, r := range resources {
		if equalFold(r.NodeName, node) || !Diskful(r) || !HasDRBD(r) || HasFlag(r.Flags, lapiconst.FlagDelete) {
			continue
		}
		unknown := false
		for _, v := range r.Volumes {
			switch s := v.State.DiskState; {
			case s == "":
				unknown = true
			case resyncing[strings.ToLower(s)]:
				moving[r.Name] = true
			}
		}
		if unknown {
			unknownAt[r.Name] = append(unknownAt[r.Name], r.NodeName)
		}
	}
	var out Evacuation
	for _, r := range resources {
		if !equalFold(r.NodeName, node) {
			continue
		}
		switch {
		case !HasDRBD(r):
			out.NotReplicated = append(out.NotReplicated, r.Name)
		case moving[r.Name]:
			out.Moving = append(out.Moving, r.Name)
		case r.State != nil && r.State.InUse != nil && *r.State.InUse:
			out.InUse = append(out.InUse, r.Name)
		case len(unknownAt[r.Name]) > 0:
			nodes := unknownAt[r.Name]
			sort.Strings(nodes)
			out.Waiting = append(out.Waiting, Waiting{Resource: r.Name, Nodes: nodes})
		default:
			out.Stuck = append(out.Stuck, r.Name)
		}
	}
	sort.Strings(out.Moving)
	sort.Strings(out.InUse)
	sort.Slice(out.Waiting, func(i, j int) bool { return out.Waiting[i].Resource < out.Waiting[j].Resource })
	sort.Strings(out.Stuck)
	sort.Strings(out.NotReplicated)
	return out
}
