package linstorcluster

import (
	"context"
	"fmt"
	"strings"

	"github.com/linstor-operator/linstor-operator/pkg/clustertls"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/controllers/reconciler"
	"github.com/linstor-operator/linstor-operator/pkg/lifecycle"
)

// saveStatus derives every condition from the scope's observations and writes the
// status with one merge patch. observedGeneration moves only after a clean pass. A
// conflict or a deleted cluster is no error: the next pass starts from what is stored.
func (r *Reconciler) saveStatus(ctx context.Context, s *scope, passErr error) error {
	c := s.cluster
	if log := ctrl.LoggerFrom(ctx).V(1); log.Enabled() {
		if reason, msg := s.problem(); reason != "" {
			log.Info("cluster degraded", "reason", reason, "why", msg)
		}
		if s.stopController != "" || s.fenceCSI {
			log.Info("workloads held", "controllerStopped", s.stopController, "csiFenced", s.fenceCSI)
		}
	}
	before := c.DeepCopy() // for the Encrypted warning
	wrote, err := reconciler.PatchStatus(ctx, r.Client, c, func() { setStatus(c, s, passErr == nil) })
	if err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	if wrote {
		r.warnUnencrypted(before, c)
	}
	recordStatusMetrics(c, r.lifecycleSpec(c).PhaseTimeout)
	return nil
}

// warnUnencrypted sends a Warning event when Encrypted turns False or its message
// changes: once per change, not every pass (a steady state writes nothing).
func (r *Reconciler) warnUnencrypted(before, after *linstorv1.LinstorCluster) {
	now := meta.FindStatusCondition(after.Status.Conditions, linstorv1.ConditionEncrypted)
	if now == nil || now.Status != metav1.ConditionFalse {
		r.warned.Delete(after.UID)
		return
	}
	if was := meta.FindStatusCondition(before.Status.Conditions, linstorv1.ConditionEncrypted); was != nil &&
		was.Status == now.Status && was.Reason == now.Reason && was.Message == now.Message {
		return
	}
	// A pass that read the cluster before the cache held the previous pass's status
	// sees the change again: what this process already said is remembered.
	said := now.Reason + "\n" + now.Message
	if prev, ok := r.warned.Load(after.UID); ok && prev == said {
		return
	}
	r.warned.Store(after.UID, said)
	r.Recorder.Event(after, corev1.EventTypeWarning, now.Reason, now.Message)
}

// setTLSStatus records the TLS default (decided once, see clustertls.RecordedTLSDefault)
// and the mode each channel runs with.
func setTLSStatus(c *linstorv1.LinstorCluster) {
	st := &linstorv1.TLSStatus{DefaultMode: clustertls.RecordedTLSDefault(c), Internal: clustertls.InternalTLSMode(c)}
	if c.Spec.ExternalController == nil {
		st.API = clustertls.APITLSMode(c)
	}
	c.Status.TLS = st
}

// setEncryptedCondition says which traffic is not encrypted, naming the field that
// decides it. It is a warning: Degraded and Upgradeable do not depend on it. A cluster
// the operator does not manage (a duplicate, another namespace) is not judged.
func setEncryptedCondition(c *linstorv1.LinstorCluster, s *scope) {
	cond := encryptedCondition(c)
	if reason, _ := s.inactive(); reason != "" {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionUnknown, reason, "The operator manages nothing of this LinstorCluster"
	}
	reconciler.SetCondition(&c.Status.Conditions, cond)
}

// Restarted by switching a channel to TLS, for the messages.
const (
	internalRestarts = "the controller and every satellite"
	apiRestarts      = "the controller and the CSI driver and moves the API to HTTPS on port 3371"
	internalClear    = "controller-satellite traffic, the key material of encrypted volumes included, crosses the network in clear text"
	apiClear         = "the LINSTOR API, and the master passphrase sent to it, is plain HTTP without client certificates"
)

