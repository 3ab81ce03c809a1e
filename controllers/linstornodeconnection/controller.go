package linstornodeconnection

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/controllers/reconciler"
	"github.com/linstor-operator/linstor-operator/pkg/linstor"
	"github.com/linstor-operator/linstor-operator/pkg/linstor/observer"
)

const (
	shortPoll = 5 * time.Second
	// maxWritesPerPass bounds the LINSTOR requests of one pass: a selector matching
	// many pairs is configured in batches, and the status says how far it got.
	maxWritesPerPass = 100
	// MaxPairs is the most pairs one object may select (1,000 nodes with an empty
	// selector are 499,500 pairs, as many LINSTOR requests). Options for every
	// connection belong in the controller's properties.
	MaxPairs = 10000
)

var errNoCluster = errors.New("no LinstorCluster")

// Reconciler reconciles LinstorNodeConnections.
type Reconciler struct {
	Client   client.Client
	Recorder record.EventRecorder
	// Linstor opens connections to a cluster's LINSTOR, for writes.
	Linstor *linstor.Connector
	// Observer lists LINSTOR's nodes once per cycle for every reconciler.
	Observer *observer.Observer
	// Backoff spaces retries while LINSTOR fails.
	Backoff reconciler.Backoff
	// Namespace is the operator's namespace: a connection elsewhere is ignored, and says so.
	Namespace string
}

// +kubebuilder:rbac:groups=linstor.io,resources=linstornodeconnections,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=linstor.io,resources=linstornodeconnections/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=linstor.io,resources=linstornodeconnections/finalizers,verbs=update

// Reconcile applies the object's properties to the selected pairs and removes them from
// pairs no longer selected. Each object tracks its own keys, so two objects on one pair
// never remove each other's properties.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	lnc := &linstorv1.LinstorNodeConnection{}
	if err := r.Client.Get(ctx, req.NamespacedName, lnc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !lnc.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, lnc)
	}
	s := &scope{lnc: lnc}
	// No poll: each outcome says when to look again (reconcilePairs).
	return reconciler.Pass(ctx, s, r.saveStatus, 0, func() bool { return s.stop },
		r.reconcilePlacement,
		r.reconcileFinalizer,
		r.reconcilePairs,
	)
}

// SetupWithManager registers the controller; node label changes and satellites coming
// and going change the selected pairs.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	all := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []ctrl.Request {
		var list linstorv1.LinstorNodeConnectionList
		if err := r.Client.List(ctx, &list); err != nil {
			return nil
		}
		reqs := make([]ctrl.Request, 0, len(list.Items))
		for _, l := range list.Items {
			reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&l)})
		}
		return reqs
	})
	return ctrl.NewControllerManagedBy(mgr).
		For(&linstorv1.LinstorNodeConnection{}, builder.WithPredicates(reconciler.NotStatusOnly())).
		Watches(&corev1.Node{}, all, builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Watches(&linstorv1.LinstorSatellite{}, all, builder.WithPredicates(predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.(*linstorv1.LinstorSatellite).Status.ConnectionStatus != e.ObjectNew.(*linstorv1.LinstorSatellite).Status.ConnectionStatus
		}})).
		Complete(r)
}
