package linstorsatellite

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	lapi "github.com/LINBIT/golinstor/client"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/controllers/reconciler"
	"github.com/linstor-operator/linstor-operator/pkg/apply"
	"github.com/linstor-operator/linstor-operator/pkg/images"
	"github.com/linstor-operator/linstor-operator/pkg/lifecycle"
	"github.com/linstor-operator/linstor-operator/pkg/linstor"
	"github.com/linstor-operator/linstor-operator/pkg/linstor/observer"
	"github.com/linstor-operator/linstor-operator/pkg/satellite"
	"github.com/linstor-operator/linstor-operator/pkg/storagepool"
)

const (
	// pollInterval paces what only time changes (a stuck evacuation asked again).
	// LINSTOR's state reaches the reconciler through the observer, not by polling.
	pollInterval = 30 * time.Second
	// shortPoll is used while waiting for LINSTOR (unreachable, evacuating, offline).
	shortPoll = 5 * time.Second
	// settling is how long after a satellite's pod runs LINSTOR is expected to report it
	// ONLINE; meanwhile the observer is asked to look sooner than its interval.
	settling = 5 * time.Minute
	// MaxConcurrentReconciles: LINSTOR writes (bounded by the client timeout) of one
	// satellite never hold up the others, nor their finalizers.
	MaxConcurrentReconciles = 8
)

// Reconciler reconciles LinstorSatellites.
type Reconciler struct {
	Client client.Client
	// APIReader reads around the cache where a stale read could claim a disk twice.
	APIReader client.Reader
	Images    images.Set
	Recorder  record.EventRecorder
	// Linstor opens connections to a cluster's LINSTOR, for writes.
	Linstor *linstor.Connector
	// Observer reads LINSTOR's state once per cycle for every satellite.
	Observer *observer.Observer
	// Events carries the observer's changes to this controller.
	Events <-chan event.GenericEvent
	// Poll paces retries that only time resolves; zero means pollInterval.
	Poll time.Duration
	// Grace is how long LINSTOR may stay unreachable before conditions say so.
	Grace time.Duration
	// Backoff spaces the retries of failed LINSTOR writes per satellite.
	Backoff reconciler.Backoff
	// DiskRelist paces the listings of unused disks for storage discovery; zero means
	// discovery.RelistEvery.
	DiskRelist time.Duration
	// Namespace is the operator's: satellites elsewhere are left alone; empty: any.
	Namespace string
	applier   *apply.Applier

	evacMu         sync.Mutex
	lastEvacuation map[types.UID]time.Time // when LINSTOR was last asked to evacuate a satellite's node

	// RestoreSettle is how long an evicted node must be back in Kubernetes before it is
	// restored; zero means satellite.RestoreSettle.
	RestoreSettle time.Duration
	evictMu       sync.Mutex
	lastEviction  map[types.UID]time.Time // cluster UID -> when spec.nodeFailure last evicted one of its nodes
	backSince     map[types.UID]time.Time // an evicted node seen back in Kubernetes since
	lastRestore   map[types.UID]time.Time // restored, and not seen ONLINE since
}

// +kubebuilder:rbac:groups=linstor.io,resources=linstorsatellites,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=linstor.io,resources=linstorsatellites/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=linstor.io,resources=linstorsatellites/finalizers,verbs=update
// +kubebuilder:rbac:groups=linstor.io,resources=linstorclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,namespace=system,resources=daemonsets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",namespace=system,resources=pods,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=policy,namespace=system,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// The Driver Toolkit ImageStream (openshift/driver-toolkit), read by name for RHCOS nodes.
// +kubebuilder:rbac:groups=image.openshift.io,resources=imagestreams,resourceNames=driver-toolkit,verbs=get

