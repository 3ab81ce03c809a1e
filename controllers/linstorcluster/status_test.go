package linstorcluster

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/lifecycle"
)

// A cluster the operator may not manage says so in every condition, and blocks no
// operator upgrade: nothing of it is running under this operator.
func TestInactiveClusterConditions(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*scope)
		reason string
		says   string
	}{
		{"outside the operator's namespace", func(s *scope) { s.outsideNamespace = "linstor" }, linstorv1.ReasonWrongNamespace, `namespace "linstor"`},
		{"a duplicate", func(s *scope) { s.duplicateOf = "linstor/first" }, linstorv1.ReasonDuplicateCluster, "linstor/first is older"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "elsewhere", Name: "linstor", Generation: 2}}
			s := newScope(c)
			tc.mutate(s)
			setStatus(c, s, true)
			want := map[string]metav1.ConditionStatus{
				linstorv1.ConditionAvailable:   metav1.ConditionFalse,
				linstorv1.ConditionDegraded:    metav1.ConditionTrue,
				linstorv1.ConditionUpgradeable: metav1.ConditionTrue,
			}
			for typ, status := range want {
				cond := meta.FindStatusCondition(c.Status.Conditions, typ)
				if cond == nil || cond.Status != status {
					t.Fatalf("%s = %+v, want %s", typ, cond, status)
				}
				if typ != linstorv1.ConditionUpgradeable && (cond.Reason != tc.reason || !strings.Contains(cond.Message, tc.says)) {
					t.Errorf("%s: reason %q message %q, want %q saying %q", typ, cond.Reason, cond.Message, tc.reason, tc.says)
				}
			}
		})
	}
}

// OLM may replace the operator unless an operation another release would take over half
// done runs: a LINSTOR upgrade or its rollback, a backup, a restore. A degraded cluster
// does not hold it (the next release may be the fix), and says so.
func TestUpgradeableHoldsOnlyForRunningOperations(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*scope)
		status metav1.ConditionStatus
		reason string
		says   string
	}{
		{"healthy", func(*scope) {}, metav1.ConditionTrue, linstorv1.ReasonAsExpected, ""},
		{"degraded: a missing passphrase Secret", func(s *scope) { s.passphraseErr = errors.New(`Secret linstor/linstor-passphrase does not exist`) },
			metav1.ConditionTrue, linstorv1.ReasonAsExpected, "Degraded (SecretMissing), which holds no operator upgrade"},
		{"degraded: a failed upgrade, rolled back", func(s *scope) {
			s.lifecycleProblem = lifecycle.Problem{Reason: linstorv1.ReasonUpgradeFailed, Message: "rolled back"}
		}, metav1.ConditionTrue, linstorv1.ReasonAsExpected, "Degraded (UpgradeFailed)"},
		{"a LINSTOR upgrade runs", func(s *scope) {
			s.upgrading, s.holdOperator = true, true
			s.upgradeStatus = &linstorv1.UpgradeStatus{Phase: linstorv1.UpgradeController, From: "1.33.2", To: "1.33.3"}
		}, metav1.ConditionFalse, linstorv1.ReasonUpgradeInProgress, "LINSTOR 1.33.2 -> 1.33.3, Controller"},
		{"a LINSTOR upgrade runs on a degraded cluster", func(s *scope) {
			s.upgrading, s.holdOperator = true, true
			s.upgradeStatus = &linstorv1.UpgradeStatus{Phase: linstorv1.UpgradeRollingBack, From: "1.33.2", To: "1.33.3"}
			s.passphraseErr = errors.New("gone")
		}, metav1.ConditionFalse, linstorv1.ReasonUpgradeInProgress, "RollingBack"},
		// Preflight has changed nothing: OLM may install another release meanwhile (the
		// fix for what Preflight waits on), which decides the upgrade afresh.
		{"a LINSTOR upgrade waits in Preflight", func(s *scope) {
			s.upgrading = true
			s.upgradeStatus = &linstorv1.UpgradeStatus{Phase: linstorv1.UpgradePreflight, From: "1.33.2", To: "1.33.3", Message: "Preflight: waiting: satellite b is OFFLINE"}
		}, metav1.ConditionTrue, linstorv1.ReasonAsExpected, "LINSTOR 1.33.2 -> 1.33.3, Preflight: waiting: satellite b is OFFLINE (nothing has changed yet"},
		{"Preflight on a degraded cluster", func(s *scope) {
			s.upgrading = true
			s.upgradeStatus = &linstorv1.UpgradeStatus{Phase: linstorv1.UpgradePreflight, From: "1.33.2", To: "1.33.3"}
			s.lostNodesRefused = "linstor.io/acknowledge-lost-nodes is not honoured for a: LINSTOR reports it ONLINE"
		}, metav1.ConditionTrue, linstorv1.ReasonAsExpected, "Preflight"},
		{"undecided during Preflight: holds nothing", func(s *scope) {
			s.lifecycleDecided = false
			s.cluster.Status.Upgrade = &linstorv1.UpgradeStatus{Phase: linstorv1.UpgradePreflight, From: "1.33.2", To: "1.33.3"}
		}, metav1.ConditionTrue, linstorv1.ReasonAsExpected, ""},
		{"a backup stops the controller", func(s *scope) { s.stopController = "LinstorBackup b1 copies the database" },
			metav1.ConditionFalse, linstorv1.ReasonBackupInProgress, "LinstorBackup b1"},
		// A pass whose lifecycle step failed (an error, a conflict) decided nothing: the
		// saved state speaks, never a default True in the middle of an upgrade.
		{"undecided during an upgrade", func(s *scope) {
			s.lifecycleDecided = false
			s.cluster.Status.Upgrade = &linstorv1.UpgradeStatus{Phase: linstorv1.UpgradeSatellites, From: "1.33.2", To: "1.33.3"}
		}, metav1.ConditionFalse, linstorv1.ReasonUpgradeInProgress, "LINSTOR 1.33.2 -> 1.33.3, Satellites"},
		{"undecided during a restore", func(s *scope) {
			s.lifecycleDecided = false
			s.cluster.Status.Restore = &linstorv1.RestoreStatus{BackupName: "b1", Phase: lifecycle.RestoreRestoring}
		}, metav1.ConditionFalse, linstorv1.ReasonUpgradeInProgress, "a restore of b1"},
		{"undecided: the last decision stands", func(s *scope) {
			s.lifecycleDecided = false
			s.cluster.Status.Conditions = []metav1.Condition{{Type: linstorv1.ConditionUpgradeable, Status: metav1.ConditionFalse,
				Reason: linstorv1.ReasonBackupInProgress, Message: "LinstorBackup b2 copies the database"}}
		}, metav1.ConditionFalse, linstorv1.ReasonBackupInProgress, "LinstorBackup b2"},
		{"undecided after an upgrade ended", func(s *scope) {
			s.lifecycleDecided = false
			s.cluster.Status.Upgrade = &linstorv1.UpgradeStatus{Phase: linstorv1.UpgradeSucceeded, From: "1.33.2", To: "1.33.3"}
		}, metav1.ConditionTrue, linstorv1.ReasonAsExpected, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "linstor", Name: "linstor", Generation: 1}}
			s := newScope(c)
			s.lifecycleDecided = true
			tc.mutate(s)
			setUpgradeableCondition(c, s)
			cond := meta.FindStatusCondition(c.Status.Conditions, linstorv1.ConditionUpgradeable)
			if cond == nil || cond.Status != tc.status || cond.Reason != tc.reason || !strings.Contains(cond.Message, tc.says) {
				t.Fatalf("Upgradeable = %+v, want %s %s saying %q", cond, tc.status, tc.reason, tc.says)
			}
		})
	}
}

