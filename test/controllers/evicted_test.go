package controllers

import (
	"context"
	"testing"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// setNodeReady sets the Kubernetes node's Ready condition, as its kubelet (or the node
// lifecycle controller) would.
func setNodeReady(g Gomega, name string, status corev1.ConditionStatus) {
	setNodeReadySince(g, name, status, time.Now())
}

// setNodeReadySince sets the Ready condition as having changed to status at since.
func setNodeReadySince(g Gomega, name string, status corev1.ConditionStatus, since time.Time) {
	g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := &corev1.Node{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
			return err
		}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: "Test", Message: "set by the test",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.NewTime(since)}}
		return env.Client.Status().Update(context.Background(), n)
	})).To(Succeed())
}

// runSatellitePod makes the satellite pod of node, Running and Ready since now: envtest
// has no DaemonSet controller and no kubelet, so the object stands for the pod.
func runSatellitePod(t *testing.T, g Gomega, ns, node string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	ds := get(g, ns, names.SatelliteDaemonSetName(node), &appsv1.DaemonSet{})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "linstor-satellite-", Namespace: ns, Labels: ds.Spec.Selector.MatchLabels},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "linstor-satellite", Image: "x"}}}}
	g.Expect(env.Client.Create(ctx, pod)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(ctx, pod) })
	markPodReady(g, pod)
	return pod
}

// markPodReady sets the pod Running and Ready since now, as a kubelet does when its
// containers (re)start and pass their readiness probe.
func markPodReady(g Gomega, pod *corev1.Pod) {
	g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		pod.Status.Phase = corev1.PodRunning
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
		return env.Client.Status().Update(context.Background(), pod)
	})).To(Succeed())
}

// An evicted node is restored only once it is back: Kubernetes reports the node Ready
// and its satellite pod running and Ready for the settle time (LINSTOR never connects
// to an evicted node, so its OFFLINE says nothing). Until then the satellite's status
// says why the node stays evicted.
func TestEvictedNodeIsRestoredOnlyWhenBack(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _ := availableCluster(t, "evict", linstorv1.LinstorSatelliteConfigurationSpec{}, "evict-a")
	setNodeReady(g, "evict-a", corev1.ConditionFalse)
	// LINSTOR evicts only a node whose satellite is gone (an ONLINE one is refused).
	g.Expect(emulatorClient(t).Nodes.Evict(ctx, "evict-a")).To(MatchError(ContainSubstring("online node")))
	g.Expect(emu.SetNodeOnline("evict-a", false)).To(Succeed())
	g.Expect(emulatorClient(t).Nodes.Evict(ctx, "evict-a")).To(Succeed())
	// The satellite process may well run (a network cut): LINSTOR still reports the
	// evicted node OFFLINE and never connects to it.
	g.Expect(emu.SetNodeOnline("evict-a", true)).To(Succeed())

	staysEvicted := func(why string) func(g Gomega) {
		return func(g Gomega) {
			n, _ := emu.Node("evict-a")
			g.Expect(n.Flags).To(ContainElement("EVICTED"), "the node was restored while Kubernetes did not report it back")
			a := condition(get(g, ns, "evict-a", &linstorv1.LinstorSatellite{}).Status.Conditions, linstorv1.ConditionAvailable)
			g.Expect(a.Reason).To(Equal(linstorv1.ReasonNodeEvicted))
			g.Expect(a.Message).To(ContainSubstring(why))
		}
	}
	// The Kubernetes node is NotReady (it is still dead): the node stays evicted, for
	// longer than the settle time of this suite (2 s).
	g.Eventually(staysEvicted("Ready=False"), timeout, tick).Should(Succeed())
	g.Consistently(staysEvicted("Ready=False"), "4s", tick).Should(Succeed())

	// Ready again, but no satellite pod runs there yet.
	setNodeReady(g, "evict-a", corev1.ConditionTrue)
	g.Eventually(staysEvicted("no satellite pod runs on the node"), timeout, tick).Should(Succeed())
	g.Consistently(staysEvicted("no satellite pod runs on the node"), "3s", tick).Should(Succeed())

	// The satellite pod runs and is ready: restored after the settle time, and LINSTOR
	// connects again.
	runSatellitePod(t, g, ns, "evict-a")
	g.Eventually(staysEvicted("ready since"), timeout, tick).Should(Succeed())
	g.Eventually(func(g Gomega) {
		n, _ := emu.Node("evict-a")
		g.Expect(n.Flags).NotTo(ContainElement("EVICTED"))
		g.Expect(n.ConnectionStatus).To(Equal("ONLINE"))
		a := condition(get(g, ns, "evict-a", &linstorv1.LinstorSatellite{}).Status.Conditions, linstorv1.ConditionAvailable)
		g.Expect(a.Status).To(Equal(metav1.ConditionTrue))
	}, timeout, tick).Should(Succeed())
}

