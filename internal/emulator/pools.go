package emulator

import (
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"sort"
	"strings"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"
	"github.com/google/uuid"

	"github.com/linstor-operator/linstor-operator/pkg/linstor/props"
)

// defaultPoolCapacityKib is what a pool without a device-pool size reports: 100 GiB.
const defaultPoolCapacityKib = 100 << 20

// poolView renders a pool as the list calls show it (cached=false, the default; the
// server's CtrlStorPoolListApiCallHandler.listStorPools). Capacity is known only while
// the satellite is ONLINE; otherwise both capacities are left out and the pool carries a
// WARN_NOT_CONNECTED report (CtrlStorPoolListApiCallHandler.assembleList). Diskless
// pools report Long.MAX_VALUE. A thin pool whose backing storage is gone
// (BreakStoragePool) carries the error of the satellite's failed free-space query and
// reports 0 of 0 bytes (brokenPoolReports).
func (e *Emulator) poolView(p *lapi.StoragePool) lapi.StoragePool {
	return e.poolViewFrom(p, false)
}

// poolViewFrom renders a pool from the live query (fromCache false) or from the
// controller's cache (true: GET ...?cached=true, and the /metrics page, which lists
// pools with CtrlStorPoolListApiCallHandler.listStorPoolsCached). Both go through
// assembleList, which clears each pool's reports (StorPool.clearReports) and adds back
// the not-connected warning, and, only when the satellites were asked
// (FreeCapacityFetcherProto.fetchThinFreeSpaceInfo, not from the cache), the errors
// of their answers: from the cache a pool never has an error report.
func (e *Emulator) poolViewFrom(p *lapi.StoragePool, fromCache bool) lapi.StoragePool {
	out := *p
	out.Props = maps.Clone(p.Props)
	switch {
	case !e.online(p.NodeName):
		out.FreeCapacity, out.TotalCapacity = 0, 0
		out.Reports = []lapi.ApiCallRc{{RetCode: warnNotConnected, Message: fmt.Sprintf("No active connection to satellite '%s'", p.NodeName),
			Details: "The controller is trying to (re-) establish a connection to the satellite. The controller stored the changes and as soon the satellite is connected, it will receive this update."}}
	case p.ProviderKind == lapi.DISKLESS:
		out.FreeCapacity, out.TotalCapacity = math.MaxInt64, math.MaxInt64
	case fromCache && e.seen(p).lost, !fromCache && e.poolLost(p):
		// The failed query answers 0 of 0 (ProtoCtrlStltSerializerBuilder
		// .buildStorPoolFreeSpace), which the controller also stores in the pool's free
		// space tracker (FreeCapacityFetcherProto.parseFreeSpacesInTransaction), so the
		// cached view shows 0 too, once a query saw it (freespace.go).
		out.FreeCapacity, out.TotalCapacity = 0, 0
		out.Reports = nil
		if !fromCache {
			out.Reports = brokenPoolReports(p)
		}
	case fromCache:
		out.FreeCapacity = p.TotalCapacity - e.allocatedKib(p.NodeName, p.StoragePoolName) - e.seen(p).usedKib
	default:
		out.FreeCapacity = p.TotalCapacity - e.allocatedKib(p.NodeName, p.StoragePoolName) - e.thinUsedKib(p)
	}
	return out
}

// poolLost: the pool's backing storage is gone from its machine (BreakStoragePool).
// The caller holds e.mu.
func (e *Emulator) poolLost(p *lapi.StoragePool) bool {
	h := e.hosts[hostKey(p.NodeName)]
	return h != nil && p.ProviderKind == lapi.LVM_THIN && h.lostThin[p.Props[poolNameKey]]
}

