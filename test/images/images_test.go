package images

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrlenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/linstor-operator/linstor-operator/test/envtest"
)

// The base images hack/build-base-images.sh makes, in the test's own buildah storage.
const (
	localBuilderImage = "localhost/linstor-operator-test/builder:local"
	localRuntimeImage = "localhost/linstor-operator-test/runtime:local"
	localOpmImage     = "localhost/linstor-operator-test/opm:local"
)

// TestImagesBuildPushAndRun builds the three images the way a user does (make docker-build,
// bundle-build, catalog-build and their push targets) with CONTAINER_TOOL=buildah, from
// local base images because public ones cannot be pulled here, pushes them to a real
// registry on loopback, and checks what comes back from the registry: the operator image
// runs its binary as user 65532 and the binary starts against a real kube-apiserver; the
// bundle image renders as bundle/ does; the catalog image lists every release's bundle by
// its pushed image. Then test/olm's OLM scenario runs with the binary taken out of the
// operator image as this tree's operator. Heavy (minutes, and image storage under
// bin/images-test): run by make test-images (TEST_IMAGES=1), which .ci/run runs after make test.
func TestImagesBuildPushAndRun(t *testing.T) {
	if os.Getenv("TEST_IMAGES") == "" {
		t.Skip("builds images with buildah: run it with make test-images (TEST_IMAGES=1)")
	}
	// Asked to run, a missing tool is a failure: a skip would let CI pass with no image built.
	for _, tool := range []string{"buildah", "docker-registry", "busybox", "make"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("TEST_IMAGES is set but %s is not installed (Debian: apt-get install buildah docker-registry busybox-static)", tool)
		}
	}
	if os.Geteuid() != 0 {
		t.Fatal("TEST_IMAGES is set but the test is not root: buildah's vfs storage and chroot isolation need root here")
	}
	root := envtest.RepoRoot()
	registry := startRegistry(t)
	b := newBuildah(t, filepath.Join(root, "bin", "images-test"))

	start := time.Now()
	opm := envtest.OPMBinary(t)
	script := exec.Command(filepath.Join(root, "hack", "build-base-images.sh"), localBuilderImage, localRuntimeImage, localOpmImage)
	script.Env = append(os.Environ(), "BUILDAH="+b.command(), "OPM="+opm)
	runCommand(t, script)
	t.Logf("local base images built in %s", time.Since(start).Round(time.Second))
	// What the closing summary reports, one line per image.
	var summary []string
	t.Cleanup(func() {
		t.Logf("summary:\n  %s", strings.Join(summary, "\n  "))
	})
	// What the OLM tests take out of the pushed images: the operator binary, the catalog
	// image's /configs, and each bundle image's content ("image=dir").
	imageManager := filepath.Join(t.TempDir(), "manager")
	imageContents := t.TempDir()
	catalogConfigs := ""
	var bundleContents []string
	bundleImage := registry + "/linstor-operator/linstor-operator-bundle:v0.0.0-test"

	t.Run("operator", func(t *testing.T) {
		image := registry + "/linstor-operator/linstor-operator:v0.0.0-test"
		buildFlags := "--isolation chroot --build-arg BUILDER_IMAGE=" + localBuilderImage +
			" --build-arg RUNTIME_IMAGE=" + localRuntimeImage
		built := b.make(t, root, "docker-build", "IMG="+image, "CONTAINER_BUILD_FLAGS="+buildFlags)
		t.Logf("operator image built in %s (make docker-build)", built)
		pushed := b.make(t, root, "docker-push", "IMG="+image, "CONTAINER_PUSH_FLAGS=--tls-verify=false")
		t.Logf("operator image pushed to %s in %s (make docker-push)", image, pushed)

		// From here on, only what the registry holds counts.
		manifest, config := readFromRegistry(t, registry, "linstor-operator/linstor-operator", "v0.0.0-test")
		t.Logf("operator image in the registry: %d layers, %s compressed", len(manifest.Layers), mebibytes(manifest.compressedSize()))
		summary = append(summary, fmt.Sprintf("operator image: built in %s, pushed in %s, %d layers, %s compressed",
			built, pushed, len(manifest.Layers), mebibytes(manifest.compressedSize())))
		if got, want := config.Config.User, "65532:65532"; got != want {
			t.Errorf("the image runs as user %q, want %q (distroless nonroot)", got, want)
		}
		if got, want := config.Config.Entrypoint, []string{"/manager"}; !slices.Equal(got, want) {
			t.Errorf("the image's entrypoint is %q, want %q", got, want)
		}

		b.run(t, "rmi", image)
		b.run(t, "pull", "--tls-verify=false", image)
		ctr := strings.TrimSpace(b.run(t, "from", image))
		t.Cleanup(func() { b.run(t, "rm", ctr) })
		rootfs := strings.TrimSpace(b.run(t, "mount", ctr))
		t.Logf("operator image unpacked: %s", mebibytes(treeSize(t, rootfs)))
		passwd, err := os.ReadFile(filepath.Join(rootfs, "etc", "passwd"))
		if err != nil || !strings.Contains(string(passwd), ":65532:65532:") {
			t.Errorf("the image's /etc/passwd has no user 65532 (%v):\n%s", err, passwd)
		}
		if _, err := os.Stat(filepath.Join(rootfs, "licenses", "LICENSE")); err != nil {
			t.Errorf("the image carries no license: %v", err)
		}
		manager := imageManager
		copyFile(t, filepath.Join(rootfs, "manager"), manager)

		help, err := exec.Command(manager, "--help").CombinedOutput()
		if err != nil {
			t.Fatalf("/manager --help: %v\n%s", err, help)
		}
		for _, flag := range []string{"-namespace", "-webhook-cert-dir", "-health-probe-bind-address", "-leader-elect"} {
			if !bytes.Contains(help, []byte(flag)) {
				t.Errorf("/manager --help does not name %s:\n%s", flag, help)
			}
		}
		runAgainstAPIServer(t, root, manager)
	})

	t.Run("bundle", func(t *testing.T) {
		image := bundleImage
		built := b.make(t, root, "bundle-build", "BUNDLE_IMG="+image, "CONTAINER_BUILD_FLAGS=--isolation chroot")
		t.Logf("bundle image built in %s (make bundle-build)", built)
		pushed := b.make(t, root, "bundle-push", "BUNDLE_IMG="+image, "CONTAINER_PUSH_FLAGS=--tls-verify=false")
		t.Logf("bundle image pushed to %s in %s (make bundle-push)", image, pushed)
		manifest, _ := readFromRegistry(t, registry, "linstor-operator/linstor-operator-bundle", "v0.0.0-test")
		t.Logf("bundle image in the registry: %d layers, %s compressed", len(manifest.Layers), mebibytes(manifest.compressedSize()))
		summary = append(summary, fmt.Sprintf("bundle image: built in %s, pushed in %s, %d layers, %s compressed",
			built, pushed, len(manifest.Layers), mebibytes(manifest.compressedSize())))

		fromImage, reference := renderBundle(t, opm, "--use-http", image)
		fromDirectory, _ := renderBundle(t, opm, filepath.Join(root, "bundle"))
		if reference != image {
			t.Errorf("opm render of the pushed bundle names image %q, want %q", reference, image)
		}
		if fromImage != fromDirectory {
			t.Errorf("opm render of the pushed bundle image differs from opm render of bundle/:\n%s", firstDifference(fromImage, fromDirectory))
		} else {
			t.Logf("opm render of the pushed bundle image equals opm render of bundle/ (%d bytes of JSON)", len(fromImage))
			summary = append(summary, fmt.Sprintf("opm render of the pushed bundle image equals opm render of bundle/ (%d bytes of JSON)", len(fromImage)))
		}
	})

	t.Run("catalog", func(t *testing.T) {
		// The frozen releases' bundle images, pushed as their releases pushed them; this
		// tree's is the one pushed above.
		bundleImages := map[string]string{}
		frozen, err := filepath.Glob(filepath.Join(root, "bundles", "*"))
		if err != nil || len(frozen) == 0 {
			t.Fatalf("no frozen release in bundles/ (%v)", err)
		}
		var refs []string
		for _, dir := range frozen {
			image := fmt.Sprintf("%s/linstor-operator/linstor-operator-bundle:v%s", registry, filepath.Base(dir))
			buildReleaseBundle(t, b, dir, image)
			refs = append(refs, image)
		}
		refs = append(refs, bundleImage)
		for _, ref := range refs {
			bundleImages[ref] = ""
		}

		image := registry + "/linstor-operator/linstor-operator-catalog:v0.0.0-test"
		built := b.make(t, root, "catalog-build", "CATALOG_IMG="+image, "BUNDLE_IMGS="+strings.Join(refs, " "),
			"CATALOG_RENDER_FLAGS=--use-http", "CATALOG_BUILD_DIR="+t.TempDir(),
			"CONTAINER_BUILD_FLAGS=--isolation chroot --build-arg OPM_IMAGE="+localOpmImage)
		t.Logf("catalog image of %d bundle images built in %s (make catalog-build)", len(refs), built)
		pushed := b.make(t, root, "catalog-push", "CATALOG_IMG="+image, "CONTAINER_PUSH_FLAGS=--tls-verify=false")
		t.Logf("catalog image pushed to %s in %s (make catalog-push)", image, pushed)
		manifest, config := readFromRegistry(t, registry, "linstor-operator/linstor-operator-catalog", "v0.0.0-test")
		t.Logf("catalog image in the registry: %d layers, %s compressed", len(manifest.Layers), mebibytes(manifest.compressedSize()))
		summary = append(summary, fmt.Sprintf("catalog image: built in %s (opm render of %d bundle images included), pushed in %s, %d layers, %s compressed",
			built, len(refs), pushed, len(manifest.Layers), mebibytes(manifest.compressedSize())))
		if got, want := config.Config.Entrypoint, []string{"/bin/opm"}; !slices.Equal(got, want) {
			t.Errorf("the catalog image's entrypoint is %q, want %q", got, want)
		}

		// What OLM's catalog pod would serve: the pushed catalog image as opm reads it.
		fromImage := renderBlobs(t, opm, "--use-http", image)
		project := renderBlobs(t, opm, filepath.Join(root, "catalog"))
		var gotBundles []string
		for _, blob := range fromImage {
			if blob["schema"] != "olm.bundle" {
				continue
			}
			ref, _ := blob["image"].(string)
			name, _ := blob["name"].(string)
			gotBundles = append(gotBundles, name)
			seen, known := bundleImages[ref]
			switch {
			case !known:
				t.Errorf("the catalog image lists bundle %s with image %q, which is none of the pushed bundle images %v", name, ref, refs)
			case seen != "":
				t.Errorf("the catalog image lists bundle image %s twice: %s and %s", ref, seen, name)
			}
			bundleImages[ref] = name
		}
		if len(gotBundles) != len(refs) {
			t.Errorf("the catalog image lists bundles %v, want one per pushed bundle image %v", gotBundles, refs)
		}
		if got, want := withoutBundles(fromImage), withoutBundles(project); got != want {
			t.Errorf("the catalog image's package and channels differ from catalog/'s:\n%s", firstDifference(got, want))
		}
		t.Logf("opm render of the pushed catalog image: bundles %v, each by its pushed bundle image; package and channels as catalog/", gotBundles)
		summary = append(summary, fmt.Sprintf("opm render of the pushed catalog image lists %v by their pushed bundle images", gotBundles))

		// What a cluster would pull: the catalog's file-based catalog and the bundles' content.
		contents := imageContents // the test's, not this step's: the OLM steps read them
		catalogConfigs = filepath.Join(contents, "configs")
		unpackImage(t, b, image, "configs", catalogConfigs)
		for i, ref := range refs {
			dir := filepath.Join(contents, fmt.Sprintf("bundle-%d", i))
			unpackImage(t, b, ref, ".", dir)
			bundleContents = append(bundleContents, ref+"="+dir)
		}
	})

	// test/olm with the image's /manager as this tree's operator: an install from the
	// pushed catalog image, whose bundle OLM unpacks from its pushed image, then the whole
	// OLM scenario (install, upgrades, the webhooks reached through OLM's Service).
	for _, run := range []struct {
		name, test string
		env        []string
	}{
		{"olm-install-from-catalog-image", "^TestInstallFromTheCatalogImage$",
			[]string{"OLM_CATALOG_CONFIGS=" + catalogConfigs, "OLM_BUNDLE_IMAGES=" + strings.Join(bundleContents, " ")}},
		{"olm-scenario", "^TestOLM$", nil},
	} {
		t.Run(run.name, func(t *testing.T) {
			if _, err := os.Stat(imageManager); err != nil {
				t.Fatalf("no /manager taken out of the operator image: %v", err)
			}
			if run.env != nil && (catalogConfigs == "" || len(bundleContents) == 0) {
				t.Fatal("no catalog image content: the catalog step failed")
			}
			cmd := exec.Command("go", "test", "./test/olm", "-run", run.test, "-count=1", "-v", "-timeout", "20m")
			cmd.Dir = root
			cmd.Env = append(append(os.Environ(), "OLM_OPERATOR_BINARY="+imageManager), run.env...)
			// Its steps show in the log as they run.
			cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
			start := time.Now()
			err := cmd.Run()
			elapsed := time.Since(start).Round(time.Second)
			if err != nil {
				t.Fatalf("test/olm -run %s with the image's /manager failed after %s: %v", run.test, elapsed, err)
			}
			// The binary test/olm ran as this tree's pods is the image's, byte for byte.
			ran := filepath.Join(root, "bin", "olm-e2e", "manager")
			if a, b := readFile(ran), readFile(imageManager); a != b || a == "" {
				t.Errorf("test/olm ran %s, which is not the image's /manager", ran)
			}
			t.Logf("test/olm -run %s passed in %s with the image's /manager", run.test, elapsed)
			summary = append(summary, fmt.Sprintf("test/olm -run %s with the image's /manager: passed in %s (world setup and go test build included)", run.test, elapsed))
		})
	}
}

