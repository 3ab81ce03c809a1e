package linstor

import (
	"reflect"
	"testing"

	lapi "github.com/LINBIT/golinstor/client"
	"github.com/LINBIT/golinstor/devicelayerkind"
)

func replica(rd, node, disk string, flags ...string) lapi.ResourceWithVolumes {
	kind := lapi.LVM_THIN
	if disk == "Diskless" {
		kind = lapi.DISKLESS
	}
	return lapi.ResourceWithVolumes{
		Resource: lapi.Resource{Name: rd, NodeName: node, Flags: flags,
			LayerObject: &lapi.ResourceLayer{Type: devicelayerkind.Drbd, Drbd: &lapi.DrbdResource{},
				Children: []lapi.ResourceLayer{{Type: devicelayerkind.Storage, Storage: &lapi.StorageResource{}}}}},
		Volumes: []lapi.Volume{{ProviderKind: kind, State: lapi.VolumeState{DiskState: disk}}},
	}
}

// storageOnly is a replica whose layer list is STORAGE: no DRBD, no disk state.
func storageOnly(rd, node string) lapi.ResourceWithVolumes {
	return lapi.ResourceWithVolumes{
		Resource: lapi.Resource{Name: rd, NodeName: node, State: &lapi.ResourceState{},
			LayerObject: &lapi.ResourceLayer{Type: devicelayerkind.Storage, Storage: &lapi.StorageResource{}}},
		Volumes: []lapi.Volume{{ProviderKind: lapi.LVM_THIN}},
	}
}

// meshed reports every DRBD replica whose satellite is known (a disk state is
// reported) as Connected to every other replica of its resource, as LINSTOR's view
// shows a healthy cluster.
func meshed(rscs ...lapi.ResourceWithVolumes) []lapi.ResourceWithVolumes {
	for i := range rscs {
		if rscs[i].LayerObject == nil || rscs[i].LayerObject.Drbd == nil || rscs[i].Volumes[0].State.DiskState == "" {
			continue
		}
		conns := map[string]lapi.DrbdConnection{}
		for _, peer := range rscs {
			if peer.Name == rscs[i].Name && peer.NodeName != rscs[i].NodeName {
				conns[peer.NodeName] = lapi.DrbdConnection{Connected: true, Message: "Connected"}
			}
		}
		rscs[i].LayerObject.Drbd.Connections = conns
	}
	return rscs
}

// cut makes a's and b's replicas report their connection to each other as DRBD does
// after the link failed: Connecting, not connected.
func cut(a, b string, rscs []lapi.ResourceWithVolumes) []lapi.ResourceWithVolumes {
	for _, r := range rscs {
		for _, p := range [][2]string{{a, b}, {b, a}} {
			if r.NodeName == p[0] && r.LayerObject != nil && r.LayerObject.Drbd != nil && r.LayerObject.Drbd.Connections != nil {
				r.LayerObject.Drbd.Connections[p[1]] = lapi.DrbdConnection{Message: "Connecting"}
			}
		}
	}
	return rscs
}

// reports sets one side's view of its connection to peer.
func reports(node, peer string, c *lapi.DrbdConnection, rscs []lapi.ResourceWithVolumes) []lapi.ResourceWithVolumes {
	for _, r := range rscs {
		if r.NodeName == node {
			if c == nil {
				delete(r.LayerObject.Drbd.Connections, peer)
			} else {
				r.LayerObject.Drbd.Connections[peer] = *c
			}
		}
	}
	return rscs
}

