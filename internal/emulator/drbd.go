package emulator

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"
)

// DRBD over time, as LINSTOR reports it. DRBD facts cite LINBIT/drbd
// (drbd-9.3.3-49-g7d3945b1d), LINSTOR's v1.33.3.

// quorumKey is the DRBD resource option LINSTOR passes to drbdadm
// (ApiConsts.NAMESPC_DRBD_RESOURCE_OPTIONS + InternalApiConsts.KEY_DRBD_QUORUM).
const quorumKey = "DrbdOptions/Resource/quorum"

// freshControllerProps are the controller properties of a new k8s database: its first
// migration sets AutoEvictAllowEviction (Migration_01_v1_15_0_init, /CTRLCFG).
//
// It also sets auto-quorum io-error (Migration_10_v1_19_1_ConsolidatedInit, /CTRLCFG
// DrbdOptions/auto-quorum), which Migration_26_v1_27_1_AutoQuorumInerhitRework turns
// into on-no-quorum io-error: without it DRBD would suspend I/O on losing quorum, its
// default (drbd-headers DRBD_ON_NO_QUORUM_DEF, ONQ_SUSPEND_IO).
func freshControllerProps() map[string]string {
	return map[string]string{autoEvictAllowKey: "True", onNoQuorumKey: "io-error"}
}

// holdsData: the replica has a disk with data on it (diskful to LINSTOR, and DRBD has
// not detached it).
func (r *replica) holdsData() bool { return r.diskful() && !r.diskFailed }

// syncing: the replica is a resync target now.
func (e *Emulator) syncing(r *replica) bool { return e.now().Before(r.syncUntil) }

// drbdMeets: DRBD on a and b can reach each other: both run and the link is not cut.
func (e *Emulator) drbdMeets(a, b string) bool {
	return e.drbdRuns(a) && e.drbdRuns(b) && e.linked(a, b)
}

// drbdConnected: DRBD on a and b has the connection between them up: they can reach
// each other and their data has not diverged (a split brain leaves it StandAlone).
func (e *Emulator) drbdConnected(rd *resourceDefinition, a, b string) bool {
	return e.drbdMeets(a, b) && !diverged(rd.resources[a], rd.resources[b])
}

// diverged: both replicas hold data and each missed writes the other has: a split
// brain. It lasts until one side's data is dropped (toggle-disk) and is derived from
// the missed writes, which are the disks', so it outlives a controller restart.
func diverged(a, b *replica) bool {
	return a != nil && b != nil && a.holdsData() && b.holdsData() && lacksFrom(a, b) && lacksFrom(b, a)
}

// noteWrites applies DRBD replication to the writes of every replica in use that may
// write: they reach the writer's peers DRBD is connected to; a peer holding data that
// is not connected misses them and falls behind. Writes are continuous while a
// replica is in use, so this runs before and after every change of use or links, and
// on every request (advance). Then connected peers compare their data (handshake).
func (e *Emulator) noteWrites() {
	for _, rd := range e.rds {
		for writer, w := range rd.resources {
			if !w.inUse || len(w.behind) == 0 && e.reachesAllDisks(rd, writer) || !e.writes(rd, writer) {
				continue // the common case, checked first: every disk gets the writes
			}
			delete(w.behind, strings.ToLower(writer)) // what it writes now is newest
			for peer, p := range rd.resources {
				if peer != writer && p.holdsData() && !e.drbdConnected(rd, writer, peer) {
					if p.behind == nil {
						p.behind = map[string]bool{}
					}
					p.behind[strings.ToLower(writer)] = true
				}
			}
		}
		// Only missed writes make a handshake do anything; most definitions have none.
		for _, r := range rd.resources {
			if len(r.behind) > 0 {
				e.handshake(rd)
				break
			}
		}
	}
}

// reachesAllDisks: DRBD on writer is connected to every peer holding data.
func (e *Emulator) reachesAllDisks(rd *resourceDefinition, writer string) bool {
	for peer, p := range rd.resources {
		if peer != writer && p.holdsData() && !e.drbdConnected(rd, writer, peer) {
			return false
		}
	}
	return true
}

