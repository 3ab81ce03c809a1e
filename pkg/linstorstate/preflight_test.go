package linstorstate

import (
	"strings"
	"testing"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"
	"github.com/LINBIT/golinstor/devicelayerkind"
)

func TestUpgradeProblems(t *testing.T) {
	nodes := []lapi.Node{
		// A real controller answers the enum names; a CONTROLLER or AUXILIARY node has
		// no satellite and is always OFFLINE. Either spelling must be recognized.
		{Name: "ctrl", Type: "CONTROLLER", ConnectionStatus: "OFFLINE"},
		{Name: "ctrl2", Type: "Controller", ConnectionStatus: "OFFLINE"},
		{Name: "aux", Type: "AUXILIARY", ConnectionStatus: "OFFLINE"},
		{Name: "a", Type: "SATELLITE", ConnectionStatus: "ONLINE"},
		{Name: "b", Type: "COMBINED", ConnectionStatus: "VERSION_MISMATCH"},
	}
	res := func(name, node, disk string, conns map[string]lapi.DrbdConnection) lapi.ResourceWithVolumes {
		r := lapi.ResourceWithVolumes{Resource: lapi.Resource{Name: name, NodeName: node,
			LayerObject: &lapi.ResourceLayer{Drbd: &lapi.DrbdResource{Connections: conns}}}}
		r.Volumes = []lapi.Volume{{VolumeNumber: 0, State: lapi.VolumeState{DiskState: disk}}}
		if disk == "Diskless" { // a diskless replica, as LINSTOR flags it
			r.Flags = []string{lapiconst.FlagDrbdDiskless}
			r.Volumes[0].ProviderKind = lapi.DISKLESS
		}
		return r
	}
	resources := []lapi.ResourceWithVolumes{
		res("pvc-1", "a", "UpToDate", map[string]lapi.DrbdConnection{"b": {Connected: true}}),
		res("pvc-1", "b", "Diskless", map[string]lapi.DrbdConnection{"a": {Connected: true}}),
		res("pvc-2", "a", "Outdated", map[string]lapi.DrbdConnection{"c": {Connected: false}}),
	}
	got := strings.Join(UpgradeProblems(nodes, resources, map[string]bool{"pvc-2": true, "pvc-1": false}), "; ")
	want := "satellite b is VERSION_MISMATCH; resource pvc-2 on a: volume 0 is Outdated; resource pvc-2 on a: not connected to c; resource pvc-2 is resynchronizing"
	if got != want {
		t.Fatalf("problems:\n got %s\nwant %s", got, want)
	}
	if p := UpgradeProblems(nodes[:2], resources[:2], nil); len(p) != 0 {
		t.Fatalf("healthy cluster has problems: %v", p)
	}
}