// brokenPoolReports is what LINSTOR 1.33.3's REST storage-pool list and view
// (rest/v1/StoragePools.listStoragePools, rest/v1/View.viewStoragePools, both with
// cached=false) answer for an LVM_THIN pool whose thin volume is gone:
//   - the satellite's free-space query (ReqFreeSpace.executeInScope, thin pools only:
//     StltApiCallHandlerUtils.getSpaceInfo(true)) fails in LvmThinProvider.getSpaceInfo
//     with StorageException "Thin pool 'vg/lv' does not exist.";
//     StltApiCallHandlerUtils.getStoragePoolSpaceInfoOrError turns it into one
//     FAIL_UNKNOWN_ERROR entry "Failed to query free space from storage pool" with the
//     exception's message as cause;
//   - the controller (FreeCapacityFetcherProto.parseFreeSpacesInTransaction) prefixes
//     the message with "Node: '<node>', storage pool: '<pool>' - "
//     (ProtoDeserializationUtils.parseApiCallRc) and CtrlStorPoolListApiCallHandler
//     .assembleList adds it to the pool's reports (StorPool.addReports) after clearing
//     them; Json.storPoolApiToStoragePool serializes them as "reports".
//
// The satellite asks only thin pools (DeviceProviderKind.usesThinProvisioning), and
// assembleList clears every pool's reports, so a thick pool never shows one there.
func brokenPoolReports(p *lapi.StoragePool) []lapi.ApiCallRc {
	return []lapi.ApiCallRc{{
		RetCode: failUnknownError,
		Message: fmt.Sprintf("Node: '%s', storage pool: '%s' - Failed to query free space from storage pool", p.NodeName, p.StoragePoolName),
		Cause:   fmt.Sprintf("Thin pool '%s' does not exist.", p.Props[poolNameKey]),
	}}
}

// failUnknownError is FAIL_UNKNOWN_ERROR as the signed long the server sends.
var failUnknownError = rc(lapiconst.FailUnknownError, "").RetCode

// BreakStoragePool removes the backing storage of a node's LVM_THIN storage pool
// from its machine, as `lvremove` of the thin pool would (the volume group stays):
// LINSTOR's REST storage-pool list and view then carry the satellite's error report
// for it (brokenPoolReports) and 0 bytes of capacity, while its /metrics page still
// counts no error (it lists pools from the cache). Every LINSTOR pool backed by the
// same thin pool breaks with it. Only LVM_THIN is modelled: LINSTOR asks the
// satellites about thin pools only, so a thick pool's loss never shows in the list.
// RepairStoragePool undoes it; Reset forgets it with the machine's other changes.
func (e *Emulator) BreakStoragePool(nodeName, pool string) error {
	return e.setPoolLost(nodeName, pool, true)
}

// RepairStoragePool brings back the backing storage BreakStoragePool removed.
func (e *Emulator) RepairStoragePool(nodeName, pool string) error {
	return e.setPoolLost(nodeName, pool, false)
}

func (e *Emulator) setPoolLost(nodeName, pool string, lost bool) error {
	return e.withMachinePool(nodeName, pool, func(h *host, p *lapi.StoragePool) error {
		switch {
		case p.ProviderKind != lapi.LVM_THIN:
			return fmt.Errorf("storage pool %q on node %q is %s: only LVM_THIN pools can be broken", pool, nodeName, p.ProviderKind)
		case p.Props[poolNameKey] == "":
			return fmt.Errorf("storage pool %q on node %q has no %s", pool, nodeName, poolNameKey)
		case lost:
			h.lostThin[p.Props[poolNameKey]] = true
		default:
			delete(h.lostThin, p.Props[poolNameKey])
		}
		return nil
	})
}

// withMachinePool runs f on a node's pool and the machine behind the node, with e.mu
// held.
func (e *Emulator) withMachinePool(nodeName, pool string, f func(*host, *lapi.StoragePool) error) error {
	var err error
	werr := e.withNode(nodeName, func(n *node) {
		p := n.pools[strings.ToLower(pool)]
		if p == nil {
			err = fmt.Errorf("storage pool %q on node %q not found", pool, nodeName)
			return
		}
		err = f(e.machine(n.Name), p)
	})
	if werr != nil {
		return werr
	}
	return err
}

// allocatedKib sums the volumes placed in a pool.
func (e *Emulator) allocatedKib(nodeName, pool string) int64 {
	var sum int64
	for _, rd := range e.rds {
		if rep := rd.resources[nodeName]; rep != nil && strings.EqualFold(rep.pool, pool) {
			for _, v := range rd.volumes {
				sum += int64(v.SizeKib)
			}
		}
	}
	return sum
}

