package monitoring

// The faults of TestAlertsFireInPrometheus that need more than a call: a bucket on a
// real S3 server behind a fault proxy, and an admission policy of the namespace.

import (
	"context"
	"testing"

	"filippo.io/age"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/internal/s3server"
	"github.com/linstor-operator/linstor-operator/test/envtest"
)

// backupWorld is the run's offsite side: a real S3 server (versitygw) holding the
// bucket of LinstorBackupTarget offsite, which the operator and LINSTOR reach through
// a fault proxy, and the Secrets (credentials, encryption key) the targets name.
type backupWorld struct {
	s3    *s3server.Server
	proxy *s3server.Faults
}

const offsiteBucket = "linstor-offsite"

func startBackupWorld(t *testing.T, ns string) *backupWorld {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	srv, err := s3server.Start(ctx, s3server.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = srv.Stop() })
	g.Expect(srv.CreateBucket(ctx, offsiteBucket)).To(Succeed())
	proxy, err := s3server.StartFaults(srv)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(proxy.Close)
	// The controllers would go on polling a stopped server for the tests after.
	t.Cleanup(func() {
		_ = env.Client.DeleteAllOf(ctx, &linstorv1.LinstorBackupSchedule{}, client.InNamespace(ns))
		_ = env.Client.DeleteAllOf(ctx, &linstorv1.LinstorBackupTarget{}, client.InNamespace(ns))
	})
	identity, err := age.GenerateX25519Identity()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s3", Namespace: ns},
		StringData: map[string]string{linstorv1.S3AccessKeyIDKey: srv.AccessKey, linstorv1.S3SecretAccessKeyKey: srv.SecretKey}})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "backup-key", Namespace: ns},
		StringData: map[string]string{"identity": identity.String()}})).To(Succeed())
	return &backupWorld{s3: srv, proxy: proxy}
}

// target is a LinstorBackupTarget of bucket at endpoint with the world's Secrets.
func (w *backupWorld) target(ns, name, endpoint, bucket string) *linstorv1.LinstorBackupTarget {
	return &linstorv1.LinstorBackupTarget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: linstorv1.LinstorBackupTargetSpec{
		S3: linstorv1.S3Location{Endpoint: endpoint, Bucket: bucket, Prefix: "mon", PathStyle: true,
			CredentialsSecretRef: linstorv1.LocalSecretReference{Name: "s3"}},
		Encryption: linstorv1.BackupEncryption{KeySecretRef: linstorv1.LocalSecretReference{Name: "backup-key"}}}}
}

// conditionOf is the condition typ of a status, or one of status Missing.
func conditionOf(conditions []metav1.Condition, typ string) metav1.Condition {
	if c := meta.FindStatusCondition(conditions, typ); c != nil {
		return *c
	}
	return metav1.Condition{Type: typ, Status: "Missing"}
}

// refusePrivilegedDaemonSets installs a ValidatingAdmissionPolicy, as a cluster's
// policy engine would, that refuses DaemonSets with privileged containers in ns, and
// waits until the API server enforces it. The satellite's DaemonSet is privileged.
func refusePrivilegedDaemonSets(t *testing.T, g Gomega, ns string) {
	t.Helper()
	ctx := context.Background()
	const message = "privileged containers are not allowed in this namespace"
	_, err := envtest.RefuseInNamespace(t, env.Client, "no-privileged-daemonsets", ns, "apps", "daemonsets",
		"object.spec.template.spec.containers.all(c, !has(c.securityContext) || !has(c.securityContext.privileged) || !c.securityContext.privileged)", message)
	g.Expect(err).NotTo(HaveOccurred())
	// The API server loads policies asynchronously: a privileged DaemonSet, created as a
	// dry run, is refused once it enforces this one.
	labels := map[string]string{"app": "policy-probe"}
	probe := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "policy-probe", Namespace: ns}, Spec: appsv1.DaemonSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "probe", Image: "busybox", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}}}},
	}}
	g.Eventually(func() error { return env.Client.Create(ctx, probe.DeepCopy(), client.DryRunAll) }, timeout, tick).
		Should(MatchError(ContainSubstring(message)))
}
