package linstorcluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/apply"
	"github.com/linstor-operator/linstor-operator/pkg/metricsproxy"
	"github.com/linstor-operator/linstor-operator/pkg/names"
	"github.com/linstor-operator/linstor-operator/pkg/render"
)

// The Prometheus Operator's objects live in the cluster's namespace only; they are read
// uncached (no watch: the kinds may not exist), applied, and pruned.
// +kubebuilder:rbac:groups=monitoring.coreos.com,namespace=system,resources=servicemonitors;podmonitors;prometheusrules,verbs=get;list;create;patch;delete
// The metrics scraper's token Secret is pruned with them: delete that one only.
// +kubebuilder:rbac:groups="",namespace=system,resources=secrets,verbs=delete,resourceNames=linstor-operator-metrics-scraper-token

// crdMetadata is a CRD as the metadata cache holds it: the operator already watches
// CRDs (their names only), so a Prometheus Operator installed or removed later is seen
// without a restart, and no informer is ever started for a kind that may not exist.
func crdMetadata() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	return m
}

// monitoringCRDChanged: one of the Prometheus Operator's CRDs the operator uses was
// created or deleted.
func monitoringCRDChanged() predicate.Predicate {
	return predicate.And(
		predicate.NewPredicateFuncs(func(o client.Object) bool { return slices.Contains(render.MonitoringCRDs, o.GetName()) }),
		predicate.Funcs{UpdateFunc: func(event.UpdateEvent) bool { return false }},
	)
}

// missingMonitoringCRDs names the CRDs of render.MonitoringKinds that are not installed.
func (r *Reconciler) missingMonitoringCRDs(ctx context.Context) ([]string, error) {
	var missing []string
	for _, name := range render.MonitoringCRDs {
		err := r.Client.Get(ctx, client.ObjectKey{Name: name}, crdMetadata())
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, name)
		case err != nil:
			return nil, fmt.Errorf("reading CRD %s: %w", name, err)
		}
	}
	return missing, nil
}

// monitoringRetry is how soon a monitoring object the API server refused is tried again.
const monitoringRetry = time.Minute

