package replicahealth

import (
	"reflect"
	"testing"

	"github.com/linstor-operator/linstor-operator/pkg/linstor"
)

func TestConnectedPeers(t *testing.T) {
	conn := func(node string, peers map[string]bool) linstor.ResourceView {
		v := linstor.ResourceView{Name: "r", NodeName: node, Drbd: &linstor.DrbdView{Connections: map[string]linstor.DrbdConnection{}}}
		for p, ok := range peers {
			v.Drbd.Connections[p] = linstor.DrbdConnection{Connected: ok, Message: map[bool]string{true: "Connected", false: "Connecting"}[ok]}
		}
		return v
	}
	got := ConnectedPeers([]linstor.ResourceView{
		conn("b", map[string]bool{"A": true, "c": false}),
		conn("d", map[string]bool{"a": true}),
		conn("e", map[string]bool{"a": true}),
		conn("f", map[string]bool{"a": true}), // a fourth is not named
		conn("c", map[string]bool{"b": false}),
		{Name: "plain", NodeName: "g"}, // no DRBD
	})
	want := map[string][]string{"a": {"b", "d", "e"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ConnectedPeers = %v, want %v (only Connected, keyed lower-case, at most 3 named)", got, want)
	}
}
