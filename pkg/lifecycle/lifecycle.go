package lifecycle

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/upgrade"
)

// Restore phases, recorded in status.restore.phase.
const (
	// RestoreAwaitingConfirmation: the live database would be replaced; the restore
	// waits for a confirmation naming this LinstorCluster's UID. LINSTOR keeps running.
	RestoreAwaitingConfirmation = "AwaitingConfirmation"
	// RestoreStopping: the controller is being stopped; nothing was touched yet, so
	// clearing spec.database.restoreFrom still cancels the restore.
	RestoreStopping = "Stopping"
	// RestoreRestoring: the database is being replaced. It is never started again
	// before the replacement completed.
	RestoreRestoring = "Restoring"
	// RestoreRestored: done; LINSTOR runs on the restored database.
	RestoreRestored = "Restored"
	// RestoreFailed: refused before anything was touched.
	RestoreFailed = "Failed"
)

// ErrBackupUnusable marks a CheckRestore error that no retry changes (a damaged chunk,
// an object that does not decode, a table this release does not know): the restore
// ends Failed. Any other check error (the API server did not answer) is retried.
var ErrBackupUnusable = errors.New("the backup cannot be restored")

// ErrNothingWritten marks an action's error that happened before the action wrote
// anything (the controller wraps pkg/dbbackup's errors of that kind with it).
var ErrNothingWritten = errors.New("nothing was written")

// DefaultPhaseTimeout bounds the upgrade phases that wait, unless the spec says.
const DefaultPhaseTimeout = 10 * time.Minute

// Poll is how often a waiting step is looked at again.
const Poll = 2 * time.Second

// soon moves on to the next step right after the state was saved.
const soon = 100 * time.Millisecond

// State is what is persisted in the LinstorCluster's status.
type State struct {
	Deployed *linstorv1.DeployedVersions
	Upgrade  *linstorv1.UpgradeStatus
	Restore  *linstorv1.RestoreStatus
	// LostNodes is decided by LostNodes before Step, which keeps it as it is; it is
	// saved with the rest.
	LostNodes []linstorv1.LostNode
}

// DeepCopy copies the state.
func (s State) DeepCopy() State {
	out := State{Deployed: s.Deployed.DeepCopy(), Upgrade: s.Upgrade.DeepCopy(), Restore: s.Restore.DeepCopy()}
	if s.LostNodes != nil {
		out.LostNodes = make([]linstorv1.LostNode, len(s.LostNodes))
		for i := range s.LostNodes {
			s.LostNodes[i].DeepCopyInto(&out.LostNodes[i])
		}
	}
	return out
}

// Spec is what the user asks for.
type Spec struct {
	ClusterName string
	ClusterUID  string
	// Requested is spec.version ("" follows the release).
	Requested string
	Policy    linstorv1.UpgradePolicy
	// PhaseTimeout is spec.upgrade.phaseTimeout (zero: DefaultPhaseTimeout).
	PhaseTimeout time.Duration
	// RestoreFrom is spec.database.restoreFrom.
	RestoreFrom string
	// ConfirmRestore, RetryUpgrade and ConfirmDatabaseRestored are the annotations' values.
	ConfirmRestore, RetryUpgrade, ConfirmDatabaseRestored string
	// ExternalController: LINSTOR's controller is not deployed by the operator.
	ExternalController bool
	// ExternalDatabase: the operator cannot back up or restore the database (it says why).
	ExternalDatabase           string
	ExternalBackupAcknowledged bool
	// RehearsalOff is spec.upgrade.rehearsal: false. RehearsalUnavailable says why this
	// operator cannot rehearse ("" when it can): the migration is not rehearsed then.
	RehearsalOff         bool
	RehearsalUnavailable string
	// Reported is status.version, the version LINSTOR last answered with.
	Reported string
}

