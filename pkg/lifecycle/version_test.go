package lifecycle

// Which version runs and whether an upgrade starts (version.go).

import (
	"testing"
	"time"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// ---------------------------------------------------------------------------------
// Version: which version runs, and whether an upgrade starts.
// ---------------------------------------------------------------------------------

var versionCases = []stepCase{
	{
		name: "install on an empty cluster",
		in:   input(withReported(""), withDeployed(nil), obsDBEmpty(true)),
		want: expect{deployed: dv(fxTo, fxTo)},
	},
	{
		name: "no version on record, database not looked at yet: nothing deployed",
		in:   input(withReported(""), withDeployed(nil)),
		want: expect{deployed: nil, stop: "being looked at", requeue: soon},
	},
	{
		name: "DATA LOSS: a recreated cluster over a live database deploys nothing until spec.version says what runs it",
		in:   input(withReported(""), withDeployed(nil), obsDBEmpty(false)),
		want: expect{deployed: nil, stop: "spec.version is needed", problem: linstorv1.ReasonInvalidSpec,
			problemHas: []string{"set spec.version to the LINSTOR version that wrote it"}, requeue: Poll},
	},
	// Adopting a database another installation made (piraeus-operator v2, a lost
	// LinstorCluster): its LinstorVersion says which LINSTOR versions last ran it; the
	// newest of them runs it without migrating it.
	{
		name: "DATA LOSS: a live database of the 1.31 line is named, never deployed over",
		in:   input(withReported(""), withDeployed(nil), obsDBEmpty(false), obsDBSchema(28), withRelease("1.31.3", "1.33.3")),
		want: expect{deployed: nil, stop: "spec.version is needed", problem: linstorv1.ReasonInvalidSpec,
			problemHas: []string{"LINSTOR 1.31.0 to 1.31.3 last ran it (schema number 28): set spec.version to 1.31.3, which runs it without migrating it"}, requeue: Poll},
	},
	{
		name: "a live database of a line this release does not run: the migration on start is said",
		in:   input(withReported(""), withDeployed(nil), obsDBEmpty(false), obsDBSchema(25)),
		want: expect{deployed: nil, stop: "spec.version is needed", problem: linstorv1.ReasonInvalidSpec,
			problemHas: []string{"LINSTOR 1.30.2 to 1.30.3 last ran it (schema number 25); this release does not run 1.30.3", "migrates the database on start"}, requeue: Poll},
	},
	{
		name: "a live database newer than anything known",
		in:   input(withReported(""), withDeployed(nil), obsDBEmpty(false), obsDBSchema(35)),
		want: expect{deployed: nil, stop: "spec.version is needed", problem: linstorv1.ReasonInvalidSpec,
			problemHas: []string{"schema number 35 is not one of LINSTOR 1.29.0 to"}, requeue: Poll},
	},
	{
		name: "a recreated cluster over a live database with spec.version: Install at it",
		in:   input(withReported(""), withDeployed(nil), withRequested(fxFrom), obsDBEmpty(false)),
		want: expect{deployed: dv(fxFrom, fxFrom)},
	},
	{
		name: "install pinned to a runnable older version",
		in:   input(withReported(""), withDeployed(nil), withRequested(fxFrom)),
		want: expect{deployed: dv(fxFrom, fxFrom)},
	},
	{
		name: "stay at the wanted version",
		in:   input(),
		want: expect{deployed: dv(fxTo, fxTo)},
	},
	{
		name: "stay keeps the record of a succeeded upgrade",
		in:   input(withUpgrade(finished(linstorv1.UpgradeSucceeded, fxFrom, fxTo))),
		want: expect{upgrade: linstorv1.UpgradeSucceeded, deployed: dv(fxTo, fxTo), check: sameUpgrade},
	},
	{
		// status.version is the observer's last reading: Controller, Satellites and Verify
		// can pass before its next cycle, so it may still say the version upgraded from.
		name: "DATA LOSS: status.version lagging at the start of a succeeded upgrade starts no new one and deploys no old version",
		in:   input(withReported(fxFrom), withUpgrade(finished(linstorv1.UpgradeSucceeded, fxFrom, fxTo))),
		want: expect{upgrade: linstorv1.UpgradeSucceeded, deployed: dv(fxTo, fxTo), check: sameUpgrade},
	},
	{
		name: "DATA LOSS: the same with spec.version pinning the new version",
		in:   input(withReported(fxFrom), withRequested(fxTo), withUpgrade(finished(linstorv1.UpgradeSucceeded, fxFrom, fxTo))),
		want: expect{upgrade: linstorv1.UpgradeSucceeded, deployed: dv(fxTo, fxTo), check: sameUpgrade},
	},
	{
		name: "DATA LOSS: spec.version pinned back to the old version while status.version lags: refused, the old version is not deployed",
		in:   input(withReported(fxFrom), withRequested(fxFrom), withUpgrade(finished(linstorv1.UpgradeSucceeded, fxFrom, fxTo))),
		want: expect{upgrade: linstorv1.UpgradeRefused, deployed: dv(fxTo, fxTo), problem: linstorv1.ReasonUpgradeRefused,
			problemHas: []string{"cannot downgrade"}, check: all(upgradeFromTo(fxTo, fxFrom), phaseStartedAt(fxNow))},
	},
	// A refusal says since when (the Upgradeable=False alert and a reader of the status
	// want it), and keeps that start while the same refusal stands: a status rewritten
	// every pass would never settle.
	{
		name: "still refused the same downgrade: the refusal keeps its start",
		in: input(withRequested(fxFrom), withUpgrade(&linstorv1.UpgradeStatus{Phase: linstorv1.UpgradeRefused, From: fxTo, To: fxFrom,
			PhaseStartedAt: mt(fxNow.Add(-2 * time.Hour)), Message: "saved by the previous pass"})),
		want: expect{upgrade: linstorv1.UpgradeRefused, deployed: dv(fxTo, fxTo), problem: linstorv1.ReasonUpgradeRefused,
			problemHas: []string{"cannot downgrade"}, check: all(upgradeFromTo(fxTo, fxFrom), phaseStartedAt(fxNow.Add(-2*time.Hour)), passesAgainQuietly)},
	},
	{
		name: "refused another version: a new refusal starts now",
		in: input(withRequested("1.32.0"), withUpgrade(&linstorv1.UpgradeStatus{Phase: linstorv1.UpgradeRefused, From: fxTo, To: fxFrom,
			PhaseStartedAt: mt(fxNow.Add(-2 * time.Hour)), Message: "saved by the previous pass"})),
		want: expect{upgrade: linstorv1.UpgradeRefused, deployed: dv(fxTo, fxTo), problem: linstorv1.ReasonUpgradeRefused,
			problemHas: []string{"1.32.0 is not a version"}, check: phaseStartedAt(fxNow)},
	},
	{
		name: "pinning the running version settles a rolled-back upgrade",
		in: input(withReported(fxFrom), withDeployed(dv(fxFrom, fxFrom)), withRequested(fxFrom),
			withUpgrade(finished(linstorv1.UpgradeRolledBack, fxFrom, fxTo))),
		want: expect{deployed: dv(fxFrom, fxFrom)},
	},
	{
		name: "deployed but not answering yet: the deployed version is the running one",
		in:   input(withReported("")),
		want: expect{deployed: dv(fxTo, fxTo)},
	},
	{
		name: "manual policy awaits approval and changes nothing",
		in:   input(withReported(fxFrom), withDeployed(dv(fxFrom, fxFrom)), withManualPolicy()),
		want: expect{upgrade: linstorv1.UpgradeAwaitingApproval, deployed: dv(fxFrom, fxFrom),
			check: all(upgradeFromTo(fxFrom, fxTo), upgradeMsgHas("Manual", "spec.version to 1.33.3"), phaseStartedAt(fxNow), passesAgainQuietly)},
	},
	// The wait's start is exported as the phase-start metric, which the alert on an
	// upgrade awaiting approval without any backup reads; it stays while the same
	// upgrade waits, so the status is not rewritten pass after pass.
	{
		name: "still awaiting the same approval: the wait keeps its start",
		in: input(withReported(fxFrom), withDeployed(dv(fxFrom, fxFrom)), withManualPolicy(),
			withUpgrade(awaiting(fxFrom, fxTo, fxNow.Add(-3*time.Hour)))),
		want: expect{upgrade: linstorv1.UpgradeAwaitingApproval, deployed: dv(fxFrom, fxFrom),
			check: all(upgradeFromTo(fxFrom, fxTo), phaseStartedAt(fxNow.Add(-3*time.Hour)), passesAgainQuietly)},
	},
	{
		name: "awaiting approval saved without a start (an earlier operator release): the wait starts now",
		in: input(withReported(fxFrom), withDeployed(dv(fxFrom, fxFrom)), withManualPolicy(),
			withUpgrade(&linstorv1.UpgradeStatus{Phase: linstorv1.UpgradeAwaitingApproval, From: fxFrom, To: fxTo, Message: "saved by the previous pass"})),
		want: expect{upgrade: linstorv1.UpgradeAwaitingApproval, deployed: dv(fxFrom, fxFrom),
			check: all(upgradeFromTo(fxFrom, fxTo), phaseStartedAt(fxNow), passesAgainQuietly)},
	},
	{
		name: "awaiting approval of another target (a newer operator release): a new wait starts now",
		in: input(withReported(fxFrom), withDeployed(dv(fxFrom, fxFrom)), withManualPolicy(), withRelease(fxFrom, fxTo, "1.33.4"),
			withUpgrade(awaiting(fxFrom, fxTo, fxNow.Add(-3*time.Hour)))),
		want: expect{upgrade: linstorv1.UpgradeAwaitingApproval, deployed: dv(fxFrom, fxFrom),
			check: all(upgradeFromTo(fxFrom, "1.33.4"), phaseStartedAt(fxNow), passesAgainQuietly)},
	},
	{
		name: "manual policy approved by pinning spec.version starts the upgrade",
		in:   input(withReported(fxFrom), withDeployed(dv(fxFrom, fxFrom)), withManualPolicy(), withRequested(fxTo)),
		want: expect{upgrade: linstorv1.UpgradePreflight, deployed: dv(fxFrom, fxFrom), upgrading: true, requeue: soon,
			events: ev("UpgradeStarted"), check: startedNow},
	},
	{
		name: "downgrade refused",
		in:   input(withRequested(fxFrom)),
		want: expect{upgrade: linstorv1.UpgradeRefused, deployed: dv(fxTo, fxTo), problem: linstorv1.ReasonUpgradeRefused,
			problemHas: []string{"cannot downgrade"}, check: all(upgradeFromTo(fxTo, fxFrom), phaseStartedAt(fxNow), passesAgainQuietly)},
	},
	{
		name: "a version this release cannot run is refused",
		in:   input(withRequested("1.32.0")),
		want: expect{upgrade: linstorv1.UpgradeRefused, deployed: dv(fxTo, fxTo), problem: linstorv1.ReasonUpgradeRefused,
			problemHas: []string{"1.32.0 is not a version this operator release can run"}},
	},
	{
		name: "a version older than the oldest supported is refused",
		in:   input(withReported("1.20.3"), withDeployed(dv("1.20.3", "1.20.3"))),
		want: expect{upgrade: linstorv1.UpgradeRefused, deployed: dv("1.20.3", "1.20.3"), problem: linstorv1.ReasonUpgradeRefused,
			problemHas: []string{"older than 1.29.0"}},
	},
	{
		name: "an unreadable reported version is refused",
		in:   input(withReported("garbage")),
		want: expect{upgrade: linstorv1.UpgradeRefused, deployed: dv(fxTo, fxTo), problem: linstorv1.ReasonUpgradeRefused,
			problemHas: []string{"unreadable version"}},
	},
	{
		name: "upgrade starts",
		in:   input(withReported(fxFrom), withDeployed(dv(fxFrom, fxFrom))),
		want: expect{upgrade: linstorv1.UpgradePreflight, deployed: dv(fxFrom, fxFrom), upgrading: true, requeue: soon,
			events: ev("UpgradeStarted"), check: all(startedNow, upgradeMsgHas("Upgrading LINSTOR from 1.33.2 to 1.33.3"))},
	},
	{
		name: "upgrade starts from the deployed version while LINSTOR does not answer",
		in:   input(withReported(""), withDeployed(dv(fxFrom, fxFrom))),
		want: expect{upgrade: linstorv1.UpgradePreflight, deployed: dv(fxFrom, fxFrom), upgrading: true, requeue: soon,
			events: ev("UpgradeStarted"), check: startedNow},
	},
	{
		name: "upgrade starts even when status.deployed was lost",
		in:   input(withReported(fxFrom), withDeployed(nil)),
		want: expect{upgrade: linstorv1.UpgradePreflight, deployed: dv(fxFrom, fxFrom), upgrading: true, requeue: soon,
			events: ev("UpgradeStarted"), check: startedNow},
	},
	{
		name: "a rolled-back upgrade is not retried without the annotation",
		in: input(withReported(fxFrom), withDeployed(dv(fxFrom, fxFrom)),
			withUpgrade(finished(linstorv1.UpgradeRolledBack, fxFrom, fxTo))),
		want: expect{upgrade: linstorv1.UpgradeRolledBack, deployed: dv(fxFrom, fxFrom), problem: linstorv1.ReasonUpgradeFailed,
			problemHas: []string{"failed and was rolled back (saved)"}, check: sameUpgrade},
	},
	{
		name: "a retry annotation naming another version does not retry",
		in: input(withReported(fxFrom), withDeployed(dv(fxFrom, fxFrom)), withRetry("1.34.0"),
			withUpgrade(finished(linstorv1.UpgradeRolledBack, fxFrom, fxTo))),
		want: expect{upgrade: linstorv1.UpgradeRolledBack, deployed: dv(fxFrom, fxFrom), problem: linstorv1.ReasonUpgradeFailed,
			check: sameUpgrade},
	},
	{
		name: "a rolled-back upgrade is retried with the annotation, which the retry uses up",
		in: input(withReported(fxFrom), withDeployed(dv(fxFrom, fxFrom)), withRetry(fxTo),
			withUpgrade(finished(linstorv1.UpgradeRolledBack, fxFrom, fxTo))),
		want: expect{upgrade: linstorv1.UpgradePreflight, deployed: dv(fxFrom, fxFrom), upgrading: true, requeue: soon,
			actions: []Action{removeRetry}, events: ev("UpgradeStarted"), check: startedNow},
	},
	{
		name: "a rolled-back upgrade of another path does not hold back a new one",
		in: input(withReported(fxFrom), withDeployed(dv(fxFrom, fxFrom)),
			withUpgrade(finished(linstorv1.UpgradeRolledBack, "1.29.1", fxTo))),
		want: expect{upgrade: linstorv1.UpgradePreflight, deployed: dv(fxFrom, fxFrom), upgrading: true, requeue: soon,
			events: ev("UpgradeStarted"), check: startedNow},
	},
	{
		name: "external controller: satellites follow the reported version, the upgrade is dropped",
		in:   inPhase(linstorv1.UpgradeController, withExternalController(), withReported(fxFrom), obsLinstor(fxTo)),
		want: expect{deployed: &linstorv1.DeployedVersions{Satellites: fxFrom}},
	},
	{
		name: "external controller not answering yet: satellites at the release's version",
		in:   input(withExternalController(), withReported(""), withDeployed(nil)),
		want: expect{deployed: &linstorv1.DeployedVersions{Satellites: fxRelease.Target.String()}},
	},
	{
		// The release is an input, not a global: another release decides otherwise.
		name: "external controller not answering yet, another release: satellites at that release's version",
		in:   input(withExternalController(), withReported(""), withDeployed(nil), withRelease(fxTo, "1.34.0")),
		want: expect{deployed: &linstorv1.DeployedVersions{Satellites: "1.34.0"}},
	},
	{
		name: "another release targeting a newer version starts an upgrade to it",
		in:   input(withRelease(fxTo, "1.34.0")),
		want: expect{upgrade: linstorv1.UpgradePreflight, deployed: dv(fxTo, fxTo), upgrading: true, requeue: soon,
			events: ev("UpgradeStarted"), check: func(t *testing.T, _ Input, out Output) {
				if u := out.State.Upgrade; u.From != fxTo || u.To != "1.34.0" {
					t.Errorf("upgrade %s -> %s, want %s -> 1.34.0", u.From, u.To, fxTo)
				}
			}},
	},
}

func TestStepVersion(t *testing.T) { runStepCases(t, versionCases) }

func TestDatabaseVersion(t *testing.T) {
	cases := []struct {
		name string
		st   linstorv1.LinstorClusterStatus
		want string
	}{
		{"reported", linstorv1.LinstorClusterStatus{Version: fxFrom, Deployed: dv(fxFrom, fxFrom)}, fxFrom},
		{"a succeeded upgrade whose reading lags", linstorv1.LinstorClusterStatus{Version: fxFrom, Deployed: dv(fxTo, fxTo),
			Upgrade: finished(linstorv1.UpgradeSucceeded, fxFrom, fxTo)}, fxTo},
		{"Verify, the reading lags at From: the database is migrated", linstorv1.LinstorClusterStatus{Version: fxFrom, Deployed: dv(fxTo, fxTo),
			Upgrade: &linstorv1.UpgradeStatus{Phase: linstorv1.UpgradeVerify, From: fxFrom, To: fxTo}}, fxTo},
		{"just restored: status.version cleared, the backup's version deployed", linstorv1.LinstorClusterStatus{Deployed: dv(fxFrom, fxFrom)}, fxFrom},
		{"nothing known", linstorv1.LinstorClusterStatus{}, ""},
	}
	for _, tc := range cases {
		if got := DatabaseVersion(&tc.st); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestRunningVersion(t *testing.T) {
	succeeded := &linstorv1.UpgradeStatus{Phase: linstorv1.UpgradeSucceeded, From: "1.33.2", To: "1.33.3"}
	for _, tc := range []struct {
		name     string
		reported string
		upgrade  *linstorv1.UpgradeStatus
		want     string
	}{
		{"no upgrade", "1.33.2", nil, "1.33.2"},
		{"succeeded, reading lags", "1.33.2", succeeded, "1.33.3"},
		{"succeeded, reading caught up", "1.33.3", succeeded, "1.33.3"},
		{"in progress: what runs is what is reported", "1.33.2", &linstorv1.UpgradeStatus{Phase: linstorv1.UpgradeBackup, From: "1.33.2", To: "1.33.3"}, "1.33.2"},
		{"rolled back", "1.33.2", &linstorv1.UpgradeStatus{Phase: linstorv1.UpgradeRolledBack, From: "1.33.2", To: "1.33.3"}, "1.33.2"},
		{"nothing reported yet", "", succeeded, ""},
	} {
		if got := RunningVersion(tc.reported, tc.upgrade); got != tc.want {
			t.Errorf("%s: RunningVersion = %q, want %q", tc.name, got, tc.want)
		}
	}
}
