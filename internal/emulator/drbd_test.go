package emulator_test

import (
	"context"
	"testing"
	"time"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"

	"github.com/linstor-operator/linstor-operator/internal/emulator"
)

// drbdView is the part of a GET /v1/view/resources element that golinstor does not
// decode: replication states per peer and may_promote as LINSTOR sends them
// (JsonGenTypes.VolumeState, ReplicationState, DrbdResource).
type drbdView struct {
	NodeName    string   `json:"node_name"`
	Flags       []string `json:"flags"`
	LayerObject struct {
		Drbd *struct {
			Connections map[string]lapi.DrbdConnection `json:"connections"`
			MayPromote  *bool                          `json:"may_promote"`
		} `json:"drbd"`
	} `json:"layer_object"`
	Volumes []struct {
		State struct {
			DiskState         string                      `json:"disk_state"`
			ReplicationStates map[string]replicationState `json:"replication_states"`
		} `json:"state"`
	} `json:"volumes"`
}

type replicationState struct {
	ReplicationState string   `json:"replication_state"`
	DonePercentage   *float64 `json:"done_percentage"`
}

func drbdOf(t *testing.T, h *harness, rd, node string) drbdView {
	t.Helper()
	var out []drbdView
	if status := h.raw(t, "GET", "/v1/view/resources?resources="+rd+"&nodes="+node, nil, &out); status != 200 || len(out) != 1 {
		t.Fatalf("view of %s on %s: HTTP %d %+v", rd, node, status, out)
	}
	return out[0]
}

func replication(t *testing.T, h *harness, rd, node, peer string) replicationState {
	t.Helper()
	v := drbdOf(t, h, rd, node)
	if len(v.Volumes) == 0 {
		t.Fatalf("%s on %s: no volumes", rd, node)
	}
	return v.Volumes[0].State.ReplicationStates[peer]
}

func mayPromote(t *testing.T, h *harness, rd, node string) *bool {
	t.Helper()
	v := drbdOf(t, h, rd, node)
	if v.LayerObject.Drbd == nil {
		t.Fatalf("%s on %s: no DRBD layer", rd, node)
	}
	return v.LayerObject.Drbd.MayPromote
}

func connOf(t *testing.T, h *harness, rd, node, peer string) lapi.DrbdConnection {
	t.Helper()
	return drbdOf(t, h, rd, node).LayerObject.Drbd.Connections[peer]
}

func newest(t *testing.T, h *harness, rd, node string) bool {
	t.Helper()
	ok, err := h.emu.HasNewestData(rd, node)
	must(t, err)
	return ok
}

func isTrue(b *bool) bool  { return b != nil && *b }
func isFalse(b *bool) bool { return b != nil && !*b }

// conformingHarness is onlineHarness behind the OpenAPI validator.
func conformingHarness(t *testing.T, nodes ...string) (*harness, *clock) {
	t.Helper()
	return harnessWithNodes(t, true, "10.0.4.", nodes...)
}

