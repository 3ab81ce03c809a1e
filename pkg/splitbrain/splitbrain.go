// Package splitbrain decides, as a pure step, how a split brain the user confirmed is
// resolved: the confirmed replica's disk is dropped and rebuilt from the survivor.
//
// LINSTOR 1.33.3 has no REST call for DRBD's --discard-my-data (the satellite's
// DrbdAdm.adjust is always called with discard=false), so the resolution goes through
// toggle-disk (CtrlRscToggleDiskApiCallHandler): the victim becomes diskless, which
// drops its divergent data and lets it connect to the survivor, then diskful again in
// its pool, which gives it fresh metadata and a full resync from the survivor. Nothing
// happens without a confirmation naming the resource definition's uuid, the decision is
// saved before LINSTOR is written, and what the confirmation was accepted on is checked
// again, on a report read after the decision was saved, before every discard.
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

// ParseRequest reads the annotation's value "<resource>/<node>/<uid>", with an optional
// fourth part ("<resource>/<node>/<uid>/<anything>") that makes a new value, so the same
// resource and node can be confirmed again for a later split brain.
func ParseRequest(v string) (Request, error) {
	parts := strings.SplitN(strings.TrimSpace(v), "/", 4)
	if len(parts) < 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" || len(parts) == 4 && parts[3] == "" {
		return Request{}, fmt.Errorf("annotation %s must be \"<resource>/<node whose changes to discard>/<resource uid>[/<anything, to confirm again>]\", got %q", names.AnnotationResolveSplitBrain, v)
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

// DiscardTimeout bounds Discarding: LINSTOR flags the replica DRBD_DISKLESS with
// DISK_REMOVING before the satellite acts and does not roll the flags back when the
// removal fails (CtrlRscToggleDiskApiCallHandler.markDiskRemoving@v1.33.3), so a removal
// that does not finish within it needs a person. Rebuilding has no bound: a full resync
// can take hours.
const DiscardTimeout = 10 * time.Minute

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
	// ObservedAt is when the cycle that read Report started: a discard acts only on what
	// was read after the resolution was saved.
	ObservedAt time.Time
	// Fenced says why the operator's LINSTOR writes wait now
	// (lifecycle.LinstorWritesFenced), "" when they may go.
	Fenced string
	Now    time.Time
}

// Output is the step's decision. Status is saved (with an optimistic lock) before
// Action is sent, Attempts counted in it; ConsumeAnnotation removes the confirmation
// after the status is saved.
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
	// The value already processed (its removal was lost, or it was applied again) is
	// removed without acting: a confirmation is for one moment's state.
	replay := in.Annotation != "" && in.Status != nil && in.Annotation == in.Status.Confirmation
	out := Output{Status: in.Status, ConsumeAnnotation: replay}
	if in.Report == nil {
		return out // unknown: never act on what is not seen
	}
	if inFlight(in.Status) {
		// One resolution at a time: a new confirmation waits, untouched.
		out = advance(in)
		out.ConsumeAnnotation = replay
	} else if in.Annotation != "" && !replay {
		req, err := ParseRequest(in.Annotation)
		if err != nil {
			out = refuse(in, Request{}, err.Error())
		} else {
			out = accept(in, req)
		}
	}
	if out.Action != None && in.Fenced != "" {
		// A rollback of an upgrade or restore would undo the write: the phase stays.
		out.Action = None
		out.Status.Message = fmt.Sprintf("Waiting to %s: LINSTOR writes wait while %s", actionWords(out.Status), in.Fenced)
	}
	if out.Action != None {
		out.Status.Attempts++
	}
	return out
}

func actionWords(st *linstorv1.SplitBrainResolutionStatus) string {
	if st.Phase == linstorv1.SplitBrainRebuilding {
		return fmt.Sprintf("give %s's replica on %s a new disk in pool %s", st.Resource, st.DiscardNode, st.StoragePool)
	}
	return fmt.Sprintf("make %s's replica on %s diskless", st.Resource, st.DiscardNode)
}

// refuse records a refused request and consumes it: a confirmation is for one moment's
// state, and must not act later when a new split brain of that resource appears.
func refuse(in Input, req Request, why string) Output {
	st := &linstorv1.SplitBrainResolutionStatus{Resource: req.Resource, UID: req.UID, DiscardNode: req.Node, Phase: linstorv1.SplitBrainRefused,
		StartedAt: &metav1.Time{Time: in.Now.Truncate(time.Second)}, Message: "Nothing was discarded: " + why, Confirmation: in.Annotation}
	return Output{Status: st, ConsumeAnnotation: true, Event: &Event{corev1.EventTypeWarning, "SplitBrainResolutionRefused", st.Message}}
}

