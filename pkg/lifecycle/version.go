package lifecycle

import (
	"fmt"
	"strings"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/upgrade"
)

// stepVersion decides which version runs and moves an upgrade on.
func stepVersion(in *Input, out *Output) {
	st := &out.State
	if in.Spec.ExternalController {
		// The controller's version is not ours to change: satellites follow it (the
		// release's target until it answers).
		st.Deployed = &linstorv1.DeployedVersions{Satellites: or(in.Spec.Reported, in.Release.Target.String())}
		st.Upgrade = nil
		return
	}
	if InProgress(st.Upgrade) {
		switch cancel(in, out) {
		case upgradeWanted:
			out.Upgrading = true
			advance(in, out)
			pinnedBack(in, out)
			return
		case cancelWaiting:
			return
		}
	}
	running := RunningVersion(in.Spec.Reported, st.Upgrade)
	if running == "" && st.Deployed != nil {
		running = st.Deployed.Controller // deployed, not answering yet
	}
	if running == "" && in.Spec.Requested == "" {
		// No record of a version, but is the database new? A recreated LinstorCluster
		// (GitOps, Velero) has an empty status over a live database: deploying this
		// release's version would migrate it with no preflight, backup or approval.
		empty := in.Observed.DatabaseEmpty
		switch {
		case empty == nil:
			out.StopController, out.Requeue = "the LINSTOR database is being looked at", soon
			return
		case !*empty:
			msg := "LINSTOR's database exists, but this LinstorCluster has no record of the version that runs it (a recreated object, a lost status, or a database another installation made). " +
				writtenBy(in.Observed.DatabaseSchema, in.Release) +
				"The operator does not guess, since a newer version would migrate the database with no backup; set spec.version, and an upgrade from there runs with preflight, backup and rehearsal. The LINSTOR controller stays stopped meanwhile."
			out.StopController = "spec.version is needed: the database's version is unknown"
			out.Problem = Problem{linstorv1.ReasonInvalidSpec, msg}
			out.Requeue = Poll
			return
		}
	}
	d := in.Release.Decide(upgrade.Input{Running: running, Requested: in.Spec.Requested, Policy: in.Spec.Policy})
	keep := func() {
		if st.Deployed == nil {
			st.Deployed = versions(running, running)
		}
	}
	switch d.Action {
	case upgrade.Install, upgrade.Stay:
		st.Deployed = versions(d.To.String(), d.To.String())
		if st.Upgrade != nil && st.Upgrade.Phase != linstorv1.UpgradeSucceeded {
			st.Upgrade = nil // the version question is settled
		}
	case upgrade.Refuse:
		keep()
		// Since when, kept while the same refusal stands (as an approval's wait below).
		refusedSince := metav1.NewTime(in.Now)
		if u := st.Upgrade; u != nil && u.Phase == linstorv1.UpgradeRefused && u.From == running && u.To == d.Final.String() && u.PhaseStartedAt != nil {
			refusedSince = *u.PhaseStartedAt
		}
		st.Upgrade = &linstorv1.UpgradeStatus{Phase: linstorv1.UpgradeRefused, From: running, To: d.Final.String(), PhaseStartedAt: &refusedSince, Message: d.Message}
		out.Problem = Problem{linstorv1.ReasonUpgradeRefused, d.Message}
	case upgrade.AwaitApproval:
		keep()
		// The wait's start is kept while the same upgrade waits: the alert on an upgrade
		// awaiting approval reads it, and a status rewritten every pass would never settle.
		waitingSince := metav1.NewTime(in.Now)
		if u := st.Upgrade; u != nil && u.Phase == linstorv1.UpgradeAwaitingApproval && u.From == running && u.To == d.Final.String() && u.PhaseStartedAt != nil {
			waitingSince = *u.PhaseStartedAt
		}
		st.Upgrade = &linstorv1.UpgradeStatus{Phase: linstorv1.UpgradeAwaitingApproval, From: running, To: d.Final.String(),
			PhaseStartedAt: &waitingSince, Message: d.Message}
	case upgrade.Upgrade:
		keep()
		if u := st.Upgrade; u != nil && u.Phase == linstorv1.UpgradeRolledBack && u.From == running && u.To == d.To.String() {
			if in.Spec.RetryUpgrade != d.To.String() {
				out.Problem = Problem{linstorv1.ReasonUpgradeFailed, u.Message}
				return // rolled back: retried only when asked to
			}
			// The request is used up by this retry: were it to fail too, the next retry
			// must be asked for again, never looping on its own.
			out.Actions = append(out.Actions, Action{Kind: RemoveAnnotation, Annotation: names.AnnotationRetryUpgrade})
		}
		// The start is recorded before anything is checked or changed.
		now := metav1.NewTime(in.Now)
		st.Upgrade = &linstorv1.UpgradeStatus{Phase: linstorv1.UpgradePreflight, From: running, To: d.To.String(),
			StartedAt: &now, PhaseStartedAt: &now, Message: d.Message}
		st.Deployed = versions(running, running)
		out.Upgrading, out.Requeue = true, soon
		out.Events = append(out.Events, Event{Reason: "UpgradeStarted", Message: d.Message})
	}
}

