package lifecycle

import (
	"fmt"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// stepRestore handles spec.database.restoreFrom. It reports whether the restore
// decides this pass (the version logic then waits).
func stepRestore(in *Input, out *Output) bool {
	spec, r := in.Spec, out.State.Restore
	if adoptMarker(in, out) {
		return true
	}
	useUpConfirmation(in, out)
	if r != nil && r.Phase == RestoreRestoring {
		return continueRestore(in, out)
	}
	if spec.RestoreFrom == "" {
		// Nothing was touched before Restoring: clearing the field cancels a restore
		// that waits or stops the controller, and forgets a finished one (so the same
		// backup can be named again; the Events keep the history).
		out.State.Restore = nil
		return false
	}
	name := spec.RestoreFrom
	// firstStart holds LINSTOR's very first start (nothing was ever deployed for this
	// object) while a restore is asked for and has not replaced the database: started
	// on an empty database, LINSTOR would be given nodes, pools and new volumes by the
	// operator and CSI, and the restore would then have to replace a live database
	// (and ask for a confirmation) or be given up. A new cluster restored after a
	// disaster starts on the restored database, or not at all.
	firstStart := func(why string) bool {
		if in.State.Deployed != nil {
			return false
		}
		out.StopController = "LINSTOR's first start waits for the restore of " + name + ": " + why +
			"; to start LINSTOR with an empty database instead, clear spec.database.restoreFrom"
		return true
	}
	if r != nil && r.BackupName == spec.RestoreFrom {
		switch r.Phase {
		case RestoreRestored:
			return false
		case RestoreFailed:
			// Not while a confirmation is still there: it is removed this pass
			// (useUpConfirmation), and were that removal lost after the failure is
			// forgotten, it would let the new backup replace a live database unasked.
			if b := in.Observed.RestoreBackup; r.BackupUID != "" && b != nil && b.Name == name && b.Found && b.UID != r.BackupUID && spec.ConfirmRestore == "" {
				// A new LinstorBackup of that name (an import created again once its
				// Secret or key was fixed): a new request, decided from the next pass
				// on with everything it needs observed.
				out.State.Restore = nil
				out.Requeue = soon
				out.Events = append(out.Events, Event{Reason: "RestoreRetried", Message: fmt.Sprintf(
					"LinstorBackup %s was created again since its restore failed: restoring it", name)})
				return firstStart("the new LinstorBackup " + name + " is looked at")
			}
			out.Problem = Problem{linstorv1.ReasonInvalidSpec, r.Message}
			return firstStart("it failed")
		}
	}
	failed := func(msg string) bool {
		out.State.Restore = &linstorv1.RestoreStatus{BackupName: name, ClusterUID: spec.ClusterUID, Phase: RestoreFailed, Message: msg}
		if b := in.Observed.RestoreBackup; b != nil && b.Name == name && b.Found {
			out.State.Restore.BackupUID = b.UID
		}
		out.Problem = Problem{linstorv1.ReasonInvalidSpec, msg}
		out.Events = append(out.Events, Event{Warning: true, Reason: "RestoreFailed", Message: msg})
		return firstStart("it failed")
	}
	waiting := func(reason, msg string) bool {
		out.Problem = Problem{reason, msg}
		out.Requeue = Poll
		if r != nil && r.Phase == RestoreStopping {
			// Stopping began for this request; keep the controller stopped meanwhile.
			out.StopController = "a restore of " + r.BackupName + " is being prepared"
			return true
		}
		return firstStart("the backup is not ready")
	}
	if spec.ExternalController {
		return failed("spec.database.restoreFrom: the LINSTOR controller is external: restore its database where it runs")
	}
	if spec.ExternalDatabase != "" {
		return failed("spec.database.restoreFrom: " + spec.ExternalDatabase)
	}
	if u := out.State.Upgrade; InProgress(u) {
		// A rollback that cannot finish (its backup unreadable) or a stalled Verify would
		// otherwise have no way out: a restore confirmed for this object replaces the
		// database as a whole and settles the version.
		supersedes := (u.Phase == linstorv1.UpgradeRollingBack || Stalled(u)) &&
			(spec.ConfirmRestore == name+"/"+spec.ClusterUID || r != nil && r.Phase == RestoreStopping && r.BackupName == name && r.ClusterUID == spec.ClusterUID)
		if !supersedes {
			msg := "spec.database.restoreFrom waits: an upgrade is in progress"
			if u.Phase == linstorv1.UpgradeRollingBack || Stalled(u) {
				msg += fmt.Sprintf("; to restore %s instead, annotate %s=%s/%s", name, names.AnnotationConfirmRestore, name, spec.ClusterUID)
			}
			return waiting(linstorv1.ReasonUpgradeInProgress, msg)
		}
	}
	b := in.Observed.RestoreBackup
	switch {
	case b == nil || b.Name != name:
		out.Requeue = soon // not observed yet
		if r != nil && r.Phase == RestoreStopping {
			out.StopController, out.Upgrading = "a restore of "+r.BackupName+" is being prepared", true
			return true
		}
		return firstStart("the backup was not looked at yet")
	case !b.Found:
		return waiting(linstorv1.ReasonInvalidSpec, fmt.Sprintf("spec.database.restoreFrom: LinstorBackup %s does not exist", name))
	case b.Cluster != spec.ClusterName:
		return failed(fmt.Sprintf("spec.database.restoreFrom: LinstorBackup %s belongs to LinstorCluster %s, not %s", name, b.Cluster, spec.ClusterName))
	case b.Phase == linstorv1.BackupFailed:
		return failed(fmt.Sprintf("spec.database.restoreFrom: LinstorBackup %s failed: %s", name, b.Message))
	case b.Phase != linstorv1.BackupCompleted:
		return waiting(linstorv1.ReasonInvalidSpec, fmt.Sprintf("spec.database.restoreFrom: LinstorBackup %s is not Completed yet (%s)", name, b.Phase))
	case !in.runs(b.LinstorVersion):
		return failed(fmt.Sprintf("spec.database.restoreFrom: LinstorBackup %s was taken with LINSTOR %q, which this operator release cannot run", name, b.LinstorVersion))
	}
	// A live database is replaced only when the user confirmed it for this very
	// object: a recreated LinstorCluster still naming an old backup must not wipe
	// what LINSTOR holds now.
	confirm := name + "/" + spec.ClusterUID
	empty := in.Observed.DatabaseEmpty
	// Stopping for this backup and this object was already allowed (its confirmation
	// is used up); anything else is a new request.
	stopping := r != nil && r.Phase == RestoreStopping && r.BackupName == name && r.ClusterUID == spec.ClusterUID
	if !stopping && spec.ConfirmRestore != confirm {
		if empty == nil {
			out.Requeue = soon
			return false
		}
		if !*empty {
			msg := fmt.Sprintf("spec.database.restoreFrom would replace LINSTOR's live database with LinstorBackup %s; everything changed since that backup would be lost. "+
				"To go ahead, annotate this LinstorCluster %s=%s; to keep the live database, clear spec.database.restoreFrom.", name, names.AnnotationConfirmRestore, confirm)
			out.State.Restore = &linstorv1.RestoreStatus{BackupName: name, ClusterUID: spec.ClusterUID, Phase: RestoreAwaitingConfirmation,
				LinstorVersion: b.LinstorVersion, Message: msg}
			out.Problem = Problem{linstorv1.ReasonRestoreNeedsConfirmation, msg}
			return false
		}
	}
	// Stop the controller; nothing is touched until it is gone. Entering Stopping is a
	// pass of its own, so the stop is applied and saved before the first write, even
	// when no controller pod happens to run right now.
	out.StopController = "a restore of " + name + " is being prepared"
	out.Upgrading = true
	if !stopping {
		out.State.Restore = &linstorv1.RestoreStatus{BackupName: name, ClusterUID: spec.ClusterUID, BackupUID: b.UID, Phase: RestoreStopping,
			LinstorVersion: b.LinstorVersion, Message: "Stopping the LINSTOR controller to restore " + name}
		if spec.ConfirmRestore != "" {
			out.Actions = append(out.Actions, Action{Kind: RemoveAnnotation, Annotation: names.AnnotationConfirmRestore})
		}
		out.Requeue = soon
		return true
	}
	if !in.Observed.ControllerStopped {
		out.Requeue = Poll
		return true
	}
	if in.Observed.RunningBackup != "" {
		// A copy under way reads the database: it ends (it waits for nothing) before
		// anything is written.
		out.State.Restore.Message = fmt.Sprintf("Waiting for LinstorBackup %s to finish copying the database before restoring %s", in.Observed.RunningBackup, name)
		out.Requeue = Poll
		return true
	}
	// Everything a restore can fail without writing is checked while nothing is
	// written: a damaged chunk, an unknown table or an unreadable object ends the
	// restore as Failed with LINSTOR started again on its intact database. Restoring
	// is saved only when the check passed (AfterAction).
	out.State.Restore.Message = fmt.Sprintf("Checking LinstorBackup %s (every chunk against its checksum, the tables); nothing is touched yet", name)
	out.Actions = append(out.Actions, Action{Kind: CheckRestore, Backup: name})
	return true
}

// useUpConfirmation removes a confirmation the restore it names has already used (its
// removal when Stopping was entered may have been lost): left in place, it would let the
// same backup, named again months later, replace the live database without asking.
func useUpConfirmation(in *Input, out *Output) {
	r := out.State.Restore
	if in.Spec.ConfirmRestore == "" || r == nil || r.ClusterUID != in.Spec.ClusterUID || in.Spec.ConfirmRestore != r.BackupName+"/"+in.Spec.ClusterUID {
		return
	}
	switch r.Phase {
	case RestoreStopping, RestoreRestoring, RestoreRestored, RestoreFailed:
		out.Actions = append(out.Actions, Action{Kind: RemoveAnnotation, Annotation: names.AnnotationConfirmRestore})
	}
}

// adoptMarker: the status holds nothing (a recreated LinstorCluster), but the marker
// kept outside it says the database was being replaced. The replacement is finished
// before LINSTOR starts: it is adopted as a restore in phase Restoring.
func adoptMarker(in *Input, out *Output) bool {
	m, st := in.Observed.Marker, out.State
	if m == nil || in.Spec.ExternalController || st.Deployed != nil || st.Upgrade != nil || st.Restore != nil {
		return false
	}
	now := metav1.NewTime(in.Now)
	switch m.Operation {
	case MarkerUpgrade:
		// The new controller may have migrated the database, or be half way: neither
		// version may start on it. The upgrade rolls back as it would have.
		why := fmt.Sprintf("the LinstorCluster was deleted during the upgrade %s -> %s (begun by LinstorCluster UID %s; recorded in ConfigMap %s, delete it only if this database was abandoned on purpose), "+
			"and the new controller may have migrated the database", m.From, m.To, m.ClusterUID, names.DatabaseReplacementMarker(in.Spec.ClusterName))
		out.State.Upgrade = &linstorv1.UpgradeStatus{Phase: linstorv1.UpgradeController, From: m.From, To: m.To, BackupName: m.Backup, StartedAt: &now, PhaseStartedAt: &now}
		out.Events = append(out.Events, Event{Warning: true, Reason: "UpgradeAdopted", Message: "Rolling back: " + why})
		startRollback(in, out, why)
		out.Upgrading = true
		return true
	case MarkerUpgraded:
		// Verify had begun: the database is at To and the satellites run it.
		msg := fmt.Sprintf("The LinstorCluster was deleted after LINSTOR's database was upgraded to %s (begun by LinstorCluster UID %s): %s runs", m.To, m.ClusterUID, m.To)
		out.State.Deployed = versions(m.To, m.To)
		out.Events = append(out.Events, Event{Reason: "UpgradeAdopted", Message: msg})
		// Settled: the deployed version records it from now on.
		out.Actions = append(out.Actions, Action{Kind: ClearMarker})
		out.Requeue = soon
		return true
	}
	msg := fmt.Sprintf("The LINSTOR database was being replaced (%s of LinstorBackup %s, begun by LinstorCluster UID %s) when the LinstorCluster was deleted; "+
		"the replacement is finished before LINSTOR starts (recorded in ConfigMap %s). To finish it from another backup, name it in spec.database.restoreFrom and confirm it",
		m.Operation, m.Backup, m.ClusterUID, names.DatabaseReplacementMarker(in.Spec.ClusterName))
	out.State.Restore = &linstorv1.RestoreStatus{BackupName: m.Backup, ClusterUID: in.Spec.ClusterUID, Phase: RestoreRestoring, Message: msg}
	out.StopController, out.Upgrading, out.Requeue = "the database is being restored from "+m.Backup, true, soon
	out.Events = append(out.Events, Event{Warning: true, Reason: "RestoreAdopted", Message: msg})
	return true
}

// continueRestore finishes a restore whose database replacement has begun. LINSTOR
// stays stopped until it completed, whatever happens to the request.
func continueRestore(in *Input, out *Output) bool {
	r := out.State.Restore
	target := restoringTarget(in.Spec, r)
	out.StopController = "the database is being restored from " + target
	out.Upgrading = true
	b := in.Observed.RestoreBackup
	usable := b != nil && b.Name == target && b.Found && b.Phase == linstorv1.BackupCompleted && b.Cluster == in.Spec.ClusterName && in.runs(b.LinstorVersion)
	if !usable {
		what := "is gone"
		switch {
		case b == nil || b.Name != target:
			out.Requeue = soon // not observed yet
			return true
		case b.Found && b.Cluster != in.Spec.ClusterName:
			what = "belongs to another LinstorCluster"
		case b.Found && b.Phase != linstorv1.BackupCompleted:
			what = "is not Completed"
		case b.Found:
			what = fmt.Sprintf("was taken with LINSTOR %s, which this release cannot run", b.LinstorVersion)
		}
		out.Problem = Problem{linstorv1.ReasonRestoreIncomplete, fmt.Sprintf(
			"The database is partly replaced by the restore of %s, and LinstorBackup %s %s. LINSTOR stays stopped: a half-replaced database must not run. "+
				"Recreate or restore LinstorBackup %s, or name another Completed backup of this cluster in spec.database.restoreFrom and confirm it with %s=<backup>/%s.",
			r.BackupName, target, what, target, names.AnnotationConfirmRestore, in.Spec.ClusterUID)}
		out.Requeue = Poll
		return true
	}
	if target != r.BackupName {
		// Another complete backup, confirmed for this object, replaces the half-written
		// one as a whole; the confirmation is used up.
		r.BackupName = target
		out.Actions = append(out.Actions, Action{Kind: RemoveAnnotation, Annotation: names.AnnotationConfirmRestore})
	} else if in.Spec.RestoreFrom != "" && in.Spec.RestoreFrom != r.BackupName {
		out.Problem = Problem{linstorv1.ReasonRestoreNeedsConfirmation, fmt.Sprintf(
			"The restore of %s is finished first: the database is partly replaced by it. spec.database.restoreFrom names %s; to switch to it, annotate %s=%s/%s.",
			r.BackupName, in.Spec.RestoreFrom, names.AnnotationConfirmRestore, in.Spec.RestoreFrom, in.Spec.ClusterUID)}
	}
	r.LinstorVersion = b.LinstorVersion
	out.State.Deployed = versions(b.LinstorVersion, b.LinstorVersion)
	if !in.Observed.ControllerStopped {
		out.Requeue = Poll
		return true
	}
	out.Actions = append(out.Actions, Action{Kind: RestoreDatabase, Backup: target})
	return true
}
