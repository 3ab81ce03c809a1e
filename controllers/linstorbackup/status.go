package linstorbackup

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/controllers/reconciler"
)

// saveStatus ends a pass: the reason a try of the copy failed reaches the status; the
// deadline ends the retries. Everything else a step saved itself, as it went.
func (r *Reconciler) saveStatus(ctx context.Context, s *scope, passErr error) error {
	if passErr == nil || !s.copying || apierrors.IsConflict(passErr) {
		return nil
	}
	b := s.backup
	// Not returned: the pass's own error says it, and retries.
	_ = r.setStatus(ctx, b, func(st *linstorv1.LinstorBackupStatus) {
		st.Message = fmt.Sprintf("A try failed, retrying until %s: %v", b.CreationTimestamp.Add(timeout(b)).UTC().Format(time.RFC3339), passErr)
	})
	return nil
}

// fail ends the backup in Failed, for good.
func (r *Reconciler) fail(ctx context.Context, b *linstorv1.LinstorBackup, msg string) error {
	r.Recorder.Event(b, corev1.EventTypeWarning, "BackupFailed", msg)
	return r.setStatus(ctx, b, func(st *linstorv1.LinstorBackupStatus) { st.Phase, st.Message = linstorv1.BackupFailed, msg })
}

// setStatus saves a step's progress, and the conditions derived from it. Optimistic
// lock: a status written since this pass read the backup (a completed, verified copy;
// another operator replica during a leader handover) is never overwritten; the
// conflict requeues the pass on what is stored.
func (r *Reconciler) setStatus(ctx context.Context, b *linstorv1.LinstorBackup, mutate func(*linstorv1.LinstorBackupStatus)) error {
	_, err := reconciler.PatchStatus(ctx, r.Client, b, func() {
		mutate(&b.Status)
		setConditions(b)
	}, reconciler.WithOptimisticLock())
	return err
}

// setConditions derives the conditions from the phase.
func setConditions(b *linstorv1.LinstorBackup) {
	st := &b.Status
	st.ObservedGeneration = b.Generation
	reason, message := conditionReason(st)
	available, progressing, degraded := conditionStatuses(st.Phase)
	for _, c := range []struct {
		typ    string
		status metav1.ConditionStatus
	}{
		{linstorv1.ConditionAvailable, available},
		{linstorv1.ConditionProgressing, progressing},
		{linstorv1.ConditionDegraded, degraded},
	} {
		reconciler.SetCondition(&st.Conditions, metav1.Condition{Type: c.typ, Status: c.status, Reason: reason, Message: message, ObservedGeneration: b.Generation})
	}
}

// conditionReason is what every condition of a backup says: the phase is the reason
// (linstorv1.BackupPending, …), the status message the message.
func conditionReason(st *linstorv1.LinstorBackupStatus) (reason, message string) {
	return string(st.Phase), st.Message
}

// conditionStatuses: a completed backup is Available; a failed one Degraded; one still
// going Progressing.
func conditionStatuses(phase linstorv1.BackupPhase) (available, progressing, degraded metav1.ConditionStatus) {
	switch phase {
	case linstorv1.BackupCompleted:
		return metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionFalse
	case linstorv1.BackupFailed:
		return metav1.ConditionFalse, metav1.ConditionFalse, metav1.ConditionTrue
	}
	return metav1.ConditionFalse, metav1.ConditionTrue, metav1.ConditionFalse
}
