package controllers

import (
	"context"
	"testing"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/dbbackup"
)

// A LinstorCluster deleted in the middle of an upgrade, and the LinstorBackups the
// lifecycle held when their LinstorCluster went (issue #29).

// expectInUse expects the LinstorBackup and every one of its chunk Secrets carry the
// lifecycle's finalizer (want), or none of them (!want).
func expectInUse(g Gomega, b *linstorv1.LinstorBackup, want bool) {
	g.Expect(controllerutil.ContainsFinalizer(b, names.FinalizerBackupInUse)).To(Equal(want), "LinstorBackup %s finalizers %v", b.Name, b.Finalizers)
	g.Expect(b.Status.Secrets).NotTo(BeEmpty())
	for _, name := range b.Status.Secrets {
		s := get(g, b.Namespace, name, &corev1.Secret{})
		g.Expect(controllerutil.ContainsFinalizer(s, names.FinalizerBackupInUse)).To(Equal(want), "chunk Secret %s finalizers %v", name, s.Finalizers)
	}
}

// releaseBackupAndSecrets lifts the lifecycle's finalizer from a LinstorBackup a test
// left and from its chunk Secrets, and deletes them (envtest runs no garbage collector).
func releaseBackupAndSecrets(ns, name string) {
	ctx := context.Background()
	b := &linstorv1.LinstorBackup{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, b); err != nil {
		return
	}
	for _, s := range b.Status.Secrets {
		secret := &corev1.Secret{}
		if env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: s}, secret) == nil {
			if controllerutil.RemoveFinalizer(secret, names.FinalizerBackupInUse) {
				_ = env.Client.Update(ctx, secret)
			}
			_ = env.Client.Delete(ctx, secret)
		}
	}
	releaseAndDeleteBackup(ns, name)
}

// backupEvent finds an event of LinstorBackup name with this type and reason.
func backupEvent(g Gomega, ns, name, typ, reason string) *corev1.Event {
	var events corev1.EventList
	g.Expect(env.Client.List(context.Background(), &events, client.InNamespace(ns))).To(Succeed())
	for i, e := range events.Items {
		if e.InvolvedObject.Kind == "LinstorBackup" && e.InvolvedObject.Name == name && e.Type == typ && e.Reason == reason {
			return &events.Items[i]
		}
	}
	return nil
}

