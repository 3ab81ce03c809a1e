package controllers

import (
	"context"
	"net"
	"sort"
	"strings"
	"testing"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	lapi "github.com/LINBIT/golinstor/client"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// interfaces renders a LINSTOR node's interfaces as "name=address[*]", sorted; * is active.
func interfaces(g Gomega, name string) string {
	n, ok := emu.Node(name)
	g.Expect(ok).To(BeTrue(), "LINSTOR node %s not registered", name)
	var out []string
	for _, nif := range n.NetInterfaces {
		s := nif.Name + "=" + nif.Address.String()
		if nif.IsActive {
			s += "*"
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func setHostInterfaces(t *testing.T, name, value string) {
	t.Helper()
	node := get(NewWithT(t), "", name, &corev1.Node{})
	patch := client.MergeFrom(node.DeepCopy())
	node.Annotations = map[string]string{names.AnnotationHostInterfaces: value}
	if err := env.Client.Patch(context.Background(), node, patch); err != nil {
		t.Fatal(err)
	}
}

func updateConfig(t *testing.T, ns string, mutate func(*linstorv1.LinstorSatelliteConfiguration)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cfg linstorv1.LinstorSatelliteConfiguration
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "cfg"}, &cfg); err != nil {
			return err
		}
		mutate(&cfg)
		return env.Client.Update(context.Background(), &cfg)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestNetInterfacesByNameAndCIDR(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	node := makeNode(t, "nic-a", "10.3.0.1", map[string]string{"suite": "nic"})
	node.Status.Addresses = append(node.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "203.0.113.7"})
	g.Expect(env.Client.Status().Update(ctx, node)).To(Succeed())
	setHostInterfaces(t, "nic-a", "eth0=10.3.0.1,eth1=192.168.50.1")

	g.Expect(env.Client.Create(ctx, &linstorv1.LinstorSatelliteConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: ns},
		Spec: linstorv1.LinstorSatelliteConfigurationSpec{NetInterfaces: []linstorv1.NetInterface{
			{Name: "data", InterfaceName: "eth1", Active: true},
			{Name: "public", CIDR: "203.0.113.0/24"},
		}},
	})).To(Succeed())
	makeCluster(t, ns, linstorv1.LinstorClusterSpec{NodeSelector: map[string]string{"suite": "nic"}})

	g.Eventually(func(g Gomega) {
		g.Expect(interfaces(g, "nic-a")).To(Equal("data=192.168.50.1* default=10.3.0.1 public=203.0.113.7"))
	}, timeout, tick).Should(Succeed())
	n, _ := emu.Node("nic-a")
	for _, nif := range n.NetInterfaces {
		if nif.Name == "data" {
			// Internal TLS is on by default: the port and encryption go with the interface.
			g.Expect(nif.SatellitePort).To(Equal(int32(3367)))
			g.Expect(nif.SatelliteEncryptionType).To(Equal("SSL"))
		}
	}

	// The host renumbers eth1: the Node watch brings LINSTOR along.
	setHostInterfaces(t, "nic-a", "eth0=10.3.0.1,eth1=192.168.50.2")
	g.Eventually(func(g Gomega) {
		g.Expect(interfaces(g, "nic-a")).To(Equal("data=192.168.50.2* default=10.3.0.1 public=203.0.113.7"))
	}, timeout, tick).Should(Succeed())

	// An interface added by hand is not the operator's to delete.
	lc := emulatorClient(t)
	g.Expect(lc.Nodes.CreateNetInterface(ctx, "nic-a", lapi.NetInterface{Name: "byhand", Address: net.ParseIP("172.16.0.1")})).To(Succeed())

	// Dropping public and the active flag: public goes, default carries the traffic again.
	updateConfig(t, ns, func(cfg *linstorv1.LinstorSatelliteConfiguration) {
		cfg.Spec.NetInterfaces = []linstorv1.NetInterface{{Name: "data", InterfaceName: "eth1"}}
	})
	// data stays active until default is made active: LINSTOR has no "deactivate".
	g.Eventually(func(g Gomega) {
		g.Expect(interfaces(g, "nic-a")).To(Equal("byhand=172.16.0.1 data=192.168.50.2 default=10.3.0.1*"))
	}, timeout, tick).Should(Succeed())

	// An interface that cannot be resolved is reported by field and changes nothing.
	updateConfig(t, ns, func(cfg *linstorv1.LinstorSatelliteConfiguration) {
		cfg.Spec.NetInterfaces = []linstorv1.NetInterface{{Name: "storage", InterfaceName: "eth9", Active: true}}
	})
	g.Eventually(func(g Gomega) {
		d := condition(get(g, ns, "nic-a", &linstorv1.LinstorSatellite{}).Status.Conditions, linstorv1.ConditionDegraded)
		g.Expect(d.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(d.Reason).To(Equal(linstorv1.ReasonInvalidSpec))
		g.Expect(d.Message).To(ContainSubstring(`netInterfaces[storage].interfaceName: node nic-a has no interface "eth9"`))
	}, timeout, tick).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(interfaces(g, "nic-a")).To(Equal("byhand=172.16.0.1 data=192.168.50.2 default=10.3.0.1*"))
	}, "2s", tick).Should(Succeed())

	// The host gains eth9: the condition clears, storage becomes active, data (no longer
	// configured, and the operator's) is deleted.
	setHostInterfaces(t, "nic-a", "eth0=10.3.0.1,eth1=192.168.50.2,eth9=192.168.60.1")
	g.Eventually(func(g Gomega) {
		g.Expect(interfaces(g, "nic-a")).To(Equal("byhand=172.16.0.1 default=10.3.0.1 storage=192.168.60.1*"))
		d := condition(get(g, ns, "nic-a", &linstorv1.LinstorSatellite{}).Status.Conditions, linstorv1.ConditionDegraded)
		g.Expect(d.Status).To(Equal(metav1.ConditionFalse), d.Message)
	}, timeout, tick).Should(Succeed())
}
