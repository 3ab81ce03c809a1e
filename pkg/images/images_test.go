package images

import (
	"strings"
	"testing"
)

func TestDRBDModuleLoader(t *testing.T) {
	s := Default()
	cases := []struct{ osImage, distro string }{
		{"Red Hat Enterprise Linux CoreOS 415.92.202402201450-0 (Plow)", "almalinux9"},
		{"Red Hat Enterprise Linux CoreOS 412.86.202306132230-0 (Ootpa)", "almalinux8"},
		{"Red Hat Enterprise Linux CoreOS 410.84.202207262020-0 (Ootpa)", "almalinux8"},
		{"Red Hat Enterprise Linux CoreOS 413.92.202307260246-0 (Plow)", "almalinux9"},
		{"Red Hat Enterprise Linux CoreOS 420.96.202510071214-0 (Plow)", "almalinux9"},
		// OpenShift 4.19 and later: <RHEL>.<date>-<n>.
		{"Red Hat Enterprise Linux CoreOS 9.6.20250826-1 (Plow)", "almalinux9"},
		{"Red Hat Enterprise Linux CoreOS 10.1.20260301-0 (Coughlan)", "almalinux10"},
		{"Red Hat Enterprise Linux Server 7.9 (Maipo)", "centos7:v9.2.13"},
		{"Red Hat Enterprise Linux 10.0 (Coughlan)", "almalinux10"},
		{"Red Hat Enterprise Linux 9.10 (Plow)", "almalinux9"},
		{"Red Hat Enterprise Linux 8.9 (Ootpa)", "almalinux8"},
		{"Red Hat Enterprise Linux 9.3 (Plow)", "almalinux9"},
		{"CentOS Linux 7 (Core)", "centos7:v9.2.13"},
		{"CentOS Linux 8", "almalinux8"},
		{"AlmaLinux 8.9 (Midnight Oncilla)", "almalinux8"},
		{"Oracle Linux Server 8.9", "almalinux8"},
		{"Rocky Linux 8.9 (Green Obsidian)", "almalinux8"},
		{"AlmaLinux 9.3 (Shamrock Pampas Cat)", "almalinux9"},
		{"Oracle Linux Server 9.3", "almalinux9"},
		{"Rocky Linux 9.3 (Blue Onyx)", "almalinux9"},
		{"AlmaLinux 10.0 (Purple Lion)", "almalinux10"},
		{"Rocky Linux 10.0 (Red Quartz)", "almalinux10"},
		{"Oracle Linux Server 10.0", "almalinux10"},
		{"Ubuntu 18.04.6 LTS", "bionic:v9.2.13"},
		{"Ubuntu 20.04.6 LTS", "focal:v9.2.13"},
		{"Ubuntu 22.04.4 LTS", "jammy"},
		{"Ubuntu 24.04 LTS", "noble"},
		{"Ubuntu 26.04 LTS", "resolute"},
		{"Debian GNU/Linux 13 (trixie)", "trixie"},
		{"Debian GNU/Linux 12 (bookworm)", "bookworm"},
		{"Debian GNU/Linux 11 (bullseye)", "bullseye"},
		{"Debian GNU/Linux 10 (buster)", "buster:v9.2.14"},
		{"Flatcar Container Linux by Kinvolk 3815.2.0", "noble"},
		{"Talos (v1.7.0)", "noble"},
		{"", "noble"},
	}
	for _, tc := range cases {
		t.Run(tc.osImage, func(t *testing.T) {
			got := s.DRBDModuleLoader(tc.osImage)
			// Flavours piraeus no longer builds keep their last image.
			want := "quay.io/piraeusdatastore/drbd9-" + tc.distro
			if !strings.Contains(tc.distro, ":") {
				want += ":v9.3.3"
			}
			if got != want {
				t.Errorf("DRBDModuleLoader(%q) = %s, want %s", tc.osImage, got, want)
			}
		})
	}
}

