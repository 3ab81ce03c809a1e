package lifecycle

// Table tests for the database lifecycle state machine. Every row is one transition:
// an Input (persisted state, spec, observations) goes into Step (or AfterAction) and
// the row states the exact outcome. Every row also checks, for free:
//   - Step does not modify its input,
//   - Step is deterministic (a restarted operator deciding again on the same input
//     decides the same),
//   - an upgrade in flight keeps From, To, StartedAt and its backup name, and a phase
//     change stamps PhaseStartedAt with Now.
//
// This file holds the fixtures, the row options and checks the table files share, and the
// check that the tables cover every phase.

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/upgrade"
)

// ---------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------

const (
	fxCluster = "linstor"
	fxUID     = "uid-1" // this LinstorCluster
	fxOldUID  = "uid-0" // a deleted LinstorCluster of the same name
	fxNewUID  = "uid-2" // a recreated LinstorCluster of the same name
	fxFrom    = "1.33.2"
	fxTo      = "1.33.3"
	fxNightly = "nightly"
	// fxBackupUID is the UID of the observed LinstorBackup a restore reads.
	fxBackupUID = "5b1d7c9e-0000-4000-8000-00000000b001"
	fxWeekly    = "weekly"
	fxActive    = "manual-1"
)

var (
	fxNow = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	// fxStart is when the upgrade in the phase rows started.
	fxStart = fxNow.Add(-5 * time.Minute)
	// fxRelease runs 1.33.2 and 1.33.3 and upgrades from 1.29.0 on; built here so the
	// tests do not move with upgrade.Current.
	fxRelease = upgrade.Release{
		Target:   upgrade.MustParse(fxTo),
		Runnable: []upgrade.Version{upgrade.MustParse(fxFrom), upgrade.MustParse(fxTo)},
		Oldest:   upgrade.MustParse("1.29.0"),
	}
	// fxPreBackup is the pre-upgrade backup's name, derived independently of BackupName.
	fxPreBackup = fmt.Sprintf("%s-before-1-33-3-%d", fxCluster, fxStart.Unix())
	// fxRollbackCause is the message RollingBack was entered with.
	fxRollbackCause = "Rolling back: the controller did not come up at 1.33.3 within 10m0s (Controller: waiting)"
)

func dv(controller, satellites string) *linstorv1.DeployedVersions {
	return &linstorv1.DeployedVersions{Controller: controller, Satellites: satellites}
}

func mt(t time.Time) *metav1.Time { m := metav1.NewTime(t); return &m }

func boolp(b bool) *bool { return &b }

// opt changes one thing of an Input.
type opt func(*Input)

// input is a healthy cluster that runs fxTo, nothing in flight; opts change it.
func input(opts ...opt) Input {
	in := Input{
		Spec:    Spec{ClusterName: fxCluster, ClusterUID: fxUID, Reported: fxTo},
		State:   State{Deployed: dv(fxTo, fxTo)},
		Release: fxRelease,
		Now:     fxNow,
	}
	for _, o := range opts {
		o(&in)
	}
	return in
}

// inPhase is an upgrade fxFrom → fxTo that the previous pass saved in phase p: entered
// a minute ago (Preflight: when the upgrade started), with the backup name and the
// deployed versions that phase has.
func inPhase(p linstorv1.UpgradePhase, opts ...opt) Input {
	u := &linstorv1.UpgradeStatus{Phase: p, From: fxFrom, To: fxTo, StartedAt: mt(fxStart),
		PhaseStartedAt: mt(fxNow.Add(-time.Minute)), Message: "saved by the previous pass"}
	d := dv(fxFrom, fxFrom)
	switch p {
	case linstorv1.UpgradePreflight:
		u.PhaseStartedAt = mt(fxStart)
	case linstorv1.UpgradeRehearsal:
		u.BackupName = fxPreBackup
	case linstorv1.UpgradeController:
		u.BackupName, d = fxPreBackup, dv(fxTo, fxFrom)
	case linstorv1.UpgradeSatellites, linstorv1.UpgradeVerify:
		u.BackupName, d = fxPreBackup, dv(fxTo, fxTo)
	case linstorv1.UpgradeRollingBack:
		u.BackupName, u.Message = fxPreBackup, fxRollbackCause
	}
	base := func(in *Input) {
		in.Spec.Reported = fxFrom
		in.State.Upgrade, in.State.Deployed = u, d
	}
	return input(append([]opt{base}, opts...)...)
}

