package controllers

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/names"
)

// In steady state the operator writes nothing: passes run (the 1 s LINSTOR poll, a
// cluster annotation change) and neither LINSTOR nor the API server sees a write.
func TestSteadyStateMakesNoWrites(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, cluster := availableCluster(t, "steady", linstorv1.LinstorSatelliteConfigurationSpec{
		StoragePools: []linstorv1.StoragePool{thinPool},
		Properties:   []linstorv1.NodeProperty{{Name: "Aux/x", Value: "1"}},
	}, "steady-a", "steady-b")

	var before appsv1.Deployment
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "linstor-controller"}, &before)).To(Succeed())
	satBefore := get(g, ns, "steady-a", &linstorv1.LinstorSatellite{})
	var dsBefore appsv1.DaemonSet
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.SatelliteDaemonSetName("steady-a")}, &dsBefore)).To(Succeed())
	var cfgBefore linstorv1.LinstorSatelliteConfiguration
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cfg"}, &cfgBefore)).To(Succeed())
	emu.ResetRequests()

	// Force more passes: an annotation change triggers the cluster reconciler, and the
	// 1 s LINSTOR poll runs the satellite reconcilers several times meanwhile.
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) { c.Annotations = map[string]string{"touch": "1"} })).To(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(emu.MutatingRequests()).To(BeZero(), "mutating LINSTOR requests in steady state: %v", emu.Requests())
	}, "3s", tick).Should(Succeed())
	g.Expect(len(emu.Requests())).To(BeNumerically(">", 4), "the reconcilers did not run")

	var after appsv1.Deployment
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "linstor-controller"}, &after)).To(Succeed())
	g.Expect(after.ResourceVersion).To(Equal(before.ResourceVersion), "the Deployment was rewritten")
	satAfter := get(g, ns, "steady-a", &linstorv1.LinstorSatellite{})
	g.Expect(satAfter.ResourceVersion).To(Equal(satBefore.ResourceVersion), "the LinstorSatellite was rewritten")
	// The satellite's DaemonSet carries the cluster's labels but is not the cluster's to prune.
	var dsAfter appsv1.DaemonSet
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.SatelliteDaemonSetName("steady-a")}, &dsAfter)).To(Succeed())
	g.Expect(dsAfter.UID).To(Equal(dsBefore.UID), "the satellite DaemonSet was deleted and recreated")
	g.Expect(dsAfter.ResourceVersion).To(Equal(dsBefore.ResourceVersion), "the satellite DaemonSet was rewritten")
	var cfgAfter linstorv1.LinstorSatelliteConfiguration
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cfg"}, &cfgAfter)).To(Succeed())
	g.Expect(cfgAfter.ResourceVersion).To(Equal(cfgBefore.ResourceVersion), "the configuration status was rewritten")
}