func TestFromEnv(t *testing.T) {
	cases := []struct {
		name    string
		env     []string
		check   func(Set) string
		wantErr string
	}{
		{"defaults", nil, func(s Set) string {
			return s.Image(LinstorController) + "|" + s.Image(LinstorSatellite)
		}, ""},
		{"override a component", []string{"RELATED_IMAGE_LINSTOR_CSI=mirror.local/csi@sha256:abc", "PATH=/bin"}, func(s Set) string {
			return s.Image(LinstorCSI)
		}, ""},
		{"override a loader", []string{"RELATED_IMAGE_DRBD_MODULE_LOADER_JAMMY=mirror.local/drbd:1"}, func(s Set) string {
			return s.DRBDModuleLoader("Ubuntu 22.04.4 LTS")
		}, ""},
		{"operator image ignored", []string{"RELATED_IMAGE_OPERATOR=x"}, func(s Set) string { return s.Image(LinstorCSI) }, ""},
		// An earlier release's mirror configuration keeps working; the name is no image of this one.
		{"retired component ignored", []string{"RELATED_IMAGE_KTLS_UTILS=mirror.local/ktls-utils:v0.11"}, func(s Set) string {
			var related []string
			for _, r := range s.Related() {
				related = append(related, r[0])
			}
			return strings.Join(related, ",")
		}, ""},
		{"typo in a component", []string{"RELATED_IMAGE_LINSTOR_CONTROLER=x"}, nil, `unknown component "LINSTOR_CONTROLER"`},
		{"unknown loader", []string{"RELATED_IMAGE_DRBD_MODULE_LOADER_SUSE=x"}, nil, `unknown DRBD module loader flavour "suse"`},
		{"empty value", []string{"RELATED_IMAGE_LINSTOR_CSI="}, nil, "is not an image reference"},
	}
	want := map[string]string{
		"defaults":               "quay.io/piraeusdatastore/piraeus-server:v1.33.3|quay.io/piraeusdatastore/piraeus-server:v1.33.3",
		"override a component":   "mirror.local/csi@sha256:abc",
		"override a loader":      "mirror.local/drbd:1",
		"operator image ignored": "quay.io/piraeusdatastore/piraeus-csi:v1.12.0",
	}
	var related []string
	for _, r := range Default().Related() {
		related = append(related, r[0])
	}
	want["retired component ignored"] = strings.Join(related, ",")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := FromEnv(tc.env)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := tc.check(s); got != want[tc.name] {
				t.Errorf("got %s, want %s", got, want[tc.name])
			}
		})
	}
}

func TestRelatedListsEveryImage(t *testing.T) {
	related := Default().Related()
	// 15 components plus 13 DRBD loader flavours.
	if len(related) != len(defaults)+13 {
		t.Errorf("related images = %d, want %d", len(related), len(defaults)+13)
	}
	seen := map[string]bool{}
	for _, r := range related {
		if !strings.HasPrefix(r[0], "RELATED_IMAGE_") || r[1] == "" || seen[r[0]] {
			t.Errorf("bad related image %v", r)
		}
		seen[r[0]] = true
	}
	for _, c := range Components() {
		if !seen["RELATED_IMAGE_"+c] {
			t.Errorf("component %s missing from related images", c)
		}
	}
}

func TestForLinstor(t *testing.T) {
	s, err := FromEnv([]string{"RELATED_IMAGE_LINSTOR_CONTROLLER=mirror.local:5000/piraeus/piraeus-server@sha256:" + strings.Repeat("a", 64)})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.ForLinstor(LinstorVersion).Image(LinstorController); !strings.Contains(got, "@sha256:") {
		t.Errorf("the release's version must keep its pinned image, got %s", got)
	}
	other := s.ForLinstor("1.33.2")
	if got := other.Image(LinstorController); got != "mirror.local:5000/piraeus/piraeus-server:v1.33.2" {
		t.Errorf("controller for 1.33.2 = %s", got)
	}
	if got := other.Image(LinstorSatellite); got != "quay.io/piraeusdatastore/piraeus-server:v1.33.2" {
		t.Errorf("satellite for 1.33.2 = %s", got)
	}
	if other.Image(LinstorCSI) != s.Image(LinstorCSI) {
		t.Error("ForLinstor changed another component")
	}
	if s.Image(LinstorController) == other.Image(LinstorController) {
		t.Error("ForLinstor modified the original set")
	}
}

