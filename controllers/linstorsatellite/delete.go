package linstorsatellite

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/linstorstate"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	lapi "github.com/LINBIT/golinstor/client"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/lifecycle"
	"github.com/linstor-operator/linstor-operator/pkg/linstor"
	"github.com/linstor-operator/linstor-operator/pkg/satellite"
)

// reconcileDelete applies the deletion policy to the LINSTOR node. Whatever could lose
// data waits and says why; it never forces.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (ctrl.Result, error) {
	sat := s.sat
	if !controllerutil.ContainsFinalizer(sat, names.FinalizerSatelliteDeletion) {
		return ctrl.Result{}, nil
	}
	policy := sat.Spec.DeletionPolicy
	// Deleting the whole LinstorCluster (or losing it) must never delete LINSTOR nodes:
	// the satellites go with their owner, LINSTOR's state stays.
	if s.cluster == nil || !s.cluster.DeletionTimestamp.IsZero() {
		policy = linstorv1.DeletionRetain
	}
	done := true
	switch policy {
	case linstorv1.DeletionDelete:
		done = r.stillWanted(ctx, s) || r.deleteNode(ctx, s, true)
	case linstorv1.DeletionEvacuate:
		done = r.evacuateNode(ctx, s)
	}
	if !done {
		if err := r.writeStatus(ctx, s, false); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: shortPoll}, nil
	}
	controllerutil.RemoveFinalizer(sat, names.FinalizerSatelliteDeletion)
	return ctrl.Result{}, r.Client.Update(ctx, sat)
}

// deleteNode deletes the LINSTOR node unless that could destroy data or cut off a
// replica in use (satellite.DeleteHeld). LINSTOR itself deletes a node holding the
// only replica of a resource that has no diskless peers (it refuses only the last
// diskful replica of a resource with diskless peers, and replicas it knows in use), so
// the operator checks first. A node acknowledged lost goes with LINSTOR's node lost:
// a node delete would wait for its satellite for ever
// (CtrlNodeDeleteApiCallHandler.updateSatellites resumes only when it connects).
// guard: this removal has not passed guardedRemoval yet (Delete); it is judged after
// the data, so a removal that waits for its data takes no place among the removals.
func (r *Reconciler) deleteNode(ctx context.Context, s *scope, guard bool) bool {
	if s.linstorErr != nil {
		s.deleteWait = s.linstorErr.Error()
		return false
	}
	in, found, err := r.removalSafety(ctx, s, nil)
	if err != nil {
		s.deleteWait = fmt.Sprintf("cannot read node %s and its resources, waiting: %v", s.sat.Name, err)
		return false
	}
	if !found {
		return true
	}
	if r.held(s, satellite.DeleteHeld(in)) || guard && !r.guardedRemoval(ctx, s) {
		return false
	}
	what := "deleting node " + s.sat.Name
	if in.NodeLost() {
		what = "removing lost node " + s.sat.Name
	}
	if !s.writer.may(what) {
		return false
	}
	if in.NodeLost() {
		err = s.writer.send(func(lc *lapi.Client) error { return lc.Nodes.Lost(ctx, s.sat.Name) })
		if err == nil || linstor.IsNotFound(err) {
			r.Recorder.Eventf(s.sat, corev1.EventTypeNormal, "NodeLost", "Removed LINSTOR node %s as lost (%s): its replicas there are gone, the survivors hold the data",
				s.sat.Name, names.AnnotationAcknowledgeLostNodes)
			return true
		}
		s.deleteWait = fmt.Sprintf("LINSTOR refuses to remove the lost node %s, waiting: %v", s.sat.Name, err)
		r.Recorder.Event(s.sat, corev1.EventTypeWarning, "NodeDeleteRefused", s.deleteWait)
		return false
	}
	err = s.writer.send(func(lc *lapi.Client) error { return lc.Nodes.Delete(ctx, s.sat.Name) })
	switch {
	case err == nil:
		r.Recorder.Eventf(s.sat, corev1.EventTypeNormal, "NodeDeleted", "Deleted LINSTOR node %s", s.sat.Name)
		return true
	case linstor.IsNotFound(err):
		return true
	default:
		s.deleteWait = fmt.Sprintf("LINSTOR refuses to delete node %s, waiting: %v", s.sat.Name, err)
		r.Recorder.Event(s.sat, corev1.EventTypeWarning, "NodeDeleteRefused", s.deleteWait)
		return false
	}
}

