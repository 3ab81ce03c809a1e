package controllers

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/controllers/linstorbackup"
	"github.com/linstor-operator/linstor-operator/test/envtest"
)

// staleBackup serves one LinstorBackup as a pass saw it before its last write (the
// cache lagging the Completed write, an old leader that has not noticed it lost).
type staleBackup struct {
	client.Client
	stale *linstorv1.LinstorBackup
}

func (c staleBackup) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if b, ok := obj.(*linstorv1.LinstorBackup); ok && key == client.ObjectKeyFromObject(c.stale) {
		c.stale.DeepCopyInto(b)
		return nil
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// A pass that still sees a backup Verifying after it was published and Completed must
// not delete its copy: not at the deadline, and not when the target's key was rotated
// since (the copy then does not read back with the new key, yet it is good).
func TestAStalePassNeverDeletesACompletedBackupsCopy(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := s3Bucket(t, "linstor-stale")
	ns, cluster := offsiteCluster(t, srv, "linstor-stale", "stale", "stale-a", "10.65.0.1")

	// Two backups, Completed; each remembered as first created (Verifying, an old
	// resourceVersion) for the stale pass.
	const shortDeadline = 20 * time.Second
	take := func(name string, deadline time.Duration) (completed, stale *linstorv1.LinstorBackup) {
		b := &linstorv1.LinstorBackup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: linstorv1.LinstorBackupSpec{ClusterRef: linstorv1.ClusterReference{Name: cluster.Name}, TargetRef: &linstorv1.BackupTargetReference{Name: "offsite"},
				Timeout: &metav1.Duration{Duration: deadline}}}
		g.Expect(env.Client.Create(ctx, b)).To(Succeed())
		created := b.ResourceVersion
		g.Eventually(func(g Gomega) {
			completed = get(g, ns, name, &linstorv1.LinstorBackup{})
			g.Expect(completed.Status.Phase).To(Equal(linstorv1.BackupCompleted), completed.Status.Message)
		}, 2*timeout, tick).Should(Succeed())
		stale = completed.DeepCopy()
		stale.ResourceVersion = created
		stale.Status.Phase, stale.Status.CompletedAt, stale.Status.Message = linstorv1.BackupVerifying, nil, "Sent; reading it back"
		return completed, stale
	}
	short, staleShort := take("short", shortDeadline)
	long, staleLong := take("long", 10*time.Minute)
	copyOf := func(b *linstorv1.LinstorBackup) []string {
		var keys []string
		for key := range bucketFiles(t, srv.Dir) {
			if strings.Contains(key, "/"+b.Status.Stored.ID+"/") {
				keys = append(keys, key)
			}
		}
		return keys
	}
	g.Expect(copyOf(short)).To(HaveLen(2), "the copy and its manifest")
	g.Expect(copyOf(long)).To(HaveLen(2), "the copy and its manifest")
	stalePass := func(stale *linstorv1.LinstorBackup) error {
		r := &linstorbackup.Reconciler{Client: staleBackup{Client: env.Client, stale: stale}, Database: env.Client, Recorder: record.NewFakeRecorder(100)}
		_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(stale)})
		return err
	}

	// Past the deadline, the stale pass would fail it: its write conflicts, and it
	// deleted nothing before.
	time.Sleep(time.Until(short.CreationTimestamp.Add(shortDeadline + time.Second)))
	g.Expect(apierrors.IsConflict(stalePass(staleShort))).To(BeTrue(), "the stale pass's write must conflict")
	g.Expect(copyOf(short)).To(HaveLen(2), "a stale pass at the deadline deleted a Completed backup's copy")
	g.Expect(get(g, ns, "short", &linstorv1.LinstorBackup{}).Status.Phase).To(Equal(linstorv1.BackupCompleted))

	// The key is rotated: the stale pass reads the copy with the new key (WrongKey).
	before := get(g, ns, "offsite", &linstorv1.LinstorBackupTarget{}).Status.KeyFingerprint
	key := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "backup-key", Namespace: ns}}
	g.Expect(envtest.Update(ctx, env.Client, key, func(s *corev1.Secret) { s.Data = map[string][]byte{"identity": []byte(newIdentity(t))} })).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, ns, "offsite", &linstorv1.LinstorBackupTarget{}).Status.KeyFingerprint).NotTo(Equal(before))
	}, timeout, tick).Should(Succeed())
	g.Expect(stalePass(staleLong)).To(HaveOccurred())
	g.Expect(copyOf(long)).To(HaveLen(2), "a stale pass after a key rotation deleted a Completed backup's copy")
	g.Expect(get(g, ns, "long", &linstorv1.LinstorBackup{}).Status.Phase).To(Equal(linstorv1.BackupCompleted))
}