// unpackImage pulls image back from the registry and copies its directory from (relative
// to the image's root) to dir.
func unpackImage(t *testing.T, b buildah, image, from, dir string) {
	t.Helper()
	b.run(t, "rmi", image)
	b.run(t, "pull", "--tls-verify=false", image)
	ctr := strings.TrimSpace(b.run(t, "from", image))
	defer b.run(t, "rm", ctr)
	rootfs := strings.TrimSpace(b.run(t, "mount", ctr))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	runCommand(t, exec.Command("cp", "-a", filepath.Join(rootfs, from)+"/.", dir))
}

// buildReleaseBundle builds the bundle image of a frozen release from its directory, with
// the labels its metadata/annotations.yaml carries (as the release's bundle.Dockerfile
// did), and pushes it.
func buildReleaseBundle(t *testing.T, b buildah, dir, image string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "metadata", "annotations.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var metadata struct{ Annotations map[string]string }
	if err := yaml.Unmarshal(data, &metadata); err != nil {
		t.Fatal(err)
	}
	var dockerfile strings.Builder
	dockerfile.WriteString("FROM scratch\n")
	for _, key := range slices.Sorted(maps.Keys(metadata.Annotations)) {
		if strings.HasPrefix(key, "operators.operatorframework.io.") {
			fmt.Fprintf(&dockerfile, "LABEL %s=%s\n", key, metadata.Annotations[key])
		}
	}
	dockerfile.WriteString("COPY manifests /manifests/\nCOPY metadata /metadata/\nCOPY tests/scorecard /tests/scorecard/\n")
	path := filepath.Join(t.TempDir(), "bundle.Dockerfile")
	if err := os.WriteFile(path, []byte(dockerfile.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	b.run(t, "bud", "--isolation", "chroot", "-f", path, "-t", image, dir)
	b.run(t, "push", "--tls-verify=false", image)
}

// renderBlobs is opm render's output for args, one object per blob.
func renderBlobs(t *testing.T, opm string, args ...string) []map[string]any {
	t.Helper()
	out := runCommand(t, exec.Command(opm, append([]string{"render", "--output", "json"}, args...)...))
	var blobs []map[string]any
	decoder := json.NewDecoder(strings.NewReader(out))
	for decoder.More() {
		var blob map[string]any
		if err := decoder.Decode(&blob); err != nil {
			t.Fatalf("opm render %s: %v", strings.Join(args, " "), err)
		}
		blobs = append(blobs, blob)
	}
	return blobs
}

// withoutBundles is the catalog's other blobs (package, channels, deprecations) as
// indented JSON, in their order.
func withoutBundles(blobs []map[string]any) string {
	var kept []map[string]any
	for _, blob := range blobs {
		if blob["schema"] != "olm.bundle" {
			kept = append(kept, blob)
		}
	}
	out, _ := json.MarshalIndent(kept, "", "  ")
	return string(out)
}

// buildah runs buildah on storage of the test's own (vfs, which works without overlay
// support), removed when the test ends.
type buildah struct {
	globalFlags []string
}

func newBuildah(t *testing.T, dir string) buildah {
	t.Helper()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	b := buildah{globalFlags: []string{"--storage-driver", "vfs",
		"--root", filepath.Join(dir, "storage"), "--runroot", filepath.Join(dir, "run")}}
	t.Cleanup(func() {
		// Working containers first: an image a container uses cannot be removed.
		_, _ = exec.Command("buildah", append(b.globalFlags, "rm", "--all")...).CombinedOutput()
		_, _ = exec.Command("buildah", append(b.globalFlags, "rmi", "--all", "--force")...).CombinedOutput()
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("removing the test's image storage: %v", err)
		}
	})
	return b
}

// command is buildah with its storage flags, as CONTAINER_TOOL and BUILDAH take it.
func (b buildah) command() string {
	return strings.Join(append([]string{"buildah"}, b.globalFlags...), " ")
}

func (b buildah) run(t *testing.T, args ...string) string {
	t.Helper()
	return runCommand(t, exec.Command("buildah", append(b.globalFlags, args...)...))
}

// make runs a Makefile target with CONTAINER_TOOL set to this buildah and returns how long
// it took.
func (b buildah) make(t *testing.T, root, target string, vars ...string) time.Duration {
	t.Helper()
	cmd := exec.Command("make", append([]string{"--no-print-directory", target, "CONTAINER_TOOL=" + b.command()}, vars...)...)
	cmd.Dir = root
	start := time.Now()
	runCommand(t, cmd)
	return time.Since(start).Round(time.Second)
}

func runCommand(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s%s", strings.Join(cmd.Args, " "), err, lastLines(stdout.String(), 40), lastLines(stderr.String(), 40))
	}
	return stdout.String()
}

