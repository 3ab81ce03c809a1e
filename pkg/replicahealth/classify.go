package replicahealth

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/linstor"
)

// How Classify decides, per resource (its replicas grouped by name, case-insensitively,
// as LINSTOR's names are):
//
//  1. Replicas flagged DELETE or DRBD_DELETE are leaving and INACTIVE ones (EVICTED and
//     INACTIVE_PERMANENTLY include it) run no DRBD (Resource.Flags@v1.33.3): neither
//     counts, votes nor holds. A resource whose every replica is DELETE-flagged is being
//     deleted and is left out of the report.
//  2. placed is the place count of the definition's resource group, 2 when the group has
//     none (the REST spec's default for auto-place: rest_v1_openapi.yaml
//     /v1/resource-definitions/{resource}/autoplace; the server itself treats a missing
//     count as 0, CtrlRscAutoPlaceApiCallHandler.autoPlaceInTransaction@v1.33.3). A
//     resource without a definition in the read is placed as many times as it has
//     diskful replicas.
//  3. A replica is diskful unless flagged DISKLESS (DRBD_DISKLESS, TIE_BREAKER and
//     NVME_INITIATOR include it). Its state is known when the server sent state.in_use or
//     a disk state, which it does only for a satellite that reported one
//     (Json.apiToResourceWithVolumes@v1.33.3); a replica's disk state is the worst of its
//     volumes'.
//  4. Without DRBD, LINSTOR reports no state at all: such a resource is Healthy when it
//     has as many diskful replicas as placed, else Degraded (UpToDate counts the diskful
//     replicas present); never Unknown, never held.
//  5. With DRBD, the worst state that applies wins: SplitBrain (a StandAlone connection
//     between two of its replicas, from either side), QuorumLost, UnintentionallyDiskless
//     (a diskful replica reports Diskless outside a disk toggle), Unknown (no replica's
//     state is known), Degraded (UpToDate diskful < placed), Outdated, Syncing, Degraded
//     again when every replica is UpToDate but two of them are not connected (between
//     two diskful ones the next write leaves one behind; a diskless one only misses its
//     vote), Healthy. StandAlone is named as such: DRBD also refuses connections for
//     reasons other than a split brain.
//  6. Quorum is DRBD's majority (DRBD 9 user guide, "Quorum"): voters are the resource's
//     DRBD replicas, diskless included; a replica's votes are itself plus its Connected
//     peers; it has quorum with votes*2 > voters. LINSTOR enables quorum only from 3
//     replicas on (DrbdOptions/auto-quorum), so a resource with fewer voters never loses
//     it here. QuorumLost needs proof: no known replica has quorum, and no replica of
//     unknown state could reach it even if connected to every other unknown one, and no
//     known replica reports may_promote true (DRBD remembers which peers lost quorum, so
//     counting connections alone over-reports a loss).
//  7. A node holds a DRBD resource (Holding) when its replica is the only diskful
//     UpToDate one ("last UpToDate replica"); when its diskful replica's state is unknown
//     and no other is known UpToDate ("state unknown and no other UpToDate replica": it
//     may hold the only good copy); or when it is in the quorate partition of a resource
//     with 3 or more voters that would fall to half or less without its vote ("needed for
//     quorum"). A resource without DRBD is never held: no drain can wait for a
//     replication that does not exist.

// diskless flags: a replica without a local disk by intent.
var disklessFlags = []string{"DISKLESS", "DRBD_DISKLESS", "TIE_BREAKER"}

// leaving flags: the replica is being deleted.
var leavingFlags = []string{"DELETE", "DRBD_DELETE"}

// toggling flags: a disk is being added or removed (CtrlRscToggleDiskApiCallHandler@v1.33.3),
// so Diskless on a diskful replica is expected for the moment.
var togglingFlags = []string{"DISK_ADD_REQUESTED", "DISK_ADDING", "DISK_REMOVE_REQUESTED", "DISK_REMOVING"}

