package controllers

import (
	"context"
	"net"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

func byName(names ...string) *corev1.NodeSelector {
	var terms []corev1.NodeSelectorTerm
	for _, n := range names {
		terms = append(terms, corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{n}}}})
	}
	return &corev1.NodeSelector{NodeSelectorTerms: terms}
}

// Narrowing spec.nodeAffinity to one node of three asks to remove two thirds of the
// cluster: held until confirmed, like a nodeSelector typo, and nothing is removed.
func TestNodeAffinityNarrowingIsHeld(t *testing.T) {
	g := NewWithT(t)
	_, cluster := narrowedToOneOfThreeIsHeld(t, "naff", linstorv1.LinstorSatelliteConfigurationSpec{
		StoragePools: []linstorv1.StoragePool{thinPool}, DeletionPolicy: linstorv1.DeletionDelete,
	})

	// Widened again (any term matches): nothing is held any more.
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) { c.Spec.NodeAffinity = byName("naff-a", "naff-b", "naff-c") })).To(Succeed())
	g.Eventually(func(g Gomega) {
		d := condition(getCluster(g, cluster).Status.Conditions, linstorv1.ConditionDegraded)
		g.Expect(d.Reason).NotTo(Equal(linstorv1.ReasonRemovalHeld))
	}, timeout, tick).Should(Succeed())
}

// A node the satellite pods' own nodeSelector or required affinity excludes gets no
// LinstorSatellite: its pod could never run there.
func TestSatellitePodRulesDecideWhichNodesGetSatellites(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	makeNode(t, "podsel-a", "10.7.0.1", map[string]string{"suite": "podsel", "linstor": "yes", "zone": "z1"})
	makeNode(t, "podsel-b", "10.7.0.2", map[string]string{"suite": "podsel", "zone": "z1"})
	makeNode(t, "podsel-c", "10.7.0.3", map[string]string{"suite": "podsel", "linstor": "yes", "zone": "z2"})
	g.Expect(env.Client.Create(context.Background(), &linstorv1.LinstorSatelliteConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "all", Namespace: ns}})).To(Succeed())
	sat := &linstorv1.SatelliteSpec{ComponentSpec: linstorv1.ComponentSpec{
		NodeSelector: map[string]string{"linstor": "yes"},
		Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"z1"}}}}},
		}}},
	}}
	cluster := makeCluster(t, ns, linstorv1.LinstorClusterSpec{NodeSelector: map[string]string{"suite": "podsel"}, Satellite: sat})
	g.Eventually(func(g Gomega) {
		g.Expect(getCluster(g, cluster).Status.SatellitesSummary).To(Equal("1/1"))
		g.Expect(get(g, ns, "all", &linstorv1.LinstorSatelliteConfiguration{}).Status.MatchedNodes).To(Equal([]string{"podsel-a"}))
	}, timeout, tick).Should(Succeed())
	var sats linstorv1.LinstorSatelliteList
	g.Expect(env.Client.List(context.Background(), &sats)).To(Succeed())
	for _, s := range sats.Items {
		g.Expect(s.Name).NotTo(BeElementOf("podsel-b", "podsel-c"), "a node the satellite pods cannot run on got a LinstorSatellite")
	}
}