// replication_states as LINSTOR fills them (Json.apiToVolumeState): Established
// between connected peers, SyncTarget/SyncSource with a growing done_percentage during
// a resync, Off toward a peer DRBD is not connected to; may_promote as DRBD reports it.
func TestReplicationStatesAndMayPromote(t *testing.T) {
	h, clk := conformingHarness(t, "n1", "n2", "n3", "n4")
	h.emu.SetTiming(emulator.Timing{Resync: 10 * time.Second})
	addPool(t, h, "n1", "n2", "n4")
	must(t, h.emu.PlaceResource("pvc-r", "n1", "thin", true))
	must(t, h.emu.PlaceResource("pvc-r", "n2", "thin", false))
	must(t, h.emu.PlaceResource("pvc-r", "n3", "", false))

	for _, p := range [][2]string{{"n1", "n2"}, {"n2", "n1"}, {"n1", "n3"}, {"n3", "n2"}} {
		if r := replication(t, h, "pvc-r", p[0], p[1]); r.ReplicationState != "Established" || r.DonePercentage != nil {
			t.Errorf("%s -> %s: %+v, want Established", p[0], p[1], r)
		}
	}
	// In use on n1: n1 is Primary already, the others see a Primary peer.
	for _, n := range []string{"n1", "n2", "n3"} {
		if mp := mayPromote(t, h, "pvc-r", n); !isFalse(mp) {
			t.Errorf("in use on n1: %s may_promote %v, want false", n, mp)
		}
	}
	must(t, h.emu.SetInUse("pvc-r", "n1", false))
	for _, n := range []string{"n1", "n2", "n3"} {
		if mp := mayPromote(t, h, "pvc-r", n); !isTrue(mp) {
			t.Errorf("unused: %s may_promote %v, want true", n, mp)
		}
	}

	// A new diskful replica resyncs from an UpToDate peer.
	must(t, createOn(h, "pvc-r", "n4"))
	target := replication(t, h, "pvc-r", "n4", "n1")
	source := replication(t, h, "pvc-r", "n1", "n4")
	if target.ReplicationState != "SyncTarget" || source.ReplicationState != "SyncSource" || target.DonePercentage == nil || *target.DonePercentage != 0 {
		t.Fatalf("resync start: n4->n1 %+v, n1->n4 %+v", target, source)
	}
	if r := replication(t, h, "pvc-r", "n4", "n2"); r.ReplicationState != "Established" {
		t.Errorf("n4 -> n2 (not its source): %+v", r)
	}
	if mp := mayPromote(t, h, "pvc-r", "n4"); !isTrue(mp) {
		t.Errorf("an Inconsistent replica with UpToDate peers may promote (reads go to the peer): %v", mp)
	}
	clk.Advance(5 * time.Second)
	target = replication(t, h, "pvc-r", "n4", "n1")
	source = replication(t, h, "pvc-r", "n1", "n4")
	if target.DonePercentage == nil || *target.DonePercentage != 50 || source.DonePercentage == nil || *source.DonePercentage != 50 {
		t.Errorf("half way: n4->n1 %+v, n1->n4 %+v, want 50%%", target, source)
	}
	clk.Advance(6 * time.Second)
	if r := replication(t, h, "pvc-r", "n4", "n1"); r.ReplicationState != "Established" || r.DonePercentage != nil {
		t.Errorf("synced: %+v", r)
	}

	// A cut link: Off both ways.
	must(t, h.emu.PartitionLink("n1", "n2"))
	for _, p := range [][2]string{{"n1", "n2"}, {"n2", "n1"}} {
		if r := replication(t, h, "pvc-r", p[0], p[1]); r.ReplicationState != "Off" {
			t.Errorf("cut %s -> %s: %+v, want Off", p[0], p[1], r)
		}
	}
	// A satellite that is not ONLINE has no state at all.
	must(t, h.emu.SetNodeOnline("n2", false))
	if v := drbdOf(t, h, "pvc-r", "n2"); v.Volumes[0].State.ReplicationStates != nil || v.LayerObject.Drbd.MayPromote != nil {
		t.Errorf("offline n2: %+v", v)
	}
	if h.conf != nil {
		h.conf.report(t)
	}
}

