package upgrade

import (
	"strings"
	"testing"

	lapi "github.com/LINBIT/golinstor/client"
)

func TestProblems(t *testing.T) {
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
		return r
	}
	resources := []lapi.ResourceWithVolumes{
		res("pvc-1", "a", "UpToDate", map[string]lapi.DrbdConnection{"b": {Connected: true}}),
		res("pvc-1", "b", "Diskless", map[string]lapi.DrbdConnection{"a": {Connected: true}}),
		res("pvc-2", "a", "Outdated", map[string]lapi.DrbdConnection{"c": {Connected: false}}),
	}
	got := strings.Join(Problems(nodes, resources, map[string]bool{"pvc-2": true, "pvc-1": false}), "; ")
	want := "satellite b is VERSION_MISMATCH; resource pvc-2 on a: volume 0 is Outdated; resource pvc-2 on a: not connected to c; resource pvc-2 is resynchronizing"
	if got != want {
		t.Fatalf("problems:\n got %s\nwant %s", got, want)
	}
	if p := Problems(nodes[:2], resources[:2], nil); len(p) != 0 {
		t.Fatalf("healthy cluster has problems: %v", p)
	}
}
