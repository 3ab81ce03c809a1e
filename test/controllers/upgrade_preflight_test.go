package controllers

import (
	"context"
	"net/http"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/controllers/operatorcondition"
	"github.com/linstor-operator/linstor-operator/internal/emulator"
)

// The LINSTOR upgrade's Preflight on a real API server, with the emulator as LINSTOR:
// it holds no operator upgrade (nothing has changed yet), pinning spec.version back
// cancels it, and a node acknowledged as gone for good no longer holds it. A succeeded
// upgrade stays done while status.version still names the old version.

const (
	preflightFrom = "1.33.2"
	preflightTo   = "1.33.3"
)

// preflightCluster runs a cluster of these nodes at preflightFrom, each with a thin
// pool, and returns once it is Available. LINSTOR nodes other tests left behind are
// lost first: Preflight judges every node LINSTOR has.
func preflightCluster(t *testing.T, prefix string, nodes ...string) (string, *linstorv1.LinstorCluster) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	lc := emulatorClient(t)
	left, err := lc.Nodes.GetAll(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	for _, n := range left {
		g.Expect(emu.SetNodeOnline(n.Name, false)).To(Succeed())
		g.Expect(lc.Nodes.Lost(ctx, n.Name)).To(Succeed())
	}
	was := emu.Version()
	emu.SetVersion(preflightFrom)
	t.Cleanup(func() { emu.SetVersion(was) })

	ns := env.Namespace(t)
	for i, n := range nodes {
		makeNode(t, n, "10.40.0."+string(rune('1'+i)), map[string]string{"suite": prefix})
	}
	g.Expect(env.Client.Create(ctx, &linstorv1.LinstorSatelliteConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: ns},
		Spec: linstorv1.LinstorSatelliteConfigurationSpec{StoragePools: []linstorv1.StoragePool{thinPool}}})).To(Succeed())
	cluster := makeCluster(t, ns, linstorv1.LinstorClusterSpec{NodeSelector: map[string]string{"suite": prefix}, Version: preflightFrom})
	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		g.Expect(c.Status.Version).To(Equal(preflightFrom))
		g.Expect(condition(c.Status.Conditions, linstorv1.ConditionAvailable).Status).To(Equal(metav1.ConditionTrue), "%+v", c.Status)
		for _, n := range nodes {
			sat := get(g, ns, n, &linstorv1.LinstorSatellite{})
			g.Expect(sat.Status.StoragePools).To(HaveLen(1), "%s: %+v", n, sat.Status)
		}
	}, timeout, tick).Should(Succeed())
	return ns, cluster
}

// eventOf finds an event of the LinstorCluster with this reason whose message says every part.
func eventOf(g Gomega, ns, reason string, parts ...string) *corev1.Event {
	var events corev1.EventList
	g.Expect(env.Client.List(context.Background(), &events, client.InNamespace(ns))).To(Succeed())
next:
	for i, e := range events.Items {
		if e.InvolvedObject.Kind != "LinstorCluster" || e.Reason != reason {
			continue
		}
		for _, p := range parts {
			if !strings.Contains(e.Message, p) {
				continue next
			}
		}
		return &events.Items[i]
	}
	return nil
}

func upgradePhase(c *linstorv1.LinstorCluster) linstorv1.UpgradePhase {
	if c.Status.Upgrade == nil {
		return ""
	}
	return c.Status.Upgrade.Phase
}

