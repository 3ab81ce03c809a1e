package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LinstorNodeConnectionSpec selects node pairs and configures their connection.
type LinstorNodeConnectionSpec struct {
	// selector: a pair of nodes matches when it matches any one term. Empty matches every pair.
	// +kubebuilder:validation:MaxItems=16
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Selector"
	Selector []SelectorTerm `json:"selector,omitempty"`

	// properties set on the connection of each selected pair.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Properties"
	Properties []Property `json:"properties,omitempty"`

	// paths are DRBD paths: which LINSTOR net interface each side uses.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Paths"
	Paths []ConnectionPath `json:"paths,omitempty"`
}

// SelectorTerm matches a pair when every expression matches.
type SelectorTerm struct {
	// matchLabels expressions, all of which must hold.
	// +kubebuilder:validation:MaxItems=16
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Match Labels"
	MatchLabels []MatchLabelExpression `json:"matchLabels"`
}

// MatchOperator compares a node label across a pair.
// +kubebuilder:validation:Enum=Exists;DoesNotExist;In;NotIn;Same;NotSame
type MatchOperator string

// MatchLabelExpression tests one label on both nodes of a pair.
// +kubebuilder:validation:XValidation:rule="(self.op in ['In', 'NotIn']) == (has(self.values) && size(self.values) > 0)",message="values must be set for In and NotIn, and only for them"
type MatchLabelExpression struct {
	// key of the node label.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Label Key",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Key string `json:"key"`
	// op: Exists, DoesNotExist, In, NotIn (on both nodes), Same, NotSame (values of the two nodes).
	// +kubebuilder:default=Exists
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Operator",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:Exists","urn:alm:descriptor:com.tectonic.ui:select:DoesNotExist","urn:alm:descriptor:com.tectonic.ui:select:In","urn:alm:descriptor:com.tectonic.ui:select:NotIn","urn:alm:descriptor:com.tectonic.ui:select:Same","urn:alm:descriptor:com.tectonic.ui:select:NotSame"}
	Op MatchOperator `json:"op,omitempty"`
	// values for In and NotIn.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Values"
	Values []string `json:"values,omitempty"`
}

// ConnectionPath is one DRBD path between the two nodes.
type ConnectionPath struct {
	// name of the path.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=48
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9_-]*$`
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Path Name",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Name string `json:"name"`
	// interface is the LINSTOR net interface name used on both nodes.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=48
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Net Interface",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Interface string `json:"interface"`
}

// LinstorNodeConnectionStatus is the observed state.
type LinstorNodeConnectionStatus struct {
	// conditions: Configured.
	// +listType=map
	// +listMapKey=type
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors={"urn:alm:descriptor:io.kubernetes.conditions"}
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// observedGeneration is the generation the last successful pass acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// LinstorNodeConnection sets properties and DRBD paths on connections between selected nodes.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:resource:shortName=lnc,categories=linstor
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +operator-sdk:csv:customresourcedefinitions:displayName="LINSTOR Node Connection",resources={{Node,v1},{LinstorSatellite,v1},{LinstorCluster,v1}}
type LinstorNodeConnection struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec LinstorNodeConnectionSpec `json:"spec,omitempty"`
	// +optional
	Status LinstorNodeConnectionStatus `json:"status,omitempty"`
}

// LinstorNodeConnectionList contains a list of LinstorNodeConnection.
// +kubebuilder:object:root=true
type LinstorNodeConnectionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LinstorNodeConnection `json:"items"`
}

func init() {
	SchemeBuilder.Register(&LinstorNodeConnection{}, &LinstorNodeConnectionList{})
}