// Both sides written while cut: DRBD's default after-sb policy (disconnect) leaves
// the connection StandAlone on both sides, with no resync, until a side is rebuilt
// through toggle-disk (diskless, then diskful), which resyncs it in full.
func TestSplitBrainAndToggleDiskResolution(t *testing.T) {
	h, clk := onlineHarness(t, "n1", "n2")
	h.emu.SetTiming(emulator.Timing{Resync: 10 * time.Second})
	addPool(t, h, "n1", "n2")
	must(t, h.emu.PlaceResource("pvc-sb", "n1", "thin", true))
	must(t, h.emu.PlaceResource("pvc-sb", "n2", "thin", false))
	must(t, h.emu.PartitionLink("n1", "n2"))
	must(t, h.emu.SetInUse("pvc-sb", "n1", false))
	must(t, h.emu.SetInUse("pvc-sb", "n2", true)) // two nodes, no quorum: n2 writes too
	must(t, h.emu.SetInUse("pvc-sb", "n2", false))
	must(t, h.emu.HealLink("n1", "n2"))

	check := func(when string) {
		t.Helper()
		for _, p := range [][2]string{{"n1", "n2"}, {"n2", "n1"}} {
			if c := connOf(t, h, "pvc-sb", p[0], p[1]); c.Connected || c.Message != "StandAlone" {
				t.Errorf("%s: %s -> %s %+v, want StandAlone", when, p[0], p[1], c)
			}
			if r := replication(t, h, "pvc-sb", p[0], p[1]); r.ReplicationState != "Off" {
				t.Errorf("%s: %s -> %s replication %+v, want Off", when, p[0], p[1], r)
			}
			if s := drbdOf(t, h, "pvc-sb", p[0]).Volumes[0].State.DiskState; s != "UpToDate" {
				t.Errorf("%s: %s disk %q, want UpToDate (each side its own data)", when, p[0], s)
			}
			if newest(t, h, "pvc-sb", p[0]) {
				t.Errorf("%s: %s holds every write, want diverged", when, p[0])
			}
		}
	}
	check("healed")
	clk.Advance(time.Hour)
	check("an hour later")
	// The divergence is the disks': a controller restart does not end it.
	must(t, h.emu.LoadDatabaseRows(h.emu.DatabaseRows()))
	check("after a controller restart")

	// Rebuild n2 from n1: toggle it diskless, then diskful again.
	status, got := h.call(t, "PUT", "/v1/resource-definitions/pvc-sb/resources/n2/toggle-disk/diskless", nil)
	expect(t, "toggle diskless", status, got, 200, lapiconst.Modified|lapiconst.MaskMod|lapiconst.MaskRsc)
	v := drbdOf(t, h, "pvc-sb", "n2")
	if !contains(v.Flags, "DISKLESS") || !contains(v.Flags, "DRBD_DISKLESS") || v.Volumes[0].State.DiskState != "Diskless" {
		t.Errorf("diskless n2: flags %v disk %q", v.Flags, v.Volumes[0].State.DiskState)
	}
	if c := connOf(t, h, "pvc-sb", "n1", "n2"); !c.Connected || c.Message != "Connected" {
		t.Errorf("after dropping n2's data: n1 -> n2 %+v, want Connected", c)
	}
	if !newest(t, h, "pvc-sb", "n1") {
		t.Error("n1 is the only copy left: it holds every write that survives")
	}
	status, got = h.call(t, "PUT", "/v1/resource-definitions/pvc-sb/resources/n2/toggle-disk/diskful/thin", nil)
	expect(t, "toggle diskful", status, got, 200, lapiconst.Modified|lapiconst.MaskMod|lapiconst.MaskRsc)
	v = drbdOf(t, h, "pvc-sb", "n2")
	if contains(v.Flags, "DISKLESS") || v.Volumes[0].State.DiskState != "Inconsistent" {
		t.Errorf("diskful n2: flags %v disk %q, want a full resync", v.Flags, v.Volumes[0].State.DiskState)
	}
	if r := replication(t, h, "pvc-sb", "n2", "n1"); r.ReplicationState != "SyncTarget" || r.DonePercentage == nil {
		t.Errorf("diskful n2 -> n1: %+v", r)
	}
	clk.Advance(11 * time.Second)
	if s := drbdOf(t, h, "pvc-sb", "n2").Volumes[0].State.DiskState; s != "UpToDate" || !newest(t, h, "pvc-sb", "n2") {
		t.Errorf("rebuilt n2: %q, newest %v", s, newest(t, h, "pvc-sb", "n2"))
	}
}

