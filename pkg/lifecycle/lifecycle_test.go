package lifecycle

// Table tests for the database lifecycle state machine. Every row is one transition:
// an Input (persisted state, spec, observations) goes into Step (or AfterAction) and
// the row states the exact outcome. Every row also checks, for free:
//   - Step does not modify its input,
//   - Step is deterministic (a restarted operator deciding again on the same input
//     decides the same),
//   - an upgrade in flight keeps From, To, StartedAt and its backup name, and a phase
//     change stamps PhaseStartedAt with Now.

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/images"
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
	fxWeekly  = "weekly"
	fxActive  = "manual-1"
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
		in.Observed.RestoreBackup = &Backup{Name: name, Found: true, Cluster: fxCluster, Phase: phase, LinstorVersion: version,
			Message: "backup says " + string(phase), Checksum: "sha256:feedbeef", Objects: 42}
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
	removeConfirm = Action{Kind: RemoveAnnotation, Annotation: AnnotationConfirmRestore}
	removeRetry   = Action{Kind: RemoveAnnotation, Annotation: AnnotationRetryUpgrade}
	createBackup  = Action{Kind: CreateBackup, Backup: fxPreBackup, From: fxFrom, To: fxTo}
)

// ---------------------------------------------------------------------------------
// Version: which version runs, and whether an upgrade starts.
// ---------------------------------------------------------------------------------

