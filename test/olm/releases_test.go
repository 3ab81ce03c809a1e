package olm

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/linstor-operator/linstor-operator/internal/bundle"
	"github.com/linstor-operator/linstor-operator/internal/runbundle"
)

// The releases the scenario installs: the catalog's (bundles/<v>/, each a build of the
// commit it names, and this tree's bundle/), and test-only ones OLM is offered later,
// generated from this tree as `make bundle` would with the next versions. Each runs the
// operator binary built from its sources.
var testOnlyReleases = []string{"0.3.1", "0.3.2", "0.3.3"}

// channelProbe is a test-only bundle that only OLM's resolver sees: this tree's build
// with its CSV marked as running LINSTOR probeLinstor, the next minor line, so that the
// catalog's channels hold a release of a line no real release runs yet. The scenario
// never approves it: no operator ever runs as it.
const (
	channelProbe = "0.4.0"
	probeLinstor = "1.34.0"
)

// testBundleDir is where prepareReleases writes the test-only bundle of version.
func testBundleDir(work, version string) string { return filepath.Join(work, "bundles", version) }

// testCatalogDir is the catalog that also offers the test-only releases up to version.
func testCatalogDir(work, version string) string {
	return filepath.Join(work, "catalogs", "up-to-"+version)
}

func binaryOf(work, commit string) string {
	if commit == "" {
		return filepath.Join(work, "manager")
	}
	return filepath.Join(work, "manager-"+commit[:12])
}

// sourceOf is where a frozen release's sources are extracted.
func sourceOf(work, commit string) string { return filepath.Join(work, "src-"+commit[:12]) }

// operatorBinaryEnv names a prebuilt operator binary to run as this tree's releases instead
// of a go build: make test-images passes the /manager it took out of the operator image.
const operatorBinaryEnv = "OLM_OPERATOR_BINARY"

// prepareReleases builds, before the world loses the network, the operator binary of
// every release (this tree's, and each frozen release's from its commit), the test-only
// bundles and the catalogs that offer them.
func prepareReleases(root, work string) error {
	if prebuilt := os.Getenv(operatorBinaryEnv); prebuilt != "" {
		if err := copyExecutable(prebuilt, binaryOf(work, "")); err != nil {
			return fmt.Errorf("%s: %w", operatorBinaryEnv, err)
		}
		fmt.Fprintf(os.Stderr, "test/olm: this tree's operator is %s (%s), not a go build\n", prebuilt, operatorBinaryEnv)
	} else if err := goBuild(root, binaryOf(work, "")); err != nil {
		return fmt.Errorf("building this tree's operator: %w", err)
	}
	frozen, err := filepath.Glob(filepath.Join(root, "bundles", "*"))
	if err != nil {
		return err
	}
	for _, dir := range frozen {
		b, err := runbundle.ReadBundle(dir)
		if err != nil {
			return err
		}
		if len(b.SourceCommit) != 40 {
			return fmt.Errorf("%s names no source commit: it is not a release", dir)
		}
		src, bin := sourceOf(work, b.SourceCommit), binaryOf(work, b.SourceCommit)
		if _, err := os.Stat(bin); err == nil {
			if _, err := os.Stat(filepath.Join(src, "go.mod")); err == nil {
				continue // a commit's build never changes
			}
		}
		if err := os.RemoveAll(src); err != nil {
			return err
		}
		if err := os.MkdirAll(src, 0o755); err != nil {
			return err
		}
		extract := exec.Command("sh", "-c", `git -C "$0" archive "$1" | tar -x -C "$2"`, root, b.SourceCommit, src)
		if out, err := extract.CombinedOutput(); err != nil {
			return fmt.Errorf("extracting commit %s of %s (a shallow clone? git fetch --unshallow): %v: %s", b.SourceCommit, b.CSV.Name, err, out)
		}
		if err := goBuild(src, bin); err != nil {
			return fmt.Errorf("building %s from commit %s: %w", b.CSV.Name, b.SourceCommit, err)
		}
	}

	current, err := runbundle.ReadBundle(filepath.Join(root, "bundle"))
	if err != nil {
		return err
	}
	gen := filepath.Join(work, "bundlegen")
	build := exec.Command("go", "build", "-o", gen, "./hack/bundlegen")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building hack/bundlegen: %v: %s", err, out)
	}
	opm := filepath.Join(root, "bin", "opm", "opm-v1.73.0")
	var extra []string
	for _, v := range append(slices.Clone(testOnlyReleases), channelProbe) {
		dir := testBundleDir(work, v)
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		image := strings.TrimSuffix(current.CSV.Annotations["containerImage"], current.CSV.Spec.Version.String()) + v
		cmd := exec.Command(gen, "-root", ".", "-out", dir, "-version", v, "-image", image,
			"-channels", strings.Join(current.Channels, ","), "-default-channel", current.DefaultChannel,
			"-created-at", current.CSV.Annotations["createdAt"])
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("generating the test-only bundle %s: %v: %s", v, err, out)
		}
		why, linstor := "the next release of this tree, for test/olm", ""
		if v == channelProbe {
			why, linstor = "a channel probe for test/olm: this tree's operator, said to run LINSTOR "+probeLinstor+"; never installed", probeLinstor
		}
		if err := markTestOnly(dir, why, linstor); err != nil {
			return err
		}
		extra = append(extra, dir)
		catalog := testCatalogDir(work, v)
		if err := os.RemoveAll(catalog); err != nil {
			return err
		}
		render := exec.Command(filepath.Join(root, "hack", "render-catalog.sh"), append([]string{opm, catalog}, extra...)...)
		if out, err := render.CombinedOutput(); err != nil {
			return fmt.Errorf("rendering the catalog up to %s: %v: %s", v, err, out)
		}
	}
	return nil
}

