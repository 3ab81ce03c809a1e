package v1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ComponentSpec configures one LINSTOR component workload.
type ComponentSpec struct {
	// enabled deploys the component when true (the default).
	// +kubebuilder:default=true
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Enabled",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:booleanSwitch"}
	Enabled *bool `json:"enabled,omitempty"`

	// image overrides the image of the release's image set for this component.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[^\s]+$`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Image",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text","urn:alm:descriptor:com.tectonic.ui:advanced"}
	Image string `json:"image,omitempty"`

	// resources of the component's main container; see `kubectl explain
	// pod.spec.containers.resources`.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Resources",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:resourceRequirements"}
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// nodeSelector restricts where the component's pods run.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Node Selector",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:selector:core:v1:Node","urn:alm:descriptor:com.tectonic.ui:advanced"}
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// tolerations of the component's pods, added to the defaults (the HA controller's
	// drbd.linbit.com taints for satellites, CSI node and HA controller; a 30 s
	// not-ready/unreachable toleration for the LINSTOR controller); a toleration with the
	// key and effect of a default replaces it. See `kubectl explain pod.spec.tolerations`.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// affinity of the component's pods; see `kubectl explain pod.spec.affinity`.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// podTemplate is a strategic-merge patch applied to the rendered pod
	// template, for anything the typed fields do not cover.
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	PodTemplate *runtime.RawExtension `json:"podTemplate,omitempty"`

	// patches change the objects the operator renders for this component (its
	// workload, Services, ConfigMaps), in order, after podTemplate: kustomize-style
	// patches for what podTemplate cannot reach. The result is held to the
	// cluster's podTemplatePolicy like podTemplate.
	// +kubebuilder:validation:MaxItems=32
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Patches",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	Patches []Patch `json:"patches,omitempty"`
}

// Patch changes the rendered objects its target selects.
type Patch struct {
	// target selects the rendered objects to patch. Unset selects the component's
	// workload (its Deployment or DaemonSet).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Target"
	Target *PatchTarget `json:"target,omitempty"`

	// patch is a strategic-merge patch (a YAML or JSON object, for example
	// "spec: {template: {spec: {hostNetwork: true}}}") or a JSON 6902 patch (a YAML or
	// JSON list of operations).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Patch",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Patch string `json:"patch"`
}

// PatchTarget selects rendered objects by kind and, optionally, name.
type PatchTarget struct {
	// kind of the rendered objects, for example DaemonSet, Deployment, Service or ConfigMap.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Z][A-Za-z0-9]*$`
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Kind",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Kind string `json:"kind"`

	// name of the rendered object; unset selects every object of the kind.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Name",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Name string `json:"name,omitempty"`
}

// IPFamily is an IP address family.
// +kubebuilder:validation:Enum=IPv4;IPv6
type IPFamily string

const (
	IPv4 IPFamily = "IPv4"
	IPv6 IPFamily = "IPv6"
)

// LocalSecretReference names a Secret in the namespace of the referring object.
type LocalSecretReference struct {
	// name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Secret",xDescriptors={"urn:alm:descriptor:io.kubernetes:Secret"}
	Name string `json:"name"`
}

// Property is one LINSTOR property, a key and its literal value.
type Property struct {
	// name of the LINSTOR property, for example "DrbdOptions/Net/protocol".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9_./:-]*$`
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Name",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Name string `json:"name"`

	// value of the property.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Value",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Value string `json:"value,omitempty"`
}