func encryptedCondition(c *linstorv1.LinstorCluster) metav1.Condition {
	cond := metav1.Condition{Type: linstorv1.ConditionEncrypted, Status: metav1.ConditionTrue, Reason: linstorv1.ReasonAsExpected, ObservedGeneration: c.Generation}
	internalSet := c.Spec.TLS != nil && c.Spec.TLS.Internal != nil
	apiSet := c.Spec.TLS != nil && c.Spec.TLS.API != nil
	var plain []string
	if ext := c.Spec.ExternalController; ext != nil {
		// The operator does not run this controller: it reports what it can see and
		// invents nothing (an unset channel stays Disabled).
		cond.Reason = linstorv1.ReasonExternalController
		switch {
		case clustertls.InternalTLSEnabled(c):
		case internalSet:
			plain = append(plain, "spec.tls.internal.mode is Disabled: the satellites accept plain connections from the external controller")
		default:
			plain = append(plain, "spec.tls.internal.mode is unset, which with spec.externalController means Disabled (the operator cannot know whether that controller uses SSL): the satellites accept plain connections from it")
		}
		if strings.HasPrefix(ext.URL, "http://") {
			plain = append(plain, "spec.externalController.url is plain HTTP: the LINSTOR API, and the master passphrase sent to it, crosses the network in clear text")
		}
		if len(plain) == 0 {
			cond.Message = "The external controller is reached over HTTPS and the satellites use TLS"
			return cond
		}
		cond.Status, cond.Message = metav1.ConditionFalse, strings.Join(plain, "; ")
		return cond
	}

	explicit := false
	for _, ch := range []struct {
		field          string
		enabled, set   bool
		clear, restart string
	}{
		{"internal", clustertls.InternalTLSEnabled(c), internalSet, internalClear, internalRestarts},
		{"api", clustertls.APITLSEnabled(c), apiSet, apiClear, apiRestarts},
	} {
		switch {
		case ch.enabled:
		case ch.set:
			explicit = true
			plain = append(plain, fmt.Sprintf("spec.tls.%s.mode is Disabled: %s", ch.field, ch.clear))
		default:
			plain = append(plain, fmt.Sprintf("spec.tls.%s.mode is unset and this cluster ran without TLS before the operator encrypted by default, so it stays Disabled (status.tls.defaultMode): %s; set spec.tls.%s.mode to Generated to encrypt it, which restarts %s",
				ch.field, ch.clear, ch.field, ch.restart))
		}
	}
	switch {
	case len(plain) == 0:
		cond.Message = fmt.Sprintf("Controller-satellite traffic (%s) and the API (%s) use TLS", clustertls.InternalTLSMode(c), clustertls.APITLSMode(c))
	case explicit:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, linstorv1.ReasonTLSDisabled, strings.Join(plain, "; ")
	default:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, linstorv1.ReasonTLSKeptDisabled, strings.Join(plain, "; ")
	}
	return cond
}

