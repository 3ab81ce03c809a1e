package controllers

import (
	"context"
	"strings"
	"testing"

	"github.com/linstor-operator/linstor-operator/pkg/linstorstate"

	"github.com/LINBIT/golinstor/devicelayerkind"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// Real networks: a replication link between two nodes fails while both satellites stay
// ONLINE. DRBD 9 on the cut-off side still reports its disk UpToDate although the
// writes made since are only on the other side; LINSTOR's view shows the per-peer
// connection as Connecting. Removing the node that holds the newest data must wait.

// partition cuts the link between a and b, healing it when the test ends.
func partition(t *testing.T, a, b string) {
	t.Helper()
	NewWithT(t).Expect(emu.PartitionLink(a, b)).To(Succeed())
	t.Cleanup(func() { _ = emu.HealLink(a, b) })
}

// satelliteEvent: an Event of a LinstorSatellite with this reason says every part.
func satelliteEvent(g Gomega, ns, reason string, parts ...string) bool {
	var events corev1.EventList
	g.Expect(env.Client.List(context.Background(), &events, client.InNamespace(ns))).To(Succeed())
next:
	for _, e := range events.Items {
		if e.InvolvedObject.Kind != "LinstorSatellite" || e.Reason != reason {
			continue
		}
		for _, p := range parts {
			if !strings.Contains(e.Message, p) {
				continue next
			}
		}
		return true
	}
	return false
}

func newestOn(g Gomega, rd, node string) bool {
	ok, err := emu.HasNewestData(rd, node)
	g.Expect(err).NotTo(HaveOccurred())
	return ok
}

// degradedSays: the node's satellite is Degraded for reason, and the message says every part.
func degradedSays(g Gomega, ns, node, reason string, parts ...string) {
	sat := get(g, ns, node, &linstorv1.LinstorSatellite{})
	d := condition(sat.Status.Conditions, linstorv1.ConditionDegraded)
	g.Expect(d.Reason).To(Equal(reason), d.Message)
	for _, p := range parts {
		g.Expect(d.Message).To(ContainSubstring(p))
	}
}

// holds: held comes true within the timeout, then stays true for d (the removal is held, not slow).
func holds(g Gomega, held func(Gomega), d string) {
	g.Eventually(held, timeout, tick).Should(Succeed())
	g.Consistently(held, d, tick).Should(Succeed())
}

// Delete: the other replica reports UpToDate but missed the writes made on the node
// being deleted while their link was down. The deletion is held, the satellite says
// why, and it proceeds once the link is back and the other replica has resynced.
func TestDeleteWaitsForAPartitionedReplica(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _ := availableCluster(t, "part", linstorv1.LinstorSatelliteConfigurationSpec{
		StoragePools: []linstorv1.StoragePool{thinPool}, DeletionPolicy: linstorv1.DeletionDelete,
	}, "part-a", "part-b")
	g.Expect(emu.PlaceResource("pvc-part", "part-a", "thin", true)).To(Succeed())
	g.Expect(emu.PlaceResource("pvc-part", "part-b", "thin", false)).To(Succeed())
	t.Cleanup(func() { _ = emulatorClient(t).ResourceDefinitions.Delete(ctx, "pvc-part") })

	// The link fails while the volume is written on part-a; then the workload stops
	// there (a drain), so nothing holds part-a's replica in use any more.
	partition(t, "part-a", "part-b")
	g.Expect(emu.SetInUse("pvc-part", "part-a", false)).To(Succeed())
	g.Expect(newestOn(g, "pvc-part", "part-b")).To(BeFalse())
	g.Expect(emu.Replicas("pvc-part")).To(Equal(map[string]string{"part-a": "UpToDate", "part-b": "UpToDate"}), "both sides report UpToDate")

	unselect(t, "part-a")
	held := func(g Gomega) {
		degradedSays(g, ns, "part-a", linstorv1.ReasonHoldsLastReplica, "only up-to-date copy of pvc-part", "part-b is not connected to part-a (Connecting)")
	}
	holds(g, held, "3s")
	_, ok := emu.Node("part-a")
	g.Expect(ok).To(BeTrue(), "the node holding the newest data was deleted")

	// The link is back: part-b resyncs from part-a, then the node may go.
	g.Expect(emu.HealLink("part-a", "part-b")).To(Succeed())
	g.Eventually(satelliteGone(ns, "part-a"), timeout, tick).Should(BeTrue())
	_, ok = emu.Node("part-a")
	g.Expect(ok).To(BeFalse())
	g.Expect(newestOn(g, "pvc-part", "part-b")).To(BeTrue(), "the surviving replica must hold the newest data")
}

// Evacuate: with two peers that both report UpToDate, LINSTOR's evacuation deletes the
// node's replica at once (getUpToDatePeerCount reaches the place count), even though
// both peers were cut off from it while it was written. The operator does not ask
// LINSTOR to evacuate until the links are back.
func TestEvacuateWaitsForPartitionedReplicas(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _ := availableCluster(t, "evpart", linstorv1.LinstorSatelliteConfigurationSpec{
		StoragePools: []linstorv1.StoragePool{thinPool}, DeletionPolicy: linstorv1.DeletionEvacuate,
	}, "evpart-a", "evpart-b", "evpart-c")
	g.Expect(emu.PlaceResource("pvc-evpart", "evpart-a", "thin", true)).To(Succeed())
	g.Expect(emu.PlaceResource("pvc-evpart", "evpart-b", "thin", false)).To(Succeed())
	g.Expect(emu.PlaceResource("pvc-evpart", "evpart-c", "thin", false)).To(Succeed())
	t.Cleanup(func() { _ = emulatorClient(t).ResourceDefinitions.Delete(ctx, "pvc-evpart") })

	partition(t, "evpart-a", "evpart-b")
	partition(t, "evpart-a", "evpart-c")
	g.Expect(emu.SetInUse("pvc-evpart", "evpart-a", false)).To(Succeed())

	unselect(t, "evpart-a")
	held := func(g Gomega) {
		degradedSays(g, ns, "evpart-a", linstorv1.ReasonHoldsLastReplica, "not evacuating node evpart-a yet", "evpart-b reports UpToDate but is not connected to evpart-a (Connecting)")
		g.Expect(emu.ResourcePlaced("pvc-evpart", "evpart-a")).To(BeTrue(), "LINSTOR dropped the replica with the newest data")
	}
	holds(g, held, "3s")
	n, _ := emu.Node("evpart-a")
	g.Expect(linstorstate.HasFlag(n.Flags, "EVACUATE")).To(BeFalse(), "LINSTOR was asked to evacuate")

	g.Expect(emu.HealLink("evpart-a", "evpart-b")).To(Succeed())
	g.Expect(emu.HealLink("evpart-a", "evpart-c")).To(Succeed())
	g.Eventually(satelliteGone(ns, "evpart-a"), timeout, tick).Should(BeTrue())
	for _, peer := range []string{"evpart-b", "evpart-c"} {
		g.Expect(newestOn(g, "pvc-evpart", peer)).To(BeTrue(), "%s must hold the newest data", peer)
	}
}

// Volumes without DRBD (layer list STORAGE, or LUKS over STORAGE) have no disk state in
// LINSTOR's view: only DRBD's events fill it. Preflight judges them by their layers, so
// they no longer hold every LINSTOR upgrade for ever.
func TestPreflightPassesVolumesWithoutDRBD(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, cluster := preflightCluster(t, "nodrbd", "nodrbd-a", "nodrbd-b")
	g.Expect(emu.PlaceResourceWithLayers("pvc-local", "nodrbd-a", "thin", true, devicelayerkind.Storage)).To(Succeed())
	g.Expect(emu.PlaceResourceWithLayers("pvc-crypt", "nodrbd-b", "thin", false, devicelayerkind.Luks, devicelayerkind.Storage)).To(Succeed())
	g.Expect(emu.PlaceResource("pvc-repl", "nodrbd-a", "thin", false)).To(Succeed())
	g.Expect(emu.PlaceResource("pvc-repl", "nodrbd-b", "thin", false)).To(Succeed())
	t.Cleanup(func() {
		for _, rd := range []string{"pvc-local", "pvc-crypt", "pvc-repl"} {
			_ = emulatorClient(t).ResourceDefinitions.Delete(ctx, rd)
		}
	})

	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) { c.Spec.Version = preflightTo })).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		msg := ""
		if c.Status.Upgrade != nil {
			msg = c.Status.Upgrade.Message
		}
		g.Expect(eventOf(g, ns, "UpgradeBackup", "Preflight passed")).NotTo(BeNil(), "Preflight did not pass: %s", msg)
	}, timeout, tick).Should(Succeed())
}

