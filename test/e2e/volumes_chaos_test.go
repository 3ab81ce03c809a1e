package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/internal/kwokcluster"
	"github.com/linstor-operator/linstor-operator/internal/sim"
	"github.com/linstor-operator/linstor-operator/pkg/linstor"
	"github.com/linstor-operator/linstor-operator/pkg/names"
	"github.com/linstor-operator/linstor-operator/test/envtest"
)

// This file runs last (file order). Chaos on the kwok cluster: a cut replication link,
// writes on both sides of it (split brain), a failed disk, a lost quorum, a lost node.
// Each fault must be seen within a few observer cycles (this suite's interval is 2 s) in
// the LinstorCluster's status and the claim's Events; nothing is discarded without a
// confirmation; no replica's data is lost, none is evicted; and everything recovers.

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

// eventCount counts the claim's Events with reason that name rsc, repeats included (the
// recorder folds a repeated Event into the first one's count).
func eventCount(g Gomega, pvc *corev1.PersistentVolumeClaim, reason, rsc string) int32 {
	var events corev1.EventList
	g.Expect(env.Client.List(ctx, &events, client.InNamespace(pvc.Namespace))).To(Succeed())
	var n int32
	for _, e := range events.Items {
		if e.InvolvedObject.Kind == "PersistentVolumeClaim" && e.InvolvedObject.Name == pvc.Name && e.Reason == reason && strings.Contains(e.Message, rsc) {
			n += max(e.Count, 1)
		}
	}
	return n
}

// nodeLostTaint takes a node away as a dead machine does: kube-controller-manager's
// taint eviction evicts the satellite pod, which does not tolerate it (pkg/render: only
// the HA controller's taints and the DaemonSet controller's defaults), and the DaemonSet
// controller places no new one there; the coupled emulator, which follows the pods each
// second, then reports the satellite OFFLINE. The node itself stays Ready, as kwok keeps
// it: the operator's node-failure policy, were it on, would not act on it either.
var nodeLostTaint = corev1.Taint{Key: "e2e.linstor.io/node-lost", Effect: corev1.TaintEffectNoExecute}