func accept(in Input, req Request) Output {
	res := in.Report.Resources[strings.ToLower(req.Resource)]
	switch {
	case res == nil:
		return refuse(in, req, fmt.Sprintf("LINSTOR has no resource %s", req.Resource))
	case !strings.EqualFold(res.UID, req.UID):
		return refuse(in, req, fmt.Sprintf("the confirmation names uid %s, but resource %s has uid %s (was it deleted and re-created?)", req.UID, res.Name, res.UID))
	}
	victim, survivors, why := check(res, req.Node)
	if why != "" {
		return refuse(in, req, why)
	}
	st := &linstorv1.SplitBrainResolutionStatus{Resource: res.Name, UID: res.UID, DiscardNode: victim.Node, StoragePool: victim.Pool,
		Phase: linstorv1.SplitBrainDiscarding, StartedAt: &metav1.Time{Time: in.Now.Truncate(time.Second)}, Confirmation: in.Annotation,
		Message: fmt.Sprintf("Discarding the changes of %s's replica on %s; it is rebuilt in pool %s from %s", res.Name, victim.Node, victim.Pool, strings.Join(survivors, ", "))}
	return Output{Status: st, ConsumeAnnotation: true,
		Event: &Event{corev1.EventTypeNormal, "SplitBrainResolutionStarted", fmt.Sprintf("Confirmed by %s=%s: %s", names.AnnotationResolveSplitBrain, in.Annotation, st.Message)}}
}

// check tells why node's replica of res must not be discarded now ("" when it may),
// with the replica and the survivors it would be rebuilt from. It runs when the
// confirmation is accepted and again before every discard.
func check(res *replicahealth.Resource, node string) (*replicahealth.Replica, []string, string) {
	if res.State != replicahealth.SplitBrain {
		return nil, nil, fmt.Sprintf("resource %s is not in split brain (it is %s)", res.Name, res.State)
	}
	victim, survivors := sides(res, node)
	switch {
	case victim == nil:
		return nil, nil, fmt.Sprintf("node %s is not one side of %s's split brain (%s)", node, res.Name, pairs(res))
	case !victim.Diskful:
		return nil, nil, fmt.Sprintf("%s's replica on %s has no disk: there are no changes to discard there", res.Name, victim.Node)
	case victim.InUse == nil || *victim.InUse:
		return nil, nil, fmt.Sprintf("%s's replica on %s is in use or its state is unknown: stop the workload using it there first, its view of the data would change under it", res.Name, victim.Node)
	case len(survivors) == 0:
		return nil, nil, fmt.Sprintf("no UpToDate diskful replica of %s on the other side of the split brain would remain to rebuild %s from", res.Name, victim.Node)
	}
	// The rebuilt replica resyncs from any diskful peer it connects to: when its own side
	// holds another one, that peer's divergent data could be what it gets back.
	if others := sameSideDiskful(res, victim.Node); len(others) > 0 {
		return nil, nil, fmt.Sprintf("%s's side of the split brain holds other diskful replicas (%s, Connected to it): rebuilding it could resync from them instead of from %s; resolve this split brain by hand",
			victim.Node, strings.Join(others, ", "), strings.Join(survivors, ", "))
	}
	return victim, survivors, ""
}

// sameSideDiskful lists the diskful replicas Connected to node, directly or through
// other replicas.
func sameSideDiskful(res *replicahealth.Resource, node string) []string {
	side := []string{strings.ToLower(node)}
	in := func(n string) bool {
		for _, s := range side {
			if s == strings.ToLower(n) {
				return true
			}
		}
		return false
	}
	for grown := true; grown; {
		grown = false
		for _, p := range res.Connected {
			switch {
			case in(p.A) && !in(p.B):
				side, grown = append(side, strings.ToLower(p.B)), true
			case in(p.B) && !in(p.A):
				side, grown = append(side, strings.ToLower(p.A)), true
			}
		}
	}
	var others []string
	for _, r := range res.Replicas {
		if !strings.EqualFold(r.Node, node) && (r.Diskful || r.Toggling) && in(r.Node) {
			others = append(others, r.Node)
		}
	}
	return others
}

// sides finds the victim's replica and the survivors: diskful UpToDate replicas it is
// StandAlone with.
func sides(res *replicahealth.Resource, node string) (*replicahealth.Replica, []string) {
	victim := replicaOn(res, node)
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
			if strings.EqualFold(r.Node, p) && r.Diskful && !r.Toggling && r.DiskState == "UpToDate" {
				survivors = append(survivors, r.Node)
			}
		}
	}
	return victim, survivors
}

