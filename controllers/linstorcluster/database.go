package linstorcluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/controllers/reconciler"
	"github.com/linstor-operator/linstor-operator/pkg/dbbackup"
	"github.com/linstor-operator/linstor-operator/pkg/lifecycle"
)

// The database jobs (a restore's check, a restore or a rollback's restore), the marker
// that outlives the LinstorCluster while the database is being replaced, and the
// finalizers that keep the backups the lifecycle may still restore.

// MarkerName is the ConfigMap that records, outside the LinstorCluster, that its
// LINSTOR database is being replaced or migrated (names.DatabaseReplacementMarker).
var MarkerName = names.DatabaseReplacementMarker

// Marker data keys.
const (
	markerBackup    = dbbackup.MarkerKeyBackup
	markerOperation = "operation"
	markerFrom      = "from"
	markerTo        = "to"
	markerUID       = "clusterUID"
)

// databaseJob starts or polls the job that carries out a CheckRestore or RestoreDatabase
// action, and reports whether it has ended, what a check found, and its error. Before a
// restore job starts, the pass proves its view of the LinstorCluster current with an
// optimistic-locked status write (a stale cache showing a finished restore as Restoring
// conflicts here instead of restoring again) and records the marker.
func (r *Reconciler) databaseJob(ctx context.Context, c *linstorv1.LinstorCluster, a lifecycle.Action) (bool, string, error) {
	key := client.ObjectKeyFromObject(c)
	id := string(a.Kind) + "/" + a.Backup
	restore := a.Kind == lifecycle.RestoreDatabase
	if restore && !r.restores.known(key, c.UID, id) {
		if err := r.proveFresh(ctx, c); err != nil {
			return false, "", err
		}
		if err := r.writeMarker(ctx, r.Direct, c, jobMarker(c, a.Backup)); err != nil {
			return false, "", err
		}
	}
	namespace := c.Namespace
	run := func(jobCtx context.Context) (string, error) {
		b := &linstorv1.LinstorBackup{}
		if err := r.Direct.Get(jobCtx, client.ObjectKey{Namespace: namespace, Name: a.Backup}, b); err != nil {
			return "", classified{fmt.Errorf("reading LinstorBackup %s: %w", a.Backup, err), lifecycle.ErrNothingWritten}
		}
		if !restore {
			res, err := dbbackup.Check(jobCtx, r.Direct, b)
			if errors.Is(err, dbbackup.ErrBackupUnusable) {
				err = classified{err, lifecycle.ErrBackupUnusable}
			}
			return res.String(), err
		}
		res, err := dbbackup.RestoreBackup(jobCtx, r.Direct, b)
		if errors.Is(err, dbbackup.ErrNothingWritten) {
			return res.String(), classified{err, lifecycle.ErrNothingWritten}
		}
		if err != nil {
			return res.String(), err
		}
		// Only what reads back as the backup counts as restored.
		return res.String(), dbbackup.VerifyRestored(jobCtx, r.Direct, b.Status.Checksum)
	}
	done, checked, err := r.restores.poll(key, c.UID, id, a.Backup, restore, run)
	return done, checked, err
}

// classified keeps an error's message and adds the lifecycle's kind to what it wraps.
type classified struct{ err, kind error }

func (e classified) Error() string   { return e.err.Error() }
func (e classified) Unwrap() []error { return []error{e.err, e.kind} }

// jobStamp ends the message the freshness proof writes; a later proof replaces it.
const jobStamp = " (restore job started at "

func stamped(msg string, now time.Time) string {
	if i := strings.Index(msg, jobStamp); i >= 0 {
		msg = msg[:i]
	}
	return reconciler.Bound(msg + jobStamp + now.UTC().Format(time.RFC3339) + ")")
}

// jobMarker is what the marker says while a restore job replaces the database.
func jobMarker(c *linstorv1.LinstorCluster, backup string) lifecycle.Marker {
	op := lifecycle.MarkerRestore
	if u := c.Status.Upgrade; u != nil && u.Phase == linstorv1.UpgradeRollingBack && u.BackupName == backup {
		op = lifecycle.MarkerRollback
	}
	return lifecycle.Marker{Operation: op, Backup: backup, ClusterUID: string(c.UID)}
}

// proveFresh writes the status with the resourceVersion read as a precondition: it
// fails with errLifecycleConflict when the pass decided on a stale object.
func (r *Reconciler) proveFresh(ctx context.Context, c *linstorv1.LinstorCluster) error {
	before := c.DeepCopy()
	now := time.Now()
	switch {
	case c.Status.Restore != nil:
		c.Status.Restore.Message = stamped(c.Status.Restore.Message, now)
	case c.Status.Upgrade != nil:
		c.Status.Upgrade.Message = stamped(c.Status.Upgrade.Message, now)
	default:
		return fmt.Errorf("a restore job is asked for with neither a restore nor an upgrade in the status")
	}
	if err := r.Client.Status().Patch(ctx, c, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) {
			return errLifecycleConflict
		}
		return fmt.Errorf("recording the restore job's start: %w", err)
	}
	return nil
}

