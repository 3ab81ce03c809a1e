package emulator_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"
	"github.com/LINBIT/golinstor/devicelayerkind"

	"github.com/linstor-operator/linstor-operator/internal/emulator"
)

// volumeDefinition creates a resource definition with one 1 GiB volume.
func volumeDefinition(t *testing.T, h *harness, rd string, layers ...devicelayerkind.DeviceLayerKind) {
	t.Helper()
	ctx := context.Background()
	var data []lapi.ResourceDefinitionLayer
	for _, l := range layers {
		data = append(data, lapi.ResourceDefinitionLayer{Type: l})
	}
	must(t, h.client.ResourceDefinitions.Create(ctx, lapi.ResourceDefinitionCreate{ResourceDefinition: lapi.ResourceDefinition{Name: rd, LayerData: data}}))
	must(t, h.client.ResourceDefinitions.CreateVolumeDefinition(ctx, rd, lapi.VolumeDefinitionCreate{VolumeDefinition: lapi.VolumeDefinition{SizeKib: 1 << 20}}))
}

func createOn(h *harness, rd, node string, layers ...devicelayerkind.DeviceLayerKind) error {
	return h.client.Resources.Create(context.Background(), lapi.ResourceCreate{
		Resource: lapi.Resource{Name: rd, NodeName: node, Props: map[string]string{"StorPoolName": "thin"}}, LayerList: layers,
	})
}

func viewOf(t *testing.T, h *harness, rd, node string) lapi.ResourceWithVolumes {
	t.Helper()
	rv, err := h.client.Resources.GetResourceView(context.Background(), &lapi.ListOpts{Resource: []string{rd}, Node: []string{node}})
	must(t, err)
	if len(rv) != 1 {
		t.Fatalf("view of %s on %s: %+v", rd, node, rv)
	}
	return rv[0]
}

// Resources without DRBD (layer_list STORAGE, or LUKS,STORAGE): the layer tree is the
// stack the request named, the storage volumes' disk_state is the controller's empty
// states list "[]", and the volumes carry no disk state, because only DRBD's events fill
// it (Json.apiToResourceLayer, apiToVolumeState; DrbdEventPublisher is the only source
// of volume disk-state events). The resource state exists while the satellite is
// ONLINE: in_use unknown for STORAGE, false for LUKS (StorageLayer/LuksLayer
// .resourceFinished), and no DRBD connections. Checked against the OpenAPI spec.
func TestResourcesWithoutDRBD(t *testing.T) {
	h := newHarness(t, true)
	clk := newClock(h.emu)
	ctx := context.Background()
	for i, n := range []string{"n1", "n2"} {
		must(t, h.client.Nodes.Create(ctx, satellite(n, "10.0.3."+strconv.Itoa(i+1))))
	}
	clk.Advance(time.Second)
	addPool(t, h, "n1", "n2")

	volumeDefinition(t, h, "local")
	must(t, createOn(h, "local", "n1", devicelayerkind.Storage))
	must(t, createOn(h, "local", "n2")) // the definition's stack now is the first resource's
	volumeDefinition(t, h, "secret", devicelayerkind.Luks, devicelayerkind.Storage)
	must(t, createOn(h, "secret", "n1"))
	volumeDefinition(t, h, "replicated")
	must(t, createOn(h, "replicated", "n1", devicelayerkind.Drbd, devicelayerkind.Luks, devicelayerkind.Storage))

	for _, node := range []string{"n1", "n2"} {
		v := viewOf(t, h, "local", node)
		lo := v.LayerObject
		if lo == nil || lo.Type != devicelayerkind.Storage || lo.Drbd != nil || lo.Storage == nil || len(lo.Storage.StorageVolumes) != 1 {
			t.Fatalf("local on %s: layer object %+v", node, lo)
		}
		if sv := lo.Storage.StorageVolumes[0]; sv.DiskState != "[]" || sv.DevicePath != "/dev/vg/local_00000" {
			t.Errorf("local on %s: storage volume %+v", node, sv)
		}
		if v.State == nil || v.State.InUse != nil {
			t.Errorf("local on %s: state %+v, want a state with in_use unknown", node, v.State)
		}
		if s := v.Volumes[0].State.DiskState; s != "" {
			t.Errorf("local on %s: volume disk state %q, want none", node, s)
		}
	}
	luks := viewOf(t, h, "secret", "n1")
	if lo := luks.LayerObject; lo.Type != devicelayerkind.Luks || lo.Luks == nil || len(lo.Children) != 1 || lo.Children[0].Type != devicelayerkind.Storage {
		t.Errorf("secret: layer object %+v", lo)
	}
	if luks.State == nil || luks.State.InUse == nil || *luks.State.InUse || luks.Volumes[0].State.DiskState != "" ||
		luks.Volumes[0].DevicePath != "/dev/mapper/Linstor-Crypt-secret_00000" {
		t.Errorf("secret: %+v", luks)
	}
	drbd := viewOf(t, h, "replicated", "n1")
	if lo := drbd.LayerObject; lo.Type != devicelayerkind.Drbd || len(lo.Children) != 1 || lo.Children[0].Type != devicelayerkind.Luks ||
		len(lo.Children[0].Children) != 1 || lo.Children[0].Children[0].Type != devicelayerkind.Storage {
		t.Errorf("replicated: layer object %+v", lo)
	}
	if drbd.Volumes[0].State.DiskState != "UpToDate" {
		t.Errorf("replicated: disk state %q, want UpToDate", drbd.Volumes[0].State.DiskState)
	}

	// Only DRBD resources count for sync status (SatelliteResourceStateDrbdUtils).
	sync, err := h.client.ResourceDefinitions.SyncStatus(ctx, "local")
	must(t, err)
	if !sync.SyncedOnAll {
		t.Error("a resource without DRBD has nothing to sync")
	}

	// LINSTOR does not know a STORAGE resource is in use, so it deletes it
	// (CtrlRscDeleteApiHelper.ensureNotInUse refuses only a known true).
	must(t, h.emu.SetInUse("local", "n2", true))
	must(t, h.client.Resources.Delete(ctx, "local", "n2"))

	// Evacuation leaves it, flagged, with a warning (evacuateNodeInTrasaction).
	var answers []answer
	status := h.raw(t, "PUT", "/v1/nodes/n1/evacuate", map[string]any{}, &answers)
	if status != 200 || !hasAnswer(answers, lapiconst.WarnNotEvacuating, "'local' cannot be evacuated as it is not a DRBD resource") ||
		!hasAnswer(answers, lapiconst.WarnNotEvacuating, "'secret' cannot be evacuated as it is not a DRBD resource") {
		t.Errorf("evacuate: HTTP %d %+v", status, answers)
	}
	if v := viewOf(t, h, "local", "n1"); !contains(v.Flags, "EVACUATE") {
		t.Errorf("local after evacuate: flags %v", v.Flags)
	}
	h.conf.report(t)
}

