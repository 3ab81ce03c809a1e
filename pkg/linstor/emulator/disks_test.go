package emulator_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/linstor-operator/linstor-operator/pkg/linstor/emulator"
)

// The disks of the satellites' machines, lsblk's candidate filter and device pools
// as the satellite makes them (LsBlkUtils.filterDeviceCandidates,
// DevicePoolHandler, LvmCommands.pvCreate, ZfsCommands.createZPool).

const gib = int64(1) << 30

// diskHarness is an emulator whose node n1 runs on a machine with disks. Its requests
// and answers are checked against the OpenAPI spec when one is given.
func diskHarness(t *testing.T, disks ...emulator.Disk) *harness {
	t.Helper()
	h := newHarness(t, os.Getenv(specEnv) != "")
	if h.conf != nil {
		t.Cleanup(func() { h.conf.report(t) })
	}
	clk := newClock(h.emu)
	h.emu.SetNodeDisks("n1", disks...)
	must(t, h.client.Nodes.Create(context.Background(), satellite("n1", "10.0.6.1")))
	clk.Advance(time.Second)
	return h
}

func devicePool(t *testing.T, h *harness, node string, req lapi.PhysicalStorageCreate) (int, []answer) {
	t.Helper()
	return h.call(t, "POST", "/v1/physical-storage/"+node, req)
}

// disk returns a disk of n1's machine as it is now.
func disk(t *testing.T, h *harness, device string) emulator.Disk {
	t.Helper()
	for _, d := range h.emu.NodeDisks("n1") {
		if d.Device == device {
			return d
		}
	}
	t.Fatalf("no disk %s on n1: %+v", device, h.emu.NodeDisks("n1"))
	return emulator.Disk{}
}

func candidateNames(t *testing.T, h *harness, node string) []string {
	t.Helper()
	list, err := h.client.Nodes.GetPhysicalStorage(context.Background(), node)
	must(t, err)
	names := []string{}
	for _, d := range list {
		names = append(names, d.Device)
	}
	return names
}

func expectCandidates(t *testing.T, h *harness, want ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if got := candidateNames(t, h, "n1"); !reflect.DeepEqual(got, want) {
		t.Errorf("candidates of n1 = %v, want %v", got, want)
	}
}

func messages(got []answer) string {
	var out []string
	for _, a := range got {
		out = append(out, a.Message)
	}
	return strings.Join(out, " | ")
}