// Evacuate: LINSTOR deletes an evacuated replica that is not UpToDate at once instead of
// moving it (CtrlNodeApiCallHandler.evacuateNodeInTrasaction, allVolumesUpToDate). When
// it is the last copy of its data, Outdated or not, the operator does not ask LINSTOR
// to evacuate; it says which resource and why, and goes on once the replica is
// UpToDate again.
func TestEvacuateKeepsALastReplicaThatIsNotUpToDate(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _ := availableCluster(t, "outd", linstorv1.LinstorSatelliteConfigurationSpec{
		StoragePools: []linstorv1.StoragePool{thinPool}, DeletionPolicy: linstorv1.DeletionEvacuate,
	}, "outd-a", "outd-b")
	g.Expect(emu.PlaceResource("pvc-outd", "outd-a", "thin", false)).To(Succeed())
	g.Expect(emu.SetDiskState("pvc-outd", "outd-a", "Outdated")).To(Succeed())
	t.Cleanup(func() { _ = emulatorClient(t).ResourceDefinitions.Delete(ctx, "pvc-outd") })

	unselect(t, "outd-a")
	held := func(g Gomega) {
		degradedSays(g, ns, "outd-a", linstorv1.ReasonHoldsLastReplica, "not evacuating node outd-a yet", "pvc-outd (outd-a's replica is Outdated")
		g.Expect(emu.ResourcePlaced("pvc-outd", "outd-a")).To(BeTrue(), "LINSTOR deleted the last replica")
	}
	holds(g, held, "3s")
	n, _ := emu.Node("outd-a")
	g.Expect(linstorstate.HasFlag(n.Flags, "EVACUATE")).To(BeFalse(), "LINSTOR was asked to evacuate")

	g.Expect(emu.SetDiskState("pvc-outd", "outd-a", "UpToDate")).To(Succeed())
	g.Eventually(satelliteGone(ns, "outd-a"), timeout, tick).Should(BeTrue())
	g.Expect(emu.Replicas("pvc-outd")).To(HaveLen(1), "the data must survive on the replacement")
	g.Expect(emu.ResourcePlaced("pvc-outd", "outd-a")).To(BeFalse())
}

