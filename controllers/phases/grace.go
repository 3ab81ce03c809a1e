package phases

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Grace tells a transient failure from a lasting one, per object: a single failed
// LINSTOR request must not flip conditions that users and alerts watch.
type Grace struct {
	// Period a failure must last before it is reported.
	Period time.Duration

	mu    sync.Mutex
	since map[types.UID]time.Time
}

// Failed records a failure of uid and reports whether it has lasted the whole Period.
func (g *Grace) Failed(uid types.UID, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.since == nil {
		g.since = map[types.UID]time.Time{}
	}
	first, ok := g.since[uid]
	if !ok {
		g.since[uid], first = now, now
	}
	return now.Sub(first) >= g.Period
}

// Succeeded forgets uid's failures.
func (g *Grace) Succeeded(uid types.UID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.since, uid)
}
