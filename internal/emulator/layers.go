package emulator

import (
	"encoding/json"
	"fmt"
	"strings"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"
	"github.com/LINBIT/golinstor/devicelayerkind"
	"github.com/google/uuid"
)

// defaultLayers is the stack of a resource created without a layer list when its
// definition has none (CtrlRscLayerDataFactory.createDefaultStack; the LUKS layer it
// adds for encrypted volume definitions is not modelled).
var defaultLayers = []devicelayerkind.DeviceLayerKind{devicelayerkind.Drbd, devicelayerkind.Storage}

// layerAliases are the names LinstorParsingUtils.asDeviceLayerKindOrNull accepts,
// upper-cased.
var layerAliases = map[string]devicelayerkind.DeviceLayerKind{
	"DRBD": devicelayerkind.Drbd, "CRYPT": devicelayerkind.Luks, "CRYPT_SETUP": devicelayerkind.Luks, "LUKS": devicelayerkind.Luks,
	"STORAGE": devicelayerkind.Storage, "LVM": devicelayerkind.Storage, "SPDK": devicelayerkind.Storage, "ZFS": devicelayerkind.Storage,
	"NVME": devicelayerkind.Nvme, "WRITECACHE": devicelayerkind.Writecache, "CACHE": devicelayerkind.Cache, "BCACHE": devicelayerkind.Bcache,
}

// layerChildren is LayerUtils' table of which layer may sit directly below which; ""
// is the top. Every stack ends with STORAGE.
var layerChildren = map[devicelayerkind.DeviceLayerKind][]devicelayerkind.DeviceLayerKind{
	"":                         {devicelayerkind.Drbd, devicelayerkind.Luks, devicelayerkind.Storage, devicelayerkind.Nvme, devicelayerkind.Writecache, devicelayerkind.Cache, devicelayerkind.Bcache},
	devicelayerkind.Drbd:       {devicelayerkind.Nvme, devicelayerkind.Luks, devicelayerkind.Storage, devicelayerkind.Writecache, devicelayerkind.Cache, devicelayerkind.Bcache},
	devicelayerkind.Luks:       {devicelayerkind.Storage},
	devicelayerkind.Nvme:       {devicelayerkind.Luks, devicelayerkind.Storage, devicelayerkind.Writecache, devicelayerkind.Cache, devicelayerkind.Bcache},
	devicelayerkind.Writecache: {devicelayerkind.Nvme, devicelayerkind.Luks, devicelayerkind.Storage, devicelayerkind.Cache, devicelayerkind.Bcache},
	devicelayerkind.Cache:      {devicelayerkind.Nvme, devicelayerkind.Luks, devicelayerkind.Storage, devicelayerkind.Writecache, devicelayerkind.Bcache},
	devicelayerkind.Bcache:     {devicelayerkind.Nvme, devicelayerkind.Luks, devicelayerkind.Storage, devicelayerkind.Writecache},
}

// emulatedLayers are the layers the emulated satellites can build.
var emulatedLayers = map[devicelayerkind.DeviceLayerKind]bool{devicelayerkind.Drbd: true, devicelayerkind.Luks: true, devicelayerkind.Storage: true}

// parseLayers reads layer names as LinstorParsingUtils.asDeviceLayerKind does:
// ignoring case, with its aliases; an unknown name gives FAIL_INVLD_LAYER_KIND.
func parseLayers(names []devicelayerkind.DeviceLayerKind) ([]devicelayerkind.DeviceLayerKind, *apiCallRc) {
	out := make([]devicelayerkind.DeviceLayerKind, 0, len(names))
	for _, n := range names {
		kind, ok := layerAliases[strings.ToUpper(string(n))]
		if !ok {
			bad := rc(lapiconst.FailInvldLayerKind, "Given layer kind '%s' is invalid", n)
			return nil, &bad
		}
		out = append(out, kind)
	}
	return out, nil
}

// stackAllowed is LayerUtils.isLayerKindStackAllowed: no layer twice, each below one
// that may hold it, STORAGE last.
func stackAllowed(stack []devicelayerkind.DeviceLayerKind) bool {
	if len(stack) == 0 || stack[len(stack)-1] != devicelayerkind.Storage {
		return false
	}
	seen := map[devicelayerkind.DeviceLayerKind]bool{}
	parent := devicelayerkind.DeviceLayerKind("")
	for _, k := range stack {
		if seen[k] || !containsKind(layerChildren[parent], k) {
			return false
		}
		seen[k], parent = true, k
	}
	return true
}

