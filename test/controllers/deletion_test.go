package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"

	lapi "github.com/LINBIT/golinstor/client"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// unselect removes a node from the cluster's selection by relabelling it.
func unselect(t *testing.T, name string) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node := get(g, "", name, &corev1.Node{})
		node.Labels["suite"] = "gone"
		return env.Client.Update(context.Background(), node)
	})).To(Succeed())
}

func satelliteGone(ns, name string) func() bool {
	return func() bool {
		return apierrors.IsNotFound(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &linstorv1.LinstorSatellite{}))
	}
}

func TestDeletionPolicyRetainKeepsTheLinstorNode(t *testing.T) {
	g := NewWithT(t)
	ns, _ := availableCluster(t, "retain", linstorv1.LinstorSatelliteConfigurationSpec{}, "retain-a", "retain-b")
	unselect(t, "retain-b")
	g.Eventually(satelliteGone(ns, "retain-b"), timeout, tick).Should(BeTrue())
	_, ok := emu.Node("retain-b")
	g.Expect(ok).To(BeTrue(), "Retain deleted the LINSTOR node")
}

// LINSTOR would delete a node holding the only replica of a resource (it refuses only
// the last diskful replica of a resource with diskless peers): the operator checks
// first, and waits until an UpToDate copy exists elsewhere.
func TestDeletionPolicyDeleteWaitsForTheLastReplica(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _ := availableCluster(t, "del", linstorv1.LinstorSatelliteConfigurationSpec{
		StoragePools: []linstorv1.StoragePool{thinPool}, DeletionPolicy: linstorv1.DeletionDelete,
	}, "del-a", "del-b")
	g.Expect(emu.PlaceResource("pvc-del", "del-b", "thin", false)).To(Succeed())

	unselect(t, "del-b")
	waitsFor := func(g Gomega, reason, msg string) {
		sat := get(g, ns, "del-b", &linstorv1.LinstorSatellite{})
		d := condition(sat.Status.Conditions, linstorv1.ConditionDegraded)
		g.Expect(d.Reason).To(Equal(reason))
		g.Expect(d.Message).To(ContainSubstring(msg))
	}
	g.Eventually(func(g Gomega) { waitsFor(g, linstorv1.ReasonHoldsLastReplica, "only up-to-date copy of pvc-del") }, timeout, tick).Should(Succeed())
	_, ok := emu.Node("del-b")
	g.Expect(ok).To(BeTrue(), "a node holding the only replica was deleted")

	// A second replica that is still resyncing is no copy yet.
	g.Expect(emu.PlaceResource("pvc-del", "del-a", "thin", false)).To(Succeed())
	g.Expect(emu.SetDiskState("pvc-del", "del-a", "Inconsistent")).To(Succeed())
	g.Consistently(func(g Gomega) { waitsFor(g, linstorv1.ReasonHoldsLastReplica, "pvc-del") }, "3s", tick).Should(Succeed())

	// Once it is UpToDate the delete is safe.
	g.Expect(emu.SetDiskState("pvc-del", "del-a", "UpToDate")).To(Succeed())
	g.Eventually(satelliteGone(ns, "del-b"), timeout, tick).Should(BeTrue())
	_, ok = emu.Node("del-b")
	g.Expect(ok).To(BeFalse())
	g.Expect(emulatorClient(t).Resources.Delete(ctx, "pvc-del", "del-a")).To(Succeed())
}

// Evacuate: LINSTOR places a replacement that resyncs, and removes the source once it
// is no longer in use; the satellite says what it waits for.
func TestDeletionPolicyEvacuateMovesResourcesThenDeletes(t *testing.T) {
	g := NewWithT(t)
	ns, _ := availableCluster(t, "evac", linstorv1.LinstorSatelliteConfigurationSpec{
		StoragePools: []linstorv1.StoragePool{thinPool}, DeletionPolicy: linstorv1.DeletionEvacuate,
	}, "evac-a", "evac-b")
	g.Expect(emu.PlaceResource("pvc-evac", "evac-b", "thin", true)).To(Succeed())

	unselect(t, "evac-b")
	g.Eventually(func(g Gomega) {
		sat := get(g, ns, "evac-b", &linstorv1.LinstorSatellite{})
		d := condition(sat.Status.Conditions, linstorv1.ConditionDegraded)
		g.Expect(d.Reason).To(Equal(linstorv1.ReasonWaitingForEvacuate))
		g.Expect(d.Message).To(ContainSubstring("in use on the node"))
	}, timeout, tick).Should(Succeed())
	// The autoplacer may choose any node with room (other tests' nodes too).
	g.Expect(len(emu.Replicas("pvc-evac"))).To(Equal(2), "LINSTOR placed no replacement: %v", emu.Replicas("pvc-evac"))
	_, ok := emu.Node("evac-b")
	g.Expect(ok).To(BeTrue())

	g.Expect(emu.SetInUse("pvc-evac", "evac-b", false)).To(Succeed())
	g.Eventually(satelliteGone(ns, "evac-b"), timeout, tick).Should(BeTrue())
	_, ok = emu.Node("evac-b")
	g.Expect(ok).To(BeFalse())
	g.Expect(emu.Replicas("pvc-evac")).To(HaveLen(1), "the data must survive on the replacement")
}

