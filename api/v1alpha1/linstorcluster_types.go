package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LinstorClusterSpec is the flat v1alpha1 shape of a LINSTOR cluster.
type LinstorClusterSpec struct {
	// nodeSelector selects the nodes that run a satellite.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Node Selector"
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// controllerImage overrides the LINSTOR controller image.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[^\s]+$`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Controller Image"
	ControllerImage string `json:"controllerImage,omitempty"`
	// controllerReplicas of the controller Deployment.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=5
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Controller Replicas"
	ControllerReplicas *int32 `json:"controllerReplicas,omitempty"`
	// satelliteImage overrides the LINSTOR satellite image.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[^\s]+$`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Satellite Image"
	SatelliteImage string `json:"satelliteImage,omitempty"`
	// csiImage overrides the LINSTOR CSI image.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[^\s]+$`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="CSI Image"
	CSIImage string `json:"csiImage,omitempty"`
	// haControllerImage overrides the HA controller image.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[^\s]+$`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="HA Controller Image"
	HAControllerImage string `json:"haControllerImage,omitempty"`
	// disableCSI skips the CSI driver.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Disable CSI"
	DisableCSI bool `json:"disableCSI,omitempty"`
	// disableHAController skips the HA controller.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Disable HA Controller"
	DisableHAController bool `json:"disableHAController,omitempty"`
	// dbConnectionURL is "k8s" or a JDBC/etcd URL of an external database.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^(k8s|(jdbc:[a-z0-9]+:|etcd://)\S+)$`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="DB Connection URL"
	DBConnectionURL string `json:"dbConnectionURL,omitempty"`
	// dbCertSecret names a Secret with client certificates for the database.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="DB Cert Secret"
	DBCertSecret string `json:"dbCertSecret,omitempty"`
	// luksSecret names the Secret with the master passphrase.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="LUKS Secret"
	LuksSecret string `json:"luksSecret,omitempty"`
	// sslSecret names a Secret with certificates for controller-satellite traffic.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="SSL Secret"
	SSLSecret string `json:"sslSecret,omitempty"`
	// controllerProperties are LINSTOR controller properties.
	// +kubebuilder:validation:MaxProperties=256
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Controller Properties"
	ControllerProperties map[string]string `json:"controllerProperties,omitempty"`
}

// LinstorClusterStatus is the v1alpha1 status.
type LinstorClusterStatus struct {
	// +listType=map
	// +listMapKey=type
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors={"urn:alm:descriptor:io.kubernetes.conditions"}
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// LinstorCluster is the deprecated v1alpha1 form of a LINSTOR cluster.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:deprecatedversion:warning="linstor.io/v1alpha1 LinstorCluster is deprecated; use linstor.io/v1"
// +kubebuilder:resource:shortName=lc,categories=linstor
// +operator-sdk:csv:customresourcedefinitions:displayName="LINSTOR Cluster (deprecated)"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type LinstorCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec LinstorClusterSpec `json:"spec,omitempty"`
	// +optional
	Status LinstorClusterStatus `json:"status,omitempty"`
}

// LinstorClusterList contains a list of LinstorCluster.
// +kubebuilder:object:root=true
type LinstorClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LinstorCluster `json:"items"`
}

func init() {
	SchemeBuilder.Register(&LinstorCluster{}, &LinstorClusterList{})
}
