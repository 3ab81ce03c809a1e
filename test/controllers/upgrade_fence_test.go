package controllers

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/linstor-operator/linstor-operator/pkg/linstorstate"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// From the pre-upgrade backup until the satellites run the new version, a rollback
// restores that backup and would silently undo what the operator wrote to LINSTOR
// meanwhile (an evacuated replica LINSTOR no longer knows, an orphaned volume). So a
// node unselected in the Satellites phase stays in LINSTOR, unevacuated, and its
// LinstorSatellite says why; node and pool properties and node connections wait too.
// Once the upgrade is past Satellites, everything that waited is done as before.
func TestLinstorWritesWaitForTheUpgradeFence(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	// A LINSTOR database for the pre-upgrade backup to copy.
	g.Expect(env.Client.Create(ctx, linstorTable("nodes", "Nodes"))).To(Succeed())
	t.Cleanup(func() { dropTables(ctx) })
	g.Eventually(func() error {
		return env.Client.Create(ctx, row("Nodes", "fence-a", map[string]any{"node_name": "FENCE-A"}))
	}, timeout, tick).Should(Succeed())
	ns, cluster := preflightCluster(t, "fence", "fence-a", "fence-b", "fence-c")
	g.Expect(retryUpdate(ctx, ns, "cfg", func(c *linstorv1.LinstorSatelliteConfiguration) {
		c.Spec.DeletionPolicy = linstorv1.DeletionEvacuate
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, ns, "fence-c", &linstorv1.LinstorSatellite{}).Spec.DeletionPolicy).To(Equal(linstorv1.DeletionEvacuate))
	}, timeout, tick).Should(Succeed())
	// A volume with replicas on fence-a and fence-c: evacuating fence-c moves one to fence-b.
	g.Expect(emu.PlaceResource("pvc-fence", "fence-a", "thin", false)).To(Succeed())
	g.Expect(emu.PlaceResource("pvc-fence", "fence-c", "thin", false)).To(Succeed())
	t.Cleanup(func() { _ = emulatorClient(t).ResourceDefinitions.Delete(ctx, "pvc-fence") })

	// fence-b's satellite is slow to move: it still runs the old version once the
	// controller runs the new one, which holds the upgrade in the Satellites phase.
	g.Expect(emu.SetSatelliteVersion("fence-b", preflightFrom)).To(Succeed())
	t.Cleanup(func() { _ = emu.SetSatelliteVersion("fence-b", "") })
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) { c.Spec.Version = preflightTo })).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		if upgradePhase(c) == linstorv1.UpgradeController && emu.Version() != preflightTo {
			emu.SetVersion(preflightTo) // the new controller answers (its pod is played by the emulator)
		}
		g.Expect(upgradePhase(c)).To(Equal(linstorv1.UpgradeSatellites), "%+v", c.Status.Upgrade)
		g.Expect(c.Status.Upgrade.Message).To(ContainSubstring("fence-b VERSION_MISMATCH"))
	}, 2*timeout, tick).Should(Succeed())
	logged := len(emu.Requests())

	// In the Satellites phase: fence-c is unselected, a node and a pool property are
	// configured, and a node connection is created.
	unselect(t, "fence-c")
	g.Expect(retryUpdate(ctx, ns, "cfg", func(c *linstorv1.LinstorSatelliteConfiguration) {
		pool := thinPool
		pool.Properties = []linstorv1.Property{{Name: "Aux/fence-pool", Value: "held"}}
		c.Spec.StoragePools = []linstorv1.StoragePool{pool}
		c.Spec.Properties = []linstorv1.NodeProperty{{Name: "Aux/fence-node", Value: "held"}}
	})).To(Succeed())
	lnc := &linstorv1.LinstorNodeConnection{
		ObjectMeta: metav1.ObjectMeta{Name: "fence", Namespace: ns},
		Spec:       linstorv1.LinstorNodeConnectionSpec{Properties: []linstorv1.Property{{Name: "DrbdOptions/Net/protocol", Value: "A"}}},
	}
	g.Expect(env.Client.Create(ctx, lnc)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(ctx, lnc) })

	fenceMessage := "the upgrade of LINSTOR " + preflightFrom + " -> " + preflightTo + " is in phase Satellites"
	fenced := func(g Gomega, conds []metav1.Condition, typ string, what ...string) {
		c := condition(conds, typ)
		g.Expect(c.Reason).To(Equal(linstorv1.ReasonLinstorWritesFenced), "%+v", conds)
		g.Expect(c.Message).To(ContainSubstring(fenceMessage))
		for _, w := range what {
			g.Expect(c.Message).To(ContainSubstring(w))
		}
	}
	g.Eventually(func(g Gomega) {
		sat := get(g, ns, "fence-c", &linstorv1.LinstorSatellite{})
		g.Expect(sat.DeletionTimestamp).NotTo(BeNil(), "fence-c's LinstorSatellite is not being deleted")
		fenced(g, sat.Status.Conditions, linstorv1.ConditionProgressing, "evacuat")
		a := get(g, ns, "fence-a", &linstorv1.LinstorSatellite{})
		g.Expect(a.Spec.Properties).NotTo(BeEmpty())
		fenced(g, a.Status.Conditions, linstorv1.ConditionProgressing, "node properties", "pool thin")
		fenced(g, get(g, ns, "fence", &linstorv1.LinstorNodeConnection{}).Status.Conditions, linstorv1.ConditionConfigured)
	}, timeout, tick).Should(Succeed())

	nothingWritten := func(g Gomega) {
		g.Expect(upgradePhase(getCluster(g, cluster))).To(Equal(linstorv1.UpgradeSatellites))
		c, ok := emu.Node("fence-c")
		g.Expect(ok).To(BeTrue(), "fence-c was deleted from LINSTOR during the upgrade")
		g.Expect(linstorstate.HasFlag(c.Flags, "EVACUATE")).To(BeFalse(), "fence-c was evacuated during the upgrade")
		g.Expect(emu.Replicas("pvc-fence")).To(SatisfyAll(HaveLen(2), HaveKey("fence-a"), HaveKey("fence-c")))
		a, _ := emu.Node("fence-a")
		g.Expect(a.Props).NotTo(HaveKey("Aux/fence-node"))
		g.Expect(connectionProps(g, t, "fence-a", "fence-b")).NotTo(HaveKey("DrbdOptions/Net/protocol"))
		for _, r := range emu.Requests()[logged:] {
			if r.Method != http.MethodGet && strings.Contains(r.Path, "fence-") {
				g.Expect(r).To(BeNil(), "the operator wrote to LINSTOR during the upgrade")
			}
		}
	}
	g.Consistently(nothingWritten, "3s", tick).Should(Succeed())

	// fence-b's satellite moves: the upgrade leaves Satellites, and what waited is done.
	g.Expect(emu.SetSatelliteVersion("fence-b", "")).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(upgradePhase(getCluster(g, cluster))).To(BeElementOf(linstorv1.UpgradeVerify, linstorv1.UpgradeSucceeded))
		g.Expect(satelliteGone(ns, "fence-c")()).To(BeTrue(), "fence-c's LinstorSatellite stays")
		_, ok := emu.Node("fence-c")
		g.Expect(ok).To(BeFalse(), "fence-c is still in LINSTOR")
		g.Expect(emu.Replicas("pvc-fence")).To(SatisfyAll(HaveLen(2), HaveKey("fence-a"), HaveKey("fence-b")))
		a, _ := emu.Node("fence-a")
		g.Expect(a.Props).To(HaveKeyWithValue("Aux/fence-node", "held"))
		pools, err := emulatorClient(t).Nodes.GetStoragePools(ctx, "fence-a")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pools).To(ContainElement(HaveField("Props", HaveKeyWithValue("Aux/fence-pool", "held"))))
		g.Expect(connectionProps(g, t, "fence-a", "fence-b")).To(HaveKeyWithValue("DrbdOptions/Net/protocol", "A"))
		sat := get(g, ns, "fence-a", &linstorv1.LinstorSatellite{})
		g.Expect(condition(sat.Status.Conditions, linstorv1.ConditionProgressing).Reason).NotTo(Equal(linstorv1.ReasonLinstorWritesFenced))
		g.Expect(condition(get(g, ns, "fence", &linstorv1.LinstorNodeConnection{}).Status.Conditions, linstorv1.ConditionConfigured).Status).To(Equal(metav1.ConditionTrue))
	}, 2*timeout, tick).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(upgradePhase(getCluster(g, cluster))).To(Equal(linstorv1.UpgradeSucceeded))
	}, 2*timeout, tick).Should(Succeed())
}
