package lifecycle

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// The upgrade phases, in order: Preflight, Backup, Rehearsal, Controller, Satellites, Verify, and
// RollingBack when Controller or Satellites fail (stepVersion decides when one runs).

// advance runs the current upgrade phase and moves to the next when it is done.
func advance(in *Input, out *Output) {
	u := out.State.Upgrade
	switch u.Phase {
	case linstorv1.UpgradePreflight:
		out.State.Deployed = versions(u.From, u.From)
		preflight(in, out)
	case linstorv1.UpgradeBackup:
		out.State.Deployed = versions(u.From, u.From)
		backup(in, out)
	case linstorv1.UpgradeRehearsal:
		out.State.Deployed = versions(u.From, u.From)
		rehearsal(in, out)
	case linstorv1.UpgradeController:
		out.State.Deployed = versions(u.To, u.From)
		out.FenceCSI = true
		controller(in, out)
	case linstorv1.UpgradeSatellites:
		out.State.Deployed = versions(u.To, u.To)
		out.FenceCSI = true
		satellites(in, out)
	case linstorv1.UpgradeVerify:
		out.State.Deployed = versions(u.To, u.To)
		verify(in, out)
	case linstorv1.UpgradeRollingBack:
		out.State.Deployed = versions(u.From, u.From)
		out.FenceCSI = true
		rollBack(in, out)
	}
}

func enter(in *Input, out *Output, phase linstorv1.UpgradePhase, msg string) {
	u := out.State.Upgrade
	now := metav1.NewTime(in.Now)
	u.Phase, u.PhaseStartedAt, u.Message = phase, &now, msg
	// What runs follows the phase entered in the same pass: the old controller never
	// starts again on the backed-up database before the new one replaces it.
	switch phase {
	case linstorv1.UpgradeRehearsal:
		out.State.Deployed, out.FenceCSI = versions(u.From, u.From), true
		out.StopController = rehearsing(u)
	case linstorv1.UpgradeController:
		out.State.Deployed, out.FenceCSI = versions(u.To, u.From), true
	case linstorv1.UpgradeSatellites:
		out.State.Deployed, out.FenceCSI = versions(u.To, u.To), true
	case linstorv1.UpgradeVerify, linstorv1.UpgradeSucceeded:
		out.State.Deployed, out.FenceCSI = versions(u.To, u.To), false
	case linstorv1.UpgradeRollingBack:
		out.State.Deployed, out.FenceCSI = versions(u.From, u.From), true
	}
	out.Requeue = soon
	out.Events = append(out.Events, Event{Reason: "Upgrade" + string(phase), Message: msg})
}

func expired(in *Input, u *linstorv1.UpgradeStatus) bool {
	return u.PhaseStartedAt != nil && in.Now.Sub(u.PhaseStartedAt.Time) > in.phaseTimeout()
}

func wait(out *Output, msg string) {
	out.State.Upgrade.Message = msg
	out.Requeue = Poll
}

// preflight: LINSTOR answers at the old version, every satellite is ONLINE, every
// replica healthy, and there is a way to back up. Until then the upgrade waits.
func preflight(in *Input, out *Output) {
	u, l := out.State.Upgrade, in.Observed.Linstor
	switch {
	case l == nil:
		out.Requeue = soon
	case l.Err != "":
		wait(out, "Preflight: waiting: LINSTOR controller not reachable: "+l.Err)
	case l.Version != u.From:
		wait(out, fmt.Sprintf("Preflight: waiting: LINSTOR reports %s, expected %s", l.Version, u.From))
	case len(l.Problems) > 0:
		wait(out, "Preflight: waiting: "+upTo(l.Problems, maxListed))
	case in.Spec.ExternalDatabase != "" && !in.Spec.ExternalBackupAcknowledged:
		wait(out, "Preflight: waiting: the database is external: back it up, then set spec.database.externalBackupAcknowledged: true")
	default:
		enter(in, out, linstorv1.UpgradeBackup, fmt.Sprintf("Preflight passed; backing up the LINSTOR %s database", u.From))
	}
}

// BackupName is the pre-upgrade backup's name: derived from the start, so a restarted
// operator finds the same one.
func BackupName(cluster string, u *linstorv1.UpgradeStatus) string {
	return fmt.Sprintf("%s-before-%s-%d", cluster, strings.ReplaceAll(u.To, ".", "-"), u.StartedAt.Unix())
}

