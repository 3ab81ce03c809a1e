package replicahealth

import (
	"sort"
	"strings"
	"time"
)

// Severity ranks a state: higher is worse, Healthy is 0, an unrecognised state -1.
func Severity(s State) int {
	for i, st := range States {
		if st == s {
			return len(States) - 1 - i
		}
	}
	return -1
}

// Worst lists up to n resources that are not Healthy, worst first: by Severity, then
// the longest in their state, then by name.
func (r *Report) Worst(n int) []*Resource {
	if r == nil || n <= 0 {
		return nil
	}
	var out []*Resource
	for _, res := range r.Resources {
		if res.State != Healthy {
			out = append(out, res)
		}
	}
	sort.Slice(out, func(a, b int) bool {
		sa, sb := Severity(out[a].State), Severity(out[b].State)
		if sa != sb {
			return sa > sb
		}
		if !out[a].Since.Equal(out[b].Since) {
			return out[a].Since.Before(out[b].Since)
		}
		return out[a].Name < out[b].Name
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// Transition is a resource whose state changed between two reports. From is "" for a
// resource that appeared, To "" for one that disappeared.
type Transition struct {
	Resource string
	From, To State
}

// Transitions lists the resources whose state differs between prev and next, sorted by
// name. Either report may be nil (no resources).
func Transitions(prev, next *Report) []Transition {
	var out []Transition
	if next != nil {
		for key, res := range next.Resources {
			var from State
			if old := prev.resource(key); old != nil {
				from = old.State
			}
			if from != res.State {
				out = append(out, Transition{Resource: res.Name, From: from, To: res.State})
			}
		}
	}
	if prev != nil {
		for key, old := range prev.Resources {
			if next.resource(key) == nil {
				out = append(out, Transition{Resource: old.Name, From: old.State})
			}
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Resource < out[b].Resource })
	return out
}

func (r *Report) resource(key string) *Resource {
	if r == nil {
		return nil
	}
	return r.Resources[key]
}

// replica is the resource's replica on node, nil when it has none.
func (r *Resource) replica(node string) *Replica {
	for i := range r.Replicas {
		if strings.EqualFold(r.Replicas[i].Node, node) {
			return &r.Replicas[i]
		}
	}
	return nil
}

// lastInUse is when the replica on node was last seen in use.
func (r *Resource) lastInUse(node string) (t time.Time) {
	if rr := r.replica(node); rr != nil {
		return rr.LastInUse
	}
	return t
}

// SameSummary reports whether two reports show the same counts and the same n worst
// resources (name, state, replicas UpToDate, sync progress to a tenth of a percent):
// what the status shows. A resync's progress changes the summary, not the states.
func SameSummary(a, b *Report, n int) bool {
	if a == nil || b == nil {
		return a == b
	}
	if len(a.Counts) != len(b.Counts) {
		return false
	}
	for s, c := range a.Counts {
		if b.Counts[s] != c {
			return false
		}
	}
	wa, wb := a.Worst(n), b.Worst(n)
	if len(wa) != len(wb) {
		return false
	}
	tenth := func(p *float64) int64 {
		if p == nil {
			return -1
		}
		return int64(*p * 10)
	}
	for i := range wa {
		x, y := wa[i], wb[i]
		if x.Name != y.Name || x.State != y.State || x.UpToDate != y.UpToDate || tenth(x.SyncPercent) != tenth(y.SyncPercent) || x.Message != y.Message {
			return false
		}
	}
	return true
}