// Each row of filterDeviceCandidates keeps a disk out: 1 GiB or less, children, a
// FSTYPE (an orphan PV's too), DRBD's major, membership of an active VG.
func TestPhysicalStorageCandidates(t *testing.T) {
	h := diskHarness(t,
		emulator.Disk{Device: "/dev/sda", Size: gib},
		emulator.Disk{Device: "/dev/sdb", Size: 2 * gib, Partitioned: true},
		emulator.Disk{Device: "/dev/sdc", Size: 2 * gib, FSType: "ext4"},
		emulator.Disk{Device: "/dev/drbd1000", Size: 2 * gib, Major: 147},
		emulator.Disk{Device: "/dev/sdd", Size: 2 * gib, FSType: emulator.FSTypeLVM, Pool: "vg0"},
		emulator.Disk{Device: "/dev/sde", Size: 2 * gib, FSType: emulator.FSTypeLVM},
		emulator.Disk{Device: "/dev/sdf", Size: gib + 1},
		emulator.Disk{Device: "/dev/sdg", Size: 4 * gib, Rotational: true, Model: "ST4000NM0035", Serial: "ZC1ABC", WWN: "0x5000c500a1b2c3d4"},
		emulator.Disk{Device: "/dev/nvme0n1", Size: 4 * gib, Model: "SAMSUNG MZQL21T9HCJR-00A07", Serial: "S64GNE0R123456", WWN: "eui.0025388b91b2f1a1"},
	)
	ctx := context.Background()
	list, err := h.client.Nodes.GetPhysicalStorage(ctx, "n1")
	must(t, err)
	want := []lapi.PhysicalStorageNode{
		{PhysicalStorageDevice: lapi.PhysicalStorageDevice{Device: "/dev/sdf"}, Size: gib + 1},
		{PhysicalStorageDevice: lapi.PhysicalStorageDevice{Device: "/dev/sdg", Model: "ST4000NM0035", Serial: "ZC1ABC", Wwn: "0x5000c500a1b2c3d4"}, Size: 4 * gib, Rotational: true},
		{PhysicalStorageDevice: lapi.PhysicalStorageDevice{Device: "/dev/nvme0n1", Model: "SAMSUNG MZQL21T9HCJR-00A07", Serial: "S64GNE0R123456", Wwn: "eui.0025388b91b2f1a1"}, Size: 4 * gib},
	}
	if !reflect.DeepEqual(list, want) {
		t.Errorf("candidates = %+v\nwant %+v", list, want)
	}

	// The view groups by size, then rotational (false first); offline nodes are skipped.
	must(t, h.client.Nodes.Create(ctx, satellite("n2", "10.0.6.2")))
	must(t, h.emu.SetNodeOnline("n2", false))
	view, err := h.client.Nodes.GetPhysicalStorageView(ctx)
	must(t, err)
	type group struct {
		size int64
		rot  bool
		devs int
	}
	var got []group
	for _, g := range view {
		if len(g.Nodes) != 1 || g.Nodes["n1"] == nil {
			t.Errorf("group %+v should hold n1 only", g)
		}
		got = append(got, group{g.Size, g.Rotational, len(g.Nodes["n1"])})
	}
	if wantGroups := []group{{gib + 1, false, 1}, {4 * gib, false, 1}, {4 * gib, true, 1}}; !reflect.DeepEqual(got, wantGroups) {
		t.Errorf("view groups = %+v, want %+v", got, wantGroups)
	}
}

// Any name udev gives a disk opens it; messages name the path as given, and the
// default pool name is built from the first one (getDevicePoolName).
func TestDevicePoolResolvesLinks(t *testing.T) {
	h := diskHarness(t,
		emulator.Disk{Device: "/dev/nvme1n1", Size: 8 * gib, WWN: "eui.0025388b91b2f1a1", Links: []string{"/dev/disk/by-id/nvme-eui.0025388b91b2f1a1"}},
		emulator.Disk{Device: "/dev/sdb", Size: 4 * gib, WWN: "0x5000c500a1b2c3d4", Links: []string{"/dev/disk/by-id/wwn-0x5000c500a1b2c3d4"}},
	)
	nvme, sdb := "/dev/disk/by-id/nvme-eui.0025388b91b2f1a1", "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4"
	status, got := devicePool(t, h, "n1", lapi.PhysicalStorageCreate{ProviderKind: lapi.LVM, DevicePaths: []string{"/dev/disk/by-id/nvme-eui.ffff"}})
	expect(t, "an unknown link", status, got, http.StatusInternalServerError, lapiconst.FailUnknownError)
	if got[0].Message != "(n1) Failed to pvcreate on device: /dev/disk/by-id/nvme-eui.ffff" {
		t.Errorf("message = %q", got[0].Message)
	}

	// A default name from "nvme-eui.<id>" holds a '.', which StorDriver/StorPoolName
	// refuses: the storage pool is not registered and the VG is removed again.
	status, got = devicePool(t, h, "n1", lapi.PhysicalStorageCreate{ProviderKind: lapi.LVM, DevicePaths: []string{nvme, sdb},
		WithStoragePool: lapi.PhysicalStorageStoragePoolCreate{Name: "fast"}})
	if status != http.StatusInternalServerError || len(got) != 6 || got[3].code() != lapiconst.FailInvldProp|lapiconst.MaskCrt|lapiconst.MaskStorPool {
		t.Errorf("a VG name with a dot: HTTP %d %s", status, messages(got))
	}
	expectCandidates(t, h, "/dev/nvme1n1", "/dev/sdb")

	status, got = devicePool(t, h, "n1", lapi.PhysicalStorageCreate{ProviderKind: lapi.LVM, DevicePaths: []string{sdb, nvme},
		WithStoragePool: lapi.PhysicalStorageStoragePoolCreate{Name: "fast"}})
	vg := "linstor_wwn-0x5000c500a1b2c3d4"
	expect(t, "LVM on by-id links", status, got, http.StatusCreated, lapiconst.MaskCrt|lapiconst.MaskPhysicalDevice)
	wantMsgs := []string{
		"(n1) PV for device '" + sdb + "' created.",
		"(n1) PV for device '" + nvme + "' created.",
		"(n1) VG for devices [" + sdb + ", " + nvme + "] with name '" + vg + "' created.",
		"Successfully set property key(s): StorDriver/StorPoolName",
		"New storage pool 'fast' on node 'n1' registered.",
		"Storage pool updated on 'n1'",
	}
	if msgs := messages(got); msgs != strings.Join(wantMsgs, " | ") {
		t.Errorf("answer = %s", msgs)
	}
	if got[0].ObjRefs["PoolName"] != vg {
		t.Errorf("obj_refs = %v", got[0].ObjRefs)
	}
	for _, dev := range []string{"/dev/nvme1n1", "/dev/sdb"} {
		if d := disk(t, h, dev); d.FSType != emulator.FSTypeLVM || d.Pool != vg || !d.InUse() {
			t.Errorf("%s = %+v, want a PV of %s", dev, d, vg)
		}
	}
	pool, err := h.client.Nodes.GetStoragePool(context.Background(), "n1", "fast")
	must(t, err)
	if pool.TotalCapacity != 12*gib/1024 || pool.Props["StorDriver/StorPoolName"] != vg {
		t.Errorf("pool = %+v", pool)
	}
	expectCandidates(t, h)
}

