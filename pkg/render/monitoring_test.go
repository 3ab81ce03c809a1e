package render

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/config/grafana"
	"github.com/linstor-operator/linstor-operator/config/prometheus"
	"github.com/linstor-operator/linstor-operator/internal/bundle"
	"github.com/linstor-operator/linstor-operator/pkg/crdschema"
	"github.com/linstor-operator/linstor-operator/pkg/images"
	"github.com/linstor-operator/linstor-operator/pkg/metricsproxy"
	"github.com/linstor-operator/linstor-operator/pkg/names"
)

// The Prometheus Operator's own CRDs (v0.93.0), as test/controllers installs them.
const monitoringCRDDir = "../../test/controllers/testdata/prometheus-operator"

// crdCheck holds one kind's schema: the API server's validation, and its pruning, which
// would silently drop a field the schema does not know.
type crdCheck struct {
	schema     *crdschema.Schema
	structural *structuralschema.Structural
}

func loadMonitoringCRDs(t *testing.T) map[string]crdCheck {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(monitoringCRDDir, "*.yaml"))
	if err != nil || len(files) != 3 {
		t.Fatalf("CRDs %v: %v", files, err)
	}
	out := map[string]crdCheck{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(raw, &crd); err != nil {
			t.Fatal(err)
		}
		for _, v := range crd.Spec.Versions {
			if v.Name != "v1" {
				continue
			}
			s, err := crdschema.New(v.Schema.OpenAPIV3Schema)
			if err != nil {
				t.Fatal(err)
			}
			var internal apiextensions.JSONSchemaProps
			if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
				t.Fatal(err)
			}
			structural, err := structuralschema.NewStructural(&internal)
			if err != nil {
				t.Fatal(err)
			}
			out[crd.Spec.Names.Kind] = crdCheck{schema: s, structural: structural}
		}
	}
	return out
}

// checkAgainstCRD fails on what the API server would refuse or silently drop.
func checkAgainstCRD(t *testing.T, crds map[string]crdCheck, u *unstructured.Unstructured) {
	t.Helper()
	c, ok := crds[u.GetKind()]
	if !ok {
		t.Fatalf("no CRD for %s", u.GetKind())
	}
	obj := runtime.DeepCopyJSON(u.Object)
	if errs := c.schema.Validate(context.Background(), obj, nil); len(errs) > 0 {
		t.Errorf("%s %s refused by its CRD: %v", u.GetKind(), u.GetName(), errs)
	}
	unknown := structuralpruning.PruneWithOptions(obj, c.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	if len(unknown) > 0 {
		t.Errorf("%s %s has fields its CRD does not know (the API server drops them): %v", u.GetKind(), u.GetName(), unknown)
	}
}

func monitoringObjects(t *testing.T, c *linstorv1.LinstorCluster) map[string]*unstructured.Unstructured {
	t.Helper()
	objs, err := PrometheusOperatorObjects(c)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		u := o.(*unstructured.Unstructured)
		if u.GetNamespace() != c.Namespace || u.GetLabels()[names.LabelCluster] != c.Name || u.GetLabels()[names.LabelManagedBy] != names.ManagedBy {
			t.Errorf("%s %s/%s lacks the cluster's namespace or pruning labels: %v", u.GetKind(), u.GetNamespace(), u.GetName(), u.GetLabels())
		}
		out[u.GetName()] = u
	}
	return out
}

func TestMonitoringObjectsMatchThePrometheusOperatorCRDs(t *testing.T) {
	crds := loadMonitoringCRDs(t)
	for name, spec := range map[string]linstorv1.LinstorClusterSpec{
		"api TLS":               {},
		"api TLS, CA ConfigMap": {TLS: &linstorv1.TLSSpec{API: &linstorv1.TLSConfig{Mode: linstorv1.TLSSecret, SecretName: "s", ClientSecretName: "c", CAReference: &linstorv1.CAReference{Kind: "ConfigMap", Name: "company-ca"}}}},
		"plain api":             {TLS: &linstorv1.TLSSpec{API: &linstorv1.TLSConfig{Mode: linstorv1.TLSDisabled}}},
		"external controller":   {ExternalController: &linstorv1.ExternalControllerSpec{URL: "https://linstor.example.com:3371"}},
	} {
		t.Run(name, func(t *testing.T) {
			objs := monitoringObjects(t, cluster(spec))
			for _, u := range objs {
				checkAgainstCRD(t, crds, u)
			}
		})
	}
}