// toggle-disk refusals (CtrlRscToggleDiskApiCallHandler.toggleDiskInTransaction,
// CtrlApiDataLoader.loadRsc) and the flags of a toggle that waits for its satellite.
func TestToggleDiskRefusals(t *testing.T) {
	h, _ := onlineHarness(t, "n1", "n2", "n3", "n4")
	addPool(t, h, "n1", "n2", "n3", "n4")
	must(t, h.emu.PlaceResource("pvc-t", "n1", "thin", false))
	must(t, h.emu.PlaceResource("pvc-t", "n2", "thin", false))
	must(t, h.emu.PlaceResource("pvc-t", "n3", "", false))
	must(t, h.emu.PlaceResource("pvc-t", "n4", "thin", false))
	const mod = lapiconst.MaskMod | lapiconst.MaskRsc
	for _, tc := range []struct {
		path   string
		status int
		code   uint64
	}{
		{"/v1/resource-definitions/nope/resources/n1/toggle-disk/diskless", 404, lapiconst.FailNotFoundRscDfn | mod},
		{"/v1/resource-definitions/pvc-t/resources/n9/toggle-disk/diskless", 404, lapiconst.FailNotFoundNode | mod},
		{"/v1/resource-definitions/pvc-t/resources/n3/toggle-disk/diskless", 200, lapiconst.WarnRscAlreadyDiskless | mod},
		{"/v1/resource-definitions/pvc-t/resources/n1/toggle-disk/diskful/thin", 200, lapiconst.WarnRscAlreadyHasDisk | mod},
		{"/v1/resource-definitions/pvc-t/resources/n3/toggle-disk/diskful/nopool", 404, lapiconst.FailNotFoundDfltStorPool | mod},
	} {
		status, got := h.call(t, "PUT", tc.path, nil)
		expect(t, tc.path, status, got, tc.status, tc.code)
	}
	must(t, h.emu.PlaceResource("pvc-u", "n1", "thin", false))
	status, got := h.call(t, "PUT", "/v1/resource-definitions/pvc-u/resources/n2/toggle-disk/diskless", nil)
	expect(t, "no replica there", status, got, 404, lapiconst.FailNotFoundRsc|mod)

	// n2 goes away: the removal is requested and waits for it.
	must(t, h.emu.SetNodeOnline("n2", false))
	status, got = h.call(t, "PUT", "/v1/resource-definitions/pvc-t/resources/n2/toggle-disk/diskless", nil)
	expect(t, "toggle on an offline node", status, got, 200, lapiconst.Modified|mod)
	if !hasAnswer(got, lapiconst.WarnNotConnected|mod, "No active connection to satellite 'n2'") {
		t.Errorf("offline toggle: %+v, want WARN_NOT_CONNECTED", got)
	}
	if v := viewOf(t, h, "pvc-t", "n2"); !contains(v.Flags, "DISK_REMOVE_REQUESTED") || contains(v.Flags, "DRBD_DISKLESS") {
		t.Errorf("pending removal: flags %v", v.Flags)
	}
	status, got = h.call(t, "PUT", "/v1/resource-definitions/pvc-t/resources/n2/toggle-disk/diskless", nil)
	expect(t, "busy", status, got, 500, lapiconst.FailRscBusy|mod)
	// With n4 gone too, n1 is the only diskful replica on an ONLINE satellite: its
	// disk cannot go.
	must(t, h.emu.SetNodeOnline("n4", false))
	status, got = h.call(t, "PUT", "/v1/resource-definitions/pvc-t/resources/n1/toggle-disk/diskless", nil)
	expect(t, "last online disk", status, got, 500, lapiconst.FailInsufficientReplicaCount|mod)

	must(t, h.emu.SetNodeOnline("n2", true))
	h.emu.SetTiming(emulator.Timing{})
	if v := viewOf(t, h, "pvc-t", "n2"); contains(v.Flags, "DISK_REMOVE_REQUESTED") || !contains(v.Flags, "DRBD_DISKLESS") || !contains(v.Flags, "DISKLESS") {
		t.Errorf("n2 back: flags %v, want the removal finished", v.Flags)
	}
}

