package lifecycle

// Step and AfterAction as a whole (lifecycle.go): AfterAction's outcomes, deciding again
// after a restart, what Needs asks to observe, the OLM gate, RestoreInProgress.

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// ---------------------------------------------------------------------------------
// AfterAction: the outcome of a RestoreDatabase.
// ---------------------------------------------------------------------------------

type afterCase struct {
	name string
	// in is the Step input; AfterAction gets Step(in)'s state, as the controller does.
	in     Input
	action Action
	err    error
	want   expect
}

var afterActionCases = []afterCase{
	{
		name:   "rollback restored: RolledBack, the old version starts, the message gives the cause and the retry annotation",
		in:     inPhase(linstorv1.UpgradeRollingBack, obsUpgradeBackup(linstorv1.BackupCompleted, "done"), obsStopped()),
		action: restoreDB(fxPreBackup),
		want: expect{upgrade: linstorv1.UpgradeRolledBack, deployed: dv(fxFrom, fxFrom), stale: true, requeue: soon,
			problem: linstorv1.ReasonUpgradeFailed, events: ev("UpgradeRolledBack"),
			problemHas: []string{"Cause: the controller did not come up at 1.33.3", names.AnnotationRetryUpgrade + "=" + fxTo, "restored from " + fxPreBackup},
			check:      upgradeMsgHas("Cause: the controller did not come up", names.AnnotationRetryUpgrade+"="+fxTo)},
	},
	{
		name:   "rollback restore failed: stays RollingBack, LINSTOR stopped, retried",
		in:     inPhase(linstorv1.UpgradeRollingBack, obsUpgradeBackup(linstorv1.BackupCompleted, "done"), obsStopped()),
		action: restoreDB(fxPreBackup),
		err:    errors.New("etcd: request too large"),
		want: expect{upgrade: linstorv1.UpgradeRollingBack, deployed: dv(fxFrom, fxFrom), stop: fxPreBackup, upgrading: true,
			requeue: Poll, problem: linstorv1.ReasonUpgradeFailed, problemHas: []string{"will retry", "request too large"},
			fence: true, check: sameUpgrade},
	},
	{
		name:   "restore done: Restored, version stale, LINSTOR starts, upgrade record cleared",
		in:     inRestore(withRestore(RestoreRestoring, fxNightly, fxUID, fxFrom), obsStopped()),
		action: restoreDB(fxNightly),
		want: expect{restore: RestoreRestored, restoreBackup: fxNightly, restoreUID: fxUID, deployed: dv(fxFrom, fxFrom), stale: true,
			requeue: soon, events: ev("Restored"),
			check: all(restoreMsgHas("Restored nightly (42 objects, sha256:feedbeef)", "LINSTOR 1.33.2 starts"),
				func(t *testing.T, in Input, out Output) {
					if r := out.State.Restore; r == nil || !sameTime(r.CompletedAt, mt(in.Now)) {
						t.Errorf("completedAt: %+v, want now", r)
					}
				})},
	},
	{
		name:   "restore done after restoreFrom was cleared: Restored",
		in:     inRestore(withRestoreFrom(""), withRestore(RestoreRestoring, fxNightly, fxUID, fxFrom), obsStopped()),
		action: restoreDB(fxNightly),
		want: expect{restore: RestoreRestored, restoreBackup: fxNightly, deployed: dv(fxFrom, fxFrom), stale: true,
			requeue: soon, events: ev("Restored")},
	},
	{
		name:   "check passed: Restoring saved at the backup's version, before anything is written",
		in:     inRestore(withRestore(RestoreStopping, fxNightly, fxUID, fxFrom), obsStopped()),
		action: Action{Kind: CheckRestore, Backup: fxNightly},
		want: expect{restore: RestoreRestoring, restoreBackup: fxNightly, restoreUID: fxUID, deployed: dv(fxFrom, fxFrom),
			stop: "restored from " + fxNightly, upgrading: true, requeue: soon, check: restoreMsgHas("Replacing the database with nightly")},
	},
	{
		name:   "check passed, a settled upgrade record is dropped",
		in:     inRestore(withRestore(RestoreStopping, fxNightly, fxUID, fxFrom), obsStopped(), withUpgrade(finished(linstorv1.UpgradeRolledBack, fxFrom, fxTo))),
		action: Action{Kind: CheckRestore, Backup: fxNightly},
		want:   expect{restore: RestoreRestoring, deployed: dv(fxFrom, fxFrom), stop: "restored from " + fxNightly, upgrading: true, requeue: soon},
	},
	{
		name:   "check failed (a damaged chunk): Failed, LINSTOR starts again on its untouched database, the message says so",
		in:     inRestore(withRestore(RestoreStopping, fxNightly, fxUID, fxFrom), obsStopped()),
		action: Action{Kind: CheckRestore, Backup: fxNightly},
		err:    fmt.Errorf("%w: LinstorBackup nightly is damaged: checksum sha256:0, expected sha256:feedbeef", ErrBackupUnusable),
		want: expect{restore: RestoreFailed, restoreBackup: fxNightly, deployed: dv(fxTo, fxTo), requeue: soon,
			problem: linstorv1.ReasonInvalidSpec, problemHas: []string{"damaged", "Nothing was touched", "starts again"}, events: ev("RestoreFailed")},
	},
	{
		// The restore was to supersede a rollback whose backup is unreadable: the
		// database may be half migrated, so nothing may start on it.
		name: "check failed while superseding a rollback: Failed, the rollback keeps LINSTOR stopped and CSI fenced",
		in: inRestore(withDeployed(dv(fxFrom, fxFrom)), withUpgrade(&linstorv1.UpgradeStatus{Phase: linstorv1.UpgradeRollingBack, From: fxFrom, To: fxTo,
			BackupName: fxPreBackup, StartedAt: mt(fxNow), PhaseStartedAt: mt(fxNow)}), withRestore(RestoreStopping, fxNightly, fxUID, fxFrom), obsStopped()),
		action: Action{Kind: CheckRestore, Backup: fxNightly},
		err:    fmt.Errorf("%w: LinstorBackup nightly is damaged", ErrBackupUnusable),
		want: expect{restore: RestoreFailed, upgrade: linstorv1.UpgradeRollingBack, deployed: dv(fxFrom, fxFrom), stop: fxPreBackup, fence: true, upgrading: true,
			requeue: soon, problem: linstorv1.ReasonInvalidSpec, problemHas: []string{"rollback to 1.33.2 goes on"}, events: ev("RestoreFailed")},
	},
	{
		name:   "check failed for a reason a retry may change (the API server did not answer): still Stopping, LINSTOR stopped, retried",
		in:     inRestore(withRestore(RestoreStopping, fxNightly, fxUID, fxFrom), obsStopped()),
		action: Action{Kind: CheckRestore, Backup: fxNightly},
		err:    errors.New("reading backup chunk nightly-0: the server is currently unable to handle the request"),
		want: expect{restore: RestoreStopping, restoreBackup: fxNightly, deployed: dv(fxTo, fxTo), stop: "restore of " + fxNightly, upgrading: true, requeue: Poll,
			problem: linstorv1.ReasonRestoreIncomplete, problemHas: []string{"will retry", "nothing was touched"}, check: sameRestore},
	},
	{
		name:   "restore failed before this attempt wrote: still Restoring and stopped, the message does not claim an intact database",
		in:     inRestore(withRestore(RestoreRestoring, fxNightly, fxUID, fxFrom), obsStopped()),
		action: restoreDB(fxNightly),
		err:    fmt.Errorf("%w: reading backup chunk nightly-0: not found", ErrNothingWritten),
		want: expect{restore: RestoreRestoring, restoreBackup: fxNightly, deployed: dv(fxFrom, fxFrom), stop: "restored from " + fxNightly,
			requeue: Poll, problem: linstorv1.ReasonRestoreIncomplete, problemHas: []string{"this attempt wrote nothing", "an earlier one may have"}},
	},
	{
		name:   "restore failed: stays Restoring, LINSTOR stopped, Problem RestoreIncomplete",
		in:     inRestore(withRestore(RestoreRestoring, fxNightly, fxUID, fxFrom), obsStopped()),
		action: restoreDB(fxNightly),
		err:    errors.New("conflict"),
		want: expect{restore: RestoreRestoring, restoreBackup: fxNightly, deployed: dv(fxFrom, fxFrom), stop: "restored from " + fxNightly,
			upgrading: false, requeue: Poll, problem: linstorv1.ReasonRestoreIncomplete, problemHas: []string{"will retry", "conflict"}},
	},
}

