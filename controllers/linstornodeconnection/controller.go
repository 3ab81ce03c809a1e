package linstornodeconnection

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	lapi "github.com/LINBIT/golinstor/client"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/controllers/phases"
	"github.com/linstor-operator/linstor-operator/pkg/lifecycle"
	"github.com/linstor-operator/linstor-operator/pkg/linstor"
	"github.com/linstor-operator/linstor-operator/pkg/linstor/observer"
	"github.com/linstor-operator/linstor-operator/pkg/linstor/props"
	"github.com/linstor-operator/linstor-operator/pkg/nodeconnection"
	"github.com/linstor-operator/linstor-operator/pkg/satellite"
)

// Finalizer removes the object's properties from LINSTOR before it goes.
const Finalizer = "linstor.io/node-connection-cleanup"

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
	Backoff phases.Backoff
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
	deleting := !lnc.DeletionTimestamp.IsZero()
	if deleting && !controllerutil.ContainsFinalizer(lnc, Finalizer) {
		return ctrl.Result{}, nil
	}
	if why, err := r.misplaced(ctx, lnc); err != nil || why != "" {
		return ctrl.Result{}, r.ignore(ctx, lnc, why, err)
	}
	if !deleting && controllerutil.AddFinalizer(lnc, Finalizer) {
		if err := r.Client.Update(ctx, lnc); err != nil {
			return ctrl.Result{}, err
		}
	}
	var progress, fenced string
	lc, snap, fence, err := r.client(ctx, lnc.Namespace)
	if err == nil {
		progress, fenced, err = r.sync(ctx, lc, snap, lnc, deleting, fence)
	}
	if deleting {
		// Without a LinstorCluster there is no LINSTOR to clean up (the namespace is
		// going away): let the object go rather than block it forever. Properties to
		// remove wait for the fence: the object stays until they are removed.
		if (err != nil && !errors.Is(err, errNoCluster)) || fenced != "" {
			return ctrl.Result{RequeueAfter: shortPoll}, nil
		}
		controllerutil.RemoveFinalizer(lnc, Finalizer)
		return ctrl.Result{}, r.Client.Update(ctx, lnc)
	}

	before := lnc.DeepCopy()
	cond := metav1.Condition{Type: linstorv1.ConditionConfigured, Status: metav1.ConditionTrue, Reason: linstorv1.ReasonAsExpected, ObservedGeneration: lnc.Generation}
	var tooMany *tooManyPairsError
	switch {
	case errors.As(err, &tooMany):
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, linstorv1.ReasonInvalidSpec, err.Error()
	case err != nil:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, linstorv1.ReasonLinstorError, err.Error()
	case fenced != "":
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, linstorv1.ReasonLinstorWritesFenced, fenced
	case progress != "":
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, linstorv1.ReasonReconciling, progress
	default:
		lnc.Status.ObservedGeneration = lnc.Generation
	}
	phases.SetCondition(&lnc.Status.Conditions, cond)
	if !equality.Semantic.DeepEqual(before.Status, lnc.Status) {
		if perr := r.Client.Status().Patch(ctx, lnc, client.MergeFrom(before)); perr != nil && !apierrors.IsNotFound(perr) {
			return ctrl.Result{}, perr
		}
	}
	switch {
	case tooMany != nil:
		return ctrl.Result{}, nil // the spec has to change
	case err != nil:
		return ctrl.Result{RequeueAfter: r.Backoff.Failed(lnc.UID)}, nil
	case fenced != "":
		return ctrl.Result{RequeueAfter: shortPoll}, nil // no watch of the LinstorCluster says when the fence lifts
	case progress != "":
		return ctrl.Result{RequeueAfter: time.Second}, nil // the next batch
	}
	r.Backoff.Succeeded(lnc.UID)
	return ctrl.Result{RequeueAfter: phases.Resync}, nil
}

// misplaced says why lnc is ignored for its namespace ("" when it is not).
func (r *Reconciler) misplaced(ctx context.Context, lnc *linstorv1.LinstorNodeConnection) (string, error) {
	var clusters linstorv1.LinstorClusterList
	if err := r.Client.List(ctx, &clusters); err != nil {
		return "", err
	}
	return satellite.Misplaced("LinstorNodeConnection", lnc.Namespace, r.Namespace, clusters.Items), nil
}

// ignore reports a misplaced connection: Configured=False (WrongNamespace) and one
// Warning event when the condition first says so; a resync writes nothing. It touches
// no LINSTOR: the connection was never applied from here, so a deletion just goes.
func (r *Reconciler) ignore(ctx context.Context, lnc *linstorv1.LinstorNodeConnection, why string, err error) error {
	switch {
	case err != nil:
		return err
	case !lnc.DeletionTimestamp.IsZero():
		controllerutil.RemoveFinalizer(lnc, Finalizer)
		return client.IgnoreNotFound(r.Client.Update(ctx, lnc))
	}
	before := lnc.DeepCopy()
	already := meta.FindStatusCondition(lnc.Status.Conditions, linstorv1.ConditionConfigured)
	phases.SetCondition(&lnc.Status.Conditions, metav1.Condition{Type: linstorv1.ConditionConfigured, Status: metav1.ConditionFalse,
		Reason: linstorv1.ReasonWrongNamespace, ObservedGeneration: lnc.Generation, Message: why})
	if equality.Semantic.DeepEqual(before.Status, lnc.Status) {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, lnc, client.MergeFrom(before)); err != nil {
		return client.IgnoreNotFound(err)
	}
	if already == nil || already.Reason != linstorv1.ReasonWrongNamespace {
		r.Recorder.Event(lnc, corev1.EventTypeWarning, linstorv1.ReasonWrongNamespace, why)
	}
	return nil
}