func TestOnlyCopies(t *testing.T) {
	connected := &lapi.DrbdConnection{Connected: true, Message: "Connected"}
	for _, tc := range []struct {
		name string
		rscs []lapi.ResourceWithVolumes
		want []string
	}{
		{"no resources", nil, nil},
		{"lone replica, no peers (LINSTOR would delete it)", meshed(replica("pvc-a", "n1", "UpToDate")), []string{"pvc-a"}},
		{"last diskful with a diskless peer", meshed(replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n2", "Diskless", "DRBD_DISKLESS")), []string{"pvc-a"}},
		{"another UpToDate copy, connected", meshed(replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n2", "UpToDate")), nil},
		{"the other copy is still syncing", meshed(replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n2", "Inconsistent")), []string{"pvc-a"}},
		{"the other copy is outdated", meshed(replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n2", "Outdated")), []string{"pvc-a"}},
		{"the other copy's state is unknown (satellite offline)", meshed(replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n2", "")), []string{"pvc-a"}},
		{"the other copy is being deleted", meshed(replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n2", "UpToDate", "DELETE")), []string{"pvc-a"}},
		{"a tie-breaker is no copy", meshed(replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n3", "Diskless", "TIE_BREAKER")), []string{"pvc-a"}},
		{"node holds only a diskless replica", meshed(replica("pvc-a", "n1", "Diskless", "DRBD_DISKLESS"), replica("pvc-a", "n2", "UpToDate")), nil},
		{"names compare case-insensitively", meshed(replica("pvc-a", "N1", "UpToDate")), []string{"pvc-a"}},
		{"an outdated replica here with a good copy elsewhere", meshed(replica("pvc-a", "n1", "Outdated"), replica("pvc-a", "n2", "UpToDate")), nil},
		{"several resources, sorted", meshed(
			replica("pvc-b", "n1", "UpToDate"), replica("pvc-a", "n1", "UpToDate"),
			replica("pvc-c", "n1", "UpToDate"), replica("pvc-c", "n2", "UpToDate"),
		), []string{"pvc-a", "pvc-b"}},

		// Deliverable 3: a copy counts only while it is connected to the replica removed.
		{"the other copy says UpToDate but its link to n1 is cut",
			cut("n1", "n2", meshed(replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n2", "UpToDate"))), []string{"pvc-a"}},
		{"one copy cut off, another connected",
			cut("n1", "n2", meshed(replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n2", "UpToDate"), replica("pvc-a", "n3", "UpToDate"))), nil},
		{"n1's satellite offline, the peer still Connected to it: the peer has n1's writes",
			meshed(replica("pvc-a", "n1", ""), replica("pvc-a", "n2", "UpToDate")), nil},
		{"n1's satellite offline and the peer not connected to it: unknown",
			cut("n1", "n2", meshed(replica("pvc-a", "n1", ""), replica("pvc-a", "n2", "UpToDate"))), []string{"pvc-a"}},
		{"no connection data on either side",
			[]lapi.ResourceWithVolumes{replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n2", "UpToDate")}, []string{"pvc-a"}},
		{"the two sides disagree",
			reports("n1", "n2", connected, cut("n1", "n2", meshed(replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n2", "UpToDate")))), []string{"pvc-a"}},
		{"one side has no entry for the other, the other says Connected",
			reports("n2", "n1", nil, meshed(replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n2", "UpToDate"))), nil},
		{"connection keys compare case-insensitively",
			reports("n2", "N1", connected, reports("n2", "n1", nil, reports("n1", "n2", nil, meshed(replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n2", "UpToDate"))))), nil},
		{"storage-only volumes of one name are separate disks, not copies",
			[]lapi.ResourceWithVolumes{storageOnly("pvc-a", "n1"), storageOnly("pvc-a", "n2")}, []string{"pvc-a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := OnlyCopies("n1", tc.rscs); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("OnlyCopies = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestObserveEvacuation(t *testing.T) {
	inUse := func(r lapi.ResourceWithVolumes) lapi.ResourceWithVolumes {
		yes := true
		r.State = &lapi.ResourceState{InUse: &yes}
		return r
	}
	got := ObserveEvacuation("n1", []lapi.ResourceWithVolumes{
		replica("moving", "n1", "UpToDate", "EVACUATE"), replica("moving", "n2", "Inconsistent"),
		inUse(replica("mounted", "n1", "UpToDate", "EVACUATE")), replica("mounted", "n2", "UpToDate"),
		replica("stuck", "n1", "UpToDate", "EVACUATE"),
		replica("stuck2", "n1", "UpToDate", "EVACUATE"), replica("stuck2", "n3", "Diskless", "DRBD_DISKLESS"),
		replica("elsewhere", "n2", "Inconsistent"),
		storageOnly("local", "n1"), storageOnly("local", "n2"),
	})
	want := Evacuation{Moving: []string{"moving"}, InUse: []string{"mounted"}, Stuck: []string{"stuck", "stuck2"}, NotReplicated: []string{"local"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ObserveEvacuation = %+v, want %+v", got, want)
	}
	if (Evacuation{}).Empty() != true || want.Empty() {
		t.Fatal("Empty is wrong")
	}
}

// LastCopies says why no other replica counts, per peer, for the status message.
func TestLastCopiesSayWhy(t *testing.T) {
	rscs := cut("n1", "n2", meshed(replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n2", "UpToDate"), replica("pvc-a", "n3", "Outdated"),
		replica("pvc-a", "n4", "Diskless", "DRBD_DISKLESS"), replica("pvc-b", "n1", "UpToDate")))
	got := LastCopies("n1", rscs)
	want := []LastCopy{
		{Resource: "pvc-a", Why: "n2 is not connected to n1 (Connecting); n3 is Outdated"},
		{Resource: "pvc-b", Why: "no other diskful replica"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("LastCopies = %+v, want %+v", got, want)
	}
}

// Evacuation hands the decision to LINSTOR, which counts a peer by the disk state it
// reports (CtrlNodeApiCallHandler.getUpToDatePeerCount): a replica cut off from the
// node still says UpToDate, so LINSTOR may delete the node's replica, or let the
// replacement resync from the stale copy. Evacuation waits while such a peer exists.
func TestEvacuationHazards(t *testing.T) {
	for _, tc := range []struct {
		name string
		rscs []lapi.ResourceWithVolumes
		want []LastCopy
	}{
		{"every copy connected", meshed(replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n2", "UpToDate")), nil},
		{"a lone replica: LINSTOR places a replacement that syncs from it", meshed(replica("pvc-a", "n1", "UpToDate")), nil},
		{"a peer reporting UpToDate behind a cut link",
			cut("n1", "n2", meshed(replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n2", "UpToDate"), replica("pvc-a", "n3", "UpToDate"))),
			[]LastCopy{{Resource: "pvc-a", Why: "n2 reports UpToDate but is not connected to n1 (Connecting)"}}},
		{"a cut-off peer LINSTOR does not count (Outdated)",
			cut("n1", "n2", meshed(replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n2", "Outdated"))), nil},
		{"a cut-off peer whose satellite is offline (unknown: LINSTOR does not count it)",
			cut("n1", "n2", meshed(replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n2", ""))), nil},
		{"a diskless replica on the node carries no data",
			cut("n1", "n2", meshed(replica("pvc-a", "n1", "Diskless", "DRBD_DISKLESS"), replica("pvc-a", "n2", "UpToDate"))), nil},
		{"no connection data from either side",
			[]lapi.ResourceWithVolumes{replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n2", "UpToDate")},
			[]LastCopy{{Resource: "pvc-a", Why: "n2 reports UpToDate but is not connected to n1 (no connection reported)"}}},
		{"resources without DRBD are not evacuated at all", []lapi.ResourceWithVolumes{storageOnly("pvc-a", "n1"), storageOnly("pvc-a", "n2")}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := EvacuationHazards("n1", tc.rscs); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("EvacuationHazards = %+v, want %+v", got, tc.want)
			}
		})
	}
}