// pvcreate runs device by device: the first it refuses ends the call, the PVs made
// before it stay (orphans, not candidates), the controller answers the error alone
// and no storage pool follows. pvcreate takes an orphan PV again.
func TestDevicePoolLVMPartialFailure(t *testing.T) {
	h := diskHarness(t,
		emulator.Disk{Device: "/dev/sdb", Size: 10 * gib},
		emulator.Disk{Device: "/dev/sdc", Size: 10 * gib, FSType: "ext4"},
		emulator.Disk{Device: "/dev/sdd", Size: 10 * gib},
		emulator.Disk{Device: "/dev/sdf", Size: 10 * gib, Partitioned: true},
	)
	req := lapi.PhysicalStorageCreate{ProviderKind: lapi.LVM, DevicePaths: []string{"/dev/sdb", "/dev/sdc", "/dev/sdd"}, PoolName: "vg1",
		WithStoragePool: lapi.PhysicalStorageStoragePoolCreate{Name: "fat"}}
	status, got := devicePool(t, h, "n1", req)
	expect(t, "a device with a filesystem", status, got, http.StatusInternalServerError, lapiconst.FailUnknownError)
	if len(got) != 1 || got[0].Message != "(n1) Failed to pvcreate on device: /dev/sdc" || !strings.Contains(got[0].Details, "ext4 signature detected") {
		t.Errorf("answer = %+v", got)
	}
	if d := disk(t, h, "/dev/sdb"); d.FSType != emulator.FSTypeLVM || d.InUse() {
		t.Errorf("sdb = %+v, want an orphan PV", d)
	}
	if d := disk(t, h, "/dev/sdd"); d.FSType != "" {
		t.Errorf("sdd = %+v, want untouched", d)
	}
	if _, err := h.client.Nodes.GetStoragePool(context.Background(), "n1", "fat"); err == nil {
		t.Error("a storage pool was registered after a failed device pool")
	}
	expectCandidates(t, h, "/dev/sdd")

	status, got = devicePool(t, h, "n1", lapi.PhysicalStorageCreate{ProviderKind: lapi.LVM, DevicePaths: []string{"/dev/sdf"}, PoolName: "vg9"})
	expect(t, "a partitioned disk", status, got, http.StatusInternalServerError, lapiconst.FailUnknownError)
	if !strings.Contains(got[0].Details, "device is partitioned") {
		t.Errorf("details = %q", got[0].Details)
	}

	req.DevicePaths = []string{"/dev/sdb", "/dev/sdd"}
	status, got = devicePool(t, h, "n1", req)
	expect(t, "the orphan PV and a blank disk", status, got, http.StatusCreated, lapiconst.MaskCrt|lapiconst.MaskPhysicalDevice)
	for _, dev := range req.DevicePaths {
		if d := disk(t, h, dev); d.Pool != "vg1" {
			t.Errorf("%s = %+v, want in vg1", dev, d)
		}
	}

	// The satellite checks the VG name first (checkPoolExists): nothing is touched.
	h.emu.AddNodeDisk("n1", emulator.Disk{Device: "/dev/sde", Size: 10 * gib})
	expectCandidates(t, h, "/dev/sde")
	status, got = devicePool(t, h, "n1", lapi.PhysicalStorageCreate{ProviderKind: lapi.LVM, DevicePaths: []string{"/dev/sde"}, PoolName: "vg1"})
	expect(t, "an existing VG name", status, got, http.StatusInternalServerError, lapiconst.FailExistsStorPool)
	if got[0].Message != "(n1) Volume group name already used." {
		t.Errorf("message = %q", got[0].Message)
	}
	expectCandidates(t, h, "/dev/sde")
	status, got = devicePool(t, h, "n1", lapi.PhysicalStorageCreate{ProviderKind: lapi.LVM, DevicePaths: []string{"/dev/sdd"}, PoolName: "vg2"})
	expect(t, "a PV of an active VG", status, got, http.StatusInternalServerError, lapiconst.FailUnknownError)
	if !strings.Contains(got[0].Details, `of volume group "vg1"`) {
		t.Errorf("details = %q", got[0].Details)
	}
}

