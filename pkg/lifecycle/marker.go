package lifecycle

import (
	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// Marker records, outside the LinstorCluster's status, that LINSTOR's database is being
// replaced: a LinstorCluster deleted and recreated mid-restore starts with an empty
// status, and must not start LINSTOR on a half-restored database.
type Marker struct {
	// Operation is MarkerRestore or MarkerRollback (the database is being replaced
	// from Backup), MarkerUpgrade (the new controller may have migrated it: Controller,
	// Satellites; Backup is the pre-upgrade backup, "" for an external database) or
	// MarkerUpgraded (Verify: the database is at To).
	Operation string
	// Backup is the LinstorBackup involved.
	Backup string
	// From and To are the upgrade's versions.
	From, To string
	// ClusterUID is the LinstorCluster that began it.
	ClusterUID string
}

// Marker operations.
const (
	MarkerRestore  = "restore"
	MarkerRollback = "rollback"
	MarkerUpgrade  = "upgrade"
	MarkerUpgraded = "upgraded"
)

// markerActions keep the marker outside the status in step with the upgrade: from the
// moment the new controller may migrate the database until the satellites run the new
// version, a LinstorCluster recreated with an empty status must roll back (not start
// either version on a database it knows nothing of); in Verify it must run To. The
// actions come with the state that enters the phase, so the marker is written before
// the new controller is deployed. A rollback's restore job rewrites it, and clears it
// once the database reads back as the backup.
func markerActions(spec Spec, u *linstorv1.UpgradeStatus) []Action {
	if u == nil || spec.ExternalController {
		return nil
	}
	m := &Marker{Backup: u.BackupName, From: u.From, To: u.To, ClusterUID: spec.ClusterUID}
	switch u.Phase {
	case linstorv1.UpgradeController, linstorv1.UpgradeSatellites:
		m.Operation = MarkerUpgrade
	case linstorv1.UpgradeVerify:
		m.Operation = MarkerUpgraded
	case linstorv1.UpgradeSucceeded, linstorv1.UpgradeRolledBack:
		return []Action{{Kind: ClearMarker}}
	default:
		return nil
	}
	return []Action{{Kind: RecordMarker, Marker: m}}
}
