package emulator

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestImageVersion(t *testing.T) {
	for image, want := range map[string]string{
		"quay.io/piraeusdatastore/piraeus-server:v1.33.3": "1.33.3",
		"registry.local:5000/piraeus-server:1.34.0":       "1.34.0",
		"registry.local:5000/piraeus-server":              "",
		"quay.io/piraeusdatastore/piraeus-server:latest":  "",
		"quay.io/piraeusdatastore/piraeus-server@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef": "",
	} {
		got := imageVersion([]corev1.Container{{Name: "sidecar", Image: "x:v9.9.9"}, {Name: "linstor-satellite", Image: image}}, "linstor-satellite")
		if got != want {
			t.Errorf("imageVersion(%q) = %q, want %q", image, got, want)
		}
	}
}
