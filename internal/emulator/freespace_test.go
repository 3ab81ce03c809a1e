package emulator_test

import (
	"context"
	"testing"
	"time"

	lapi "github.com/LINBIT/golinstor/client"
)

// The controller's free space tracker: an uncached list asks each ONLINE node with a
// thin pool once and shows the machine as it is; the cached view (and the
// autoplacer, /metrics) shows what the last query or full sync saw.
func TestCachedPoolSpaceIsWhatTheLastQuerySaw(t *testing.T) {
	h, clk := onlineHarness(t, "n1", "n2", "n3")
	ctx := context.Background()
	c := h.client
	addPool(t, h, "n1", "n2")
	must(t, c.Nodes.CreateStoragePool(ctx, "n3", lapi.StoragePool{StoragePoolName: "fat", ProviderKind: lapi.LVM,
		Props: map[string]string{"StorDriver/LvmVg": "vg"}}))
	if err := h.emu.FillThinPool("n3", "fat", 1); err == nil {
		t.Error("a thick pool filled with data")
	}

	free := func(cached bool) int64 {
		t.Helper()
		var view []lapi.StoragePool
		path := "/v1/view/storage-pools?nodes=n1&storage_pools=thin"
		if cached {
			path += "&cached=true"
		}
		h.raw(t, "GET", path, nil, &view)
		if len(view) != 1 {
			t.Fatalf("view = %+v", view)
		}
		return view[0].FreeCapacity
	}
	before := free(true)
	queries := h.emu.FreeSpaceQueries()
	must(t, h.emu.FillThinPool("n1", "thin", 10<<20))
	if got := free(true); got != before {
		t.Errorf("cached free = %d right after 10 GiB were written, want still %d (no query since)", got, before)
	}
	if got := free(false); got != before-10<<20 {
		t.Errorf("uncached free = %d, want %d", got, before-10<<20)
	}
	if got := h.emu.FreeSpaceQueries() - queries; got != 1 {
		t.Errorf("a list filtered to n1 asked %d satellites, want 1", got)
	}
	if got := free(true); got != before-10<<20 {
		t.Errorf("cached free = %d after the query, want %d", got, before-10<<20)
	}

	// The whole view asks n1 and n2 (thin pools), not n3 (thick only); cached asks none.
	queries = h.emu.FreeSpaceQueries()
	_, err := c.Nodes.GetStoragePoolView(ctx)
	must(t, err)
	if got := h.emu.FreeSpaceQueries() - queries; got != 2 {
		t.Errorf("the view asked %d satellites, want 2 (the nodes with thin pools)", got)
	}
	queries = h.emu.FreeSpaceQueries()
	yes := true
	_, err = c.Nodes.GetStoragePoolView(ctx, &lapi.ListOpts{Cached: &yes})
	must(t, err)
	if got := h.emu.FreeSpaceQueries() - queries; got != 0 {
		t.Errorf("the cached view asked %d satellites, want 0", got)
	}

	// A pool lost from its machine keeps its capacity in the tracker until a query or
	// the satellite's reconnect (full sync) tells the controller.
	must(t, h.emu.BreakStoragePool("n2", "thin"))
	cachedPool := func() lapi.StoragePool {
		var view []lapi.StoragePool
		h.raw(t, "GET", "/v1/view/storage-pools?nodes=n2&storage_pools=thin&cached=true", nil, &view)
		return view[0]
	}
	if p := cachedPool(); p.TotalCapacity == 0 {
		t.Errorf("cached view knew of the lost pool before any query: %+v", p)
	}
	must(t, h.emu.SetNodeOnline("n2", false))
	must(t, h.emu.SetNodeOnline("n2", true))
	clk.Advance(time.Second)
	if p := cachedPool(); p.TotalCapacity != 0 || p.FreeCapacity != 0 || len(p.Reports) != 0 {
		t.Errorf("cached view after the reconnect = %d/%d %+v, want 0/0 without reports", p.FreeCapacity, p.TotalCapacity, p.Reports)
	}
}
