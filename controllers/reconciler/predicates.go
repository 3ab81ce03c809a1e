package reconciler

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// NotStatusOnly passes every event except an update that changed nothing but status
// (or resourceVersion and managedFields): the spec, labels, annotations, finalizers and
// deletion pass. A controller is not woken by its own status writes.
func NotStatusOnly() predicate.Predicate {
	return predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{},
		predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
			return !e.ObjectOld.GetDeletionTimestamp().Equal(e.ObjectNew.GetDeletionTimestamp()) ||
				!slices.Equal(e.ObjectOld.GetFinalizers(), e.ObjectNew.GetFinalizers())
		}})
}

// RateLimiter backs off per object on errors, from half a second to two minutes: one
// object's failures neither storm the API nor slow the others.
func RateLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](500*time.Millisecond, 2*time.Minute)
}

// Backoff spaces the retries of a failing LINSTOR write per object: 1s, 2s, 4s, … up
// to Max (two minutes when unset). While LINSTOR is down, N objects do not retry every few seconds together.
type Backoff struct {
	Max time.Duration

	mu       sync.Mutex
	failures map[types.UID]int
}

// Failed records a failure and returns how long to wait before the next try.
func (b *Backoff) Failed(uid types.UID) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failures == nil {
		b.failures = map[types.UID]int{}
	}
	n := b.failures[uid]
	b.failures[uid] = n + 1
	return b.wait(n)
}

// Next is the wait Failed would return now, without recording a failure: a pass that
// records only once its outcome is saved.
func (b *Backoff) Next(uid types.UID) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.wait(b.failures[uid])
}

// wait is the wait after n earlier failures.
func (b *Backoff) wait(n int) time.Duration {
	limit := b.Max
	if limit <= 0 {
		limit = 2 * time.Minute
	}
	return min(time.Second<<min(n, 10), limit)
}

// Succeeded forgets uid's failures.
func (b *Backoff) Succeeded(uid types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.failures, uid)
}
