package v1

// Condition types shared by every kind of this API. They read as statements.
const (
	// ConditionAvailable summarizes the others: the object's LINSTOR part works.
	ConditionAvailable = "Available"
	// ConditionProgressing is true while the operator is changing something.
	ConditionProgressing = "Progressing"
	// ConditionDegraded is true when something is wrong that needs attention.
	ConditionDegraded = "Degraded"
	// ConditionUpgradeable is false when upgrading the operator is unsafe now.
	ConditionUpgradeable = "Upgradeable"
	// ConditionApplied is true when a configuration was merged into the satellites it selects.
	ConditionApplied = "Applied"
	// ConditionConfigured is true when LINSTOR holds what the object asks for.
	ConditionConfigured = "Configured"
	// ConditionEncrypted is true when controller-satellite traffic and the LINSTOR API
	// both use TLS. False is a warning, not a fault: it does not make a cluster Degraded
	// or block upgrades.
	ConditionEncrypted = "Encrypted"
	// ConditionRedundant is true when every LINSTOR resource has all its placed
	// replicas UpToDate and connected (LinstorCluster). False names the worst state as
	// its reason (SplitBrain, QuorumLost, UnintentionallyDiskless, Degraded, Outdated,
	// Syncing, Unknown): alerts match on them.
	ConditionRedundant = "Redundant"
)

// Condition reasons. Reasons are CamelCase and stable: alerts match on them. They are
// grouped by the kind that reports them; the string values never change.

// Reasons several kinds report.
const (
	ReasonAsExpected  = "AsExpected"
	ReasonReconciling = "Reconciling"
	// ReasonNotObserved: the condition was not observed yet (reconciler.SetUnknownIfAbsent).
	ReasonNotObserved = "NotObserved"
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonLinstorError: LINSTOR answered a request with an error.
	ReasonLinstorError = "LinstorError"
	// ReasonWrongNamespace: the LinstorCluster (or a LinstorSatelliteConfiguration or
	// LinstorNodeConnection) is outside the operator's namespace, so it is ignored.
	ReasonWrongNamespace = "WrongNamespace"
	// ReasonLinstorWritesFenced: the operator's own LINSTOR writes wait for an upgrade or
	// a restore (a rollback would silently undo them). LinstorSatellite, LinstorNodeConnection.
	ReasonLinstorWritesFenced = "LinstorWritesFenced"
	// ReasonControllerNotReady, ReasonLinstorUnreachable: LinstorCluster, LinstorSatellite.
	ReasonControllerNotReady = "ControllerNotReady"
	ReasonLinstorUnreachable = "LinstorUnreachable"
	// ReasonRemovalHeld: too many satellites would be removed at once. LinstorCluster,
	// LinstorSatellite.
	ReasonRemovalHeld = "RemovalHeld"
)

// Reasons of the LinstorCluster (controllers/linstorcluster).
const (
	ReasonDuplicateCluster = "DuplicateCluster"
	// ReasonServiceAccountMissing: an operand's ServiceAccount (shipped with the
	// operator) does not exist, so its pods are refused.
	ReasonServiceAccountMissing = "ServiceAccountMissing"
	ReasonSatellitesNotReady    = "SatellitesNotReady"
	ReasonSecretMissing         = "SecretMissing"
	ReasonBackupInProgress      = "BackupInProgress"
	// ReasonTLSDisabled: spec.tls sets a channel's mode to Disabled (Encrypted=False).
	ReasonTLSDisabled = "TLSDisabled"
	// ReasonTLSKeptDisabled: a channel is unset in spec.tls and runs without TLS because
	// the cluster did before the operator encrypted by default (Encrypted=False).
	ReasonTLSKeptDisabled = "TLSKeptDisabled"
	// ReasonExternalController: LINSTOR's controller is not the operator's; its URL and
	// spec.tls.internal say what is encrypted (Encrypted=False when something is not).
	ReasonExternalController = "ExternalController"
	// ReasonUntoleratedTaint: a node selected for a satellite that has none carries a
	// NoSchedule or NoExecute taint the satellite pod does not tolerate; it gets none
	// until the taint is gone or tolerated (LinstorCluster status.skippedNodes).
	ReasonUntoleratedTaint = "UntoleratedTaint"
)