// Disk states as DRBD reports them, worst first; an unlisted one ranks with DUnknown.
var diskRank = map[string]int{
	"Diskless": 0, "Failed": 1, "Detaching": 2, "Attaching": 3, "Negotiating": 4,
	"Inconsistent": 5, "Outdated": 6, "DUnknown": 7, "Consistent": 8, "UpToDate": 9,
}

const (
	diskUpToDate = "UpToDate"
	diskOutdated = "Outdated"
	diskDiskless = "Diskless"
	standAlone   = "StandAlone"
)

// Classify reports the health of every resource in.Replicas. It is pure: the same input
// gives the same report, and the input is not modified.
func Classify(in Input) *Report {
	rep := &Report{
		Now:       in.Now,
		Resources: make(map[string]*Resource),
		Counts:    make(map[State]int, len(States)),
		holds:     make(map[string][]Hold),
	}
	for _, s := range States {
		rep.Counts[s] = 0
	}

	// Group by lower-case name without a map of slices: sort indexes once.
	keys := make([]string, len(in.Replicas))
	order := make([]int32, len(in.Replicas))
	for i := range in.Replicas {
		keys[i] = strings.ToLower(in.Replicas[i].Name)
		order[i] = int32(i)
	}
	sort.Slice(order, func(a, b int) bool {
		ka, kb := keys[order[a]], keys[order[b]]
		if ka != kb {
			return ka < kb
		}
		return in.Replicas[order[a]].NodeName < in.Replicas[order[b]].NodeName
	})
	group := make([]*linstor.ResourceView, 0, 8)
	for start := 0; start < len(order); {
		key := keys[order[start]]
		group = group[:0]
		end := start
		for ; end < len(order) && keys[order[end]] == key; end++ {
			group = append(group, &in.Replicas[order[end]])
		}
		start = end
		res, holds := classifyResource(key, group, &in)
		if res == nil {
			continue
		}
		rep.Resources[key] = res
		rep.Counts[res.State]++
		for _, h := range holds {
			rep.holds[h.node] = append(rep.holds[h.node], Hold{Resource: res.Name, Reason: h.reason})
		}
	}
	// Resources were visited in name order, so every node's holds are sorted already.
	return rep
}

type nodeHold struct{ node, reason string }

// replica is what the classification looks at of one active replica.
type replica struct {
	view    *linstor.ResourceView
	key     string // lower-case node name
	diskful bool
	known   bool
	disk    string
}

func classifyResource(key string, views []*linstor.ResourceView, in *Input) (*Resource, []nodeHold) {
	var prev *Resource
	var prevNow time.Time
	if in.Previous != nil {
		prev, prevNow = in.Previous.Resources[key], in.Previous.Now
	}
	var active []replica
	var inactive []string
	leaving := 0
	for _, v := range views {
		switch {
		case hasAny(v, leavingFlags):
			leaving++
		case v.HasFlag("INACTIVE"):
			inactive = append(inactive, v.NodeName)
		default:
			disk := replicaDisk(v)
			active = append(active, replica{
				view:    v,
				key:     strings.ToLower(v.NodeName),
				diskful: !hasAny(v, disklessFlags),
				known:   v.InUse != nil || disk != "",
				disk:    disk,
			})
		}
	}
	if leaving == len(views) {
		return nil, nil
	}

	res := &Resource{Name: views[0].Name}
	diskful := 0
	for _, r := range active {
		if r.diskful {
			diskful++
		}
	}
	if def, ok := in.Definitions[key]; ok {
		res.Name, res.UID = def.Name, def.UID
		res.Placed = 2
		if pc, ok := in.PlaceCounts[strings.ToLower(def.ResourceGroup)]; ok && pc > 0 {
			res.Placed = pc
		}
	} else {
		res.Placed = max(diskful, 1)
	}

	res.Replicas = make([]Replica, len(active))
	for i, r := range active {
		rr := Replica{Node: r.view.NodeName, Diskful: r.diskful, DiskState: r.disk, InUse: r.view.InUse, Toggling: hasAny(r.view, togglingFlags)}
		if r.diskful && len(r.view.Volumes) > 0 {
			rr.Pool = r.view.Volumes[0].StoragePool
		}
		if r.view.InUse != nil && *r.view.InUse {
			rr.LastInUse = in.Now
		} else if prev != nil {
			rr.LastInUse = prev.lastInUse(r.key)
		}
		res.Replicas[i] = rr
	}

	var holds []nodeHold
	if isDrbd(active) {
		holds = classifyDrbd(res, active, inactive, prev, prevNow, in.Now)
	} else {
		classifyPlain(res, active, inactive, diskful)
	}
	res.Since = in.Now
	if prev != nil && prev.State == res.State {
		res.Since = prev.Since
	}
	return res, holds
}