// ipFamilies choose the InternalIP the satellite is registered at; a node with no
// address of those families is not registered, and its satellite says why.
func TestIPFamiliesChooseTheRegisteredAddress(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	dual := makeNode(t, "ipf-dual", "10.8.0.1", map[string]string{"suite": "ipf"})
	dual.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.8.0.1"}, {Type: corev1.NodeInternalIP, Address: "fd00:8::1"}}
	g.Expect(env.Client.Status().Update(ctx, dual)).To(Succeed())
	makeNode(t, "ipf-v4", "10.8.0.2", map[string]string{"suite": "ipf"})
	g.Expect(env.Client.Create(ctx, &linstorv1.LinstorSatelliteConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "v6", Namespace: ns},
		Spec: linstorv1.LinstorSatelliteConfigurationSpec{IPFamilies: []linstorv1.IPFamily{linstorv1.IPv6}}})).To(Succeed())
	makeCluster(t, ns, linstorv1.LinstorClusterSpec{NodeSelector: map[string]string{"suite": "ipf"}})

	g.Eventually(func(g Gomega) {
		n, ok := emu.Node("ipf-dual")
		g.Expect(ok).To(BeTrue())
		g.Expect(n.NetInterfaces).To(HaveLen(1))
		g.Expect(n.NetInterfaces[0].Address.Equal(net.ParseIP("fd00:8::1"))).To(BeTrue(), "registered at %s", n.NetInterfaces[0].Address)
		sat := get(g, ns, "ipf-v4", &linstorv1.LinstorSatellite{})
		g.Expect(sat.Spec.IPFamilies).To(Equal([]linstorv1.IPFamily{linstorv1.IPv6}))
		d := condition(sat.Status.Conditions, linstorv1.ConditionDegraded)
		g.Expect(d.Reason).To(Equal(linstorv1.ReasonNoAddressInIPFamilies))
		g.Expect(d.Message).To(ContainSubstring("no InternalIP address of ipFamilies IPv6 (it has 10.8.0.2)"))
	}, timeout, tick).Should(Succeed())
	_, registered := emu.Node("ipf-v4")
	g.Expect(registered).To(BeFalse(), "a node was registered at an address of a family ipFamilies excludes")

	// Preferring IPv4 moves the registered address of the dual-stack node.
	g.Expect(retryUpdate(ctx, ns, "v6", func(c *linstorv1.LinstorSatelliteConfiguration) {
		c.Spec.IPFamilies = []linstorv1.IPFamily{linstorv1.IPv4, linstorv1.IPv6}
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		n, _ := emu.Node("ipf-dual")
		g.Expect(n.NetInterfaces).To(HaveLen(1))
		g.Expect(n.NetInterfaces[0].Address.Equal(net.ParseIP("10.8.0.1"))).To(BeTrue(), "registered at %s", n.NetInterfaces[0].Address)
		_, ok := emu.Node("ipf-v4")
		g.Expect(ok).To(BeTrue())
	}, timeout, tick).Should(Succeed())
}

func retryUpdate(ctx context.Context, ns, name string, mutate func(*linstorv1.LinstorSatelliteConfiguration)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var c linstorv1.LinstorSatelliteConfiguration
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &c); err != nil {
			return err
		}
		mutate(&c)
		return env.Client.Update(ctx, &c)
	})
}

// expandFrom end to end: one LINSTOR property per matching label, and a generated name
// LINSTOR would refuse is left out and named in the configuration's status.
func TestExpandFromReachesLinstor(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	node := makeNode(t, "expand-a", "10.9.0.1", map[string]string{"suite": "expand", "topo.example.com/zone": "z1", "topo.example.com/rack": "r1"})
	g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := get(g, "", node.Name, &corev1.Node{})
		n.Annotations = map[string]string{"notes.example.com/a": "ok", "notes.example.com/b": "has space"}
		return env.Client.Update(ctx, n)
	})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &linstorv1.LinstorSatelliteConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "expand", Namespace: ns},
		Spec: linstorv1.LinstorSatelliteConfigurationSpec{Properties: []linstorv1.NodeProperty{
			{Name: "Aux/topo/", ExpandFrom: &linstorv1.NodePropertyExpansion{NodeFieldRef: "metadata.labels['topo.example.com/*']", NameTemplate: "$1"}},
			{Name: "Aux/notes/", ExpandFrom: &linstorv1.NodePropertyExpansion{NodeFieldRef: "metadata.annotations['notes.example.com/*']", NameTemplate: "$2"}},
		}}})).To(Succeed())
	makeCluster(t, ns, linstorv1.LinstorClusterSpec{NodeSelector: map[string]string{"suite": "expand"}})

	g.Eventually(func(g Gomega) {
		sat := get(g, ns, "expand-a", &linstorv1.LinstorSatellite{})
		g.Expect(sat.Spec.Properties).To(Equal([]linstorv1.Property{
			{Name: "Aux/notes/ok", Value: "ok"}, {Name: "Aux/topo/rack", Value: "r1"}, {Name: "Aux/topo/zone", Value: "z1"},
		}))
		n, ok := emu.Node("expand-a")
		g.Expect(ok).To(BeTrue())
		g.Expect(n.Props).To(HaveKeyWithValue("Aux/topo/zone", "z1"))
		g.Expect(n.Props).To(HaveKeyWithValue("Aux/topo/rack", "r1"))
		applied := condition(get(g, ns, "expand", &linstorv1.LinstorSatelliteConfiguration{}).Status.Conditions, linstorv1.ConditionApplied)
		g.Expect(applied.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(applied.Reason).To(Equal(linstorv1.ReasonPropertiesSkipped))
		g.Expect(applied.Message).To(ContainSubstring(`property "Aux/notes/has space" (from annotation "notes.example.com/b" of node expand-a) is not a property name`))
	}, timeout, tick).Should(Succeed())
}