// Problems reads each resource by its layers, as LINSTOR builds the view
// (Json.apiToResourceWithVolumes): only DRBD resources have disk states and per-peer
// connections. A STORAGE or LUKS,STORAGE volume has no disk state, ever, since only
// DRBD's events fill it; what LINSTOR reports as its failure is an error in the
// volume's reports, or no resource state at all from an ONLINE satellite (the
// satellite never reported the resource created).
func TestProblemsByLayer(t *testing.T) {
	nodes := []lapi.Node{{Name: "a", Type: "SATELLITE", ConnectionStatus: "ONLINE"}}
	layered := func(name string, top devicelayerkind.DeviceLayerKind, below ...devicelayerkind.DeviceLayerKind) lapi.ResourceWithVolumes {
		l := &lapi.ResourceLayer{Type: top}
		cur := l
		for _, k := range below {
			cur.Children = []lapi.ResourceLayer{{Type: k}}
			cur = &cur.Children[0]
		}
		switch top {
		case devicelayerkind.Drbd:
			l.Drbd = &lapi.DrbdResource{Connections: map[string]lapi.DrbdConnection{}}
		case devicelayerkind.Luks:
			l.Luks = &lapi.LuksResource{}
		case devicelayerkind.Storage:
			l.Storage = &lapi.StorageResource{StorageVolumes: []lapi.StorageVolume{{DiskState: "[]"}}}
		}
		return lapi.ResourceWithVolumes{
			Resource: lapi.Resource{Name: name, NodeName: "a", LayerObject: l, State: &lapi.ResourceState{}},
			Volumes:  []lapi.Volume{{VolumeNumber: 0, ProviderKind: lapi.LVM_THIN}},
		}
	}
	retCode := func(mask uint64) int64 { return int64(mask | 0x1234) } // signed, as LINSTOR sends it
	failed := layered("pvc-failed", devicelayerkind.Storage)
	failed.Volumes[0].Reports = []lapi.ApiCallRc{{RetCode: retCode(lapiconst.MaskError), Message: "Failed to query lvs"}}
	warned := layered("pvc-warned", devicelayerkind.Storage)
	warned.Volumes[0].Reports = []lapi.ApiCallRc{{RetCode: retCode(lapiconst.MaskWarn), Message: "thin pool nearly full"}}
	unreported := layered("pvc-unreported", devicelayerkind.Luks, devicelayerkind.Storage)
	unreported.State = nil
	drbdUnknown := layered("pvc-drbd", devicelayerkind.Drbd, devicelayerkind.Storage)
	noLayers := layered("pvc-old", devicelayerkind.Storage)
	noLayers.LayerObject = nil

	for _, tc := range []struct {
		name string
		rsc  lapi.ResourceWithVolumes
		want string
	}{
		{"storage only", layered("pvc-local", devicelayerkind.Storage), ""},
		{"LUKS over storage", layered("pvc-crypt", devicelayerkind.Luks, devicelayerkind.Storage), ""},
		{"a storage volume whose satellite reports an error", failed, "resource pvc-failed on a: volume 0: Failed to query lvs"},
		{"a warning is no failure", warned, ""},
		{"an ONLINE satellite never reported the resource", unreported, "resource pvc-unreported on a: its satellite reports no state for it"},
		{"DRBD without a disk state is unknown", drbdUnknown, "resource pvc-drbd on a: volume 0 reports no disk state"},
		{"no layer data: judged as DRBD", noLayers, "resource pvc-old on a: volume 0 reports no disk state"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Join(UpgradeProblems(nodes, []lapi.ResourceWithVolumes{tc.rsc}, map[string]bool{tc.rsc.Name: false}), "; ")
			if got != tc.want {
				t.Fatalf("Problems = %q, want %q", got, tc.want)
			}
		})
	}
}

// DRBD reports "Diskless" both for a replica made without a disk and for a diskful
// one whose disk detached (an I/O error, a failed attach): only the first is healthy.
// Which one it is, LINSTOR's flags and storage pool say (linstor.Diskful).
func TestProblemsDisklessOnlyWithoutADisk(t *testing.T) {
	nodes := []lapi.Node{{Name: "a", Type: "SATELLITE", ConnectionStatus: "ONLINE"}, {Name: "b", Type: "SATELLITE", ConnectionStatus: "ONLINE"}}
	res := func(node string, kind lapi.ProviderKind, flags ...string) lapi.ResourceWithVolumes {
		return lapi.ResourceWithVolumes{
			Resource: lapi.Resource{Name: "pvc-1", NodeName: node, Flags: flags,
				LayerObject: &lapi.ResourceLayer{Type: devicelayerkind.Drbd, Drbd: &lapi.DrbdResource{Connections: map[string]lapi.DrbdConnection{}}}},
			Volumes: []lapi.Volume{{VolumeNumber: 0, ProviderKind: kind, State: lapi.VolumeState{DiskState: "Diskless"}}},
		}
	}
	for _, tc := range []struct {
		name string
		rsc  lapi.ResourceWithVolumes
		want string
	}{
		{"a diskless replica (DRBD_DISKLESS, diskless pool)", res("a", lapi.DISKLESS, "DRBD_DISKLESS"), ""},
		{"a diskless pool without the flag", res("a", lapi.DISKLESS), ""},
		{"a tie-breaker", res("a", lapi.DISKLESS, "DRBD_DISKLESS", "TIE_BREAKER"), ""},
		{"a diskful replica whose disk detached", res("b", lapi.LVM_THIN), "resource pvc-1 on b: volume 0 is Diskless, but it has a disk (detached)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Join(UpgradeProblems(nodes, []lapi.ResourceWithVolumes{tc.rsc}, nil), "; ")
			if got != tc.want {
				t.Fatalf("Problems = %q, want %q", got, tc.want)
			}
		})
	}
}