// inRestore asks to restore fxNightly, a Completed backup of this cluster taken at fxFrom.
func inRestore(opts ...opt) Input {
	return input(append([]opt{withRestoreFrom(fxNightly), obsRestoreBackup(fxNightly, linstorv1.BackupCompleted, fxFrom)}, opts...)...)
}

// Spec options.

func withReported(v string) opt  { return func(in *Input) { in.Spec.Reported = v } }
func withRequested(v string) opt { return func(in *Input) { in.Spec.Requested = v } }
func withManualPolicy() opt {
	return func(in *Input) { in.Spec.Policy = linstorv1.UpgradeManual }
}
func withRetry(v string) opt          { return func(in *Input) { in.Spec.RetryUpgrade = v } }
func withRestoreFrom(name string) opt { return func(in *Input) { in.Spec.RestoreFrom = name } }
func withConfirm(v string) opt        { return func(in *Input) { in.Spec.ConfirmRestore = v } }
func withUID(uid string) opt          { return func(in *Input) { in.Spec.ClusterUID = uid } }
func withExternalController() opt {
	return func(in *Input) { in.Spec.ExternalController = true }
}
func withExternalDB(acknowledged bool) opt {
	return func(in *Input) {
		in.Spec.ExternalDatabase = "the LINSTOR database is external: back it up with the database's own tools"
		in.Spec.ExternalBackupAcknowledged = acknowledged
	}
}

// withRelease is another operator release: it runs these versions, the last one its target.
func withRelease(runs ...string) opt {
	return func(in *Input) {
		r := upgrade.Release{Target: upgrade.MustParse(runs[len(runs)-1]), Oldest: upgrade.MustParse("1.29.0")}
		for _, v := range runs {
			r.Runnable = append(r.Runnable, upgrade.MustParse(v))
		}
		in.Release = r
	}
}

// withTimeout sets spec.upgrade.phaseTimeout.
func withTimeout(d time.Duration) opt { return func(in *Input) { in.Spec.PhaseTimeout = d } }

// withPhaseAge makes the current upgrade phase d old.
func withPhaseAge(d time.Duration) opt {
	return func(in *Input) { in.State.Upgrade.PhaseStartedAt = mt(fxNow.Add(-d)) }
}

// late: a 5 minute phase timeout, and the phase began 6 minutes ago.
func late() opt {
	return func(in *Input) {
		withTimeout(5 * time.Minute)(in)
		withPhaseAge(6 * time.Minute)(in)
	}
}

// State options.

func withDeployed(d *linstorv1.DeployedVersions) opt {
	return func(in *Input) { in.State.Deployed = d }
}
func withUpgrade(u *linstorv1.UpgradeStatus) opt { return func(in *Input) { in.State.Upgrade = u } }
func withBackupName(name string) opt {
	return func(in *Input) { in.State.Upgrade.BackupName = name }
}
func withRestore(phase, backup, uid, version string) opt {
	return func(in *Input) {
		in.State.Restore = &linstorv1.RestoreStatus{BackupName: backup, ClusterUID: uid, Phase: phase, LinstorVersion: version,
			Message: "saved by the previous pass"}
	}
}

// finished is an upgrade fxFrom → fxTo that ended in phase p.
func finished(p linstorv1.UpgradePhase, from, to string) *linstorv1.UpgradeStatus {
	return &linstorv1.UpgradeStatus{Phase: p, From: from, To: to, StartedAt: mt(fxStart), PhaseStartedAt: mt(fxStart),
		BackupName: fxPreBackup, Message: "The upgrade to " + to + " failed and was rolled back (saved)"}
}

// awaiting is an upgrade from → to that the Manual policy has held for approval since since.
func awaiting(from, to string, since time.Time) *linstorv1.UpgradeStatus {
	return &linstorv1.UpgradeStatus{Phase: linstorv1.UpgradeAwaitingApproval, From: from, To: to, PhaseStartedAt: mt(since),
		Message: "saved by the previous pass"}
}

// Observation options.

func obsLinstor(version string, problems ...string) opt {
	return func(in *Input) { in.Observed.Linstor = &Linstor{Version: version, Problems: problems} }
}
func obsWaiting(version string, waiting ...string) opt {
	return func(in *Input) { in.Observed.Linstor = &Linstor{Version: version, Waiting: waiting} }
}
func obsUnreachable() opt {
	return func(in *Input) { in.Observed.Linstor = &Linstor{Err: "dial tcp 10.0.0.1:3370: connection refused"} }
}