// firstDifference shows where two texts start to differ, with a few lines around.
func firstDifference(got, want string) string {
	gotLines, wantLines := strings.Split(got, "\n"), strings.Split(want, "\n")
	i := 0
	for i < len(gotLines) && i < len(wantLines) && gotLines[i] == wantLines[i] {
		i++
	}
	from := max(0, i-5)
	excerpt := func(lines []string) string {
		return strings.Join(lines[min(from, len(lines)):min(i+10, len(lines))], "\n")
	}
	return fmt.Sprintf("line %d; got:\n%s\nwant:\n%s", i+1, excerpt(gotLines), excerpt(wantLines))
}

func lastLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "")
}

// startRegistry runs Debian's docker-registry (distribution) on a free loopback port with
// its storage in a temporary directory, and returns its host:port.
func startRegistry(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	addr := freeLoopbackAddress(t)
	config := fmt.Sprintf("version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: %s\n",
		filepath.Join(dir, "storage"), addr)
	configPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(configPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	done := startProcess(t, filepath.Join(dir, "registry.log"), nil, "docker-registry", "serve", configPath)
	waitForHTTP(t, "http://"+addr+"/v2/", done, filepath.Join(dir, "registry.log"))
	return addr
}

func freeLoopbackAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startProcess starts a program with its output in logPath, and stops it when the test
// ends. The channel reports its exit.
func startProcess(t *testing.T, logPath string, env []string, name string, args ...string) <-chan error {
	t.Helper()
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		// A process that already ended was reported to the test, which read its result.
		select {
		case <-done:
		case <-time.After(10 * time.Second):
		}
		_ = logFile.Close()
	})
	return done
}