// zpool create -f takes a device holding an old signature or partitions, destroying
// them (Overwritten reports it); a device in use stops it.
func TestZFSDevicePoolForcesOverOldSignatures(t *testing.T) {
	h := diskHarness(t,
		emulator.Disk{Device: "/dev/sdb", Size: 10 * gib, FSType: emulator.FSTypeZFS},
		emulator.Disk{Device: "/dev/sdc", Size: 10 * gib, Partitioned: true},
		emulator.Disk{Device: "/dev/sdd", Size: 10 * gib, FSType: emulator.FSTypeLVM, Pool: "vg0"},
		emulator.Disk{Device: "/dev/sde", Size: 10 * gib, FSType: emulator.FSTypeZFS, Pool: "tank"},
		emulator.Disk{Device: "/dev/sdf", Size: 10 * gib},
	)
	for _, tc := range []struct{ what, dev, pool, details string }{
		{"a PV of an active VG", "/dev/sdd", "z1", "part of an active md or lvm device"},
		{"a vdev of an imported pool", "/dev/sde", "z1", "is part of active pool 'tank'"},
		{"a missing device", "/dev/sdz", "z1", "no such device"},
	} {
		status, got := devicePool(t, h, "n1", lapi.PhysicalStorageCreate{ProviderKind: lapi.ZFS, DevicePaths: []string{"/dev/sdf", tc.dev}, PoolName: tc.pool})
		expect(t, tc.what, status, got, http.StatusInternalServerError, lapiconst.FailUnknownError)
		if got[0].Message != "(n1) Failed to create zpool: "+tc.pool || !strings.Contains(got[0].Details, tc.details) {
			t.Errorf("%s: %+v", tc.what, got[0])
		}
	}
	status, got := devicePool(t, h, "n1", lapi.PhysicalStorageCreate{ProviderKind: lapi.ZFS, DevicePaths: []string{"/dev/sdf"}, PoolName: "tank"})
	expect(t, "an existing zpool name", status, got, http.StatusInternalServerError, lapiconst.FailExistsStorPool)
	if d := disk(t, h, "/dev/sdf"); d.FSType != "" || len(h.emu.Overwritten()) != 0 {
		t.Fatalf("a refused zpool create changed something: sdf %+v, overwritten %v", d, h.emu.Overwritten())
	}

	status, got = devicePool(t, h, "n1", lapi.PhysicalStorageCreate{ProviderKind: lapi.ZFS_THIN, DevicePaths: []string{"/dev/sdb", "/dev/sdc", "/dev/sdf"}, PoolName: "z1",
		WithStoragePool: lapi.PhysicalStorageStoragePoolCreate{Name: "zthin"}})
	expect(t, "ZFS over an old label and partitions", status, got, http.StatusCreated, lapiconst.MaskCrt|lapiconst.MaskPhysicalDevice)
	if got[0].Message != "(n1) ZPool 'z1' on device(s) [/dev/sdb, /dev/sdc, /dev/sdf] created." {
		t.Errorf("answer = %s", messages(got))
	}
	if ow := h.emu.Overwritten(); !reflect.DeepEqual(ow, []string{"n1:/dev/sdb", "n1:/dev/sdc"}) {
		t.Errorf("Overwritten = %v", ow)
	}
	for _, dev := range []string{"/dev/sdb", "/dev/sdc", "/dev/sdf"} {
		if d := disk(t, h, dev); d.FSType != emulator.FSTypeZFS || d.Pool != "z1" || d.Partitioned {
			t.Errorf("%s = %+v, want a vdev of z1", dev, d)
		}
	}
	pool, err := h.client.Nodes.GetStoragePool(context.Background(), "n1", "zthin")
	must(t, err)
	if pool.TotalCapacity != 30*gib/1024 || pool.Props["StorDriver/StorPoolName"] != "z1" || pool.ProviderKind != lapi.ZFS_THIN {
		t.Errorf("pool = %+v", pool)
	}
	expectCandidates(t, h)
}

