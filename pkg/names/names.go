// Package names is the project's vocabulary: the labels, object names, ports,
// annotation and finalizer keys, LINSTOR Aux property keys and the field owner that the
// builders, the controllers, the webhooks and the tests share. Builders use these names;
// they are not the authority for them.
package names

// ManagedBy is the operator's name in labels and as the server-side apply field owner.
const ManagedBy = "linstor-operator"

// FieldOwner is the field manager of every server-side apply the operator sends.
const FieldOwner = ManagedBy

// Labels every rendered object carries.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelComponent = "app.kubernetes.io/component"
	// LabelCluster selects the objects of one LinstorCluster for pruning.
	LabelCluster = "linstor.io/cluster"
	// LabelClusterNamespace tells apart cluster-scoped objects of same-named clusters.
	LabelClusterNamespace = "linstor.io/cluster-namespace"
	// LabelSatellite tells the per-node DaemonSets apart (a hash: node names can be
	// longer than a label value may be).
	LabelSatellite = "linstor.io/satellite"
	// LabelBackup marks the Secrets holding a backup's chunks.
	LabelBackup = "linstor.io/backup"
	// LabelBackupSchedule marks the LinstorBackups a LinstorBackupSchedule created.
	LabelBackupSchedule = "linstor.io/backup-schedule"
)

// ServiceAccountName is the account an operand component's pods run as. The accounts
// and their RBAC ship with the operator (config/rbac, the OLM bundle) in its namespace:
// the operator runs pods under them and never grants a permission itself, so it needs
// neither bind nor escalate.
func ServiceAccountName(component string) string { return ManagedBy + "-" + component }

// The LINSTOR controller's objects (namespaced, in the LinstorCluster's namespace) and
// its API ports.
const (
	ControllerName = "linstor-controller"
	APIPort        = 3370
	SecureAPIPort  = 3371
	// NetworkPolicyName names the NetworkPolicy in front of the LINSTOR controller.
	NetworkPolicyName = ControllerName
)

// The CSI driver's and the HA controller's objects.
const (
	CSIDriverName     = "linstor.csi.linbit.com"
	CSIControllerName = "linstor-csi-controller"
	CSINodeName       = "linstor-csi-node"
	HAControllerName  = "linstor-ha-controller"
)

// The satellite's objects, containers and ports.
const (
	// SatelliteComponent names the satellite pods (label app.kubernetes.io/name) and container.
	SatelliteComponent = "linstor-satellite"
	SatellitePort      = 3366
	// SatelliteSecurePort is the satellite's port with internal TLS.
	SatelliteSecurePort = 3367
	// SatelliteConfigName is the satellites' shared configuration (internal TLS only).
	SatelliteConfigName = "linstor-satellite-config"
	// DRBDLoaderContainer names the satellite's init container that loads DRBD.
	DRBDLoaderContainer = "drbd-module-loader"
	// KernelHeadersContainer names the satellite's init container that copies the kernel
	// headers out of the Driver Toolkit image on an RHCOS node, for the loader to build DRBD.
	KernelHeadersContainer = "kernel-headers"
	// ShutdownGuardContainer names the satellite's init container that installs the
	// DRBD shutdown guard on the host.
	ShutdownGuardContainer = "drbd-shutdown-guard"
	// ReactorContainer is the satellite pod's drbd-reactor sidecar, which exports the
	// node's DRBD state as Prometheus metrics.
	ReactorContainer = "drbd-reactor"
	// ReactorConfigName is the ConfigMap the sidecars of all satellites read.
	ReactorConfigName = "linstor-satellite-reactor"
	// ReactorConfigKey is the snippet in that ConfigMap: drbd-reactor reads every *.toml
	// file of its snippets directory.
	ReactorConfigKey = "prometheus.toml"
	// ReactorMetricsPort is drbd-reactor's registered Prometheus port; the satellite runs
	// on the host network, so it is a port of the node.
	ReactorMetricsPort = 9942
	// ReactorMetricsPortName is the port's name, which config/prometheus scrapes.
	ReactorMetricsPortName = "prometheus"
)

