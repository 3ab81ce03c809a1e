package linstorcluster

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/names"
	"github.com/linstor-operator/linstor-operator/pkg/render"
)

// The Prometheus Operator's objects live in the cluster's namespace only; they are read
// uncached (no watch: the kinds may not exist), applied, and pruned.
// +kubebuilder:rbac:groups=monitoring.coreos.com,namespace=system,resources=servicemonitors;podmonitors;prometheusrules,verbs=get;list;create;patch;delete

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

// reconcilePrometheusOperatorObjects applies the ServiceMonitor, PodMonitor and
// PrometheusRule while monitoring is on and their CRDs exist, and prunes them
// otherwise. Without a CRD there is nothing of its kind to prune (deleting a CRD
// deletes its objects), and listing it would fail.
func (r *Reconciler) reconcilePrometheusOperatorObjects(ctx context.Context, s *scope, mon render.Monitoring, missing []string) error {
	var objs render.Objects
	if mon.PrometheusOperator {
		var err error
		if objs, err = render.PrometheusOperatorObjects(s.cluster); err != nil {
			return err
		}
	}
	applied, err := r.applier.Apply(ctx, s.cluster, objs)
	if err != nil {
		return err
	}
	var installed []schema.GroupVersionKind
	for i, gvk := range render.MonitoringKinds {
		if !slices.Contains(missing, render.MonitoringCRDs[i]) {
			installed = append(installed, gvk)
		}
	}
	selector := client.MatchingLabels{names.LabelCluster: s.cluster.Name, names.LabelManagedBy: names.ManagedBy}
	if n, err := r.applier.Prune(ctx, s.cluster, applied, s.cluster.Namespace, selector, installed...); err != nil {
		return err
	} else if n > 0 {
		r.Recorder.Eventf(s.cluster, "Normal", "Pruned", "Removed %d monitoring objects no longer needed", n)
	}
	return nil
}

// monitoringStatus is status.monitoring for mon.
func monitoringStatus(mon render.Monitoring) *linstorv1.MonitoringStatus {
	return &linstorv1.MonitoringStatus{Enabled: mon.Enabled, Reason: mon.Reason, Message: mon.Message}
}
