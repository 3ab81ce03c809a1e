package bundle

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/linstor-operator/linstor-operator/internal/bundle"
	"github.com/linstor-operator/linstor-operator/pkg/images"
	"github.com/linstor-operator/linstor-operator/pkg/upgrade"
	"github.com/linstor-operator/linstor-operator/test/envtest"
)

const operatorImage = "quay.io/linstor-operator/linstor-operator:v0.3.0"

// generate writes a bundle for this tree into a temporary directory and loads it.
func generate(t *testing.T, digests map[string]string) (string, error) {
	t.Helper()
	out := t.TempDir()
	return out, bundle.Generate(bundle.Options{Root: envtest.RepoRoot(), Out: out, Version: "0.3.0", Image: operatorImage,
		Channels: []string{"candidate", "stable"}, DefaultChannel: "stable", CreatedAt: "2026-11-22T00:00:00Z",
		Dockerfile: filepath.Join(out, "bundle.Dockerfile"), Digests: digests})
}

func fakeDigest(ref string) string { return fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(ref))) }

// managerEnv returns the manager container's image and environment.
func managerEnv(t *testing.T, dir string) (string, []corev1.EnvVar) {
	t.Helper()
	csv := load(t, dir).CSV
	for _, c := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec.Containers {
		if c.Name == "manager" {
			return c.Image, c.Env
		}
	}
	t.Fatal("no manager container")
	return "", nil
}

// With a digest for every image, the bundle names no image by tag: the operator's own,
// each RELATED_IMAGE_ variable, each relatedImages entry, the LINSTOR images of
// rollbacks and stepping stones. Only then is it marked disconnected-ready, and the
// operator started with that environment runs the pinned images on every path.
func TestPinnedBundleNamesEveryImageByDigest(t *testing.T) {
	committed := load(t, bundleDir()).CSV
	digests := map[string]string{}
	for _, r := range committed.Spec.RelatedImages {
		digests[r.Image] = fakeDigest(r.Image)
	}
	dir, err := generate(t, digests)
	if err != nil {
		t.Fatal(err)
	}
	csv := load(t, dir).CSV
	pinned := func(what, ref string) {
		if !strings.Contains(ref, "@sha256:") || strings.Contains(ref[strings.LastIndex(ref, "/"):], ":v") {
			t.Errorf("%s is %q, not pinned by digest alone", what, ref)
		}
	}
	if got := csv.Annotations[bundle.DisconnectedAnnotation]; got != "true" {
		t.Errorf("%s = %q with every image pinned, want true", bundle.DisconnectedAnnotation, got)
	}
	pinned("containerImage", csv.Annotations["containerImage"])
	if len(csv.Spec.RelatedImages) != len(committed.Spec.RelatedImages) {
		t.Errorf("%d relatedImages pinned, %d unpinned", len(csv.Spec.RelatedImages), len(committed.Spec.RelatedImages))
	}
	for _, r := range csv.Spec.RelatedImages {
		pinned("relatedImages "+r.Name, r.Image)
	}
	image, env := managerEnv(t, dir)
	pinned("the manager container's image", image)
	var environ []string
	for _, e := range env {
		if strings.HasPrefix(e.Name, "RELATED_IMAGE_") {
			pinned(e.Name, e.Value)
			environ = append(environ, e.Name+"="+e.Value)
		}
	}
	set, err := images.FromEnv(environ)
	if err != nil {
		t.Fatal(err)
	}
	// Every LINSTOR version the release can run, the rollback targets included, runs a
	// pinned image; before the per-version variables it was derived by tag.
	for _, v := range upgrade.Current.Runnable {
		for _, c := range []images.Component{images.LinstorController, images.LinstorSatellite} {
			got := set.ForLinstor(v.String()).Image(c)
			want := ""
			for _, r := range committed.Spec.RelatedImages {
				if r.Image == images.Default().ForLinstor(v.String()).Image(c) {
					want = strings.SplitN(r.Image, ":v", 2)[0] + "@" + fakeDigest(r.Image)
				}
			}
			if got != want {
				t.Errorf("LINSTOR %s %s runs %q, want the pinned %q", v, c, got, want)
			}
		}
	}
}

func TestUnpinnedBundleIsNotMarkedDisconnected(t *testing.T) {
	csv := load(t, bundleDir()).CSV
	if got := csv.Annotations[bundle.DisconnectedAnnotation]; got != "false" {
		t.Errorf("the committed bundle names images by tag but %s = %q", bundle.DisconnectedAnnotation, got)
	}
	// The LINSTOR images of the other versions the release runs have their own variable,
	// so a Subscription's spec.config.env or a mirror can replace them.
	_, env := managerEnv(t, bundleDir())
	names := map[string]bool{}
	for _, e := range env {
		names[e.Name] = true
	}
	for _, v := range upgrade.Current.Runnable {
		if v.Compare(upgrade.Current.Target) == 0 {
			continue
		}
		for _, c := range []images.Component{images.LinstorController, images.LinstorSatellite} {
			if n := images.VersionedName(c, v.String()); !names[n] {
				t.Errorf("the manager has no %s", n)
			}
		}
	}
}

func TestPinningNeedsADigestForEveryImage(t *testing.T) {
	committed := load(t, bundleDir()).CSV
	digests := map[string]string{}
	var left string
	for _, r := range committed.Spec.RelatedImages {
		if strings.Contains(r.Image, "v1.33.2") {
			left = r.Image // a rollback target: the easiest one to forget
			continue
		}
		digests[r.Image] = fakeDigest(r.Image)
	}
	_, err := generate(t, digests)
	if err == nil || !strings.Contains(err.Error(), "no digest for 1 images: "+left) {
		t.Fatalf("error %v, want one naming %s", err, left)
	}
}

func TestReadDigests(t *testing.T) {
	good := "# from skopeo\nquay.io/a/b:v1 " + fakeDigest("x") + "\n\n"
	for _, tc := range []struct {
		name, text, err string
	}{
		{"good", good, ""},
		{"no digest", "quay.io/a/b:v1\n", `:1: want "<image reference> sha256:<64 hex digits>"`},
		{"short digest", "quay.io/a/b:v1 sha256:abc\n", ":1: want"},
		{"three fields", "quay.io/a/b:v1 " + fakeDigest("x") + " extra\n", ":1: want"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "digests")
			if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := bundle.ReadDigests(path)
			if tc.err == "" {
				if err != nil || got["quay.io/a/b:v1"] != fakeDigest("x") {
					t.Fatalf("got %v, %v", got, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
		})
	}
}

// docs/olm.md states the capability level the CSV claims; the two must agree.
func TestCapabilityLevelMatchesTheDocs(t *testing.T) {
	csv := load(t, bundleDir()).CSV
	doc, err := os.ReadFile(filepath.Join(envtest.RepoRoot(), "docs", "olm.md"))
	if err != nil {
		t.Fatal(err)
	}
	claim := regexp.MustCompile(`The CSV claims \*\*([^*]+)\*\*`).FindSubmatch(doc)
	if claim == nil {
		t.Fatal(`docs/olm.md has no "The CSV claims **<level>**" sentence`)
	}
	if got := csv.Annotations["capabilities"]; got != string(claim[1]) {
		t.Errorf("the CSV claims %q, docs/olm.md %q", got, claim[1])
	}
	if got := csv.Annotations["features.operators.openshift.io/csi"]; got != "true" {
		t.Errorf("the operator deploys a CSI driver, but features.operators.openshift.io/csi = %q", got)
	}
}
