package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/dbbackup"
	"github.com/linstor-operator/linstor-operator/pkg/lifecycle"
)

// The guards around a restore (issue #29): a backup that cannot be restored is found
// before anything is written and LINSTOR runs again; a LinstorBackup created meanwhile
// waits for the restore instead of copying a half-restored database; the backups the
// lifecycle may still restore are neither pruned nor deleted under it.

// controllerReplicas is what the LINSTOR controller Deployment asks for.
func controllerReplicas(g Gomega, ns string) int32 {
	var d appsv1.Deployment
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: names.ControllerName}, &d)).To(Succeed())
	g.Expect(d.Spec.Replicas).NotTo(BeNil())
	return *d.Spec.Replicas
}

// takeBackup creates a LinstorBackup of the cluster through the backup controller and
// waits until it is Completed (envtest runs no controller pod: the copy starts at once).
func takeBackup(t *testing.T, ns, name string, cluster *linstorv1.LinstorCluster) *linstorv1.LinstorBackup {
	t.Helper()
	g := NewWithT(t)
	b := &linstorv1.LinstorBackup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: linstorv1.LinstorBackupSpec{ClusterRef: linstorv1.ClusterReference{Name: cluster.Name}}}
	g.Expect(env.Client.Create(context.Background(), b)).To(Succeed())
	t.Cleanup(func() { releaseAndDeleteBackup(ns, name) })
	g.Eventually(func(g Gomega) {
		b = get(g, ns, name, &linstorv1.LinstorBackup{})
		g.Expect(b.Status.Phase).To(Equal(linstorv1.BackupCompleted), b.Status.Message)
	}, timeout, tick).Should(Succeed())
	return b
}

// releaseAndDeleteBackup deletes a LinstorBackup a test left, lifting the lifecycle's
// finalizer (its LinstorCluster may be gone already).
func releaseAndDeleteBackup(ns, name string) {
	ctx := context.Background()
	b := &linstorv1.LinstorBackup{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, b); err != nil {
		return
	}
	if controllerutil.RemoveFinalizer(b, names.FinalizerBackupInUse) {
		_ = env.Client.Update(ctx, b)
	}
	_ = env.Client.Delete(ctx, b)
}

// confirmRestore waits for the restore of backup to ask for its confirmation and gives it.
func confirmRestore(t *testing.T, cluster *linstorv1.LinstorCluster, backup string) {
	t.Helper()
	g := NewWithT(t)
	confirm := ""
	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		g.Expect(c.Status.Restore).NotTo(BeNil())
		g.Expect(c.Status.Restore.Phase).To(Equal(lifecycle.RestoreAwaitingConfirmation), c.Status.Restore.Message)
		confirm = backup + "/" + string(c.UID)
	}, timeout, tick).Should(Succeed())
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[names.AnnotationConfirmRestore] = confirm
	})).To(Succeed())
}

func restorePhase(c *linstorv1.LinstorCluster) string {
	if c.Status.Restore == nil {
		return ""
	}
	return c.Status.Restore.Phase
}

