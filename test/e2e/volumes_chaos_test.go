package e2e

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/internal/sim"
	"github.com/linstor-operator/linstor-operator/pkg/names"
	"github.com/linstor-operator/linstor-operator/test/envtest"
)

// This file runs last (file order). Chaos on the kwok cluster: a cut replication link,
// writes on both sides of it (split brain), a failed disk, a lost quorum. Each fault must be seen
// within a few observer cycles (this suite's interval is 2 s) in the LinstorCluster's
// status and the claim's Events; nothing is discarded without a confirmation; no
// replica's data is lost; and everything recovers.

// claimOn binds a claim to a PersistentVolume of the CSI driver for resource rsc, through
// kube-controller-manager's persistent volume binder.
func claimOn(t *testing.T, g Gomega, rsc string) *corev1.PersistentVolumeClaim {
	size := resource.MustParse("1Gi")
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: rsc}, Spec: corev1.PersistentVolumeSpec{
		Capacity: corev1.ResourceList{corev1.ResourceStorage: size}, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: names.CSIDriverName, VolumeHandle: rsc}},
		ClaimRef:               &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "default", Name: "data-" + rsc},
	}}
	g.Expect(env.Client.Create(ctx, pv)).To(Succeed())
	empty := ""
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-" + rsc, Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: &empty,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}}, VolumeName: rsc}}
	g.Expect(env.Client.Create(ctx, pvc)).To(Succeed())
	t.Cleanup(func() {
		_ = env.Client.Delete(ctx, pvc)
		_ = env.Client.Delete(ctx, pv)
	})
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(pvc), pvc)).To(Succeed())
		g.Expect(pvc.Status.Phase).To(Equal(corev1.ClaimBound))
	}, timeout, tick).Should(Succeed())
	return pvc
}

// told: the claim has an Event with reason that names rsc.
func told(g Gomega, pvc *corev1.PersistentVolumeClaim, reason, rsc string) {
	var events corev1.EventList
	g.Expect(env.Client.List(ctx, &events, client.InNamespace(pvc.Namespace))).To(Succeed())
	var seen []string
	for _, e := range events.Items {
		if e.InvolvedObject.Name == pvc.Name && e.InvolvedObject.Kind == "PersistentVolumeClaim" {
			seen = append(seen, e.Reason)
			if e.Reason == reason && strings.Contains(e.Message, rsc) {
				return
			}
		}
	}
	g.Expect(seen).To(ContainElement(reason))
}

// stateOf is rsc's state in status.replicas.worst ("Healthy" when not listed).
func stateOf(g Gomega, rsc string) (string, *linstorv1.ResourceHealth) {
	c := cluster(g)
	g.Expect(c.Status.Replicas).NotTo(BeNil())
	for _, h := range c.Status.Replicas.Worst {
		if h.Name == rsc {
			return h.State, &h
		}
	}
	return "Healthy", nil
}

// detect measures how long after the fault the status shows rsc in state.
func detect(t *testing.T, g Gomega, fault time.Time, rsc, state string) time.Duration {
	g.Eventually(func(g Gomega) {
		s, _ := stateOf(g, rsc)
		g.Expect(s).To(Equal(state))
	}, timeout, 100*time.Millisecond).Should(Succeed())
	d := time.Since(fault)
	t.Logf("%s %s shown %.1fs after the fault", rsc, state, d.Seconds())
	return d
}

