package lifecycle

// The declarative restore (restore.go).

import (
	"testing"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// ---------------------------------------------------------------------------------
// Restore
// ---------------------------------------------------------------------------------

var restoreCases = []stepCase{
	// A new request.
	{
		name: "new request on an empty database: Stopping, nothing touched",
		in:   inRestore(withReported(""), withDeployed(nil), obsDBEmpty(true)),
		want: expect{restore: RestoreStopping, restoreBackup: fxNightly, restoreUID: fxUID, stop: "restore of " + fxNightly,
			upgrading: true, requeue: soon, check: all(restoreVersionIs(fxFrom), restoreBackupUID(fxBackupUID))},
	},
	{
		name: "Stopping, the controller still runs: waits",
		in:   inRestore(withReported(""), withDeployed(nil), withRestore(RestoreStopping, fxNightly, fxUID, fxFrom)),
		want: expect{restore: RestoreStopping, stop: "restore of " + fxNightly, upgrading: true, requeue: Poll, check: sameRestore},
	},
	{
		name: "Stopping, the controller is gone: CheckRestore, nothing written, still Stopping",
		in:   inRestore(withReported(""), withDeployed(nil), withRestore(RestoreStopping, fxNightly, fxUID, fxFrom), obsStopped()),
		want: expect{restore: RestoreStopping, restoreBackup: fxNightly, restoreUID: fxUID, stop: "restore of " + fxNightly,
			upgrading: true, actions: []Action{{Kind: CheckRestore, Backup: fxNightly}}, check: restoreMsgHas("Checking", "nothing is touched")},
	},
	{
		name: "Stopping, the controller is gone, a backup is copying: waits for it, nothing checked",
		in: inRestore(withReported(""), withDeployed(nil), withRestore(RestoreStopping, fxNightly, fxUID, fxFrom), obsStopped(),
			func(in *Input) { in.Observed.RunningBackup, in.Observed.ActiveBackup = fxActive, fxActive }),
		want: expect{restore: RestoreStopping, stop: "restore of " + fxNightly, upgrading: true, requeue: Poll,
			check: restoreMsgHas("Waiting for LinstorBackup " + fxActive)},
	},
	{
		name: "status empty, a database-replacement marker: adopted as Restoring, LINSTOR stays stopped",
		in: input(withReported(""), withDeployed(nil), func(in *Input) {
			in.Observed.Marker = &Marker{Backup: fxNightly, Operation: "restore", ClusterUID: "old-uid"}
		}),
		want: expect{restore: RestoreRestoring, restoreBackup: fxNightly, restoreUID: fxUID, stop: "restored from " + fxNightly,
			upgrading: true, requeue: soon, events: ev("RestoreAdopted"), check: restoreMsgHas("old-uid", "finished before LINSTOR starts")},
	},
	{
		name: "status empty, an upgrade marker (deleted in Controller or Satellites): the upgrade rolls back, LINSTOR stays stopped",
		in: input(withReported(""), withDeployed(nil), func(in *Input) {
			in.Observed.Marker = &Marker{Operation: MarkerUpgrade, Backup: fxPreBackup, From: fxFrom, To: fxTo, ClusterUID: "old-uid"}
		}),
		want: expect{upgrade: linstorv1.UpgradeRollingBack, deployed: dv(fxFrom, fxFrom), stop: fxPreBackup, fence: true, upgrading: true,
			requeue: soon, events: ev("UpgradeAdopted", "UpgradeFailed", "UpgradeRollingBack"), check: all(upgradeBackupIs(fxPreBackup), upgradeFromTo(fxFrom, fxTo))},
	},
	{
		name: "status empty, an upgrade marker with an external database: rolls back, waits for the admin's confirmation",
		in: input(withReported(""), withDeployed(nil), withExternalDB(true), func(in *Input) {
			in.Observed.Marker = &Marker{Operation: MarkerUpgrade, From: fxFrom, To: fxTo, ClusterUID: "old-uid"}
		}),
		want: expect{upgrade: linstorv1.UpgradeRollingBack, deployed: dv(fxFrom, fxFrom), stop: names.AnnotationConfirmDatabaseRestored, fence: true, upgrading: true,
			requeue: soon, problem: linstorv1.ReasonRollbackNeedsConfirmation, events: ev("UpgradeAdopted", "UpgradeFailed", "UpgradeRollingBack")},
	},
	{
		name: "status empty, an upgraded marker (deleted in Verify): the database is at To, To runs",
		in: input(withReported(""), withDeployed(nil), func(in *Input) {
			in.Observed.Marker = &Marker{Operation: MarkerUpgraded, Backup: fxPreBackup, From: fxFrom, To: fxTo, ClusterUID: "old-uid"}
		}),
		want: expect{deployed: dv(fxTo, fxTo), requeue: soon, events: ev("UpgradeAdopted"), check: func(t *testing.T, in Input, out Output) {
			if !hasAction(out.Actions, Action{Kind: ClearMarker}) {
				t.Errorf("the settled marker is not cleared: %+v", out.Actions)
			}
		}},
	},
	{
		// Left in place (its removal lost in a crash), the confirmation would let the same
		// backup, named again months later, replace the live database without asking.
		name: "Stopping with the used confirmation still there: removed again, the check goes on",
		in:   inRestore(withRestore(RestoreStopping, fxNightly, fxUID, fxFrom), withConfirm(fxNightly+"/"+fxUID), obsStopped()),
		want: expect{restore: RestoreStopping, deployed: dv(fxTo, fxTo), stop: "restore of " + fxNightly, upgrading: true,
			actions: []Action{{Kind: RemoveAnnotation, Annotation: names.AnnotationConfirmRestore}, {Kind: CheckRestore, Backup: fxNightly}}},
	},
	{
		name: "Restored with the used confirmation still there: removed",
		in:   inRestore(withRestore(RestoreRestored, fxNightly, fxUID, fxFrom), withConfirm(fxNightly+"/"+fxUID)),
		want: expect{restore: RestoreRestored, deployed: dv(fxTo, fxTo), actions: []Action{{Kind: RemoveAnnotation, Annotation: names.AnnotationConfirmRestore}}},
	},
	{
		name: "a confirmed restore supersedes a rollback that cannot finish",
		in: inRestore(withUpgrade(&linstorv1.UpgradeStatus{Phase: linstorv1.UpgradeRollingBack, From: fxFrom, To: fxTo, BackupName: fxPreBackup,
			StartedAt: mt(fxNow), PhaseStartedAt: mt(fxNow)}), withConfirm(fxNightly+"/"+fxUID), obsDBEmpty(false)),
		want: expect{restore: RestoreStopping, restoreBackup: fxNightly, upgrade: linstorv1.UpgradeRollingBack, deployed: dv(fxTo, fxTo),
			stop: "restore of " + fxNightly, upgrading: true, requeue: soon,
			actions: []Action{{Kind: RemoveAnnotation, Annotation: names.AnnotationConfirmRestore}}},
	},
	{
		name: "a restore named during a rollback without confirmation waits, and says how to confirm",
		in: inRestore(withUpgrade(&linstorv1.UpgradeStatus{Phase: linstorv1.UpgradeRollingBack, From: fxFrom, To: fxTo, BackupName: fxPreBackup,
			StartedAt: mt(fxNow), PhaseStartedAt: mt(fxNow)}), obsDBEmpty(false), obsUpgradeBackup(linstorv1.BackupCompleted, ""), obsStopped()),
		want: expect{upgrade: linstorv1.UpgradeRollingBack, deployed: dv(fxFrom, fxFrom), stop: fxPreBackup, fence: true, upgrading: true,
			requeue: Poll, problem: linstorv1.ReasonUpgradeInProgress, problemHas: []string{names.AnnotationConfirmRestore + "=" + fxNightly + "/" + fxUID},
			actions: []Action{restoreDB(fxPreBackup)}},
	},
	{
		name: "a marker with a status that holds state: ignored (the status decides)",
		in: input(func(in *Input) {
			in.Observed.Marker = &Marker{Backup: fxNightly, Operation: "restore", ClusterUID: "old-uid"}
		}),
		want: expect{deployed: dv(fxTo, fxTo)},
	},
	{
		name: "live database without confirmation: AwaitingConfirmation, LINSTOR keeps running",
		in:   inRestore(obsDBEmpty(false)),
		want: expect{restore: RestoreAwaitingConfirmation, restoreBackup: fxNightly, restoreUID: fxUID, deployed: dv(fxTo, fxTo),
			problem: linstorv1.ReasonRestoreNeedsConfirmation, problemHas: []string{names.AnnotationConfirmRestore + "=" + fxNightly + "/" + fxUID}},
	},
	{
		name: "database emptiness not observed yet: waits, nothing recorded",
		in:   inRestore(),
		want: expect{deployed: dv(fxTo, fxTo), requeue: soon},
	},
	{
		name: "confirmed for this object: Stopping, the annotation is used up",
		in:   inRestore(withRestore(RestoreAwaitingConfirmation, fxNightly, fxUID, fxFrom), withConfirm(fxNightly+"/"+fxUID), obsDBEmpty(false)),
		want: expect{restore: RestoreStopping, restoreBackup: fxNightly, restoreUID: fxUID, deployed: dv(fxTo, fxTo),
			stop: "restore of " + fxNightly, upgrading: true, requeue: soon, actions: []Action{removeConfirm}},
	},
	{
		name: "a confirmation naming another UID (a recreated object) does not start it",
		in:   inRestore(withRestore(RestoreAwaitingConfirmation, fxNightly, fxUID, fxFrom), withConfirm(fxNightly+"/"+fxOldUID), obsDBEmpty(false)),
		want: expect{restore: RestoreAwaitingConfirmation, restoreUID: fxUID, deployed: dv(fxTo, fxTo),
			problem: linstorv1.ReasonRestoreNeedsConfirmation, problemHas: []string{fxNightly + "/" + fxUID}},
	},
	{
		name: "a confirmation naming another backup does not start it",
		in:   inRestore(withConfirm(fxWeekly+"/"+fxUID), obsDBEmpty(false)),
		want: expect{restore: RestoreAwaitingConfirmation, deployed: dv(fxTo, fxTo),
			problem: linstorv1.ReasonRestoreNeedsConfirmation, problemHas: []string{fxNightly + "/" + fxUID}},
	},
	{
		name: "a new request never writes the database in the pass that first stops the controller",
		in: inRestore(withRestore(RestoreAwaitingConfirmation, fxNightly, fxUID, fxFrom), withConfirm(fxNightly+"/"+fxUID),
			obsDBEmpty(false), obsStopped()),
		want: expect{restore: RestoreStopping, deployed: dv(fxTo, fxTo), stop: "restore of " + fxNightly, upgrading: true, requeue: soon,
			actions: []Action{removeConfirm}},
	},

	// Data-loss rows.
	{
		name: "DATA LOSS: recreated cluster with restoreFrom still set never restores over a live database",
		in: inRestore(withUID(fxNewUID), withReported(""), withDeployed(nil), withConfirm(fxNightly+"/"+fxOldUID),
			obsDBEmpty(false), obsStopped()),
		want: expect{restore: RestoreAwaitingConfirmation, restoreUID: fxNewUID, deployed: nil, stop: "spec.version is needed",
			requeue: Poll, problem: linstorv1.ReasonRestoreNeedsConfirmation, problemHas: []string{fxNightly + "/" + fxNewUID}},
	},
	{
		name: "DATA LOSS: cleared restoreFrom during Restoring keeps LINSTOR stopped and finishes the started restore",
		in:   inRestore(withRestoreFrom(""), withDeployed(dv(fxFrom, fxFrom)), withRestore(RestoreRestoring, fxNightly, fxUID, fxFrom), obsStopped()),
		want: expect{restore: RestoreRestoring, restoreBackup: fxNightly, deployed: dv(fxFrom, fxFrom), stop: "restored from " + fxNightly,
			upgrading: true, actions: []Action{restoreDB(fxNightly)}},
	},
	{
		name: "DATA LOSS: cleared restoreFrom during Restoring, controller not gone yet: stays stopped, waits",
		in:   inRestore(withRestoreFrom(""), withDeployed(dv(fxFrom, fxFrom)), withRestore(RestoreRestoring, fxNightly, fxUID, fxFrom)),
		want: expect{restore: RestoreRestoring, deployed: dv(fxFrom, fxFrom), stop: "restored from " + fxNightly, upgrading: true, requeue: Poll},
	},
	{
		name: "DATA LOSS: backup unreadable (gone) during Restoring keeps LINSTOR stopped",
		in: inRestore(withDeployed(dv(fxFrom, fxFrom)), withRestore(RestoreRestoring, fxNightly, fxUID, fxFrom),
			obsRestoreBackupMissing(fxNightly), obsStopped()),
		want: expect{restore: RestoreRestoring, deployed: dv(fxFrom, fxFrom), stop: "restored from " + fxNightly, upgrading: true,
			requeue: Poll, problem: linstorv1.ReasonRestoreIncomplete, problemHas: []string{"is gone", "stays stopped"}, check: sameRestore},
	},
	{
		name: "DATA LOSS: backup unreadable (Failed) during Restoring keeps LINSTOR stopped",
		in: inRestore(withDeployed(dv(fxFrom, fxFrom)), withRestore(RestoreRestoring, fxNightly, fxUID, fxFrom),
			obsRestoreBackup(fxNightly, linstorv1.BackupFailed, fxFrom), obsStopped()),
		want: expect{restore: RestoreRestoring, deployed: dv(fxFrom, fxFrom), stop: "restored from " + fxNightly, upgrading: true,
			requeue: Poll, problem: linstorv1.ReasonRestoreIncomplete, problemHas: []string{"is not Completed"}, check: sameRestore},
	},
	{
		name: "DATA LOSS: backup of another cluster named during Restoring keeps LINSTOR stopped",
		in: inRestore(withDeployed(dv(fxFrom, fxFrom)), withRestore(RestoreRestoring, fxNightly, fxUID, fxFrom),
			obsRestoreBackupOf("other"), obsStopped()),
		want: expect{restore: RestoreRestoring, deployed: dv(fxFrom, fxFrom), stop: "restored from " + fxNightly, upgrading: true,
			requeue: Poll, problem: linstorv1.ReasonRestoreIncomplete, problemHas: []string{"belongs to another LinstorCluster"}},
	},
	{
		name: "DATA LOSS: backup at a version this release cannot run during Restoring keeps LINSTOR stopped",
		in: inRestore(withDeployed(dv(fxFrom, fxFrom)), withRestore(RestoreRestoring, fxNightly, fxUID, fxFrom),
			obsRestoreBackup(fxNightly, linstorv1.BackupCompleted, "1.30.0"), obsStopped()),
		want: expect{restore: RestoreRestoring, deployed: dv(fxFrom, fxFrom), stop: "restored from " + fxNightly, upgrading: true,
			requeue: Poll, problem: linstorv1.ReasonRestoreIncomplete, problemHas: []string{"1.30.0"}},
	},
	{
		name: "DATA LOSS: backup not observed during Restoring keeps LINSTOR stopped",
		in:   inRestore(withDeployed(dv(fxFrom, fxFrom)), withRestore(RestoreRestoring, fxNightly, fxUID, fxFrom), obsNoRestoreBackup(), obsStopped()),
		want: expect{restore: RestoreRestoring, deployed: dv(fxFrom, fxFrom), stop: "restored from " + fxNightly, upgrading: true,
			requeue: soon, check: sameRestore},
	},
	{
		name: "cleared restoreFrom while Stopping cancels (nothing touched)",
		in:   inRestore(withRestoreFrom(""), withRestore(RestoreStopping, fxNightly, fxUID, fxFrom), obsStopped()),
		want: expect{deployed: dv(fxTo, fxTo)},
	},
	{
		name: "cleared restoreFrom while AwaitingConfirmation cancels",
		in:   inRestore(withRestoreFrom(""), withRestore(RestoreAwaitingConfirmation, fxNightly, fxUID, fxFrom)),
		want: expect{deployed: dv(fxTo, fxTo)},
	},
	{
		name: "cleared restoreFrom after Restored forgets the record",
		in:   inRestore(withRestoreFrom(""), withRestore(RestoreRestored, fxNightly, fxUID, fxTo)),
		want: expect{deployed: dv(fxTo, fxTo)},
	},
	{
		name: "another Completed backup named and confirmed during Restoring replaces the half-written one, the confirmation used up",
		in: inRestore(withRestoreFrom(fxWeekly), withConfirm(fxWeekly+"/"+fxUID), withDeployed(dv(fxFrom, fxFrom)), withRestore(RestoreRestoring, fxNightly, fxUID, fxFrom),
			obsRestoreBackup(fxWeekly, linstorv1.BackupCompleted, fxTo), obsStopped()),
		want: expect{restore: RestoreRestoring, restoreBackup: fxWeekly, deployed: dv(fxTo, fxTo), stop: "restored from " + fxWeekly,
			upgrading: true, actions: []Action{{Kind: RemoveAnnotation, Annotation: names.AnnotationConfirmRestore}, restoreDB(fxWeekly)}, check: restoreVersionIs(fxTo)},
	},
	{
		// A manifest still naming an old backup (or a marker adopted by a recreated
		// object whose spec names another) must not switch the restore on its own.
		name: "another backup named during Restoring without confirmation: the begun restore finishes, the status says how to switch",
		in: inRestore(withRestoreFrom(fxWeekly), withDeployed(dv(fxFrom, fxFrom)), withRestore(RestoreRestoring, fxNightly, fxUID, fxFrom),
			obsRestoreBackup(fxNightly, linstorv1.BackupCompleted, fxFrom), obsStopped()),
		want: expect{restore: RestoreRestoring, restoreBackup: fxNightly, deployed: dv(fxFrom, fxFrom), stop: "restored from " + fxNightly,
			upgrading: true, actions: []Action{restoreDB(fxNightly)}, problem: linstorv1.ReasonRestoreNeedsConfirmation,
			problemHas: []string{names.AnnotationConfirmRestore + "=" + fxWeekly + "/" + fxUID}},
	},
	{
		name: "a recreated object adopted a rollback's marker while its manifest names a months-old backup: the marker's backup is restored",
		in: input(withReported(""), withDeployed(nil), withRestoreFrom(fxWeekly), withRestore(RestoreRestoring, fxPreBackup, fxUID, ""),
			obsRestoreBackup(fxPreBackup, linstorv1.BackupCompleted, fxFrom), obsStopped()),
		want: expect{restore: RestoreRestoring, restoreBackup: fxPreBackup, deployed: dv(fxFrom, fxFrom), stop: "restored from " + fxPreBackup,
			upgrading: true, actions: []Action{restoreDB(fxPreBackup)}, problem: linstorv1.ReasonRestoreNeedsConfirmation},
	},
	{
		name: "a finished restore (Restored, same backup) does nothing more",
		in:   inRestore(withRestore(RestoreRestored, fxNightly, fxUID, fxTo), obsNoRestoreBackup()),
		want: expect{restore: RestoreRestored, deployed: dv(fxTo, fxTo), check: sameRestore},
	},
	{
		name: "a backup of another cluster: Failed, nothing touched",
		in:   inRestore(obsRestoreBackupOf("other"), obsDBEmpty(false), obsStopped()),
		want: expect{restore: RestoreFailed, restoreBackup: fxNightly, restoreUID: fxUID, deployed: dv(fxTo, fxTo),
			problem: linstorv1.ReasonInvalidSpec, problemHas: []string{"belongs to LinstorCluster other"}, events: ev("RestoreFailed")},
	},
	{
		name: "a Failed backup: Failed, nothing touched; the backup's UID is recorded",
		in:   inRestore(obsRestoreBackup(fxNightly, linstorv1.BackupFailed, fxFrom), obsDBEmpty(true), obsStopped()),
		want: expect{restore: RestoreFailed, deployed: dv(fxTo, fxTo), problem: linstorv1.ReasonInvalidSpec,
			problemHas: []string{"failed"}, events: ev("RestoreFailed"), check: restoreBackupUID(fxBackupUID)},
	},
	{
		name: "a version this release cannot run: Failed, nothing touched",
		in:   inRestore(obsRestoreBackup(fxNightly, linstorv1.BackupCompleted, "1.30.0"), obsDBEmpty(true), obsStopped()),
		want: expect{restore: RestoreFailed, deployed: dv(fxTo, fxTo), problem: linstorv1.ReasonInvalidSpec,
			problemHas: []string{"1.30.0"}, events: ev("RestoreFailed")},
	},
	{
		name: "an external database: Failed, nothing touched",
		in:   inRestore(withExternalDB(true), obsDBEmpty(true), obsStopped()),
		want: expect{restore: RestoreFailed, deployed: dv(fxTo, fxTo), problem: linstorv1.ReasonInvalidSpec,
			problemHas: []string{"external"}, events: ev("RestoreFailed")},
	},
	{
		name: "Failed is terminal while the field names the same backup",
		in:   inRestore(withRestore(RestoreFailed, fxNightly, fxUID, ""), obsDBEmpty(true), obsStopped()),
		want: expect{restore: RestoreFailed, deployed: dv(fxTo, fxTo), problem: linstorv1.ReasonInvalidSpec,
			problemHas: []string{"saved by the previous pass"}, check: sameRestore},
	},
	{
		name: "Failed stays while the same LinstorBackup (same UID) is named",
		in:   inRestore(withRestore(RestoreFailed, fxNightly, fxUID, ""), withRestoreBackupUID(fxBackupUID), obsRestoreBackup(fxNightly, linstorv1.BackupFailed, fxFrom)),
		want: expect{restore: RestoreFailed, deployed: dv(fxTo, fxTo), problem: linstorv1.ReasonInvalidSpec,
			problemHas: []string{"saved by the previous pass"}, check: sameRestore},
	},
	// The DR runbook's fix for a failed import (a Secret was missing, the key wrong):
	// create the LinstorBackup again. Clearing restoreFrom instead would start a new
	// cluster's LINSTOR on an empty database.
	{
		name: "new installation, the failed LinstorBackup created again under its name: the restore is tried again, LINSTOR's first start still waits",
		in: inRestore(withReported(""), withDeployed(nil), withRestore(RestoreFailed, fxNightly, fxUID, ""), withRestoreBackupUID("the-failed-import"),
			obsRestoreBackup(fxNightly, linstorv1.BackupVerifying, fxFrom)),
		want: expect{stop: "first start waits for the restore of " + fxNightly, requeue: soon, events: ev("RestoreRetried")},
	},
	{
		name: "the failed LinstorBackup created again while the used confirmation is still there: it is removed first, the failure kept",
		in: inRestore(withConfirm(fxNightly+"/"+fxUID), withRestore(RestoreFailed, fxNightly, fxUID, ""), withRestoreBackupUID("the-failed-one"),
			obsRestoreBackup(fxNightly, linstorv1.BackupCompleted, fxFrom)),
		want: expect{restore: RestoreFailed, deployed: dv(fxTo, fxTo), problem: linstorv1.ReasonInvalidSpec, problemHas: []string{"saved by the previous pass"},
			actions: []Action{{Kind: RemoveAnnotation, Annotation: names.AnnotationConfirmRestore}}},
	},
	{
		name: "the failed LinstorBackup created again and Completed, LINSTOR running: a new request",
		in: inRestore(withRestore(RestoreFailed, fxNightly, fxUID, ""), withRestoreBackupUID("the-failed-one"),
			obsRestoreBackup(fxNightly, linstorv1.BackupCompleted, fxFrom)),
		want: expect{deployed: dv(fxTo, fxTo), requeue: soon, events: ev("RestoreRetried")},
	},
	{
		name: "another backup named after a Failed one is a new request",
		in: inRestore(withRestoreFrom(fxWeekly), withRestore(RestoreFailed, fxNightly, fxUID, ""),
			obsRestoreBackup(fxWeekly, linstorv1.BackupCompleted, fxTo), obsDBEmpty(false)),
		want: expect{restore: RestoreAwaitingConfirmation, restoreBackup: fxWeekly, deployed: dv(fxTo, fxTo),
			problem: linstorv1.ReasonRestoreNeedsConfirmation, problemHas: []string{fxWeekly + "/" + fxUID}},
	},
	{
		name: "a missing backup waits (no status change) rather than failing",
		in:   inRestore(obsRestoreBackupMissing(fxNightly), obsDBEmpty(true), obsStopped()),
		want: expect{deployed: dv(fxTo, fxTo), requeue: Poll, problem: linstorv1.ReasonInvalidSpec, problemHas: []string{"does not exist"}},
	},
	{
		name: "new installation, the backup missing (an import not created yet): LINSTOR's first start waits",
		in:   inRestore(withReported(""), withDeployed(nil), obsRestoreBackupMissing(fxNightly), obsDBEmpty(true)),
		want: expect{requeue: Poll, stop: "first start waits for the restore of " + fxNightly, problem: linstorv1.ReasonInvalidSpec, problemHas: []string{"does not exist"}},
	},
	{
		name: "new installation, the backup still Verifying (an import reading its bucket): LINSTOR's first start waits",
		in:   inRestore(withReported(""), withDeployed(nil), obsRestoreBackup(fxNightly, linstorv1.BackupVerifying, fxFrom), obsDBEmpty(true)),
		want: expect{requeue: Poll, stop: "first start waits for the restore of " + fxNightly, problem: linstorv1.ReasonInvalidSpec, problemHas: []string{"not Completed yet"}},
	},
	{
		name: "new installation, the backup failed: Failed, LINSTOR's first start still waits (clear restoreFrom to start empty)",
		in:   inRestore(withReported(""), withDeployed(nil), obsRestoreBackup(fxNightly, linstorv1.BackupFailed, fxFrom), obsDBEmpty(true)),
		want: expect{restore: RestoreFailed, restoreBackup: fxNightly, restoreUID: fxUID, stop: "clear spec.database.restoreFrom", problem: linstorv1.ReasonInvalidSpec,
			events: ev("RestoreFailed")},
	},
	{
		name: "a not-yet-Completed backup waits (no status change) rather than failing",
		in:   inRestore(obsRestoreBackup(fxNightly, linstorv1.BackupRunning, fxFrom), obsDBEmpty(true), obsStopped()),
		want: expect{deployed: dv(fxTo, fxTo), requeue: Poll, problem: linstorv1.ReasonInvalidSpec, problemHas: []string{"not Completed yet"}},
	},
	{
		name: "a backup that disappears while Stopping: waits with the controller kept stopped",
		in:   inRestore(withRestore(RestoreStopping, fxNightly, fxUID, fxFrom), obsRestoreBackupMissing(fxNightly), obsStopped()),
		want: expect{restore: RestoreStopping, deployed: dv(fxTo, fxTo), stop: "restore of " + fxNightly, requeue: Poll,
			problem: linstorv1.ReasonInvalidSpec, check: sameRestore},
	},
	{
		name: "restore waits while an upgrade is in progress",
		in: inPhase(linstorv1.UpgradeController, withRestoreFrom(fxNightly), obsRestoreBackup(fxNightly, linstorv1.BackupCompleted, fxFrom),
			obsDBEmpty(true), obsStopped(), obsLinstor(fxFrom)),
		want: expect{upgrade: linstorv1.UpgradeController, deployed: dv(fxTo, fxFrom), fence: true, upgrading: true, requeue: Poll,
			problem: linstorv1.ReasonUpgradeInProgress},
	},
	{
		name: "restore waits while a rollback is in progress",
		in: inPhase(linstorv1.UpgradeRollingBack, withRestoreFrom(fxNightly), obsRestoreBackup(fxNightly, linstorv1.BackupCompleted, fxFrom),
			obsDBEmpty(true), obsUpgradeBackup(linstorv1.BackupCompleted, "done")),
		want: expect{upgrade: linstorv1.UpgradeRollingBack, deployed: dv(fxFrom, fxFrom), stop: fxPreBackup, fence: true, upgrading: true,
			requeue: Poll, problem: linstorv1.ReasonUpgradeInProgress},
	},
	{
		name: "a Stopping restore recorded for another UID does not bypass the confirmation",
		in:   inRestore(withRestore(RestoreStopping, fxNightly, fxOldUID, fxFrom), obsDBEmpty(false), obsStopped()),
		want: expect{restore: RestoreAwaitingConfirmation, restoreUID: fxUID, deployed: dv(fxTo, fxTo),
			problem: linstorv1.ReasonRestoreNeedsConfirmation},
	},
	{
		name: "naming another backup while Stopping needs its own confirmation on a live database",
		in: inRestore(withRestoreFrom(fxWeekly), withRestore(RestoreStopping, fxNightly, fxUID, fxFrom),
			obsRestoreBackup(fxWeekly, linstorv1.BackupCompleted, fxTo), obsDBEmpty(false), obsStopped()),
		want: expect{restore: RestoreAwaitingConfirmation, restoreBackup: fxWeekly, deployed: dv(fxTo, fxTo),
			problem: linstorv1.ReasonRestoreNeedsConfirmation, problemHas: []string{fxWeekly + "/" + fxUID}},
	},
	{
		name: "Stopping with the backup not observed yet keeps the controller stopped",
		in:   inRestore(withRestore(RestoreStopping, fxNightly, fxUID, fxFrom), obsNoRestoreBackup()),
		want: expect{restore: RestoreStopping, deployed: dv(fxTo, fxTo), stop: "restore of " + fxNightly, upgrading: true, requeue: soon,
			check: sameRestore},
	},
	{
		name: "an external controller refuses restoreFrom: the operator never writes a database it does not run",
		in:   inRestore(withExternalController(), obsDBEmpty(true), obsStopped()),
		want: expect{restore: RestoreFailed, deployed: &linstorv1.DeployedVersions{Satellites: fxTo}, problem: linstorv1.ReasonInvalidSpec,
			events: ev("RestoreFailed")},
	},
}

func TestStepRestore(t *testing.T) { runStepCases(t, restoreCases) }
