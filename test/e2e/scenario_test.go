package e2e

import (
	"context"
	"testing"
	"time"

	lapi "github.com/LINBIT/golinstor/client"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/internal/kwokcluster"
	"github.com/linstor-operator/linstor-operator/internal/sim"
	"github.com/linstor-operator/linstor-operator/pkg/render"
	"github.com/linstor-operator/linstor-operator/test/envtest"
)

const (
	timeout = 60 * time.Second
	tick    = 250 * time.Millisecond
	// samplePool is the storage pool of config/samples' LinstorSatelliteConfiguration.
	samplePool = "file-thin"
)

var ctx = context.Background()

func cluster(g Gomega) *linstorv1.LinstorCluster {
	c := &linstorv1.LinstorCluster{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "linstor"}, c)).To(Succeed())
	return c
}

func conditionStatus(conds []metav1.Condition, typ string) metav1.ConditionStatus {
	if c := meta.FindStatusCondition(conds, typ); c != nil {
		return c.Status
	}
	return "Missing"
}

// runningPods maps the pods of a component (app.kubernetes.io/name) to their node.
func runningPods(g Gomega, component string) map[string]string {
	var pods corev1.PodList
	g.Expect(env.Client.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabels{render.LabelName: component})).To(Succeed())
	out := map[string]string{}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			out[string(p.UID)] = p.Spec.NodeName
		}
	}
	return out
}

func linstorNodeOnline(g Gomega, name string) {
	n, ok := env.Emulator.Node(name)
	g.Expect(ok).To(BeTrue(), "LINSTOR node %s not registered", name)
	g.Expect(n.ConnectionStatus).To(Equal("ONLINE"), "LINSTOR node %s", name)
}

func TestInstallBecomesAvailable(t *testing.T) {
	g := NewWithT(t)
	start := time.Now()
	g.Expect(kwokcluster.AddNodes(ctx, env.Client, "node", 0, 3)).To(Succeed())
	g.Expect(sim.ApplySamples(ctx, env.Client, envtest.RepoRoot(), namespace)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := cluster(g)
		g.Expect(conditionStatus(c.Status.Conditions, linstorv1.ConditionAvailable)).To(Equal(metav1.ConditionTrue), "%+v", c.Status.Conditions)
		g.Expect(c.Status.Satellites).To(Equal(linstorv1.SatelliteCounts{Ready: 3, Total: 3}))
		g.Expect(c.Status.Version).To(Equal("1.33.3"), "the version the controller pod's image runs")
	}, timeout, tick).Should(Succeed())
	t.Logf("3 nodes: Available %.1fs after the samples were applied", time.Since(start).Seconds())

	// The real scheduler placed the pods and kwok runs them.
	g.Expect(runningPods(g, render.ControllerName)).To(HaveLen(1))
	g.Expect(runningPods(g, "linstor-satellite")).To(HaveLen(3))
	g.Expect(runningPods(g, render.CSINodeName)).To(HaveLen(3))
	for i := 0; i < 3; i++ {
		name := "node-" + string(rune('0'+i))
		linstorNodeOnline(g, name)
		pools, err := env.Emulator.StoragePools(name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pools).To(ContainElement(HaveField("StoragePoolName", samplePool)))
	}
}

func TestAddedNodeGetsASatelliteWithItsPools(t *testing.T) {
	g := NewWithT(t)
	g.Expect(kwokcluster.AddNodes(ctx, env.Client, "node", 3, 4)).To(Succeed())
	g.Eventually(func(g Gomega) {
		linstorNodeOnline(g, "node-3")
		pools, err := env.Emulator.StoragePools("node-3")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pools).To(ContainElement(And(HaveField("StoragePoolName", samplePool), HaveField("ProviderKind", lapi.FILE_THIN))))
		g.Expect(cluster(g).Status.Satellites).To(Equal(linstorv1.SatelliteCounts{Ready: 4, Total: 4}))
	}, timeout, tick).Should(Succeed())
}

// A v1alpha1 object created by a client of the first release is stored as v1 through
// the operator's conversion webhook, and read back in both versions.
func TestV1alpha1IsServedThroughTheConversionWebhook(t *testing.T) {
	g := NewWithT(t)
	old := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "linstor.io/v1alpha1", "kind": "LinstorSatelliteConfiguration",
		"metadata": map[string]any{"name": "legacy", "namespace": namespace},
		"spec": map[string]any{
			"nodeSelector":   map[string]any{"legacy": "yes"},
			"lvmThinPools":   []any{map[string]any{"name": "legacy-thin", "volumeGroup": "vg", "thinPool": "tp", "devicePaths": []any{"/dev/vdc"}}},
			"nodeProperties": map[string]any{"Aux/legacy": "1"},
		},
	}}
	g.Expect(env.Client.Create(ctx, old)).To(Succeed())
	var v1 linstorv1.LinstorSatelliteConfiguration
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "legacy"}, &v1)).To(Succeed())
	g.Expect(v1.Spec.StoragePools).To(HaveLen(1))
	g.Expect(v1.Spec.StoragePools[0].LvmThinPool).To(Equal(&linstorv1.LvmThinPool{VolumeGroup: "vg", ThinPool: "tp"}))
	g.Expect(v1.Spec.StoragePools[0].Source.HostDevices).To(Equal([]string{"/dev/vdc"}))
	g.Expect(v1.Spec.Properties).To(ContainElement(linstorv1.NodeProperty{Name: "Aux/legacy", Value: "1"}))

	back := &unstructured.Unstructured{}
	back.SetAPIVersion("linstor.io/v1alpha1")
	back.SetKind("LinstorSatelliteConfiguration")
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "legacy"}, back)).To(Succeed())
	g.Expect(back.Object["spec"]).To(Equal(old.Object["spec"]), "the round trip through v1 lost something")
	g.Expect(env.Client.Delete(ctx, old)).To(Succeed())
}