func TestUpgradeMessageNamesThePhaseOnce(t *testing.T) {
	for msg, want := range map[string]string{
		"Preflight: waiting: resource r on n: volume 0 is Outdated": "LINSTOR 1.33.2 -> 1.33.3, Preflight: waiting: resource r on n: volume 0 is Outdated",
		"waiting for the satellites":                                "LINSTOR 1.33.2 -> 1.33.3, Preflight: waiting for the satellites",
	} {
		got := upgradeMessage(&linstorv1.UpgradeStatus{Phase: linstorv1.UpgradePreflight, From: "1.33.2", To: "1.33.3", Message: msg})
		if got != want {
			t.Errorf("upgradeMessage(%q) = %q, want %q", msg, got, want)
		}
	}
}

// problem is the one (reason, message) of a cluster that Degraded reports (and that
// holds observedGeneration back): the first that applies, in this order.
func TestProblem(t *testing.T) {
	tlsMissing := errors.New("Secret linstor/api-tls does not exist")
	for _, tc := range []struct {
		name    string
		mutate  func(*scope)
		reason  string
		message string
	}{
		{"healthy", func(*scope) {}, "", ""},
		{"a duplicate", func(s *scope) { s.duplicateOf = "linstor/first" }, linstorv1.ReasonDuplicateCluster,
			"Only one LinstorCluster may exist; linstor/first is older and manages LINSTOR. Delete this one."},
		{"a duplicate outside the namespace: the duplicate is said", func(s *scope) { s.duplicateOf, s.outsideNamespace = "linstor/first", "linstor" },
			linstorv1.ReasonDuplicateCluster, "Only one LinstorCluster may exist; linstor/first is older and manages LINSTOR. Delete this one."},
		{"the lifecycle's problem", func(s *scope) {
			s.lifecycleProblem = lifecycle.Problem{Reason: linstorv1.ReasonUpgradeFailed, Message: "rolled back"}
			s.removalHeld, s.passphraseErr = "held", errors.New("gone")
		}, linstorv1.ReasonUpgradeFailed, "rolled back"},
		{"refused lost-node acknowledgements", func(s *scope) { s.lostNodesRefused = "not honoured for a"; s.removalHeld = "held" },
			linstorv1.ReasonInvalidSpec, "not honoured for a"},
		{"removal held", func(s *scope) { s.removalHeld = "3 satellites wait"; s.tlsErr = tlsMissing },
			linstorv1.ReasonRemovalHeld, "3 satellites wait"},
		{"a missing TLS Secret", func(s *scope) { s.tlsErr, s.tlsMissing = tlsMissing, true; s.renderErr = errors.New("bad") },
			linstorv1.ReasonSecretMissing, tlsMissing.Error()},
		{"a TLS spec error", func(s *scope) { s.tlsErr = errors.New("spec.tls.api.secretName is empty") },
			linstorv1.ReasonInvalidSpec, "spec.tls.api.secretName is empty"},
		{"a render error", func(s *scope) { s.renderErr = errors.New("bad patch"); s.applyErr = errors.New("x") },
			linstorv1.ReasonInvalidSpec, "bad patch"},
		{"an apply error", func(s *scope) { s.applyErr = errors.New("forbidden"); s.missingAccounts = []string{"a"} },
			linstorv1.ReasonReconciling, "Applying the controller workload failed: forbidden"},
		{"missing ServiceAccounts", func(s *scope) { s.missingAccounts = []string{"linstor-controller", "linstor-satellite"} },
			linstorv1.ReasonServiceAccountMissing, "ServiceAccounts linstor-controller, linstor-satellite do not exist in namespace linstor, so LINSTOR's pods cannot start; they are installed with the operator (the OLM bundle, or config/rbac with make deploy)"},
		{"satellites failed", func(s *scope) { s.satelliteErr = errors.New("conflict"); s.propertiesErr = errors.New("x") },
			linstorv1.ReasonReconciling, "Managing satellites failed: conflict"},
		{"controller properties failed", func(s *scope) { s.propertiesErr = errors.New("500"); s.passphraseErr = errors.New("x") },
			linstorv1.ReasonLinstorError, "Setting controller properties failed: 500"},
		{"the passphrase", func(s *scope) { s.passphraseErr = errors.New("Secret linstor/pass does not exist") },
			linstorv1.ReasonSecretMissing, "Master passphrase: Secret linstor/pass does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "linstor", Name: "linstor", Generation: 2}}
			s := newScope(c)
			tc.mutate(s)
			reason, message := s.problem()
			if reason != tc.reason || message != tc.message {
				t.Fatalf("problem() = %q, %q; want %q, %q", reason, message, tc.reason, tc.message)
			}
			setDegradedCondition(c, s)
			cond := meta.FindStatusCondition(c.Status.Conditions, linstorv1.ConditionDegraded)
			wantStatus, wantReason := metav1.ConditionTrue, tc.reason
			if tc.reason == "" {
				wantStatus, wantReason = metav1.ConditionFalse, linstorv1.ReasonAsExpected
			}
			if cond == nil || cond.Status != wantStatus || cond.Reason != wantReason || cond.Message != tc.message {
				t.Errorf("Degraded = %+v, want %s %s", cond, wantStatus, wantReason)
			}
		})
	}
}

