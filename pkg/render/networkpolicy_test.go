package render

import (
	"bytes"
	"os"
	"testing"

	"github.com/linstor-operator/linstor-operator/pkg/clustertls"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	klabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/images"
)

func policyOf(t *testing.T, c *linstorv1.LinstorCluster) *networkingv1.NetworkPolicy {
	t.Helper()
	objs := NetworkPolicy(c)
	if len(objs) != 1 {
		t.Fatalf("rendered %d objects, want one NetworkPolicy", len(objs))
	}
	return objs[0].(*networkingv1.NetworkPolicy)
}

func selects(t *testing.T, sel *metav1.LabelSelector, l map[string]string) bool {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Fatal(err)
	}
	return s.Matches(klabels.Set(l))
}

func TestNetworkPolicyContents(t *testing.T) {
	c := cluster(linstorv1.LinstorClusterSpec{})
	np := policyOf(t, c)
	if np.Name != "linstor-controller" || np.Namespace != "storage" || np.APIVersion != "networking.k8s.io/v1" {
		t.Errorf("policy %s %s/%s", np.APIVersion, np.Namespace, np.Name)
	}
	// Pruned like the other objects of the cluster.
	if np.Labels[names.LabelCluster] != "linstor" || np.Labels[names.LabelManagedBy] != names.ManagedBy {
		t.Errorf("labels %v lack the cluster's pruning labels", np.Labels)
	}
	if len(np.Spec.PolicyTypes) != 1 || np.Spec.PolicyTypes[0] != networkingv1.PolicyTypeIngress {
		t.Errorf("policyTypes %v: only ingress is restricted", np.Spec.PolicyTypes)
	}
	if len(np.Spec.Ingress) != 1 {
		t.Fatalf("%d ingress rules, want 1", len(np.Spec.Ingress))
	}
	rule := np.Spec.Ingress[0]
	wantPorts := []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(names.SecureAPIPort))}}
	if got, _ := yaml.Marshal(rule.Ports); !bytes.Equal(got, must(yaml.Marshal(wantPorts))) {
		t.Errorf("ports %s, want only the HTTPS API", got)
	}
	for _, peer := range rule.From {
		if peer.IPBlock != nil || peer.NamespaceSelector != nil {
			t.Errorf("peer %+v reaches beyond the cluster's namespace", peer)
		}
	}

	// The policy applies to the controller pods and to nothing else the cluster runs;
	// each client the operator renders is admitted, the satellites are not (they do not
	// connect to the controller).
	allowed := func(l map[string]string) bool {
		for _, peer := range rule.From {
			if selects(t, peer.PodSelector, l) {
				return true
			}
		}
		return false
	}
	ctrl, err := Controller(c, images.Default())
	if err != nil {
		t.Fatal(err)
	}
	csi, err := CSI(c, images.Default(), clustertls.ServiceURL(c))
	if err != nil {
		t.Fatal(err)
	}
	ha, err := HAController(c, images.Default())
	if err != nil {
		t.Fatal(err)
	}
	sat, err := Satellite(c, &linstorv1.LinstorSatellite{ObjectMeta: metav1.ObjectMeta{Name: "n", Namespace: "storage"}}, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}, images.Default())
	if err != nil {
		t.Fatal(err)
	}
	pods := map[string]map[string]string{}
	for _, o := range append(append(append(ctrl, csi...), ha...), sat...) {
		switch w := o.(type) {
		case *appsv1.Deployment:
			pods[w.Name] = w.Spec.Template.Labels
		case *appsv1.DaemonSet:
			pods[w.Name] = w.Spec.Template.Labels
		}
	}
	for name, want := range map[string]bool{
		names.ControllerName: true, names.CSIControllerName: true, names.CSINodeName: true, names.HAControllerName: true,
		names.SatelliteDaemonSetName("n"): false,
	} {
		l, ok := pods[name]
		if !ok {
			t.Fatalf("no pods %s rendered", name)
		}
		if got := allowed(l); got != want {
			t.Errorf("pods of %s admitted: %t, want %t (labels %v)", name, got, want, l)
		}
		if got := selects(t, &np.Spec.PodSelector, l); got != (name == names.ControllerName) {
			t.Errorf("policy applies to %s: %t", name, got)
		}
	}
	foreign := map[string]string{}
	for k, v := range pods[names.ControllerName] {
		foreign[k] = v
	}
	foreign[names.LabelInstance] = "other"
	if allowed(foreign) {
		t.Error("the controller of another cluster is admitted as a replica")
	}

	// The operator, as config/manager deploys it, is admitted.
	if !allowed(operatorTemplateLabels(t)) {
		t.Errorf("the operator's pods (labels %v) are not admitted", operatorTemplateLabels(t))
	}
}

// operatorTemplateLabels reads the operator Deployment's pod labels from config/manager.
func operatorTemplateLabels(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile("../../config/manager/manager.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range bytes.Split(raw, []byte("\n---")) {
		var d appsv1.Deployment
		if err := yaml.Unmarshal(doc, &d); err == nil && d.Kind == "Deployment" {
			return d.Spec.Template.Labels
		}
	}
	t.Fatal("no Deployment in config/manager/manager.yaml")
	return nil
}

func TestNetworkPolicyPortFollowsAPITLS(t *testing.T) {
	np := policyOf(t, cluster(linstorv1.LinstorClusterSpec{TLS: &linstorv1.TLSSpec{API: &linstorv1.TLSConfig{Mode: linstorv1.TLSDisabled}}}))
	ports := np.Spec.Ingress[0].Ports
	if len(ports) != 1 || ports[0].Port.IntValue() != names.APIPort {
		t.Errorf("ports %v, want only the plain API port %d", ports, names.APIPort)
	}
}

func TestNetworkPolicyOnlyWithOwnController(t *testing.T) {
	for name, spec := range map[string]linstorv1.LinstorClusterSpec{
		"disabled":   {NetworkPolicy: linstorv1.NetworkPolicyDisabled},
		"external":   {ExternalController: &linstorv1.ExternalControllerSpec{URL: "https://linstor.example.com:3371"}},
		"no control": {Controller: &linstorv1.ControllerSpec{ComponentSpec: linstorv1.ComponentSpec{Enabled: ptr.To(false)}}},
	} {
		if objs := NetworkPolicy(cluster(spec)); len(objs) != 0 {
			t.Errorf("%s: rendered %d objects, want none", name, len(objs))
		}
	}
	if objs := NetworkPolicy(cluster(linstorv1.LinstorClusterSpec{NetworkPolicy: linstorv1.NetworkPolicyEnabled})); len(objs) != 1 {
		t.Errorf("Enabled rendered %d objects", len(objs))
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
