package lifecycle

// The upgrade phases, one table each (upgrade.go).

import (
	"testing"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// ---------------------------------------------------------------------------------
// Upgrade phases
// ---------------------------------------------------------------------------------

var preflightCases = []stepCase{
	{
		name: "not observed yet: no transition",
		in:   inPhase(linstorv1.UpgradePreflight, withDeployed(nil)),
		want: expect{upgrade: linstorv1.UpgradePreflight, deployed: dv(fxFrom, fxFrom), upgrading: true, requeue: soon,
			check: sameUpgrade},
	},
	{
		name: "LINSTOR unreachable waits",
		in:   inPhase(linstorv1.UpgradePreflight, obsUnreachable()),
		want: expect{upgrade: linstorv1.UpgradePreflight, deployed: dv(fxFrom, fxFrom), upgrading: true, requeue: Poll,
			check: upgradeMsgHas("not reachable", "connection refused")},
	},
	{
		name: "LINSTOR at the wrong version waits",
		in:   inPhase(linstorv1.UpgradePreflight, obsLinstor("1.33.1")),
		want: expect{upgrade: linstorv1.UpgradePreflight, deployed: dv(fxFrom, fxFrom), upgrading: true, requeue: Poll,
			check: upgradeMsgHas("reports 1.33.1, expected 1.33.2")},
	},
	{
		name: "problems wait",
		in:   inPhase(linstorv1.UpgradePreflight, obsLinstor(fxFrom, "node-b is OFFLINE", "pvc-1 on node-c is Outdated")),
		want: expect{upgrade: linstorv1.UpgradePreflight, deployed: dv(fxFrom, fxFrom), upgrading: true, requeue: Poll,
			check: upgradeMsgHas("node-b is OFFLINE", "pvc-1 on node-c is Outdated")},
	},
	{
		name: "problems past the timeout still wait: nothing changed yet",
		in:   inPhase(linstorv1.UpgradePreflight, obsLinstor(fxFrom, "node-b is OFFLINE"), withTimeout(time.Minute)),
		want: expect{upgrade: linstorv1.UpgradePreflight, deployed: dv(fxFrom, fxFrom), upgrading: true, requeue: Poll},
	},
	{
		name: "external database not acknowledged waits",
		in:   inPhase(linstorv1.UpgradePreflight, obsLinstor(fxFrom), withExternalDB(false)),
		want: expect{upgrade: linstorv1.UpgradePreflight, deployed: dv(fxFrom, fxFrom), upgrading: true, requeue: Poll,
			check: upgradeMsgHas("externalBackupAcknowledged")},
	},
	{
		name: "passes: Backup",
		in:   inPhase(linstorv1.UpgradePreflight, obsLinstor(fxFrom)),
		want: expect{upgrade: linstorv1.UpgradeBackup, deployed: dv(fxFrom, fxFrom), upgrading: true, requeue: soon,
			events: ev("UpgradeBackup"), check: upgradeBackupIs("")},
	},
	{
		name: "external database acknowledged passes: Backup",
		in:   inPhase(linstorv1.UpgradePreflight, obsLinstor(fxFrom), withExternalDB(true)),
		want: expect{upgrade: linstorv1.UpgradeBackup, deployed: dv(fxFrom, fxFrom), upgrading: true, requeue: soon,
			events: ev("UpgradeBackup")},
	},
	// Nothing has changed before Backup: the upgrade follows the spec, and a decision
	// that no longer upgrades to its target cancels it.
	{
		name: "spec.version pinned back to the running version: cancelled, nothing changed",
		in:   inPhase(linstorv1.UpgradePreflight, withRequested(fxFrom), obsLinstor(fxFrom, "satellite node-b is OFFLINE")),
		want: expect{deployed: dv(fxFrom, fxFrom), events: ev("UpgradeCancelled"),
			check: eventHas("UpgradeCancelled", "1.33.2 -> 1.33.3", "before anything changed", "spec.version")},
	},
	{
		name: "pinned back before LINSTOR was looked at: cancelled all the same",
		in:   inPhase(linstorv1.UpgradePreflight, withRequested(fxFrom)),
		want: expect{deployed: dv(fxFrom, fxFrom), events: ev("UpgradeCancelled")},
	},
	{
		name: "approval withdrawn (Manual policy, spec.version cleared): AwaitingApproval again",
		in:   inPhase(linstorv1.UpgradePreflight, withManualPolicy(), obsLinstor(fxFrom, "satellite node-b is OFFLINE")),
		want: expect{upgrade: linstorv1.UpgradeAwaitingApproval, deployed: dv(fxFrom, fxFrom), events: ev("UpgradeCancelled"),
			check: all(upgradeFromTo(fxFrom, fxTo), upgradeMsgHas("Manual"), phaseStartedAt(fxNow))},
	},
	{
		name: "spec.version names a version this release cannot run: cancelled, Refused",
		in:   inPhase(linstorv1.UpgradePreflight, withRequested("1.32.0"), obsLinstor(fxFrom)),
		want: expect{upgrade: linstorv1.UpgradeRefused, deployed: dv(fxFrom, fxFrom), events: ev("UpgradeCancelled"),
			problem: linstorv1.ReasonUpgradeRefused, problemHas: []string{"1.32.0 is not a version this operator release can run"}},
	},
	{
		name: "a newer operator release that no longer runs the target: cancelled, a new Preflight to its own",
		in:   inPhase(linstorv1.UpgradePreflight, withRelease(fxFrom, "1.33.4"), obsLinstor(fxFrom, "satellite node-b is OFFLINE")),
		want: expect{upgrade: linstorv1.UpgradePreflight, deployed: dv(fxFrom, fxFrom), upgrading: true, requeue: soon,
			events: ev("UpgradeCancelled", "UpgradeStarted"), check: all(upgradeFromTo(fxFrom, "1.33.4"), eventHas("UpgradeCancelled", "1.33.4"))},
	},
	{
		name: "a newer operator release with the same target: Preflight goes on",
		in:   inPhase(linstorv1.UpgradePreflight, withRelease("1.33.1", fxFrom, fxTo), obsLinstor(fxFrom, "satellite node-b is OFFLINE")),
		want: expect{upgrade: linstorv1.UpgradePreflight, deployed: dv(fxFrom, fxFrom), upgrading: true, requeue: Poll,
			check: upgradeMsgHas("node-b is OFFLINE")},
	},
	{
		name: "Manual policy, approved (spec.version is the target): Preflight goes on",
		in:   inPhase(linstorv1.UpgradePreflight, withManualPolicy(), withRequested(fxTo), obsLinstor(fxFrom, "satellite node-b is OFFLINE")),
		want: expect{upgrade: linstorv1.UpgradePreflight, deployed: dv(fxFrom, fxFrom), upgrading: true, requeue: Poll},
	},
}

func TestPhasePreflight(t *testing.T) { runStepCases(t, preflightCases) }

var backupCases = []stepCase{
	{
		name: "not observed yet, no name yet: CreateBackup with the derived name, controller stopped, CSI fenced",
		in:   inPhase(linstorv1.UpgradeBackup),
		want: expect{upgrade: linstorv1.UpgradeBackup, deployed: dv(fxFrom, fxFrom), stop: fxPreBackup, fence: true, upgrading: true,
			requeue: Poll, actions: []Action{createBackup},
			check: all(upgradeBackupIs(fxPreBackup), func(t *testing.T, in Input, out Output) {
				if got := BackupName(fxCluster, in.State.Upgrade); got != fxPreBackup {
					t.Errorf("BackupName = %q, want %q", got, fxPreBackup)
				}
			})},
	},
	{
		name: "no backup yet: CreateBackup again (idempotent)",
		in:   inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), obsUpgradeBackupMissing()),
		want: expect{upgrade: linstorv1.UpgradeBackup, deployed: dv(fxFrom, fxFrom), stop: fxPreBackup, fence: true, upgrading: true,
			requeue: Poll, actions: []Action{createBackup}},
	},
	{
		name: "backup running waits, controller stopped, CSI fenced",
		in:   inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), obsUpgradeBackup(linstorv1.BackupRunning, "dumping 1234 objects")),
		want: expect{upgrade: linstorv1.UpgradeBackup, deployed: dv(fxFrom, fxFrom), stop: fxPreBackup, fence: true, upgrading: true,
			requeue: Poll, check: upgradeMsgHas("dumping 1234 objects")},
	},
	{
		name: "backup pending just before the timeout waits",
		in: inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), obsUpgradeBackup(linstorv1.BackupPending, "waiting for the controller to stop"),
			withTimeout(5*time.Minute), withPhaseAge(5*time.Minute)),
		want: expect{upgrade: linstorv1.UpgradeBackup, deployed: dv(fxFrom, fxFrom), stop: fxPreBackup, fence: true, upgrading: true,
			requeue: Poll},
	},
	{
		name: "LINSTOR unreachable does not matter while the backup is taken",
		in:   inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), obsUpgradeBackup(linstorv1.BackupRunning, "dumping"), obsUnreachable()),
		want: expect{upgrade: linstorv1.UpgradeBackup, deployed: dv(fxFrom, fxFrom), stop: fxPreBackup, fence: true, upgrading: true,
			requeue: Poll},
	},
	{
		name: "completed: Controller",
		in:   inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), withoutRehearsal(), obsUpgradeBackup(linstorv1.BackupCompleted, "done")),
		want: expect{upgrade: linstorv1.UpgradeController, deployed: dv(fxTo, fxFrom), fence: true, upgrading: true, requeue: soon,
			events: ev("UpgradeController"), check: all(upgradeBackupIs(fxPreBackup), upgradeMsgHas("sha256:0123abcd"))},
	},
	{
		name: "completed past the timeout still moves on: Controller",
		in:   inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), withoutRehearsal(), obsUpgradeBackup(linstorv1.BackupCompleted, "done"), late()),
		want: expect{upgrade: linstorv1.UpgradeController, deployed: dv(fxTo, fxFrom), fence: true, upgrading: true, requeue: soon,
			events: ev("UpgradeController")},
	},
	{
		name: "failed: RolledBack with nothing changed, Deployed at From",
		in:   inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), obsUpgradeBackup(linstorv1.BackupFailed, "disk full")),
		want: expect{upgrade: linstorv1.UpgradeRolledBack, deployed: dv(fxFrom, fxFrom), requeue: soon,
			problem: linstorv1.ReasonUpgradeFailed, problemHas: []string{"disk full", "nothing was changed", "stays at 1.33.2"},
			events: ev("UpgradeAborted")},
	},
	{
		name: "timeout: RolledBack with nothing changed; the copy still runs, so LINSTOR stays stopped for it",
		in:   inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), obsUpgradeBackup(linstorv1.BackupRunning, "dumping"), late()),
		want: expect{upgrade: linstorv1.UpgradeRolledBack, deployed: dv(fxFrom, fxFrom), stop: "LinstorBackup " + fxPreBackup + " is being taken", requeue: soon,
			problem: linstorv1.ReasonUpgradeFailed, problemHas: []string{"did not complete within 5m0s", "nothing was changed"},
			events: ev("UpgradeAborted")},
	},
	{
		name: "timeout with the default phase timeout",
		in: inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), obsUpgradeBackup(linstorv1.BackupRunning, "dumping"),
			withPhaseAge(DefaultPhaseTimeout+time.Minute)),
		want: expect{upgrade: linstorv1.UpgradeRolledBack, deployed: dv(fxFrom, fxFrom), stop: fxPreBackup, requeue: soon,
			problem: linstorv1.ReasonUpgradeFailed, problemHas: []string{"within 10m0s"}, events: ev("UpgradeAborted")},
	},
	{
		name: "external database: Controller with no backup",
		in:   inPhase(linstorv1.UpgradeBackup, withExternalDB(true)),
		want: expect{upgrade: linstorv1.UpgradeController, deployed: dv(fxTo, fxFrom), fence: true, upgrading: true, requeue: soon,
			events: ev("UpgradeController"), check: upgradeBackupIs("")},
	},
	{
		name: "entering Controller deploys the new controller, not the old one once more",
		in:   inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), withoutRehearsal(), obsUpgradeBackup(linstorv1.BackupCompleted, "done")),
		want: expect{upgrade: linstorv1.UpgradeController, deployed: dv(fxTo, fxFrom), fence: true, upgrading: true, requeue: soon,
			events: ev("UpgradeController")},
	},
	// A cancel during Backup completes only once the upgrade's own backup is observed
	// finished: until then the controller stays stopped and CSI fenced, as in Backup,
	// whatever else is observed, so the copy is never torn by a restarted controller.
	{
		name: "spec.version pinned back while the backup is taken: the cancel waits for it, LINSTOR stays stopped, CSI fenced",
		in: inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), withRequested(fxFrom), obsUpgradeBackup(linstorv1.BackupRunning, "dumping"),
			obsActiveBackup(fxPreBackup)),
		want: expect{upgrade: linstorv1.UpgradeBackup, deployed: dv(fxFrom, fxFrom), stop: fxPreBackup, fence: true, upgrading: true,
			requeue: Poll, events: ev("UpgradeCancelling"),
			check: all(upgradeMsgHas("Cancelling", "spec.version pins 1.33.2", fxPreBackup, "still being taken"),
				eventHas("UpgradeCancelling", "1.33.2 -> 1.33.3", fxPreBackup), passesAgainQuietly)},
	},
	{
		name: "pinned back while the backup runs, not (yet) seen as an active backup: the cancel waits, LINSTOR stays stopped, CSI fenced",
		in:   inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), withRequested(fxFrom), obsUpgradeBackup(linstorv1.BackupRunning, "dumping")),
		want: expect{upgrade: linstorv1.UpgradeBackup, deployed: dv(fxFrom, fxFrom), stop: fxPreBackup, fence: true, upgrading: true,
			requeue: Poll, events: ev("UpgradeCancelling"), check: upgradeMsgHas("Cancelling")},
	},
	{
		name: "pinned back while the backup waits for the controller to stop: the cancel waits",
		in: inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), withRequested(fxFrom),
			obsUpgradeBackup(linstorv1.BackupPending, "waiting for the controller to stop")),
		want: expect{upgrade: linstorv1.UpgradeBackup, deployed: dv(fxFrom, fxFrom), stop: fxPreBackup, fence: true, upgrading: true,
			requeue: Poll, events: ev("UpgradeCancelling")},
	},
	{
		name: "pinned back, the named backup not seen yet: the cancel waits, no backup is created",
		in:   inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), withRequested(fxFrom), obsUpgradeBackupMissing()),
		want: expect{upgrade: linstorv1.UpgradeBackup, deployed: dv(fxFrom, fxFrom), stop: fxPreBackup, fence: true, upgrading: true,
			requeue: Poll, events: ev("UpgradeCancelling"), check: upgradeMsgHas("Cancelling", "does not exist")},
	},
	{
		name: "pinned back, the named backup not looked at: the cancel waits",
		in:   inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), withRequested(fxFrom)),
		want: expect{upgrade: linstorv1.UpgradeBackup, deployed: dv(fxFrom, fxFrom), stop: fxPreBackup, fence: true, upgrading: true,
			requeue: soon, events: ev("UpgradeCancelling")},
	},
	{
		name: "pinned back, the named backup still missing at the phase timeout: cancelled (nothing copies)",
		in:   inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), withRequested(fxFrom), obsUpgradeBackupMissing(), late()),
		want: expect{deployed: dv(fxFrom, fxFrom), events: ev("UpgradeCancelled"), check: eventHas("UpgradeCancelled", "before anything changed")},
	},
	{
		name: "pinned back, the backup still runs past the phase timeout: the cancel waits (the backup ends at its own deadline)",
		in:   inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), withRequested(fxFrom), obsUpgradeBackup(linstorv1.BackupRunning, "dumping"), late()),
		want: expect{upgrade: linstorv1.UpgradeBackup, deployed: dv(fxFrom, fxFrom), stop: fxPreBackup, fence: true, upgrading: true,
			requeue: Poll, events: ev("UpgradeCancelling")},
	},
	{
		name: "pinned back, the backup failed: cancelled, the controller is not moved",
		in: inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), withRequested(fxFrom),
			obsUpgradeBackup(linstorv1.BackupFailed, "disk full")),
		want: expect{deployed: dv(fxFrom, fxFrom), events: ev("UpgradeCancelled")},
	},
	{
		name: "pinned back before the backup was named (never asked for): cancelled at once",
		in:   inPhase(linstorv1.UpgradeBackup, withRequested(fxFrom), obsUpgradeBackupMissing()),
		want: expect{deployed: dv(fxFrom, fxFrom), events: ev("UpgradeCancelled")},
	},
	{
		name: "approval withdrawn while the backup runs: the cancel waits too",
		in: inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), withManualPolicy(),
			obsUpgradeBackup(linstorv1.BackupRunning, "dumping")),
		want: expect{upgrade: linstorv1.UpgradeBackup, deployed: dv(fxFrom, fxFrom), stop: fxPreBackup, fence: true, upgrading: true,
			requeue: Poll, events: ev("UpgradeCancelling"), check: upgradeMsgHas("Manual")},
	},
	{
		name: "the spec asks for the upgrade again while the cancel waits: the Backup goes on",
		in: inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), obsUpgradeBackup(linstorv1.BackupRunning, "dumping"),
			func(in *Input) { in.State.Upgrade.Message = "Cancelling the upgrade 1.33.2 -> 1.33.3: ..." }),
		want: expect{upgrade: linstorv1.UpgradeBackup, deployed: dv(fxFrom, fxFrom), stop: fxPreBackup, fence: true, upgrading: true,
			requeue: Poll, check: upgradeMsgHas("Backup: dumping")},
	},
	{
		name: "spec.version pinned back once the backup completed: cancelled, the controller is not moved",
		in: inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), withRequested(fxFrom),
			obsUpgradeBackup(linstorv1.BackupCompleted, "done")),
		want: expect{deployed: dv(fxFrom, fxFrom), events: ev("UpgradeCancelled")},
	},
	{
		name: "a backup that never appears ends the upgrade at the timeout",
		in:   inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), obsUpgradeBackupMissing(), late()),
		want: expect{upgrade: linstorv1.UpgradeRolledBack, deployed: dv(fxFrom, fxFrom), requeue: soon,
			problem: linstorv1.ReasonUpgradeFailed, problemHas: []string{"nothing was changed"}, events: ev("UpgradeAborted")},
	},
}