// When the storage pool cannot be registered, the device pool is deleted again
// (PhysicalStorage.createDevicePool gives deleteDevicePool as the pool step's error path).
func TestDevicePoolRolledBackWhenThePoolIsRefused(t *testing.T) {
	h := diskHarness(t, emulator.Disk{Device: "/dev/sdb", Size: 10 * gib}, emulator.Disk{Device: "/dev/sdc", Size: 10 * gib})
	ctx := context.Background()
	must(t, h.client.Nodes.CreateStoragePool(ctx, "n1", lapi.StoragePool{StoragePoolName: "thin", ProviderKind: lapi.LVM_THIN,
		Props: map[string]string{"StorDriver/LvmVg": "vg", "StorDriver/ThinPool": "thin"}}))
	status, got := devicePool(t, h, "n1", lapi.PhysicalStorageCreate{ProviderKind: lapi.LVM_THIN, DevicePaths: []string{"/dev/sdb", "/dev/sdc"}, PoolName: "vg/thin",
		WithStoragePool: lapi.PhysicalStorageStoragePoolCreate{Name: "thin"}})
	if status != http.StatusInternalServerError {
		t.Errorf("HTTP %d, want 500", status)
	}
	wantMsgs := []string{
		"(n1) PV for device '/dev/sdb' created.", "(n1) PV for device '/dev/sdc' created.",
		"(n1) VG for devices [/dev/sdb, /dev/sdc] with name 'vg' created.", "(n1) Thin-pool 'thin' in LVM-pool 'vg' created.",
		"Node: n1, Storage pool name: thin already exists.",
		"(n1) Thin lv with name 'thin' removed.", "(n1) VG with name 'vg' removed.", "(n1) PV for device(s) '/dev/sdb,/dev/sdc' removed.",
	}
	if msgs := messages(got); msgs != strings.Join(wantMsgs, " | ") {
		t.Errorf("answer = %s", msgs)
	}
	if got[4].code() != lapiconst.FailExistsStorPool|lapiconst.MaskCrt|lapiconst.MaskStorPool {
		t.Errorf("refusal = %+v", got[4])
	}
	expectCandidates(t, h, "/dev/sdb", "/dev/sdc")
	// The VG is gone with it: the same request works once the name is free.
	must(t, h.client.Nodes.DeleteStoragePool(ctx, "n1", "thin"))
	status, got = devicePool(t, h, "n1", lapi.PhysicalStorageCreate{ProviderKind: lapi.LVM_THIN, DevicePaths: []string{"/dev/sdb", "/dev/sdc"}, PoolName: "vg/thin",
		WithStoragePool: lapi.PhysicalStorageStoragePoolCreate{Name: "thin"}})
	expect(t, "after the rollback", status, got, http.StatusCreated, lapiconst.MaskCrt|lapiconst.MaskPhysicalDevice)
}