// Delete: a satellite that stopped is not a dead machine. LINSTOR reports the node
// OFFLINE and knows nothing of its replicas (in_use unknown), while its DRBD runs on
// and its peers still report it Connected: here a workload writes through a diskless
// replica there. Deleting the node would cut that replica off from its data, so the
// deletion waits for the satellite and says why.
func TestDeleteWaitsWhileDRBDRunsWithoutItsSatellite(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _ := availableCluster(t, "stopped", linstorv1.LinstorSatelliteConfigurationSpec{
		StoragePools: []linstorv1.StoragePool{thinPool}, DeletionPolicy: linstorv1.DeletionDelete,
	}, "stopped-a", "stopped-b")
	g.Expect(emu.PlaceResource("pvc-stopped", "stopped-a", "", true)).To(Succeed())
	g.Expect(emu.PlaceResource("pvc-stopped", "stopped-b", "thin", false)).To(Succeed())
	t.Cleanup(func() { _ = emulatorClient(t).ResourceDefinitions.Delete(ctx, "pvc-stopped") })

	g.Expect(emu.StopSatellite("stopped-a")).To(Succeed())
	t.Cleanup(func() { _ = emu.SetNodeOnline("stopped-a", true) })
	unselect(t, "stopped-a")
	held := func(g Gomega) {
		degradedSays(g, ns, "stopped-a", linstorv1.ReasonNodeOffline, "peers still see its DRBD connected", "pvc-stopped (stopped-b sees it Connected)")
		_, ok := emu.Node("stopped-a")
		g.Expect(ok).To(BeTrue(), "the node was deleted while DRBD ran there")
	}
	holds(g, held, "3s")

	// The satellite is back: LINSTOR sees the replica in use and refuses; once the
	// workload is gone the node goes.
	g.Expect(emu.SetNodeOnline("stopped-a", true)).To(Succeed())
	g.Expect(emu.SetInUse("pvc-stopped", "stopped-a", false)).To(Succeed())
	g.Eventually(satelliteGone(ns, "stopped-a"), timeout, tick).Should(BeTrue())
	g.Expect(emu.Replicas("pvc-stopped")).To(Equal(map[string]string{"stopped-b": "UpToDate"}))
}