// obsUpgradeBackup observes the pre-upgrade backup (fxPreBackup) in a phase.
func obsUpgradeBackup(phase linstorv1.BackupPhase, msg string) opt {
	return func(in *Input) {
		in.Observed.UpgradeBackup = &Backup{Name: fxPreBackup, Found: true, Cluster: fxCluster, Phase: phase, Message: msg,
			LinstorVersion: fxFrom, Checksum: "sha256:0123abcd", Objects: 1234}
	}
}
func obsUpgradeBackupMissing() opt {
	return func(in *Input) { in.Observed.UpgradeBackup = &Backup{Name: fxPreBackup} }
}
func obsRestoreBackup(name string, phase linstorv1.BackupPhase, version string) opt {
	return func(in *Input) {
		in.Observed.RestoreBackup = &Backup{Name: name, Found: true, UID: fxBackupUID, Cluster: fxCluster, Phase: phase, LinstorVersion: version,
			Message: "backup says " + string(phase), Checksum: "sha256:feedbeef", Objects: 42}
	}
}

// withRestoreBackupUID records the UID of the LinstorBackup the restore read.
func withRestoreBackupUID(uid string) opt {
	return func(in *Input) { in.State.Restore.BackupUID = uid }
}

// restoreBackupUID asserts the UID of the LinstorBackup the restore records.
func restoreBackupUID(uid string) func(*testing.T, Input, Output) {
	return func(t *testing.T, _ Input, out Output) {
		t.Helper()
		if r := out.State.Restore; r == nil || r.BackupUID != uid {
			t.Errorf("restore status %+v, want backupUID %q", r, uid)
		}
	}
}
func obsRestoreBackupOf(cluster string) opt {
	return func(in *Input) { in.Observed.RestoreBackup.Cluster = cluster }
}
func obsRestoreBackupMissing(name string) opt {
	return func(in *Input) { in.Observed.RestoreBackup = &Backup{Name: name} }
}
func obsNoRestoreBackup() opt         { return func(in *Input) { in.Observed.RestoreBackup = nil } }
func obsDBEmpty(empty bool) opt       { return func(in *Input) { in.Observed.DatabaseEmpty = boolp(empty) } }
func obsStopped() opt                 { return func(in *Input) { in.Observed.ControllerStopped = true } }
func obsActiveBackup(name string) opt { return func(in *Input) { in.Observed.ActiveBackup = name } }

// ---------------------------------------------------------------------------------
// Expectations
// ---------------------------------------------------------------------------------

// expect is the exact outcome of one transition.
type expect struct {
	// upgrade is the upgrade phase afterwards ("": no upgrade status).
	upgrade linstorv1.UpgradePhase
	// restore is the restore phase afterwards ("": no restore status); restoreBackup
	// and restoreUID are checked when set.
	restore, restoreBackup, restoreUID string
	// deployed: status.deployed afterwards (nil: none).
	deployed *linstorv1.DeployedVersions
	// stop: "" means the LINSTOR controller may run; otherwise StopController must
	// contain it.
	stop                    string
	fence, upgrading, stale bool
	actions                 []Action
	// problem is the Problem's reason ("": none); problemHas are parts of its message.
	problem    string
	problemHas []string
	requeue    time.Duration
	// events are the reasons of the events, in order.
	events []string
	// check asserts the rest.
	check func(t *testing.T, in Input, out Output)
}

func obsDBSchema(n int64) opt { return func(in *Input) { in.Observed.DatabaseSchema = n } }

func withoutMarkerActions(as []Action) []Action {
	var out []Action
	for _, a := range as {
		if a.Kind != RecordMarker && a.Kind != ClearMarker {
			out = append(out, a)
		}
	}
	return out
}

// stepCase is one Step transition.
type stepCase struct {
	name string
	in   Input
	want expect
}

func runStepCases(t *testing.T, cases []stepCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			orig := cloneInput(tc.in)
			out := Step(tc.in)
			if !reflect.DeepEqual(tc.in, orig) {
				t.Errorf("Step modified its input:\n got %#v\nwant %#v", tc.in, orig)
			}
			if again := Step(cloneInput(orig)); !reflect.DeepEqual(out, again) {
				t.Errorf("Step is not deterministic:\n first %#v\nsecond %#v", out, again)
			}
			checkOutput(t, orig, out, tc.want)
		})
	}
}

