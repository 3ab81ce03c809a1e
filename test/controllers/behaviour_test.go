package controllers

import (
	"context"
	"net/http"
	"testing"

	lapi "github.com/LINBIT/golinstor/client"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/linstor/emulator"
	"github.com/linstor-operator/linstor-operator/pkg/render"
)

// availableCluster sets up nodes, a cluster and one pool, and waits for Available.
func availableCluster(t *testing.T, prefix string, cfg linstorv1.LinstorSatelliteConfigurationSpec, nodes ...string) (string, *linstorv1.LinstorCluster) {
	t.Helper()
	g := NewWithT(t)
	ns := env.Namespace(t)
	for i, n := range nodes {
		makeNode(t, n, "10.2.0."+string(rune('1'+i)), map[string]string{"suite": prefix})
	}
	g.Expect(env.Client.Create(context.Background(), &linstorv1.LinstorSatelliteConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: ns}, Spec: cfg,
	})).To(Succeed())
	cluster := makeCluster(t, ns, linstorv1.LinstorClusterSpec{NodeSelector: map[string]string{"suite": prefix}})
	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		g.Expect(condition(c.Status.Conditions, linstorv1.ConditionAvailable).Status).To(Equal(metav1.ConditionTrue), "%+v", c.Status)
		g.Expect(c.Status.Satellites.Total).To(Equal(int32(len(nodes))))
		// Converged: every satellite has made and observed its pools.
		for _, n := range nodes {
			sat := get(g, ns, n, &linstorv1.LinstorSatellite{})
			g.Expect(condition(sat.Status.Conditions, linstorv1.ConditionProgressing).Status).To(Equal(metav1.ConditionFalse), "%s: %+v", n, sat.Status)
			g.Expect(sat.Status.StoragePools).To(HaveLen(len(cfg.StoragePools)), "%s: %+v", n, sat.Status)
		}
	}, timeout, tick).Should(Succeed())
	return ns, cluster
}

var thinPool = linstorv1.StoragePool{Name: "thin", LvmThinPool: &linstorv1.LvmThinPool{}}

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
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: render.SatelliteDaemonSetName("steady-a")}, &dsBefore)).To(Succeed())
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
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: render.SatelliteDaemonSetName("steady-a")}, &dsAfter)).To(Succeed())
	g.Expect(dsAfter.UID).To(Equal(dsBefore.UID), "the satellite DaemonSet was deleted and recreated")
	g.Expect(dsAfter.ResourceVersion).To(Equal(dsBefore.ResourceVersion), "the satellite DaemonSet was rewritten")
	var cfgAfter linstorv1.LinstorSatelliteConfiguration
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cfg"}, &cfgAfter)).To(Succeed())
	g.Expect(cfgAfter.ResourceVersion).To(Equal(cfgBefore.ResourceVersion), "the configuration status was rewritten")
}

func TestPoolHoldingDataIsNotDeleted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _ := availableCluster(t, "inuse", linstorv1.LinstorSatelliteConfigurationSpec{StoragePools: []linstorv1.StoragePool{thinPool}}, "inuse-a")
	g.Expect(emu.PlaceResource("pvc-inuse", "inuse-a", "thin", false)).To(Succeed())

	g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cfg linstorv1.LinstorSatelliteConfiguration
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cfg"}, &cfg); err != nil {
			return err
		}
		cfg.Spec.StoragePools = nil
		return env.Client.Update(ctx, &cfg)
	})).To(Succeed())

	g.Eventually(func(g Gomega) {
		sat := get(g, ns, "inuse-a", &linstorv1.LinstorSatellite{})
		d := condition(sat.Status.Conditions, linstorv1.ConditionDegraded)
		g.Expect(d.Reason).To(Equal(linstorv1.ReasonPoolInUse))
		g.Expect(d.Message).To(ContainSubstring("pool thin is no longer wanted but cannot be deleted yet"))
	}, timeout, tick).Should(Succeed())
	lc := emulatorClient(t)
	_, err := lc.Nodes.GetStoragePool(ctx, "inuse-a", "thin")
	g.Expect(err).NotTo(HaveOccurred(), "a pool holding a volume was deleted")

	g.Expect(lc.Resources.Delete(ctx, "pvc-inuse", "inuse-a")).To(Succeed())
	g.Eventually(func() error {
		_, err := lc.Nodes.GetStoragePool(ctx, "inuse-a", "thin")
		return err
	}, timeout, tick).Should(MatchError(lapi.NotFoundError))
}

func TestForeignPoolIsNeverDeleted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	availableCluster(t, "foreign", linstorv1.LinstorSatelliteConfigurationSpec{}, "foreign-a")
	lc := emulatorClient(t)
	g.Expect(lc.Nodes.CreateStoragePool(ctx, "foreign-a", lapi.StoragePool{StoragePoolName: "manual", ProviderKind: lapi.LVM})).To(Succeed())
	t.Cleanup(func() { _ = lc.Nodes.DeleteStoragePool(ctx, "foreign-a", "manual") })
	g.Consistently(func() error {
		_, err := lc.Nodes.GetStoragePool(ctx, "foreign-a", "manual")
		return err
	}, "2s", tick).Should(Succeed())
}