// afterActionUpgradeCleared: AfterAction clears any upgrade record when a restore
// completes (the restore settled the version), whatever the state held.
func TestAfterActionRestoreClearsUpgrade(t *testing.T) {
	in := inRestore(withRestore(RestoreRestoring, fxNightly, fxUID, fxFrom), obsStopped())
	st := Step(in).State
	st.Upgrade = finished(linstorv1.UpgradeRefused, fxTo, "1.32.0")
	out := AfterAction(in, st, restoreDB(fxNightly), nil)
	if out.State.Upgrade != nil {
		t.Errorf("upgrade record %+v kept after the restore", out.State.Upgrade)
	}
}

func TestAfterAction(t *testing.T) {
	for _, tc := range afterActionCases {
		t.Run(tc.name, func(t *testing.T) {
			step := Step(cloneInput(tc.in))
			if !hasAction(step.Actions, tc.action) {
				t.Fatalf("Step did not ask for %+v (got %+v): the row does not describe a real pass", tc.action, step.Actions)
			}
			before := step.State.DeepCopy()
			out := AfterAction(tc.in, step.State, tc.action, tc.err)
			if !reflect.DeepEqual(step.State, before) {
				t.Errorf("AfterAction modified the state it was given")
			}
			if again := AfterAction(tc.in, before.DeepCopy(), tc.action, tc.err); !reflect.DeepEqual(out, again) {
				t.Errorf("AfterAction is not deterministic")
			}
			// The invariants compare with the state AfterAction was given.
			in := cloneInput(tc.in)
			in.State = before
			checkOutput(t, in, out, tc.want)
		})
	}
}

