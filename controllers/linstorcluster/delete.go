package linstorcluster

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/apply"
)

// reconcileDelete removes the cluster-scoped RBAC; namespaced objects and satellites go
// with the garbage collector. Deleting the LinstorCluster never deletes LINSTOR nodes,
// pools or the database: satellites see their cluster going and retain LINSTOR state.
func (r *Reconciler) reconcileDelete(ctx context.Context, cluster *linstorv1.LinstorCluster) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(cluster, Finalizer) {
		return ctrl.Result{}, nil
	}
	if _, err := r.applier.Prune(ctx, cluster, apply.Applied{}, "", r.clusterScopedSelector(cluster), clusterKinds...); err != nil {
		return ctrl.Result{}, err
	}
	r.Observer.Forget(client.ObjectKeyFromObject(cluster))
	controllerutil.RemoveFinalizer(cluster, Finalizer)
	return ctrl.Result{}, r.Client.Update(ctx, cluster)
}