// setStatus derives the status from the pass's observations (no I/O).
func setStatus(c *linstorv1.LinstorCluster, s *scope, passSucceeded bool) {
	// First: before this pass sets conditions, the recorded TLS default is still decided
	// from the object as it was read (see clustertls.RecordedTLSDefault).
	setTLSStatus(c)
	setDegradedCondition(c, s)
	setEncryptedCondition(c, s)
	if s.transient { // keep what was last observed until a failure lasts
		reconciler.SetUnknownIfAbsent(&c.Status.Conditions, c.Generation, linstorv1.ConditionProgressing, linstorv1.ConditionAvailable)
	} else {
		setProgressingCondition(c, s)
		setAvailableCondition(c, s)
	}
	setUpgradeableCondition(c, s)
	setRedundantCondition(c, s)
	c.Status.Phase = clusterPhase(c.Status.Conditions)
	if st := replicasStatus(s.snap.Health()); st != nil && !s.transient {
		c.Status.Replicas = keepObservedAt(c.Status.Replicas, st)
	}

	// The last version LINSTOR reported stays while it cannot be asked.
	if s.linstorVersion != "" {
		c.Status.Version = s.linstorVersion
	}
	if reason, _ := s.inactive(); reason == "" {
		skipped := c.Status.Satellites.Skipped
		if s.skippedDecided {
			skipped, c.Status.SkippedNodes = s.satellitesSkipped, s.skippedNodes
		}
		c.Status.Satellites = linstorv1.SatelliteCounts{Ready: s.satellitesReady, Total: s.satellitesTotal, Skipped: skipped}
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
	if s.monitoring != nil {
		c.Status.Monitoring = s.monitoring
	}
	if passSucceeded && s.degradedReason() == "" && !s.transient {
		c.Status.ObservedGeneration = c.Generation
	}
}

// clusterPhase sums the conditions up in one word: an upgrade in progress first (it
// explains the others), then a problem, then availability.
func clusterPhase(conditions []metav1.Condition) linstorv1.ClusterPhase {
	if p := meta.FindStatusCondition(conditions, linstorv1.ConditionProgressing); p != nil && p.Status == metav1.ConditionTrue && p.Reason == linstorv1.ReasonUpgradeInProgress {
		return linstorv1.ClusterUpgrading
	}
	switch {
	case meta.IsStatusConditionTrue(conditions, linstorv1.ConditionDegraded):
		return linstorv1.ClusterDegraded
	case meta.IsStatusConditionTrue(conditions, linstorv1.ConditionAvailable):
		return linstorv1.ClusterAvailable
	}
	return linstorv1.ClusterProgressing
}

// inactive says why this LinstorCluster manages nothing, if it does not: a second
// cluster, or one outside the operator's namespace (created before the webhook refused
// that; the operator has no permission to run LINSTOR there).
func (s *scope) inactive() (reason, message string) {
	switch {
	case s.duplicateOf != "":
		return linstorv1.ReasonDuplicateCluster, fmt.Sprintf("Only one LinstorCluster may exist; %s is older and manages LINSTOR. Delete this one.", s.duplicateOf)
	case s.outsideNamespace != "":
		return linstorv1.ReasonWrongNamespace, fmt.Sprintf("The operator runs LINSTOR only in its namespace %q, where the ServiceAccounts and RBAC of LINSTOR's pods are installed; it manages nothing of this LinstorCluster. Running workloads are left alone: see docs/security.md to move the cluster.", s.outsideNamespace)
	}
	return "", ""
}

// degradedReason returns the reason and message of the most important problem.
func (s *scope) degradedReason() string {
	reason, _ := s.problem()
	return reason
}

func (s *scope) problem() (reason, message string) {
	switch {
	case s.duplicateOf != "" || s.outsideNamespace != "":
		return s.inactive()
	case s.lifecycleProblem.Message != "":
		// Written by reconcileLifecycle with an optimistic lock; only reported here.
		return s.lifecycleProblem.Reason, s.lifecycleProblem.Message
	case s.lostNodesRefused != "":
		return linstorv1.ReasonInvalidSpec, s.lostNodesRefused
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
	case len(s.missingAccounts) > 0:
		return linstorv1.ReasonServiceAccountMissing, fmt.Sprintf("ServiceAccounts %s do not exist in namespace %s, so LINSTOR's pods cannot start; they are installed with the operator (the OLM bundle, or config/rbac with make deploy)",
			strings.Join(s.missingAccounts, ", "), s.cluster.Namespace)
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
	reconciler.SetCondition(&c.Status.Conditions, cond)
}

func setProgressingCondition(c *linstorv1.LinstorCluster, s *scope) {
	cond := metav1.Condition{Type: linstorv1.ConditionProgressing, Status: metav1.ConditionFalse, Reason: linstorv1.ReasonAsExpected, ObservedGeneration: c.Generation}
	switch {
	case s.duplicateOf != "" || s.outsideNamespace != "":
		cond.Reason, _ = s.inactive()
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
	reconciler.SetCondition(&c.Status.Conditions, cond)
}

func setAvailableCondition(c *linstorv1.LinstorCluster, s *scope) {
	cond := metav1.Condition{Type: linstorv1.ConditionAvailable, Status: metav1.ConditionTrue, Reason: linstorv1.ReasonAsExpected, ObservedGeneration: c.Generation,
		Message: fmt.Sprintf("LINSTOR %s, %d/%d satellites ONLINE with their storage pools", s.linstorVersion, s.satellitesReady, s.satellitesTotal)}
	switch {
	case s.duplicateOf != "" || s.outsideNamespace != "":
		cond.Status = metav1.ConditionFalse
		cond.Reason, cond.Message = s.inactive()
	case s.stopController != "":
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, s.stopReason(), "LINSTOR controller stopped: "+s.stopController+" (volumes keep working)"
	case s.linstorErr != nil:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, linstorv1.ReasonLinstorUnreachable, s.linstorErr.Error()
	case s.satellitesTotal == 0:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, linstorv1.ReasonSatellitesNotReady, "No node is selected for a satellite"
	case s.satellitesReady < s.satellitesTotal:
		cond.Status, cond.Reason = metav1.ConditionFalse, linstorv1.ReasonSatellitesNotReady
	}
	reconciler.SetCondition(&c.Status.Conditions, cond)
}

// setUpgradeableCondition tells OLM (through the OperatorCondition) whether replacing the
// operator now is safe. It is not while a LINSTOR upgrade from its Backup on (or its
// rollback), a backup or a restore runs: another release would take over an operation
// it did not start. Preflight has changed nothing, so it holds nothing: the next
// release decides the upgrade afresh. A degraded cluster does not hold it: the next
// release may be the fix (a fix-forward), and each step of this one resumes after a
// restart, so nothing is half done.
func setUpgradeableCondition(c *linstorv1.LinstorCluster, s *scope) {
	cond := metav1.Condition{Type: linstorv1.ConditionUpgradeable, Status: metav1.ConditionTrue, Reason: linstorv1.ReasonAsExpected, ObservedGeneration: c.Generation}
	inactive, _ := s.inactive()
	if !s.lifecycleDecided && inactive == "" {
		// This pass decided nothing (an error, a conflict): an upgrade or a restore the
		// saved state records still runs, and otherwise the last decision stands. Saying
		// True here would let OLM replace the operator in the middle of an upgrade.
		switch {
		case lifecycle.HoldsOperator(c.Status.Upgrade):
			cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, linstorv1.ReasonUpgradeInProgress, upgradeMessage(c.Status.Upgrade)
		case lifecycle.RestoreInProgress(c.Status.Restore):
			cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, linstorv1.ReasonUpgradeInProgress, "a restore of "+c.Status.Restore.BackupName+" runs"
		case meta.FindStatusCondition(c.Status.Conditions, linstorv1.ConditionUpgradeable) != nil:
			return
		}
		reconciler.SetCondition(&c.Status.Conditions, cond)
		return
	}
	if inactive != "" {
		// It manages nothing: nothing of it can make replacing the operator unsafe.
	} else if s.holdOperator {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, linstorv1.ReasonUpgradeInProgress, upgradeMessage(s.upgradeStatus)
	} else if s.stopController != "" {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, s.stopReason(), s.stopController
	} else if s.upgrading && s.upgradeStatus != nil {
		cond.Message = upgradeMessage(s.upgradeStatus) + " (nothing has changed yet, so another operator release may take it over: it checks again)"
	} else if reason, msg := s.problem(); reason != "" {
		cond.Message = fmt.Sprintf("Degraded (%s), which holds no operator upgrade: %s", reason, msg)
	}
	reconciler.SetCondition(&c.Status.Conditions, cond)
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
	// Phase messages may name their phase already ("Preflight: waiting: ...").
	msg := strings.TrimPrefix(st.Message, string(st.Phase)+": ")
	return fmt.Sprintf("LINSTOR %s -> %s, %s: %s", st.From, st.To, st.Phase, msg)
}
