package controllers

import (
	"context"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	lapi "github.com/LINBIT/golinstor/client"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/linstor"
	"github.com/linstor-operator/linstor-operator/test/envtest"
)

const (
	timeout = 20 * time.Second
	tick    = 100 * time.Millisecond
)

// makeNode creates a Ready node with an InternalIP, deleted after the test
// (envtest.ReadyNode).
func makeNode(t *testing.T, name, ip string, labels map[string]string) *corev1.Node {
	return envtest.ReadyNode(t, env.Client, name, ip, labels)
}

// makeCluster creates a LinstorCluster and, after the test, deletes it and waits until
// its finalizer ran, so the next test can create the one allowed cluster.
func makeCluster(t *testing.T, ns string, spec linstorv1.LinstorClusterSpec) *linstorv1.LinstorCluster {
	t.Helper()
	// Each test's cluster starts with a LINSTOR that never had a passphrase: the
	// operator refuses to invent one for a LINSTOR that has one (a lost Secret).
	emu.ResetPassphrase()
	return makeClusterOnLinstor(t, ns, spec)
}

// makeClusterOnLinstor is makeCluster on LINSTOR as it is, passphrase included.
func makeClusterOnLinstor(t *testing.T, ns string, spec linstorv1.LinstorClusterSpec) *linstorv1.LinstorCluster {
	t.Helper()
	ctx := context.Background()
	c := &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Name: "linstor", Namespace: ns}, Spec: spec}
	if err := env.Client.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		g := NewWithT(t)
		_ = env.Client.Delete(ctx, c)
		g.Eventually(func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(c), &linstorv1.LinstorCluster{}))
		}, timeout, tick).Should(BeTrue(), "LinstorCluster not finalized")
		// envtest runs no garbage collector: delete the owned satellites as it would.
		_ = env.Client.DeleteAllOf(ctx, &linstorv1.LinstorSatellite{}, client.InNamespace(ns))
		g.Eventually(func() ([]linstorv1.LinstorSatellite, error) {
			var l linstorv1.LinstorSatelliteList
			err := env.Client.List(ctx, &l, client.InNamespace(ns))
			return l.Items, err
		}, timeout, tick).Should(BeEmpty(), "satellites not finalized")
	})
	return c
}

func condition(conds []metav1.Condition, typ string) metav1.Condition {
	if c := meta.FindStatusCondition(conds, typ); c != nil {
		return *c
	}
	return metav1.Condition{Type: typ, Status: "Missing"}
}

func getCluster(g Gomega, c *linstorv1.LinstorCluster) *linstorv1.LinstorCluster {
	out := &linstorv1.LinstorCluster{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(c), out)).To(Succeed())
	return out
}

// get reads the object ns/name ("" for cluster-scoped) into obj.
func get[T client.Object](g Gomega, ns, name string, obj T) T {
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj)).To(Succeed())
	return obj
}

// emulatorClient is a golinstor client to the emulator, for arranging and asserting.
func emulatorClient(t *testing.T) *lapi.Client {
	t.Helper()
	c, err := linstor.NewClient(emulatorURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// updateCluster re-reads and mutates the cluster until the write does not conflict with
// the operator's own writes.
func updateCluster(c *linstorv1.LinstorCluster, mutate func(*linstorv1.LinstorCluster)) error {
	return envtest.Update(context.Background(), env.Client, c, mutate)
}

// gauge reads one series from the operator's metrics registry (-1: none).
func gauge(g Gomega, name string, labels map[string]string) float64 {
	if ms := metricsMatching(g, name, labels); len(ms) > 0 {
		return ms[0].GetGauge().GetValue()
	}
	return -1
}

// metricsMatching lists the series of metric name in the operator's registry that carry
// all these labels.
func metricsMatching(g Gomega, name string, labels map[string]string) []*dto.Metric {
	families, err := metrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	var out []*dto.Metric
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			for k, v := range labels {
				if labelValue(m, k) != v {
					continue series
				}
			}
			out = append(out, m)
		}
	}
	return out
}

// labelValue is the value of the series' label name ("" when it has none).
func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func ptrKey(name string) client.ObjectKey { return client.ObjectKey{Name: name} }

// runningControllerPod makes a LINSTOR controller pod object of cluster: envtest has no
// kubelet, so the object stands for a running controller (a backup then waits for it).
func runningControllerPod(t *testing.T, ns, name string, cluster *linstorv1.LinstorCluster) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
		Labels: map[string]string{names.LabelName: names.ControllerName, names.LabelInstance: cluster.Name}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
	if err := env.Client.Create(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

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