// With the operator stopped, LINSTOR keeps running untouched; restarted, it catches up.
func TestStoppedOperatorLeavesWorkloadsAloneAndCatchesUp(t *testing.T) {
	g := NewWithT(t)
	satellitesBefore := runningPods(g, "linstor-satellite")
	controllerBefore := runningPods(g, render.ControllerName)
	g.Expect(env.StopOperator()).To(Succeed())

	g.Expect(kwokcluster.AddNodes(ctx, env.Client, "node", 4, 5)).To(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(runningPods(g, "linstor-satellite")).To(Equal(satellitesBefore))
		g.Expect(runningPods(g, render.ControllerName)).To(Equal(controllerBefore))
		for _, node := range satellitesBefore {
			linstorNodeOnline(g, node)
		}
		_, registered := env.Emulator.Node("node-4")
		g.Expect(registered).To(BeFalse(), "something registered node-4 while the operator was stopped")
	}, "5s", tick).Should(Succeed())

	g.Expect(env.StartOperator()).To(Succeed())
	g.Eventually(func(g Gomega) {
		linstorNodeOnline(g, "node-4")
		g.Expect(cluster(g).Status.Satellites).To(Equal(linstorv1.SatelliteCounts{Ready: 5, Total: 5}))
	}, timeout, tick).Should(Succeed())
	// The restart rolled nothing that was running.
	after := runningPods(g, "linstor-satellite")
	for uid := range satellitesBefore {
		g.Expect(after).To(HaveKey(uid), "a satellite pod was replaced by the restart")
	}
	g.Expect(runningPods(g, render.ControllerName)).To(Equal(controllerBefore))
}

// With deletion policy Evacuate (the samples keep the default, Retain), a node that
// leaves is evacuated and its LINSTOR node deleted; the real garbage collector removes
// its satellite DaemonSet.
func TestRemovedNodeIsEvacuatedAndItsWorkloadCollected(t *testing.T) {
	g := NewWithT(t)
	var cfgs linstorv1.LinstorSatelliteConfigurationList
	g.Expect(env.Client.List(ctx, &cfgs, client.InNamespace(namespace))).To(Succeed())
	for i := range cfgs.Items {
		cfg := &cfgs.Items[i]
		g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cfg), cfg); err != nil {
				return err
			}
			cfg.Spec.DeletionPolicy = linstorv1.DeletionEvacuate
			return env.Client.Update(ctx, cfg)
		})).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		var sat linstorv1.LinstorSatellite
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "node-4"}, &sat)).To(Succeed())
		g.Expect(sat.Spec.DeletionPolicy).To(Equal(linstorv1.DeletionEvacuate))
	}, timeout, tick).Should(Succeed())
	var ds appsv1.DaemonSet
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: render.SatelliteDaemonSetName("node-4")}, &ds)).To(Succeed())
	g.Expect(env.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-4"}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		_, registered := env.Emulator.Node("node-4")
		g.Expect(registered).To(BeFalse(), "LINSTOR node-4 not deleted")
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "node-4"}, &linstorv1.LinstorSatellite{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "LinstorSatellite node-4: %v", err)
		err = env.Client.Get(ctx, client.ObjectKeyFromObject(&ds), &appsv1.DaemonSet{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "satellite DaemonSet of node-4 not collected: %v", err)
		g.Expect(cluster(g).Status.Satellites).To(Equal(linstorv1.SatelliteCounts{Ready: 4, Total: 4}))
	}, timeout, tick).Should(Succeed())
}

// Deleting the LinstorCluster: the garbage collector removes what it owned; the master
// passphrase stays (encrypted volumes need it) and LINSTOR keeps its nodes.
func TestDeletedClusterIsCollectedButThePassphraseKept(t *testing.T) {
	g := NewWithT(t)
	c := cluster(g)
	g.Expect(c.Spec.PassphraseSecretRef).To(BeNil(), "the sample lets the operator create the passphrase")
	var secrets corev1.SecretList
	g.Expect(env.Client.List(ctx, &secrets, client.InNamespace(namespace))).To(Succeed())
	passphrase := ""
	for _, s := range secrets.Items {
		if _, ok := s.Data["MASTER_PASSPHRASE"]; ok {
			passphrase = s.Name
		}
	}
	g.Expect(passphrase).NotTo(BeEmpty(), "no passphrase Secret was created")

	g.Expect(env.Client.Delete(ctx, c)).To(Succeed())
	g.Eventually(func(g Gomega) {
		for _, list := range []client.ObjectList{&appsv1.DeploymentList{}, &appsv1.DaemonSetList{}, &corev1.ServiceList{}, &linstorv1.LinstorSatelliteList{}} {
			g.Expect(env.Client.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
			g.Expect(meta.LenList(list)).To(BeZero(), "%T not collected", list)
		}
		g.Expect(runningPods(g, "linstor-satellite")).To(BeEmpty())
	}, timeout, tick).Should(Succeed())
	var kept corev1.Secret
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: passphrase}, &kept)).To(Succeed())
	g.Expect(kept.Data["MASTER_PASSPHRASE"]).NotTo(BeEmpty())
	_, registered := env.Emulator.Node("node-0")
	g.Expect(registered).To(BeTrue(), "deleting the LinstorCluster must not delete LINSTOR nodes")
}