// classifyPlain: a resource without DRBD has no replication and no reported state;
// its diskful replicas are all there is to count.
func classifyPlain(res *Resource, active []replica, inactive []string, diskful int) {
	res.UpToDate = diskful
	nodes := replicaNodes(active, func(r replica) bool { return r.diskful })
	if diskful >= res.Placed {
		res.State = Healthy
		res.Message = fmt.Sprintf("%d of %d placed replicas present (%s), without replication", diskful, res.Placed, nodes)
		return
	}
	res.State = Degraded
	res.Message = fmt.Sprintf("%d of %d placed replicas present (%s), without replication%s", diskful, res.Placed, orNone(nodes), inactiveNote(inactive))
}

func classifyDrbd(res *Resource, active []replica, inactive []string, prev *Resource, prevNow, now time.Time) []nodeHold {
	voters := 0
	for _, r := range active {
		if r.view.Drbd != nil {
			voters++
		}
	}

	anyKnown := false
	for _, r := range active {
		if r.diskful && r.disk == diskUpToDate {
			res.UpToDate++
		}
		anyKnown = anyKnown || r.known
	}

	// Connections as the known replicas report them, towards active peers only. A cut
	// between two diskful replicas leaves the next write behind on one of them; a cut
	// to a diskless one leaves nothing behind (it has no data), only its vote is missing.
	var standAlonePairs, connectedPairs []Pair
	var cut, cutDiskless []string
	for _, r := range active {
		if !r.known || r.view.Drbd == nil {
			continue
		}
		for peer, c := range r.view.Drbd.Connections {
			j := indexOf(active, peer)
			if j < 0 {
				continue
			}
			p := active[j]
			switch {
			case c.Message == standAlone:
				standAlonePairs = appendPair(standAlonePairs, r.view.NodeName, p.view.NodeName)
			case c.Connected:
				connectedPairs = appendPair(connectedPairs, r.view.NodeName, p.view.NodeName)
			case p.known && r.key < p.key:
				what := fmt.Sprintf("%s and %s (%s)", r.view.NodeName, p.view.NodeName, orWord(c.Message, "not connected"))
				switch {
				case !r.diskful:
					cutDiskless = append(cutDiskless, what+"; "+r.view.NodeName+" has no disk")
				case !p.diskful:
					cutDiskless = append(cutDiskless, what+"; "+p.view.NodeName+" has no disk")
				default:
					cut = append(cut, what)
				}
			}
		}
	}
	sortPairs(standAlonePairs)
	sort.Strings(cut)
	sort.Strings(cutDiskless)
	res.StandAlone = standAlonePairs
	if len(standAlonePairs) > 0 {
		// Kept only where a split-brain resolution needs the sides: a handful of pairs
		// per resource in split brain, nothing for the others.
		sortPairs(connectedPairs)
		res.Connected = connectedPairs
	}

	q := quorumOf(active, voters)
	res.SyncPercent = syncPercent(active)
	// Linear from the last report: its progress rate holds for what is left.
	if res.SyncPercent != nil && prev != nil && prev.SyncPercent != nil && prevNow.Before(now) && *res.SyncPercent > *prev.SyncPercent {
		rate := (*res.SyncPercent - *prev.SyncPercent) / now.Sub(prevNow).Seconds()
		eta := time.Duration((100 - *res.SyncPercent) / rate * float64(time.Second)).Round(time.Second)
		res.SyncETA = &eta
	}

	var unintended, outdated []string
	for _, r := range active {
		if !r.diskful {
			continue
		}
		switch {
		case r.disk == diskDiskless && !hasAny(r.view, togglingFlags):
			unintended = append(unintended, r.view.NodeName)
		case r.disk == diskOutdated:
			outdated = append(outdated, r.view.NodeName)
		}
	}

	switch {
	case len(standAlonePairs) > 0:
		res.State = SplitBrain
		res.Message = splitBrainMessage(res, standAlonePairs, now)
	case q.lost && !mayPromote(active):
		res.State = QuorumLost
		res.Message = fmt.Sprintf("no replica reaches quorum (a majority of %d voters): %s", voters, q.describe(active, voters))
	case len(unintended) > 0:
		res.State = UnintentionallyDiskless
		res.Message = fmt.Sprintf("%s should have a disk but %s Diskless: the backing disk failed or was detached; %s",
			strings.Join(unintended, ", "), plural(len(unintended), "reports", "report"), upToDateNote(res, active))
	case !anyKnown:
		res.State = Unknown
		res.Message = fmt.Sprintf("no satellite of %s reports the replicas' state", replicaNodes(active, nil))
	case res.UpToDate < res.Placed:
		res.State = Degraded
		res.Message = upToDateNote(res, active) + notUpToDateNote(active) + syncNote(res) + inactiveNote(inactive)
	case len(outdated) > 0:
		res.State = Outdated
		res.Message = fmt.Sprintf("%s %s Outdated and wait for a resync; %s", strings.Join(outdated, ", "), plural(len(outdated), "is", "are"), upToDateNote(res, active))
	case res.SyncPercent != nil || syncing(active):
		res.State = Syncing
		res.Message = upToDateNote(res, active) + syncNote(res)
	case len(cut) > 0:
		res.State = Degraded
		res.Message = fmt.Sprintf("%s; not connected: %s, so the next write leaves one behind", upToDateNote(res, active), strings.Join(cut, ", "))
		if len(cutDiskless) > 0 {
			res.Message += fmt.Sprintf("; not connected: %s", strings.Join(cutDiskless, ", "))
		}
	case len(cutDiskless) > 0:
		res.State = Degraded
		res.Message = fmt.Sprintf("%s; not connected: %s, so no write is left behind there, but its vote for quorum is missing",
			upToDateNote(res, active), strings.Join(cutDiskless, ", "))
	default:
		res.State = Healthy
		res.Message = upToDateNote(res, active)
	}
	return holdsOf(res, active, q, voters)
}