// The operator's metrics Service as config/default and the OLM bundle install it (OLM
// keeps a bundled Service's labels and port names).
func operatorMetricsServices(t *testing.T) map[string]*corev1.Service {
	t.Helper()
	bundled, err := filepath.Glob("../../bundle/manifests/*metrics-service*.yaml")
	if err != nil || len(bundled) != 1 {
		t.Fatalf("bundle metrics Service %v: %v", bundled, err)
	}
	out := map[string]*corev1.Service{}
	for _, f := range append(bundled, "../../config/default/metrics_service.yaml") {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		svc := &corev1.Service{}
		if err := yaml.Unmarshal(raw, svc); err != nil {
			t.Fatal(err)
		}
		out[f] = svc
	}
	return out
}

func TestOperatorMonitorScrapesTheOperatorsSecureMetrics(t *testing.T) {
	c := cluster(linstorv1.LinstorClusterSpec{})
	sm := monitoringObjects(t, c)[OperatorMonitorName]
	if sm == nil || sm.GetKind() != "ServiceMonitor" {
		t.Fatalf("no ServiceMonitor %s for the operator's metrics", OperatorMonitorName)
	}
	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(eps) != 2 {
		t.Fatalf("endpoints %v: want the operator's /metrics and LINSTOR's", eps)
	}
	ep := eps[0].(map[string]any)
	// LINSTOR's page comes from the same endpoint, authenticated the same way: only the
	// path differs (pkg/metricsproxy), never LINSTOR's own port or a credential of it.
	linstorEP := maps.Clone(eps[1].(map[string]any))
	if linstorEP["path"] != metricsproxy.Path {
		t.Errorf("second endpoint %v: want LINSTOR's page at %s", linstorEP, metricsproxy.Path)
	}
	// Its own job (the path is no label: without it both pages' process_* and up would
	// be one series), and samples without the forwarding replica's pod and instance.
	wantRelabel := []any{map[string]any{"action": "replace", "targetLabel": "job", "replacement": LinstorControllerJob}}
	wantDrop := []any{map[string]any{"action": "labeldrop", "regex": "pod|instance|container"}}
	if mustYAML(t, linstorEP["relabelings"]) != mustYAML(t, wantRelabel) || mustYAML(t, linstorEP["metricRelabelings"]) != mustYAML(t, wantDrop) {
		t.Errorf("LINSTOR's endpoint relabels %s and %s", mustYAML(t, linstorEP["relabelings"]), mustYAML(t, linstorEP["metricRelabelings"]))
	}
	if ep["relabelings"] != nil || ep["metricRelabelings"] != nil {
		t.Errorf("the operator's own page is relabelled: %v", ep)
	}
	linstorEP["path"] = ep["path"]
	delete(linstorEP, "relabelings")
	delete(linstorEP, "metricRelabelings")
	if mustYAML(t, linstorEP) != mustYAML(t, ep) {
		t.Errorf("LINSTOR's endpoint differs from the operator's beyond its path and labels:\n%s\n%s", mustYAML(t, eps[1]), mustYAML(t, ep))
	}
	for file, svc := range operatorMetricsServices(t) {
		if !selects(t, &metav1.LabelSelector{MatchLabels: sel}, svc.Labels) {
			t.Errorf("selector %v does not select the metrics Service of %s (labels %v)", sel, file, svc.Labels)
		}
		ports := map[string]bool{}
		for _, p := range svc.Spec.Ports {
			ports[p.Name] = true
		}
		if !ports[ep["port"].(string)] {
			t.Errorf("port %v is not a port of the metrics Service of %s (%v)", ep["port"], file, ports)
		}
	}
	// The LINSTOR controller's Service is not the operator's.
	objs, err := Controller(c, images.Default())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if s, ok := o.(*corev1.Service); ok && selects(t, &metav1.LabelSelector{MatchLabels: sel}, s.Labels) {
			t.Errorf("selector %v also selects LINSTOR's Service %s", sel, s.Name)
		}
	}

	if ep["scheme"] != "https" || ep["path"] != "/metrics" || ep["honorLabels"] != true {
		t.Errorf("endpoint %v: want HTTPS /metrics keeping the series' own namespace label", ep)
	}
	if ep["bearerTokenFile"] != nil {
		t.Error("bearerTokenFile: deprecated, and OpenShift's user-workload monitoring refuses the ServiceMonitor")
	}
	if v, _, _ := unstructured.NestedBool(ep, "tlsConfig", "insecureSkipVerify"); !v {
		t.Errorf("tlsConfig %v: the endpoint's certificate is self-signed, there is no CA to verify it with", ep["tlsConfig"])
	}
	auth, _, _ := unstructured.NestedMap(ep, "authorization")
	cred, _, _ := unstructured.NestedStringMap(auth, "credentials")
	if auth["type"] != "Bearer" || cred["name"] != MetricsScraperTokenName || cred["key"] != corev1.ServiceAccountTokenKey {
		t.Errorf("authorization %v, want the Bearer token of Secret %s", auth, MetricsScraperTokenName)
	}

	// The token is the scraper account's, minted by the API server into the Secret the
	// operator creates; the account ships with the operator, bound to GET /metrics.
	objs = MetricsScraper(c)
	if len(objs) != 1 {
		t.Fatalf("scraper objects %v", objs)
	}
	token, ok := objs[0].(*corev1.Secret)
	if !ok || token.Name != MetricsScraperTokenName || token.Namespace != c.Namespace || token.Type != corev1.SecretTypeServiceAccountToken ||
		token.Annotations[corev1.ServiceAccountNameKey] != MetricsScraperAccount || len(token.Data) != 0 {
		t.Fatalf("token %+v: want an empty token Secret of %s the API server fills", objs[0], MetricsScraperAccount)
	}
	if token.Labels[names.LabelCluster] != c.Name || token.Labels[names.LabelManagedBy] != names.ManagedBy || token.Labels[names.LabelComponent] != MonitoringComponent {
		t.Errorf("token labels %v: pruning selects the cluster's monitoring objects", token.Labels)
	}
	rbac, err := bundle.ReadRBAC("../..", c.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	shipped := false
	for _, sa := range rbac.ServiceAccounts {
		shipped = shipped || sa.Name == MetricsScraperAccount
	}
	if !shipped {
		t.Errorf("config/rbac ships no ServiceAccount %s", MetricsScraperAccount)
	}
	roles := map[string]*rbacv1.ClusterRole{}
	for _, r := range rbac.ClusterRoles {
		roles[r.Name] = r
	}
	for _, path := range []string{"/metrics", metricsproxy.Path} {
		granted := false
		for _, b := range rbac.ClusterRoleBindings {
			for _, s := range b.Subjects {
				if s.Kind != rbacv1.ServiceAccountKind || s.Name != MetricsScraperAccount || roles[b.RoleRef.Name] == nil {
					continue
				}
				for _, r := range roles[b.RoleRef.Name].Rules {
					granted = granted || (slices.Contains(r.NonResourceURLs, path) && slices.Contains(r.Verbs, "get"))
				}
			}
		}
		if !granted {
			t.Errorf("config/rbac does not let %s GET %s: the operator's endpoint would refuse every scrape of it", MetricsScraperAccount, path)
		}
	}
}

