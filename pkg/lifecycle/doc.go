// Package lifecycle decides what happens to LINSTOR's database: which version runs,
// the declarative restore, the upgrade phases, the rollback and the backup gate. It is
// one pure function, Step: the persisted state (status.deployed, status.upgrade,
// status.restore), the spec and what the controller observed go in; the next state,
// what must not run, and the actions to carry out come out. The controller observes
// what Needs asks for, calls Step, saves the new state with an optimistic-locked
// status write, and only then carries out the actions (write-ahead: a crash after an
// action is resumed from the saved state; every action is idempotent). It reports an
// action's outcome through AfterAction, whose state it saves the same way.
//
// The algorithm, in the order Step applies it:
//
//  1. Restore (spec.database.restoreFrom). A restore whose database replacement has
//     begun (phase Restoring) always finishes before anything else: LINSTOR stays
//     stopped, even if the field is cleared or the backup becomes unreadable, because
//     a half-replaced database must never be started; the status says how to finish.
//     A new request is carried out once, bound to the LinstorCluster's UID: a
//     recreated object (GitOps, Velero) starts with an empty status, and its live
//     database is never replaced without a confirmation naming this object's UID
//     (annotation linstor.io/confirm-restore=<backup>/<uid>), unless the database is
//     empty (a new installation restoring a backup). The backup must be Completed and
//     taken with a version this release runs. Order: Stopping (controller stopped,
//     nothing touched, cancellable; then, once no backup is copying, CheckRestore reads
//     the whole backup without writing: a failed check ends Failed with LINSTOR started
//     again), Restoring (saved before the first write to the database), Restored (the
//     database read back equal to the backup). The controller then starts at the
//     backup's version. A status that holds nothing while the Marker (kept outside the
//     object) says the database was being replaced adopts that restore.
//  2. Version. An external controller decides its own version. Otherwise the release
//     planner (pkg/upgrade) decides: install, stay, await approval (Manual policy),
//     refuse, or upgrade. A rolled-back upgrade is retried only when asked
//     (annotation linstor.io/retry-upgrade=<version>, used up by the retry).
//  3. Upgrade phases, each with spec.upgrade.phaseTimeout (default 10 minutes):
//     Preflight (LINSTOR answers at the old version, satellites ONLINE, replicas
//     UpToDate and connected, no resync; an external database must be acknowledged as
//     backed up), Backup (a LinstorBackup with the controller stopped; failed or late:
//     the upgrade ends, nothing changed), Rehearsal (the new version migrates a copy of
//     the backup in a Job with a scratch API server; the controller stays stopped;
//     failed or late: the upgrade ends, nothing changed, the old controller starts
//     again; skipped with spec.upgrade.rehearsal false or an external database),
//     Controller (the new controller migrates the database), Satellites (all move together: LINSTOR refuses mixed versions),
//     Verify (replicas healthy again; no rollback, the satellites already run the new
//     version; past the timeout Degraded UpgradeStalled, naming what it waits for),
//     Succeeded. Until Controller nothing has changed:
//     the upgrade follows the spec, and when the version decision no longer upgrades
//     to its target (spec.version pinned back, an approval withdrawn, another release
//     planning another target) it is cancelled and the decision taken afresh; in
//     Backup only once the upgrade's backup is seen Completed or Failed (or, never seen,
//     at the phase timeout): until then the controller stays stopped and CSI fenced, as
//     a controller started during the copy would tear it. From
//     Controller on a pin back cannot stop it (the database may be migrated): the
//     status says how to return afterwards (restore the pre-upgrade backup).
//     Nodes acknowledged as gone for good (LostNodes, annotation
//     linstor.io/acknowledge-lost-nodes; honoured only while LINSTOR reports them
//     OFFLINE, no other node's DRBD reports a Connected connection to them and no
//     satellite pod there is Running, Terminating or Pending) are left out of what
//     Preflight, Satellites and Verify judge; nothing else skips a node.
//  4. Fencing: from Backup (through Rehearsal) to the end of Satellites the CSI controller is stopped, so
//     no volume is created, attached or deleted in LINSTOR's database while a rollback
//     could still restore the pre-upgrade backup; the operator's own LINSTOR writes
//     wait as well (LinstorWritesFenced). That makes the automatic rollback
//     from Controller and Satellites lossless: the database can only have changed by
//     the migration the rollback undoes.
//  5. Rollback: the controller is stopped, the pre-upgrade backup restored, and the old
//     version started. A backup that is gone or damaged keeps LINSTOR stopped, with
//     instructions; the database is never started half-migrated. With an external
//     database the old version stays stopped until the admin confirms the restore
//     (names.AnnotationConfirmDatabaseRestored=UpgradeID): LINSTOR does not refuse a database
//     a newer version migrated.
//  6. Backup gate: while a LinstorBackup of the cluster is Pending or Running the
//     controller is stopped, so the copy is consistent, unless the backup waits
//     (BackupWaits: a restore, a rollback, a migration under way).
//  7. OLM gate (HoldOperator): an upgrade from Backup on, or a restore, must be
//     finished by the release that started it; Preflight has changed nothing and
//     holds nothing, so a release that fixes what it waits on can be installed.
package lifecycle