// A dead machine: its peers report it Connecting, so every resource on it has no
// connected copy and Delete waits, saying how to go on: acknowledging the node lost
// on the LinstorCluster. Meanwhile it takes no place under maxConcurrentEvacuations,
// so other removals go on. Once acknowledged, the node goes (LINSTOR's node lost: a
// node delete would wait for the dead satellite) counting the survivor as the copy.
func TestDeleteOfADeadNodeProceedsOnceAcknowledgedLost(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, cluster := availableCluster(t, "dead", linstorv1.LinstorSatelliteConfigurationSpec{
		StoragePools: []linstorv1.StoragePool{thinPool}, DeletionPolicy: linstorv1.DeletionDelete,
		MaxConcurrentEvacuations: ptr.To[int32](1),
	}, "dead-a", "dead-b", "dead-c", "dead-d")
	g.Expect(emu.PlaceResource("pvc-dead", "dead-a", "thin", false)).To(Succeed())
	g.Expect(emu.PlaceResource("pvc-dead", "dead-b", "thin", false)).To(Succeed())
	t.Cleanup(func() { _ = emulatorClient(t).ResourceDefinitions.Delete(ctx, "pvc-dead") })
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) {
		c.Annotations = map[string]string{"linstor.io/confirm-removal": "2"}
	})).To(Succeed())

	g.Expect(emu.SetNodeOnline("dead-a", false)).To(Succeed())
	unselect(t, "dead-a")
	unselect(t, "dead-c")
	held := func(g Gomega) {
		degradedSays(g, ns, "dead-a", linstorv1.ReasonHoldsLastReplica, "dead-b is not connected to dead-a (Connecting)", "linstor.io/acknowledge-lost-nodes=dead-a")
		_, ok := emu.Node("dead-a")
		g.Expect(ok).To(BeTrue())
	}
	g.Eventually(satelliteGone(ns, "dead-c"), timeout, tick).Should(BeTrue(), func() string {
		sat := &linstorv1.LinstorSatellite{}
		_ = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dead-c"}, sat)
		return "the held removal of dead-a blocks dead-c: " + condition(sat.Status.Conditions, linstorv1.ConditionDegraded).Message
	})
	holds(g, held, "2s")

	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) {
		c.Annotations = map[string]string{"linstor.io/confirm-removal": "2", "linstor.io/acknowledge-lost-nodes": "dead-a"}
	})).To(Succeed())
	g.Eventually(satelliteGone(ns, "dead-a"), timeout, tick).Should(BeTrue())
	_, ok := emu.Node("dead-a")
	g.Expect(ok).To(BeFalse())
	g.Eventually(func(g Gomega) { g.Expect(satelliteEvent(g, ns, "NodeLost", "dead-a")).To(BeTrue()) }, timeout, tick).Should(Succeed(), "not removed with node lost")
	g.Expect(emu.Replicas("pvc-dead")).To(Equal(map[string]string{"dead-b": "UpToDate"}))
}

