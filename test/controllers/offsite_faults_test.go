package controllers

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/internal/s3server"
	"github.com/linstor-operator/linstor-operator/test/envtest"
)

// The fault table of offsite backups, on a real S3 server behind a fault proxy: each
// fault gives a clear status, no backup that cannot be restored is Completed, and a
// bucket that cannot be used never keeps LINSTOR's controller stopped.
func TestOffsiteBackupFaultTable(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := s3Bucket(t, "linstor-faults")
	proxy, err := s3server.StartFaults(srv)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(proxy.Close)
	ns, cluster := backupCluster(t, srv, "flt", "flt-a", "10.63.0.1")
	replicas := func(g Gomega) int32 { return controllerReplicas(g, ns) }
	g.Eventually(replicas, timeout, tick).Should(Equal(int32(1)))

	target := func(name, bucket, creds string) {
		t := backupTarget(ns, name, srv, bucket)
		t.Spec.S3.Endpoint = proxy.Endpoint
		t.Spec.S3.CredentialsSecretRef.Name = creds
		g.Expect(env.Client.Create(ctx, t)).To(Succeed())
	}
	backup := func(name, targetName string, timeout time.Duration) {
		g.Expect(env.Client.Create(ctx, &linstorv1.LinstorBackup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: linstorv1.LinstorBackupSpec{ClusterRef: linstorv1.ClusterReference{Name: cluster.Name}, TargetRef: &linstorv1.BackupTargetReference{Name: targetName},
				Timeout: &metav1.Duration{Duration: timeout}}})).To(Succeed())
	}
	targetReason := func(name, reason string) {
		g.Eventually(func(g Gomega) {
			c := condition(get(g, ns, name, &linstorv1.LinstorBackupTarget{}).Status.Conditions, linstorv1.ConditionAvailable)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse), c.Message)
			g.Expect(c.Reason).To(Equal(reason), c.Message)
			g.Expect(c.Message).To(ContainSubstring("s3://"))
		}, timeout, tick).Should(Succeed())
	}
	failedAtOnce := func(name string, says ...string) {
		// Looked at on every poll, not only at the end: the cluster reconciler must
		// not stop LINSTOR for a backup whose bucket was not checked yet.
		stopped := false
		g.Eventually(func(g Gomega) {
			stopped = stopped || replicas(g) != 1
			b := get(g, ns, name, &linstorv1.LinstorBackup{})
			g.Expect(b.Status.Phase).To(Equal(linstorv1.BackupFailed))
			for _, s := range says {
				g.Expect(b.Status.Message).To(ContainSubstring(s))
			}
		}, timeout, tick).Should(Succeed())
		g.Expect(stopped || replicas(g) != 1).To(BeFalse(), "a backup to an unusable bucket stopped LINSTOR")
	}

	// Wrong credentials: the target says so; a backup fails before LINSTOR is stopped.
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s3-wrong", Namespace: ns},
		StringData: map[string]string{linstorv1.S3AccessKeyIDKey: srv.AccessKey, linstorv1.S3SecretAccessKeyKey: "not-the-secret"}})).To(Succeed())
	target("wrong-creds", "linstor-faults", "s3-wrong")
	targetReason("wrong-creds", "Unauthorized")
	g.Eventually(func(g Gomega) float64 { // LinstorBackupTargetUnavailable reads it
		return gauge(g, "linstor_operator_backup_target_available", map[string]string{"namespace": ns, "target": "wrong-creds", "reason": "Unauthorized"})
	}, timeout, tick).Should(Equal(0.0))
	backup("to-wrong-creds", "wrong-creds", time.Minute)
	failedAtOnce("to-wrong-creds", "Unauthorized", "the LINSTOR controller was not stopped")

	// A missing bucket: the same, naming it.
	target("no-bucket", "linstor-missing", "s3")
	targetReason("no-bucket", "NoSuchBucket")
	backup("to-no-bucket", "no-bucket", time.Minute)
	failedAtOnce("to-no-bucket", "NoSuchBucket", "linstor-missing")

	// The endpoint down: Unreachable; a backup fails before stopping anything.
	target("good", "linstor-faults", "s3")
	availableTarget(g, ns, "good")
	g.Expect(proxy.Refuse()).To(Succeed())
	targetReason("good", "Unreachable")
	backup("while-down", "good", time.Minute)
	failedAtOnce("while-down", "Unreachable")
	g.Expect(proxy.PassThrough()).To(Succeed())
	availableTarget(g, ns, "good")

	// The server fails every write (5xx) once the copy runs: the backup retries, says
	// why, and fails at its deadline; LINSTOR runs again and the bucket lists nothing.
	g.Expect(proxy.FailNext(1000000, http.StatusServiceUnavailable, "SlowDown", func(r *http.Request) bool {
		return r.Method == http.MethodPut || r.Method == http.MethodPost
	})).To(Succeed())
	backup("5xx", "good", 25*time.Second)
	g.Eventually(func(g Gomega) {
		b := get(g, ns, "5xx", &linstorv1.LinstorBackup{})
		g.Expect(b.Status.Phase).To(Equal(linstorv1.BackupRunning))
		g.Expect(b.Status.Message).To(ContainSubstring("A try failed, retrying until"))
		g.Expect(b.Status.Message).To(ContainSubstring("ServerError"))
	}, 2*timeout, tick).Should(Succeed())
	g.Eventually(func(g Gomega) {
		b := get(g, ns, "5xx", &linstorv1.LinstorBackup{})
		g.Expect(b.Status.Phase).To(Equal(linstorv1.BackupFailed))
		g.Expect(b.Status.Message).To(ContainSubstring("not completed within"))
	}, 2*timeout, tick).Should(Succeed())
	g.Expect(proxy.PassThrough()).To(Succeed())
	g.Eventually(replicas, timeout, tick).Should(Equal(int32(1)))
	g.Consistently(func(g Gomega) {
		g.Expect(get(g, ns, "good", &linstorv1.LinstorBackupTarget{}).Status.Count).To(BeZero(), "a failed backup is listed in the bucket")
	}, "3s", tick).Should(Succeed())

	// The server fails every read and deletion of a copy once it is sent: the backup
	// cannot read it back, fails at its deadline, and its copy, never published, is
	// marked for deletion; the deletion is retried until the bucket takes it, rather
	// than the copy left there unlisted (as it was when the operator stopped between
	// the saved Failed and the deletion, or the bucket refused that one try).
	g.Expect(proxy.FailNext(1000000, http.StatusServiceUnavailable, "SlowDown", func(r *http.Request) bool {
		return (r.Method == http.MethodGet || r.Method == http.MethodDelete) && strings.Contains(r.URL.Path, "/databases/")
	})).To(Succeed())
	backup("unreadable", "good", 25*time.Second)
	g.Eventually(func(g Gomega) {
		b := get(g, ns, "unreadable", &linstorv1.LinstorBackup{})
		g.Expect(b.Status.Phase).To(Equal(linstorv1.BackupVerifying))
		g.Expect(b.Status.Message).To(ContainSubstring("Reading the copy back failed, retrying"))
	}, 2*timeout, tick).Should(Succeed())
	g.Eventually(func(g Gomega) {
		b := get(g, ns, "unreadable", &linstorv1.LinstorBackup{})
		g.Expect(b.Status.Phase).To(Equal(linstorv1.BackupFailed))
		g.Expect(b.Status.Message).To(ContainSubstring("not completed within"))
		g.Expect(b.Status.Message).To(ContainSubstring("its copy, never published, is being deleted from the bucket"))
		g.Expect(b.Status.Message).To(ContainSubstring("is being deleted from the bucket; not yet: "))
		g.Expect(b.Status.Stored.DeletePending).To(BeTrue())
	}, 2*timeout, tick).Should(Succeed())
	g.Expect(proxy.PassThrough()).To(Succeed())
	// A later try deletes it: the copy goes, and the status says so.
	g.Eventually(func(g Gomega) {
		// Names only, and a file gone mid-walk is gone: the deletion runs meanwhile.
		g.Expect(filepath.WalkDir(srv.Dir, func(p string, _ fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			g.Expect(p).NotTo(ContainSubstring("-unreadable/"), "a copy that was never published is left in the bucket")
			return err
		})).To(Succeed())
	}, timeout, tick).Should(Succeed())
	g.Eventually(func(g Gomega) {
		b := get(g, ns, "unreadable", &linstorv1.LinstorBackup{})
		g.Expect(b.Status.Stored.DeletePending).To(BeFalse())
		g.Expect(b.Status.Message).To(HaveSuffix("its copy, never published, was deleted from the bucket"))
		g.Expect(b.Status.Message).To(ContainSubstring("not completed within"))
	}, timeout, tick).Should(Succeed())

	// A copy published whose Completed could not be saved (a policy refuses it here;
	// a conflict or an API server blip on a real cluster): the deadline fails the
	// backup, and the copy, listed and importable, is kept, not deleted as unpublished.
	refuse, err := envtest.RefuseInNamespace(t, env.Client, "no-completed", ns, linstorv1.GroupVersion.Group, "linstorbackups/status",
		"!has(object.status) || !has(object.status.phase) || object.status.phase != 'Completed'", "Completed is refused in this test")
	g.Expect(err).NotTo(HaveOccurred())
	backup("probe", "missing-target", time.Minute)
	g.Eventually(func(g Gomega) {
		b := get(g, ns, "probe", &linstorv1.LinstorBackup{})
		b.Status.Phase = linstorv1.BackupCompleted
		g.Expect(env.Client.Status().Update(ctx, b)).To(MatchError(ContainSubstring("Completed is refused in this test")))
	}, timeout, tick).Should(Succeed())
	backup("published-late", "good", 25*time.Second)
	g.Eventually(func(g Gomega) {
		b := get(g, ns, "published-late", &linstorv1.LinstorBackup{})
		g.Expect(b.Status.Phase).To(Equal(linstorv1.BackupFailed))
		g.Expect(b.Status.Message).To(ContainSubstring("was published before the failure was saved"))
		g.Expect(b.Status.Stored.DeletePending).To(BeFalse())
	}, 3*timeout, tick).Should(Succeed())
	refuse()
	kept := map[string]bool{}
	g.Expect(filepath.WalkDir(srv.Dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(p, "-published-late/") {
			kept[filepath.Base(p)] = true
		}
		return err
	})).To(Succeed())
	g.Expect(kept).To(HaveKey("manifest.json"), "the published copy's manifest was deleted")
	g.Expect(kept).To(HaveKey("database.json.gz.age"), "the published copy's data was deleted")

	// A backup that completes, then an import of it with another key: WrongKey.
	backup("good-1", "good", time.Minute)
	var id string
	g.Eventually(func(g Gomega) {
		b := get(g, ns, "good-1", &linstorv1.LinstorBackup{})
		g.Expect(b.Status.Phase).To(Equal(linstorv1.BackupCompleted), b.Status.Message)
		id = b.Status.Stored.ID
	}, timeout, tick).Should(Succeed())
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "other-key", Namespace: ns},
		StringData: map[string]string{"identity": newIdentity(t)}})).To(Succeed())
	other := backupTarget(ns, "other-key", srv, "linstor-faults")
	other.Spec.Encryption.KeySecretRef.Name = "other-key"
	g.Expect(env.Client.Create(ctx, other)).To(Succeed())
	g.Expect(env.Client.Create(ctx, &linstorv1.LinstorBackup{ObjectMeta: metav1.ObjectMeta{Name: "import-other-key", Namespace: ns},
		Spec: linstorv1.LinstorBackupSpec{ClusterRef: linstorv1.ClusterReference{Name: cluster.Name}, TargetRef: &linstorv1.BackupTargetReference{Name: "other-key"}, ImportFrom: id}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		b := get(g, ns, "import-other-key", &linstorv1.LinstorBackup{})
		g.Expect(b.Status.Phase).To(Equal(linstorv1.BackupFailed))
		g.Expect(b.Status.Message).To(Or(ContainSubstring("WrongKey"), ContainSubstring("not authenticated by this key")))
	}, timeout, tick).Should(Succeed())

	// The target is edited to point elsewhere (another prefix): that proves nothing about
	// the copy where it was written, which stays Completed; pointed back, it is checked again.
	good := get(g, ns, "good", &linstorv1.LinstorBackupTarget{})
	good.Spec.S3.Prefix = "site-b"
	g.Expect(env.Client.Update(ctx, good)).To(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(get(g, ns, "good-1", &linstorv1.LinstorBackup{}).Status.Phase).To(Equal(linstorv1.BackupCompleted))
	}, "6s", tick).Should(Succeed())
	good = get(g, ns, "good", &linstorv1.LinstorBackupTarget{})
	good.Spec.S3.Prefix = "site-a"
	g.Expect(env.Client.Update(ctx, good)).To(Succeed())

	// A bucket lifecycle rule deletes the copy: the Completed backup turns Failed, saying why.
	g.Expect(os.Remove(filepath.Join(srv.Dir, "linstor-faults", "site-a", "linstor-operator", "databases", id, "database.json.gz.age"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		b := get(g, ns, "good-1", &linstorv1.LinstorBackup{})
		g.Expect(b.Status.Phase).To(Equal(linstorv1.BackupFailed))
		g.Expect(b.Status.Message).To(ContainSubstring("can no longer be restored"))
		g.Expect(b.Status.Message).To(ContainSubstring("NotFound"))
	}, timeout, tick).Should(Succeed())
}
