package controllers

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// Pinning spec.version back while the upgrade's backup is being copied cancels the
// upgrade only once the copy has ended: until then the LINSTOR controller stays stopped
// and the CSI controller fenced, as in Backup. A controller started in the middle of
// the copy would tear it.
func TestUpgradeCancelledDuringBackupWaitsForTheCopy(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(env.Client.Create(ctx, linstorTable("nodes", "Nodes"))).To(Succeed())
	t.Cleanup(func() { dropTables(ctx) })
	g.Eventually(func() error {
		return env.Client.Create(ctx, row("Nodes", "ucb-a", map[string]any{"node_name": "UCB-A"}))
	}, timeout, tick).Should(Succeed())
	ns, cluster := preflightCluster(t, "ucb", "ucb-a")

	// The pre-upgrade backup's copy is held while it stores its first chunk.
	storing, release := holdChunkCreates(t, ns, func(secret string) bool { return strings.HasPrefix(secret, cluster.Name+"-before-") })
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) { c.Spec.Version = preflightTo })).To(Succeed())
	select {
	case <-storing:
	case <-time.After(2 * timeout):
		t.Fatalf("the pre-upgrade backup never stored its first chunk: %+v", getCluster(g, cluster).Status.Upgrade)
	}
	backup := getCluster(g, cluster).Status.Upgrade.BackupName
	g.Expect(backup).NotTo(BeEmpty())

	replicas := func(g Gomega, name string) int32 {
		var d appsv1.Deployment
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &d)).To(Succeed())
		return *d.Spec.Replicas
	}
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) { c.Spec.Version = preflightFrom })).To(Succeed())
	cancelling := func(g Gomega) {
		c := getCluster(g, cluster)
		g.Expect(upgradePhase(c)).To(Equal(linstorv1.UpgradeBackup), "%+v", c.Status.Upgrade)
		g.Expect(c.Status.Upgrade.Message).To(HavePrefix("Cancelling the upgrade"))
		g.Expect(c.Status.Upgrade.Message).To(ContainSubstring(backup))
		g.Expect(replicas(g, names.ControllerName)).To(BeZero(), "the LINSTOR controller started while the backup copies")
		g.Expect(replicas(g, names.CSIControllerName)).To(BeZero(), "CSI is not fenced while the backup copies")
		g.Expect(get(g, ns, backup, &linstorv1.LinstorBackup{}).Status.Phase).To(Equal(linstorv1.BackupRunning))
	}
	g.Eventually(cancelling, timeout, tick).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(eventOf(g, ns, "UpgradeCancelling", preflightFrom+" -> "+preflightTo, backup)).NotTo(BeNil(), "no UpgradeCancelling event")
	}, timeout, tick).Should(Succeed())
	g.Consistently(cancelling, "2s", tick).Should(Succeed())

	// The copy ends: the upgrade is cancelled, the controller and CSI run again.
	release()
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, ns, backup, &linstorv1.LinstorBackup{}).Status.Phase).To(Equal(linstorv1.BackupCompleted))
		c := getCluster(g, cluster)
		g.Expect(c.Status.Upgrade).To(BeNil())
		g.Expect(c.Status.Deployed).To(Equal(&linstorv1.DeployedVersions{Controller: preflightFrom, Satellites: preflightFrom}))
		g.Expect(eventOf(g, ns, "UpgradeCancelled", preflightFrom+" -> "+preflightTo, "Backup")).NotTo(BeNil(), "no UpgradeCancelled event")
		g.Expect(replicas(g, names.ControllerName)).To(Equal(int32(1)))
		g.Expect(replicas(g, names.CSIControllerName)).NotTo(BeZero())
	}, timeout, tick).Should(Succeed())
}