// The migration rehearsal's Job (pkg/render.RehearsalJob): its component label, its
// containers, and the scratch API server it runs on the pod's loopback.
const (
	// RehearsalComponent labels the rehearsal Jobs and names their ServiceAccount
	// (ServiceAccountName), which may only read LinstorBackups and their Secrets.
	RehearsalComponent = "linstor-rehearsal"
	// The rehearsal pod's containers, in the order they run.
	RehearsalPrepareContainer = "prepare"
	RehearsalEtcdContainer    = "etcd"
	RehearsalAPIContainer     = "kube-apiserver"
	RehearsalLoadContainer    = "load"
	RehearsalMigrateContainer = "migrate"
	// RehearsalAPIPort and RehearsalEtcdPort listen on the pod's loopback only.
	RehearsalAPIPort  = 6443
	RehearsalEtcdPort = 2379
	// LabelJobName is the label the job controller puts on a Job's pods.
	LabelJobName = "batch.kubernetes.io/job-name"
)

// SatelliteDaemonSetName is the DaemonSet of one node's satellite.
func SatelliteDaemonSetName(node string) string { return "linstor-satellite." + node }

// Default TLS Secret names. Mode Secret names them in the spec; modes Generated and
// CertManager write them (to the spec's names when given).
const (
	DefaultInternalTLSSecret  = "linstor-internal-tls"
	DefaultAPITLSSecret       = "linstor-api-tls"
	DefaultAPIClientTLSSecret = "linstor-client-tls"
	// The generated CAs. They sign the Secrets above and hold the only copy of their keys.
	InternalCASecret = "linstor-internal-ca"
	APICASecret      = "linstor-api-ca"
)

// Annotations the operator writes on objects it applies.
const (
	// AnnotationAppliedHash on an applied object is the hash of what was last applied:
	// an unchanged object is not sent again.
	AnnotationAppliedHash = "linstor.io/applied-hash"
	// AnnotationScheduledAt on a LinstorBackup a schedule created is the run's time.
	AnnotationScheduledAt = "linstor.io/scheduled-at"
	// AnnotationTLSHash on a pod template carries a hash of the certificates it mounts,
	// so a renewed certificate rolls the pods (LINSTOR reads its keystores at start).
	AnnotationTLSHash = "linstor.io/tls-hash"
)

// Annotations a user sets to tell the operator something.
const (
	// AnnotationConfirmRemoval, set on the LinstorCluster to the number of satellites
	// being removed, lets a removal larger than satellite.MaxRemovalShare go ahead.
	AnnotationConfirmRemoval = "linstor.io/confirm-removal"
	// AnnotationConfirmRestore, set to "<backup>/<LinstorCluster UID>", confirms a
	// restore that replaces a live database.
	AnnotationConfirmRestore = "linstor.io/confirm-restore"
	// AnnotationRetryUpgrade, set to a version, retries a rolled-back upgrade to it.
	AnnotationRetryUpgrade = "linstor.io/retry-upgrade"
	// AnnotationConfirmDatabaseRestored, set to the failed upgrade's identity
	// (lifecycle.UpgradeID), confirms that an external database was restored from the
	// backup the admin took before it: only then does the old LINSTOR version start again.
	AnnotationConfirmDatabaseRestored = "linstor.io/confirm-database-restored"
	// AnnotationAcknowledgeLostNodes, set on the LinstorCluster to a comma-separated list
	// of LINSTOR node names, acknowledges those nodes as gone for good (pkg/lifecycle's
	// lostnodes.go says what then skips them).
	AnnotationAcknowledgeLostNodes = "linstor.io/acknowledge-lost-nodes"
	// AnnotationResolveSplitBrain, set on the LinstorCluster to
	// "<resource>/<node whose changes to discard>/<resource definition uuid>", confirms
	// a split-brain resolution; the operator consumes it (docs/replica-health.md).
	AnnotationResolveSplitBrain = "linstor.io/resolve-split-brain"
	// AnnotationHostInterfaces on a Kubernetes node lists its interfaces as
	// comma-separated name=address pairs (pkg/netif).
	AnnotationHostInterfaces = "linstor.io/host-interfaces"
)

