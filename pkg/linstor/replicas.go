package linstor

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
// side reporting at all, is no proof: when in doubt, not connected.
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
	switch {
	case !HasDRBD(other) || !HasDRBD(local):
		return other.NodeName + " has no DRBD layer (a separate volume, not a replica)"
	case HasFlag(other.Flags, lapiconst.FlagDelete):
		return other.NodeName + " is being deleted"
	case len(other.Volumes) == 0:
		return other.NodeName + " has no volumes"
	}
	for _, v := range other.Volumes {
		switch s := v.State.DiskState; {
		case s == "":
			return other.NodeName + "'s state is unknown (its satellite is not ONLINE)"
		case s != "UpToDate":
			return other.NodeName + " is " + s
		}
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

// OnlyCopies is the resource names of LastCopies.
func OnlyCopies(node string, resources []lapi.ResourceWithVolumes) []string {
	var out []string
	for _, c := range LastCopies(node, resources) {
		out = append(out, c.Resource)
	}
	return out
}