// A damaged chunk Secret in the backup restoreFrom names, on a live cluster (confirmed)
// and on an empty one: the check finds it before anything is written, status.restore
// says Failed and that nothing was touched, and the LINSTOR controller runs again on
// its database, which is unchanged.
func TestRestoreOfADamagedBackupFailsWithLinstorRunningAndNothingTouched(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	start := time.Now()
	ns := env.Namespace(t)
	freshDatabase(t)
	cluster := makeCluster(t, ns, linstorv1.LinstorClusterSpec{NodeSelector: map[string]string{"suite": "none"}, Version: "1.33.3"})
	g.Eventually(func(g Gomega) {
		g.Expect(getCluster(g, cluster).Status.Version).NotTo(BeEmpty())
	}, timeout, tick).Should(Succeed())
	b := takeBackup(t, ns, "damaged", cluster)
	g.Eventually(func(g Gomega) { g.Expect(controllerReplicas(g, ns)).To(Equal(int32(1))) }, timeout, tick).Should(Succeed())

	// The database changed since the backup (a restore would have to write), and one of
	// the backup's chunks is damaged.
	g.Eventually(func() error {
		return env.Client.Create(ctx, row("Nodes", "node-new", map[string]any{"node_name": "node-new"}))
	}, timeout, tick).Should(Succeed())
	before := encoded(g)
	chunk := &corev1.Secret{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: b.Status.Secrets[0]}, chunk)).To(Succeed())
	chunk.Data[dbbackup.ChunkKey][5] ^= 0xff
	g.Expect(env.Client.Update(ctx, chunk)).To(Succeed())

	failedAndRunning := func(g Gomega) {
		c := getCluster(g, cluster)
		g.Expect(c.Status.Restore).NotTo(BeNil())
		g.Expect(c.Status.Restore.Phase).To(Equal(lifecycle.RestoreFailed), "%+v", c.Status.Restore)
		g.Expect(c.Status.Restore.Message).To(And(ContainSubstring("LinstorBackup damaged cannot be restored: it is damaged"),
			ContainSubstring("Nothing was touched")))
		g.Expect(c.Status.Restore.Message).NotTo(ContainSubstring("partly"))
		g.Expect(controllerReplicas(g, ns)).To(Equal(int32(1)), "the LINSTOR controller stays stopped after a check that wrote nothing")
	}

	// A live database: the restore waits for its confirmation, then checks the backup.
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) {
		c.Spec.Database = &linstorv1.DatabaseSpec{RestoreFrom: "damaged"}
	})).To(Succeed())
	confirmRestore(t, cluster, "damaged")
	seen := map[string]bool{}
	g.Eventually(func(g Gomega) {
		seen[restorePhase(getCluster(g, cluster))] = true
		failedAndRunning(g)
	}, timeout, 20*time.Millisecond).Should(Succeed())
	t.Logf("live cluster: Failed %.1fs into the test; restore phases seen %v", time.Since(start).Seconds(), keys(seen))
	g.Expect(seen).NotTo(HaveKey(lifecycle.RestoreRestoring), "Restoring was saved before the backup was checked")
	g.Expect(eventOf(g, ns, "RestoreFailed", "Nothing was touched")).NotTo(BeNil(), "no RestoreFailed event")
	g.Consistently(func(g Gomega) {
		failedAndRunning(g)
		g.Expect(encoded(g)).To(Equal(before), "the database was touched")
	}, "2s", 200*time.Millisecond).Should(Succeed())

	// An empty database (a new installation): no confirmation is asked, the same check
	// fails, and not even a table is created.
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) { c.Spec.Database.RestoreFrom = "" })).To(Succeed())
	g.Eventually(func(g Gomega) { g.Expect(getCluster(g, cluster).Status.Restore).To(BeNil()) }, timeout, tick).Should(Succeed())
	dropTables(ctx)
	g.Expect(linstorCRDs(g)).To(BeEmpty())
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) { c.Spec.Database.RestoreFrom = "damaged" })).To(Succeed())
	g.Eventually(func(g Gomega) {
		failedAndRunning(g)
		g.Expect(getCluster(g, cluster).Status.Restore.ClusterUID).NotTo(BeEmpty())
	}, timeout, tick).Should(Succeed())
	g.Consistently(func(g Gomega) {
		failedAndRunning(g)
		g.Expect(linstorCRDs(g)).To(BeEmpty(), "a table was created from a damaged backup")
	}, "2s", 200*time.Millisecond).Should(Succeed())
	t.Logf("empty cluster: Failed, nothing created; %.1fs in all", time.Since(start).Seconds())
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A LinstorBackup created while a restore replaces the database (here: held in the
// middle of recreating the rows) waits, Pending with the reason, and copies the
// restored database once the restore ended. With keepBackups 1, the older backup that
// spec.database.restoreFrom names is not pruned by the newer one's completion, and it
// carries the lifecycle's finalizer only while the restore runs.
func TestBackupWaitsForARestoreAndTheRestoredBackupIsNotPruned(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	start := time.Now()
	ns := env.Namespace(t)
	freshDatabase(t)
	cluster := makeCluster(t, ns, linstorv1.LinstorClusterSpec{NodeSelector: map[string]string{"suite": "none"}, Version: "1.33.3",
		Database: &linstorv1.DatabaseSpec{KeepBackups: ptr.To[int32](1)}})
	g.Eventually(func(g Gomega) {
		g.Expect(getCluster(g, cluster).Status.Version).NotTo(BeEmpty())
	}, timeout, tick).Should(Succeed())
	old := takeBackup(t, ns, "old", cluster)
	g.Eventually(func(g Gomega) { g.Expect(controllerReplicas(g, ns)).To(Equal(int32(1))) }, timeout, tick).Should(Succeed())
	time.Sleep(1100 * time.Millisecond) // completion times are in seconds: "during" is newer

	// The restore is held while it recreates one row.
	restoring, release := holdLinstorCreates(t, func(name string) bool { return name == "prop-05" })
	g.Eventually(func() error {
		return env.Client.Create(ctx, row("Nodes", "node-new", map[string]any{"node_name": "node-new"}))
	}, timeout, tick).Should(Succeed())
	g.Expect(dbbackup.Checksum(encoded(g))).NotTo(Equal(old.Status.Checksum))

	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) {
		c.Spec.Database.RestoreFrom = "old"
	})).To(Succeed())
	confirmRestore(t, cluster, "old")
	select {
	case <-restoring:
	case <-time.After(timeout):
		t.Fatalf("the restore never recreated prop-05: %+v", getCluster(g, cluster).Status.Restore)
	}
	c := getCluster(g, cluster)
	g.Expect(restorePhase(c)).To(Equal(lifecycle.RestoreRestoring), "%+v", c.Status.Restore)
	g.Expect(get(g, ns, "old", &linstorv1.LinstorBackup{}).Finalizers).To(ContainElement(names.FinalizerBackupInUse),
		"the backup being restored is not protected")
	t.Logf("restore held in Restoring %.1fs into the test", time.Since(start).Seconds())

	// A backup created now waits: the database is half restored.
	g.Expect(env.Client.Create(ctx, &linstorv1.LinstorBackup{ObjectMeta: metav1.ObjectMeta{Name: "during", Namespace: ns},
		Spec: linstorv1.LinstorBackupSpec{ClusterRef: linstorv1.ClusterReference{Name: cluster.Name}}})).To(Succeed())
	t.Cleanup(func() { releaseAndDeleteBackup(ns, "during") })
	waiting := func(g Gomega) {
		b := get(g, ns, "during", &linstorv1.LinstorBackup{})
		g.Expect(b.Status.Phase).To(Equal(linstorv1.BackupPending), "the backup did not wait for the restore: %s", b.Status.Message)
		g.Expect(b.Status.Message).To(HavePrefix("Waiting: "))
		g.Expect(b.Status.Message).To(ContainSubstring("being restored from old"))
		g.Expect(b.Status.Secrets).To(BeEmpty())
	}
	g.Eventually(waiting, timeout, tick).Should(Succeed())
	g.Consistently(func(g Gomega) {
		waiting(g)
		g.Expect(restorePhase(getCluster(g, cluster))).To(Equal(lifecycle.RestoreRestoring))
	}, "2s", tick).Should(Succeed())

	release()
	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		g.Expect(restorePhase(c)).To(Equal(lifecycle.RestoreRestored), "%+v", c.Status.Restore)
	}, timeout, tick).Should(Succeed())
	t.Logf("restore Restored %.1fs into the test", time.Since(start).Seconds())
	var during *linstorv1.LinstorBackup
	g.Eventually(func(g Gomega) {
		during = get(g, ns, "during", &linstorv1.LinstorBackup{})
		g.Expect(during.Status.Phase).To(Equal(linstorv1.BackupCompleted), during.Status.Message)
	}, timeout, tick).Should(Succeed())
	t.Logf("backup created during the restore Completed %.1fs into the test", time.Since(start).Seconds())
	g.Expect(during.Status.Checksum).To(Equal(old.Status.Checksum), "the backup is not of the restored database")
	g.Expect(during.Status.LinstorVersion).To(Equal(old.Status.LinstorVersion))
	g.Expect(dbbackup.Checksum(encoded(g))).To(Equal(old.Status.Checksum))

	// keepBackups 1: "during" is the newest, but "old" is what restoreFrom names.
	g.Consistently(func(g Gomega) {
		b := get(g, ns, "old", &linstorv1.LinstorBackup{})
		g.Expect(b.DeletionTimestamp).To(BeNil(), "the backup spec.database.restoreFrom names was pruned")
	}, "3s", tick).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, ns, "old", &linstorv1.LinstorBackup{}).Finalizers).NotTo(ContainElement(names.FinalizerBackupInUse))
	}, timeout, tick).Should(Succeed(), "the finalizer outlived the restore")
	g.Eventually(func(g Gomega) { g.Expect(controllerReplicas(g, ns)).To(Equal(int32(1))) }, timeout, tick).Should(Succeed())
}

