package api

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/operator-framework/api/pkg/manifests"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/internal/bundle"
	"github.com/linstor-operator/linstor-operator/test/envtest"
)

var generated struct {
	once sync.Once
	csv  *operatorsv1alpha1.ClusterServiceVersion
	err  error
}

// generatedCSV is the CSV `make bundle` writes, generated afresh from config/ (the
// committed bundle's freshness is test/bundle's concern).
func generatedCSV(t *testing.T) *operatorsv1alpha1.ClusterServiceVersion {
	t.Helper()
	generated.once.Do(func() {
		out := t.TempDir() // read once, below
		generated.err = bundle.Generate(bundle.Options{Root: envtest.RepoRoot(), Out: out, Version: "0.2.0",
			Image: "quay.io/linstor-operator/linstor-operator:v0.2.0", Channels: []string{"stable"}, DefaultChannel: "stable",
			CreatedAt: "2026-11-22T00:00:00Z", Dockerfile: filepath.Join(out, "bundle.Dockerfile")})
		if generated.err != nil {
			return
		}
		b, err := manifests.GetBundleFromDir(out)
		if err != nil {
			generated.err = err
			return
		}
		generated.csv = b.CSV
	})
	if generated.err != nil {
		t.Fatalf("generating the bundle: %v", generated.err)
	}
	return generated.csv
}

func almExamples(t *testing.T) []map[string]any {
	t.Helper()
	var examples []map[string]any
	if err := json.Unmarshal([]byte(generatedCSV(t).Annotations["alm-examples"]), &examples); err != nil {
		t.Fatalf("alm-examples: %v", err)
	}
	return examples
}

// TestALMExamplesAreAccepted creates every alm-example of the generated CSV, as the
// console's Create button does (no namespace: the one the user is in), on the real API
// server with the operator's webhooks: what the console pre-fills must be valid. Every
// served version of every owned kind has one.
func TestALMExamplesAreAccepted(t *testing.T) {
	g := NewWithT(t)
	examples := almExamples(t)
	var want, got []string
	for _, d := range generatedCSV(t).Spec.CustomResourceDefinitions.Owned {
		want = append(want, "linstor.io/"+d.Version+"/"+d.Kind)
	}
	for _, ex := range examples {
		u := &unstructured.Unstructured{Object: ex}
		got = append(got, u.GetAPIVersion()+"/"+u.GetKind())
	}
	sort.Strings(want)
	sort.Strings(got)
	g.Expect(got).To(Equal(want), "one alm-example per owned kind and version")

	ctx := context.Background()
	for i, ex := range examples {
		u := &unstructured.Unstructured{Object: ex}
		t.Run(fmt.Sprintf("%d-%s-%s", i, u.GetAPIVersion(), u.GetKind()), func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(u.GetNamespace()).To(BeEmpty(), "the console creates the example in the namespace the user is in")
			u.SetNamespace(env.Namespace(t))
			if err := env.Client.Create(ctx, u); err != nil {
				t.Fatalf("alm-example refused: %v", err)
			}
			// Only one LinstorCluster may exist at a time: the next example must not see this one.
			g.Expect(env.Client.Delete(ctx, u)).To(Succeed())
			g.Eventually(func() bool {
				return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(u), u.DeepCopy()))
			}, 20*time.Second, 100*time.Millisecond).Should(BeTrue(), "example not deleted")
		})
	}
}

// TestInitializationResourceIsTheClusterExample: the object the console offers to
// create after the install is a v1 LinstorCluster, exactly its alm-example, and the API
// server accepts it.
func TestInitializationResourceIsTheClusterExample(t *testing.T) {
	g := NewWithT(t)
	raw, ok := generatedCSV(t).Annotations[bundle.InitializationResourceAnnotation]
	g.Expect(ok).To(BeTrue(), "the CSV has no %s annotation", bundle.InitializationResourceAnnotation)

	// The console JSON.parses it and reads apiVersion, kind and metadata.
	var obj map[string]any
	g.Expect(json.Unmarshal([]byte(raw), &obj)).To(Succeed())
	var typed linstorv1.LinstorCluster
	g.Expect(yaml.UnmarshalStrict([]byte(raw), &typed)).To(Succeed(), "every field is a LinstorCluster field")
	g.Expect(typed.APIVersion).To(Equal(linstorv1.GroupVersion.String()))
	g.Expect(typed.Kind).To(Equal("LinstorCluster"))
	g.Expect(typed.Name).NotTo(BeEmpty())
	g.Expect(typed.Namespace).To(BeEmpty(), "without a namespace the console uses the install namespace, where LINSTOR runs")

	var example map[string]any
	for _, ex := range almExamples(t) {
		if ex["apiVersion"] == obj["apiVersion"] && ex["kind"] == obj["kind"] {
			example = ex
		}
	}
	g.Expect(obj).To(Equal(example), "the initialization resource differs from the LinstorCluster alm-example")

	ctx := context.Background()
	u := &unstructured.Unstructured{Object: obj}
	u.SetNamespace(env.Namespace(t))
	g.Expect(env.Client.Create(ctx, u)).To(Succeed())
	g.Expect(env.Client.Delete(ctx, u)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(u), u.DeepCopy()))
	}, 20*time.Second, 100*time.Millisecond).Should(BeTrue(), "LinstorCluster not deleted")
}