func TestPreflightHoldsNoOperatorUpgradeAndPinningBackCancelsIt(t *testing.T) {
	g := NewWithT(t)
	ns, cluster := preflightCluster(t, "pfc", "pfc-a", "pfc-b")

	// A satellite OFFLINE: Preflight waits. Nothing has changed, so it does not keep OLM
	// from installing another operator release (which may be the fix).
	g.Expect(emu.SetNodeOnline("pfc-b", false)).To(Succeed())
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) { c.Spec.Version = preflightTo })).To(Succeed())
	preflightWaits := func(g Gomega) {
		c := getCluster(g, cluster)
		g.Expect(upgradePhase(c)).To(Equal(linstorv1.UpgradePreflight), "%+v", c.Status.Upgrade)
		g.Expect(c.Status.Upgrade.Message).To(ContainSubstring("pfc-b is OFFLINE"))
		p := condition(c.Status.Conditions, linstorv1.ConditionProgressing)
		g.Expect(p.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(p.Reason).To(Equal(linstorv1.ReasonUpgradeInProgress))
		u := condition(c.Status.Conditions, linstorv1.ConditionUpgradeable)
		g.Expect(u.Status).To(Equal(metav1.ConditionTrue), u.Message)
		g.Expect(u.Message).To(ContainSubstring("Preflight"))
		status, _, msg := operatorcondition.Aggregate([]linstorv1.LinstorCluster{*c})
		g.Expect(status).To(Equal(metav1.ConditionTrue), msg)
	}
	g.Eventually(preflightWaits, timeout, tick).Should(Succeed())
	g.Consistently(preflightWaits, "2s", tick).Should(Succeed())

	// Pinning spec.version back to the running version cancels it: nothing changed.
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) { c.Spec.Version = preflightFrom })).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		g.Expect(c.Status.Upgrade).To(BeNil())
		g.Expect(c.Status.Deployed).To(Equal(&linstorv1.DeployedVersions{Controller: preflightFrom, Satellites: preflightFrom}))
		g.Expect(condition(c.Status.Conditions, linstorv1.ConditionProgressing).Reason).NotTo(Equal(linstorv1.ReasonUpgradeInProgress))
		g.Expect(eventOf(g, ns, "UpgradeCancelled", preflightFrom+" -> "+preflightTo, "spec.version")).NotTo(BeNil(), "no UpgradeCancelled event")
	}, timeout, tick).Should(Succeed())
	var backups linstorv1.LinstorBackupList
	g.Expect(env.Client.List(context.Background(), &backups, client.InNamespace(ns))).To(Succeed())
	g.Expect(backups.Items).To(BeEmpty(), "a cancelled Preflight took a backup")
}

func TestAcknowledgedLostNodeLetsTheUpgradeProceed(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	// A LINSTOR database for the pre-upgrade backup to copy.
	g.Expect(env.Client.Create(ctx, linstorTable("nodes", "Nodes"))).To(Succeed())
	t.Cleanup(func() { dropTables(ctx) })
	g.Eventually(func() error {
		return env.Client.Create(ctx, row("Nodes", "lost-a", map[string]any{"node_name": "LOST-A"}))
	}, timeout, tick).Should(Succeed())
	ns, cluster := preflightCluster(t, "lost", "lost-a", "lost-b")
	// A volume with a replica on each node.
	g.Expect(emu.PlaceResource("pvc-lost", "lost-a", "thin", false)).To(Succeed())
	g.Expect(emu.PlaceResource("pvc-lost", "lost-b", "thin", false)).To(Succeed())
	t.Cleanup(func() { _ = emulatorClient(t).ResourceDefinitions.Delete(ctx, "pvc-lost") })

	// lost-b is gone for good: its machine is dead (LINSTOR: OFFLINE) and its Kubernetes
	// Node deleted. Its satellite goes with Retain, so LINSTOR keeps the node.
	g.Expect(emu.SetNodeOnline("lost-b", false)).To(Succeed())
	g.Expect(env.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "lost-b"}})).To(Succeed())
	g.Eventually(satelliteGone(ns, "lost-b"), timeout, tick).Should(BeTrue())
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) { c.Spec.Version = preflightTo })).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		g.Expect(upgradePhase(c)).To(Equal(linstorv1.UpgradePreflight), "%+v", c.Status.Upgrade)
		g.Expect(c.Status.Upgrade.Message).To(ContainSubstring("satellite lost-b is OFFLINE"))
		g.Expect(c.Status.Upgrade.Message).To(ContainSubstring("not connected to lost-b"))
	}, timeout, tick).Should(Succeed())

	// An acknowledgement naming a node that is ONLINE is not honoured, and says why.
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) {
		c.Annotations = map[string]string{"linstor.io/acknowledge-lost-nodes": "lost-a"}
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		g.Expect(c.Status.LostNodes).To(BeEmpty())
		d := condition(c.Status.Conditions, linstorv1.ConditionDegraded)
		g.Expect(d.Message).To(ContainSubstring("lost-a"))
		g.Expect(d.Message).To(ContainSubstring("ONLINE"))
		g.Expect(eventOf(g, ns, "LostNodeNotAcknowledged", "lost-a", "ONLINE")).NotTo(BeNil(), "no LostNodeNotAcknowledged event")
	}, timeout, tick).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(upgradePhase(getCluster(g, cluster))).To(Equal(linstorv1.UpgradePreflight))
	}, "2s", tick).Should(Succeed())

	// Naming the dead node: recorded in status and in an Event, and the upgrade proceeds
	// without it and its replicas: Preflight, the Satellites phase (it has no satellite
	// to move) and Verify.
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) {
		c.Annotations = map[string]string{"linstor.io/acknowledge-lost-nodes": "lost-b"}
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		g.Expect(c.Status.LostNodes).To(HaveLen(1))
		g.Expect(c.Status.LostNodes[0].Name).To(Equal("lost-b"))
		g.Expect(c.Status.LostNodes[0].AcknowledgedAt).NotTo(BeNil())
		g.Expect(c.Status.LostNodes[0].Message).To(ContainSubstring("OFFLINE"))
		g.Expect(eventOf(g, ns, "LostNodeAcknowledged", "lost-b")).NotTo(BeNil(), "no LostNodeAcknowledged event")
		g.Expect(eventOf(g, ns, "UpgradeBackup", "Preflight passed")).NotTo(BeNil(), "no UpgradeBackup event")
	}, timeout, tick).Should(Succeed())
	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		if upgradePhase(c) == linstorv1.UpgradeController {
			emu.SetVersion(preflightTo) // the new controller answers (its pod is played by the emulator)
		}
		g.Expect(upgradePhase(c)).To(Equal(linstorv1.UpgradeSucceeded), "%+v", c.Status.Upgrade)
	}, 2*timeout, tick).Should(Succeed())
	g.Expect(eventOf(g, ns, "UpgradeVerify", "All satellites ONLINE")).NotTo(BeNil(), "no UpgradeVerify event")

	// The annotation no longer names it: the entry goes.
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) {
		delete(c.Annotations, "linstor.io/acknowledge-lost-nodes")
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(getCluster(g, cluster).Status.LostNodes).To(BeEmpty())
	}, timeout, tick).Should(Succeed())
}

