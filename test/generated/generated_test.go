// Package generated fails when committed generated code or manifests are stale: it
// regenerates them in a copy of the repository and compares.
package generated

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/linstor-operator/linstor-operator/test/envtest"
)

// controllerGen is the pinned binary `make controller-gen` installs.
func controllerGen(t *testing.T, root string) string {
	if p := os.Getenv("CONTROLLER_GEN"); p != "" {
		return p
	}
	p := filepath.Join(root, "bin", "controller-gen-v0.19.0")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("controller-gen not found at %s: run `make controller-gen` (make test does)", p)
	}
	return p
}

// copyTree copies the sources (not bin/, .git or test data of other tools).
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() && (rel == "bin" || rel == ".git" || rel == "testbin") {
			return filepath.SkipDir
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestGeneratedFilesAreFresh(t *testing.T) {
	root := envtest.RepoRoot()
	gen := controllerGen(t, root)
	work := t.TempDir()
	copyTree(t, root, work)

	run := func(args ...string) {
		cmd := exec.Command(gen, args...)
		cmd.Dir = work
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("controller-gen %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// The same invocations as `make generate manifests`.
	run(`object:headerFile=hack/boilerplate.go.txt`, `paths=./...`)
	run(`rbac:roleName=manager-role`, `crd`, `webhook`, `paths=./...`, `output:crd:artifacts:config=config/crd/bases`)
	trim := exec.Command("go", "run", "./hack/crdtrim", "config/crd/bases")
	trim.Dir = work
	if out, err := trim.CombinedOutput(); err != nil {
		t.Fatalf("hack/crdtrim: %v\n%s", err, out)
	}

	var checked int
	for _, pattern := range []string{"api/*/zz_generated.deepcopy.go", "config/crd/bases/*.yaml", "config/rbac/role.yaml", "config/webhook/manifests.yaml"} {
		regenerated, _ := filepath.Glob(filepath.Join(work, pattern))
		committed, _ := filepath.Glob(filepath.Join(root, pattern))
		if len(regenerated) != len(committed) {
			t.Errorf("%s: %d files generated, %d committed: run `make generate manifests`", pattern, len(regenerated), len(committed))
		}
		for _, f := range regenerated {
			rel, _ := filepath.Rel(work, f)
			want, _ := os.ReadFile(f)
			got, err := os.ReadFile(filepath.Join(root, rel))
			if err != nil || !bytes.Equal(want, got) {
				t.Errorf("%s is stale: run `make generate manifests` and commit", rel)
			}
			checked++
		}
	}
	if checked < 7 {
		t.Errorf("only %d generated files checked", checked)
	}
}