// A restore that does not bring the node back (LINSTOR cannot reach the satellite
// although Kubernetes reports it ready) is not repeated when LINSTOR evicts the node
// again: the status says to restore it by hand. A restarted satellite pod tries again.
func TestEvictedAgainAfterARestoreWaitsForAChange(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _ := availableCluster(t, "reevict", linstorv1.LinstorSatelliteConfigurationSpec{}, "reevict-a")
	setNodeReady(g, "reevict-a", corev1.ConditionTrue)
	pod := runSatellitePod(t, g, ns, "reevict-a")
	// The controller cannot reach the satellite (a cut between them), Kubernetes can.
	g.Expect(emu.SetNodeOnline("reevict-a", false)).To(Succeed())
	g.Expect(emulatorClient(t).Nodes.Evict(ctx, "reevict-a")).To(Succeed())
	g.Eventually(func(g Gomega) {
		n, _ := emu.Node("reevict-a")
		g.Expect(n.Flags).NotTo(ContainElement("EVICTED"), "the node that is back in Kubernetes was not restored")
		g.Expect(n.ConnectionStatus).To(Equal("OFFLINE"))
		// The operator has seen it restored and OFFLINE.
		a := condition(get(g, ns, "reevict-a", &linstorv1.LinstorSatellite{}).Status.Conditions, linstorv1.ConditionAvailable)
		g.Expect(a.Reason).To(Equal(linstorv1.ReasonNodeOffline))
	}, timeout, tick).Should(Succeed())

	// LINSTOR evicts it again (its auto-evict, AutoEvictAfterTime after the restore, the
	// node OFFLINE all along).
	g.Expect(emulatorClient(t).Nodes.Evict(ctx, "reevict-a")).To(Succeed())
	evicted := func(g Gomega) {
		n, _ := emu.Node("reevict-a")
		g.Expect(n.Flags).To(ContainElement("EVICTED"), "restored again although nothing changed")
		sat := get(g, ns, "reevict-a", &linstorv1.LinstorSatellite{})
		a := condition(sat.Status.Conditions, linstorv1.ConditionAvailable)
		g.Expect(a.Reason).To(Equal(linstorv1.ReasonNodeEvicted), "%+v", sat.Status)
		g.Expect(a.Message).To(ContainSubstring("linstor node restore reevict-a"))
	}
	g.Eventually(evicted, timeout, tick).Should(Succeed())
	g.Consistently(evicted, "4s", tick).Should(Succeed())

	// The satellite pod restarts (ready again, after the restore): tried again.
	g.Expect(emu.SetNodeOnline("reevict-a", true)).To(Succeed())
	markPodReady(g, pod)
	g.Eventually(func(g Gomega) {
		n, _ := emu.Node("reevict-a")
		g.Expect(n.Flags).NotTo(ContainElement("EVICTED"))
		g.Expect(n.ConnectionStatus).To(Equal("ONLINE"))
	}, timeout, tick).Should(Succeed())
}
