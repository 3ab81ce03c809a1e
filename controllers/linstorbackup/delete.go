package linstorbackup

import (
	"context"
	"slices"
	"sort"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/dbbackup"
	"github.com/linstor-operator/linstor-operator/pkg/lifecycle"
)

// prune applies the cluster's keepBackups to its completed backups, oldest first.
func (r *Reconciler) prune(ctx context.Context, b *linstorv1.LinstorBackup) error {
	cluster := &linstorv1.LinstorCluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.ClusterRef.Name}, cluster); err != nil {
		return client.IgnoreNotFound(err)
	}
	db := cluster.Spec.Database
	if db == nil || db.KeepBackups == nil {
		return nil
	}
	var list linstorv1.LinstorBackupList
	if err := r.Client.List(ctx, &list, client.InNamespace(b.Namespace)); err != nil {
		return err
	}
	var done []linstorv1.LinstorBackup
	for _, x := range list.Items {
		if x.Spec.ClusterRef.Name == cluster.Name && x.Status.Phase == linstorv1.BackupCompleted && x.DeletionTimestamp == nil {
			done = append(done, x)
		}
	}
	// Completion times have seconds: two backups done in the same second are ordered by
	// creation, then name, so the one pruned is the older one whatever the List order.
	sort.Slice(done, func(i, j int) bool {
		a, b := done[i], done[j]
		if !a.Status.CompletedAt.Equal(b.Status.CompletedAt) {
			return a.Status.CompletedAt.Before(b.Status.CompletedAt)
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	// The newest backups stay, and so does any backup the lifecycle names: an upgrade's
	// (its rollback, or the way back afterwards), a restore's, spec.database.restoreFrom.
	named := lifecycle.BackupsNamed(&cluster.Status, db.RestoreFrom)
	for i := 0; i < len(done)-int(*db.KeepBackups); i++ {
		if slices.Contains(named, done[i].Name) || controllerutil.ContainsFinalizer(&done[i], names.FinalizerBackupInUse) {
			continue
		}
		if err := r.Client.Delete(ctx, &done[i]); client.IgnoreNotFound(err) != nil {
			return err
		}
		r.Recorder.Eventf(cluster, corev1.EventTypeNormal, "BackupPruned", "Deleted LinstorBackup %s: keepBackups is %d", done[i].Name, *db.KeepBackups)
	}
	return nil
}

// releaseOrphan takes FinalizerBackupInUse off a backup being deleted whose
// LinstorCluster is gone, unless the database-replacement marker still names it (a
// recreated LinstorCluster must finish that restore with it). While the LinstorCluster
// exists, its reconciler decides.
func (r *Reconciler) releaseOrphan(ctx context.Context, b *linstorv1.LinstorBackup) error {
	err := r.Database.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.ClusterRef.Name}, &linstorv1.LinstorCluster{})
	if !apierrors.IsNotFound(err) {
		return err
	}
	marker := &corev1.ConfigMap{}
	err = r.Database.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: names.DatabaseReplacementMarker(b.Spec.ClusterRef.Name)}, marker)
	switch {
	case err == nil && marker.Data[dbbackup.MarkerKeyBackup] == b.Name:
		r.Recorder.Eventf(b, corev1.EventTypeWarning, "BackupInUse", "Deletion waits: ConfigMap %s records that LinstorCluster %s's database is being replaced from this backup; "+
			"recreate the LinstorCluster to finish it, or delete the ConfigMap if the database was deliberately abandoned", marker.Name, b.Spec.ClusterRef.Name)
		return nil
	case err != nil && !apierrors.IsNotFound(err):
		return err
	}
	return dbbackup.SetInUse(ctx, r.Database, b, names.FinalizerBackupInUse, false)
}
