package emulator_test

import (
	"context"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/linstor-operator/linstor-operator/internal/emulator"
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
	must(t, h.emu.LoadDatabaseRows(emulator.WithNodeRowField(backup, "n1", "disks", []map[string]any{{"device": "/dev/vdz", "size": 10 * gib}})))
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

// lsblkLines are the lines lsblk prints on n1's machine for a NAME.
func lsblkLines(h *harness, node, name string) []emulator.LsblkEntry {
	var out []emulator.LsblkEntry
	for _, l := range h.emu.Lsblk(node) {
		if l.Name == name {
			out = append(out, l)
		}
	}
	return out
}

func offered(t *testing.T, h *harness, node, device string) bool {
	t.Helper()
	return slices.Contains(candidateNames(t, h, node), device)
}

// Every kind of device lsblk lists, and whether LINSTOR offers it: lsblk's lines
// (util-linux misc-utils/lsblk.c) through LsBlkUtils.filterDeviceCandidates (no PKNAME,
// SIZE > 1 GiB, major != 147, empty FSTYPE, no line whose PKNAME is its NAME; TYPE is
// never looked at). Majors from the kernel's Documentation/admin-guide/devices.txt.
func TestLinstorOffersDeviceKinds(t *testing.T) {
	sdb := emulator.Disk{Device: "/dev/sdb", Size: 10 * gib}
	nvme := emulator.Disk{Device: "/dev/nvme0n1", Size: 10 * gib}
	zvol := emulator.Zvol(1, "tank/vm-2", 32*gib)
	member := func(dev string) emulator.Disk {
		return emulator.Disk{Device: dev, Size: 10 * gib, FSType: "linux_raid_member"}
	}
	pv := emulator.Disk{Device: "/dev/sdb", Size: 10 * gib, FSType: emulator.FSTypeLVM, Pool: "vg"}
	paths := emulator.SANPaths("0x600a098038303053453f463045727a41", "SV1AB2C3", 100*gib, "/dev/sdx", "/dev/sdy")
	for _, tc := range []struct {
		kind    string
		devs    []emulator.Disk
		device  string
		lines   int    // lines lsblk prints for it (0: left out)
		typ     string // lsblk TYPE
		major   int
		offered bool
	}{
		{"blank SCSI disk", []emulator.Disk{sdb}, "/dev/sdb", 1, "disk", 8, true},
		// SIZE must be above MINIMAL_DEVICE_SIZE_BYTES.
		{"disk of exactly 1 GiB", []emulator.Disk{{Device: "/dev/sdb", Size: gib}}, "/dev/sdb", 1, "disk", 8, false},
		// devices.txt: sdq-sdaf are on major 65.
		{"17th SCSI disk", []emulator.Disk{{Device: "/dev/sdq", Size: 10 * gib}}, "/dev/sdq", 1, "disk", 65, true},
		{"NVMe namespace (blkext)", []emulator.Disk{nvme}, "/dev/nvme0n1", 1, "disk", 259, true},
		{"Xen disk", []emulator.Disk{{Device: "/dev/xvdb", Size: 10 * gib}}, "/dev/xvdb", 1, "disk", 202, true},
		{"MMC/SD card", []emulator.Disk{{Device: "/dev/mmcblk0", Size: 32 * gib}}, "/dev/mmcblk0", 1, "disk", 179, true},
		// A partition table shows as partitions (children): the disk is not offered.
		{"partitioned disk", []emulator.Disk{{Device: "/dev/sdb", Size: 10 * gib, Partitioned: true}}, "/dev/sdb", 1, "disk", 8, false},
		{"partitioned disk's partition", []emulator.Disk{{Device: "/dev/sdb", Size: 10 * gib, Partitioned: true}}, "/dev/sdb1", 1, "part", 8, false},
		{"blank partition", []emulator.Disk{sdb, emulator.Partition(sdb, 1, 9*gib, "")}, "/dev/sdb1", 1, "part", 8, false},
		{"disk with a blank partition", []emulator.Disk{sdb, emulator.Partition(sdb, 1, 9*gib, "")}, "/dev/sdb", 1, "disk", 8, false},
		// block/partitions/core.c: a "p" after a name ending in a digit.
		{"NVMe partition", []emulator.Disk{nvme, emulator.Partition(nvme, 1, 9*gib, "")}, "/dev/nvme0n1p1", 1, "part", 259, false},
		// A loop device has no parent (its backing file is none): offered.
		{"loop device over a file", []emulator.Disk{emulator.LoopDevice(1, 20*gib, "/var/lib/vm.img")}, "/dev/loop1", 1, "loop", 7, true},
		{"loop device with squashfs", []emulator.Disk{{Device: "/dev/loop0", Type: "loop", Size: 2 * gib, FSType: "squashfs"}}, "/dev/loop0", 1, "loop", 7, false},
		// lsblk.c ignore_empty: an empty loop device without a backing file is left out.
		{"detached loop device", []emulator.Disk{emulator.LoopDevice(5, 0, "")}, "/dev/loop5", 0, "", 0, false},
		// OpenZFS ZVOL_MAJOR 230; a zvol is a top-level disk.
		{"zvol", []emulator.Disk{emulator.Zvol(0, "tank/vm-1", 32*gib)}, "/dev/zd0", 1, "disk", 230, true},
		{"partitioned zvol", []emulator.Disk{zvol, emulator.Partition(zvol, 1, 31*gib, "ext4")}, "/dev/zd16", 1, "disk", 230, false},
		{"zvol partition", []emulator.Disk{zvol, emulator.Partition(zvol, 1, 31*gib, "ext4")}, "/dev/zd16p1", 1, "part", 230, false},
		// lsblk --paths names device-mapper devices /dev/mapper/<name>; they have parents.
		{"LVM logical volume", []emulator.Disk{pv, emulator.DeviceMapper(0, "vg-lv", emulator.TypeLVM, 5*gib, "/dev/sdb")}, "/dev/mapper/vg-lv", 1, "lvm", 0, false},
		{"dm-crypt device", []emulator.Disk{{Device: "/dev/sdb", Size: 10 * gib, FSType: "crypto_LUKS"}, emulator.DeviceMapper(0, "luks-data", emulator.TypeCrypt, 10*gib, "/dev/sdb")},
			"/dev/mapper/luks-data", 1, "crypt", 0, false},
		// A device-mapper target made from no device has no PKNAME: offered.
		{"device-mapper target without parents", []emulator.Disk{emulator.DeviceMapper(2, "zero", emulator.TypeDM, 10*gib)}, "/dev/mapper/zero", 1, "dm", 0, true},
		// An md array is printed under each member (lsblk -P keeps tree order,
		// force_tree_order), always with a PKNAME.
		{"md RAID1", []emulator.Disk{member("/dev/sdb"), member("/dev/sdc"), emulator.MDArray(127, emulator.TypeRAID1, 10*gib, "/dev/sdb", "/dev/sdc")},
			"/dev/md127", 2, "raid1", 9, false},
		{"md member", []emulator.Disk{member("/dev/sdb"), member("/dev/sdc"), emulator.MDArray(127, emulator.TypeRAID1, 10*gib, "/dev/sdb", "/dev/sdc")},
			"/dev/sdc", 1, "disk", 8, false},
		// udev never probes rbd or zram (60-persistent-storage.rules), lsblk reads FSTYPE
		// from udev: an ext4 rbd image or an active zram swap shows none and is offered.
		{"rbd image holding ext4", []emulator.Disk{{Device: "/dev/rbd0", Size: 50 * gib, FSType: "ext4"}}, "/dev/rbd0", 1, "disk", 0, true},
		{"zram swap", []emulator.Disk{{Device: "/dev/zram0", Size: 4 * gib, FSType: "swap"}}, "/dev/zram0", 1, "disk", 0, true},
		{"connected nbd", []emulator.Disk{{Device: "/dev/nbd0", Size: 50 * gib}}, "/dev/nbd0", 1, "disk", 43, true},
		{"DVD with a filesystem", []emulator.Disk{{Device: "/dev/sr0", Type: "rom", Size: 4 * gib, FSType: "iso9660"}}, "/dev/sr0", 1, "rom", 11, false},
		{"empty optical drive", []emulator.Disk{{Device: "/dev/sr0", Type: "rom"}}, "/dev/sr0", 1, "rom", 11, false},
		// lsblk excludes major 1 (RAM disks) unless --all.
		{"RAM disk", []emulator.Disk{{Device: "/dev/ram0", Size: 4 * gib}}, "/dev/ram0", 0, "", 0, false},
		{"DRBD device (major 147)", []emulator.Disk{{Device: "/dev/drbd1000", Size: 10 * gib}}, "/dev/drbd1000", 1, "disk", 147, false},
		// Two paths to one LUN without multipathd: two disks, each offered.
		{"SAN path without multipathd", paths, "/dev/sdy", 1, "disk", 65, true},
		// multipath.rules: ID_FS_TYPE=mpath_member on the paths, which the map holds.
		{"SAN path under multipathd", emulator.Multipath(0, "mpatha", paths), "/dev/sdx", 1, "disk", 65, false},
		{"multipath map", emulator.Multipath(0, "mpatha", paths), "/dev/mapper/mpatha", 2, "mpath", 0, false},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			h := diskHarness(t, tc.devs...)
			lines := lsblkLines(h, "n1", tc.device)
			if len(lines) != tc.lines {
				t.Fatalf("lsblk prints %d lines for %s, want %d: %+v", len(lines), tc.device, tc.lines, h.emu.Lsblk("n1"))
			}
			if tc.lines > 0 && (lines[0].Type != tc.typ || lines[0].Major != tc.major) {
				t.Errorf("lsblk line %+v, want TYPE %s major %d", lines[0], tc.typ, tc.major)
			}
			if got := offered(t, h, "n1", tc.device); got != tc.offered {
				t.Errorf("LINSTOR offers %s: %v, want %v (lsblk: %+v)", tc.device, got, tc.offered, h.emu.Lsblk("n1"))
			}
		})
	}
}

