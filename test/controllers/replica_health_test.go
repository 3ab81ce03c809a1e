package controllers

import (
	"context"
	"strings"
	"testing"

	lapi "github.com/LINBIT/golinstor/client"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/names"
)

// Every volume's health in sight: LINSTOR's resource view, read once per observer
// cycle, is classified resource by resource; the LinstorCluster counts and names the
// worst, Redundant turns and turns back, and the claim of the volume hears of it.

// boundClaim makes a PersistentVolume of the CSI driver for the LINSTOR resource rsc,
// bound to a claim in ns, and returns the claim.
func boundClaim(t *testing.T, ns, rsc string) *corev1.PersistentVolumeClaim {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	size := resource.MustParse("1Gi")
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-" + rsc, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}}, VolumeName: rsc}}
	g.Expect(env.Client.Create(ctx, pvc)).To(Succeed())
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: rsc}, Spec: corev1.PersistentVolumeSpec{
		Capacity: corev1.ResourceList{corev1.ResourceStorage: size}, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: names.CSIDriverName, VolumeHandle: rsc}},
		ClaimRef:               &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: pvc.Name, UID: pvc.UID},
	}}
	g.Expect(env.Client.Create(ctx, pv)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), pv) })
	return pvc
}

// claimEvent: the claim has an Event with this reason whose message says every part.
func claimEvent(g Gomega, pvc *corev1.PersistentVolumeClaim, reason string, parts ...string) {
	var events corev1.EventList
	g.Expect(env.Client.List(context.Background(), &events, client.InNamespace(pvc.Namespace))).To(Succeed())
	var seen []string
next:
	for _, e := range events.Items {
		if e.InvolvedObject.Kind != "PersistentVolumeClaim" || e.InvolvedObject.Name != pvc.Name {
			continue
		}
		seen = append(seen, e.Reason+": "+e.Message)
		if e.Reason != reason {
			continue
		}
		for _, p := range parts {
			if !strings.Contains(e.Message, p) {
				continue next
			}
		}
		return
	}
	g.Expect(seen).To(ContainElement(ContainSubstring(reason)), "no %s Event saying %v", reason, parts)
}

// worstEntry is the resource's entry in status.replicas.worst, if listed.
func worstEntry(g Gomega, c *linstorv1.LinstorCluster, rsc string) *linstorv1.ResourceHealth {
	c = getCluster(g, c)
	g.Expect(c.Status.Replicas).NotTo(BeNil(), "status.replicas")
	for _, h := range c.Status.Replicas.Worst {
		if h.Name == rsc {
			return &h
		}
	}
	return nil
}

func TestReplicaHealthShowsADegradedVolumeAndItsRecovery(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, cluster := availableCluster(t, "rh", linstorv1.LinstorSatelliteConfigurationSpec{StoragePools: []linstorv1.StoragePool{thinPool}}, "rh-a", "rh-b")
	g.Expect(emu.PlaceResource("pvc-rh", "rh-a", "thin", true)).To(Succeed())
	g.Expect(emu.PlaceResource("pvc-rh", "rh-b", "thin", false)).To(Succeed())
	t.Cleanup(func() { _ = emulatorClient(t).ResourceDefinitions.Delete(ctx, "pvc-rh") })
	pvc := boundClaim(t, ns, "pvc-rh")

	g.Eventually(func(g Gomega) {
		g.Expect(worstEntry(g, cluster, "pvc-rh")).To(BeNil(), "a healthy resource is not among the worst")
		g.Expect(getCluster(g, cluster).Status.Replicas.Healthy).To(BeNumerically(">=", 1))
	}, timeout, tick).Should(Succeed())

	// rh-b's satellite goes away: its replica's state is unknown, one UpToDate of 2.
	g.Expect(emu.SetNodeOnline("rh-b", false)).To(Succeed())
	t.Cleanup(func() { _ = emu.SetNodeOnline("rh-b", true) })
	g.Eventually(func(g Gomega) {
		h := worstEntry(g, cluster, "pvc-rh")
		g.Expect(h).NotTo(BeNil(), "the degraded resource is named")
		g.Expect(h.State).To(Equal("Degraded"))
		g.Expect(h.UpToDate).To(Equal(int32(1)))
		g.Expect(h.Placed).To(Equal(int32(2)))
		g.Expect(h.Message).To(ContainSubstring("rh-b"))
		r := condition(getCluster(g, cluster).Status.Conditions, linstorv1.ConditionRedundant)
		g.Expect(r.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(r.Message).To(ContainSubstring("pvc-rh"))
		claimEvent(g, pvc, "ReplicasDegraded", "pvc-rh")
		g.Expect(gauge(g, "linstor_operator_resources", map[string]string{"namespace": ns, "state": "Degraded"})).To(BeNumerically(">=", 1))
	}, timeout, tick).Should(Succeed())

	g.Expect(emu.SetNodeOnline("rh-b", true)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(worstEntry(g, cluster, "pvc-rh")).To(BeNil())
		claimEvent(g, pvc, "ReplicasRecovered", "pvc-rh")
	}, timeout, tick).Should(Succeed())
}

