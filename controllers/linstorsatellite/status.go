package linstorsatellite

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/controllers/reconciler"
	"github.com/linstor-operator/linstor-operator/pkg/netif"
)

// saveStatus is the pass's deferred save: it turns the pass's observations into status
// with one merge patch (reconciler.PatchStatus). A conflict or a satellite gone is no
// error: the next pass starts from what is stored.
func (r *Reconciler) saveStatus(ctx context.Context, s *scope, passErr error) error {
	if err := r.writeStatus(ctx, s, passErr == nil); !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// writeStatus writes the status the scope says, unless it was decided on a LINSTOR
// state older than the satellite's last write.
func (r *Reconciler) writeStatus(ctx context.Context, s *scope, passSucceeded bool) error {
	if s.snap != nil && !s.fresh && s.snap.Err == nil {
		return nil // nothing was decided on a cycle older than our last write
	}
	_, err := reconciler.PatchStatus(ctx, r.Client, s.sat, func() { deriveStatus(ctx, s, passSucceeded) })
	return err
}

// deriveStatus sets the satellite's status from the pass's scope.
func deriveStatus(ctx context.Context, s *scope, passSucceeded bool) {
	sat := s.sat
	// The pass's decision, for whoever debugs why nothing moves (V(1), not noise).
	if log := ctrl.LoggerFrom(ctx).V(1); log.Enabled() {
		switch {
		case problem(s) != "":
			log.Info("satellite waits", "reason", s.deleteReason, "why", problem(s))
		case s.pools.Pending != "" || s.pools.Waiting != "":
			log.Info("satellite pools wait", "why", s.pools.Pending+s.pools.Waiting)
		case s.transient:
			log.Info("LINSTOR did not answer; retrying within the grace period")
		}
	}
	if s.connection != "" {
		sat.Status.ConnectionStatus = s.connection
		if s.version != "" || s.connection != "ONLINE" { // a failed version read keeps the last one
			sat.Status.Version = s.version
		}
	}
	if pools, summary, ok := s.pools.Statuses(len(sat.Spec.StoragePools)); ok {
		sat.Status.StoragePools, sat.Status.PoolsSummary = pools, summary
	}
	if s.pools.DiscoverySet {
		sat.Status.Discovery = s.pools.Discovery
	}
	if d := s.drain; d != nil {
		st := &linstorv1.DrainStatus{Allowed: d.Allowed, HeldCount: d.HeldCount, Message: d.Reason}
		for _, h := range d.Holds {
			st.HeldBy = append(st.HeldBy, linstorv1.DrainHeldResource{Resource: h.Resource, Reason: h.Reason})
		}
		sat.Status.Drain = st
	}
	setDegradedCondition(sat, s)
	if s.transient { // keep what was last observed until a failure lasts
		reconciler.SetUnknownIfAbsent(&sat.Status.Conditions, sat.Generation, linstorv1.ConditionProgressing, linstorv1.ConditionAvailable)
	} else {
		setProgressingCondition(sat, s)
		setAvailableCondition(sat, s)
	}
	// A fenced write is not applied yet: the generation is observed once it is.
	if passSucceeded && problem(s) == "" && !s.transient && len(s.writer.fenced) == 0 {
		sat.Status.ObservedGeneration = sat.Generation
	}
}

// degradation is why the satellite is Degraded: the reason and the message, "" when it
// is not. One switch decides both, so the reason always names the message's cause.
func degradation(s *scope) (reason, message string) {
	var noAddress *netif.NoAddressError
	switch {
	case s.cluster == nil:
		return linstorv1.ReasonInvalidSpec, fmt.Sprintf("LinstorCluster %q not found", s.sat.Spec.ClusterRef.Name)
	case errors.As(s.nodeErr, &noAddress) && len(noAddress.Have) > 0:
		return linstorv1.ReasonNoAddressInIPFamilies, s.nodeErr.Error()
	case s.nodeErr != nil:
		return linstorv1.ReasonInvalidSpec, s.nodeErr.Error()
	case s.loaderErr != nil:
		return linstorv1.ReasonDriverToolkitMissing, "Satellite workload not applied: " + s.loaderErr.Error()
	case s.workloadErr != nil:
		return specOr(s.renderInvalid), "Satellite workload: " + s.workloadErr.Error()
	case s.netifErr != nil:
		return specOr(s.netifInvalid), s.netifErr.Error()
	case s.propsErr != nil:
		return linstorv1.ReasonLinstorError, s.propsErr.Error()
	case len(s.pools.Problems) > 0:
		return linstorv1.ReasonLinstorError, s.pools.Problem()
	case len(s.pools.ClaimFailed) > 0:
		return linstorv1.ReasonDiskClaimFailed, strings.Join(s.pools.ClaimFailed, "; ")
	case s.deleteWait != "" && s.deleteReason != "":
		return s.deleteReason, s.deleteWait
	case s.deleteWait != "":
		return linstorv1.ReasonWaitingForEvacuate, s.deleteWait
	}
	return "", ""
}

// specOr: a problem of the spec is InvalidSpec, any other a LINSTOR error.
func specOr(invalidSpec bool) string {
	if invalidSpec {
		return linstorv1.ReasonInvalidSpec
	}
	return linstorv1.ReasonLinstorError
}

// problem is degradation's message.
func problem(s *scope) string {
	_, message := degradation(s)
	return message
}

func setDegradedCondition(sat *linstorv1.LinstorSatellite, s *scope) {
	cond := metav1.Condition{Type: linstorv1.ConditionDegraded, Status: metav1.ConditionFalse, Reason: linstorv1.ReasonAsExpected, ObservedGeneration: sat.Generation}
	if reason, msg := degradation(s); msg != "" {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, reason, msg
	} else if s.pools.Waiting != "" {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, linstorv1.ReasonPoolInUse, s.pools.Waiting
	}
	reconciler.SetCondition(&sat.Status.Conditions, cond)
}

func setProgressingCondition(sat *linstorv1.LinstorSatellite, s *scope) {
	cond := metav1.Condition{Type: linstorv1.ConditionProgressing, Status: metav1.ConditionFalse, Reason: linstorv1.ReasonAsExpected, ObservedGeneration: sat.Generation}
	switch {
	case s.workloadPending != "":
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, linstorv1.ReasonReconciling, s.workloadPending
	case s.linstorErr != nil:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, linstorv1.ReasonControllerNotReady, "Waiting for the LINSTOR controller: "+s.linstorErr.Error()
	case len(s.writer.fenced) > 0:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, linstorv1.ReasonLinstorWritesFenced, s.writer.fencedMessage()
	case s.pools.Pending != "":
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, linstorv1.ReasonNodeOffline, s.pools.Pending
	case len(s.pools.WaitingForDisks) > 0:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, linstorv1.ReasonWaitingForDisks, strings.Join(s.pools.WaitingForDisks, "; ")
	case len(s.pools.Creating) > 0:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, linstorv1.ReasonReconciling, "Creating storage pools: "+strings.Join(s.pools.Creating, ", ")
	}
	reconciler.SetCondition(&sat.Status.Conditions, cond)
}

func setAvailableCondition(sat *linstorv1.LinstorSatellite, s *scope) {
	cond := metav1.Condition{Type: linstorv1.ConditionAvailable, Status: metav1.ConditionFalse, ObservedGeneration: sat.Generation}
	switch {
	case s.linstorErr != nil:
		cond.Reason, cond.Message = linstorv1.ReasonLinstorUnreachable, s.linstorErr.Error()
	case s.evictedWait != "":
		// An evicted node serves nothing, whatever its connection.
		cond.Reason, cond.Message = linstorv1.ReasonNodeEvicted, s.evictedWait
	case s.connection == "ONLINE":
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, linstorv1.ReasonAsExpected, "LINSTOR node is ONLINE"
	case s.connection == "VERSION_MISMATCH":
		cond.Reason, cond.Message = linstorv1.ReasonVersionMismatch, "The satellite's LINSTOR version differs from the controller's"
	case s.connection != "":
		cond.Reason, cond.Message = linstorv1.ReasonNodeOffline, "LINSTOR reports the node "+s.connection
		if s.evictWait != "" {
			cond.Message += "; " + s.evictWait
		}
	default:
		cond.Reason, cond.Message = linstorv1.ReasonNotObserved, problem(s)
	}
	reconciler.SetCondition(&sat.Status.Conditions, cond)
}
