package lifecycle

// The Rehearsal phase (upgrade.go rehearsal): the new version migrates a copy of the
// pre-upgrade backup in a Job before the real migration.

import (
	"fmt"
	"strings"
	"testing"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// fxRehearsal is the rehearsal Job's name, derived independently of RehearsalName.
var fxRehearsal = fmt.Sprintf("%s-rehearse-1-33-3-%d", fxCluster, fxStart.Unix())

// fxRehearsing is what keeps the controller stopped during the rehearsal.
const fxRehearsing = "rehearsed on a copy of "

func withoutRehearsal() opt { return func(in *Input) { in.Spec.RehearsalOff = true } }
func withRehearsalUnavailable() opt {
	return func(in *Input) { in.Spec.RehearsalUnavailable = "no operator image" }
}
func obsRehearsal(r Rehearsal) opt {
	return func(in *Input) { r.Name = fxRehearsal; in.Observed.Rehearsal = &r }
}
func obsRehearsalMissing() opt { return obsRehearsal(Rehearsal{}) }
func obsRehearsalRunning() opt { return obsRehearsal(Rehearsal{Found: true}) }
func obsRehearsalFailed(msg string) opt {
	return obsRehearsal(Rehearsal{Found: true, Failed: true, Message: msg})
}

var (
	createRehearsal = Action{Kind: CreateRehearsal, Job: fxRehearsal, Backup: fxPreBackup, From: fxFrom, To: fxTo}
	deleteRehearsal = Action{Kind: DeleteRehearsal, Job: fxRehearsal}
)

// fxMigrationError is the tail of a LINSTOR log of a failed migration 28 (the orphan
// case, Migration_28_v1_31_1_MoveTcpPortsToNodes.updateDrbdRscTcpPortList).
const fxMigrationError = "LinStorDBRuntimeException: Exception occurred during migration\nCaused by: DatabaseException: LayerResourceId 17 not found!"

var rehearsalCases = []stepCase{
	// Leaving Backup.
	{
		name: "backup completed: Rehearsal, the controller still stopped and CSI fenced",
		in:   inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), obsUpgradeBackup(linstorv1.BackupCompleted, "done")),
		want: expect{upgrade: linstorv1.UpgradeRehearsal, deployed: dv(fxFrom, fxFrom), stop: fxRehearsing, fence: true, upgrading: true, requeue: soon,
			events: ev("UpgradeRehearsal"), check: upgradeMsgHas(fxPreBackup, "sha256:0123abcd", fxRehearsal)},
	},
	{
		name: "backup completed, spec.upgrade.rehearsal false: Controller, the skip said",
		in:   inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), obsUpgradeBackup(linstorv1.BackupCompleted, "done"), withoutRehearsal()),
		want: expect{upgrade: linstorv1.UpgradeController, deployed: dv(fxTo, fxFrom), fence: true, upgrading: true, requeue: soon,
			events: ev("UpgradeController"), check: all(upgradeMsgHas("not rehearsed", "spec.upgrade.rehearsal is false"), eventHas("UpgradeController", "not rehearsed"))},
	},
	{
		name: "backup completed, this operator cannot rehearse: Controller, the reason said",
		in:   inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), obsUpgradeBackup(linstorv1.BackupCompleted, "done"), withRehearsalUnavailable()),
		want: expect{upgrade: linstorv1.UpgradeController, deployed: dv(fxTo, fxFrom), fence: true, upgrading: true, requeue: soon,
			events: ev("UpgradeController"), check: upgradeMsgHas("not rehearsed", "no operator image")},
	},
	{
		name: "external database: nothing to copy, Controller, the skip said",
		in:   inPhase(linstorv1.UpgradeBackup, withExternalDB(true)),
		want: expect{upgrade: linstorv1.UpgradeController, deployed: dv(fxTo, fxFrom), fence: true, upgrading: true, requeue: soon,
			events: ev("UpgradeController"), check: upgradeMsgHas("no rehearsal", "external")},
	},
	{
		name: "a retry after a failed rehearsal starts a new attempt, whose Job has another name",
		in: input(withReported(fxFrom), withDeployed(dv(fxFrom, fxFrom)), withUpgrade(finished(linstorv1.UpgradeRolledBack, fxFrom, fxTo)),
			withRetry(fxTo)),
		want: expect{upgrade: linstorv1.UpgradePreflight, deployed: dv(fxFrom, fxFrom), upgrading: true, requeue: soon,
			actions: []Action{removeRetry}, events: ev("UpgradeStarted"),
			check: func(t *testing.T, in Input, out Output) {
				if RehearsalName(fxCluster, out.State.Upgrade) == fxRehearsal {
					t.Error("the retry reuses the failed attempt's Job name")
				}
			}},
	},
}

