package controllers

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

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
	kinds := map[string]string{"ServiceMonitor": render.ControllerMonitorName, "PodMonitor": render.SatelliteMonitorName, "PrometheusRule": render.AlertsName}

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
		for kind, name := range kinds {
			u, err := monitoringObject(ns, kind, name)
			g.Expect(err).NotTo(HaveOccurred(), "%s %s", kind, name)
			g.Expect(metav1.IsControlledBy(u, c)).To(BeTrue(), "%s is not the cluster's", kind)
		}
		cm := get(g, ns, render.DashboardName, &corev1.ConfigMap{})
		g.Expect(cm.Labels).To(HaveKeyWithValue("grafana_dashboard", "1"))
		g.Expect(policy(g).Spec.Ingress).To(HaveLen(2))
		g.Expect(policy(g).Spec.Ingress[1].From[0].NamespaceSelector.MatchExpressions[0].Values).To(ContainElement("openshift-user-workload-monitoring"))
		g.Expect(c.Status.Monitoring).To(Equal(&linstorv1.MonitoringStatus{Enabled: true, Reason: linstorv1.MonitoringReasonEnabled,
			Message: "ServiceMonitor, PodMonitor, PrometheusRule and the dashboard ConfigMap are applied"}))
	}, timeout, tick).Should(Succeed())

	// Steady state: passes run (an annotation change) and nothing is written.
	versions := func(g Gomega) map[string]string {
		out := map[string]string{}
		for kind, name := range kinds {
			u, err := monitoringObject(ns, kind, name)
			g.Expect(err).NotTo(HaveOccurred())
			out[kind] = u.GetResourceVersion()
		}
		out["ConfigMap"] = get(g, ns, render.DashboardName, &corev1.ConfigMap{}).ResourceVersion
		out["NetworkPolicy"] = policy(g).ResourceVersion
		return out
	}
	before, writes := versions(g), monitoringWrites(g)
	g.Expect(writes).To(BeNumerically(">=", 3), "the API server counted no monitoring writes at all")
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) { c.Annotations = map[string]string{"touch": "1"} })).To(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(monitoringWrites(g)).To(Equal(writes), "monitoring objects written in a steady state")
		g.Expect(versions(g)).To(Equal(before))
	}, "3s", tick).Should(Succeed())

	// A hand edit of a field the operator owns is undone by the next pass.
	sm, err := monitoringObject(ns, "ServiceMonitor", render.ControllerMonitorName)
	g.Expect(err).NotTo(HaveOccurred())
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	eps[0].(map[string]any)["path"] = "/elsewhere"
	g.Expect(unstructured.SetNestedSlice(sm.Object, eps, "spec", "endpoints")).To(Succeed())
	g.Expect(env.Client.Update(context.Background(), sm)).To(Succeed())
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) { c.Annotations = map[string]string{"touch": "2"} })).To(Succeed())
	g.Eventually(func(g Gomega) {
		sm, err := monitoringObject(ns, "ServiceMonitor", render.ControllerMonitorName)
		g.Expect(err).NotTo(HaveOccurred())
		eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		g.Expect(eps[0].(map[string]any)["path"]).To(Equal("/metrics"))
	}, timeout, tick).Should(Succeed())

	// Disabled: everything is pruned and the NetworkPolicy closes again.
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) {
		c.Spec.Monitoring = &linstorv1.MonitoringSpec{Mode: linstorv1.MonitoringDisabled}
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		for kind, name := range kinds {
			_, err := monitoringObject(ns, kind, name)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%s %s not pruned", kind, name)
		}
		g.Expect(apierrors.IsNotFound(env2Get(ns, render.DashboardName, &corev1.ConfigMap{}))).To(BeTrue(), "dashboard not pruned")
		g.Expect(policy(g).Spec.Ingress).To(HaveLen(1))
		g.Expect(status(g).Reason).To(Equal(linstorv1.MonitoringReasonDisabled))
	}, timeout, tick).Should(Succeed())

	// Back to the default, then the Prometheus Operator leaves: monitoring stops again.
	g.Expect(updateCluster(cluster, func(c *linstorv1.LinstorCluster) { c.Spec.Monitoring = nil })).To(Succeed())
	g.Eventually(func(g Gomega) {
		_, err := monitoringObject(ns, "PrometheusRule", render.AlertsName)
		g.Expect(err).NotTo(HaveOccurred())
	}, timeout, tick).Should(Succeed())
	removeCRDs()
	g.Eventually(func(g Gomega) {
		g.Expect(status(g).Reason).To(Equal(linstorv1.MonitoringReasonCRDsMissing))
		g.Expect(apierrors.IsNotFound(env2Get(ns, render.DashboardName, &corev1.ConfigMap{}))).To(BeTrue(), "dashboard kept without monitoring")
		g.Expect(policy(g).Spec.Ingress).To(HaveLen(1))
	}, timeout, tick).Should(Succeed())
}