// backup takes a LinstorBackup (the controller is stopped meanwhile) and waits for it.
// A failed or late backup ends the upgrade before anything changed.
func backup(in *Input, out *Output) {
	u := out.State.Upgrade
	if in.Spec.ExternalDatabase != "" {
		enter(in, out, linstorv1.UpgradeController, "External database backed up by the admin; starting the controller at "+u.To+
			" (no rehearsal: the operator has no copy of an external database to rehearse the migration on)")
		return
	}
	out.FenceCSI = true
	if u.BackupName == "" {
		u.BackupName = BackupName(in.Spec.ClusterName, u)
	}
	abort := func(why string) {
		u.Phase, u.Message = linstorv1.UpgradeRolledBack, fmt.Sprintf("The pre-upgrade backup %s; nothing was changed, LINSTOR stays at %s", why, u.From)
		out.Problem = Problem{linstorv1.ReasonUpgradeFailed, u.Message}
		out.Events = append(out.Events, Event{Warning: true, Reason: "UpgradeAborted", Message: u.Message})
		out.Upgrading, out.FenceCSI, out.Requeue = false, false, soon
	}
	b := in.Observed.UpgradeBackup
	switch {
	case expired(in, u) && (b == nil || b.Name != u.BackupName || !b.Found || b.Phase != linstorv1.BackupCompleted && b.Phase != linstorv1.BackupFailed):
		msg := "was not taken"
		if b != nil && b.Found {
			msg = b.Message
		}
		abort(fmt.Sprintf("%s did not complete within %s (%s)", u.BackupName, in.phaseTimeout(), msg))
		if b != nil && b.Name == u.BackupName && b.Found {
			// It may still be copying: LINSTOR starts again only once it has ended.
			out.StopController = "LinstorBackup " + b.Name + " is being taken"
		}
		return
	case b == nil || b.Name != u.BackupName || !b.Found:
		out.Actions = append(out.Actions, Action{Kind: CreateBackup, Backup: u.BackupName, From: u.From, To: u.To})
	case b.Phase == linstorv1.BackupCompleted && in.Observed.RunningBackup != "" && in.Observed.RunningBackup != b.Name:
		// Another copy still reads the database: the migration would tear it.
		u.Message = fmt.Sprintf("Backup: %s completed; waiting for LinstorBackup %s to finish copying before the migration", b.Name, in.Observed.RunningBackup)
	case b.Phase == linstorv1.BackupCompleted:
		if skip := rehearsalSkipped(in); skip != "" {
			enter(in, out, linstorv1.UpgradeController, fmt.Sprintf("Backup %s completed (%s); the migration is not rehearsed (%s); starting the controller at %s, which migrates the database",
				b.Name, b.Checksum, skip, u.To))
			return
		}
		enter(in, out, linstorv1.UpgradeRehearsal, fmt.Sprintf("Backup %s completed (%s); rehearsing the migration to %s on a copy of it (Job %s)",
			b.Name, b.Checksum, u.To, RehearsalName(in.Spec.ClusterName, u)))
		return
	case b.Phase == linstorv1.BackupFailed:
		abort(fmt.Sprintf("%s failed (%s)", b.Name, b.Message))
		return
	default:
		u.Message = "Backup: " + b.Message
	}
	out.StopController = "the pre-upgrade backup " + u.BackupName + " is being taken"
	out.Requeue = Poll
}

// RehearsalName is the rehearsal Job's name: derived from the upgrade's start, so a
// restarted operator (or another release taking over) finds the same Job, and a retry
// makes a new one. At most 63 characters (the job-name label of its pods).
func RehearsalName(cluster string, u *linstorv1.UpgradeStatus) string {
	suffix := fmt.Sprintf("-rehearse-%s-%d", strings.ReplaceAll(u.To, ".", "-"), u.StartedAt.Unix())
	if max := 63 - len(suffix); len(cluster) > max {
		cluster = strings.TrimRight(cluster[:max], "-.")
	}
	return cluster + suffix
}

