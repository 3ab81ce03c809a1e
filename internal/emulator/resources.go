package emulator

import (
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"
	"github.com/LINBIT/golinstor/devicelayerkind"
	"github.com/google/uuid"

	"github.com/linstor-operator/linstor-operator/pkg/linstor/props"
)

func (e *Emulator) sortedRDs() []*resourceDefinition {
	out := make([]*resourceDefinition, 0, len(e.rds))
	for _, rd := range e.rds {
		out = append(out, rd)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (e *Emulator) lookupRD(w http.ResponseWriter, r *http.Request) (*resourceDefinition, bool) {
	name := r.PathValue("rd")
	rd, ok := e.rds[strings.ToLower(name)]
	if !ok {
		notFound(w, lapiconst.FailNotFoundRscDfn, "Resource definition '%s' not found.", name)
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
	if !decode(w, r, &in, http.StatusInternalServerError) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	name := in.ResourceDefinition.Name
	switch {
	case checkName(name, 2, 48, "-") != "":
		writeRC(w, http.StatusCreated, rc(lapiconst.FailInvldRscName|crtRscDfn, "The given resource name '%s' is invalid.", name).withCause("%s", checkName(name, 2, 48, "-")))
		return
	case e.rds[strings.ToLower(name)] != nil:
		writeRC(w, http.StatusCreated, rc(lapiconst.FailExistsRscDfn|crtRscDfn, "A resource definition with the name '%s' already exists.", name).withRefs("RscDfn", name))
		return
	}
	if _, bad := setProps(props.ResourceDefinition, map[string]string{}, in.ResourceDefinition.Props); bad != nil {
		writeRC(w, http.StatusCreated, propRefused(*bad, crtRscDfn).withRefs("RscDfn", name))
		return
	}
	// The layer_data types are the definition's layer stack
	// (REST/ResourceDefinitions.createResourceDefinition, CtrlRscDfnApiCallHandler:
	// ensureLayerStackIsAllowed when given).
	var names []devicelayerkind.DeviceLayerKind
	for _, l := range in.ResourceDefinition.LayerData {
		names = append(names, l.Type)
	}
	stack, bad := parseLayers(names)
	if bad == nil && len(stack) > 0 && !stackAllowed(stack) {
		bad = ptrTo(rc(lapiconst.FailInvldLayerStack, "The layer stack %s is invalid", javaList(stack)))
	}
	if bad != nil {
		bad.RetCode |= int64(crtRscDfn)
		writeRC(w, http.StatusCreated, bad.withRefs("RscDfn", name))
		return
	}
	rd := in.ResourceDefinition
	rd.Uuid = uuid.NewString()
	if rd.ResourceGroupName == "" {
		rd.ResourceGroupName = "DfltRscGrp"
	}
	e.rds[strings.ToLower(name)] = &resourceDefinition{ResourceDefinition: rd, resources: map[string]*replica{}, layers: stack}
	writeRC(w, http.StatusCreated, rc(lapiconst.Created|crtRscDfn, "New resource definition '%s' created.", name).withRefs("RscDfn", name, "UUID", rd.Uuid))
}

func (e *Emulator) deleteResourceDefinition(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	name := r.PathValue("rd")
	rd, ok := e.rds[strings.ToLower(name)]
	if !ok {
		writeRC(w, http.StatusOK, rc(lapiconst.WarnNotFound|delRscDfn, "Resource definition: %s not found.", name).withDetails("Resource definition: %s", name).withRefs("RscDfn", name))
		return
	}
	for _, nodeName := range slices.Sorted(maps.Keys(rd.resources)) {
		if e.inUseReported(nodeName, rd.resources[nodeName]) {
			writeRC(w, http.StatusOK, rc(lapiconst.FailInUse|delRscDfn, "Resource '%s' on node '%s' is still in use.", rd.Name, nodeName).withRefs("RscDfn", name))
			return
		}
	}
	delete(e.rds, strings.ToLower(rd.Name))
	writeRC(w, http.StatusOK, rc(lapiconst.Deleted|delRscDfn, "Resource definition '%s' deleted.", rd.Name).withRefs("RscDfn", name))
}

func (e *Emulator) syncStatus(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	rd, ok := e.lookupRD(w, r)
	if !ok {
		return
	}
	// Only diskful replicas count, and one whose state is unknown (satellite not
	// ONLINE) counts as synced (SatelliteResourceStateDrbdUtils.allResourcesUpToDate).
	synced := !rd.syncing
	for nodeName, rep := range rd.resources {
		if s := e.diskState(nodeName, rep); rep.diskful() && s != "" && !strings.EqualFold(s, "UpToDate") {
			synced = false
		}
	}
	writeJSON(w, http.StatusOK, lapi.ResourceDefinitionSyncStatus{SyncedOnAll: synced})
}

func (e *Emulator) listVolumeDefinitions(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	rd, ok := e.lookupRD(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, append([]lapi.VolumeDefinition{}, rd.volumes...))
}

// createVolumeDefinition answers 200, not the spec's 201
// (rest/v1/VolumeDefinitions.createVolumeDefinition maps with the default status).
func (e *Emulator) createVolumeDefinition(w http.ResponseWriter, r *http.Request) {
	var in lapi.VolumeDefinitionCreate
	if !decode(w, r, &in, http.StatusInternalServerError) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	rd, ok := e.lookupRD(w, r)
	if !ok {
		return
	}
	vd := in.VolumeDefinition
	if vd.SizeKib == 0 {
		writeRC(w, http.StatusOK, rc(lapiconst.FailInvldVlmSize|lapiconst.MaskVlmDfn|lapiconst.MaskCrt, "The given volume size '0' is invalid."))
		return
	}
	if vd.VolumeNumber == nil {
		vd.VolumeNumber = ptrTo(int32(len(rd.volumes)))
	}
	vd.Uuid = uuid.NewString()
	rd.volumes = append(rd.volumes, vd)
	writeRC(w, http.StatusOK, rc(lapiconst.Created|lapiconst.MaskVlmDfn|lapiconst.MaskCrt, "New volume definition with number '%d' of resource definition '%s' created.", *vd.VolumeNumber, rd.Name))
}

// createResource places a replica (the CSI driver's call): refused on a node being
// evacuated (CtrlRscCrtApiHelper, FAIL_EVACUATING); a diskful replica joining
// UpToDate peers resyncs, Inconsistent, before it is UpToDate. Its layer stack is the
// request's layer_list, else the definition's, else DRBD,STORAGE, which then becomes
// the definition's (ResourceControllerFactory.create).
func (e *Emulator) createResource(w http.ResponseWriter, r *http.Request) {
	var in lapi.ResourceCreate
	if !decode(w, r, &in, http.StatusInternalServerError) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.advance()
	nodeName := r.PathValue("node")
	// The REST layer parses the layer names first (REST/Resources.java).
	requested, bad := parseLayers(in.LayerList)
	if bad != nil {
		bad.RetCode |= int64(crtRsc)
		writeRC(w, http.StatusCreated, bad.withRefs("Node", nodeName, "RscDfn", r.PathValue("rd")))
		return
	}
	rd, ok := e.lookupRD(w, r)
	if !ok {
		return
	}
	refs := []string{"Node", nodeName, "RscDfn", rd.Name}
	n, ok := e.nodes[strings.ToLower(nodeName)]
	switch {
	case !ok:
		writeRC(w, http.StatusCreated, rc(lapiconst.FailNotFoundNode|crtRsc, "Node '%s' not found.", nodeName).withRefs(refs...))
		return
	case rd.resources[n.Name] != nil:
		writeRC(w, http.StatusCreated, rc(lapiconst.FailExistsRsc|crtRsc, "A resource with the name '%s' on node '%s' already exists.", rd.Name, n.Name).withRefs(refs...))
		return
	case hasFlag(n.Flags, lapiconst.FlagEvacuate):
		writeRC(w, http.StatusCreated, rc(lapiconst.FailEvacuating|crtRsc, "node '%s is being evacuated. No new resources allowed on this node.", n.Name).withRefs(refs...))
		return
	}
	stack := requested
	if len(stack) == 0 {
		stack = rd.layers
	}
	if len(stack) == 0 {
		stack = defaultLayers
	}
	if why := refuseStack(stack, n.Name); why != nil {
		why.RetCode |= int64(crtRsc)
		writeRC(w, http.StatusCreated, why.withRefs(refs...))
		return
	}
	rscProps := map[string]string{}
	if _, bad := setProps(props.Resource, rscProps, in.Resource.Props); bad != nil {
		writeRC(w, http.StatusCreated, propRefused(*bad, crtRsc).withRefs(refs...))
		return
	}
	pool := in.Resource.Props[lapiconst.KeyStorPoolName]
	// Only DRBD has diskless replicas; without it a diskless flag is not modelled.
	diskless := stack[0] == devicelayerkind.Drbd && (hasFlag(in.Resource.Flags, lapiconst.FlagDiskless) || hasFlag(in.Resource.Flags, lapiconst.FlagDrbdDiskless))
	flags := append([]string(nil), in.Resource.Flags...)
	if diskless {
		pool = ""
		flags = appendFlag(appendFlag(flags, lapiconst.FlagDiskless), lapiconst.FlagDrbdDiskless)
	} else {
		if pool == "" {
			pool = "DfltStorPool"
		}
		if n.pools[strings.ToLower(pool)] == nil {
			writeRC(w, http.StatusCreated, rc(lapiconst.FailNotFoundStorPool|crtRsc, "Storage pool '%s' on node '%s' not found.", pool, n.Name).withRefs(refs...))
			return
		}
	}
	rep := &replica{pool: pool, diskState: "UpToDate", flags: flags, props: rscProps}
	if len(requested) > 0 || len(rd.layers) > 0 {
		rep.layers = stack
	}
	if len(rd.layers) == 0 {
		rd.layers = stack
	}
	if rep.drbd() && rep.diskful() && e.upToDatePeers(rd, n.Name) > 0 {
		rep.syncStart, rep.syncUntil = e.now(), e.now().Add(e.timing.Resync)
	}
	rd.resources[n.Name] = rep
	e.addLayerData(rd, n.Name, rep)
	writeRC(w, http.StatusCreated, rc(lapiconst.Created|crtRsc, "New resource '%s' on node '%s' registered.", rd.Name, n.Name).withRefs(refs...))
}

// deleteResource follows CtrlRscDeleteApiCallHandler: a missing replica is a warning;
// in use or the last diskful replica with diskless peers is refused; a lone replica
// without peers IS deleted.
func (e *Emulator) deleteResource(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.advance()
	rdName, nodeName := r.PathValue("rd"), r.PathValue("node")
	refs := []string{"Node", nodeName, "RscDfn", rdName}
	rd := e.rds[strings.ToLower(rdName)]
	n := e.nodes[strings.ToLower(nodeName)]
	if rd == nil || n == nil || rd.resources[n.Name] == nil {
		writeRC(w, http.StatusOK, rc(lapiconst.WarnNotFound|delRsc, "Node: %s, Resource: %s not found.", nodeName, rdName).withDetails("Node: %s, Resource: %s", nodeName, rdName).withRefs(refs...))
		return
	}
	if why := e.refuseReplicaDelete(rd, n.Name, delRsc); why != nil {
		writeRC(w, http.StatusOK, why.withRefs(refs...))
		return
	}
	if !e.online(n.Name) {
		// The row goes only once the satellite confirms: flagged DELETE meanwhile.
		rep := rd.resources[n.Name]
		rep.flags = appendFlag(rep.flags, lapiconst.FlagDelete)
		writeRC(w, http.StatusOK, rc(lapiconst.Deleted|delRsc, "Node: %s, Resource: %s preparing for deletion.", n.Name, rd.Name).withRefs(refs...),
			rc(lapiconst.WarnNotConnected|delRsc, "No active connection to satellite '%s'", n.Name).withRefs(refs...))
		return
	}
	delete(rd.resources, n.Name)
	writeRC(w, http.StatusOK, rc(lapiconst.Deleted|delRsc, "Node: %s, Resource: %s deletion complete.", n.Name, rd.Name).withRefs(refs...))
}

func (e *Emulator) listResources(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	rd, ok := e.lookupRD(w, r)
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
	e.advance()
	nodes := queryList(r, "nodes")
	rscs := queryList(r, "resources")
	out := []resourceWithVolumesView{}
	for _, rd := range e.sortedRDs() {
		if len(rscs) > 0 && !rscs[strings.ToLower(rd.Name)] {
			continue
		}
		for _, rv := range e.resourceViews(rd) {
			if len(nodes) == 0 || nodes[strings.ToLower(rv.NodeName)] {
				out = append(out, e.withDrbdState(rd, rv))
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// resourceViews renders the replicas of rd as the view shows them
// (Json.apiToResourceWithVolumes). The resource state exists only while the
// satellite is ONLINE; its in_use is what the top layer reports (reportedInUse).
// Only a DRBD resource has per-peer connections (Connected, or Connecting while the
// peer's satellite is not ONLINE or the link is cut, drbdConnection) and volume
// states; without DRBD no event ever fills a volume's state. A definition without
// volumes shows no resources (CtrlVlmListApiCallHandler).
func (e *Emulator) resourceViews(rd *resourceDefinition) []lapi.ResourceWithVolumes {
	if len(rd.volumes) == 0 {
		return nil
	}
	names := slices.Sorted(maps.Keys(rd.resources))
	var out []lapi.ResourceWithVolumes
	for i, nodeName := range names {
		rep := rd.resources[nodeName]
		view := lapi.ResourceWithVolumes{Resource: lapi.Resource{
			Name: rd.Name, NodeName: nodeName, Flags: rep.flags, Props: maps.Clone(rep.props),
			Uuid:        uuid.NewSHA1(uuid.NameSpaceOID, []byte(rd.Name+"/"+nodeName)).String(),
			LayerObject: e.layerObject(rd, nodeName, rep, viewNodeID(rep, i)),
		}}
		if e.online(nodeName) {
			view.State = &lapi.ResourceState{InUse: e.reportedInUse(nodeName, rep)}
			if rep.drbd() {
				conns := map[string]lapi.DrbdConnection{}
				for _, peer := range names {
					if peer != nodeName {
						conns[peer] = e.drbdConnection(rd, nodeName, peer)
					}
				}
				view.LayerObject.Drbd.Connections = conns
			}
		}
		kind, pool := lapi.DISKLESS, disklessPool
		if n := e.nodes[strings.ToLower(nodeName)]; n != nil && rep.pool != "" && n.pools[strings.ToLower(rep.pool)] != nil {
			kind, pool = n.pools[strings.ToLower(rep.pool)].ProviderKind, n.pools[strings.ToLower(rep.pool)].StoragePoolName
		}
		for _, vd := range rd.volumes {
			view.Volumes = append(view.Volumes, lapi.Volume{
				VolumeNumber: *vd.VolumeNumber, StoragePoolName: pool, ProviderKind: kind,
				DevicePath: e.volumeDevicePath(nodeName, rep, rd.Name, *vd.VolumeNumber), AllocatedSizeKib: int64(vd.SizeKib), UsableSizeKib: int64(vd.SizeKib),
				State: lapi.VolumeState{DiskState: e.diskState(nodeName, rep)},
			})
		}
		out = append(out, view)
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

// viewNodeID is the replica's DRBD node id: the one its layer data holds, else (a
// replica loaded without layer rows) its position.
func viewNodeID(rep *replica, position int) int32 {
	if len(rep.layerIDs) > 0 {
		return int32(rep.nodeID)
	}
	return int32(position)
}
