package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LinstorSatelliteConfigurationSpec is the v1alpha1 shape.
type LinstorSatelliteConfigurationSpec struct {
	// nodeSelector selects the nodes this configuration applies to.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Node Selector"
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	StoragePools `json:",inline"`
	// nodeProperties are LINSTOR node properties.
	// +kubebuilder:validation:MaxProperties=128
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Node Properties"
	NodeProperties map[string]string `json:"nodeProperties,omitempty"`
}

// LinstorSatelliteConfigurationStatus is the v1alpha1 status.
type LinstorSatelliteConfigurationStatus struct {
	// +listType=map
	// +listMapKey=type
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors={"urn:alm:descriptor:io.kubernetes.conditions"}
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// LinstorSatelliteConfiguration is the deprecated v1alpha1 form.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:deprecatedversion:warning="linstor.io/v1alpha1 LinstorSatelliteConfiguration is deprecated; use linstor.io/v1"
// +kubebuilder:resource:shortName=lsc,categories=linstor
// +operator-sdk:csv:customresourcedefinitions:displayName="LINSTOR Satellite Configuration (deprecated)"
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