func sortedPools(n *node) []*lapi.StoragePool {
	out := make([]*lapi.StoragePool, 0, len(n.pools))
	for _, p := range n.pools {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		return strings.ToUpper(out[i].StoragePoolName) < strings.ToUpper(out[j].StoragePoolName)
	})
	return out
}

func (e *Emulator) listPools(w http.ResponseWriter, r *http.Request, n *node) {
	if !fromCache(r) {
		e.queryThinFreeSpace(map[string]bool{strings.ToLower(n.Name): true})
	}
	out := []lapi.StoragePool{}
	for _, p := range sortedPools(n) {
		out = append(out, e.poolViewFrom(p, fromCache(r)))
	}
	writeJSON(w, http.StatusOK, out)
}

func (e *Emulator) viewPools(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.advance()
	nodes := queryList(r, "nodes")
	pools := queryList(r, "storage_pools")
	if !fromCache(r) {
		e.queryThinFreeSpace(nodes)
	}
	out := []lapi.StoragePool{}
	for _, n := range e.sortedNodes() {
		if len(nodes) > 0 && !nodes[strings.ToLower(n.Name)] {
			continue
		}
		for _, p := range sortedPools(n) {
			if len(pools) == 0 || pools[strings.ToLower(p.StoragePoolName)] {
				out = append(out, e.poolViewFrom(p, fromCache(r)))
			}
		}
	}
	// By storage pool definition (upper-cased name), then by node.
	sort.SliceStable(out, func(i, j int) bool {
		return strings.ToUpper(out[i].StoragePoolName) < strings.ToUpper(out[j].StoragePoolName)
	})
	writeJSON(w, http.StatusOK, out)
}

func (e *Emulator) getPool(w http.ResponseWriter, r *http.Request, n *node) {
	name := r.PathValue("pool")
	p := n.pools[strings.ToLower(name)]
	if p == nil {
		notFound(w, lapiconst.FailNotFoundStorPool, "Storage pool '%s' on node '%s' not found.", name, n.Name)
		return
	}
	if !fromCache(r) {
		e.queryThinFreeSpace(map[string]bool{strings.ToLower(n.Name): true})
	}
	writeJSON(w, http.StatusOK, e.poolViewFrom(p, fromCache(r)))
}

// fromCache is the list calls' query parameter cached (default false; Jersey parses
// a boolean case-insensitively, anything but "true" is false).
func fromCache(r *http.Request) bool {
	return strings.EqualFold(r.URL.Query().Get("cached"), "true")
}

// rewriteDriverProps is what the REST layer does to a create request's properties
// (rest/v1/StoragePools.convertStorPoolProp), whatever the provider kind: the old
// driver keys become StorDriver/StorPoolName, and a thin pool is appended to it.
func rewriteDriverProps(in map[string]string) map[string]string {
	out := maps.Clone(in)
	if out == nil {
		return map[string]string{}
	}
	for _, k := range []string{"StorDriver/LvmVg", "StorDriver/ZPool", "StorDriver/ZPoolThin", "StorDriver/FileDir"} {
		if v, ok := out[k]; ok {
			out[poolNameKey] = v
			delete(out, k)
		}
	}
	if thin, ok := out["StorDriver/ThinPool"]; ok {
		vg, has := out[poolNameKey]
		if !has {
			vg = "null" // Java string concatenation of a missing value
		}
		out[poolNameKey] = vg + "/" + thin
		delete(out, "StorDriver/ThinPool")
	}
	return out
}

const poolNameKey = "StorDriver/StorPoolName"

// warnNotConnected is WARN_NOT_CONNECTED as the signed long the server sends.
var warnNotConnected = rc(lapiconst.WarnNotConnected, "").RetCode

// providerKinds maps what LinstorParsingUtils.asProviderKind accepts (any case) to the
// kind; only the kinds the emulator models are listed.
var providerKinds = map[string]lapi.ProviderKind{
	"DISKLESS": lapi.DISKLESS, "DRBD_DISKLESS": lapi.DISKLESS, "DRBDDISKLESS": lapi.DISKLESS,
	"LVM": lapi.LVM, "LVM_THIN": lapi.LVM_THIN, "LVMTHIN": lapi.LVM_THIN,
	"ZFS": lapi.ZFS, "ZFS_THIN": lapi.ZFS_THIN, "ZFSTHIN": lapi.ZFS_THIN,
	"FILE": lapi.FILE, "FILE_THIN": lapi.FILE_THIN,
}

