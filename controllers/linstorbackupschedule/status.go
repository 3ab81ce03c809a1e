package linstorbackupschedule

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/controllers/reconciler"
)

// saveStatus writes what the pass decided and saw, once, only when it changed.
func (r *Reconciler) saveStatus(ctx context.Context, s *scope, passErr error) error {
	sc := s.schedule
	// Optimistic lock: a pass on a stale read (its own last write not in the cache yet)
	// would count its missed runs again; its write conflicts and the pass runs again on
	// what is stored.
	_, err := reconciler.PatchStatus(ctx, r.Client, sc, func() { updateStatus(s, passErr) }, reconciler.WithOptimisticLock())
	if err == nil {
		recordMetrics(sc)
	}
	return err
}

// updateStatus derives the status from the scope.
func updateStatus(s *scope, passErr error) {
	sc, d := s.schedule, s.decision
	st := &sc.Status
	if d.Invalid == "" {
		st.LastScheduleTime = timeOrNil(d.LastScheduleTime)
		st.NextScheduleTime = nil
		if !d.Next.IsZero() {
			st.NextScheduleTime = &metav1.Time{Time: d.Next.UTC()}
		}
		st.Missed += int32(d.Missed)
		st.LastSuccessfulTime = timeOrNil(d.LastSuccessful)
		st.Active = d.Active
		if s.created != "" {
			st.LastBackup, st.Active = s.created, s.created
		}
	}
	st.LastControllerStopped = nil
	var newest *linstorv1.LinstorBackup
	var lastFinished *linstorv1.LinstorBackup
	for i := range s.backups {
		b := &s.backups[i]
		if b.Status.Phase == linstorv1.BackupCompleted && b.Status.CompletedAt != nil &&
			(newest == nil || b.Status.CompletedAt.After(newest.Status.CompletedAt.Time)) {
			newest = b
		}
		if (b.Status.Phase == linstorv1.BackupCompleted || b.Status.Phase == linstorv1.BackupFailed) &&
			(lastFinished == nil || lastFinished.CreationTimestamp.Before(&b.CreationTimestamp)) {
			lastFinished = b
		}
	}
	if newest != nil && newest.Status.ControllerStopped != nil {
		st.LastControllerStopped = newest.Status.ControllerStopped.DeepCopy()
	}
	if st.LastBackup == "" && len(s.backups) > 0 {
		st.LastBackup = s.backups[len(s.backups)-1].Name
	}

	gen := sc.Generation
	available := metav1.Condition{Type: linstorv1.ConditionAvailable, Status: metav1.ConditionTrue, Reason: linstorv1.ReasonAsExpected, ObservedGeneration: gen}
	switch {
	case d.Invalid != "":
		available.Status, available.Reason, available.Message = metav1.ConditionFalse, linstorv1.ReasonInvalidSpec, d.Invalid
	case s.notReadyReason != "":
		available.Status, available.Reason, available.Message = metav1.ConditionFalse, s.notReadyReason, s.notReadyMessage
	case sc.Spec.Suspend:
		available.Status, available.Reason, available.Message = metav1.ConditionFalse, linstorv1.ReasonSuspended, "spec.suspend is true: no backups are created"
	default:
		available.Message = fmt.Sprintf("Next backup at %s", d.Next.UTC().Format("2006-01-02 15:04 MST"))
	}
	reconciler.SetCondition(&st.Conditions, available)

	degraded := metav1.Condition{Type: linstorv1.ConditionDegraded, Status: metav1.ConditionFalse, Reason: linstorv1.ReasonAsExpected, ObservedGeneration: gen}
	switch {
	case lastFinished != nil && lastFinished.Status.Phase == linstorv1.BackupFailed:
		degraded.Status, degraded.Reason = metav1.ConditionTrue, linstorv1.ReasonLastBackupFailed
		degraded.Message = fmt.Sprintf("LinstorBackup %s failed: %s", lastFinished.Name, lastFinished.Status.Message)
	case s.retentionErr != "":
		degraded.Status, degraded.Reason, degraded.Message = metav1.ConditionTrue, linstorv1.ReasonRetentionFailed, s.retentionErr
	}
	if c := volumeCondition(s); c != nil {
		st.Volumes = s.volumes.status
		reconciler.SetCondition(&st.Conditions, *c)
		if c.Status == metav1.ConditionFalse && degraded.Status == metav1.ConditionFalse {
			degraded.Status, degraded.Reason, degraded.Message = metav1.ConditionTrue, c.Reason, "volume backups: "+c.Message
		}
		if reason, msg := volumeFailures(st.Volumes); reason != "" && degraded.Status == metav1.ConditionFalse {
			degraded.Status, degraded.Reason, degraded.Message = metav1.ConditionTrue, reason, msg
		}
	} else {
		st.Volumes = nil
		meta.RemoveStatusCondition(&st.Conditions, linstorv1.ConditionConfigured)
	}
	reconciler.SetCondition(&st.Conditions, degraded)
	if passErr == nil {
		st.ObservedGeneration = gen
	}
}

func timeOrNil(t *time.Time) *metav1.Time {
	if t == nil {
		return nil
	}
	return &metav1.Time{Time: t.UTC()}
}