// A stepping stone's or rollback target's LINSTOR image has its own variable: a mirror
// pinning digests pins it too, instead of the operator deriving a tag from the target's.
func TestVersionedImagesComeFromTheirOwnVariable(t *testing.T) {
	pinned := "mirror.local:5000/piraeus/piraeus-server@sha256:" + strings.Repeat("b", 64)
	s, err := FromEnv([]string{
		"RELATED_IMAGE_LINSTOR_CONTROLLER=mirror.local:5000/piraeus/piraeus-server@sha256:" + strings.Repeat("a", 64),
		VersionedName(LinstorController, "1.33.2") + "=" + pinned,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.ForLinstor("1.33.2").Image(LinstorController); got != pinned {
		t.Errorf("controller for 1.33.2 = %s, want the pinned %s", got, pinned)
	}
	// No variable for the satellite: derived by tag, as without a mirror.
	if got := s.ForLinstor("1.33.2").Image(LinstorSatellite); got != "quay.io/piraeusdatastore/piraeus-server:v1.33.2" {
		t.Errorf("satellite for 1.33.2 = %s", got)
	}
	if got := s.WithRepository("registry.example.com/linstor").ForLinstor("1.33.2").Image(LinstorController); got != "registry.example.com/linstor/piraeus-server@sha256:"+strings.Repeat("b", 64) {
		t.Errorf("repository override of the pinned 1.33.2 controller = %s", got)
	}
	if _, err := FromEnv([]string{"RELATED_IMAGE_LINSTOR_CONTROLLER_1_33=x"}); err == nil {
		t.Error("a versioned name without a patch version was accepted")
	}
}

// The migration rehearsal's scratch API server (etcd and kube-apiserver) is part of
// the release's image set: a mirror lists and overrides them like any operand.
func TestScratchAPIImages(t *testing.T) {
	s := Default()
	if got := s.Image(Etcd); got != "registry.k8s.io/etcd:3.6.4-0" {
		t.Errorf("etcd = %s", got)
	}
	if got := s.Image(KubeAPIServer); got != "registry.k8s.io/kube-apiserver:v1.34.2" {
		t.Errorf("kube-apiserver = %s", got)
	}
	related := map[string]string{}
	for _, r := range s.Related() {
		related[r[0]] = r[1]
	}
	if related["RELATED_IMAGE_ETCD"] == "" || related["RELATED_IMAGE_KUBE_APISERVER"] == "" {
		t.Errorf("the scratch API images are not related images: %v", related)
	}
	o, err := FromEnv([]string{"RELATED_IMAGE_KUBE_APISERVER=mirror.local/kube-apiserver@sha256:" + strings.Repeat("c", 64), "RELATED_IMAGE_ETCD=mirror.local/etcd:3.6.4-0"})
	if err != nil {
		t.Fatal(err)
	}
	if o.Image(KubeAPIServer) != "mirror.local/kube-apiserver@sha256:"+strings.Repeat("c", 64) || o.Image(Etcd) != "mirror.local/etcd:3.6.4-0" {
		t.Errorf("overrides not taken: %s %s", o.Image(KubeAPIServer), o.Image(Etcd))
	}
	// A LINSTOR stepping stone changes the LINSTOR images only.
	if o.ForLinstor("1.32.3").Image(Etcd) != o.Image(Etcd) {
		t.Error("ForLinstor changed the etcd image")
	}
}

// The rehearsal runs the operator's own image, which the bundle names in
// RELATED_IMAGE_OPERATOR; a mirror repository does not move it (the operator already
// runs from it).
func TestOperatorImage(t *testing.T) {
	if Default().Operator() != "" {
		t.Error("the compiled-in set claims to know the operator's image")
	}
	s, err := FromEnv([]string{"RELATED_IMAGE_OPERATOR=quay.io/example/linstor-operator@sha256:" + strings.Repeat("d", 64)})
	if err != nil {
		t.Fatal(err)
	}
	want := "quay.io/example/linstor-operator@sha256:" + strings.Repeat("d", 64)
	for name, got := range map[string]string{"env": s.Operator(), "ForLinstor": s.ForLinstor("1.32.3").Operator(),
		"WithRepository": s.WithRepository("mirror.local/linstor").Operator()} {
		if got != want {
			t.Errorf("%s: operator image = %q, want %q", name, got, want)
		}
	}
}
