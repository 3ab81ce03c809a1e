package controllers

import (
	"context"
	"testing"

	"github.com/LINBIT/golinstor/devicelayerkind"
	. "github.com/onsi/gomega"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/linstor"
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

func newestOn(g Gomega, rd, node string) bool {
	ok, err := emu.HasNewestData(rd, node)
	g.Expect(err).NotTo(HaveOccurred())
	return ok
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
		sat := get(g, ns, "part-a", &linstorv1.LinstorSatellite{})
		d := condition(sat.Status.Conditions, linstorv1.ConditionDegraded)
		g.Expect(d.Reason).To(Equal(linstorv1.ReasonHoldsLastReplica), d.Message)
		g.Expect(d.Message).To(ContainSubstring("only up-to-date copy of pvc-part"))
		g.Expect(d.Message).To(ContainSubstring("part-b is not connected to part-a (Connecting)"))
	}
	g.Eventually(held, timeout, tick).Should(Succeed())
	g.Consistently(held, "3s", tick).Should(Succeed())
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
		sat := get(g, ns, "evpart-a", &linstorv1.LinstorSatellite{})
		d := condition(sat.Status.Conditions, linstorv1.ConditionDegraded)
		g.Expect(d.Reason).To(Equal(linstorv1.ReasonHoldsLastReplica), d.Message)
		g.Expect(d.Message).To(ContainSubstring("not evacuating node evpart-a yet"))
		g.Expect(d.Message).To(ContainSubstring("evpart-b reports UpToDate but is not connected to evpart-a (Connecting)"))
		g.Expect(emu.ResourcePlaced("pvc-evpart", "evpart-a")).To(BeTrue(), "LINSTOR dropped the replica with the newest data")
	}
	g.Eventually(held, timeout, tick).Should(Succeed())
	g.Consistently(held, "3s", tick).Should(Succeed())
	n, _ := emu.Node("evpart-a")
	g.Expect(linstor.HasFlag(n.Flags, "EVACUATE")).To(BeFalse(), "LINSTOR was asked to evacuate")

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
