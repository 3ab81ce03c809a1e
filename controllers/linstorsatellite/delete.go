package linstorsatellite

import (
	"context"
	"fmt"

	lapi "github.com/LINBIT/golinstor/client"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/linstor"
)

// reconcileDelete applies the deletion policy to the LINSTOR node. Whatever could lose
// data waits and says why; it never forces.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (ctrl.Result, error) {
	sat := s.sat
	if !controllerutil.ContainsFinalizer(sat, Finalizer) {
		return ctrl.Result{}, nil
	}
	policy := sat.Spec.DeletionPolicy
	// Deleting the whole LinstorCluster (or losing it) must never delete LINSTOR nodes:
	// the satellites go with their owner, LINSTOR's state stays.
	if s.cluster == nil || !s.cluster.DeletionTimestamp.IsZero() {
		policy = linstorv1.DeletionRetain
	}
	done := true
	switch policy {
	case linstorv1.DeletionDelete:
		done = r.deleteNode(ctx, s)
	case linstorv1.DeletionEvacuate:
		done = r.evacuateNode(ctx, s)
	}
	if !done {
		if err := r.updateStatus(ctx, s, false); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: shortPoll}, nil
	}
	controllerutil.RemoveFinalizer(sat, Finalizer)
	return ctrl.Result{}, r.Client.Update(ctx, sat)
}

// deleteNode asks LINSTOR to delete the node; LINSTOR refuses while the node holds
// in-use resources or the last up-to-date replica, and then we wait.
func (r *Reconciler) deleteNode(ctx context.Context, s *scope) bool {
	if s.linstorErr != nil {
		s.deleteWait = s.linstorErr.Error()
		return false
	}
	err := s.lc.Nodes.Delete(ctx, s.sat.Name)
	switch {
	case err == nil:
		r.Recorder.Eventf(s.sat, corev1.EventTypeNormal, "NodeDeleted", "Deleted LINSTOR node %s (deletion policy Delete)", s.sat.Name)
		return true
	case linstor.IsNotFound(err):
		return true
	default:
		s.deleteWait = fmt.Sprintf("LINSTOR refuses to delete node %s, waiting: %v", s.sat.Name, err)
		r.Recorder.Event(s.sat, corev1.EventTypeWarning, "NodeDeleteRefused", s.deleteWait)
		return false
	}
}

// evacuateNode moves every resource away, waits until none remain, then deletes.
func (r *Reconciler) evacuateNode(ctx context.Context, s *scope) bool {
	if s.linstorErr != nil {
		s.deleteWait = s.linstorErr.Error()
		return false
	}
	lnode, err := s.lc.Nodes.Get(ctx, s.sat.Name)
	if linstor.IsNotFound(err) {
		return true
	}
	if err != nil {
		s.deleteWait = err.Error()
		return false
	}
	if !hasFlag(lnode.Flags, "EVACUATE") {
		// Evacuations copy whole volumes over the network: limit how many run at once.
		if max := s.sat.Spec.MaxConcurrentEvacuations; max != nil {
			all, err := s.lc.Nodes.GetAll(ctx)
			if err != nil {
				s.deleteWait = err.Error()
				return false
			}
			running := 0
			for _, n := range all {
				if n.Name != s.sat.Name && hasFlag(n.Flags, "EVACUATE") {
					running++
				}
			}
			if running >= int(*max) {
				s.deleteWait = fmt.Sprintf("waiting: %d evacuations already run and maxConcurrentEvacuations is %d", running, *max)
				return false
			}
		}
		if err := s.lc.Nodes.Evacuate(ctx, s.sat.Name, lapi.NodeEvacuate{}); err != nil {
			s.deleteWait = fmt.Sprintf("evacuating node %s: %v", s.sat.Name, err)
			return false
		}
		r.Recorder.Eventf(s.sat, corev1.EventTypeNormal, "Evacuating", "Evacuating LINSTOR node %s", s.sat.Name)
	}
	rscs, err := s.lc.Resources.GetResourceView(ctx, &lapi.ListOpts{Node: []string{s.sat.Name}})
	if err != nil {
		s.deleteWait = err.Error()
		return false
	}
	if len(rscs) > 0 {
		s.deleteWait = fmt.Sprintf("waiting for %d resources to leave node %s", len(rscs), s.sat.Name)
		return false
	}
	return r.deleteNode(ctx, s)
}
