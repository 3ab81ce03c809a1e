package satellite

import (
	"fmt"
	"strings"
)

// A satellite runs as a DaemonSet pod, and `kubectl drain --ignore-daemonsets` never
// evicts DaemonSet pods (k8s.io/kubectl pkg/drain/filters.go daemonSetFilter): a
// PodDisruptionBudget on the satellite would stop nothing. So each node also runs a
// drain guard, a bare pod controlled by its LinstorSatellite (kubectl evicts it like any
// managed pod), and one budget selects exactly that pod: while the node holds a
// resource the budget wants one guard available and the drain is refused; otherwise it
// wants none.

// MaxHeldBy is how many resources status.drain.heldBy names (api/v1 DrainStatus).
const MaxHeldBy = 20

// UnknownHealth is why a node is held while LINSTOR's resource states are not known
// (not read yet, or LINSTOR does not answer): what is not known is not given away.
const UnknownHealth = "LINSTOR's resource states are unknown"

// DrainHold is a resource that needs the node: draining it would cost the resource's
// data or quorum (replicahealth.Hold, which a planner does not import).
type DrainHold struct {
	Resource string
	Reason   string
}

// GuardState is what the node's drain guard pod is.
type GuardState int

const (
	// GuardMissing: no guard pod (never created, or evicted by a drain).
	GuardMissing GuardState = iota
	// GuardRunning: a guard pod that is not finished (running, pending or terminating).
	GuardRunning
	// GuardFinished: the guard pod Succeeded or Failed.
	GuardFinished
)

// GuardAction is what to do with the guard pod.
type GuardAction int

const (
	GuardKeep GuardAction = iota
	// GuardCreate: create the guard pod.
	GuardCreate
	// GuardReplace: delete the finished guard pod (the next pass creates it).
	GuardReplace
)

func (a GuardAction) String() string {
	return [...]string{"Keep", "Create", "Replace"}[a]
}

// DrainInput is what the drain decision needs of one node.
type DrainInput struct {
	// Known: LINSTOR's resource states were read (the observer's Health is not nil).
	Known bool
	// Holds are the resources the node holds, sorted (replicahealth Report.Holding).
	Holds []DrainHold
	// Cordoned: the Kubernetes node is unschedulable (spec.unschedulable).
	Cordoned bool
	Guard    GuardState
}

// DrainDecision is whether the node may be drained, and what to do about its guard.
type DrainDecision struct {
	Allowed bool
	// HeldBy names the first MaxHeldBy resources that hold the node ("rsc: reason"), or
	// UnknownHealth; HeldCount counts every resource that holds it.
	HeldBy []string
	// Holds are the first MaxHeldBy holds, for the status.
	Holds     []DrainHold
	HeldCount int32
	// Reason says in one sentence why the drain is allowed or held (the budget's
	// annotation, the Event).
	Reason string
	Guard  GuardAction
}

// Drain decides whether the node may be drained: only when LINSTOR's resource states
// are known and no resource needs the node. The guard pod is created on a node that is
// not cordoned: once a drain evicted it (the budget allowed it), re-creating it on the
// cordoned node would only be evicted again, or hold a drain that was already allowed;
// an uncordoned node gets it back. A finished guard guards nothing (the Eviction API
// deletes a finished or pending pod without asking its budget: registry/core/pod/
// storage/eviction.go canIgnorePDB), so it is replaced.
func Drain(in DrainInput) DrainDecision {
	var d DrainDecision
	switch {
	case !in.Known:
		d.HeldBy, d.Reason = []string{UnknownHealth}, UnknownHealth
	case len(in.Holds) == 0:
		d.Allowed, d.Reason = true, "No resource needs this node's replicas"
	default:
		for i, h := range in.Holds {
			if i == MaxHeldBy {
				break
			}
			d.HeldBy = append(d.HeldBy, h.Resource+": "+h.Reason)
			d.Holds = append(d.Holds, h)
		}
		d.HeldCount = int32(len(in.Holds))
		need := "resources need"
		if len(in.Holds) == 1 {
			need = "resource needs"
		}
		d.Reason = fmt.Sprintf("%d %s this node: %s", len(in.Holds), need, strings.Join(d.HeldBy, "; "))
		if len(in.Holds) > MaxHeldBy {
			d.Reason += fmt.Sprintf("; and %d more", len(in.Holds)-MaxHeldBy)
		}
	}
	switch {
	case in.Cordoned:
	case in.Guard == GuardMissing:
		d.Guard = GuardCreate
	case in.Guard == GuardFinished:
		d.Guard = GuardReplace
	}
	return d
}