func hasAction(as []Action, a Action) bool {
	for _, x := range as {
		if x == a {
			return true
		}
	}
	return false
}

// ---------------------------------------------------------------------------------
// Operator restart: deciding again on the saved state never skips a phase.
// ---------------------------------------------------------------------------------

// summary names the phases of a state: "idle", "upgrade:Backup", "restore:Stopping"...
func summary(st State) string {
	var parts []string
	if r := st.Restore; r != nil {
		parts = append(parts, "restore:"+r.Phase)
	}
	if u := st.Upgrade; u != nil {
		parts = append(parts, "upgrade:"+string(u.Phase))
	}
	if len(parts) == 0 {
		return "idle"
	}
	return strings.Join(parts, " ")
}

type restartCase struct {
	name string
	in   Input
	// first is the state after Step(in); second after Step on that state with the same
	// observations (an operator restarted before anything changed), and secondActions
	// what that second pass asks for.
	first, second string
	secondActions []Action
}

var restartCases = []restartCase{
	{
		name:  "upgrade started: the next pass does not skip Preflight",
		in:    input(withReported(fxFrom), withDeployed(dv(fxFrom, fxFrom))),
		first: "upgrade:Preflight", second: "upgrade:Preflight",
	},
	{
		name:  "Preflight passed: the next pass takes the backup, it does not migrate",
		in:    inPhase(linstorv1.UpgradePreflight, obsLinstor(fxFrom)),
		first: "upgrade:Backup", second: "upgrade:Backup", secondActions: []Action{createBackup},
	},
	{
		name:  "backup completed: the next pass waits for the new controller",
		in:    inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), withoutRehearsal(), obsUpgradeBackup(linstorv1.BackupCompleted, ""), obsLinstor(fxFrom)),
		first: "upgrade:Controller", second: "upgrade:Controller",
	},
	{
		name:  "backup completed: the next pass creates the rehearsal Job, it does not migrate",
		in:    inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), obsUpgradeBackup(linstorv1.BackupCompleted, ""), obsLinstor(fxFrom), obsRehearsalMissing()),
		first: "upgrade:Rehearsal", second: "upgrade:Rehearsal", secondActions: []Action{createRehearsal},
	},
	{
		name:  "controller answered: the next pass waits for the satellites",
		in:    inPhase(linstorv1.UpgradeController, obsWaiting(fxTo, "node-b OFFLINE")),
		first: "upgrade:Satellites", second: "upgrade:Satellites",
	},
	{
		name:  "controller timed out: the next pass waits for it to stop before restoring",
		in:    inPhase(linstorv1.UpgradeController, obsLinstor(fxFrom), late(), obsUpgradeBackup(linstorv1.BackupCompleted, "")),
		first: "upgrade:RollingBack", second: "upgrade:RollingBack",
	},
	{
		name:  "rollback's restore lost in a crash: carried out again",
		in:    inPhase(linstorv1.UpgradeRollingBack, obsUpgradeBackup(linstorv1.BackupCompleted, ""), obsStopped()),
		first: "upgrade:RollingBack", second: "upgrade:RollingBack", secondActions: []Action{restoreDB(fxPreBackup)},
	},
	{
		name:  "backup failed: the upgrade stays ended",
		in:    inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), obsUpgradeBackup(linstorv1.BackupFailed, "")),
		first: "upgrade:RolledBack", second: "upgrade:RolledBack",
	},
	{
		name:  "verified: Succeeded stays",
		in:    inPhase(linstorv1.UpgradeVerify, obsLinstor(fxTo), withReported(fxTo)),
		first: "upgrade:Succeeded", second: "upgrade:Succeeded",
	},
	{
		name: "retry: the annotation still seen does not restart the new attempt",
		in: input(withReported(fxFrom), withDeployed(dv(fxFrom, fxFrom)), withRetry(fxTo),
			withUpgrade(finished(linstorv1.UpgradeRolledBack, fxFrom, fxTo))),
		first: "upgrade:Preflight", second: "upgrade:Preflight",
	},
	{
		name:  "Preflight cancelled by a pin back: it stays cancelled",
		in:    inPhase(linstorv1.UpgradePreflight, withRequested(fxFrom), obsLinstor(fxFrom)),
		first: "idle", second: "idle",
	},
	{
		name:  "Preflight re-planned by a newer release: the new plan stays",
		in:    inPhase(linstorv1.UpgradePreflight, withRelease(fxFrom, "1.33.4"), obsLinstor(fxFrom, "satellite node-b is OFFLINE")),
		first: "upgrade:Preflight", second: "upgrade:Preflight",
	},
	{
		name: "confirmed restore: Stopping is not started twice",
		in:   inRestore(withRestore(RestoreAwaitingConfirmation, fxNightly, fxUID, fxFrom), withConfirm(fxNightly+"/"+fxUID), obsDBEmpty(false)),
		// The annotation's removal may have been lost with the crash: used up again.
		first: "restore:Stopping", second: "restore:Stopping",
		secondActions: []Action{{Kind: RemoveAnnotation, Annotation: names.AnnotationConfirmRestore}},
	},
	{
		name:  "restore lost in a crash: carried out again",
		in:    inRestore(withRestore(RestoreRestoring, fxNightly, fxUID, fxFrom), obsStopped()),
		first: "restore:Restoring", second: "restore:Restoring", secondActions: []Action{restoreDB(fxNightly)},
	},
	{
		name:  "restored: nothing more",
		in:    inRestore(withRestore(RestoreRestored, fxNightly, fxUID, fxTo)),
		first: "restore:Restored", second: "restore:Restored",
	},
}