// Linstor is what LINSTOR answered this pass.
type Linstor struct {
	// Err is set when LINSTOR did not answer.
	Err     string
	Version string
	// Problems: what makes an upgrade unsafe now (linstorstate.UpgradeProblems), read in
	// Preflight and Verify.
	Problems []string
	// Waiting: satellites not ONLINE, read in the Satellites phase.
	Waiting []string
}

// Backup is a LinstorBackup as observed.
type Backup struct {
	Name  string
	Found bool
	// UID tells a LinstorBackup created again under the same name from the one before.
	UID string
	// Cluster is the LinstorCluster it was taken from.
	Cluster        string
	Phase          linstorv1.BackupPhase
	Message        string
	LinstorVersion string
	Checksum       string
	Objects        int64
}

// Rehearsal is the migration rehearsal's Job as observed.
type Rehearsal struct {
	Name string
	// Found: the Job exists. Succeeded and Failed are its Complete and Failed
	// conditions (as the job controller sets them).
	Found, Succeeded, Failed bool
	// Message is why it failed: the termination message of its pod's migrate container,
	// else of load, else the Failed condition's message.
	Message string
}

// Observed is what the controller saw this pass; nil fields were not looked at.
type Observed struct {
	Linstor *Linstor
	// UpgradeBackup is status.upgrade.backupName's LinstorBackup.
	UpgradeBackup *Backup
	// RestoreBackup is the LinstorBackup a restore reads.
	RestoreBackup *Backup
	// DatabaseEmpty: LINSTOR's database holds no object (a new installation).
	DatabaseEmpty *bool
	// DatabaseSchema is LinstorVersion/version's number in a database that is not empty
	// (the last migration applied + 1), 0 when it has none: what tells which LINSTOR
	// versions last ran it.
	DatabaseSchema int64
	// ControllerStopped: no LINSTOR controller pod runs.
	ControllerStopped bool
	// ActiveBackup names a LinstorBackup of the cluster that is Pending or Running.
	ActiveBackup string
	// RunningBackup names a LinstorBackup of the cluster that is copying the database
	// (Running): nothing may write to the database before it ends.
	RunningBackup string
	// Marker is the database-replacement marker kept outside the LinstorCluster (read
	// when the status holds nothing: a recreated object).
	Marker *Marker
	// Rehearsal is Need.Rehearsal's Job.
	Rehearsal *Rehearsal
}

// Input is everything Step decides from; Step reads nothing else (no package-level
// state), so a table row states the whole world it decides in.
type Input struct {
	Spec     Spec
	State    State
	Observed Observed
	// Release is what this operator release runs: its target LINSTOR version (also
	// what the satellites of an external controller run until it answers), the
	// versions it can deploy and the oldest it upgrades from. The controller passes
	// upgrade.Current (or a test's override).
	Release upgrade.Release
	Now     time.Time
}

// ActionKind names what the controller carries out after saving the state.
type ActionKind string

const (
	// CheckRestore checks LinstorBackup Backup for a restore without writing anything:
	// the checksum of every chunk, the tables, what the restore would do. Its outcome
	// goes to AfterAction.
	CheckRestore ActionKind = "CheckRestore"
	// CreateBackup creates LinstorBackup Backup for the upgrade (if it does not exist).
	CreateBackup ActionKind = "CreateBackup"
	// RestoreDatabase replaces the database with LinstorBackup Backup (the controller
	// is stopped) and reads it back against the backup's checksum. Its outcome goes to
	// AfterAction. Before the job starts, the controller proves its view fresh with an
	// optimistic-locked write and records the Marker.
	RestoreDatabase ActionKind = "RestoreDatabase"
	// RemoveAnnotation removes annotation Annotation from the LinstorCluster.
	RemoveAnnotation ActionKind = "RemoveAnnotation"
	// RecordMarker makes the marker say Marker (nothing is written when it does).
	RecordMarker ActionKind = "RecordMarker"
	// ClearMarker deletes the marker of a finished upgrade, if there is one.
	ClearMarker ActionKind = "ClearMarker"
	// CreateRehearsal creates the rehearsal Job Job (render.RehearsalJob) from backup
	// Backup for the upgrade From -> To, if it does not exist; earlier attempts' Jobs of
	// the cluster go.
	CreateRehearsal ActionKind = "CreateRehearsal"
	// DeleteRehearsal deletes the rehearsal Job Job, if it exists.
	DeleteRehearsal ActionKind = "DeleteRehearsal"
)

