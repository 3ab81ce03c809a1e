package linstornodeconnection

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/controllers/reconciler"
)

// saveStatus writes Configured. A misplaced object gets one Warning event when the
// condition first says so; a resync that finds it said writes nothing. A pass that
// stopped before comparing anything (an error, returned) writes nothing either.
func (r *Reconciler) saveStatus(ctx context.Context, s *scope, _ error) error {
	lnc := s.lnc
	if s.misplaced == "" && !s.synced {
		return nil
	}
	already := meta.FindStatusCondition(lnc.Status.Conditions, linstorv1.ConditionConfigured)
	wrote, err := reconciler.PatchStatus(ctx, r.Client, lnc, func() { setConfiguredCondition(lnc, s) })
	if s.misplaced != "" {
		if err != nil || !wrote {
			return client.IgnoreNotFound(err)
		}
		if already == nil || already.Reason != linstorv1.ReasonWrongNamespace {
			r.Recorder.Event(lnc, corev1.EventTypeWarning, linstorv1.ReasonWrongNamespace, s.misplaced)
		}
		return nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	// The retries are paced once the outcome is saved (a failed write retries sooner,
	// through the error).
	var tooMany *tooManyPairsError
	switch {
	case errors.As(s.syncErr, &tooMany):
	case s.syncErr != nil:
		r.Backoff.Failed(lnc.UID)
	case s.fenced == "" && s.progress == "":
		r.Backoff.Succeeded(lnc.UID)
	}
	return nil
}

// setConfiguredCondition: True once LINSTOR holds everything the object asks for, which
// is also when its generation is observed.
func setConfiguredCondition(lnc *linstorv1.LinstorNodeConnection, s *scope) {
	cond := metav1.Condition{Type: linstorv1.ConditionConfigured, Status: metav1.ConditionTrue, Reason: linstorv1.ReasonAsExpected, ObservedGeneration: lnc.Generation}
	if reason, message := notConfigured(s); reason != "" {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, reason, message
	} else {
		lnc.Status.ObservedGeneration = lnc.Generation
	}
	reconciler.SetCondition(&lnc.Status.Conditions, cond)
}

// notConfigured says why LINSTOR does not hold what the object asks for, the most
// important first; "" when it does.
func notConfigured(s *scope) (reason, message string) {
	var tooMany *tooManyPairsError
	switch {
	case s.misplaced != "":
		return linstorv1.ReasonWrongNamespace, s.misplaced
	case errors.As(s.syncErr, &tooMany):
		return linstorv1.ReasonInvalidSpec, s.syncErr.Error()
	case s.syncErr != nil:
		return linstorv1.ReasonLinstorError, s.syncErr.Error()
	case s.fenced != "":
		return linstorv1.ReasonLinstorWritesFenced, s.fenced
	case s.progress != "":
		return linstorv1.ReasonReconciling, s.progress
	}
	return "", ""
}
