package api

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

func TestCreateMinimalCluster(t *testing.T) {
	ns := env.Namespace(t)
	c := &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Name: "linstor", Namespace: ns}}
	if err := env.Client.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), c) })
}
