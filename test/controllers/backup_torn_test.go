package controllers

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/dbbackup"
)

// A LINSTOR controller started while the database is copied (here: its pod appears
// while the copy's first chunk is being stored) tears the copy: it may mix the
// database from before and after the controller's writes, and still pass its checksum,
// which only proves the Secrets hold what was read. The backup fails and says why.
func TestBackupFailsWhenTheControllerStartedDuringTheCopy(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	g.Expect(env.Client.Create(ctx, linstorTable("nodes", "Nodes"))).To(Succeed())
	t.Cleanup(func() { dropTables(ctx) })
	g.Eventually(func() error {
		return env.Client.Create(ctx, row("Nodes", "torn-a", map[string]any{"node_name": "TORN-A"}))
	}, timeout, tick).Should(Succeed())
	cluster := makeCluster(t, ns, linstorv1.LinstorClusterSpec{NodeSelector: map[string]string{"suite": "none"}, Version: "1.33.3"})

	// The copy is held while it stores its first chunk: an admission webhook on the
	// backup's chunk Secrets answers only when the test lets it.
	const name = "torn"
	chunk := dbbackup.ChunkName(&linstorv1.LinstorBackup{ObjectMeta: metav1.ObjectMeta{Name: name}}, 0)
	storing, release := holdChunkCreates(t, ns, func(secret string) bool { return secret == chunk })

	g.Expect(env.Client.Create(ctx, &linstorv1.LinstorBackup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: linstorv1.LinstorBackupSpec{ClusterRef: linstorv1.ClusterReference{Name: cluster.Name}}})).To(Succeed())
	select {
	case <-storing:
	case <-time.After(timeout):
		t.Fatalf("the backup never stored its first chunk: %+v", get(g, ns, name, &linstorv1.LinstorBackup{}).Status)
	}
	g.Expect(get(g, ns, name, &linstorv1.LinstorBackup{}).Status.Phase).To(Equal(linstorv1.BackupRunning))

	// The controller starts in the middle of the copy.
	pod := runningControllerPod(t, ns, "linstor-controller-during-copy", cluster)
	release()

	g.Eventually(func(g Gomega) {
		b := get(g, ns, name, &linstorv1.LinstorBackup{})
		g.Expect(b.Status.Phase).To(Equal(linstorv1.BackupFailed), "the copy taken while the controller ran was kept: %s", b.Status.Message)
		g.Expect(b.Status.Message).To(And(ContainSubstring(pod.Name), ContainSubstring("after the copy started"), ContainSubstring("not a backup")))
		g.Expect(b.Status.Checksum).To(BeEmpty())
	}, timeout, tick).Should(Succeed())
}

// holdChunkCreates holds the first creation of a backup chunk Secret (labelled with
// names.LabelBackup) in ns whose name held accepts (holdCreates); storing is closed
// when it arrives.
func holdChunkCreates(t *testing.T, ns string, held func(secret string) bool) (storing <-chan struct{}, release func()) {
	return holdCreates(t, admissionregistrationv1.ValidatingWebhook{
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"secrets"}},
		}},
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
		ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: names.LabelBackup, Operator: metav1.LabelSelectorOpExists}}},
	}, held, func(i int) client.Object {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("hold-probe-%d", i), Namespace: ns,
			Labels: map[string]string{names.LabelBackup: "probe"}}}
	})
}

// The controller counts as stopped only when no pod of it exists and its Deployment
// asks for none: a Deployment just scaled up has no pod yet, but will start one.
func TestBackupSeesTheControllerStoppedOnlyWhenItsDeploymentAsksForNone(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	// No LinstorCluster object: nothing reconciles this namespace, the test plays the
	// Deployment and its pods.
	cluster := &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Name: "linstor", Namespace: ns}}
	stopped := func() bool {
		ok, err := dbbackup.ControllerStopped(ctx, env.Client, cluster)
		g.Expect(err).NotTo(HaveOccurred())
		return ok
	}
	g.Expect(stopped()).To(BeTrue(), "no Deployment and no pod")

	labels := map[string]string{names.LabelName: names.ControllerName, names.LabelInstance: cluster.Name}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: names.ControllerName, Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}}}
	g.Expect(env.Client.Create(ctx, d)).To(Succeed())
	g.Expect(stopped()).To(BeFalse(), "the Deployment asks for a pod that is not created yet")

	d.Spec.Replicas = ptr.To[int32](0)
	g.Expect(env.Client.Update(ctx, d)).To(Succeed())
	g.Expect(stopped()).To(BeTrue(), "scaled to zero, no pod")

	runningControllerPod(t, ns, "linstor-controller-left", cluster)
	g.Expect(stopped()).To(BeFalse(), "a pod is left")
}