// writes: the replica is in use (Primary) and its writes complete: DRBD runs there
// and it has quorum; without quorum DRBD fails or suspends the I/O (on-no-quorum
// io-error or suspend-io), so nothing is written (drbd_state.c calc_quorum; the
// request path refuses writes while !device->quorum).
func (e *Emulator) writes(rd *resourceDefinition, nodeName string) bool {
	w := rd.resources[nodeName]
	return w.inUse && w.drbd() && e.drbdRuns(nodeName) && e.hasQuorum(rd, nodeName)
}

// handshake is what DRBD does when a connection comes up (drbd_receiver.c
// drbd_sync_handshake, from the data generations): of two replicas holding data, the
// one that lacks writes the other has becomes its resync target; when each lacks the
// other's writes the data diverged (split brain) and, with LINSTOR's defaults
// (after-sb-0pri, -1pri, -2pri disconnect: drbd_asb_recover_0p/1p/2p return -100 for
// ASB_DISCONNECT), the connection is dropped to StandAlone on both sides, where it
// stays (diverged, drbdConnection). Writes that no replica holds any more (the only
// holder's data was dropped) are forgotten first: nobody can lack them.
func (e *Emulator) handshake(rd *resourceDefinition) {
	e.forgetLostWrites(rd)
	names := slices.Sorted(maps.Keys(rd.resources))
	for i, a := range names {
		for _, b := range names[i+1:] {
			ra, rb := rd.resources[a], rd.resources[b]
			// drbdConnected is false for a diverged pair: nothing moves between them.
			if !ra.drbd() || !ra.holdsData() || !rb.holdsData() || !e.drbdConnected(rd, a, b) {
				continue
			}
			switch {
			case lacksFrom(rb, ra):
				e.resync(rd, b, a)
			case lacksFrom(ra, rb):
				e.resync(rd, a, b)
			}
		}
	}
}

// lacksFrom: target missed writes that source did not miss.
func lacksFrom(target, source *replica) bool {
	for w := range target.behind {
		if !source.behind[w] {
			return true
		}
	}
	return false
}

// forgetLostWrites drops from every replica's missed writes those no replica holding
// data has: they are gone with the disk that had them.
func (e *Emulator) forgetLostWrites(rd *resourceDefinition) {
	held := func(w string) bool {
		for _, r := range rd.resources {
			if r.holdsData() && !r.behind[w] {
				return true
			}
		}
		return false
	}
	for _, r := range rd.resources {
		for w := range r.behind {
			if !held(w) {
				delete(r.behind, w)
			}
		}
	}
}

// resync makes target the resync target of source: Inconsistent for Timing.Resync,
// then it holds what source holds.
func (e *Emulator) resync(rd *resourceDefinition, target, source string) {
	t, s := rd.resources[target], rd.resources[source]
	t.behind = maps.Clone(s.behind)
	t.syncFrom, t.syncStart, t.syncUntil = source, e.now(), e.now().Add(e.timing.Resync)
}

// syncSource is the peer a resyncing replica syncs from: the one the handshake chose,
// else (a new replica) its first connected peer holding data that is not resyncing
// itself.
func (e *Emulator) syncSource(rd *resourceDefinition, nodeName string, rep *replica) string {
	if rep.syncFrom != "" && rd.resources[rep.syncFrom] != nil {
		return rep.syncFrom
	}
	for _, peer := range slices.Sorted(maps.Keys(rd.resources)) {
		if p := rd.resources[peer]; peer != nodeName && p.holdsData() && !e.syncing(p) && e.drbdConnected(rd, nodeName, peer) {
			return peer
		}
	}
	return ""
}

// donePercentage is how far a resync has come, by the emulator's clock.
func (e *Emulator) donePercentage(rep *replica) float64 {
	start := rep.syncStart
	if start.IsZero() || !start.Before(rep.syncUntil) {
		start = rep.syncUntil.Add(-e.timing.Resync)
	}
	total := rep.syncUntil.Sub(start)
	if total <= 0 {
		return 100
	}
	done := 100 * float64(e.now().Sub(start)) / float64(total)
	return math.Round(math.Max(0, math.Min(100, done))*100) / 100
}

