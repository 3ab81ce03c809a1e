package emulator

import (
	"net/http"
	"strings"
	"time"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"
	"github.com/google/uuid"
)

// Node types as LINSTOR spells them in responses.
var nodeTypes = map[string]string{
	"controller": "Controller", "satellite": "Satellite", "combined": "Combined", "auxiliary": "Auxiliary",
}

const (
	defaultSatellitePort = 3366
	disklessPool         = "DfltDisklessStorPool"
)

func (e *Emulator) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("GET /metrics", e.metrics)
	mux.HandleFunc("GET /v1/controller/version", e.getVersion)
	mux.HandleFunc("GET /v1/controller/properties", e.getControllerProps)
	mux.HandleFunc("POST /v1/controller/properties", e.modifyControllerProps)
	mux.HandleFunc("DELETE /v1/controller/properties/{key...}", e.deleteControllerProp)
	mux.HandleFunc("GET /v1/encryption/passphrase", e.getPassphraseStatus)
	mux.HandleFunc("POST /v1/encryption/passphrase", e.createPassphrase)
	mux.HandleFunc("PUT /v1/encryption/passphrase", e.modifyPassphrase)
	mux.HandleFunc("PATCH /v1/encryption/passphrase", e.enterPassphrase)

	mux.HandleFunc("GET /v1/nodes", e.listNodes)
	mux.HandleFunc("POST /v1/nodes", e.createNode)
	mux.HandleFunc("GET /v1/nodes/{node}", e.onNode(e.getNode))
	mux.HandleFunc("PUT /v1/nodes/{node}", e.onNode(e.modifyNode))
	mux.HandleFunc("DELETE /v1/nodes/{node}", e.onNode(e.deleteNode))
	mux.HandleFunc("DELETE /v1/nodes/{node}/lost", e.onNode(e.lostNode))
	mux.HandleFunc("PUT /v1/nodes/{node}/reconnect", e.onNode(e.reconnectNode))
	mux.HandleFunc("PUT /v1/nodes/{node}/evacuate", e.onNode(e.evacuateNode))
	mux.HandleFunc("PUT /v1/nodes/{node}/evict", e.onNode(e.evictNode))
	mux.HandleFunc("PUT /v1/nodes/{node}/restore", e.onNode(e.restoreNode))
	mux.HandleFunc("GET /v1/nodes/{node}/net-interfaces", e.onNode(e.listNetIfs))
	mux.HandleFunc("POST /v1/nodes/{node}/net-interfaces", e.onNode(e.createNetIf))
	mux.HandleFunc("GET /v1/nodes/{node}/net-interfaces/{netif}", e.onNode(e.getNetIf))
	mux.HandleFunc("PUT /v1/nodes/{node}/net-interfaces/{netif}", e.onNode(e.modifyNetIf))
	mux.HandleFunc("DELETE /v1/nodes/{node}/net-interfaces/{netif}", e.onNode(e.deleteNetIf))

	mux.HandleFunc("GET /v1/nodes/{node}/storage-pools", e.onNode(e.listPools))
	mux.HandleFunc("POST /v1/nodes/{node}/storage-pools", e.onNode(e.createPool))
	mux.HandleFunc("GET /v1/nodes/{node}/storage-pools/{pool}", e.onNode(e.getPool))
	mux.HandleFunc("PUT /v1/nodes/{node}/storage-pools/{pool}", e.onNode(e.modifyPool))
	mux.HandleFunc("DELETE /v1/nodes/{node}/storage-pools/{pool}", e.onNode(e.deletePool))
	mux.HandleFunc("GET /v1/view/storage-pools", e.viewPools)
	mux.HandleFunc("GET /v1/physical-storage", e.viewPhysicalStorage)
	mux.HandleFunc("GET /v1/physical-storage/{$}", e.viewPhysicalStorage)
	mux.HandleFunc("GET /v1/physical-storage/{node}", e.onNode(e.getPhysicalStorage))
	mux.HandleFunc("POST /v1/physical-storage/{node}", e.onNode(e.createDevicePool))

	mux.HandleFunc("GET /v1/node-connections", e.listNodeConnections)
	mux.HandleFunc("PUT /v1/node-connections/{a}/{b}", e.modifyNodeConnection)

	mux.HandleFunc("GET /v1/resource-definitions", e.listResourceDefinitions)
	mux.HandleFunc("POST /v1/resource-definitions", e.createResourceDefinition)
	mux.HandleFunc("DELETE /v1/resource-definitions/{rd}", e.deleteResourceDefinition)
	mux.HandleFunc("GET /v1/resource-definitions/{rd}/sync-status", e.syncStatus)
	mux.HandleFunc("GET /v1/resource-definitions/{rd}/volume-definitions", e.listVolumeDefinitions)
	mux.HandleFunc("POST /v1/resource-definitions/{rd}/volume-definitions", e.createVolumeDefinition)
	mux.HandleFunc("GET /v1/resource-definitions/{rd}/resources", e.listResources)
	mux.HandleFunc("POST /v1/resource-definitions/{rd}/resources/{node}", e.createResource)
	mux.HandleFunc("DELETE /v1/resource-definitions/{rd}/resources/{node}", e.deleteResource)
	mux.HandleFunc("GET /v1/view/resources", e.viewResources)
}