func TestLinstorErrorsSetConditionsAndRecover(t *testing.T) {
	g := NewWithT(t)
	ns, cluster := availableCluster(t, "faults", linstorv1.LinstorSatelliteConfigurationSpec{}, "faults-a", "faults-b")

	// A blip (1.5 s of failures, shorter than the 3 s grace of this suite) does not flip the condition.
	stillAvailable := func(g Gomega) {
		c := getCluster(g, cluster)
		g.Expect(condition(c.Status.Conditions, linstorv1.ConditionAvailable).Status).To(Equal(metav1.ConditionTrue))
	}
	// A failing test must not leave the fault behind for the next ones.
	t.Cleanup(func() { emu.InjectFault("GET /v1/controller/version", emulator.Fault{}) })
	emu.InjectFault("GET /v1/controller/version", emulator.Fault{Status: http.StatusInternalServerError})
	g.Consistently(stillAvailable, "1500ms", tick).Should(Succeed())
	emu.InjectFault("GET /v1/controller/version", emulator.Fault{})
	g.Consistently(stillAvailable, "3s", tick).Should(Succeed())

	// A lasting failure (longer than the 3 s grace of this suite) is reported.
	emu.InjectFault("GET /v1/controller/version", emulator.Fault{Status: http.StatusInternalServerError})
	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		a := condition(c.Status.Conditions, linstorv1.ConditionAvailable)
		g.Expect(a.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(a.Reason).To(Equal(linstorv1.ReasonLinstorUnreachable))
	}, timeout, tick).Should(Succeed())
	emu.InjectFault("GET /v1/controller/version", emulator.Fault{})
	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		g.Expect(condition(c.Status.Conditions, linstorv1.ConditionAvailable).Status).To(Equal(metav1.ConditionTrue))
	}, timeout, tick).Should(Succeed())

	g.Expect(emu.SetNodeOnline("faults-b", false)).To(Succeed())
	g.Eventually(func(g Gomega) {
		sat := get(g, ns, "faults-b", &linstorv1.LinstorSatellite{})
		a := condition(sat.Status.Conditions, linstorv1.ConditionAvailable)
		g.Expect(a.Reason).To(Equal(linstorv1.ReasonNodeOffline))
		c := getCluster(g, cluster)
		g.Expect(c.Status.SatellitesSummary).To(Equal("1/2"))
		g.Expect(condition(c.Status.Conditions, linstorv1.ConditionAvailable).Reason).To(Equal(linstorv1.ReasonSatellitesNotReady))
		g.Expect(gauge(g, "linstor_operator_satellites", map[string]string{"namespace": ns, "state": "OFFLINE"})).To(Equal(1.0))
		g.Expect(gauge(g, "linstor_operator_satellites", map[string]string{"namespace": ns, "state": "ONLINE"})).To(Equal(1.0))
	}, timeout, tick).Should(Succeed())
	g.Expect(emu.SetSatelliteVersion("faults-b", "1.32.0")).To(Succeed())
	g.Expect(emu.SetNodeOnline("faults-b", true)).To(Succeed())
	g.Eventually(func(g Gomega) {
		sat := get(g, ns, "faults-b", &linstorv1.LinstorSatellite{})
		g.Expect(condition(sat.Status.Conditions, linstorv1.ConditionAvailable).Reason).To(Equal(linstorv1.ReasonVersionMismatch))
	}, timeout, tick).Should(Succeed())
	g.Expect(emu.SetSatelliteVersion("faults-b", "")).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		g.Expect(c.Status.SatellitesSummary).To(Equal("2/2"))
		g.Expect(condition(c.Status.Conditions, linstorv1.ConditionAvailable).Status).To(Equal(metav1.ConditionTrue))
	}, timeout, tick).Should(Succeed())
}

func TestExternalControllerDeploysNoController(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	makeNode(t, "ext-a", "10.3.0.1", map[string]string{"suite": "ext"})
	cluster := makeCluster(t, ns, linstorv1.LinstorClusterSpec{
		NodeSelector:       map[string]string{"suite": "ext"},
		Controller:         &linstorv1.ControllerSpec{ComponentSpec: linstorv1.ComponentSpec{Enabled: ptrTo(false)}},
		ExternalController: &linstorv1.ExternalControllerSpec{URL: "http://linstor.example.com:3370"},
	})
	// The test operator reaches the emulator through --linstor-url; the point here is
	// that no controller workload is deployed.
	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		g.Expect(condition(c.Status.Conditions, linstorv1.ConditionAvailable).Status).To(Equal(metav1.ConditionTrue))
	}, timeout, tick).Should(Succeed())
	var deploys appsv1.DeploymentList
	g.Expect(env.Client.List(ctx, &deploys, client.InNamespace(ns))).To(Succeed())
	for _, d := range deploys.Items {
		g.Expect(d.Name).NotTo(Equal("linstor-controller"), "a LINSTOR controller was deployed in external mode")
		if d.Name == "linstor-csi-controller" {
			g.Expect(d.Spec.Template.Spec.Containers[0].Env).To(ContainElement(HaveField("Value", "http://linstor.example.com:3370")),
				"the CSI driver must talk to the external controller")
		}
	}
	g.Expect(deploys.Items).To(HaveLen(1), "only the CSI controller")
	_, ok := emu.Node("ext-a")
	g.Expect(ok).To(BeTrue())
}

func ptrTo[T any](v T) *T { return &v }

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