// The LinstorCluster is deleted while its upgrade 1.33.2 -> 1.33.3 is in the Satellites
// phase (the new controller has migrated the database). The marker outside the object
// records the upgrade and keeps the pre-upgrade backup, with its chunk Secrets, from
// being released. The LinstorCluster applied again (same spec, empty status) adopts the
// upgrade and rolls it back: the database is the backup again, LINSTOR 1.33.2 runs, the
// marker is gone and the backup is released.
func TestClusterDeletedMidUpgradeRollsBackWhenRecreated(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	start := time.Now()
	ns, cluster, backupName := upgradeHeldInSatellites(t, "uad")
	t.Cleanup(func() { releaseBackupAndSecrets(ns, backupName) })
	b := get(g, ns, backupName, &linstorv1.LinstorBackup{})
	g.Expect(b.Status.Phase).To(Equal(linstorv1.BackupCompleted))
	g.Eventually(func(g Gomega) {
		b := get(g, ns, backupName, &linstorv1.LinstorBackup{})
		g.Expect(b.Finalizers).To(ContainElement(names.FinalizerBackupInUse))
	}, timeout, tick).Should(Succeed(), "the pre-upgrade backup is not protected")
	// Its chunk Secrets too: a foreground deletion deletes them first, finalizer or not.
	g.Eventually(func(g Gomega) {
		expectInUse(g, get(g, ns, backupName, &linstorv1.LinstorBackup{}), true)
	}, timeout, tick).Should(Succeed(), "the pre-upgrade backup's chunk Secrets are not protected")
	markerKey := client.ObjectKey{Namespace: ns, Name: cluster.Name + "-database-replacement"}
	t.Cleanup(func() {
		_ = env.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: markerKey.Name}})
	})
	wantMarker := map[string]string{"operation": "upgrade", "from": preflightFrom, "to": preflightTo, "backup": backupName}
	g.Eventually(func(g Gomega) {
		m := get(g, ns, markerKey.Name, &corev1.ConfigMap{})
		for k, v := range wantMarker {
			g.Expect(m.Data).To(HaveKeyWithValue(k, v))
		}
	}, timeout, tick).Should(Succeed(), "no marker records the upgrade outside the LinstorCluster")
	// The new controller migrated the database: it differs from the backup now.
	g.Expect(env.Client.Create(ctx, row("Nodes", "uad-migrated", map[string]any{"node_name": "UAD-MIGRATED"}))).To(Succeed())
	g.Expect(dbbackup.Checksum(encoded(g))).NotTo(Equal(b.Status.Checksum))
	t.Logf("upgrade in Satellites with backup %s %.1fs into the test", backupName, time.Since(start).Seconds())

	// Deleted mid-upgrade: the object goes, the backup the marker names stays protected.
	first := getCluster(g, cluster)
	spec := *first.Spec.DeepCopy()
	g.Expect(env.Client.Delete(ctx, first)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(cluster), &linstorv1.LinstorCluster{}))
	}, timeout, tick).Should(BeTrue(), "the deletion did not finish")
	t.Logf("deleted LinstorCluster gone %.1fs into the test", time.Since(start).Seconds())
	g.Expect(get(g, ns, backupName, &linstorv1.LinstorBackup{}).Finalizers).To(ContainElement(names.FinalizerBackupInUse),
		"the deletion released the backup the marker names")
	expectInUse(g, get(g, ns, backupName, &linstorv1.LinstorBackup{}), true)
	m := get(g, ns, markerKey.Name, &corev1.ConfigMap{})
	for k, v := range wantMarker {
		g.Expect(m.Data).To(HaveKeyWithValue(k, v), "the deletion changed the marker")
	}

	// Applied again: the upgrade is adopted and rolled back.
	again := makeClusterOnLinstor(t, ns, spec)
	seen := map[linstorv1.UpgradePhase]bool{}
	g.Eventually(func(g Gomega) {
		c := getCluster(g, again)
		seen[upgradePhase(c)] = true
		if upgradePhase(c) == linstorv1.UpgradeRollingBack {
			var d appsv1.Deployment
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.ControllerName}, &d); err == nil {
				g.Expect(*d.Spec.Replicas).To(BeZero(), "LINSTOR runs while the rollback restores its database: %+v", c.Status.Upgrade)
			}
			// The controller is stopped; what starts after the rollback is the old one.
			if emu.Version() != preflightFrom {
				emu.SetVersion(preflightFrom)
			}
		}
		g.Expect(upgradePhase(c)).To(Equal(linstorv1.UpgradeRolledBack), "%+v", c.Status.Upgrade)
	}, 2*timeout, 20*time.Millisecond).Should(Succeed())
	t.Logf("recreated LinstorCluster RolledBack %.1fs into the test; phases seen %v", time.Since(start).Seconds(), seen)
	g.Expect(seen).To(HaveKey(linstorv1.UpgradeRollingBack))
	g.Expect(seen).NotTo(HaveKey(linstorv1.UpgradeSucceeded))
	g.Expect(eventOf(g, ns, "UpgradeAdopted", preflightFrom+" -> "+preflightTo)).NotTo(BeNil(), "no UpgradeAdopted event")
	g.Expect(dbbackup.Checksum(encoded(g))).To(Equal(b.Status.Checksum), "the database is not the pre-upgrade backup")

	g.Eventually(func(g Gomega) {
		c := getCluster(g, again)
		g.Expect(upgradePhase(c)).To(Equal(linstorv1.UpgradeRolledBack))
		g.Expect(c.Status.Version).To(Equal(preflightFrom))
		g.Expect(c.Status.Deployed).NotTo(BeNil())
		g.Expect(c.Status.Deployed.Controller).To(Equal(preflightFrom))
		var d appsv1.Deployment
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.ControllerName}, &d)).To(Succeed())
		g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(HaveSuffix(":v"+preflightFrom), "the old LINSTOR controller is not deployed")
		g.Expect(*d.Spec.Replicas).To(Equal(int32(1)))
		g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, markerKey, &corev1.ConfigMap{}))).To(BeTrue(), "the marker outlived the rollback")
		expectInUse(g, get(g, ns, backupName, &linstorv1.LinstorBackup{}), false)
	}, timeout, tick).Should(Succeed())
	t.Logf("LINSTOR %s runs, marker gone, backup released %.1fs into the test", preflightFrom, time.Since(start).Seconds())
}

