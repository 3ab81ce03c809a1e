// Package splitbrain decides, as a pure step, how a split brain the user confirmed is
// resolved: the confirmed replica's disk is dropped and rebuilt from the survivor.
//
// LINSTOR 1.33.3 has no REST call for DRBD's --discard-my-data (the satellite's
// DrbdAdm.adjust is always called with discard=false), so the resolution goes through
// toggle-disk (CtrlRscToggleDiskApiCallHandler): the victim becomes diskless, which
// drops its divergent data and lets it connect to the survivor, then diskful again in
// its pool, which gives it fresh metadata and a full resync from the survivor. Nothing
// happens without a confirmation naming the resource definition's uuid, and the
// decision is saved before LINSTOR is written.
package splitbrain

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/names"
	"github.com/linstor-operator/linstor-operator/pkg/replicahealth"
)

// Request is a parsed confirmation.
type Request struct {
	Resource, Node, UID string
}

// ParseRequest reads the annotation's value "<resource>/<node>/<uid>".
func ParseRequest(v string) (Request, error) {
	parts := strings.Split(strings.TrimSpace(v), "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return Request{}, fmt.Errorf("annotation %s must be \"<resource>/<node whose changes to discard>/<resource uid>\", got %q", names.AnnotationResolveSplitBrain, v)
	}
	return Request{Resource: parts[0], Node: parts[1], UID: parts[2]}, nil
}

// Action is the one LINSTOR write a step asks for.
type Action int

const (
	// None: nothing to write.
	None Action = iota
	// Discard makes the victim's replica diskless (toggle-disk diskless).
	Discard
	// Rebuild gives it a disk in its pool again (toggle-disk diskful).
	Rebuild
)

// Event is what the step tells the user.
type Event struct{ Type, Reason, Message string }

// Input is what one step decides from.
type Input struct {
	// Status is the stored resolution (nil: none yet).
	Status *linstorv1.SplitBrainResolutionStatus
	// Annotation is the confirmation's value ("" when absent).
	Annotation string
	// Report is the replica health the observer read after the last write to the
	// victim's node; nil when it is unknown (nothing is decided then).
	Report *replicahealth.Report
	Now    time.Time
}

// Output is the step's decision. Status is saved (with an optimistic lock) before
// Action is sent; ConsumeAnnotation removes the confirmation once it is recorded.
type Output struct {
	Status            *linstorv1.SplitBrainResolutionStatus
	Action            Action
	ConsumeAnnotation bool
	Event             *Event
}

// inFlight: the phases that still need LINSTOR writes.
func inFlight(st *linstorv1.SplitBrainResolutionStatus) bool {
	return st != nil && (st.Phase == linstorv1.SplitBrainDiscarding || st.Phase == linstorv1.SplitBrainRebuilding)
}

// Step decides the next move.
func Step(in Input) Output {
	out := Output{Status: in.Status}
	if in.Report == nil {
		return out // unknown: never act on what is not seen
	}
	if inFlight(in.Status) {
		// One resolution at a time: a new confirmation waits, untouched.
		return advance(in)
	}
	if in.Annotation == "" {
		return out
	}
	req, err := ParseRequest(in.Annotation)
	if err != nil {
		return refuse(in, Request{}, err.Error())
	}
	return accept(in, req)
}

// refuse records a refused request and consumes it: a confirmation is for one moment's
// state, and must not act later when a new split brain of that resource appears.
func refuse(in Input, req Request, why string) Output {
	st := &linstorv1.SplitBrainResolutionStatus{Resource: req.Resource, UID: req.UID, DiscardNode: req.Node, Phase: linstorv1.SplitBrainRefused,
		StartedAt: &metav1.Time{Time: in.Now.Truncate(time.Second)}, Message: "Nothing was discarded: " + why}
	return Output{Status: st, ConsumeAnnotation: true, Event: &Event{corev1.EventTypeWarning, "SplitBrainResolutionRefused", st.Message}}
}

