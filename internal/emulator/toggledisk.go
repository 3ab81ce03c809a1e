package emulator

import (
	"net/http"
	"strings"

	lapiconst "github.com/LINBIT/golinstor"
)

const modRsc = lapiconst.MaskMod | lapiconst.MaskRsc

// toggleDisk serves PUT …/resources/{node}/toggle-disk/diskless[/{pool}] and
// …/toggle-disk/diskful[/{pool}] as CtrlRscToggleDiskApiCallHandler.toggleDiskInTransaction
// does (context MOD|RSC, makeRscContext):
//   - the node, the definition, then the replica must exist (CtrlApiDataLoader.loadRsc:
//     FAIL_NOT_FOUND_NODE, _RSC_DFN, _RSC);
//   - a toggle already requested is FAIL_RSC_BUSY;
//   - adding a disk to a diskful replica is WARN_RSC_ALREADY_HAS_DISK, removing one
//     from a diskless replica WARN_RSC_ALREADY_DISKLESS;
//   - removing the disk of the only diskful replica on an ONLINE satellite is
//     FAIL_INSUFFICIENT_REPLICA_COUNT (countDisksAndIsOnline), and of a resource
//     without DRBD FAIL_INVLD_LAYER_STACK;
//   - adding one needs the pool on the node (CtrlStorPoolResolveHelper:
//     FAIL_NOT_FOUND_DFLT_STOR_POOL); no pool means the default, DfltStorPool.
//
// Accepted, the replica's StorPoolName is set, it is flagged DISK_REMOVE_REQUESTED or
// DISK_ADD_REQUESTED and the answer is MODIFIED "... registered". With its satellite
// not ONLINE the toggle stops there with WARN_NOT_CONNECTED (updateAndAdjustDisk) and
// goes on when the satellite is back (resourceDefinitionConnected; finishToggles).
func (e *Emulator) toggleDisk(removeDisk bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.advance()
		rdName, nodeName, pool := r.PathValue("rd"), r.PathValue("node"), r.PathValue("pool")
		refs := []string{"Node", nodeName, "RscDfn", rdName}
		refuse := func(a apiCallRc) { writeRC(w, http.StatusOK, a.withRefs(refs...)) }
		n := e.nodes[strings.ToLower(nodeName)]
		if n == nil {
			refuse(rc(lapiconst.FailNotFoundNode|modRsc, "Node '%s' not found.", nodeName).
				withCause("The specified node '%s' could not be found in the database", nodeName).
				withCorrection("Create a node with the name '%s' first.", nodeName))
			return
		}
		rd := e.rds[strings.ToLower(rdName)]
		if rd == nil {
			refuse(rc(lapiconst.FailNotFoundRscDfn|modRsc, "Resource definition '%s' not found.", rdName).
				withCause("The specified resource definition '%s' could not be found in the database", rdName).
				withCorrection("Create a resource definition with the name '%s' first.", rdName))
			return
		}
		rep := rd.resources[n.Name]
		switch {
		case rep == nil:
			refuse(rc(lapiconst.FailNotFoundRsc|modRsc, "Resource '%s' on node '%s' not found.", rd.Name, n.Name).
				withCause("The specified resource '%s' on node '%s' could not be found in the database", rd.Name, n.Name).
				withCorrection("Create a resource with the name '%s' on node '%s' first.", rd.Name, n.Name))
			return
		case hasFlag(rep.flags, lapiconst.FlagDiskAddRequested):
			refuse(rc(lapiconst.FailRscBusy|modRsc, "Addition of disk to resource already requested"))
			return
		case hasFlag(rep.flags, lapiconst.FlagDiskRemoveRequested):
			refuse(rc(lapiconst.FailRscBusy|modRsc, "Removal of disk from resource already requested"))
			return
		case !removeDisk && !flaggedDiskless(rep):
			refuse(rc(lapiconst.WarnRscAlreadyHasDisk|modRsc, "Resource already has disk"))
			return
		case removeDisk && flaggedDiskless(rep):
			refuse(rc(lapiconst.WarnRscAlreadyDiskless|modRsc, "Resource already diskless"))
			return
		case removeDisk && e.onlineDisks(rd) <= 1:
			refuse(rc(lapiconst.FailInsufficientReplicaCount|modRsc, "Cannot remove the disk from the only online resource with a disk"))
			return
		case removeDisk && !rep.drbd():
			refuse(rc(lapiconst.FailInvldLayerStack|modRsc, "Toggle disk is only supported in combination with DRBD"))
			return
		}
		if rep.props == nil {
			rep.props = map[string]string{}
		}
		if removeDisk {
			rep.props[lapiconst.KeyStorPoolName] = disklessPool
			if pool != "" {
				rep.props[lapiconst.KeyStorPoolName] = pool
			}
			rep.flags = appendFlag(rep.flags, lapiconst.FlagDiskRemoveRequested)
		} else {
			if pool == "" {
				pool = "DfltStorPool"
			}
			p := n.pools[strings.ToLower(pool)]
			if p == nil {
				refuse(rc(lapiconst.FailNotFoundDfltStorPool|modRsc, "The storage pool '%s' for resource '%s' for volume number '0' is not deployed on node '%s'.", pool, rd.Name, n.Name))
				return
			}
			rep.props[lapiconst.KeyStorPoolName] = p.StoragePoolName
			rep.flags = appendFlag(rep.flags, lapiconst.FlagDiskAddRequested)
		}
		action := "Addition of disk to"
		if removeDisk {
			action = "Removal of disk from"
		}
		answer := []apiCallRc{rc(lapiconst.Modified|modRsc, "%s resource '%s' on node '%s' registered", action, rd.Name, n.Name).withRefs(refs...)}
		if e.online(n.Name) {
			e.finishToggle(rd, n.Name, rep)
		} else {
			answer = append(answer, rc(lapiconst.WarnNotConnected|modRsc, "No active connection to satellite '%s'", n.Name).withRefs(refs...))
		}
		writeRC(w, http.StatusOK, answer...)
	}
}