// Reasons of the LinstorCluster's database lifecycle (pkg/lifecycle): upgrades,
// rollbacks, restores.
const (
	ReasonUpgradeInProgress = "UpgradeInProgress"
	ReasonUpgradeFailed     = "UpgradeFailed"
	ReasonUpgradeRefused    = "UpgradeRefused"
	// ReasonUpgradeStalled: the upgrade's Verify phase passed its timeout; it cannot roll
	// back (the satellites run the new version) and waits for the named problems.
	ReasonUpgradeStalled = "UpgradeStalled"
	// ReasonRollbackNeedsConfirmation: an upgrade of a cluster with an external database
	// failed; LINSTOR stays stopped until the admin confirms the database was restored.
	ReasonRollbackNeedsConfirmation = "RollbackNeedsConfirmation"
	// ReasonRestoreNeedsConfirmation: a restore would replace the live database.
	ReasonRestoreNeedsConfirmation = "RestoreNeedsConfirmation"
	// ReasonRestoreIncomplete: the database is partly replaced; LINSTOR stays stopped.
	ReasonRestoreIncomplete = "RestoreIncomplete"
)

// Reasons of the LinstorSatellite (controllers/linstorsatellite, pkg/satellite).
const (
	ReasonNodeOffline     = "NodeOffline"
	ReasonVersionMismatch = "VersionMismatch"
	ReasonPoolInUse       = "PoolInUse"
	// ReasonWaitingForDisks: a discovery pool has no unused disk to claim on the node.
	ReasonWaitingForDisks = "WaitingForDisks"
	// ReasonDiskClaimFailed: LINSTOR did not create a pool from the disks claimed for it.
	ReasonDiskClaimFailed    = "DiskClaimFailed"
	ReasonWaitingForEvacuate = "WaitingForEvacuation"
	// ReasonEvacuationStuck: a replica on an evacuating node has nowhere to go.
	ReasonEvacuationStuck = "EvacuationStuck"
	// ReasonHoldsLastReplica: deleting the node would destroy the only copy of data.
	ReasonHoldsLastReplica = "HoldsLastReplica"
	// ReasonNoAddressInIPFamilies: the node has no InternalIP of the satellite's
	// ipFamilies, so it is not registered in LINSTOR.
	ReasonNoAddressInIPFamilies = "NoAddressInIPFamilies"
	// ReasonNodeEvicted: LINSTOR evicted the node and the operator does not restore it
	// yet; the message says what it waits for.
	ReasonNodeEvicted = "NodeEvicted"
	// ReasonDriverToolkitMissing: the node runs RHCOS and the cluster's driver-toolkit
	// ImageStream has no image for its version, so no DRBD loader (and no satellite) runs
	// there; the message names the version and the ImageStream.
	ReasonDriverToolkitMissing = "DriverToolkitMissing"
)

// Reasons of the LinstorSatelliteConfiguration's Applied condition (besides
// ReasonAsExpected and ReasonWrongNamespace).
const (
	// ReasonOverridden: part of a configuration is overridden by a later one.
	ReasonOverridden = "Overridden"
	// ReasonPropertiesSkipped: an expandFrom generated property names LINSTOR refuses;
	// those are left out, the rest applies.
	ReasonPropertiesSkipped = "PropertiesSkipped"
)

// The LinstorNodeConnection reports only shared reasons: AsExpected, WrongNamespace,
// InvalidSpec, LinstorError, LinstorWritesFenced, Reconciling.
//
// The LinstorBackup's conditions give its phase as their reason (BackupPending,
// BackupRunning, BackupCompleted, BackupFailed); a backup waiting for a restore,
// rollback or migration is Pending and its message says why.

// Reasons of the LinstorBackupSchedule and LinstorBackupTarget (besides AsExpected and
// InvalidSpec).
const (
	// ReasonClusterNotFound: the LinstorCluster a schedule names does not exist.
	ReasonClusterNotFound = "ClusterNotFound"
	// ReasonTargetNotFound: the LinstorBackupTarget named does not exist.
	ReasonTargetNotFound = "TargetNotFound"
	// ReasonTargetUnavailable: the LinstorBackupTarget named is not Available.
	ReasonTargetUnavailable = "TargetUnavailable"
	// ReasonSuspended: spec.suspend is true.
	ReasonSuspended = "Suspended"
	// ReasonLastBackupFailed: the schedule's newest finished backup failed.
	ReasonLastBackupFailed = "LastBackupFailed"
	// ReasonRetentionFailed: old backups could not be deleted from the bucket.
	ReasonRetentionFailed = "RetentionFailed"
	// ReasonVolumeShipmentsFailed: LINSTOR's last shipment of some resources to the
	// bucket failed (spec.volumes); the message names how many and the first ones.
	ReasonVolumeShipmentsFailed = "VolumeShipmentsFailed"
)
