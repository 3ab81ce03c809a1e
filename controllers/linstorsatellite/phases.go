package linstorsatellite

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/linstorstate"

	"github.com/linstor-operator/linstor-operator/pkg/clustertls"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	lapi "github.com/LINBIT/golinstor/client"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/controllers/reconciler"
	"github.com/linstor-operator/linstor-operator/pkg/images"
	"github.com/linstor-operator/linstor-operator/pkg/linstor"
	"github.com/linstor-operator/linstor-operator/pkg/linstor/observer"
	"github.com/linstor-operator/linstor-operator/pkg/linstor/props"
	"github.com/linstor-operator/linstor-operator/pkg/netif"
	"github.com/linstor-operator/linstor-operator/pkg/render"
	"github.com/linstor-operator/linstor-operator/pkg/satellite"
)

// reconcileWorkload runs the satellite pod on its node. It comes before the LINSTOR
// phases: a satellite must run for LINSTOR to reach it.
func (r *Reconciler) reconcileWorkload(ctx context.Context, s *scope) (ctrl.Result, error) {
	node := &corev1.Node{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: s.sat.Name}, node); err != nil {
		s.nodeErr = fmt.Errorf("kubernetes node %s: %w", s.sat.Name, err)
		s.stop = true
		return ctrl.Result{RequeueAfter: shortPoll}, client.IgnoreNotFound(err)
	}
	s.node = node
	defer r.followRunningSatellite(ctx, s)
	// Satellites run the version the cluster's upgrade state says (all at once: LINSTOR
	// refuses mixed versions).
	imgs := r.Images.WithRepository(s.cluster.Spec.Repository)
	if d := s.cluster.Status.Deployed; d != nil {
		imgs = imgs.ForLinstor(d.Satellites)
	}
	toolkit, err := r.driverToolkit(ctx, node)
	if err != nil {
		s.workloadErr = err
		return ctrl.Result{}, err
	}
	objs, err := render.Satellite(s.cluster, s.sat, node, imgs.WithDriverToolkit(toolkit))
	var noToolkit *images.DriverToolkitMissingError
	if errors.As(err, &noToolkit) {
		// The satellite is left as it runs: a loader without the headers of the node's
		// kernel cannot build DRBD. Nothing watches the ImageStream: look again.
		s.loaderErr = err
		return ctrl.Result{RequeueAfter: r.poll()}, nil
	}
	if err == nil {
		// The merged patches come last, on the pod as it will run.
		objs, err = render.WithSatellitePatches(s.cluster, s.sat, render.WithCAReferences(s.cluster, objs))
	}
	if err != nil {
		s.workloadErr, s.renderInvalid = err, true
		return ctrl.Result{}, nil // a spec problem: the condition says what to fix
	}
	// The cluster reconciler issues the certificates and records their fingerprints:
	// a renewed internal certificate rolls the satellites.
	fingerprints := map[string]string{}
	for _, c := range s.cluster.Status.Certificates {
		fingerprints[c.SecretName] = c.Fingerprint
	}
	if secret := clustertls.InternalTLSSecretName(s.cluster); clustertls.InternalTLSEnabled(s.cluster) && fingerprints[secret] == "" {
		// The pod would mount a certificate the cluster has not recorded yet, and be
		// replaced once it has: a new cluster would start every satellite twice.
		s.workloadPending = fmt.Sprintf("Waiting for the internal TLS certificate (Secret %s) before starting the satellite", secret)
		return ctrl.Result{RequeueAfter: staleRetry}, nil
	}
	objs = render.WithSecretFingerprints(objs, fingerprints)
	if _, err := r.applier.Apply(ctx, s.sat, objs); err != nil {
		s.workloadErr = err
		return ctrl.Result{}, err
	}
	for _, o := range objs {
		if ds, ok := o.(*appsv1.DaemonSet); ok {
			s.podSelector = ds.Spec.Selector.MatchLabels
			s.satelliteSpec = &ds.Spec.Template.Spec
		}
	}
	return ctrl.Result{}, nil
}

