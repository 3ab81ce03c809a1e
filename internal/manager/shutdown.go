package manager

import (
	"context"
	"os"
	"time"
)

// DrainDelay is how long the operator keeps serving after it is told to stop. A
// terminating pod leaves the webhook Service's endpoints at once, but the API server may
// still be sending it requests for a moment; stopping only after this delay means none of
// them meets a closed port. This is what a preStop sleep hook would do, but OLM's CSV
// schema from its quickstart manifests drops the sleep handler (the Deployment is then
// refused), and the image has no sleep binary for an exec hook.
const DrainDelay = 5 * time.Second

// ContextUntilDrained returns a context cancelled delay after the first signal on sig.
// A second signal exits at once, as controller-runtime's signal handler does.
func ContextUntilDrained(sig <-chan os.Signal, delay time.Duration) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-sig
		select {
		case <-time.After(delay):
		case <-sig:
			os.Exit(1)
		}
		cancel()
		<-sig
		os.Exit(1)
	}()
	return ctx
}
