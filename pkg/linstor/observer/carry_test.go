package observer

import (
	"testing"

	lapi "github.com/LINBIT/golinstor/client"
)

// What a cached cycle takes over from the cycle before, row by row.
func TestCarryPools(t *testing.T) {
	broken := []lapi.ApiCallRc{{RetCode: -4611686018427387903, Message: "Failed to query free space from storage pool"}}
	notConnected := []lapi.ApiCallRc{{RetCode: 1, Message: "No active connection to satellite 'n1'"}}
	pool := func(uuid string, free, total int64, reports []lapi.ApiCallRc) lapi.StoragePool {
		return lapi.StoragePool{StoragePoolName: "thin", NodeName: "n1", Uuid: uuid, FreeCapacity: free, TotalCapacity: total, Reports: reports}
	}
	for _, row := range []struct {
		name       string
		prev, next lapi.StoragePool
		want       lapi.StoragePool
	}{
		{"errors of the last query stay", pool("u", 0, 0, broken), pool("u", 0, 0, nil), pool("u", 0, 0, broken)},
		{"a re-created pool is new", pool("u", 0, 0, broken), pool("v", 5, 10, nil), pool("v", 5, 10, nil)},
		{"the not-connected warning is not carried", pool("u", 0, 0, notConnected), pool("u", 5, 10, nil), pool("u", 5, 10, nil)},
		{"an offline node shows its warning, not old errors", pool("u", 0, 0, broken), pool("u", 0, 0, notConnected), pool("u", 0, 0, notConnected)},
		{"0 of 0 in the cache is shown: a lost pool's answer reads the same as an empty tracker", pool("u", 5, 10, nil), pool("u", 0, 0, nil), pool("u", 0, 0, nil)},
		{"a known capacity replaces the last", pool("u", 5, 10, nil), pool("u", 4, 10, nil), pool("u", 4, 10, nil)},
	} {
		t.Run(row.name, func(t *testing.T) {
			prev := NewSnapshot("1.33.3", nil, []lapi.StoragePool{row.prev})
			next := NewSnapshot("1.33.3", nil, []lapi.StoragePool{row.next})
			carryPools(prev, next)
			got := next.Pools("n1")[0]
			if got.FreeCapacity != row.want.FreeCapacity || got.TotalCapacity != row.want.TotalCapacity || len(got.Reports) != len(row.want.Reports) ||
				len(got.Reports) > 0 && got.Reports[0].Message != row.want.Reports[0].Message {
				t.Errorf("got %d/%d %+v, want %d/%d %+v", got.FreeCapacity, got.TotalCapacity, got.Reports, row.want.FreeCapacity, row.want.TotalCapacity, row.want.Reports)
			}
		})
	}
}