// quorum is the resource's quorum as the known replicas show it.
type quorum struct {
	enforced bool  // voters >= 3
	votes    []int // per active replica; 0 when unknown or not a voter
	best     int   // index of the quorate replica with the most votes, -1 when none
	lost     bool
}

func quorumOf(active []replica, voters int) quorum {
	q := quorum{enforced: voters >= 3, votes: make([]int, len(active)), best: -1}
	if !q.enforced {
		return q
	}
	unknown := 0
	for i, r := range active {
		if r.view.Drbd == nil {
			continue
		}
		if !r.known {
			unknown++
			continue
		}
		q.votes[i] = 1
		for peer, c := range r.view.Drbd.Connections {
			if j := indexOf(active, peer); j >= 0 && c.Connected && active[j].view.Drbd != nil {
				q.votes[i]++
			}
		}
		if q.votes[i]*2 > voters && (q.best < 0 || q.votes[i] > q.votes[q.best] ||
			q.votes[i] == q.votes[q.best] && isInUse(r) && !isInUse(active[q.best])) {
			q.best = i
		}
	}
	if q.best >= 0 {
		return q
	}
	// No known replica has quorum. An unknown one could have it only with the other
	// unknown ones and the known ones that report a connection to it.
	for _, u := range active {
		if u.known || u.view.Drbd == nil {
			continue
		}
		reach := unknown
		for _, k := range active {
			if k.known && k.view.Drbd != nil && connectedTo(k, u.key) {
				reach++
			}
		}
		if reach*2 > voters {
			return q
		}
	}
	q.lost = true
	return q
}

