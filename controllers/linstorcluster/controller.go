package linstorcluster

import (
	"context"
	"sync"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/controllers/reconciler"
	"github.com/linstor-operator/linstor-operator/pkg/apply"
	"github.com/linstor-operator/linstor-operator/pkg/images"
	"github.com/linstor-operator/linstor-operator/pkg/linstor"
	"github.com/linstor-operator/linstor-operator/pkg/linstor/observer"
	"github.com/linstor-operator/linstor-operator/pkg/upgrade"
)

// Reconciler reconciles LinstorClusters.
type Reconciler struct {
	Client   client.Client
	Images   images.Set
	Recorder record.EventRecorder
	// Linstor opens connections to a cluster's LINSTOR.
	Linstor *linstor.Connector
	// ProxyEnv is the cluster-wide proxy configuration passed on to the LINSTOR controller.
	ProxyEnv []corev1.EnvVar
	// Grace is how long LINSTOR may stay unreachable before conditions say so.
	Grace time.Duration
	// Direct reads the API server without the cache (pods, LINSTOR's database).
	Direct client.Client
	// Namespace is the operator's: only a LinstorCluster there is managed; empty: any.
	Namespace string
	// UpgradePhaseTimeout is the phase timeout when spec.upgrade.phaseTimeout is unset
	// (zero: lifecycle.DefaultPhaseTimeout).
	UpgradePhaseTimeout time.Duration
	// Release overrides the versions this release runs (tests); nil means upgrade.Current.
	Release *upgrade.Release
	// Observer reads LINSTOR's state once per cycle for every reconciler.
	Observer *observer.Observer
	// Events carries the observer's changes of the controller's state.
	Events <-chan event.GenericEvent
	// Backoff spaces the retries of failed LINSTOR writes.
	Backoff reconciler.Backoff
	applier *apply.Applier

	restores restoreJobs // database restores running in the background
	warned   sync.Map    // cluster UID -> the unencrypted warning last sent
	reports  sync.Map    // cluster UID -> the last replica health report its PVC Events compared with
	// cluster UID -> the refused lost-node acknowledgements last reported
	lostNodesSaid sync.Map
}

// Cluster-wide: the operator's own API, nodes, the CSI driver object, and LINSTOR's
// database (docs/security.md lists every permission and why).
// +kubebuilder:rbac:groups=linstor.io,resources=linstorclusters,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=linstor.io,resources=linstorclusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=linstor.io,resources=linstorclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups=linstor.io,resources=linstorsatellites,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=linstor.io,resources=linstorsatelliteconfigurations,verbs=get;list;watch
// +kubebuilder:rbac:groups=linstor.io,resources=linstorsatelliteconfigurations/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=linstor.io,resources=linstorbackups,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=storage.k8s.io,resources=csidrivers,verbs=list;watch;create
// +kubebuilder:rbac:groups=storage.k8s.io,resources=csidrivers,verbs=get;update;patch;delete,resourceNames=linstor.csi.linbit.com
// Reading CRDs tells whether LINSTOR's k8s database exists; a restore changes only
// LINSTOR's own tables (pkg/dbbackup.Tables; RBAC cannot select CRDs by group).
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions;customresourcedefinitions/status,verbs=update,resourceNames=ebsremotes.internal.linstor.linbit.com;files.internal.linstor.linbit.com;keyvaluestore.internal.linstor.linbit.com;layerbcachevolumes.internal.linstor.linbit.com;layercachevolumes.internal.linstor.linbit.com;layerdrbdresourcedefinitions.internal.linstor.linbit.com;layerdrbdresources.internal.linstor.linbit.com;layerdrbdvolumedefinitions.internal.linstor.linbit.com;layerdrbdvolumes.internal.linstor.linbit.com;layerluksvolumes.internal.linstor.linbit.com;layeropenflexresourcedefinitions.internal.linstor.linbit.com;layeropenflexvolumes.internal.linstor.linbit.com;layerresourceids.internal.linstor.linbit.com;layerstoragevolumes.internal.linstor.linbit.com;layerwritecachevolumes.internal.linstor.linbit.com;linstorremotes.internal.linstor.linbit.com;linstorversion.internal.linstor.linbit.com;nodeconnections.internal.linstor.linbit.com;nodenetinterfaces.internal.linstor.linbit.com;nodes.internal.linstor.linbit.com;nodestorpool.internal.linstor.linbit.com;propscontainers.internal.linstor.linbit.com;resourceconnections.internal.linstor.linbit.com;resourcedefinitions.internal.linstor.linbit.com;resourcegroups.internal.linstor.linbit.com;resources.internal.linstor.linbit.com;rollback.internal.linstor.linbit.com;s3remotes.internal.linstor.linbit.com;satellitescapacity.internal.linstor.linbit.com;schedules.internal.linstor.linbit.com;secaccesstypes.internal.linstor.linbit.com;secaclmap.internal.linstor.linbit.com;secconfiguration.internal.linstor.linbit.com;secdfltroles.internal.linstor.linbit.com;secidentities.internal.linstor.linbit.com;secidrolemap.internal.linstor.linbit.com;secobjectprotection.internal.linstor.linbit.com;secroles.internal.linstor.linbit.com;sectyperules.internal.linstor.linbit.com;sectypes.internal.linstor.linbit.com;spacehistory.internal.linstor.linbit.com;storpooldefinitions.internal.linstor.linbit.com;trackingdate.internal.linstor.linbit.com;volumeconnections.internal.linstor.linbit.com;volumedefinitions.internal.linstor.linbit.com;volumegroups.internal.linstor.linbit.com;volumes.internal.linstor.linbit.com
//
// In the operator's namespace only, where LINSTOR runs: its workloads, Secrets and
// configuration. ServiceAccounts and RBAC of the operands ship with the operator.
// +kubebuilder:rbac:groups="",namespace=system,resources=secrets,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups="",namespace=system,resources=services;configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",namespace=system,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",namespace=system,resources=serviceaccounts,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,namespace=system,resources=deployments;daemonsets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,namespace=system,resources=networkpolicies,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=cert-manager.io,namespace=system,resources=certificates,verbs=get;create;update;patch