// removalSafety reads what satellite.DeleteHeld and EvacuateHeld judge: the node as
// LINSTOR reports it (lnode when already read), every replica of the resources on it,
// and the nodes acknowledged lost. found is false when LINSTOR no longer has the node.
func (r *Reconciler) removalSafety(ctx context.Context, s *scope, lnode *lapi.Node) (satellite.RemovalSafety, bool, error) {
	if lnode == nil {
		n, err := s.writer.read().Nodes.Get(ctx, s.sat.Name)
		if linstor.IsNotFound(err) {
			return satellite.RemovalSafety{}, false, nil
		}
		if err != nil {
			return satellite.RemovalSafety{}, false, err
		}
		lnode = &n
	}
	replicas, err := linstor.ReplicasOf(ctx, s.writer.read(), s.sat.Name)
	if err != nil {
		return satellite.RemovalSafety{}, false, err
	}
	in := satellite.RemovalSafety{Node: lnode.Name, ConnectionStatus: lnode.ConnectionStatus, Resources: replicas}
	if s.cluster != nil {
		in.Lost = lifecycle.LostNames(s.cluster.Status.LostNodes)
	}
	return in, true, nil
}

// held reports a hold on the satellite (condition and a Warning Event); false when
// there is none.
func (r *Reconciler) held(s *scope, h satellite.Hold) bool {
	if h.Reason == "" {
		return false
	}
	s.deleteReason, s.deleteWait = h.Reason, h.Message
	event := "NodeHoldsLastReplica"
	if h.Reason == linstorv1.ReasonNodeOffline {
		event = "NodeStillRunning"
	}
	r.Recorder.Event(s.sat, corev1.EventTypeWarning, event, h.Message)
	return true
}

// evacuationRetry is how long a stuck evacuation waits before the operator asks
// LINSTOR again (two polls, a minute by default): LINSTOR places replacements only when
// asked, so a replica that had no place (no pool with room) stays until someone
// evacuates again.
func (r *Reconciler) evacuationRetry() time.Duration { return 2 * r.poll() }

