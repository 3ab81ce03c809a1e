package images

import (
	"os/exec"
	"strings"
	"testing"

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
				"docker-build":  tc.build + " --isolation chroot -t " + img + " .",
				"bundle-build":  tc.build + " --isolation chroot -f bundle.Dockerfile -t " + bundleImg + " .",
				"catalog-build": tc.build + " --isolation chroot -f catalog.Dockerfile -t " + catalogImg + " .",
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
				if got := strings.TrimSpace(string(out)); got != command {
					t.Errorf("make %s with CONTAINER_TOOL=%q runs\n  %s\nwant\n  %s", target, tc.tool, got, command)
				}
			}
		})
	}
}
