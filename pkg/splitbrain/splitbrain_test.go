package splitbrain

import (
	"strings"
	"testing"
	"time"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/replicahealth"
)

var now = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

func yes() *bool { t := true; return &t }
func no() *bool  { f := false; return &f }

// splitReport: pvc-1 (uid u-1) in split brain between a (in use) and b (not in use).
func splitReport(mod ...func(*replicahealth.Resource)) *replicahealth.Report {
	res := &replicahealth.Resource{Name: "pvc-1", UID: "u-1", State: replicahealth.SplitBrain, Placed: 2, UpToDate: 2,
		Replicas: []replicahealth.Replica{
			{Node: "a", Diskful: true, Pool: "thin", DiskState: "UpToDate", InUse: yes()},
			{Node: "b", Diskful: true, Pool: "thin", DiskState: "UpToDate", InUse: no()},
		},
		StandAlone: []replicahealth.Pair{{A: "a", B: "b"}}}
	for _, m := range mod {
		m(res)
	}
	return &replicahealth.Report{Now: now, Resources: map[string]*replicahealth.Resource{"pvc-1": res}}
}

func inFlightStatus(phase linstorv1.SplitBrainPhase) *linstorv1.SplitBrainResolutionStatus {
	return &linstorv1.SplitBrainResolutionStatus{Resource: "pvc-1", UID: "u-1", DiscardNode: "b", StoragePool: "thin", Phase: phase}
}

func replica(node string, f func(*replicahealth.Replica)) func(*replicahealth.Resource) {
	return func(r *replicahealth.Resource) {
		for i := range r.Replicas {
			if r.Replicas[i].Node == node {
				f(&r.Replicas[i])
			}
		}
	}
}

