package controllers

import (
	"testing"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	. "github.com/onsi/gomega"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/apply"
	"github.com/linstor-operator/linstor-operator/pkg/render"
)

// The NetworkPolicy in front of the controller is on by default, follows the API's
// port, and is pruned when disabled.
func TestNetworkPolicyIsAppliedAndPruned(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	makeNode(t, "np-a", "10.4.5.1", map[string]string{"suite": "np"})
	cluster := makeCluster(t, ns, linstorv1.LinstorClusterSpec{NodeSelector: map[string]string{"suite": "np"}})

	policy := func(g Gomega) *networkingv1.NetworkPolicy {
		return get(g, ns, names.NetworkPolicyName, &networkingv1.NetworkPolicy{})
	}
	g.Eventually(func(g Gomega) {
		np := policy(g)
		g.Expect(metav1.IsControlledBy(np, getCluster(g, cluster))).To(BeTrue())
		g.Expect(np.Spec.Ingress).To(HaveLen(1))
		g.Expect(np.Spec.Ingress[0].Ports).To(HaveLen(1))
		g.Expect(np.Spec.Ingress[0].Ports[0].Port.IntValue()).To(Equal(3371))
		g.Expect(np.Spec.PodSelector.MatchLabels).To(HaveKeyWithValue(names.LabelName, names.ControllerName))
	}, timeout, tick).Should(Succeed())
	// What the API server stored holds everything rendered: the next pass sends nothing.
	live, err := runtime.DefaultUnstructuredConverter.ToUnstructured(policy(g))
	g.Expect(err).NotTo(HaveOccurred())
	desired, err := runtime.DefaultUnstructuredConverter.ToUnstructured(render.NetworkPolicy(getCluster(g, cluster))[0])
	g.Expect(err).NotTo(HaveOccurred())
	// The owner reference and hash are the applier's; a typed read drops apiVersion and
	// kind; the applier sends no status.
	for _, k := range []string{"metadata", "apiVersion", "kind", "status"} {
		delete(desired, k)
	}
	g.Expect(apply.Contains(live, desired)).To(BeTrue(), "the stored policy differs from the rendered one: it would be applied every pass")

	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) { c.Spec.NetworkPolicy = linstorv1.NetworkPolicyDisabled })).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env2Get(ns, names.NetworkPolicyName, &networkingv1.NetworkPolicy{}))
	}, timeout, tick).Should(BeTrue(), "the disabled NetworkPolicy was not pruned")

	// Back on, with a plain API: the policy admits the plain port.
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) {
		c.Spec.NetworkPolicy = linstorv1.NetworkPolicyEnabled
		c.Spec.TLS = &linstorv1.TLSSpec{API: &linstorv1.TLSConfig{Mode: linstorv1.TLSDisabled}}
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(policy(g).Spec.Ingress[0].Ports[0].Port.IntValue()).To(Equal(3370))
	}, timeout, tick).Should(Succeed())
}