// Reconcile reads top-down: get, delete or finalizer, scope, phases, status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	sat := &linstorv1.LinstorSatellite{}
	if err := r.Client.Get(ctx, req.NamespacedName, sat); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.Namespace != "" && sat.Namespace != r.Namespace {
		// Its LinstorCluster is outside the operator's namespace and reports so
		// (WrongNamespace); the operator may not run pods there and changes nothing.
		return ctrl.Result{}, nil
	}
	s := &scope{sat: sat, writer: &linstorWriter{observer: r.Observer, node: sat.Name}}
	if err := r.loadCluster(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if !sat.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, s)
	}
	if controllerutil.AddFinalizer(sat, names.FinalizerSatelliteDeletion) {
		if err := r.Client.Update(ctx, sat); err != nil {
			return ctrl.Result{}, err
		}
	}
	res, err := reconciler.Pass(ctx, s, r.saveStatus, reconciler.Resync, func() bool { return s.stop },
		requireCluster,
		r.reconcileWorkload,
		r.reconcileDrain,
		r.reconcileNode,
		r.reconcileNodeProperties,
		r.reconcileStoragePools,
		r.observeLinstor,
	)
	if err != nil {
		return ctrl.Result{}, err
	}
	return s.retryFenced(res), nil
}

// requireCluster ends the pass of a satellite whose LinstorCluster is gone (the status
// says so) and looks again soon.
func requireCluster(_ context.Context, s *scope) (ctrl.Result, error) {
	if s.cluster == nil {
		s.stop = true
		return ctrl.Result{RequeueAfter: shortPoll}, nil
	}
	return ctrl.Result{}, nil
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
	s.key = client.ObjectKeyFromObject(cluster)
	s.writer.key = s.key
	// From the cached cluster: the fence costs no request.
	s.writer.fence = lifecycle.LinstorWritesFenced(&cluster.Status)
	r.Observer.Observe(cluster)
	conn, err := r.Linstor.Connect(ctx, cluster)
	if err != nil {
		s.linstorErr = err
		return nil
	}
	s.writer.conn = conn
	return nil
}

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.applier = &apply.Applier{Client: r.Client, Scheme: mgr.GetScheme()}
	b := ctrl.NewControllerManagedBy(mgr).
		// Its own status writes do not wake it: the spec, metadata and LINSTOR do.
		For(&linstorv1.LinstorSatellite{}, builder.WithPredicates(reconciler.NotStatusOnly())).
		// The pod's readiness says when LINSTOR should see the satellite.
		Owns(&appsv1.DaemonSet{}, builder.WithPredicates(predicate.Or(reconciler.NotStatusOnly(), daemonSetReadinessChanged()))).
		// The drain guard: an evicted or finished one is replaced (off a cordoned node).
		Owns(&corev1.Pod{}).
		Owns(&policyv1.PodDisruptionBudget{}, builder.WithPredicates(reconciler.NotStatusOnly())).
		// A LinstorSatellite is named after its node: address and NIC changes reach it at once.
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.satellitesOfNode), builder.WithPredicates(predicate.Funcs{
			CreateFunc: func(event.CreateEvent) bool { return false },
			DeleteFunc: func(event.DeleteEvent) bool { return true },
			UpdateFunc: func(e event.UpdateEvent) bool {
				old, new := e.ObjectOld.(*corev1.Node), e.ObjectNew.(*corev1.Node)
				// Readiness decides when an evicted node is restored.
				// An uncordoned node gets its drain guard back.
				// A NoExecute taint may be the node being lost (ExpectOffline).
				// An OpenShift upgrade moves the node to another RHCOS version and kernel,
				// which need another Driver Toolkit image.
				return nodeAddressesChanged(old, new) || nodeReadyChanged(old, new) || old.Spec.Unschedulable != new.Spec.Unschedulable ||
					old.Status.NodeInfo.OSImage != new.Status.NodeInfo.OSImage || old.Status.NodeInfo.KernelVersion != new.Status.NodeInfo.KernelVersion ||
					!slices.EqualFunc(old.Spec.Taints, new.Spec.Taints, func(a, b corev1.Taint) bool { return a.MatchTaint(&b) && a.Value == b.Value })
			},
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: MaxConcurrentReconciles, RateLimiter: reconciler.RateLimiter()})
	if r.Events != nil {
		b = b.WatchesRawSource(source.Channel(r.Events, &handler.EnqueueRequestForObject{}))
	}
	return b.Complete(r)
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

