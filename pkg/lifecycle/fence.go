package lifecycle

import (
	"fmt"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// LinstorWritesFenced says why the operator's own writes to LINSTOR (node deletion and
// evacuation, storage pools and disk claims, network interfaces, properties, node
// connections) must wait now, "" when they may run. From the pre-upgrade backup to the
// end of the Satellites phase, and during a rollback, a rollback restores the
// pre-upgrade backup and would silently undo them (an evacuated replica LINSTOR no
// longer knows, an orphaned volume); during a restore the database is being replaced.
// Verify is not fenced: the satellites run the new version and nothing rolls back.
func LinstorWritesFenced(st *linstorv1.LinstorClusterStatus) string {
	if st == nil {
		return ""
	}
	if r := st.Restore; RestoreInProgress(r) {
		return fmt.Sprintf("the LINSTOR database is being restored from %s", r.BackupName)
	}
	if u := st.Upgrade; u != nil {
		switch u.Phase {
		case linstorv1.UpgradeBackup, linstorv1.UpgradeRehearsal, linstorv1.UpgradeController, linstorv1.UpgradeSatellites, linstorv1.UpgradeRollingBack:
			return fmt.Sprintf("the upgrade of LINSTOR %s -> %s is in phase %s: until its satellites run, a rollback restores the pre-upgrade backup and would undo the write", u.From, u.To, u.Phase)
		}
	}
	return ""
}

// BackupWaits says why a LinstorBackup of the cluster must not start copying now, ""
// when it may: while a restore or a rollback replaces the database the copy would be
// half of each, and while the new controller migrates it (Controller) or the
// satellites move (Satellites) the database's version is not settled, so the backup
// would label migrated data with the old version. The upgrade's own backup is taken in
// the Backup phase, which does not wait.
func BackupWaits(st *linstorv1.LinstorClusterStatus) string {
	if st == nil {
		return ""
	}
	if r := st.Restore; RestoreInProgress(r) {
		return fmt.Sprintf("the database is being restored from %s (restore phase %s)", r.BackupName, r.Phase)
	}
	if u := st.Upgrade; u != nil {
		switch u.Phase {
		case linstorv1.UpgradeController, linstorv1.UpgradeSatellites:
			return fmt.Sprintf("the upgrade %s -> %s is in phase %s: the database is being migrated", u.From, u.To, u.Phase)
		case linstorv1.UpgradeRollingBack:
			return fmt.Sprintf("the upgrade %s -> %s is rolling back: the database is being restored from %s", u.From, u.To, u.BackupName)
		}
	}
	return ""
}

// BackupMayBeTorn says why a copy under way must be thrown away, "" when it is sound:
// something may have written to the database while it was read (a restore or rollback
// replacing it, a migration). Stopping a controller for a restore writes nothing.
func BackupMayBeTorn(st *linstorv1.LinstorClusterStatus) string {
	if st == nil {
		return ""
	}
	if r := st.Restore; r != nil && r.Phase == RestoreRestoring {
		return fmt.Sprintf("a restore of %s began replacing the database while it was copied", r.BackupName)
	}
	if u := st.Upgrade; u != nil {
		switch u.Phase {
		case linstorv1.UpgradeController, linstorv1.UpgradeSatellites, linstorv1.UpgradeRollingBack:
			return fmt.Sprintf("the upgrade %s -> %s entered phase %s while the database was copied", u.From, u.To, u.Phase)
		}
	}
	return ""
}

// BackupsInUse are the LinstorBackups the state may still restore: the backup of an
// upgrade in progress and that of a restore in progress. They carry
// names.FinalizerBackupInUse until that state ends.
func BackupsInUse(st State) []string {
	var names []string
	if u := st.Upgrade; InProgress(u) && u.BackupName != "" {
		names = append(names, u.BackupName)
	}
	if r := st.Restore; RestoreInProgress(r) {
		names = append(names, r.BackupName)
	}
	return names
}

// BackupsNamed are the LinstorBackups pruning must keep whatever their age: those the
// status names (a finished upgrade's backup is how to return to its old version) and
// the one spec.database.restoreFrom names.
func BackupsNamed(status *linstorv1.LinstorClusterStatus, restoreFrom string) []string {
	var names []string
	if restoreFrom != "" {
		names = append(names, restoreFrom)
	}
	if status == nil {
		return names
	}
	if u := status.Upgrade; u != nil && u.BackupName != "" {
		names = append(names, u.BackupName)
	}
	if r := status.Restore; r != nil && r.BackupName != "" {
		names = append(names, r.BackupName)
	}
	return names
}