func cloneInput(in Input) Input {
	c := in
	c.State = in.State.DeepCopy()
	c.Release.Runnable = append([]upgrade.Version(nil), in.Release.Runnable...)
	if l := in.Observed.Linstor; l != nil {
		x := *l
		x.Problems = append([]string(nil), l.Problems...)
		x.Waiting = append([]string(nil), l.Waiting...)
		if l.Problems == nil {
			x.Problems = nil
		}
		if l.Waiting == nil {
			x.Waiting = nil
		}
		c.Observed.Linstor = &x
	}
	for _, b := range []**Backup{&c.Observed.UpgradeBackup, &c.Observed.RestoreBackup} {
		if *b != nil {
			x := **b
			*b = &x
		}
	}
	if e := in.Observed.DatabaseEmpty; e != nil {
		c.Observed.DatabaseEmpty = boolp(*e)
	}
	if r := in.Observed.Rehearsal; r != nil {
		x := *r
		c.Observed.Rehearsal = &x
	}
	return c
}

func checkOutput(t *testing.T, in Input, out Output, e expect) {
	t.Helper()
	st := out.State
	switch u := st.Upgrade; {
	case e.upgrade == "" && u != nil:
		t.Errorf("upgrade: got phase %s (%s), want none", u.Phase, u.Message)
	case e.upgrade != "" && u == nil:
		t.Errorf("upgrade: got none, want phase %s", e.upgrade)
	case e.upgrade != "" && u.Phase != e.upgrade:
		t.Errorf("upgrade: got phase %s (%s), want %s", u.Phase, u.Message, e.upgrade)
	}
	switch r := st.Restore; {
	case e.restore == "" && r != nil:
		t.Errorf("restore: got phase %s of %s, want none", r.Phase, r.BackupName)
	case e.restore != "" && r == nil:
		t.Errorf("restore: got none, want phase %s", e.restore)
	case e.restore != "":
		if r.Phase != e.restore {
			t.Errorf("restore: got phase %s (%s), want %s", r.Phase, r.Message, e.restore)
		}
		if e.restoreBackup != "" && r.BackupName != e.restoreBackup {
			t.Errorf("restore: got backup %q, want %q", r.BackupName, e.restoreBackup)
		}
		if e.restoreUID != "" && r.ClusterUID != e.restoreUID {
			t.Errorf("restore: got cluster UID %q, want %q", r.ClusterUID, e.restoreUID)
		}
	}
	if !reflect.DeepEqual(st.Deployed, e.deployed) {
		t.Errorf("deployed: got %s, want %s", fmtDeployed(st.Deployed), fmtDeployed(e.deployed))
	}
	switch {
	case e.stop == "" && out.StopController != "":
		t.Errorf("StopController: got %q, want the controller to run", out.StopController)
	case e.stop != "" && !strings.Contains(out.StopController, e.stop):
		t.Errorf("StopController: got %q, want it to contain %q", out.StopController, e.stop)
	}
	if out.FenceCSI != e.fence {
		t.Errorf("FenceCSI: got %v, want %v", out.FenceCSI, e.fence)
	}
	if out.Upgrading != e.upgrading {
		t.Errorf("Upgrading: got %v, want %v", out.Upgrading, e.upgrading)
	}
	if out.VersionStale != e.stale {
		t.Errorf("VersionStale: got %v, want %v", out.VersionStale, e.stale)
	}
	// A rollback owns a database that may be half migrated: nothing starts on it.
	if u := out.State.Upgrade; u != nil && u.Phase == linstorv1.UpgradeRollingBack && out.StopController == "" {
		t.Errorf("invariant: RollingBack with the LINSTOR controller allowed to run")
	}
	// The marker's actions follow the upgrade phase alone (TestMarkerActions).
	acts := withoutMarkerActions(out.Actions)
	if len(acts) != 0 || len(e.actions) != 0 {
		if !reflect.DeepEqual(acts, e.actions) {
			t.Errorf("actions:\n got %+v\nwant %+v", acts, e.actions)
		}
	}
	if out.Problem.Reason != e.problem {
		t.Errorf("problem: got %q (%s), want %q", out.Problem.Reason, out.Problem.Message, e.problem)
	}
	if e.problem == "" && out.Problem.Message != "" {
		t.Errorf("problem: got message %q, want none", out.Problem.Message)
	}
	for _, s := range e.problemHas {
		if !strings.Contains(out.Problem.Message, s) {
			t.Errorf("problem message %q does not contain %q", out.Problem.Message, s)
		}
	}
	if out.Requeue != e.requeue {
		t.Errorf("Requeue: got %v, want %v", out.Requeue, e.requeue)
	}
	var reasons []string
	for _, event := range out.Events {
		reasons = append(reasons, event.Reason)
	}
	if strings.Join(reasons, ",") != strings.Join(e.events, ",") {
		t.Errorf("events: got %v, want %v", reasons, e.events)
	}
	checkUpgradeInvariants(t, in, out)
	if e.check != nil {
		e.check(t, in, out)
	}
}

