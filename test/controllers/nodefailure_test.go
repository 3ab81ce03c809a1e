package controllers

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// failNode makes a node fail as a dead machine does: Kubernetes reports it NotReady
// since ago, and LINSTOR loses its satellite and its DRBD.
func failNode(g Gomega, name string, ago time.Duration) {
	setNodeReadySince(g, name, corev1.ConditionUnknown, time.Now().Add(-ago))
	g.Expect(emu.SetNodeOnline(name, false)).To(Succeed())
}

// Node failure: with the default policy (Off) nothing moves, and LINSTOR's own
// auto-evict is off; with policy Evict a node failed for evictAfter is evicted, but not
// while it may hold the last good copy of a resource, and LINSTOR re-places its
// replicas; back, it is restored.
func TestNodeFailurePolicy(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, cluster := availableCluster(t, "nf", linstorv1.LinstorSatelliteConfigurationSpec{StoragePools: []linstorv1.StoragePool{thinPool}}, "nf-a", "nf-b", "nf-c")
	g.Expect(emu.PlaceResource("pvc-nf", "nf-a", "thin", false)).To(Succeed())
	g.Expect(emu.PlaceResource("pvc-nf", "nf-b", "thin", false)).To(Succeed())
	g.Expect(emu.PlaceResource("pvc-nf-only", "nf-a", "thin", false)).To(Succeed())
	t.Cleanup(func() {
		_ = emulatorClient(t).ResourceDefinitions.Delete(ctx, "pvc-nf")
		_ = emulatorClient(t).ResourceDefinitions.Delete(ctx, "pvc-nf-only")
	})
	g.Eventually(func(g Gomega) {
		props, err := emulatorClient(t).Controller.GetProps(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(props).To(HaveKeyWithValue("DrbdOptions/AutoEvictAllowEviction", "false"), "LINSTOR's own auto-evict must be off")
	}, timeout, tick).Should(Succeed())

	failNode(g, "nf-a", 2*time.Hour)
	t.Cleanup(func() { _ = emu.SetNodeOnline("nf-a", true) })
	waits := func(why string) func(g Gomega) {
		return func(g Gomega) {
			n, _ := emu.Node("nf-a")
			g.Expect(n.Flags).NotTo(ContainElement("EVICTED"))
			a := condition(get(g, ns, "nf-a", &linstorv1.LinstorSatellite{}).Status.Conditions, linstorv1.ConditionAvailable)
			g.Expect(a.Message).To(ContainSubstring(why))
		}
	}
	// Off (the default): the replicas wait for the node.
	g.Eventually(waits("policy is Off"), timeout, tick).Should(Succeed())
	g.Consistently(waits("policy is Off"), "3s", tick).Should(Succeed())

	// Evict: due (NotReady for 2h > 5m), but nf-a may hold pvc-nf-only's only copy.
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) {
		c.Spec.NodeFailure = &linstorv1.NodeFailureSpec{Policy: linstorv1.NodeFailureEvict, EvictAfter: &metav1.Duration{Duration: 5 * time.Minute}}
	})).To(Succeed())
	g.Eventually(waits("last UpToDate copy of pvc-nf-only"), timeout, tick).Should(Succeed())
	g.Consistently(waits("last UpToDate copy of pvc-nf-only"), "3s", tick).Should(Succeed())

	// That resource is gone: nf-a is evicted, and LINSTOR places pvc-nf's replica on
	// another node.
	g.Expect(emulatorClient(t).ResourceDefinitions.Delete(ctx, "pvc-nf-only")).To(Succeed())
	g.Eventually(func(g Gomega) {
		n, _ := emu.Node("nf-a")
		g.Expect(n.Flags).To(ContainElement("EVICTED"))
		// A new replica elsewhere (LINSTOR's autoplacer picks it: nf-c, or a node another
		// test of this suite left behind).
		var elsewhere []string
		for n := range emu.Replicas("pvc-nf") {
			if n != "nf-a" && n != "nf-b" {
				elsewhere = append(elsewhere, n)
			}
		}
		g.Expect(elsewhere).To(HaveLen(1), "LINSTOR placed pvc-nf's replica of the evicted node elsewhere")
		g.Expect(satelliteEvent(g, ns, "NodeEvicted", "nf-a")).To(BeTrue())
	}, timeout, tick).Should(Succeed())
	g.Expect(newestOn(g, "pvc-nf", "nf-b")).To(BeTrue(), "the surviving replica must keep the data")

	// Back: Kubernetes reports it Ready and its satellite pod runs; it is restored.
	setNodeReady(g, "nf-a", corev1.ConditionTrue)
	runSatellitePod(t, g, ns, "nf-a")
	g.Expect(emu.SetNodeOnline("nf-a", true)).To(Succeed())
	g.Eventually(func(g Gomega) {
		n, _ := emu.Node("nf-a")
		g.Expect(n.Flags).NotTo(ContainElement("EVICTED"))
	}, timeout, tick).Should(Succeed())
}