// needed tells whether the replica at i is in the quorate partition and the partition
// would lose quorum without its vote.
func (q quorum) needed(active []replica, i, voters int) bool {
	if !q.enforced || q.best < 0 {
		return false
	}
	if (q.votes[q.best]-1)*2 > voters {
		return false
	}
	return i == q.best || connectedTo(active[q.best], active[i].key)
}

func (q quorum) describe(active []replica, voters int) string {
	parts := make([]string, 0, len(active))
	for i, r := range active {
		switch {
		case r.view.Drbd == nil:
		case !r.known:
			parts = append(parts, r.view.NodeName+" state unknown")
		default:
			parts = append(parts, fmt.Sprintf("%s sees %d of %d", r.view.NodeName, q.votes[i], voters))
		}
	}
	return strings.Join(parts, ", ")
}

func holdsOf(res *Resource, active []replica, q quorum, voters int) []nodeHold {
	var holds []nodeHold
	for i, r := range active {
		switch {
		case r.diskful && r.disk == diskUpToDate && res.UpToDate == 1:
			holds = append(holds, nodeHold{r.key, "last UpToDate replica"})
		case r.diskful && !r.known && res.UpToDate == 0:
			holds = append(holds, nodeHold{r.key, "state unknown and no other UpToDate replica"})
		case q.needed(active, i, voters):
			holds = append(holds, nodeHold{r.key, "needed for quorum"})
		}
	}
	return holds
}

// syncStates are DRBD replication states of a resync (drbdsetup events2 "replication:").
var syncPrefixes = []string{"SyncSource", "SyncTarget", "PausedSync", "StartingSync", "WFBitMap", "WFSyncUUID"}

