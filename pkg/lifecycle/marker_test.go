package lifecycle

import (
	"testing"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

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
		{"the pass that enters Controller records it", inPhase(linstorv1.UpgradeBackup, withBackupName(fxPreBackup), withoutRehearsal(), obsUpgradeBackup(linstorv1.BackupCompleted, "")), MarkerUpgrade},
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