// reconcileMonitoring applies the dashboard ConfigMap while monitoring is on, and the
// ServiceMonitors, PodMonitor and PrometheusRule, with the token the operator's
// ServiceMonitor presents, while their CRDs exist too; it prunes them otherwise.
// Without a CRD there is nothing of its kind to prune (deleting a CRD deletes its
// objects), and listing it would fail.
//
// These objects carry names a user may already have given their own (config/prometheus
// has the same): one that exists and is not this cluster's is left alone and named in
// status.monitoring. A failure here is monitoring's, reported in status.monitoring: it
// neither degrades the cluster nor holds up the rest of the pass. The result is the
// keys of every monitoring object wanted, which the workload's Prune must keep.
func (r *Reconciler) reconcileMonitoring(ctx context.Context, s *scope, mon render.Monitoring, missing []string) (apply.Applied, ctrl.Result) {
	status := monitoringStatus(mon)
	defer func() { r.reportMonitoring(s.cluster, status); s.monitoring = status }()
	keep := apply.Applied{}
	var objs render.Objects
	if mon.Enabled {
		objs = render.Dashboard(s.cluster)
	}
	failed := func(err error) (apply.Applied, ctrl.Result) {
		status.Reason, status.Message = linstorv1.MonitoringReasonApplyFailed, err.Error()
		keep.Keep(objs...)
		return keep, ctrl.Result{RequeueAfter: monitoringRetry}
	}
	if mon.PrometheusOperator {
		more, err := render.PrometheusOperatorObjects(s.cluster)
		if err != nil {
			return failed(err)
		}
		// The operator's own ServiceMonitor presents the scraper account's token: without
		// the account there is no token (the API server deletes a token Secret of a
		// missing account), and a ServiceMonitor naming a missing Secret is refused by
		// the Prometheus Operator. The account's arrival triggers a pass (the
		// ServiceAccount watch).
		err = r.Client.Get(ctx, client.ObjectKey{Namespace: s.cluster.Namespace, Name: render.MetricsScraperAccount}, &corev1.ServiceAccount{})
		switch {
		case err == nil:
			more = append(more, render.MetricsScraper(s.cluster)...)
		case apierrors.IsNotFound(err):
			more = slices.DeleteFunc(more, func(o client.Object) bool { return o.GetName() == render.OperatorMonitorName })
			status.Message += fmt.Sprintf("; neither the operator's nor LINSTOR's metrics are scraped: ServiceAccount %s, which ships with the operator (config/rbac, the OLM bundle), is missing",
				render.MetricsScraperAccount)
		default:
			return failed(fmt.Errorf("reading ServiceAccount %s: %w", render.MetricsScraperAccount, err))
		}
		objs = append(objs, more...)
	}
	ours := client.MatchingLabels{names.LabelCluster: s.cluster.Name, names.LabelManagedBy: names.ManagedBy}
	applied, notOwned, err := r.applier.ApplyOwned(ctx, s.cluster, ours, objs)
	keep.Merge(applied)
	status.NotOwned = notOwned
	if err != nil {
		return failed(err)
	}
	var installed []schema.GroupVersionKind
	for i, gvk := range render.MonitoringKinds {
		if !slices.Contains(missing, render.MonitoringCRDs[i]) {
			installed = append(installed, gvk)
		}
	}
	// Only the monitoring component's Secrets: the cluster's others (TLS) are not these.
	// The dashboard ConfigMap is pruned with the workload's ConfigMaps.
	tokens := client.MatchingLabels{names.LabelCluster: s.cluster.Name, names.LabelManagedBy: names.ManagedBy, names.LabelComponent: render.MonitoringComponent}
	if _, err := r.applier.Prune(ctx, s.cluster, applied, s.cluster.Namespace, tokens, corev1.SchemeGroupVersion.WithKind("Secret")); err != nil {
		return failed(err)
	}
	if n, err := r.applier.Prune(ctx, s.cluster, applied, s.cluster.Namespace, ours, installed...); err != nil {
		return failed(err)
	} else if n > 0 {
		r.Recorder.Eventf(s.cluster, corev1.EventTypeNormal, "Pruned", "Removed %d monitoring objects no longer needed", n)
	}
	if len(notOwned) > 0 {
		// Say what the operator applied, not what it meant to.
		var made []string
		for _, o := range objs {
			name := fmt.Sprintf("%s %s/%s", o.GetObjectKind().GroupVersionKind().Kind, o.GetNamespace(), o.GetName())
			if !slices.Contains(notOwned, name) {
				made = append(made, name)
			}
		}
		status.Message = fmt.Sprintf("applied: %s; left alone, not this LinstorCluster's: %s", strings.Join(made, ", "), strings.Join(notOwned, ", "))
		if slices.Contains(notOwned, fmt.Sprintf("%s %s/%s", render.ServiceMonitorKind.Kind, s.cluster.Namespace, render.OperatorMonitorName)) {
			status.Message += fmt.Sprintf("; LINSTOR's metrics are scraped only if that ServiceMonitor has the endpoint %s (config/prometheus/monitor.yaml of this release has it)", metricsproxy.Path)
		}
	}
	return keep, ctrl.Result{}
}

// reportMonitoring records an Event when monitoring starts failing (or fails
// differently) and when objects of someone else's first stand in its way: once, not
// every pass (the status says it all along). An ApplyFailed no longer degrades the
// cluster, so the Event is what an event-based alert or a person sees.
func (r *Reconciler) reportMonitoring(c *linstorv1.LinstorCluster, now *linstorv1.MonitoringStatus) {
	before := c.Status.Monitoring
	if before == nil {
		before = &linstorv1.MonitoringStatus{}
	}
	if now.Reason == linstorv1.MonitoringReasonApplyFailed && (before.Reason != now.Reason || before.Message != now.Message) {
		r.Recorder.Event(c, corev1.EventTypeWarning, "MonitoringApplyFailed", now.Message)
	}
	var added []string
	for _, o := range now.NotOwned {
		if !slices.Contains(before.NotOwned, o) {
			added = append(added, o)
		}
	}
	if len(added) > 0 {
		r.Recorder.Eventf(c, corev1.EventTypeWarning, "MonitoringObjectsNotOwned",
			"Left alone, not this LinstorCluster's: %s (delete them to have the operator's; status.monitoring.notOwned)", strings.Join(added, ", "))
	}
}

// monitoringStatus is status.monitoring for mon.
func monitoringStatus(mon render.Monitoring) *linstorv1.MonitoringStatus {
	return &linstorv1.MonitoringStatus{Enabled: mon.Enabled, Reason: mon.Reason, Message: mon.Message}
}