// Action is one thing to carry out.
type Action struct {
	Kind       ActionKind
	Backup     string
	Annotation string
	// Checked is what CheckRestore found (for the status), set by the controller.
	Checked string
	// Marker is what RecordMarker records.
	Marker *Marker
	// From and To label an upgrade backup.
	From, To string
	// Job names the rehearsal Job.
	Job string
}

// Event is something worth telling the user.
type Event struct {
	Warning         bool
	Reason, Message string
}

// Problem is what the Degraded condition reports; empty when there is none.
type Problem struct {
	Reason, Message string
}

// Output is Step's decision.
type Output struct {
	State State
	// StopController says why the LINSTOR controller must not run ("" lets it run).
	StopController string
	// FenceCSI stops the CSI controller: nothing may change the database while a
	// rollback could still restore the pre-upgrade backup.
	FenceCSI bool
	// Upgrading: a version change (or a restore) is in progress; Progressing reports it.
	Upgrading bool
	// HoldOperator: another operator release must not take over now (the OLM gate):
	// an upgrade from Backup on, or a restore, is in progress. Preflight holds nothing.
	HoldOperator bool
	Problem      Problem
	Actions      []Action
	Events       []Event
	// Requeue: when to look again (zero: only on change).
	Requeue time.Duration
	// VersionStale: the database was replaced, so status.version is not LINSTOR's.
	VersionStale bool
}

// Need says what Step will look at for this state and spec.
type Need struct {
	// Linstor: ask LINSTOR for its version; Problems also reads nodes, replicas and
	// resyncs; Waiting reads nodes.
	Linstor, Problems, Waiting bool
	// UpgradeBackup and RestoreBackup name LinstorBackups to read ("" none).
	UpgradeBackup, RestoreBackup string
	// DatabaseEmpty: look whether LINSTOR's database holds anything.
	DatabaseEmpty bool
	// ControllerStopped: look whether a LINSTOR controller pod still runs.
	ControllerStopped bool
	// Marker: look for a database-replacement marker (the status holds nothing).
	Marker bool
	// Rehearsal names the rehearsal Job to read ("" none).
	Rehearsal string
}

// Needs tells the controller what to observe before Step.
func Needs(spec Spec, st State) Need {
	var n Need
	n.Marker = !spec.ExternalController && st.Deployed == nil && st.Upgrade == nil && st.Restore == nil
	if r := st.Restore; r != nil && r.Phase == RestoreRestoring {
		n.RestoreBackup, n.ControllerStopped = restoringTarget(spec, r), true
	} else if r != nil && r.Phase == RestoreFailed && r.BackupName == spec.RestoreFrom && r.BackupUID != "" {
		// Only whether the LinstorBackup was created again under its name (retried).
		n.RestoreBackup = r.BackupName
	} else if target := restoreTarget(spec, st); target != "" {
		n.RestoreBackup = target
		n.DatabaseEmpty = st.Restore == nil || st.Restore.Phase == RestoreAwaitingConfirmation || st.Restore.BackupName != target
		n.ControllerStopped = true
	}
	if spec.ExternalController {
		return n
	}
	if spec.Reported == "" && st.Deployed == nil && spec.Requested == "" {
		n.DatabaseEmpty = true // a version must come from somewhere before anything is deployed
	}
	if u := st.Upgrade; u != nil && inProgress(u.Phase) {
		n.UpgradeBackup = u.BackupName
		if u.Phase == linstorv1.UpgradeBackup && u.BackupName == "" {
			n.UpgradeBackup = BackupName(spec.ClusterName, u)
		}
		n.ControllerStopped = n.ControllerStopped || u.Phase == linstorv1.UpgradeRollingBack
		switch u.Phase {
		case linstorv1.UpgradePreflight, linstorv1.UpgradeVerify:
			n.Linstor, n.Problems = true, true
		case linstorv1.UpgradeRehearsal:
			n.Rehearsal = RehearsalName(spec.ClusterName, u)
		case linstorv1.UpgradeController:
			n.Linstor = true
		case linstorv1.UpgradeSatellites:
			n.Linstor, n.Waiting = true, true
		}
	}
	return n
}

