package render

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/config/grafana"
	"github.com/linstor-operator/linstor-operator/config/prometheus"
	"github.com/linstor-operator/linstor-operator/pkg/clustertls"
	"github.com/linstor-operator/linstor-operator/pkg/names"
)

// The Prometheus Operator's kinds the operator creates. Their CRDs may be missing: these
// objects are unstructured, and the operator applies them only while the CRDs exist.
var (
	ServiceMonitorKind = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"}
	PodMonitorKind     = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "PodMonitor"}
	PrometheusRuleKind = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "PrometheusRule"}
	MonitoringKinds    = []schema.GroupVersionKind{ServiceMonitorKind, PodMonitorKind, PrometheusRuleKind}
)

// MonitoringCRDs are the names of the CRDs of MonitoringKinds.
var MonitoringCRDs = []string{
	"servicemonitors.monitoring.coreos.com",
	"podmonitors.monitoring.coreos.com",
	"prometheusrules.monitoring.coreos.com",
}

// Names of the monitoring objects. The PodMonitor and PrometheusRule keep the names
// config/prometheus gives them: a cluster that applied that kustomization has them
// taken over, not doubled (every alert would fire twice), and DrbdMetricsDown matches
// the PodMonitor's job "<namespace>/linstor-satellite".
const (
	ControllerMonitorName = names.ControllerName
	SatelliteMonitorName  = names.SatelliteComponent
	AlertsName            = "linstor-operator-alerts"
	DashboardName         = "linstor-dashboard"
	monitoringComponent   = "linstor-monitoring"
	// GrafanaDashboardLabel is the label Grafana's dashboard sidecar looks for: the
	// grafana Helm chart's sidecar.dashboards.label default, and "1" the value
	// kube-prometheus-stack sets as its labelValue (the chart's own default takes any).
	GrafanaDashboardLabel = "grafana_dashboard"
)

// DefaultScrapeNamespaces are the namespaces the common monitoring stacks run their
// Prometheus in: kube-prometheus installs into "monitoring"; OpenShift's platform and
// user-workload Prometheus run in the two openshift-* namespaces.
var DefaultScrapeNamespaces = []string{"monitoring", "openshift-monitoring", "openshift-user-workload-monitoring"}

// Monitoring is what the operator does about monitoring for a cluster.
type Monitoring struct {
	// Enabled: the dashboard ConfigMap exists and the NetworkPolicy admits scrapers.
	Enabled bool
	// PrometheusOperator: the ServiceMonitor, PodMonitor and PrometheusRule exist too.
	PrometheusOperator bool
	// Reason and Message are status.monitoring's.
	Reason, Message string
}

// MonitoringFor decides from spec.monitoring.mode and whether the Prometheus
// Operator's CRDs are installed (missing names those that are not): Auto follows the
// CRDs, Disabled turns everything off, Enabled keeps the dashboard and the
// NetworkPolicy rule even without the CRDs (a Prometheus outside the Prometheus
// Operator may scrape).
func MonitoringFor(cluster *linstorv1.LinstorCluster, missing []string) Monitoring {
	mode := linstorv1.MonitoringAuto
	if m := cluster.Spec.Monitoring; m != nil && m.Mode != "" {
		mode = m.Mode
	}
	switch {
	case mode == linstorv1.MonitoringDisabled:
		return Monitoring{Reason: linstorv1.MonitoringReasonDisabled, Message: "spec.monitoring.mode is Disabled"}
	case len(missing) > 0 && mode == linstorv1.MonitoringAuto:
		return Monitoring{Reason: linstorv1.MonitoringReasonCRDsMissing,
			Message: fmt.Sprintf("the Prometheus Operator's CRDs %v are not installed; monitoring starts when they are, or with spec.monitoring.mode Enabled", missing)}
	case len(missing) > 0:
		return Monitoring{Enabled: true, Reason: linstorv1.MonitoringReasonCRDsMissing,
			Message: fmt.Sprintf("the dashboard ConfigMap exists and the NetworkPolicy admits scrapers; the ServiceMonitor, PodMonitor and PrometheusRule wait for the Prometheus Operator's CRDs %v", missing)}
	}
	return Monitoring{Enabled: true, PrometheusOperator: true, Reason: linstorv1.MonitoringReasonEnabled,
		Message: "ServiceMonitor, PodMonitor, PrometheusRule and the dashboard ConfigMap are applied"}
}

// PrometheusOperatorObjects renders a ServiceMonitor for the LINSTOR controller's
// /metrics (only for a controller the operator runs), a PodMonitor for every
// satellite's drbd-reactor, and a PrometheusRule with config/prometheus/rules.yaml.
func PrometheusOperatorObjects(cluster *linstorv1.LinstorCluster) (Objects, error) {
	var objs Objects
	if cluster.Spec.ExternalController == nil && ControllerEnabled(cluster) {
		objs = append(objs, controllerMonitor(cluster))
	}
	objs = append(objs, satelliteMonitor(cluster))
	rule, err := alertRules(cluster)
	if err != nil {
		return nil, err
	}
	return append(objs, rule), nil
}

func monitoringObject(cluster *linstorv1.LinstorCluster, gvk schema.GroupVersionKind, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(gvk)
	u.SetName(name)
	u.SetNamespace(cluster.Namespace)
	u.SetLabels(labels(cluster, monitoringComponent))
	return u
}