// A LinstorBackup with the lifecycle's finalizer whose LinstorCluster is gone: deleted,
// it is released at once (with its chunk Secrets) unless the marker names it; while the
// marker names it, its deletion waits and a BackupInUse Warning says why; deleting the
// marker releases it.
func TestOrphanedInUseBackupIsReleasedUnlessTheMarkerNamesIt(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	start := time.Now()
	ns := env.Namespace(t)
	const cluster = "gone"

	marker := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cluster + "-database-replacement"},
		Data: map[string]string{"operation": "restore", "backup": "kept", "clusterUID": "0000"}}
	g.Expect(env.Client.Create(ctx, marker)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(ctx, marker) })

	// inUseBackup makes a LinstorBackup of the gone cluster, in use, with three chunk
	// Secrets it owns (as the backup controller writes them), in use too.
	inUseBackup := func(name string) *linstorv1.LinstorBackup {
		b := &linstorv1.LinstorBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Finalizers: []string{names.FinalizerBackupInUse}},
			Spec: linstorv1.LinstorBackupSpec{ClusterRef: linstorv1.ClusterReference{Name: cluster}}}
		g.Expect(env.Client.Create(ctx, b)).To(Succeed())
		t.Cleanup(func() { releaseBackupAndSecrets(ns, name) })
		// The backup controller fails it first (its LinstorCluster is not found); the
		// Secrets are recorded after that.
		g.Eventually(func(g Gomega) {
			g.Expect(get(g, ns, name, &linstorv1.LinstorBackup{}).Status.Phase).To(Equal(linstorv1.BackupFailed))
		}, timeout, tick).Should(Succeed())
		var secrets []string
		for i := 0; i < 3; i++ {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: dbbackup.ChunkName(b, i),
				Labels: map[string]string{names.LabelBackup: name}, Finalizers: []string{names.FinalizerBackupInUse},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: linstorv1.GroupVersion.String(), Kind: "LinstorBackup", Name: name, UID: b.UID,
					Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
				Data: map[string][]byte{dbbackup.ChunkKey: []byte("chunk")}}
			g.Expect(env.Client.Create(ctx, s)).To(Succeed())
			secrets = append(secrets, s.Name)
		}
		g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur := get(g, ns, name, &linstorv1.LinstorBackup{})
			cur.Status.Secrets = secrets
			return env.Client.Status().Update(ctx, cur)
		})).To(Succeed())
		b = get(g, ns, name, &linstorv1.LinstorBackup{})
		expectInUse(g, b, true)
		return b
	}
	// deleteWithSecrets deletes the chunk Secrets first, as a foreground deletion does,
	// then the LinstorBackup.
	deleteWithSecrets := func(b *linstorv1.LinstorBackup) {
		for _, s := range b.Status.Secrets {
			g.Expect(env.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: s}})).To(Succeed())
		}
		g.Expect(env.Client.Delete(ctx, b)).To(Succeed())
	}
	gone := func(b *linstorv1.LinstorBackup) func(g Gomega) {
		return func(g Gomega) {
			g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(b), &linstorv1.LinstorBackup{}))).To(BeTrue(), "LinstorBackup %s stays", b.Name)
			for _, s := range b.Status.Secrets {
				g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: s}, &corev1.Secret{}))).To(BeTrue(), "chunk Secret %s stays", s)
			}
		}
	}
	loose, kept := inUseBackup("loose"), inUseBackup("kept")
	t.Logf("two in-use backups of a gone LinstorCluster %.1fs into the test", time.Since(start).Seconds())

	// The marker names another backup: this one is released.
	deleteWithSecrets(loose)
	g.Eventually(gone(loose), timeout, tick).Should(Succeed())
	t.Logf("unnamed backup and its Secrets gone %.1fs into the test", time.Since(start).Seconds())

	// The marker names this one: its deletion waits, and says why.
	deleteWithSecrets(kept)
	g.Eventually(func(g Gomega) {
		e := backupEvent(g, ns, "kept", corev1.EventTypeWarning, "BackupInUse")
		g.Expect(e).NotTo(BeNil(), "no BackupInUse Warning")
		g.Expect(e.Message).To(ContainSubstring(marker.Name))
	}, timeout, tick).Should(Succeed())
	g.Consistently(func(g Gomega) {
		b := get(g, ns, "kept", &linstorv1.LinstorBackup{})
		g.Expect(b.DeletionTimestamp).NotTo(BeNil())
		expectInUse(g, b, true)
	}, "2s", tick).Should(Succeed())
	t.Logf("named backup held %.1fs into the test", time.Since(start).Seconds())

	// The database was deliberately abandoned: deleting the marker releases the backup.
	g.Expect(env.Client.Delete(ctx, marker)).To(Succeed())
	g.Eventually(gone(kept), timeout, tick).Should(Succeed(), "deleting the marker did not release the backup")
	t.Logf("named backup released after the marker went %.1fs into the test", time.Since(start).Seconds())
}
