package linstorcluster

import (
	"context"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	corev1 "k8s.io/api/core/v1"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/apply"
	"github.com/linstor-operator/linstor-operator/pkg/lifecycle"
)

// reconcileDelete removes the cluster-scoped RBAC; namespaced objects and satellites go
// with the garbage collector. Deleting the LinstorCluster never deletes LINSTOR nodes,
// pools or the database: satellites see their cluster going and retain LINSTOR state.
func (r *Reconciler) reconcileDelete(ctx context.Context, cluster *linstorv1.LinstorCluster) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(cluster, names.FinalizerClusterCleanup) {
		return ctrl.Result{}, nil
	}
	if backup, busy := r.restores.restoring(client.ObjectKeyFromObject(cluster)); busy {
		// The job writes LINSTOR's database until it ends (it is bounded): the object,
		// and with it the guard in its status, stays until then. The marker keeps the
		// guard for a recreated object afterwards.
		r.Recorder.Eventf(cluster, corev1.EventTypeNormal, "DeletionWaits", "Deletion waits for the restore of %s to end; LINSTOR stays stopped", backup)
		return ctrl.Result{RequeueAfter: lifecycle.Poll}, nil
	}
	r.restores.forgetEnded(client.ObjectKeyFromObject(cluster))
	// The backups the lifecycle held are released, except the one a recreated
	// LinstorCluster must still restore (the marker names it).
	var keep []string
	if m, err := r.readMarker(ctx, cluster); err != nil {
		return ctrl.Result{}, err
	} else if m != nil {
		keep = append(keep, m.Backup)
	}
	if err := r.keepFinalizers(ctx, cluster, keep); err != nil {
		return ctrl.Result{}, err
	}
	if _, err := r.applier.Prune(ctx, cluster, apply.Applied{}, "", r.clusterScopedSelector(cluster), clusterKinds...); err != nil {
		return ctrl.Result{}, err
	}
	r.Observer.Forget(client.ObjectKeyFromObject(cluster))
	r.reports.Delete(cluster.UID)
	forgetMetrics(cluster)
	controllerutil.RemoveFinalizer(cluster, names.FinalizerClusterCleanup)
	return ctrl.Result{}, r.Client.Update(ctx, cluster)
}