// A typical node's devices besides its data disks: LINSTOR offers the zvol and the
// file-backed loop device, both holding someone's data; a device pool on either
// destroys it. The system disk is held (its PV is active) and refused.
func TestHostDevices(t *testing.T) {
	h := diskHarness(t, append(emulator.HostDevices("n1"), emulator.VirtioDisk("n1", "/dev/vdb", 100*gib))...)
	if got, want := candidateNames(t, h, "n1"), []string{"/dev/zd0", "/dev/loop1", "/dev/vdb"}; !reflect.DeepEqual(got, want) {
		t.Errorf("offered %v, want %v", got, want)
	}
	status, got := devicePool(t, h, "n1", lapi.PhysicalStorageCreate{ProviderKind: lapi.ZFS, DevicePaths: []string{"/dev/vda"}, PoolName: "z"})
	expect(t, "zpool create on the system disk", status, got, http.StatusInternalServerError, lapiconst.FailUnknownError)
	status, got = devicePool(t, h, "n1", lapi.PhysicalStorageCreate{ProviderKind: lapi.LVM, DevicePaths: []string{"/dev/mapper/system-root"}, PoolName: "vg"})
	expect(t, "pvcreate on the root filesystem", status, got, http.StatusInternalServerError, lapiconst.FailUnknownError)
	if ow := h.emu.Overwritten(); len(ow) != 0 {
		t.Fatalf("refused device pools destroyed %v", ow)
	}
	status, got = devicePool(t, h, "n1", lapi.PhysicalStorageCreate{ProviderKind: lapi.LVM, DevicePaths: []string{"/dev/loop1", "/dev/zd0"}, PoolName: "vg"})
	expect(t, "pvcreate on offered devices", status, got, http.StatusCreated, lapiconst.MaskCrt|lapiconst.MaskPhysicalDevice)
	if ow, want := h.emu.Overwritten(), []string{"n1:/dev/loop1", "n1:/dev/zd0"}; !reflect.DeepEqual(ow, want) {
		t.Errorf("Overwritten = %v, want %v", ow, want)
	}
}

