package reconciler

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StatusOption changes how PatchStatus writes.
type StatusOption func(*statusOptions)

type statusOptions struct{ optimisticLock bool }

// WithOptimisticLock makes the write conditional on the resourceVersion the pass read:
// a status written meanwhile (by another pass, another replica during a leader
// handover) is never overwritten, the write fails with a conflict instead. For status
// that records progress others act on (a backup's phase); a status derived afresh
// from observations every pass goes without it.
func WithOptimisticLock() StatusOption {
	return func(o *statusOptions) { o.optimisticLock = true }
}

// PatchStatus is the one status writer (the idea of cluster-api's patch helper): it
// snapshots obj, lets change derive the new status in place, and writes the status
// subresource with one merge patch only when it differs from the snapshot
// (equality.Semantic), so a steady state makes no write. It reports whether it wrote;
// a failed write is returned as is (the caller decides whether NotFound or a conflict
// count) and obj then holds the status that was not saved.
//
// The snapshot is taken here, not at the start of the pass, on purpose: a pass may save
// progress on its own before (the cluster's lifecycle state, a satellite's disk claims),
// and that is already stored; comparing against the start would write it again.
//
// obj must be a pointer to a struct with a Status field (every kind of this API).
func PatchStatus[T client.Object](ctx context.Context, c client.Client, obj T, change func(), opts ...StatusOption) (wrote bool, err error) {
	var o statusOptions
	for _, opt := range opts {
		opt(&o)
	}
	before := obj.DeepCopyObject().(T)
	change()
	if equality.Semantic.DeepEqual(statusOf(before), statusOf(obj)) {
		return false, nil // a write that changes nothing still costs the API server
	}
	patch := client.MergeFrom(before)
	if o.optimisticLock {
		patch = client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
	}
	if err := c.Status().Patch(ctx, obj, patch); err != nil {
		return false, err
	}
	return true, nil
}

// statusOf is obj's Status field: the kinds share no interface for it, and comparing
// the typed value keeps what equality.Semantic knows (quantities, times).
func statusOf(obj client.Object) any {
	v := reflect.ValueOf(obj)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() == reflect.Struct {
		if f := v.FieldByName("Status"); f.IsValid() {
			return f.Interface()
		}
	}
	panic(fmt.Sprintf("reconciler.PatchStatus: %T has no Status field", obj))
}
