package e2e

import (
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/internal/kwokcluster"
	"github.com/linstor-operator/linstor-operator/internal/sim"
	"github.com/linstor-operator/linstor-operator/pkg/names"
	"github.com/linstor-operator/linstor-operator/test/envtest"
)

// This file runs first (file order): it installs a cluster on two nodes of its own and
// removes it, its nodes and LINSTOR's state afterwards, so the scenario that follows
// starts from an empty cluster.

// setUnschedulable cordons or uncordons a node, as kubectl cordon does.
func setUnschedulable(g Gomega, name string, cordoned bool) {
	g.Expect(envtest.Update(ctx, env.Client, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, func(n *corev1.Node) {
		n.Spec.Unschedulable = cordoned
	})).To(Succeed())
}

// kubectl drain cordons the node and evicts its pods through the Eviction API (policy/v1
// Eviction); it skips DaemonSet pods, the satellite's among them. Here the node's drain
// guard is evicted the same way, with kube-controller-manager's disruption controller
// keeping the budget's status: the eviction is refused (429, the budget named) while the
// node holds the only UpToDate replica of a resource, and accepted once a second replica
// is UpToDate. The guard is not re-created while the node stays cordoned, and is once
// it is uncordoned.
func TestDrainIsRefusedWhileTheNodeHoldsTheOnlyUpToDateReplica(t *testing.T) {
	g := NewWithT(t)
	g.Expect(kwokcluster.AddNodes(ctx, env.Client, "drain", 0, 2)).To(Succeed())
	t.Cleanup(func() {
		g := NewWithT(t)
		freshLinstor(t)
		g.Eventually(func(g Gomega) {
			var sats linstorv1.LinstorSatelliteList
			g.Expect(env.Client.List(ctx, &sats, client.InNamespace(namespace))).To(Succeed())
			g.Expect(sats.Items).To(BeEmpty())
		}, timeout, tick).Should(Succeed())
		for _, n := range []string{"drain-0", "drain-1"} {
			g.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}))).To(Succeed())
		}
	})
	g.Expect(sim.ApplySamples(ctx, env.Client, envtest.RepoRoot(), namespace)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := cluster(g)
		g.Expect(conditionStatus(c.Status.Conditions, linstorv1.ConditionAvailable)).To(Equal(metav1.ConditionTrue), "%+v", c.Status.Conditions)
		g.Expect(c.Status.Satellites).To(Equal(linstorv1.SatelliteCounts{Ready: 2, Total: 2}))
		poolsCreated(g)
	}, upgradeTimeout, tick).Should(Succeed())

	const node, rsc = "drain-0", "pvc-drain"
	g.Expect(env.Emulator.PlaceResource(rsc, node, samplePool, true)).To(Succeed())
	guardKey := client.ObjectKey{Namespace: namespace, Name: names.DrainGuardName(node)}
	budget := func(g Gomega) *policyv1.PodDisruptionBudget {
		pdb := &policyv1.PodDisruptionBudget{}
		g.Expect(env.Client.Get(ctx, guardKey, pdb)).To(Succeed())
		return pdb
	}
	// The guard runs (kwok plays its kubelet) and the disruption controller counts it
	// against a budget that wants it.
	g.Eventually(func(g Gomega) {
		guard := &corev1.Pod{}
		g.Expect(env.Client.Get(ctx, guardKey, guard)).To(Succeed())
		g.Expect(guard.Status.Phase).To(Equal(corev1.PodRunning))
		pdb := budget(g)
		g.Expect(pdb.Spec.MinAvailable.IntValue()).To(Equal(1), "%v", pdb.Annotations)
		g.Expect(pdb.Annotations[names.AnnotationDrainReason]).To(ContainSubstring(rsc))
		g.Expect(pdb.Status.ObservedGeneration).To(Equal(pdb.Generation))
		g.Expect(pdb.Status.CurrentHealthy).To(Equal(int32(1)))
		g.Expect(pdb.Status.DisruptionsAllowed).To(Equal(int32(0)))
	}, timeout, tick).Should(Succeed())

	clientset, err := kubernetes.NewForConfig(env.Cluster.Config)
	g.Expect(err).NotTo(HaveOccurred())
	evict := func() error {
		return clientset.CoreV1().Pods(namespace).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: guardKey.Name, Namespace: namespace}})
	}
	setUnschedulable(g, node, true)
	refused := evict()
	g.Expect(apierrors.IsTooManyRequests(refused)).To(BeTrue(), "the eviction of the guard of a node holding the only UpToDate replica: %v", refused)
	g.Expect(refused.Error()).To(ContainSubstring("disruption budget"))
	t.Logf("refused eviction: %s", describe(refused))
	d := satelliteNamed(g, node).Status.Drain
	g.Expect(d).NotTo(BeNil())
	g.Expect(d.Allowed).To(BeFalse())
	g.Expect(d.HeldBy).To(ContainElement(HaveField("Resource", rsc)))
	t.Logf("status.drain of %s: %+v; budget annotation: %s", node, *d, budget(g).Annotations[names.AnnotationDrainReason])

	// A second replica, synced from the first.
	g.Expect(env.Emulator.PlaceResource(rsc, "drain-1", samplePool, false)).To(Succeed())
	g.Eventually(func() map[string]string { return env.Emulator.Replicas(rsc) }, timeout, tick).
		Should(Equal(map[string]string{node: "UpToDate", "drain-1": "UpToDate"}))
	var accepted error = errors.New("not tried")
	g.Eventually(func() error {
		accepted = evict()
		return accepted
	}, timeout, tick).Should(Succeed(), "the eviction once a second replica is UpToDate")
	t.Logf("accepted eviction: %s; budget annotation: %s", describe(accepted), budget(g).Annotations[names.AnnotationDrainReason])
	g.Expect(satelliteNamed(g, node).Status.Drain).To(Equal(&linstorv1.DrainStatus{Allowed: true, Message: "No resource needs this node's replicas"}))

	// Gone with the drain, and not back while the node is cordoned.
	g.Eventually(func() bool { return apierrors.IsNotFound(env.Client.Get(ctx, guardKey, &corev1.Pod{})) }, timeout, tick).Should(BeTrue())
	g.Consistently(func() bool { return apierrors.IsNotFound(env.Client.Get(ctx, guardKey, &corev1.Pod{})) }, "5s", tick).
		Should(BeTrue(), "the guard was re-created on a cordoned node")
	setUnschedulable(g, node, false)
	g.Eventually(func() error { return env.Client.Get(ctx, guardKey, &corev1.Pod{}) }, timeout, tick).Should(Succeed())
}

// satelliteNamed reads a LinstorSatellite.
func satelliteNamed(g Gomega, name string) *linstorv1.LinstorSatellite {
	sat := &linstorv1.LinstorSatellite{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, sat)).To(Succeed())
	return sat
}

// describe is an Eviction answer: the status code, reason, message and causes of a
// refusal.
func describe(err error) string {
	if err == nil {
		return "no error: the API server accepted the eviction and deletes the guard pod"
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return err.Error()
	}
	s := status.Status()
	out := fmt.Sprintf("%d %s: %s", s.Code, s.Reason, s.Message)
	if s.Details != nil {
		for _, c := range s.Details.Causes {
			out += "; " + string(c.Type) + ": " + c.Message
		}
	}
	return out
}