// restoreTarget is the backup a restore would read now, "" when no restore is asked
// for or in flight.
func restoreTarget(spec Spec, st State) string {
	r := st.Restore
	switch {
	case spec.RestoreFrom != "":
		if r != nil && r.BackupName == spec.RestoreFrom && (r.Phase == RestoreRestored || r.Phase == RestoreFailed) {
			return "" // done
		}
		return spec.RestoreFrom
	case r != nil && r.Phase == RestoreRestoring:
		return r.BackupName // cleared while the database is half replaced: finish it
	}
	return ""
}

// restoringTarget is the backup a restore in phase Restoring finishes with: the one it
// began with, unless spec.database.restoreFrom names another and the user confirmed that
// one for this object (a manifest still naming an old backup, or a marker adopted by a
// recreated object, must never switch the restore to another backup on its own).
func restoringTarget(spec Spec, r *linstorv1.RestoreStatus) string {
	if spec.RestoreFrom != "" && spec.RestoreFrom != r.BackupName && spec.ConfirmRestore == spec.RestoreFrom+"/"+spec.ClusterUID {
		return spec.RestoreFrom
	}
	return r.BackupName
}

// Step decides the next state and actions. It never touches anything.
func Step(in Input) Output {
	out := step(in)
	out.HoldOperator = holdsOperator(out)
	return out
}

func step(in Input) Output {
	out := Output{State: in.State.DeepCopy()}
	if stepRestore(&in, &out) {
		return out
	}
	restoreProblem := out.Problem
	stepVersion(&in, &out)
	if restoreProblem.Message != "" {
		out.Problem = restoreProblem // what the user asked last is answered first
	}
	if !RestoreInProgress(out.State.Restore) {
		out.Actions = append(out.Actions, markerActions(in.Spec, out.State.Upgrade)...)
	}
	// A backup that waits (BackupWaits: a restore, rollback or migration runs) stops
	// nothing: the migration it waits for needs the controller running.
	if in.Observed.ActiveBackup != "" && out.StopController == "" && BackupWaits(&linstorv1.LinstorClusterStatus{Upgrade: out.State.Upgrade, Restore: out.State.Restore}) == "" {
		out.StopController = "LinstorBackup " + in.Observed.ActiveBackup + " is being taken"
	}
	return out
}

// holdsOperator: what is in progress was started by this release and must be finished
// by it (a stopped controller holds through StopController as well).
func holdsOperator(out Output) bool {
	return out.Upgrading && (RestoreInProgress(out.State.Restore) || HoldsOperator(out.State.Upgrade))
}

// AfterAction folds the outcome of an action into the state the controller saves next.
func AfterAction(in Input, st State, a Action, err error) Output {
	out := afterAction(in, st, a, err)
	out.HoldOperator = holdsOperator(out)
	return out
}

