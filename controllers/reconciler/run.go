package reconciler

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

// Phase acts on the pass's scope and records what it saw there. It never sets a
// condition: only the pass's save turns the scope into status.
type Phase[S any] func(context.Context, S) (ctrl.Result, error)

// SaveFunc derives the status from the pass's scope and writes it (PatchStatus);
// passErr is what the phases returned. Its error is added to the pass's, so each kind
// decides which write errors count (a conflict, for one, only means that the next pass
// starts from what is stored).
type SaveFunc[S any] func(ctx context.Context, scope S, passErr error) error

// Pass is one reconcile of one object: Run, then save. save is deferred, so it runs
// whatever the phases did, a panic included.
func Pass[S any](ctx context.Context, scope S, save SaveFunc[S], poll time.Duration, stop func() bool, list ...Phase[S]) (res ctrl.Result, err error) {
	defer func() {
		if serr := save(ctx, scope, err); serr != nil {
			res, err = ctrl.Result{}, kerrors.Reduce(kerrors.NewAggregate([]error{err, serr}))
		}
	}()
	return Run(ctx, scope, poll, stop, list...)
}

// Run runs phases in order until stop reports true. The shortest RequeueAfter a phase
// asks for wins over poll (zero: no requeue unless a phase asks). An error is returned
// alone: controller-runtime ignores the result next to an error (it backs off), and
// says so in a warning. One error is returned as itself, so apierrors.IsConflict and
// friends still see it.
func Run[S any](ctx context.Context, scope S, poll time.Duration, stop func() bool, list ...Phase[S]) (ctrl.Result, error) {
	result := ctrl.Result{RequeueAfter: poll}
	var errs []error
	for _, phase := range list {
		res, err := phase(ctx, scope)
		if err != nil {
			errs = append(errs, err)
		}
		if res.RequeueAfter > 0 && (result.RequeueAfter == 0 || res.RequeueAfter < result.RequeueAfter) {
			result.RequeueAfter = res.RequeueAfter
		}
		if stop() {
			break
		}
	}
	if len(errs) > 0 {
		return ctrl.Result{}, kerrors.Reduce(kerrors.NewAggregate(errs))
	}
	return result, nil
}

// Poll returns configured, or def when it is zero.
func Poll(configured, def time.Duration) time.Duration {
	if configured > 0 {
		return configured
	}
	return def
}