// waitForHTTP waits until url answers 200, failing early when the process serving it ends.
func waitForHTTP(t *testing.T, url string, done <-chan error, logPath string) time.Duration {
	t.Helper()
	start := time.Now()
	last := ""
	for time.Since(start) < time.Minute {
		select {
		case err := <-done:
			t.Fatalf("the server of %s exited (%v):\n%s", url, err, lastLines(readFile(logPath), 40))
		default:
		}
		resp, err := http.Get(url)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(start)
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("%s never answered 200 within a minute (last: %s):\n%s", url, last, lastLines(readFile(logPath), 40))
	return 0
}

func readFile(path string) string {
	data, _ := os.ReadFile(path)
	return string(data)
}

type imageManifest struct {
	MediaType string
	Config    struct{ Digest string }
	Layers    []struct {
		Digest string
		Size   int64
	}
}

func (m imageManifest) compressedSize() int64 {
	var total int64
	for _, l := range m.Layers {
		total += l.Size
	}
	return total
}

type imageConfig struct {
	Config struct {
		User       string
		Entrypoint []string
	} `json:"config"`
}

// readFromRegistry reads an image's manifest and configuration over the registry's HTTP API.
func readFromRegistry(t *testing.T, registry, repository, tag string) (imageManifest, imageConfig) {
	t.Helper()
	var manifest imageManifest
	body := registryGet(t, fmt.Sprintf("http://%s/v2/%s/manifests/%s", registry, repository, tag),
		"application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json")
	if err := json.Unmarshal(body, &manifest); err != nil {
		t.Fatalf("the manifest of %s:%s: %v", repository, tag, err)
	}
	if len(manifest.Layers) == 0 {
		t.Fatalf("the registry's manifest of %s:%s has no layers:\n%s", repository, tag, body)
	}
	var config imageConfig
	body = registryGet(t, fmt.Sprintf("http://%s/v2/%s/blobs/%s", registry, repository, manifest.Config.Digest), "")
	if err := json.Unmarshal(body, &config); err != nil {
		t.Fatalf("the configuration of %s:%s: %v", repository, tag, err)
	}
	return manifest, config
}

func registryGet(t *testing.T, url, accept string) []byte {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, body)
	}
	return body
}

