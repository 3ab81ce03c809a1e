package emulator

import (
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"
)

// defaultPlaceCount is DfltRscGrp's place count, which decides when an evacuated
// replica needs a replacement.
const defaultPlaceCount = 2

// evacuateNode follows CtrlNodeApiCallHandler.evacuateNode. It answers raw codes (no
// context masks) and has no success entry of its own. It refuses nothing: offline,
// evicted, already evacuating and in-use nodes are all accepted. The node and each of
// its replicas are flagged EVACUATE, then per resource:
//   - a diskless replica, one that is not all UpToDate, or one with enough UpToDate
//     diskful peers is deleted right away (with the in-use and last-disk checks);
//   - otherwise a replacement is placed by the autoplacer and resyncs in the
//     background; the source goes once the replacement is UpToDate and the source is
//     no longer in use (advance);
//   - when no pool can take it, the replica stays, flagged EVACUATE, and the answer
//     carries WARN_NOT_EVACUATING in a 200: nothing retries it later;
//   - a resource without DRBD is not evacuated: it stays, flagged EVACUATE, with
//     WARN_NOT_EVACUATING.
//
// Peers count by the disk state they report: a replica cut off from the writer by a
// broken link still reports UpToDate and counts, although it is behind.
func (e *Emulator) evacuateNode(w http.ResponseWriter, r *http.Request, n *node) {
	var in lapi.NodeEvacuate
	if !decode(w, r, &in, http.StatusInternalServerError) {
		return
	}
	if len(in.Target) > 0 && len(in.DoNotTarget) > 0 {
		writeRC(w, http.StatusOK, rc(lapiconst.FailInvldConf, "Must not use --target and --do-not-target in the same request"))
		return
	}
	// Every satellite's thin pools are asked first; the placement reads the tracker
	// that updates (CtrlNodeApiCallHandler.evacuateNode: fetchThinFreeCapacities).
	e.queryThinFreeSpace(nil)
	n.Flags = appendFlag(n.Flags, lapiconst.FlagEvacuate)
	var answer []apiCallRc
	for _, rd := range e.sortedRDs() {
		rep := rd.resources[n.Name]
		if rep == nil {
			continue
		}
		rep.flags = appendFlag(rep.flags, lapiconst.FlagEvacuate)
		if rep.props == nil {
			rep.props = map[string]string{}
		}
		rep.props["MigrateFrom"] = strings.ToUpper(n.Name)
		if !rep.drbd() {
			// Only DRBD replicates: the replica stays, flagged EVACUATE
			// (CtrlNodeApiCallHandler.evacuateNodeInTrasaction, rscDfn.usesLayer(DRBD)).
			answer = append(answer, rc(lapiconst.WarnNotEvacuating, "Resource '%s' cannot be evacuated as it is not a DRBD resource", rd.Name))
			continue
		}
		if !rep.diskful() || !e.sourceUpToDate(n.Name, rep) || e.upToDatePeers(rd, n.Name) >= defaultPlaceCount {
			if why := e.refuseReplicaDelete(rd, n.Name, delRsc); why != nil {
				answer = append(answer, why.withRefs("Node", n.Name, "RscDfn", rd.Name))
				continue
			}
			delete(rd.resources, n.Name)
			answer = append(answer, rc(lapiconst.Deleted|delRsc, "Resource '%s' on node '%s' deleted.", rd.Name, n.Name).withRefs("Node", n.Name, "RscDfn", rd.Name))
			continue
		}
		target := e.placeReplacement(rd, rep, n.Name, in)
		if target == "" {
			answer = append(answer, rc(lapiconst.WarnNotEvacuating, "Resource '%s' cannot be evacuated as no available storage pool was found", rd.Name))
			continue
		}
		rep.migrateTo = target
		answer = append(answer, rc(lapiconst.Created|crtRsc, "New resource '%s' on node '%s' registered.", rd.Name, target).withRefs("Node", target, "RscDfn", rd.Name))
	}
	// node-evacuate goes out after the commit that flags the node, before the replicas
	// are deleted or moved; a refused replica delete does not stop it
	// (CtrlNodeApiCallHandler.java:1899-1900, the deletes run in the flux after it).
	e.emitNode(evNodeEvacuate, e.nodeView(n))
	writeRC(w, http.StatusOK, answer...)
}

// sourceUpToDate: for the replica being evacuated an unknown state counts as UpToDate.
func (e *Emulator) sourceUpToDate(nodeName string, rep *replica) bool {
	s := e.diskState(nodeName, rep)
	return s == "" || s == "UpToDate"
}

