package controllers

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/names"
)

// eventsOf lists the events of one object with that reason.
func eventsOf(g Gomega, ns, name, reason string) []corev1.Event {
	var events corev1.EventList
	g.Expect(env.Client.List(context.Background(), &events, client.InNamespace(ns))).To(Succeed())
	var out []corev1.Event
	for _, e := range events.Items {
		if e.InvolvedObject.Name == name && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// setCordoned cordons or uncordons a node, as kubectl cordon does.
func setCordoned(g Gomega, name string, cordoned bool) {
	g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := &corev1.Node{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
			return err
		}
		n.Spec.Unschedulable = cordoned
		return env.Client.Update(context.Background(), n)
	})).To(Succeed())
}

// Each satellite's node gets a drain guard pod and a budget that selects exactly it.
// The budget refuses the guard's eviction (minAvailable 1) while the node holds the
// only UpToDate replica of a resource, and allows it (minAvailable 0) once another
// replica is UpToDate; the satellite's status and Events say which resources hold the
// node. A guard gone from a cordoned node (a drain evicted it) is not re-created until
// the node is uncordoned.
func TestDrainGuard(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _ := availableCluster(t, "drain", linstorv1.LinstorSatelliteConfigurationSpec{StoragePools: []linstorv1.StoragePool{thinPool}}, "drain-a", "drain-b")
	sat := get(g, ns, "drain-a", &linstorv1.LinstorSatellite{})
	guardKey := client.ObjectKey{Namespace: ns, Name: names.DrainGuardName("drain-a")}

	budget := func(g Gomega) *policyv1.PodDisruptionBudget {
		pdb := &policyv1.PodDisruptionBudget{}
		g.Expect(env.Client.Get(ctx, guardKey, pdb)).To(Succeed())
		return pdb
	}
	g.Eventually(func(g Gomega) {
		guard := &corev1.Pod{}
		g.Expect(env.Client.Get(ctx, guardKey, guard)).To(Succeed())
		g.Expect(guard.Spec.NodeName).To(Equal("drain-a"))
		owner := metav1.GetControllerOf(guard)
		g.Expect(owner).NotTo(BeNil(), "a pod without a controller is refused by kubectl drain")
		g.Expect(owner.Kind).To(Equal("LinstorSatellite"))
		g.Expect(owner.UID).To(Equal(sat.UID))
		pdb := budget(g)
		g.Expect(metav1.GetControllerOf(pdb).UID).To(Equal(sat.UID))
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		g.Expect(err).NotTo(HaveOccurred())
		var selected corev1.PodList
		g.Expect(env.Client.List(ctx, &selected, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel})).To(Succeed())
		g.Expect(selected.Items).To(HaveLen(1), "the budget selects the guard and nothing else")
		g.Expect(selected.Items[0].Name).To(Equal(guard.Name))
		// No resource on the node: a drain is allowed.
		g.Expect(pdb.Spec.MinAvailable.IntValue()).To(Equal(0), "%v", pdb.Annotations)
		g.Expect(get(g, ns, "drain-a", &linstorv1.LinstorSatellite{}).Status.Drain).To(Equal(&linstorv1.DrainStatus{Allowed: true, Message: "No resource needs this node's replicas"}))
	}, timeout, tick).Should(Succeed())

	// The only replica of pvc-drain, UpToDate on drain-a: held.
	g.Expect(emu.PlaceResource("pvc-drain", "drain-a", "thin", false)).To(Succeed())
	g.Eventually(func(g Gomega) {
		pdb := budget(g)
		g.Expect(pdb.Spec.MinAvailable.IntValue()).To(Equal(1))
		g.Expect(pdb.Annotations[names.AnnotationDrainReason]).To(ContainSubstring("pvc-drain"))
		d := get(g, ns, "drain-a", &linstorv1.LinstorSatellite{}).Status.Drain
		g.Expect(d).NotTo(BeNil())
		g.Expect(d.Allowed).To(BeFalse())
		g.Expect(d.HeldCount).To(Equal(int32(1)))
		g.Expect(d.HeldBy).To(ConsistOf(HaveField("Resource", "pvc-drain")))
		g.Expect(eventsOf(g, ns, "drain-a", "DrainHeld")).NotTo(BeEmpty())
		// drain-b holds nothing.
		g.Expect(get(g, ns, "drain-b", &linstorv1.LinstorSatellite{}).Status.Drain).To(Equal(&linstorv1.DrainStatus{Allowed: true, Message: "No resource needs this node's replicas"}))
	}, timeout, tick).Should(Succeed())
	t.Logf("held: %s", budget(g).Annotations[names.AnnotationDrainReason])

	// A second UpToDate replica on drain-b: allowed again.
	g.Expect(emu.PlaceResource("pvc-drain", "drain-b", "thin", false)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(budget(g).Spec.MinAvailable.IntValue()).To(Equal(0))
		g.Expect(get(g, ns, "drain-a", &linstorv1.LinstorSatellite{}).Status.Drain).To(Equal(&linstorv1.DrainStatus{Allowed: true, Message: "No resource needs this node's replicas"}))
		g.Expect(eventsOf(g, ns, "drain-a", "DrainAllowed")).NotTo(BeEmpty())
	}, timeout, tick).Should(Succeed())

	// A drain: cordon, then the guard goes (envtest has no eviction subresource's
	// caller here; deleting stands for the allowed eviction). It stays gone while the
	// node is cordoned, and comes back when it is uncordoned.
	setCordoned(g, "drain-a", true)
	guard := &corev1.Pod{}
	g.Expect(env.Client.Get(ctx, guardKey, guard)).To(Succeed())
	g.Expect(env.Client.Delete(ctx, guard, client.GracePeriodSeconds(0))).To(Succeed())
	g.Consistently(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, guardKey, &corev1.Pod{}))
	}, "3s", tick).Should(BeTrue(), "the guard was re-created on a cordoned node")
	setCordoned(g, "drain-a", false)
	again := &corev1.Pod{}
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, guardKey, again)).To(Succeed())
		g.Expect(again.UID).NotTo(Equal(guard.UID))
	}, timeout, tick).Should(Succeed())

	// Steady: passes run (the suite's 1 s LINSTOR poll) and write neither the budget nor
	// the guard.
	pdbVersion := budget(g).ResourceVersion
	g.Consistently(func(g Gomega) {
		g.Expect(budget(g).ResourceVersion).To(Equal(pdbVersion), "the budget was rewritten")
		now := &corev1.Pod{}
		g.Expect(env.Client.Get(ctx, guardKey, now)).To(Succeed())
		g.Expect(now.ResourceVersion).To(Equal(again.ResourceVersion), "the guard was rewritten")
	}, "3s", tick).Should(Succeed())
}