// followRunningSatellite: when this pass applied no satellite (the Driver Toolkit
// missing or unreadable, a spec problem, a certificate awaited), the one that runs is
// left as it is, and the phases after this one follow it: the drain guard keeps
// holding a node LINSTOR needs, node loss is still noticed. Its pod spec and selector
// are those of the live DaemonSet.
func (r *Reconciler) followRunningSatellite(ctx context.Context, s *scope) {
	if s.satelliteSpec != nil || s.node == nil {
		return
	}
	ds := &appsv1.DaemonSet{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.sat.Namespace, Name: names.SatelliteDaemonSetName(s.node.Name)}, ds); err != nil || ds.Spec.Selector == nil {
		return // none runs: nothing to follow
	}
	s.podSelector = ds.Spec.Selector.MatchLabels
	s.satelliteSpec = &ds.Spec.Template.Spec
}

// reconcileNode registers the LINSTOR node with its planned net interfaces (the
// InternalIP, plus the configured NICs) and keeps them in sync; an evicted node that is
// back gets restored. It reads LINSTOR's state from the observer's last cycle and acts
// only on a cycle that postdates its own last write.
func (r *Reconciler) reconcileNode(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.linstorErr != nil {
		s.stop = true
		return ctrl.Result{RequeueAfter: r.Backoff.Failed(s.sat.UID)}, nil
	}
	s.snap = r.Observer.Snapshot(s.key)
	if err := observer.Err(s.snap); err != nil {
		s.stop = true
		return ctrl.Result{RequeueAfter: r.unreachable(s, err)}, nil
	}
	s.fresh = r.Observer.Fresh(s.key, s.sat.Name) != nil
	node := s.node
	addr, err := netif.InternalIP(node, s.sat.Spec.IPFamilies)
	if err != nil {
		s.nodeErr = err
		s.stop = true
		return ctrl.Result{}, nil // the Node watch brings the address
	}
	if !s.fresh {
		// The cycle showing our last write comes first; meanwhile nothing is decided and
		// the status stays as it is (errors of the last decision included).
		s.stop = true
		return ctrl.Result{RequeueAfter: staleRetry}, nil
	}
	port, encryption := satelliteConnection(s.cluster)
	lnode, ok := s.snap.Node(node.Name)
	if !ok {
		// Register at the InternalIP alone; the configured NICs follow on the next pass,
		// so a NIC that cannot be resolved never keeps a node out of LINSTOR.
		if !s.writer.may("registering node " + node.Name) {
			return ctrl.Result{}, nil
		}
		err := s.writer.send(func(lc *lapi.Client) error {
			return lc.Nodes.Create(ctx, lapi.Node{Name: node.Name, Type: "Satellite",
				Props:         map[string]string{names.AuxManagedInterfaces: netif.Default},
				NetInterfaces: []lapi.NetInterface{{Name: netif.Default, Address: addr, SatellitePort: port, SatelliteEncryptionType: encryption, IsActive: true}}})
		})
		if err != nil {
			s.nodeErr = fmt.Errorf("registering LINSTOR node: %w", err)
			return ctrl.Result{RequeueAfter: r.Backoff.Failed(s.sat.UID)}, nil
		}
		r.Recorder.Eventf(s.sat, corev1.EventTypeNormal, "NodeRegistered", "Registered LINSTOR node %s at %s", node.Name, addr)
		return ctrl.Result{}, nil
	}
	if linstorstate.HasFlag(lnode.Flags, "EVICTED") {
		return r.restoreEvicted(ctx, s, lnode)
	}
	if lnode.ConnectionStatus == "ONLINE" {
		r.forgetRestore(s.sat.UID) // a restore that worked is no reason to wait next time
	} else if res, acted := r.reconcileNodeFailure(ctx, s, lnode); acted {
		return res, nil
	} else {
		s.requeueNodeFailure = res.RequeueAfter
	}
	s.lnode = &lnode
	return r.reconcileNetInterfaces(ctx, s, lnode, port, encryption)
}