// The pre-upgrade backup deleted in the middle of the upgrade stays, with its chunk
// Secrets, while the upgrade may still roll back to it; it goes once the upgrade ended.
func TestUpgradeBackupDeletedMidUpgradeStaysUntilTheUpgradeEnds(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	start := time.Now()
	ns, cluster, backupName := upgradeHeldInSatellites(t, "rgu")
	t.Cleanup(func() { releaseAndDeleteBackup(ns, backupName) })
	b := get(g, ns, backupName, &linstorv1.LinstorBackup{})
	g.Expect(b.Status.Phase).To(Equal(linstorv1.BackupCompleted))
	g.Expect(b.Finalizers).To(ContainElement(names.FinalizerBackupInUse), "the upgrade's backup is not protected")
	t.Logf("upgrade in Satellites with backup %s %.1fs into the test", backupName, time.Since(start).Seconds())

	g.Expect(env.Client.Delete(ctx, b)).To(Succeed())
	g.Consistently(func(g Gomega) {
		b := get(g, ns, backupName, &linstorv1.LinstorBackup{})
		g.Expect(b.DeletionTimestamp).NotTo(BeNil())
		g.Expect(b.Finalizers).To(ContainElement(names.FinalizerBackupInUse))
		for _, s := range b.Status.Secrets {
			get(g, ns, s, &corev1.Secret{})
		}
		_, err := dbbackup.Load(ctx, env.Client, b)
		g.Expect(err).NotTo(HaveOccurred(), "the backup a rollback needs cannot be read")
		c := getCluster(g, cluster)
		g.Expect(upgradePhase(c)).To(Equal(linstorv1.UpgradeSatellites))
	}, "3s", tick).Should(Succeed())

	g.Expect(emu.SetSatelliteVersion("rgu-b", "")).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(upgradePhase(getCluster(g, cluster))).To(Equal(linstorv1.UpgradeSucceeded))
	}, 2*timeout, tick).Should(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: backupName}, &linstorv1.LinstorBackup{}))
	}, timeout, tick).Should(BeTrue(), "the finalizer outlived the upgrade")
	t.Logf("upgrade Succeeded and its deleted backup gone %.1fs into the test", time.Since(start).Seconds())
}