func TestChaosEveryFaultIsSeenNothingIsLost(t *testing.T) {
	g := NewWithT(t)
	freshLinstor(t)
	ensureNodes(g)
	g.Expect(sim.ApplySamples(ctx, env.Client, envtest.RepoRoot(), namespace)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := cluster(g)
		g.Expect(conditionStatus(c.Status.Conditions, linstorv1.ConditionAvailable)).To(Equal(metav1.ConditionTrue), "%+v", c.Status.Conditions)
		poolsCreated(g)
	}, upgradeTimeout, tick).Should(Succeed())
	em := env.Emulator
	for _, p := range [][3]string{{"pvc-chaos-link", "node-0", "node-1"}, {"pvc-chaos-sb", "node-1", "node-2"}, {"pvc-chaos-disk", "node-2", "node-3"}} {
		g.Expect(em.PlaceResource(p[0], p[1], samplePool, false)).To(Succeed())
		g.Expect(em.PlaceResource(p[0], p[2], samplePool, false)).To(Succeed())
	}
	link, sb, disk := claimOn(t, g, "pvc-chaos-link"), claimOn(t, g, "pvc-chaos-sb"), claimOn(t, g, "pvc-chaos-disk")
	g.Eventually(func(g Gomega) {
		c := cluster(g)
		g.Expect(c.Status.Replicas).NotTo(BeNil())
		g.Expect(c.Status.Replicas.Healthy).To(Equal(int32(3)), "%+v", c.Status.Replicas)
		g.Expect(conditionStatus(c.Status.Conditions, linstorv1.ConditionRedundant)).To(Equal(metav1.ConditionTrue))
	}, timeout, tick).Should(Succeed())

	// 1. A cut link while node-0 writes: the replicas cannot replicate; the volume is
	// not redundant until the link is back and node-1 has resynced.
	g.Expect(em.SetInUse("pvc-chaos-link", "node-0", true)).To(Succeed())
	fault := time.Now()
	g.Expect(em.PartitionLink("node-0", "node-1")).To(Succeed())
	detect(t, g, fault, "pvc-chaos-link", "Degraded")
	g.Eventually(func(g Gomega) { told(g, link, "ReplicasDegraded", "pvc-chaos-link") }, timeout, tick).Should(Succeed())
	g.Expect(conditionOf(cluster(g), linstorv1.ConditionRedundant).Status).To(Equal(metav1.ConditionFalse))
	g.Expect(em.HealLink("node-0", "node-1")).To(Succeed())
	g.Eventually(func(g Gomega) {
		s, _ := stateOf(g, "pvc-chaos-link")
		g.Expect(s).To(Equal("Healthy"))
		told(g, link, "ReplicasRecovered", "pvc-chaos-link")
	}, timeout, tick).Should(Succeed())
	g.Expect(em.SetInUse("pvc-chaos-link", "node-0", false)).To(Succeed())

	// 2. Split brain: both sides written apart, then the link heals. Nothing resolves
	// it on its own; the confirmation discards node-2's changes.
	g.Expect(em.PartitionLink("node-1", "node-2")).To(Succeed())
	for _, n := range []string{"node-1", "node-2"} {
		g.Expect(em.SetInUse("pvc-chaos-sb", n, true)).To(Succeed())
		g.Expect(em.SetInUse("pvc-chaos-sb", n, false)).To(Succeed())
	}
	fault = time.Now()
	g.Expect(em.HealLink("node-1", "node-2")).To(Succeed())
	detect(t, g, fault, "pvc-chaos-sb", "SplitBrain")
	g.Eventually(func(g Gomega) { told(g, sb, "ReplicasSplitBrain", "pvc-chaos-sb") }, timeout, tick).Should(Succeed())
	g.Consistently(func(g Gomega) {
		s, _ := stateOf(g, "pvc-chaos-sb")
		g.Expect(s).To(Equal("SplitBrain"), "a split brain resolved without a confirmation")
	}, "5s", tick).Should(Succeed())
	_, h := stateOf(g, "pvc-chaos-sb")
	g.Expect(h.Message).To(And(ContainSubstring("node-1"), ContainSubstring("node-2")))
	updateLinstorCluster(g, func(c *linstorv1.LinstorCluster) {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[names.AnnotationResolveSplitBrain] = "pvc-chaos-sb/node-2/" + h.UID
	})
	g.Eventually(func(g Gomega) {
		c := cluster(g)
		g.Expect(c.Status.SplitBrainResolution).NotTo(BeNil())
		g.Expect(c.Status.SplitBrainResolution.Phase).To(Equal(linstorv1.SplitBrainResolved), "%+v", c.Status.SplitBrainResolution)
		s, _ := stateOf(g, "pvc-chaos-sb")
		g.Expect(s).To(Equal("Healthy"))
	}, upgradeTimeout, tick).Should(Succeed())

	// 3. A failed disk: the replica goes Diskless without having been made so.
	fault = time.Now()
	g.Expect(em.FailDisk("pvc-chaos-disk", "node-3")).To(Succeed())
	detect(t, g, fault, "pvc-chaos-disk", "UnintentionallyDiskless")
	g.Eventually(func(g Gomega) { told(g, disk, "ReplicasUnintentionallyDiskless", "pvc-chaos-disk") }, timeout, tick).Should(Succeed())
	// node-2 now holds pvc-chaos-disk's only UpToDate replica: its drain is held.
	g.Eventually(func(g Gomega) {
		d := satelliteNamed(g, "node-2").Status.Drain
		g.Expect(d).NotTo(BeNil())
		g.Expect(d.Allowed).To(BeFalse())
		g.Expect(d.HeldBy).To(ContainElement(HaveField("Resource", "pvc-chaos-disk")))
	}, timeout, tick).Should(Succeed())

	// 4. Quorum lost: three replicas (LINSTOR's auto-quorum: majority), every link
	// between them cut; no replica reaches a majority, DRBD refuses I/O everywhere.
	for _, n := range []string{"node-0", "node-1", "node-3"} {
		g.Expect(em.PlaceResource("pvc-chaos-q", n, samplePool, false)).To(Succeed())
	}
	q := claimOn(t, g, "pvc-chaos-q")
	g.Eventually(func(g Gomega) {
		s, _ := stateOf(g, "pvc-chaos-q")
		g.Expect(s).To(Equal("Healthy"))
	}, timeout, tick).Should(Succeed())
	fault = time.Now()
	cuts := [][2]string{{"node-0", "node-1"}, {"node-0", "node-3"}, {"node-1", "node-3"}}
	for _, c := range cuts {
		g.Expect(em.PartitionLink(c[0], c[1])).To(Succeed())
	}
	detect(t, g, fault, "pvc-chaos-q", "QuorumLost")
	g.Eventually(func(g Gomega) { told(g, q, "ReplicasQuorumLost", "pvc-chaos-q") }, timeout, tick).Should(Succeed())
	for _, c := range cuts {
		g.Expect(em.HealLink(c[0], c[1])).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		s, _ := stateOf(g, "pvc-chaos-q")
		g.Expect(s).To(Equal("Healthy"))
		told(g, q, "ReplicasRecovered", "pvc-chaos-q")
	}, timeout, tick).Should(Succeed())

	// No replica was lost: every surviving diskful replica holds the newest data, and no
	// LINSTOR volume was destroyed behind a workload's back.
	for rsc, nodes := range map[string][]string{"pvc-chaos-link": {"node-0", "node-1"}, "pvc-chaos-sb": {"node-1", "node-2"}, "pvc-chaos-disk": {"node-2"}, "pvc-chaos-q": {"node-0", "node-1", "node-3"}} {
		for _, n := range nodes {
			ok, err := em.HasNewestData(rsc, n)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ok).To(BeTrue(), "%s on %s lost data", rsc, n)
		}
	}
	g.Expect(em.DestroyedReplicas()).To(BeEmpty())
}
