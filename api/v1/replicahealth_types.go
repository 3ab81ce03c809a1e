package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReplicaHealthStatus is the health of every LINSTOR resource, read once per observer
// cycle from LINSTOR's resource view.
type ReplicaHealthStatus struct {
	// observedAt is when the LINSTOR read these counts come from started.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Replica Health Observed At",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:hidden"}
	ObservedAt *metav1.Time `json:"observedAt,omitempty"`
	// total counts every resource.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Resources",xDescriptors={"urn:alm:descriptor:text"}
	Total int32 `json:"total,omitempty"`
	// healthy resources have every placed replica UpToDate and connected.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Resources Healthy",xDescriptors={"urn:alm:descriptor:text"}
	Healthy int32 `json:"healthy,omitempty"`
	// syncing resources have a replica resyncing from a peer.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Resources Syncing",xDescriptors={"urn:alm:descriptor:text"}
	Syncing int32 `json:"syncing,omitempty"`
	// degraded resources have fewer UpToDate diskful replicas than placed.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Resources Degraded",xDescriptors={"urn:alm:descriptor:text"}
	Degraded int32 `json:"degraded,omitempty"`
	// outdated resources have an Outdated diskful replica.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Resources Outdated",xDescriptors={"urn:alm:descriptor:text"}
	Outdated int32 `json:"outdated,omitempty"`
	// unintentionallyDiskless resources have a replica that lost its disk.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Resources Unintentionally Diskless",xDescriptors={"urn:alm:descriptor:text"}
	UnintentionallyDiskless int32 `json:"unintentionallyDiskless,omitempty"`
	// quorumLost resources have no replica with quorum: they refuse I/O.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Resources Quorum Lost",xDescriptors={"urn:alm:descriptor:text"}
	QuorumLost int32 `json:"quorumLost,omitempty"`
	// splitBrain resources have replicas that changed apart and refuse to connect;
	// resolve with the annotation linstor.io/resolve-split-brain (docs/replica-health.md).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Resources in Split Brain",xDescriptors={"urn:alm:descriptor:text"}
	SplitBrain int32 `json:"splitBrain,omitempty"`
	// unknown resources have no replica whose state LINSTOR knows.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Resources Unknown",xDescriptors={"urn:alm:descriptor:text"}
	Unknown int32 `json:"unknown,omitempty"`
	// worst names the least healthy resources, worst first (at most 20).
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=20
	// +optional
	Worst []ResourceHealth `json:"worst,omitempty"`
}

// ResourceHealth is one LINSTOR resource's health.
type ResourceHealth struct {
	// name of the LINSTOR resource (the CSI volume handle of its PersistentVolume).
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Resource Name",xDescriptors={"urn:alm:descriptor:text"}
	Name string `json:"name"`
	// uid is LINSTOR's uuid of the resource definition; a split-brain resolution names it.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Resource UID",xDescriptors={"urn:alm:descriptor:text"}
	UID string `json:"uid,omitempty"`
	// state: Healthy, Syncing, Degraded, Outdated, UnintentionallyDiskless, QuorumLost,
	// SplitBrain or Unknown.
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Resource State",xDescriptors={"urn:alm:descriptor:text"}
	State string `json:"state"`
	// since is when the operator first saw the resource in this state.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Resource Since",xDescriptors={"urn:alm:descriptor:text"}
	Since *metav1.Time `json:"since,omitempty"`
	// upToDate counts the UpToDate diskful replicas; placed the diskful replicas wanted.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Resource Up To Date",xDescriptors={"urn:alm:descriptor:text"}
	UpToDate int32 `json:"upToDate,omitempty"`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Resource Placed",xDescriptors={"urn:alm:descriptor:text"}
	Placed int32 `json:"placed,omitempty"`
	// syncPercent is the progress of a resync, as LINSTOR reports it ("42.5").
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Resource Sync Percent",xDescriptors={"urn:alm:descriptor:text"}
	SyncPercent string `json:"syncPercent,omitempty"`
	// syncETA estimates when the resync ends, from its progress between two reads.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Resource Sync ETA",xDescriptors={"urn:alm:descriptor:text"}
	SyncETA *metav1.Time `json:"syncETA,omitempty"`
	// message explains the state, naming the nodes and what each side holds.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Resource Message",xDescriptors={"urn:alm:descriptor:text"}
	Message string `json:"message,omitempty"`
}

// DrainStatus says whether the satellite's node can be drained without costing a
// replica: the operator's PodDisruptionBudget for the node's drain guard allows an
// eviction only when it can.
type DrainStatus struct {
	// allowed is true when no resource needs this node's replica.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Drain Allowed",xDescriptors={"urn:alm:descriptor:text"}
	Allowed bool `json:"allowed"`
	// heldBy names the resources that need this node and why, at most 20; heldCount
	// counts them all.
	// +kubebuilder:validation:MaxItems=20
	// +listType=atomic
	// +optional
	HeldBy []DrainHeldResource `json:"heldBy,omitempty"`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Drain Held Count",xDescriptors={"urn:alm:descriptor:text"}
	HeldCount int32 `json:"heldCount,omitempty"`
	// message says why the drain is allowed or held (also the budget's
	// linstor.io/drain-reason annotation).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Drain Message",xDescriptors={"urn:alm:descriptor:text"}
	Message string `json:"message,omitempty"`
}

