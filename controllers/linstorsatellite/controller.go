package linstorsatellite

import (
	"context"
	"sync"
	"time"

	lapi "github.com/LINBIT/golinstor/client"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/controllers/phases"
	"github.com/linstor-operator/linstor-operator/pkg/apply"
	"github.com/linstor-operator/linstor-operator/pkg/images"
	"github.com/linstor-operator/linstor-operator/pkg/linstor"
	"github.com/linstor-operator/linstor-operator/pkg/netif"
)

// Finalizer runs the deletion policy before the LinstorSatellite goes.
const Finalizer = "linstor.io/satellite-deletion-policy"

const (
	// pollInterval: LINSTOR node state cannot be watched, so it is re-read this often.
	pollInterval = 30 * time.Second
	// shortPoll is used while waiting for LINSTOR (unreachable, evacuating, offline).
	shortPoll = 5 * time.Second
)

// Reconciler reconciles LinstorSatellites.
type Reconciler struct {
	Client   client.Client
	Images   images.Set
	Recorder record.EventRecorder
	// Linstor opens connections to a cluster's LINSTOR.
	Linstor *linstor.Connector
	// Poll is how often LINSTOR state is re-read; zero means pollInterval.
	Poll time.Duration
	// Grace is how long LINSTOR may stay unreachable before conditions say so.
	Grace   *phases.Grace
	applier *apply.Applier

	evacMu         sync.Mutex
	lastEvacuation map[types.UID]time.Time // when LINSTOR was last asked to evacuate a satellite's node
}

// +kubebuilder:rbac:groups=linstor.io,resources=linstorsatellites,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=linstor.io,resources=linstorsatellites/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=linstor.io,resources=linstorsatellites/finalizers,verbs=update
// +kubebuilder:rbac:groups=linstor.io,resources=linstorclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=daemonsets,verbs=get;list;watch;create;update;patch;delete

// Reconcile reads top-down: get, delete or finalizer, scope, phases, status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	sat := &linstorv1.LinstorSatellite{}
	if err := r.Client.Get(ctx, req.NamespacedName, sat); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s := &scope{sat: sat}
	if err := r.loadCluster(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if !sat.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, s)
	}
	if controllerutil.AddFinalizer(sat, Finalizer) {
		if err := r.Client.Update(ctx, sat); err != nil {
			return ctrl.Result{}, err
		}
	}
	defer func() {
		if err := r.updateStatus(ctx, s, reterr == nil); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			reterr = kerrors.NewAggregate([]error{reterr, err})
		}
	}()
	if s.cluster == nil {
		return ctrl.Result{RequeueAfter: shortPoll}, nil
	}

	return phases.Run(ctx, s, r.poll(), func() bool { return s.stop },
		r.reconcileWorkload,
		r.reconcileNode,
		r.reconcileNodeProperties,
		r.reconcileStoragePools,
		r.observeLinstor,
	)
}

// loadCluster finds the owning LinstorCluster and a LINSTOR client for it.
func (r *Reconciler) loadCluster(ctx context.Context, s *scope) error {
	cluster := &linstorv1.LinstorCluster{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.sat.Namespace, Name: s.sat.Spec.ClusterRef.Name}, cluster)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	}
	s.cluster = cluster
	conn, err := r.Linstor.Connect(ctx, cluster)
	if err != nil {
		s.linstorErr = err
		return nil
	}
	s.lc, s.conn = conn.Client, conn
	return nil
}

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.applier = &apply.Applier{Client: r.Client, Scheme: mgr.GetScheme()}
	return ctrl.NewControllerManagedBy(mgr).
		For(&linstorv1.LinstorSatellite{}).
		Owns(&appsv1.DaemonSet{}).
		// A LinstorSatellite is named after its node: address and NIC changes reach it at once.
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.satellitesOfNode), builder.WithPredicates(predicate.Funcs{
			CreateFunc: func(event.CreateEvent) bool { return false },
			DeleteFunc: func(event.DeleteEvent) bool { return true },
			UpdateFunc: func(e event.UpdateEvent) bool {
				return nodeAddressesChanged(e.ObjectOld.(*corev1.Node), e.ObjectNew.(*corev1.Node))
			},
		})).
		Complete(r)
}

// satellitesOfNode finds the LinstorSatellite named after a node (one per cluster, and
// there is one cluster; the list is from the cache).
func (r *Reconciler) satellitesOfNode(ctx context.Context, o client.Object) []reconcile.Request {
	var list linstorv1.LinstorSatelliteList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, sat := range list.Items {
		if sat.Name == o.GetName() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&sat)})
		}
	}
	return out
}

func nodeAddressesChanged(old, new *corev1.Node) bool {
	return old.Annotations[netif.HostInterfacesAnnotation] != new.Annotations[netif.HostInterfacesAnnotation] ||
		!equality.Semantic.DeepEqual(old.Status.Addresses, new.Status.Addresses)
}

// scope carries one pass's observations.
type scope struct {
	sat     *linstorv1.LinstorSatellite
	cluster *linstorv1.LinstorCluster
	lc      *lapi.Client
	conn    *linstor.Connection
	stop    bool

	node         *corev1.Node
	transient    bool
	workloadErr  error
	linstorErr   error
	nodeErr      error
	propsErr     error
	netifErr     error
	netifInvalid bool // netifErr is a configuration the node cannot satisfy
	poolErr      error
	poolWaiting  string
	poolPending  string // pools not created yet, and why (not a fault)
	deleteWait   string
	deleteReason string // why deletion waits, when it is not a plain evacuation

	connection string
	version    string
	pools      []lapi.StoragePool
}

func (r *Reconciler) poll() time.Duration { return phases.Poll(r.Poll, pollInterval) }