// rehearsalSkipped says why the migration is not rehearsed, "" when it is.
func rehearsalSkipped(in *Input) string {
	switch {
	case in.Spec.RehearsalOff:
		return "spec.upgrade.rehearsal is false"
	case in.Spec.RehearsalUnavailable != "":
		return in.Spec.RehearsalUnavailable
	}
	return ""
}

func rehearsing(u *linstorv1.UpgradeStatus) string {
	return "the migration to " + u.To + " is rehearsed on a copy of " + u.BackupName + " (the live database stays as backed up)"
}

// maxRehearsalMessage bounds what the status quotes of a failed rehearsal's output.
const maxRehearsalMessage = 1024

// rehearsal waits for the Job that runs the new version's migrations on a copy of the
// pre-upgrade backup. The controller stays stopped and CSI fenced meanwhile, so the
// live database stays exactly the backup (a later rollback loses nothing). A failed or
// late rehearsal ends the upgrade before anything changed, like a failed backup.
func rehearsal(in *Input, out *Output) {
	u := out.State.Upgrade
	name := RehearsalName(in.Spec.ClusterName, u)
	out.FenceCSI = true
	r := in.Observed.Rehearsal
	switch {
	case r == nil || r.Name != name:
		out.StopController, out.Requeue = rehearsing(u), soon
		return
	case r.Found && r.Succeeded:
		enter(in, out, linstorv1.UpgradeController, fmt.Sprintf("Rehearsal %s passed: LINSTOR %s migrated a copy of %s; starting the controller at %s, which migrates the database",
			name, u.To, u.BackupName, u.To))
		out.Actions = append(out.Actions, Action{Kind: DeleteRehearsal, Job: name})
		return
	case r.Found && r.Failed:
		// The Job stays for its logs until the next attempt or the LinstorCluster's deletion.
		abortRehearsal(in, out, upToBytes(or(r.Message, "the Job failed without a message"), maxRehearsalMessage))
		return
	case expired(in, u):
		abortRehearsal(in, out, fmt.Sprintf("it did not finish within %s", in.phaseTimeout()))
		out.Actions = append(out.Actions, Action{Kind: DeleteRehearsal, Job: name})
		return
	case !r.Found:
		u.Message = fmt.Sprintf("Rehearsal: starting Job %s, which migrates a copy of %s with LINSTOR %s", name, u.BackupName, u.To)
		out.Actions = append(out.Actions, Action{Kind: CreateRehearsal, Job: name, Backup: u.BackupName, From: u.From, To: u.To})
	default:
		u.Message = fmt.Sprintf("Rehearsal: Job %s migrates a copy of %s with LINSTOR %s", name, u.BackupName, u.To)
	}
	out.StopController, out.Requeue = rehearsing(u), Poll
}

// abortRehearsal ends the upgrade: nothing was changed, the old controller starts
// again on the database it stopped on, and the backup is kept.
func abortRehearsal(in *Input, out *Output, why string) {
	u := out.State.Upgrade
	u.Phase = linstorv1.UpgradeRolledBack
	u.Message = fmt.Sprintf("The rehearsal of the migration from %s to %s on a copy of the database failed: %s; nothing was changed, LINSTOR stays at %s. "+
		"LinstorBackup %s is kept. Fix the cause, then annotate the LinstorCluster %s=%s to retry.",
		u.From, u.To, why, u.From, u.BackupName, names.AnnotationRetryUpgrade, u.To)
	out.Problem = Problem{linstorv1.ReasonUpgradeFailed, u.Message}
	out.Events = append(out.Events, Event{Warning: true, Reason: "UpgradeRehearsalFailed", Message: u.Message})
	out.State.Deployed = versions(u.From, u.From)
	out.Upgrading, out.FenceCSI, out.StopController, out.Requeue = false, false, "", soon
}

// upToBytes keeps the first n bytes of s (at a rune boundary), saying it cut.
func upToBytes(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + " […]"
}

