package v1

// MonitoringSpec says whether the operator creates the Prometheus Operator's objects
// that scrape LINSTOR and alert on it.
type MonitoringSpec struct {
	// mode is Auto, Enabled or Disabled. Enabled creates a ServiceMonitor for the
	// operator's metrics endpoint (its own and, at /metrics/linstor, the LINSTOR
	// controller's), a PodMonitor for the satellites' drbd-reactor and a PrometheusRule
	// with the alerts of docs/alerts.md while the Prometheus Operator's CRDs exist, and
	// always the Grafana dashboard ConfigMap. Disabled removes them all. Auto (the
	// default when unset) is Enabled while the Prometheus Operator's CRDs are installed
	// and Disabled otherwise.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Mode",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:Auto","urn:alm:descriptor:com.tectonic.ui:select:Enabled","urn:alm:descriptor:com.tectonic.ui:select:Disabled"}
	Mode MonitoringMode `json:"mode,omitempty"`
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