// config/prometheus/monitor.yaml, for installs where the operator does not create it,
// scrapes the operator exactly as the operator's own ServiceMonitor does, under the
// same names: the operator takes it over instead of scraping twice.
func TestOperatorMonitorIsConfigPrometheus(t *testing.T) {
	raw, err := os.ReadFile("../../config/prometheus/monitor.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c := cluster(linstorv1.LinstorClusterSpec{})
	rendered := monitoringObjects(t, c)[OperatorMonitorName]
	token := MetricsScraper(c)[0].(*corev1.Secret)
	docs := strings.Split(string(raw), "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("%d documents, want the ServiceMonitor and the token Secret", len(docs))
	}
	var sm unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(docs[0]), &sm.Object); err != nil {
		t.Fatal(err)
	}
	if sm.GetKind() != "ServiceMonitor" || sm.GetName() != rendered.GetName() || mustYAML(t, sm.Object["spec"]) != mustYAML(t, rendered.Object["spec"]) {
		t.Errorf("monitor.yaml:\n%s\nthe operator's:\n%s", mustYAML(t, sm.Object), mustYAML(t, rendered.Object))
	}
	var secret corev1.Secret
	if err := yaml.Unmarshal([]byte(docs[1]), &secret); err != nil {
		t.Fatal(err)
	}
	if secret.Name != token.Name || secret.Type != token.Type || !maps.Equal(secret.Annotations, token.Annotations) {
		t.Errorf("monitor.yaml's Secret %s (%s, %v), the operator's %s (%s, %v)", secret.Name, secret.Type, secret.Annotations, token.Name, token.Type, token.Annotations)
	}
}

