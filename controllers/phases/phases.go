// Package phases runs a reconciler's phase list: every phase runs (errors are
// aggregated so the status patch still happens) until one asks to stop, and the
// shortest requested requeue wins over the LINSTOR poll interval.
package phases

import (
	"context"
	"time"

	kerrors "k8s.io/apimachinery/pkg/util/errors"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Resync is when a reconciler looks again although nothing told it to: LINSTOR's
// changes arrive through the observer and Kubernetes' through watches, so this is only
// a safety net (and the pace of slow clocks, such as certificate renewal).
const Resync = 10 * time.Minute

// Phase acts on the pass's scope and records what it saw there.
type Phase[S any] func(context.Context, S) (ctrl.Result, error)

// Run runs phases in order until stop reports true.
func Run[S any](ctx context.Context, scope S, poll time.Duration, stop func() bool, list ...Phase[S]) (ctrl.Result, error) {
	result := ctrl.Result{RequeueAfter: poll}
	var errs []error
	for _, phase := range list {
		res, err := phase(ctx, scope)
		if err != nil {
			errs = append(errs, err)
		}
		if res.RequeueAfter > 0 && res.RequeueAfter < result.RequeueAfter {
			result.RequeueAfter = res.RequeueAfter
		}
		if stop() {
			break
		}
	}
	return result, kerrors.NewAggregate(errs)
}

// Poll returns configured, or def when it is zero.
func Poll(configured, def time.Duration) time.Duration {
	if configured > 0 {
		return configured
	}
	return def
}
