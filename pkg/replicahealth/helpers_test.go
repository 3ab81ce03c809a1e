package replicahealth

// Fixtures and builders the table tests share. Replicas are built as
// GET /v1/view/resources lists them (linstor.ResourceView, decoded by pkg/linstor): an
// ONLINE satellite sends state.in_use, disk states and connections; one that is not
// ONLINE sends none of them (Json.apiToResourceWithVolumes@v1.33.3).

import (
	"strings"
	"time"

	"k8s.io/utils/ptr"

	"github.com/linstor-operator/linstor-operator/pkg/linstor"
)

var fxNow = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

const (
	fxRsc   = "pvc-1"
	fxUID   = "uid-pvc-1"
	fxGroup = "sc-fast"
)

// up builds a DRBD replica of fxRsc on node, ONLINE, not in use, with disk as every
// volume's state and its connections: "peer" is Connected, "peer:Message" is not.
func up(node, disk string, peers ...string) linstor.ResourceView {
	return replicaOf(fxRsc, node, disk, peers...)
}

func replicaOf(rsc, node, disk string, peers ...string) linstor.ResourceView {
	v := linstor.ResourceView{
		Name: rsc, NodeName: node, Flags: []string{}, InUse: ptr.To(false),
		Drbd:    &linstor.DrbdView{MayPromote: ptr.To(true), Connections: map[string]linstor.DrbdConnection{}},
		Volumes: []linstor.VolumeView{{VolumeNumber: 0, StoragePool: "pool1", DiskState: disk}},
	}
	for _, p := range peers {
		name, msg, cut := strings.Cut(p, ":")
		if !cut {
			msg = "Connected"
		}
		v.Drbd.Connections[name] = linstor.DrbdConnection{Connected: msg == "Connected", Message: msg}
	}
	return v
}

// offline builds a DRBD replica of fxRsc on a node whose satellite is not ONLINE.
func offline(node string) linstor.ResourceView {
	return linstor.ResourceView{
		Name: fxRsc, NodeName: node, Flags: []string{},
		Drbd:    &linstor.DrbdView{},
		Volumes: []linstor.VolumeView{{VolumeNumber: 0, StoragePool: "pool1"}},
	}
}

// plain builds a replica of fxRsc without DRBD (a STORAGE-only resource).
func plain(node string) linstor.ResourceView {
	return linstor.ResourceView{Name: fxRsc, NodeName: node, Volumes: []linstor.VolumeView{{StoragePool: "pool1"}}}
}

// inUse marks the replica Primary.
func inUse(v linstor.ResourceView) linstor.ResourceView {
	v.InUse = ptr.To(true)
	v.Drbd.MayPromote = ptr.To(false)
	return v
}

// noPromote: the replica reports may_promote false (DRBD without quorum does).
func noPromote(v linstor.ResourceView) linstor.ResourceView {
	d := *v.Drbd
	d.MayPromote = ptr.To(false)
	v.Drbd = &d
	return v
}

// flagged adds LINSTOR resource flags.
func flagged(v linstor.ResourceView, flags ...string) linstor.ResourceView {
	v.Flags = append(append([]string{}, v.Flags...), flags...)
	return v
}

// tiebreaker flags the replica as LINSTOR's diskless tiebreaker (with the flags it
// implies, Resource.Flags@v1.33.3).
func tiebreaker(v linstor.ResourceView) linstor.ResourceView {
	return flagged(v, "DISKLESS", "DRBD_DISKLESS", "TIE_BREAKER")
}

// replicating sets the replication state towards peer, with a done percentage when pct
// is not negative.
func replicating(v linstor.ResourceView, peer, state string, pct float64) linstor.ResourceView {
	vols := append([]linstor.VolumeView{}, v.Volumes...)
	rs := linstor.ReplicationState{State: state}
	if pct >= 0 {
		rs.DonePercentage = ptr.To(pct)
	}
	m := map[string]linstor.ReplicationState{peer: rs}
	for k, x := range vols[0].Replication {
		if k != peer {
			m[k] = x
		}
	}
	vols[0].Replication = m
	v.Volumes = vols
	return v
}

// volume adds a volume with disk state disk.
func volume(v linstor.ResourceView, disk string) linstor.ResourceView {
	v.Volumes = append(append([]linstor.VolumeView{}, v.Volumes...), linstor.VolumeView{VolumeNumber: int32(len(v.Volumes)), StoragePool: "pool1", DiskState: disk})
	return v
}

func views(vs ...linstor.ResourceView) []linstor.ResourceView { return vs }

// prevReport is a previous report with fxRsc in state at, since since.
func prevReport(at time.Time, res Resource) *Report {
	r := res
	if r.Name == "" {
		r.Name = fxRsc
	}
	return &Report{Now: at, Resources: map[string]*Resource{strings.ToLower(r.Name): &r}}
}

func holdsOn(node string, reason string) map[string]string { return map[string]string{node: reason} }
