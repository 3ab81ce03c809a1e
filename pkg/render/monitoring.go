package render

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/config/grafana"
	"github.com/linstor-operator/linstor-operator/config/prometheus"
	"github.com/linstor-operator/linstor-operator/pkg/metricsproxy"
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

// Names of the monitoring objects. The ServiceMonitor of the operator, the PodMonitor
// and the PrometheusRule keep the names config/prometheus gives them: where that
// kustomization was applied, its objects stay the user's and the operator does not
// create a second of each (every alert would fire twice, every series come from two
// scrape pools); DrbdMetricsDown matches the PodMonitor's job
// "<namespace>/linstor-satellite".
const (
	SatelliteMonitorName = names.SatelliteComponent
	AlertsName           = "linstor-operator-alerts"
	// LinstorControllerJob is the job of LINSTOR's own series, scraped through the
	// operator (its name before, when LINSTOR was scraped directly).
	LinstorControllerJob = names.ControllerName
	DashboardName        = "linstor-dashboard"
	// MonitoringComponent labels every monitoring object (LabelComponent).
	MonitoringComponent = "linstor-monitoring"
	// GrafanaDashboardLabel is the label Grafana's dashboard sidecar looks for: the
	// grafana Helm chart's sidecar.dashboards.label default, and "1" the value
	// kube-prometheus-stack sets as its labelValue (the chart's own default takes any).
	GrafanaDashboardLabel = "grafana_dashboard"
)

// The operator's own metrics: controller-runtime's secure endpoint, which authenticates
// every scrape with a TokenReview and authorizes GET /metrics with a
// SubjectAccessReview. OperatorMonitorName is config/prometheus/monitor.yaml's. Prometheus
// presents the token of MetricsScraperAccount, which ships with the operator bound to
// GET /metrics (config/rbac/metrics_scraper_rbac.yaml); the API server mints it into
// MetricsScraperTokenName. A ServiceMonitor's `authorization` can only name a Secret
// of its own namespace, and `bearerTokenFile` (Prometheus's own token) is deprecated
// and refused by OpenShift's user-workload monitoring.
const (
	OperatorMonitorName     = "controller-manager-metrics-monitor"
	MetricsScraperTokenName = names.ManagedBy + "-metrics-scraper-token"
	// operatorMetricsPort is the port name of the metrics Service of config/default and
	// of the bundle.
	operatorMetricsPort = "https"
)

// operatorMetricsServiceSelector selects the operator's metrics Service, as
// config/default and the bundle label it (and not LINSTOR's Services).
var operatorMetricsServiceSelector = map[string]string{"app.kubernetes.io/name": "linstor-operator", "control-plane": "controller-manager"}

// MetricsScraperAccount is the ServiceAccount whose token Prometheus presents.
var MetricsScraperAccount = names.ServiceAccountName("metrics-scraper")

// Monitoring is what spec.monitoring and the cluster make of monitoring.
type Monitoring struct {
	// Enabled: the dashboard ConfigMap exists.
	Enabled bool
	// PrometheusOperator: the ServiceMonitor, PodMonitor and PrometheusRule exist too.
	PrometheusOperator bool
	// Reason and Message are status.monitoring's.
	Reason, Message string
}

// MonitoringFor decides from spec.monitoring.mode and whether the Prometheus
// Operator's CRDs are installed (missing names those that are not): Auto follows the
// CRDs, Disabled turns everything off, Enabled keeps the dashboard even without the
// CRDs (a Prometheus outside the Prometheus Operator may scrape).
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
			Message: fmt.Sprintf("the dashboard ConfigMap exists; the ServiceMonitor, PodMonitor and PrometheusRule wait for the Prometheus Operator's CRDs %v", missing)}
	}
	return Monitoring{Enabled: true, PrometheusOperator: true, Reason: linstorv1.MonitoringReasonEnabled,
		Message: "ServiceMonitor, PodMonitor, PrometheusRule and the dashboard ConfigMap are applied"}
}