var versionCases = []stepCase{
	{
		name: "install on an empty cluster",
		in:   input(withReported(""), withDeployed(nil), obsDBEmpty(true)),
		want: expect{deployed: dv(fxTo, fxTo)},
	},
	{
		name: "no version on record, database not looked at yet: nothing deployed",
		in:   input(withReported(""), withDeployed(nil)),
		want: expect{deployed: nil, stop: "being looked at", requeue: soon},
	},
	{
		name: "DATA LOSS: a recreated cluster over a live database deploys nothing until spec.version says what runs it",
		in:   input(withReported(""), withDeployed(nil), obsDBEmpty(false)),
		want: expect{deployed: nil, stop: "spec.version is needed", problem: linstorv1.ReasonInvalidSpec,
			problemHas: []string{"Set spec.version"}, requeue: Poll},
	},
	{
		name: "a recreated cluster over a live database with spec.version: Install at it",
		in:   input(withReported(""), withDeployed(nil), withRequested(fxFrom), obsDBEmpty(false)),
		want: expect{deployed: dv(fxFrom, fxFrom)},
	},
	{
		name: "install pinned to a runnable older version",
		in:   input(withReported(""), withDeployed(nil), withRequested(fxFrom)),
		want: expect{deployed: dv(fxFrom, fxFrom)},
	},
	{
		name: "stay at the wanted version",
		in:   input(),
		want: expect{deployed: dv(fxTo, fxTo)},
	},
	{
		name: "stay keeps the record of a succeeded upgrade",
		in:   input(withUpgrade(finished(linstorv1.UpgradeSucceeded, fxFrom, fxTo))),
		want: expect{upgrade: linstorv1.UpgradeSucceeded, deployed: dv(fxTo, fxTo), check: sameUpgrade},
	},
	{
		// status.version is the observer's last reading: Controller, Satellites and Verify
		// can pass before its next cycle, so it may still say the version upgraded from.
		name: "DATA LOSS: status.version lagging at the start of a succeeded upgrade starts no new one and deploys no old version",
		in:   input(withReported(fxFrom), withUpgrade(finished(linstorv1.UpgradeSucceeded, fxFrom, fxTo))),
		want: expect{upgrade: linstorv1.UpgradeSucceeded, deployed: dv(fxTo, fxTo), check: sameUpgrade},
	},
	{
		name: "DATA LOSS: the same with spec.version pinning the new version",
		in:   input(withReported(fxFrom), withRequested(fxTo), withUpgrade(finished(linstorv1.UpgradeSucceeded, fxFrom, fxTo))),
		want: expect{upgrade: linstorv1.UpgradeSucceeded, deployed: dv(fxTo, fxTo), check: sameUpgrade},
	},
	{
		name: "DATA LOSS: spec.version pinned back to the old version while status.version lags: refused, the old version is not deployed",
		in:   input(withReported(fxFrom), withRequested(fxFrom), withUpgrade(finished(linstorv1.UpgradeSucceeded, fxFrom, fxTo))),
		want: expect{upgrade: linstorv1.UpgradeRefused, deployed: dv(fxTo, fxTo), problem: linstorv1.ReasonUpgradeRefused,
			problemHas: []string{"cannot downgrade"}, check: upgradeFromTo(fxTo, fxFrom)},
	},
	{
		name: "pinning the running version settles a rolled-back upgrade",
		in: input(withReported(fxFrom), withDeployed(dv(fxFrom, fxFrom)), withRequested(fxFrom),
			withUpgrade(finished(linstorv1.UpgradeRolledBack, fxFrom, fxTo))),
		want: expect{deployed: dv(fxFrom, fxFrom)},
	},
	{
		name: "deployed but not answering yet: the deployed version is the running one",
		in:   input(withReported("")),
		want: expect{deployed: dv(fxTo, fxTo)},
	},
	{
		name: "manual policy awaits approval and changes nothing",
		in:   input(withReported(fxFrom), withDeployed(dv(fxFrom, fxFrom)), withManualPolicy()),
		want: expect{upgrade: linstorv1.UpgradeAwaitingApproval, deployed: dv(fxFrom, fxFrom),
			check: all(upgradeFromTo(fxFrom, fxTo), upgradeMsgHas("Manual", "spec.version to 1.33.3"))},
	},
	{
		name: "manual policy approved by pinning spec.version starts the upgrade",
		in:   input(withReported(fxFrom), withDeployed(dv(fxFrom, fxFrom)), withManualPolicy(), withRequested(fxTo)),
		want: expect{upgrade: linstorv1.UpgradePreflight, deployed: dv(fxFrom, fxFrom), upgrading: true, requeue: soon,
			events: ev("UpgradeStarted"), check: startedNow},
	},
	{
		name: "downgrade refused",
		in:   input(withRequested(fxFrom)),
		want: expect{upgrade: linstorv1.UpgradeRefused, deployed: dv(fxTo, fxTo), problem: linstorv1.ReasonUpgradeRefused,
			problemHas: []string{"cannot downgrade"}, check: upgradeFromTo(fxTo, fxFrom)},
	},
	{
		name: "a version this release cannot run is refused",
		in:   input(withRequested("1.32.0")),
		want: expect{upgrade: linstorv1.UpgradeRefused, deployed: dv(fxTo, fxTo), problem: linstorv1.ReasonUpgradeRefused,
			problemHas: []string{"1.32.0 is not a version this operator release can run"}},
	},
	{
		name: "a version older than the oldest supported is refused",
		in:   input(withReported("1.20.3"), withDeployed(dv("1.20.3", "1.20.3"))),
		want: expect{upgrade: linstorv1.UpgradeRefused, deployed: dv("1.20.3", "1.20.3"), problem: linstorv1.ReasonUpgradeRefused,
			problemHas: []string{"older than 1.29.0"}},
	},
	{
		name: "an unreadable reported version is refused",
		in:   input(withReported("garbage")),
		want: expect{upgrade: linstorv1.UpgradeRefused, deployed: dv(fxTo, fxTo), problem: linstorv1.ReasonUpgradeRefused,
			problemHas: []string{"unreadable version"}},
	},
	{
		name: "upgrade starts",
		in:   input(withReported(fxFrom), withDeployed(dv(fxFrom, fxFrom))),
		want: expect{upgrade: linstorv1.UpgradePreflight, deployed: dv(fxFrom, fxFrom), upgrading: true, requeue: soon,
			events: ev("UpgradeStarted"), check: all(startedNow, upgradeMsgHas("Upgrading LINSTOR from 1.33.2 to 1.33.3"))},
	},
	{
		name: "upgrade starts from the deployed version while LINSTOR does not answer",
		in:   input(withReported(""), withDeployed(dv(fxFrom, fxFrom))),
		want: expect{upgrade: linstorv1.UpgradePreflight, deployed: dv(fxFrom, fxFrom), upgrading: true, requeue: soon,
			events: ev("UpgradeStarted"), check: startedNow},
	},
	{
		name: "upgrade starts even when status.deployed was lost",
		in:   input(withReported(fxFrom), withDeployed(nil)),
		want: expect{upgrade: linstorv1.UpgradePreflight, deployed: dv(fxFrom, fxFrom), upgrading: true, requeue: soon,
			events: ev("UpgradeStarted"), check: startedNow},
	},
	{
		name: "a rolled-back upgrade is not retried without the annotation",
		in: input(withReported(fxFrom), withDeployed(dv(fxFrom, fxFrom)),
			withUpgrade(finished(linstorv1.UpgradeRolledBack, fxFrom, fxTo))),
		want: expect{upgrade: linstorv1.UpgradeRolledBack, deployed: dv(fxFrom, fxFrom), problem: linstorv1.ReasonUpgradeFailed,
			problemHas: []string{"failed and was rolled back (saved)"}, check: sameUpgrade},
	},
	{
		name: "a retry annotation naming another version does not retry",
		in: input(withReported(fxFrom), withDeployed(dv(fxFrom, fxFrom)), withRetry("1.34.0"),
			withUpgrade(finished(linstorv1.UpgradeRolledBack, fxFrom, fxTo))),
		want: expect{upgrade: linstorv1.UpgradeRolledBack, deployed: dv(fxFrom, fxFrom), problem: linstorv1.ReasonUpgradeFailed,
			check: sameUpgrade},
	},
	{
		name: "a rolled-back upgrade is retried with the annotation, which the retry uses up",
		in: input(withReported(fxFrom), withDeployed(dv(fxFrom, fxFrom)), withRetry(fxTo),
			withUpgrade(finished(linstorv1.UpgradeRolledBack, fxFrom, fxTo))),
		want: expect{upgrade: linstorv1.UpgradePreflight, deployed: dv(fxFrom, fxFrom), upgrading: true, requeue: soon,
			actions: []Action{removeRetry}, events: ev("UpgradeStarted"), check: startedNow},
	},
	{
		name: "a rolled-back upgrade of another path does not hold back a new one",
		in: input(withReported(fxFrom), withDeployed(dv(fxFrom, fxFrom)),
			withUpgrade(finished(linstorv1.UpgradeRolledBack, "1.29.1", fxTo))),
		want: expect{upgrade: linstorv1.UpgradePreflight, deployed: dv(fxFrom, fxFrom), upgrading: true, requeue: soon,
			events: ev("UpgradeStarted"), check: startedNow},
	},
	{
		name: "external controller: satellites follow the reported version, the upgrade is dropped",
		in:   inPhase(linstorv1.UpgradeController, withExternalController(), withReported(fxFrom), obsLinstor(fxTo)),
		want: expect{deployed: &linstorv1.DeployedVersions{Satellites: fxFrom}},
	},
	{
		name: "external controller not answering yet: satellites at the release's version",
		in:   input(withExternalController(), withReported(""), withDeployed(nil)),
		want: expect{deployed: &linstorv1.DeployedVersions{Satellites: images.LinstorVersion}},
	},
}