// Evacuate on a dead machine acknowledged lost: LINSTOR places a replacement that
// resyncs from the survivor, then the node goes (node lost).
func TestEvacuateOfADeadNodeProceedsOnceAcknowledgedLost(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, cluster := availableCluster(t, "deadev", linstorv1.LinstorSatelliteConfigurationSpec{
		StoragePools: []linstorv1.StoragePool{thinPool}, DeletionPolicy: linstorv1.DeletionEvacuate,
	}, "deadev-a", "deadev-b", "deadev-c")
	g.Expect(emu.PlaceResource("pvc-deadev", "deadev-a", "thin", false)).To(Succeed())
	g.Expect(emu.PlaceResource("pvc-deadev", "deadev-b", "thin", false)).To(Succeed())
	t.Cleanup(func() { _ = emulatorClient(t).ResourceDefinitions.Delete(ctx, "pvc-deadev") })

	g.Expect(emu.SetNodeOnline("deadev-a", false)).To(Succeed())
	unselect(t, "deadev-a")
	held := func(g Gomega) {
		degradedSays(g, ns, "deadev-a", linstorv1.ReasonHoldsLastReplica, "linstor.io/acknowledge-lost-nodes=deadev-a")
	}
	holds(g, held, "2s")

	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) {
		c.Annotations = map[string]string{"linstor.io/acknowledge-lost-nodes": "deadev-a"}
	})).To(Succeed())
	g.Eventually(satelliteGone(ns, "deadev-a"), timeout, tick).Should(BeTrue())
	_, ok := emu.Node("deadev-a")
	g.Expect(ok).To(BeFalse())
	g.Eventually(func(g Gomega) { g.Expect(satelliteEvent(g, ns, "NodeLost", "deadev-a")).To(BeTrue()) }, timeout, tick).Should(Succeed(), "not removed with node lost")
	replicas := emu.Replicas("pvc-deadev")
	g.Expect(replicas).To(HaveLen(2), "a replacement for the lost replica")
	g.Expect(replicas).To(HaveKeyWithValue("deadev-b", "UpToDate"))
}

// A stuck evacuation while a peer's satellite is away: that peer reports no state, which
// says nothing moves there. The operator keeps asking LINSTOR again, and the replica
// moves once there is room.
func TestStuckEvacuationRetriesWhileAPeerIsAway(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	// A thick FILE pool: no other test's node has one, so nothing else can take the replica.
	files := linstorv1.StoragePool{Name: "files", FilePool: &linstorv1.FilePool{}}
	ns, _ := availableCluster(t, "away", linstorv1.LinstorSatelliteConfigurationSpec{
		StoragePools: []linstorv1.StoragePool{files}, DeletionPolicy: linstorv1.DeletionEvacuate,
	}, "away-a", "away-b")
	g.Expect(emu.PlaceResource("pvc-away", "away-a", "files", false)).To(Succeed())
	g.Expect(emu.PlaceResource("pvc-away", "away-b", "files", false)).To(Succeed())
	t.Cleanup(func() { _ = emulatorClient(t).ResourceDefinitions.Delete(ctx, "pvc-away") })
	g.Expect(emu.SetNodeOnline("away-b", false)).To(Succeed())
	t.Cleanup(func() { _ = emu.SetNodeOnline("away-b", true) })

	unselect(t, "away-a")
	g.Eventually(func(g Gomega) {
		n, _ := emu.Node("away-a")
		g.Expect(linstorstate.HasFlag(n.Flags, "EVACUATE")).To(BeTrue())
	}, timeout, tick).Should(Succeed())

	makeNode(t, "away-c", "10.30.0.9", map[string]string{"suite": "away"})
	g.Eventually(func() bool { return emu.ResourcePlaced("pvc-away", "away-c") }, timeout, tick).Should(BeTrue(), func() string {
		sat := &linstorv1.LinstorSatellite{}
		_ = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "away-a"}, sat)
		return "the evacuation was not retried: " + condition(sat.Status.Conditions, linstorv1.ConditionDegraded).Message
	})
	g.Eventually(satelliteGone(ns, "away-a"), timeout, tick).Should(BeTrue())
}