// PrometheusOperatorObjects renders the ServiceMonitor of the operator's metrics
// endpoint (its own metrics and the LINSTOR controller's), a PodMonitor for every
// satellite's drbd-reactor, and a PrometheusRule with config/prometheus/rules.yaml.
func PrometheusOperatorObjects(cluster *linstorv1.LinstorCluster) (Objects, error) {
	objs := Objects{operatorMonitor(cluster), satelliteMonitor(cluster)}
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
	u.SetLabels(labels(cluster, MonitoringComponent))
	return u
}

func toMap(v any) map[string]any {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(v)
	if err != nil {
		panic(err) // only called on label selectors, which always convert
	}
	return m
}

// operatorMonitor scrapes the operator's metrics Service with the scraper's token.
// The operator runs in the LinstorCluster's namespace (it refuses one elsewhere), so
// its Service is in the ServiceMonitor's.
func operatorMonitor(cluster *linstorv1.LinstorCluster) *unstructured.Unstructured {
	endpoint := func(path string) map[string]any {
		return map[string]any{
			"port": operatorMetricsPort, "scheme": "https", "path": path,
			// The operator's series name the LinstorCluster's namespace in `namespace`:
			// kept, not renamed exported_namespace, so the alerts and the dashboard name
			// the cluster.
			"honorLabels": true,
			"authorization": map[string]any{"type": "Bearer", "credentials": map[string]any{
				"name": MetricsScraperTokenName, "key": corev1.ServiceAccountTokenKey,
			}},
			// The endpoint serves a certificate controller-runtime signs itself at start
			// (main.go gives it no certificate directory): there is no CA to verify it
			// with. Whoever answered in the operator's place would get a token that reads
			// metrics and nothing else.
			"tlsConfig": map[string]any{"insecureSkipVerify": true},
		}
	}
	// LINSTOR's page (pkg/metricsproxy) is a second endpoint: its own scrape, so a
	// LINSTOR that does not answer is a target down, not a gap in the operator's series.
	// Its targets differ from the operator's only by the path, which is no label: job
	// LinstorControllerJob keeps the two pages' series apart (both have process_*, the
	// JVM's and Go's) and their `up` too. Its samples drop the replica's pod and
	// instance: only the leading replica forwards, and a new leader must continue the
	// same series, not start new ones (every `for:` would start over).
	linstor := endpoint(metricsproxy.Path)
	linstor["relabelings"] = []any{map[string]any{"action": "replace", "targetLabel": "job", "replacement": LinstorControllerJob}}
	linstor["metricRelabelings"] = []any{map[string]any{"action": "labeldrop", "regex": "pod|instance|container"}}
	return monitoringObject(cluster, ServiceMonitorKind, OperatorMonitorName, map[string]any{
		"selector":  toMap(&metav1.LabelSelector{MatchLabels: operatorMetricsServiceSelector}),
		"endpoints": []any{endpoint("/metrics"), linstor},
	})
}

// MetricsScraper renders the Secret the API server writes MetricsScraperAccount's
// token into. Apply it only while the account exists: the API server deletes a token
// Secret of a missing account.
func MetricsScraper(cluster *linstorv1.LinstorCluster) Objects {
	return Objects{&corev1.Secret{
		TypeMeta: typeMeta("v1", "Secret"),
		ObjectMeta: metav1.ObjectMeta{Name: MetricsScraperTokenName, Namespace: cluster.Namespace, Labels: labels(cluster, MonitoringComponent),
			Annotations: map[string]string{corev1.ServiceAccountNameKey: MetricsScraperAccount}},
		Type: corev1.SecretTypeServiceAccountToken,
	}}
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
	l := labels(cluster, MonitoringComponent)
	l[GrafanaDashboardLabel] = "1"
	return Objects{&corev1.ConfigMap{
		TypeMeta:   typeMeta("v1", "ConfigMap"),
		ObjectMeta: metav1.ObjectMeta{Name: DashboardName, Namespace: cluster.Namespace, Labels: l},
		Data:       map[string]string{grafana.FileName: string(grafana.Dashboard)},
	}}
}
