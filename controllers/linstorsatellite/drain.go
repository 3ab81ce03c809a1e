package linstorsatellite

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/linstor-operator/linstor-operator/pkg/names"
	"github.com/linstor-operator/linstor-operator/pkg/render"
	"github.com/linstor-operator/linstor-operator/pkg/satellite"
)

// reconcileDrain keeps the node's drain guard and its budget (satellite.Drain decides):
// the budget refuses a drain while the node holds a resource, or while LINSTOR's
// resource states are unknown. It runs right after the workload, before any LINSTOR
// phase: an unreachable LINSTOR ends those, and must hold the drain all the same.
// Nothing is written when nothing changed: the budget goes through the applier (hash
// and cache), the guard is only created or replaced.
func (r *Reconciler) reconcileDrain(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.node == nil || s.satelliteSpec == nil {
		return ctrl.Result{}, nil // no satellite rendered: the conditions say why
	}
	health := r.Observer.Snapshot(s.key).Health()
	// A NoExecute taint the satellite does not tolerate evicts the guard too (the
	// taint manager, not a drain): re-creating it would only be evicted again. It is
	// treated as a cordon.
	in := satellite.DrainInput{Known: health != nil, Cordoned: s.node.Spec.Unschedulable || untoleratedNoExecute(s.node, s.satelliteSpec.Tolerations)}
	for _, h := range health.Holding(s.sat.Name) {
		in.Holds = append(in.Holds, satellite.DrainHold{Resource: h.Resource, Reason: h.Reason})
	}
	key := client.ObjectKey{Namespace: s.sat.Namespace, Name: names.DrainGuardName(s.sat.Name)}
	guard := &corev1.Pod{}
	switch err := r.Client.Get(ctx, key, guard); {
	case apierrors.IsNotFound(err):
		in.Guard = satellite.GuardMissing
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("reading the drain guard pod: %w", err)
	case guard.Status.Phase == corev1.PodSucceeded || guard.Status.Phase == corev1.PodFailed:
		in.Guard = satellite.GuardFinished
	default:
		in.Guard = satellite.GuardRunning
	}
	d := satellite.Drain(in)
	s.drain = &d

	// The budget first: a guard never runs without it.
	was := &policyv1.PodDisruptionBudget{}
	existed := r.Client.Get(ctx, key, was) == nil
	if _, err := r.applier.Apply(ctx, s.sat, render.Objects{render.DrainGuardPDB(s.cluster, s.sat, d.Allowed, d.Reason)}); err != nil {
		return ctrl.Result{}, fmt.Errorf("drain guard budget: %w", err)
	}
	if wasAllowed := was.Spec.MinAvailable != nil && was.Spec.MinAvailable.IntValue() == 0; existed && wasAllowed != d.Allowed {
		if d.Allowed {
			r.Recorder.Eventf(s.sat, corev1.EventTypeNormal, "DrainAllowed", "Node %s may be drained: %s", s.sat.Name, d.Reason)
		} else {
			r.Recorder.Eventf(s.sat, corev1.EventTypeWarning, "DrainHeld", "Node %s may not be drained: %s", s.sat.Name, d.Reason)
		}
	}
	switch d.Guard {
	case satellite.GuardCreate:
		if _, err := r.applier.Apply(ctx, s.sat, render.Objects{render.DrainGuardPod(s.cluster, s.sat, *s.satelliteSpec)}); err != nil {
			return ctrl.Result{}, fmt.Errorf("drain guard pod: %w", err)
		}
	case satellite.GuardReplace:
		// The pod's watch brings the next pass, which creates it again.
		if err := r.Client.Delete(ctx, guard, client.Preconditions{UID: &guard.UID}); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("replacing the finished drain guard pod: %w", err)
		}
	}
	return ctrl.Result{}, nil
}

// untoleratedNoExecute: the node has a NoExecute taint the tolerations do not tolerate.
func untoleratedNoExecute(node *corev1.Node, tolerations []corev1.Toleration) bool {
	for i := range node.Spec.Taints {
		t := &node.Spec.Taints[i]
		if t.Effect == corev1.TaintEffectNoExecute && !corev1helpers.TolerationsTolerateTaint(tolerations, t) {
			return true
		}
	}
	return false
}
