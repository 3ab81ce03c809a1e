package lifecycle

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

func TestFencesAndBackupGates(t *testing.T) {
	up := func(p linstorv1.UpgradePhase) *linstorv1.LinstorClusterStatus {
		return &linstorv1.LinstorClusterStatus{Upgrade: &linstorv1.UpgradeStatus{Phase: p, From: fxFrom, To: fxTo, BackupName: fxPreBackup}}
	}
	rs := func(p string) *linstorv1.LinstorClusterStatus {
		return &linstorv1.LinstorClusterStatus{Restore: &linstorv1.RestoreStatus{Phase: p, BackupName: fxNightly}}
	}
	cases := []struct {
		name                string
		st                  *linstorv1.LinstorClusterStatus
		fenced, waits, torn bool
	}{
		{"nothing in progress", &linstorv1.LinstorClusterStatus{}, false, false, false},
		{"Preflight has changed nothing", up(linstorv1.UpgradePreflight), false, false, false},
		{"Backup: a rollback would undo writes; the upgrade's own backup is taken now", up(linstorv1.UpgradeBackup), true, false, false},
		{"Controller migrates the database", up(linstorv1.UpgradeController), true, true, true},
		{"Satellites: a rollback may still restore", up(linstorv1.UpgradeSatellites), true, true, true},
		{"Verify: nothing rolls back", up(linstorv1.UpgradeVerify), false, false, false},
		{"RollingBack replaces the database", up(linstorv1.UpgradeRollingBack), true, true, true},
		{"RolledBack", up(linstorv1.UpgradeRolledBack), false, false, false},
		{"Succeeded", up(linstorv1.UpgradeSucceeded), false, false, false},
		{"restore awaiting confirmation: LINSTOR runs", rs(RestoreAwaitingConfirmation), false, false, false},
		{"restore Stopping: nothing written yet, a copy under way stays sound", rs(RestoreStopping), true, true, false},
		{"restore Restoring", rs(RestoreRestoring), true, true, true},
		{"restore Restored", rs(RestoreRestored), false, false, false},
		{"restore Failed", rs(RestoreFailed), false, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := LinstorWritesFenced(tc.st) != ""; got != tc.fenced {
				t.Errorf("LinstorWritesFenced: %v, want %v", got, tc.fenced)
			}
			if got := BackupWaits(tc.st) != ""; got != tc.waits {
				t.Errorf("BackupWaits: %v, want %v", got, tc.waits)
			}
			if got := BackupMayBeTorn(tc.st) != ""; got != tc.torn {
				t.Errorf("BackupMayBeTorn: %v, want %v", got, tc.torn)
			}
		})
	}
	if msg := LinstorWritesFenced(up(linstorv1.UpgradeSatellites)); !strings.Contains(msg, "Satellites") || !strings.Contains(msg, "undo") {
		t.Errorf("fence message %q names neither the phase nor why", msg)
	}
}

func TestBackupsInUseAndNamed(t *testing.T) {
	st := State{Upgrade: &linstorv1.UpgradeStatus{Phase: linstorv1.UpgradeSatellites, BackupName: fxPreBackup},
		Restore: &linstorv1.RestoreStatus{Phase: RestoreRestored, BackupName: fxNightly}}
	if got := BackupsInUse(st); !reflect.DeepEqual(got, []string{fxPreBackup}) {
		t.Errorf("in use: %v", got)
	}
	st.Upgrade.Phase, st.Restore.Phase = linstorv1.UpgradeSucceeded, RestoreRestoring
	if got := BackupsInUse(st); !reflect.DeepEqual(got, []string{fxNightly}) {
		t.Errorf("in use: %v", got)
	}
	status := &linstorv1.LinstorClusterStatus{Upgrade: st.Upgrade, Restore: st.Restore}
	if got := BackupsNamed(status, fxWeekly); !reflect.DeepEqual(got, []string{fxWeekly, fxPreBackup, fxNightly}) {
		t.Errorf("named: %v", got)
	}
}

// ---------------------------------------------------------------------------------
// Fencing: CSI stopped exactly while a rollback could restore the pre-upgrade backup.
// ---------------------------------------------------------------------------------

type fenceCase struct {
	name string
	in   Input
	// after, when set, is the action whose outcome AfterAction reports (err its error).
	after *Action
	err   error
	fence bool
}