func TestOperatorRestart(t *testing.T) {
	for _, tc := range restartCases {
		t.Run(tc.name, func(t *testing.T) {
			out1 := Step(cloneInput(tc.in))
			if !reflect.DeepEqual(out1, Step(cloneInput(tc.in))) {
				t.Errorf("first pass not idempotent")
			}
			if got := summary(out1.State); got != tc.first {
				t.Fatalf("first pass: %s, want %s", got, tc.first)
			}
			in2 := cloneInput(tc.in)
			in2.State = out1.State.DeepCopy()
			out2 := Step(in2)
			if !reflect.DeepEqual(out2, Step(cloneInput(in2))) {
				t.Errorf("second pass not idempotent")
			}
			if got := summary(out2.State); got != tc.second {
				t.Errorf("second pass: %s, want %s", got, tc.second)
			}
			if acts := withoutMarkerActions(out2.Actions); len(acts) != 0 || len(tc.secondActions) != 0 {
				if !reflect.DeepEqual(acts, tc.secondActions) {
					t.Errorf("second pass actions %+v, want %+v", acts, tc.secondActions)
				}
			}
		})
	}
}

// ---------------------------------------------------------------------------------
// Needs: what the controller observes before Step.
// ---------------------------------------------------------------------------------

type needsCase struct {
	name string
	in   Input
	want Need
}

