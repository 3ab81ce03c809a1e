package emulator

import (
	"net/http"
	"sort"
	"strings"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"
	"github.com/google/uuid"
)

// defaultPoolCapacityKib is what a pool without a device-pool size reports: 100 GiB.
const defaultPoolCapacityKib = 100 << 20

func (e *Emulator) poolView(p *lapi.StoragePool) lapi.StoragePool {
	out := *p
	out.Props = copyMap(p.Props)
	out.FreeCapacity = p.TotalCapacity - e.allocatedKib(p.NodeName, p.StoragePoolName)
	if p.ProviderKind == lapi.DISKLESS {
		out.FreeCapacity = p.FreeCapacity
	}
	return out
}

// allocatedKib sums the volumes placed in a pool.
func (e *Emulator) allocatedKib(nodeName, pool string) int64 {
	var sum int64
	for _, rd := range e.rds {
		if rep := rd.resources[nodeName]; rep != nil && rep.pool == pool {
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
	sort.Slice(out, func(i, j int) bool { return out[i].StoragePoolName < out[j].StoragePoolName })
	return out
}

func (e *Emulator) listPools(w http.ResponseWriter, r *http.Request, n *node) {
	out := []lapi.StoragePool{}
	for _, p := range sortedPools(n) {
		out = append(out, e.poolView(p))
	}
	writeJSON(w, http.StatusOK, out)
}

func (e *Emulator) viewPools(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	nodes := queryList(r, "nodes")
	pools := queryList(r, "storage_pools")
	out := []lapi.StoragePool{}
	for _, n := range e.sortedNodes() {
		if len(nodes) > 0 && !nodes[strings.ToLower(n.Name)] {
			continue
		}
		for _, p := range sortedPools(n) {
			if len(pools) == 0 || pools[strings.ToLower(p.StoragePoolName)] {
				out = append(out, e.poolView(p))
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (e *Emulator) getPool(w http.ResponseWriter, r *http.Request, n *node) {
	p, ok := e.lookupPool(w, n, r.PathValue("pool"), 0)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, e.poolView(p))
}

func (e *Emulator) createPool(w http.ResponseWriter, r *http.Request, n *node) {
	var in lapi.StoragePool
	if !decode(w, r, &in) {
		return
	}
	const op = lapiconst.MaskStorPool | lapiconst.MaskCrt
	switch {
	case !validName(in.StoragePoolName):
		writeRC(w, http.StatusCreated, rc(lapiconst.FailInvldStorPoolName|op, "Storage pool name %q is invalid", in.StoragePoolName))
		return
	case n.pools[in.StoragePoolName] != nil:
		writeRC(w, http.StatusCreated, rc(lapiconst.FailExistsStorPool|op, "Storage pool %q exists on node %q", in.StoragePoolName, n.Name))
		return
	case !validProvider(in.ProviderKind):
		writeRC(w, http.StatusCreated, rc(lapiconst.FailInvldStorDriver|op, "Provider kind %q is invalid", in.ProviderKind))
		return
	case n.Type != "Satellite" && n.Type != "Combined":
		writeRC(w, http.StatusCreated, rc(lapiconst.FailInvldNodeType|op, "Node %q cannot hold storage pools", n.Name))
		return
	}
	p := &lapi.StoragePool{
		StoragePoolName: in.StoragePoolName, NodeName: n.Name, ProviderKind: in.ProviderKind, Props: copyMap(in.Props),
		Uuid: uuid.NewString(), TotalCapacity: defaultPoolCapacityKib, FreeSpaceMgrName: n.Name + ";" + in.StoragePoolName,
		SupportsSnapshots: in.ProviderKind == lapi.LVM_THIN || in.ProviderKind == lapi.ZFS || in.ProviderKind == lapi.ZFS_THIN || in.ProviderKind == lapi.FILE_THIN,
		StaticTraits:      map[string]string{"Provisioning": provisioning(in.ProviderKind)},
	}
	if p.Props == nil {
		p.Props = map[string]string{}
	}
	n.pools[p.StoragePoolName] = p
	writeRC(w, http.StatusCreated, rc(lapiconst.Created|op|lapiconst.MaskInfo, "Storage pool %q created on node %q.", p.StoragePoolName, n.Name))
}

func (e *Emulator) modifyPool(w http.ResponseWriter, r *http.Request, n *node) {
	var in lapi.GenericPropsModify
	if !decode(w, r, &in) {
		return
	}
	p, ok := e.lookupPool(w, n, r.PathValue("pool"), lapiconst.MaskMod)
	if !ok {
		return
	}
	applyProps(p.Props, in)
	writeRC(w, http.StatusOK, rc(lapiconst.Modified|lapiconst.MaskStorPool|lapiconst.MaskMod|lapiconst.MaskInfo, "Storage pool %q modified.", p.StoragePoolName))
}

// deletePool refuses pools that hold volumes: deleting them would destroy data.
func (e *Emulator) deletePool(w http.ResponseWriter, r *http.Request, n *node) {
	p, ok := e.lookupPool(w, n, r.PathValue("pool"), lapiconst.MaskDel)
	if !ok {
		return
	}
	for _, rd := range e.sortedRDs() {
		if rep := rd.resources[n.Name]; rep != nil && rep.pool == p.StoragePoolName {
			writeRC(w, http.StatusOK, rc(lapiconst.FailInUse|lapiconst.MaskStorPool|lapiconst.MaskDel, "Storage pool %q on node %q still holds volumes of %q", p.StoragePoolName, n.Name, rd.Name))
			return
		}
	}
	delete(n.pools, p.StoragePoolName)
	writeRC(w, http.StatusOK, rc(lapiconst.Deleted|lapiconst.MaskStorPool|lapiconst.MaskDel|lapiconst.MaskInfo, "Storage pool %q deleted.", p.StoragePoolName))
}

func (e *Emulator) lookupPool(w http.ResponseWriter, n *node, name string, op uint64) (*lapi.StoragePool, bool) {
	p, ok := n.pools[name]
	if !ok {
		writeRC(w, http.StatusOK, rc(lapiconst.FailNotFoundStorPool|lapiconst.MaskStorPool|op, "Storage pool %q not found on node %q.", name, n.Name))
	}
	return p, ok
}

func (e *Emulator) viewPhysicalStorage(w http.ResponseWriter, _ *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	type key struct {
		size int64
		rot  bool
	}
	groups := map[key]*lapi.PhysicalStorageViewItem{}
	var order []key
	for _, n := range e.sortedNodes() {
		for _, d := range n.disks {
			k := key{d.Size, d.Rotational}
			g, ok := groups[k]
			if !ok {
				g = &lapi.PhysicalStorageViewItem{Size: d.Size, Rotational: d.Rotational, Nodes: map[string][]lapi.PhysicalStorageDevice{}}
				groups[k] = g
				order = append(order, k)
			}
			g.Nodes[n.Name] = append(g.Nodes[n.Name], d.PhysicalStorageDevice)
		}
	}
	out := []lapi.PhysicalStorageViewItem{}
	for _, k := range order {
		out = append(out, *groups[k])
	}
	writeJSON(w, http.StatusOK, out)
}

func (e *Emulator) getPhysicalStorage(w http.ResponseWriter, r *http.Request, n *node) {
	writeJSON(w, http.StatusOK, append([]lapi.PhysicalStorageNode{}, n.disks...))
}

// createDevicePool consumes unused disks into a volume group or zpool and, when asked,
// creates the storage pool on top sized after the disks.
func (e *Emulator) createDevicePool(w http.ResponseWriter, r *http.Request, n *node) {
	var in lapi.PhysicalStorageCreate
	if !decode(w, r, &in) {
		return
	}
	const op = lapiconst.MaskPhysicalDevice | lapiconst.MaskCrt
	if in.ProviderKind != lapi.LVM && in.ProviderKind != lapi.LVM_THIN && in.ProviderKind != lapi.ZFS && in.ProviderKind != lapi.ZFS_THIN {
		writeRC(w, http.StatusCreated, rc(lapiconst.FailInvldProvider|op, "Device pools support LVM, LVM_THIN, ZFS and ZFS_THIN, not %q", in.ProviderKind))
		return
	}
	var size int64
	remaining := n.disks[:0:0]
	used := map[string]bool{}
	for _, p := range in.DevicePaths {
		used[p] = true
	}
	for _, d := range n.disks {
		if used[d.Device] {
			size += d.Size
			delete(used, d.Device)
		} else {
			remaining = append(remaining, d)
		}
	}
	if len(used) > 0 || len(in.DevicePaths) == 0 {
		writeRC(w, http.StatusCreated, rc(lapiconst.FailInvldConf|op, "Devices %v are not unused block devices of node %q", in.DevicePaths, n.Name))
		return
	}
	rcs := []lapi.ApiCallRc{rc(lapiconst.Created|op|lapiconst.MaskInfo, "Device pool %q created on node %q.", in.PoolName, n.Name)}
	if name := in.WithStoragePool.Name; name != "" {
		if n.pools[name] != nil {
			writeRC(w, http.StatusCreated, rc(lapiconst.FailExistsStorPool|lapiconst.MaskStorPool|lapiconst.MaskCrt, "Storage pool %q exists on node %q", name, n.Name))
			return
		}
		n.pools[name] = &lapi.StoragePool{
			StoragePoolName: name, NodeName: n.Name, ProviderKind: in.ProviderKind, Props: copyMap(in.WithStoragePool.Props), Uuid: uuid.NewString(),
			TotalCapacity: size / 1024, FreeSpaceMgrName: n.Name + ";" + name, StaticTraits: map[string]string{"Provisioning": provisioning(in.ProviderKind)},
		}
		if n.pools[name].Props == nil {
			n.pools[name].Props = map[string]string{}
		}
		rcs = append(rcs, rc(lapiconst.Created|lapiconst.MaskStorPool|lapiconst.MaskCrt|lapiconst.MaskInfo, "Storage pool %q created on node %q.", name, n.Name))
	}
	n.disks = remaining
	writeRC(w, http.StatusCreated, rcs...)
}

func validProvider(k lapi.ProviderKind) bool {
	switch k {
	case lapi.DISKLESS, lapi.LVM, lapi.LVM_THIN, lapi.ZFS, lapi.ZFS_THIN, lapi.FILE, lapi.FILE_THIN:
		return true
	}
	return false
}

func provisioning(k lapi.ProviderKind) string {
	switch k {
	case lapi.LVM_THIN, lapi.ZFS_THIN, lapi.FILE_THIN:
		return "Thin"
	}
	return "Fat"
}

func (e *Emulator) listNodeConnections(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	a, b := r.URL.Query().Get("node_a"), r.URL.Query().Get("node_b")
	keys := make([][2]string, 0, len(e.nodeConns))
	for k := range e.nodeConns {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i][0]+"/"+keys[i][1] < keys[j][0]+"/"+keys[j][1] })
	out := []lapi.Connection{}
	for _, k := range keys {
		if (a == "" || strings.EqualFold(a, k[0]) || strings.EqualFold(a, k[1])) && (b == "" || strings.EqualFold(b, k[0]) || strings.EqualFold(b, k[1])) {
			out = append(out, lapi.Connection{NodeA: k[0], NodeB: k[1], Props: copyMap(e.nodeConns[k])})
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (e *Emulator) modifyNodeConnection(w http.ResponseWriter, r *http.Request) {
	var in lapi.GenericPropsModify
	if !decode(w, r, &in) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	a, okA := e.nodes[strings.ToLower(r.PathValue("a"))]
	b, okB := e.nodes[strings.ToLower(r.PathValue("b"))]
	if !okA || !okB {
		writeRC(w, http.StatusOK, rc(lapiconst.FailNotFoundNode|lapiconst.MaskNodeConn|lapiconst.MaskMod, "Nodes %q and %q must both exist", r.PathValue("a"), r.PathValue("b")))
		return
	}
	k := [2]string{a.Name, b.Name}
	if k[0] > k[1] {
		k[0], k[1] = k[1], k[0]
	}
	props := e.nodeConns[k]
	if props == nil {
		props = map[string]string{}
	}
	applyProps(props, in)
	if len(props) == 0 {
		delete(e.nodeConns, k)
	} else {
		e.nodeConns[k] = props
	}
	writeRC(w, http.StatusOK, rc(lapiconst.Modified|lapiconst.MaskNodeConn|lapiconst.MaskMod|lapiconst.MaskInfo, "Node connection %s/%s modified.", k[0], k[1]))
}