// allocationGranularity is what StorPoolControllerFactory.setDefaultProps records for
// a new pool, in KiB (not whitelisted: a StorDriver namespace delete is refused).
var allocationGranularity = map[lapi.ProviderKind]string{
	lapi.LVM: "4096", lapi.LVM_THIN: "4096", lapi.ZFS: "8", lapi.ZFS_THIN: "8", lapi.FILE: "1", lapi.FILE_THIN: "1",
}

// createPool follows rest/v1/StoragePools.createStorPool and CtrlStorPoolCrtApiCallHandler:
// property rewriting, provider kind (a synchronous 400), pool name, the satellite's
// support of the provider (an offline satellite supports none that need tools),
// uniqueness, PrefNic, then the whitelist; the whole request changes nothing on a
// refusal.
func (e *Emulator) createPool(w http.ResponseWriter, r *http.Request, n *node) {
	var in lapi.StoragePool
	if !decode(w, r, &in, http.StatusInternalServerError) {
		return
	}
	kind, ok := providerKinds[strings.ToUpper(string(in.ProviderKind))]
	if !ok {
		writeJSON(w, http.StatusBadRequest, []apiCallRc{rc(lapiconst.FailInvldLayerKind, "Given provider kind '%s' is invalid", in.ProviderKind)})
		return
	}
	name := in.StoragePoolName
	refs := []string{"Node", n.Name, "StorPoolDfn", name}
	fail := func(code uint64, format string, args ...any) {
		writeRC(w, http.StatusCreated, rc(code|crtPool, format, args...).withRefs(refs...))
	}
	switch {
	case checkName(name, 3, 48, "-") != "":
		fail(lapiconst.FailInvldStorPoolName, "The given storage pool name '%s' is invalid.", name)
		return
	case kind != lapi.DISKLESS && !e.online(n.Name):
		// The supported providers come from the satellite's handshake; an offline peer has none.
		fail(lapiconst.FailStltDoesNotSupportProvider, "The satellite does not support the device provider %s", kind)
		return
	case !holdsPools(n.Type):
		fail(lapiconst.FailInvldStorDriver, "Node '%s' of type %s cannot hold storage pools", n.Name, n.Type)
		return
	}
	answer, refused := e.addPool(n, name, kind, rewriteDriverProps(in.Props), defaultPoolCapacityKib)
	if refused != nil {
		answer = []apiCallRc{*refused}
	}
	writeRC(w, http.StatusCreated, answer...)
}

