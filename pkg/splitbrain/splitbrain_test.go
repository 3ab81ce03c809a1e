package splitbrain

import (
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// started: when the stored resolution was accepted (a minute before now).
var started = metav1.NewTime(now.Add(-time.Minute))

func inFlightStatus(phase linstorv1.SplitBrainPhase) *linstorv1.SplitBrainResolutionStatus {
	return &linstorv1.SplitBrainResolutionStatus{Resource: "pvc-1", UID: "u-1", DiscardNode: "b", StoragePool: "thin", Phase: phase,
		StartedAt: started.DeepCopy(), Confirmation: "pvc-1/b/u-1", Attempts: 1}
}

func withStatus(st *linstorv1.SplitBrainResolutionStatus, f func(*linstorv1.SplitBrainResolutionStatus)) *linstorv1.SplitBrainResolutionStatus {
	f(st)
	return st
}

// threeWay: pvc-1 on a, b and c; a is StandAlone with both, b and c are Connected.
func threeWay(r *replicahealth.Resource) {
	r.Replicas = append(r.Replicas, replicahealth.Replica{Node: "c", Diskful: true, Pool: "thin", DiskState: "UpToDate", InUse: no()})
	r.Replicas[0].InUse = no()
	r.StandAlone = []replicahealth.Pair{{A: "a", B: "b"}, {A: "a", B: "c"}}
	r.Connected = []replicahealth.Pair{{A: "b", B: "c"}}
}

// removing: LINSTOR flagged b DRBD_DISKLESS|DISK_REMOVING; DRBD still has the disk.
var removing = replica("b", func(r *replicahealth.Replica) { r.Diskful, r.Toggling = false, true })

// discarded: b is diskless, the toggle finished, DRBD reports Diskless.
var discarded = replica("b", func(r *replicahealth.Replica) { r.Diskful, r.DiskState = false, "Diskless" })

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
		// unchanged: the stored status is returned as it is (no status write).
		unchanged bool
	}{
		{name: "health unknown: nothing is decided, the confirmation waits",
			in: Input{Annotation: "pvc-1/b/u-1"}},
		{name: "nothing asked, nothing stored",
			in: Input{Report: splitReport()}},
		{name: "a malformed confirmation is refused and consumed",
			in:        Input{Annotation: "pvc-1/b", Report: splitReport()},
			wantPhase: linstorv1.SplitBrainRefused, consume: true, event: "SplitBrainResolutionRefused", msg: "must be"},
		{name: "an empty fourth part is malformed",
			in:        Input{Annotation: "pvc-1/b/u-1/", Report: splitReport()},
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
			in:        Input{Status: inFlightStatus(linstorv1.SplitBrainDiscarding), Report: splitReport(healed, discarded)},
			wantPhase: linstorv1.SplitBrainRebuilding, wantAction: Rebuild, msg: "new disk in pool thin"},
		{name: "discarding: a report not observed after the confirmation was recorded (StartedAt is whole seconds) is waited out",
			in:        Input{Status: inFlightStatus(linstorv1.SplitBrainDiscarding), Report: splitReport(), ObservedAt: started.Add(time.Second)},
			wantPhase: linstorv1.SplitBrainDiscarding, unchanged: true},
		{name: "discarding: without a start time nothing is written",
			in: Input{Status: withStatus(inFlightStatus(linstorv1.SplitBrainDiscarding), func(st *linstorv1.SplitBrainResolutionStatus) { st.StartedAt = nil }),
				Report: splitReport()},
			wantPhase: linstorv1.SplitBrainFailed, event: "SplitBrainResolutionFailed", msg: "Nothing was discarded"},
		{name: "discarding: the resource is no longer in split brain: nothing is discarded",
			in:        Input{Status: inFlightStatus(linstorv1.SplitBrainDiscarding), Report: splitReport(healed)},
			wantPhase: linstorv1.SplitBrainFailed, event: "SplitBrainResolutionFailed", msg: "Nothing was discarded: resource pvc-1 is not in split brain"},
		{name: "discarding: the victim came into use meanwhile: nothing is discarded",
			in:        Input{Status: inFlightStatus(linstorv1.SplitBrainDiscarding), Report: splitReport(replica("b", func(r *replicahealth.Replica) { r.InUse = yes() }))},
			wantPhase: linstorv1.SplitBrainFailed, event: "SplitBrainResolutionFailed", msg: "in use"},
		{name: "discarding: the victim's state became unknown: nothing is discarded",
			in:        Input{Status: inFlightStatus(linstorv1.SplitBrainDiscarding), Report: splitReport(replica("b", func(r *replicahealth.Replica) { r.InUse = nil }))},
			wantPhase: linstorv1.SplitBrainFailed, event: "SplitBrainResolutionFailed", msg: "unknown"},
		{name: "discarding: the survivor is no longer UpToDate: nothing is discarded",
			in:        Input{Status: inFlightStatus(linstorv1.SplitBrainDiscarding), Report: splitReport(replica("a", func(r *replicahealth.Replica) { r.DiskState = "Outdated" }))},
			wantPhase: linstorv1.SplitBrainFailed, event: "SplitBrainResolutionFailed", msg: "no UpToDate diskful replica"},
		{name: "discarding: LINSTOR flagged the removal, DRBD still has the disk: wait, no second toggle",
			in:        Input{Status: inFlightStatus(linstorv1.SplitBrainDiscarding), Report: splitReport(removing)},
			wantPhase: linstorv1.SplitBrainDiscarding, msg: "LINSTOR is removing the disk"},
		{name: "discarding: removal requested, still diskful: wait, no second toggle",
			in:        Input{Status: inFlightStatus(linstorv1.SplitBrainDiscarding), Report: splitReport(replica("b", func(r *replicahealth.Replica) { r.Toggling = true }))},
			wantPhase: linstorv1.SplitBrainDiscarding, msg: "LINSTOR is removing the disk"},
		{name: "discarding: diskless in LINSTOR, not yet Diskless in DRBD: wait",
			in:        Input{Status: inFlightStatus(linstorv1.SplitBrainDiscarding), Report: splitReport(replica("b", func(r *replicahealth.Replica) { r.Diskful = false }))},
			wantPhase: linstorv1.SplitBrainDiscarding, msg: "UpToDate"},
		{name: "discarding: the removal hangs past 10 minutes: Failed, what to check, no write",
			in: Input{Status: withStatus(inFlightStatus(linstorv1.SplitBrainDiscarding), func(st *linstorv1.SplitBrainResolutionStatus) {
				st.StartedAt = &metav1.Time{Time: now.Add(-11 * time.Minute)}
			}), Report: splitReport(removing)},
			wantPhase: linstorv1.SplitBrainFailed, event: "SplitBrainResolutionFailed", msg: "linstor resource list -r pvc-1"},
		{name: "discarding: past 10 minutes and still diskful: Failed, no write",
			in: Input{Status: withStatus(inFlightStatus(linstorv1.SplitBrainDiscarding), func(st *linstorv1.SplitBrainResolutionStatus) {
				st.StartedAt = &metav1.Time{Time: now.Add(-11 * time.Minute)}
			}), Report: splitReport()},
			wantPhase: linstorv1.SplitBrainFailed, event: "SplitBrainResolutionFailed", msg: "satellite"},
		{name: "discarding: LINSTOR writes fenced: the phase stays, the message says what the write waits for",
			in:        Input{Status: inFlightStatus(linstorv1.SplitBrainDiscarding), Report: splitReport(), Fenced: "the upgrade is in phase Controller"},
			wantPhase: linstorv1.SplitBrainDiscarding, msg: "the upgrade is in phase Controller"},
		{name: "discarding: the fence lifted: the toggle goes, the waiting message goes too",
			in: Input{Status: withStatus(inFlightStatus(linstorv1.SplitBrainDiscarding), func(st *linstorv1.SplitBrainResolutionStatus) {
				st.Message = "Waiting to make pvc-1's replica on b diskless: LINSTOR writes wait while x"
			}), Report: splitReport()},
			wantPhase: linstorv1.SplitBrainDiscarding, wantAction: Discard, msg: "making it diskless"},
		{name: "discarding done while fenced: Rebuilding, the rebuild waits",
			in:        Input{Status: inFlightStatus(linstorv1.SplitBrainDiscarding), Report: splitReport(healed, discarded), Fenced: "the upgrade is in phase Controller"},
			wantPhase: linstorv1.SplitBrainRebuilding, msg: "the upgrade is in phase Controller"},
		{name: "rebuilding: LINSTOR is adding the disk: wait, no second toggle",
			in: Input{Status: inFlightStatus(linstorv1.SplitBrainRebuilding), Report: splitReport(healed, replica("b", func(r *replicahealth.Replica) {
				r.Diskful, r.Toggling, r.DiskState = false, true, "Diskless"
			}))},
			wantPhase: linstorv1.SplitBrainRebuilding, msg: "LINSTOR is adding the disk"},
		{name: "rebuilding has no timeout: a resync hours later goes on",
			in: Input{Status: withStatus(inFlightStatus(linstorv1.SplitBrainRebuilding), func(st *linstorv1.SplitBrainResolutionStatus) {
				st.StartedAt = &metav1.Time{Time: now.Add(-5 * time.Hour)}
			}), Report: splitReport(func(r *replicahealth.Resource) { r.State, r.StandAlone = replicahealth.Syncing, nil },
				replica("b", func(r *replicahealth.Replica) { r.DiskState = "Inconsistent" }))},
			wantPhase: linstorv1.SplitBrainRebuilding, msg: "resyncs"},
		{name: "three replicas: b's side holds c, another diskful replica: refused, resolve by hand",
			in:        Input{Annotation: "pvc-1/b/u-1", Report: splitReport(threeWay)},
			wantPhase: linstorv1.SplitBrainRefused, consume: true, event: "SplitBrainResolutionRefused", msg: "by hand"},
		{name: "three replicas: a alone on its side: accepted, rebuilt from b and c",
			in:        Input{Annotation: "pvc-1/a/u-1", Report: splitReport(threeWay)},
			wantPhase: linstorv1.SplitBrainDiscarding, consume: true, event: "SplitBrainResolutionStarted", msg: "from b, c"},
		{name: "the processed confirmation seen again is consumed: no status write, no event",
			in: Input{Status: withStatus(inFlightStatus(linstorv1.SplitBrainRefused), func(st *linstorv1.SplitBrainResolutionStatus) { st.Message = "Nothing was discarded: x" }),
				Annotation: "pvc-1/b/u-1", Report: splitReport()},
			wantPhase: linstorv1.SplitBrainRefused, consume: true, unchanged: true},
		{name: "the processed confirmation seen again while health is unknown is consumed",
			in:        Input{Status: inFlightStatus(linstorv1.SplitBrainResolved), Annotation: "pvc-1/b/u-1"},
			wantPhase: linstorv1.SplitBrainResolved, consume: true, unchanged: true},
		{name: "the processed confirmation seen again in flight is consumed, the resolution goes on",
			in:        Input{Status: inFlightStatus(linstorv1.SplitBrainDiscarding), Annotation: "pvc-1/b/u-1", Report: splitReport()},
			wantPhase: linstorv1.SplitBrainDiscarding, wantAction: Discard, consume: true},
		{name: "a fourth part confirms the same resource and node again, for a later split brain",
			in:        Input{Status: inFlightStatus(linstorv1.SplitBrainResolved), Annotation: "pvc-1/b/u-1/again", Report: splitReport()},
			wantPhase: linstorv1.SplitBrainDiscarding, consume: true, event: "SplitBrainResolutionStarted"},
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
			if tt.in.ObservedAt.IsZero() {
				tt.in.ObservedAt = now
			}
			before := tt.in.Status.DeepCopy()
			out := Step(tt.in)
			if tt.unchanged && !reflect.DeepEqual(out.Status, before) {
				t.Errorf("status %+v, want unchanged %+v", out.Status, before)
			}
			if out.Status != nil && (out.Status.Phase == linstorv1.SplitBrainDiscarding || out.Status.Phase == linstorv1.SplitBrainRefused) &&
				tt.in.Annotation != "" && out.ConsumeAnnotation && out.Status.Confirmation != tt.in.Annotation {
				t.Errorf("confirmation %q recorded, want %q", out.Status.Confirmation, tt.in.Annotation)
			}
			// Every LINSTOR write is counted in the status first (saved with a lock).
			if inFlight(before) && out.Status != nil {
				want := before.Attempts
				if out.Action != None {
					want++
				}
				if out.Status.Attempts != want {
					t.Errorf("attempts %d, want %d", out.Status.Attempts, want)
				}
			}
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