func TestSatelliteMonitorSelectsTheSatellitePods(t *testing.T) {
	c := cluster(linstorv1.LinstorClusterSpec{})
	pm := monitoringObjects(t, c)[SatelliteMonitorName]
	if pm.GetName() != "linstor-satellite" {
		t.Errorf("name %s: DrbdMetricsDown matches the job <namespace>/linstor-satellite", pm.GetName())
	}
	sel, _, _ := unstructured.NestedStringMap(pm.Object, "spec", "selector", "matchLabels")
	sat, err := Satellite(c, &linstorv1.LinstorSatellite{ObjectMeta: metav1.ObjectMeta{Name: "n", Namespace: "storage"}}, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}, images.Default())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, o := range sat {
		if ds, ok := o.(*appsv1.DaemonSet); ok && ds.Name == names.SatelliteDaemonSetName("n") {
			pod := ds.Spec.Template
			found = true
			if !selects(t, &metav1.LabelSelector{MatchLabels: sel}, pod.Labels) {
				t.Errorf("selector %v misses the satellite pods %v", sel, pod.Labels)
			}
			ports := map[string]bool{}
			for _, ctr := range pod.Spec.Containers {
				for _, p := range ctr.Ports {
					ports[p.Name] = true
				}
			}
			if !ports[names.ReactorMetricsPortName] {
				t.Errorf("the satellite pod has no port %q to scrape (ports %v)", names.ReactorMetricsPortName, ports)
			}
		}
	}
	if !found {
		t.Fatal("no satellite DaemonSet rendered")
	}
	eps, _, _ := unstructured.NestedSlice(pm.Object, "spec", "podMetricsEndpoints")
	if len(eps) != 1 || eps[0].(map[string]any)["port"] != names.ReactorMetricsPortName {
		t.Errorf("endpoints %v", eps)
	}
}

func TestAlertRulesAreRulesYAML(t *testing.T) {
	rule := monitoringObjects(t, cluster(linstorv1.LinstorClusterSpec{}))[AlertsName]
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	got := 0
	for _, g := range groups {
		rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		got += len(rules)
	}
	if want := strings.Count(string(prometheus.Rules), "\n    - alert: "); got != want || want == 0 {
		t.Errorf("%d rules, rules.yaml has %d alerts", got, want)
	}
	if !strings.Contains(mustYAML(t, rule.Object), "alert: LinstorControllerDown") {
		t.Error("LinstorControllerDown missing")
	}
}

