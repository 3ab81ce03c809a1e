package images

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/linstor-operator/linstor-operator/test/envtest"
)

// The image targets run the container tool the user names, with its own verbs: buildah
// builds with bud, docker and podman with build; all three push with push.
func TestImageTargetsRunTheNamedContainerTool(t *testing.T) {
	const (
		img        = "registry.example/op:v1"
		bundleImg  = "registry.example/op-bundle:v1"
		catalogImg = "registry.example/op-catalog:v1"
	)
	for _, tc := range []struct {
		tool, build string
	}{
		{tool: "docker", build: "docker build"},
		{tool: "podman", build: "podman build"},
		{tool: "/usr/bin/buildah --storage-driver vfs", build: "/usr/bin/buildah --storage-driver vfs bud"},
	} {
		t.Run(strings.Fields(tc.tool)[0], func(t *testing.T) {
			push := strings.TrimSuffix(strings.TrimSuffix(tc.build, " bud"), " build") + " push --tls-verify=false"
			want := map[string]string{
				"docker-build": tc.build + " --isolation chroot -t " + img + " .",
				"bundle-build": tc.build + " --isolation chroot -f bundle.Dockerfile -t " + bundleImg + " .",
				// The context is the catalog rendered from the bundle images, not the repository.
				"catalog-build": tc.build + " --isolation chroot -f catalog.Dockerfile -t " + catalogImg + " bin/catalog-build",
				"docker-push":   push + " " + img,
				"bundle-push":   push + " " + bundleImg,
				"catalog-push":  push + " " + catalogImg,
			}
			for target, command := range want {
				cmd := exec.Command("make", "--dry-run", "--no-print-directory", target,
					"CONTAINER_TOOL="+tc.tool, "CONTAINER_BUILD_FLAGS=--isolation chroot", "CONTAINER_PUSH_FLAGS=--tls-verify=false",
					"IMG="+img, "BUNDLE_IMG="+bundleImg, "CATALOG_IMG="+catalogImg)
				cmd.Dir = envtest.RepoRoot()
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("make -n %s: %v\n%s", target, err, out)
				}
				// The last command builds or pushes; catalog-build renders its catalog first.
				lines := strings.Split(strings.TrimSpace(string(out)), "\n")
				if got := lines[len(lines)-1]; got != command {
					t.Errorf("make %s with CONTAINER_TOOL=%q runs\n  %s\nwant\n  %s", target, tc.tool, got, command)
				}
			}
		})
	}
}

// make catalog-build renders the catalog from the bundle images of every release of
// catalog/ (the frozen ones in bundles/ and this tree's), not from the bundle directories.
func TestCatalogBuildRendersTheBundleImagesOfEveryRelease(t *testing.T) {
	root := envtest.RepoRoot()
	releases, err := filepath.Glob(filepath.Join(root, "bundles", "*"))
	if err != nil || len(releases) == 0 {
		t.Fatalf("no frozen release in bundles/ (%v)", err)
	}
	var want []string
	for _, dir := range releases {
		want = append(want, "registry.example/op-bundle:v"+filepath.Base(dir))
	}
	want = append(want, "registry.example/op-bundle:v9.9.9")
	cmd := exec.Command("make", "--dry-run", "--no-print-directory", "catalog-build",
		"IMAGE_TAG_BASE=registry.example/op", "VERSION=9.9.9", "CATALOG_RENDER_FLAGS=--use-http")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n catalog-build: %v\n%s", err, out)
	}
	render := ""
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "./hack/catalogimages") {
			render = line
		}
	}
	if render == "" {
		t.Fatalf("make catalog-build runs no hack/catalogimages:\n%s", out)
	}
	if !strings.HasSuffix(render, `-render-flags "--use-http" `+strings.Join(want, " ")) {
		t.Errorf("make catalog-build renders\n  %s\nwant the bundle images\n  %s", render, strings.Join(want, " "))
	}
}

// The community pipeline renders the catalog from the olm.template.basic that make catalog
// writes (opm alpha render-template basic pulls each bundle image it names); make
// catalog-build renders the same catalog from the same inputs: catalog/'s package and
// channels, and the default BUNDLE_IMGS, which are the template's bundle images.
func TestCatalogBuildRendersWhatTheCommunityTemplateNames(t *testing.T) {
	root := envtest.RepoRoot()
	raw, err := os.ReadFile(filepath.Join(root, "community", "openshift", "operators", "linstor-operator", "catalog-templates", "basic.yaml"))
	if err != nil {
		t.Fatalf("the community catalog template (make catalog): %v", err)
	}
	var template struct {
		Entries []map[string]any `json:"entries"`
	}
	if err := yaml.Unmarshal(raw, &template); err != nil {
		t.Fatal(err)
	}
	var templateImages []string
	var templateOthers []map[string]any
	for _, e := range template.Entries {
		if e["schema"] == "olm.bundle" {
			image, _ := e["image"].(string)
			templateImages = append(templateImages, image)
		} else {
			templateOthers = append(templateOthers, e)
		}
	}

	cmd := exec.Command("make", "--dry-run", "--no-print-directory", "catalog-build")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n catalog-build: %v\n%s", err, out)
	}
	var defaultImages []string
	for _, line := range strings.Split(string(out), "\n") {
		if _, images, ok := strings.Cut(line, `-render-flags "" `); ok && strings.Contains(line, "./hack/catalogimages") {
			defaultImages = strings.Fields(images)
		}
	}
	slices.Sort(templateImages)
	slices.Sort(defaultImages)
	if !slices.Equal(templateImages, defaultImages) {
		t.Errorf("the template names bundle images %v, make catalog-build's default BUNDLE_IMGS %v", templateImages, defaultImages)
	}

	rendered := runCommand(t, exec.Command(envtest.OPMBinary(t), "render", "--output", "json", filepath.Join(root, "catalog")))
	var catalogOthers []map[string]any
	decoder := json.NewDecoder(strings.NewReader(rendered))
	for decoder.More() {
		var blob map[string]any
		if err := decoder.Decode(&blob); err != nil {
			t.Fatal(err)
		}
		if blob["schema"] != "olm.bundle" {
			catalogOthers = append(catalogOthers, blob)
		}
	}
	normalize := func(blobs []map[string]any) []string {
		var out []string
		for _, b := range blobs {
			data, _ := json.Marshal(b)
			out = append(out, string(data))
		}
		slices.Sort(out)
		return out
	}
	if got, want := normalize(templateOthers), normalize(catalogOthers); !slices.Equal(got, want) {
		t.Errorf("the template's package and channels differ from catalog/'s:\n%s", firstDifference(strings.Join(got, "\n"), strings.Join(want, "\n")))
	}
}