func afterAction(in Input, st State, a Action, err error) Output {
	out := Output{State: st.DeepCopy()}
	switch a.Kind {
	case CheckRestore:
		r := out.State.Restore
		if r == nil || r.Phase != RestoreStopping || r.BackupName != a.Backup {
			return out // the restore moved on meanwhile: the next pass decides again
		}
		out.Upgrading = true
		if err != nil && !errors.Is(err, ErrBackupUnusable) {
			out.StopController = "a restore of " + a.Backup + " is being prepared"
			out.Problem = Problem{linstorv1.ReasonRestoreIncomplete, fmt.Sprintf("Checking LinstorBackup %s failed, will retry; nothing was touched: %v", a.Backup, err)}
			out.Requeue = Poll
			return out
		}
		if err != nil {
			r.Phase = RestoreFailed
			r.Message = fmt.Sprintf("spec.database.restoreFrom: LinstorBackup %s cannot be restored: %v. Nothing was touched: LINSTOR starts again on its database. "+
				"Name another Completed backup, or clear spec.database.restoreFrom.", a.Backup, err)
			out.Problem = Problem{linstorv1.ReasonInvalidSpec, r.Message}
			out.Events = append(out.Events, Event{Warning: true, Reason: "RestoreFailed", Message: r.Message})
			out.Upgrading, out.Requeue = false, soon
			if u := out.State.Upgrade; u != nil && u.Phase == linstorv1.UpgradeRollingBack {
				// The restore was to supersede a rollback: the database may be half
				// migrated, and the rollback still owns it. Nothing starts.
				r.Message = fmt.Sprintf("spec.database.restoreFrom: LinstorBackup %s cannot be restored: %v. Nothing was touched; the rollback to %s goes on and LINSTOR stays stopped.",
					a.Backup, err, u.From)
				out.Problem.Message = r.Message
				out.StopController, out.FenceCSI, out.Upgrading = "the database is being restored from "+u.BackupName, true, true
			} else if InProgress(u) {
				out.Upgrading = true
			}
			return out
		}
		b := in.Observed.RestoreBackup
		if b == nil || b.Name != a.Backup || !b.Found {
			out.StopController, out.Requeue = "a restore of "+a.Backup+" is being prepared", soon
			return out
		}
		// Saved before the first write to the database: from here on LINSTOR never starts
		// on it before the replacement is complete.
		r.Phase = RestoreRestoring
		r.LinstorVersion = b.LinstorVersion
		r.Message = fmt.Sprintf("Replacing the database with %s (checked: %s); LINSTOR stays stopped until it is complete", a.Backup, or(a.Checked, b.Checksum))
		out.State.Deployed = versions(b.LinstorVersion, b.LinstorVersion)
		out.State.Upgrade = nil
		out.StopController, out.Requeue = "the database is being restored from "+a.Backup, soon
		return out
	case RestoreDatabase:
		if r := out.State.Restore; r != nil && r.Phase == RestoreRestoring && r.BackupName == a.Backup {
			out.StopController = "the database is being restored from " + a.Backup
			if err != nil {
				what := "the database may be partly replaced"
				if errors.Is(err, ErrNothingWritten) {
					// The backup was checked whole before Restoring was saved; what failed
					// now (a Secret gone since) stopped this attempt before it wrote, but an
					// earlier attempt may have: the database is not known to be intact.
					what = "this attempt wrote nothing, but an earlier one may have"
				}
				out.Problem = Problem{linstorv1.ReasonRestoreIncomplete, fmt.Sprintf("Restoring %s failed, will retry (%s); LINSTOR stays stopped until the database is whole: %v", a.Backup, what, err)}
				out.Requeue = Poll
				return out
			}
			now := metav1.NewTime(in.Now)
			r.Phase, r.CompletedAt = RestoreRestored, &now
			b := in.Observed.RestoreBackup
			r.Message = fmt.Sprintf("Restored %s; LINSTOR %s starts on it", a.Backup, r.LinstorVersion)
			if b != nil && b.Name == a.Backup {
				r.Message = fmt.Sprintf("Restored %s (%d objects, %s); LINSTOR %s starts on it", a.Backup, b.Objects, b.Checksum, r.LinstorVersion)
			}
			out.StopController, out.VersionStale, out.Requeue = "", true, soon
			out.State.Upgrade = nil // the restore settled the version
			out.Events = append(out.Events, Event{Reason: "Restored", Message: r.Message})
			return out
		}
		if u := out.State.Upgrade; u != nil && u.Phase == linstorv1.UpgradeRollingBack && u.BackupName == a.Backup {
			out.StopController, out.Upgrading, out.FenceCSI = "the database is being restored from "+a.Backup, true, true
			if err != nil {
				out.Problem = Problem{linstorv1.ReasonUpgradeFailed, fmt.Sprintf("Rolling back to %s: restoring %s failed, will retry; LINSTOR stays stopped: %v", u.From, a.Backup, err)}
				out.Requeue = Poll
				return out
			}
			cause := strings.TrimPrefix(u.Message, "Rolling back: ")
			u.Phase = linstorv1.UpgradeRolledBack
			u.Message = fmt.Sprintf("The upgrade to %s failed and was rolled back: the database was restored from %s and LINSTOR %s started again. Cause: %s. "+
				"Fix the cause, then annotate the LinstorCluster %s=%s to retry.", u.To, u.BackupName, u.From, cause, names.AnnotationRetryUpgrade, u.To)
			out.Problem = Problem{linstorv1.ReasonUpgradeFailed, u.Message}
			out.StopController, out.Upgrading, out.FenceCSI, out.VersionStale, out.Requeue = "", false, false, true, soon
			out.State.Deployed = versions(u.From, u.From)
			out.Events = append(out.Events, Event{Warning: true, Reason: "UpgradeRolledBack", Message: u.Message})
		}
	}
	return out
}