func TestStepVersion(t *testing.T) { runStepCases(t, versionCases) }

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
			check: all(upgradeFromTo(fxFrom, fxTo), upgradeMsgHas("Manual"))},
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
		in:   inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), obsUpgradeBackup(linstorv1.BackupCompleted, "done")),
		want: expect{upgrade: linstorv1.UpgradeController, deployed: dv(fxTo, fxFrom), fence: true, upgrading: true, requeue: soon,
			events: ev("UpgradeController"), check: all(upgradeBackupIs(fxPreBackup), upgradeMsgHas("sha256:0123abcd"))},
	},
	{
		name: "completed past the timeout still moves on: Controller",
		in:   inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), obsUpgradeBackup(linstorv1.BackupCompleted, "done"), late()),
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
		in:   inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), obsUpgradeBackup(linstorv1.BackupCompleted, "done")),
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
		want: expect{upgrade: linstorv1.UpgradeRollingBack, deployed: dv(fxFrom, fxFrom), stop: AnnotationConfirmDatabaseRestored, fence: true,
			upgrading: true, requeue: soon, problem: linstorv1.ReasonRollbackNeedsConfirmation,
			problemHas: []string{"database is external", "stays stopped", AnnotationConfirmDatabaseRestored + "=" + fxPreBackup},
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
		want: expect{upgrade: linstorv1.UpgradeRollingBack, deployed: dv(fxFrom, fxFrom), stop: AnnotationConfirmDatabaseRestored, fence: true,
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
			problem: linstorv1.ReasonUpgradeStalled, problemHas: []string{"pvc-1 on node-b is Inconsistent", "cannot roll back", AnnotationAcknowledgeLostNodes + "=<node>"},
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
			problem: linstorv1.ReasonUpgradeFailed, problemHas: []string{"restored by the admin", AnnotationRetryUpgrade + "=" + fxTo},
			actions: []Action{{Kind: RemoveAnnotation, Annotation: AnnotationConfirmDatabaseRestored}}, events: ev("UpgradeRolledBack")},
	},
	{
		name: "external database rolling back, a confirmation naming another upgrade: stays stopped",
		in: inPhase(linstorv1.UpgradeRollingBack, withBackupName(""), withExternalDB(true), obsStopped(),
			func(in *Input) { in.Spec.ConfirmDatabaseRestored = "linstor-before-1-33-3-1" }),
		want: expect{upgrade: linstorv1.UpgradeRollingBack, deployed: dv(fxFrom, fxFrom), stop: AnnotationConfirmDatabaseRestored, fence: true,
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
			problemHas: []string{"Cause: the controller did not come up at 1.33.3", AnnotationRetryUpgrade + "=" + fxTo, "restored from " + fxPreBackup},
			check:      upgradeMsgHas("Cause: the controller did not come up", AnnotationRetryUpgrade+"="+fxTo)},
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
// Restore
// ---------------------------------------------------------------------------------

var restoreCases = []stepCase{
	// A new request.
	{
		name: "new request on an empty database: Stopping, nothing touched",
		in:   inRestore(withReported(""), withDeployed(nil), obsDBEmpty(true)),
		want: expect{restore: RestoreStopping, restoreBackup: fxNightly, restoreUID: fxUID, stop: "restore of " + fxNightly,
			upgrading: true, requeue: soon, check: restoreVersionIs(fxFrom)},
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
		want: expect{upgrade: linstorv1.UpgradeRollingBack, deployed: dv(fxFrom, fxFrom), stop: AnnotationConfirmDatabaseRestored, fence: true, upgrading: true,
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
			actions: []Action{{Kind: RemoveAnnotation, Annotation: AnnotationConfirmRestore}, {Kind: CheckRestore, Backup: fxNightly}}},
	},
	{
		name: "Restored with the used confirmation still there: removed",
		in:   inRestore(withRestore(RestoreRestored, fxNightly, fxUID, fxFrom), withConfirm(fxNightly+"/"+fxUID)),
		want: expect{restore: RestoreRestored, deployed: dv(fxTo, fxTo), actions: []Action{{Kind: RemoveAnnotation, Annotation: AnnotationConfirmRestore}}},
	},
	{
		name: "a confirmed restore supersedes a rollback that cannot finish",
		in: inRestore(withUpgrade(&linstorv1.UpgradeStatus{Phase: linstorv1.UpgradeRollingBack, From: fxFrom, To: fxTo, BackupName: fxPreBackup,
			StartedAt: mt(fxNow), PhaseStartedAt: mt(fxNow)}), withConfirm(fxNightly+"/"+fxUID), obsDBEmpty(false)),
		want: expect{restore: RestoreStopping, restoreBackup: fxNightly, upgrade: linstorv1.UpgradeRollingBack, deployed: dv(fxTo, fxTo),
			stop: "restore of " + fxNightly, upgrading: true, requeue: soon,
			actions: []Action{{Kind: RemoveAnnotation, Annotation: AnnotationConfirmRestore}}},
	},
	{
		name: "a restore named during a rollback without confirmation waits, and says how to confirm",
		in: inRestore(withUpgrade(&linstorv1.UpgradeStatus{Phase: linstorv1.UpgradeRollingBack, From: fxFrom, To: fxTo, BackupName: fxPreBackup,
			StartedAt: mt(fxNow), PhaseStartedAt: mt(fxNow)}), obsDBEmpty(false), obsUpgradeBackup(linstorv1.BackupCompleted, ""), obsStopped()),
		want: expect{upgrade: linstorv1.UpgradeRollingBack, deployed: dv(fxFrom, fxFrom), stop: fxPreBackup, fence: true, upgrading: true,
			requeue: Poll, problem: linstorv1.ReasonUpgradeInProgress, problemHas: []string{AnnotationConfirmRestore + "=" + fxNightly + "/" + fxUID},
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
			problem: linstorv1.ReasonRestoreNeedsConfirmation, problemHas: []string{AnnotationConfirmRestore + "=" + fxNightly + "/" + fxUID}},
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
			upgrading: true, actions: []Action{{Kind: RemoveAnnotation, Annotation: AnnotationConfirmRestore}, restoreDB(fxWeekly)}, check: restoreVersionIs(fxTo)},
	},
	{
		// A manifest still naming an old backup (or a marker adopted by a recreated
		// object whose spec names another) must not switch the restore on its own.
		name: "another backup named during Restoring without confirmation: the begun restore finishes, the status says how to switch",
		in: inRestore(withRestoreFrom(fxWeekly), withDeployed(dv(fxFrom, fxFrom)), withRestore(RestoreRestoring, fxNightly, fxUID, fxFrom),
			obsRestoreBackup(fxNightly, linstorv1.BackupCompleted, fxFrom), obsStopped()),
		want: expect{restore: RestoreRestoring, restoreBackup: fxNightly, deployed: dv(fxFrom, fxFrom), stop: "restored from " + fxNightly,
			upgrading: true, actions: []Action{restoreDB(fxNightly)}, problem: linstorv1.ReasonRestoreNeedsConfirmation,
			problemHas: []string{AnnotationConfirmRestore + "=" + fxWeekly + "/" + fxUID}},
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
		name: "a Failed backup: Failed, nothing touched",
		in:   inRestore(obsRestoreBackup(fxNightly, linstorv1.BackupFailed, fxFrom), obsDBEmpty(true), obsStopped()),
		want: expect{restore: RestoreFailed, deployed: dv(fxTo, fxTo), problem: linstorv1.ReasonInvalidSpec,
			problemHas: []string{"failed"}, events: ev("RestoreFailed")},
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
		in:    inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), obsUpgradeBackup(linstorv1.BackupCompleted, ""), obsLinstor(fxFrom)),
		first: "upgrade:Controller", second: "upgrade:Controller",
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
		secondActions: []Action{{Kind: RemoveAnnotation, Annotation: AnnotationConfirmRestore}},
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
// Scenarios: many passes against a simulated cluster, as the controller runs them.
// ---------------------------------------------------------------------------------