func (e *Emulator) listNodes(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	filter := queryList(r, "nodes")
	out := []lapi.Node{}
	for _, n := range e.sortedNodes() {
		if len(filter) == 0 || filter[strings.ToLower(n.Name)] {
			out = append(out, e.nodeView(n))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (e *Emulator) getNode(w http.ResponseWriter, r *http.Request, n *node) {
	writeJSON(w, http.StatusOK, e.nodeView(n))
}

func (e *Emulator) createNode(w http.ResponseWriter, r *http.Request) {
	var in lapi.Node
	if !decode(w, r, &in) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	typ, ok := nodeTypes[strings.ToLower(in.Type)]
	switch {
	case !validName(in.Name):
		writeRC(w, http.StatusCreated, rc(lapiconst.FailInvldNodeName|lapiconst.MaskNode|lapiconst.MaskCrt, "Node name %q is invalid", in.Name))
		return
	case !ok:
		writeRC(w, http.StatusCreated, rc(lapiconst.FailInvldNodeType|lapiconst.MaskNode|lapiconst.MaskCrt, "Node type %q is invalid", in.Type))
		return
	case e.nodes[strings.ToLower(in.Name)] != nil:
		writeRC(w, http.StatusCreated, rc(lapiconst.FailExistsNode|lapiconst.MaskNode|lapiconst.MaskCrt, "Node %q already exists", in.Name))
		return
	case len(in.NetInterfaces) == 0:
		writeRC(w, http.StatusCreated, rc(lapiconst.FailInvldNetAddr|lapiconst.MaskNode|lapiconst.MaskCrt, "Node %q needs a net interface", in.Name))
		return
	}
	n := &node{Node: lapi.Node{
		Name: in.Name, Type: typ, Props: copyMap(in.Props), Uuid: uuid.NewString(),
		StorageProviders: []lapi.ProviderKind{lapi.DISKLESS, lapi.LVM, lapi.LVM_THIN, lapi.ZFS, lapi.ZFS_THIN, lapi.FILE, lapi.FILE_THIN},
	}, online: !e.coupled, pools: map[string]*lapi.StoragePool{}, disks: append([]lapi.PhysicalStorageNode(nil), e.newNodeDisks...)}
	if n.Props == nil {
		n.Props = map[string]string{}
	}
	for i, nif := range in.NetInterfaces {
		if nif.SatellitePort == 0 && len(in.NetInterfaces) == 1 {
			nif.SatellitePort, nif.SatelliteEncryptionType = defaultSatellitePort, "PLAIN"
		}
		if len(in.NetInterfaces) == 1 {
			nif.IsActive = true
		}
		nif.Uuid = uuid.NewString()
		in.NetInterfaces[i] = nif
	}
	n.NetInterfaces = in.NetInterfaces
	n.pools[disklessPool] = &lapi.StoragePool{StoragePoolName: disklessPool, NodeName: n.Name, ProviderKind: lapi.DISKLESS, Uuid: uuid.NewString(),
		FreeCapacity: 1<<63 - 1, TotalCapacity: 1<<63 - 1, StaticTraits: map[string]string{"SupportsSnapshots": "false"}}
	e.nodes[strings.ToLower(in.Name)] = n
	writeRC(w, http.StatusCreated, rc(lapiconst.Created|lapiconst.MaskNode|lapiconst.MaskCrt|lapiconst.MaskInfo, "New node %q registered.", in.Name))
}

func (e *Emulator) modifyNode(w http.ResponseWriter, r *http.Request, n *node) {
	var in lapi.NodeModify
	if !decode(w, r, &in) {
		return
	}
	if in.NodeType != "" {
		typ, ok := nodeTypes[strings.ToLower(in.NodeType)]
		if !ok {
			writeRC(w, http.StatusOK, rc(lapiconst.FailInvldNodeType|lapiconst.MaskNode|lapiconst.MaskMod, "Node type %q is invalid", in.NodeType))
			return
		}
		n.Type = typ
	}
	applyProps(n.Props, in.GenericPropsModify)
	writeRC(w, http.StatusOK, rc(lapiconst.Modified|lapiconst.MaskNode|lapiconst.MaskMod|lapiconst.MaskInfo, "Node %q modified.", n.Name))
}

// deleteNode refuses to drop data: no in-use resources, no last up-to-date replica.
func (e *Emulator) deleteNode(w http.ResponseWriter, r *http.Request, n *node) {
	for _, rd := range e.sortedRDs() {
		rep := rd.resources[n.Name]
		if rep == nil {
			continue
		}
		if rep.inUse {
			writeRC(w, http.StatusOK, rc(lapiconst.FailNodeHasUsedRsc|lapiconst.MaskNode|lapiconst.MaskDel, "Node %q has resource %q in use", n.Name, rd.Name))
			return
		}
		if rep.diskState == "UpToDate" && upToDateReplicas(rd) == 1 {
			writeRC(w, http.StatusOK, rc(lapiconst.FailInUse|lapiconst.MaskNode|lapiconst.MaskDel, "Node %q holds the last up-to-date replica of %q", n.Name, rd.Name))
			return
		}
	}
	e.removeNode(n)
	writeRC(w, http.StatusOK, rc(lapiconst.Deleted|lapiconst.MaskNode|lapiconst.MaskDel|lapiconst.MaskInfo, "Node %q deleted.", n.Name))
}

// lostNode refuses connected nodes and, like LINSTOR, does not check replicas.
func (e *Emulator) lostNode(w http.ResponseWriter, r *http.Request, n *node) {
	if e.nodeView(n).ConnectionStatus == "ONLINE" {
		writeRC(w, http.StatusOK, rc(lapiconst.FailExistsStltConn|lapiconst.MaskNode|lapiconst.MaskDel, "Node %q is still connected; use a regular delete", n.Name))
		return
	}
	e.removeNode(n)
	writeRC(w, http.StatusOK, rc(lapiconst.Deleted|lapiconst.MaskNode|lapiconst.MaskDel|lapiconst.MaskInfo, "Node %q marked lost and deleted.", n.Name))
}

func (e *Emulator) removeNode(n *node) {
	for _, rd := range e.rds {
		delete(rd.resources, n.Name)
	}
	for k := range e.nodeConns {
		if k[0] == n.Name || k[1] == n.Name {
			delete(e.nodeConns, k)
		}
	}
	delete(e.nodes, strings.ToLower(n.Name))
}

func (e *Emulator) reconnectNode(w http.ResponseWriter, r *http.Request, n *node) {
	writeRC(w, http.StatusOK, rc(lapiconst.Modified|lapiconst.MaskNode|lapiconst.MaskMod|lapiconst.MaskInfo, "Node %q reconnecting.", n.Name))
}

// evacuateNode moves every replica away (instantly here) and flags the node.
func (e *Emulator) evacuateNode(w http.ResponseWriter, r *http.Request, n *node) {
	var in lapi.NodeEvacuate
	if !decode(w, r, &in) {
		return
	}
	for _, rd := range e.rds {
		if rep := rd.resources[n.Name]; rep != nil && rep.inUse {
			writeRC(w, http.StatusOK, rc(lapiconst.FailNodeHasUsedRsc|lapiconst.MaskNode|lapiconst.MaskMod, "Node %q has resource %q in use", n.Name, rd.Name))
			return
		}
	}
	for _, rd := range e.rds {
		delete(rd.resources, n.Name)
	}
	if !hasFlag(n.Flags, lapiconst.FlagEvacuate) {
		n.Flags = append(n.Flags, lapiconst.FlagEvacuate)
	}
	writeRC(w, http.StatusOK, rc(lapiconst.Modified|lapiconst.MaskNode|lapiconst.MaskMod|lapiconst.MaskInfo, "Node %q evacuating.", n.Name))
}

func (e *Emulator) evictNode(w http.ResponseWriter, r *http.Request, n *node) {
	if !hasFlag(n.Flags, lapiconst.FlagEvicted) {
		n.Flags = append(n.Flags, lapiconst.FlagEvicted)
		n.EvictionTimestamp = &lapi.TimeStampMs{Time: time.Now()}
	}
	writeRC(w, http.StatusOK, rc(lapiconst.Modified|lapiconst.MaskNode|lapiconst.MaskMod|lapiconst.MaskInfo, "Node %q evicted.", n.Name))
}

func (e *Emulator) restoreNode(w http.ResponseWriter, r *http.Request, n *node) {
	var in lapi.NodeRestore
	if !decode(w, r, &in) {
		return
	}
	n.Flags = withoutFlag(withoutFlag(n.Flags, lapiconst.FlagEvicted), lapiconst.FlagEvacuate)
	n.EvictionTimestamp = nil
	writeRC(w, http.StatusOK, rc(lapiconst.Modified|lapiconst.MaskNode|lapiconst.MaskMod|lapiconst.MaskInfo, "Node %q restored.", n.Name))
}

func (e *Emulator) listNetIfs(w http.ResponseWriter, r *http.Request, n *node) {
	writeJSON(w, http.StatusOK, append([]lapi.NetInterface{}, n.NetInterfaces...))
}

func (e *Emulator) getNetIf(w http.ResponseWriter, r *http.Request, n *node) {
	i := findNetIf(n, r.PathValue("netif"))
	if i < 0 {
		writeRC(w, http.StatusOK, rc(lapiconst.FailNotFoundNetIf|lapiconst.MaskNetIf, "Net interface %q not found", r.PathValue("netif")))
		return
	}
	writeJSON(w, http.StatusOK, n.NetInterfaces[i])
}

func (e *Emulator) createNetIf(w http.ResponseWriter, r *http.Request, n *node) {
	var in lapi.NetInterface
	if !decode(w, r, &in) {
		return
	}
	if findNetIf(n, in.Name) >= 0 {
		writeRC(w, http.StatusCreated, rc(lapiconst.FailExistsNetIf|lapiconst.MaskNetIf|lapiconst.MaskCrt, "Net interface %q exists", in.Name))
		return
	}
	if in.Address == nil {
		writeRC(w, http.StatusCreated, rc(lapiconst.FailInvldNetAddr|lapiconst.MaskNetIf|lapiconst.MaskCrt, "Net interface %q needs an address", in.Name))
		return
	}
	in.Uuid = uuid.NewString()
	if in.IsActive {
		clearActive(n)
	}
	n.NetInterfaces = append(n.NetInterfaces, in)
	writeRC(w, http.StatusCreated, rc(lapiconst.Created|lapiconst.MaskNetIf|lapiconst.MaskCrt|lapiconst.MaskInfo, "Net interface %q created.", in.Name))
}

func (e *Emulator) modifyNetIf(w http.ResponseWriter, r *http.Request, n *node) {
	var in lapi.NetInterface
	if !decode(w, r, &in) {
		return
	}
	i := findNetIf(n, r.PathValue("netif"))
	if i < 0 {
		writeRC(w, http.StatusOK, rc(lapiconst.FailNotFoundNetIf|lapiconst.MaskNetIf|lapiconst.MaskMod, "Net interface %q not found", r.PathValue("netif")))
		return
	}
	cur := &n.NetInterfaces[i]
	if in.Address != nil {
		cur.Address = in.Address
	}
	if in.SatellitePort != 0 {
		cur.SatellitePort = in.SatellitePort
	}
	if in.SatelliteEncryptionType != "" {
		cur.SatelliteEncryptionType = in.SatelliteEncryptionType
	}
	if in.IsActive {
		clearActive(n)
		n.NetInterfaces[i].IsActive = true
	}
	writeRC(w, http.StatusOK, rc(lapiconst.Modified|lapiconst.MaskNetIf|lapiconst.MaskMod|lapiconst.MaskInfo, "Net interface %q modified.", r.PathValue("netif")))
}

func (e *Emulator) deleteNetIf(w http.ResponseWriter, r *http.Request, n *node) {
	i := findNetIf(n, r.PathValue("netif"))
	switch {
	case i < 0:
		writeRC(w, http.StatusOK, rc(lapiconst.FailNotFoundNetIf|lapiconst.MaskNetIf|lapiconst.MaskDel, "Net interface %q not found", r.PathValue("netif")))
	case n.NetInterfaces[i].IsActive:
		writeRC(w, http.StatusOK, rc(lapiconst.FailInUse|lapiconst.MaskNetIf|lapiconst.MaskDel, "Net interface %q is the active satellite connection", r.PathValue("netif")))
	default:
		n.NetInterfaces = append(n.NetInterfaces[:i], n.NetInterfaces[i+1:]...)
		writeRC(w, http.StatusOK, rc(lapiconst.Deleted|lapiconst.MaskNetIf|lapiconst.MaskDel|lapiconst.MaskInfo, "Net interface %q deleted.", r.PathValue("netif")))
	}
}

func findNetIf(n *node, name string) int {
	for i, nif := range n.NetInterfaces {
		if strings.EqualFold(nif.Name, name) {
			return i
		}
	}
	return -1
}

func clearActive(n *node) {
	for i := range n.NetInterfaces {
		n.NetInterfaces[i].IsActive = false
	}
}

// onNode serves a request about the node in the path: it holds the lock and answers
// LINSTOR's 404 ApiCallRc when the node does not exist.
func (e *Emulator) onNode(h func(http.ResponseWriter, *http.Request, *node)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		defer e.mu.Unlock()
		if n, ok := e.lookupNode(w, r); ok {
			h(w, r, n)
		}
	}
}

func (e *Emulator) lookupNode(w http.ResponseWriter, r *http.Request) (*node, bool) {
	name := r.PathValue("node")
	n, ok := e.nodes[strings.ToLower(name)]
	if !ok {
		writeRC(w, http.StatusOK, rc(lapiconst.FailNotFoundNode|lapiconst.MaskNode, "Node %q not found.", name))
	}
	return n, ok
}

func validName(s string) bool {
	if len(s) < 2 || len(s) > 48 {
		return false
	}
	for i, c := range s {
		alpha := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !alpha && (i == 0 || !(c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.')) {
			return false
		}
	}
	return true
}

func queryList(r *http.Request, key string) map[string]bool {
	out := map[string]bool{}
	for _, v := range r.URL.Query()[key] {
		for _, s := range strings.Split(v, ",") {
			if s != "" {
				out[strings.ToLower(s)] = true
			}
		}
	}
	return out
}
