package api

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/operator-framework/api/pkg/manifests"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/linstor-operator/linstor-operator/test/envtest"
)

// TestALMExamplesAreAccepted creates every alm-examples object of the bundle's CSV on the
// real API server: what the console pre-fills must be valid.
func TestALMExamplesAreAccepted(t *testing.T) {
	g := NewWithT(t)
	b, err := manifests.GetBundleFromDir(filepath.Join(envtest.RepoRoot(), "bundle"))
	g.Expect(err).NotTo(HaveOccurred())
	var examples []map[string]any
	g.Expect(json.Unmarshal([]byte(b.CSV.Annotations["alm-examples"]), &examples)).To(Succeed())
	g.Expect(len(examples)).To(BeNumerically(">=", 7))
	ctx := context.Background()
	for i, ex := range examples {
		u := &unstructured.Unstructured{Object: ex}
		t.Run(fmt.Sprintf("%d-%s-%s", i, u.GetAPIVersion(), u.GetKind()), func(t *testing.T) {
			u.SetNamespace(env.Namespace(t))
			if err := env.Client.Create(ctx, u); err != nil {
				t.Fatalf("alm-example refused: %v", err)
			}
			_ = env.Client.Delete(ctx, u) // only one LinstorCluster may exist at a time
		})
	}
}