var needsCases = []needsCase{
	{name: "idle cluster: nothing", in: input(), want: Need{}},
	{
		name: "Preflight: LINSTOR and its problems",
		in:   inPhase(linstorv1.UpgradePreflight),
		want: Need{Linstor: true, Problems: true},
	},
	{
		name: "Backup without a name yet: the derived backup",
		in:   inPhase(linstorv1.UpgradeBackup),
		want: Need{UpgradeBackup: fxPreBackup},
	},
	{
		name: "Backup with a saved name: that backup",
		in:   inPhase(linstorv1.UpgradeBackup, withBackupName("saved-name")),
		want: Need{UpgradeBackup: "saved-name"},
	},
	{
		name: "Controller: LINSTOR's version",
		in:   inPhase(linstorv1.UpgradeController),
		want: Need{Linstor: true, UpgradeBackup: fxPreBackup},
	},
	{
		name: "Satellites: LINSTOR and the waiting satellites",
		in:   inPhase(linstorv1.UpgradeSatellites),
		want: Need{Linstor: true, Waiting: true, UpgradeBackup: fxPreBackup},
	},
	{
		name: "Verify: LINSTOR and its problems",
		in:   inPhase(linstorv1.UpgradeVerify),
		want: Need{Linstor: true, Problems: true, UpgradeBackup: fxPreBackup},
	},
	{
		name: "RollingBack: the backup and whether the controller stopped",
		in:   inPhase(linstorv1.UpgradeRollingBack),
		want: Need{UpgradeBackup: fxPreBackup, ControllerStopped: true},
	},
	{
		name: "Succeeded: nothing",
		in:   input(withUpgrade(finished(linstorv1.UpgradeSucceeded, fxFrom, fxTo))),
		want: Need{},
	},
	{
		name: "RolledBack: nothing",
		in:   input(withUpgrade(finished(linstorv1.UpgradeRolledBack, fxFrom, fxTo))),
		want: Need{},
	},
	{
		name: "AwaitingApproval: nothing",
		in:   input(withUpgrade(finished(linstorv1.UpgradeAwaitingApproval, fxFrom, fxTo))),
		want: Need{},
	},
	{
		name: "Refused: nothing",
		in:   input(withUpgrade(finished(linstorv1.UpgradeRefused, fxTo, fxFrom))),
		want: Need{},
	},
	{
		name: "new restore request: backup, emptiness, controller",
		in:   inRestore(),
		want: Need{RestoreBackup: fxNightly, DatabaseEmpty: true, ControllerStopped: true},
	},
	{
		name: "AwaitingConfirmation: emptiness again",
		in:   inRestore(withRestore(RestoreAwaitingConfirmation, fxNightly, fxUID, fxFrom)),
		want: Need{RestoreBackup: fxNightly, DatabaseEmpty: true, ControllerStopped: true},
	},
	{
		name: "Stopping: backup and controller",
		in:   inRestore(withRestore(RestoreStopping, fxNightly, fxUID, fxFrom)),
		want: Need{RestoreBackup: fxNightly, ControllerStopped: true},
	},
	{
		name: "Stopping, another backup named: a new request",
		in:   inRestore(withRestoreFrom(fxWeekly), withRestore(RestoreStopping, fxNightly, fxUID, fxFrom)),
		want: Need{RestoreBackup: fxWeekly, DatabaseEmpty: true, ControllerStopped: true},
	},
	{
		name: "Restoring, field cleared: the started backup",
		in:   inRestore(withRestoreFrom(""), withRestore(RestoreRestoring, fxNightly, fxUID, fxFrom)),
		want: Need{RestoreBackup: fxNightly, ControllerStopped: true},
	},
	{
		name: "Restoring, another backup named and confirmed: that backup",
		in:   inRestore(withRestoreFrom(fxWeekly), withConfirm(fxWeekly+"/"+fxUID), withRestore(RestoreRestoring, fxNightly, fxUID, fxFrom)),
		want: Need{RestoreBackup: fxWeekly, ControllerStopped: true},
	},
	{
		name: "Restoring, another backup named without confirmation: the begun one",
		in:   inRestore(withRestoreFrom(fxWeekly), withRestore(RestoreRestoring, fxNightly, fxUID, fxFrom)),
		want: Need{RestoreBackup: fxNightly, ControllerStopped: true},
	},
	{
		name: "Restored, same backup: nothing",
		in:   inRestore(withRestore(RestoreRestored, fxNightly, fxUID, fxFrom)),
		want: Need{},
	},
	{
		name: "Failed, same backup: nothing",
		in:   inRestore(withRestore(RestoreFailed, fxNightly, fxUID, "")),
		want: Need{},
	},
	{
		name: "Failed, same backup, its UID recorded: the backup is looked at (one created again under the name is retried)",
		in:   inRestore(withRestore(RestoreFailed, fxNightly, fxUID, ""), withRestoreBackupUID(fxBackupUID)),
		want: Need{RestoreBackup: fxNightly},
	},
	{
		name: "Restored, another backup named: a new request",
		in:   inRestore(withRestoreFrom(fxWeekly), withRestore(RestoreRestored, fxNightly, fxUID, fxFrom)),
		want: Need{RestoreBackup: fxWeekly, DatabaseEmpty: true, ControllerStopped: true},
	},
	{
		name: "field cleared while Stopping: nothing",
		in:   inRestore(withRestoreFrom(""), withRestore(RestoreStopping, fxNightly, fxUID, fxFrom)),
		want: Need{},
	},
	{
		name: "restore asked during Preflight: both",
		in:   inPhase(linstorv1.UpgradePreflight, withRestoreFrom(fxNightly)),
		want: Need{Linstor: true, Problems: true, RestoreBackup: fxNightly, DatabaseEmpty: true, ControllerStopped: true},
	},
	{
		name: "restore asked during RollingBack: both",
		in:   inPhase(linstorv1.UpgradeRollingBack, withRestoreFrom(fxNightly)),
		want: Need{UpgradeBackup: fxPreBackup, RestoreBackup: fxNightly, DatabaseEmpty: true, ControllerStopped: true},
	},
	{name: "external controller, idle: no LINSTOR reads", in: input(withExternalController()), want: Need{}},
	{
		name: "external controller, upgrade status left over: no LINSTOR reads",
		in:   inPhase(linstorv1.UpgradeSatellites, withExternalController()),
		want: Need{},
	},
	{
		name: "external controller, Verify left over: no LINSTOR reads",
		in:   inPhase(linstorv1.UpgradeVerify, withExternalController()),
		want: Need{},
	},
}