// world simulates what the controller observes and what its actions and outputs do.
type world struct {
	spec  Spec
	state State
	now   time.Time
	// running is the version of the LINSTOR controller pod ("" none); broken a version
	// that never answers.
	running, broken string
	stopped         bool
	// dbVersion is the version the database was migrated to; dbEmpty: it holds nothing.
	dbVersion   string
	dbEmpty     bool
	backups     map[string]*Backup
	backupFails bool
	restoreErrs []error
	// checkErrs are what CheckRestore finds, one per check.
	checkErrs []error
	restored  []string
	// marker is the database-replacement marker outside the status.
	marker *Marker
	trace  []string
}

func newWorld(spec Spec, st State) *world {
	w := &world{spec: spec, state: st, now: fxNow, backups: map[string]*Backup{}}
	w.trace = []string{summary(st)}
	return w
}

func (w *world) backup(name string) *Backup {
	if name == "" {
		return nil
	}
	if b := w.backups[name]; b != nil {
		x := *b
		return &x
	}
	return &Backup{Name: name}
}

func (w *world) record(st State) {
	if s := summary(st); s != w.trace[len(w.trace)-1] {
		w.trace = append(w.trace, s)
	}
}

// pass is one reconcile: observe what Needs asks for, Step, carry out the actions
// (AfterAction for restores), apply the outcome.
func (w *world) pass(t *testing.T) Output {
	t.Helper()
	var active string
	for name, b := range w.backups { // a backup completes one pass after it was created
		switch b.Phase {
		case linstorv1.BackupRunning:
			b.Phase = linstorv1.BackupCompleted
			if w.backupFails {
				b.Phase, b.Message = linstorv1.BackupFailed, "disk full"
			}
		case linstorv1.BackupPending:
			b.Phase, active = linstorv1.BackupRunning, name
		}
	}
	need := Needs(w.spec, w.state)
	obs := Observed{ControllerStopped: w.stopped, ActiveBackup: active, RunningBackup: active}
	if need.Marker {
		obs.Marker = w.marker
	}
	if need.Linstor {
		l := &Linstor{}
		switch {
		case w.stopped || w.running == "":
			l.Err = "connection refused"
		case w.running == w.broken:
			l.Err = "503 Service Unavailable"
		default:
			l.Version = w.running
		}
		obs.Linstor = l
	}
	obs.UpgradeBackup, obs.RestoreBackup = w.backup(need.UpgradeBackup), w.backup(need.RestoreBackup)
	if need.DatabaseEmpty {
		obs.DatabaseEmpty = boolp(w.dbEmpty)
	}
	in := Input{Spec: w.spec, State: w.state.DeepCopy(), Observed: obs, Release: fxRelease, Now: w.now}
	out := Step(in)
	w.state = out.State.DeepCopy()
	w.record(w.state)
	for _, a := range out.Actions {
		switch a.Kind {
		case CreateBackup:
			if w.backups[a.Backup] == nil {
				w.backups[a.Backup] = &Backup{Name: a.Backup, Found: true, Cluster: fxCluster, Phase: linstorv1.BackupPending,
					LinstorVersion: w.dbVersion, Checksum: "sha256:1", Objects: 10}
			}
		case RemoveAnnotation:
			switch a.Annotation {
			case AnnotationConfirmRestore:
				w.spec.ConfirmRestore = ""
			case AnnotationRetryUpgrade:
				w.spec.RetryUpgrade = ""
			case AnnotationConfirmDatabaseRestored:
				w.spec.ConfirmDatabaseRestored = ""
			}
		case CheckRestore:
			var err error
			if len(w.checkErrs) > 0 {
				err, w.checkErrs = w.checkErrs[0], w.checkErrs[1:]
			}
			out = AfterAction(in, out.State, a, err)
			w.state = out.State.DeepCopy()
			w.record(w.state)
		case RestoreDatabase:
			if !w.stopped {
				t.Fatalf("RestoreDatabase of %s while the controller runs", a.Backup)
			}
			var err error
			if len(w.restoreErrs) > 0 {
				err, w.restoreErrs = w.restoreErrs[0], w.restoreErrs[1:]
			}
			if err == nil {
				w.dbVersion, w.dbEmpty = w.backups[a.Backup].LinstorVersion, false
				w.restored = append(w.restored, a.Backup)
				w.marker = nil // the controller clears it before it saves the outcome
			}
			out = AfterAction(in, out.State, a, err)
			w.state = out.State.DeepCopy()
			w.record(w.state)
		}
	}
	// Apply: the controller runs the deployed version unless stopped; a version that
	// runs migrates the database; status.version follows what answers.
	w.stopped, w.running = out.StopController != "", ""
	if d := w.state.Deployed; !w.stopped && d != nil {
		w.running = d.Controller
	}
	if w.running != "" && w.dbVersion != "" && upgrade.MustParse(w.dbVersion).Less(upgrade.MustParse(w.running)) {
		w.dbVersion = w.running // migrated on start (half migrated when broken)
	}
	if out.VersionStale {
		w.spec.Reported = ""
	}
	if w.running != "" && w.running != w.broken {
		w.spec.Reported = w.running
	}
	w.now = w.now.Add(30 * time.Second)
	return out
}

