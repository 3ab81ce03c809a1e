package linstorbackupschedule

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/backupschedule"
	"github.com/linstor-operator/linstor-operator/pkg/lifecycle"
	"github.com/linstor-operator/linstor-operator/pkg/names"
)

// scope carries one pass.
type scope struct {
	schedule *linstorv1.LinstorBackupSchedule
	now      time.Time
	stop     bool

	cluster *linstorv1.LinstorCluster
	target  *linstorv1.LinstorBackupTarget
	// notReady says why backups cannot be taken now (reason, message); empty: they can.
	notReadyReason, notReadyMessage string
	backups                         []linstorv1.LinstorBackup
	decision                        backupschedule.Output
	// created names the backup this pass created.
	created string
	// retentionErr says why bucket retention failed.
	retentionErr string
	// volumes is what the volumes phase saw (nil: spec.volumes unset).
	volumes *volumeScope
}

// reconcileReferences finds the cluster and the target; a missing one holds the runs.
func (r *Reconciler) reconcileReferences(ctx context.Context, s *scope) (ctrl.Result, error) {
	sc := s.schedule
	cluster := &linstorv1.LinstorCluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: sc.Namespace, Name: sc.Spec.ClusterRef.Name}, cluster); err == nil {
		s.cluster = cluster
	} else if !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	} else {
		s.notReadyReason, s.notReadyMessage = linstorv1.ReasonClusterNotFound, fmt.Sprintf("spec.clusterRef: LinstorCluster %s not found", sc.Spec.ClusterRef.Name)
	}
	if ref := sc.Spec.TargetRef; ref != nil {
		target := &linstorv1.LinstorBackupTarget{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: sc.Namespace, Name: ref.Name}, target); err == nil {
			s.target = target
			if c := meta.FindStatusCondition(target.Status.Conditions, linstorv1.ConditionAvailable); s.notReadyReason == "" && (c == nil || c.Status != metav1.ConditionTrue) {
				why := "not checked yet"
				if c != nil {
					why = c.Message
				}
				s.notReadyReason, s.notReadyMessage = linstorv1.ReasonTargetUnavailable, fmt.Sprintf("spec.targetRef: LinstorBackupTarget %s is not Available: %s", ref.Name, why)
			}
		} else if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		} else if s.notReadyReason == "" {
			s.notReadyReason, s.notReadyMessage = linstorv1.ReasonTargetNotFound, fmt.Sprintf("spec.targetRef: LinstorBackupTarget %s not found", ref.Name)
		}
	}
	var list linstorv1.LinstorBackupList
	if err := r.Client.List(ctx, &list, client.InNamespace(sc.Namespace), client.MatchingLabels{names.LabelBackupSchedule: sc.Name}); err != nil {
		return ctrl.Result{}, err
	}
	for _, b := range list.Items {
		if b.DeletionTimestamp == nil {
			s.backups = append(s.backups, b)
		}
	}
	return ctrl.Result{}, nil
}

// reconcileDecision decides the pass.
func (r *Reconciler) reconcileDecision(_ context.Context, s *scope) (ctrl.Result, error) {
	defer func() {
		if d := s.decision; d.Create == "" && d.Missed > 0 {
			event(r, s.schedule, true, "RunMissed", d.MissedWhy)
		}
	}()
	sc := s.schedule
	in := backupschedule.Input{Spec: sc.Spec, Name: sc.Name, Created: sc.CreationTimestamp.Time, Now: s.now}
	if t := sc.Status.LastScheduleTime; t != nil {
		v := t.Time
		in.LastScheduleTime = &v
	}
	for _, b := range s.backups {
		x := backupschedule.Backup{Name: b.Name, Phase: b.Status.Phase, Created: b.CreationTimestamp.Time,
			CopyDeletePending: b.Status.Stored != nil && b.Status.Stored.DeletePending}
		if b.Status.CompletedAt != nil {
			x.Completed = b.Status.CompletedAt.Time
		}
		in.Backups = append(in.Backups, x)
	}
	s.decision = backupschedule.Decide(in)
	if s.decision.Invalid != "" {
		s.stop = true
	}
	if s.decision.Missed > 0 && s.decision.Create != "" {
		// Runs missed while the operator was down; the latest is taken.
		event(r, sc, true, "RunsMissed", s.decision.MissedWhy)
	}
	return ctrl.Result{RequeueAfter: s.decision.RequeueAfter}, nil
}