// holdLinstorCreates holds the first create of a LINSTOR database object (group
// internal.linstor.linbit.com) whose name held accepts (holdCreates); arrived is closed
// when it comes.
func holdLinstorCreates(t *testing.T, held func(name string) bool) (arrived <-chan struct{}, release func()) {
	scope := admissionregistrationv1.ClusterScope
	return holdCreates(t, admissionregistrationv1.ValidatingWebhook{
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{dbbackup.Group}, APIVersions: []string{"*"}, Resources: []string{"*"}, Scope: &scope},
		}},
	}, held, func(i int) client.Object {
		return row("Nodes", fmt.Sprintf("hold-probe-%d", i), map[string]any{"node_name": "probe"})
	})
}

// Deleting the LinstorCluster while its restore job writes the database waits for the
// job (the finalizer stays, LINSTOR stays stopped); the marker outlives the object, and
// a LinstorCluster created again under the same name adopts the replacement and
// finishes it before LINSTOR starts, even though its spec no longer names the backup.
func TestDeletionMidRestoreWaitsAndARecreatedClusterFinishesTheRestore(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	start := time.Now()
	ns := env.Namespace(t)
	freshDatabase(t)
	spec := linstorv1.LinstorClusterSpec{NodeSelector: map[string]string{"suite": "none"}, Version: "1.33.3"}
	cluster := makeCluster(t, ns, spec)
	g.Eventually(func(g Gomega) {
		g.Expect(getCluster(g, cluster).Status.Version).NotTo(BeEmpty())
	}, timeout, tick).Should(Succeed())
	mid := takeBackup(t, ns, "mid", cluster)
	restoring, release := holdLinstorCreates(t, func(name string) bool { return name == "prop-05" })
	g.Eventually(func() error {
		return env.Client.Create(ctx, row("Nodes", "node-new", map[string]any{"node_name": "node-new"}))
	}, timeout, tick).Should(Succeed())
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) {
		c.Spec.Database = &linstorv1.DatabaseSpec{RestoreFrom: "mid"}
	})).To(Succeed())
	confirmRestore(t, cluster, "mid")
	select {
	case <-restoring:
	case <-time.After(timeout):
		t.Fatalf("the restore never recreated prop-05: %+v", getCluster(g, cluster).Status.Restore)
	}
	first := getCluster(g, cluster)
	g.Expect(restorePhase(first)).To(Equal(lifecycle.RestoreRestoring))
	marker := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster.Name + "-database-replacement"}, marker)).To(Succeed(),
		"no marker records the replacement outside the LinstorCluster")
	g.Expect(marker.Data).To(HaveKeyWithValue("backup", "mid"))
	t.Logf("restore held in Restoring %.1fs into the test", time.Since(start).Seconds())

	// Deleted mid-restore: the object stays while the job writes.
	g.Expect(env.Client.Delete(ctx, first)).To(Succeed())
	g.Consistently(func(g Gomega) {
		c := getCluster(g, cluster)
		g.Expect(c.DeletionTimestamp).NotTo(BeNil())
		g.Expect(c.Finalizers).NotTo(BeEmpty(), "the finalizer was dropped while the restore job writes")
		g.Expect(controllerReplicas(g, ns)).To(BeZero())
	}, "2s", tick).Should(Succeed())
	release()
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(cluster), &linstorv1.LinstorCluster{}))
	}, timeout, tick).Should(BeTrue(), "the deletion did not finish after the job ended")
	t.Logf("deleted LinstorCluster gone %.1fs into the test", time.Since(start).Seconds())

	// Re-applied without restoreFrom (an older manifest): the replacement is adopted.
	again := makeClusterOnLinstor(t, ns, spec)
	var adopted string
	sawRestored := false
	g.Eventually(func(g Gomega) {
		c := getCluster(g, again)
		if r := c.Status.Restore; r != nil && adopted == "" && r.Phase == lifecycle.RestoreRestoring {
			adopted = r.Message
		}
		if restorePhase(c) != lifecycle.RestoreRestored {
			var d appsv1.Deployment
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.ControllerName}, &d); err == nil {
				g.Expect(*d.Spec.Replicas).To(BeZero(), "LINSTOR was started before the adopted restore ended: %+v", c.Status.Restore)
			}
		}
		g.Expect(restorePhase(c)).To(Equal(lifecycle.RestoreRestored), "%+v", c.Status.Restore)
		sawRestored = true
	}, timeout, 20*time.Millisecond).Should(Succeed())
	g.Expect(sawRestored).To(BeTrue())
	g.Expect(adopted).To(ContainSubstring("mid"), "the recreated LinstorCluster did not adopt the replacement in Restoring")
	g.Expect(eventOf(g, ns, "RestoreAdopted", "mid")).NotTo(BeNil(), "no RestoreAdopted event")
	t.Logf("recreated LinstorCluster Restored %.1fs into the test: %s", time.Since(start).Seconds(), adopted)
	g.Expect(dbbackup.Checksum(encoded(g))).To(Equal(mid.Status.Checksum))
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(marker), &corev1.ConfigMap{}))
	}, timeout, tick).Should(BeTrue(), "the marker outlived the restore")
	g.Eventually(func(g Gomega) { g.Expect(controllerReplicas(g, ns)).To(Equal(int32(1))) }, timeout, tick).Should(Succeed())
}