// cancelOutcome is what cancel decided.
type cancelOutcome int

const (
	// upgradeWanted: the spec still asks for this upgrade; it goes on.
	upgradeWanted cancelOutcome = iota
	// cancelWaiting: cancelled, but the upgrade's backup may still be copying: the
	// upgrade stays in Backup, with the controller stopped and CSI fenced, until the
	// backup has ended.
	cancelWaiting
	// upgradeCancelled: the upgrade is gone; the decision is taken afresh.
	upgradeCancelled
)

// cancellingPrefix starts the message of an upgrade whose cancel waits for its backup;
// the UpgradeCancelling Event is told when it is first set.
const cancellingPrefix = "Cancelling the upgrade "

// cancel ends an upgrade that has changed nothing yet (Preflight, Backup) once the
// spec no longer asks for it: spec.version pinned back to the running version, the
// Manual policy's approval withdrawn, a version this release cannot run, or another
// operator release (installed while Preflight waited) planning another target. The
// decision is then taken afresh in the same pass. In Backup the cancel completes only
// once the upgrade's backup is seen finished: a LINSTOR controller started while the
// database is copied would tear the copy, and nothing else is sure to keep it stopped
// (the backup gate sees only the backups the API server returned, and one created a
// moment ago may not be among them).
func cancel(in *Input, out *Output) cancelOutcome {
	u := out.State.Upgrade
	if u.Phase != linstorv1.UpgradePreflight && u.Phase != linstorv1.UpgradeBackup && u.Phase != linstorv1.UpgradeRehearsal {
		return upgradeWanted // the new controller may have migrated the database: see pinnedBack
	}
	d := in.Release.Decide(upgrade.Input{Running: u.From, Requested: in.Spec.Requested, Policy: in.Spec.Policy})
	if d.Action == upgrade.Upgrade && d.To.String() == u.To {
		return upgradeWanted
	}
	var why string
	switch d.Action {
	case upgrade.Stay:
		why = fmt.Sprintf("spec.version pins %s, the running version", u.From)
	case upgrade.AwaitApproval:
		why = "the upgrade policy is Manual and spec.version no longer approves it"
	case upgrade.Upgrade:
		why = fmt.Sprintf("the upgrade now goes to %s", d.To)
	default:
		why = d.Message
	}
	if copying, requeue := backupMayBeCopying(in, u); copying != "" {
		msg := fmt.Sprintf("%s%s -> %s (%s): %s. The LINSTOR controller stays stopped and the CSI controller fenced until it has ended, "+
			"so the copy stays consistent; the upgrade is cancelled then", cancellingPrefix, u.From, u.To, why, copying)
		if !strings.HasPrefix(u.Message, cancellingPrefix) {
			out.Events = append(out.Events, Event{Reason: "UpgradeCancelling", Message: msg})
		}
		u.Message = msg
		out.State.Deployed = versions(u.From, u.From)
		out.StopController = "the pre-upgrade backup " + u.BackupName + " may still be copying (the upgrade is being cancelled)"
		out.FenceCSI, out.Upgrading, out.Requeue = true, true, requeue
		return cancelWaiting
	}
	msg := fmt.Sprintf("The upgrade %s -> %s was cancelled in %s, before anything changed: %s", u.From, u.To, u.Phase, why)
	if b := in.Observed.UpgradeBackup; u.BackupName != "" && b != nil && b.Name == u.BackupName && b.Found {
		msg += fmt.Sprintf(". LinstorBackup %s is kept", u.BackupName)
	}
	out.Events = append(out.Events, Event{Reason: "UpgradeCancelled", Message: msg})
	if u.Phase == linstorv1.UpgradeRehearsal {
		// It only ever touched a copy.
		out.Actions = append(out.Actions, Action{Kind: DeleteRehearsal, Job: RehearsalName(in.Spec.ClusterName, u)})
	}
	out.State.Upgrade = nil
	return upgradeCancelled
}

// backupMayBeCopying says why the upgrade's backup may still be copying the database
// ("" when it certainly is not), and when to look again. A backup never asked for (no
// name saved yet: the name is saved before the backup is created) does not copy; a
// named one copies until it is seen Completed or Failed. One that is not there is
// waited for until the phase timeout: it may have been created and not be seen yet.
func backupMayBeCopying(in *Input, u *linstorv1.UpgradeStatus) (string, time.Duration) {
	if u.Phase != linstorv1.UpgradeBackup || u.BackupName == "" || in.Spec.ExternalDatabase != "" {
		return "", 0
	}
	b := in.Observed.UpgradeBackup
	switch {
	case b == nil || b.Name != u.BackupName:
		return fmt.Sprintf("the pre-upgrade backup %s was not looked at yet", u.BackupName), soon
	case !b.Found && expired(in, u):
		return "", 0
	case !b.Found:
		return fmt.Sprintf("LinstorBackup %s does not exist (yet); it is waited for until the phase timeout (%s)", u.BackupName, in.phaseTimeout()), Poll
	case b.Phase == linstorv1.BackupCompleted || b.Phase == linstorv1.BackupFailed:
		return "", 0
	}
	return fmt.Sprintf("the pre-upgrade backup %s is still being taken", u.BackupName), Poll
}

