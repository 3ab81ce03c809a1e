package controllers

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// Writes are skipped only when nothing would change: a field the operator owns, changed
// by someone else, is put back, and a field it stops setting is removed.
func TestApplyRevertsDriftDespiteSkippingNoOps(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, cluster := availableCluster(t, "drift", linstorv1.LinstorSatelliteConfigurationSpec{}, "drift-a")
	key := client.ObjectKey{Namespace: ns, Name: "linstor-controller"}
	var dep appsv1.Deployment
	g.Expect(env.Client.Get(ctx, key, &dep)).To(Succeed())
	want := dep.Spec.Template.Spec.Containers[0].Image
	dep.Spec.Template.Spec.Containers[0].Image = "example.org/someone-else:1"
	g.Expect(env.Client.Update(ctx, &dep, client.FieldOwner("someone-else"))).To(Succeed())
	// The edit does not wake the cluster reconciler by itself in every version of the
	// watch predicates; an annotation change does.
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) { c.Annotations = map[string]string{"touch": "drift"} })).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, key, &dep)).To(Succeed())
		g.Expect(dep.Spec.Template.Spec.Containers[0].Image).To(Equal(want))
	}, timeout, tick).Should(Succeed())

	// A field the operator set, then stops setting, goes away although every remaining
	// field is still as desired.
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) {
		c.Spec.Controller = &linstorv1.ControllerSpec{ComponentSpec: linstorv1.ComponentSpec{NodeSelector: map[string]string{"drift": "yes"}}}
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, key, &dep)).To(Succeed())
		g.Expect(dep.Spec.Template.Spec.NodeSelector).To(HaveKeyWithValue("drift", "yes"))
	}, timeout, tick).Should(Succeed())
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) { c.Spec.Controller = nil })).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, key, &dep)).To(Succeed())
		g.Expect(dep.Spec.Template.Spec.NodeSelector).NotTo(HaveKey("drift"))
	}, timeout, tick).Should(Succeed())
}