// dataPool registers an LVM thin pool "data" on each node (it must be ONLINE).
func dataPool(t *testing.T, h *harness, nodes ...string) {
	t.Helper()
	for _, n := range nodes {
		must(t, h.client.Nodes.CreateStoragePool(context.Background(), n, lapi.StoragePool{StoragePoolName: "data", ProviderKind: lapi.LVM_THIN,
			Props: map[string]string{"StorDriver/LvmVg": "vg", "StorDriver/ThinPool": "data"}}))
	}
}

// kubelet maps a raw-block volume in use with a loop device over its DRBD device. lsblk
// shows a top-level loop device the volume's size with no FSTYPE (the pod writes raw
// data), so LINSTOR offers it; pvcreate asks nothing and writes through DRBD to every
// diskful replica.
func TestAttachedBlockVolumeIsOfferedAndWritingItDestroysEveryReplica(t *testing.T) {
	h := newHarness(t, false)
	clk := newClock(h.emu)
	ctx := context.Background()
	for i, n := range []string{"n1", "n2", "n3"} {
		h.emu.SetNodeDisks(n, emulator.VirtioDisk(n, "/dev/vdb", 100*gib))
		must(t, h.client.Nodes.Create(ctx, satellite(n, "10.0.8."+strconv.Itoa(i+1))))
	}
	clk.Advance(time.Second)
	dataPool(t, h, "n1", "n2")
	must(t, h.client.ResourceDefinitions.Create(ctx, lapi.ResourceDefinitionCreate{ResourceDefinition: lapi.ResourceDefinition{Name: "pvc-db"}}))
	must(t, h.client.ResourceDefinitions.CreateVolumeDefinition(ctx, "pvc-db", lapi.VolumeDefinitionCreate{VolumeDefinition: lapi.VolumeDefinition{SizeKib: 20 << 20}}))
	must(t, h.emu.PlaceResource("pvc-db", "n1", "data", false))
	must(t, h.emu.PlaceResource("pvc-db", "n2", "data", false))
	must(t, h.emu.PlaceResource("pvc-db", "n3", "", false))

	if _, err := h.emu.AttachBlockVolume("n3", "pvc-none"); err == nil {
		t.Error("a volume without a replica on the node was attached")
	}
	loop, err := h.emu.AttachBlockVolume("n3", "pvc-db")
	must(t, err)
	if again, _ := h.emu.AttachBlockVolume("n3", "pvc-db"); again != loop || loop != "/dev/loop0" {
		t.Errorf("attached as %s, then %s; want /dev/loop0 once", loop, again)
	}
	lines := lsblkLines(h, "n3", loop)
	if len(lines) != 1 || lines[0].Type != "loop" || lines[0].Size != 20*gib || lines[0].FSType != "" || lines[0].PKName != "" || lines[0].Major != 7 {
		t.Errorf("lsblk of the loop device: %+v", lines)
	}
	for _, d := range h.emu.NodeDisks("n3") {
		if d.Device == loop && d.Backing != "/dev/drbd1000" {
			t.Errorf("loop device backed by %q, want the DRBD device", d.Backing)
		}
	}
	rv, err := h.client.Resources.GetResourceView(ctx, &lapi.ListOpts{Resource: []string{"pvc-db"}, Node: []string{"n3"}})
	must(t, err)
	if len(rv) != 1 || rv[0].State == nil || rv[0].State.InUse == nil || !*rv[0].State.InUse {
		t.Errorf("the attached replica is not in use: %+v", rv)
	}
	if !offered(t, h, "n3", loop) {
		t.Fatalf("LINSTOR does not offer %s: %v", loop, candidateNames(t, h, "n3"))
	}

	status, got := devicePool(t, h, "n3", lapi.PhysicalStorageCreate{ProviderKind: lapi.LVM, DevicePaths: []string{loop}, PoolName: "vg-over-pvc"})
	expect(t, "pvcreate over the attached volume", status, got, http.StatusCreated, lapiconst.MaskCrt|lapiconst.MaskPhysicalDevice)
	if ow, want := h.emu.Overwritten(), []string{"n3:/dev/loop0", "n1:/dev/drbd1000", "n2:/dev/drbd1000"}; !reflect.DeepEqual(ow, want) {
		t.Errorf("Overwritten = %v, want %v", ow, want)
	}
	if dr, want := h.emu.DestroyedReplicas(), []string{"pvc-db@n1", "pvc-db@n2"}; !reflect.DeepEqual(dr, want) {
		t.Errorf("DestroyedReplicas = %v, want %v", dr, want)
	}
	// Attached on another node too (a live migration), the volume holds the PV label.
	other, err := h.emu.AttachBlockVolume("n1", "pvc-db")
	must(t, err)
	if l := lsblkLines(h, "n1", other); len(l) != 1 || l[0].FSType != emulator.FSTypeLVM {
		t.Errorf("the volume on n1 shows %+v, want the PV label written on n3", l)
	}

	must(t, h.emu.DetachBlockVolume("n3", "pvc-db"))
	if l := lsblkLines(h, "n3", loop); len(l) != 0 {
		t.Errorf("detached, lsblk still shows %+v", l)
	}
	rv, err = h.client.Resources.GetResourceView(ctx, &lapi.ListOpts{Resource: []string{"pvc-db"}, Node: []string{"n3"}})
	must(t, err)
	if len(rv) != 1 || rv[0].State == nil || rv[0].State.InUse == nil || *rv[0].State.InUse {
		t.Errorf("detached, the replica is still in use: %+v", rv)
	}
	if err := h.emu.DetachBlockVolume("n3", "pvc-db"); err == nil {
		t.Error("detached twice")
	}
}

