package linstorcluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/clustertls"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	lapi "github.com/LINBIT/golinstor/client"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/controllers/reconciler"
	"github.com/linstor-operator/linstor-operator/pkg/lifecycle"
	"github.com/linstor-operator/linstor-operator/pkg/linstor"
	"github.com/linstor-operator/linstor-operator/pkg/linstor/observer"
	"github.com/linstor-operator/linstor-operator/pkg/linstor/props"
	"github.com/linstor-operator/linstor-operator/pkg/render"
	"github.com/linstor-operator/linstor-operator/pkg/satellite"
)

// Kinds the controller workload consists of, for pruning.
var (
	namespacedKinds = []schema.GroupVersionKind{
		{Group: "apps", Version: "v1", Kind: "Deployment"},
		{Group: "apps", Version: "v1", Kind: "DaemonSet"},
		{Version: "v1", Kind: "Service"},
		{Version: "v1", Kind: "ConfigMap"},
		{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"},
	}
	// ServiceAccounts and RBAC are not among them: they ship with the operator, which
	// may not grant permissions (docs/security.md says how to remove what older
	// releases created).
	clusterKinds = []schema.GroupVersionKind{
		{Group: "storage.k8s.io", Version: "v1", Kind: "CSIDriver"},
	}
)

// reconcileDuplicate: only a LinstorCluster in the operator's namespace acts, and only
// the oldest one. The webhook refuses a second
// one, but without webhooks (or in a race) two could exist; the younger one does nothing.
func (r *Reconciler) reconcileDuplicate(ctx context.Context, s *scope) (ctrl.Result, error) {
	if r.Namespace != "" && s.cluster.Namespace != r.Namespace {
		s.outsideNamespace, s.stop = r.Namespace, true
		return ctrl.Result{}, nil
	}
	var list linstorv1.LinstorClusterList
	if err := r.Client.List(ctx, &list); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing LinstorClusters: %w", err)
	}
	sort.Slice(list.Items, func(i, j int) bool {
		a, b := list.Items[i], list.Items[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	if len(list.Items) > 0 {
		first := list.Items[0]
		if first.UID != s.cluster.UID {
			s.duplicateOf = first.Namespace + "/" + first.Name
			s.stop = true
		}
	}
	return ctrl.Result{}, nil
}

// reconcileControllerWorkload renders the LINSTOR controller, the CSI driver and the HA
// controller and applies them. Pruning runs only after a successful render and apply,
// so a broken spec never deletes a running workload.
func (r *Reconciler) reconcileControllerWorkload(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.tlsErr != nil {
		return ctrl.Result{}, nil // the pods would mount a certificate that is not there
	}
	missingCRDs, err := r.missingMonitoringCRDs(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	mon := render.MonitoringFor(s.cluster, missingCRDs)
	var objs render.Objects
	release := r.Images.WithRepository(s.cluster.Spec.Repository)
	for _, part := range []func() (render.Objects, error){
		func() (render.Objects, error) {
			// The controller ships backups to remote storage: it needs the cluster proxy.
			imgs := release
			if s.deployed != nil {
				imgs = imgs.ForLinstor(s.deployed.Controller)
			}
			objs, err := render.Controller(s.cluster, imgs)
			return render.WithEnv(objs, r.ProxyEnv), err
		},
		func() (render.Objects, error) { return render.CSI(s.cluster, release, inClusterURL(s.cluster)) },
		func() (render.Objects, error) { return render.HAController(s.cluster, release) },
		func() (render.Objects, error) { return render.SatelliteConfig(s.cluster), nil },
		// Who may reach the controller's API; pruned when spec.networkPolicy is Disabled.
		func() (render.Objects, error) { return render.NetworkPolicy(s.cluster), nil },
	} {
		o, err := part()
		if err != nil {
			s.renderErr = err
			return ctrl.Result{}, nil // a spec problem: retrying cannot fix it, the condition says what to do
		}
		objs = append(objs, o...)
	}
	// The user's patches come last, on the pods as they will run; a bad one stops the
	// whole apply, so no component runs half-patched.
	objs, err = render.WithClusterPatches(s.cluster, render.WithCAReferences(s.cluster, objs))
	if err != nil {
		s.renderErr = err
		return ctrl.Result{}, nil
	}
	s.missingAccounts = r.missingAccounts(ctx, s.cluster.Namespace, objs)
	objs = render.WithSecretFingerprints(objs, s.tlsFingerprints)
	if s.stopController != "" {
		objs = render.WithControllerStopped(objs)
	}
	if s.fenceCSI {
		objs = render.WithCSIFenced(objs)
	}
	applied, err := r.applier.Apply(ctx, s.cluster, objs)
	if err != nil {
		s.applyErr = err
		return ctrl.Result{}, err
	}
	if applied.Sent(appsv1.SchemeGroupVersion.WithKind("Deployment"), s.cluster.Namespace, names.ControllerName) {
		// The LINSTOR controller is (re)started or stopped: what was observed of it is
		// history until LINSTOR is asked again, and it is asked often for a while.
		key := client.ObjectKeyFromObject(s.cluster)
		r.Observer.Invalidate(key)
		r.Observer.ExpectChange(key, time.Minute)
	}
	// Monitoring before the prune: the dashboard is a ConfigMap like the workload's.
	monitoring, res := r.reconcileMonitoring(ctx, s, mon, missingCRDs)
	applied.Merge(monitoring)
	selector := client.MatchingLabels{names.LabelCluster: s.cluster.Name, names.LabelManagedBy: names.ManagedBy}
	if n, err := r.applier.Prune(ctx, s.cluster, applied, s.cluster.Namespace, selector, namespacedKinds...); err != nil {
		s.applyErr = err
		return ctrl.Result{}, err
	} else if n > 0 {
		r.Recorder.Eventf(s.cluster, corev1.EventTypeNormal, "Pruned", "Removed %d objects no longer needed", n)
	}
	if _, err := r.applier.Prune(ctx, s.cluster, applied, "", r.clusterScopedSelector(s.cluster), clusterKinds...); err != nil {
		s.applyErr = err
		return ctrl.Result{}, err
	}
	return res, nil
}

// clusterScopedSelector also matches the namespace: cluster-scoped objects of a
// same-named LinstorCluster elsewhere are not ours to prune.
func (r *Reconciler) clusterScopedSelector(c *linstorv1.LinstorCluster) client.MatchingLabels {
	return client.MatchingLabels{names.LabelCluster: c.Name, names.LabelClusterNamespace: c.Namespace, names.LabelManagedBy: names.ManagedBy}
}

// reconcileSatellites keeps one LinstorSatellite per selected node. A satellite whose
// node is no longer selected is deleted; its finalizer applies the deletion policy.
func (r *Reconciler) reconcileSatellites(ctx context.Context, s *scope) (ctrl.Result, error) {
	// Nodes and satellites are the cache's own objects, never written here (a deletion
	// takes a copy): a pass reads every one of them, and copying them all each pass was
	// a large part of what the operator allocated at 1,000 nodes.
	var nodes corev1.NodeList
	if err := r.Client.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing nodes: %w", err)
	}
	var configs linstorv1.LinstorSatelliteConfigurationList
	if err := r.Client.List(ctx, &configs, client.InNamespace(s.cluster.Namespace)); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing satellite configurations: %w", err)
	}
	var existing linstorv1.LinstorSatelliteList
	if err := r.Client.List(ctx, &existing, client.InNamespace(s.cluster.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing satellites: %w", err)
	}
	wanted := map[string]bool{}
	matched := map[string][]string{} // configuration -> nodes it applies to
	skipped := map[string][]string{} // configuration -> expandFrom properties left out
	var errs []string
	// A satellite started before the cluster records its internal certificate would be
	// restarted once it is recorded (its pod mounts the certificate's fingerprint): new
	// satellites wait for the status this pass writes.
	exists := map[string]bool{}
	for _, sat := range existing.Items {
		exists[sat.Name] = true
	}
	certPending := clustertls.InternalTLSEnabled(s.cluster) && !certificateRecorded(s.cluster, clustertls.InternalTLSSecretName(s.cluster))
	deferred := false
	var skippedNodes []linstorv1.SkippedNode // selected nodes that get no satellite
	for i := range nodes.Items {
		node := &nodes.Items[i]
		decision, err := satellite.Desired(s.cluster, configs.Items, node)
		spec := decision.Spec
		for _, cfg := range decision.Applied {
			matched[cfg] = append(matched[cfg], node.Name)
		}
		for cfg, why := range decision.Skipped {
			skipped[cfg] = append(skipped[cfg], why...)
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("node %s: %v", node.Name, err))
			wanted[node.Name] = true // keep the existing satellite while the configuration is broken
			continue
		}
		if !decision.Selected {
			continue
		}
		sat := &linstorv1.LinstorSatellite{
			TypeMeta:   metav1.TypeMeta{APIVersion: linstorv1.GroupVersion.String(), Kind: "LinstorSatellite"},
			ObjectMeta: metav1.ObjectMeta{Name: node.Name, Namespace: s.cluster.Namespace, Labels: map[string]string{names.LabelCluster: s.cluster.Name, names.LabelManagedBy: names.ManagedBy}},
			Spec:       spec,
		}
		if skip := r.skippedForTaints(s.cluster, sat, node, exists[node.Name]); skip != nil {
			skippedNodes = append(skippedNodes, *skip)
			continue
		}
		wanted[node.Name] = true
		if certPending && !exists[node.Name] {
			deferred = true
			continue
		}
		if _, err := r.applier.Apply(ctx, s.cluster, []client.Object{sat}); err != nil {
			errs = append(errs, err.Error())
		}
	}
	s.skippedNodes, s.satellitesSkipped = satellite.SkippedNodeList(skippedNodes, satellite.MaxSkippedNodes)
	s.skippedDecided = true
	// Removing many satellites at once is held until confirmed (a nodeSelector typo,
	// nodes vanishing): decided here, before any is deleted, so the first deletions
	// cannot slip through before the others are seen.
	removal := satellite.Removal{Total: len(existing.Items), Confirmed: s.cluster.Annotations[names.AnnotationConfirmRemoval]}
	nodeExists := make(map[string]bool, len(nodes.Items))
	for _, n := range nodes.Items {
		nodeExists[n.Name] = true
	}
	var unwanted []*linstorv1.LinstorSatellite
	for i := range existing.Items {
		sat := &existing.Items[i]
		if !metav1.IsControlledBy(sat, s.cluster) {
			continue
		}
		if satellite.Removing(sat, wanted[sat.Name], nodeExists[sat.Name]) {
			removal.Removing = append(removal.Removing, sat.Name)
		}
		if sat.DeletionTimestamp.IsZero() && !wanted[sat.Name] {
			unwanted = append(unwanted, sat)
		}
	}
	if held := satellite.RemovalHeld(removal); held != "" {
		s.removalHeld = held
		unwanted = unwanted[:0]
	}
	for _, sat := range unwanted {
		sat = sat.DeepCopy()
		if err := r.Client.Delete(ctx, sat); client.IgnoreNotFound(err) != nil {
			errs = append(errs, err.Error())
			continue
		}
		r.Recorder.Eventf(s.cluster, corev1.EventTypeNormal, "SatelliteRemoved", "Node %s is no longer selected; its deletion policy applies", sat.Name)
	}
	conflicts := satellite.ActiveConflicts(s.cluster, configs.Items, nodes.Items)
	for i := range configs.Items {
		if err := r.updateConfigurationStatus(ctx, &configs.Items[i], matched[configs.Items[i].Name], conflicts[configs.Items[i].Name], skipped[configs.Items[i].Name]); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		s.satelliteErr = errors.New(strings.Join(errs, "; "))
		return ctrl.Result{}, s.satelliteErr
	}
	if deferred {
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	return ctrl.Result{}, nil
}

// skippedForTaints says why a selected node gets no satellite for a taint its pod does
// not tolerate (satellite.SkippedForTaints), or nil. Only a node without a satellite is
// ever skipped; one whose pod cannot be rendered is not (its LinstorSatellite reports
// the error).
func (r *Reconciler) skippedForTaints(cluster *linstorv1.LinstorCluster, sat *linstorv1.LinstorSatellite, node *corev1.Node, hasSatellite bool) *linstorv1.SkippedNode {
	if hasSatellite || len(node.Spec.Taints) == 0 {
		return nil
	}
	pod, err := render.SatellitePodSpec(cluster, sat, node, r.Images)
	if err != nil {
		return nil
	}
	return satellite.SkippedForTaints(node, pod, hasSatellite)
}

// certificateRecorded: the cluster's status holds the fingerprint of Secret name.
func certificateRecorded(c *linstorv1.LinstorCluster, name string) bool {
	for _, cert := range c.Status.Certificates {
		if cert.SecretName == name && cert.Fingerprint != "" {
			return true
		}
	}
	return false
}

// updateConfigurationStatus reports which nodes a configuration applies to. It writes
// only when something changed, so a steady state makes no writes.
func (r *Reconciler) updateConfigurationStatus(ctx context.Context, cfg *linstorv1.LinstorSatelliteConfiguration, nodes []string, conflict string, skipped []string) error {
	_, err := reconciler.PatchStatus(ctx, r.Client, cfg, func() {
		sort.Strings(nodes)
		cfg.Status.MatchedNodes = nodes
		cfg.Status.MatchedNodeCount = int32(len(nodes))
		cfg.Status.ObservedGeneration = cfg.Generation
		reconciler.SetCondition(&cfg.Status.Conditions, appliedCondition(cfg.Generation, len(nodes), conflict, skipped))
	})
	return client.IgnoreNotFound(err)
}

// appliedCondition says to how many nodes a configuration applies, and what of it does
// not: a later configuration overriding it, expandFrom properties left out.
func appliedCondition(generation int64, nodes int, conflict string, skipped []string) metav1.Condition {
	applied := metav1.Condition{
		Type: linstorv1.ConditionApplied, Status: metav1.ConditionTrue, Reason: linstorv1.ReasonAsExpected,
		ObservedGeneration: generation, Message: fmt.Sprintf("Applies to %d nodes", nodes),
	}
	if conflict != "" {
		applied.Reason, applied.Message = linstorv1.ReasonOverridden, fmt.Sprintf("Applies to %d nodes, but %s", nodes, conflict)
	}
	if len(skipped) > 0 {
		if conflict == "" {
			applied.Reason = linstorv1.ReasonPropertiesSkipped
		}
		applied.Message += "; " + skippedMessage(skipped)
	}
	return applied
}

// reconcileLinstor takes the controller's version from the observer's last cycle and
// applies controller properties.
func (r *Reconciler) reconcileLinstor(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.stopController != "" {
		return ctrl.Result{RequeueAfter: shortPoll}, nil // stopped on purpose: nothing to ask
	}
	key := client.ObjectKeyFromObject(s.cluster)
	r.Observer.Observe(s.cluster)
	conn, err := r.Linstor.Connect(ctx, s.cluster)
	if err != nil {
		s.linstorErr = err
		return ctrl.Result{RequeueAfter: shortPoll}, nil
	}
	s.linstorURL, s.httpClient = conn.URL, conn.HTTP
	if r.Observer.Invalidated(key) {
		s.linstorErr = errControllerRestarted
		return ctrl.Result{RequeueAfter: staleRetry}, nil
	}
	s.snap = r.Observer.Snapshot(key)
	if err := observer.Err(s.snap); err != nil {
		// A blip is retried before conditions change (the cached object's conditions may
		// lag behind our own last write, so they are not consulted).
		if !observer.Lasting(s.snap, r.Grace, time.Now()) {
			s.transient = true
			return ctrl.Result{RequeueAfter: shortPoll}, nil
		}
		s.linstorErr = err
		return ctrl.Result{RequeueAfter: shortPoll}, nil
	}
	s.linstorVersion = s.snap.Version
	s.lc = conn.Client
	fresh := r.Observer.Fresh(key, observer.Controller)
	if fresh == nil {
		// The cycle showing our last write comes first; the conditions stay as they are.
		s.transient = true
		return ctrl.Result{RequeueAfter: staleRetry}, nil
	}
	desired := map[string]string{}
	for _, p := range s.cluster.Spec.Properties {
		desired[p.Name] = p.Value
	}
	if _, set := desired[autoEvictAllowEviction]; !set {
		// LINSTOR evicts a node disconnected for an hour by default (k8s database
		// Migration_01_v1_15_0_init sets it on /CTRLCFG; ReconnectorTask acts on it),
		// without knowing what Kubernetes knows of the node or whether the node holds the
		// last good copy. spec.nodeFailure decides instead; an explicit spec.properties
		// entry keeps LINSTOR's own.
		desired[autoEvictAllowEviction] = "false"
	}
	valid, refused := linstor.ValidProperties(props.Controller, desired)
	if len(refused) > 0 {
		// Admission refuses these; they get here only when the webhook was bypassed.
		s.propertiesErr = fmt.Errorf("LINSTOR does not accept controller properties: %s", strings.Join(refused, "; "))
	}
	mod := linstor.WithoutUndeletable(props.Controller, linstor.PropertyDiff(fresh.ControllerProps, valid))
	if linstor.IsEmpty(mod) {
		return ctrl.Result{}, nil
	}
	// A rollback would undo the write (lifecycle.LinstorWritesFenced): it waits for the
	// upgrade or restore the status already reports as Progressing.
	if lifecycle.LinstorWritesFenced(&linstorv1.LinstorClusterStatus{Upgrade: s.upgradeStatus, Restore: s.restoreStatus}) != "" {
		return ctrl.Result{RequeueAfter: lifecycle.Poll}, nil
	}
	err = r.Observer.Writer(key, observer.Controller, conn.Client).Send(func(lc *lapi.Client) error {
		return linstor.ModifyProperties(mod, func(m lapi.GenericPropsModify) error { return lc.Controller.Modify(ctx, m) })
	})
	if err != nil {
		s.propertiesErr = err
		r.Recorder.Eventf(s.cluster, corev1.EventTypeWarning, "PropertiesFailed", "Setting controller properties: %v", err)
		return ctrl.Result{RequeueAfter: r.Backoff.Failed(s.cluster.UID)}, nil
	}
	r.Recorder.Eventf(s.cluster, corev1.EventTypeNormal, "PropertiesApplied", "Set %d and removed %d controller properties", len(mod.OverrideProps), len(mod.DeleteProps))
	return ctrl.Result{}, nil
}

// staleRetry: after a write, the observer's next cycle (asked for at once) shows it.
const staleRetry = 2 * time.Second

// autoEvictAllowEviction is LINSTOR's switch for its own auto-evict.
const autoEvictAllowEviction = "DrbdOptions/AutoEvictAllowEviction"

// errControllerRestarted: the operator changed the LINSTOR controller's Deployment and
// LINSTOR has not been asked since.
var errControllerRestarted = errors.New("the LINSTOR controller's Deployment changed; waiting for LINSTOR to answer")

// shortPoll is used while LINSTOR is not answering yet.
const shortPoll = 5 * time.Second

// inClusterURL is where workloads in the cluster reach LINSTOR.
func inClusterURL(c *linstorv1.LinstorCluster) string { return linstor.ClusterURL(c) }

// satelliteReady: LINSTOR reports the node ONLINE and every pool of its spec exists
// (LINSTOR accepts pools only once a node is ONLINE, so a satellite is ONLINE a moment
// before it can hold volumes).
func satelliteReady(sat *linstorv1.LinstorSatellite) bool {
	if sat.Status.ConnectionStatus != "ONLINE" {
		return false
	}
	have := map[string]bool{}
	for _, p := range sat.Status.StoragePools {
		have[strings.ToLower(p.Name)] = true
	}
	for _, p := range sat.Spec.StoragePools {
		if !have[strings.ToLower(p.Name)] {
			return false
		}
	}
	return true
}

// observeSatellites totals the satellites' reported state.
func (r *Reconciler) observeSatellites(ctx context.Context, s *scope) (ctrl.Result, error) {
	var sats linstorv1.LinstorSatelliteList
	if err := r.Client.List(ctx, &sats, client.InNamespace(s.cluster.Namespace), client.MatchingLabels{names.LabelCluster: s.cluster.Name}); err != nil {
		return ctrl.Result{}, err
	}
	var live []linstorv1.LinstorSatellite
	for _, sat := range sats.Items {
		if !sat.DeletionTimestamp.IsZero() {
			// A held mass removal is the cluster's business: it says why nothing moves.
			if d := meta.FindStatusCondition(sat.Status.Conditions, linstorv1.ConditionDegraded); d != nil && d.Reason == linstorv1.ReasonRemovalHeld {
				s.removalHeld = d.Message
			}
			continue
		}
		live = append(live, sat)
		s.satellitesTotal++
		if satelliteReady(&sat) {
			s.satellitesReady++
		}
		for _, p := range sat.Status.StoragePools {
			if p.TotalCapacity != nil && p.ProviderKind != string(lapi.DISKLESS) {
				s.poolsSeen = true
				s.totalKiB += p.TotalCapacity.Value() / 1024
				if p.FreeCapacity != nil {
					s.freeKiB += p.FreeCapacity.Value() / 1024
				}
			}
		}
	}
	recordMetrics(s.cluster, live)
	// Only what a working cycle saw: LINSTOR stopped or unreachable says nothing of its
	// satellites (the series goes, and with it the alert).
	recordPoolQuery(s.cluster, s.snap.Observed() && observer.Err(s.snap) == nil, s.snap.Observed() && s.snap.PoolsQueryErr != nil)
	return ctrl.Result{}, nil
}

// missingAccounts lists the ServiceAccounts that the pods rendered here and the
// satellites run as and that do not exist. They ship with the operator; without them
// every pod is refused (FailedCreate on a ReplicaSet or DaemonSet) and nothing on the
// LinstorCluster would say why. The workloads are applied anyway, so the pods start
// as soon as the accounts are installed.
func (r *Reconciler) missingAccounts(ctx context.Context, namespace string, objs render.Objects) []string {
	names := []string{names.ServiceAccountName(names.SatelliteComponent)}
	for _, o := range objs {
		switch w := o.(type) {
		case *appsv1.Deployment:
			names = append(names, w.Spec.Template.Spec.ServiceAccountName)
		case *appsv1.DaemonSet:
			names = append(names, w.Spec.Template.Spec.ServiceAccountName)
		}
	}
	slices.Sort(names)
	var missing []string
	for _, name := range slices.Compact(names) {
		if name == "" {
			continue
		}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &corev1.ServiceAccount{})
		if apierrors.IsNotFound(err) {
			missing = append(missing, name)
		}
	}
	return missing
}