// flaggedDiskless is CtrlVlmCrtApiHelper.isDiskless by the replica's flags.
func flaggedDiskless(rep *replica) bool {
	return hasFlag(rep.flags, lapiconst.FlagDrbdDiskless) || hasFlag(rep.flags, lapiconst.FlagDiskless) ||
		hasFlag(rep.flags, lapiconst.FlagNvmeInitiator)
}

// onlineDisks counts the replicas not flagged diskless whose satellite is ONLINE
// (CtrlRscToggleDiskApiCallHandler.countDisksAndIsOnline).
func (e *Emulator) onlineDisks(rd *resourceDefinition) int {
	n := 0
	for name, rep := range rd.resources {
		if !flaggedDiskless(rep) && e.online(name) {
			n++
		}
	}
	return n
}

// finishToggles carries on the toggles that waited for their satellite.
func (e *Emulator) finishToggles() {
	for _, rd := range e.rds {
		for name, rep := range rd.resources {
			if (hasFlag(rep.flags, lapiconst.FlagDiskAddRequested) || hasFlag(rep.flags, lapiconst.FlagDiskRemoveRequested)) && e.online(name) {
				e.finishToggle(rd, name, rep)
			}
		}
	}
}

// finishToggle is what the satellite and the controller do once the toggle reaches
// the satellite (markDiskRemoving/markDiskAdding, then finishOperationInTransaction):
// removing, the disk goes, the replica is flagged DRBD_DISKLESS (with DISKLESS) and
// its data with it: a diverged side that had split brain reconnects as a diskless
// peer, which has no data generation to compare. Adding, the replica gets a new,
// empty disk in the requested pool and DRBD resyncs it in full from a peer that holds
// data (it lacks every write; handshake), SyncTarget meanwhile.
func (e *Emulator) finishToggle(rd *resourceDefinition, name string, rep *replica) {
	e.noteWrites()
	if hasFlag(rep.flags, lapiconst.FlagDiskRemoveRequested) {
		rep.flags = appendFlag(appendFlag(withoutFlag(rep.flags, lapiconst.FlagDiskRemoveRequested), lapiconst.FlagDiskless), lapiconst.FlagDrbdDiskless)
		rep.pool = ""
		rep.behind, rep.diskFailed, rep.syncFrom = nil, false, ""
		rep.syncStart, rep.syncUntil = e.now(), e.now()
	} else {
		rep.flags = withoutFlag(withoutFlag(withoutFlag(rep.flags, lapiconst.FlagDiskAddRequested), lapiconst.FlagDiskless), lapiconst.FlagDrbdDiskless)
		rep.pool = rep.props[lapiconst.KeyStorPoolName]
		rep.diskFailed, rep.diskState = false, "UpToDate"
		// A new disk lacks every write: its own old ones, every holder's and those the
		// holders lack.
		rep.behind = map[string]bool{strings.ToLower(name): true}
		for peer, p := range rd.resources {
			if peer != name && p.holdsData() {
				rep.behind[strings.ToLower(peer)] = true
				for w := range p.behind {
					rep.behind[w] = true
				}
			}
		}
	}
	e.noteWrites()
}