var fencingCases = []fenceCase{
	{name: "no upgrade", in: input(), fence: false},
	{
		name:  "AwaitingApproval",
		in:    input(withReported(fxFrom), withDeployed(dv(fxFrom, fxFrom)), withManualPolicy()),
		fence: false,
	},
	{name: "Refused", in: input(withRequested(fxFrom)), fence: false},
	{
		name:  "RolledBack",
		in:    input(withReported(fxFrom), withDeployed(dv(fxFrom, fxFrom)), withUpgrade(finished(linstorv1.UpgradeRolledBack, fxFrom, fxTo))),
		fence: false,
	},
	{
		name:  "Succeeded",
		in:    input(withUpgrade(finished(linstorv1.UpgradeSucceeded, fxFrom, fxTo))),
		fence: false,
	},
	{
		name:  "Preflight",
		in:    inPhase(linstorv1.UpgradePreflight, obsLinstor(fxFrom, "node-b is OFFLINE")),
		fence: false,
	},
	{
		name:  "Backup",
		in:    inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), obsUpgradeBackup(linstorv1.BackupRunning, "")),
		fence: true,
	},
	{name: "Controller", in: inPhase(linstorv1.UpgradeController, obsLinstor(fxFrom)), fence: true},
	{
		name:  "Satellites",
		in:    inPhase(linstorv1.UpgradeSatellites, obsWaiting(fxTo, "node-b OFFLINE")),
		fence: true,
	},
	{name: "Verify", in: inPhase(linstorv1.UpgradeVerify, obsLinstor(fxTo, "pvc-1 Inconsistent")), fence: false},
	{
		name:  "RollingBack, waiting for the controller",
		in:    inPhase(linstorv1.UpgradeRollingBack, obsUpgradeBackup(linstorv1.BackupCompleted, "")),
		fence: true,
	},
	{
		name:  "RollingBack, restoring",
		in:    inPhase(linstorv1.UpgradeRollingBack, obsUpgradeBackup(linstorv1.BackupCompleted, ""), obsStopped()),
		fence: true,
	},
	{
		name:  "RollingBack, restore done (RolledBack)",
		in:    inPhase(linstorv1.UpgradeRollingBack, obsUpgradeBackup(linstorv1.BackupCompleted, ""), obsStopped()),
		after: &Action{Kind: RestoreDatabase, Backup: fxPreBackup},
		fence: false,
	},
	{
		name:  "RollingBack, restore failed: still RollingBack",
		in:    inPhase(linstorv1.UpgradeRollingBack, obsUpgradeBackup(linstorv1.BackupCompleted, ""), obsStopped()),
		after: &Action{Kind: RestoreDatabase, Backup: fxPreBackup},
		err:   errors.New("boom"),
		fence: true,
	},
	{
		name:  "restore Restoring",
		in:    inRestore(withRestore(RestoreRestoring, fxNightly, fxUID, fxFrom), obsStopped()),
		fence: false,
	},
	{name: "restore AwaitingConfirmation", in: inRestore(obsDBEmpty(false)), fence: false},
}

func TestFencing(t *testing.T) {
	for _, tc := range fencingCases {
		t.Run(tc.name, func(t *testing.T) {
			out := Step(tc.in)
			if tc.after != nil {
				if !hasAction(out.Actions, *tc.after) {
					t.Fatalf("Step did not ask for %+v", *tc.after)
				}
				out = AfterAction(tc.in, out.State, *tc.after, tc.err)
			}
			if out.FenceCSI != tc.fence {
				t.Errorf("FenceCSI = %v, want %v (upgrade %s)", out.FenceCSI, tc.fence, summary(out.State))
			}
		})
	}
}

// ---------------------------------------------------------------------------------
// Backup gate: a LinstorBackup being taken stops the controller.
// ---------------------------------------------------------------------------------

type gateCase struct {
	name string
	in   Input
	// stop is part of StopController ("": the controller runs).
	stop string
}

var gateCases = []gateCase{
	{name: "no active backup: the controller runs", in: input(), stop: ""},
	{
		name: "active backup, nothing else stops the controller: it is named",
		in:   input(obsActiveBackup(fxActive)),
		stop: "LinstorBackup " + fxActive + " is being taken",
	},
	{
		name: "active backup after a succeeded upgrade",
		in:   input(withUpgrade(finished(linstorv1.UpgradeSucceeded, fxFrom, fxTo)), obsActiveBackup(fxActive)),
		stop: "LinstorBackup " + fxActive,
	},
	{
		name: "active backup during Verify",
		in:   inPhase(linstorv1.UpgradeVerify, obsLinstor(fxTo, "pvc-1 Inconsistent"), obsActiveBackup(fxActive)),
		stop: "LinstorBackup " + fxActive,
	},
	{
		name: "active backup while a restore awaits confirmation",
		in:   inRestore(obsDBEmpty(false), obsActiveBackup(fxActive)),
		stop: "LinstorBackup " + fxActive,
	},
	{
		name: "the upgrade's own backup: the upgrade's reason",
		in:   inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), obsUpgradeBackup(linstorv1.BackupRunning, ""), obsActiveBackup(fxPreBackup)),
		stop: "pre-upgrade backup " + fxPreBackup,
	},
	{
		name: "the upgrade's backup timed out but still runs: stays stopped for it",
		in: inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), obsUpgradeBackup(linstorv1.BackupRunning, ""), late(),
			obsActiveBackup(fxPreBackup)),
		stop: "LinstorBackup " + fxPreBackup + " is being taken",
	},
	{
		name: "active backup during a rollback: the rollback's reason",
		in:   inPhase(linstorv1.UpgradeRollingBack, obsUpgradeBackup(linstorv1.BackupCompleted, ""), obsActiveBackup(fxActive)),
		stop: "restored from " + fxPreBackup,
	},
	{
		name: "active backup during a restore's Stopping: the restore's reason",
		in:   inRestore(withRestore(RestoreStopping, fxNightly, fxUID, fxFrom), obsActiveBackup(fxActive)),
		stop: "restore of " + fxNightly,
	},
	{
		// The backup waits for the migration (BackupWaits); stopping the new controller
		// for it would stall the Controller phase into a rollback.
		name: "a waiting backup during the Controller phase: the new controller runs",
		in:   inPhase(linstorv1.UpgradeController, obsLinstor(fxFrom), obsActiveBackup(fxActive)),
		stop: "",
	},
	{
		name: "a waiting backup during the Satellites phase: the controller runs",
		in:   inPhase(linstorv1.UpgradeSatellites, obsWaiting(fxTo, "node-b OFFLINE"), obsActiveBackup(fxActive)),
		stop: "",
	},
}

func TestBackupGate(t *testing.T) {
	for _, tc := range gateCases {
		t.Run(tc.name, func(t *testing.T) {
			out := Step(tc.in)
			switch {
			case tc.stop == "" && out.StopController != "":
				t.Errorf("StopController = %q, want the controller to run", out.StopController)
			case tc.stop != "" && !strings.Contains(out.StopController, tc.stop):
				t.Errorf("StopController = %q, want it to contain %q", out.StopController, tc.stop)
			}
		})
	}
}