// evacuateNode moves every replica away, waits until none remain, then deletes. What
// cannot move is reported on the LinstorSatellite and asked again now and then; the
// node is never deleted while it holds data.
func (r *Reconciler) evacuateNode(ctx context.Context, s *scope) bool {
	if s.linstorErr != nil {
		s.deleteWait = s.linstorErr.Error()
		return false
	}
	lnode, err := s.writer.read().Nodes.Get(ctx, s.sat.Name)
	if linstor.IsNotFound(err) {
		return true
	}
	if err != nil {
		s.deleteWait = err.Error()
		return false
	}
	if !linstorstate.HasFlag(lnode.Flags, "EVACUATE") {
		if r.stillWanted(ctx, s) {
			return true
		}
		// The data first: an evacuation that waits for it takes no place among the
		// removals (guardedRemoval), so a node that cannot go yet stops no other.
		if !r.evacuationSafe(ctx, s, &lnode) || !r.guardedRemoval(ctx, s) {
			return false
		}
		// Evacuations copy whole volumes over the network: limit how many run at once,
		// counting those LINSTOR runs for anyone.
		if max := s.sat.Spec.MaxConcurrentEvacuations; max != nil {
			all, err := s.writer.read().Nodes.GetAll(ctx)
			if err != nil {
				s.deleteWait = err.Error()
				return false
			}
			running := 0
			for _, n := range all {
				if n.Name != s.sat.Name && linstorstate.HasFlag(n.Flags, "EVACUATE") {
					running++
				}
			}
			if running >= int(*max) {
				s.deleteWait = fmt.Sprintf("waiting: %d evacuations already run and maxConcurrentEvacuations is %d", running, *max)
				return false
			}
		}
		if !s.writer.may("evacuating node "+s.sat.Name) || !r.evacuate(ctx, s) {
			return false
		}
	}
	replicas, err := linstor.ReplicasOf(ctx, s.writer.read(), s.sat.Name)
	if err != nil {
		s.deleteWait = err.Error()
		return false
	}
	ev := linstorstate.ObserveEvacuation(s.sat.Name, replicas)
	if ev.Empty() {
		return r.deleteNode(ctx, s, false)
	}
	if len(ev.Moving) == 0 && s.cluster != nil &&
		(satellite.RemovalSafety{Node: lnode.Name, ConnectionStatus: lnode.ConnectionStatus, Lost: lifecycle.LostNames(s.cluster.Status.LostNodes)}).NodeLost() {
		// A lost node: what is left there stays, as LINSTOR deletes a replica only once
		// its satellite confirms. The replacements are done; node lost removes the rest
		// once the survivors hold the data (satellite.DeleteHeld).
		return r.deleteNode(ctx, s, false)
	}
	var parts []string
	if len(ev.Moving) > 0 {
		parts = append(parts, fmt.Sprintf("%d moving (%s)", len(ev.Moving), listNames(ev.Moving)))
	}
	if len(ev.InUse) > 0 {
		parts = append(parts, fmt.Sprintf("%d in use on the node, waiting for their workloads to move (%s)", len(ev.InUse), listNames(ev.InUse)))
	}
	if len(ev.NotReplicated) > 0 {
		s.deleteReason = linstorv1.ReasonHoldsLastReplica
		parts = append(parts, fmt.Sprintf("%d have no DRBD layer, so LINSTOR does not move them and their data lives only on this node (%s): move or delete those volumes",
			len(ev.NotReplicated), listNames(ev.NotReplicated)))
	}
	if len(ev.Waiting) > 0 {
		waiting := make([]string, len(ev.Waiting))
		for i, w := range ev.Waiting {
			waiting[i] = fmt.Sprintf("%s: waiting for %s", w.Resource, strings.Join(w.Nodes, ", "))
		}
		parts = append(parts, fmt.Sprintf("%d have replicas on nodes whose satellites are not ONLINE, so nothing is known to move (%s)", len(ev.Waiting), listNames(waiting)))
	}
	if len(ev.Stuck) > 0 {
		parts = append(parts, fmt.Sprintf("%d cannot move, no storage pool elsewhere can take them (%s): add capacity or nodes",
			len(ev.Stuck), listNames(ev.Stuck)))
	}
	if len(ev.Stuck) > 0 || len(ev.Waiting) > 0 {
		if s.deleteReason == "" {
			s.deleteReason = linstorv1.ReasonEvacuationStuck
		}
		parts[len(parts)-1] += fmt.Sprintf("; the operator asks LINSTOR again every %s", r.evacuationRetry())
		// Only when nothing moves: a new request would place another replica of a
		// resource whose replacement is still resyncing.
		if len(ev.Moving) == 0 {
			if !r.evacuationSafe(ctx, s, &lnode) {
				parts = append(parts, "not now: "+s.deleteWait)
			} else if r.evacuationDue(s.sat.UID) && s.writer.may("evacuating node "+s.sat.Name+" again") {
				r.evacuate(ctx, s)
			}
		}
	}
	s.deleteWait = fmt.Sprintf("evacuating node %s: %s", s.sat.Name, strings.Join(parts, "; "))
	return false
}

// stillWanted cancels a removal that has not started when the cluster wants a
// satellite on the node again (a nodeSelector typo fixed, a satellite deleted by hand):
// the object goes as with Retain, LINSTOR is not touched, and the satellite the
// cluster recreates adopts the LINSTOR node as it is.
func (r *Reconciler) stillWanted(ctx context.Context, s *scope) bool {
	node := &corev1.Node{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: s.sat.Name}, node); err != nil || !node.DeletionTimestamp.IsZero() {
		return false
	}
	var configs linstorv1.LinstorSatelliteConfigurationList
	if err := r.Client.List(ctx, &configs, client.InNamespace(s.sat.Namespace)); err != nil {
		return false
	}
	decision, err := satellite.Desired(s.cluster, configs.Items, node)
	if err != nil || !decision.Selected {
		return false
	}
	r.Recorder.Eventf(s.sat, corev1.EventTypeNormal, "RemovalCancelled", "Node %s is selected again: its LINSTOR node is kept and its satellite recreated", s.sat.Name)
	return true
}

