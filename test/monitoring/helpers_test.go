package monitoring

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// makeNode creates a Ready Kubernetes node with an InternalIP, deleted after the test.
// It plays the kubelet and the node lifecycle controller, which envtest does not run:
// the API server taints every new node not-ready until that controller lifts it.
func makeNode(t *testing.T, name, ip string, labels map[string]string) {
	t.Helper()
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := env.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, node) })
	node.Status = corev1.NodeStatus{
		Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}},
		NodeInfo:   corev1.NodeSystemInfo{OSImage: "Ubuntu 24.04 LTS"},
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
	}
	if err := env.Client.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	var taints []corev1.Taint
	for _, taint := range node.Spec.Taints {
		if taint.Key != corev1.TaintNodeNotReady {
			taints = append(taints, taint)
		}
	}
	node.Spec.Taints = taints
	if err := env.Client.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
}

func getCluster(g Gomega, c *linstorv1.LinstorCluster) *linstorv1.LinstorCluster {
	out := &linstorv1.LinstorCluster{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(c), out)).To(Succeed())
	return out
}

func condition(c *linstorv1.LinstorCluster, typ string) metav1.Condition {
	if cond := meta.FindStatusCondition(c.Status.Conditions, typ); cond != nil {
		return *cond
	}
	return metav1.Condition{Type: typ, Status: "Missing"}
}

func keyOf(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