// twoHosts is an emulator with nodes n1 and n2 online on machines with the given
// devices.
func twoHosts(t *testing.T, n1, n2 []emulator.Disk) (*harness, *clock) {
	t.Helper()
	h := newHarness(t, false)
	clk := newClock(h.emu)
	h.emu.SetNodeDisks("n1", n1...)
	h.emu.SetNodeDisks("n2", n2...)
	must(t, h.client.Nodes.Create(context.Background(), satellite("n1", "10.0.9.1")))
	must(t, h.client.Nodes.Create(context.Background(), satellite("n2", "10.0.9.2")))
	clk.Advance(time.Second)
	return h, clk
}

// A SAN LUN zoned to two hosts. A device pool made on one writes its signature; the
// other host's udev is told of no write and keeps its old FSTYPE, so LINSTOR there
// still offers the LUN until a rescan. pvcreate reads the device itself and refuses;
// zpool create -f takes a pool imported elsewhere as "potentially active" and
// overwrites it.
func TestSharedLUNIsSeenLateByTheOtherHost(t *testing.T) {
	const wwn, serial = "0x600a098038303053453f463045727a42", "SV1AB2C4"
	h, clk := twoHosts(t, emulator.SANPaths(wwn, serial, 100*gib, "/dev/sdc"), emulator.SANPaths(wwn, serial, 100*gib, "/dev/sdd"))
	if !offered(t, h, "n1", "/dev/sdc") || !offered(t, h, "n2", "/dev/sdd") {
		t.Fatal("the blank LUN is not offered on both hosts")
	}
	status, got := devicePool(t, h, "n1", lapi.PhysicalStorageCreate{ProviderKind: lapi.LVM, DevicePaths: []string{"/dev/sdc"}, PoolName: "vg1"})
	expect(t, "LVM on n1", status, got, http.StatusCreated, lapiconst.MaskCrt|lapiconst.MaskPhysicalDevice)
	if offered(t, h, "n1", "/dev/sdc") {
		t.Error("n1 offers the LUN it just made a PV")
	}
	if !offered(t, h, "n2", "/dev/sdd") {
		t.Error("n2 sees the write at once; its udev was told of nothing")
	}
	status, got = devicePool(t, h, "n2", lapi.PhysicalStorageCreate{ProviderKind: lapi.LVM, DevicePaths: []string{"/dev/sdd"}, PoolName: "vg2"})
	expect(t, "LVM on n2", status, got, http.StatusInternalServerError, lapiconst.FailUnknownError)
	if !strings.Contains(got[0].Details, `of volume group "vg1"`) {
		t.Errorf("pvcreate on n2: %q", got[0].Details)
	}
	if ow := h.emu.Overwritten(); len(ow) != 0 {
		t.Fatalf("a refused pvcreate destroyed %v", ow)
	}
	status, got = devicePool(t, h, "n2", lapi.PhysicalStorageCreate{ProviderKind: lapi.ZFS, DevicePaths: []string{"/dev/sdd"}, PoolName: "tank"})
	expect(t, "ZFS on n2", status, got, http.StatusCreated, lapiconst.MaskCrt|lapiconst.MaskPhysicalDevice)
	if ow, want := h.emu.Overwritten(), []string{"n2:/dev/sdd", "n1:/dev/sdc"}; !reflect.DeepEqual(ow, want) {
		t.Errorf("Overwritten = %v, want %v", ow, want)
	}
	if l := lsblkLines(h, "n1", "/dev/sdc"); len(l) != 1 || l[0].FSType != emulator.FSTypeLVM {
		t.Errorf("n1 sees %+v before a rescan, want its own LVM2_member", l)
	}
	h.emu.RescanNodeDisks("n1")
	if l := lsblkLines(h, "n1", "/dev/sdc"); len(l) != 1 || l[0].FSType != emulator.FSTypeZFS {
		t.Errorf("n1 sees %+v after a rescan, want zfs_member", l)
	}

	// With a rescan delay the other host catches up on its own.
	h, clk = twoHosts(t, emulator.SANPaths(wwn, serial, 100*gib, "/dev/sdc"), emulator.SANPaths(wwn, serial, 100*gib, "/dev/sdd"))
	h.emu.SetNodeRescanDelay("n2", 30*time.Second)
	must(t, h.client.Nodes.CreateDevicePool(context.Background(), "n1", lapi.PhysicalStorageCreate{ProviderKind: lapi.ZFS, DevicePaths: []string{"/dev/sdc"}, PoolName: "tank"}))
	clk.Advance(29 * time.Second)
	if !offered(t, h, "n2", "/dev/sdd") {
		t.Error("n2 saw the write before its rescan delay")
	}
	clk.Advance(time.Second)
	if offered(t, h, "n2", "/dev/sdd") {
		t.Error("n2 still offers the LUN after its rescan delay")
	}
}