func accept(in Input, req Request) Output {
	res := in.Report.Resources[strings.ToLower(req.Resource)]
	switch {
	case res == nil:
		return refuse(in, req, fmt.Sprintf("LINSTOR has no resource %s", req.Resource))
	case !strings.EqualFold(res.UID, req.UID):
		return refuse(in, req, fmt.Sprintf("the confirmation names uid %s, but resource %s has uid %s (was it deleted and re-created?)", req.UID, res.Name, res.UID))
	case res.State != replicahealth.SplitBrain:
		return refuse(in, req, fmt.Sprintf("resource %s is not in split brain (it is %s)", res.Name, res.State))
	}
	victim, survivors := sides(res, req.Node)
	if victim == nil {
		return refuse(in, req, fmt.Sprintf("node %s is not one side of %s's split brain (%s)", req.Node, res.Name, pairs(res)))
	}
	switch {
	case !victim.Diskful:
		return refuse(in, req, fmt.Sprintf("%s's replica on %s has no disk: there are no changes to discard there", res.Name, victim.Node))
	case victim.InUse == nil || *victim.InUse:
		return refuse(in, req, fmt.Sprintf("%s's replica on %s is in use or its state is unknown: stop the workload using it there first, its view of the data would change under it", res.Name, victim.Node))
	case len(survivors) == 0:
		return refuse(in, req, fmt.Sprintf("no UpToDate diskful replica of %s on the other side of the split brain would remain to rebuild %s from", res.Name, victim.Node))
	}
	st := &linstorv1.SplitBrainResolutionStatus{Resource: res.Name, UID: res.UID, DiscardNode: victim.Node, StoragePool: victim.Pool,
		Phase: linstorv1.SplitBrainDiscarding, StartedAt: &metav1.Time{Time: in.Now.Truncate(time.Second)},
		Message: fmt.Sprintf("Discarding the changes of %s's replica on %s; it is rebuilt in pool %s from %s", res.Name, victim.Node, victim.Pool, strings.Join(survivors, ", "))}
	return Output{Status: st, ConsumeAnnotation: true,
		Event: &Event{corev1.EventTypeNormal, "SplitBrainResolutionStarted", fmt.Sprintf("Confirmed by %s=%s: %s", names.AnnotationResolveSplitBrain, in.Annotation, st.Message)}}
}

// sides finds the victim's replica and the survivors: diskful UpToDate replicas it is
// StandAlone with.
func sides(res *replicahealth.Resource, node string) (*replicahealth.Replica, []string) {
	var victim *replicahealth.Replica
	for i := range res.Replicas {
		if strings.EqualFold(res.Replicas[i].Node, node) {
			victim = &res.Replicas[i]
		}
	}
	if victim == nil {
		return nil, nil
	}
	var peers []string
	for _, p := range res.StandAlone {
		switch {
		case strings.EqualFold(p.A, victim.Node):
			peers = append(peers, p.B)
		case strings.EqualFold(p.B, victim.Node):
			peers = append(peers, p.A)
		}
	}
	if len(peers) == 0 {
		return nil, nil
	}
	var survivors []string
	for _, r := range res.Replicas {
		for _, p := range peers {
			if strings.EqualFold(r.Node, p) && r.Diskful && r.DiskState == "UpToDate" {
				survivors = append(survivors, r.Node)
			}
		}
	}
	return victim, survivors
}

func pairs(res *replicahealth.Resource) string {
	var out []string
	for _, p := range res.StandAlone {
		out = append(out, p.A+" and "+p.B+" are StandAlone")
	}
	return strings.Join(out, "; ")
}

// advance moves a resolution in flight along what LINSTOR shows.
func advance(in Input) Output {
	st := in.Status.DeepCopy()
	out := Output{Status: st}
	res := in.Report.Resources[strings.ToLower(st.Resource)]
	if res == nil || !strings.EqualFold(res.UID, st.UID) {
		st.Phase, st.Message = linstorv1.SplitBrainFailed, fmt.Sprintf("Resource %s (uid %s) is gone; the resolution stopped", st.Resource, st.UID)
		out.Event = &Event{corev1.EventTypeWarning, "SplitBrainResolutionFailed", st.Message}
		return out
	}
	var victim *replicahealth.Replica
	for i := range res.Replicas {
		if strings.EqualFold(res.Replicas[i].Node, st.DiscardNode) {
			victim = &res.Replicas[i]
		}
	}
	if victim == nil {
		st.Phase, st.Message = linstorv1.SplitBrainFailed, fmt.Sprintf("%s has no replica on %s any more; the resolution stopped", st.Resource, st.DiscardNode)
		out.Event = &Event{corev1.EventTypeWarning, "SplitBrainResolutionFailed", st.Message}
		return out
	}
	switch st.Phase {
	case linstorv1.SplitBrainDiscarding:
		if victim.Diskful {
			out.Action = Discard
			return out
		}
		st.Phase = linstorv1.SplitBrainRebuilding
		st.Message = fmt.Sprintf("%s's replica on %s is diskless (its changes are dropped); giving it a new disk in pool %s", st.Resource, st.DiscardNode, st.StoragePool)
		out.Action = Rebuild
		return out
	default: // Rebuilding
		if !victim.Diskful {
			out.Action = Rebuild // the last answer was lost or refused: ask again
			return out
		}
		if victim.DiskState == "UpToDate" && res.State != replicahealth.SplitBrain {
			st.Phase = linstorv1.SplitBrainResolved
			st.Message = fmt.Sprintf("%s's replica on %s was rebuilt from its peers and is UpToDate; the split brain is resolved", st.Resource, st.DiscardNode)
			out.Event = &Event{corev1.EventTypeNormal, "SplitBrainResolved", st.Message}
			return out
		}
		msg := fmt.Sprintf("%s's replica on %s resyncs from its peers (%s)", st.Resource, st.DiscardNode, victim.DiskState)
		if res.SyncPercent != nil {
			msg = fmt.Sprintf("%s's replica on %s resyncs from its peers: %.1f%% done", st.Resource, st.DiscardNode, *res.SyncPercent)
		}
		st.Message = msg
		return out
	}
}