// restoreEvicted restores a node LINSTOR evicted once it is back
// (satellite.RestoreEvicted: the Kubernetes node and the satellite pod ready for a
// while, or LINSTOR sees it ONLINE); until then the status says why it stays evicted.
// Nothing else is done to an evicted node.
func (r *Reconciler) restoreEvicted(ctx context.Context, s *scope, lnode lapi.Node) (ctrl.Result, error) {
	pods, err := r.satellitePods(ctx, s)
	if err != nil {
		s.nodeErr = fmt.Errorf("LINSTOR node %s is evicted; listing its satellite pods to see whether it is back: %w", lnode.Name, err)
		return ctrl.Result{RequeueAfter: shortPoll}, nil
	}
	uid, now := s.sat.UID, time.Now()
	r.evictMu.Lock()
	if r.backSince == nil {
		r.backSince, r.lastRestore = map[types.UID]time.Time{}, map[types.UID]time.Time{}
	}
	d := satellite.RestoreEvicted(satellite.Evicted{Node: s.node, Pods: pods, Connection: lnode.ConnectionStatus,
		BackSince: r.backSince[uid], LastRestore: r.lastRestore[uid]}, reconciler.Poll(r.RestoreSettle, satellite.RestoreSettle), now)
	switch {
	case !d.Back:
		delete(r.backSince, uid)
	case r.backSince[uid].IsZero():
		r.backSince[uid] = now
	}
	r.evictMu.Unlock()
	if !d.Restore {
		s.evictedWait = d.Wait
		// The node's readiness and the DaemonSet's wake the reconciler; the settle time
		// passes here.
		return ctrl.Result{RequeueAfter: reconciler.Poll(d.RecheckAfter, r.poll())}, nil
	}
	if !s.writer.may("restoring the evicted node") {
		s.evictedWait = "The node is back; restoring it in LINSTOR waits: " + s.writer.fence
		return ctrl.Result{}, nil
	}
	err = s.writer.send(func(lc *lapi.Client) error { return lc.Nodes.Restore(ctx, lnode.Name, lapi.NodeRestore{}) })
	if err != nil {
		s.nodeErr = fmt.Errorf("restoring evicted node: %w", err)
		return ctrl.Result{RequeueAfter: r.Backoff.Failed(s.sat.UID)}, nil
	}
	r.evictMu.Lock()
	r.lastRestore[uid] = now
	delete(r.backSince, uid)
	r.evictMu.Unlock()
	r.Recorder.Eventf(s.sat, corev1.EventTypeNormal, "NodeRestored", "LINSTOR node %s was evicted and is back (Kubernetes node and satellite pod ready): restored", lnode.Name)
	// The next pass judges the restore on the observer's next cycle, whether or not
	// that cycle differs from the last one (an evict just after looks unchanged).
	return ctrl.Result{RequeueAfter: staleRetry}, nil
}

// forgetRestore: the node was seen ONLINE since the operator last restored it.
func (r *Reconciler) forgetRestore(uid types.UID) {
	r.evictMu.Lock()
	defer r.evictMu.Unlock()
	delete(r.lastRestore, uid)
	delete(r.backSince, uid)
}

// satellitePods lists the pods of the satellite's DaemonSet, read around the cache
// (caching pods would keep every pod of the cluster in memory).
func (r *Reconciler) satellitePods(ctx context.Context, s *scope) ([]corev1.Pod, error) {
	if len(s.podSelector) == 0 || r.APIReader == nil {
		return nil, nil // nothing to select by: no pod is seen, so nothing is restored
	}
	var pods corev1.PodList
	if err := r.APIReader.List(ctx, &pods, client.InNamespace(s.sat.Namespace), client.MatchingLabels(s.podSelector)); err != nil {
		return nil, err
	}
	return pods.Items, nil
}

// staleRetry: after a write, the observer's next cycle (asked for at once) shows it.
const staleRetry = 2 * time.Second

