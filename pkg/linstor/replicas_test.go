package linstor

import (
	"reflect"
	"testing"

	lapi "github.com/LINBIT/golinstor/client"
)

func replica(rd, node, disk string, flags ...string) lapi.ResourceWithVolumes {
	kind := lapi.LVM_THIN
	if disk == "Diskless" {
		kind = lapi.DISKLESS
	}
	return lapi.ResourceWithVolumes{
		Resource: lapi.Resource{Name: rd, NodeName: node, Flags: flags},
		Volumes:  []lapi.Volume{{ProviderKind: kind, State: lapi.VolumeState{DiskState: disk}}},
	}
}

func TestOnlyCopies(t *testing.T) {
	for _, tc := range []struct {
		name string
		rscs []lapi.ResourceWithVolumes
		want []string
	}{
		{"no resources", nil, nil},
		{"lone replica, no peers (LINSTOR would delete it)", []lapi.ResourceWithVolumes{replica("pvc-a", "n1", "UpToDate")}, []string{"pvc-a"}},
		{"last diskful with a diskless peer", []lapi.ResourceWithVolumes{replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n2", "Diskless", "DRBD_DISKLESS")}, []string{"pvc-a"}},
		{"another UpToDate copy", []lapi.ResourceWithVolumes{replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n2", "UpToDate")}, nil},
		{"the other copy is still syncing", []lapi.ResourceWithVolumes{replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n2", "Inconsistent")}, []string{"pvc-a"}},
		{"the other copy is outdated", []lapi.ResourceWithVolumes{replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n2", "Outdated")}, []string{"pvc-a"}},
		{"the other copy's state is unknown (satellite offline)", []lapi.ResourceWithVolumes{replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n2", "")}, []string{"pvc-a"}},
		{"the other copy is being deleted", []lapi.ResourceWithVolumes{replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n2", "UpToDate", "DELETE")}, []string{"pvc-a"}},
		{"a tie-breaker is no copy", []lapi.ResourceWithVolumes{replica("pvc-a", "n1", "UpToDate"), replica("pvc-a", "n3", "Diskless", "TIE_BREAKER")}, []string{"pvc-a"}},
		{"node holds only a diskless replica", []lapi.ResourceWithVolumes{replica("pvc-a", "n1", "Diskless", "DRBD_DISKLESS"), replica("pvc-a", "n2", "UpToDate")}, nil},
		{"names compare case-insensitively", []lapi.ResourceWithVolumes{replica("pvc-a", "N1", "UpToDate")}, []string{"pvc-a"}},
		{"an outdated replica here with a good copy elsewhere", []lapi.ResourceWithVolumes{replica("pvc-a", "n1", "Outdated"), replica("pvc-a", "n2", "UpToDate")}, nil},
		{"several resources, sorted", []lapi.ResourceWithVolumes{
			replica("pvc-b", "n1", "UpToDate"), replica("pvc-a", "n1", "UpToDate"),
			replica("pvc-c", "n1", "UpToDate"), replica("pvc-c", "n2", "UpToDate"),
		}, []string{"pvc-a", "pvc-b"}},
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
	})
	want := Evacuation{Moving: []string{"moving"}, InUse: []string{"mounted"}, Stuck: []string{"stuck", "stuck2"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ObserveEvacuation = %+v, want %+v", got, want)
	}
	if (Evacuation{}).Empty() != true || want.Empty() {
		t.Fatal("Empty is wrong")
	}
}