func TestPhaseBackup(t *testing.T) { runStepCases(t, backupCases) }

var controllerCases = []stepCase{
	{
		name: "the new version answers: Satellites (which move in the same pass)",
		in:   inPhase(linstorv1.UpgradeController, obsLinstor(fxTo)),
		want: expect{upgrade: linstorv1.UpgradeSatellites, deployed: dv(fxTo, fxTo), fence: true, upgrading: true, requeue: soon,
			events: ev("UpgradeSatellites")},
	},
	{
		name: "the new version answers past the timeout: Satellites",
		in:   inPhase(linstorv1.UpgradeController, obsLinstor(fxTo), late()),
		want: expect{upgrade: linstorv1.UpgradeSatellites, deployed: dv(fxTo, fxTo), fence: true, upgrading: true, requeue: soon,
			events: ev("UpgradeSatellites")},
	},
	{
		name: "not observed yet: no transition",
		in:   inPhase(linstorv1.UpgradeController),
		want: expect{upgrade: linstorv1.UpgradeController, deployed: dv(fxTo, fxFrom), fence: true, upgrading: true, requeue: soon,
			check: sameUpgrade},
	},
	{
		name: "the old version still answers: waits",
		in:   inPhase(linstorv1.UpgradeController, obsLinstor(fxFrom)),
		want: expect{upgrade: linstorv1.UpgradeController, deployed: dv(fxTo, fxFrom), fence: true, upgrading: true, requeue: Poll,
			check: upgradeMsgHas("it reports 1.33.2")},
	},
	{
		name: "LINSTOR unreachable: waits",
		in:   inPhase(linstorv1.UpgradeController, obsUnreachable()),
		want: expect{upgrade: linstorv1.UpgradeController, deployed: dv(fxTo, fxFrom), fence: true, upgrading: true, requeue: Poll,
			check: upgradeMsgHas("connection refused")},
	},
	{
		name: "timeout: RollingBack, controller stopped, Deployed back to From",
		in:   inPhase(linstorv1.UpgradeController, obsLinstor(fxFrom), late()),
		want: expect{upgrade: linstorv1.UpgradeRollingBack, deployed: dv(fxFrom, fxFrom), stop: fxPreBackup, fence: true, upgrading: true,
			requeue: soon, events: ev("UpgradeFailed", "UpgradeRollingBack"),
			check: upgradeMsgHas("Rolling back: the controller did not come up at 1.33.3 within 5m0s")},
	},
	{
		name: "unreachable past the timeout: RollingBack",
		in:   inPhase(linstorv1.UpgradeController, obsUnreachable(), late()),
		want: expect{upgrade: linstorv1.UpgradeRollingBack, deployed: dv(fxFrom, fxFrom), stop: fxPreBackup, fence: true, upgrading: true,
			requeue: soon, events: ev("UpgradeFailed", "UpgradeRollingBack")},
	},
	{
		name: "timeout with the default phase timeout: RollingBack",
		in:   inPhase(linstorv1.UpgradeController, obsUnreachable(), withPhaseAge(DefaultPhaseTimeout+time.Second)),
		want: expect{upgrade: linstorv1.UpgradeRollingBack, deployed: dv(fxFrom, fxFrom), stop: fxPreBackup, fence: true, upgrading: true,
			requeue: soon, events: ev("UpgradeFailed", "UpgradeRollingBack"), check: upgradeMsgHas("within 10m0s")},
	},
	{
		// LINSTOR does not refuse a database a newer version migrated (SQL DbMigrater
		// skips unknown applied migrations; DbK8sCrd.migrate runs nothing for a newer
		// database): the old version must not start before the admin restored it.
		name: "external database, timeout: RollingBack, LINSTOR stays stopped until the admin confirms the restore",
		in:   inPhase(linstorv1.UpgradeController, withBackupName(""), withExternalDB(true), obsUnreachable(), late()),
		want: expect{upgrade: linstorv1.UpgradeRollingBack, deployed: dv(fxFrom, fxFrom), stop: names.AnnotationConfirmDatabaseRestored, fence: true,
			upgrading: true, requeue: soon, problem: linstorv1.ReasonRollbackNeedsConfirmation,
			problemHas: []string{"database is external", "stays stopped", names.AnnotationConfirmDatabaseRestored + "=" + fxPreBackup},
			events:     ev("UpgradeFailed", "UpgradeRollingBack")},
	},
	{
		name: "spec.version pinned back once the new controller is deployed: the upgrade goes on, the status says how to go back",
		in:   inPhase(linstorv1.UpgradeController, withRequested(fxFrom), obsLinstor(fxFrom)),
		want: expect{upgrade: linstorv1.UpgradeController, deployed: dv(fxTo, fxFrom), fence: true, upgrading: true, requeue: Poll,
			problem: linstorv1.ReasonUpgradeRefused, problemHas: []string{"spec.version 1.33.2", "phase Controller", "rolls back on its own",
				"spec.database.restoreFrom: " + fxPreBackup}},
	},
	{
		name: "pinned back, the new version answers: Satellites all the same",
		in:   inPhase(linstorv1.UpgradeController, withRequested(fxFrom), obsLinstor(fxTo)),
		want: expect{upgrade: linstorv1.UpgradeSatellites, deployed: dv(fxTo, fxTo), fence: true, upgrading: true, requeue: soon,
			events: ev("UpgradeSatellites"), problem: linstorv1.ReasonUpgradeRefused},
	},
	{
		name: "pinned back, timeout: the rollback's own problem is reported",
		in:   inPhase(linstorv1.UpgradeController, withRequested(fxFrom), obsLinstor(fxFrom), late()),
		want: expect{upgrade: linstorv1.UpgradeRollingBack, deployed: dv(fxFrom, fxFrom), stop: fxPreBackup, fence: true, upgrading: true,
			requeue: soon, events: ev("UpgradeFailed", "UpgradeRollingBack")},
	},
}