func isSyncState(s string) bool {
	for _, p := range syncPrefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func isTargetState(s string) bool { return s == "SyncTarget" || s == "PausedSyncT" }

func syncing(active []replica) bool {
	for _, r := range active {
		for _, v := range r.view.Volumes {
			for _, rs := range v.Replication {
				if isSyncState(rs.State) {
					return true
				}
			}
		}
	}
	return false
}

// syncPercent is the least done_percentage of the resync targets, or of any resync
// state when no target reports one.
func syncPercent(active []replica) *float64 {
	var target, any *float64
	for _, r := range active {
		for _, v := range r.view.Volumes {
			for _, rs := range v.Replication {
				if rs.DonePercentage == nil || !isSyncState(rs.State) {
					continue
				}
				p := *rs.DonePercentage
				if any == nil || p < *any {
					any = &p
				}
				if isTargetState(rs.State) && (target == nil || p < *target) {
					target = &p
				}
			}
		}
	}
	if target != nil {
		return target
	}
	return any
}

// splitBrainMessage: StandAlone follows a split brain under DRBD's default after-sb
// policy (disconnect), but DRBD also goes StandAlone when it refuses a connection for
// another reason (a protocol or configuration mismatch), so the message does not claim
// more than it sees.
func splitBrainMessage(res *Resource, pairs []Pair, now time.Time) string {
	sides := make([]string, 0, len(pairs))
	for _, p := range pairs {
		sides = append(sides, fmt.Sprintf("%s and %s", describeSide(res, p.A, now), describeSide(res, p.B, now)))
	}
	return fmt.Sprintf("StandAlone between %s: DRBD refuses to connect them, most likely after a split brain, or DRBD refused "+
		"the connection for another reason (see the satellites' logs); for a split brain, name the node whose changes to discard",
		strings.Join(sides, ", and between "))
}

// mayPromote: a known replica reports may_promote true. DRBD tracks which peers lost
// quorum (it remembers outdated peers), so the count of connections alone over-reports
// a loss; a replica that DRBD would let promote has quorum.
func mayPromote(active []replica) bool {
	for _, r := range active {
		if r.known && r.view.Drbd != nil && r.view.Drbd.MayPromote != nil && *r.view.Drbd.MayPromote {
			return true
		}
	}
	return false
}

func sortPairs(pairs []Pair) {
	sort.Slice(pairs, func(a, b int) bool {
		if pairs[a].A != pairs[b].A {
			return pairs[a].A < pairs[b].A
		}
		return pairs[a].B < pairs[b].B
	})
}

func describeSide(res *Resource, node string, now time.Time) string {
	r := res.replica(node)
	if r == nil {
		return node
	}
	use := "never seen in use"
	switch {
	case r.InUse != nil && *r.InUse:
		use = "in use"
	case !r.LastInUse.IsZero():
		use = "last in use " + r.LastInUse.UTC().Format(time.RFC3339)
	case r.InUse == nil:
		use = "use unknown"
	}
	return fmt.Sprintf("%s (%s, %s)", node, use, orWord(r.DiskState, "disk state unknown"))
}

func upToDateNote(res *Resource, active []replica) string {
	nodes := replicaNodes(active, func(r replica) bool { return r.diskful && r.disk == diskUpToDate })
	return fmt.Sprintf("%d of %d placed replicas UpToDate (%s)", res.UpToDate, res.Placed, orNone(nodes))
}

func notUpToDateNote(active []replica) string {
	var parts []string
	for _, r := range active {
		if !r.diskful || r.disk == diskUpToDate {
			continue
		}
		if !r.known {
			parts = append(parts, r.view.NodeName+": state unknown (satellite not ONLINE)")
		} else {
			parts = append(parts, r.view.NodeName+": "+orWord(r.disk, "no disk state"))
		}
	}
	if len(parts) == 0 {
		return "; no other diskful replica"
	}
	return "; " + strings.Join(parts, ", ")
}

func syncNote(res *Resource) string {
	if res.SyncPercent == nil {
		return ""
	}
	s := fmt.Sprintf("; resync %.1f%% done", *res.SyncPercent)
	if res.SyncETA != nil {
		s += fmt.Sprintf(", about %s left", res.SyncETA.Round(time.Second))
	}
	return s
}

func inactiveNote(inactive []string) string {
	if len(inactive) == 0 {
		return ""
	}
	return "; inactive: " + strings.Join(inactive, ", ")
}

func replicaNodes(active []replica, keep func(replica) bool) string {
	var nodes []string
	for _, r := range active {
		if keep == nil || keep(r) {
			nodes = append(nodes, r.view.NodeName)
		}
	}
	return strings.Join(nodes, ", ")
}

// replicaDisk is the worst disk state of the replica's volumes, "" when none is known.
func replicaDisk(v *linstor.ResourceView) string {
	worst := ""
	for _, vol := range v.Volumes {
		if vol.DiskState == "" {
			continue
		}
		if worst == "" || rankOf(vol.DiskState) < rankOf(worst) {
			worst = vol.DiskState
		}
	}
	return worst
}

func rankOf(disk string) int {
	if r, ok := diskRank[disk]; ok {
		return r
	}
	return diskRank["DUnknown"]
}

func isDrbd(active []replica) bool {
	for _, r := range active {
		if r.view.Drbd != nil {
			return true
		}
	}
	return false
}

func hasAny(v *linstor.ResourceView, flags []string) bool {
	for _, f := range flags {
		if v.HasFlag(f) {
			return true
		}
	}
	return false
}

func isInUse(r replica) bool { return r.view.InUse != nil && *r.view.InUse }

func connectedTo(r replica, peerKey string) bool {
	if r.view.Drbd == nil {
		return false
	}
	for peer, c := range r.view.Drbd.Connections {
		if c.Connected && strings.EqualFold(peer, peerKey) {
			return true
		}
	}
	return false
}

// indexOf finds the replica on node; a resource has a handful, a scan beats a map.
func indexOf(active []replica, node string) int {
	for i := range active {
		if strings.EqualFold(active[i].view.NodeName, node) {
			return i
		}
	}
	return -1
}

func appendPair(pairs []Pair, a, b string) []Pair {
	if b < a {
		a, b = b, a
	}
	for _, p := range pairs {
		if p.A == a && p.B == b {
			return pairs
		}
	}
	return append(pairs, Pair{A: a, B: b})
}

func orWord(s, word string) string {
	if s == "" {
		return word
	}
	return s
}

func orNone(s string) string { return orWord(s, "none") }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