// addPool is the rest of CtrlStorPoolCrtApiCallHandler.createStorPoolInTransaction, for
// a plain create and for a device pool's with_storage_pool: uniqueness, PrefNic, the
// whitelist, then the pool and its answer. A refusal changes nothing.
func (e *Emulator) addPool(n *node, name string, kind lapi.ProviderKind, requested map[string]string, capacityKib int64) ([]apiCallRc, *apiCallRc) {
	refs := []string{"Node", n.Name, "StorPoolDfn", name}
	refuse := func(entry apiCallRc) ([]apiCallRc, *apiCallRc) {
		entry = entry.withRefs(refs...)
		return nil, &entry
	}
	if n.pools[strings.ToLower(name)] != nil {
		return refuse(rc(lapiconst.FailExistsStorPool|crtPool, "Node: %s, Storage pool name: %s already exists.", n.Name, name))
	}
	if pref, ok := requested["PrefNic"]; ok && findNetIf(n, pref) < 0 {
		return refuse(rc(lapiconst.FailInvldProp|crtPool, "The network interface '%s' of node '%s' does not exist!", pref, n.Name))
	}
	poolProps := map[string]string{}
	set, bad := setProps(props.StoragePool, poolProps, requested)
	if bad != nil {
		return refuse(propRefused(*bad, crtPool))
	}
	if g := allocationGranularity[kind]; g != "" {
		poolProps["StorDriver/internal/AllocationGranularity"] = g
	}
	p := &lapi.StoragePool{
		StoragePoolName: name, NodeName: n.Name, ProviderKind: kind, Props: poolProps,
		Uuid: uuid.NewString(), TotalCapacity: capacityKib, FreeSpaceMgrName: n.Name + ";" + name,
		SupportsSnapshots: supportsSnapshots(kind), StaticTraits: staticTraits(kind),
	}
	n.pools[strings.ToLower(name)] = p
	// A new pool's tracker is filled from the satellite's answer to the create
	// (CtrlStorPoolCrtApiCallHandler → handleStorPoolApplied → updateRealFreeSpace).
	e.seeThin(n, p)
	var answer []apiCallRc
	if len(set) > 0 {
		answer = append(answer, rc(lapiconst.MaskStorPool|lapiconst.MaskCrt|lapiconst.Created, "Successfully set property key(s): %s", strings.Join(set, ",")).withRefs(refs...))
	}
	answer = append(answer,
		rc(lapiconst.Created|crtPool, "New storage pool '%s' on node '%s' registered.", name, n.Name).
			withDetails("Storage pool '%s' on node '%s' UUID is: %s", name, n.Name, p.Uuid).withRefs(append(refs, "UUID", p.Uuid)...),
		rc(lapiconst.Modified|crtPool, "Storage pool updated on '%s'", n.Name).withRefs(refs...))
	if !e.online(n.Name) {
		answer = append(answer[:len(answer)-1], offlineUpdate(n.Name, crtPool, "Registration of storage pool '%s' on node '%s'", name, n.Name)...)
	}
	return answer, nil
}

func supportsSnapshots(k lapi.ProviderKind) bool {
	return k == lapi.LVM_THIN || k == lapi.ZFS || k == lapi.ZFS_THIN || k == lapi.FILE_THIN || k == lapi.FILE
}

func staticTraits(k lapi.ProviderKind) map[string]string {
	if k == lapi.DISKLESS {
		return map[string]string{"SupportsSnapshots": "false"}
	}
	return map[string]string{"Provisioning": provisioning(k), "SupportsSnapshots": fmt.Sprint(supportsSnapshots(k))}
}

// modifyPool: a pool missing on the node is FAIL_NOT_FOUND_STOR_POOL_DFN (404)
// (CtrlApiDataLoader.loadStorPool); properties as for every object; PUT does not
// rewrite driver keys.
func (e *Emulator) modifyPool(w http.ResponseWriter, r *http.Request, n *node) {
	var in lapi.GenericPropsModify
	if !decode(w, r, &in, http.StatusInternalServerError) {
		return
	}
	name := r.PathValue("pool")
	refs := []string{"Node", n.Name, "StorPoolDfn", name}
	p := n.pools[strings.ToLower(name)]
	if p == nil {
		writeRC(w, http.StatusOK, rc(lapiconst.FailNotFoundStorPoolDfn|modPool, "Storage pool '%s' on node '%s' not found.", name, n.Name).withRefs(refs...))
		return
	}
	answer, next, bad := modifyProps(props.StoragePool, p.Props, in, lapiconst.MaskStorPool)
	if bad != nil {
		writeRC(w, http.StatusOK, bad.withRefs(refs...))
		return
	}
	changed := !equalMaps(p.Props, next)
	p.Props = next
	answer = append(answer, rc(lapiconst.Modified|modPool, "Storage pool '%s' on node '%s' modified.", p.StoragePoolName, n.Name).withRefs(append(refs, "UUID", p.Uuid)...))
	if changed && !e.online(n.Name) {
		answer = append(answer, offlineUpdate(n.Name, modPool, "Modification of storage pool '%s' on node '%s'", p.StoragePoolName, n.Name)...)
	}
	writeRC(w, http.StatusOK, answer...)
}