func toMap(v any) map[string]any {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(v)
	if err != nil {
		panic(err) // only called on label selectors, which always convert
	}
	return m
}

// controllerMonitor scrapes /metrics on the API port the controller Service serves.
// With API TLS, LINSTOR asks every client for a certificate of its CA: Prometheus
// presents the client certificate the operator, CSI and HA controller use (the
// Prometheus Operator copies the referenced Secret keys into Prometheus's config).
func controllerMonitor(cluster *linstorv1.LinstorCluster) *unstructured.Unstructured {
	endpoint := map[string]any{"port": "api", "scheme": "http", "path": "/metrics"}
	if clustertls.APITLSEnabled(cluster) {
		client := clustertls.APIClientSecretName(cluster)
		ca := map[string]any{"secret": map[string]any{"name": client, "key": "ca.crt"}}
		if ref := clustertls.APICAReference(cluster); ref != nil {
			kind := "secret"
			if clustertls.CAIsConfigMap(ref) {
				kind = "configMap"
			}
			ca = map[string]any{kind: map[string]any{"name": ref.Name, "key": clustertls.CAKey(ref)}}
		}
		endpoint = map[string]any{"port": "secure-api", "scheme": "https", "path": "/metrics", "tlsConfig": map[string]any{
			"serverName": names.ControllerName + "." + cluster.Namespace + ".svc",
			"ca":         ca,
			"cert":       map[string]any{"secret": map[string]any{"name": client, "key": "tls.crt"}},
			"keySecret":  map[string]any{"name": client, "key": "tls.key"},
		}}
	}
	return monitoringObject(cluster, ServiceMonitorKind, ControllerMonitorName, map[string]any{
		"selector":  toMap(&metav1.LabelSelector{MatchLabels: selectorLabels(cluster, names.ControllerName)}),
		"endpoints": []any{endpoint},
	})
}

// satelliteMonitor scrapes drbd-reactor's prometheus port in every satellite pod.
func satelliteMonitor(cluster *linstorv1.LinstorCluster) *unstructured.Unstructured {
	return monitoringObject(cluster, PodMonitorKind, SatelliteMonitorName, map[string]any{
		"selector": toMap(&metav1.LabelSelector{MatchLabels: selectorLabels(cluster, names.SatelliteComponent)}),
		"podMetricsEndpoints": []any{map[string]any{
			"port": names.ReactorMetricsPortName, "scheme": "http",
			// The node, as the alerts name it (the pod's name has a random suffix).
			"relabelings": []any{map[string]any{
				"action": "replace", "sourceLabels": []any{"__meta_kubernetes_pod_node_name"}, "targetLabel": "node",
			}},
		}},
	})
}

// alertRules is config/prometheus/rules.yaml's spec in the cluster's namespace.
func alertRules(cluster *linstorv1.LinstorCluster) (*unstructured.Unstructured, error) {
	var file struct {
		Spec map[string]any `json:"spec"`
	}
	if err := yaml.Unmarshal(prometheus.Rules, &file); err != nil {
		return nil, fmt.Errorf("config/prometheus/rules.yaml: %w", err)
	}
	return monitoringObject(cluster, PrometheusRuleKind, AlertsName, file.Spec), nil
}

// Dashboard renders the Grafana dashboard as a ConfigMap labelled for Grafana's
// dashboard sidecar.
func Dashboard(cluster *linstorv1.LinstorCluster) Objects {
	l := labels(cluster, monitoringComponent)
	l[GrafanaDashboardLabel] = "1"
	return Objects{&corev1.ConfigMap{
		TypeMeta:   typeMeta("v1", "ConfigMap"),
		ObjectMeta: metav1.ObjectMeta{Name: DashboardName, Namespace: cluster.Namespace, Labels: l},
		Data:       map[string]string{grafana.FileName: string(grafana.Dashboard)},
	}}
}

// ScrapeNamespaceSelector is spec.monitoring.scrapeNamespaceSelector, or the
// DefaultScrapeNamespaces by their automatic name label.
func ScrapeNamespaceSelector(cluster *linstorv1.LinstorCluster) *metav1.LabelSelector {
	if m := cluster.Spec.Monitoring; m != nil && m.ScrapeNamespaceSelector != nil {
		return m.ScrapeNamespaceSelector.DeepCopy()
	}
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: slices.Clone(DefaultScrapeNamespaces),
	}}}
}

// WithScrapers adds to the cluster's NetworkPolicy in objs a rule that admits every pod
// of the ScrapeNamespaceSelector's namespaces to the controller's API port, where
// LINSTOR serves /metrics. Only that port: the rule is an extra ingress rule, so the
// other peers keep exactly what they had.
func WithScrapers(cluster *linstorv1.LinstorCluster, objs Objects) Objects {
	for _, o := range objs {
		np, ok := o.(*networkingv1.NetworkPolicy)
		if !ok || np.Name != names.NetworkPolicyName || len(np.Spec.Ingress) == 0 {
			continue
		}
		np.Spec.Ingress = append(np.Spec.Ingress, networkingv1.NetworkPolicyIngressRule{
			Ports: np.Spec.Ingress[0].DeepCopy().Ports,
			From:  []networkingv1.NetworkPolicyPeer{{NamespaceSelector: ScrapeNamespaceSelector(cluster)}},
		})
	}
	return objs
}
