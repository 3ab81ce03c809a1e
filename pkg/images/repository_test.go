package images

import (
	"strings"
	"testing"
)

func TestInRepository(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	cases := []struct {
		name, ref, repo, want string
	}{
		{"tag", "quay.io/piraeusdatastore/piraeus-server:v1.33.3", "registry.example.com/linstor", "registry.example.com/linstor/piraeus-server:v1.33.3"},
		{"deep path", "registry.k8s.io/sig-storage/csi-attacher:v4.7.0", "mirror.local/a/b/c", "mirror.local/a/b/c/csi-attacher:v4.7.0"},
		{"digest", "quay.io/piraeusdatastore/piraeus-csi@" + digest, "mirror.local/linstor", "mirror.local/linstor/piraeus-csi@" + digest},
		{"tag and digest", "quay.io/piraeusdatastore/piraeus-csi:v1.6.3@" + digest, "mirror.local/linstor", "mirror.local/linstor/piraeus-csi:v1.6.3@" + digest},
		{"source registry with port", "localhost:5000/piraeus-server:v1", "mirror.local/linstor", "mirror.local/linstor/piraeus-server:v1"},
		{"target registry with port", "quay.io/piraeusdatastore/piraeus-server:v1", "mirror.local:5000/linstor", "mirror.local:5000/linstor/piraeus-server:v1"},
		{"port without tag", "localhost:5000/piraeus-server", "mirror.local:5000", "mirror.local:5000/piraeus-server"},
		{"no path", "busybox", "mirror.local/lib", "mirror.local/lib/busybox"},
		{"trailing slash", "quay.io/x/y:v1", "mirror.local/lib/", "mirror.local/lib/y:v1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := InRepository(tc.ref, tc.repo); got != tc.want {
				t.Errorf("InRepository(%q, %q) = %q, want %q", tc.ref, tc.repo, got, tc.want)
			}
		})
	}
}

func TestWithRepositoryMovesEveryImage(t *testing.T) {
	s, err := FromEnv([]string{"RELATED_IMAGE_LINSTOR_CSI=other.registry:443/team/piraeus-csi@sha256:abc"})
	if err != nil {
		t.Fatal(err)
	}
	moved := s.WithRepository("mirror.local/linstor")
	for _, kv := range moved.Related() {
		if !strings.HasPrefix(kv[1], "mirror.local/linstor/") {
			t.Errorf("%s = %q was not moved to the mirror", kv[0], kv[1])
		}
	}
	if got := moved.Image(LinstorCSI); got != "mirror.local/linstor/piraeus-csi@sha256:abc" {
		t.Errorf("overridden image: got %q", got)
	}
	if got := moved.DRBDModuleLoader("Ubuntu 22.04.4 LTS"); got != "mirror.local/linstor/drbd9-jammy:"+drbdVersion {
		t.Errorf("loader: got %q", got)
	}
	// The LINSTOR version a rollback or upgrade runs keeps the mirror.
	if got := moved.ForLinstor("1.32.0").Image(LinstorController); got != "mirror.local/linstor/piraeus-server:v1.32.0" {
		t.Errorf("ForLinstor after the mirror: got %q", got)
	}
	if got := s.WithRepository(""); got.Image(LinstorController) != s.Image(LinstorController) {
		t.Errorf("an empty repository changed the set")
	}
	if s.Image(LinstorController) == moved.Image(LinstorController) {
		t.Errorf("the original set was changed")
	}
}
