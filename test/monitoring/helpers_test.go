package monitoring

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/test/envtest"
)

// makeNode creates a Ready node with an InternalIP, deleted after the test
// (envtest.ReadyNode).
func makeNode(t *testing.T, name, ip string, labels map[string]string) {
	envtest.ReadyNode(t, env.Client, name, ip, labels)
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