func TestNeeds(t *testing.T) {
	for _, tc := range needsCases {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.in.State.DeepCopy()
			if got := Needs(tc.in.Spec, tc.in.State); got != tc.want {
				t.Errorf("Needs = %+v, want %+v", got, tc.want)
			}
			if !reflect.DeepEqual(st, tc.in.State) {
				t.Errorf("Needs modified the state")
			}
		})
	}
}

// ---------------------------------------------------------------------------------
// The OLM gate: only what this release must finish holds an operator upgrade.
// ---------------------------------------------------------------------------------

type holdCase struct {
	name string
	in   Input
	// after, when set, is the action whose outcome AfterAction reports (err its error).
	after *Action
	err   error
	hold  bool
}

var holdCases = []holdCase{
	{name: "no upgrade", in: input(), hold: false},
	{
		name: "Verify within its timeout",
		in:   inPhase(linstorv1.UpgradeVerify, obsLinstor(fxTo, "pvc-1 Inconsistent"), withTimeout(time.Hour)),
		hold: true,
	},
	{
		// It cannot roll back; another release may be the fix for what it waits on.
		name: "Verify stalled past its timeout holds nothing",
		in:   inPhase(linstorv1.UpgradeVerify, obsLinstor(fxTo, "pvc-1 Inconsistent"), withTimeout(time.Minute), withPhaseAge(time.Hour)),
		hold: false,
	},
	{name: "AwaitingApproval", in: input(withReported(fxFrom), withDeployed(dv(fxFrom, fxFrom)), withManualPolicy()), hold: false},
	{name: "Refused", in: input(withRequested(fxFrom)), hold: false},
	{name: "an upgrade starts: Preflight changes nothing", in: input(withReported(fxFrom), withDeployed(dv(fxFrom, fxFrom))), hold: false},
	{name: "Preflight waits", in: inPhase(linstorv1.UpgradePreflight, obsLinstor(fxFrom, "satellite node-b is OFFLINE")), hold: false},
	{name: "Preflight not observed yet", in: inPhase(linstorv1.UpgradePreflight), hold: false},
	{name: "Preflight cancelled by a pin back", in: inPhase(linstorv1.UpgradePreflight, withRequested(fxFrom)), hold: false},
	{name: "Preflight passes: Backup is entered", in: inPhase(linstorv1.UpgradePreflight, obsLinstor(fxFrom)), hold: true},
	{
		name: "Backup",
		in:   inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), obsUpgradeBackup(linstorv1.BackupRunning, "")),
		hold: true,
	},
	{
		name: "Backup cancelled by a pin back while its backup runs: held until the backup has ended",
		in:   inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), withRequested(fxFrom), obsUpgradeBackup(linstorv1.BackupRunning, "")),
		hold: true,
	},
	{
		name: "Backup cancelled by a pin back once its backup completed",
		in:   inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), withRequested(fxFrom), obsUpgradeBackup(linstorv1.BackupCompleted, "")),
		hold: false,
	},
	{name: "Controller", in: inPhase(linstorv1.UpgradeController, obsLinstor(fxFrom)), hold: true},
	{name: "Satellites", in: inPhase(linstorv1.UpgradeSatellites, obsWaiting(fxTo, "node-b OFFLINE")), hold: true},
	{name: "Verify", in: inPhase(linstorv1.UpgradeVerify, obsLinstor(fxTo, "pvc-1 Inconsistent")), hold: true},
	{name: "Verify passes: Succeeded", in: inPhase(linstorv1.UpgradeVerify, obsLinstor(fxTo)), hold: false},
	{name: "RollingBack", in: inPhase(linstorv1.UpgradeRollingBack, obsUpgradeBackup(linstorv1.BackupCompleted, ""), obsStopped()), hold: true},
	{
		name:  "RollingBack, restore failed: still RollingBack",
		in:    inPhase(linstorv1.UpgradeRollingBack, obsUpgradeBackup(linstorv1.BackupCompleted, ""), obsStopped()),
		after: &Action{Kind: RestoreDatabase, Backup: fxPreBackup}, err: errors.New("boom"),
		hold: true,
	},
	{
		name:  "RollingBack, restore done (RolledBack)",
		in:    inPhase(linstorv1.UpgradeRollingBack, obsUpgradeBackup(linstorv1.BackupCompleted, ""), obsStopped()),
		after: &Action{Kind: RestoreDatabase, Backup: fxPreBackup},
		hold:  false,
	},
	{name: "Succeeded", in: input(withUpgrade(finished(linstorv1.UpgradeSucceeded, fxFrom, fxTo))), hold: false},
	{name: "restore AwaitingConfirmation", in: inRestore(obsDBEmpty(false)), hold: false},
	{name: "restore Stopping", in: inRestore(withRestore(RestoreStopping, fxNightly, fxUID, fxFrom)), hold: true},
	{name: "restore Restoring", in: inRestore(withRestore(RestoreRestoring, fxNightly, fxUID, fxFrom), obsStopped()), hold: true},
}

