package controllers

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// With an external LINSTOR controller the operator deploys no controller of its own, and
// the CSI driver talks to the external one.
func TestExternalControllerDeploysNoController(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	makeNode(t, "ext-a", "10.3.0.1", map[string]string{"suite": "ext"})
	cluster := makeCluster(t, ns, linstorv1.LinstorClusterSpec{
		NodeSelector:       map[string]string{"suite": "ext"},
		Controller:         &linstorv1.ControllerSpec{ComponentSpec: linstorv1.ComponentSpec{Enabled: ptr.To(false)}},
		ExternalController: &linstorv1.ExternalControllerSpec{URL: "http://linstor.example.com:3370"},
	})
	// The test operator reaches the emulator through --linstor-url; the point here is
	// that no controller workload is deployed.
	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		g.Expect(condition(c.Status.Conditions, linstorv1.ConditionAvailable).Status).To(Equal(metav1.ConditionTrue))
	}, timeout, tick).Should(Succeed())
	var deploys appsv1.DeploymentList
	g.Expect(env.Client.List(ctx, &deploys, client.InNamespace(ns))).To(Succeed())
	for _, d := range deploys.Items {
		g.Expect(d.Name).NotTo(Equal("linstor-controller"), "a LINSTOR controller was deployed in external mode")
		if d.Name == "linstor-csi-controller" {
			g.Expect(d.Spec.Template.Spec.Containers[0].Env).To(ContainElement(HaveField("Value", "http://linstor.example.com:3370")),
				"the CSI driver must talk to the external controller")
		}
	}
	g.Expect(deploys.Items).To(HaveLen(1), "only the CSI controller")
	_, ok := emu.Node("ext-a")
	g.Expect(ok).To(BeTrue())
}