// daemonSetReadinessChanged: the satellite pod became ready or stopped being ready.
func daemonSetReadinessChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		a, b := e.ObjectOld.(*appsv1.DaemonSet).Status, e.ObjectNew.(*appsv1.DaemonSet).Status
		return a.NumberReady != b.NumberReady || a.NumberAvailable != b.NumberAvailable || a.DesiredNumberScheduled != b.DesiredNumberScheduled
	}}
}

func nodeAddressesChanged(old, new *corev1.Node) bool {
	return old.Annotations[names.AnnotationHostInterfaces] != new.Annotations[names.AnnotationHostInterfaces] ||
		!equality.Semantic.DeepEqual(old.Status.Addresses, new.Status.Addresses)
}

// nodeReadyChanged: the node's Ready condition changed its status.
func nodeReadyChanged(old, new *corev1.Node) bool {
	ready := func(n *corev1.Node) corev1.ConditionStatus {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status
			}
		}
		return ""
	}
	return ready(old) != ready(new)
}

// scope carries one pass's observations.
type scope struct {
	sat     *linstorv1.LinstorSatellite
	cluster *linstorv1.LinstorCluster
	key     types.NamespacedName // the cluster's
	snap    *observer.Snapshot   // LINSTOR's state as last observed
	fresh   bool                 // snap postdates this satellite's last write to LINSTOR
	lnode   *lapi.Node           // the LINSTOR node, when registered and fresh
	// writer is the pass's one way to write to LINSTOR (and to read it).
	writer *linstorWriter
	stop   bool

	node        *corev1.Node
	transient   bool
	workloadErr error
	// loaderErr: the node's DRBD loader cannot be rendered (an RHCOS version without a
	// Driver Toolkit image); the satellite is not applied.
	loaderErr error
	// renderInvalid: workloadErr is the spec's fault (a refused pod-template patch).
	renderInvalid bool
	// workloadPending says why the satellite's pod is not applied yet (not a fault).
	workloadPending string
	linstorErr      error
	nodeErr         error
	propsErr        error
	netifErr        error
	netifInvalid    bool // netifErr is a configuration the node cannot satisfy
	// pools is what the pass found and did about the storage pools (pkg/storagepool).
	pools        storagepool.Outcome
	deleteWait   string
	deleteReason string // why deletion waits, when it is not a plain evacuation

	connection string
	version    string

	// podSelector selects the satellite's pods (its DaemonSet's selector).
	podSelector map[string]string
	// evictWait says why a failed node is not evicted (spec.nodeFailure);
	// requeueNodeFailure when that may change by time alone.
	evictWait          string
	requeueNodeFailure time.Duration
	// evictedWait says why the LINSTOR node stays evicted.
	evictedWait string
	// satelliteSpec is the satellite's pod spec as applied (the drain guard follows it).
	satelliteSpec *corev1.PodSpec
	// drain is whether the node may be drained (status.drain); nil: not decided.
	drain *satellite.DrainDecision
}

func (r *Reconciler) poll() time.Duration { return reconciler.Poll(r.Poll, pollInterval) }

// fenceRetry paces the passes of a satellite whose LINSTOR writes wait for the fence:
// no watch of the LinstorCluster wakes it when the upgrade or restore moves on.
const fenceRetry = shortPoll

// retryFenced looks again soon while writes wait for the fence.
func (s *scope) retryFenced(res ctrl.Result) ctrl.Result {
	if len(s.writer.fenced) > 0 && (res.RequeueAfter == 0 || res.RequeueAfter > fenceRetry) {
		res.RequeueAfter = fenceRetry
	}
	// A failed node's eviction falls due by time alone.
	if d := s.requeueNodeFailure; d > 0 && (res.RequeueAfter == 0 || res.RequeueAfter > d) {
		res.RequeueAfter = d
	}
	return res
}
