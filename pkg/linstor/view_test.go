package linstor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"k8s.io/utils/ptr"
)

// Fixtures follow JsonGenTypes.ResourceWithVolumes@v1.33.3 as Json.apiToResourceWithVolumes
// fills it, with the fields the decoder skips (props, effective_props, storage details)
// left in so skipping them is tested too.

// viewDrbdOnline: a DRBD replica on an ONLINE satellite, in use, one peer connected and
// syncing from it, one StandAlone.
const viewDrbdOnline = `{
  "name": "pvc-1", "node_name": "node-a", "uuid": "u-1", "create_timestamp": 1700000000000,
  "props": {"StorPoolName": "pool1"},
  "effective_props": {"DrbdOptions/Net/protocol": {"type": "RESOURCE_DEFINITION", "value": "C"}},
  "flags": [],
  "layer_object": {
    "type": "DRBD", "resource_name_suffix": "",
    "children": [{"type": "STORAGE", "resource_name_suffix": "", "storage": {"storage_volumes": [{"volume_number": 0, "device_path": "/dev/vg/pvc-1_00000", "allocated_size_kib": 1052672, "disk_state": "[]"}]}}],
    "drbd": {
      "drbd_resource_definition": {"peer_slots": 7, "al_stripes": 1, "al_stripe_size_kib": 32, "port": 7000, "transport_type": "IP", "secret": "s"},
      "node_id": 0, "tcp_ports": [7000], "peer_slots": 7, "al_stripes": 1, "al_size": 32, "flags": ["INITIALIZED"],
      "drbd_volumes": [{"drbd_volume_definition": {"volume_number": 0, "minor_number": 1000}, "device_path": "/dev/drbd1000", "backing_device": "/dev/vg/pvc-1_00000", "allocated_size_kib": 1048576, "usable_size_kib": 1048576}],
      "connections": {"node-b": {"connected": true, "message": "Connected"}, "node-c": {"connected": false, "message": "StandAlone"}},
      "promotion_score": 10102, "may_promote": false
    }
  },
  "state": {"in_use": true},
  "volumes": [{
    "volume_number": 0, "storage_pool_name": "pool1", "provider_kind": "LVM_THIN", "device_path": "/dev/drbd1000",
    "allocated_size_kib": 1052672, "usable_size_kib": 1048576, "props": {"Satellite/Device/Symlinks/0": "/dev/drbd/by-res/pvc-1/0"},
    "flags": [],
    "state": {"disk_state": "UpToDate", "replication_states": {
      "node-b": {"replication_state": "SyncSource", "done_percentage": 42.5},
      "node-c": {"replication_state": "Off"}}},
    "layer_data_list": [{"type": "DRBD", "data": {"drbd_volume_definition": {"volume_number": 0, "minor_number": 1000}}}, {"type": "STORAGE", "data": {"volume_number": 0}}],
    "uuid": "v-1"
  }]
}`

// viewStorageOnly: a replica without DRBD: no state, no connections.
const viewStorageOnly = `{
  "name": "local-1", "node_name": "node-b", "flags": [], "props": {"StorPoolName": "pool1"},
  "layer_object": {"type": "STORAGE", "storage": {"storage_volumes": [{"volume_number": 0, "device_path": "/dev/vg/local-1_00000"}]}},
  "volumes": [{"volume_number": 0, "storage_pool_name": "pool1", "provider_kind": "LVM", "layer_data_list": [{"type": "STORAGE", "data": {}}]}]
}`

// viewLuksUnderDrbd: DRBD over LUKS over STORAGE, two volumes.
const viewLuksUnderDrbd = `{
  "name": "enc-1", "node_name": "node-c", "flags": [],
  "layer_object": {"type": "DRBD",
    "children": [{"type": "LUKS", "luks": {"luks_volumes": [{"volume_number": 0, "opened": true}]},
      "children": [{"type": "STORAGE", "storage": {"storage_volumes": []}}]}],
    "drbd": {"node_id": 2, "connections": {"node-a": {"connected": true, "message": "Connected"}}, "may_promote": true}},
  "state": {"in_use": false},
  "volumes": [
    {"volume_number": 0, "storage_pool_name": "pool1", "state": {"disk_state": "Outdated", "replication_states": {"node-a": {"replication_state": "Established"}}}},
    {"volume_number": 1, "storage_pool_name": "pool1", "state": {"disk_state": "UpToDate"}}
  ]
}`