func hasAnswer(answers []answer, code uint64, msg string) bool {
	for _, a := range answers {
		if a.code() == code && strings.Contains(a.Message, msg) {
			return true
		}
	}
	return false
}

// A layer list is parsed ignoring case with the server's aliases, checked against
// LayerUtils' rules, and refused for layers the emulated satellites cannot build.
func TestLayerListChecks(t *testing.T) {
	h, _ := onlineHarness(t, "n1")
	addPool(t, h, "n1")
	volumeDefinition(t, h, "pvc-l")
	for _, tc := range []struct {
		layers []devicelayerkind.DeviceLayerKind
		code   uint64
	}{
		{[]devicelayerkind.DeviceLayerKind{"tape"}, lapiconst.FailInvldLayerKind | lapiconst.MaskCrt | lapiconst.MaskRsc},
		{[]devicelayerkind.DeviceLayerKind{"luks", "drbd", "storage"}, lapiconst.FailInvldLayerStack | lapiconst.MaskCrt | lapiconst.MaskRsc},
		{[]devicelayerkind.DeviceLayerKind{"drbd"}, lapiconst.FailInvldLayerStack | lapiconst.MaskCrt | lapiconst.MaskRsc},
		{[]devicelayerkind.DeviceLayerKind{"storage", "storage"}, lapiconst.FailInvldLayerStack | lapiconst.MaskCrt | lapiconst.MaskRsc},
		{[]devicelayerkind.DeviceLayerKind{"nvme", "storage"}, lapiconst.FailStltDoesNotSupportLayer | lapiconst.MaskCrt | lapiconst.MaskRsc},
	} {
		status, got := h.call(t, "POST", "/v1/resource-definitions/pvc-l/resources/n1", lapi.ResourceCreate{
			Resource: lapi.Resource{Name: "pvc-l", NodeName: "n1"}, LayerList: tc.layers})
		expect(t, javaLike(tc.layers), status, got, 500, tc.code)
	}
	must(t, createOn(h, "pvc-l", "n1", "Crypt", "LVM")) // aliases: LUKS, STORAGE
	if lo := viewOf(t, h, "pvc-l", "n1").LayerObject; lo.Type != devicelayerkind.Luks {
		t.Errorf("aliases: layer object %+v", lo)
	}
	if err := h.emu.PlaceResourceWithLayers("pvc-x", "n1", "", false, devicelayerkind.Storage); err == nil {
		t.Error("a diskless STORAGE resource was placed")
	}
}

func javaLike(l []devicelayerkind.DeviceLayerKind) string {
	b, _ := json.Marshal(l)
	return string(b)
}