// status.version is the observer's last reading of LINSTOR. Here its cycles fail while
// the new controller settles (the storage pool view answers 500; the upgrade's own reads
// do not use it), so it still says preflightFrom when the upgrade Succeeded. That
// reading must not start the upgrade again: a new Preflight from preflightFrom deploys
// the old controller on the migrated database (and then waits for ever for LINSTOR to
// report the old version). Without the fault the same happens whenever Controller,
// Satellites and Verify pass within one observer cycle.
func TestSucceededUpgradeIsNotStartedAgainWhileStatusVersionLags(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	// A LINSTOR database for the pre-upgrade backup to copy.
	g.Expect(env.Client.Create(ctx, linstorTable("nodes", "Nodes"))).To(Succeed())
	t.Cleanup(func() { dropTables(ctx) })
	g.Eventually(func() error {
		return env.Client.Create(ctx, row("Nodes", "lag-a", map[string]any{"node_name": "LAG-A"}))
	}, timeout, tick).Should(Succeed())
	ns, cluster := preflightCluster(t, "lag", "lag-a", "lag-b")

	const observerRead = "GET /v1/view/storage-pools"
	t.Cleanup(func() { emu.InjectFault(observerRead, emulator.Fault{}) })
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) { c.Spec.Version = preflightTo })).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		if upgradePhase(c) == linstorv1.UpgradeController && emu.Version() != preflightTo {
			// Faulted first: no cycle that reads the new version completes.
			emu.InjectFault(observerRead, emulator.Fault{Status: http.StatusInternalServerError})
			emu.SetVersion(preflightTo) // the new controller answers (its pod is played by the emulator)
		}
		g.Expect(upgradePhase(c)).To(Equal(linstorv1.UpgradeSucceeded), "%+v", c.Status.Upgrade)
	}, 2*timeout, tick).Should(Succeed())

	done := func(version string) func(g Gomega) {
		return func(g Gomega) {
			c := getCluster(g, cluster)
			g.Expect(c.Status.Version).To(Equal(version))
			g.Expect(upgradePhase(c)).To(Equal(linstorv1.UpgradeSucceeded), "%+v", c.Status.Upgrade)
			g.Expect(c.Status.Deployed).To(Equal(&linstorv1.DeployedVersions{Controller: preflightTo, Satellites: preflightTo}))
		}
	}
	g.Consistently(done(preflightFrom), "3s", tick).Should(Succeed())
	// The observer reads LINSTOR again: status.version catches up, nothing else moves.
	emu.InjectFault(observerRead, emulator.Fault{})
	g.Eventually(done(preflightTo), timeout, tick).Should(Succeed())
	g.Consistently(done(preflightTo), "2s", tick).Should(Succeed())
	var events corev1.EventList
	g.Expect(env.Client.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
	started := 0
	for _, e := range events.Items {
		if e.Reason == "UpgradeStarted" {
			started++
		}
	}
	g.Expect(started).To(Equal(1), "the upgrade started again")
}
