package controllers

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/names"
	"github.com/linstor-operator/linstor-operator/pkg/render"
	"github.com/linstor-operator/linstor-operator/test/envtest"
)

// installMonitoringCRDs installs the Prometheus Operator's CRDs (its v0.93.0 release's,
// testdata/prometheus-operator) and returns a function that removes them again.
func installMonitoringCRDs(t *testing.T) (remove func()) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	files, err := filepath.Glob("testdata/prometheus-operator/*.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files).To(HaveLen(3))
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		raw, err := os.ReadFile(f)
		g.Expect(err).NotTo(HaveOccurred())
		crd := &apiextensionsv1.CustomResourceDefinition{}
		g.Expect(yaml.Unmarshal(raw, crd)).To(Succeed())
		g.Expect(env.Client.Create(ctx, crd)).To(Succeed())
		crds = append(crds, crd)
	}
	g.Eventually(func(g Gomega) {
		for _, crd := range crds {
			live := get(g, "", crd.Name, &apiextensionsv1.CustomResourceDefinition{})
			established := false
			for _, c := range live.Status.Conditions {
				established = established || (c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue)
			}
			g.Expect(established).To(BeTrue(), "%s not established", crd.Name)
		}
	}, timeout, tick).Should(Succeed())
	removed := false
	remove = func() {
		if removed {
			return
		}
		removed = true
		for _, crd := range crds {
			_ = env.Client.Delete(ctx, crd)
		}
		g.Eventually(func() bool {
			for _, crd := range crds {
				if !apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(crd), &apiextensionsv1.CustomResourceDefinition{})) {
					return false
				}
			}
			return true
		}, timeout, tick).Should(BeTrue(), "the Prometheus Operator's CRDs were not removed")
	}
	t.Cleanup(remove)
	return remove
}

func monitoringObject(ns, kind, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(render.ServiceMonitorKind.GroupVersion().WithKind(kind))
	return u, env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u)
}

// monitoringWrites counts the writes the API server served on the Prometheus
// Operator's kinds, from its own request metrics.
func monitoringWrites(g Gomega) float64 {
	cs, err := kubernetes.NewForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	raw, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	g.Expect(err).NotTo(HaveOccurred())
	total := 0.0
	for _, m := range families["apiserver_request_total"].GetMetric() {
		l := map[string]string{}
		for _, p := range m.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		if l["group"] != "monitoring.coreos.com" {
			continue
		}
		switch l["verb"] {
		case "GET", "LIST", "WATCH":
		default:
			total += m.GetCounter().GetValue()
		}
	}
	return total
}

