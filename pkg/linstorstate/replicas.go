package linstorstate

import (
	"fmt"
	"sort"
	"strings"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"
	"github.com/LINBIT/golinstor/devicelayerkind"
)

// Diskful reports whether a replica stores data: it is not diskless (DRBD or NVMe
// initiator, tie-breaker) and none of its volumes lives in a diskless pool.
func Diskful(r lapi.ResourceWithVolumes) bool {
	for _, f := range []string{lapiconst.FlagDiskless, lapiconst.FlagDrbdDiskless, lapiconst.FlagNvmeInitiator, lapiconst.FlagTieBreaker} {
		if HasFlag(r.Flags, f) {
			return false
		}
	}
	for _, v := range r.Volumes {
		if v.ProviderKind == lapi.DISKLESS {
			return false
		}
	}
	return true
}

// HasDRBD reports whether the resource is replicated by DRBD, reading its layer data
// as the server builds it (Json.apiToResourceLayer): DRBD is the top layer when present
// (LayerUtils lets no layer hold DRBD below it). A view without layer data counts as
// DRBD, so its disk and connection states are judged: when in doubt, check more.
func HasDRBD(r lapi.ResourceWithVolumes) bool {
	l := r.LayerObject
	return l == nil || l.Drbd != nil || strings.EqualFold(string(l.Type), string(devicelayerkind.Drbd))
}

// drbdConnections is what the replica's DRBD reports per peer; nil without DRBD or
// while its satellite is not ONLINE (no state is known then).
func drbdConnections(r lapi.ResourceWithVolumes) map[string]lapi.DrbdConnection {
	if r.LayerObject == nil || r.LayerObject.Drbd == nil {
		return nil
	}
	return r.LayerObject.Drbd.Connections
}

// connectionTo finds peer in a connection map; node names compare case-insensitively.
func connectionTo(conns map[string]lapi.DrbdConnection, peer string) (lapi.DrbdConnection, bool) {
	if c, ok := conns[peer]; ok {
		return c, true
	}
	for name, c := range conns {
		if equalFold(name, peer) {
			return c, true
		}
	}
	return lapi.DrbdConnection{}, false
}

// replicating reports whether DRBD replicates between the replicas a and b, and if not
// what was seen. LINSTOR's view has each side's connection to the other (connected is
// true only for DRBD's "Connected", Json.apiToResourceWithVolumes). Either side
// reporting Connected is proof enough (a satellite that is away reports nothing, but
// its peer still sees the kernel's connection); any side reporting otherwise, or no
// side reporting at all, is no proof: when in doubt, not connected. That a replica
// whose satellite is away still replicates is also why its node must not go yet
// (RunningWhileOffline).
func replicating(a, b lapi.ResourceWithVolumes) (bool, string) {
	seen := "no connection reported"
	connected := false
	for _, pair := range [][2]lapi.ResourceWithVolumes{{a, b}, {b, a}} {
		c, ok := connectionTo(drbdConnections(pair[0]), pair[1].NodeName)
		switch {
		case !ok:
		case c.Connected:
			connected = true
		default:
			msg := c.Message
			if msg == "" {
				msg = "not connected"
			}
			return false, msg
		}
	}
	if connected {
		return true, "Connected"
	}
	return false, seen
}

// reportsUpToDate: the replica reports every volume UpToDate (its own view; DRBD says
// so also of a replica cut off from newer writes).
func reportsUpToDate(r lapi.ResourceWithVolumes) bool {
	if len(r.Volumes) == 0 {
		return false
	}
	for _, v := range r.Volumes {
		if v.State.DiskState != "UpToDate" {
			return false
		}
	}
	return true
}