// A split brain: both sides of a cut link were written, then the link heals and DRBD
// refuses to connect them. Nothing is discarded until the user names the resource, the
// node whose changes go, and the resource's uid; then that replica is rebuilt from the
// survivor, and the survivor's data is what remains.
func TestSplitBrainIsResolvedOnlyOnConfirmation(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, cluster := availableCluster(t, "sb", linstorv1.LinstorSatelliteConfigurationSpec{StoragePools: []linstorv1.StoragePool{thinPool}}, "sb-a", "sb-b")
	g.Expect(emu.PlaceResource("pvc-sb", "sb-a", "thin", false)).To(Succeed())
	g.Expect(emu.PlaceResource("pvc-sb", "sb-b", "thin", false)).To(Succeed())
	t.Cleanup(func() { _ = emulatorClient(t).ResourceDefinitions.Delete(ctx, "pvc-sb") })
	pvc := boundClaim(t, ns, "pvc-sb")
	rds, err := emulatorClient(t).ResourceDefinitions.GetAll(ctx, lapi.RDGetAllRequest{})
	g.Expect(err).NotTo(HaveOccurred())
	var rd lapi.ResourceDefinitionWithVolumeDefinition
	for _, d := range rds {
		if d.Name == "pvc-sb" {
			rd = d
		}
	}
	g.Expect(rd.Uuid).NotTo(BeEmpty())

	// Both sides written apart, then the link heals: StandAlone.
	g.Expect(emu.PartitionLink("sb-a", "sb-b")).To(Succeed())
	for _, n := range []string{"sb-a", "sb-b"} {
		g.Expect(emu.SetInUse("pvc-sb", n, true)).To(Succeed())
		g.Expect(emu.SetInUse("pvc-sb", n, false)).To(Succeed())
	}
	g.Expect(emu.HealLink("sb-a", "sb-b")).To(Succeed())
	g.Eventually(func(g Gomega) {
		h := worstEntry(g, cluster, "pvc-sb")
		g.Expect(h).NotTo(BeNil())
		g.Expect(h.State).To(Equal("SplitBrain"))
		g.Expect(h.UID).To(Equal(rd.Uuid))
		g.Expect(h.Message).To(And(ContainSubstring("sb-a"), ContainSubstring("sb-b")))
		g.Expect(condition(getCluster(g, cluster).Status.Conditions, linstorv1.ConditionRedundant).Reason).To(Equal("SplitBrain"))
		claimEvent(g, pvc, "ReplicasSplitBrain", "pvc-sb")
	}, timeout, tick).Should(Succeed())

	annotate := func(v string) {
		g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) {
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations[names.AnnotationResolveSplitBrain] = v
		})).To(Succeed())
	}
	// A confirmation with another uid is refused and consumed; nothing is discarded.
	annotate("pvc-sb/sb-b/00000000-0000-0000-0000-000000000000")
	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		g.Expect(c.Annotations).NotTo(HaveKey(names.AnnotationResolveSplitBrain))
		g.Expect(c.Status.SplitBrainResolution).NotTo(BeNil())
		g.Expect(c.Status.SplitBrainResolution.Phase).To(Equal(linstorv1.SplitBrainRefused))
		g.Expect(c.Status.SplitBrainResolution.Message).To(ContainSubstring("has uid " + rd.Uuid))
	}, timeout, tick).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(worstEntry(g, cluster, "pvc-sb")).NotTo(BeNil())
		g.Expect(worstEntry(g, cluster, "pvc-sb").State).To(Equal("SplitBrain"), "a refused confirmation changed the resource")
	}, "3s", tick).Should(Succeed())

	// The right confirmation: sb-b's changes go, sb-a's stay.
	annotate("pvc-sb/sb-b/" + rd.Uuid)
	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		g.Expect(c.Status.SplitBrainResolution.Phase).To(Equal(linstorv1.SplitBrainResolved), "%+v", c.Status.SplitBrainResolution)
		g.Expect(worstEntry(g, cluster, "pvc-sb")).To(BeNil(), "the resource is healthy again")
	}, timeout, tick).Should(Succeed())
	for _, n := range []string{"sb-a", "sb-b"} {
		// sb-b's divergent writes are gone, sb-a's reached it: neither misses anything.
		g.Expect(newestOn(g, "pvc-sb", n)).To(BeTrue(), "%s must hold sb-a's data after the resolution", n)
	}
	claimEvent(g, pvc, "ReplicasRecovered", "pvc-sb")

	// The processed value is kept; applied again (a replay, or its removal was lost) it
	// is removed and nothing happens: no second discard, the record stays.
	done := getCluster(g, cluster).Status.SplitBrainResolution
	g.Expect(done.Confirmation).To(Equal("pvc-sb/sb-b/" + rd.Uuid))
	g.Expect(done.Attempts).To(BeNumerically(">=", 2), "one discard and one rebuild, each counted before it was sent")
	annotate("pvc-sb/sb-b/" + rd.Uuid)
	g.Eventually(func(g Gomega) {
		g.Expect(getCluster(g, cluster).Annotations).NotTo(HaveKey(names.AnnotationResolveSplitBrain))
	}, timeout, tick).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(getCluster(g, cluster).Status.SplitBrainResolution).To(Equal(done), "a replayed confirmation acted")
	}, "3s", tick).Should(Succeed())
}