func TestPhaseController(t *testing.T) { runStepCases(t, controllerCases) }

var satellitesCases = []stepCase{
	{
		name: "all ONLINE: Verify (CSI no longer fenced: no rollback from here)",
		in:   inPhase(linstorv1.UpgradeSatellites, obsWaiting(fxTo)),
		want: expect{upgrade: linstorv1.UpgradeVerify, deployed: dv(fxTo, fxTo), fence: false, upgrading: true, requeue: soon,
			events: ev("UpgradeVerify")},
	},
	{
		name: "not observed yet: no transition",
		in:   inPhase(linstorv1.UpgradeSatellites),
		want: expect{upgrade: linstorv1.UpgradeSatellites, deployed: dv(fxTo, fxTo), fence: true, upgrading: true, requeue: soon,
			check: sameUpgrade},
	},
	{
		name: "waiting for satellites",
		in:   inPhase(linstorv1.UpgradeSatellites, obsWaiting(fxTo, "node-b OFFLINE", "node-c CONNECTED")),
		want: expect{upgrade: linstorv1.UpgradeSatellites, deployed: dv(fxTo, fxTo), fence: true, upgrading: true, requeue: Poll,
			check: upgradeMsgHas("node-b OFFLINE", "node-c CONNECTED")},
	},
	{
		name: "LINSTOR unreachable: waits",
		in:   inPhase(linstorv1.UpgradeSatellites, obsUnreachable()),
		want: expect{upgrade: linstorv1.UpgradeSatellites, deployed: dv(fxTo, fxTo), fence: true, upgrading: true, requeue: Poll,
			check: upgradeMsgHas("connection refused")},
	},
	{
		name: "unreachable counts against the phase's time: RollingBack",
		in:   inPhase(linstorv1.UpgradeSatellites, obsUnreachable(), late()),
		want: expect{upgrade: linstorv1.UpgradeRollingBack, deployed: dv(fxFrom, fxFrom), stop: fxPreBackup, fence: true, upgrading: true,
			requeue: soon, events: ev("UpgradeFailed", "UpgradeRollingBack"), check: upgradeMsgHas("satellites did not come up")},
	},
	{
		name: "timeout: RollingBack",
		in:   inPhase(linstorv1.UpgradeSatellites, obsWaiting(fxTo, "node-b OFFLINE"), late()),
		want: expect{upgrade: linstorv1.UpgradeRollingBack, deployed: dv(fxFrom, fxFrom), stop: fxPreBackup, fence: true, upgrading: true,
			requeue: soon, events: ev("UpgradeFailed", "UpgradeRollingBack"), check: upgradeMsgHas("node-b OFFLINE")},
	},
	{
		name: "external database, timeout: the old version is deployed again, stopped until the admin confirms the restore",
		in:   inPhase(linstorv1.UpgradeSatellites, withBackupName(""), withExternalDB(true), obsWaiting(fxTo, "node-b OFFLINE"), late()),
		want: expect{upgrade: linstorv1.UpgradeRollingBack, deployed: dv(fxFrom, fxFrom), stop: names.AnnotationConfirmDatabaseRestored, fence: true,
			upgrading: true, requeue: soon, problem: linstorv1.ReasonRollbackNeedsConfirmation, problemHas: []string{"node-b OFFLINE"},
			events: ev("UpgradeFailed", "UpgradeRollingBack")},
	},
	{
		name: "spec.version pinned back while the satellites move: the upgrade goes on, the status says how to go back",
		in:   inPhase(linstorv1.UpgradeSatellites, withRequested(fxFrom), obsWaiting(fxTo, "node-b OFFLINE")),
		want: expect{upgrade: linstorv1.UpgradeSatellites, deployed: dv(fxTo, fxTo), fence: true, upgrading: true, requeue: Poll,
			problem: linstorv1.ReasonUpgradeRefused, problemHas: []string{"phase Satellites", fxPreBackup}},
	},
}