// Retain (the default) touches nothing in LINSTOR, but removing the satellites stops
// them: LINSTOR loses those nodes and their replicas go unmanaged. So a narrowing that
// drops two of three Retain satellites is held as well; confirmed, they go, and LINSTOR
// keeps the nodes.
func TestRetainNarrowingIsHeld(t *testing.T) {
	g := NewWithT(t)
	ns, cluster := narrowedToOneOfThreeIsHeld(t, "rnar", linstorv1.LinstorSatelliteConfigurationSpec{})
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations["linstor.io/confirm-removal"] = "2"
	})).To(Succeed())
	for _, n := range []string{"rnar-b", "rnar-c"} {
		g.Eventually(satelliteGone(ns, n), timeout, tick).Should(BeTrue())
		_, ok := emu.Node(n)
		g.Expect(ok).To(BeTrue(), "Retain deleted the LINSTOR node %s", n)
	}
}

// narrowedToOneOfThreeIsHeld makes an Available cluster of nodes <prefix>-a, -b and -c,
// narrows spec.nodeAffinity to -a, and checks that removing the other two (two thirds of
// the cluster) is held: RemovalHeld asks for confirm-removal=2, and for 2 s no satellite
// is being removed and no LINSTOR node is gone.
func narrowedToOneOfThreeIsHeld(t *testing.T, prefix string, cfg linstorv1.LinstorSatelliteConfigurationSpec) (string, *linstorv1.LinstorCluster) {
	t.Helper()
	g := NewWithT(t)
	ns, cluster := availableCluster(t, prefix, cfg, prefix+"-a", prefix+"-b", prefix+"-c")
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) { c.Spec.NodeAffinity = byName(prefix + "-a") })).To(Succeed())
	g.Eventually(func(g Gomega) {
		d := condition(getCluster(g, cluster).Status.Conditions, linstorv1.ConditionDegraded)
		g.Expect(d.Reason).To(Equal(linstorv1.ReasonRemovalHeld))
		g.Expect(d.Message).To(ContainSubstring("linstor.io/confirm-removal=2"))
	}, timeout, tick).Should(Succeed())
	g.Consistently(func(g Gomega) {
		for _, n := range []string{prefix + "-b", prefix + "-c"} {
			sat := get(g, ns, n, &linstorv1.LinstorSatellite{})
			g.Expect(sat.DeletionTimestamp.IsZero()).To(BeTrue(), "%s is being removed without confirmation", n)
			_, ok := emu.Node(n)
			g.Expect(ok).To(BeTrue(), "LINSTOR node %s was removed without confirmation", n)
		}
	}, "2s", tick).Should(Succeed())
	return ns, cluster
}

// Nodes that are gone (a scale-down) run no satellite any more: removing their Retain
// satellites stops nothing, so two of three go without confirmation, and LINSTOR keeps
// the nodes.
func TestRetainSatellitesOfVanishedNodesGo(t *testing.T) {
	g := NewWithT(t)
	ns, cluster := availableCluster(t, "rgone", linstorv1.LinstorSatelliteConfigurationSpec{}, "rgone-a", "rgone-b", "rgone-c")
	for _, n := range []string{"rgone-b", "rgone-c"} {
		g.Expect(env.Client.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})).To(Succeed())
	}
	for _, n := range []string{"rgone-b", "rgone-c"} {
		g.Eventually(satelliteGone(ns, n), timeout, tick).Should(BeTrue())
		_, ok := emu.Node(n)
		g.Expect(ok).To(BeTrue(), "Retain deleted the LINSTOR node %s", n)
	}
	g.Expect(condition(getCluster(g, cluster).Status.Conditions, linstorv1.ConditionDegraded).Reason).NotTo(Equal(linstorv1.ReasonRemovalHeld))
}