// TestOnlyAnnotation marks the CSV of a bundle the test made, saying why it exists.
const TestOnlyAnnotation = "linstor.io/test-only"

// markTestOnly annotates the bundle's CSV as test-only, with why, and when linstor is
// set rewrites the LINSTOR version it says it runs (which decides its catalog channels).
func markTestOnly(dir, why, linstor string) error {
	files, err := filepath.Glob(filepath.Join(dir, "manifests", "*.clusterserviceversion.yaml"))
	if err != nil || len(files) != 1 {
		return fmt.Errorf("%s: want one CSV, found %d (%v)", dir, len(files), err)
	}
	raw, err := os.ReadFile(files[0])
	if err != nil {
		return err
	}
	key := "    " + bundle.LinstorVersionAnnotation + ": "
	var out []string
	marked := false
	for _, line := range strings.SplitAfter(string(raw), "\n") {
		if strings.HasPrefix(line, key) {
			if linstor != "" {
				line = key + linstor + "\n"
			}
			// The annotations are sorted: test-only follows linstor-version.
			line += fmt.Sprintf("    %s: %q\n", TestOnlyAnnotation, why)
			marked = true
		}
		out = append(out, line)
	}
	if !marked {
		return fmt.Errorf("%s has no %s annotation", files[0], bundle.LinstorVersionAnnotation)
	}
	return os.WriteFile(files[0], []byte(strings.Join(out, "")), 0o644)
}

func copyExecutable(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	// A new file: a running binary of an earlier run may still hold the old one open.
	if err := os.Remove(to); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return os.WriteFile(to, data, 0o755)
}

func goBuild(dir, out string) error {
	build := exec.Command("go", "build", "-o", out, ".")
	build.Dir = dir
	if msg, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build in %s: %v: %s", dir, err, msg)
	}
	return nil
}

// releaseBinaries maps each operator image of the world's releases to the binary built
// from that release's sources: what a kubelet would run for a pod of that image.
func releaseBinaries(root, work string) (map[string]string, error) {
	dirs, err := filepath.Glob(filepath.Join(root, "bundles", "*"))
	if err != nil {
		return nil, err
	}
	dirs = append(dirs, filepath.Join(root, "bundle"))
	for _, v := range testOnlyReleases {
		dirs = append(dirs, testBundleDir(work, v))
	}
	out := map[string]string{}
	for _, dir := range dirs {
		b, err := runbundle.ReadBundle(dir)
		if err != nil {
			return nil, err
		}
		image := b.CSV.Annotations["containerImage"]
		if image == "" {
			return nil, fmt.Errorf("%s: the CSV has no containerImage", dir)
		}
		bin := binaryOf(work, b.SourceCommit)
		if _, err := os.Stat(bin); err != nil {
			return nil, errors.Join(fmt.Errorf("the operator of %s", b.CSV.Name), err)
		}
		out[image] = bin
	}
	return out, nil
}
