package lifecycle

import (
	"reflect"
	"strings"
	"testing"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

func TestFencesAndBackupGates(t *testing.T) {
	up := func(p linstorv1.UpgradePhase) *linstorv1.LinstorClusterStatus {
		return &linstorv1.LinstorClusterStatus{Upgrade: &linstorv1.UpgradeStatus{Phase: p, From: fxFrom, To: fxTo, BackupName: fxPreBackup}}
	}
	rs := func(p string) *linstorv1.LinstorClusterStatus {
		return &linstorv1.LinstorClusterStatus{Restore: &linstorv1.RestoreStatus{Phase: p, BackupName: fxNightly}}
	}
	cases := []struct {
		name                string
		st                  *linstorv1.LinstorClusterStatus
		fenced, waits, torn bool
	}{
		{"nothing in progress", &linstorv1.LinstorClusterStatus{}, false, false, false},
		{"Preflight has changed nothing", up(linstorv1.UpgradePreflight), false, false, false},
		{"Backup: a rollback would undo writes; the upgrade's own backup is taken now", up(linstorv1.UpgradeBackup), true, false, false},
		{"Controller migrates the database", up(linstorv1.UpgradeController), true, true, true},
		{"Satellites: a rollback may still restore", up(linstorv1.UpgradeSatellites), true, true, true},
		{"Verify: nothing rolls back", up(linstorv1.UpgradeVerify), false, false, false},
		{"RollingBack replaces the database", up(linstorv1.UpgradeRollingBack), true, true, true},
		{"RolledBack", up(linstorv1.UpgradeRolledBack), false, false, false},
		{"Succeeded", up(linstorv1.UpgradeSucceeded), false, false, false},
		{"restore awaiting confirmation: LINSTOR runs", rs(RestoreAwaitingConfirmation), false, false, false},
		{"restore Stopping: nothing written yet, a copy under way stays sound", rs(RestoreStopping), true, true, false},
		{"restore Restoring", rs(RestoreRestoring), true, true, true},
		{"restore Restored", rs(RestoreRestored), false, false, false},
		{"restore Failed", rs(RestoreFailed), false, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := LinstorWritesFenced(tc.st) != ""; got != tc.fenced {
				t.Errorf("LinstorWritesFenced: %v, want %v", got, tc.fenced)
			}
			if got := BackupWaits(tc.st) != ""; got != tc.waits {
				t.Errorf("BackupWaits: %v, want %v", got, tc.waits)
			}
			if got := BackupMayBeTorn(tc.st) != ""; got != tc.torn {
				t.Errorf("BackupMayBeTorn: %v, want %v", got, tc.torn)
			}
		})
	}
	if msg := LinstorWritesFenced(up(linstorv1.UpgradeSatellites)); !strings.Contains(msg, "Satellites") || !strings.Contains(msg, "undo") {
		t.Errorf("fence message %q names neither the phase nor why", msg)
	}
}

func TestBackupsInUseAndNamed(t *testing.T) {
	st := State{Upgrade: &linstorv1.UpgradeStatus{Phase: linstorv1.UpgradeSatellites, BackupName: fxPreBackup},
		Restore: &linstorv1.RestoreStatus{Phase: RestoreRestored, BackupName: fxNightly}}
	if got := BackupsInUse(st); !reflect.DeepEqual(got, []string{fxPreBackup}) {
		t.Errorf("in use: %v", got)
	}
	st.Upgrade.Phase, st.Restore.Phase = linstorv1.UpgradeSucceeded, RestoreRestoring
	if got := BackupsInUse(st); !reflect.DeepEqual(got, []string{fxNightly}) {
		t.Errorf("in use: %v", got)
	}
	status := &linstorv1.LinstorClusterStatus{Upgrade: st.Upgrade, Restore: st.Restore}
	if got := BackupsNamed(status, fxWeekly); !reflect.DeepEqual(got, []string{fxWeekly, fxPreBackup, fxNightly}) {
		t.Errorf("named: %v", got)
	}
}

func TestDatabaseVersion(t *testing.T) {
	cases := []struct {
		name string
		st   linstorv1.LinstorClusterStatus
		want string
	}{
		{"reported", linstorv1.LinstorClusterStatus{Version: fxFrom, Deployed: dv(fxFrom, fxFrom)}, fxFrom},
		{"a succeeded upgrade whose reading lags", linstorv1.LinstorClusterStatus{Version: fxFrom, Deployed: dv(fxTo, fxTo),
			Upgrade: finished(linstorv1.UpgradeSucceeded, fxFrom, fxTo)}, fxTo},
		{"Verify, the reading lags at From: the database is migrated", linstorv1.LinstorClusterStatus{Version: fxFrom, Deployed: dv(fxTo, fxTo),
			Upgrade: &linstorv1.UpgradeStatus{Phase: linstorv1.UpgradeVerify, From: fxFrom, To: fxTo}}, fxTo},
		{"just restored: status.version cleared, the backup's version deployed", linstorv1.LinstorClusterStatus{Deployed: dv(fxFrom, fxFrom)}, fxFrom},
		{"nothing known", linstorv1.LinstorClusterStatus{}, ""},
	}
	for _, tc := range cases {
		if got := DatabaseVersion(&tc.st); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