// replicationState is what DRBD on nodeName reports of its replication toward peer
// (the labels drbdsetup events2 prints, parsed by LINSTOR's ReplState: Off,
// Established, SyncSource, SyncTarget): Off while the connection is not up, SyncTarget/SyncSource with the done
// percentage during a resync between the two, else Established.
func (e *Emulator) replicationState(rd *resourceDefinition, nodeName, peer string) replicationStateView {
	rep, p := rd.resources[nodeName], rd.resources[peer]
	switch {
	case !e.drbdConnected(rd, nodeName, peer):
		return replicationStateView{ReplicationState: "Off"}
	case e.syncing(rep) && e.syncSource(rd, nodeName, rep) == peer:
		return replicationStateView{ReplicationState: "SyncTarget", DonePercentage: ptrTo(e.donePercentage(rep))}
	case e.syncing(p) && e.syncSource(rd, peer, p) == nodeName:
		return replicationStateView{ReplicationState: "SyncSource", DonePercentage: ptrTo(e.donePercentage(p))}
	}
	return replicationStateView{ReplicationState: "Established"}
}

// quorumAt is how many votes quorum needs, or 0 when quorum is off. The option is
// the resource definition's, else its resource group's, else the controller's
// (PriorityProps(rscDfn, rscGrp, ctrl)); unset, auto-quorum sets majority on a definition with at least three
// diskful DRBD replicas, or two and a diskless one, else off
// (CtrlRscAutoQuorumHelper.manage, isQuorumFeasible; QuorumSetBy defaults to
// linstor). majority is voters/2+1, all every voter, a number that many
// (drbd_state.c calc_quorum_at).
func (e *Emulator) quorumAt(rd *resourceDefinition, voters int) int {
	setting := rd.Props[quorumKey]
	if setting == "" {
		setting = e.rgs[strings.ToLower(rd.ResourceGroupName)].Props[quorumKey]
	}
	if setting == "" {
		setting = e.controllerProps[quorumKey]
	}
	if setting == "" {
		diskful, diskless := 0, 0
		for _, r := range rd.resources {
			switch {
			case !r.drbd() || hasFlag(r.flags, lapiconst.FlagDelete) || hasFlag(r.flags, "INACTIVE"):
			case hasFlag(r.flags, lapiconst.FlagDrbdDiskless):
				diskless++
			default:
				diskful++
			}
		}
		if diskful >= 3 || diskful == 2 && diskless >= 1 {
			setting = "majority"
		}
	}
	switch strings.ToLower(setting) {
	case "majority":
		return voters/2 + 1
	case "all":
		return voters
	}
	n, err := strconv.Atoi(setting)
	if err != nil {
		return 0
	}
	return n
}

// hasQuorum: DRBD on nodeName reaches enough voters. Every DRBD replica that is not
// being deleted or inactive votes, a diskless one too (it is the tiebreaker of two
// diskful ones, drbd_state.c calc_quorum); a replica counts itself and its connected
// peers.
func (e *Emulator) hasQuorum(rd *resourceDefinition, nodeName string) bool {
	voters, present := 0, 0
	for peer, p := range rd.resources {
		if !p.drbd() || hasFlag(p.flags, lapiconst.FlagDelete) || hasFlag(p.flags, "INACTIVE") {
			continue
		}
		voters++
		if peer == nodeName || e.drbdConnected(rd, nodeName, peer) {
			present++
		}
	}
	at := e.quorumAt(rd, voters)
	return at == 0 || present >= at
}

// mayPromote is DRBD's may_promote as the satellite reports it (DrbdResource
// may_promote from drbdsetup events2, DrbdEventPublisher): the replica could become
// Primary now: it is not Primary, no connected peer is (SS_TWO_PRIMARIES), it has
// quorum (SS_NO_QUORUM) and UpToDate data, its own or a connected peer's
// (SS_NO_UP_TO_DATE_DISK; drbd_state.c __is_valid_soft_transition).
func (e *Emulator) mayPromote(rd *resourceDefinition, nodeName string) bool {
	rep := rd.resources[nodeName]
	if rep.inUse || !e.hasQuorum(rd, nodeName) {
		return false
	}
	upToDate := rep.holdsData() && !e.syncing(rep)
	for peer, p := range rd.resources {
		if peer == nodeName || !e.drbdConnected(rd, nodeName, peer) {
			continue
		}
		if p.inUse {
			return false
		}
		if p.holdsData() && !e.syncing(p) {
			upToDate = true
		}
	}
	return upToDate
}

