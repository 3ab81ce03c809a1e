package linstorcluster

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/controllers/reconciler"
	"github.com/linstor-operator/linstor-operator/pkg/linstor/observer"
	"github.com/linstor-operator/linstor-operator/pkg/names"
	"github.com/linstor-operator/linstor-operator/pkg/replicahealth"
)

// maxWorstResources bounds status.replicas.worst (the CRD's MaxItems).
const maxWorstResources = observer.SummaryResources

// replicasStatus is status.replicas from one cycle's report; nil keeps what was
// last known (LINSTOR unreachable: the counts stay, Redundant turns Unknown).
func replicasStatus(report *replicahealth.Report) *linstorv1.ReplicaHealthStatus {
	if report == nil {
		return nil
	}
	st := &linstorv1.ReplicaHealthStatus{ObservedAt: &metav1.Time{Time: report.Now.Truncate(time.Second)}, Total: int32(len(report.Resources))}
	counts := map[replicahealth.State]*int32{
		replicahealth.Healthy: &st.Healthy, replicahealth.Syncing: &st.Syncing, replicahealth.Degraded: &st.Degraded,
		replicahealth.Outdated: &st.Outdated, replicahealth.UnintentionallyDiskless: &st.UnintentionallyDiskless,
		replicahealth.QuorumLost: &st.QuorumLost, replicahealth.SplitBrain: &st.SplitBrain, replicahealth.Unknown: &st.Unknown,
	}
	for state, n := range report.Counts {
		if p := counts[state]; p != nil {
			*p = int32(n)
		}
	}
	for _, r := range report.Worst(maxWorstResources) {
		h := linstorv1.ResourceHealth{Name: r.Name, UID: r.UID, State: string(r.State), UpToDate: int32(r.UpToDate), Placed: int32(r.Placed), Message: r.Message}
		if !r.Since.IsZero() {
			h.Since = &metav1.Time{Time: r.Since.Truncate(time.Second)}
		}
		if r.SyncPercent != nil {
			h.SyncPercent = strconv.FormatFloat(*r.SyncPercent, 'f', 1, 64)
		}
		if r.SyncETA != nil {
			h.SyncETA = &metav1.Time{Time: report.Now.Add(*r.SyncETA).Truncate(time.Second)}
		}
		st.Worst = append(st.Worst, h)
	}
	return st
}

// keepObservedAt keeps the stored observedAt when nothing else changed: a steady
// state writes nothing, however often LINSTOR is read.
func keepObservedAt(old, next *linstorv1.ReplicaHealthStatus) *linstorv1.ReplicaHealthStatus {
	if old == nil {
		return next
	}
	a, b := *old, *next
	a.ObservedAt, b.ObservedAt = nil, nil
	if equality.Semantic.DeepEqual(a, b) {
		next.ObservedAt = old.ObservedAt
	}
	return next
}

// setRedundantCondition says whether every resource keeps the replicas it was placed
// with. It is observed, not managed: Degraded (what the operator cannot do) and
// Available do not depend on it, and an unknown health is Unknown, never True.
func setRedundantCondition(c *linstorv1.LinstorCluster, s *scope) {
	cond := metav1.Condition{Type: linstorv1.ConditionRedundant, ObservedGeneration: c.Generation}
	report := s.snap.Health()
	switch {
	case s.transient:
		reconciler.SetUnknownIfAbsent(&c.Status.Conditions, c.Generation, linstorv1.ConditionRedundant)
		return
	case report == nil:
		cond.Status, cond.Reason = metav1.ConditionUnknown, linstorv1.ReasonNotObserved
		cond.Message = "LINSTOR's resource states are not known"
		switch {
		case s.linstorErr != nil:
			cond.Reason, cond.Message = linstorv1.ReasonLinstorUnreachable, cond.Message+": "+s.linstorErr.Error()
		case s.snap != nil && s.snap.HealthErr != nil:
			cond.Reason, cond.Message = linstorv1.ReasonLinstorError, cond.Message+": "+s.snap.HealthErr.Error()
		}
	default:
		cond.Status, cond.Reason, cond.Message = redundancy(report)
	}
	if old := meta.FindStatusCondition(c.Status.Conditions, cond.Type); old != nil && old.Status == cond.Status && old.Reason == cond.Reason && old.Message == cond.Message {
		return
	}
	reconciler.SetCondition(&c.Status.Conditions, cond)
}

// redundancy is the condition's status, reason and message from a report: False with
// the worst state present as the reason, the counts and the first resources named.
func redundancy(report *replicahealth.Report) (metav1.ConditionStatus, string, string) {
	total := len(report.Resources)
	worst := report.Worst(3)
	if len(worst) == 0 {
		return metav1.ConditionTrue, linstorv1.ReasonAsExpected, fmt.Sprintf("All %d resources have their placed replicas UpToDate", total)
	}
	var parts []string
	for _, state := range replicahealth.States {
		if n := report.Counts[state]; n > 0 && state != replicahealth.Healthy {
			parts = append(parts, fmt.Sprintf("%d %s", n, state))
		}
	}
	var names []string
	for _, r := range worst {
		names = append(names, r.Name+" ("+string(r.State)+")")
	}
	return metav1.ConditionFalse, string(worst[0].State), fmt.Sprintf("%s of %d resources; worst: %s (status.replicas.worst lists more)",
		strings.Join(parts, ", "), total, strings.Join(names, ", "))
}