type scenarioCase struct {
	name  string
	setup func(w *world)
	// idle is called when a pass asks for no requeue; it changes the world as a user
	// would, and returns false to end the scenario.
	idle  func(w *world) bool
	trace []string
	check func(t *testing.T, w *world)
}

func upgradeWorld(w *world) {
	w.spec.Reported, w.state.Deployed, w.running, w.dbVersion = fxFrom, dv(fxFrom, fxFrom), fxFrom, fxFrom
}

func stopWhenIdle(*world) bool { return false }

var scenarioCases = []scenarioCase{
	{
		name:  "automatic upgrade succeeds",
		setup: upgradeWorld,
		idle:  stopWhenIdle,
		trace: []string{"idle", "upgrade:Preflight", "upgrade:Backup", "upgrade:Controller", "upgrade:Satellites", "upgrade:Verify", "upgrade:Succeeded"},
		check: func(t *testing.T, w *world) {
			if !reflect.DeepEqual(w.state.Deployed, dv(fxTo, fxTo)) || w.dbVersion != fxTo || len(w.backups) != 1 || len(w.restored) != 0 {
				t.Errorf("deployed %s, database at %s, %d backups, restored %v", fmtDeployed(w.state.Deployed), w.dbVersion, len(w.backups), w.restored)
			}
		},
	},
	{
		name: "the new controller never answers: rolled back, not retried, retried with the annotation",
		setup: func(w *world) {
			upgradeWorld(w)
			w.broken = fxTo
		},
		idle: func(w *world) bool {
			if w.state.Upgrade != nil && w.state.Upgrade.Phase == linstorv1.UpgradeRolledBack && w.broken != "" {
				if w.dbVersion != fxFrom || w.running != fxFrom {
					return false // the check reports it
				}
				w.broken, w.spec.RetryUpgrade = "", fxTo
				return true
			}
			return false
		},
		trace: []string{"idle", "upgrade:Preflight", "upgrade:Backup", "upgrade:Controller", "upgrade:RollingBack", "upgrade:RolledBack",
			"upgrade:Preflight", "upgrade:Backup", "upgrade:Controller", "upgrade:Satellites", "upgrade:Verify", "upgrade:Succeeded"},
		check: func(t *testing.T, w *world) {
			if len(w.backups) != 2 || len(w.restored) != 1 || w.spec.RetryUpgrade != "" || w.dbVersion != fxTo {
				t.Errorf("%d backups, restored %v, retry annotation %q, database at %s", len(w.backups), w.restored, w.spec.RetryUpgrade, w.dbVersion)
			}
		},
	},
	{
		name: "the rollback's restore fails once: retried, LINSTOR stays stopped meanwhile",
		setup: func(w *world) {
			upgradeWorld(w)
			w.broken, w.restoreErrs = fxTo, []error{errors.New("conflict")}
		},
		idle:  stopWhenIdle,
		trace: []string{"idle", "upgrade:Preflight", "upgrade:Backup", "upgrade:Controller", "upgrade:RollingBack", "upgrade:RolledBack"},
		check: func(t *testing.T, w *world) {
			if len(w.restored) != 1 || w.dbVersion != fxFrom || w.running != fxFrom {
				t.Errorf("restored %v, database at %s, running %s", w.restored, w.dbVersion, w.running)
			}
		},
	},
	{
		name: "the upgrade's backup fails: the upgrade ends, nothing changed",
		setup: func(w *world) {
			upgradeWorld(w)
			w.backupFails = true
		},
		idle:  stopWhenIdle,
		trace: []string{"idle", "upgrade:Preflight", "upgrade:Backup", "upgrade:RolledBack"},
		check: func(t *testing.T, w *world) {
			if !reflect.DeepEqual(w.state.Deployed, dv(fxFrom, fxFrom)) || w.dbVersion != fxFrom || len(w.restored) != 0 {
				t.Errorf("deployed %s, database at %s, restored %v", fmtDeployed(w.state.Deployed), w.dbVersion, w.restored)
			}
		},
	},
	{
		name: "new installation restoring a backup, then the automatic upgrade",
		setup: func(w *world) {
			w.spec.Reported, w.state.Deployed, w.dbEmpty = "", nil, true
			w.spec.RestoreFrom = fxNightly
			w.backups[fxNightly] = &Backup{Name: fxNightly, Found: true, Cluster: fxCluster, Phase: linstorv1.BackupCompleted, LinstorVersion: fxFrom}
			w.running = "starting" // a controller pod exists, not answering yet
		},
		idle: stopWhenIdle,
		trace: []string{"idle", "restore:Stopping", "restore:Restoring", "restore:Restored", "restore:Restored upgrade:Preflight",
			"restore:Restored upgrade:Backup", "restore:Restored upgrade:Controller", "restore:Restored upgrade:Satellites",
			"restore:Restored upgrade:Verify", "restore:Restored upgrade:Succeeded"},
		check: func(t *testing.T, w *world) {
			if !reflect.DeepEqual(w.restored, []string{fxNightly}) || w.dbVersion != fxTo {
				t.Errorf("restored %v, database at %s", w.restored, w.dbVersion)
			}
		},
	},
	{
		name: "restore over a live database after the user confirms it",
		setup: func(w *world) {
			w.spec.Reported, w.state.Deployed, w.running, w.dbVersion = fxTo, dv(fxTo, fxTo), fxTo, fxTo
			w.spec.RestoreFrom = fxWeekly
			w.backups[fxWeekly] = &Backup{Name: fxWeekly, Found: true, Cluster: fxCluster, Phase: linstorv1.BackupCompleted, LinstorVersion: fxTo}
		},
		idle: func(w *world) bool {
			if w.state.Restore != nil && w.state.Restore.Phase == RestoreAwaitingConfirmation {
				if len(w.restored) != 0 || w.stopped {
					return false
				}
				w.spec.ConfirmRestore = fxWeekly + "/" + fxUID
				return true
			}
			return false
		},
		trace: []string{"idle", "restore:AwaitingConfirmation", "restore:Stopping", "restore:Restoring", "restore:Restored"},
		check: func(t *testing.T, w *world) {
			if !reflect.DeepEqual(w.restored, []string{fxWeekly}) || w.spec.ConfirmRestore != "" || w.stopped {
				t.Errorf("restored %v, confirmation %q, stopped %v", w.restored, w.spec.ConfirmRestore, w.stopped)
			}
		},
	},
}

