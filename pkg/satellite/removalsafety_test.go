package satellite

import (
	"strings"
	"testing"

	lapi "github.com/LINBIT/golinstor/client"
	"github.com/LINBIT/golinstor/devicelayerkind"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// replicaOf is a DRBD replica as LINSTOR's view shows it: disk "" for a satellite that
// is not ONLINE (then no state and no connections of its own), "Diskless" for one
// without a disk; peers maps each peer to whether this side reports it Connected.
func replicaOf(rd, node, disk string, peers map[string]bool) lapi.ResourceWithVolumes {
	kind, flags := lapi.LVM_THIN, []string(nil)
	if disk == "Diskless" {
		kind, flags = lapi.DISKLESS, []string{"DRBD_DISKLESS"}
	}
	r := lapi.ResourceWithVolumes{
		Resource: lapi.Resource{Name: rd, NodeName: node, Flags: flags,
			LayerObject: &lapi.ResourceLayer{Type: devicelayerkind.Drbd, Drbd: &lapi.DrbdResource{}}},
		Volumes: []lapi.Volume{{ProviderKind: kind, State: lapi.VolumeState{DiskState: disk}}},
	}
	if disk != "" {
		r.LayerObject.Drbd.Connections = map[string]lapi.DrbdConnection{}
		for p, up := range peers {
			c := lapi.DrbdConnection{Message: "Connecting"}
			if up {
				c = lapi.DrbdConnection{Connected: true, Message: "Connected"}
			}
			r.LayerObject.Drbd.Connections[p] = c
		}
	}
	return r
}

func TestRemovalSafety(t *testing.T) {
	up, down := true, false
	// n1 and n2 replicate pvc-a; both ONLINE.
	healthy := []lapi.ResourceWithVolumes{
		replicaOf("pvc-a", "n1", "UpToDate", map[string]bool{"n2": up}),
		replicaOf("pvc-a", "n2", "UpToDate", map[string]bool{"n1": up}),
	}
	// n1's satellite stopped: its DRBD still runs, n2 sees it Connected. A workload
	// writes through n1's diskless replica of pvc-d.
	stopped := []lapi.ResourceWithVolumes{
		replicaOf("pvc-d", "n1", "", nil),
		replicaOf("pvc-d", "n2", "UpToDate", map[string]bool{"n1": up}),
	}
	// n1's machine is dead: n2 reports it Connecting.
	dead := []lapi.ResourceWithVolumes{
		replicaOf("pvc-a", "n1", "", nil),
		replicaOf("pvc-a", "n2", "UpToDate", map[string]bool{"n1": down}),
	}
	// n1 ONLINE holds the only replica.
	lone := []lapi.ResourceWithVolumes{replicaOf("pvc-a", "n1", "UpToDate", nil)}
	// n1 ONLINE holds the only replica, Outdated.
	loneOutdated := []lapi.ResourceWithVolumes{replicaOf("pvc-a", "n1", "Outdated", nil)}
	// n1 ONLINE, its only peer cut off while both report UpToDate.
	partitioned := []lapi.ResourceWithVolumes{
		replicaOf("pvc-a", "n1", "UpToDate", map[string]bool{"n2": down}),
		replicaOf("pvc-a", "n2", "UpToDate", map[string]bool{"n1": down}),
	}
	// n1 dead and acknowledged lost; the survivors n2 and n3 were written apart.
	split := []lapi.ResourceWithVolumes{
		replicaOf("pvc-a", "n1", "", nil),
		replicaOf("pvc-a", "n2", "UpToDate", map[string]bool{"n1": down, "n3": down}),
		replicaOf("pvc-a", "n3", "UpToDate", map[string]bool{"n1": down, "n2": down}),
	}
	lost := map[string]bool{"n1": true}

	for _, tc := range []struct {
		name         string
		in           RemovalSafety
		delete, evac string // the Hold reasons
		deleteMsg    []string
		evacMsg      []string
		nodeLost     bool
	}{
		{name: "a connected UpToDate copy elsewhere", in: RemovalSafety{Node: "n1", ConnectionStatus: "ONLINE", Resources: healthy}},
		{name: "nothing on the node, OFFLINE", in: RemovalSafety{Node: "n1", ConnectionStatus: "OFFLINE"}},
		{name: "satellite stopped, DRBD running", in: RemovalSafety{Node: "n1", ConnectionStatus: "OFFLINE", Resources: stopped},
			delete: linstorv1.ReasonNodeOffline, evac: linstorv1.ReasonNodeOffline,
			deleteMsg: []string{"not deleting node n1: the satellite is OFFLINE while its peers still see its DRBD connected: DRBD runs there", "pvc-d (n2 sees it Connected)"},
			evacMsg:   []string{"not evacuating node n1", "pvc-d (n2 sees it Connected)"}},
		{name: "dead machine, not acknowledged: the way out is named", in: RemovalSafety{Node: "n1", ConnectionStatus: "OFFLINE", Resources: dead},
			delete: linstorv1.ReasonHoldsLastReplica, evac: linstorv1.ReasonHoldsLastReplica,
			deleteMsg: []string{"only up-to-date copy of pvc-a (n2 is not connected to n1 (Connecting))", "linstor.io/acknowledge-lost-nodes=n1"},
			evacMsg:   []string{"nothing can be copied from it", "linstor.io/acknowledge-lost-nodes=n1"}},
		{name: "acknowledged lost, yet its DRBD answers: not gone", in: RemovalSafety{Node: "n1", ConnectionStatus: "OFFLINE", Resources: stopped, Lost: lost}, nodeLost: true,
			delete: linstorv1.ReasonNodeOffline, evac: linstorv1.ReasonNodeOffline,
			deleteMsg: []string{"peers still see its DRBD connected"}, evacMsg: []string{"peers still see its DRBD connected"}},
		{name: "dead machine acknowledged lost: the survivor is the copy", in: RemovalSafety{Node: "n1", ConnectionStatus: "OFFLINE", Resources: dead, Lost: lost}, nodeLost: true},
		{name: "acknowledged lost, node name spelled otherwise", in: RemovalSafety{Node: "N1", ConnectionStatus: "OFFLINE", Resources: nil, Lost: lost}, nodeLost: true},
		{name: "lost, but the survivors were written apart", in: RemovalSafety{Node: "n1", ConnectionStatus: "OFFLINE", Resources: split, Lost: lost},
			delete: linstorv1.ReasonHoldsLastReplica, evac: linstorv1.ReasonHoldsLastReplica, nodeLost: true,
			deleteMsg: []string{"node n1 is acknowledged lost (linstor.io/acknowledge-lost-nodes), but no survivor is a safe copy of pvc-a (n2 and n3 both report UpToDate but are not connected to each other"},
			evacMsg:   []string{"bring the machine back, or delete those volumes"}},
		{name: "a stale acknowledgement of a node that is back ONLINE: judged like any", in: RemovalSafety{Node: "n1", ConnectionStatus: "ONLINE", Resources: lone, Lost: lost},
			delete: linstorv1.ReasonHoldsLastReplica, deleteMsg: []string{"only up-to-date copy of pvc-a"}},
		{name: "the only replica, ONLINE: Evacuate moves it", in: RemovalSafety{Node: "n1", ConnectionStatus: "ONLINE", Resources: lone},
			delete:    linstorv1.ReasonHoldsLastReplica,
			deleteMsg: []string{"only up-to-date copy of pvc-a (no other diskful replica)", "or use deletionPolicy Evacuate"}},
		{name: "the only replica is Outdated: LINSTOR's evacuation would delete it", in: RemovalSafety{Node: "n1", ConnectionStatus: "ONLINE", Resources: loneOutdated},
			delete: linstorv1.ReasonHoldsLastReplica, evac: linstorv1.ReasonHoldsLastReplica,
			deleteMsg: []string{"deletionPolicy Evacuate would not move them now either"},
			evacMsg:   []string{"pvc-a (n1's replica is Outdated and LINSTOR deletes a replica that is not UpToDate"}},
		{name: "a partitioned peer, both ONLINE", in: RemovalSafety{Node: "n1", ConnectionStatus: "ONLINE", Resources: partitioned},
			delete: linstorv1.ReasonHoldsLastReplica, evac: linstorv1.ReasonHoldsLastReplica,
			deleteMsg: []string{"deletionPolicy Evacuate would not move them now either"},
			evacMsg:   []string{"n2 reports UpToDate but is not connected to n1 (Connecting)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.in.NodeLost(); got != tc.nodeLost {
				t.Errorf("NodeLost = %t, want %t", got, tc.nodeLost)
			}
			check := func(what string, h Hold, reason string, parts []string) {
				if h.Reason != reason {
					t.Errorf("%s: reason %q, want %q (%s)", what, h.Reason, reason, h.Message)
				}
				if (h.Message == "") != (reason == "") {
					t.Errorf("%s: message %q with reason %q", what, h.Message, h.Reason)
				}
				for _, p := range parts {
					if !strings.Contains(h.Message, p) {
						t.Errorf("%s: message %q lacks %q", what, h.Message, p)
					}
				}
			}
			check("DeleteHeld", DeleteHeld(tc.in), tc.delete, tc.deleteMsg)
			check("EvacuateHeld", EvacuateHeld(tc.in), tc.evac, tc.evacMsg)
		})
	}
}
