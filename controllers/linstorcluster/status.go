package linstorcluster

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/controllers/phases"
)

// updateStatus derives every condition from the scope's observations and writes the
// status with one merge patch. observedGeneration moves only after a clean pass.
func (r *Reconciler) updateStatus(ctx context.Context, s *scope, passSucceeded bool) error {
	c := s.cluster
	before := c.DeepCopy()
	if log := ctrl.LoggerFrom(ctx).V(1); log.Enabled() {
		if reason, msg := s.problem(); reason != "" {
			log.Info("cluster degraded", "reason", reason, "why", msg)
		}
		if s.stopController != "" || s.fenceCSI {
			log.Info("workloads held", "controllerStopped", s.stopController, "csiFenced", s.fenceCSI)
		}
	}
	setDegradedCondition(c, s)
	if s.transient { // keep what was last observed until a failure lasts
		phases.SetUnknownIfAbsent(&c.Status.Conditions, c.Generation, linstorv1.ConditionProgressing, linstorv1.ConditionAvailable)
	} else {
		setProgressingCondition(c, s)
		setAvailableCondition(c, s)
	}
	setUpgradeableCondition(c, s)

	// The last version LINSTOR reported stays while it cannot be asked.
	if s.linstorVersion != "" {
		c.Status.Version = s.linstorVersion
	}
	if s.duplicateOf == "" {
		c.Status.Satellites = linstorv1.SatelliteCounts{Ready: s.satellitesReady, Total: s.satellitesTotal}
		c.Status.SatellitesSummary = fmt.Sprintf("%d/%d", s.satellitesReady, s.satellitesTotal)
		c.Status.Capacity = nil
		if s.poolsSeen {
			c.Status.Capacity = &linstorv1.CapacityStatus{
				Total: resource.NewQuantity(s.totalKiB*1024, resource.BinarySI),
				Free:  resource.NewQuantity(s.freeKiB*1024, resource.BinarySI),
			}
		}
	}
	if s.tlsFingerprints != nil {
		c.Status.Certificates = s.certificates
	}
	if passSucceeded && s.degradedReason() == "" && !s.transient {
		c.Status.ObservedGeneration = c.Generation
	}
	if equality.Semantic.DeepEqual(before.Status, c.Status) {
		return nil // a write that changes nothing still costs the API server
	}
	return r.Client.Status().Patch(ctx, c, client.MergeFrom(before))
}

// degradedReason returns the reason and message of the most important problem.
func (s *scope) degradedReason() string {
	reason, _ := s.problem()
	return reason
}

func (s *scope) problem() (reason, message string) {
	switch {
	case s.duplicateOf != "":
		return linstorv1.ReasonDuplicateCluster, fmt.Sprintf("Only one LinstorCluster may exist; %s is older and manages LINSTOR. Delete this one.", s.duplicateOf)
	case s.lifecycleProblem.Message != "":
		// Written by reconcileLifecycle with an optimistic lock; only reported here.
		return s.lifecycleProblem.Reason, s.lifecycleProblem.Message
	case s.removalHeld != "":
		return linstorv1.ReasonRemovalHeld, s.removalHeld
	case s.tlsErr != nil && s.tlsMissing:
		return linstorv1.ReasonSecretMissing, s.tlsErr.Error()
	case s.tlsErr != nil:
		return linstorv1.ReasonInvalidSpec, s.tlsErr.Error()
	case s.renderErr != nil:
		return linstorv1.ReasonInvalidSpec, s.renderErr.Error()
	case s.applyErr != nil:
		return linstorv1.ReasonReconciling, "Applying the controller workload failed: " + s.applyErr.Error()
	case s.satelliteErr != nil:
		return linstorv1.ReasonReconciling, "Managing satellites failed: " + s.satelliteErr.Error()
	case s.propertiesErr != nil:
		return linstorv1.ReasonLinstorError, "Setting controller properties failed: " + s.propertiesErr.Error()
	case s.passphraseErr != nil:
		return linstorv1.ReasonSecretMissing, "Master passphrase: " + s.passphraseErr.Error()
	}
	return "", ""
}

