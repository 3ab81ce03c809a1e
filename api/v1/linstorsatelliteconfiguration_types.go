package v1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LinstorSatelliteConfigurationSpec configures the satellites of the selected nodes.
// +kubebuilder:validation:XValidation:rule="!has(self.netInterfaces) || self.netInterfaces.filter(n, has(n.active) && n.active).size() <= 1",message="spec.netInterfaces: at most one interface may be active"
type LinstorSatelliteConfigurationSpec struct {
	// nodeSelector selects the nodes this configuration applies to. Empty selects every node.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Node Selector",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:selector:core:v1:Node"}
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// nodeAffinity selects the nodes this configuration applies to by node selector
	// terms (any term matches), in addition to nodeSelector. See `kubectl explain
	// pod.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution`.
	// +optional
	NodeAffinity *corev1.NodeSelector `json:"nodeAffinity,omitempty"`

	// storagePools to create on each selected node.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Storage Pools"
	StoragePools []StoragePool `json:"storagePools,omitempty"`

	// properties set on each selected LINSTOR node.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=128
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Node Properties"
	Properties []NodeProperty `json:"properties,omitempty"`

	// netInterfaces registered on each selected LINSTOR node.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Network Interfaces",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	NetInterfaces []NetInterface `json:"netInterfaces,omitempty"`

	// podTemplate is a strategic-merge patch for the satellite pod template.
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	PodTemplate *runtime.RawExtension `json:"podTemplate,omitempty"`

	// patches change the satellite objects of the selected nodes (the DaemonSet, its
	// ConfigMaps), applied after the cluster's spec.satellite.patches, configurations
	// in name order.
	// +kubebuilder:validation:MaxItems=32
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Patches",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	Patches []Patch `json:"patches,omitempty"`

	// ipFamilies the LINSTOR controller may use to reach the satellites of the
	// selected nodes, in order of preference (IPv4, IPv6); unset uses the node's first
	// internal address. The last configuration by name that sets it wins.
	// +listType=set
	// +kubebuilder:validation:MaxItems=2
	// +optional
	IPFamilies []IPFamily `json:"ipFamilies,omitempty"`

	// deletionPolicy: Retain (default), Evacuate or Delete.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Deletion Policy",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:Retain","urn:alm:descriptor:com.tectonic.ui:select:Evacuate","urn:alm:descriptor:com.tectonic.ui:select:Delete"}
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`

	// maxConcurrentEvacuations limits how many nodes of the cluster evacuate at once.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Max Concurrent Evacuations",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:number"}
	MaxConcurrentEvacuations *int32 `json:"maxConcurrentEvacuations,omitempty"`

	// drbdModuleLoader overrides the cluster's spec.satellite.drbdModuleLoader on the
	// selected nodes: Auto, Compile, ShippedModules or None. Unset keeps the cluster's.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="DRBD Module Loader",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:Auto","urn:alm:descriptor:com.tectonic.ui:select:Compile","urn:alm:descriptor:com.tectonic.ui:select:ShippedModules","urn:alm:descriptor:com.tectonic.ui:select:None"}
	DRBDModuleLoader DRBDModuleLoader `json:"drbdModuleLoader,omitempty"`
}

// LinstorSatelliteConfigurationStatus is the observed state of a configuration.
type LinstorSatelliteConfigurationStatus struct {
	// conditions: Applied.
	// +listType=map
	// +listMapKey=type
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors={"urn:alm:descriptor:io.kubernetes.conditions"}
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// observedGeneration is the generation the last successful pass acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// matchedNodes are the nodes this configuration applies to.
	// +listType=set
	// +optional
	MatchedNodes []string `json:"matchedNodes,omitempty"`
	// matchedNodeCount is the length of matchedNodes, for the printer column (a column
	// showing the list itself grows with the cluster).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Matched Nodes",xDescriptors={"urn:alm:descriptor:text"}
	MatchedNodeCount int32 `json:"matchedNodeCount"`
}

// LinstorSatelliteConfiguration configures satellites on the nodes it selects.
// Several configurations merge in order of their names: later names win per field,
// lists merge by item name.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:resource:shortName=lsc,categories=linstor
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.status.matchedNodeCount`
// +kubebuilder:printcolumn:name="Applied",type=string,JSONPath=`.status.conditions[?(@.type=="Applied")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +operator-sdk:csv:customresourcedefinitions:displayName="LINSTOR Satellite Configuration",resources={{LinstorSatellite,v1}}
type LinstorSatelliteConfiguration struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec LinstorSatelliteConfigurationSpec `json:"spec,omitempty"`
	// +optional
	Status LinstorSatelliteConfigurationStatus `json:"status,omitempty"`
}

// LinstorSatelliteConfigurationList contains a list of LinstorSatelliteConfiguration.
// +kubebuilder:object:root=true
type LinstorSatelliteConfigurationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LinstorSatelliteConfiguration `json:"items"`
}

func init() {
	SchemeBuilder.Register(&LinstorSatelliteConfiguration{}, &LinstorSatelliteConfigurationList{})
}
