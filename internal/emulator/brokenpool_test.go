package emulator_test

import (
	"context"
	"strings"
	"testing"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"
)

// A thin pool whose backing storage is gone carries the satellite's failed free-space
// query in reports on the REST list and view (cached=false), not from the cache, not
// on /metrics; a thick pool cannot be broken; a repair clears it.
func TestBrokenStoragePoolReports(t *testing.T) {
	h, _ := onlineHarness(t, "n1", "n2")
	ctx := context.Background()
	c := h.client
	addPool(t, h, "n1", "n2")
	must(t, c.Nodes.CreateStoragePool(ctx, "n1", lapi.StoragePool{StoragePoolName: "fat", ProviderKind: lapi.LVM,
		Props: map[string]string{"StorDriver/LvmVg": "vg"}}))
	if err := h.emu.BreakStoragePool("n1", "fat"); err == nil {
		t.Error("a thick pool was broken")
	}
	if err := h.emu.BreakStoragePool("n1", "nope"); err == nil {
		t.Error("a missing pool was broken")
	}
	must(t, h.emu.BreakStoragePool("n1", "THIN"))

	sp, err := c.Nodes.GetStoragePool(ctx, "n1", "thin")
	must(t, err)
	want := lapi.ApiCallRc{RetCode: failUnknownError, Message: "Node: 'n1', storage pool: 'thin' - Failed to query free space from storage pool",
		Cause: "Thin pool 'vg/thin' does not exist."}
	if len(sp.Reports) != 1 || sp.Reports[0].RetCode != want.RetCode || sp.Reports[0].Message != want.Message || sp.Reports[0].Cause != want.Cause {
		t.Errorf("reports = %+v, want [%+v]", sp.Reports, want)
	}
	if sp.FreeCapacity != 0 || sp.TotalCapacity != 0 {
		t.Errorf("capacity = %d/%d, want 0/0", sp.FreeCapacity, sp.TotalCapacity)
	}
	view, err := c.Nodes.GetStoragePoolView(ctx)
	must(t, err)
	broken := 0
	for _, p := range view {
		if len(p.Reports) > 0 {
			broken++
			if p.NodeName != "n1" || p.StoragePoolName != "thin" {
				t.Errorf("%s/%s reports %+v", p.NodeName, p.StoragePoolName, p.Reports)
			}
		}
	}
	if broken != 1 {
		t.Errorf("%d pools with reports in the view, want 1", broken)
	}
	var cached []lapi.StoragePool
	h.raw(t, "GET", "/v1/nodes/n1/storage-pools?cached=true", nil, &cached)
	for _, p := range cached {
		if len(p.Reports) > 0 {
			t.Errorf("cached %s reports %+v", p.StoragePoolName, p.Reports)
		}
	}
	if page := h.scrape(t, ""); !strings.Contains(page, `linstor_storage_pool_error_count{node="n1",driver="LVM_THIN",backing_pool="vg/thin",storage_pool="thin"} 0.0`) {
		t.Errorf("/metrics counts the error:\n%s", page)
	}

	must(t, h.emu.RepairStoragePool("n1", "thin"))
	sp, err = c.Nodes.GetStoragePool(ctx, "n1", "thin")
	must(t, err)
	if len(sp.Reports) != 0 || sp.TotalCapacity == 0 {
		t.Errorf("repaired pool = %+v", sp)
	}
}

// failUnknownError is FAIL_UNKNOWN_ERROR as the signed long the server sends.
var failUnknownError = func() int64 { u := uint64(lapiconst.FailUnknownError); return int64(u) }()