func TestPhaseSatellites(t *testing.T) { runStepCases(t, satellitesCases) }

var verifyCases = []stepCase{
	{
		name: "not observed yet: no transition",
		in:   inPhase(linstorv1.UpgradeVerify),
		want: expect{upgrade: linstorv1.UpgradeVerify, deployed: dv(fxTo, fxTo), upgrading: true, requeue: soon, check: sameUpgrade},
	},
	{
		name: "problems wait",
		in:   inPhase(linstorv1.UpgradeVerify, obsLinstor(fxTo, "pvc-1 on node-b is Inconsistent")),
		want: expect{upgrade: linstorv1.UpgradeVerify, deployed: dv(fxTo, fxTo), upgrading: true, requeue: Poll,
			check: upgradeMsgHas("pvc-1 on node-b is Inconsistent")},
	},
	{
		name: "problems past the timeout: no rollback, Degraded UpgradeStalled naming them and the lost-node path, told once",
		in: inPhase(linstorv1.UpgradeVerify, obsLinstor(fxTo, "pvc-1 on node-b is Inconsistent"), withTimeout(time.Minute),
			withPhaseAge(2*time.Hour)),
		want: expect{upgrade: linstorv1.UpgradeVerify, deployed: dv(fxTo, fxTo), upgrading: true, requeue: Poll,
			problem: linstorv1.ReasonUpgradeStalled, problemHas: []string{"pvc-1 on node-b is Inconsistent", "cannot roll back", names.AnnotationAcknowledgeLostNodes + "=<node>"},
			events: ev("UpgradeStalled"), check: passesAgainQuietly},
	},
	{
		name: "problems within the timeout: waits, no problem",
		in: inPhase(linstorv1.UpgradeVerify, obsLinstor(fxTo, "pvc-1 on node-b is Inconsistent"), withTimeout(time.Hour),
			withPhaseAge(2*time.Minute)),
		want: expect{upgrade: linstorv1.UpgradeVerify, deployed: dv(fxTo, fxTo), upgrading: true, requeue: Poll},
	},
	{
		name: "LINSTOR unreachable past the timeout: no rollback, UpgradeStalled",
		in:   inPhase(linstorv1.UpgradeVerify, obsUnreachable(), withTimeout(time.Minute), withPhaseAge(2*time.Hour)),
		want: expect{upgrade: linstorv1.UpgradeVerify, deployed: dv(fxTo, fxTo), upgrading: true, requeue: Poll,
			problem: linstorv1.ReasonUpgradeStalled, events: ev("UpgradeStalled"), check: upgradeMsgHas("connection refused")},
	},
	{
		name: "healthy: Succeeded, not upgrading, CSI unfenced",
		in:   inPhase(linstorv1.UpgradeVerify, obsLinstor(fxTo)),
		want: expect{upgrade: linstorv1.UpgradeSucceeded, deployed: dv(fxTo, fxTo), requeue: soon, events: ev("UpgradeSucceeded"),
			check: upgradeMsgHas("from 1.33.2 to 1.33.3 in 5m0s", fxPreBackup)},
	},
	{
		name: "healthy with an external database: Succeeded",
		in:   inPhase(linstorv1.UpgradeVerify, withBackupName(""), withExternalDB(true), obsLinstor(fxTo)),
		want: expect{upgrade: linstorv1.UpgradeSucceeded, deployed: dv(fxTo, fxTo), requeue: soon, events: ev("UpgradeSucceeded"),
			check: upgradeMsgHas("(external)")},
	},
	{
		name: "spec.version pinned back during Verify: the upgrade goes on, the status says how to go back",
		in:   inPhase(linstorv1.UpgradeVerify, withRequested(fxFrom), obsLinstor(fxTo, "pvc-1 on node-b is Inconsistent")),
		want: expect{upgrade: linstorv1.UpgradeVerify, deployed: dv(fxTo, fxTo), upgrading: true, requeue: Poll,
			problem: linstorv1.ReasonUpgradeRefused, problemHas: []string{"phase Verify", fxPreBackup}},
	},
	{
		name: "pinned back, healthy: Succeeded (the next pass refuses the downgrade)",
		in:   inPhase(linstorv1.UpgradeVerify, withRequested(fxFrom), obsLinstor(fxTo)),
		want: expect{upgrade: linstorv1.UpgradeSucceeded, deployed: dv(fxTo, fxTo), requeue: soon, events: ev("UpgradeSucceeded")},
	},
}