func treeSize(t *testing.T, dir string) int64 {
	t.Helper()
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			total += info.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return total
}

func mebibytes(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatalf("the image has no %s: %v", filepath.Base(from), err)
	}
	if err := os.WriteFile(to, data, 0o755); err != nil {
		t.Fatal(err)
	}
}

// runAgainstAPIServer runs the image's binary against a real kube-apiserver with the CRDs
// installed, as its Deployment would (webhooks off: they need a serving certificate), and
// requires it to become ready and keep running.
func runAgainstAPIServer(t *testing.T, root, manager string) {
	t.Helper()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(root, "bin", "k8s", "v1.34.2")
	}
	// envtest logs through controller-runtime's logger, which this test has no use for.
	log.SetLogger(logr.Discard())
	env := &ctrlenvtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	if _, err := env.Start(); err != nil {
		t.Fatalf("starting kube-apiserver and etcd from %s (make envtest-assets): %v", assets, err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping kube-apiserver: %v", err)
		}
	})
	admin, err := env.AddUser(ctrlenvtest.User{Name: "image-test", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := admin.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kubeconfigPath := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}

	probeAddr := freeLoopbackAddress(t)
	logPath := filepath.Join(dir, "manager.log")
	done := startProcess(t, logPath, []string{"KUBECONFIG=" + kubeconfigPath}, manager,
		"--webhooks=false", "--leader-elect=false", "--metrics-bind-address=0",
		"--health-probe-bind-address="+probeAddr, "--namespace=linstor")
	ready := waitForHTTP(t, "http://"+probeAddr+"/readyz", done, logPath)
	t.Logf("the image's /manager was ready against kube-apiserver after %s", ready.Round(100*time.Millisecond))
	const keepsRunning = 5 * time.Second
	select {
	case err := <-done:
		t.Fatalf("the image's /manager exited after becoming ready: %v\n%s", err, lastLines(readFile(logPath), 40))
	case <-time.After(keepsRunning):
	}
	if output := readFile(logPath); !strings.Contains(output, "Starting workers") {
		t.Errorf("the image's /manager started no controller's workers in %s:\n%s", keepsRunning, lastLines(output, 40))
	}
}

