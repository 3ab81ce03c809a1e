// Package api tests the linstor.io CRDs on a real kube-apiserver: schema, CEL and
// webhook validation, and conversion between v1alpha1 and v1 through the operator's
// /convert webhook.
package api

import (
	"context"
	"os"
	"testing"

	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/linstor-operator/linstor-operator/test/envtest"
)

var env *envtest.Env

func TestMain(m *testing.M) { os.Exit(envtest.Run(m, envtest.Options{}, &env)) }

// update re-reads obj and applies mutate until the write does not conflict: the
// operator's controllers run in this environment and write to the same objects.
func update(ctx context.Context, obj client.Object, mutate func(), status bool) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		mutate()
		if status {
			return env.Client.Status().Update(ctx, obj)
		}
		return env.Client.Update(ctx, obj)
	})
}
