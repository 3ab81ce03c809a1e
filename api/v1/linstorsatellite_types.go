package v1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// LinstorSatelliteSpec is the merged desired state of one node's satellite. The operator
// writes it from the LinstorCluster and the matching LinstorSatelliteConfigurations.
type LinstorSatelliteSpec struct {
	// clusterRef names the LinstorCluster this satellite belongs to.
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Cluster"
	ClusterRef ClusterReference `json:"clusterRef"`

	// storagePools on this node.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Storage Pools"
	StoragePools []StoragePool `json:"storagePools,omitempty"`

	// properties of the LINSTOR node, with node-derived values already resolved.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=128
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Node Properties"
	Properties []Property `json:"properties,omitempty"`

	// netInterfaces of the LINSTOR node.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Network Interfaces"
	NetInterfaces []NetInterface `json:"netInterfaces,omitempty"`

	// podTemplate is the merged strategic-merge patch for the satellite pod.
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Pod Template Patch"
	PodTemplate *runtime.RawExtension `json:"podTemplate,omitempty"`

	// patches are the merged patches for this node's satellite objects: the cluster's
	// spec.satellite.patches, then those of each LinstorSatelliteConfiguration in name order.
	// +kubebuilder:validation:MaxItems=256
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Patches"
	Patches []Patch `json:"patches,omitempty"`

	// ipFamilies the LINSTOR controller may use to reach this satellite, in order of
	// preference; unset uses the node's first internal address.
	// +listType=set
	// +kubebuilder:validation:MaxItems=2
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="IP Families"
	IPFamilies []IPFamily `json:"ipFamilies,omitempty"`

	// maxConcurrentEvacuations limits how many nodes of the cluster evacuate at once.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Max Concurrent Evacuations"
	MaxConcurrentEvacuations *int32 `json:"maxConcurrentEvacuations,omitempty"`

	// deletionPolicy applied when this satellite is deleted.
	// +kubebuilder:default=Retain
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Deletion Policy"
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`

	// drbdModuleLoader is the merged strategy of the node's DRBD module loader; unset
	// means Auto.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="DRBD Module Loader"
	DRBDModuleLoader DRBDModuleLoader `json:"drbdModuleLoader,omitempty"`
}

// ClusterReference names a LinstorCluster in the same namespace.
type ClusterReference struct {
	// name of the LinstorCluster.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="LINSTOR Cluster",xDescriptors={"urn:alm:descriptor:io.kubernetes:linstor.io:v1:LinstorCluster"}
	Name string `json:"name"`
}

// LinstorSatelliteStatus is what LINSTOR reports for the node.
type LinstorSatelliteStatus struct {
	// conditions: Available, Progressing, Degraded.
	// +listType=map
	// +listMapKey=type
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors={"urn:alm:descriptor:io.kubernetes.conditions"}
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// observedGeneration is the generation the last successful pass acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// connectionStatus of the LINSTOR node: ONLINE, OFFLINE, VERSION_MISMATCH, ...
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Connection Status",xDescriptors={"urn:alm:descriptor:text"}
	ConnectionStatus string `json:"connectionStatus,omitempty"`
	// version of the satellite as LINSTOR reports it.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="LINSTOR Version",xDescriptors={"urn:alm:descriptor:text"}
	Version string `json:"version,omitempty"`
	// storagePools as LINSTOR reports them.
	// +listType=map
	// +listMapKey=name
	// +optional
	StoragePools []StoragePoolStatus `json:"storagePools,omitempty"`
	// poolsSummary is "ready/total", for the printer column.
	// +optional
	PoolsSummary string `json:"poolsSummary,omitempty"`
	// discovery is what storage discovery saw on the node and did with each disk.
	// +optional
	Discovery *DiscoveryStatus `json:"discovery,omitempty"`
	// drain says whether draining the node would cost a replica, and which resources
	// hold it.
	// +optional
	Drain *DrainStatus `json:"drain,omitempty"`
}

// DiscoveryStatus reports storage discovery on one node.
type DiscoveryStatus struct {
	// listedAt is when LINSTOR last listed the node's unused disks.
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Disks Listed At"
	// +optional
	ListedAt *metav1.Time `json:"listedAt,omitempty"`
	// observedGeneration is the generation of the spec the last listing served.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// pools: each discovery pool of the node and where it stands.
	// +listType=map
	// +listMapKey=name
	// +optional
	Pools []DiscoveryPoolStatus `json:"pools,omitempty"`
	// disks seen unused when last listed, and the disks claimed before.
	// +listType=atomic
	// +optional
	Disks []DiskStatus `json:"disks,omitempty"`
}

// DiscoveryPoolState is where a discovery pool stands on a node.
type DiscoveryPoolState string

const (
	// PoolCreated: the pool exists in LINSTOR.
	PoolCreated DiscoveryPoolState = "Created"
	// PoolWaitingForDisks: no unused disk matches (yet).
	PoolWaitingForDisks DiscoveryPoolState = "WaitingForDisks"
	// PoolDryRun: the disks that would be claimed are reported; nothing is claimed.
	PoolDryRun DiscoveryPoolState = "DryRun"
	// PoolClaiming: disks were sent to LINSTOR and the outcome is not known yet.
	PoolClaiming DiscoveryPoolState = "Claiming"
	// PoolRegistering: the pool's disks already hold its volume group or zpool (an
	// earlier life of the pool claimed them); the LINSTOR pool is created on it again.
	PoolRegistering DiscoveryPoolState = "Registering"
	// PoolClaimFailed: LINSTOR did not create the pool from the claimed disks.
	PoolClaimFailed DiscoveryPoolState = "ClaimFailed"
	// PoolAwaitingAcknowledgement: the matcher names no models or devicePaths, so it
	// could take any unused disk of the node; the disks it would claim are reported and
	// nothing is claimed until allowAnyDisk is set.
	PoolAwaitingAcknowledgement DiscoveryPoolState = "AwaitingAcknowledgement"
)

// DiscoveryPoolStatus is one discovery pool on one node.
type DiscoveryPoolStatus struct {
	// name of the storage pool.
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Discovery Pool",xDescriptors={"urn:alm:descriptor:text"}
	Name string `json:"name"`
	// state: Created, WaitingForDisks, DryRun, AwaitingAcknowledgement, Claiming,
	// Registering or ClaimFailed.
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Discovery Pool State"
	// +optional
	State DiscoveryPoolState `json:"state,omitempty"`
	// message says why, in words.
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Discovery Pool Message"
	// +optional
	Message string `json:"message,omitempty"`
	// claimed are the disks (kernel paths when listed) sent to LINSTOR for this pool.
	// The operator never claims other disks for the pool on this node while these are
	// not unused again.
	// +listType=atomic
	// +optional
	Claimed []string `json:"claimed,omitempty"`
	// attempts counts the claims sent to LINSTOR; after the first, kernel paths are used.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Claim Attempts",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:hidden"}
	Attempts int32 `json:"attempts,omitempty"`
	// claimTime is when the disks were last sent to LINSTOR.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Claimed At",xDescriptors={"urn:alm:descriptor:text"}
	ClaimTime *metav1.Time `json:"claimTime,omitempty"`
}

// DiskState is what discovery did with a disk.
type DiskState string

const (
	// DiskClaimed: the disk was given to LINSTOR for a pool.
	DiskClaimed DiskState = "Claimed"
	// DiskWouldClaim: a dry-run pool, or one awaiting acknowledgement, would claim the disk.
	DiskWouldClaim DiskState = "WouldClaim"
	// DiskSkipped: the disk is unused and no pool takes it; reason says why.
	DiskSkipped DiskState = "Skipped"
)

// DiskStatus is one disk of the node.
type DiskStatus struct {
	// device is the kernel path LINSTOR reports, for example /dev/nvme1n1.
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Disk"
	// +required
	Device string `json:"device"`
	// stableName is the /dev/disk/by-id name derived from the disk's WWN or serial, when
	// it can be; claims use it.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Disk Stable Name",xDescriptors={"urn:alm:descriptor:text"}
	StableName string `json:"stableName,omitempty"`
	// size of the disk.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Disk Size",xDescriptors={"urn:alm:descriptor:text"}
	Size *resource.Quantity `json:"size,omitempty"`
	// rotational is true for a spinning disk.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Rotational",xDescriptors={"urn:alm:descriptor:text"}
	Rotational bool `json:"rotational,omitempty"`
	// model, serial and wwn as lsblk reports them.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Disk Model",xDescriptors={"urn:alm:descriptor:text"}
	Model string `json:"model,omitempty"`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Disk Serial",xDescriptors={"urn:alm:descriptor:text"}
	Serial string `json:"serial,omitempty"`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Disk WWN",xDescriptors={"urn:alm:descriptor:text"}
	WWN string `json:"wwn,omitempty"`
	// state: Claimed, WouldClaim or Skipped.
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Disk State"
	// +required
	State DiskState `json:"state"`
	// pool that claimed or would claim the disk.
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Disk Pool"
	// +optional
	Pool string `json:"pool,omitempty"`
	// reason a disk is skipped: NotAPhysicalDisk (a loop, zvol, md, dm, DRBD, RBD, NBD,
	// optical or RAM device: never claimed),
	// SameIdentityTwice (its WWN or serial is listed twice on the node: two paths to one
	// disk), SeenOnOtherNode (its WWN or serial is reported by another node: a shared
	// LUN), NoMatch, MatchedTwice, HostDevice, LimitReached, PoolExists or PoolFailed.
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Disk Skipped Because"
	// +optional
	Reason string `json:"reason,omitempty"`
	// message explains the state, naming the pools and what did not match.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Disk Message",xDescriptors={"urn:alm:descriptor:text"}
	Message string `json:"message,omitempty"`
}

// StoragePoolStatus is one pool as LINSTOR reports it.
type StoragePoolStatus struct {
	// name of the pool.
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Storage Pool",xDescriptors={"urn:alm:descriptor:text"}
	Name string `json:"name"`
	// providerKind as LINSTOR names it, for example LVM_THIN.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Provider Kind",xDescriptors={"urn:alm:descriptor:text"}
	ProviderKind string `json:"providerKind,omitempty"`
	// freeCapacity of the pool.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Free Capacity",xDescriptors={"urn:alm:descriptor:text"}
	FreeCapacity *resource.Quantity `json:"freeCapacity,omitempty"`
	// totalCapacity of the pool.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Total Capacity",xDescriptors={"urn:alm:descriptor:text"}
	TotalCapacity *resource.Quantity `json:"totalCapacity,omitempty"`
	// errors are the messages of the pool's error reports in LINSTOR's storage-pool
	// list (its State column shows Error), for example the satellite failing to query
	// the pool's free space because its volume group or thin pool is gone. Empty when
	// the pool is healthy.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=1024
	// No console descriptor: the console renders no descriptor on an array of strings
	// (test/bundle), as for claimed and notOwned.
	// +optional
	Errors []string `json:"errors,omitempty"`
}

// LinstorSatellite is one node's satellite. Created and owned by the operator; edit
// LinstorSatelliteConfigurations instead.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:resource:shortName=ls,categories=linstor
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Degraded",type=string,JSONPath=`.status.conditions[?(@.type=="Degraded")].status`
// +kubebuilder:printcolumn:name="Connection",type=string,JSONPath=`.status.connectionStatus`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.version`
// +kubebuilder:printcolumn:name="Pools",type=string,JSONPath=`.status.poolsSummary`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +operator-sdk:csv:customresourcedefinitions:displayName="LINSTOR Satellite",resources={{DaemonSet,v1},{Pod,v1}}
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) >= 2",message="metadata.name: a LINSTOR node name needs at least 2 characters (Checks.hostNameCheck); a node with a one-letter name cannot join LINSTOR"
type LinstorSatellite struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec LinstorSatelliteSpec `json:"spec,omitempty"`
	// +optional
	Status LinstorSatelliteStatus `json:"status,omitempty"`
}

// LinstorSatelliteList contains a list of LinstorSatellite.
// +kubebuilder:object:root=true
type LinstorSatelliteList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LinstorSatellite `json:"items"`
}

func init() {
	SchemeBuilder.Register(&LinstorSatellite{}, &LinstorSatelliteList{})
}
