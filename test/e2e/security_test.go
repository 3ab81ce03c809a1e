package e2e

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// TestOperatorHasOnlyItsOwnPermissions: the operator of these tests authenticates as
// its ServiceAccount with config/rbac's grants (so every other test proves they are
// enough), and those grants stop at its namespace and at granting anything.
func TestOperatorHasOnlyItsOwnPermissions(t *testing.T) {
	g := NewWithT(t)
	op, err := client.New(env.OperatorConfig(), client.Options{Scheme: env.Client.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())

	review := &authenticationv1.SelfSubjectReview{}
	g.Expect(op.Create(ctx, review)).To(Succeed())
	g.Expect(review.Status.UserInfo.Username).To(Equal("system:serviceaccount:" + namespace + ":linstor-operator-controller-manager"))

	// Secrets of its own namespace, none elsewhere.
	g.Expect(op.List(ctx, &corev1.SecretList{}, client.InNamespace(namespace))).To(Succeed())
	err = op.List(ctx, &corev1.SecretList{}, client.InNamespace("kube-system"))
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "listing Secrets of kube-system: %v", err)
	// No role it could grant itself more with.
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "linstor-e2e-escalation"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}}
	err = op.Create(ctx, role)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "creating a ClusterRole: %v", err)

	// A LinstorCluster elsewhere is refused, naming the namespace to use.
	other := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "linstor-elsewhere"}}
	g.Expect(env.Client.Create(ctx, other)).To(Succeed())
	defer func() { _ = env.Client.Delete(ctx, other) }()
	err = env.Client.Create(ctx, &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Namespace: other.Name, Name: "linstor"}})
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring(`metadata.namespace`))
	g.Expect(strings.Contains(err.Error(), `"`+namespace+`"`)).To(BeTrue(), err.Error())
}
