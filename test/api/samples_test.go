package api

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/linstor-operator/linstor-operator/test/envtest"
)

// TestSamplesAreAcceptedAndReadableInTheOtherVersion applies every sample, reads it back
// in the other served version, if its kind has one, and writes it back unchanged through
// that version: the sample's spec survives (v1alpha1 cannot express a file pool; the
// conversion keeps it).
func TestSamplesAreAcceptedAndReadableInTheOtherVersion(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(envtest.RepoRoot(), "config", "samples", "linstor_*.yaml"))
	if err != nil || len(files) < 7 {
		t.Fatalf("samples: %v (%d files)", err, len(files))
	}
	multiVersion := map[string]bool{"LinstorCluster": true, "LinstorSatelliteConfiguration": true, "LinstorSatellite": true}
	ctx := context.Background()
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			g := NewWithT(t)
			raw, err := os.ReadFile(f)
			g.Expect(err).NotTo(HaveOccurred())
			u := &unstructured.Unstructured{}
			g.Expect(yaml.Unmarshal(raw, &u.Object)).To(Succeed())
			u.SetNamespace(env.Namespace(t))
			g.Expect(env.Client.Create(ctx, u)).To(Succeed())
			t.Cleanup(func() { _ = env.Client.Delete(ctx, u) })

			if !multiVersion[u.GetKind()] {
				return
			}
			other := "linstor.io/v1"
			if strings.HasSuffix(u.GetAPIVersion(), "/v1") {
				other = "linstor.io/v1alpha1"
			}
			read := &unstructured.Unstructured{}
			read.SetAPIVersion(other)
			read.SetKind(u.GetKind())
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(u), read)).To(Succeed())
			g.Expect(read.Object).To(HaveKey("spec"))
			g.Expect(update(ctx, read, func() {}, false)).To(Succeed())
			back := &unstructured.Unstructured{}
			back.SetAPIVersion(u.GetAPIVersion())
			back.SetKind(u.GetKind())
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(u), back)).To(Succeed())
			g.Expect(back.Object["spec"]).To(Equal(u.Object["spec"]), "the write through %s changed the spec", other)
		})
	}
}
