package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReplicaHealthStatus is the health of every LINSTOR resource, read once per observer
// cycle from LINSTOR's resource view.
type ReplicaHealthStatus struct {
	// observedAt is when the LINSTOR read these counts come from started.
	// +optional
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
	Syncing int32 `json:"syncing,omitempty"`
	// degraded resources have fewer UpToDate diskful replicas than placed.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Resources Degraded",xDescriptors={"urn:alm:descriptor:text"}
	Degraded int32 `json:"degraded,omitempty"`
	// outdated resources have an Outdated diskful replica.
	// +optional
	Outdated int32 `json:"outdated,omitempty"`
	// unintentionallyDiskless resources have a replica that lost its disk.
	// +optional
	UnintentionallyDiskless int32 `json:"unintentionallyDiskless,omitempty"`
	// quorumLost resources have no replica with quorum: they refuse I/O.
	// +optional
	QuorumLost int32 `json:"quorumLost,omitempty"`
	// splitBrain resources have replicas that changed apart and refuse to connect;
	// resolve with the annotation linstor.io/resolve-split-brain (docs/replica-health.md).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Resources in Split Brain",xDescriptors={"urn:alm:descriptor:text"}
	SplitBrain int32 `json:"splitBrain,omitempty"`
	// unknown resources have no replica whose state LINSTOR knows.
	// +optional
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
	Name string `json:"name"`
	// uid is LINSTOR's uuid of the resource definition; a split-brain resolution names it.
	// +optional
	UID string `json:"uid,omitempty"`
	// state: Healthy, Syncing, Degraded, Outdated, UnintentionallyDiskless, QuorumLost,
	// SplitBrain or Unknown.
	// +required
	State string `json:"state"`
	// since is when the operator first saw the resource in this state.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
	// upToDate counts the UpToDate diskful replicas; placed the diskful replicas wanted.
	// +optional
	UpToDate int32 `json:"upToDate,omitempty"`
	// +optional
	Placed int32 `json:"placed,omitempty"`
	// syncPercent is the progress of a resync, as LINSTOR reports it ("42.5").
	// +optional
	SyncPercent string `json:"syncPercent,omitempty"`
	// syncETA estimates when the resync ends, from its progress between two reads.
	// +optional
	SyncETA *metav1.Time `json:"syncETA,omitempty"`
	// message explains the state, naming the nodes and what each side holds.
	// +optional
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
	// heldBy names the resources that need this node ("pvc-…: last UpToDate replica"),
	// at most 20; heldCount counts them all.
	// +kubebuilder:validation:MaxItems=20
	// +optional
	HeldBy []string `json:"heldBy,omitempty"`
	// +optional
	HeldCount int32 `json:"heldCount,omitempty"`
}
