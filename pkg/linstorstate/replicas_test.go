package linstorstate

import (
	"reflect"
	"slices"
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

// detached is a diskful replica whose DRBD lost its disk (an I/O error, a detach):
// DRBD reports Diskless, LINSTOR still has the volume in its pool.
func detached(r lapi.ResourceWithVolumes) lapi.ResourceWithVolumes {
	r.Volumes = append([]lapi.Volume(nil), r.Volumes...)
	for i := range r.Volumes {
		r.Volumes[i].State.DiskState = "Diskless"
	}
	return r
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

// A peer whose satellite is not ONLINE reports no state: nothing is known to move
// there, so the resource waits for that node and is not "moving" (which would stop the
// operator from asking LINSTOR again, for ever). Only a known resync moves.
func TestObserveEvacuationWaitsForUnknownPeers(t *testing.T) {
	got := ObserveEvacuation("n1", []lapi.ResourceWithVolumes{
		replica("waiting", "n1", "UpToDate", "EVACUATE"), replica("waiting", "n3", ""),
		replica("outdated", "n1", "UpToDate", "EVACUATE"), replica("outdated", "n2", "Outdated"),
		replica("resyncing", "n1", "UpToDate", "EVACUATE"), replica("resyncing", "n2", "Inconsistent"), replica("resyncing", "n3", ""),
	})
	for _, name := range []string{"waiting", "outdated"} {
		if slices.Contains(got.Moving, name) {
			t.Errorf("%s counts as moving: %+v", name, got)
		}
	}
	if !slices.Contains(got.Moving, "resyncing") {
		t.Errorf("a resyncing replacement is moving: %+v", got)
	}
	want := Evacuation{Moving: []string{"resyncing"}, Waiting: []Waiting{{Resource: "waiting", Nodes: []string{"n3"}}}, Stuck: []string{"outdated"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ObserveEvacuation = %+v, want %+v", got, want)
	}
	if (Evacuation{Waiting: want.Waiting}).Empty() {
		t.Error("a waiting resource is still on the node")
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

		// LINSTOR deletes the evacuated replica at once when it is not UpToDate
		// (CtrlNodeApiCallHandler.evacuateNodeInTrasaction, allVolumesUpToDate), whatever
		// its peers hold: that loses the data when no other replica is a safe copy.
		{"n1's replica is Outdated and the only one",
			meshed(replica("pvc-a", "n1", "Outdated")),
			[]LastCopy{{Resource: "pvc-a", Why: "n1's replica is Outdated and LINSTOR deletes a replica that is not UpToDate instead of moving it, while no other replica is a safe copy (no other diskful replica)"}}},
		{"n1's replica is Inconsistent and its peer Outdated",
			meshed(replica("pvc-a", "n1", "Inconsistent"), replica("pvc-a", "n2", "Outdated")),
			[]LastCopy{{Resource: "pvc-a", Why: "n1's replica is Inconsistent and LINSTOR deletes a replica that is not UpToDate instead of moving it, while no other replica is a safe copy (n2 is Outdated)"}}},
		{"n1's replica is Outdated with a connected UpToDate copy elsewhere: deleting it loses nothing",
			meshed(replica("pvc-a", "n1", "Outdated"), replica("pvc-a", "n2", "UpToDate")), nil},
		{"n1's disk detached (Diskless though diskful) and the UpToDate peer cut off",
			cut("n1", "n2", meshed(detached(replica("pvc-a", "n1", "UpToDate")), replica("pvc-a", "n2", "UpToDate"))),
			[]LastCopy{{Resource: "pvc-a", Why: "n1's replica is Diskless and LINSTOR deletes a replica that is not UpToDate instead of moving it, while no other replica is a safe copy (n2 is not connected to n1 (Connecting)); " +
				"n2 reports UpToDate but is not connected to n1 (Connecting)"}}},
		{"n1's state unknown: LINSTOR counts it UpToDate and moves it",
			meshed(replica("pvc-a", "n1", "")), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := EvacuationHazards("n1", tc.rscs); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("EvacuationHazards = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// A node whose satellite is not ONLINE but whose DRBD its peers still see Connected:
// DRBD runs there, LINSTOR knows nothing of its replicas (in_use unknown).
func TestRunningWhileOffline(t *testing.T) {
	away := func(rscs []lapi.ResourceWithVolumes) []lapi.ResourceWithVolumes {
		for i := range rscs { // what LINSTOR shows of an OFFLINE satellite's replicas
			if rscs[i].NodeName == "n1" {
				rscs[i].State = nil
				rscs[i].LayerObject.Drbd.Connections = nil
				rscs[i].Volumes[0].State.DiskState = ""
			}
		}
		return rscs
	}
	for _, tc := range []struct {
		name   string
		status string
		rscs   []lapi.ResourceWithVolumes
		want   []LastCopy
	}{
		{"ONLINE: LINSTOR knows the states", "ONLINE", meshed(replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n2", "UpToDate")), nil},
		{"OFFLINE, a peer sees a diskful replica Connected", "OFFLINE",
			away(meshed(replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n2", "UpToDate"))),
			[]LastCopy{{Resource: "pvc-a", Why: "n2 sees it Connected"}}},
		{"OFFLINE, a diskless replica there, two peers see it", "OFFLINE",
			away(meshed(replica("pvc-a", "n1", "Diskless", "DRBD_DISKLESS"), replica("pvc-a", "n3", "UpToDate"), replica("pvc-a", "n2", "UpToDate"))),
			[]LastCopy{{Resource: "pvc-a", Why: "n2, n3 see it Connected"}}},
		{"OFFLINE and the peers Connecting: the machine is gone", "OFFLINE",
			cut("n1", "n2", away(meshed(replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n2", "UpToDate")))), nil},
		{"a satellite that answers but is not ONLINE (VERSION_MISMATCH) knows no states either", "VERSION_MISMATCH",
			away(meshed(replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n2", "UpToDate"))),
			[]LastCopy{{Resource: "pvc-a", Why: "n2 sees it Connected"}}},
		{"peers' keys compare case-insensitively", "OFFLINE",
			reports("n2", "N1", &lapi.DrbdConnection{Connected: true}, reports("n2", "n1", nil, away(meshed(replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n2", "UpToDate"))))),
			[]LastCopy{{Resource: "pvc-a", Why: "n2 sees it Connected"}}},
		{"resources without DRBD have no connections", "OFFLINE", []lapi.ResourceWithVolumes{storageOnly("pvc-a", "n1"), storageOnly("pvc-a", "n2")}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RunningWhileOffline("n1", tc.status, tc.rscs); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("RunningWhileOffline = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// A node acknowledged lost is removed counting the survivors: at least one UpToDate
// diskful DRBD replica elsewhere, the UpToDate ones connected to each other, none on
// another lost node.
func TestLostNodeCopies(t *testing.T) {
	gone := func(rscs []lapi.ResourceWithVolumes) []lapi.ResourceWithVolumes {
		for i := range rscs {
			if rscs[i].NodeName == "n1" {
				rscs[i].State = nil
				rscs[i].LayerObject.Drbd.Connections = nil
				rscs[i].Volumes[0].State.DiskState = ""
			}
		}
		for _, peer := range []string{"n2", "n3", "n4"} {
			rscs = cut("n1", peer, rscs)
		}
		return rscs
	}
	lost := map[string]bool{"n1": true}
	for _, tc := range []struct {
		name string
		lost map[string]bool
		rscs []lapi.ResourceWithVolumes
		want []LastCopy
	}{
		{"one UpToDate survivor", lost, gone(meshed(replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n2", "UpToDate"))), nil},
		{"two survivors connected to each other", lost,
			gone(meshed(replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n2", "UpToDate"), replica("pvc-a", "n3", "UpToDate"))), nil},
		{"two survivors written apart", lost,
			cut("n2", "n3", gone(meshed(replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n2", "UpToDate"), replica("pvc-a", "n3", "UpToDate")))),
			[]LastCopy{{Resource: "pvc-a", Why: "n2 and n3 both report UpToDate but are not connected to each other (Connecting): one of them may be behind"}}},
		{"an Outdated survivor does not count; a connected UpToDate one does", lost,
			gone(meshed(replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n2", "UpToDate"), replica("pvc-a", "n3", "Outdated"))), nil},
		{"no UpToDate survivor", lost,
			gone(meshed(replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n2", "Outdated"), replica("pvc-a", "n3", ""))),
			[]LastCopy{{Resource: "pvc-a", Why: "no surviving replica is UpToDate: n2 is Outdated; n3's state is unknown (its satellite is not ONLINE)"}}},
		{"the only diskful replica was there", lost,
			gone(meshed(replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n2", "Diskless", "DRBD_DISKLESS"))),
			[]LastCopy{{Resource: "pvc-a", Why: "no surviving diskful replica"}}},
		{"a survivor on another lost node does not count", map[string]bool{"n1": true, "n2": true},
			gone(meshed(replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n2", "UpToDate"))),
			[]LastCopy{{Resource: "pvc-a", Why: "no surviving diskful replica"}}},
		{"a survivor being deleted does not count", lost,
			gone(meshed(replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n2", "UpToDate", "DELETE"))),
			[]LastCopy{{Resource: "pvc-a", Why: "no surviving replica is UpToDate: n2 is being deleted"}}},
		{"a diskless replica on the lost node carries no data", lost,
			gone(meshed(replica("pvc-a", "n1", "Diskless", "DRBD_DISKLESS"), replica("pvc-a", "n2", "Outdated"))), nil},
		{"a volume without DRBD was only there", lost,
			[]lapi.ResourceWithVolumes{storageOnly("pvc-a", "n1"), storageOnly("pvc-a", "n2")},
			[]LastCopy{{Resource: "pvc-a", Why: "it has no DRBD layer: its volume was only on n1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := LostNodeCopies("n1", tc.lost, tc.rscs); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("LostNodeCopies = %+v, want %+v", got, tc.want)
			}
		})
	}
}