// renderBundle is opm render's olm.bundle object, without its image reference (a bundle
// directory has none), as indented JSON; the reference is returned beside it.
func renderBundle(t *testing.T, opm string, args ...string) (bundle, image string) {
	t.Helper()
	out := runCommand(t, exec.Command(opm, append([]string{"render", "--output", "json"}, args...)...))
	var object map[string]any
	if err := json.Unmarshal([]byte(out), &object); err != nil {
		t.Fatalf("opm render %s: %v\n%s", strings.Join(args, " "), err, lastLines(out, 20))
	}
	if object["schema"] != "olm.bundle" {
		t.Fatalf("opm render %s gave no bundle:\n%s", strings.Join(args, " "), lastLines(out, 20))
	}
	image, _ = object["image"].(string)
	delete(object, "image")
	// opm lists a bundle image among its related images (with no name); a directory has none.
	if image != "" {
		related, _ := object["relatedImages"].([]any)
		kept := related[:0]
		for _, r := range related {
			if entry, _ := r.(map[string]any); entry["image"] != image {
				kept = append(kept, r)
			}
		}
		if len(kept) == len(related) {
			t.Errorf("opm render %s does not list the bundle image among its related images", strings.Join(args, " "))
		}
		object["relatedImages"] = kept
	}
	indented, err := json.MarshalIndent(object, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(indented), image
}