// DrainHeldResource is a resource that needs the node.
type DrainHeldResource struct {
	// resource is the LINSTOR resource.
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Held By Resource",xDescriptors={"urn:alm:descriptor:text"}
	Resource string `json:"resource"`
	// reason: "last UpToDate replica", "needed for quorum", ...
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Held Because",xDescriptors={"urn:alm:descriptor:text"}
	Reason string `json:"reason,omitempty"`
}

// SplitBrainPhase is where a confirmed split-brain resolution is.
// +kubebuilder:validation:Enum=Discarding;Rebuilding;Resolved;Refused;Failed
type SplitBrainPhase string

// The phases of a split-brain resolution.
const (
	// SplitBrainDiscarding: the confirmed replica is being made diskless (its changes
	// are dropped).
	SplitBrainDiscarding SplitBrainPhase = "Discarding"
	// SplitBrainRebuilding: the replica got a new disk and resyncs from the survivor.
	SplitBrainRebuilding SplitBrainPhase = "Rebuilding"
	// SplitBrainResolved: the replica is UpToDate and connected again.
	SplitBrainResolved SplitBrainPhase = "Resolved"
	// SplitBrainRefused: the request did not match what LINSTOR shows; nothing was done.
	SplitBrainRefused SplitBrainPhase = "Refused"
	// SplitBrainFailed: the resolution stopped (the resource was deleted meanwhile).
	SplitBrainFailed SplitBrainPhase = "Failed"
)

// SplitBrainResolutionStatus is the last split-brain resolution a user confirmed with
// the annotation linstor.io/resolve-split-brain.
type SplitBrainResolutionStatus struct {
	// resource is the LINSTOR resource; uid its definition's uuid as confirmed.
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Split Brain Resource",xDescriptors={"urn:alm:descriptor:text"}
	Resource string `json:"resource"`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Split Brain UID",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:hidden"}
	UID string `json:"uid,omitempty"`
	// discardNode is the node whose changes are discarded; its replica is rebuilt from
	// the other side.
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Split Brain Discard Node",xDescriptors={"urn:alm:descriptor:text"}
	DiscardNode string `json:"discardNode"`
	// storagePool the discarded replica is rebuilt in (its pool before).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Split Brain Storage Pool",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:hidden"}
	StoragePool string `json:"storagePool,omitempty"`
	// phase: Discarding, Rebuilding, Resolved, Refused or Failed.
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Split Brain Phase",xDescriptors={"urn:alm:descriptor:text"}
	Phase SplitBrainPhase `json:"phase"`
	// startedAt is when the operator accepted the confirmation.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Split Brain Started At",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:hidden"}
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// message says what happens now, or why the request was refused.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Split Brain Message",xDescriptors={"urn:alm:descriptor:text"}
	Message string `json:"message,omitempty"`
	// confirmation is the annotation value this resolution processed: the same value
	// seen again (a replayed or not yet removed annotation) is removed without acting.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Split Brain Confirmation",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:hidden"}
	Confirmation string `json:"confirmation,omitempty"`
	// attempts counts the LINSTOR writes (toggle-disk) sent for this resolution; each is
	// counted in the status, with an optimistic lock, before it is sent.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Split Brain Attempts",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:hidden"}
	Attempts int32 `json:"attempts,omitempty"`
}

// NodeFailurePolicy says what the operator does about a node that failed.
// +kubebuilder:validation:Enum=Off;Evict
type NodeFailurePolicy string

const (
	// NodeFailureOff: nothing is moved; a failed node's replicas wait for it. LINSTOR's
	// own auto-evict, on by default in LINSTOR, is turned off too
	// (DrbdOptions/AutoEvictAllowEviction=false), unless spec.properties sets it.
	NodeFailureOff NodeFailurePolicy = "Off"
	// NodeFailureEvict: a node NotReady in Kubernetes and OFFLINE in LINSTOR for
	// spec.nodeFailure.evictAfter is evicted in LINSTOR, which places its replicas on
	// healthy nodes; it is restored when it is back.
	NodeFailureEvict NodeFailurePolicy = "Evict"
)

// NodeFailureSpec is the node-failure policy.
// +kubebuilder:validation:XValidation:rule="!has(self.evictAfter) || duration(self.evictAfter) >= duration('5m')",message="spec.nodeFailure.evictAfter must be at least 5m: a node that reboots must not lose its replicas"
type NodeFailureSpec struct {
	// policy is Off (the default: nothing moves without you) or Evict.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Node Failure Policy",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:Off","urn:alm:descriptor:com.tectonic.ui:select:Evict"}
	Policy NodeFailurePolicy `json:"policy,omitempty"`
	// evictAfter is how long a node must be NotReady (and its satellite OFFLINE) before
	// it is evicted; default 1h (LINSTOR's own auto-evict default), at least 5m. A node
	// tainted node.kubernetes.io/out-of-service (the admin says it is shut down) does
	// not wait.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Evict After",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	EvictAfter *metav1.Duration `json:"evictAfter,omitempty"`
	// maxEvicted bounds how many nodes may be evicted at the same time; default 1.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Max Evicted Nodes",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:number"}
	MaxEvicted *int32 `json:"maxEvicted,omitempty"`
	// maxOfflinePercent: no node is evicted while more than this share of satellites is
	// OFFLINE (a network partition or an outage, not a failed node); default 34, as
	// LINSTOR's DrbdOptions/AutoEvictMaxDisconnectedNodes.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Max Offline Percent",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:number"}
	MaxOfflinePercent *int32 `json:"maxOfflinePercent,omitempty"`
}