// reconcileNetInterfaces brings the node's interfaces to the plan. An interface that
// cannot be resolved leaves everything registered as it is and says why.
func (r *Reconciler) reconcileNetInterfaces(ctx context.Context, s *scope, lnode lapi.Node, port int32, encryption string) (ctrl.Result, error) {
	plan, err := netif.Plan(s.node, s.sat.Spec.NetInterfaces, s.sat.Spec.IPFamilies)
	if err != nil {
		s.netifErr, s.netifInvalid = err, true
		return ctrl.Result{}, nil
	}
	managed := splitList(lnode.Props[names.AuxManagedInterfaces])
	changes := netif.Diff(lnode.NetInterfaces, plan, managed, port, encryption)
	if changes.Empty() || !s.writer.may("network interfaces") {
		return ctrl.Result{}, nil
	}
	// Record ownership first: an interface created just before a crash is still ours.
	var listed []string
	for _, d := range plan {
		listed = append(listed, d.Name)
	}
	listed = append(listed, changes.Delete...)
	if err := s.writer.setNodeProp(ctx, lnode, names.AuxManagedInterfaces, joinList(listed)); err != nil {
		s.netifErr = err
		return ctrl.Result{RequeueAfter: r.Backoff.Failed(s.sat.UID)}, nil
	}
	fail := func(what string, err error) (ctrl.Result, error) {
		s.netifErr = fmt.Errorf("%s: %w", what, err)
		r.Recorder.Eventf(s.sat, corev1.EventTypeWarning, "NetInterfaceFailed", "%s: %v", what, err)
		return ctrl.Result{RequeueAfter: r.Backoff.Failed(s.sat.UID)}, nil
	}
	for _, nif := range changes.Create {
		if err := s.writer.send(func(lc *lapi.Client) error { return lc.Nodes.CreateNetInterface(ctx, lnode.Name, nif) }); err != nil {
			return fail("creating net interface "+nif.Name, err)
		}
		r.Recorder.Eventf(s.sat, corev1.EventTypeNormal, "NetInterfaceCreated", "Net interface %s at %s", nif.Name, nif.Address)
	}
	for _, nif := range changes.Modify {
		if err := s.writer.send(func(lc *lapi.Client) error { return lc.Nodes.ModifyNetInterface(ctx, lnode.Name, nif.Name, nif) }); err != nil {
			return fail("updating net interface "+nif.Name, err)
		}
		r.Recorder.Eventf(s.sat, corev1.EventTypeNormal, "NetInterfaceUpdated", "Net interface %s at %s (active: %t)", nif.Name, nif.Address, nif.IsActive)
	}
	for _, name := range changes.Delete {
		if err := s.writer.send(func(lc *lapi.Client) error { return lc.Nodes.DeleteNetinterface(ctx, lnode.Name, name) }); err != nil {
			return fail("deleting net interface "+name, err)
		}
		r.Recorder.Eventf(s.sat, corev1.EventTypeNormal, "NetInterfaceDeleted", "Net interface %s is no longer configured", name)
	}
	if len(changes.Delete) > 0 {
		if err := s.writer.setNodeProp(ctx, lnode, names.AuxManagedInterfaces, joinList(listed[:len(listed)-len(changes.Delete)])); err != nil {
			s.netifErr = err
			return ctrl.Result{RequeueAfter: r.Backoff.Failed(s.sat.UID)}, nil
		}
	}
	return ctrl.Result{}, nil
}