// The disks are the machine's: deleting the storage pool, the node, restoring an
// older database leave the VG on them, so they never show as unused again.
func TestDisksOutliveLinstor(t *testing.T) {
	h := newHarness(t, false)
	clk := newClock(h.emu)
	ctx := context.Background()
	h.emu.SetNewNodeDisks(lapi.PhysicalStorageNode{PhysicalStorageDevice: lapi.PhysicalStorageDevice{Device: "/dev/vdb", Model: "virtio"}, Size: 100 * gib})
	must(t, h.client.Nodes.Create(ctx, satellite("n1", "10.0.7.1")))
	clk.Advance(time.Second)
	expectCandidates(t, h, "/dev/vdb")
	backup := h.emu.DatabaseRows()

	req := lapi.PhysicalStorageCreate{ProviderKind: lapi.LVM_THIN, DevicePaths: []string{"/dev/vdb"}, PoolName: "linstor_thin/thin",
		WithStoragePool: lapi.PhysicalStorageStoragePoolCreate{Name: "thin"}}
	must(t, h.client.Nodes.CreateDevicePool(ctx, "n1", req))
	inVG := func(when string) {
		t.Helper()
		if d := disk(t, h, "/dev/vdb"); d.FSType != emulator.FSTypeLVM || d.Pool != "linstor_thin" {
			t.Errorf("%s: vdb = %+v, want in linstor_thin", when, d)
		}
		expectCandidates(t, h)
	}
	inVG("after the device pool")

	// LINSTOR's storage pool delete leaves the VG alone.
	must(t, h.client.Nodes.DeleteStoragePool(ctx, "n1", "thin"))
	inVG("after the storage pool delete")
	mustFail(t, h.client.Nodes.CreateDevicePool(ctx, "n1", req), "Failed to pvcreate on device: /dev/vdb")

	// A new LINSTOR node on the same machine finds it as it was; the defaults are for
	// machines never seen.
	must(t, h.client.Nodes.Delete(ctx, "n1"))
	h.emu.SetNewNodeDisks(lapi.PhysicalStorageNode{PhysicalStorageDevice: lapi.PhysicalStorageDevice{Device: "/dev/vdx"}, Size: 5 * gib})
	must(t, h.client.Nodes.Create(ctx, satellite("n1", "10.0.7.1")))
	clk.Advance(time.Second)
	inVG("after the node was created again")

	// A restored database brings LINSTOR back, not the disks.
	must(t, h.emu.LoadDatabaseRows(backup))
	if pools, _ := h.emu.StoragePools("n1"); len(pools) != 1 {
		t.Errorf("restored pools = %+v, want the diskless pool only", pools)
	}
	inVG("after the restore")

	// Rows of an older emulator still carry the node's disks: loadable, ignored.
	var row map[string]any
	must(t, json.Unmarshal([]byte(backup["Nodes/n1"]), &row))
	row["disks"] = []map[string]any{{"device": "/dev/vdz", "size": 10 * gib}}
	old, _ := json.Marshal(row)
	backup["Nodes/n1"] = string(old)
	must(t, h.emu.LoadDatabaseRows(backup))
	if disks := h.emu.NodeDisks("n1"); len(disks) != 1 || disks[0].Device != "/dev/vdb" {
		t.Errorf("disks after loading an old row = %+v", disks)
	}
	inVG("after loading an old row")

	// A fresh installation (Reset) starts on the machines as configured.
	h.emu.Reset()
	if d := disk(t, h, "/dev/vdb"); d.FSType != "" || d.InUse() {
		t.Errorf("after Reset vdb = %+v, want blank", d)
	}
}