// FailDisk fails the backing disk of the replica of rd on node: DRBD detaches it
// (on-io-error detach, the DRBD default LINSTOR leaves: it sets no on-io-error). The
// replica stays diskful to LINSTOR, no DISKLESS flag, and reports disk state
// Diskless; its data is gone (HasNewestData false). Toggling it diskless and diskful
// again gives it a new disk.
func (e *Emulator) FailDisk(rd, nodeName string) error {
	return e.change(func() error {
		e.mu.Lock()
		defer e.mu.Unlock()
		def, ok := e.rds[strings.ToLower(rd)]
		if !ok || def.resources[nodeName] == nil {
			return fmt.Errorf("resource %q not on node %q", rd, nodeName)
		}
		rep := def.resources[nodeName]
		if !rep.diskful() {
			return fmt.Errorf("resource %q on node %q has no disk", rd, nodeName)
		}
		e.noteWrites()
		rep.diskFailed, rep.behind, rep.syncUntil, rep.syncFrom = true, nil, time.Time{}, ""
		e.noteWrites()
		return nil
	})
}

// The view's JSON with what golinstor's types lack or drop: volumes[].state.
// replication_states (JsonGenTypes.VolumeState, ReplicationState) and the DRBD
// layer's may_promote, false included (JsonGenTypes.DrbdResource; golinstor's bool
// omits false). Fields at a shallower depth win over the embedded ones.
type resourceWithVolumesView struct {
	lapi.ResourceWithVolumes
	LayerObject *resourceLayerView `json:"layer_object,omitempty"`
	Volumes     []volumeView       `json:"volumes,omitempty"`
}

type resourceLayerView struct {
	lapi.ResourceLayer
	Children []resourceLayerView `json:"children,omitempty"`
	Drbd     *drbdResourceView   `json:"drbd,omitempty"`
}

type drbdResourceView struct {
	lapi.DrbdResource
	MayPromote *bool `json:"may_promote,omitempty"`
}

type volumeView struct {
	lapi.Volume
	State volumeStateView `json:"state"`
}

type volumeStateView struct {
	DiskState string `json:"disk_state,omitempty"`
	// ReplicationStates is present (maybe empty) whenever the satellite reported the
	// volume's state (Json.apiToVolumeState starts it as an empty map).
	ReplicationStates *map[string]replicationStateView `json:"replication_states,omitempty"`
}

type replicationStateView struct {
	ReplicationState string   `json:"replication_state"`
	DonePercentage   *float64 `json:"done_percentage,omitempty"`
}

// withDrbdState adds to a replica's view what its satellite reports of DRBD: while
// it is ONLINE and the resource has DRBD, may_promote and each volume's replication
// state toward every peer.
func (e *Emulator) withDrbdState(rd *resourceDefinition, rv lapi.ResourceWithVolumes) resourceWithVolumesView {
	out := resourceWithVolumesView{ResourceWithVolumes: rv, LayerObject: layerView(rv.LayerObject)}
	rep := rd.resources[rv.NodeName]
	report := rep != nil && rep.drbd() && e.online(rv.NodeName)
	if report && out.LayerObject != nil && out.LayerObject.Drbd != nil {
		out.LayerObject.Drbd.MayPromote = ptrTo(e.mayPromote(rd, rv.NodeName))
	}
	for _, v := range rv.Volumes {
		vv := volumeView{Volume: v, State: volumeStateView{DiskState: v.State.DiskState}}
		if report {
			states := map[string]replicationStateView{}
			for peer, p := range rd.resources {
				if peer != rv.NodeName && p.drbd() {
					states[peer] = e.replicationState(rd, rv.NodeName, peer)
				}
			}
			vv.State.ReplicationStates = &states
		}
		out.Volumes = append(out.Volumes, vv)
	}
	return out
}

func layerView(l *lapi.ResourceLayer) *resourceLayerView {
	if l == nil {
		return nil
	}
	out := &resourceLayerView{ResourceLayer: *l}
	for i := range l.Children {
		out.Children = append(out.Children, *layerView(&l.Children[i]))
	}
	if l.Drbd != nil {
		out.Drbd = &drbdResourceView{DrbdResource: *l.Drbd}
	}
	return out
}
