package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LinstorSatelliteSpec is the v1alpha1 shape.
type LinstorSatelliteSpec struct {
	// clusterName names the LinstorCluster.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Cluster Name"
	ClusterName  string `json:"clusterName"`
	StoragePools `json:",inline"`
	// nodeProperties are LINSTOR node properties.
	// +kubebuilder:validation:MaxProperties=128
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Node Properties"
	NodeProperties map[string]string `json:"nodeProperties,omitempty"`
}

// LinstorSatelliteStatus is the v1alpha1 status.
type LinstorSatelliteStatus struct {
	// +listType=map
	// +listMapKey=type
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors={"urn:alm:descriptor:io.kubernetes.conditions"}
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// connectionStatus of the LINSTOR node.
	// +optional
	ConnectionStatus string `json:"connectionStatus,omitempty"`
}

// LinstorSatellite is the deprecated v1alpha1 form.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:deprecatedversion:warning="linstor.io/v1alpha1 LinstorSatellite is deprecated; use linstor.io/v1"
// +kubebuilder:resource:shortName=ls,categories=linstor
// +operator-sdk:csv:customresourcedefinitions:displayName="LINSTOR Satellite (deprecated)"
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