// guardedRemoval decides whether this satellite's Evacuate or Delete may start now
// (pkg/satellite.RemovalHeld): never more than a share of the cluster at once without
// confirmation, and never more than maxConcurrentEvacuations.
func (r *Reconciler) guardedRemoval(ctx context.Context, s *scope) bool {
	var list linstorv1.LinstorSatelliteList
	if err := r.Client.List(ctx, &list, client.InNamespace(s.sat.Namespace), client.MatchingLabels{names.LabelCluster: s.cluster.Name}); err != nil {
		s.deleteWait = fmt.Sprintf("listing the cluster's satellites: %v", err)
		return false
	}
	in := satellite.Removal{Name: s.sat.Name, Total: len(list.Items), MaxConcurrent: s.sat.Spec.MaxConcurrentEvacuations,
		Confirmed: s.cluster.Annotations[names.AnnotationConfirmRemoval]}
	for _, sat := range list.Items {
		// Selection is the cluster controller's to judge: here only deletions under way
		// count, and one whose finalizer is gone is over.
		if satellite.Removing(&sat, true, true) && controllerutil.ContainsFinalizer(&sat, names.FinalizerSatelliteDeletion) {
			in.Removing = append(in.Removing, sat.Name)
			if waitsForData(&sat) {
				in.Held = append(in.Held, sat.Name)
			}
		}
	}
	held := satellite.RemovalHeld(in)
	if held == "" {
		return true
	}
	s.deleteWait, s.deleteReason = held, linstorv1.ReasonRemovalHeld
	ctrl.LoggerFrom(ctx).V(1).Info("removal held", "satellite", s.sat.Name, "why", held)
	return false
}

// waitsForData: the satellite said last that its removal waits until its node's data
// is safe (the reasons of satellite.DeleteHeld and EvacuateHeld).
func waitsForData(sat *linstorv1.LinstorSatellite) bool {
	d := meta.FindStatusCondition(sat.Status.Conditions, linstorv1.ConditionDegraded)
	return d != nil && d.Status == metav1.ConditionTrue &&
		(d.Reason == linstorv1.ReasonHoldsLastReplica || d.Reason == linstorv1.ReasonNodeOffline)
}

// evacuationSafe says whether LINSTOR may be asked to evacuate the node now
// (satellite.EvacuateHeld); otherwise the satellite says why. lnode is the LINSTOR node
// when already read.
func (r *Reconciler) evacuationSafe(ctx context.Context, s *scope, lnode *lapi.Node) bool {
	in, found, err := r.removalSafety(ctx, s, lnode)
	if err != nil {
		s.deleteWait = fmt.Sprintf("cannot read node %s and its resources, waiting: %v", s.sat.Name, err)
		return false
	}
	return found && !r.held(s, satellite.EvacuateHeld(in))
}

// evacuate asks LINSTOR to evacuate and reports replicas it could not place.
func (r *Reconciler) evacuate(ctx context.Context, s *scope) bool {
	r.markEvacuation(s.sat.UID)
	warnings, err := s.writer.evacuate(ctx)
	if err != nil {
		s.deleteWait = fmt.Sprintf("evacuating node %s: %v", s.sat.Name, err)
		return false
	}
	if len(warnings) > 0 {
		r.Recorder.Eventf(s.sat, corev1.EventTypeWarning, "EvacuationStuck", "Evacuating LINSTOR node %s: %s", s.sat.Name, strings.Join(warnings, "; "))
	} else {
		r.Recorder.Eventf(s.sat, corev1.EventTypeNormal, "Evacuating", "Evacuating LINSTOR node %s", s.sat.Name)
	}
	return true
}

func (r *Reconciler) markEvacuation(uid types.UID) {
	r.evacMu.Lock()
	defer r.evacMu.Unlock()
	if r.lastEvacuation == nil {
		r.lastEvacuation = map[types.UID]time.Time{}
	}
	r.lastEvacuation[uid] = time.Now()
}

func (r *Reconciler) evacuationDue(uid types.UID) bool {
	r.evacMu.Lock()
	defer r.evacMu.Unlock()
	last, ok := r.lastEvacuation[uid]
	return !ok || time.Since(last) >= r.evacuationRetry()
}

// listNames keeps status messages bounded: the first few names and a count.
func listNames(names []string) string {
	const shown = 5
	if len(names) <= shown {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:shown], ", "), len(names)-shown)
}
