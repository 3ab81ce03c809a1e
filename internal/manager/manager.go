package manager

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	toolscache "k8s.io/client-go/tools/cache"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	operatorsv2 "github.com/operator-framework/api/pkg/operators/v2"
	"github.com/operator-framework/operator-lib/conditions"
	"github.com/operator-framework/operator-lib/proxy"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	linstorv1alpha1 "github.com/linstor-operator/linstor-operator/api/v1alpha1"
	"github.com/linstor-operator/linstor-operator/controllers/linstorbackup"
	"github.com/linstor-operator/linstor-operator/controllers/linstorbackupschedule"
	"github.com/linstor-operator/linstor-operator/controllers/linstorbackuptarget"
	"github.com/linstor-operator/linstor-operator/controllers/linstorcluster"
	"github.com/linstor-operator/linstor-operator/controllers/linstornodeconnection"
	"github.com/linstor-operator/linstor-operator/controllers/linstorsatellite"
	"github.com/linstor-operator/linstor-operator/controllers/operatorcondition"
	"github.com/linstor-operator/linstor-operator/controllers/reconciler"
	"github.com/linstor-operator/linstor-operator/pkg/backuptarget"
	"github.com/linstor-operator/linstor-operator/pkg/images"
	"github.com/linstor-operator/linstor-operator/pkg/linstor"
	"github.com/linstor-operator/linstor-operator/pkg/linstor/observer"
	"github.com/linstor-operator/linstor-operator/pkg/metricsproxy"
	"github.com/linstor-operator/linstor-operator/pkg/upgrade"
	"github.com/linstor-operator/linstor-operator/pkg/webhooks"
)

// NewScheme returns a scheme with the Kubernetes built-ins and both linstor.io versions.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(linstorv1.AddToScheme(s))
	utilruntime.Must(linstorv1alpha1.AddToScheme(s))
	utilruntime.Must(operatorsv2.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	return s
}

// Options are what differs between a deployed operator, the demo and a test.
type Options struct {
	Manager ctrl.Options
	// Webhooks serves validation and conversion; off only where nothing can reach them.
	Webhooks bool
	// Images is the release image set (RELATED_IMAGE_* applied).
	Images images.Set
	// LinstorURL, when set, is where every controller reaches LINSTOR instead of the
	// in-cluster Service: a development aid for running out of cluster.
	LinstorURL string
	// Transport carries LINSTOR requests; nil means the default, instrumented.
	Transport http.RoundTripper
	// LinstorPoll is how often the observer re-reads LINSTOR when nothing asks sooner
	// (connection states cannot be watched); zero means observer.DefaultInterval.
	LinstorPoll time.Duration
	// LinstorGrace is how long LINSTOR may be unreachable before conditions report it;
	// zero means DefaultLinstorGrace.
	LinstorGrace time.Duration
	// DiskRelist paces storage discovery's listings of unused disks; zero means the
	// default (tests shorten it).
	DiskRelist time.Duration
	// RestoreSettle is how long an evicted node must be back in Kubernetes before it is
	// restored in LINSTOR; zero means satellite.RestoreSettle (tests shorten it).
	RestoreSettle time.Duration
	// Release overrides the LINSTOR versions this operator runs (simulating another
	// operator release in tests); nil means upgrade.Current.
	Release *upgrade.Release
	// UpgradePhaseTimeout bounds waiting for LINSTOR at a new version before rolling
	// back; zero keeps the default.
	UpgradePhaseTimeout time.Duration
	// OperatorCondition is the Upgradeable condition of the operator's OperatorCondition
	// when OLM manages the operator; nil skips it.
	OperatorCondition conditions.Condition
	// BackupTargetPoll is how often a LinstorBackupTarget's bucket is listed again
	// (zero: linstorbackuptarget.DefaultPoll).
	BackupTargetPoll time.Duration
	// Now is the clock of the LinstorBackupSchedule controller (nil: time.Now).
	Now func() time.Time
	// LinstorMetrics serves LINSTOR's /metrics at metricsproxy.Path on the metrics
	// endpoint. Set it only where that endpoint authenticates and authorizes every
	// request (main.go: --metrics-secure): without, anyone reaching the operator would
	// read LINSTOR's page.
	LinstorMetrics bool
	// Namespace is where the operator runs LINSTOR: the operands' ServiceAccounts and
	// RBAC are installed there with the operator, whose own permissions on Secrets and
	// workloads end at it. A LinstorCluster elsewhere is refused. Empty lets every
	// namespace hold one (the API tests, which run each case in a namespace of its own).
	Namespace string
}