func init() {
	scenarioCases = append(scenarioCases,
		scenarioCase{
			name: "new installation restoring a damaged backup: checked before anything is written, Failed, LINSTOR starts",
			setup: func(w *world) {
				w.spec.Reported, w.state.Deployed, w.dbEmpty = "", nil, true
				w.spec.RestoreFrom = fxNightly
				w.backups[fxNightly] = &Backup{Name: fxNightly, Found: true, Cluster: fxCluster, Phase: linstorv1.BackupCompleted, LinstorVersion: fxFrom}
				w.checkErrs = []error{fmt.Errorf("%w: LinstorBackup nightly is damaged", ErrBackupUnusable)}
			},
			idle:  stopWhenIdle,
			trace: []string{"idle", "restore:Stopping", "restore:Failed"},
			check: func(t *testing.T, w *world) {
				if len(w.restored) != 0 || w.stopped {
					t.Errorf("restored %v, stopped %v", w.restored, w.stopped)
				}
			},
		},
		scenarioCase{
			name: "external database: the failed upgrade keeps LINSTOR stopped until the admin confirms the restore",
			setup: func(w *world) {
				upgradeWorld(w)
				w.spec.ExternalDatabase, w.spec.ExternalBackupAcknowledged, w.broken = "the LINSTOR database is external", true, fxTo
			},
			idle: func(w *world) bool {
				u := w.state.Upgrade
				if u != nil && u.Phase == linstorv1.UpgradeRollingBack && w.spec.ConfirmDatabaseRestored == "" {
					if !w.stopped || w.running != "" {
						return false // the check reports it
					}
					w.spec.ConfirmDatabaseRestored = UpgradeID(fxCluster, u)
					return true
				}
				return false
			},
			trace: []string{"idle", "upgrade:Preflight", "upgrade:Backup", "upgrade:Controller", "upgrade:RollingBack", "upgrade:RolledBack"},
			check: func(t *testing.T, w *world) {
				if w.running != fxFrom || w.spec.ConfirmDatabaseRestored != "" || len(w.restored) != 0 {
					t.Errorf("running %q, confirmation %q, restored %v", w.running, w.spec.ConfirmDatabaseRestored, w.restored)
				}
			},
		},
		scenarioCase{
			name: "a LinstorCluster recreated mid-restore: the marker finishes the restore before LINSTOR starts",
			setup: func(w *world) {
				w.spec.Reported, w.state.Deployed, w.dbVersion = "", nil, fxTo
				w.backups[fxNightly] = &Backup{Name: fxNightly, Found: true, Cluster: fxCluster, Phase: linstorv1.BackupCompleted, LinstorVersion: fxFrom}
				w.marker = &Marker{Backup: fxNightly, Operation: "restore", ClusterUID: "old-uid"}
			},
			idle: stopWhenIdle,
			// Restored at the backup's version, then this release's automatic upgrade.
			trace: []string{"idle", "restore:Restoring", "restore:Restored", "upgrade:Preflight", "upgrade:Backup", "upgrade:Controller",
				"upgrade:Satellites", "upgrade:Verify", "upgrade:Succeeded"},
			check: func(t *testing.T, w *world) {
				if !reflect.DeepEqual(w.restored, []string{fxNightly}) || w.marker != nil {
					t.Errorf("restored %v, marker %v", w.restored, w.marker)
				}
			},
		},
	)
}