// controller waits for the controller at the new version (it migrates the database on
// start); if it does not come up in time, the upgrade rolls back.
func controller(in *Input, out *Output) {
	u, l := out.State.Upgrade, in.Observed.Linstor
	switch {
	case l == nil:
		out.Requeue = soon
		return
	case l.Err == "" && l.Version == u.To:
		enter(in, out, linstorv1.UpgradeSatellites, fmt.Sprintf("Controller runs LINSTOR %s; moving the satellites", u.To))
		return
	case l.Err != "":
		u.Message = fmt.Sprintf("Controller: waiting for LINSTOR %s to answer: %s", u.To, l.Err)
	default:
		u.Message = fmt.Sprintf("Controller: waiting for LINSTOR %s, it reports %s", u.To, l.Version)
	}
	if expired(in, u) {
		startRollback(in, out, fmt.Sprintf("the controller did not come up at %s within %s (%s)", u.To, in.phaseTimeout(), u.Message))
		return
	}
	out.Requeue = Poll
}

// satellites waits until every satellite is ONLINE at the new version. An unreachable
// controller counts against the phase's time like a slow satellite.
func satellites(in *Input, out *Output) {
	u, l := out.State.Upgrade, in.Observed.Linstor
	switch {
	case l == nil:
		out.Requeue = soon
		return
	case l.Err != "":
		u.Message = "Satellites: cannot list LINSTOR nodes: " + l.Err
	case len(l.Waiting) == 0:
		enter(in, out, linstorv1.UpgradeVerify, fmt.Sprintf("All satellites ONLINE at %s; verifying", u.To))
		return
	default:
		u.Message = "Satellites: waiting for " + upTo(l.Waiting, maxListed)
	}
	if expired(in, u) {
		startRollback(in, out, fmt.Sprintf("satellites did not come up at %s within %s (%s)", u.To, in.phaseTimeout(), u.Message))
		return
	}
	out.Requeue = Poll
}

// stalledPrefix starts the message of a Verify phase past its timeout; the
// UpgradeStalled Event is told when it is first set.
const stalledPrefix = "Verify: stalled"

// verify waits until every replica is healthy again. No rollback: the satellites
// already run the new version. Past the phase timeout the upgrade is Degraded
// (UpgradeStalled), naming what it waits for and the way out for a node that is gone.
func verify(in *Input, out *Output) {
	u, l := out.State.Upgrade, in.Observed.Linstor
	waiting := func(what string) {
		if !expired(in, u) {
			wait(out, "Verify: waiting: "+what)
			return
		}
		msg := fmt.Sprintf("%s for longer than %s, waiting for: %s. The upgrade cannot roll back (the satellites run %s); it finishes once the replicas are healthy. "+
			"Bring the named nodes back, or, for a node gone for good, annotate the LinstorCluster %s=<node> (honoured only while LINSTOR reports it OFFLINE and no peer's DRBD is connected to it).",
			stalledPrefix, in.phaseTimeout(), what, u.To, names.AnnotationAcknowledgeLostNodes)
		if !strings.HasPrefix(u.Message, stalledPrefix) {
			out.Events = append(out.Events, Event{Warning: true, Reason: "UpgradeStalled", Message: msg})
		}
		wait(out, msg)
		out.Problem = Problem{linstorv1.ReasonUpgradeStalled, msg}
	}
	switch {
	case l == nil:
		out.Requeue = soon
	case l.Err != "":
		waiting("LINSTOR to answer: " + l.Err)
	case len(l.Problems) > 0:
		waiting(upTo(l.Problems, maxListed))
	default:
		took := in.Now.Sub(u.StartedAt.Time).Round(time.Second)
		enter(in, out, linstorv1.UpgradeSucceeded, fmt.Sprintf("Upgraded LINSTOR from %s to %s in %s; backup %s kept", u.From, u.To, took, or(u.BackupName, "(external)")))
		out.Upgrading = false
	}
}

// startRollback: with the operator's own backup the database goes back to it; with
// an external database only the admin can.
func startRollback(in *Input, out *Output, why string) {
	u := out.State.Upgrade
	if u.BackupName == "" {
		// The database is external: only the admin can restore it. LINSTOR does not
		// refuse a database a newer version migrated (the SQL DbMigrater skips applied
		// migrations it does not know; DbK8sCrd.migrate runs nothing for a newer one), so
		// the old version stays stopped until the admin confirms the restore.
		msg := "Rolling back: " + why
		out.Events = append(out.Events, Event{Warning: true, Reason: "UpgradeFailed", Message: fmt.Sprintf("Rolling back to %s: %s", u.From, why)})
		enter(in, out, linstorv1.UpgradeRollingBack, msg)
		out.State.Deployed = versions(u.From, u.From)
		externalRollback(in, out)
		return
	}
	out.Events = append(out.Events, Event{Warning: true, Reason: "UpgradeFailed", Message: fmt.Sprintf("Rolling back to %s: %s", u.From, why)})
	enter(in, out, linstorv1.UpgradeRollingBack, "Rolling back: "+why)
	out.State.Deployed = versions(u.From, u.From)
	out.StopController = "the database is being restored from " + u.BackupName
}