// reconcileRun creates the due backup. A run due while the cluster or the target is
// missing or unusable is counted as missed with the reason: a backup created then
// could only fail.
func (r *Reconciler) reconcileRun(ctx context.Context, s *scope) (ctrl.Result, error) {
	d := &s.decision
	if d.Create == "" {
		return ctrl.Result{}, nil
	}
	sc := s.schedule
	if s.notReadyReason != "" {
		d.Missed, d.MissedWhy, d.Create = d.Missed+1, fmt.Sprintf("the run of %s was not taken: %s", d.ScheduledAt.Format(time.RFC3339), s.notReadyMessage), ""
		event(r, sc, true, "RunMissed", d.MissedWhy)
		return ctrl.Result{}, nil
	}
	b := &linstorv1.LinstorBackup{
		ObjectMeta: metav1.ObjectMeta{Name: d.Create, Namespace: sc.Namespace,
			// No owner reference: deleting a schedule never deletes its backups.
			Labels:      map[string]string{names.LabelBackupSchedule: sc.Name, names.LabelManagedBy: names.ManagedBy},
			Annotations: map[string]string{names.AnnotationScheduledAt: d.ScheduledAt.Format(time.RFC3339)}},
		Spec: linstorv1.LinstorBackupSpec{ClusterRef: sc.Spec.ClusterRef, Timeout: sc.Spec.BackupTimeout},
	}
	if sc.Spec.TargetRef != nil {
		b.Spec.TargetRef = sc.Spec.TargetRef.DeepCopy()
	}
	// The name is the run's time: a pass repeated after a restart or on a stale cache
	// finds it there instead of taking the run twice.
	if err := r.Client.Create(ctx, b); err != nil && !apierrors.IsAlreadyExists(err) {
		return ctrl.Result{}, err
	}
	s.created = b.Name
	event(r, sc, false, "BackupCreated", fmt.Sprintf("Created LinstorBackup %s for the run of %s", b.Name, d.ScheduledAt.Format(time.RFC3339)))
	return ctrl.Result{}, nil
}

// reconcileRetention deletes the schedule's old LinstorBackups. A backup the cluster's
// lifecycle names (an upgrade's, a restore's) stays.
func (r *Reconciler) reconcileRetention(ctx context.Context, s *scope) (ctrl.Result, error) {
	var keep []string
	if s.cluster != nil {
		restoreFrom := ""
		if db := s.cluster.Spec.Database; db != nil {
			restoreFrom = db.RestoreFrom
		}
		keep = lifecycle.BackupsNamed(&s.cluster.Status, restoreFrom)
	}
	for _, name := range s.decision.Delete {
		if slices.Contains(keep, name) {
			continue
		}
		for i := range s.backups {
			if s.backups[i].Name != name {
				continue
			}
			b := s.backups[i].DeepCopy()
			if err := r.Client.Delete(ctx, b, client.Preconditions{UID: &b.UID}); client.IgnoreNotFound(err) != nil {
				return ctrl.Result{}, err
			}
			event(r, s.schedule, false, "BackupDeleted", fmt.Sprintf("Deleted LinstorBackup %s (retention)", name))
		}
	}
	return ctrl.Result{}, nil
}

// bucketRetentionTimeout bounds a pass's listing and deletions in the bucket.
const bucketRetentionTimeout = 2 * time.Minute

// reconcileBucketRetention applies the same retention to the bucket, to the copies this
// schedule of this cluster made. A failure is reported, not retried at once: the next
// run tries again.
func (r *Reconciler) reconcileBucketRetention(ctx context.Context, s *scope) (ctrl.Result, error) {
	if r.Bucket == nil || s.target == nil || s.cluster == nil || s.notReadyReason != "" {
		return ctrl.Result{}, nil
	}
	// The controller's one worker runs every schedule: a bucket that takes the
	// connection and never answers must not stop them all.
	bucketCtx, cancel := context.WithTimeout(ctx, bucketRetentionTimeout)
	defer cancel()
	stored, err := r.Bucket.StoredBackups(bucketCtx, s.target)
	if err != nil {
		s.retentionErr = err.Error()
		return ctrl.Result{}, nil
	}
	keep, err := r.storedCopiesNamed(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	for _, id := range backupschedule.RetainStored(s.schedule.Spec.Retention, s.schedule.Name, string(s.cluster.UID), stored, s.now, keep) {
		if err := r.Bucket.DeleteStored(bucketCtx, s.target, id); err != nil {
			s.retentionErr = fmt.Sprintf("deleting %s from the bucket: %v", id, err)
			return ctrl.Result{}, nil
		}
		event(r, s.schedule, false, "StoredBackupDeleted", fmt.Sprintf("Deleted %s from bucket %s (retention)", id, s.target.Spec.S3.Bucket))
	}
	return ctrl.Result{}, nil
}

// storedCopiesNamed lists the bucket IDs of the backups the cluster's lifecycle names
// (a restore's, an upgrade's): a restore reads its copy from the bucket, so bucket
// retention keeps it as cluster retention keeps the LinstorBackup.
func (r *Reconciler) storedCopiesNamed(ctx context.Context, s *scope) ([]string, error) {
	restoreFrom := ""
	if db := s.cluster.Spec.Database; db != nil {
		restoreFrom = db.RestoreFrom
	}
	var ids []string
	for _, name := range lifecycle.BackupsNamed(&s.cluster.Status, restoreFrom) {
		b := &linstorv1.LinstorBackup{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.schedule.Namespace, Name: name}, b); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, err
		}
		if b.Status.Stored != nil {
			ids = append(ids, b.Status.Stored.ID)
		}
	}
	return ids, nil
}