// upToDatePeers counts the other diskful replicas that are UpToDate and neither being
// deleted, evacuated nor inactive; an unknown state counts as not UpToDate.
func (e *Emulator) upToDatePeers(rd *resourceDefinition, nodeName string) int {
	count := 0
	for peer, p := range rd.resources {
		if peer == nodeName || !p.diskful() || hasFlag(p.flags, lapiconst.FlagDelete) || hasFlag(p.flags, lapiconst.FlagEvacuate) || hasFlag(p.flags, "INACTIVE") {
			continue
		}
		if e.diskState(peer, p) == "UpToDate" {
			count++
		}
	}
	return count
}

// placeReplacement is the autoplacer for one replica: an ONLINE satellite that is not
// evacuating, evicted or being deleted and holds no replica of rd yet, with a pool of
// the same provider kind (mixing drivers is not allowed by default) and room for the
// volumes; the same pool name is preferred, then the most free space. The new replica
// is Inconsistent while it resyncs.
func (e *Emulator) placeReplacement(rd *resourceDefinition, rep *replica, from string, in lapi.NodeEvacuate) string {
	src := e.nodes[strings.ToLower(from)]
	if src == nil || src.pools[strings.ToLower(rep.pool)] == nil || !rep.drbd() {
		return ""
	}
	kind := src.pools[strings.ToLower(rep.pool)].ProviderKind
	var size int64
	for _, v := range rd.volumes {
		size += int64(v.SizeKib)
	}
	allowed := func(name string) bool {
		if len(in.Target) > 0 {
			return containsFold(in.Target, name)
		}
		return !containsFold(in.DoNotTarget, name)
	}
	type candidate struct {
		node, pool string
		free       int64
		samePool   bool
	}
	var best *candidate
	for _, n := range e.sortedNodes() {
		if rd.resources[n.Name] != nil || !holdsPools(n.Type) || !allowed(n.Name) || e.connectionStatus(n) != "ONLINE" ||
			hasFlag(n.Flags, lapiconst.FlagEvacuate) || hasFlag(n.Flags, lapiconst.FlagEvicted) || hasFlag(n.Flags, lapiconst.FlagDelete) {
			continue
		}
		for _, p := range sortedPools(n) {
			free := e.poolViewFrom(p, true).FreeCapacity // MaximumFreeSpaceStrategy reads the tracker, just refreshed
			if p.ProviderKind != kind || free < size {
				continue
			}
			c := candidate{node: n.Name, pool: p.StoragePoolName, free: free, samePool: strings.EqualFold(p.StoragePoolName, rep.pool)}
			if best == nil || c.samePool && !best.samePool || c.samePool == best.samePool && c.free > best.free {
				best = &c
			}
		}
	}
	if best == nil {
		return ""
	}
	rd.resources[best.node] = &replica{pool: best.pool, diskState: "UpToDate", syncStart: e.now(), syncUntil: e.now().Add(e.timing.Resync), layers: rep.layers}
	e.addLayerData(rd, best.node, rd.resources[best.node])
	return best.node
}

// advance carries out what the controller does in the background up to now: a replica
// marked for deletion goes once its satellite confirms (is ONLINE); an evacuated
// replica is deleted once its replacement is UpToDate and it is no longer in use (the
// source waits for the workload to go). Satellites away too long are evicted
// (autoEvict), disk toggles waiting for their satellite finish (finishToggles), and
// writes so far reach the peers linked to their writer (noteWrites).
func (e *Emulator) advance() {
	e.autoEvict()
	e.finishToggles()
	e.noteWrites()
	for _, rd := range e.rds {
		for _, nodeName := range slices.Sorted(maps.Keys(rd.resources)) {
			rep := rd.resources[nodeName]
			if hasFlag(rep.flags, lapiconst.FlagDelete) && e.online(nodeName) {
				delete(rd.resources, nodeName) // the satellite confirmed the deletion
				continue
			}
			if rep.migrateTo == "" {
				continue
			}
			target := rd.resources[rep.migrateTo]
			if target == nil {
				rep.migrateTo = "" // the replacement is gone: stuck until evacuated again
				continue
			}
			if e.diskState(rep.migrateTo, target) == "UpToDate" && !rep.inUse {
				delete(rd.resources, nodeName)
			}
		}
	}
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

func appendFlag(flags []string, f string) []string {
	if hasFlag(flags, f) {
		return flags
	}
	out := append(append([]string(nil), flags...), f)
	sort.Strings(out)
	return out
}