func mustYAML(t *testing.T, v any) string {
	t.Helper()
	out, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func TestDashboardConfigMapIsLabelledForTheGrafanaSidecar(t *testing.T) {
	objs := Dashboard(cluster(linstorv1.LinstorClusterSpec{}))
	cm := objs[0].(*corev1.ConfigMap)
	if cm.Labels["grafana_dashboard"] != "1" || cm.Labels[names.LabelManagedBy] != names.ManagedBy || cm.Namespace != "storage" {
		t.Errorf("ConfigMap %s/%s labels %v", cm.Namespace, cm.Name, cm.Labels)
	}
	if cm.Data[grafana.FileName] != string(grafana.Dashboard) || !strings.HasSuffix(grafana.FileName, ".json") {
		t.Errorf("data keys %v: the sidecar writes each key as a file and Grafana loads *.json", len(cm.Data))
	}
}

func TestMonitoringFor(t *testing.T) {
	missing := []string{"servicemonitors.monitoring.coreos.com"}
	for _, row := range []struct {
		name                   string
		mode                   linstorv1.MonitoringMode
		missing                []string
		on, prometheusOperator bool
		reason                 string
	}{
		{"unset, CRDs installed", "", nil, true, true, linstorv1.MonitoringReasonEnabled},
		{"unset, CRDs missing", "", missing, false, false, linstorv1.MonitoringReasonCRDsMissing},
		{"Auto, CRDs missing", linstorv1.MonitoringAuto, missing, false, false, linstorv1.MonitoringReasonCRDsMissing},
		{"Auto, CRDs installed", linstorv1.MonitoringAuto, nil, true, true, linstorv1.MonitoringReasonEnabled},
		{"Enabled, CRDs missing: the dashboard only", linstorv1.MonitoringEnabled, missing, true, false, linstorv1.MonitoringReasonCRDsMissing},
		{"Enabled, CRDs installed", linstorv1.MonitoringEnabled, nil, true, true, linstorv1.MonitoringReasonEnabled},
		{"Disabled, CRDs installed", linstorv1.MonitoringDisabled, nil, false, false, linstorv1.MonitoringReasonDisabled},
		{"Disabled, CRDs missing", linstorv1.MonitoringDisabled, missing, false, false, linstorv1.MonitoringReasonDisabled},
	} {
		t.Run(row.name, func(t *testing.T) {
			m := MonitoringFor(cluster(linstorv1.LinstorClusterSpec{Monitoring: &linstorv1.MonitoringSpec{Mode: row.mode}}), row.missing)
			if m.Enabled != row.on || m.PrometheusOperator != row.prometheusOperator || m.Reason != row.reason || m.Message == "" {
				t.Errorf("got %+v", m)
			}
			if row.reason == linstorv1.MonitoringReasonCRDsMissing && !strings.Contains(m.Message, row.missing[0]) {
				t.Errorf("message %q does not name the missing CRD", m.Message)
			}
		})
	}
	if m := MonitoringFor(cluster(linstorv1.LinstorClusterSpec{}), nil); !m.PrometheusOperator {
		t.Errorf("no spec.monitoring: %+v, want on while the CRDs exist", m)
	}
}

// Monitoring never opens the LINSTOR controller to anyone: whatever spec.monitoring
// says, its NetworkPolicy admits LINSTOR's own clients only (Prometheus reads LINSTOR's
// page from the operator).
func TestMonitoringOpensNoPortOfLinstors(t *testing.T) {
	for _, mode := range []linstorv1.MonitoringMode{"", linstorv1.MonitoringEnabled, linstorv1.MonitoringDisabled} {
		c := cluster(linstorv1.LinstorClusterSpec{Monitoring: &linstorv1.MonitoringSpec{Mode: mode}})
		plain := cluster(linstorv1.LinstorClusterSpec{})
		if mustYAML(t, policyOf(t, c)) != mustYAML(t, policyOf(t, plain)) {
			t.Errorf("mode %q changes the NetworkPolicy", mode)
		}
		for _, o := range mustObjects(t, c) {
			if u, ok := o.(*unstructured.Unstructured); ok && u.GetKind() == "ServiceMonitor" {
				sel, _, _ := unstructured.NestedStringMap(u.Object, "spec", "selector", "matchLabels")
				if selects(t, &metav1.LabelSelector{MatchLabels: sel}, selectorLabels(c, names.ControllerName)) {
					t.Errorf("ServiceMonitor %s scrapes the LINSTOR controller's pods", u.GetName())
				}
			}
		}
	}
}

func mustObjects(t *testing.T, c *linstorv1.LinstorCluster) Objects {
	t.Helper()
	objs, err := PrometheusOperatorObjects(c)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}
