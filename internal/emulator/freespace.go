package emulator

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	lapi "github.com/LINBIT/golinstor/client"
)

// What the controller knows of a thin pool's space, and when it asks.
//
// LINSTOR 1.33.3 keeps each pool's free and total capacity in its FreeSpaceTracker,
// set by the satellite's full sync on connect (IntFullSyncResponse.updateCapacities),
// by the satellite's own updates after it applied changes (IntUpdateFreeCapacity →
// StorPoolInternalCallHandler.updateRealFreeSpace), and by every uncached list
// (FreeCapacityFetcherProto.fetchThinFreeSpaceInfo → parseFreeSpacesInTransaction).
// A list with cached=true, the /metrics page and the autoplacer
// (MaximumFreeSpaceStrategy) read the tracker; a list without it first asks every
// ONLINE node that has a thin pool (FreeCapacityFetcherProto.assembleRequests,
// hasThinPools: one API_REQUEST_THIN_FREE_SPACE per node, under a write lock of the
// storage pool definitions for the answers).
//
// The emulator pushes placement changes at once (allocatedKib is live in both views);
// what no satellite pushes is data written into a thin pool (FillThinPool) and a thin
// pool gone from its machine (BreakStoragePool): the cached view shows them only after
// an uncached list asked that node (an evacuation or eviction asks every node), the
// satellite reconnected, or the controller restarted. Not modelled: LINSTOR's tracker
// is empty (null capacity) between a controller's start and a satellite's full sync,
// which the node is not ONLINE for; and a satellite's update after it applied a
// resource change carries written data too (handleStorPoolApplied), which here waits
// for the next query.

// thinSeen is a thin pool as the controller's tracker last had it.
type thinSeen struct {
	usedKib int64
	lost    bool
}

// thinKinds are the kinds DeviceProviderKind.usesThinProvisioning names (of those the
// emulator models).
func thinKind(k lapi.ProviderKind) bool {
	return k == lapi.LVM_THIN || k == lapi.ZFS_THIN || k == lapi.FILE_THIN
}

// FillThinPool sets the data written into a node's thin pool, in KiB, as lvs reports
// it, on top of the volumes placed there: its free capacity shrinks by as much in
// the uncached lists at once, and in the cached view (and /metrics) only after the
// next uncached list asked the node.
func (e *Emulator) FillThinPool(nodeName, pool string, kib int64) error {
	return e.withMachinePool(nodeName, pool, func(h *host, p *lapi.StoragePool) error {
		if !thinKind(p.ProviderKind) {
			return fmt.Errorf("storage pool %q on node %q is %s: only thin pools fill with data", pool, nodeName, p.ProviderKind)
		}
		h.thinUsed[p.Props[poolNameKey]] = kib
		return nil
	})
}

// FreeSpaceQueries counts the free-space requests LINSTOR sent its satellites for
// uncached storage pool lists since New: one per ONLINE node with a thin pool per list.
func (e *Emulator) FreeSpaceQueries() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.freeSpaceQueries
}

// queryThinFreeSpace is fetchThinFreeSpaceInfo: every ONLINE node of the filter (all
// when empty) that has a thin pool is asked, and the tracker takes its answers. The
// caller holds e.mu.
func (e *Emulator) queryThinFreeSpace(nodes map[string]bool) {
	for _, n := range e.sortedNodes() {
		if len(nodes) > 0 && !nodes[strings.ToLower(n.Name)] || !e.online(n.Name) {
			continue
		}
		for _, p := range n.pools {
			if thinKind(p.ProviderKind) {
				e.freeSpaceQueries++
				e.refreshSeen(n)
				break
			}
		}
	}
}

// refreshSeen sets the tracker of every thin pool of n to what the machine has (a
// query's answer, or a full sync). The caller holds e.mu.
func (e *Emulator) refreshSeen(n *node) {
	n.seenThin = map[string]thinSeen{}
	for _, p := range n.pools {
		e.seeThin(n, p)
	}
}

// seeThin sets the tracker of one pool of n from the machine, if it is thin. The
// caller holds e.mu.
func (e *Emulator) seeThin(n *node, p *lapi.StoragePool) {
	if !thinKind(p.ProviderKind) {
		return
	}
	if n.seenThin == nil {
		n.seenThin = map[string]thinSeen{}
	}
	n.seenThin[strings.ToLower(p.StoragePoolName)] = thinSeen{usedKib: e.thinUsedKib(p), lost: e.poolLost(p)}
}

// thinUsedKib is the data FillThinPool wrote into p's thin pool. The caller holds e.mu.
func (e *Emulator) thinUsedKib(p *lapi.StoragePool) int64 {
	h := e.hosts[hostKey(p.NodeName)]
	if h == nil || !thinKind(p.ProviderKind) {
		return 0
	}
	return h.thinUsed[p.Props[poolNameKey]]
}

// seen is what the tracker has of p: the machine's state at the last query or full
// sync (zero before either: the pool as it was made).
func (e *Emulator) seen(p *lapi.StoragePool) thinSeen {
	n := e.nodes[strings.ToLower(p.NodeName)]
	if n == nil {
		return thinSeen{}
	}
	return n.seenThin[strings.ToLower(p.StoragePoolName)]
}

// HangFreeSpaceQuery makes a node's satellite stop answering free-space queries, as
// when lvs blocks on a dead disk: LINSTOR sets no timeout on them
// (FreeCapacityFetcherProto.prepareFreeSpaceApiCall, peer.apiCall), so every uncached
// storage pool list that asks the node hangs until its client gives up. The cached
// lists answer. false answers again.
func (e *Emulator) HangFreeSpaceQuery(nodeName string, hang bool) error {
	return e.withNode(nodeName, func(n *node) { n.freeSpaceHangs = hang })
}

// hangingQuery holds an uncached storage pool list that asks a node whose free-space
// query hangs until the client goes away, or the node answers again or is no longer
// connected (LINSTOR ends the wait for a peer that disconnects), then answers it.
func (e *Emulator) hangingQuery(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for !fromCache(r) && e.asksHungNode(r) {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
		next(w, r)
	}
}

// asksHungNode: the uncached list r asks a node with a thin pool whose query hangs.
func (e *Emulator) asksHungNode(r *http.Request) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	filter := queryList(r, "nodes")
	if node := r.PathValue("node"); node != "" {
		filter = map[string]bool{strings.ToLower(node): true}
	}
	for _, n := range e.nodes {
		if !n.freeSpaceHangs || len(filter) > 0 && !filter[strings.ToLower(n.Name)] || !e.online(n.Name) {
			continue
		}
		for _, p := range n.pools {
			if thinKind(p.ProviderKind) {
				return true
			}
		}
	}
	return false
}
