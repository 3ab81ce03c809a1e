package controllers

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"filippo.io/age"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/internal/s3server"
	"github.com/linstor-operator/linstor-operator/pkg/names"
	"github.com/linstor-operator/linstor-operator/test/envtest"
)

// s3Bucket runs a real S3 server (versitygw) with one bucket for a test.
func s3Bucket(t *testing.T, bucket string) *s3server.Server {
	t.Helper()
	srv, err := s3server.Start(context.Background(), s3server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	t.Cleanup(func() {
		// envtest deletes no namespace's objects: targets left on a stopped server would
		// keep the target controller busy for the tests after.
		var list linstorv1.LinstorBackupTargetList
		if env.Client.List(context.Background(), &list) == nil {
			for i := range list.Items {
				_ = env.Client.Delete(context.Background(), &list.Items[i])
			}
		}
	})
	if err := srv.CreateBucket(context.Background(), bucket); err != nil {
		t.Fatal(err)
	}
	return srv
}

// backupSecrets creates the target's credentials and key Secrets in ns.
func backupSecrets(t *testing.T, ns string, srv *s3server.Server, identity string) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s3", Namespace: ns},
		StringData: map[string]string{linstorv1.S3AccessKeyIDKey: srv.AccessKey, linstorv1.S3SecretAccessKeyKey: srv.SecretKey}})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "backup-key", Namespace: ns},
		StringData: map[string]string{"identity": identity}})).To(Succeed())
}

// backupCluster makes a LinstorCluster of one node (labelled suite) running LINSTOR
// 1.33.3 on a fresh database, with the backup Secrets for srv.
func backupCluster(t *testing.T, srv *s3server.Server, suite, node, ip string) (ns string, cluster *linstorv1.LinstorCluster) {
	t.Helper()
	g := NewWithT(t)
	freshDatabase(t)
	ns = env.Namespace(t)
	makeNode(t, node, ip, map[string]string{"suite": suite})
	cluster = makeCluster(t, ns, linstorv1.LinstorClusterSpec{NodeSelector: map[string]string{"suite": suite}, Version: "1.33.3"})
	g.Eventually(func(g Gomega) { g.Expect(getCluster(g, cluster).Status.Version).NotTo(BeEmpty()) }, timeout, tick).Should(Succeed())
	backupSecrets(t, ns, srv, newIdentity(t))
	return ns, cluster
}

// offsiteCluster is a backupCluster with the Available target "offsite" on bucket.
func offsiteCluster(t *testing.T, srv *s3server.Server, bucket, suite, node, ip string) (ns string, cluster *linstorv1.LinstorCluster) {
	t.Helper()
	ns, cluster = backupCluster(t, srv, suite, node, ip)
	g := NewWithT(t)
	g.Expect(env.Client.Create(context.Background(), backupTarget(ns, "offsite", srv, bucket))).To(Succeed())
	availableTarget(g, ns, "offsite")
	return ns, cluster
}

func backupTarget(ns, name string, srv *s3server.Server, bucket string) *linstorv1.LinstorBackupTarget {
	return &linstorv1.LinstorBackupTarget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: linstorv1.LinstorBackupTargetSpec{
		S3: linstorv1.S3Location{Endpoint: srv.Endpoint, Bucket: bucket, Prefix: "site-a", PathStyle: true,
			CredentialsSecretRef: linstorv1.LocalSecretReference{Name: "s3"}},
		Encryption: linstorv1.BackupEncryption{KeySecretRef: linstorv1.LocalSecretReference{Name: "backup-key"}}}}
}

func newIdentity(t *testing.T) string {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return id.String()
}

func availableTarget(g Gomega, ns, name string) *linstorv1.LinstorBackupTarget {
	var out *linstorv1.LinstorBackupTarget
	g.Eventually(func(g Gomega) {
		out = get(g, ns, name, &linstorv1.LinstorBackupTarget{})
		c := condition(out.Status.Conditions, linstorv1.ConditionAvailable)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
	}, timeout, tick).Should(Succeed())
	return out
}

