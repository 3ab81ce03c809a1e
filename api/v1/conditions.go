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
)

// Condition reasons. Reasons are CamelCase and stable: alerts match on them.
const (
	ReasonAsExpected       = "AsExpected"
	ReasonReconciling      = "Reconciling"
	ReasonNotObserved      = "NotObserved"
	ReasonDuplicateCluster = "DuplicateCluster"
	// ReasonServiceAccountMissing: an operand's ServiceAccount (shipped with the
	// operator) does not exist, so its pods are refused.
	ReasonServiceAccountMissing = "ServiceAccountMissing"
	// ReasonWrongNamespace: the LinstorCluster (or a LinstorSatelliteConfiguration or
	// LinstorNodeConnection) is outside the operator's namespace, so it is ignored.
	ReasonWrongNamespace     = "WrongNamespace"
	ReasonControllerNotReady = "ControllerNotReady"
	ReasonLinstorUnreachable = "LinstorUnreachable"
	ReasonLinstorError       = "LinstorError"
	ReasonSatellitesNotReady = "SatellitesNotReady"
	ReasonInvalidSpec        = "InvalidSpec"
	ReasonSecretMissing      = "SecretMissing"
	ReasonNodeOffline        = "NodeOffline"
	ReasonVersionMismatch    = "VersionMismatch"
	ReasonPoolInUse          = "PoolInUse"
	// ReasonWaitingForDisks: a discovery pool has no unused disk to claim on the node.
	ReasonWaitingForDisks = "WaitingForDisks"
	// ReasonDiskClaimFailed: LINSTOR did not create a pool from the disks claimed for it.
	ReasonDiskClaimFailed    = "DiskClaimFailed"
	ReasonWaitingForEvacuate = "WaitingForEvacuation"
	// ReasonEvacuationStuck: a replica on an evacuating node has nowhere to go.
	ReasonEvacuationStuck = "EvacuationStuck"
	// ReasonHoldsLastReplica: deleting the node would destroy the only copy of data.
	ReasonHoldsLastReplica = "HoldsLastReplica"
	// ReasonOverridden: part of a configuration is overridden by a later one.
	ReasonOverridden = "Overridden"
	// ReasonPropertiesSkipped: an expandFrom generated property names LINSTOR refuses;
	// those are left out, the rest applies.
	ReasonPropertiesSkipped = "PropertiesSkipped"
	// ReasonNoAddressInIPFamilies: the node has no InternalIP of the satellite's
	// ipFamilies, so it is not registered in LINSTOR.
	ReasonNoAddressInIPFamilies = "NoAddressInIPFamilies"
	// ReasonRemovalHeld: too many satellites would be removed at once.
	ReasonRemovalHeld = "RemovalHeld"
	// ReasonRestoreNeedsConfirmation: a restore would replace the live database.
	ReasonRestoreNeedsConfirmation = "RestoreNeedsConfirmation"
	// ReasonRestoreIncomplete: the database is partly replaced; LINSTOR stays stopped.
	ReasonRestoreIncomplete = "RestoreIncomplete"
	ReasonUpgradeInProgress = "UpgradeInProgress"
	ReasonBackupInProgress  = "BackupInProgress"
	ReasonUpgradeFailed     = "UpgradeFailed"
	ReasonUpgradeRefused    = "UpgradeRefused"
	// ReasonUpgradeStalled: the upgrade's Verify phase passed its timeout; it cannot roll
	// back (the satellites run the new version) and waits for the named problems.
	ReasonUpgradeStalled = "UpgradeStalled"
	// ReasonRollbackNeedsConfirmation: an upgrade of a cluster with an external database
	// failed; LINSTOR stays stopped until the admin confirms the database was restored.
	ReasonRollbackNeedsConfirmation = "RollbackNeedsConfirmation"
	// ReasonLinstorWritesFenced: the operator's own LINSTOR writes wait for an upgrade or
	// a restore (a rollback would silently undo them).
	ReasonLinstorWritesFenced = "LinstorWritesFenced"
	// ReasonBackupWaiting: a LinstorBackup waits for a restore, rollback or migration.
	ReasonBackupWaiting = "BackupWaiting"
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
	// ReasonNodeEvicted: LINSTOR evicted the node and the operator does not restore it
	// yet; the message says what it waits for.
	ReasonNodeEvicted = "NodeEvicted"
)