// A replica with nowhere to go: LINSTOR keeps it, answers a warning golinstor drops,
// and never retries. The operator reports it (condition and event naming the
// resource), never deletes the node, and asks LINSTOR again once there is room.
func TestStuckEvacuationIsReportedAndRetried(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	// A ZFS pool: no other test's node has one, so nothing else can take the replica.
	ns, _ := availableCluster(t, "stuck", linstorv1.LinstorSatelliteConfigurationSpec{
		StoragePools: []linstorv1.StoragePool{{Name: "zthin", ZfsThinPool: &linstorv1.ZfsPool{}}}, DeletionPolicy: linstorv1.DeletionEvacuate,
	}, "stuck-a", "stuck-b")
	g.Expect(emu.PlaceResource("pvc-stuck", "stuck-a", "zthin", false)).To(Succeed())
	g.Expect(emu.PlaceResource("pvc-stuck", "stuck-b", "zthin", false)).To(Succeed())

	unselect(t, "stuck-b")
	g.Eventually(func(g Gomega) {
		sat := get(g, ns, "stuck-b", &linstorv1.LinstorSatellite{})
		d := condition(sat.Status.Conditions, linstorv1.ConditionDegraded)
		g.Expect(d.Reason).To(Equal(linstorv1.ReasonEvacuationStuck))
		g.Expect(d.Message).To(ContainSubstring("cannot move"))
		g.Expect(d.Message).To(ContainSubstring("pvc-stuck"))
		var events corev1.EventList
		g.Expect(env.Client.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
		found := false
		for _, e := range events.Items {
			found = found || e.Reason == "EvacuationStuck" && strings.Contains(e.Message, "pvc-stuck")
		}
		g.Expect(found).To(BeTrue(), "no EvacuationStuck event naming the resource")
	}, timeout, tick).Should(Succeed())
	g.Consistently(func() bool { _, ok := emu.Node("stuck-b"); return ok }, "2s", tick).Should(BeTrue())

	// Room appears: a third node with the pool. The operator asks again and it moves.
	makeNode(t, "stuck-c", "10.30.0.3", map[string]string{"suite": "stuck"})
	g.Eventually(func() bool { return emu.ResourcePlaced("pvc-stuck", "stuck-c") }, timeout, tick).Should(BeTrue(), "the evacuation was not retried")
	g.Eventually(satelliteGone(ns, "stuck-b"), timeout, tick).Should(BeTrue())
}

func TestDeletingTheClusterKeepsLinstorNodes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, cluster := availableCluster(t, "keep", linstorv1.LinstorSatelliteConfigurationSpec{DeletionPolicy: linstorv1.DeletionDelete}, "keep-a")
	g.Expect(env.Client.Delete(ctx, cluster)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(cluster), &linstorv1.LinstorCluster{}))
	}, timeout, tick).Should(BeTrue())
	// What the garbage collector (absent in envtest) does with the owned satellites.
	g.Expect(env.Client.DeleteAllOf(ctx, &linstorv1.LinstorSatellite{}, client.InNamespace(ns))).To(Succeed())
	g.Eventually(satelliteGone(ns, "keep-a"), timeout, tick).Should(BeTrue(), func() string {
		var s linstorv1.LinstorSatellite
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "keep-a"}, &s)
		return fmt.Sprintf("%v %+v %+v", err, s.ObjectMeta, s.Status)
	})
	_, ok := emu.Node("keep-a")
	g.Expect(ok).To(BeTrue(), "deleting the LinstorCluster deleted a LINSTOR node")
}