// DefaultLinstorGrace absorbs a LINSTOR controller restart or a network blip.
const DefaultLinstorGrace = 30 * time.Second

// New builds the manager and registers everything the operator runs.
func New(cfg *rest.Config, opts Options) (ctrl.Manager, error) {
	if opts.Manager.Scheme == nil {
		opts.Manager.Scheme = NewScheme()
	}
	opts.Manager.Cache = scopedCache(opts.Manager.Cache, opts.Namespace)
	mgr, err := ctrl.NewManager(cfg, opts.Manager)
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	if opts.Webhooks {
		if err := webhooks.Setup(mgr, opts.Namespace); err != nil {
			return nil, fmt.Errorf("registering webhooks: %w", err)
		}
	}
	// Pods and LINSTOR's database are read without a cache: caching them would keep
	// every pod of the cluster in memory.
	direct, err := client.New(cfg, client.Options{Scheme: opts.Manager.Scheme})
	if err != nil {
		return nil, err
	}
	connector := &linstor.Connector{Reader: mgr.GetClient(), URL: opts.LinstorURL, Transport: opts.Transport}
	grace := reconciler.Poll(opts.LinstorGrace, DefaultLinstorGrace)
	// One observer reads LINSTOR for every reconciler and tells them what changed.
	clusterEvents, satelliteEvents := make(chan event.GenericEvent), make(chan event.GenericEvent)
	obs := observer.New(observer.ConnectorSource{Connector: connector}, opts.LinstorPoll, func(ctx context.Context, c observer.Change) {
		send := func(ch chan<- event.GenericEvent, o client.Object) {
			select {
			case ch <- event.GenericEvent{Object: o}:
			case <-ctx.Done():
			}
		}
		if c.Controller || c.Health {
			send(clusterEvents, &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Namespace: c.Cluster.Namespace, Name: c.Cluster.Name}})
		}
		for _, node := range c.Nodes {
			send(satelliteEvents, &linstorv1.LinstorSatellite{ObjectMeta: metav1.ObjectMeta{Namespace: c.Cluster.Namespace, Name: node}})
		}
	})
	if err := mgr.Add(obs); err != nil {
		return nil, err
	}
	if err := (&linstorcluster.Reconciler{
		Client: mgr.GetClient(), Images: opts.Images, Recorder: mgr.GetEventRecorderFor("linstor-operator"),
		Linstor: connector, Observer: obs, Events: clusterEvents,
		ProxyEnv: proxy.ReadProxyVarsFromEnv(), Grace: grace, Direct: direct, Namespace: opts.Namespace,
		UpgradePhaseTimeout: opts.UpgradePhaseTimeout, Release: opts.Release,
	}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the LinstorCluster controller: %w", err)
	}
	if err := (&linstorsatellite.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Images: opts.Images, Recorder: mgr.GetEventRecorderFor("linstor-operator"),
		Linstor: connector, Observer: obs, Events: satelliteEvents, Poll: opts.LinstorPoll, Grace: grace,
		Backoff: reconciler.Backoff{Max: 2 * time.Minute}, Namespace: opts.Namespace, DiskRelist: opts.DiskRelist,
		RestoreSettle: opts.RestoreSettle,
	}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the LinstorSatellite controller: %w", err)
	}
	if err := (&linstorcluster.MisplacedConfigurationReconciler{
		Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor("linstor-operator"), Namespace: opts.Namespace,
	}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the misplaced LinstorSatelliteConfiguration controller: %w", err)
	}
	if err := (&linstornodeconnection.Reconciler{
		Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor("linstor-operator"),
		Linstor: connector, Observer: obs, Namespace: opts.Namespace,
	}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the LinstorNodeConnection controller: %w", err)
	}
	if err := (&linstorbackup.Reconciler{
		Client: mgr.GetClient(), Database: direct, Recorder: mgr.GetEventRecorderFor("linstor-operator"), RecheckInterval: opts.BackupTargetPoll,
	}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the LinstorBackup controller: %w", err)
	}
	if err := (&linstorbackuptarget.Reconciler{Client: mgr.GetClient(), Namespace: opts.Namespace, Poll: opts.BackupTargetPoll}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the LinstorBackupTarget controller: %w", err)
	}
	if err := (&linstorbackupschedule.Reconciler{
		Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor("linstor-operator"), Bucket: backuptarget.Opener{Client: mgr.GetClient()}, Now: opts.Now, Linstor: connector,
	}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the LinstorBackupSchedule controller: %w", err)
	}
	// LINSTOR's own /metrics, beside the operator's, behind the same authentication.
	if opts.LinstorMetrics {
		elected := mgr.Elected()
		leading := func() bool {
			select {
			case <-elected:
				return true
			default:
				return false
			}
		}
		if err := mgr.AddMetricsServerExtraHandler(metricsproxy.Path, metricsproxy.Handler(linstorMetricsSource(mgr.GetClient(), connector, opts.Namespace), leading)); err != nil {
			return nil, fmt.Errorf("serving LINSTOR's metrics: %w", err)
		}
	}
	if opts.OperatorCondition != nil {
		if err := (&operatorcondition.Reconciler{Client: mgr.GetClient(), Condition: opts.OperatorCondition}).SetupWithManager(mgr); err != nil {
			return nil, fmt.Errorf("setting up the OperatorCondition controller: %w", err)
		}
	}
	return mgr, nil
}