// Two paths to one LUN on one host. Without multipathd both are disks LINSTOR offers
// with one WWN and serial; one device pool over both fails, one over either writes the
// LUN, and the other path shows it only after a rescan (udev watched the written path
// only). With multipathd the paths are held by the map: nothing is offered, pvcreate on
// a path fails.
func TestMultipathDuplicates(t *testing.T) {
	const wwn, serial = "0x600a098038303053453f463045727a43", "SV1AB2C5"
	paths := emulator.SANPaths(wwn, serial, 100*gib, "/dev/sdx", "/dev/sdy")
	h := diskHarness(t, paths...)
	list, err := h.client.Nodes.GetPhysicalStorage(context.Background(), "n1")
	must(t, err)
	if len(list) != 2 || list[0].Wwn != wwn || list[1].Wwn != wwn || list[0].Serial != serial || list[1].Serial != serial {
		t.Fatalf("offered %+v, want both paths with the LUN's WWN and serial", list)
	}
	status, got := devicePool(t, h, "n1", lapi.PhysicalStorageCreate{ProviderKind: lapi.LVM, DevicePaths: []string{"/dev/sdx", "/dev/sdy"}, PoolName: "vg"})
	expect(t, "LVM over both paths", status, got, http.StatusInternalServerError, lapiconst.FailUnknownError)
	if !strings.Contains(got[0].Details, "with duplicates") {
		t.Errorf("vgcreate over both paths: %q", got[0].Details)
	}
	h = diskHarness(t, paths...)
	status, got = devicePool(t, h, "n1", lapi.PhysicalStorageCreate{ProviderKind: lapi.ZFS, DevicePaths: []string{"/dev/sdx", "/dev/sdy"}, PoolName: "z"})
	expect(t, "ZFS over both paths", status, got, http.StatusInternalServerError, lapiconst.FailUnknownError)
	if !strings.Contains(got[0].Details, "refer to the same device") {
		t.Errorf("zpool create over both paths: %q", got[0].Details)
	}
	must(t, h.client.Nodes.CreateDevicePool(context.Background(), "n1", lapi.PhysicalStorageCreate{ProviderKind: lapi.ZFS, DevicePaths: []string{"/dev/sdx"}, PoolName: "z"}))
	expectCandidates(t, h, "/dev/sdy")
	h.emu.RescanNodeDisks("n1")
	expectCandidates(t, h)
	if d := disk(t, h, "/dev/sdy"); d.FSType != emulator.FSTypeZFS || d.InUse() {
		t.Errorf("the other path: %+v, want the zpool's label, not imported through it", d)
	}

	h = diskHarness(t, emulator.Multipath(0, "mpatha", paths)...)
	expectCandidates(t, h)
	status, got = devicePool(t, h, "n1", lapi.PhysicalStorageCreate{ProviderKind: lapi.LVM, DevicePaths: []string{"/dev/sdx"}, PoolName: "vg"})
	expect(t, "pvcreate on a path multipathd holds", status, got, http.StatusInternalServerError, lapiconst.FailUnknownError)
	if !strings.Contains(got[0].Details, "Can't open /dev/sdx exclusively") {
		t.Errorf("pvcreate on a held path: %q", got[0].Details)
	}
	must(t, h.client.Nodes.CreateDevicePool(context.Background(), "n1", lapi.PhysicalStorageCreate{ProviderKind: lapi.LVM, DevicePaths: []string{"/dev/mapper/mpatha"}, PoolName: "vg"}))
	if l := lsblkLines(h, "n1", "/dev/sdx"); len(l) != 1 || l[0].FSType != emulator.FSTypeMpathMember {
		t.Errorf("a path after a PV was made on the map: %+v, want mpath_member", l)
	}
	if ow := h.emu.Overwritten(); len(ow) != 0 {
		t.Errorf("Overwritten = %v", ow)
	}
}