// maxVolumeEventsPerPass bounds the PVC Events one pass sends: a lost node degrades
// thousands of volumes at once, and the status already counts them.
const maxVolumeEventsPerPass = 100

// +kubebuilder:rbac:groups="",resources=persistentvolumes,verbs=list

// observeReplicas exports the replica health and tells each PersistentVolumeClaim
// whose volume changed health, once per change.
func (r *Reconciler) observeReplicas(ctx context.Context, s *scope) (ctrl.Result, error) {
	report := s.snap.Health()
	if report == nil || s.transient {
		return ctrl.Result{}, nil
	}
	recordReplicaMetrics(s.cluster, report)
	prev, _ := r.reports.Load(s.cluster.UID)
	r.reports.Store(s.cluster.UID, report)
	prevReport, _ := prev.(*replicahealth.Report)
	changes := volumeChanges(prevReport, report)
	if len(changes) == 0 {
		return ctrl.Result{}, nil
	}
	claims, err := r.claimsByVolumeHandle(ctx)
	if err != nil {
		// The Events are lost for this change, not the status: say so in the log.
		ctrl.LoggerFrom(ctx).Error(err, "listing PersistentVolumes for replica health Events")
		return ctrl.Result{}, nil
	}
	sent := 0
	for _, ch := range changes {
		claim, ok := claims[ch.Resource]
		if !ok {
			continue
		}
		if sent == maxVolumeEventsPerPass {
			ctrl.LoggerFrom(ctx).Info("replica health Events capped for this pass", "changes", len(changes), "sent", sent)
			break
		}
		res := report.Resources[strings.ToLower(ch.Resource)]
		eventType, reason, msg := volumeEvent(ch, res)
		r.Recorder.Event(claim, eventType, reason, msg)
		sent++
	}
	return ctrl.Result{}, nil
}

// volumeChanges are the transitions a volume's users hear about: into or out of a
// problem, and from one problem to another. A new volume (healthy or in its first
// sync) or a deleted one is not news. After an operator restart (no previous report) only problems are told.
func volumeChanges(prev, next *replicahealth.Report) []replicahealth.Transition {
	var out []replicahealth.Transition
	for _, t := range replicahealth.Transitions(prev, next) {
		switch {
		case t.To == "":
		case t.From == "" && (t.To == replicahealth.Healthy || t.To == replicahealth.Syncing):
			// a new volume, or its first sync
		default:
			out = append(out, t)
		}
	}
	// The worst news first: when a pass caps its Events, a split brain is not the one
	// left out (stable: by name within a state).
	slices.SortStableFunc(out, func(a, b replicahealth.Transition) int {
		return replicahealth.Severity(b.To) - replicahealth.Severity(a.To)
	})
	return out
}

// volumeEvent words one transition for the claim's Events.
func volumeEvent(t replicahealth.Transition, res *replicahealth.Resource) (eventType, reason, message string) {
	msg := ""
	if res != nil {
		msg = res.Message
	}
	if t.To == replicahealth.Healthy {
		return corev1.EventTypeNormal, "ReplicasRecovered", fmt.Sprintf("LINSTOR resource %s: every placed replica is UpToDate again (was %s)", t.Resource, t.From)
	}
	if t.To == replicahealth.Syncing {
		return corev1.EventTypeNormal, "ReplicasSyncing", fmt.Sprintf("LINSTOR resource %s resyncs (was %s): %s", t.Resource, t.From, msg)
	}
	return corev1.EventTypeWarning, "Replicas" + string(t.To), fmt.Sprintf("LINSTOR resource %s is %s: %s", t.Resource, t.To, msg)
}

// claimsByVolumeHandle maps LINSTOR resource names to the claims bound to their
// PersistentVolumes: the CSI driver names the volume handle after the resource. Read
// uncached, and only when there is something to tell.
func (r *Reconciler) claimsByVolumeHandle(ctx context.Context) (map[string]*corev1.PersistentVolumeClaim, error) {
	out := map[string]*corev1.PersistentVolumeClaim{}
	var pvs corev1.PersistentVolumeList
	if err := r.Direct.List(ctx, &pvs); err != nil {
		return nil, err
	}
	for _, pv := range pvs.Items {
		csi, ref := pv.Spec.CSI, pv.Spec.ClaimRef
		if csi == nil || csi.Driver != names.CSIDriverName || ref == nil {
			continue
		}
		out[csi.VolumeHandle] = &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name, UID: ref.UID}}
	}
	return out, nil
}
