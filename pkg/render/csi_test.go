package render

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/ptr"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/images"
)

func TestCSISwitches(t *testing.T) {
	off := &linstorv1.ComponentSpec{Enabled: ptr.To(false)}
	cases := []struct {
		name string
		spec *linstorv1.CSISpec
		want []string
	}{
		{"default", nil, []string{"CSIDriver", "Deployment", "DaemonSet"}},
		{"controller off", &linstorv1.CSISpec{Controller: off}, []string{"CSIDriver", "DaemonSet"}},
		{"node off", &linstorv1.CSISpec{Node: off}, []string{"CSIDriver", "Deployment"}},
		{"both off", &linstorv1.CSISpec{Controller: off, Node: off}, nil},
		{"CSI off", &linstorv1.CSISpec{Enabled: ptr.To(false)}, nil},
		{"explicitly on", &linstorv1.CSISpec{Controller: &linstorv1.ComponentSpec{Enabled: ptr.To(true)}}, []string{"CSIDriver", "Deployment", "DaemonSet"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := CSI(cluster(linstorv1.LinstorClusterSpec{CSI: tc.spec}), images.Default(), "http://x")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range objs {
				got = append(got, kindOf(o))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("rendered %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCSIImages(t *testing.T) {
	imgs := images.Default()
	plugin := func(objs Objects) (ctrl, node string) {
		for _, o := range objs {
			if tmpl := podTemplate(o); tmpl != nil {
				for _, c := range tmpl.Spec.Containers {
					if c.Name == "linstor-csi" {
						if _, ok := o.(*appsv1.Deployment); ok {
							ctrl = c.Image
						} else {
							node = c.Image
						}
					}
				}
			}
		}
		return ctrl, node
	}
	cases := []struct {
		name           string
		spec           *linstorv1.CSISpec
		wantCtrl, want string
	}{
		{"release", nil, imgs.Image(images.LinstorCSI), imgs.Image(images.LinstorCSI)},
		{"csi.image", &linstorv1.CSISpec{Image: "a/csi:1"}, "a/csi:1", "a/csi:1"},
		{"per workload wins", &linstorv1.CSISpec{Image: "a/csi:1", Controller: &linstorv1.ComponentSpec{Image: "b/csi:2"}, Node: &linstorv1.ComponentSpec{Image: "c/csi:3"}}, "b/csi:2", "c/csi:3"},
		{"one workload", &linstorv1.CSISpec{Node: &linstorv1.ComponentSpec{Image: "c/csi:3"}}, imgs.Image(images.LinstorCSI), "c/csi:3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := CSI(cluster(linstorv1.LinstorClusterSpec{CSI: tc.spec}), imgs, "http://x")
			if err != nil {
				t.Fatal(err)
			}
			if c, n := plugin(objs); c != tc.wantCtrl || n != tc.want {
				t.Errorf("controller %q node %q, want %q %q", c, n, tc.wantCtrl, tc.want)
			}
			// The sidecars keep the release's images.
			for _, o := range objs {
				if d, ok := o.(*appsv1.Deployment); ok && d.Spec.Template.Spec.Containers[1].Image != imgs.Image(images.CSIProvisioner) {
					t.Errorf("provisioner image %q", d.Spec.Template.Spec.Containers[1].Image)
				}
			}
		})
	}
}