// checkUpgradeInvariants: an upgrade in flight keeps what identifies it, and a phase
// change is stamped with Now.
func checkUpgradeInvariants(t *testing.T, in Input, out Output) {
	t.Helper()
	u0, u1 := in.State.Upgrade, out.State.Upgrade
	if u0 == nil || !inProgress(u0.Phase) || u1 == nil || cancelled(out) {
		return
	}
	if u1.From != u0.From || u1.To != u0.To {
		t.Errorf("upgrade: %s→%s became %s→%s", u0.From, u0.To, u1.From, u1.To)
	}
	if !sameTime(u1.StartedAt, u0.StartedAt) {
		t.Errorf("upgrade: startedAt changed from %v to %v", u0.StartedAt, u1.StartedAt)
	}
	if u0.BackupName != "" && u1.BackupName != u0.BackupName {
		t.Errorf("upgrade: backup %q became %q", u0.BackupName, u1.BackupName)
	}
	switch {
	case u1.Phase == u0.Phase && !sameTime(u1.PhaseStartedAt, u0.PhaseStartedAt):
		t.Errorf("upgrade: phase %s kept, but phaseStartedAt changed from %v to %v", u1.Phase, u0.PhaseStartedAt, u1.PhaseStartedAt)
	case u1.Phase != u0.Phase && u1.Phase != linstorv1.UpgradeRolledBack && !sameTime(u1.PhaseStartedAt, mt(in.Now)):
		t.Errorf("upgrade: entered %s, but phaseStartedAt is %v, want now", u1.Phase, u1.PhaseStartedAt)
	}
}

// cancelled: the upgrade in flight was cancelled; what follows is a new decision.
func cancelled(out Output) bool {
	for _, e := range out.Events {
		if e.Reason == "UpgradeCancelled" {
			return true
		}
	}
	return false
}

func sameTime(a, b *metav1.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Time.Equal(b.Time)
}

func fmtDeployed(d *linstorv1.DeployedVersions) string {
	if d == nil {
		return "<nil>"
	}
	return fmt.Sprintf("{controller %q, satellites %q}", d.Controller, d.Satellites)
}

// Checks used by several rows.

func all(checks ...func(*testing.T, Input, Output)) func(*testing.T, Input, Output) {
	return func(t *testing.T, in Input, out Output) {
		t.Helper()
		for _, c := range checks {
			c(t, in, out)
		}
	}
}

// upgradeMsgHas: status.upgrade.message contains every part.
func upgradeMsgHas(parts ...string) func(*testing.T, Input, Output) {
	return func(t *testing.T, _ Input, out Output) {
		t.Helper()
		if out.State.Upgrade == nil {
			t.Errorf("no upgrade status to read the message of")
			return
		}
		for _, p := range parts {
			if !strings.Contains(out.State.Upgrade.Message, p) {
				t.Errorf("upgrade message %q does not contain %q", out.State.Upgrade.Message, p)
			}
		}
	}
}

func restoreMsgHas(parts ...string) func(*testing.T, Input, Output) {
	return func(t *testing.T, _ Input, out Output) {
		t.Helper()
		if out.State.Restore == nil {
			t.Errorf("no restore status to read the message of")
			return
		}
		for _, p := range parts {
			if !strings.Contains(out.State.Restore.Message, p) {
				t.Errorf("restore message %q does not contain %q", out.State.Restore.Message, p)
			}
		}
	}
}