// pinnedBack: spec.version pins the version the upgrade started from, but the new
// controller is deployed (it migrates the database on start), so stopping now could
// leave it half migrated. The upgrade finishes, or rolls back on its own if it fails;
// the status says how to return to the old version afterwards.
func pinnedBack(in *Input, out *Output) {
	u := out.State.Upgrade
	if !InProgress(u) || u.Phase == linstorv1.UpgradeRollingBack || in.Spec.Requested != u.From || out.Problem.Message != "" {
		return
	}
	back := "restore the backup of your external database and set spec.version to " + u.From
	if u.BackupName != "" {
		back = fmt.Sprintf("set spec.database.restoreFrom: %s (taken at %s before the migration)", u.BackupName, u.From)
	}
	ends := "The upgrade finishes, or rolls back on its own if it fails"
	if u.Phase == linstorv1.UpgradeVerify {
		ends = "The satellites already run " + u.To + ": the upgrade finishes once the replicas are healthy again"
	}
	out.Problem = Problem{linstorv1.ReasonUpgradeRefused, fmt.Sprintf(
		"spec.version %s cannot stop the upgrade to %s in phase %s: the new controller may have migrated the database, and LINSTOR cannot downgrade it. "+
			"%s; to return to %s afterwards, %s.", u.From, u.To, u.Phase, ends, u.From, back)}
}

func or(v, def string) string {
	if v != "" {
		return v
	}
	return def
}

// maxListed keeps status messages readable (and within the CRD's limits) on large
// clusters: the first problems, and how many more there are.
const maxListed = 10

func upTo(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, "; ")
	}
	return fmt.Sprintf("%s; and %d more", strings.Join(items[:n], "; "), len(items)-n)
}

// RunningVersion is the LINSTOR version running, from the reported one (status.version)
// and the upgrade record. status.version is the observer's last reading, which can lag
// behind an upgrade (Controller, Satellites and Verify may pass before its next cycle,
// or while its cycles fail). A Succeeded upgrade saw LINSTOR answer at To, and the
// migrated database never runs the old version again (a restore clears the record):
// taking the lagging reading would start the upgrade anew and deploy the old version
// on it, or label a backup of the migrated database with the old version.
//
// The same holds from Satellites on: the controller answered at To before Satellites
// was entered, and a backup taken in Verify holds the migrated database.
func RunningVersion(reported string, u *linstorv1.UpgradeStatus) string {
	if u != nil && reported == u.From {
		switch u.Phase {
		case linstorv1.UpgradeSatellites, linstorv1.UpgradeVerify, linstorv1.UpgradeSucceeded:
			return u.To
		}
	}
	return reported
}

// DatabaseVersion is the LINSTOR version whose schema the database holds, for a backup
// that starts copying now (BackupWaits is empty, so no migration is under way): the
// version running (RunningVersion), or, when LINSTOR has not answered since the
// database was replaced or the controller started (status.version is cleared then), the
// controller version deployed on it.
func DatabaseVersion(st *linstorv1.LinstorClusterStatus) string {
	if v := RunningVersion(st.Version, st.Upgrade); v != "" {
		return v
	}
	if st.Deployed != nil {
		return st.Deployed.Controller
	}
	return ""
}

// writtenBy says which LINSTOR versions last ran a database that stores schema number
// stored (LinstorVersion/version), and which version to set: the newest of them, which
// runs no migration on it.
func writtenBy(stored int64, r upgrade.Release) string {
	newest, versions, ok := upgrade.WrittenBy(stored)
	switch {
	case stored == 0:
		return "Its LinstorVersion object is missing, so its schema is unknown: set spec.version to the LINSTOR version that wrote it (for example the linstorVersion of its latest LinstorBackup). "
	case !ok:
		return fmt.Sprintf("Its schema number %d is not one of LINSTOR 1.29.0 to %s: set spec.version to the version that wrote it, if this release runs it. ", stored, r.Target)
	case !r.Runs(newest):
		return fmt.Sprintf("LINSTOR %s last ran it (schema number %d); this release does not run %s: take it over with an operator release that does, or set spec.version to a version this release runs (%s) knowing that it migrates the database on start. ",
			versions, stored, newest, r.RunnableList())
	}
	return fmt.Sprintf("LINSTOR %s last ran it (schema number %d): set spec.version to %s, which runs it without migrating it. ", versions, stored, newest)
}