// Applied says to how many nodes a configuration applies and what of it does not.
func TestAppliedCondition(t *testing.T) {
	for _, tc := range []struct {
		name     string
		nodes    int
		conflict string
		skipped  []string
		reason   string
		message  string
	}{
		{"applies", 3, "", nil, linstorv1.ReasonAsExpected, "Applies to 3 nodes"},
		{"overridden", 2, "LinstorSatelliteConfiguration b overrides spec.properties[x]", nil, linstorv1.ReasonOverridden,
			"Applies to 2 nodes, but LinstorSatelliteConfiguration b overrides spec.properties[x]"},
		{"properties skipped", 1, "", []string{"p: refused", "p: refused"}, linstorv1.ReasonPropertiesSkipped,
			"Applies to 1 nodes; expandFrom generated properties that are left out: p: refused"},
		{"overridden beats skipped, the message says both", 1, "b overrides x", []string{"d", "c", "b", "a"}, linstorv1.ReasonOverridden,
			"Applies to 1 nodes, but b overrides x; expandFrom generated properties that are left out: a; b; c; and 1 more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := appliedCondition(5, tc.nodes, tc.conflict, tc.skipped)
			if got.Type != linstorv1.ConditionApplied || got.Status != metav1.ConditionTrue || got.Reason != tc.reason || got.Message != tc.message || got.ObservedGeneration != 5 {
				t.Errorf("appliedCondition = %+v, want %s %q", got, tc.reason, tc.message)
			}
		})
	}
}
