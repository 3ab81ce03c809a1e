package render

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/config/grafana"
	"github.com/linstor-operator/linstor-operator/config/prometheus"
	"github.com/linstor-operator/linstor-operator/pkg/images"
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
	ControllerMonitorName = names.ControllerName
	SatelliteMonitorName  = names.SatelliteComponent
	AlertsName            = "linstor-operator-alerts"
	DashboardName         = "linstor-dashboard"
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

// DefaultScrapeNamespaces are the namespaces the common monitoring stacks run their
// Prometheus in: kube-prometheus installs into "monitoring"; OpenShift's platform and
// user-workload Prometheus run in the two openshift-* namespaces.
var DefaultScrapeNamespaces = []string{"monitoring", "openshift-monitoring", "openshift-user-workload-monitoring"}

// Monitoring is what the operator does about monitoring for a cluster.
type Monitoring struct {
	// Enabled: the dashboard ConfigMap exists.
	Enabled bool
	// ScrapeController: the NetworkPolicy admits the scrape namespaces to the LINSTOR
	// controller's API port, and (with PrometheusOperator) its ServiceMonitor exists.
	ScrapeController bool
	// PrometheusOperator: the ServiceMonitors, PodMonitor and PrometheusRule exist too.
	PrometheusOperator bool
	// Reason and Message are status.monitoring's.
	Reason, Message string
}

// MonitoringFor decides from spec.monitoring.mode, whether the controller pod has
// the metrics sidecar (imgs: MetricsProxied) and whether the Prometheus Operator's
// CRDs are installed (missing names those that are not): Auto follows the CRDs,
// Disabled turns everything off, Enabled keeps the dashboard and the NetworkPolicy
// rule even without the CRDs (a Prometheus outside the Prometheus Operator may
// scrape).
//
// The LINSTOR controller is scraped only through its metrics sidecar: LINSTOR serves
// /metrics on its API port and has no read-only role, so a scraper admitted there, or
// given the API client certificate, could do anything LINSTOR can.
func MonitoringFor(cluster *linstorv1.LinstorCluster, imgs images.Set, missing []string) Monitoring {
	mode := linstorv1.MonitoringAuto
	if m := cluster.Spec.Monitoring; m != nil && m.Mode != "" {
		mode = m.Mode
	}
	if mode == linstorv1.MonitoringDisabled {
		return Monitoring{Reason: linstorv1.MonitoringReasonDisabled, Message: "spec.monitoring.mode is Disabled"}
	}
	if len(missing) > 0 && mode == linstorv1.MonitoringAuto {
		return Monitoring{Reason: linstorv1.MonitoringReasonCRDsMissing,
			Message: fmt.Sprintf("the Prometheus Operator's CRDs %v are not installed; monitoring starts when they are, or with spec.monitoring.mode Enabled", missing)}
	}
	ours := cluster.Spec.ExternalController == nil && ControllerEnabled(cluster)
	m := Monitoring{Enabled: true, ScrapeController: ours && MetricsProxied(imgs), PrometheusOperator: len(missing) == 0}
	var made []string
	switch {
	case m.PrometheusOperator:
		m.Reason = linstorv1.MonitoringReasonEnabled
		made = append(made, "ServiceMonitors, PodMonitor, PrometheusRule and the dashboard ConfigMap are applied")
	default:
		m.Reason = linstorv1.MonitoringReasonCRDsMissing
		made = append(made, fmt.Sprintf("the dashboard ConfigMap exists; the ServiceMonitors, PodMonitor and PrometheusRule wait for the Prometheus Operator's CRDs %v", missing))
	}
	switch {
	case m.ScrapeController:
		made = append(made, fmt.Sprintf("the NetworkPolicy admits the scrape namespaces to the LINSTOR controller's metrics port %d (its /metrics only)", names.MetricsProxyPort))
	case ours:
		made = append(made, "the LINSTOR controller's /metrics is not scraped: its metrics sidecar runs the operator's image, "+
			"which this operator was not told (RELATED_IMAGE_OPERATOR, set by the OLM bundle and config/manager)")
	}
	m.Message = strings.Join(made, "; ")
	return m
}

// PrometheusOperatorObjects renders a ServiceMonitor for the LINSTOR controller's
// /metrics (while mon.ScrapeController), one for the operator's own, a PodMonitor for
// every satellite's drbd-reactor, and a PrometheusRule with
// config/prometheus/rules.yaml.
func PrometheusOperatorObjects(cluster *linstorv1.LinstorCluster, mon Monitoring) (Objects, error) {
	var objs Objects
	if mon.ScrapeController {
		objs = append(objs, controllerMonitor(cluster))
	}
	objs = append(objs, operatorMonitor(cluster))
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

// controllerMonitor scrapes the LINSTOR controller's metrics sidecar: plain HTTP,
// no credential (the sidecar answers GET /metrics and nothing else).
func controllerMonitor(cluster *linstorv1.LinstorCluster) *unstructured.Unstructured {
	return monitoringObject(cluster, ServiceMonitorKind, ControllerMonitorName, map[string]any{
		"selector":  toMap(&metav1.LabelSelector{MatchLabels: selectorLabels(cluster, names.ControllerName)}),
		"endpoints": []any{map[string]any{"port": names.MetricsProxyPortName, "scheme": "http", "path": "/metrics"}},
	})
}

// operatorMonitor scrapes the operator's metrics Service with the scraper's token.
// The operator runs in the LinstorCluster's namespace (it refuses one elsewhere), so
// its Service is in the ServiceMonitor's.
func operatorMonitor(cluster *linstorv1.LinstorCluster) *unstructured.Unstructured {
	return monitoringObject(cluster, ServiceMonitorKind, OperatorMonitorName, map[string]any{
		"selector": toMap(&metav1.LabelSelector{MatchLabels: operatorMetricsServiceSelector}),
		"endpoints": []any{map[string]any{
			"port": operatorMetricsPort, "scheme": "https", "path": "/metrics",
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
			// /metrics and nothing else.
			"tlsConfig": map[string]any{"insecureSkipVerify": true},
		}},
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
// of the ScrapeNamespaceSelector's namespaces to the controller pod's metrics sidecar.
// Only that port, never the API's: the rule is an extra ingress rule, so the other
// peers keep exactly what they had.
func WithScrapers(cluster *linstorv1.LinstorCluster, objs Objects) Objects {
	for _, o := range objs {
		np, ok := o.(*networkingv1.NetworkPolicy)
		if !ok || np.Name != names.NetworkPolicyName || len(np.Spec.Ingress) == 0 {
			continue
		}
		port := intstr.FromInt32(names.MetricsProxyPort)
		np.Spec.Ingress = append(np.Spec.Ingress, networkingv1.NetworkPolicyIngressRule{
			Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: &port}},
			From:  []networkingv1.NetworkPolicyPeer{{NamespaceSelector: ScrapeNamespaceSelector(cluster)}},
		})
	}
	return objs
}
