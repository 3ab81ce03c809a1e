package linstornodeconnection

import (
	"context"
	"errors"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/names"
)

// reconcileDelete removes the object's properties from LINSTOR, then the finalizer. A
// misplaced object was never applied from here, so it just goes.
func (r *Reconciler) reconcileDelete(ctx context.Context, lnc *linstorv1.LinstorNodeConnection) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(lnc, names.FinalizerNodeConnectionCleanup) {
		return ctrl.Result{}, nil
	}
	why, err := r.misplaced(ctx, lnc)
	switch {
	case err != nil:
		return ctrl.Result{}, err
	case why != "":
		controllerutil.RemoveFinalizer(lnc, names.FinalizerNodeConnectionCleanup)
		return ctrl.Result{}, client.IgnoreNotFound(r.Client.Update(ctx, lnc))
	}
	var fenced string
	lc, snap, fence, err := r.client(ctx, lnc.Namespace)
	if err == nil {
		_, fenced, err = r.sync(ctx, lc, snap, lnc, true, fence)
	}
	// Without a LinstorCluster there is no LINSTOR to clean up (the namespace is going
	// away): let the object go rather than block it forever. Properties to remove wait
	// for the fence: the object stays until they are removed.
	if (err != nil && !errors.Is(err, errNoCluster)) || fenced != "" {
		return ctrl.Result{RequeueAfter: shortPoll}, nil
	}
	controllerutil.RemoveFinalizer(lnc, names.FinalizerNodeConnectionCleanup)
	return ctrl.Result{}, r.Client.Update(ctx, lnc)
}