func containsKind(list []devicelayerkind.DeviceLayerKind, k devicelayerkind.DeviceLayerKind) bool {
	for _, x := range list {
		if x == k {
			return true
		}
	}
	return false
}

// javaList renders a layer list as Java's List.toString: [DRBD, STORAGE].
func javaList(stack []devicelayerkind.DeviceLayerKind) string {
	parts := make([]string, len(stack))
	for i, k := range stack {
		parts[i] = string(k)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// checkLayerStack parses a layer list and checks it as a resource create does
// (CtrlRscCrtApiHelper.ensureLayerStackIsAllowed, FAIL_INVLD_LAYER_STACK); a layer the
// emulated satellites cannot build (NVME, WRITECACHE, CACHE, BCACHE) is refused as a
// satellite without that layer's tools refuses it (FAIL_STLT_DOES_NOT_SUPPORT_LAYER,
// CtrlRscCrtApiHelper.createResource). It returns the reason as text for test hooks.
func checkLayerStack(names []devicelayerkind.DeviceLayerKind) ([]devicelayerkind.DeviceLayerKind, string) {
	stack, bad := parseLayers(names)
	if bad != nil {
		return nil, bad.Message
	}
	if why := refuseStack(stack, "the satellite"); why != nil {
		return nil, why.Message
	}
	return stack, ""
}

// refuseStack: the stack is invalid, or the satellite on node cannot build it.
func refuseStack(stack []devicelayerkind.DeviceLayerKind, node string) *apiCallRc {
	if !stackAllowed(stack) {
		bad := rc(lapiconst.FailInvldLayerStack, "The layer stack %s is invalid", javaList(stack))
		return &bad
	}
	var unsupported []devicelayerkind.DeviceLayerKind
	for _, k := range stack {
		if !emulatedLayers[k] {
			unsupported = append(unsupported, k)
		}
	}
	if len(unsupported) > 0 {
		bad := rc(lapiconst.FailStltDoesNotSupportLayer, "Satellite '%s' does not support the following layers: %s", node, javaList(unsupported))
		return &bad
	}
	return nil
}

// layerObject renders a replica's layer tree as the view shows it
// (Json.apiToResourceLayer): the top layer first, each with its child. DRBD's per-peer
// connections are added by the caller. The LUKS layer's volumes are left out: the
// server names them luks_volumes, golinstor reads storage_volumes, so the operator
// never sees them.
func (e *Emulator) layerObject(rd *resourceDefinition, nodeName string, rep *replica, nodeID int32) *lapi.ResourceLayer {
	stack := rep.layerStack()
	var below *lapi.ResourceLayer
	for i := len(stack) - 1; i >= 0; i-- {
		l := &lapi.ResourceLayer{Type: stack[i]}
		if below != nil {
			l.Children = []lapi.ResourceLayer{*below}
		}
		switch stack[i] {
		case devicelayerkind.Drbd:
			l.Drbd = &lapi.DrbdResource{NodeId: nodeID, PeerSlots: 7, AlStripes: 1, AlSize: 32}
		case devicelayerkind.Luks:
			l.Luks = &lapi.LuksResource{}
		case devicelayerkind.Storage:
			l.Storage = &lapi.StorageResource{}
			for _, vd := range rd.volumes {
				// The controller never fills a storage volume's states list, so its
				// disk_state is the empty list's text (LvmData.asPojo, mergeLvmVlmData).
				l.Storage.StorageVolumes = append(l.Storage.StorageVolumes, lapi.StorageVolume{
					VolumeNumber: *vd.VolumeNumber, DevicePath: e.storageDevicePath(nodeName, rep, rd.Name, *vd.VolumeNumber),
					AllocatedSizeKib: int64(vd.SizeKib), UsableSizeKib: int64(vd.SizeKib), DiskState: "[]",
				})
			}
		}
		below = l
	}
	return below
}

// storageDevicePath is the backing volume's path: /dev/<vg>/<rd>_<vol> for LVM
// (LvmProvider FORMAT_DEV_PATH, FORMAT_RSC_TO_LVM_ID), /dev/zvol/<pool>/<rd>_<vol> for
// ZFS (ZfsProvider FORMAT_ZFS_DEV_PATH); none for a diskless or file volume.
func (e *Emulator) storageDevicePath(nodeName string, rep *replica, rdName string, vol int32) string {
	n := e.nodes[strings.ToLower(nodeName)]
	if n == nil || rep.pool == "" || n.pools[strings.ToLower(rep.pool)] == nil {
		return ""
	}
	p := n.pools[strings.ToLower(rep.pool)]
	id := fmt.Sprintf("%s_%05d", rdName, vol)
	name := p.Props[poolNameKey]
	switch p.ProviderKind {
	case lapi.LVM, lapi.LVM_THIN:
		vg, _, _ := strings.Cut(name, "/")
		return "/dev/" + vg + "/" + id
	case lapi.ZFS, lapi.ZFS_THIN:
		return "/dev/zvol/" + name + "/" + id
	}
	return ""
}

// volumeDevicePath is the device the top layer gives the volume: /dev/drbd<minor> for
// DRBD, the dm-crypt mapping /dev/mapper/Linstor-Crypt-<rd>_<vol> for LUKS
// (CryptSetupCommands, LuksLayer LUKS_IDENTIFIER_FORMAT), else the backing volume.
func (e *Emulator) volumeDevicePath(nodeName string, rep *replica, rdName string, vol int32) string {
	switch rep.layerStack()[0] {
	case devicelayerkind.Drbd:
		return "/dev/drbd" + itoa(1000+int(vol))
	case devicelayerkind.Luks:
		return fmt.Sprintf("/dev/mapper/Linstor-Crypt-%s_%05d", rdName, vol)
	}
	return e.storageDevicePath(nodeName, rep, rdName, vol)
}

// drbdConnection is what node's DRBD reports of its connection to peer: Connected
// while DRBD runs on the peer (its satellite is ONLINE, or only the satellite is
// stopped, StopSatellite) and the link between them is not cut, else Connecting, the
// state DRBD retries in after a lost connection (drbd_receiver.c conn_disconnect sets
// C_UNCONNECTED and restarts the receiver, conn_connect moves to C_CONNECTING).
// LINSTOR marks only "Connected" as connected (Json.apiToResourceWithVolumes). Two
// replicas whose data diverged meet as StandAlone (split brain, handshake).
func (e *Emulator) drbdConnection(rd *resourceDefinition, nodeName, peer string) lapi.DrbdConnection {
	if e.drbdRuns(peer) && e.linked(nodeName, peer) && diverged(rd.resources[nodeName], rd.resources[peer]) {
		return lapi.DrbdConnection{Connected: false, Message: "StandAlone"}
	}
	if e.drbdRuns(peer) && e.linked(nodeName, peer) {
		return lapi.DrbdConnection{Connected: true, Message: "Connected"}
	}
	return lapi.DrbdConnection{Connected: false, Message: "Connecting"}
}

// tcpPortRange is the controller's default TcpPortAutoRange, 7000-7999
// (NumberPoolModule, CtrlConfig).
const tcpPortMin, tcpPortMax = 7000, 7999

// addLayerData gives a new replica its layer data as the server's layer factory does
// (CtrlRscLayerDataFactory, RscDrbdLayerHelper): a LayerResourceIds id per layer (the
// lowest free, layerRscIdPool.autoAllocate); for DRBD the lowest node id free in the
// definition (getNodeId), the definition's DRBD data with its first DRBD resource
// (createRscDfnData: a shared secret), and TCP ports by version: up to 1.31 one port
// per definition (LayerDrbdRscDfnDbDriver tcp_port from the controller's TCP_PORT_POOL),
// from 1.32 one per resource from its node's pool (Node.getTcpPortPool,
// LayerDrbdRscDbDriver tcp_port_list; the definition's tcp_port stays null unless given).
// A diskful DRBD replica also records the initial sync source (setInitialSyncSource).
// Holds e.mu.
func (e *Emulator) addLayerData(rd *resourceDefinition, nodeName string, rep *replica) {
	used := e.usedLayerIDs()
	for range rep.layerStack() {
		id := int64(0)
		for used[id] {
			id++
		}
		used[id] = true
		rep.layerIDs = append(rep.layerIDs, id)
	}
	if !rep.drbd() {
		return
	}
	nodeIDs := map[int64]bool{}
	for other, r := range rd.resources {
		if other != nodeName && r.drbd() && len(r.layerIDs) > 0 {
			nodeIDs[r.nodeID] = true
		}
	}
	for rep.nodeID = 0; nodeIDs[rep.nodeID]; rep.nodeID++ {
	}
	portsPerResource := !older(e.version, "1.32.0")
	if rd.drbd == nil {
		rd.drbd = &drbdRscDfn{secret: uuid.NewString()[:20]}
		if !portsPerResource {
			taken := map[int64]bool{}
			for _, other := range e.rds {
				if other.drbd != nil && other.drbd.tcpPort != nil {
					taken[*other.drbd.tcpPort] = true
				}
			}
			rd.drbd.tcpPort = ptrTo(lowestFreePort(taken))
		}
	}
	if portsPerResource {
		taken := map[int64]bool{}
		for _, other := range e.rds {
			for n, r := range other.resources {
				if strings.EqualFold(n, nodeName) && r.tcpPortList != nil {
					for _, p := range parsePortList(*r.tcpPortList) {
						taken[p] = true
					}
				}
			}
		}
		rep.tcpPortList = ptrTo(fmt.Sprintf("[%d]", lowestFreePort(taken)))
	}
	if rep.diskful() {
		e.setInitialSyncSource(rd, nodeName)
	}
}

// setInitialSyncSource records which replica DRBD initializes the others from. Up to
// 1.33.1 the satellite of the first diskful resource asks to become primary and the
// controller sets the definition's DrbdPrimarySetOn to that node once
// (RscDfnInternalCallHandler.handlePrimaryResourceRequest@v1.31.3). From 1.33.2 each
// volume definition gets Linstor/Drbd/InitialUptoDateOn (the node of a resource in
// use, else this one; RscDrbdLayerHelper.createVlmLayerData@v1.33.2) and, once that
// node reports UpToDate, the DRBD_INITIALIZED flag
// (VlmDfnInternalCallHandler.handleSetUpToDate@v1.33.2): at once here, the first
// diskful replica being UpToDate. Node names are stored upper-cased (NodeName.value).
// Holds e.mu.
func (e *Emulator) setInitialSyncSource(rd *resourceDefinition, nodeName string) {
	if older(e.version, "1.33.2") {
		if rd.Props[primarySetOnKey] == "" {
			if rd.Props == nil {
				rd.Props = map[string]string{}
			}
			rd.Props[primarySetOnKey] = strings.ToUpper(nodeName)
		}
		return
	}
	winner := nodeName
	for n, r := range rd.resources {
		if r.inUse && n != nodeName {
			winner = n
		}
	}
	for i := range rd.volumes {
		vd := &rd.volumes[i]
		if vd.Props[initialUpToDateOnKey] != "" {
			continue
		}
		if vd.Props == nil {
			vd.Props = map[string]string{}
		}
		vd.Props[initialUpToDateOnKey] = strings.ToUpper(winner)
		if !hasFlag(vd.Flags, "DRBD_INITIALIZED") {
			vd.Flags = append(vd.Flags, "DRBD_INITIALIZED")
		}
	}
}

// usedLayerIDs are the LayerResourceIds ids in use, the opaque rows' included (the
// server's pool holds every id it loaded). Holds e.mu.
func (e *Emulator) usedLayerIDs() map[int64]bool {
	used := map[int64]bool{}
	for _, rd := range e.rds {
		for _, r := range rd.resources {
			for _, id := range r.layerIDs {
				used[id] = true
			}
		}
	}
	for _, plural := range []string{"layerresourceids", "layerdrbdresources"} {
		for _, r := range e.opaque[plural] {
			if id, ok := int64Column(r, "layer_resource_id"); ok {
				used[id] = true
			}
		}
	}
	return used
}

func lowestFreePort(taken map[int64]bool) int64 {
	p := int64(tcpPortMin)
	for taken[p] && p < tcpPortMax {
		p++
	}
	return p
}

// parsePortList reads a tcp_port_list ("[7000]", or "[null]" after migration 28 on a
// definition without a port): the ports it names.
func parsePortList(s string) []int64 {
	var ports []*int64
	_ = json.Unmarshal([]byte(s), &ports)
	var out []int64
	for _, p := range ports {
		if p != nil {
			out = append(out, *p)
		}
	}
	return out
}
