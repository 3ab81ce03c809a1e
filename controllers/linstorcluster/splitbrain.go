package linstorcluster

import (
	"context"
	"fmt"
	"time"

	lapi "github.com/LINBIT/golinstor/client"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/controllers/reconciler"
	"github.com/linstor-operator/linstor-operator/pkg/lifecycle"
	"github.com/linstor-operator/linstor-operator/pkg/names"
	"github.com/linstor-operator/linstor-operator/pkg/splitbrain"
)

// splitBrainPoll: how soon a resolution in flight looks again.
const splitBrainPoll = 2 * time.Second

// reconcileSplitBrain carries out a split-brain resolution the user confirmed
// (pkg/splitbrain decides). The decision, with the confirmation it processed and the
// count of LINSTOR writes, is saved with an optimistic lock before anything else: a
// conflict means this pass decided on a stale object, and it writes nothing. Only then
// is the annotation removed (a lost removal is harmless: the next pass sees the value
// equals status.confirmation) and LINSTOR written.
func (r *Reconciler) reconcileSplitBrain(ctx context.Context, s *scope) (ctrl.Result, error) {
	c := s.cluster
	if s.lc == nil || s.transient {
		return ctrl.Result{}, nil // LINSTOR not usable this pass
	}
	key := client.ObjectKeyFromObject(c)
	snap := s.snap
	if st := c.Status.SplitBrainResolution; st != nil && st.DiscardNode != "" &&
		(st.Phase == linstorv1.SplitBrainDiscarding || st.Phase == linstorv1.SplitBrainRebuilding) {
		// Decide only on a read of the resource view that shows our last write to the
		// victim's node.
		if snap = r.Observer.FreshHealth(key, st.DiscardNode); snap == nil {
			r.Observer.RefreshHealth(key)
			return ctrl.Result{RequeueAfter: staleRetry}, nil
		}
	}
	in := splitbrain.Input{Status: c.Status.SplitBrainResolution, Annotation: c.Annotations[names.AnnotationResolveSplitBrain],
		Report: snap.Health(), Now: time.Now(),
		// A rollback would undo the write, as for reconcileLinstor's.
		Fenced: lifecycle.LinstorWritesFenced(&linstorv1.LinstorClusterStatus{Upgrade: s.upgradeStatus, Restore: s.restoreStatus})}
	if snap != nil {
		in.ObservedAt = snap.HealthAt()
	}
	out := splitbrain.Step(in)
	if out.Status != nil {
		out.Status.Message = reconciler.Bound(out.Status.Message)
	}
	if !equality.Semantic.DeepEqual(out.Status, c.Status.SplitBrainResolution) {
		before := c.DeepCopy()
		c.Status.SplitBrainResolution = out.Status
		if err := r.Client.Status().Patch(ctx, c, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsConflict(err) {
				return ctrl.Result{RequeueAfter: staleRetry}, nil // decided on a stale object: nothing written
			}
			return ctrl.Result{}, fmt.Errorf("saving the split-brain resolution: %w", err)
		}
	}
	if e := out.Event; e != nil {
		r.Recorder.Event(c, e.Type, e.Reason, e.Message)
	}
	var consumeErr error
	if out.ConsumeAnnotation {
		before := c.DeepCopy()
		delete(c.Annotations, names.AnnotationResolveSplitBrain)
		if err := r.Client.Patch(ctx, c, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			consumeErr = fmt.Errorf("consuming annotation %s: %w", names.AnnotationResolveSplitBrain, err)
		}
	}
	st := out.Status
	if out.Action == splitbrain.None {
		if st != nil && (st.Phase == linstorv1.SplitBrainDiscarding || st.Phase == linstorv1.SplitBrainRebuilding) {
			return ctrl.Result{RequeueAfter: splitBrainPoll}, consumeErr
		}
		return ctrl.Result{}, consumeErr
	}
	w := r.Observer.Writer(key, st.DiscardNode, s.lc)
	err := w.Send(func(lc *lapi.Client) error {
		if out.Action == splitbrain.Discard {
			return lc.Resources.Diskless(ctx, st.Resource, st.DiscardNode, "")
		}
		return lc.Resources.Diskful(ctx, st.Resource, st.DiscardNode, st.StoragePool, nil)
	})
	r.Observer.RefreshHealth(key) // the next decision needs the view after this write
	if err != nil {
		// Retried on the next pass from what LINSTOR then shows; the user sees why.
		r.Recorder.Event(c, corev1.EventTypeWarning, "SplitBrainResolutionRetrying",
			reconciler.Bound(fmt.Sprintf("LINSTOR refused toggling the disk of %s on %s: %v", st.Resource, st.DiscardNode, err)))
	}
	return ctrl.Result{RequeueAfter: splitBrainPoll}, consumeErr
}
