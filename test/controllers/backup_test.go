package controllers

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/dbbackup"
)

func TestBackupStopsTheControllerAndVerifiesTheCopy(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	// A LINSTOR database of two tables.
	for _, crd := range []*apiextensionsv1.CustomResourceDefinition{linstorTable("nodes", "Nodes"), linstorTable("propscontainers", "PropsContainers")} {
		g.Expect(env.Client.Create(ctx, crd)).To(Succeed())
	}
	t.Cleanup(func() { dropTables(ctx) })
	for i := 0; i < 30; i++ {
		g.Eventually(func() error {
			return env.Client.Create(ctx, row("PropsContainers", fmt.Sprintf("prop-%02d", i), map[string]any{"key": fmt.Sprintf("Aux/k%d", i), "value": "v"}))
		}, timeout, tick).Should(Succeed())
	}
	g.Eventually(func() error { return env.Client.Create(ctx, row("Nodes", "bk-a", map[string]any{"node_name": "BK-A"})) }, timeout, tick).Should(Succeed())

	makeNode(t, "bk-a", "10.6.0.1", map[string]string{"suite": "bk"})
	// LINSTOR's database exists before this LinstorCluster: its version must be said.
	cluster := makeCluster(t, ns, linstorv1.LinstorClusterSpec{NodeSelector: map[string]string{"suite": "bk"}, Version: "1.33.3",
		Database: &linstorv1.DatabaseSpec{KeepBackups: ptr.To[int32](2)}})
	g.Eventually(func(g Gomega) {
		g.Expect(getCluster(g, cluster).Status.Version).NotTo(BeEmpty())
	}, timeout, tick).Should(Succeed())

	pod := runningControllerPod(t, ns, "linstor-controller-x", cluster)

	backup := &linstorv1.LinstorBackup{ObjectMeta: metav1.ObjectMeta{Name: "b1", Namespace: ns},
		Spec: linstorv1.LinstorBackupSpec{ClusterRef: linstorv1.ClusterReference{Name: cluster.Name}}}
	g.Expect(env.Client.Create(ctx, backup)).To(Succeed())
	// While the controller pod exists the backup waits, and the controller is scaled down.
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, ns, "b1", &linstorv1.LinstorBackup{}).Status.Phase).To(Equal(linstorv1.BackupPending))
		var d appsv1.Deployment
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.ControllerName}, &d)).To(Succeed())
		g.Expect(*d.Spec.Replicas).To(BeZero())
		c := getCluster(g, cluster)
		g.Expect(condition(c.Status.Conditions, linstorv1.ConditionProgressing).Reason).To(Equal(linstorv1.ReasonBackupInProgress))
		g.Expect(condition(c.Status.Conditions, linstorv1.ConditionUpgradeable).Status).To(Equal(metav1.ConditionFalse))
	}, timeout, tick).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(get(g, ns, "b1", &linstorv1.LinstorBackup{}).Status.Phase).To(Equal(linstorv1.BackupPending))
	}, "1s", tick).Should(Succeed())

	// The pod goes (as the Deployment controller would delete it): the copy is taken.
	want, err := dbbackup.Take(ctx, env.Client)
	g.Expect(err).NotTo(HaveOccurred())
	wantBytes, _ := want.Encode()
	g.Expect(env.Client.Delete(ctx, pod, client.GracePeriodSeconds(0))).To(Succeed())
	g.Eventually(func(g Gomega) {
		b := get(g, ns, "b1", &linstorv1.LinstorBackup{})
		g.Expect(b.Status.Phase).To(Equal(linstorv1.BackupCompleted), b.Status.Message)
		g.Expect(b.Status.CRDs).To(BeNumerically(">=", 2))
		g.Expect(b.Status.Checksum).To(Equal(dbbackup.Checksum(wantBytes)))
		g.Expect(b.Status.LinstorVersion).To(Equal(getCluster(g, cluster).Status.Version))
	}, timeout, tick).Should(Succeed())
	b := get(g, ns, "b1", &linstorv1.LinstorBackup{})
	g.Expect(dbbackup.Verify(ctx, env.Client, b)).To(Succeed())
	data, err := io.ReadAll(dbbackup.Open(ctx, env.Client, b))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(data).To(Equal(wantBytes), "the streamed backup equals the database encoded whole")
	// The controller runs again.
	g.Eventually(func(g Gomega) {
		var d appsv1.Deployment
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.ControllerName}, &d)).To(Succeed())
		g.Expect(*d.Spec.Replicas).To(Equal(int32(1)))
		g.Expect(condition(getCluster(g, cluster).Status.Conditions, linstorv1.ConditionUpgradeable).Status).To(Equal(metav1.ConditionTrue))
		// The backup-age alert reads when the newest copy completed.
		g.Expect(gauge(g, "linstor_operator_backup_last_completed_timestamp_seconds", map[string]string{"namespace": ns, "cluster": cluster.Name})).
			To(Equal(float64(b.Status.CompletedAt.Unix())))
	}, timeout, tick).Should(Succeed())

	// A damaged chunk is detected before anything is restored from it.
	chunk := &corev1.Secret{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: b.Status.Secrets[0]}, chunk)).To(Succeed())
	chunk.Data["chunk"][10] ^= 0xff
	g.Expect(env.Client.Update(ctx, chunk)).To(Succeed())
	_, err = dbbackup.Load(ctx, env.Client, b)
	g.Expect(err).To(MatchError(ContainSubstring("LinstorBackup b1 is damaged")))

	// keepBackups: 2 — a third completed backup retires the oldest, with its Secrets.
	for _, name := range []string{"b2", "b3"} {
		g.Expect(env.Client.Create(ctx, &linstorv1.LinstorBackup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: linstorv1.LinstorBackupSpec{ClusterRef: linstorv1.ClusterReference{Name: cluster.Name}}})).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(get(g, ns, name, &linstorv1.LinstorBackup{}).Status.Phase).To(Equal(linstorv1.BackupCompleted))
		}, timeout, tick).Should(Succeed())
		time.Sleep(1100 * time.Millisecond) // completion times are in seconds
	}
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "b1"}, &linstorv1.LinstorBackup{}))
	}, timeout, tick).Should(BeTrue(), "the oldest backup was not pruned")
	get(g, ns, "b2", &linstorv1.LinstorBackup{})
	get(g, ns, "b3", &linstorv1.LinstorBackup{})
}

