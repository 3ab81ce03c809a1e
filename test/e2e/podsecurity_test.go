package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/linstor-operator/linstor-operator/test/envtest"
)

// The operator's own Deployment (config/manager/manager.yaml, from which the OLM bundle's
// comes) in a namespace that enforces the restricted Pod Security Standard: the
// ReplicaSet controller creates its pods through the API server's Pod Security admission,
// the path every real install takes. test/api/podsecurity_test.go pins the level of each
// pod by dry-run; this proves the real controller path agrees for the operator.
//
// It works in a namespace of its own and removes it, so it runs anywhere in the scenario
// (file order puts it first: no node exists yet, and creating the pods is the point).
func TestOperatorDeploymentIsAdmittedInARestrictedNamespace(t *testing.T) {
	g := NewWithT(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "pod-security-restricted-",
		Labels:       map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
	}}
	g.Expect(env.Client.Create(ctx, ns)).To(Succeed())
	t.Cleanup(func() {
		g := NewWithT(t)
		g.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, ns))).To(Succeed())
		// The namespace controller removes the Deployment, its ReplicaSet and pods first.
		g.Eventually(func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(ns), &corev1.Namespace{}))
		}, timeout, tick).Should(BeTrue(), "namespace %s not removed", ns.Name)
	})

	// The enforcement is real: a privileged pod is refused here.
	privileged := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "privileged", Namespace: ns.Name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "placeholder",
			SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}}},
	}
	// Until kube-controller-manager has created the namespace's default account, the
	// ServiceAccount admission plugin refuses the pod first.
	g.Eventually(func(g Gomega) {
		err := env.Client.Create(ctx, privileged, client.DryRunAll)
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "a privileged pod in an enforce=restricted namespace: %v", err)
		g.Expect(err.Error()).To(ContainSubstring(`violates PodSecurity "restricted:latest"`))
	}, timeout, tick).Should(Succeed())

	deploy := managerDeployment(t)
	deploy.Namespace = ns.Name
	// The ServiceAccount admission plugin refuses pods whose account does not exist.
	g.Expect(env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{
		Name: deploy.Spec.Template.Spec.ServiceAccountName, Namespace: ns.Name}})).To(Succeed())
	g.Expect(env.Client.Create(ctx, deploy)).To(Succeed())

	replicas := int(ptr.Deref(deploy.Spec.Replicas, 1))
	g.Eventually(func(g Gomega) {
		var sets appsv1.ReplicaSetList
		g.Expect(env.Client.List(ctx, &sets, client.InNamespace(ns.Name))).To(Succeed())
		for _, rs := range sets.Items {
			for _, c := range rs.Status.Conditions {
				if c.Type == appsv1.ReplicaSetReplicaFailure && c.Status == corev1.ConditionTrue {
					StopTrying("the ReplicaSet controller could not create the operator's pods: " + c.Reason + ": " + c.Message).Now()
				}
			}
		}
		var pods corev1.PodList
		g.Expect(env.Client.List(ctx, &pods, client.InNamespace(ns.Name), client.MatchingLabels(deploy.Spec.Selector.MatchLabels))).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(replicas), "the ReplicaSet controller created no (or not all) operator pods")
	}, timeout, tick).Should(Succeed())

	var events corev1.EventList
	g.Expect(env.Client.List(ctx, &events, client.InNamespace(ns.Name))).To(Succeed())
	for _, e := range events.Items {
		g.Expect(e.Reason).NotTo(Equal("FailedCreate"), "%s %s: %s", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message)
	}
}

// managerDeployment is config/manager/manager.yaml's Deployment; its image is the
// kustomize placeholder, which kwok never pulls.
func managerDeployment(t *testing.T) *appsv1.Deployment {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(envtest.RepoRoot(), "config", "manager", "manager.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range bytes.Split(raw, []byte("\n---\n")) {
		d := &appsv1.Deployment{}
		if err := yaml.UnmarshalStrict(doc, d); err != nil {
			t.Fatalf("config/manager/manager.yaml: %v", err)
		}
		if d.Kind == "Deployment" {
			return d
		}
	}
	t.Fatal("config/manager/manager.yaml has no Deployment")
	return nil
}