// Monitoring follows the Prometheus Operator: off (and said so) while its CRDs are
// missing, on without a restart once they are installed, pruned when disabled, and
// silent in a steady state.
func TestMonitoringFollowsThePrometheusOperator(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	makeNode(t, "mon-a", "10.4.6.1", map[string]string{"suite": "mon"})
	cluster := makeCluster(t, ns, linstorv1.LinstorClusterSpec{NodeSelector: map[string]string{"suite": "mon"}})
	status := func(g Gomega) *linstorv1.MonitoringStatus {
		m := getCluster(g, cluster).Status.Monitoring
		g.Expect(m).NotTo(BeNil())
		return m
	}
	policy := func(g Gomega) *networkingv1.NetworkPolicy {
		return get(g, ns, names.NetworkPolicyName, &networkingv1.NetworkPolicy{})
	}
	type kindName struct{ kind, name string }
	kinds := []kindName{
		{"ServiceMonitor", render.OperatorMonitorName},
		{"PodMonitor", render.SatelliteMonitorName}, {"PrometheusRule", render.AlertsName},
	}
	token := func() (*corev1.Secret, error) {
		secret := &corev1.Secret{}
		return secret, env2Get(ns, render.MetricsScraperTokenName, secret)
	}

	// Without the Prometheus Operator the cluster runs, and says why nothing monitors it.
	g.Eventually(func(g Gomega) {
		m := status(g)
		g.Expect(m.Enabled).To(BeFalse())
		g.Expect(m.Reason).To(Equal(linstorv1.MonitoringReasonCRDsMissing))
		g.Expect(m.Message).To(ContainSubstring("servicemonitors.monitoring.coreos.com"))
		get(g, ns, names.ControllerName, &corev1.Service{})
		g.Expect(policy(g).Spec.Ingress).To(HaveLen(1))
	}, timeout, tick).Should(Succeed())
	g.Expect(apierrors.IsNotFound(env2Get(ns, render.DashboardName, &corev1.ConfigMap{}))).To(BeTrue(), "a dashboard without monitoring")

	// The Prometheus Operator arrives: everything is created, no restart needed.
	removeCRDs := installMonitoringCRDs(t)
	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		for _, o := range kinds {
			u, err := monitoringObject(ns, o.kind, o.name)
			g.Expect(err).NotTo(HaveOccurred(), "%s %s", o.kind, o.name)
			g.Expect(metav1.IsControlledBy(u, c)).To(BeTrue(), "%s %s is not the cluster's", o.kind, o.name)
		}
		// The operator's own endpoint, with the token of the account that ships with it
		// (the API server fills the Secret where a controller manager runs; envtest has none).
		sm, err := monitoringObject(ns, "ServiceMonitor", render.OperatorMonitorName)
		g.Expect(err).NotTo(HaveOccurred())
		eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		g.Expect(eps).To(HaveLen(2))
		g.Expect(eps[0]).To(HaveKeyWithValue("honorLabels", true))
		credentials, _, _ := unstructured.NestedStringMap(eps[0].(map[string]any), "authorization", "credentials")
		g.Expect(credentials).To(HaveKeyWithValue("name", render.MetricsScraperTokenName))
		secret, err := token()
		g.Expect(err).NotTo(HaveOccurred(), "no token Secret for the operator's ServiceMonitor")
		g.Expect(secret.Type).To(Equal(corev1.SecretTypeServiceAccountToken))
		g.Expect(secret.Annotations).To(HaveKeyWithValue(corev1.ServiceAccountNameKey, render.MetricsScraperAccount))
		g.Expect(metav1.IsControlledBy(secret, c)).To(BeTrue(), "the token Secret is not the cluster's")
		cm := get(g, ns, render.DashboardName, &corev1.ConfigMap{})
		g.Expect(cm.Labels).To(HaveKeyWithValue("grafana_dashboard", "1"))
		// LINSTOR's page is read from the operator: nothing is opened to the scrapers.
		g.Expect(eps[1]).To(HaveKeyWithValue("path", "/metrics/linstor"))
		g.Expect(policy(g).Spec.Ingress).To(HaveLen(1))
		g.Expect(c.Status.Monitoring.Enabled).To(BeTrue())
		g.Expect(c.Status.Monitoring.Reason).To(Equal(linstorv1.MonitoringReasonEnabled))
		g.Expect(c.Status.Monitoring.Message).To(ContainSubstring("ServiceMonitor, PodMonitor, PrometheusRule and the dashboard ConfigMap are applied"))
		g.Expect(c.Status.Monitoring.NotOwned).To(BeEmpty())
	}, timeout, tick).Should(Succeed())

	// Steady state: passes run (an annotation change) and nothing is written.
	versions := func(g Gomega) map[string]string {
		out := map[string]string{}
		for _, o := range kinds {
			u, err := monitoringObject(ns, o.kind, o.name)
			g.Expect(err).NotTo(HaveOccurred())
			out[o.kind+"/"+o.name] = u.GetResourceVersion()
		}
		secret, err := token()
		g.Expect(err).NotTo(HaveOccurred())
		out["Secret"] = secret.ResourceVersion
		out["ConfigMap"] = get(g, ns, render.DashboardName, &corev1.ConfigMap{}).ResourceVersion
		out["NetworkPolicy"] = policy(g).ResourceVersion
		return out
	}
	before, writes := versions(g), monitoringWrites(g)
	g.Expect(writes).To(BeNumerically(">=", len(kinds)), "the API server counted fewer monitoring writes than objects")
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) { c.Annotations = map[string]string{"touch": "1"} })).To(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(monitoringWrites(g)).To(Equal(writes), "monitoring objects written in a steady state")
		g.Expect(versions(g)).To(Equal(before))
	}, "3s", tick).Should(Succeed())

	// A hand edit of a field the operator owns is undone by the next pass.
	sm, err := monitoringObject(ns, "ServiceMonitor", render.OperatorMonitorName)
	g.Expect(err).NotTo(HaveOccurred())
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	eps[0].(map[string]any)["path"] = "/elsewhere"
	g.Expect(unstructured.SetNestedSlice(sm.Object, eps, "spec", "endpoints")).To(Succeed())
	g.Expect(env.Client.Update(context.Background(), sm)).To(Succeed())
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) { c.Annotations = map[string]string{"touch": "2"} })).To(Succeed())
	g.Eventually(func(g Gomega) {
		sm, err := monitoringObject(ns, "ServiceMonitor", render.OperatorMonitorName)
		g.Expect(err).NotTo(HaveOccurred())
		eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		g.Expect(eps[0].(map[string]any)["path"]).To(Equal("/metrics"))
	}, timeout, tick).Should(Succeed())

	// The scraper account goes missing (an install from an older config/rbac): no token,
	// so no ServiceMonitor of the operator's naming one, and the status says why. It
	// comes back with the account.
	scraper := get(g, ns, render.MetricsScraperAccount, &corev1.ServiceAccount{})
	g.Expect(env.Client.Delete(context.Background(), scraper)).To(Succeed())
	g.Eventually(func(g Gomega) {
		_, err := monitoringObject(ns, "ServiceMonitor", render.OperatorMonitorName)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a ServiceMonitor presenting a token that cannot exist")
		_, err = token()
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a token Secret of a missing account")
		g.Expect(status(g).Message).To(ContainSubstring("ServiceAccount " + render.MetricsScraperAccount))
		_, err = monitoringObject(ns, "PrometheusRule", render.AlertsName)
		g.Expect(err).NotTo(HaveOccurred(), "the rest of monitoring goes on")
	}, timeout, tick).Should(Succeed())
	g.Expect(env.Client.Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: scraper.Name, Namespace: ns}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		_, err := monitoringObject(ns, "ServiceMonitor", render.OperatorMonitorName)
		g.Expect(err).NotTo(HaveOccurred())
		_, err = token()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(status(g).Message).NotTo(ContainSubstring("ServiceAccount"))
	}, timeout, tick).Should(Succeed())

	// Disabled: everything is pruned and the NetworkPolicy closes again.
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) {
		c.Spec.Monitoring = &linstorv1.MonitoringSpec{Mode: linstorv1.MonitoringDisabled}
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		for _, o := range kinds {
			_, err := monitoringObject(ns, o.kind, o.name)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%s %s not pruned", o.kind, o.name)
		}
		_, err := token()
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "token Secret not pruned")
		get(g, ns, render.MetricsScraperAccount, &corev1.ServiceAccount{}) // it ships with the operator: not the operator's to prune
		g.Expect(apierrors.IsNotFound(env2Get(ns, render.DashboardName, &corev1.ConfigMap{}))).To(BeTrue(), "dashboard not pruned")
		g.Expect(policy(g).Spec.Ingress).To(HaveLen(1))
		g.Expect(status(g).Reason).To(Equal(linstorv1.MonitoringReasonDisabled))
	}, timeout, tick).Should(Succeed())

	// Back to the default, then the Prometheus Operator leaves: monitoring stops again.
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) { c.Spec.Monitoring = nil })).To(Succeed())
	g.Eventually(func(g Gomega) {
		_, err := monitoringObject(ns, "PrometheusRule", render.AlertsName)
		g.Expect(err).NotTo(HaveOccurred())
		_, err = token()
		g.Expect(err).NotTo(HaveOccurred())
	}, timeout, tick).Should(Succeed())
	removeCRDs()
	g.Eventually(func(g Gomega) {
		g.Expect(status(g).Reason).To(Equal(linstorv1.MonitoringReasonCRDsMissing))
		g.Expect(apierrors.IsNotFound(env2Get(ns, render.DashboardName, &corev1.ConfigMap{}))).To(BeTrue(), "dashboard kept without monitoring")
		_, err := token()
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "token Secret kept without the Prometheus Operator")
		g.Expect(policy(g).Spec.Ingress).To(HaveLen(1))
	}, timeout, tick).Should(Succeed())
}