var rehearsalPhaseCases = []stepCase{
	{
		name: "not observed yet: waits, the controller stays stopped",
		in:   inPhase(linstorv1.UpgradeRehearsal),
		want: expect{upgrade: linstorv1.UpgradeRehearsal, deployed: dv(fxFrom, fxFrom), stop: fxRehearsing, fence: true, upgrading: true, requeue: soon,
			check: sameUpgrade},
	},
	{
		name: "another Job observed (an earlier attempt's): waits for its own",
		in: inPhase(linstorv1.UpgradeRehearsal, func(in *Input) {
			in.Observed.Rehearsal = &Rehearsal{Name: "linstor-rehearse-1-33-3-1", Found: true, Failed: true}
		}),
		want: expect{upgrade: linstorv1.UpgradeRehearsal, deployed: dv(fxFrom, fxFrom), stop: fxRehearsing, fence: true, upgrading: true, requeue: soon},
	},
	{
		name: "Job missing: created from the pre-upgrade backup",
		in:   inPhase(linstorv1.UpgradeRehearsal, obsRehearsalMissing()),
		want: expect{upgrade: linstorv1.UpgradeRehearsal, deployed: dv(fxFrom, fxFrom), stop: fxRehearsing, fence: true, upgrading: true, requeue: Poll,
			actions: []Action{createRehearsal}, check: upgradeMsgHas("starting Job " + fxRehearsal)},
	},
	{
		name: "running: waits, controller stopped, CSI fenced",
		in:   inPhase(linstorv1.UpgradeRehearsal, obsRehearsalRunning()),
		want: expect{upgrade: linstorv1.UpgradeRehearsal, deployed: dv(fxFrom, fxFrom), stop: fxRehearsing, fence: true, upgrading: true, requeue: Poll,
			check: upgradeMsgHas("Job " + fxRehearsal + " migrates a copy of " + fxPreBackup + " with LINSTOR 1.33.3")},
	},
	{
		// The name comes from the upgrade's start: a restarted operator, or a new operator
		// release taking over mid-phase (HoldsOperator holds it back only through OLM),
		// finds the Job the previous one created and neither starts another nor loses it.
		name: "operator restarted (or a new release took over) mid-phase: the same Job is found and waited for",
		in:   inPhase(linstorv1.UpgradeRehearsal, obsRehearsalRunning(), withPhaseAge(3*60e9)),
		want: expect{upgrade: linstorv1.UpgradeRehearsal, deployed: dv(fxFrom, fxFrom), stop: fxRehearsing, fence: true, upgrading: true, requeue: Poll,
			check: func(t *testing.T, in Input, out Output) {
				if n := Needs(in.Spec, in.State).Rehearsal; n != fxRehearsal {
					t.Errorf("Needs.Rehearsal = %q, want %q", n, fxRehearsal)
				}
			}},
	},
	{
		name: "succeeded: Controller, the Job deleted",
		in:   inPhase(linstorv1.UpgradeRehearsal, obsRehearsal(Rehearsal{Found: true, Succeeded: true})),
		want: expect{upgrade: linstorv1.UpgradeController, deployed: dv(fxTo, fxFrom), fence: true, upgrading: true, requeue: soon,
			actions: []Action{deleteRehearsal}, events: ev("UpgradeController"), check: upgradeMsgHas("Rehearsal " + fxRehearsal + " passed")},
	},
	{
		name: "succeeded past the timeout still moves on: Controller",
		in:   inPhase(linstorv1.UpgradeRehearsal, obsRehearsal(Rehearsal{Found: true, Succeeded: true}), late()),
		want: expect{upgrade: linstorv1.UpgradeController, deployed: dv(fxTo, fxFrom), fence: true, upgrading: true, requeue: soon,
			actions: []Action{deleteRehearsal}, events: ev("UpgradeController")},
	},
	{
		name: "failed: RolledBack with nothing changed, the migration's error quoted, the old controller starts, the Job kept for its logs",
		in:   inPhase(linstorv1.UpgradeRehearsal, obsRehearsalFailed(fxMigrationError)),
		want: expect{upgrade: linstorv1.UpgradeRolledBack, deployed: dv(fxFrom, fxFrom), requeue: soon,
			problem: linstorv1.ReasonUpgradeFailed, problemHas: []string{"The rehearsal of the migration from 1.33.2 to 1.33.3 on a copy of the database failed",
				"LayerResourceId 17 not found!", "nothing was changed, LINSTOR stays at 1.33.2", fxPreBackup + " is kept", "linstor.io/retry-upgrade=1.33.3"},
			events: ev("UpgradeRehearsalFailed")},
	},
	{
		name: "failed without a message: RolledBack all the same",
		in:   inPhase(linstorv1.UpgradeRehearsal, obsRehearsalFailed("")),
		want: expect{upgrade: linstorv1.UpgradeRolledBack, deployed: dv(fxFrom, fxFrom), requeue: soon,
			problem: linstorv1.ReasonUpgradeFailed, problemHas: []string{"without a message"}, events: ev("UpgradeRehearsalFailed")},
	},
	{
		name: "failed with a huge log tail: the quote is bounded to 1 KiB",
		in:   inPhase(linstorv1.UpgradeRehearsal, obsRehearsalFailed(strings.Repeat("é", 3000))),
		want: expect{upgrade: linstorv1.UpgradeRolledBack, deployed: dv(fxFrom, fxFrom), requeue: soon,
			problem: linstorv1.ReasonUpgradeFailed, events: ev("UpgradeRehearsalFailed"),
			check: func(t *testing.T, in Input, out Output) {
				if n := strings.Count(out.State.Upgrade.Message, "é"); n > 512 || n < 500 {
					t.Errorf("quoted %d of 3000 characters, want about 1 KiB", n)
				}
				if !strings.Contains(out.State.Upgrade.Message, "[…]") {
					t.Error("the cut is not said")
				}
			}},
	},
	{
		name: "expired while running: RolledBack, the Job deleted",
		in:   inPhase(linstorv1.UpgradeRehearsal, obsRehearsalRunning(), late()),
		want: expect{upgrade: linstorv1.UpgradeRolledBack, deployed: dv(fxFrom, fxFrom), requeue: soon, actions: []Action{deleteRehearsal},
			problem: linstorv1.ReasonUpgradeFailed, problemHas: []string{"did not finish within 5m0s", "nothing was changed"}, events: ev("UpgradeRehearsalFailed")},
	},
	{
		name: "expired and never created: RolledBack",
		in:   inPhase(linstorv1.UpgradeRehearsal, obsRehearsalMissing(), late()),
		want: expect{upgrade: linstorv1.UpgradeRolledBack, deployed: dv(fxFrom, fxFrom), requeue: soon, actions: []Action{deleteRehearsal},
			problem: linstorv1.ReasonUpgradeFailed, events: ev("UpgradeRehearsalFailed")},
	},
	{
		// Only a copy was touched: the upgrade is cancelled at once, the Job goes.
		name: "spec.version pinned back mid-rehearsal: cancelled, the Job deleted",
		in:   inPhase(linstorv1.UpgradeRehearsal, withRequested(fxFrom), obsRehearsalRunning()),
		want: expect{deployed: dv(fxFrom, fxFrom), actions: []Action{deleteRehearsal}, events: ev("UpgradeCancelled"),
			check: eventHas("UpgradeCancelled", "in Rehearsal", "before anything changed")},
	},
}

