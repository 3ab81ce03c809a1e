package catalog

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/linstor-operator/linstor-operator/internal/bundle"
	"github.com/linstor-operator/linstor-operator/test/envtest"
)

// Every release in the catalog besides this tree's is a build of a commit of this
// repository: its bundle directory names the commit, and generating the bundle from that
// commit's sources (the same generator and flags `make bundle` ran there) gives exactly
// the committed files. A release written by hand, or edited after its build, fails here.
func TestFrozenBundlesAreBuildsOfTheirCommit(t *testing.T) {
	root := envtest.RepoRoot()
	dirs, err := filepath.Glob(filepath.Join(root, "bundles", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no frozen release in bundles/ (%v)", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			ann := readAnnotations(t, dir)
			commit := ann[bundle.SourceCommitAnnotation]
			if len(commit) != 40 {
				t.Fatalf("%s: metadata/annotations.yaml has no %s (a full commit id)", dir, bundle.SourceCommitAnnotation)
			}
			if out, err := exec.Command("git", "-C", root, "cat-file", "-e", commit+"^{commit}").CombinedOutput(); err != nil {
				t.Fatalf("commit %s of release %s is not in this clone (%v %s): a shallow clone? fetch the history (git fetch --unshallow)", commit, filepath.Base(dir), err, out)
			}
			src := t.TempDir()
			archive := exec.Command("sh", "-c", "git -C \"$0\" archive \"$1\" | tar -x -C \"$2\"", root, commit, src)
			if out, err := archive.CombinedOutput(); err != nil {
				t.Fatalf("extracting %s: %v\n%s", commit, err, out)
			}
			r, err := bundle.ReadCatalogRelease(dir)
			if err != nil {
				t.Fatal(err)
			}
			csv := readCSV(t, dir)
			out := t.TempDir()
			gen := exec.Command("go", "run", "./hack/bundlegen", "-root", ".", "-out", out,
				"-version", r.Version.String(), "-image", csv.Annotations["containerImage"],
				"-channels", ann["operators.operatorframework.io.bundle.channels.v1"],
				"-default-channel", ann["operators.operatorframework.io.bundle.channel.default.v1"],
				"-created-at", csv.Annotations["createdAt"])
			gen.Dir = src
			if msg, err := gen.CombinedOutput(); err != nil {
				t.Fatalf("generating the bundle of %s: %v\n%s", commit, err, msg)
			}
			var files []string
			_ = filepath.Walk(out, func(path string, info os.FileInfo, err error) error {
				if err == nil && !info.IsDir() {
					rel, _ := filepath.Rel(out, path)
					files = append(files, rel)
				}
				return err
			})
			var frozen []string
			_ = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
				if err == nil && !info.IsDir() {
					rel, _ := filepath.Rel(dir, path)
					frozen = append(frozen, rel)
				}
				return err
			})
			slices.Sort(files)
			slices.Sort(frozen)
			if !slices.Equal(files, frozen) {
				t.Fatalf("files of the build of %s:\n%v\nfrozen:\n%v", commit, files, frozen)
			}
			for _, f := range files {
				built, _ := os.ReadFile(filepath.Join(out, f))
				kept, _ := os.ReadFile(filepath.Join(dir, f))
				if f == filepath.Join("metadata", "annotations.yaml") {
					kept = dropLine(kept, bundle.SourceCommitAnnotation)
				}
				if !bytes.Equal(built, kept) {
					t.Errorf("%s differs from the build of commit %s", filepath.Join(dir, f), commit)
				}
			}
		})
	}
}

func dropLine(raw []byte, key string) []byte {
	var out []string
	for _, line := range strings.SplitAfter(string(raw), "\n") {
		if !strings.Contains(line, key+":") {
			out = append(out, line)
		}
	}
	return []byte(strings.Join(out, ""))
}

func readCSV(t *testing.T, dir string) *operatorsv1alpha1.ClusterServiceVersion {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "manifests", "*.clusterserviceversion.yaml"))
	if len(files) != 1 {
		t.Fatalf("%s: want one CSV, found %d", dir, len(files))
	}
	raw, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	if err := yaml.Unmarshal(raw, csv); err != nil {
		t.Fatal(err)
	}
	return csv
}