// Reconcile reads top-down: get, finalizer, scope, phases, status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cluster := &linstorv1.LinstorCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, cluster); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !cluster.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, cluster)
	}
	if controllerutil.AddFinalizer(cluster, names.FinalizerClusterCleanup) {
		if err := r.Client.Update(ctx, cluster); err != nil {
			return ctrl.Result{}, err
		}
	}

	s := newScope(cluster)
	return reconciler.Pass(ctx, s, r.saveStatus, reconciler.Resync, func() bool { return s.stop },
		r.reconcileDuplicate,
		r.reconcileLifecycle,
		r.reconcileTLS,
		r.reconcileControllerWorkload,
		r.reconcileSatellites,
		r.reconcileLinstor,
		r.reconcilePassphrase,
		r.observeSatellites,
		r.observeReplicas,
		r.reconcileSplitBrain,
	)
}

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.applier = &apply.Applier{Client: r.Client, Scheme: mgr.GetScheme(), Uncached: r.Direct}
	// Background restores live as long as this operator leads: they stop, and are
	// waited for, before another leader (or a restarted manager) can start its own.
	if err := mgr.Add(manager.RunnableFunc(r.restores.run)); err != nil {
		return err
	}
	allClusters := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []ctrl.Request {
		var list linstorv1.LinstorClusterList
		if err := r.Client.List(ctx, &list); err != nil {
			return nil
		}
		reqs := make([]ctrl.Request, 0, len(list.Items))
		for _, c := range list.Items {
			reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&c)})
		}
		return reqs
	})
	b := ctrl.NewControllerManagedBy(mgr).
		// Its own status writes do not wake it; a saved lifecycle step requeues itself.
		For(&linstorv1.LinstorCluster{}, builder.WithPredicates(reconciler.NotStatusOnly())).
		Owns(&appsv1.Deployment{}).
		Owns(&appsv1.DaemonSet{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.ConfigMap{}).
		// Satellites change often while a cluster converges: their summary is taken at
		// most every satelliteSummaryDelay, not once per change.
		Watches(&linstorv1.LinstorSatellite{}, satellitesSummarized()).
		// Labels select the nodes, taints decide which new ones can run a satellite.
		Watches(&corev1.Node{}, allClusters, builder.WithPredicates(predicate.Or[client.Object](predicate.LabelChangedPredicate{}, taintsChanged()))).
		Watches(&linstorv1.LinstorSatelliteConfiguration{}, allClusters).
		// The Prometheus Operator installed or removed: monitoring starts or stops.
		WatchesMetadata(crdMetadata(), allClusters, builder.WithPredicates(monitoringCRDChanged())).
		// An operand account installed or removed changes whether its pods can start.
		Watches(&corev1.ServiceAccount{}, allClusters, builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(event.UpdateEvent) bool { return false },
		})).
		// A backup stops the controller and lets it start again when done.
		Watches(&linstorv1.LinstorBackup{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []ctrl.Request {
			return []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: o.(*linstorv1.LinstorBackup).Spec.ClusterRef.Name}}}
		})).
		WithOptions(controller.Options{RateLimiter: reconciler.RateLimiter()})
	if r.Events != nil {
		b = b.WatchesRawSource(source.Channel(r.Events, &handler.EnqueueRequestForObject{}))
	}
	return b.Complete(r)
}

// satelliteSummaryDelay coalesces the changes of many satellites into one pass.
const satelliteSummaryDelay = 2 * time.Second

// satellitesSummarized enqueues the LinstorCluster controlling a changed satellite after
// satelliteSummaryDelay; the queue holds one request per cluster, so a thousand satellite
// changes within the delay cost one pass.
func satellitesSummarized() handler.EventHandler {
	enqueue := func(o client.Object, q workqueue.TypedRateLimitingInterface[ctrl.Request]) {
		if ref := metav1.GetControllerOf(o); ref != nil && ref.Kind == "LinstorCluster" {
			q.AddAfter(ctrl.Request{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: ref.Name}}, satelliteSummaryDelay)
		}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[ctrl.Request]) {
			enqueue(e.Object, q)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[ctrl.Request]) {
			enqueue(e.ObjectNew, q)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[ctrl.Request]) {
			enqueue(e.Object, q)
		},
	}
}

// taintsChanged: a node's taints changed (a node without a satellite may now run one,
// or not).
func taintsChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return !equality.Semantic.DeepEqual(e.ObjectOld.(*corev1.Node).Spec.Taints, e.ObjectNew.(*corev1.Node).Spec.Taints)
	}}
}