// notACopy says why other is no safe copy of the data of the replica on node (of
// local), or "" if it is one: diskful, DRBD-replicated, not being deleted, every
// volume UpToDate, and replicating with the replica on node.
func notACopy(local, other lapi.ResourceWithVolumes, node string) string {
	if !HasDRBD(local) {
		return other.NodeName + " has no DRBD layer (a separate volume, not a replica)"
	}
	if why := survivorState(other); why != "" {
		return why
	}
	if ok, seen := replicating(local, other); !ok {
		return fmt.Sprintf("%s is not connected to %s (%s)", other.NodeName, node, seen)
	}
	return ""
}

// LastCopy is a resource whose newest data would be gone with node's replica, and why
// no other replica is a safe copy (per peer, for the status message).
type LastCopy struct {
	Resource string
	Why      string
}

// LastCopies lists (sorted by resource) the resources whose data would be gone if node
// were removed: node holds a diskful replica and no other node holds a safe copy.
// A safe copy is diskful, not being deleted, UpToDate on every volume, and connected
// to node's replica: a DRBD 9 replica cut off by a failed link still reports UpToDate
// while the newest writes are on node. Volumes without DRBD (STORAGE, LUKS,STORAGE)
// are separate disks, so a namesake elsewhere is no copy.
//
// LINSTOR itself refuses to delete a node only for the last diskful replica of a
// resource that still has diskless peers (CtrlRscDeleteApiHelper.ensureNotLastDisk); a
// lone replica is deleted with its data. An unknown, syncing or disconnected state
// counts as no copy: when in doubt, the node stays. resources must hold every replica
// of the resources on node, not only node's.
func LastCopies(node string, resources []lapi.ResourceWithVolumes) []LastCopy {
	local := map[string]lapi.ResourceWithVolumes{}
	for _, r := range resources {
		if equalFold(r.NodeName, node) && Diskful(r) {
			local[r.Name] = r
		}
	}
	safe := map[string]bool{}
	whyNot := map[string][]string{}
	for _, r := range resources {
		here, ok := local[r.Name]
		if !ok || equalFold(r.NodeName, node) || !Diskful(r) {
			continue
		}
		if why := notACopy(here, r, node); why != "" {
			whyNot[r.Name] = append(whyNot[r.Name], why)
		} else {
			safe[r.Name] = true
		}
	}
	var out []LastCopy
	for name := range local {
		if safe[name] {
			continue
		}
		why := "no other diskful replica"
		if reasons := whyNot[name]; len(reasons) > 0 {
			sort.Strings(reasons)
			why = strings.Join(reasons, "; ")
		}
		out = append(out, LastCopy{Resource: name, Why: why})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Resource < out[j].Resource })
	return out
}

// RunningWhileOffline lists (sorted by resource) the resources whose replica on node
// still runs although LINSTOR does not reach node's satellite (connectionStatus is not
// ONLINE): a peer reports its DRBD connection to node Connected. A stopped satellite
// leaves DRBD running in the machine's kernel, and LINSTOR then knows nothing of the
// replica there: no disk state, in_use unknown. So that it is unused cannot be shown,
// diskless or not, and removing the node makes its peers drop their connections to it
// under whatever writes there. Why names the peers that see it.
func RunningWhileOffline(node, connectionStatus string, resources []lapi.ResourceWithVolumes) []LastCopy {
	if connectionStatus == "ONLINE" {
		return nil
	}
	here := map[string]bool{}
	for _, r := range resources {
		if equalFold(r.NodeName, node) && HasDRBD(r) {
			here[r.Name] = true
		}
	}
	seenBy := map[string][]string{}
	for _, r := range resources {
		if !here[r.Name] || equalFold(r.NodeName, node) {
			continue
		}
		if c, ok := connectionTo(drbdConnections(r), node); ok && c.Connected {
			seenBy[r.Name] = append(seenBy[r.Name], r.NodeName)
		}
	}
	var out []LastCopy
	for name, peers := range seenBy {
		sort.Strings(peers)
		verb := " sees it Connected"
		if len(peers) > 1 {
			verb = " see it Connected"
		}
		out = append(out, LastCopy{Resource: name, Why: strings.Join(peers, ", ") + verb})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Resource < out[j].Resource })
	return out
}

