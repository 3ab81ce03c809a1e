package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/names"

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

// runningPodNodes maps the Running pods of a component (app.kubernetes.io/name) to their node.
func runningPodNodes(g Gomega, component string) map[string]string {
	pods, err := envtest.RunningPods(ctx, env.Client, client.InNamespace(namespace), client.MatchingLabels{names.LabelName: component})
	g.Expect(err).NotTo(HaveOccurred())
	out := map[string]string{}
	for _, p := range pods {
		out[string(p.UID)] = p.Spec.NodeName
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
	g.Expect(runningPodNodes(g, names.ControllerName)).To(HaveLen(1))
	g.Expect(runningPodNodes(g, "linstor-satellite")).To(HaveLen(3))
	g.Expect(runningPodNodes(g, names.CSINodeName)).To(HaveLen(3))
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

// A drain-like scenario on a node that has a satellite: it is cordoned and tainted by
// the HA controller (here with NoExecute, so that kube-controller-manager's taint
// eviction really evicts what does not tolerate it: a canary pod shows it does). The
// satellite pod stays (same pod, LINSTOR node ONLINE) and so does its LinstorSatellite,
// and the CSI node plugin too. A new node with an untolerated NoSchedule taint gets no
// LinstorSatellite and is listed in the cluster's status.skippedNodes.
func TestNodeTaintedByTheHAControllerKeepsItsSatellite(t *testing.T) {
	g := NewWithT(t)
	// A node with a satellite and neither the LINSTOR nor the CSI controller, whose
	// eviction would restart LINSTOR under the next steps.
	busy := map[string]bool{}
	for _, c := range []string{names.ControllerName, "linstor-csi"} {
		for _, node := range runningPodNodes(g, c) {
			busy[node] = true
		}
	}
	var node string
	for _, n := range runningPodNodes(g, "linstor-satellite") {
		if !busy[n] && (node == "" || n < node) {
			node = n
		}
	}
	g.Expect(node).NotTo(BeEmpty(), "no node runs a satellite without a controller")
	podsOn := func(g Gomega, component string) []string {
		var uids []string
		for uid, n := range runningPodNodes(g, component) {
			if n == node {
				uids = append(uids, uid)
			}
		}
		return uids
	}
	satellitePod, csiPod := podsOn(g, "linstor-satellite"), podsOn(g, names.CSINodeName)
	g.Expect(satellitePod).To(HaveLen(1))
	g.Expect(csiPod).To(HaveLen(1))
	satellite := &linstorv1.LinstorSatellite{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: node}, satellite)).To(Succeed())

	// The canary tolerates nothing: the taint eviction must remove it.
	canary := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "taint-canary", Namespace: "default"}, Spec: corev1.PodSpec{NodeName: node,
		Containers: []corev1.Container{{Name: "c", Image: "canary"}}}}
	g.Expect(env.Client.Create(ctx, canary)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(canary), canary)).To(Succeed())
		g.Expect(canary.Status.Phase).To(Equal(corev1.PodRunning))
	}, timeout, tick).Should(Succeed())

	setNode := func(unschedulable bool, taints ...corev1.Taint) {
		g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n := &corev1.Node{}
			if err := env.Client.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
				return err
			}
			var kept []corev1.Taint
			for _, t := range n.Spec.Taints {
				if t.Key != names.TaintLostQuorum && t.Key != names.TaintForceIOError {
					kept = append(kept, t)
				}
			}
			n.Spec.Unschedulable, n.Spec.Taints = unschedulable, append(kept, taints...)
			return env.Client.Update(ctx, n)
		})).To(Succeed())
	}
	setNode(true, corev1.Taint{Key: names.TaintLostQuorum, Effect: corev1.TaintEffectNoExecute},
		corev1.Taint{Key: names.TaintForceIOError, Effect: corev1.TaintEffectNoSchedule})
	t.Cleanup(func() { setNode(false) })
	g.Eventually(func(g Gomega) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(canary), &corev1.Pod{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the canary was not evicted by the NoExecute taint: %v", err)
	}, timeout, tick).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(podsOn(g, "linstor-satellite")).To(Equal(satellitePod), "the satellite pod of the tainted node was replaced or evicted")
		g.Expect(podsOn(g, names.CSINodeName)).To(Equal(csiPod), "the CSI node plugin of the tainted node was replaced or evicted")
		sat := &linstorv1.LinstorSatellite{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: node}, sat)).To(Succeed())
		g.Expect(sat.UID).To(Equal(satellite.UID))
		g.Expect(sat.DeletionTimestamp).To(BeNil())
		linstorNodeOnline(g, node)
		g.Expect(cluster(g).Status.SkippedNodes).To(BeEmpty())
	}, "10s", tick).Should(Succeed())
	tainted := &corev1.Node{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: node}, tainted)).To(Succeed())
	g.Expect(tainted.Spec.Taints).To(ContainElement(HaveField("Key", corev1.TaintNodeUnschedulable)), "the cordon's taint")

	// A new node with a NoSchedule taint the satellite pod does not tolerate.
	fresh := kwokcluster.Node("node-dedicated", 20)
	fresh.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}}
	g.Expect(env.Client.Create(ctx, fresh)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := cluster(g)
		g.Expect(c.Status.SkippedNodes).To(ConsistOf(And(HaveField("Name", fresh.Name), HaveField("Reason", linstorv1.ReasonUntoleratedTaint),
			HaveField("Message", ContainSubstring("dedicated=db:NoSchedule")))))
		g.Expect(c.Status.Satellites.Skipped).To(Equal(int32(1)))
	}, timeout, tick).Should(Succeed())
	g.Consistently(func(g Gomega) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: fresh.Name}, &linstorv1.LinstorSatellite{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the tainted new node got a LinstorSatellite: %v", err)
		g.Expect(conditionStatus(cluster(g).Status.Conditions, linstorv1.ConditionAvailable)).To(Equal(metav1.ConditionTrue))
	}, "5s", tick).Should(Succeed())

	// The next steps count the satellites of the first nodes only.
	g.Expect(env.Client.Delete(ctx, fresh)).To(Succeed())
	setNode(false)
	g.Eventually(func(g Gomega) {
		c := cluster(g)
		g.Expect(c.Status.SkippedNodes).To(BeEmpty())
		g.Expect(c.Status.Satellites).To(Equal(linstorv1.SatelliteCounts{Ready: 4, Total: 4}))
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
	satellitesBefore := runningPodNodes(g, "linstor-satellite")
	controllerBefore := runningPodNodes(g, names.ControllerName)
	g.Expect(env.StopOperator()).To(Succeed())

	g.Expect(kwokcluster.AddNodes(ctx, env.Client, "node", 4, 5)).To(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(runningPodNodes(g, "linstor-satellite")).To(Equal(satellitesBefore))
		g.Expect(runningPodNodes(g, names.ControllerName)).To(Equal(controllerBefore))
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
	after := runningPodNodes(g, "linstor-satellite")
	for uid := range satellitesBefore {
		g.Expect(after).To(HaveKey(uid), "a satellite pod was replaced by the restart")
	}
	g.Expect(runningPodNodes(g, names.ControllerName)).To(Equal(controllerBefore))
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
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: names.SatelliteDaemonSetName("node-4")}, &ds)).To(Succeed())
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
		g.Expect(runningPodNodes(g, "linstor-satellite")).To(BeEmpty())
	}, timeout, tick).Should(Succeed())
	var kept corev1.Secret
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: passphrase}, &kept)).To(Succeed())
	g.Expect(kept.Data["MASTER_PASSPHRASE"]).NotTo(BeEmpty())
	_, registered := env.Emulator.Node("node-0")
	g.Expect(registered).To(BeTrue(), "deleting the LinstorCluster must not delete LINSTOR nodes")
}