// viewDrbdBelowTop: a DRBD layer that is a child of the top layer.
const viewDrbdBelowTop = `{
  "name": "cached-1", "node_name": "node-a",
  "layer_object": {"type": "WRITECACHE", "writecache": {},
    "children": [{"type": "DRBD", "drbd": {"node_id": 3, "may_promote": false},
      "children": [{"type": "STORAGE"}]}]},
  "volumes": [{"volume_number": 0, "storage_pool_name": "pool1"}]
}`

// viewOffline: a diskless tiebreaker on a satellite that is not ONLINE: the server sends
// no state, no connections and no volume state.
const viewOffline = `{
  "name": "pvc-1", "node_name": "node-d", "flags": ["DISKLESS", "DRBD_DISKLESS", "TIE_BREAKER"],
  "layer_object": {"type": "DRBD", "children": [{"type": "STORAGE"}], "drbd": {"node_id": 3, "flags": []}},
  "volumes": [{"volume_number": 0, "storage_pool_name": "DfltDisklessStorPool", "provider_kind": "DISKLESS"}]
}`

func TestDecodeResourceViews(t *testing.T) {
	cases := []struct {
		name string
		body string
		want []ResourceView
	}{
		{name: "empty list", body: `[]`},
		{
			name: "DRBD online: connections, may_promote, in use, replication states with progress",
			body: `[` + viewDrbdOnline + `]`,
			want: []ResourceView{{
				Name: "pvc-1", NodeName: "node-a", Flags: []string{}, InUse: ptr.To(true),
				Drbd: &DrbdView{NodeID: 0, MayPromote: ptr.To(false), Connections: map[string]DrbdConnection{
					"node-b": {Connected: true, Message: "Connected"},
					"node-c": {Connected: false, Message: "StandAlone"},
				}},
				Volumes: []VolumeView{{VolumeNumber: 0, StoragePool: "pool1", DiskState: "UpToDate", Replication: map[string]ReplicationState{
					"node-b": {State: "SyncSource", DonePercentage: ptr.To(42.5)},
					"node-c": {State: "Off"},
				}}},
			}},
		},
		{
			name: "STORAGE only: no DRBD, no state",
			body: `[` + viewStorageOnly + `]`,
			want: []ResourceView{{
				Name: "local-1", NodeName: "node-b", Flags: []string{},
				Volumes: []VolumeView{{VolumeNumber: 0, StoragePool: "pool1"}},
			}},
		},
		{
			name: "LUKS under DRBD: DRBD found at the top, two volumes",
			body: `[` + viewLuksUnderDrbd + `]`,
			want: []ResourceView{{
				Name: "enc-1", NodeName: "node-c", Flags: []string{}, InUse: ptr.To(false),
				Drbd: &DrbdView{NodeID: 2, MayPromote: ptr.To(true), Connections: map[string]DrbdConnection{
					"node-a": {Connected: true, Message: "Connected"},
				}},
				Volumes: []VolumeView{
					{VolumeNumber: 0, StoragePool: "pool1", DiskState: "Outdated", Replication: map[string]ReplicationState{"node-a": {State: "Established"}}},
					{VolumeNumber: 1, StoragePool: "pool1", DiskState: "UpToDate"},
				},
			}},
		},
		{
			name: "DRBD below the top layer is found",
			body: `[` + viewDrbdBelowTop + `]`,
			want: []ResourceView{{
				Name: "cached-1", NodeName: "node-a",
				Drbd:    &DrbdView{NodeID: 3, MayPromote: ptr.To(false)},
				Volumes: []VolumeView{{VolumeNumber: 0, StoragePool: "pool1"}},
			}},
		},
		{
			name: "satellite offline: state unknown, tiebreaker flags kept",
			body: `[` + viewOffline + `]`,
			want: []ResourceView{{
				Name: "pvc-1", NodeName: "node-d", Flags: []string{"DISKLESS", "DRBD_DISKLESS", "TIE_BREAKER"},
				Drbd:    &DrbdView{NodeID: 3},
				Volumes: []VolumeView{{VolumeNumber: 0, StoragePool: "DfltDisklessStorPool"}},
			}},
		},
		{
			name: "several elements in order",
			body: `[` + viewStorageOnly + `,` + viewDrbdBelowTop + `]`,
			want: []ResourceView{
				{Name: "local-1", NodeName: "node-b", Flags: []string{}, Volumes: []VolumeView{{VolumeNumber: 0, StoragePool: "pool1"}}},
				{Name: "cached-1", NodeName: "node-a", Drbd: &DrbdView{NodeID: 3, MayPromote: ptr.To(false)}, Volumes: []VolumeView{{VolumeNumber: 0, StoragePool: "pool1"}}},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []ResourceView
			err := DecodeResourceViews(strings.NewReader(tc.body), func(v ResourceView) error {
				got = append(got, v)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestDecodeResourceViewsErrors(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{name: "an object, not a list", body: `{"name": "x"}`, want: "expected a list"},
		{name: "truncated body", body: `[` + viewStorageOnly, want: "resource view"},
		{name: "empty body", body: ``, want: "EOF"},
		{name: "a wrong type", body: `[{"name": 3}]`, want: "cannot unmarshal"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := DecodeResourceViews(strings.NewReader(tc.body), func(ResourceView) error { return nil })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
	t.Run("an error of each stops the decoding and is returned", func(t *testing.T) {
		stop := errors.New("stop")
		n := 0
		err := DecodeResourceViews(strings.NewReader(`[`+viewStorageOnly+`,`+viewStorageOnly+`]`), func(ResourceView) error {
			n++
			return stop
		})
		if !errors.Is(err, stop) || n != 1 {
			t.Fatalf("err = %v after %d elements, want stop after 1", err, n)
		}
	})
}

func TestReadResourceViews(t *testing.T) {
	var gotPath, gotQuery string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotQuery = r.URL.Path, r.URL.RawQuery
		if r.URL.Path != "/v1/view/resources" {
			http.Error(w, `[{"message": "no such path"}]`, http.StatusNotFound)
			return
		}
		_, _ = io.WriteString(w, `[`+viewDrbdOnline+`,`+viewOffline+`]`)
	}))
	defer srv.Close()

	var names []string
	err := ReadResourceViews(context.Background(), srv.Client(), srv.URL+"/", func(v ResourceView) error {
		names = append(names, v.NodeName)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if gotPath != "/v1/view/resources" || gotQuery != "" {
		t.Errorf("asked %s?%s, want /v1/view/resources without limit/offset", gotPath, gotQuery)
	}
	if !reflect.DeepEqual(names, []string{"node-a", "node-d"}) {
		t.Errorf("got %v", names)
	}

	err = ReadResourceViews(context.Background(), srv.Client(), srv.URL+"/elsewhere", func(ResourceView) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "HTTP 404") || !strings.Contains(err.Error(), "no such path") {
		t.Errorf("err = %v, want HTTP 404 with the server's message", err)
	}
}

// generatedViews produces a view body of n replicas of viewDrbdOnline as it is read, so
// the test's own body does not weigh on the heap it measures.
type generatedViews struct {
	n, i int
	buf  []byte
	done bool
}

func (g *generatedViews) Read(p []byte) (int, error) {
	for len(g.buf) == 0 {
		switch {
		case g.done:
			return 0, io.EOF
		case g.i == 0 && g.n > 0:
			g.buf = []byte("[" + viewDrbdOnline)
		case g.i < g.n:
			g.buf = []byte("," + viewDrbdOnline)
		default:
			g.buf = []byte("]")
			g.done = true
		}
		g.i++
	}
	n := copy(p, g.buf)
	g.buf = g.buf[n:]
	return n, nil
}

// The heap does not grow with the number of elements: measured after a collection at
// element 1,000 and at element 29,000 of 30,000 (a 60 MB body), it differs by less than
// 1 MiB. A decoder that read the whole body would hold tens of MB at the second point.
func TestDecodeResourceViewsBoundedMemory(t *testing.T) {
	const n = 30000
	var early, late runtime.MemStats
	count := 0
	err := DecodeResourceViews(&generatedViews{n: n}, func(v ResourceView) error {
		count++
		switch count {
		case 1000:
			runtime.GC()
			runtime.ReadMemStats(&early)
		case n - 1000:
			runtime.GC()
			runtime.ReadMemStats(&late)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if count != n {
		t.Fatalf("decoded %d, want %d", count, n)
	}
	growth := int64(late.HeapAlloc) - int64(early.HeapAlloc)
	t.Logf("body %d MB; heap at element 1,000: %d KiB, at element %d: %d KiB", n*len(viewDrbdOnline)>>20, early.HeapAlloc>>10, n-1000, late.HeapAlloc>>10)
	if growth > 1<<20 {
		t.Errorf("heap grew by %d KiB while decoding, want < 1 MiB", growth>>10)
	}
}

func BenchmarkDecodeResourceViews30k(b *testing.B) {
	const n = 30000
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		count := 0
		if err := DecodeResourceViews(&generatedViews{n: n}, func(ResourceView) error { count++; return nil }); err != nil {
			b.Fatal(err)
		}
		if count != n {
			b.Fatal(fmt.Sprintf("decoded %d", count))
		}
	}
}