// writeMarker makes the marker say m, reading it through rd (the API server before a
// restore job; the cache for the upgrade's marker, looked at every pass of an upgrade).
// Nothing is written when it already says m.
func (r *Reconciler) writeMarker(ctx context.Context, rd client.Reader, c *linstorv1.LinstorCluster, m lifecycle.Marker) error {
	data := map[string]string{markerOperation: m.Operation, markerBackup: m.Backup, markerFrom: m.From, markerTo: m.To, markerUID: m.ClusterUID}
	cm := &corev1.ConfigMap{}
	err := rd.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: MarkerName(c.Name)}, cm)
	switch {
	case apierrors.IsNotFound(err):
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: MarkerName(c.Name), Namespace: c.Namespace,
			Labels: map[string]string{names.LabelManagedBy: names.ManagedBy, names.LabelInstance: c.Name}}, Data: data}
		if err := r.Direct.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("recording the database's state in ConfigMap %s: %w", cm.Name, err)
		} else if err == nil {
			return nil
		}
		if err := r.Direct.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
			return err
		}
	case err != nil:
		return err
	}
	if equality.Semantic.DeepEqual(cm.Data, data) {
		return nil
	}
	cm.Data = data
	if err := r.Direct.Update(ctx, cm); err != nil {
		return fmt.Errorf("recording the database's state in ConfigMap %s: %w", cm.Name, err)
	}
	return nil
}

// readMarker reads the marker from the API server (it is looked at only when the status
// holds nothing).
func (r *Reconciler) readMarker(ctx context.Context, c *linstorv1.LinstorCluster) (*lifecycle.Marker, error) {
	cm := &corev1.ConfigMap{}
	err := r.Direct.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: MarkerName(c.Name)}, cm)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading ConfigMap %s: %w", MarkerName(c.Name), err)
	}
	if cm.Data[markerOperation] == "" {
		return nil, nil
	}
	return &lifecycle.Marker{Operation: cm.Data[markerOperation], Backup: cm.Data[markerBackup], From: cm.Data[markerFrom], To: cm.Data[markerTo],
		ClusterUID: cm.Data[markerUID]}, nil
}

// clearMarkerIfPresent deletes the marker when the cache shows one: the upgrade's end
// is looked at every pass, and costs no request when there is none.
func (r *Reconciler) clearMarkerIfPresent(ctx context.Context, c *linstorv1.LinstorCluster) error {
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: MarkerName(c.Name)}, &corev1.ConfigMap{})
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	return r.clearMarker(ctx, c)
}

func (r *Reconciler) clearMarker(ctx context.Context, c *linstorv1.LinstorCluster) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: MarkerName(c.Name), Namespace: c.Namespace}}
	if err := r.Direct.Delete(ctx, cm); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting ConfigMap %s: %w", cm.Name, err)
	}
	return nil
}

// protectBackups keeps FinalizerBackupInUse on exactly the cluster's LinstorBackups the
// state may still restore (lifecycle.BackupsInUse). Nothing is written when nothing
// changes.
func (r *Reconciler) protectBackups(ctx context.Context, c *linstorv1.LinstorCluster, st lifecycle.State) error {
	return r.keepFinalizers(ctx, c, lifecycle.BackupsInUse(st))
}

func (r *Reconciler) keepFinalizers(ctx context.Context, c *linstorv1.LinstorCluster, inUse []string) error {
	var list linstorv1.LinstorBackupList
	if err := r.Client.List(ctx, &list, client.InNamespace(c.Namespace)); err != nil {
		return fmt.Errorf("listing LinstorBackups: %w", err)
	}
	recordBackupMetric(c, list.Items)
	for i := range list.Items {
		b := &list.Items[i]
		if b.Spec.ClusterRef.Name != c.Name {
			continue
		}
		// The backup and each chunk Secret are looked at every pass, in the cache (no
		// request): the upgrade's backup is in use before its chunks exist, and a Secret
		// written later must get the finalizer too.
		want := slices.Contains(inUse, b.Name)
		if err := dbbackup.SetInUse(ctx, r.Client, b, names.FinalizerBackupInUse, want); err != nil {
			return err
		}
	}
	return dbbackup.ReleaseOrphanChunks(ctx, r.Client, c.Namespace, list.Items, names.FinalizerBackupInUse)
}

// activeAndRunning names a LinstorBackup of the cluster that is Pending or Running, and
// one that is Running (copying), read from the API server.
func activeAndRunning(ctx context.Context, c client.Reader, cluster *linstorv1.LinstorCluster) (active, running string, err error) {
	if dbbackup.Unsupported(cluster) != "" {
		return "", "", nil
	}
	var list linstorv1.LinstorBackupList
	if err := c.List(ctx, &list, client.InNamespace(cluster.Namespace)); err != nil {
		return "", "", err
	}
	for i := range list.Items {
		b := &list.Items[i]
		if b.Spec.ClusterRef.Name != cluster.Name || !dbbackup.StopsController(b) {
			continue
		}
		if b.Status.Phase == linstorv1.BackupRunning {
			active, running = b.Name, b.Name
		} else if active == "" {
			active = b.Name
		}
	}
	return active, running, nil
}