// A replica whose disk fails detaches it (LINSTOR's default on-io-error detach): the
// view shows Diskless for a replica not flagged DISKLESS.
func TestFailDisk(t *testing.T) {
	h, _ := onlineHarness(t, "n1", "n2")
	addPool(t, h, "n1", "n2")
	must(t, h.emu.PlaceResource("pvc-f", "n1", "thin", true))
	must(t, h.emu.PlaceResource("pvc-f", "n2", "thin", false))
	must(t, h.emu.FailDisk("pvc-f", "n2"))
	v := drbdOf(t, h, "pvc-f", "n2")
	if v.Volumes[0].State.DiskState != "Diskless" || contains(v.Flags, "DISKLESS") {
		t.Errorf("failed disk: flags %v disk %q", v.Flags, v.Volumes[0].State.DiskState)
	}
	if newest(t, h, "pvc-f", "n2") {
		t.Error("a detached disk holds the newest data")
	}
	sync, err := h.client.ResourceDefinitions.SyncStatus(context.Background(), "pvc-f")
	must(t, err)
	if sync.SyncedOnAll {
		t.Error("sync status: a diskful replica reporting Diskless is not synced")
	}
	if c := connOf(t, h, "pvc-f", "n1", "n2"); !c.Connected {
		t.Errorf("the connection stays: %+v", c)
	}
	if err := h.emu.FailDisk("pvc-f", "n9"); err == nil {
		t.Error("FailDisk on a missing replica")
	}
}

// Quorum (DrbdOptions/Resource/quorum=majority, set by auto-quorum for three diskful
// replicas): an isolated replica loses quorum, may not promote and does not write, so
// healing resyncs it instead of a split brain. With quorum off the same cuts split.
func TestQuorumPreventsSplitBrain(t *testing.T) {
	h, clk := onlineHarness(t, "n1", "n2", "n3")
	h.emu.SetTiming(emulator.Timing{Resync: 10 * time.Second})
	addPool(t, h, "n1", "n2", "n3")
	ctx := context.Background()
	must(t, h.client.ResourceDefinitions.Create(ctx, lapi.ResourceDefinitionCreate{ResourceDefinition: lapi.ResourceDefinition{
		Name: "pvc-noq", Props: map[string]string{"DrbdOptions/Resource/quorum": "off"}}}))
	must(t, h.client.ResourceDefinitions.CreateVolumeDefinition(ctx, "pvc-noq", lapi.VolumeDefinitionCreate{VolumeDefinition: lapi.VolumeDefinition{SizeKib: 1 << 20}}))
	for _, rd := range []string{"pvc-q", "pvc-noq"} {
		for _, n := range []string{"n1", "n2", "n3"} {
			must(t, h.emu.PlaceResource(rd, n, "thin", n == "n1"))
		}
	}
	must(t, h.emu.PartitionLink("n1", "n2"))
	must(t, h.emu.PartitionLink("n1", "n3"))
	if mp := mayPromote(t, h, "pvc-q", "n2"); !isTrue(mp) {
		t.Errorf("n2 with quorum, no Primary in reach: may_promote %v", mp)
	}
	for _, rd := range []string{"pvc-q", "pvc-noq"} {
		must(t, h.emu.SetInUse(rd, "n2", true))
		must(t, h.emu.SetInUse(rd, "n2", false))
		must(t, h.emu.SetInUse(rd, "n1", false))
	}
	if mp := mayPromote(t, h, "pvc-q", "n1"); !isFalse(mp) {
		t.Errorf("isolated n1 without quorum: may_promote %v, want false", mp)
	}
	if mp := mayPromote(t, h, "pvc-noq", "n1"); !isTrue(mp) {
		t.Errorf("isolated n1, quorum off: may_promote %v, want true", mp)
	}
	must(t, h.emu.HealLink("n1", "n2"))
	must(t, h.emu.HealLink("n1", "n3"))
	if c := connOf(t, h, "pvc-q", "n1", "n2"); !c.Connected {
		t.Errorf("with quorum: n1 -> n2 %+v, want Connected (n1 wrote nothing)", c)
	}
	if r := replication(t, h, "pvc-q", "n1", "n2"); r.ReplicationState != "SyncTarget" {
		t.Errorf("with quorum: n1 -> n2 %+v, want SyncTarget", r)
	}
	clk.Advance(11 * time.Second)
	if !newest(t, h, "pvc-q", "n1") {
		t.Error("with quorum: n1 did not catch up")
	}
	for _, peer := range []string{"n2", "n3"} {
		if c := connOf(t, h, "pvc-noq", "n1", peer); c.Message != "StandAlone" {
			t.Errorf("quorum off: n1 -> %s %+v, want StandAlone", peer, c)
		}
	}
	if c := connOf(t, h, "pvc-noq", "n2", "n3"); !c.Connected {
		t.Errorf("quorum off: n2 -> n3 %+v, want Connected (same data)", c)
	}
}

