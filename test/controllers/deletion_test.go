package controllers

import (
	"context"
	"fmt"
	"testing"

	lapi "github.com/LINBIT/golinstor/client"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
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

func TestDeletionPolicyDeleteWaitsForTheLastReplica(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _ := availableCluster(t, "del", linstorv1.LinstorSatelliteConfigurationSpec{
		StoragePools: []linstorv1.StoragePool{thinPool}, DeletionPolicy: linstorv1.DeletionDelete,
	}, "del-a", "del-b")
	g.Expect(emu.PlaceResource("pvc-del", "del-b", "thin", false)).To(Succeed())

	unselect(t, "del-b")
	g.Eventually(func(g Gomega) {
		sat := get(g, ns, "del-b", &linstorv1.LinstorSatellite{})
		d := condition(sat.Status.Conditions, linstorv1.ConditionDegraded)
		g.Expect(d.Message).To(ContainSubstring("last up-to-date replica"))
	}, timeout, tick).Should(Succeed())
	_, ok := emu.Node("del-b")
	g.Expect(ok).To(BeTrue(), "a node holding the last replica was deleted")

	// A second replica elsewhere makes the delete safe.
	g.Expect(emu.PlaceResource("pvc-del", "del-a", "thin", false)).To(Succeed())
	g.Eventually(satelliteGone(ns, "del-b"), timeout, tick).Should(BeTrue())
	_, ok = emu.Node("del-b")
	g.Expect(ok).To(BeFalse())
	g.Expect(emulatorClient(t).Resources.Delete(ctx, "pvc-del", "del-a")).To(Succeed())
}

func TestDeletionPolicyEvacuateMovesResourcesThenDeletes(t *testing.T) {
	g := NewWithT(t)
	ns, _ := availableCluster(t, "evac", linstorv1.LinstorSatelliteConfigurationSpec{
		StoragePools: []linstorv1.StoragePool{thinPool}, DeletionPolicy: linstorv1.DeletionEvacuate,
	}, "evac-a", "evac-b")
	g.Expect(emu.PlaceResource("pvc-evac", "evac-b", "thin", true)).To(Succeed())

	unselect(t, "evac-b")
	// In use: LINSTOR refuses to evacuate, the satellite waits and says so.
	g.Eventually(func(g Gomega) {
		sat := get(g, ns, "evac-b", &linstorv1.LinstorSatellite{})
		g.Expect(condition(sat.Status.Conditions, linstorv1.ConditionDegraded).Message).To(ContainSubstring("in use"))
	}, timeout, tick).Should(Succeed())
	g.Expect(emu.PlaceResource("pvc-evac", "evac-b", "thin", false)).To(Succeed())
	g.Eventually(satelliteGone(ns, "evac-b"), timeout, tick).Should(BeTrue())
	_, ok := emu.Node("evac-b")
	g.Expect(ok).To(BeFalse())
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
		MaxConcurrentEvacuations: ptrTo[int32](1),
	}, "maxev-a", "maxev-b", "maxev-c")
	// maxev-a's evacuation cannot finish while its resource is in use.
	g.Expect(emu.PlaceResource("pvc-maxev", "maxev-a", "thin", true)).To(Succeed())
	g.Expect(emu.PlaceResource("pvc-maxev2", "maxev-a", "thin", false)).To(Succeed())
	emuClient := emulatorClient(t)
	g.Expect(emuClient.Nodes.Evacuate(context.Background(), "maxev-a", lapi.NodeEvacuate{})).NotTo(Succeed(), "in use: LINSTOR refuses")
	// Simulate an evacuation already running on maxev-a.
	g.Expect(emu.PlaceResource("pvc-maxev", "maxev-a", "thin", false)).To(Succeed())
	g.Expect(emuClient.Nodes.Evacuate(context.Background(), "maxev-a", lapi.NodeEvacuate{})).To(Succeed())

	unselect(t, "maxev-b")
	g.Eventually(func(g Gomega) {
		sat := get(g, ns, "maxev-b", &linstorv1.LinstorSatellite{})
		g.Expect(condition(sat.Status.Conditions, linstorv1.ConditionDegraded).Message).To(ContainSubstring("maxConcurrentEvacuations is 1"))
	}, timeout, tick).Should(Succeed())
	n, _ := emu.Node("maxev-b")
	g.Expect(n.Flags).NotTo(ContainElement("EVACUATE"), "a second evacuation started beyond the limit")

	// When the running evacuation ends (the node is gone), the next one starts.
	g.Expect(emuClient.Nodes.Delete(context.Background(), "maxev-a")).To(Succeed())
	g.Eventually(satelliteGone(ns, "maxev-b"), timeout, tick).Should(BeTrue())
}