// bucketFiles reads every object the server stores under dir.
func bucketFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	if err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := os.ReadFile(p)
		out[strings.TrimPrefix(p, dir+"/")] = raw
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// The disaster recovery the runbook (docs/disaster-recovery.md) describes, on a real
// S3 server: cluster A backs its database up to a bucket, encrypted; cluster A and its
// database are lost; a new cluster, given only the bucket's address, the credentials and
// the key, imports the backup and restores it before LINSTOR first starts. The restored
// database equals the backed-up one byte for byte.
func TestOffsiteBackupRestoresANewClusterAfterTheFirstIsLost(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := s3Bucket(t, "linstor-dr")
	identity := newIdentity(t)

	// Cluster A, with a database.
	freshDatabase(t)
	nsA := env.Namespace(t)
	makeNode(t, "dr-a", "10.61.0.1", map[string]string{"suite": "dr"})
	clusterA := makeCluster(t, nsA, linstorv1.LinstorClusterSpec{NodeSelector: map[string]string{"suite": "dr"}, Version: "1.33.3"})
	g.Eventually(func(g Gomega) { g.Expect(getCluster(g, clusterA).Status.Version).NotTo(BeEmpty()) }, timeout, tick).Should(Succeed())
	pod := runningControllerPod(t, nsA, "linstor-controller-dr", clusterA)

	// The target says what is missing before its Secrets exist.
	g.Expect(env.Client.Create(ctx, backupTarget(nsA, "offsite", srv, "linstor-dr"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := condition(get(g, nsA, "offsite", &linstorv1.LinstorBackupTarget{}).Status.Conditions, linstorv1.ConditionAvailable)
		g.Expect(c.Reason).To(Equal(linstorv1.ReasonSecretMissing))
		g.Expect(c.Message).To(ContainSubstring("kubectl create secret generic s3 -n " + nsA))
	}, timeout, tick).Should(Succeed())
	backupSecrets(t, nsA, srv, identity)
	availableTarget(g, nsA, "offsite")

	want := encoded(g)
	g.Expect(env.Client.Create(ctx, &linstorv1.LinstorBackup{ObjectMeta: metav1.ObjectMeta{Name: "before-disaster", Namespace: nsA},
		Spec: linstorv1.LinstorBackupSpec{ClusterRef: linstorv1.ClusterReference{Name: clusterA.Name}, TargetRef: &linstorv1.BackupTargetReference{Name: "offsite"}}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, nsA, "before-disaster", &linstorv1.LinstorBackup{}).Status.Phase).To(Equal(linstorv1.BackupPending))
	}, timeout, tick).Should(Succeed())
	g.Expect(env.Client.Delete(ctx, pod, client.GracePeriodSeconds(0))).To(Succeed())
	var taken *linstorv1.LinstorBackup
	g.Eventually(func(g Gomega) {
		taken = get(g, nsA, "before-disaster", &linstorv1.LinstorBackup{})
		g.Expect(taken.Status.Phase).To(Equal(linstorv1.BackupCompleted), taken.Status.Message)
	}, timeout, tick).Should(Succeed())
	g.Expect(taken.Status.Stored).NotTo(BeNil())
	g.Expect(taken.Status.Secrets).To(BeEmpty(), "a backup to a bucket keeps nothing in Secrets")
	g.Expect(taken.Status.ControllerStopped).NotTo(BeNil())
	id := taken.Status.Stored.ID
	g.Expect(id).To(HavePrefix(nsA + ".linstor/"))

	// The bucket holds the encrypted copy and its manifest; nothing of the database
	// is readable in it.
	files := bucketFiles(t, srv.Dir)
	data := files["linstor-dr/site-a/linstor-operator/databases/"+id+"/database.json.gz.age"]
	g.Expect(data).NotTo(BeEmpty(), "stored: %v", keys(files))
	g.Expect(files).To(HaveKey("linstor-dr/site-a/linstor-operator/databases/" + id + "/manifest.json"))
	g.Expect(bytes.HasPrefix(data, []byte("age-encryption.org/v1"))).To(BeTrue())
	for _, plain := range []string{"node-a", "PVC-1", "Aux/k1", "\x1f\x8b"} {
		g.Expect(bytes.Contains(data, []byte(plain))).To(BeFalse(), "the stored object reveals %q", plain)
	}
	g.Eventually(func(g Gomega) {
		st := get(g, nsA, "offsite", &linstorv1.LinstorBackupTarget{}).Status
		g.Expect(st.Count).To(Equal(int32(1)))
		g.Expect(st.Backups[0].ID).To(Equal(id))
		g.Expect(st.Backups[0].ClusterUID).To(Equal(string(clusterA.UID)))
	}, timeout, tick).Should(Succeed())

	// The disaster: cluster A and LINSTOR's database are gone.
	g.Expect(env.Client.Delete(ctx, clusterA)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(clusterA), &linstorv1.LinstorCluster{}))
	}, timeout, tick).Should(BeTrue())
	_ = env.Client.DeleteAllOf(ctx, &linstorv1.LinstorSatellite{}, client.InNamespace(nsA))
	dropTables(ctx)
	g.Eventually(func(g Gomega) { g.Expect(linstorCRDs(g)).To(BeEmpty()) }, timeout, tick).Should(Succeed())

	// The new cluster: the admin kept the key, knows the bucket, and applies the
	// target, the import and the LinstorCluster at once.
	nsB := env.Namespace(t)
	g.Expect(env.Client.Create(ctx, &linstorv1.LinstorBackup{ObjectMeta: metav1.ObjectMeta{Name: "from-site-a", Namespace: nsB},
		Spec: linstorv1.LinstorBackupSpec{ClusterRef: linstorv1.ClusterReference{Name: "linstor"}, TargetRef: &linstorv1.BackupTargetReference{Name: "offsite"}, ImportFrom: id}})).To(Succeed())
	var startedBeforeRestore atomic.Bool
	stopWatch := make(chan struct{})
	t.Cleanup(func() { close(stopWatch) })
	clusterB := makeCluster(t, nsB, linstorv1.LinstorClusterSpec{NodeSelector: map[string]string{"suite": "dr"},
		Database: &linstorv1.DatabaseSpec{RestoreFrom: "from-site-a"}})
	go func() { // LINSTOR must not start before the database is restored
		for {
			select {
			case <-stopWatch:
				return
			case <-time.After(50 * time.Millisecond):
			}
			var c linstorv1.LinstorCluster
			var d appsv1.Deployment
			if env.Client.Get(ctx, client.ObjectKeyFromObject(clusterB), &c) != nil ||
				env.Client.Get(ctx, client.ObjectKey{Namespace: nsB, Name: names.ControllerName}, &d) != nil {
				continue
			}
			if r := c.Status.Restore; (r == nil || r.Phase != "Restored") && d.Spec.Replicas != nil && *d.Spec.Replicas > 0 {
				startedBeforeRestore.Store(true)
			}
		}
	}()
	// Applied in any order: the import and the cluster came first and wait for the
	// target; LINSTOR does not start meanwhile.
	g.Eventually(func(g Gomega) {
		b := get(g, nsB, "from-site-a", &linstorv1.LinstorBackup{})
		g.Expect(b.Status.Phase).To(Equal(linstorv1.BackupVerifying))
		g.Expect(b.Status.Message).To(ContainSubstring("LinstorBackupTarget offsite not found"))
		g.Expect(getCluster(g, clusterB).Status.Conditions).NotTo(BeEmpty())
	}, timeout, tick).Should(Succeed())
	g.Consistently(func(g Gomega) {
		var d appsv1.Deployment
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: nsB, Name: names.ControllerName}, &d); err == nil {
			g.Expect(*d.Spec.Replicas).To(BeZero(), "LINSTOR started on an empty database while its restore waits")
		}
	}, "3s", tick).Should(Succeed())
	// The admin's worst day goes on: the key Secret holds the wrong key. The import
	// fails, the restore with it, and LINSTOR still does not start.
	backupSecrets(t, nsB, srv, newIdentity(t))
	g.Expect(env.Client.Create(ctx, backupTarget(nsB, "offsite", srv, "linstor-dr"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		b := get(g, nsB, "from-site-a", &linstorv1.LinstorBackup{})
		g.Expect(b.Status.Phase).To(Equal(linstorv1.BackupFailed))
		r := getCluster(g, clusterB).Status.Restore
		g.Expect(r).NotTo(BeNil())
		g.Expect(r.Phase).To(Equal("Failed"))
		g.Expect(r.BackupUID).To(Equal(string(b.UID)))
	}, timeout, tick).Should(Succeed())
	// The runbook's fix: the right key, and the import created again under its name
	// (clearing restoreFrom would start LINSTOR empty). The restore is tried again.
	key := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "backup-key", Namespace: nsB}}
	g.Expect(envtest.Update(ctx, env.Client, key, func(s *corev1.Secret) { s.Data = map[string][]byte{"identity": []byte(identity)} })).To(Succeed())
	failedImport := get(g, nsB, "from-site-a", &linstorv1.LinstorBackup{})
	g.Expect(env.Client.Delete(ctx, failedImport)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(failedImport), &linstorv1.LinstorBackup{}))
	}, timeout, tick).Should(BeTrue())
	g.Expect(env.Client.Create(ctx, &linstorv1.LinstorBackup{ObjectMeta: metav1.ObjectMeta{Name: "from-site-a", Namespace: nsB},
		Spec: linstorv1.LinstorBackupSpec{ClusterRef: linstorv1.ClusterReference{Name: "linstor"}, TargetRef: &linstorv1.BackupTargetReference{Name: "offsite"}, ImportFrom: id}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		b := get(g, nsB, "from-site-a", &linstorv1.LinstorBackup{})
		g.Expect(b.Status.Phase).To(Equal(linstorv1.BackupCompleted), b.Status.Message)
		g.Expect(b.Status.Checksum).To(Equal(taken.Status.Checksum))
		g.Expect(b.Status.Stored.ClusterUID).To(Equal(string(clusterA.UID)))
	}, timeout, tick).Should(Succeed())
	g.Eventually(func(g Gomega) {
		c := getCluster(g, clusterB)
		g.Expect(c.Status.Restore).NotTo(BeNil())
		g.Expect(c.Status.Restore.Phase).To(Equal("Restored"), c.Status.Restore.Message)
	}, 2*timeout, tick).Should(Succeed())
	g.Expect(encoded(g)).To(Equal(want), "the restored database is not the backed-up one, object for object")
	g.Expect(startedBeforeRestore.Load()).To(BeFalse(), "LINSTOR started before its database was restored")
}