func versions(controller, satellites string) *linstorv1.DeployedVersions {
	return &linstorv1.DeployedVersions{Controller: controller, Satellites: satellites}
}

func inProgress(p linstorv1.UpgradePhase) bool {
	switch p {
	case linstorv1.UpgradePreflight, linstorv1.UpgradeBackup, linstorv1.UpgradeRehearsal, linstorv1.UpgradeController,
		linstorv1.UpgradeSatellites, linstorv1.UpgradeVerify, linstorv1.UpgradeRollingBack:
		return true
	}
	return false
}

// InProgress reports an upgrade phase that is under way.
func InProgress(u *linstorv1.UpgradeStatus) bool { return u != nil && inProgress(u.Phase) }

// HoldsOperator reports an upgrade that another operator release must not take over:
// from Backup on, this release has started changing things (the controller stopped for
// the backup, the database migrated, a rollback). Preflight has changed nothing, so it
// holds nothing: OLM may install another release meanwhile (the fix for what Preflight
// waits on, say), which decides the upgrade afresh (see cancel).
//
// A Verify past its timeout (UpgradeStalled) holds nothing either: it can no longer
// roll back, and another release may be the fix for what it waits on.
func HoldsOperator(u *linstorv1.UpgradeStatus) bool {
	return InProgress(u) && u.Phase != linstorv1.UpgradePreflight && !Stalled(u)
}

// Stalled reports an upgrade whose Verify phase passed its timeout.
func Stalled(u *linstorv1.UpgradeStatus) bool {
	return u != nil && u.Phase == linstorv1.UpgradeVerify && strings.HasPrefix(u.Message, stalledPrefix)
}

// RestoreInProgress reports a confirmed restore that has not ended (Stopping or Restoring).
func RestoreInProgress(r *linstorv1.RestoreStatus) bool {
	return r != nil && (r.Phase == RestoreStopping || r.Phase == RestoreRestoring)
}

func (in *Input) phaseTimeout() time.Duration {
	if in.Spec.PhaseTimeout > 0 {
		return in.Spec.PhaseTimeout
	}
	return DefaultPhaseTimeout
}

func (in *Input) runs(version string) bool {
	v, err := upgrade.Parse(version)
	if err != nil {
		return false
	}
	for _, x := range in.Release.Runnable {
		if x.Compare(v) == 0 {
			return true
		}
	}
	return false
}
