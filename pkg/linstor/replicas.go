package linstor

import (
	"sort"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"
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

// safeCopy reports whether a replica is a copy of the data that survives losing
// every other node: diskful, not being deleted, and every volume UpToDate.
func safeCopy(r lapi.ResourceWithVolumes) bool {
	if !Diskful(r) || HasFlag(r.Flags, lapiconst.FlagDelete) || len(r.Volumes) == 0 {
		return false
	}
	for _, v := range r.Volumes {
		if v.State.DiskState != "UpToDate" {
			return false
		}
	}
	return true
}

// OnlyCopies lists the resources (sorted) whose data would be gone if node were
// removed: node holds a diskful replica and no other node holds a safe copy (diskful,
// not being deleted, every volume UpToDate).
//
// LINSTOR itself refuses to delete a node only for the last diskful replica of a
// resource that still has diskless peers (CtrlRscDeleteApiHelper.ensureNotLastDisk); a
// lone replica is deleted with its data. An unknown or syncing state elsewhere counts
// as no copy: when in doubt, the node stays. resources must hold every replica of the
// resources on node, not only node's.
func OnlyCopies(node string, resources []lapi.ResourceWithVolumes) []string {
	onNode := map[string]bool{}
	copies := map[string]int{}
	for _, r := range resources {
		switch {
		case equalFold(r.NodeName, node):
			if Diskful(r) {
				onNode[r.Name] = true
			}
		case safeCopy(r):
			copies[r.Name]++
		}
	}
	var out []string
	for name := range onNode {
		if copies[name] == 0 {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