// Finalizers, one per guarded deletion.
const (
	FinalizerClusterCleanup        = "linstor.io/cluster-cleanup"
	FinalizerProtectPassphrase     = "linstor.io/protect-passphrase"
	FinalizerSatelliteDeletion     = "linstor.io/satellite-deletion-policy"
	FinalizerNodeConnectionCleanup = "linstor.io/node-connection-cleanup"
	// FinalizerVolumeBackups: a LinstorBackupSchedule with spec.volumes deletes its
	// LINSTOR backup schedule before it goes (the bucket's backups stay).
	FinalizerVolumeBackups = "linstor.io/volume-backups"
	// FinalizerBackupInUse keeps a LinstorBackup that an upgrade or a restore in
	// progress may still restore: deleting it (and with it its chunk Secrets) would make
	// the rollback, or the restore's finish, impossible.
	FinalizerBackupInUse = "linstor.io/database-lifecycle"
)

// The HA controller's node taints (piraeus-ha-controller pkg/metadata
// NodeLostQuorumTaint, NodeForceIoErrorTaint). Its agent sets them with effect
// NoSchedule on a node where a DRBD resource lost quorum or forces I/O errors
// (pkg/agent ManageOwnTaints, failoverReconciler.evictPods,
// reconcile_force_io_error_pods.go), so that no new pod with a volume lands there.
const (
	TaintLostQuorum   = "drbd.linbit.com/lost-quorum"
	TaintForceIOError = "drbd.linbit.com/force-io-error"
)

// LINSTOR properties the operator keeps its own records in. LINSTOR stores Aux/
// properties without checking them; the operator reads back only what it wrote.
const (
	// AuxLastApplied records the properties the operator set on an object, so only
	// those are ever removed.
	AuxLastApplied = "Aux/linstor-operator/last-applied"
	// AuxManagedPools on a LINSTOR node lists the pools the operator created. Only these
	// are ever deleted, and only when empty.
	AuxManagedPools = "Aux/linstor-operator/managed-pools"
	// AuxManagedInterfaces on a LINSTOR node lists the net interfaces the operator
	// registered. Only these are ever deleted.
	AuxManagedInterfaces = "Aux/linstor-operator/managed-interfaces"
	// AuxNodeConnectionPrefix, followed by "<namespace>.<name>", records on a LINSTOR
	// node connection what one LinstorNodeConnection set.
	AuxNodeConnectionPrefix = "Aux/linstor-operator/lnc/"
)

// DatabaseReplacementMarker is the ConfigMap that records, outside the LinstorCluster,
// that its LINSTOR database is being replaced or migrated (lifecycle.Marker). It has no
// owner: it must outlive the object.
func DatabaseReplacementMarker(cluster string) string { return cluster + "-database-replacement" }

// The drain guard (pkg/render DrainGuardPod): a bare pod per node, controlled by its
// LinstorSatellite, that `kubectl drain` evicts (it does not evict the satellite's
// DaemonSet pod), and the PodDisruptionBudget that refuses the eviction while the node
// holds a resource.
const (
	// DrainGuardComponent labels the guard pods (app.kubernetes.io/component and name)
	// and names their container.
	DrainGuardComponent = "linstor-drain-guard"
	// AnnotationDrainReason on the budget says why the drain is allowed or held.
	AnnotationDrainReason = "linstor.io/drain-reason"
)

// DrainGuardName names a node's guard pod and its PodDisruptionBudget.
func DrainGuardName(node string) string { return DrainGuardComponent + "." + node }

// LabelDrainGuard selects one node's drain guard pod for its budget: a 64-bit hash of
// the node name (a label value is too short for a name), so that no budget ever counts
// another node's guard.
const LabelDrainGuard = "linstor.io/drain-guard"