// The storage admin applied config/prometheus before the operator made its own
// objects: theirs stay theirs (neither changed, nor taken over, nor deleted when
// monitoring is turned off) and the status names them. An object the API server
// refuses is monitoring's problem, reported there: LINSTOR's cluster is not degraded
// by it. Without API TLS the controller's API port stays closed to the scrapers unless
// monitoring is Enabled outright.
func TestMonitoringLeavesTheUsersObjectsAlone(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	installMonitoringCRDs(t)

	// config/prometheus's ServiceMonitor for the operator, as the user applied it, and
	// a PrometheusRule of their own under the operator's alert group name.
	raw, err := os.ReadFile("../../config/prometheus/monitor.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	users := &unstructured.Unstructured{}
	g.Expect(yaml.Unmarshal([]byte(strings.Split(string(raw), "\n---\n")[0]), &users.Object)).To(Succeed())
	users.SetNamespace(ns)
	g.Expect(users.GetName()).To(Equal(render.OperatorMonitorName))
	g.Expect(env.Client.Create(ctx, users)).To(Succeed())
	rule := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"groups": []any{map[string]any{
		"name": "mine", "rules": []any{map[string]any{"alert": "MyOwnAlert", "expr": "vector(1)"}}}}}}}
	rule.SetGroupVersionKind(render.PrometheusRuleKind)
	rule.SetName(render.AlertsName)
	rule.SetNamespace(ns)
	g.Expect(env.Client.Create(ctx, rule)).To(Succeed())
	usersSpec := func(g Gomega, kind, name string) any {
		u, err := monitoringObject(ns, kind, name)
		g.Expect(err).NotTo(HaveOccurred(), "the user's %s %s is gone", kind, name)
		g.Expect(u.GetOwnerReferences()).To(BeEmpty(), "the user's %s %s was taken over", kind, name)
		g.Expect(u.GetLabels()).NotTo(HaveKey(names.LabelManagedBy), "the user's %s %s was taken over", kind, name)
		return u.Object["spec"]
	}
	smSpec, ruleSpec := users.Object["spec"], rule.Object["spec"]

	// The API server refuses the operator's PodMonitor in this namespace (a policy of
	// the cluster's admins).
	removePolicy, err := envtest.RefuseInNamespace(t, env.Client, "no-podmonitors", ns, "monitoring.coreos.com", "podmonitors",
		"false", "PodMonitors are not allowed in this namespace")
	g.Expect(err).NotTo(HaveOccurred())
	// The policy is in force once a PodMonitor of the test's own is refused.
	g.Eventually(func() error {
		probe := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"selector": map[string]any{}}}}
		probe.SetGroupVersionKind(render.PodMonitorKind)
		probe.SetName("probe")
		probe.SetNamespace(ns)
		err := env.Client.Create(ctx, probe, client.DryRunAll)
		if err == nil {
			return errors.New("PodMonitors still admitted")
		}
		return nil
	}, timeout, tick).Should(Succeed())

	makeNode(t, "mon-u", "10.4.6.9", map[string]string{"suite": "mon-users"})
	cluster := makeCluster(t, ns, linstorv1.LinstorClusterSpec{NodeSelector: map[string]string{"suite": "mon-users"},
		TLS: &linstorv1.TLSSpec{API: &linstorv1.TLSConfig{Mode: linstorv1.TLSDisabled}}})
	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		m := c.Status.Monitoring
		g.Expect(m).NotTo(BeNil())
		g.Expect(m.Reason).To(Equal(linstorv1.MonitoringReasonApplyFailed))
		g.Expect(m.Message).To(And(ContainSubstring("PodMonitor"), ContainSubstring("not allowed in this namespace")))
		// Not Degraded, so an Event says it, once per distinct failure.
		g.Expect(warnings(g, ns, "MonitoringApplyFailed")).To(ContainElement(ContainSubstring("not allowed in this namespace")))
		// The workload is applied and the cluster not degraded for it.
		get(g, ns, names.ControllerName, &corev1.Service{})
		degraded := condition(c.Status.Conditions, linstorv1.ConditionDegraded)
		g.Expect(degraded.Status).To(Equal(metav1.ConditionFalse), "Degraded: %s", degraded.Message)
		g.Expect(c.Status.ObservedGeneration).To(Equal(c.Generation))
	}, timeout, tick).Should(Succeed())

	// The policy lifted (the next retry is within a minute; a spec change comes sooner):
	// the operator's own objects exist, the user's are untouched and named.
	removePolicy()
	g.Eventually(func(g Gomega) {
		g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) { c.Annotations = map[string]string{"touch": time.Now().String()} })).To(Succeed())
		c := getCluster(g, cluster)
		m := c.Status.Monitoring
		g.Expect(m).NotTo(BeNil())
		g.Expect(m.Reason).To(Equal(linstorv1.MonitoringReasonEnabled))
		g.Expect(m.NotOwned).To(ConsistOf("ServiceMonitor "+ns+"/"+render.OperatorMonitorName, "PrometheusRule "+ns+"/"+render.AlertsName))
		g.Expect(m.Message).To(And(ContainSubstring("left alone"), ContainSubstring("PodMonitor "+ns+"/"+render.SatelliteMonitorName),
			ContainSubstring("scraped only if that ServiceMonitor has the endpoint /metrics/linstor")))
		g.Expect(m.Message).NotTo(ContainSubstring("are applied"))
		g.Expect(warnings(g, ns, "MonitoringObjectsNotOwned")).To(ContainElement(ContainSubstring("PrometheusRule " + ns + "/" + render.AlertsName)))
		pm, err := monitoringObject(ns, "PodMonitor", render.SatelliteMonitorName)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(metav1.IsControlledBy(pm, c)).To(BeTrue())
	}, timeout, tick).Should(Succeed())
	g.Expect(usersSpec(g, "ServiceMonitor", render.OperatorMonitorName)).To(Equal(smSpec))
	g.Expect(usersSpec(g, "PrometheusRule", render.AlertsName)).To(Equal(ruleSpec))
	// Monitoring never opens LINSTOR's API port, even Enabled outright and without API TLS.
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) {
		c.Spec.Monitoring = &linstorv1.MonitoringSpec{Mode: linstorv1.MonitoringEnabled}
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		g.Expect(c.Status.ObservedGeneration).To(Equal(c.Generation))
		g.Expect(c.Status.Monitoring.Reason).To(Equal(linstorv1.MonitoringReasonEnabled))
	}, timeout, tick).Should(Succeed())
	g.Expect(get(g, ns, names.NetworkPolicyName, &networkingv1.NetworkPolicy{}).Spec.Ingress).To(HaveLen(1))

	// Disabled: the operator's objects go, the user's stay.
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) {
		c.Spec.Monitoring = &linstorv1.MonitoringSpec{Mode: linstorv1.MonitoringDisabled}
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		_, err := monitoringObject(ns, "PodMonitor", render.SatelliteMonitorName)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the operator's PodMonitor not pruned")
		g.Expect(getCluster(g, cluster).Status.Monitoring.NotOwned).To(BeEmpty())
	}, timeout, tick).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(usersSpec(g, "ServiceMonitor", render.OperatorMonitorName)).To(Equal(smSpec))
		g.Expect(usersSpec(g, "PrometheusRule", render.AlertsName)).To(Equal(ruleSpec))
	}, "2s", tick).Should(Succeed())
}