// linstorMetricsSource is the LINSTOR of the oldest LinstorCluster in namespace (the
// one the operator manages: a younger one is refused as a duplicate), reached as the
// controllers reach it.
func linstorMetricsSource(c client.Reader, connector *linstor.Connector, namespace string) metricsproxy.Source {
	return func(ctx context.Context) (string, *http.Client, error) {
		var list linstorv1.LinstorClusterList
		if err := c.List(ctx, &list, client.InNamespace(namespace)); err != nil {
			return "", nil, err
		}
		if len(list.Items) == 0 {
			return "", nil, errors.New("no LinstorCluster")
		}
		oldest := slices.MinFunc(list.Items, func(a, b linstorv1.LinstorCluster) int {
			return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
		})
		conn, err := connector.Connect(ctx, &oldest)
		if err != nil {
			return "", nil, err
		}
		return conn.URL, conn.HTTP, nil
	}
}

// scopedCache keeps in memory only what the operator owns: Secrets of its namespace,
// and there only the workloads and configuration it labelled. Nodes and the
// operator's own kinds stay cluster-wide. Managed fields are dropped from every cached
// object: nothing reads them, and they are a large part of each object.
func scopedCache(c cache.Options, namespace string) cache.Options {
	c.DefaultTransform = cache.TransformStripManagedFields()
	// A real node lists every image its kubelet holds (often tens of kilobytes): nothing
	// here reads them, and a thousand nodes would keep them all.
	nodes := cache.ByObject{Transform: stripNodeImages(c.DefaultTransform)}
	if namespace == "" {
		c.ByObject = map[client.Object]cache.ByObject{&corev1.Node{}: nodes}
		return c
	}
	owned := labels.SelectorFromSet(labels.Set{names.LabelManagedBy: names.ManagedBy})
	in := func(sel labels.Selector) cache.ByObject {
		return cache.ByObject{Namespaces: map[string]cache.Config{namespace: {LabelSelector: sel}}}
	}
	c.ByObject = map[client.Object]cache.ByObject{
		// User-provided Secrets (passphrase, certificates) carry no label of ours.
		&corev1.Secret{}: in(labels.Everything()),
		// The operands' accounts ship with the operator (config/rbac), unlabelled by it.
		&corev1.ServiceAccount{}: in(labels.Everything()),
		// A TLS channel's caReference may name a user's ConfigMap, unlabelled by us.
		&corev1.ConfigMap{}:             in(labels.Everything()),
		&corev1.Service{}:               in(owned),
		&appsv1.Deployment{}:            in(owned),
		&appsv1.DaemonSet{}:             in(owned),
		&networkingv1.NetworkPolicy{}:   in(owned),
		&policyv1.PodDisruptionBudget{}: in(owned),
		// Of the pods, only the drain guards (the others are read around the cache).
		&corev1.Pod{}:  in(labels.SelectorFromSet(labels.Set{names.LabelComponent: names.DrainGuardComponent})),
		&corev1.Node{}: nodes,
	}
	return c
}

// stripNodeImages drops status.images from a cached Node, after then.
func stripNodeImages(then toolscache.TransformFunc) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		if n, ok := obj.(*corev1.Node); ok {
			n.Status.Images = nil
		}
		return then(obj)
	}
}