// Auto-evict (ReconnectorTask.getFailedPeers): a satellite away for
// AutoEvictAfterTime minutes (60) is EVICTED and its replicas are re-placed, when
// AutoEvictAllowEviction is true (the k8s database's first migration sets it on the
// controller) and no more than AutoEvictMaxDisconnectedNodes percent (34) are away.
func TestAutoEvict(t *testing.T) {
	h, clk := onlineHarness(t, "n1", "n2", "n3", "n4")
	addPool(t, h, "n1", "n2", "n3", "n4")
	props, err := h.client.Controller.GetProps(context.Background())
	must(t, err)
	if props["DrbdOptions/AutoEvictAllowEviction"] != "True" {
		t.Errorf("fresh controller props %v, want AutoEvictAllowEviction=True", props)
	}
	must(t, h.emu.PlaceResource("pvc-e", "n1", "thin", true))
	must(t, h.emu.PlaceResource("pvc-e", "n2", "thin", false))

	evicted := func(n string) bool {
		node, err := h.client.Nodes.Get(context.Background(), n)
		must(t, err)
		return contains(node.Flags, "EVICTED")
	}
	must(t, h.emu.SetNodeOnline("n2", false))
	clk.Advance(59 * time.Minute)
	if evicted("n2") {
		t.Fatal("evicted before AutoEvictAfterTime")
	}
	clk.Advance(2 * time.Minute)
	if !evicted("n2") {
		t.Fatal("not evicted after AutoEvictAfterTime")
	}
	if v := viewOf(t, h, "pvc-e", "n2"); !contains(v.Flags, "EVICTED") || !contains(v.Flags, "INACTIVE") {
		t.Errorf("evicted replica: flags %v", v.Flags)
	}
	if !h.emu.ResourcePlaced("pvc-e", "n3") && !h.emu.ResourcePlaced("pvc-e", "n4") {
		t.Error("no replacement placed")
	}

	// Only the satellite stopped: DRBD still reports it Connected, nothing is evicted.
	must(t, h.emu.StopSatellite("n3"))
	clk.Advance(2 * time.Hour)
	if evicted("n3") {
		t.Error("a node whose DRBD is connected was evicted")
	}
	must(t, h.emu.SetNodeOnline("n3", true))

	// A node that disallows it stays.
	must(t, h.client.Nodes.Modify(context.Background(), "n4", lapi.NodeModify{GenericPropsModify: lapi.GenericPropsModify{OverrideProps: map[string]string{"DrbdOptions/AutoEvictAllowEviction": "false"}}}))
	must(t, h.emu.SetNodeOnline("n4", false))
	clk.Advance(2 * time.Hour)
	if evicted("n4") {
		t.Error("a node with AutoEvictAllowEviction=false was evicted")
	}
}

// More than AutoEvictMaxDisconnectedNodes percent away: the controller suspects
// itself and evicts nobody.
func TestAutoEvictSparesManyDisconnected(t *testing.T) {
	h, clk := onlineHarness(t, "n1", "n2", "n3", "n4")
	must(t, h.emu.SetNodeOnline("n3", false))
	must(t, h.emu.SetNodeOnline("n4", false))
	clk.Advance(2 * time.Hour)
	for _, n := range []string{"n3", "n4"} {
		if node, err := h.client.Nodes.Get(context.Background(), n); err != nil || contains(node.Flags, "EVICTED") {
			t.Errorf("%s evicted with 2 of 4 nodes away (max 34%%)", n)
		}
	}
}