func replicaOn(res *replicahealth.Resource, node string) *replicahealth.Replica {
	for i := range res.Replicas {
		if strings.EqualFold(res.Replicas[i].Node, node) {
			return &res.Replicas[i]
		}
	}
	return nil
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
	fail := func(msg string) Output {
		st.Phase, st.Message = linstorv1.SplitBrainFailed, msg
		out.Event = &Event{corev1.EventTypeWarning, "SplitBrainResolutionFailed", st.Message}
		return out
	}
	discarding := st.Phase == linstorv1.SplitBrainDiscarding
	if discarding {
		if st.StartedAt == nil {
			return fail(fmt.Sprintf("Nothing was discarded: the resolution of %s on %s has no start time recorded; confirm again", st.Resource, st.DiscardNode))
		}
		// StartedAt is whole seconds: a cycle that started after the following second
		// surely read LINSTOR after the decision was saved.
		if !in.ObservedAt.After(st.StartedAt.Add(time.Second)) {
			if in.Now.Sub(st.StartedAt.Time) > DiscardTimeout {
				return fail(timedOut(st))
			}
			return Output{Status: in.Status}
		}
	}
	res := in.Report.Resources[strings.ToLower(st.Resource)]
	if res == nil || !strings.EqualFold(res.UID, st.UID) {
		return fail(fmt.Sprintf("Resource %s (uid %s) is gone; the resolution stopped", st.Resource, st.UID))
	}
	victim := replicaOn(res, st.DiscardNode)
	if victim == nil {
		return fail(fmt.Sprintf("%s has no replica on %s any more; the resolution stopped", st.Resource, st.DiscardNode))
	}
	if discarding {
		return discard(in, st, res, victim, fail)
	}
	// Rebuilding
	switch {
	case victim.Toggling:
		st.Message = fmt.Sprintf("LINSTOR is adding the disk of %s's replica on %s in pool %s", st.Resource, st.DiscardNode, st.StoragePool)
		return out
	case !victim.Diskful:
		st.Message = fmt.Sprintf("%s's replica on %s is diskless (its changes are dropped); giving it a new disk in pool %s", st.Resource, st.DiscardNode, st.StoragePool)
		out.Action = Rebuild // the last answer was lost or refused: ask again
		return out
	case victim.DiskState == "UpToDate" && res.State != replicahealth.SplitBrain:
		st.Phase = linstorv1.SplitBrainResolved
		st.Message = fmt.Sprintf("%s's replica on %s was rebuilt from its peers and is UpToDate; the split brain is resolved", st.Resource, st.DiscardNode)
		out.Event = &Event{corev1.EventTypeNormal, "SplitBrainResolved", st.Message}
		return out
	}
	st.Message = fmt.Sprintf("%s's replica on %s resyncs from its peers (%s)", st.Resource, st.DiscardNode, victim.DiskState)
	if res.SyncPercent != nil {
		st.Message = fmt.Sprintf("%s's replica on %s resyncs from its peers: %.1f%% done", st.Resource, st.DiscardNode, *res.SyncPercent)
	}
	return out
}

// discard: the victim's disk goes only while what the confirmation was accepted on
// still holds, and only once; it is rebuilt only when DRBD reports it Diskless and
// LINSTOR has finished the toggle.
func discard(in Input, st *linstorv1.SplitBrainResolutionStatus, res *replicahealth.Resource, victim *replicahealth.Replica,
	fail func(string) Output) Output {
	out := Output{Status: st}
	if !victim.Toggling && !victim.Diskful && victim.DiskState == "Diskless" {
		st.Phase = linstorv1.SplitBrainRebuilding
		st.Message = fmt.Sprintf("%s's replica on %s is diskless (its changes are dropped); giving it a new disk in pool %s", st.Resource, st.DiscardNode, st.StoragePool)
		out.Action = Rebuild
		return out
	}
	if in.Now.Sub(st.StartedAt.Time) > DiscardTimeout {
		return fail(timedOut(st))
	}
	switch {
	case victim.Toggling:
		// LINSTOR has the request; a second one would not help.
		st.Message = fmt.Sprintf("LINSTOR is removing the disk of %s's replica on %s (disk state %s)", st.Resource, st.DiscardNode, orUnknown(victim.DiskState))
		return out
	case !victim.Diskful:
		st.Message = fmt.Sprintf("LINSTOR made %s's replica on %s diskless; waiting for DRBD there to report Diskless (now %s)", st.Resource, st.DiscardNode, orUnknown(victim.DiskState))
		return out
	}
	if _, _, why := check(res, st.DiscardNode); why != "" {
		return fail("Nothing was discarded: " + why)
	}
	st.Message = fmt.Sprintf("Discarding the changes of %s's replica on %s: making it diskless, then rebuilding it in pool %s", st.Resource, st.DiscardNode, st.StoragePool)
	out.Action = Discard
	return out
}

func timedOut(st *linstorv1.SplitBrainResolutionStatus) string {
	return fmt.Sprintf("%s's replica on %s did not become diskless within %s; the resolution stopped and writes nothing more. "+
		"Check `linstor resource list -r %s` (flags DISK_REMOVING or DRBD_DISKLESS mean LINSTOR started the removal) and the satellite's log on %s",
		st.Resource, st.DiscardNode, DiscardTimeout, st.Resource, st.DiscardNode)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