// sameUpgrade: the upgrade status is exactly what was saved before.
func sameUpgrade(t *testing.T, in Input, out Output) {
	t.Helper()
	if !reflect.DeepEqual(out.State.Upgrade, in.State.Upgrade) {
		t.Errorf("upgrade status changed:\n got %+v\nwant %+v", out.State.Upgrade, in.State.Upgrade)
	}
}

// sameRestore: the restore status is exactly what was saved before.
func sameRestore(t *testing.T, in Input, out Output) {
	t.Helper()
	if !reflect.DeepEqual(out.State.Restore, in.State.Restore) {
		t.Errorf("restore status changed:\n got %+v\nwant %+v", out.State.Restore, in.State.Restore)
	}
}

// startedNow: a new upgrade attempt from fxFrom to fxTo, recorded now, no backup yet.
func startedNow(t *testing.T, in Input, out Output) {
	t.Helper()
	u := out.State.Upgrade
	if u == nil {
		t.Fatalf("no upgrade started")
	}
	if u.From != fxFrom || u.To != fxTo {
		t.Errorf("upgrade %s→%s, want %s→%s", u.From, u.To, fxFrom, fxTo)
	}
	if !sameTime(u.StartedAt, mt(in.Now)) || !sameTime(u.PhaseStartedAt, mt(in.Now)) {
		t.Errorf("startedAt %v, phaseStartedAt %v, want both %v", u.StartedAt, u.PhaseStartedAt, in.Now)
	}
	if u.BackupName != "" {
		t.Errorf("a new attempt starts without a backup, got %q", u.BackupName)
	}
}

func upgradeFromTo(from, to string) func(*testing.T, Input, Output) {
	return func(t *testing.T, _ Input, out Output) {
		t.Helper()
		if u := out.State.Upgrade; u == nil || u.From != from || u.To != to {
			t.Errorf("upgrade status %+v, want %s→%s", u, from, to)
		}
	}
}

// phaseStartedAt: status.upgrade.phaseStartedAt is at.
func phaseStartedAt(at time.Time) func(*testing.T, Input, Output) {
	return func(t *testing.T, _ Input, out Output) {
		t.Helper()
		if u := out.State.Upgrade; u == nil || !sameTime(u.PhaseStartedAt, mt(at)) {
			t.Errorf("upgrade status %+v, want phaseStartedAt %v", u, at)
		}
	}
}

func upgradeBackupIs(name string) func(*testing.T, Input, Output) {
	return func(t *testing.T, _ Input, out Output) {
		t.Helper()
		if u := out.State.Upgrade; u == nil || u.BackupName != name {
			t.Errorf("upgrade status %+v, want backupName %q", u, name)
		}
	}
}

func restoreVersionIs(v string) func(*testing.T, Input, Output) {
	return func(t *testing.T, _ Input, out Output) {
		t.Helper()
		if r := out.State.Restore; r == nil || r.LinstorVersion != v {
			t.Errorf("restore status %+v, want linstorVersion %q", r, v)
		}
	}
}

func ev(reasons ...string) []string { return reasons }

// passesAgainQuietly: the next pass on the saved state, with the same observations,
// decides the same and says nothing new (an Event is told once, not every pass).
func passesAgainQuietly(t *testing.T, in Input, out Output) {
	t.Helper()
	next := cloneInput(in)
	next.State = out.State.DeepCopy()
	again := Step(next)
	if len(again.Events) != 0 {
		t.Errorf("the next pass told %d more events: %+v", len(again.Events), again.Events)
	}
	if !reflect.DeepEqual(again.State, out.State) || again.StopController != out.StopController || again.FenceCSI != out.FenceCSI {
		t.Errorf("the next pass decided otherwise:\n got %+v (stop %q, fence %v)\nwant %+v (stop %q, fence %v)",
			again.State.Upgrade, again.StopController, again.FenceCSI, out.State.Upgrade, out.StopController, out.FenceCSI)
	}
}

// eventHas: the event with this reason says every part.
func eventHas(reason string, parts ...string) func(*testing.T, Input, Output) {
	return func(t *testing.T, _ Input, out Output) {
		t.Helper()
		for _, e := range out.Events {
			if e.Reason != reason {
				continue
			}
			for _, p := range parts {
				if !strings.Contains(e.Message, p) {
					t.Errorf("event %s %q does not contain %q", reason, e.Message, p)
				}
			}
			return
		}
		t.Errorf("no %s event", reason)
	}
}

func restoreDB(backup string) Action { return Action{Kind: RestoreDatabase, Backup: backup} }