// The annotation describes every kind of device, strictly: what no machine has is
// refused, naming the device and the field.
func TestParseDisksAnnotationDeviceKinds(t *testing.T) {
	paths := emulator.SANPaths("0x600a098038303053453f463045727a44", "SV1AB2C6", 100*gib, "/dev/sdx", "/dev/sdy")
	want := append(emulator.HostDevices("node-1"), emulator.Multipath(1, "mpatha", paths)...)
	encoded, err := emulator.EncodeDisksAnnotation(want...)
	must(t, err)
	back, err := emulator.ParseDisksAnnotation(encoded)
	must(t, err)
	if !reflect.DeepEqual(back, want) {
		t.Errorf("round trip:\n%+v\nwant\n%+v", back, want)
	}
	value := `[{"device":"/dev/sdb","size":"10Gi","fstype":"LVM2_member","pool":"vg"},` +
		`{"device":"/dev/mapper/vg-lv","kname":"/dev/dm-0","type":"lvm","parents":["/dev/sdb"],"size":"5Gi","fstype":"ext4"},` +
		`{"device":"/dev/loop3","type":"loop","size":"20Gi","backing":"/var/lib/vm.img","data":"VM image"},` +
		`{"device":"/dev/sdc","size":"1Ti","wwn":"0x600a0980","shared":true}]`
	disks, err := emulator.ParseDisksAnnotation(value)
	must(t, err)
	if len(disks) != 4 || disks[1].KName != "/dev/dm-0" || disks[1].Parents[0] != "/dev/sdb" || disks[2].Backing != "/var/lib/vm.img" || disks[2].Data != "VM image" || !disks[3].Shared {
		t.Errorf("parsed %+v", disks)
	}
	for what, bad := range map[string]string{
		"an unknown type":                  `[{"device":"/dev/sdb","size":"1Gi","type":"ssd"}]`,
		"a partition without its disk":     `[{"device":"/dev/sdb1","size":"1Gi","type":"part"}]`,
		"a parent not on the host":         `[{"device":"/dev/sdb1","size":"1Gi","type":"part","parents":["/dev/sdb"]}]`,
		"an md array without members":      `[{"device":"/dev/md0","size":"1Gi","type":"raid1"}]`,
		"a mapper name without kname":      `[{"device":"/dev/mapper/x","size":"1Gi","type":"dm"}]`,
		"a kname on a plain disk":          `[{"device":"/dev/sdb","kname":"/dev/dm-0","size":"1Gi"}]`,
		"an LVM volume not under mapper":   `[{"device":"/dev/sdb","size":"1Gi","type":"lvm","parents":["/dev/sdc"]},{"device":"/dev/sdc","size":"1Gi"}]`,
		"a device made from itself":        `[{"device":"/dev/mapper/a","kname":"/dev/dm-0","type":"dm","size":"1Gi","parents":["/dev/dm-1"]},{"device":"/dev/mapper/b","kname":"/dev/dm-1","type":"dm","size":"1Gi","parents":["/dev/dm-0"]}]`,
		"a backing file on a disk":         `[{"device":"/dev/sdb","size":"1Gi","backing":"/x.img"}]`,
		"a shared LUN without a WWN":       `[{"device":"/dev/sdb","size":"1Gi","shared":true}]`,
		"a disk of size zero":              `[{"device":"/dev/sdb","size":0,"type":"disk"}]`,
		"a kname another device has":       `[{"device":"/dev/mapper/a","kname":"/dev/dm-0","type":"dm","size":"1Gi"},{"device":"/dev/mapper/b","kname":"/dev/dm-0","type":"dm","size":"1Gi"}]`,
		"a misspelt field of a new kind":   `[{"device":"/dev/loop0","size":"1Gi","type":"loop","backing_file":"/x"}]`,
		"a negative size of a loop device": `[{"device":"/dev/loop0","size":-1,"type":"loop"}]`,
	} {
		if _, err := emulator.ParseDisksAnnotation(bad); err == nil {
			t.Errorf("%s: parsed %s", what, bad)
		}
	}
	if _, err := emulator.ParseDisksAnnotation(`[{"device":"/dev/loop0","size":0,"type":"loop"},{"device":"/dev/sr0","size":0,"type":"rom"}]`); err != nil {
		t.Errorf("a detached loop device and an empty drive: %v", err)
	}
}

// zpool create -f relabels a disk whose partitions nothing holds: the partition table
// and the filesystem in it are gone, and so are the partitions from lsblk.
func TestZpoolOverDescribedPartitions(t *testing.T) {
	sdb := emulator.Disk{Device: "/dev/sdb", Size: 10 * gib}
	h := diskHarness(t, sdb, emulator.Partition(sdb, 1, 9*gib, "ext4"))
	expectCandidates(t, h)
	must(t, h.client.Nodes.CreateDevicePool(context.Background(), "n1", lapi.PhysicalStorageCreate{ProviderKind: lapi.ZFS, DevicePaths: []string{"/dev/sdb"}, PoolName: "z"}))
	if ow := h.emu.Overwritten(); !reflect.DeepEqual(ow, []string{"n1:/dev/sdb"}) {
		t.Errorf("Overwritten = %v", ow)
	}
	if l := lsblkLines(h, "n1", "/dev/sdb1"); len(l) != 0 {
		t.Errorf("the partition is still listed: %+v", l)
	}
	if d := disk(t, h, "/dev/sdb"); d.Partitioned || d.Pool != "z" {
		t.Errorf("sdb = %+v", d)
	}
}