func TestMaxConcurrentEvacuations(t *testing.T) {
	g := NewWithT(t)
	ns, _ := availableCluster(t, "maxev", linstorv1.LinstorSatelliteConfigurationSpec{
		StoragePools: []linstorv1.StoragePool{thinPool}, DeletionPolicy: linstorv1.DeletionEvacuate,
		MaxConcurrentEvacuations: ptr.To[int32](1),
	}, "maxev-a", "maxev-b", "maxev-c")
	// An evacuation runs on maxev-a and cannot finish while its resource is in use.
	g.Expect(emu.PlaceResource("pvc-maxev", "maxev-a", "thin", true)).To(Succeed())
	emuClient := emulatorClient(t)
	g.Expect(emuClient.Nodes.Evacuate(context.Background(), "maxev-a", lapi.NodeEvacuate{})).To(Succeed())

	unselect(t, "maxev-b")
	g.Eventually(func(g Gomega) {
		sat := get(g, ns, "maxev-b", &linstorv1.LinstorSatellite{})
		g.Expect(condition(sat.Status.Conditions, linstorv1.ConditionDegraded).Message).To(ContainSubstring("maxConcurrentEvacuations is 1"))
	}, timeout, tick).Should(Succeed())
	n, _ := emu.Node("maxev-b")
	g.Expect(n.Flags).NotTo(ContainElement("EVACUATE"), "a second evacuation started beyond the limit")

	// When the running evacuation ends (its source unmounted, the node deleted), the next one starts.
	g.Expect(emu.SetInUse("pvc-maxev", "maxev-a", false)).To(Succeed())
	g.Eventually(func() bool { return emu.ResourcePlaced("pvc-maxev", "maxev-a") }, timeout, tick).Should(BeFalse(), "replicas: %v", emu.Replicas("pvc-maxev"))
	g.Expect(emuClient.Nodes.Delete(context.Background(), "maxev-a")).To(Succeed())
	g.Eventually(satelliteGone(ns, "maxev-b"), timeout, tick).Should(BeTrue())
}

// A nodeSelector typo drops most of the cluster's satellites at once: nothing is
// evacuated or deleted until the removal is confirmed, and the cluster says why.
func TestMassRemovalNeedsConfirmation(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, cluster := availableCluster(t, "mass", linstorv1.LinstorSatelliteConfigurationSpec{
		StoragePools: []linstorv1.StoragePool{thinPool}, DeletionPolicy: linstorv1.DeletionDelete,
	}, "mass-a", "mass-b", "mass-c")
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) { c.Spec.NodeSelector = map[string]string{"suite": "mas"} })).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		d := condition(c.Status.Conditions, linstorv1.ConditionDegraded)
		g.Expect(d.Reason).To(Equal(linstorv1.ReasonRemovalHeld))
		g.Expect(d.Message).To(ContainSubstring("linstor.io/confirm-removal=3"))
	}, timeout, tick).Should(Succeed())
	g.Consistently(func(g Gomega) {
		for _, n := range []string{"mass-a", "mass-b", "mass-c"} {
			_, ok := emu.Node(n)
			g.Expect(ok).To(BeTrue(), "a LINSTOR node was removed without confirmation")
		}
	}, "2s", tick).Should(Succeed())

	// Fixing the selector brings them back, nothing lost.
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) { c.Spec.NodeSelector = map[string]string{"suite": "mass"} })).To(Succeed())
	g.Eventually(func(g Gomega) {
		var l linstorv1.LinstorSatelliteList
		g.Expect(env.Client.List(ctx, &l, client.InNamespace(ns))).To(Succeed())
		live := 0
		for _, s := range l.Items {
			if s.DeletionTimestamp.IsZero() {
				live++
			}
		}
		g.Expect(live).To(Equal(3))
	}, timeout, tick).Should(Succeed())
	g.Eventually(func(g Gomega) {
		d := condition(getCluster(g, cluster).Status.Conditions, linstorv1.ConditionDegraded)
		g.Expect(d.Reason).NotTo(Equal(linstorv1.ReasonRemovalHeld))
	}, timeout, tick).Should(Succeed())

	// Meant it: confirmed for exactly this many, the removal goes ahead.
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) {
		c.Spec.NodeSelector = map[string]string{"suite": "mas"}
		c.Annotations = map[string]string{"linstor.io/confirm-removal": "3"}
	})).To(Succeed())
	for _, n := range []string{"mass-a", "mass-b", "mass-c"} {
		g.Eventually(satelliteGone(ns, n), timeout, tick).Should(BeTrue(), func() string {
			var s linstorv1.LinstorSatellite
			_ = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, &s)
			return fmt.Sprintf("%s: %+v; replicas: %v", n, s.Status.Conditions, emu.Replicas("pvc-mass"))
		})
		g.Eventually(func() bool { _, ok := emu.Node(n); return ok }, timeout, tick).Should(BeFalse())
	}
}