func TestHoldOperator(t *testing.T) {
	for _, tc := range holdCases {
		t.Run(tc.name, func(t *testing.T) {
			out := Step(cloneInput(tc.in))
			if tc.after != nil {
				if !hasAction(out.Actions, *tc.after) {
					t.Fatalf("Step did not ask for %+v", *tc.after)
				}
				out = AfterAction(tc.in, out.State, *tc.after, tc.err)
			}
			if out.HoldOperator != tc.hold {
				t.Errorf("HoldOperator = %v, want %v (%s)", out.HoldOperator, tc.hold, summary(out.State))
			}
			if out.HoldOperator && !out.Upgrading {
				t.Errorf("HoldOperator without Upgrading")
			}
			// The saved state says the same to a pass that decides nothing.
			if u := out.State.Upgrade; HoldsOperator(u) != (InProgress(u) && u.Phase != linstorv1.UpgradePreflight && !Stalled(u)) {
				t.Errorf("HoldsOperator(%s) is wrong", summary(out.State))
			}
		})
	}
}

func TestRestoreInProgress(t *testing.T) {
	for phase, want := range map[string]bool{
		RestoreAwaitingConfirmation: false, // LINSTOR still runs untouched
		RestoreStopping:             true,
		RestoreRestoring:            true,
		RestoreRestored:             false,
		RestoreFailed:               false,
	} {
		if got := RestoreInProgress(&linstorv1.RestoreStatus{BackupName: "b1", Phase: phase}); got != want {
			t.Errorf("RestoreInProgress(%s) = %v, want %v", phase, got, want)
		}
	}
	if RestoreInProgress(nil) {
		t.Error("RestoreInProgress(nil) = true, want false")
	}
}
