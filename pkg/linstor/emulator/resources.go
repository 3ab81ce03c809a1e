package emulator

import (
	"net/http"
	"sort"
	"strings"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"
	"github.com/LINBIT/golinstor/devicelayerkind"
	"github.com/google/uuid"
)

func (e *Emulator) sortedRDs() []*resourceDefinition {
	out := make([]*resourceDefinition, 0, len(e.rds))
	for _, rd := range e.rds {
		out = append(out, rd)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func upToDateReplicas(rd *resourceDefinition) int {
	n := 0
	for _, rep := range rd.resources {
		if rep.diskState == "UpToDate" {
			n++
		}
	}
	return n
}

func (e *Emulator) lookupRD(w http.ResponseWriter, r *http.Request, op uint64) (*resourceDefinition, bool) {
	name := r.PathValue("rd")
	rd, ok := e.rds[name]
	if !ok {
		writeRC(w, http.StatusOK, rc(lapiconst.FailNotFoundRscDfn|lapiconst.MaskRscDfn|op, "Resource definition %q not found.", name))
	}
	return rd, ok
}

func (e *Emulator) listResourceDefinitions(w http.ResponseWriter, _ *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := []lapi.ResourceDefinition{}
	for _, rd := range e.sortedRDs() {
		out = append(out, rd.ResourceDefinition)
	}
	writeJSON(w, http.StatusOK, out)
}

func (e *Emulator) createResourceDefinition(w http.ResponseWriter, r *http.Request) {
	var in lapi.ResourceDefinitionCreate
	if !decode(w, r, &in) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	const op = lapiconst.MaskRscDfn | lapiconst.MaskCrt
	name := in.ResourceDefinition.Name
	switch {
	case !validName(name):
		writeRC(w, http.StatusCreated, rc(lapiconst.FailInvldRscName|op, "Resource name %q is invalid", name))
		return
	case e.rds[name] != nil:
		writeRC(w, http.StatusCreated, rc(lapiconst.FailExistsRscDfn|op, "Resource definition %q exists", name))
		return
	}
	rd := in.ResourceDefinition
	rd.Uuid = uuid.NewString()
	if rd.ResourceGroupName == "" {
		rd.ResourceGroupName = "DfltRscGrp"
	}
	e.rds[name] = &resourceDefinition{ResourceDefinition: rd, resources: map[string]*replica{}}
	writeRC(w, http.StatusCreated, rc(lapiconst.Created|op|lapiconst.MaskInfo, "Resource definition %q created.", name))
}

func (e *Emulator) deleteResourceDefinition(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	rd, ok := e.lookupRD(w, r, lapiconst.MaskDel)
	if !ok {
		return
	}
	for nodeName, rep := range rd.resources {
		if rep.inUse {
			writeRC(w, http.StatusOK, rc(lapiconst.FailInUse|lapiconst.MaskRscDfn|lapiconst.MaskDel, "Resource %q is in use on node %q", rd.Name, nodeName))
			return
		}
	}
	delete(e.rds, rd.Name)
	writeRC(w, http.StatusOK, rc(lapiconst.Deleted|lapiconst.MaskRscDfn|lapiconst.MaskDel|lapiconst.MaskInfo, "Resource definition %q deleted.", rd.Name))
}

func (e *Emulator) syncStatus(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	rd, ok := e.lookupRD(w, r, 0)
	if !ok {
		return
	}
	synced := !rd.syncing
	for _, rep := range rd.resources {
		if rep.diskState != "UpToDate" && rep.diskState != "Diskless" {
			synced = false
		}
	}
	writeJSON(w, http.StatusOK, lapi.ResourceDefinitionSyncStatus{SyncedOnAll: synced})
}

func (e *Emulator) listVolumeDefinitions(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	rd, ok := e.lookupRD(w, r, 0)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, append([]lapi.VolumeDefinition{}, rd.volumes...))
}

func (e *Emulator) createVolumeDefinition(w http.ResponseWriter, r *http.Request) {
	var in lapi.VolumeDefinitionCreate
	if !decode(w, r, &in) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	rd, ok := e.lookupRD(w, r, lapiconst.MaskCrt)
	if !ok {
		return
	}
	vd := in.VolumeDefinition
	if vd.SizeKib == 0 {
		writeRC(w, http.StatusCreated, rc(lapiconst.FailInvldVlmSize|lapiconst.MaskVlmDfn|lapiconst.MaskCrt, "Volume size must be positive"))
		return
	}
	if vd.VolumeNumber == nil {
		vd.VolumeNumber = ptrTo(int32(len(rd.volumes)))
	}
	vd.Uuid = uuid.NewString()
	rd.volumes = append(rd.volumes, vd)
	writeRC(w, http.StatusCreated, rc(lapiconst.Created|lapiconst.MaskVlmDfn|lapiconst.MaskCrt|lapiconst.MaskInfo, "Volume definition %d of %q created.", *vd.VolumeNumber, rd.Name))
}

func (e *Emulator) createResource(w http.ResponseWriter, r *http.Request) {
	var in lapi.ResourceCreate
	if !decode(w, r, &in) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	const op = lapiconst.MaskRsc | lapiconst.MaskCrt
	rd, ok := e.lookupRD(w, r, lapiconst.MaskCrt)
	if !ok {
		return
	}
	n, ok := e.lookupNode(w, r)
	if !ok {
		return
	}
	if rd.resources[n.Name] != nil {
		writeRC(w, http.StatusCreated, rc(lapiconst.FailExistsRsc|op, "Resource %q exists on node %q", rd.Name, n.Name))
		return
	}
	pool := in.Resource.Props[lapiconst.KeyStorPoolName]
	diskless := hasFlag(in.Resource.Flags, "DISKLESS") || hasFlag(in.Resource.Flags, "DRBD_DISKLESS")
	if diskless {
		pool = ""
	} else {
		if pool == "" {
			pool = "DfltStorPool"
		}
		if n.pools[pool] == nil {
			writeRC(w, http.StatusCreated, rc(lapiconst.FailNotFoundStorPool|op, "Storage pool %q not found on node %q", pool, n.Name))
			return
		}
	}
	state := "UpToDate"
	if diskless {
		state = "Diskless"
	}
	rd.resources[n.Name] = &replica{pool: pool, diskState: state, flags: in.Resource.Flags}
	writeRC(w, http.StatusCreated, rc(lapiconst.Created|op|lapiconst.MaskInfo, "Resource %q created on node %q.", rd.Name, n.Name))
}

func (e *Emulator) deleteResource(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	rd, ok := e.lookupRD(w, r, lapiconst.MaskDel)
	if !ok {
		return
	}
	name := r.PathValue("node")
	rep := rd.resources[name]
	switch {
	case rep == nil:
		writeRC(w, http.StatusOK, rc(lapiconst.FailNotFoundRsc|lapiconst.MaskRsc|lapiconst.MaskDel, "Resource %q not found on node %q", rd.Name, name))
	case rep.inUse:
		writeRC(w, http.StatusOK, rc(lapiconst.FailInUse|lapiconst.MaskRsc|lapiconst.MaskDel, "Resource %q is in use on node %q", rd.Name, name))
	default:
		delete(rd.resources, name)
		writeRC(w, http.StatusOK, rc(lapiconst.Deleted|lapiconst.MaskRsc|lapiconst.MaskDel|lapiconst.MaskInfo, "Resource %q deleted from node %q.", rd.Name, name))
	}
}

func (e *Emulator) listResources(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	rd, ok := e.lookupRD(w, r, 0)
	if !ok {
		return
	}
	out := []lapi.Resource{}
	for _, rv := range e.resourceViews(rd) {
		out = append(out, rv.Resource)
	}
	writeJSON(w, http.StatusOK, out)
}

func (e *Emulator) viewResources(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	nodes := queryList(r, "nodes")
	rscs := queryList(r, "resources")
	out := []lapi.ResourceWithVolumes{}
	for _, rd := range e.sortedRDs() {
		if len(rscs) > 0 && !rscs[strings.ToLower(rd.Name)] {
			continue
		}
		for _, rv := range e.resourceViews(rd) {
			if len(nodes) == 0 || nodes[strings.ToLower(rv.NodeName)] {
				out = append(out, rv)
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// resourceViews renders the replicas of rd with DRBD disk and connection states:
// a peer is connected while both satellites are ONLINE.
func (e *Emulator) resourceViews(rd *resourceDefinition) []lapi.ResourceWithVolumes {
	names := make([]string, 0, len(rd.resources))
	for n := range rd.resources {
		names = append(names, n)
	}
	sort.Strings(names)
	online := func(name string) bool {
		n, ok := e.nodes[strings.ToLower(name)]
		return ok && e.nodeView(n).ConnectionStatus == "ONLINE"
	}
	var out []lapi.ResourceWithVolumes
	for i, nodeName := range names {
		rep := rd.resources[nodeName]
		conns := map[string]lapi.DrbdConnection{}
		for _, peer := range names {
			if peer != nodeName {
				up := online(nodeName) && online(peer)
				msg := "Connected"
				if !up {
					msg = "Connecting"
				}
				conns[peer] = lapi.DrbdConnection{Connected: up, Message: msg}
			}
		}
		var vols []lapi.Volume
		for _, vd := range rd.volumes {
			kind := lapi.DISKLESS
			if n := e.nodes[strings.ToLower(nodeName)]; n != nil && rep.pool != "" && n.pools[rep.pool] != nil {
				kind = n.pools[rep.pool].ProviderKind
			}
			pool := rep.pool
			if pool == "" {
				pool = disklessPool
			}
			vols = append(vols, lapi.Volume{
				VolumeNumber: *vd.VolumeNumber, StoragePoolName: pool, ProviderKind: kind,
				DevicePath: "/dev/drbd" + itoa(1000+int(*vd.VolumeNumber)), AllocatedSizeKib: int64(vd.SizeKib), UsableSizeKib: int64(vd.SizeKib),
				State: lapi.VolumeState{DiskState: rep.diskState},
			})
		}
		inUse := rep.inUse
		out = append(out, lapi.ResourceWithVolumes{
			Resource: lapi.Resource{
				Name: rd.Name, NodeName: nodeName, Flags: rep.flags, Uuid: uuid.NewSHA1(uuid.NameSpaceOID, []byte(rd.Name+"/"+nodeName)).String(),
				State: &lapi.ResourceState{InUse: &inUse},
				LayerObject: &lapi.ResourceLayer{Type: devicelayerkind.Drbd, Drbd: &lapi.DrbdResource{
					NodeId: int32(i), Connections: conns, PeerSlots: 7, AlStripes: 1, AlSize: 32,
				}},
			},
			Volumes: vols,
		})
	}
	return out
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}
