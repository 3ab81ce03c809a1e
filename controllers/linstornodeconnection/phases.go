package linstornodeconnection

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	lapi "github.com/LINBIT/golinstor/client"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/controllers/reconciler"
	"github.com/linstor-operator/linstor-operator/pkg/lifecycle"
	"github.com/linstor-operator/linstor-operator/pkg/linstor"
	"github.com/linstor-operator/linstor-operator/pkg/linstor/observer"
	"github.com/linstor-operator/linstor-operator/pkg/linstor/props"
	"github.com/linstor-operator/linstor-operator/pkg/names"
	"github.com/linstor-operator/linstor-operator/pkg/nodeconnection"
	"github.com/linstor-operator/linstor-operator/pkg/satellite"
)

// scope carries one pass of one connection object.
type scope struct {
	lnc *linstorv1.LinstorNodeConnection
	// stop ends the pass: the steps after need this one done.
	stop bool
	// misplaced says why the object is ignored in its namespace ("" when it is not).
	misplaced string
	// synced: the pass compared LINSTOR with the object; then syncErr, fenced and
	// progress say how far it got.
	synced   bool
	syncErr  error
	fenced   string
	progress string
}

// end stops the pass at this step with its outcome.
func (s *scope) end(res ctrl.Result, err error) (ctrl.Result, error) {
	s.stop = true
	return res, err
}

// reconcilePlacement: a connection outside the operator's namespace touches no
// LINSTOR; its status says so (saveStatus).
func (r *Reconciler) reconcilePlacement(ctx context.Context, s *scope) (ctrl.Result, error) {
	why, err := r.misplaced(ctx, s.lnc)
	if err != nil {
		return s.end(ctrl.Result{}, err)
	}
	if why != "" {
		s.misplaced = why
		return s.end(ctrl.Result{}, nil)
	}
	return ctrl.Result{}, nil
}

// reconcileFinalizer: the object stays until its properties are out of LINSTOR.
func (r *Reconciler) reconcileFinalizer(ctx context.Context, s *scope) (ctrl.Result, error) {
	if controllerutil.AddFinalizer(s.lnc, names.FinalizerNodeConnectionCleanup) {
		if err := r.Client.Update(ctx, s.lnc); err != nil {
			return s.end(ctrl.Result{}, err)
		}
	}
	return ctrl.Result{}, nil
}

// reconcilePairs configures the selected pairs. A LINSTOR failure is no error of the
// pass: the status says it, and the retry is spaced by the Backoff (recorded once the
// status is saved, saveStatus).
func (r *Reconciler) reconcilePairs(ctx context.Context, s *scope) (ctrl.Result, error) {
	lc, snap, fence, err := r.client(ctx, s.lnc.Namespace)
	if err == nil {
		s.progress, s.fenced, err = r.sync(ctx, lc, snap, s.lnc, false, fence)
	}
	s.synced, s.syncErr = true, err
	var tooMany *tooManyPairsError
	switch {
	case errors.As(err, &tooMany):
		return ctrl.Result{}, nil // the spec has to change
	case err != nil:
		return ctrl.Result{RequeueAfter: r.Backoff.Next(s.lnc.UID)}, nil
	case s.fenced != "":
		return ctrl.Result{RequeueAfter: shortPoll}, nil // no watch of the LinstorCluster says when the fence lifts
	case s.progress != "":
		return ctrl.Result{RequeueAfter: time.Second}, nil // the next batch
	}
	return ctrl.Result{RequeueAfter: reconciler.Resync}, nil
}

// misplaced says why lnc is ignored for its namespace ("" when it is not).
func (r *Reconciler) misplaced(ctx context.Context, lnc *linstorv1.LinstorNodeConnection) (string, error) {
	var clusters linstorv1.LinstorClusterList
	if err := r.Client.List(ctx, &clusters); err != nil {
		return "", err
	}
	return satellite.Misplaced("LinstorNodeConnection", lnc.Namespace, r.Namespace, clusters.Items), nil
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
	tracker := names.AuxNodeConnectionPrefix + lnc.Namespace + "." + lnc.Name
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