func TestPhaseVerify(t *testing.T) { runStepCases(t, verifyCases) }

var rollingBackCases = []stepCase{
	{
		name: "external database rolling back, the admin confirms with the upgrade's identity: RolledBack, From starts, annotation used up",
		in: inPhase(linstorv1.UpgradeRollingBack, withBackupName(""), withExternalDB(true), obsStopped(),
			func(in *Input) { in.Spec.ConfirmDatabaseRestored = fxPreBackup }),
		want: expect{upgrade: linstorv1.UpgradeRolledBack, deployed: dv(fxFrom, fxFrom), stale: true, requeue: soon,
			problem: linstorv1.ReasonUpgradeFailed, problemHas: []string{"restored by the admin", names.AnnotationRetryUpgrade + "=" + fxTo},
			actions: []Action{{Kind: RemoveAnnotation, Annotation: names.AnnotationConfirmDatabaseRestored}}, events: ev("UpgradeRolledBack")},
	},
	{
		name: "external database rolling back, a confirmation naming another upgrade: stays stopped",
		in: inPhase(linstorv1.UpgradeRollingBack, withBackupName(""), withExternalDB(true), obsStopped(),
			func(in *Input) { in.Spec.ConfirmDatabaseRestored = "linstor-before-1-33-3-1" }),
		want: expect{upgrade: linstorv1.UpgradeRollingBack, deployed: dv(fxFrom, fxFrom), stop: names.AnnotationConfirmDatabaseRestored, fence: true,
			upgrading: true, problem: linstorv1.ReasonRollbackNeedsConfirmation},
	},
	{
		name: "backup not observed yet: no transition",
		in:   inPhase(linstorv1.UpgradeRollingBack, obsStopped()),
		want: expect{upgrade: linstorv1.UpgradeRollingBack, deployed: dv(fxFrom, fxFrom), stop: fxPreBackup, fence: true, upgrading: true,
			requeue: soon, check: sameUpgrade},
	},
	{
		name: "controller still running: waits",
		in:   inPhase(linstorv1.UpgradeRollingBack, obsUpgradeBackup(linstorv1.BackupCompleted, "done")),
		want: expect{upgrade: linstorv1.UpgradeRollingBack, deployed: dv(fxFrom, fxFrom), stop: fxPreBackup, fence: true, upgrading: true,
			requeue: Poll, check: sameUpgrade},
	},
	{
		name: "no timeout: still waits for the controller hours later",
		in: inPhase(linstorv1.UpgradeRollingBack, obsUpgradeBackup(linstorv1.BackupCompleted, "done"), withTimeout(time.Minute),
			withPhaseAge(3*time.Hour)),
		want: expect{upgrade: linstorv1.UpgradeRollingBack, deployed: dv(fxFrom, fxFrom), stop: fxPreBackup, fence: true, upgrading: true,
			requeue: Poll},
	},
	{
		name: "backup gone: LINSTOR stays stopped with a Problem",
		in:   inPhase(linstorv1.UpgradeRollingBack, obsUpgradeBackupMissing(), obsStopped()),
		want: expect{upgrade: linstorv1.UpgradeRollingBack, deployed: dv(fxFrom, fxFrom), stop: fxPreBackup, fence: true, upgrading: true,
			requeue: Poll, problem: linstorv1.ReasonUpgradeFailed, problemHas: []string{fxPreBackup + " is gone", "stays stopped"},
			check: sameUpgrade},
	},
	{
		name: "backup not Completed: LINSTOR stays stopped with a Problem",
		in:   inPhase(linstorv1.UpgradeRollingBack, obsUpgradeBackup(linstorv1.BackupFailed, "damaged"), obsStopped()),
		want: expect{upgrade: linstorv1.UpgradeRollingBack, deployed: dv(fxFrom, fxFrom), stop: fxPreBackup, fence: true, upgrading: true,
			requeue: Poll, problem: linstorv1.ReasonUpgradeFailed, problemHas: []string{"is not Completed", "stays stopped"}},
	},
	{
		name: "stopped and backup Completed: RestoreDatabase",
		in:   inPhase(linstorv1.UpgradeRollingBack, obsUpgradeBackup(linstorv1.BackupCompleted, "done"), obsStopped()),
		want: expect{upgrade: linstorv1.UpgradeRollingBack, deployed: dv(fxFrom, fxFrom), stop: fxPreBackup, fence: true, upgrading: true,
			actions: []Action{restoreDB(fxPreBackup)}, check: sameUpgrade},
	},
	{
		// The decided policy for a migration that drops a table (BaseK8sCrdMigration
		// deletes its CRD): Preflight does not refuse the upgrade; the rollback restores
		// the backup like any other, and the restore creates the dropped table from the
		// definition the backup carries (pkg/dbbackup; TestRestoreRecreatesADroppedTable).
		name: "the migration dropped a table: the rollback is the same RestoreDatabase, nothing refused",
		in: inPhase(linstorv1.UpgradeRollingBack, obsUpgradeBackup(linstorv1.BackupCompleted, "done"), obsStopped(),
			func(in *Input) {
				in.State.Upgrade.Message = "Rolling back: the controller did not come up (table spacehistory dropped by the migration)"
			}),
		want: expect{upgrade: linstorv1.UpgradeRollingBack, deployed: dv(fxFrom, fxFrom), stop: fxPreBackup, fence: true, upgrading: true,
			actions: []Action{restoreDB(fxPreBackup)}, check: sameUpgrade},
	},
	{
		name: "spec.version pinned back while rolling back: the rollback goes where the pin asks, nothing more to say",
		in: inPhase(linstorv1.UpgradeRollingBack, withRequested(fxFrom), obsUpgradeBackup(linstorv1.BackupCompleted, "done"),
			obsStopped()),
		want: expect{upgrade: linstorv1.UpgradeRollingBack, deployed: dv(fxFrom, fxFrom), stop: fxPreBackup, fence: true, upgrading: true,
			actions: []Action{restoreDB(fxPreBackup)}, check: sameUpgrade},
	},
}

func TestPhaseRollingBack(t *testing.T) { runStepCases(t, rollingBackCases) }