// upgradeHeldInSatellites runs a cluster named after prefix (nodes <prefix>-a and
// <prefix>-b, a database with one row) into an upgrade 1.33.2 -> 1.33.3 that stays in the
// Satellites phase: <prefix>-b's satellite keeps the old version. It returns the
// namespace, the cluster and the pre-upgrade backup's name.
func upgradeHeldInSatellites(t *testing.T, prefix string) (string, *linstorv1.LinstorCluster, string) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(env.Client.Create(ctx, linstorTable("nodes", "Nodes"))).To(Succeed())
	t.Cleanup(func() { dropTables(ctx) })
	g.Eventually(func() error {
		return env.Client.Create(ctx, row("Nodes", prefix+"-a", map[string]any{"node_name": strings.ToUpper(prefix) + "-A"}))
	}, timeout, tick).Should(Succeed())
	ns, cluster := preflightCluster(t, prefix, prefix+"-a", prefix+"-b")
	g.Expect(emu.SetSatelliteVersion(prefix+"-b", preflightFrom)).To(Succeed())
	t.Cleanup(func() { _ = emu.SetSatelliteVersion(prefix+"-b", "") })
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) { c.Spec.Version = preflightTo })).To(Succeed())
	var backupName string
	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		if upgradePhase(c) == linstorv1.UpgradeController && emu.Version() != preflightTo {
			emu.SetVersion(preflightTo) // the new controller answers (its pod is played by the emulator)
		}
		g.Expect(upgradePhase(c)).To(Equal(linstorv1.UpgradeSatellites), "%+v", c.Status.Upgrade)
		backupName = c.Status.Upgrade.BackupName
	}, 2*timeout, tick).Should(Succeed())
	return ns, cluster, backupName
}