// LostNodeCopies lists (sorted by resource) the resources whose data is on no survivor
// when node, acknowledged as gone for good, is removed. lost holds the lower-cased
// names of every node acknowledged lost (node among them); their replicas are no
// survivors. The node cannot be asked anything, so the survivors are judged alone: a
// resource is safe when at least one surviving diskful DRBD replica, not being
// deleted, reports UpToDate, and every survivor reporting UpToDate is connected to the
// others that do (two that are not may have been written apart: one of them is
// behind, and nothing tells which). A volume without DRBD on node was only there.
func LostNodeCopies(node string, lost map[string]bool, resources []lapi.ResourceWithVolumes) []LastCopy {
	local := map[string]lapi.ResourceWithVolumes{}
	for _, r := range resources {
		if equalFold(r.NodeName, node) && Diskful(r) {
			local[r.Name] = r
		}
	}
	upToDate := map[string][]lapi.ResourceWithVolumes{}
	whyNot := map[string][]string{}
	for _, r := range resources {
		here, ok := local[r.Name]
		if !ok || equalFold(r.NodeName, node) || lost[strings.ToLower(r.NodeName)] || !Diskful(r) || !HasDRBD(here) {
			continue
		}
		switch why := survivorState(r); why {
		case "":
			upToDate[r.Name] = append(upToDate[r.Name], r)
		default:
			whyNot[r.Name] = append(whyNot[r.Name], why)
		}
	}
	var out []LastCopy
	for name, here := range local {
		survivors := upToDate[name]
		var why string
		switch {
		case !HasDRBD(here):
			why = "it has no DRBD layer: its volume was only on " + here.NodeName
		case len(survivors) == 0 && len(whyNot[name]) == 0:
			why = "no surviving diskful replica"
		case len(survivors) == 0:
			reasons := whyNot[name]
			sort.Strings(reasons)
			why = "no surviving replica is UpToDate: " + strings.Join(reasons, "; ")
		default:
			why = apart(survivors)
		}
		if why != "" {
			out = append(out, LastCopy{Resource: name, Why: why})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Resource < out[j].Resource })
	return out
}

// survivorState says why a surviving replica is no copy, "" when it is one by its own
// report: DRBD, not being deleted, every volume UpToDate.
func survivorState(r lapi.ResourceWithVolumes) string {
	switch {
	case !HasDRBD(r):
		return r.NodeName + " has no DRBD layer (a separate volume, not a replica)"
	case HasFlag(r.Flags, lapiconst.FlagDelete):
		return r.NodeName + " is being deleted"
	case len(r.Volumes) == 0:
		return r.NodeName + " has no volumes"
	}
	for _, v := range r.Volumes {
		switch s := v.State.DiskState; {
		case s == "":
			return r.NodeName + "'s state is unknown (its satellite is not ONLINE)"
		case s != "UpToDate":
			return r.NodeName + " is " + s
		}
	}
	return ""
}

// apart says which survivors reporting UpToDate are not connected to each other, ""
// when all are.
func apart(survivors []lapi.ResourceWithVolumes) string {
	sort.Slice(survivors, func(i, j int) bool { return survivors[i].NodeName < survivors[j].NodeName })
	var out []string
	for i := range survivors {
		for j := i + 1; j < len(survivors); j++ {
			if ok, seen := replicating(survivors[i], survivors[j]); !ok {
				out = append(out, fmt.Sprintf("%s and %s both report UpToDate but are not connected to each other (%s): one of them may be behind",
					survivors[i].NodeName, survivors[j].NodeName, seen))
			}
		}
	}
	return strings.Join(out, "; ")
}

// OnlyCopies is the resource names of LastCopies.
func OnlyCopies(node string, resources []lapi.ResourceWithVolumes) []string {
	var out []string
	for _, c := range LastCopies(node, resources) {
		out = append(out, c.Resource)
	}
	return out
}