// deletePool follows CtrlStorPoolApiCallHandler.deleteStorPool: the default diskless
// pool is never deleted, a missing pool is a warning, and a pool that holds volumes is
// refused: deleting it would destroy data.
func (e *Emulator) deletePool(w http.ResponseWriter, r *http.Request, n *node) {
	name := r.PathValue("pool")
	refs := []string{"Node", n.Name, "StorPoolDfn", name}
	if strings.EqualFold(name, disklessPool) {
		writeRC(w, http.StatusOK, rc(lapiconst.FailInvldStorPoolName|delPool, "The default diskless storage pool cannot be deleted!").withRefs(refs...))
		return
	}
	p := n.pools[strings.ToLower(name)]
	if p == nil {
		writePoolNotFound(w, n.Name, name)
		return
	}
	var users []string
	for _, rd := range e.sortedRDs() {
		if rep := rd.resources[n.Name]; rep != nil && strings.EqualFold(rep.pool, p.StoragePoolName) {
			for _, v := range rd.volumes {
				users = append(users, fmt.Sprintf("Node name: '%s', resource name: '%s', volume number: %d, resource suffix: ''", n.Name, rd.Name, *v.VolumeNumber))
			}
		}
	}
	if len(users) > 0 {
		writeRC(w, http.StatusOK, rc(lapiconst.FailInUse|delPool, "The specified storage pool '%s' on node '%s' can not be deleted as volumes / snapshot-volumes are still using it.", p.StoragePoolName, n.Name).
			withDetails("%s", strings.Join(users, "\n")).withCorrection("Delete the listed volumes and snapshot-volumes first.").withRefs(refs...))
		return
	}
	delete(n.pools, strings.ToLower(name))
	delete(n.seenThin, strings.ToLower(name)) // the tracker goes with the pool
	answer := []apiCallRc{rc(lapiconst.Deleted|delPool, "Node: %s, Storage pool name: %s deleted.", n.Name, p.StoragePoolName).
		withDetails("Storage pool '%s' on node '%s' UUID was: %s", p.StoragePoolName, n.Name, p.Uuid).withRefs(refs...)}
	if !e.online(n.Name) {
		answer = append(answer, rc(lapiconst.WarnNotConnected|modPool, "No active connection to satellite '%s'", n.Name).withRefs(refs...))
	}
	writeRC(w, http.StatusOK, answer...)
}

func poolDeleteMissing(w http.ResponseWriter, r *http.Request) {
	writePoolNotFound(w, r.PathValue("node"), r.PathValue("pool"))
}

func writePoolNotFound(w http.ResponseWriter, nodeName, pool string) {
	writeRC(w, http.StatusOK, rc(lapiconst.WarnNotFound|delPool, "Deletion of storage pool '%s' on node '%s' had no effect.", pool, nodeName).
		withCause("Storage pool '%s' on node '%s' does not exist.", pool, nodeName).withDetails("Node: %s, Storage pool name: %s", nodeName, pool).
		withRefs("Node", nodeName, "StorPoolDfn", pool))
}

func provisioning(k lapi.ProviderKind) string {
	switch k {
	case lapi.LVM_THIN, lapi.ZFS_THIN, lapi.FILE_THIN:
		return "Thin"
	}
	return "Fat"
}

// listNodeConnections: without parameters, every connection that has properties; with
// node_a (and node_b) the nodes must exist (404); with both, a connection without
// properties is still answered, empty (CtrlNodeConnectionApiCallHandler).
func (e *Emulator) listNodeConnections(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	a, b := r.URL.Query().Get("node_a"), r.URL.Query().Get("node_b")
	for _, name := range []string{a, b} {
		if name != "" && e.nodes[strings.ToLower(name)] == nil {
			notFound(w, lapiconst.FailNotFoundNode, "Node '%s' not found.", name)
			return
		}
	}
	keys := make([][2]string, 0, len(e.nodeConns))
	for k := range e.nodeConns {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i][0]+"/"+keys[i][1] < keys[j][0]+"/"+keys[j][1] })
	out := []lapi.Connection{}
	for _, k := range keys {
		if (a == "" || strings.EqualFold(a, k[0]) || strings.EqualFold(a, k[1])) && (b == "" || strings.EqualFold(b, k[0]) || strings.EqualFold(b, k[1])) {
			out = append(out, lapi.Connection{NodeA: k[0], NodeB: k[1], Props: maps.Clone(e.nodeConns[k])})
		}
	}
	if a != "" && b != "" && len(out) == 0 {
		k := connKey(e.nodes[strings.ToLower(a)].Name, e.nodes[strings.ToLower(b)].Name)
		out = append(out, lapi.Connection{NodeA: k[0], NodeB: k[1]})
	}
	writeJSON(w, http.StatusOK, out)
}