// A cut replication link: both satellites stay ONLINE; each side's DRBD reports the
// connection Connecting (drbd_receiver.c conn_disconnect, conn_connect) and LINSTOR
// marks it not connected (Json.apiToResourceWithVolumes: connected only for
// "Connected"). Each side keeps its own disk UpToDate (drbd_state.c sanitize_state:
// with replication Off the own disk may stay UpToDate, the peer's is unknown). Writes
// on one side do not reach the other; after the link heals the side that missed them
// resyncs from the writer, Inconsistent meanwhile.
func TestPartitionedReplicationLink(t *testing.T) {
	h, clk := onlineHarness(t, "n1", "n2", "n3")
	h.emu.SetTiming(emulator.Timing{SatelliteConnect: 0, Resync: 10 * time.Second})
	addPool(t, h, "n1", "n2")
	must(t, h.emu.PlaceResource("pvc-p", "n1", "thin", true))
	must(t, h.emu.PlaceResource("pvc-p", "n2", "thin", false))
	must(t, h.emu.PlaceResource("pvc-p", "n3", "", false)) // a diskless peer
	must(t, h.emu.PartitionLink("n1", "n2"))

	conn := func(node, peer string) lapi.DrbdConnection {
		return viewOf(t, h, "pvc-p", node).LayerObject.Drbd.Connections[peer]
	}
	for _, p := range [][2]string{{"n1", "n2"}, {"n2", "n1"}} {
		if c := conn(p[0], p[1]); c.Connected || c.Message != "Connecting" {
			t.Errorf("%s -> %s: %+v, want not connected, Connecting", p[0], p[1], c)
		}
	}
	if c := conn("n2", "n3"); !c.Connected || c.Message != "Connected" {
		t.Errorf("n2 -> n3: %+v, want Connected", c)
	}
	for _, n := range []string{"n1", "n2"} {
		if s := viewOf(t, h, "pvc-p", n).Volumes[0].State.DiskState; s != "UpToDate" {
			t.Errorf("%s reports %q, want UpToDate on both sides", n, s)
		}
		if node, _ := h.emu.Node(n); node.ConnectionStatus != "ONLINE" {
			t.Errorf("%s is %s, want ONLINE", n, node.ConnectionStatus)
		}
	}
	newest := func(n string) bool {
		ok, err := h.emu.HasNewestData("pvc-p", n)
		must(t, err)
		return ok
	}
	if !newest("n1") || newest("n2") {
		t.Errorf("in use on n1 while cut off: n1 newest %v, n2 newest %v; want n2 behind", newest("n1"), newest("n2"))
	}
	// LINSTOR counts what the replicas report: the cut-off copy looks fine to it.
	sync, err := h.client.ResourceDefinitions.SyncStatus(context.Background(), "pvc-p")
	must(t, err)
	if !sync.SyncedOnAll {
		t.Error("sync status: LINSTOR cannot see the cut-off replica is behind")
	}

	must(t, h.emu.SetInUse("pvc-p", "n1", false))
	must(t, h.emu.HealLink("n2", "n1"))
	if c := conn("n1", "n2"); !c.Connected {
		t.Errorf("healed: %+v", c)
	}
	if s := viewOf(t, h, "pvc-p", "n2").Volumes[0].State.DiskState; s != "Inconsistent" || newest("n2") {
		t.Errorf("healed: n2 reports %q, newest %v; want a resync", s, newest("n2"))
	}
	clk.Advance(11 * time.Second)
	if s := viewOf(t, h, "pvc-p", "n2").Volumes[0].State.DiskState; s != "UpToDate" || !newest("n2") {
		t.Errorf("resynced: n2 reports %q, newest %v", s, newest("n2"))
	}

	// Cut while nothing writes: no side falls behind, nothing resyncs.
	must(t, h.emu.PartitionLink("n1", "n2"))
	must(t, h.emu.HealLink("n1", "n2"))
	if s := viewOf(t, h, "pvc-p", "n2").Volumes[0].State.DiskState; s != "UpToDate" || !newest("n2") {
		t.Errorf("idle cut: n2 reports %q, newest %v", s, newest("n2"))
	}
	if err := h.emu.PartitionLink("n1", "N1"); err == nil {
		t.Error("a link from a node to itself was cut")
	}
}

// Layers, and what a disk holds, survive a controller restart on the database; the
// network's state is not in it.
func TestLayersAndMissedWritesSurviveARestart(t *testing.T) {
	h, _ := onlineHarness(t, "n1", "n2")
	addPool(t, h, "n1", "n2")
	must(t, h.emu.PlaceResourceWithLayers("pvc-s", "n1", "thin", false, devicelayerkind.Storage))
	must(t, h.emu.PlaceResource("pvc-d", "n1", "thin", true))
	must(t, h.emu.PlaceResource("pvc-d", "n2", "thin", false))
	must(t, h.emu.PartitionLink("n1", "n2"))
	rows := h.emu.DatabaseRows()
	must(t, h.emu.LoadDatabaseRows(rows))
	if lo := viewOf(t, h, "pvc-s", "n1").LayerObject; lo.Type != devicelayerkind.Storage {
		t.Errorf("after restart: pvc-s layer object %+v", lo)
	}
	if ok, _ := h.emu.HasNewestData("pvc-d", "n2"); ok {
		t.Error("a restart brought missed writes back")
	}
}
