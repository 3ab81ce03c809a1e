package lifecycle

// Many passes against a simulated cluster: Step, the actions and AfterAction as the
// controller runs them.

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/upgrade"
)

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
	// rehearsals are the rehearsal Jobs; rehearsalFails makes the next one fail.
	rehearsals     map[string]*Rehearsal
	rehearsalFails string
	trace          []string
	// startedEmpty: a LINSTOR controller ran before anything was restored.
	startedEmpty bool
	// importPasses is how many passes a Verifying backup takes to complete.
	importPasses int
}

func newWorld(spec Spec, st State) *world {
	w := &world{spec: spec, state: st, now: fxNow, backups: map[string]*Backup{}, rehearsals: map[string]*Rehearsal{}}
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
		case linstorv1.BackupVerifying: // an import reads its bucket; the database is not involved
			if w.importPasses--; w.importPasses <= 0 {
				b.Phase = linstorv1.BackupCompleted
			}
		}
	}
	for _, r := range w.rehearsals { // a rehearsal ends one pass after it was created
		if !r.Succeeded && !r.Failed {
			r.Succeeded = w.rehearsalFails == ""
			r.Failed, r.Message = !r.Succeeded, w.rehearsalFails
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
	if need.Rehearsal != "" {
		obs.Rehearsal = &Rehearsal{Name: need.Rehearsal}
		if r := w.rehearsals[need.Rehearsal]; r != nil {
			obs.Rehearsal = &Rehearsal{Name: r.Name, Found: true, Succeeded: r.Succeeded, Failed: r.Failed, Message: r.Message}
		}
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
		case CreateRehearsal:
			if !w.stopped {
				t.Fatalf("rehearsal %s created while the controller runs on the database it copies", a.Job)
			}
			if w.rehearsals[a.Job] == nil {
				w.rehearsals[a.Job] = &Rehearsal{Name: a.Job, Found: true}
			}
		case DeleteRehearsal:
			delete(w.rehearsals, a.Job)
		case RemoveAnnotation:
			switch a.Annotation {
			case names.AnnotationConfirmRestore:
				w.spec.ConfirmRestore = ""
			case names.AnnotationRetryUpgrade:
				w.spec.RetryUpgrade = ""
			case names.AnnotationConfirmDatabaseRestored:
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
	defer func() {
		if w.running != "" && len(w.restored) == 0 && w.spec.RestoreFrom != "" {
			w.startedEmpty = true
		}
	}()
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
		name: "the rehearsal fails: rolled back with the database untouched and the old controller running; retried with the annotation",
		setup: func(w *world) {
			upgradeWorld(w)
			w.rehearsalFails = "Caused by: DatabaseException: LayerResourceId 17 not found!"
		},
		idle: func(w *world) bool {
			if w.state.Upgrade.Phase != linstorv1.UpgradeRolledBack || w.spec.RetryUpgrade != "" || len(w.rehearsals) == 0 {
				return false
			}
			if w.dbVersion != fxFrom || w.running != fxFrom || len(w.restored) != 0 {
				panic(fmt.Sprintf("after the failed rehearsal: database at %s, running %q, restored %v", w.dbVersion, w.running, w.restored))
			}
			w.rehearsalFails, w.spec.RetryUpgrade = "", fxTo
			w.now = w.now.Add(time.Hour) // the retry's start names a new Job
			return true
		},
		trace: []string{"idle", "upgrade:Preflight", "upgrade:Backup", "upgrade:Rehearsal", "upgrade:RolledBack",
			"upgrade:Preflight", "upgrade:Backup", "upgrade:Rehearsal", "upgrade:Controller", "upgrade:Satellites", "upgrade:Verify", "upgrade:Succeeded"},
		check: func(t *testing.T, w *world) {
			if w.dbVersion != fxTo || len(w.backups) != 2 || len(w.restored) != 0 {
				t.Errorf("database at %s, %d backups, restored %v", w.dbVersion, len(w.backups), w.restored)
			}
			if len(w.rehearsals) != 1 {
				t.Errorf("rehearsal Jobs left: %v (the failed one stays for its logs, the passed one goes)", w.rehearsals)
			}
		},
	},
	{
		name:  "automatic upgrade succeeds",
		setup: upgradeWorld,
		idle:  stopWhenIdle,
		trace: []string{"idle", "upgrade:Preflight", "upgrade:Backup", "upgrade:Rehearsal", "upgrade:Controller", "upgrade:Satellites", "upgrade:Verify", "upgrade:Succeeded"},
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
		trace: []string{"idle", "upgrade:Preflight", "upgrade:Backup", "upgrade:Rehearsal", "upgrade:Controller", "upgrade:RollingBack", "upgrade:RolledBack",
			"upgrade:Preflight", "upgrade:Backup", "upgrade:Rehearsal", "upgrade:Controller", "upgrade:Satellites", "upgrade:Verify", "upgrade:Succeeded"},
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
		trace: []string{"idle", "upgrade:Preflight", "upgrade:Backup", "upgrade:Rehearsal", "upgrade:Controller", "upgrade:RollingBack", "upgrade:RolledBack"},
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
			"restore:Restored upgrade:Backup", "restore:Restored upgrade:Rehearsal", "restore:Restored upgrade:Controller", "restore:Restored upgrade:Satellites",
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
			name: "new installation restoring a damaged backup: checked before anything is written, Failed, LINSTOR stays stopped until restoreFrom is cleared, then starts",
			setup: func(w *world) {
				w.spec.Reported, w.state.Deployed, w.dbEmpty = "", nil, true
				w.spec.RestoreFrom = fxNightly
				w.backups[fxNightly] = &Backup{Name: fxNightly, Found: true, Cluster: fxCluster, Phase: linstorv1.BackupCompleted, LinstorVersion: fxFrom}
				w.checkErrs = []error{fmt.Errorf("%w: LinstorBackup nightly is damaged", ErrBackupUnusable)}
			},
			idle: func(w *world) bool {
				// A new cluster asked to be restored never starts on an empty database on
				// its own: the admin clears restoreFrom (or names another backup).
				if r := w.state.Restore; r != nil && r.Phase == RestoreFailed && w.spec.RestoreFrom != "" {
					if !w.stopped || w.running != "" {
						return false // the check reports it
					}
					w.spec.RestoreFrom = ""
					return true
				}
				return false
			},
			trace: []string{"idle", "restore:Stopping", "restore:Failed", "idle"},
			check: func(t *testing.T, w *world) {
				if len(w.restored) != 0 || w.stopped {
					t.Errorf("restored %v, stopped %v", w.restored, w.stopped)
				}
			},
		},
		scenarioCase{
			name: "new installation restoring a backup that is not there yet (imported from a bucket): LINSTOR never starts before it is restored",
			setup: func(w *world) {
				w.spec.Reported, w.state.Deployed, w.dbEmpty = "", nil, true
				w.spec.RestoreFrom = fxNightly
				// Imported from a bucket: read back for one pass before it is Completed.
				w.backups[fxNightly] = &Backup{Name: fxNightly, Found: true, Cluster: fxCluster, Phase: linstorv1.BackupVerifying, LinstorVersion: fxFrom}
				w.importPasses = 5
			},
			idle: stopWhenIdle,
			// Restored at the backup's version, then this release's automatic upgrade.
			trace: []string{"idle", "restore:Stopping", "restore:Restoring", "restore:Restored", "restore:Restored upgrade:Preflight", "restore:Restored upgrade:Backup",
				"restore:Restored upgrade:Rehearsal", "restore:Restored upgrade:Controller", "restore:Restored upgrade:Satellites", "restore:Restored upgrade:Verify", "restore:Restored upgrade:Succeeded"},
			check: func(t *testing.T, w *world) {
				if len(w.restored) != 1 || w.stopped || w.running != fxTo || w.startedEmpty {
					t.Errorf("restored %v, stopped %v, running %q, started on the empty database %v", w.restored, w.stopped, w.running, w.startedEmpty)
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
			trace: []string{"idle", "restore:Restoring", "restore:Restored", "upgrade:Preflight", "upgrade:Backup", "upgrade:Rehearsal", "upgrade:Controller",
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
