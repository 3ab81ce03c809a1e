// Package api tests the linstor.io CRDs on a real kube-apiserver: schema, CEL and
// webhook validation, and conversion between v1alpha1 and v1 through the operator's
// /convert webhook.
package api

import (
	"os"
	"testing"

	"github.com/linstor-operator/linstor-operator/test/envtest"
)

var env *envtest.Env

func TestMain(m *testing.M) { os.Exit(envtest.Run(m, envtest.Options{}, &env)) }