func connKey(a, b string) [2]string {
	if a > b {
		a, b = b, a
	}
	return [2]string{a, b}
}

// modifyNodeConnection follows CtrlNodeConnectionApiCallHandler.modify: DRBD Net and
// PeerDevice options are whitelisted, Paths/<path>/<node> must name one of the two
// nodes and one of its net interfaces; a connection whose properties end up empty is
// removed.
func (e *Emulator) modifyNodeConnection(w http.ResponseWriter, r *http.Request) {
	var in lapi.GenericPropsModify
	if !decode(w, r, &in, http.StatusInternalServerError) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	const ctx = lapiconst.MaskMod | lapiconst.MaskNodeConn
	an, bn := r.PathValue("a"), r.PathValue("b")
	refs := []string{"FirstNode", an, "SecondNode", bn}
	a, okA := e.nodes[strings.ToLower(an)]
	b, okB := e.nodes[strings.ToLower(bn)]
	if !okA || !okB {
		if len(in.OverrideProps) > 0 {
			writeRC(w, http.StatusOK, rc(lapiconst.FailUnknownError|ctx, "Modification of node connection between nodes '%s' and '%s' failed due to an unhandled exception of type NullPointerException.", an, bn).withRefs(refs...))
			return
		}
		writeRC(w, http.StatusOK, rc(lapiconst.WarnNotFound|ctx, "Node connection between nodes '%s' and '%s' does not exist", an, bn).withRefs(refs...))
		return
	}
	for _, k := range slices.Sorted(maps.Keys(in.OverrideProps)) {
		if !strings.HasPrefix(k, "Paths/") {
			continue
		}
		parts := strings.Split(k, "/")
		var why string
		switch {
		case len(parts) != 3:
			why = "Connection path property invalid."
		case !strings.EqualFold(parts[2], a.Name) && !strings.EqualFold(parts[2], b.Name):
			why = "Connection path node unknown."
		case findNetIf(e.nodes[strings.ToLower(parts[2])], in.OverrideProps[k]) < 0:
			why = "NetInterface for node unknown."
		}
		if why != "" {
			writeRC(w, http.StatusOK, rc(lapiconst.FailInvldProp|ctx, "%s", why).withDetails("Property %s = %s", k, in.OverrideProps[k]).withRefs(refs...))
			return
		}
	}
	k := connKey(a.Name, b.Name)
	if _, exists := e.nodeConns[k]; !exists && len(in.OverrideProps) == 0 {
		writeRC(w, http.StatusOK, rc(lapiconst.WarnNotFound|ctx, "Node connection between nodes '%s' and '%s' does not exist", an, bn).withRefs(refs...))
		return
	}
	answer, next, bad := modifyProps(props.NodeConnection, e.nodeConns[k], in, lapiconst.MaskNodeConn)
	if bad != nil {
		writeRC(w, http.StatusOK, bad.withRefs(refs...))
		return
	}
	if len(next) == 0 {
		delete(e.nodeConns, k)
	} else {
		e.nodeConns[k] = next
	}
	answer = append(answer, rc(lapiconst.Modified|ctx, "Node connection between nodes '%s' and '%s' modified.", k[0], k[1]).withRefs(refs...))
	writeRC(w, http.StatusOK, answer...)
}

// offlineUpdate is how a pool change on an offline satellite ends: the change is
// committed, the satellite update fails with WARN_NOT_CONNECTED, and the handler turns
// that into an unknown error (a DelayedApiRcException it does not suppress): HTTP 500.
func offlineUpdate(nodeName string, ctx uint64, what string, args ...any) []apiCallRc {
	return []apiCallRc{
		rc(lapiconst.WarnNotConnected|ctx, "No active connection to satellite '%s'", nodeName),
		rc(lapiconst.FailUnknownError|ctx, what+" failed due to an unhandled exception of type DelayedApiRcException. Exceptions have been converted to responses", args...),
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
