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
	ConnectionStatus string `json:"connectionStatus,omitempty"`
	// version of the satellite as LINSTOR reports it.
	// +optional
	Version string `json:"version,omitempty"`
	// storagePools as LINSTOR reports them.
	// +listType=map
	// +listMapKey=name
	// +optional
	StoragePools []StoragePoolStatus `json:"storagePools,omitempty"`
	// poolsSummary is "ready/total", for the printer column.
	// +optional
	PoolsSummary string `json:"poolsSummary,omitempty"`
}

// StoragePoolStatus is one pool as LINSTOR reports it.
type StoragePoolStatus struct {
	// name of the pool.
	// +required
	Name string `json:"name"`
	// providerKind as LINSTOR names it, for example LVM_THIN.
	// +optional
	ProviderKind string `json:"providerKind,omitempty"`
	// freeCapacity of the pool.
	// +optional
	FreeCapacity *resource.Quantity `json:"freeCapacity,omitempty"`
	// totalCapacity of the pool.
	// +optional
	TotalCapacity *resource.Quantity `json:"totalCapacity,omitempty"`
}

// LinstorSatellite is one node's satellite. Created and owned by the operator; edit
// LinstorSatelliteConfigurations instead.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:resource:shortName=ls,categories=linstor
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.connectionStatus`
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