// SetNodeDisks describes the hardware: a disk that stays keeps what is on it, one
// left out is unplugged.
func TestSetNodeDisksKeepsState(t *testing.T) {
	h := diskHarness(t, emulator.Disk{Device: "/dev/sdb", Size: 10 * gib}, emulator.Disk{Device: "/dev/sdc", Size: 10 * gib})
	must(t, h.client.Nodes.CreateDevicePool(context.Background(), "n1", lapi.PhysicalStorageCreate{ProviderKind: lapi.ZFS, DevicePaths: []string{"/dev/sdb"}, PoolName: "z"}))
	h.emu.SetNodeDisks("n1", emulator.Disk{Device: "/dev/sdb", Size: 10 * gib, Model: "new model"}, emulator.Disk{Device: "/dev/sdd", Size: 20 * gib})
	disks := h.emu.NodeDisks("n1")
	if len(disks) != 2 || disks[0].Model != "new model" || disks[0].Pool != "z" || disks[0].FSType != emulator.FSTypeZFS || disks[1].Device != "/dev/sdd" {
		t.Errorf("disks = %+v", disks)
	}
	expectCandidates(t, h, "/dev/sdd")
	h.emu.SetNodeDisks("n1", emulator.Disk{Device: "/dev/sdb", Size: 10 * gib, FSType: "ext4"})
	if d := disk(t, h, "/dev/sdb"); d.FSType != "ext4" || d.InUse() {
		t.Errorf("a new signature given: sdb = %+v", d)
	}
}

// A lost answer: LINSTOR did the work, the client saw an error. Asking again cannot
// claim the disks a second time.
func TestAfterServingFault(t *testing.T) {
	h := diskHarness(t, emulator.Disk{Device: "/dev/vdb", Size: 100 * gib})
	ctx := context.Background()
	h.emu.InjectFault("POST /v1/physical-storage/{node}", emulator.Fault{Status: http.StatusServiceUnavailable, AfterServing: true, Times: 1})
	req := lapi.PhysicalStorageCreate{ProviderKind: lapi.LVM_THIN, DevicePaths: []string{"/dev/vdb"}, PoolName: "linstor_thin/thin",
		WithStoragePool: lapi.PhysicalStorageStoragePoolCreate{Name: "thin"}}
	mustFail(t, h.client.Nodes.CreateDevicePool(ctx, "n1", req), "answer lost")
	if _, err := h.client.Nodes.GetStoragePool(ctx, "n1", "thin"); err != nil {
		t.Errorf("the pool should exist although the answer was lost: %v", err)
	}
	if d := disk(t, h, "/dev/vdb"); d.Pool != "linstor_thin" {
		t.Errorf("vdb = %+v", d)
	}
	for _, r := range h.emu.Requests() {
		if r.Method == http.MethodPost && r.Route == "POST /v1/physical-storage/{node}" && r.Status != http.StatusServiceUnavailable {
			t.Errorf("logged %+v, want the injected status", r)
		}
	}
	mustFail(t, h.client.Nodes.CreateDevicePool(ctx, "n1", req), "Failed to pvcreate on device: /dev/vdb")
}

