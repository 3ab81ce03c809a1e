package images

import (
	"errors"
	"strings"
	"testing"
)

func TestRHCOSVersion(t *testing.T) {
	cases := []struct {
		name    string
		osImage string
		labels  map[string]string
		want    string
	}{
		{"OpenShift 4.18 osImage", "Red Hat Enterprise Linux CoreOS 418.94.202410090804-0", nil, "418.94.202410090804-0"},
		{"with the RHEL code name", "Red Hat Enterprise Linux CoreOS 415.92.202402201450-0 (Plow)", nil, "415.92.202402201450-0"},
		{"OpenShift 4.19 and later", "Red Hat Enterprise Linux CoreOS 9.6.20250826-1 (Plow)", nil, "9.6.20250826-1"},
		{"osImage wins over the NFD label", "Red Hat Enterprise Linux CoreOS 418.94.202410090804-0",
			map[string]string{nfdOSTreeVersion: "417.94.202409121747-0"}, "418.94.202410090804-0"},
		{"NFD's OSTREE_VERSION when the osImage names none", "Red Hat Enterprise Linux CoreOS",
			map[string]string{nfdOSTreeVersion: "417.94.202409121747-0", "node.openshift.io/os_id": "rhcos"}, "417.94.202409121747-0"},
		{"no version anywhere", "Red Hat Enterprise Linux CoreOS", map[string]string{"node.openshift.io/os_id": "rhcos"}, ""},
		{"not RHCOS", "Red Hat Enterprise Linux 9.4 (Plow)", nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := RHCOSVersion(tc.osImage, tc.labels); got != tc.want {
				t.Errorf("RHCOSVersion(%q, %v) = %q, want %q", tc.osImage, tc.labels, got, tc.want)
			}
		})
	}
}

func TestDriverToolkitImageFor(t *testing.T) {
	const (
		v418 = "418.94.202410090804-0"
		v417 = "417.94.202409121747-0"
		img  = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:1328c4e7944b6d8eda40a8f789471a1aec63abda75ac1199ce098b965ec16709"
	)
	toolkit := DriverToolkit{Images: map[string]string{v418: img, v417: "registry.test/dtk@sha256:417"}}
	cases := []struct {
		name    string
		toolkit DriverToolkit
		version string
		want    string
		// wantErr are parts of the error's message; none when an image is found.
		wantErr []string
	}{
		{"the tag of the node's version", toolkit, v418, img, nil},
		{"another version, another image", toolkit, v417, "registry.test/dtk@sha256:417", nil},
		{"a version without a tag names it, the ImageStream and the tags there are", toolkit, "419.96.202411202233-0", "",
			[]string{"RHCOS 419.96.202411202233-0", "ImageStream openshift/driver-toolkit has no tag 419.96.202411202233-0", v417 + ", " + v418}},
		{"an empty ImageStream", DriverToolkit{}, v418, "", []string{"has no tag " + v418 + " (RHCOS tags: none)"}},
		{"no ImageStream", DriverToolkit{Unavailable: "not found"}, v418, "", []string{"RHCOS " + v418, "ImageStream openshift/driver-toolkit: not found"}},
		{"a node without a version", toolkit, "", "", []string{"names no RHCOS version", nfdOSTreeVersion}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.toolkit.ImageFor(tc.version)
			if got != tc.want {
				t.Errorf("image = %q, want %q", got, tc.want)
			}
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Errorf("error = %v, want none", err)
				}
				return
			}
			var missing *DriverToolkitMissingError
			if !errors.As(err, &missing) || missing.Version != tc.version {
				t.Fatalf("error = %v, want a DriverToolkitMissingError for version %q", err, tc.version)
			}
			for _, part := range tc.wantErr {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("error %q does not name %q", err, part)
				}
			}
		})
	}
}

// The toolkit travels with the set through the per-cluster changes the controllers make,
// and a mirror repository does not move it.
func TestDriverToolkitSurvivesRepositoryAndLinstorVersion(t *testing.T) {
	toolkit := DriverToolkit{Images: map[string]string{"418.94.202410090804-0": "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:aa"}}
	s := Default().WithDriverToolkit(toolkit).WithRepository("mirror.local/linstor").ForLinstor("1.31.0")
	if got, _ := s.DriverToolkit().ImageFor("418.94.202410090804-0"); got != "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:aa" {
		t.Errorf("toolkit image = %q, want it unchanged", got)
	}
}