// rollBack restores the backup with the controller stopped; AfterAction then starts
// the old version. Without a usable backup LINSTOR stays stopped: the database may be
// half migrated and no version can run it safely.
func rollBack(in *Input, out *Output) {
	u := out.State.Upgrade
	if u.BackupName == "" {
		externalRollback(in, out)
		return
	}
	out.StopController = "the database is being restored from " + u.BackupName
	b := in.Observed.UpgradeBackup
	switch {
	case b == nil || b.Name != u.BackupName:
		out.Requeue = soon
		return
	case !b.Found || b.Phase != linstorv1.BackupCompleted:
		what := "is gone"
		if b.Found {
			what = "is not Completed"
		}
		out.Problem = Problem{linstorv1.ReasonUpgradeFailed, fmt.Sprintf(
			"Rolling back to %s: LinstorBackup %s %s. LINSTOR stays stopped: its database may be half migrated. Recreate LinstorBackup %s from its Secrets or your own copy.",
			u.From, u.BackupName, what, u.BackupName)}
		out.Requeue = Poll
		return
	case !in.Observed.ControllerStopped:
		out.Requeue = Poll
		return
	}
	out.Actions = append(out.Actions, Action{Kind: RestoreDatabase, Backup: u.BackupName})
}

// UpgradeID names an upgrade: what an admin confirms a restore of an external database
// with (the same as its backup's name would be).
func UpgradeID(cluster string, u *linstorv1.UpgradeStatus) string { return BackupName(cluster, u) }

// externalRollback keeps the old version stopped until the admin confirms, with the
// upgrade's identity, that the external database was restored from the backup taken
// before the upgrade: LINSTOR would start on the migrated schema and corrupt it.
func externalRollback(in *Input, out *Output) {
	u := out.State.Upgrade
	id := UpgradeID(in.Spec.ClusterName, u)
	cause := strings.TrimPrefix(strings.SplitN(u.Message, ". The database is external", 2)[0], "Rolling back: ")
	if in.Spec.ConfirmDatabaseRestored != id {
		u.Message = fmt.Sprintf("Rolling back: %s. The database is external: LINSTOR %s stays stopped, as it would start on the schema %s migrated. "+
			"Restore the external database from the backup you took before the upgrade, then annotate the LinstorCluster %s=%s",
			cause, u.From, u.To, names.AnnotationConfirmDatabaseRestored, id)
		out.Problem = Problem{linstorv1.ReasonRollbackNeedsConfirmation, u.Message}
		out.StopController = "the external database must be restored from the pre-upgrade backup (annotation " + names.AnnotationConfirmDatabaseRestored + ")"
		// The annotation wakes the controller: nothing to poll for.
		out.Upgrading, out.FenceCSI = true, true
		return
	}
	u.Phase = linstorv1.UpgradeRolledBack
	u.Message = fmt.Sprintf("The upgrade to %s failed and was rolled back: the external database was restored by the admin (%s) and LINSTOR %s started again. Cause: %s. "+
		"Fix the cause, then annotate the LinstorCluster %s=%s to retry.", u.To, id, u.From, cause, names.AnnotationRetryUpgrade, u.To)
	out.Problem = Problem{linstorv1.ReasonUpgradeFailed, u.Message}
	out.State.Deployed = versions(u.From, u.From)
	out.Actions = append(out.Actions, Action{Kind: RemoveAnnotation, Annotation: names.AnnotationConfirmDatabaseRestored})
	out.Events = append(out.Events, Event{Warning: true, Reason: "UpgradeRolledBack", Message: u.Message})
	out.Upgrading, out.FenceCSI, out.VersionStale, out.Requeue = false, false, true, soon
}