func TestParseDisksAnnotation(t *testing.T) {
	value := `[{"device":"/dev/nvme0n1","size":"1Ti","rotational":false,"model":"SAMSUNG MZQL21T9HCJR-00A07","serial":"S64GNE0R123456",` +
		`"wwn":"eui.36344730523012340025384500000001","links":["/dev/disk/by-id/nvme-eui.36344730523012340025384500000001"]},` +
		`{"device":"/dev/sda","size":480103981056,"rotational":true,"fstype":"ext4"}]`
	disks, err := emulator.ParseDisksAnnotation(value)
	must(t, err)
	want := []emulator.Disk{
		{Device: "/dev/nvme0n1", Size: 1 << 40, Model: "SAMSUNG MZQL21T9HCJR-00A07", Serial: "S64GNE0R123456", WWN: "eui.36344730523012340025384500000001",
			Links: []string{"/dev/disk/by-id/nvme-eui.36344730523012340025384500000001"}},
		{Device: "/dev/sda", Size: 480103981056, Rotational: true, FSType: "ext4"},
	}
	if !reflect.DeepEqual(disks, want) {
		t.Errorf("parsed %+v\nwant %+v", disks, want)
	}
	encoded, err := emulator.EncodeDisksAnnotation(want...)
	must(t, err)
	if !strings.Contains(encoded, `"size":"1Ti"`) {
		t.Errorf("encoded = %s, want the size as a quantity", encoded)
	}
	back, err := emulator.ParseDisksAnnotation(encoded)
	must(t, err)
	if !reflect.DeepEqual(back, want) {
		t.Errorf("round trip = %+v", back)
	}
	if empty, err := emulator.EncodeDisksAnnotation(); err != nil || empty != "[]" {
		t.Errorf("no disks = %q, %v", empty, err)
	}
	for what, bad := range map[string]string{
		"not JSON":              `[{"device":`,
		"an object, not a list": `{"device":"/dev/sdb","size":"1Gi"}`,
		"no size":               `[{"device":"/dev/sdb"}]`,
		"a size of zero":        `[{"device":"/dev/sdb","size":0}]`,
		"a bad quantity":        `[{"device":"/dev/sdb","size":"lots"}]`,
		"a misspelt field":      `[{"device":"/dev/sdb","size":"1Gi","rotatinal":true}]`,
		"a relative device":     `[{"device":"sdb","size":"1Gi"}]`,
		"a link two disks have": `[{"device":"/dev/sdb","size":"1Gi","links":["/dev/disk/by-id/x"]},{"device":"/dev/sdc","size":"1Gi","links":["/dev/disk/by-id/x"]}]`,
		"a pool without fstype": `[{"device":"/dev/sdb","size":"1Gi","pool":"vg"}]`,
		"trailing data":         `[] []`,
	} {
		if _, err := emulator.ParseDisksAnnotation(bad); err == nil {
			t.Errorf("%s: parsed %s", what, bad)
		}
	}
}

// Coupled with DisksFromNodes, a Node's annotation sets its machine's disks when its
// value changes; an unchanged value is not applied again, a malformed one is ignored.
func TestDisksFromNodeAnnotations(t *testing.T) {
	emu := emulator.New()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}
	setValue := func(v string) {
		node.Annotations = map[string]string{emulator.DisksAnnotation: v}
	}
	value, err := emulator.EncodeDisksAnnotation(emulator.VirtioDisk("node-1", "/dev/vdc", 200*gib))
	must(t, err)
	setValue(value)
	sync := func() {
		t.Helper()
		c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(node.DeepCopy()).Build()
		must(t, emu.SyncWithCluster(context.Background(), emulator.Cluster{Reader: c, Namespace: "linstor", DisksFromNodes: true}))
	}
	devices := func() []string {
		var out []string
		for _, d := range emu.NodeDisks("node-1") {
			out = append(out, d.Device)
		}
		return out
	}
	sync()
	if got := emu.NodeDisks("node-1"); len(got) != 1 || got[0].Serial != "node-1-vdc" || got[0].Links[0] != "/dev/disk/by-id/virtio-node-1-vdc" {
		t.Fatalf("disks = %+v", got)
	}
	emu.SetNodeDisks("node-1", emulator.Disk{Device: "/dev/sdx", Size: gib})
	sync()
	if got := devices(); !reflect.DeepEqual(got, []string{"/dev/sdx"}) {
		t.Errorf("an unchanged annotation was applied again: %v", got)
	}
	setValue(`[{"device":"/dev/vdd"`)
	sync()
	if got := devices(); !reflect.DeepEqual(got, []string{"/dev/sdx"}) {
		t.Errorf("a malformed annotation changed the disks: %v", got)
	}
	setValue(`[{"device":"/dev/vdd","size":"500Gi"}]`)
	sync()
	if got := devices(); !reflect.DeepEqual(got, []string{"/dev/vdd"}) {
		t.Errorf("a new value was not applied: %v", got)
	}
}
