package linstorsatellite

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/linstor"
	"github.com/linstor-operator/linstor-operator/pkg/render"
	"github.com/linstor-operator/linstor-operator/pkg/satellite"
)

// reconcileDelete applies the deletion policy to the LINSTOR node. Whatever could lose
// data waits and says why; it never forces.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (ctrl.Result, error) {
	sat := s.sat
	if !controllerutil.ContainsFinalizer(sat, Finalizer) {
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
		done = r.stillWanted(ctx, s) || r.guardedRemoval(ctx, s) && r.deleteNode(ctx, s)
	case linstorv1.DeletionEvacuate:
		done = r.evacuateNode(ctx, s)
	}
	if !done {
		if err := r.updateStatus(ctx, s, false); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: shortPoll}, nil
	}
	controllerutil.RemoveFinalizer(sat, Finalizer)
	return ctrl.Result{}, r.Client.Update(ctx, sat)
}

// deleteNode deletes the LINSTOR node unless that would destroy data. LINSTOR itself
// deletes a node holding the only replica of a resource that has no diskless peers
// (it refuses only the last diskful replica of a resource with diskless peers, and
// in-use replicas), so the operator checks first: the node goes only when every
// resource on it has an UpToDate diskful copy elsewhere that is connected to it
// (linstor.LastCopies).
func (r *Reconciler) deleteNode(ctx context.Context, s *scope) bool {
	if s.linstorErr != nil {
		s.deleteWait = s.linstorErr.Error()
		return false
	}
	replicas, err := linstor.ReplicasOf(ctx, s.lc, s.sat.Name)
	if err != nil {
		s.deleteWait = fmt.Sprintf("cannot read the resources on node %s, waiting: %v", s.sat.Name, err)
		return false
	}
	if last := linstor.LastCopies(s.sat.Name, replicas); len(last) > 0 {
		s.deleteReason = linstorv1.ReasonHoldsLastReplica
		s.deleteWait = fmt.Sprintf("node %s holds the only up-to-date copy of %s: deleting it would destroy that data; move or delete those volumes, or use deletionPolicy Evacuate",
			s.sat.Name, describeCopies(last))
		r.Recorder.Event(s.sat, corev1.EventTypeWarning, "NodeHoldsLastReplica", s.deleteWait)
		return false
	}
	err = s.lc.Nodes.Delete(ctx, s.sat.Name)
	r.wrote(s)
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
	lnode, err := s.lc.Nodes.Get(ctx, s.sat.Name)
	if linstor.IsNotFound(err) {
		return true
	}
	if err != nil {
		s.deleteWait = err.Error()
		return false
	}
	if !linstor.HasFlag(lnode.Flags, "EVACUATE") {
		if r.stillWanted(ctx, s) {
			return true
		}
		if !r.guardedRemoval(ctx, s) {
			return false
		}
		// Evacuations copy whole volumes over the network: limit how many run at once,
		// counting those LINSTOR runs for anyone.
		if max := s.sat.Spec.MaxConcurrentEvacuations; max != nil {
			all, err := s.lc.Nodes.GetAll(ctx)
			if err != nil {
				s.deleteWait = err.Error()
				return false
			}
			running := 0
			for _, n := range all {
				if n.Name != s.sat.Name && linstor.HasFlag(n.Flags, "EVACUATE") {
					running++
				}
			}
			if running >= int(*max) {
				s.deleteWait = fmt.Sprintf("waiting: %d evacuations already run and maxConcurrentEvacuations is %d", running, *max)
				return false
			}
		}
		if !r.evacuationSafe(ctx, s) || !r.evacuate(ctx, s) {
			return false
		}
	}
	replicas, err := linstor.ReplicasOf(ctx, s.lc, s.sat.Name)
	if err != nil {
		s.deleteWait = err.Error()
		return false
	}
	ev := linstor.ObserveEvacuation(s.sat.Name, replicas)
	if ev.Empty() {
		return r.deleteNode(ctx, s)
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
	if len(ev.Stuck) > 0 {
		s.deleteReason = linstorv1.ReasonEvacuationStuck
		parts = append(parts, fmt.Sprintf("%d cannot move, no storage pool elsewhere can take them (%s): add capacity or nodes; the operator asks LINSTOR again every %s",
			len(ev.Stuck), listNames(ev.Stuck), r.evacuationRetry()))
		if len(ev.Moving) == 0 && r.evacuationDue(s.sat.UID) && r.evacuationSafe(ctx, s) {
			// Only when nothing moves: a new request would place another replica of a
			// resource whose replacement is still resyncing.
			r.evacuate(ctx, s)
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
	if err := r.Client.List(ctx, &list, client.InNamespace(s.sat.Namespace), client.MatchingLabels{render.LabelCluster: s.cluster.Name}); err != nil {
		s.deleteWait = fmt.Sprintf("listing the cluster's satellites: %v", err)
		return false
	}
	in := satellite.Removal{Name: s.sat.Name, Total: len(list.Items), MaxConcurrent: s.sat.Spec.MaxConcurrentEvacuations,
		Confirmed: s.cluster.Annotations[satellite.AnnotationConfirmRemoval]}
	for _, sat := range list.Items {
		// Selection is the cluster controller's to judge: here only deletions under way
		// count, and one whose finalizer is gone is over.
		if satellite.Removing(&sat, true, true) && controllerutil.ContainsFinalizer(&sat, Finalizer) {
			in.Removing = append(in.Removing, sat.Name)
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

// evacuationSafe holds an evacuation while a peer LINSTOR would count as a good copy
// is cut off from this node (linstor.EvacuationHazards): LINSTOR could drop this
// node's replica, which may hold the newest data, or resync its replacement from the
// stale copy. It says why on the satellite.
func (r *Reconciler) evacuationSafe(ctx context.Context, s *scope) bool {
	replicas, err := linstor.ReplicasOf(ctx, s.lc, s.sat.Name)
	if err != nil {
		s.deleteWait = fmt.Sprintf("cannot read the resources on node %s, waiting: %v", s.sat.Name, err)
		return false
	}
	hazards := linstor.EvacuationHazards(s.sat.Name, replicas)
	if len(hazards) == 0 {
		return true
	}
	s.deleteReason = linstorv1.ReasonHoldsLastReplica
	s.deleteWait = fmt.Sprintf("not evacuating node %s yet: it may hold the only up-to-date copy of %s, and LINSTOR would count the disconnected replica as a good copy; waiting for the replication link to come back and resync",
		s.sat.Name, describeCopies(hazards))
	r.Recorder.Event(s.sat, corev1.EventTypeWarning, "NodeHoldsLastReplica", s.deleteWait)
	return false
}

// describeCopies names the resources and why no other replica counts, bounded as
// listNames is.
func describeCopies(copies []linstor.LastCopy) string {
	names := make([]string, len(copies))
	for i, c := range copies {
		names[i] = fmt.Sprintf("%s (%s)", c.Resource, c.Why)
	}
	return listNames(names)
}

// evacuate asks LINSTOR to evacuate and reports replicas it could not place.
func (r *Reconciler) evacuate(ctx context.Context, s *scope) bool {
	r.markEvacuation(s.sat.UID)
	warnings, err := linstor.Evacuate(ctx, s.conn, s.sat.Name)
	r.wrote(s)
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