func TestRehearsal(t *testing.T) {
	runStepCases(t, rehearsalCases)
	runStepCases(t, rehearsalPhaseCases)
}

func TestRehearsalName(t *testing.T) {
	u := &linstorv1.UpgradeStatus{To: fxTo, StartedAt: mt(fxStart)}
	if got := RehearsalName(fxCluster, u); got != fxRehearsal {
		t.Errorf("RehearsalName = %s, want %s", got, fxRehearsal)
	}
	long := RehearsalName(strings.Repeat("a", 40)+"-"+strings.Repeat("b", 30), u)
	if len(long) > 63 || strings.Contains(long, "--") {
		t.Errorf("RehearsalName of a long cluster = %q (%d), want ≤ 63 characters", long, len(long))
	}
}

// While the rehearsal runs, nothing may write to LINSTOR's database (the operator's own
// writes wait too), and another operator release may not take over.
func TestRehearsalFencesAndHolds(t *testing.T) {
	st := &linstorv1.LinstorClusterStatus{Upgrade: inPhase(linstorv1.UpgradeRehearsal).State.Upgrade}
	if LinstorWritesFenced(st) == "" {
		t.Error("LINSTOR writes are not fenced during the rehearsal")
	}
	if !HoldsOperator(st.Upgrade) {
		t.Error("the rehearsal does not hold the operator")
	}
	if out := Step(inPhase(linstorv1.UpgradeRehearsal, obsRehearsalRunning())); !out.HoldOperator {
		t.Error("Step does not hold the operator during the rehearsal")
	}
}