// tooManyPairsError: the selector selects more pairs than MaxPairs.
type tooManyPairsError struct{ pairs int }

func (e *tooManyPairsError) Error() string {
	return fmt.Sprintf("spec.selector selects %d node pairs, more than the %d allowed (each pair is a LINSTOR request): narrow the selector; options for every connection belong in the LinstorCluster's spec.properties", e.pairs, MaxPairs)
}

// sync diffs every LINSTOR node connection against what this object wants. It writes
// at most maxWritesPerPass pairs and then returns how far it got. While fence (why the
// operator's LINSTOR writes wait, lifecycle.LinstorWritesFenced) stands it writes
// nothing and says, in fenced, how many pairs wait and why.
func (r *Reconciler) sync(ctx context.Context, lc *lapi.Client, snap *observer.Snapshot, lnc *linstorv1.LinstorNodeConnection, deleting bool, fence string) (progress, fenced string, err error) {
	tracker := "Aux/linstor-operator/lnc/" + lnc.Namespace + "." + lnc.Name
	var nodes []corev1.Node
	for _, ln := range snap.Nodes() {
		n := corev1.Node{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: ln.Name}, &n); err == nil {
			nodes = append(nodes, n)
		}
	}
	desired := map[nodeconnection.Pair]map[string]string{}
	if !deleting {
		pairs := nodeconnection.Pairs(lnc.Spec.Selector, nodes)
		if len(pairs) > MaxPairs {
			return "", "", &tooManyPairsError{pairs: len(pairs)}
		}
		for _, p := range pairs {
			desired[p] = nodeconnection.Desired(&lnc.Spec, p)
		}
	}
	existing, err := lc.Connections.GetNodeConnections(ctx, "", "")
	if err != nil {
		return "", "", fmt.Errorf("listing node connections: %w", err)
	}
	current := map[nodeconnection.Pair]map[string]string{}
	for _, c := range existing {
		a, b := c.NodeA, c.NodeB
		if a > b {
			a, b = b, a
		}
		current[nodeconnection.Pair{A: a, B: b}] = c.Props
	}
	var errs []string
	writes, pending, held := 0, 0, 0
	apply := func(p nodeconnection.Pair, want map[string]string) {
		mod := linstor.WithoutUndeletable(props.NodeConnection, linstor.TrackedPropertyDiff(current[p], want, tracker))
		if linstor.IsEmpty(mod) {
			return
		}
		if fence != "" {
			held++
			return
		}
		if writes >= maxWritesPerPass {
			pending++
			return
		}
		writes++
		err := linstor.ModifyProperties(mod, func(m lapi.GenericPropsModify) error { return lc.Connections.SetNodeConnection(ctx, p.A, p.B, m) })
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s/%s: %v", p.A, p.B, err))
		}
	}
	refusedOnce := map[string]bool{}
	for p, want := range desired {
		valid, refused := linstor.ValidProperties(props.NodeConnection, want)
		for _, why := range refused {
			if !refusedOnce[why] {
				refusedOnce[why] = true
				errs = append(errs, "LINSTOR does not accept "+why)
			}
		}
		apply(p, valid)
	}
	for p, cur := range current {
		if _, wanted := desired[p]; !wanted && cur[tracker] != "" {
			apply(p, nil)
		}
	}
	if len(errs) > 0 {
		return "", "", fmt.Errorf("setting node connections: %s", strings.Join(errs, "; "))
	}
	if held > 0 {
		fenced = fmt.Sprintf("LINSTOR writes wait (%d node pairs to configure): %s", held, fence)
	}
	if pending > 0 {
		progress = fmt.Sprintf("%d node pairs still to configure (at most %d LINSTOR requests per pass)", pending, maxWritesPerPass)
	}
	return progress, fenced, nil
}

// client finds LINSTOR through the LinstorCluster of the namespace, its nodes as the
// observer last listed them, and why the operator's LINSTOR writes wait now ("" when
// they may run; read from the cached cluster, it costs no request).
func (r *Reconciler) client(ctx context.Context, namespace string) (*lapi.Client, *observer.Snapshot, string, error) {
	var clusters linstorv1.LinstorClusterList
	if err := r.Client.List(ctx, &clusters, client.InNamespace(namespace)); err != nil {
		return nil, nil, "", err
	}
	if len(clusters.Items) == 0 {
		return nil, nil, "", fmt.Errorf("%w in namespace %s", errNoCluster, namespace)
	}
	cluster := &clusters.Items[0]
	r.Observer.Observe(cluster)
	snap := r.Observer.Snapshot(client.ObjectKeyFromObject(cluster))
	if err := observer.Err(snap); err != nil {
		return nil, nil, "", fmt.Errorf("%w: %v", linstor.ErrUnreachable, err)
	}
	conn, err := r.Linstor.Connect(ctx, cluster)
	if err != nil {
		return nil, nil, "", err
	}
	return conn.Client, snap, lifecycle.LinstorWritesFenced(&cluster.Status), nil
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
		For(&linstorv1.LinstorNodeConnection{}, builder.WithPredicates(phases.NotStatusOnly())).
		Watches(&corev1.Node{}, all, builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Watches(&linstorv1.LinstorSatellite{}, all, builder.WithPredicates(predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.(*linstorv1.LinstorSatellite).Status.ConnectionStatus != e.ObjectNew.(*linstorv1.LinstorSatellite).Status.ConnectionStatus
		}})).
		Complete(r)
}
