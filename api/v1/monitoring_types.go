package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MonitoringSpec says whether the operator creates the Prometheus Operator's objects
// that scrape LINSTOR and alert on it, and who may scrape the LINSTOR controller.
type MonitoringSpec struct {
	// mode is Auto, Enabled or Disabled. Enabled creates a ServiceMonitor for the LINSTOR
	// controller's /metrics, a PodMonitor for the satellites' drbd-reactor and a
	// PrometheusRule with the alerts of docs/alerts.md while the Prometheus Operator's
	// CRDs exist, and always the Grafana dashboard ConfigMap and the NetworkPolicy rule
	// for the namespaces of scrapeNamespaceSelector. Disabled removes them all. Auto (the
	// default when unset) is Enabled while the Prometheus Operator's CRDs are installed
	// and Disabled otherwise.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Mode",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:Auto","urn:alm:descriptor:com.tectonic.ui:select:Enabled","urn:alm:descriptor:com.tectonic.ui:select:Disabled"}
	Mode MonitoringMode `json:"mode,omitempty"`

	// scrapeNamespaceSelector selects the namespaces whose pods may reach the LINSTOR
	// controller's API port (which serves /metrics) through the NetworkPolicy. Unset:
	// the namespaces the common monitoring stacks run their Prometheus in, by name:
	// monitoring (kube-prometheus), openshift-monitoring and
	// openshift-user-workload-monitoring (OpenShift). An empty selector ({}) admits
	// every namespace.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Scrape Namespace Selector",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:selector:core:v1:Namespace","urn:alm:descriptor:com.tectonic.ui:advanced"}
	// +operator-sdk:csv:customresourcedefinitions:type=spec,path=matchExpressions,displayName="Scrape Namespace Expressions",description="Namespaces matching all these label expressions may scrape.",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	// +operator-sdk:csv:customresourcedefinitions:type=spec,path=matchExpressions[0].key,displayName="Label Key",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text","urn:alm:descriptor:com.tectonic.ui:advanced"}
	// +operator-sdk:csv:customresourcedefinitions:type=spec,path=matchExpressions[0].operator,displayName="Operator",description="In, NotIn, Exists or DoesNotExist.",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text","urn:alm:descriptor:com.tectonic.ui:advanced"}
	// +operator-sdk:csv:customresourcedefinitions:type=spec,path=matchExpressions[0].values,displayName="Values",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	ScrapeNamespaceSelector *metav1.LabelSelector `json:"scrapeNamespaceSelector,omitempty"`
}

// MonitoringMode says whether the operator creates the monitoring objects.
// +kubebuilder:validation:Enum=Auto;Enabled;Disabled
type MonitoringMode string

const (
	// MonitoringAuto (also unset) follows the Prometheus Operator's CRDs.
	MonitoringAuto     MonitoringMode = "Auto"
	MonitoringEnabled  MonitoringMode = "Enabled"
	MonitoringDisabled MonitoringMode = "Disabled"
)

// MonitoringStatus says whether the monitoring objects exist and why.
type MonitoringStatus struct {
	// enabled is true while the operator keeps the monitoring objects.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Monitoring Enabled",xDescriptors={"urn:alm:descriptor:text"}
	Enabled bool `json:"enabled,omitempty"`
	// reason is a CamelCase word: Enabled, Disabled (spec.monitoring.mode is Disabled),
	// CRDsMissing (the Prometheus Operator's CRDs are not installed) or ApplyFailed (the
	// API server refused an object; message says which; retried every minute).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Monitoring Reason",xDescriptors={"urn:alm:descriptor:text"}
	Reason string `json:"reason,omitempty"`
	// message says what was created or why nothing was.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Monitoring Message",xDescriptors={"urn:alm:descriptor:text"}
	Message string `json:"message,omitempty"`
	// notOwned names the monitoring objects ("Kind namespace/name") that exist under the
	// operator's names but are not this LinstorCluster's (applied from
	// config/prometheus, or by someone else): the operator neither changes nor deletes
	// them, and does not create its own in their place.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=512
	NotOwned []string `json:"notOwned,omitempty"`
}

// Reasons of status.monitoring.
const (
	MonitoringReasonEnabled     = "Enabled"
	MonitoringReasonDisabled    = "Disabled"
	MonitoringReasonCRDsMissing = "CRDsMissing"
	MonitoringReasonApplyFailed = "ApplyFailed"
)