func TestBackupOfAnExternalDatabaseIsRefused(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	cluster := makeCluster(t, ns, linstorv1.LinstorClusterSpec{NodeSelector: map[string]string{"suite": "none"},
		Database: &linstorv1.DatabaseSpec{Type: linstorv1.DatabaseExternal, ConnectionURL: "jdbc:postgresql://db/linstor"}})
	g.Expect(env.Client.Create(ctx, &linstorv1.LinstorBackup{ObjectMeta: metav1.ObjectMeta{Name: "ext", Namespace: ns},
		Spec: linstorv1.LinstorBackupSpec{ClusterRef: linstorv1.ClusterReference{Name: cluster.Name}}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		b := get(g, ns, "ext", &linstorv1.LinstorBackup{})
		g.Expect(b.Status.Phase).To(Equal(linstorv1.BackupFailed))
		g.Expect(b.Status.Message).To(ContainSubstring("the LINSTOR database is external"))
	}, timeout, tick).Should(Succeed())
	g.Consistently(func(g Gomega) {
		var d appsv1.Deployment
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.ControllerName}, &d)
		if apierrors.IsNotFound(err) {
			return // not rendered yet
		}
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(*d.Spec.Replicas).To(Equal(int32(1)), "a refused backup must not stop the controller")
	}, "2s", tick).Should(Succeed())
}

// A backup that cannot finish (here: the controller pod never goes away) fails at its
// deadline and releases the LINSTOR controller: a backup must never keep it stopped.
func TestBackupDeadlineReleasesTheController(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	cluster := makeCluster(t, ns, linstorv1.LinstorClusterSpec{NodeSelector: map[string]string{"suite": "none"}})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "linstor-controller-stuck", Namespace: ns,
		Labels: map[string]string{names.LabelName: names.ControllerName, names.LabelInstance: cluster.Name}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
	g.Expect(env.Client.Create(ctx, pod)).To(Succeed())
	g.Expect(env.Client.Create(ctx, &linstorv1.LinstorBackup{ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: ns},
		Spec: linstorv1.LinstorBackupSpec{ClusterRef: linstorv1.ClusterReference{Name: cluster.Name}, Timeout: &metav1.Duration{Duration: 3 * time.Second}}})).To(Succeed())
	replicas := func(g Gomega) int32 {
		var d appsv1.Deployment
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.ControllerName}, &d)).To(Succeed())
		return *d.Spec.Replicas
	}
	g.Eventually(replicas, timeout, tick).Should(Equal(int32(0)), "the backup should stop the controller first")
	g.Eventually(func(g Gomega) {
		b := get(g, ns, "late", &linstorv1.LinstorBackup{})
		g.Expect(b.Status.Phase).To(Equal(linstorv1.BackupFailed))
		g.Expect(b.Status.Message).To(ContainSubstring("not completed within 3s"))
	}, timeout, tick).Should(Succeed())
	g.Eventually(replicas, timeout, tick).Should(Equal(int32(1)), "the controller must start again after a failed backup")
}

// A Secret that happens to have a chunk's name is never overwritten, adopted or
// deleted: the backup fails and says so.
func TestBackupNeverAdoptsAForeignSecret(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	g.Expect(env.Client.Create(ctx, linstorTable("nodes", "Nodes"))).To(Succeed())
	t.Cleanup(func() { dropTables(ctx) })
	g.Eventually(func() error { return env.Client.Create(ctx, row("Nodes", "fs-a", map[string]any{"node_name": "FS-A"})) }, timeout, tick).Should(Succeed())
	cluster := makeCluster(t, ns, linstorv1.LinstorClusterSpec{NodeSelector: map[string]string{"suite": "none"}})
	mine := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "nightly-0", Namespace: ns}, Data: map[string][]byte{"password": []byte("hunter2")}}
	g.Expect(env.Client.Create(ctx, mine)).To(Succeed())
	g.Expect(env.Client.Create(ctx, &linstorv1.LinstorBackup{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: ns},
		Spec: linstorv1.LinstorBackupSpec{ClusterRef: linstorv1.ClusterReference{Name: cluster.Name}}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		b := get(g, ns, "nightly", &linstorv1.LinstorBackup{})
		g.Expect(b.Status.Phase).To(Equal(linstorv1.BackupFailed))
		g.Expect(b.Status.Message).To(ContainSubstring("Secret nightly-0 already exists and is not this backup's"))
	}, timeout, tick).Should(Succeed())
	got := get(g, ns, "nightly-0", &corev1.Secret{})
	g.Expect(got.Data).To(Equal(mine.Data), "the user's Secret was overwritten")
	g.Expect(got.OwnerReferences).To(BeEmpty(), "the user's Secret was adopted")
}