// setNodeLost adds or removes nodeLostTaint, keeping the node's other taints.
func setNodeLost(g Gomega, node string, lost bool) {
	g.Expect(envtest.Update(ctx, env.Client, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, func(n *corev1.Node) {
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == nodeLostTaint.Key })
		if lost {
			n.Spec.Taints = append(n.Spec.Taints, nodeLostTaint)
		}
	})).To(Succeed())
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
		g.Expect(conditionStatus(c.Status.Conditions, linstorv1.ConditionRedundant)).To(Equal(metav1.ConditionTrue), "%+v", conditionOf(c, linstorv1.ConditionRedundant))
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

	// 5. A lost node while the other replica's workload writes. node-4 is added for it, so
	// that its loss disturbs no other resource and takes neither the LINSTOR nor the CSI
	// controller with it (both run since before it existed).
	const survivor, lost = "node-0", "node-4"
	if err := env.Client.Get(ctx, client.ObjectKey{Name: lost}, &corev1.Node{}); apierrors.IsNotFound(err) {
		g.Expect(kwokcluster.AddNodes(ctx, env.Client, "node", 4, 5)).To(Succeed())
	}
	t.Cleanup(func() { setNodeLost(NewWithT(t), lost, false) })
	g.Eventually(func(g Gomega) {
		linstorNodeOnline(g, lost)
		pools, err := em.StoragePools(lost)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pools).To(ContainElement(HaveField("StoragePoolName", samplePool)))
	}, timeout, tick).Should(Succeed())
	for _, n := range []string{survivor, lost} {
		g.Expect(em.PlaceResource("pvc-chaos-node", n, samplePool, false)).To(Succeed())
	}
	nodeClaim := claimOn(t, g, "pvc-chaos-node")
	g.Eventually(func(g Gomega) {
		g.Expect(em.Replicas("pvc-chaos-node")).To(Equal(map[string]string{survivor: "UpToDate", lost: "UpToDate"}))
		s, _ := stateOf(g, "pvc-chaos-node")
		g.Expect(s).To(Equal("Healthy"))
		// pvc-chaos-disk's disk stays failed (step 3): Redundant is False for it, so the
		// counts tell this resource's part.
		g.Expect(cluster(g).Status.Replicas.Degraded).To(BeZero())
	}, timeout, tick).Should(Succeed())
	g.Expect(em.SetInUse("pvc-chaos-node", survivor, true)).To(Succeed())
	// The node-failure policy is Off (the samples set none) and the operator turned
	// LINSTOR's own auto-evict off: a lost node's replicas wait for it.
	g.Expect(cluster(g).Spec.NodeFailure).To(Or(BeNil(), HaveField("Policy", Or(BeEmpty(), Equal(linstorv1.NodeFailureOff)))))
	lc, err := linstor.NewClient(env.LinstorURL, nil)
	g.Expect(err).NotTo(HaveOccurred())
	props, err := lc.Controller.GetProps(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(props).To(HaveKeyWithValue("DrbdOptions/AutoEvictAllowEviction", "false"))

	fault = time.Now()
	setNodeLost(g, lost, true)
	g.Eventually(func(g Gomega) {
		g.Expect(runningPodNodes(g, names.SatelliteComponent)).NotTo(ContainElement(lost), "the satellite pod was not evicted")
		n, _ := em.Node(lost)
		g.Expect(n.ConnectionStatus).To(Equal("OFFLINE"))
	}, timeout, tick).Should(Succeed())
	t.Logf("%s OFFLINE in LINSTOR %.1fs after the taint", lost, time.Since(fault).Seconds())
	detect(t, g, fault, "pvc-chaos-node", "Degraded")
	g.Eventually(func(g Gomega) { told(g, nodeClaim, "ReplicasDegraded", "pvc-chaos-node") }, timeout, tick).Should(Succeed())
	c := cluster(g)
	g.Expect(conditionOf(c, linstorv1.ConditionRedundant).Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.Status.Replicas.Degraded).To(Equal(int32(1)), "%+v", c.Status.Replicas)
	// The survivor holds the last UpToDate replica: its drain is held.
	g.Eventually(func(g Gomega) {
		d := satelliteNamed(g, survivor).Status.Drain
		g.Expect(d).NotTo(BeNil())
		g.Expect(d.Allowed).To(BeFalse())
		g.Expect(d.HeldBy).To(ContainElement(linstorv1.DrainHeldResource{Resource: "pvc-chaos-node", Reason: "last UpToDate replica"}))
	}, timeout, tick).Should(Succeed())
	// The survivor keeps writing: the lost node falls behind; nothing is evicted or
	// placed elsewhere while it is away.
	g.Consistently(func(g Gomega) {
		newest, err := em.HasNewestData("pvc-chaos-node", lost)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(newest).To(BeFalse(), "%s got the writes while away", lost)
		n, _ := em.Node(lost)
		g.Expect(n.Flags).NotTo(ContainElement("EVICTED"))
		g.Expect(em.Replicas("pvc-chaos-node")).To(HaveLen(2))
		g.Expect(em.DestroyedReplicas()).To(BeEmpty())
	}, "5s", tick).Should(Succeed())

	recoveredBefore := eventCount(g, nodeClaim, "ReplicasRecovered", "pvc-chaos-node")
	back := time.Now()
	setNodeLost(g, lost, false)
	g.Eventually(func(g Gomega) { linstorNodeOnline(g, lost) }, timeout, tick).Should(Succeed())
	t.Logf("%s ONLINE in LINSTOR %.1fs after the taint was removed", lost, time.Since(back).Seconds())
	g.Eventually(func(g Gomega) {
		s, _ := stateOf(g, "pvc-chaos-node")
		g.Expect(s).To(Equal("Healthy"))
	}, timeout, 100*time.Millisecond).Should(Succeed())
	t.Logf("pvc-chaos-node Healthy shown %.1fs after the node came back", time.Since(back).Seconds())
	// A ReplicasRecovered Event told after the node came back, not an older one.
	g.Eventually(func(g Gomega) {
		g.Expect(eventCount(g, nodeClaim, "ReplicasRecovered", "pvc-chaos-node")).To(BeNumerically(">", recoveredBefore))
	}, timeout, tick).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(cluster(g).Status.Replicas.Degraded).To(BeZero())
		d := satelliteNamed(g, survivor).Status.Drain
		g.Expect(d).NotTo(BeNil())
		g.Expect(d.Allowed).To(BeTrue(), "%+v", d)
	}, timeout, tick).Should(Succeed())
	g.Expect(em.SetInUse("pvc-chaos-node", survivor, false)).To(Succeed())

	// No replica was lost: every surviving diskful replica holds the newest data, and no
	// LINSTOR volume was destroyed behind a workload's back.
	for rsc, nodes := range map[string][]string{"pvc-chaos-link": {"node-0", "node-1"}, "pvc-chaos-sb": {"node-1", "node-2"}, "pvc-chaos-disk": {"node-2"}, "pvc-chaos-q": {"node-0", "node-1", "node-3"},
		"pvc-chaos-node": {survivor, lost}} {
		for _, n := range nodes {
			ok, err := em.HasNewestData(rsc, n)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ok).To(BeTrue(), "%s on %s lost data", rsc, n)
		}
	}
	g.Expect(em.DestroyedReplicas()).To(BeEmpty())
}