func setDegradedCondition(c *linstorv1.LinstorCluster, s *scope) {
	reason, msg := s.problem()
	cond := metav1.Condition{Type: linstorv1.ConditionDegraded, Status: metav1.ConditionFalse, Reason: linstorv1.ReasonAsExpected, ObservedGeneration: c.Generation}
	if reason != "" {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, reason, msg
	}
	phases.SetCondition(&c.Status.Conditions, cond)
}

func setProgressingCondition(c *linstorv1.LinstorCluster, s *scope) {
	cond := metav1.Condition{Type: linstorv1.ConditionProgressing, Status: metav1.ConditionFalse, Reason: linstorv1.ReasonAsExpected, ObservedGeneration: c.Generation}
	switch {
	case s.duplicateOf != "":
		cond.Reason = linstorv1.ReasonDuplicateCluster
	case s.upgrading:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, linstorv1.ReasonUpgradeInProgress, upgradeMessage(s.upgradeStatus)
	case s.stopController != "":
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, s.stopReason(), "LINSTOR controller stopped: "+s.stopController
	case s.linstorErr != nil:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, linstorv1.ReasonControllerNotReady, "Waiting for the LINSTOR controller: "+s.linstorErr.Error()
	case s.satellitesReady < s.satellitesTotal:
		cond.Status, cond.Reason = metav1.ConditionTrue, linstorv1.ReasonSatellitesNotReady
		cond.Message = fmt.Sprintf("%d of %d satellites are ONLINE with their storage pools", s.satellitesReady, s.satellitesTotal)
	}
	phases.SetCondition(&c.Status.Conditions, cond)
}

func setAvailableCondition(c *linstorv1.LinstorCluster, s *scope) {
	cond := metav1.Condition{Type: linstorv1.ConditionAvailable, Status: metav1.ConditionTrue, Reason: linstorv1.ReasonAsExpected, ObservedGeneration: c.Generation,
		Message: fmt.Sprintf("LINSTOR %s, %d/%d satellites ONLINE with their storage pools", s.linstorVersion, s.satellitesReady, s.satellitesTotal)}
	switch {
	case s.duplicateOf != "":
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, linstorv1.ReasonDuplicateCluster, "This LinstorCluster is a duplicate and manages nothing"
	case s.stopController != "":
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, s.stopReason(), "LINSTOR controller stopped: "+s.stopController+" (volumes keep working)"
	case s.linstorErr != nil:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, linstorv1.ReasonLinstorUnreachable, s.linstorErr.Error()
	case s.satellitesTotal == 0:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, linstorv1.ReasonSatellitesNotReady, "No node is selected for a satellite"
	case s.satellitesReady < s.satellitesTotal:
		cond.Status, cond.Reason = metav1.ConditionFalse, linstorv1.ReasonSatellitesNotReady
	}
	phases.SetCondition(&c.Status.Conditions, cond)
}

// setUpgradeableCondition tells OLM (through the OperatorCondition, in the upgrade work)
// whether replacing the operator now is safe.
func setUpgradeableCondition(c *linstorv1.LinstorCluster, s *scope) {
	cond := metav1.Condition{Type: linstorv1.ConditionUpgradeable, Status: metav1.ConditionTrue, Reason: linstorv1.ReasonAsExpected, ObservedGeneration: c.Generation}
	if reason, msg := s.problem(); reason != "" && reason != linstorv1.ReasonDuplicateCluster {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, reason, "The cluster is degraded: "+msg
	} else if s.upgrading {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, linstorv1.ReasonUpgradeInProgress, upgradeMessage(s.upgradeStatus)
	} else if s.stopController != "" {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, s.stopReason(), s.stopController
	}
	phases.SetCondition(&c.Status.Conditions, cond)
}

// stopReason is why the controller is stopped, as a condition reason.
func (s *scope) stopReason() string {
	if s.upgrading {
		return linstorv1.ReasonUpgradeInProgress
	}
	return linstorv1.ReasonBackupInProgress
}

func upgradeMessage(st *linstorv1.UpgradeStatus) string {
	if st == nil {
		return ""
	}
	return fmt.Sprintf("LINSTOR %s -> %s, %s: %s", st.From, st.To, st.Phase, st.Message)
}