// satelliteConnection is the port and encryption of controller-satellite traffic.
func satelliteConnection(cluster *linstorv1.LinstorCluster) (int32, string) {
	if clustertls.InternalTLSEnabled(cluster) {
		return names.SatelliteSecurePort, "SSL"
	}
	return names.SatellitePort, "PLAIN"
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func joinList(names []string) string { return strings.Join(names, ",") }

// reconcileNodeProperties applies the node properties with last-applied tracking.
func (r *Reconciler) reconcileNodeProperties(ctx context.Context, s *scope) (ctrl.Result, error) {
	lnode := s.lnode
	if lnode == nil {
		return ctrl.Result{}, nil // not registered yet, or its state predates our write
	}
	desired := map[string]string{}
	for _, p := range s.sat.Spec.Properties {
		desired[p.Name] = p.Value
	}
	valid, refused := linstor.ValidProperties(props.Node, desired)
	mod := linstor.WithoutUndeletable(props.Node, linstor.PropertyDiff(lnode.Props, valid))
	if !linstor.IsEmpty(mod) && s.writer.may("node properties") {
		err := s.writer.send(func(lc *lapi.Client) error {
			return linstor.ModifyProperties(mod, func(m lapi.GenericPropsModify) error {
				return lc.Nodes.Modify(ctx, s.sat.Name, lapi.NodeModify{GenericPropsModify: m})
			})
		})
		if err != nil {
			s.propsErr = fmt.Errorf("setting node properties: %w", err)
			return ctrl.Result{RequeueAfter: r.Backoff.Failed(s.sat.UID)}, nil
		}
	}
	if len(refused) > 0 {
		// Not retried: the spec has to change. Admission refuses these keys; they get
		// here from a configuration written while the webhook was bypassed.
		s.propsErr = fmt.Errorf("LINSTOR does not accept node properties: %s", strings.Join(refused, "; "))
	}
	return ctrl.Result{}, nil
}

// observeLinstor takes the node's state and pools for the status from the observer's
// last cycle. While LINSTOR does not report a settling satellite ONLINE yet, the
// observer is asked to look often (for a while: a node that stays OFFLINE is then seen
// at the observer's own pace).
func (r *Reconciler) observeLinstor(_ context.Context, s *scope) (ctrl.Result, error) {
	if s.snap == nil {
		return ctrl.Result{}, nil
	}
	if !s.writer.wrote && s.fresh && problem(s) == "" && s.pools.Waiting == "" {
		r.Backoff.Succeeded(s.sat.UID)
	}
	lnode, ok := s.snap.Node(s.sat.Name)
	if !ok {
		return ctrl.Result{}, nil
	}
	s.connection = lnode.ConnectionStatus
	if s.connection == "ONLINE" {
		// LINSTOR accepts a satellite only at the controller's exact version.
		s.version = s.snap.Version
		if s.satelliteSpec != nil && satellite.NodeBeingLost(s.node, s.satelliteSpec.Tolerations, time.Now(), expectOffline) {
			// LINSTOR reports the loss only when its connection fails, without an
			// event: looked for every second, so its replicas' health follows at once.
			r.Observer.ExpectOffline(s.key, s.sat.Name, expectOffline)
		}
	}
	s.pools.Observe(observedPools(s.snap.Pools(s.sat.Name)))
	if looksForOnline(s.connection, meta.FindStatusCondition(s.sat.Status.Conditions, linstorv1.ConditionAvailable), time.Now()) {
		// No event says when LINSTOR connects to the satellite: the observer looks
		// every second for a while, and reports the change.
		r.Observer.ExpectOnline(s.key, s.sat.Name, expectOnline)
	}
	return ctrl.Result{}, nil
}

// expectOnline is how long the observer looks every second for a satellite to come
// ONLINE, after the last time the satellite was seen waiting; it stops looking as soon
// as the satellite is ONLINE.
const expectOnline = time.Minute

// expectOffline is how long after Kubernetes shows a node being lost the observer
// looks every second for LINSTOR to report its satellite gone.
const expectOffline = 2 * time.Minute

// looksForOnline says whether the observer should look every second for the satellite
// to come ONLINE: LINSTOR does not report it ONLINE and it became unavailable
// recently (available is its Available condition, nil before the first status). Its
// pod's readiness is no input: LINSTOR connects as soon as the satellite listens, while
// the DaemonSet's status, which kube-controller-manager writes, trails the pod by tens
// of seconds on a loaded control plane; waiting for it left satellites ONLINE unseen
// until the observer's interval, and their pools with them (docs/performance.md).
func looksForOnline(connection string, available *metav1.Condition, now time.Time) bool {
	recent := available == nil || available.Status != metav1.ConditionTrue && now.Sub(available.LastTransitionTime.Time) < settling
	return connection != "ONLINE" && recent
}

// unreachable handles a cycle that failed: within the grace period the last
// observation stands and nothing is reported; after it, the status says so. It returns
// when to look again.
func (r *Reconciler) unreachable(s *scope, err error) time.Duration {
	if !observer.Lasting(s.snap, r.Grace, time.Now()) {
		s.transient = true
		return shortPoll
	}
	s.linstorErr = fmt.Errorf("%w: %v", linstor.ErrUnreachable, err)
	return r.Backoff.Failed(s.sat.UID)
}
