package controllers

import (
	"context"
	"testing"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/test/envtest"
)

// setTaints replaces a node's taints (and cordons it when unschedulable is set).
func setTaints(g Gomega, name string, unschedulable bool, taints ...corev1.Taint) {
	g.Expect(envtest.Update(context.Background(), env.Client, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, func(n *corev1.Node) {
		n.Spec.Taints, n.Spec.Unschedulable = taints, unschedulable
	})).To(Succeed())
}

// A node that never had a satellite gets none while it carries a NoSchedule or
// NoExecute taint the satellite pod does not tolerate (its pod would never run, and the
// cluster would wait for it), and the cluster's status says which and why. A node that
// has a satellite keeps it when it is tainted later: by the HA controller, a drain, or
// a NoExecute taint. A toleration in spec.satellite brings the skipped node in.
func TestUntoleratedTaintSkipsOnlyNodesWithoutASatellite(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	makeNode(t, "taint-a", "10.9.6.1", map[string]string{"suite": "taint"})
	makeNode(t, "taint-b", "10.9.6.2", map[string]string{"suite": "taint"})
	dedicated := corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}
	setTaints(g, "taint-b", false, dedicated)
	cluster := makeCluster(t, ns, linstorv1.LinstorClusterSpec{NodeSelector: map[string]string{"suite": "taint"}})

	noSatellite := func(g Gomega) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "taint-b"}, &linstorv1.LinstorSatellite{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a node whose taint the satellite pod does not tolerate got a LinstorSatellite (%v)", err)
	}
	skippedB := func(g Gomega) {
		c := getCluster(g, cluster)
		g.Expect(c.Status.SkippedNodes).To(HaveLen(1), "%+v", c.Status)
		g.Expect(c.Status.SkippedNodes[0].Name).To(Equal("taint-b"))
		g.Expect(c.Status.SkippedNodes[0].Reason).To(Equal(linstorv1.ReasonUntoleratedTaint))
		g.Expect(c.Status.SkippedNodes[0].Message).To(ContainSubstring("dedicated=db:NoSchedule"))
		g.Expect(c.Status.Satellites).To(Equal(linstorv1.SatelliteCounts{Ready: 1, Total: 1, Skipped: 1}))
		g.Expect(condition(c.Status.Conditions, linstorv1.ConditionAvailable).Status).To(Equal(metav1.ConditionTrue))
	}
	g.Eventually(func(g Gomega) {
		get(g, ns, "taint-a", &linstorv1.LinstorSatellite{})
		noSatellite(g)
		skippedB(g)
	}, timeout, tick).Should(Succeed())
	g.Consistently(noSatellite, "2s", tick).Should(Succeed())

	// taint-a, which has a satellite, is drained and tainted by the HA controller and
	// with an untolerated NoExecute taint: it keeps its satellite, whose pod tolerates
	// the HA controller's taints, and is not listed as skipped.
	satA := get(g, ns, "taint-a", &linstorv1.LinstorSatellite{})
	setTaints(g, "taint-a", true,
		corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule},
		corev1.Taint{Key: names.TaintLostQuorum, Effect: corev1.TaintEffectNoSchedule},
		corev1.Taint{Key: "maintenance", Effect: corev1.TaintEffectNoExecute})
	g.Consistently(func(g Gomega) {
		sat := get(g, ns, "taint-a", &linstorv1.LinstorSatellite{})
		g.Expect(sat.UID).To(Equal(satA.UID))
		g.Expect(sat.DeletionTimestamp.IsZero()).To(BeTrue(), "a tainted node's satellite is being removed")
		skippedB(g)
	}, "3s", tick).Should(Succeed())
	ds := get(g, ns, names.SatelliteDaemonSetName("taint-a"), &appsv1.DaemonSet{})
	g.Expect(ds.Spec.Template.Spec.Tolerations).To(ContainElements(
		corev1.Toleration{Key: names.TaintLostQuorum, Operator: corev1.TolerationOpExists},
		corev1.Toleration{Key: names.TaintForceIOError, Operator: corev1.TolerationOpExists}))

	// Tolerated in spec.satellite, taint-b gets its satellite and nothing is skipped.
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) {
		c.Spec.Satellite = &linstorv1.SatelliteSpec{ComponentSpec: linstorv1.ComponentSpec{Tolerations: []corev1.Toleration{
			{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "db", Effect: corev1.TaintEffectNoSchedule}}}}
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		get(g, ns, "taint-b", &linstorv1.LinstorSatellite{})
		c := getCluster(g, cluster)
		g.Expect(c.Status.SkippedNodes).To(BeEmpty())
		g.Expect(c.Status.Satellites.Skipped).To(BeZero())
	}, timeout, tick).Should(Succeed())
}

// A node that joins the selection with an untolerated taint is skipped, and gets its
// satellite once the taint is lifted (the cluster reconciler watches taints as it
// watches labels; other wake-ups would bring it later).
func TestTaintChangeIsSeen(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	makeNode(t, "tchg-a", "10.9.7.1", map[string]string{"suite": "tchg"})
	cluster := makeCluster(t, ns, linstorv1.LinstorClusterSpec{NodeSelector: map[string]string{"suite": "tchg"}})
	g.Eventually(func(g Gomega) { get(g, ns, "tchg-a", &linstorv1.LinstorSatellite{}) }, timeout, tick).Should(Succeed())
	makeNode(t, "tchg-b", "10.9.7.2", map[string]string{"suite": "other"})
	setTaints(g, "tchg-b", false, corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoExecute})
	g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := get(g, "", "tchg-b", &corev1.Node{})
		n.Labels["suite"] = "tchg"
		return env.Client.Update(context.Background(), n)
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(getCluster(g, cluster).Status.SkippedNodes).To(ConsistOf(HaveField("Name", "tchg-b")))
	}, timeout, tick).Should(Succeed())
	setTaints(g, "tchg-b", false)
	g.Eventually(func(g Gomega) {
		get(g, ns, "tchg-b", &linstorv1.LinstorSatellite{})
		g.Expect(getCluster(g, cluster).Status.SkippedNodes).To(BeEmpty())
	}, timeout, tick).Should(Succeed())
}