var (
	removeConfirm = Action{Kind: RemoveAnnotation, Annotation: names.AnnotationConfirmRestore}
	removeRetry   = Action{Kind: RemoveAnnotation, Annotation: names.AnnotationRetryUpgrade}
	createBackup  = Action{Kind: CreateBackup, Backup: fxPreBackup, From: fxFrom, To: fxTo}
)

// ---------------------------------------------------------------------------------
// The tables themselves: every phase is reached and left by rows, each phase table
// holds only rows of its phase, every action is asked for by some row.
// ---------------------------------------------------------------------------------

var allUpgradePhases = []linstorv1.UpgradePhase{linstorv1.UpgradeAwaitingApproval, linstorv1.UpgradeRefused, linstorv1.UpgradePreflight,
	linstorv1.UpgradeBackup, linstorv1.UpgradeRehearsal, linstorv1.UpgradeController, linstorv1.UpgradeSatellites, linstorv1.UpgradeVerify, linstorv1.UpgradeSucceeded,
	linstorv1.UpgradeRollingBack, linstorv1.UpgradeRolledBack}

var allRestorePhases = []string{RestoreAwaitingConfirmation, RestoreStopping, RestoreRestoring, RestoreRestored, RestoreFailed}

func TestTablesCoverEveryPhase(t *testing.T) {
	phaseTables := map[linstorv1.UpgradePhase][]stepCase{
		linstorv1.UpgradePreflight: preflightCases, linstorv1.UpgradeBackup: backupCases, linstorv1.UpgradeRehearsal: rehearsalPhaseCases, linstorv1.UpgradeController: controllerCases,
		linstorv1.UpgradeSatellites: satellitesCases, linstorv1.UpgradeVerify: verifyCases, linstorv1.UpgradeRollingBack: rollingBackCases,
	}
	for phase, rows := range phaseTables {
		for _, row := range rows {
			if u := row.in.State.Upgrade; u == nil || u.Phase != phase {
				t.Errorf("the %s table's row %q does not start in %s", phase, row.name, phase)
			}
		}
	}
	for phase := range phaseTables {
		if !inProgress(phase) {
			t.Errorf("%s has a phase table but is not a phase in progress", phase)
		}
	}

	steps := [][]stepCase{versionCases, preflightCases, backupCases, rehearsalCases, rehearsalPhaseCases, controllerCases, satellitesCases, verifyCases, rollingBackCases, restoreCases}
	reached, left := map[linstorv1.UpgradePhase]bool{}, map[linstorv1.UpgradePhase]bool{}
	restoreReached := map[string]bool{}
	asked := map[ActionKind]bool{}
	note := func(in Input, want expect) {
		reached[want.upgrade] = true
		if u := in.State.Upgrade; u != nil && u.Phase != want.upgrade {
			left[u.Phase] = true
		}
		restoreReached[want.restore] = true
		for _, a := range want.actions {
			asked[a.Kind] = true
		}
	}
	for _, table := range steps {
		if len(table) == 0 {
			t.Errorf("a Step table has no rows")
		}
		for _, row := range table {
			note(row.in, row.want)
		}
	}
	for _, row := range afterActionCases {
		note(row.in, row.want)
	}
	for _, p := range allUpgradePhases {
		if !reached[p] {
			t.Errorf("no row ends in upgrade phase %s", p)
		}
		if inProgress(p) && !left[p] {
			t.Errorf("no row leaves upgrade phase %s", p)
		}
		if _, ok := phaseTables[p]; inProgress(p) && !ok {
			t.Errorf("upgrade phase %s has no table of its own", p)
		}
	}
	for _, p := range allRestorePhases {
		if !restoreReached[p] {
			t.Errorf("no row ends in restore phase %s", p)
		}
	}
	for _, k := range []ActionKind{CreateBackup, RestoreDatabase, RemoveAnnotation, CreateRehearsal, DeleteRehearsal} {
		if !asked[k] {
			t.Errorf("no row asks for action %s", k)
		}
	}
	for name, n := range map[string]int{"afterAction": len(afterActionCases), "fencing": len(fencingCases), "backupGate": len(gateCases),
		"operatorRestart": len(restartCases), "needs": len(needsCases), "scenarios": len(scenarioCases), "hold": len(holdCases), "lostNodes": len(lostCases)} {
		if n == 0 {
			t.Errorf("table %s has no rows", name)
		}
	}
}