func TestScenarios(t *testing.T) {
	for _, tc := range scenarioCases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(Spec{ClusterName: fxCluster, ClusterUID: fxUID}, State{})
			tc.setup(w)
			w.trace = []string{summary(w.state)}
			for n := 0; ; n++ {
				if n == 500 {
					t.Fatalf("no end after %d passes: %v", n, w.trace)
				}
				out := w.pass(t)
				if out.Requeue == 0 && !tc.idle(w) {
					break
				}
			}
			if !reflect.DeepEqual(w.trace, tc.trace) {
				t.Errorf("phases:\n got %q\nwant %q", w.trace, tc.trace)
			}
			if tc.check != nil {
				tc.check(t, w)
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

// ---------------------------------------------------------------------------------
// The tables themselves: every phase is reached and left by rows, each phase table
// holds only rows of its phase, every action is asked for by some row.
// ---------------------------------------------------------------------------------

var allUpgradePhases = []linstorv1.UpgradePhase{linstorv1.UpgradeAwaitingApproval, linstorv1.UpgradeRefused, linstorv1.UpgradePreflight,
	linstorv1.UpgradeBackup, linstorv1.UpgradeController, linstorv1.UpgradeSatellites, linstorv1.UpgradeVerify, linstorv1.UpgradeSucceeded,
	linstorv1.UpgradeRollingBack, linstorv1.UpgradeRolledBack}

var allRestorePhases = []string{RestoreAwaitingConfirmation, RestoreStopping, RestoreRestoring, RestoreRestored, RestoreFailed}

func TestTablesCoverEveryPhase(t *testing.T) {
	phaseTables := map[linstorv1.UpgradePhase][]stepCase{
		linstorv1.UpgradePreflight: preflightCases, linstorv1.UpgradeBackup: backupCases, linstorv1.UpgradeController: controllerCases,
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

	steps := [][]stepCase{versionCases, preflightCases, backupCases, controllerCases, satellitesCases, verifyCases, rollingBackCases, restoreCases}
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
	for _, k := range []ActionKind{CreateBackup, RestoreDatabase, RemoveAnnotation} {
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

// The marker outside the status follows the upgrade: recorded before the new controller
// may migrate (the same pass that enters Controller), "upgraded" from Verify, cleared
// when the upgrade has ended; nothing while a restore replaces the database.
func TestMarkerActions(t *testing.T) {
	cases := []struct {
		name string
		in   Input
		want string // RecordMarker's operation, "clear", or "" for none
	}{
		{"idle", input(), ""},
		{"Preflight changes nothing", inPhase(linstorv1.UpgradePreflight, obsLinstor(fxFrom, "node-b OFFLINE")), ""},
		{"Backup, still copying", inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), obsUpgradeBackup(linstorv1.BackupRunning, "")), ""},
		{"the pass that enters Controller records it", inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), obsUpgradeBackup(linstorv1.BackupCompleted, "")), MarkerUpgrade},
		{"Controller", inPhase(linstorv1.UpgradeController, obsLinstor(fxFrom)), MarkerUpgrade},
		{"Satellites", inPhase(linstorv1.UpgradeSatellites, obsWaiting(fxTo, "node-b OFFLINE")), MarkerUpgrade},
		{"the pass that enters Verify", inPhase(linstorv1.UpgradeSatellites, obsWaiting(fxTo)), MarkerUpgraded},
		{"Verify", inPhase(linstorv1.UpgradeVerify, obsLinstor(fxTo, "pvc-1 Inconsistent")), MarkerUpgraded},
		{"Succeeded", inPhase(linstorv1.UpgradeVerify, obsLinstor(fxTo)), "clear"},
		{"RollingBack: the restore job owns it", inPhase(linstorv1.UpgradeRollingBack, obsUpgradeBackup(linstorv1.BackupCompleted, ""), obsStopped()), ""},
		{"a restore in progress owns it", inRestore(withRestore(RestoreRestoring, fxNightly, fxUID, fxFrom), obsRestoreBackup(fxNightly, linstorv1.BackupCompleted, fxFrom), obsStopped()), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			for _, a := range Step(tc.in).Actions {
				switch a.Kind {
				case ClearMarker:
					got = "clear"
				case RecordMarker:
					got = a.Marker.Operation
					if a.Marker.From != fxFrom || a.Marker.To != fxTo || a.Marker.ClusterUID != fxUID {
						t.Errorf("marker %+v", *a.Marker)
					}
				}
			}
			if got != tc.want {
				t.Errorf("marker action %q, want %q", got, tc.want)
			}
		})
	}
}
