package satellite

import (
	"fmt"
	"slices"
	"testing"
)

// A drain of the node is allowed only when LINSTOR's resource states are known and no
// resource needs the node's replica; the guard pod is re-created only on a node that
// is not cordoned, so an eviction that the budget allowed is not undone mid-drain.
func TestDrain(t *testing.T) {
	many := make([]DrainHold, 25)
	for i := range many {
		many[i] = DrainHold{Resource: fmt.Sprintf("pvc-%02d", i), Reason: "last UpToDate replica"}
	}
	cases := []struct {
		name      string
		in        DrainInput
		allowed   bool
		heldBy    []string
		heldCount int32
		reason    string
		guard     GuardAction
	}{
		{name: "health unknown (LINSTOR not read yet, or unreachable): held", in: DrainInput{Guard: GuardRunning},
			heldBy: []string{UnknownHealth}, reason: UnknownHealth, guard: GuardKeep},
		{name: "health unknown, holds reported anyway: still held as unknown", in: DrainInput{Holds: []DrainHold{{"pvc-a", "last UpToDate replica"}}, Guard: GuardRunning},
			heldBy: []string{UnknownHealth}, reason: UnknownHealth, guard: GuardKeep},
		{name: "known, nothing held: allowed", in: DrainInput{Known: true, Guard: GuardRunning},
			allowed: true, reason: "No resource needs this node's replicas", guard: GuardKeep},
		{name: "known, one resource held", in: DrainInput{Known: true, Holds: []DrainHold{{"pvc-a", "last UpToDate replica"}}, Guard: GuardRunning},
			heldBy: []string{"pvc-a: last UpToDate replica"}, heldCount: 1, reason: "1 resource needs this node: pvc-a: last UpToDate replica", guard: GuardKeep},
		{name: "two resources held", in: DrainInput{Known: true, Holds: []DrainHold{{"pvc-a", "last UpToDate replica"}, {"pvc-b", "needed for quorum"}}, Guard: GuardRunning},
			heldBy: []string{"pvc-a: last UpToDate replica", "pvc-b: needed for quorum"}, heldCount: 2,
			reason: "2 resources need this node: pvc-a: last UpToDate replica; pvc-b: needed for quorum", guard: GuardKeep},
		{name: "more resources than the status lists: the first 20, all counted", in: DrainInput{Known: true, Holds: many, Guard: GuardRunning},
			heldBy: heldStrings(many[:MaxHeldBy]), heldCount: 25, guard: GuardKeep},
		{name: "guard missing on a schedulable node: created", in: DrainInput{Known: true, Guard: GuardMissing},
			allowed: true, reason: "No resource needs this node's replicas", guard: GuardCreate},
		{name: "guard missing on a cordoned node (evicted by the drain): not re-created", in: DrainInput{Known: true, Guard: GuardMissing, Cordoned: true},
			allowed: true, reason: "No resource needs this node's replicas", guard: GuardKeep},
		{name: "guard missing on a cordoned node while held: not created either (the drain is past it)", in: DrainInput{Known: true, Holds: many[:1], Guard: GuardMissing, Cordoned: true},
			heldBy: heldStrings(many[:1]), heldCount: 1, guard: GuardKeep},
		{name: "guard running on a cordoned node: kept", in: DrainInput{Known: true, Holds: many[:1], Guard: GuardRunning, Cordoned: true},
			heldBy: heldStrings(many[:1]), heldCount: 1, guard: GuardKeep},
		{name: "guard finished on a schedulable node: replaced (a finished pod is evicted without asking the budget)", in: DrainInput{Known: true, Guard: GuardFinished},
			allowed: true, reason: "No resource needs this node's replicas", guard: GuardReplace},
		{name: "guard finished on a cordoned node: left", in: DrainInput{Known: true, Guard: GuardFinished, Cordoned: true},
			allowed: true, reason: "No resource needs this node's replicas", guard: GuardKeep},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Drain(tc.in)
			if d.Allowed != tc.allowed {
				t.Errorf("Allowed = %t, want %t", d.Allowed, tc.allowed)
			}
			if !slices.Equal(d.HeldBy, tc.heldBy) {
				t.Errorf("HeldBy = %q, want %q", d.HeldBy, tc.heldBy)
			}
			if d.HeldCount != tc.heldCount {
				t.Errorf("HeldCount = %d, want %d", d.HeldCount, tc.heldCount)
			}
			if tc.reason != "" && d.Reason != tc.reason {
				t.Errorf("Reason = %q, want %q", d.Reason, tc.reason)
			}
			if d.Reason == "" {
				t.Error("no Reason")
			}
			if d.Guard != tc.guard {
				t.Errorf("Guard = %v, want %v", d.Guard, tc.guard)
			}
		})
	}
}

func heldStrings(h []DrainHold) []string {
	var out []string
	for _, x := range h {
		out = append(out, x.Resource+": "+x.Reason)
	}
	return out
}
