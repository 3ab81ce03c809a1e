package render

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/linstor-operator/linstor-operator/pkg/clustertls"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// The operator's own pods, as config/manager labels them (the OLM bundle keeps these
// labels). The operator is the LINSTOR API's most important client: a policy that
// misses it locks the operator out of LINSTOR.
var operatorPodLabels = map[string]string{
	"control-plane": "controller-manager",
	names.LabelName: names.ManagedBy,
}

// NetworkPolicyEnabled: the policy is rendered unless spec.networkPolicy is Disabled.
func NetworkPolicyEnabled(c *linstorv1.LinstorCluster) bool {
	return c.Spec.NetworkPolicy != linstorv1.NetworkPolicyDisabled
}

// NetworkPolicy renders the NetworkPolicy that admits to the LINSTOR controller's API
// port only the pods that need it:
//  1. the operator, which runs in the cluster's namespace (it manages a LinstorCluster
//     of its own namespace only: --namespace);
//  2. the CSI controller and CSI node pods, which provision, attach and mount volumes;
//  3. the HA controller pods (rendered without the API's URL today, and on the host
//     network, whose traffic most network plugins do not match by pod labels);
//  4. the other LINSTOR controller replicas.
//
// Nothing else connects to the controller: it dials the satellites, not the other way
// round, egress is not restricted, and the kubelet's probes come from the pod's own node,
// which NetworkPolicies always admit. The port is the one the API is served on: 3371 with
// API TLS (plain HTTP then only answers on the pod's loopback), 3370 without.
//
// Nothing is rendered when the operator does not run the controller (external or
// disabled) or spec.networkPolicy is Disabled; the cluster controller prunes what is
// not rendered.
func NetworkPolicy(cluster *linstorv1.LinstorCluster) Objects {
	if cluster.Spec.ExternalController != nil || !ControllerEnabled(cluster) || !NetworkPolicyEnabled(cluster) {
		return nil
	}
	port := intstr.FromInt32(names.APIPort)
	if clustertls.APITLSEnabled(cluster) {
		port = intstr.FromInt32(names.SecureAPIPort)
	}
	operator := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: operatorPodLabels}}
	// Pods of this cluster's components, by the labels their workloads select on (a
	// pod-template patch cannot remove those without orphaning the pods). "linstor-csi"
	// names the CSI controller's pods; the test renders every workload and checks each
	// is matched.
	components := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{
		MatchLabels: map[string]string{names.LabelInstance: cluster.Name},
		MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: names.LabelName, Operator: metav1.LabelSelectorOpIn,
			Values: []string{names.ControllerName, "linstor-csi", names.CSINodeName, names.HAControllerName},
		}},
	}}
	return Objects{&networkingv1.NetworkPolicy{
		TypeMeta:   typeMeta("networking.k8s.io/v1", "NetworkPolicy"),
		ObjectMeta: metav1.ObjectMeta{Name: names.NetworkPolicyName, Namespace: cluster.Namespace, Labels: labels(cluster, names.ControllerName)},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: selectorLabels(cluster, names.ControllerName)},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: &port}},
				From:  []networkingv1.NetworkPolicyPeer{operator, components},
			}},
		},
	}}
}