func TestStep(t *testing.T) {
	healed := func(r *replicahealth.Resource) { r.State, r.StandAlone = replicahealth.Healthy, nil }
	tests := []struct {
		name       string
		in         Input
		wantPhase  linstorv1.SplitBrainPhase // "" : no status
		wantAction Action
		consume    bool
		event      string // reason, "" none
		msg        string // substring of the status message
	}{
		{name: "health unknown: nothing is decided, the confirmation waits",
			in: Input{Annotation: "pvc-1/b/u-1"}},
		{name: "nothing asked, nothing stored",
			in: Input{Report: splitReport()}},
		{name: "a malformed confirmation is refused and consumed",
			in:        Input{Annotation: "pvc-1/b", Report: splitReport()},
			wantPhase: linstorv1.SplitBrainRefused, consume: true, event: "SplitBrainResolutionRefused", msg: "must be"},
		{name: "an unknown resource is refused",
			in:        Input{Annotation: "pvc-9/b/u-1", Report: splitReport()},
			wantPhase: linstorv1.SplitBrainRefused, consume: true, event: "SplitBrainResolutionRefused", msg: "no resource pvc-9"},
		{name: "another uid (the resource was re-created) is refused",
			in:        Input{Annotation: "pvc-1/b/u-old", Report: splitReport()},
			wantPhase: linstorv1.SplitBrainRefused, consume: true, event: "SplitBrainResolutionRefused", msg: "has uid u-1"},
		{name: "a resource not in split brain is refused",
			in:        Input{Annotation: "pvc-1/b/u-1", Report: splitReport(healed)},
			wantPhase: linstorv1.SplitBrainRefused, consume: true, event: "SplitBrainResolutionRefused", msg: "not in split brain"},
		{name: "a node that is not a side is refused",
			in:        Input{Annotation: "pvc-1/c/u-1", Report: splitReport()},
			wantPhase: linstorv1.SplitBrainRefused, consume: true, event: "SplitBrainResolutionRefused", msg: "not one side"},
		{name: "the victim in use is refused: its workload would see the data change",
			in:        Input{Annotation: "pvc-1/a/u-1", Report: splitReport()},
			wantPhase: linstorv1.SplitBrainRefused, consume: true, event: "SplitBrainResolutionRefused", msg: "in use"},
		{name: "the victim's state unknown is refused",
			in:        Input{Annotation: "pvc-1/b/u-1", Report: splitReport(replica("b", func(r *replicahealth.Replica) { r.InUse = nil }))},
			wantPhase: linstorv1.SplitBrainRefused, consume: true, event: "SplitBrainResolutionRefused", msg: "unknown"},
		{name: "no UpToDate survivor on the other side is refused",
			in:        Input{Annotation: "pvc-1/b/u-1", Report: splitReport(replica("a", func(r *replicahealth.Replica) { r.DiskState = "" }))},
			wantPhase: linstorv1.SplitBrainRefused, consume: true, event: "SplitBrainResolutionRefused", msg: "no UpToDate diskful replica"},
		{name: "a diskless victim has nothing to discard",
			in:        Input{Annotation: "pvc-1/b/u-1", Report: splitReport(replica("b", func(r *replicahealth.Replica) { r.Diskful = false }))},
			wantPhase: linstorv1.SplitBrainRefused, consume: true, event: "SplitBrainResolutionRefused", msg: "no disk"},
		{name: "a valid confirmation is saved first: no LINSTOR write in the same step",
			in:        Input{Annotation: "pvc-1/b/u-1", Report: splitReport()},
			wantPhase: linstorv1.SplitBrainDiscarding, consume: true, event: "SplitBrainResolutionStarted", msg: "rebuilt in pool thin from a"},
		{name: "node and resource names match case-insensitively, uids too",
			in:        Input{Annotation: "PVC-1/B/U-1", Report: splitReport()},
			wantPhase: linstorv1.SplitBrainDiscarding, consume: true, event: "SplitBrainResolutionStarted"},
		{name: "discarding: the victim still has its disk, drop it",
			in:        Input{Status: inFlightStatus(linstorv1.SplitBrainDiscarding), Report: splitReport()},
			wantPhase: linstorv1.SplitBrainDiscarding, wantAction: Discard},
		{name: "discarding: the victim is diskless, rebuild it",
			in:        Input{Status: inFlightStatus(linstorv1.SplitBrainDiscarding), Report: splitReport(healed, replica("b", func(r *replicahealth.Replica) { r.Diskful, r.DiskState = false, "Diskless" }))},
			wantPhase: linstorv1.SplitBrainRebuilding, wantAction: Rebuild, msg: "new disk in pool thin"},
		{name: "rebuilding: still diskless (answer lost or refused), ask again",
			in:        Input{Status: inFlightStatus(linstorv1.SplitBrainRebuilding), Report: splitReport(healed, replica("b", func(r *replicahealth.Replica) { r.Diskful = false }))},
			wantPhase: linstorv1.SplitBrainRebuilding, wantAction: Rebuild},
		{name: "rebuilding: resyncing shows the progress",
			in: Input{Status: inFlightStatus(linstorv1.SplitBrainRebuilding), Report: splitReport(func(r *replicahealth.Resource) {
				p := 42.5
				r.State, r.StandAlone, r.SyncPercent = replicahealth.Syncing, nil, &p
			}, replica("b", func(r *replicahealth.Replica) { r.DiskState = "Inconsistent" }))},
			wantPhase: linstorv1.SplitBrainRebuilding, msg: "42.5% done"},
		{name: "rebuilding: UpToDate and connected is resolved",
			in:        Input{Status: inFlightStatus(linstorv1.SplitBrainRebuilding), Report: splitReport(healed)},
			wantPhase: linstorv1.SplitBrainResolved, event: "SplitBrainResolved"},
		{name: "one at a time: a new confirmation waits while one is in flight",
			in:        Input{Status: inFlightStatus(linstorv1.SplitBrainDiscarding), Annotation: "pvc-2/x/u-2", Report: splitReport()},
			wantPhase: linstorv1.SplitBrainDiscarding, wantAction: Discard, consume: false},
		{name: "the resource deleted during the resolution stops it",
			in:        Input{Status: inFlightStatus(linstorv1.SplitBrainRebuilding), Report: &replicahealth.Report{Resources: map[string]*replicahealth.Resource{}}},
			wantPhase: linstorv1.SplitBrainFailed, event: "SplitBrainResolutionFailed", msg: "gone"},
		{name: "the resource re-created during the resolution stops it: no write to the new one",
			in:        Input{Status: inFlightStatus(linstorv1.SplitBrainDiscarding), Report: splitReport(func(r *replicahealth.Resource) { r.UID = "u-2" })},
			wantPhase: linstorv1.SplitBrainFailed, event: "SplitBrainResolutionFailed"},
		{name: "the victim's replica deleted during the resolution stops it",
			in: Input{Status: inFlightStatus(linstorv1.SplitBrainDiscarding), Report: splitReport(func(r *replicahealth.Resource) {
				r.Replicas = r.Replicas[:1]
			})},
			wantPhase: linstorv1.SplitBrainFailed, event: "SplitBrainResolutionFailed", msg: "no replica on b"},
		{name: "a finished resolution stays as the record and does nothing",
			in:        Input{Status: inFlightStatus(linstorv1.SplitBrainResolved), Report: splitReport()},
			wantPhase: linstorv1.SplitBrainResolved},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Now = now
			out := Step(tt.in)
			phase := linstorv1.SplitBrainPhase("")
			if out.Status != nil {
				phase = out.Status.Phase
			}
			if phase != tt.wantPhase || out.Action != tt.wantAction || out.ConsumeAnnotation != tt.consume {
				t.Fatalf("phase %q action %d consume %v, want %q %d %v (status %+v)", phase, out.Action, out.ConsumeAnnotation, tt.wantPhase, tt.wantAction, tt.consume, out.Status)
			}
			reason := ""
			if out.Event != nil {
				reason = out.Event.Reason
			}
			if reason != tt.event {
				t.Errorf("event %q, want %q", reason, tt.event)
			}
			if tt.msg != "" && !strings.Contains(out.Status.Message, tt.msg) {
				t.Errorf("message %q does not say %q", out.Status.Message, tt.msg)
			}
		})
	}
}

func TestStepKeepsInput(t *testing.T) {
	st := inFlightStatus(linstorv1.SplitBrainRebuilding)
	Step(Input{Status: st, Report: splitReport(func(r *replicahealth.Resource) { r.State, r.StandAlone = replicahealth.Healthy, nil }), Now: now})
	if st.Phase != linstorv1.SplitBrainRebuilding {
		t.Fatalf("Step changed the stored status to %s", st.Phase)
	}
}
