package emulator

import (
	"fmt"
	"strings"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"
	"github.com/LINBIT/golinstor/devicelayerkind"
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
// LINSTOR marks only "Connected" as connected (Json.apiToResourceWithVolumes).
func (e *Emulator) drbdConnection(nodeName, peer string) lapi.DrbdConnection {
	if e.drbdRuns(peer) && e.linked(nodeName, peer) {
		return lapi.DrbdConnection{Connected: true, Message: "Connected"}
	}
	return lapi.DrbdConnection{Connected: false, Message: "Connecting"}
}
