package bundle

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/clustertls"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/images"
	"github.com/linstor-operator/linstor-operator/pkg/render"
	"github.com/linstor-operator/linstor-operator/pkg/upgrade"
)

// nodeOSes are node operating systems, together selecting every DRBD module loader
// flavour: a flavour added to pkg/images needs a node here, or it counts as unused.
var nodeOSes = []string{
	"Ubuntu 18.04.6 LTS", "Ubuntu 20.04.6 LTS", "Ubuntu 22.04.4 LTS", "Ubuntu 24.04.1 LTS", "Ubuntu 26.04 LTS",
	"Debian GNU/Linux 10 (buster)", "Debian GNU/Linux 11 (bullseye)", "Debian GNU/Linux 12 (bookworm)", "Debian GNU/Linux 13 (trixie)",
	"CentOS Linux 7 (Core)", "Red Hat Enterprise Linux 8.9 (Ootpa)", "Red Hat Enterprise Linux 9.4 (Plow)", "AlmaLinux 10.0 (Purple Lion)",
	"Red Hat Enterprise Linux CoreOS 416.94.202410211619-0", "Flatcar Container Linux by Kinvolk 3815.2.0 (Oklo)",
	"Talos (v1.7.0)", "",
}

// driverToolkit is the cluster's Driver Toolkit for the RHCOS node of nodeOSes: an image
// of the OpenShift release, read from the cluster, never one of the CSV's.
const driverToolkitImage = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:1328c4e7944b6d8eda40a8f789471a1aec63abda75ac1199ce098b965ec16709"

var driverToolkit = images.DriverToolkit{Images: map[string]string{"416.94.202410211619-0": driverToolkitImage}}

// renderedImages renders every component of a full cluster with set, the way the
// controllers do: CSI and the HA controller with the release's set, the LINSTOR
// controller and the satellites (one node of each operating system) once for every
// LINSTOR version the release runs, the target with the set as it is and the others
// with set.ForLinstor (the stepping stones of an upgrade, and the version a rollback
// returns to). It returns each image with the containers that run it.
func renderedImages(t *testing.T, set images.Set) map[string][]string {
	t.Helper()
	cluster := &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Name: "linstor", Namespace: "linstor"}}
	var objs render.Objects
	add := func(o render.Objects, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("rendering: %v", err)
		}
		objs = append(objs, o...)
	}
	add(render.CSI(cluster, set, clustertls.ServiceURL(cluster)))
	add(render.HAController(cluster, set))
	add(render.SatelliteConfig(cluster), nil)
	add(render.NetworkPolicy(cluster), nil)
	for _, v := range upgrade.Current.Runnable {
		imgs := set.ForLinstor(v.String()).WithDriverToolkit(driverToolkit)
		add(render.Controller(cluster, imgs))
		for i, osImage := range nodeOSes {
			name := fmt.Sprintf("node-%d", i)
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{OSImage: osImage}}}
			sat := &linstorv1.LinstorSatellite{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cluster.Namespace}}
			add(render.Satellite(cluster, sat, node, imgs))
		}
	}
	// The upgrade rehearsal's Job (it runs the operator's image only when the set knows it).
	if set.Operator() != "" {
		job, err := render.RehearsalJob(cluster, set, render.Rehearsal{Name: "linstor-rehearse", Backup: "b", To: upgrade.Current.Target.String(), Timeout: time.Minute})
		add(render.Objects{job}, err)
	}
	used := map[string][]string{}
	for _, o := range objs {
		var spec *corev1.PodSpec
		switch w := o.(type) {
		case *batchv1.Job:
			spec = &w.Spec.Template.Spec
		case *appsv1.Deployment:
			spec = &w.Spec.Template.Spec
		case *appsv1.DaemonSet:
			spec = &w.Spec.Template.Spec
		case *corev1.ConfigMap, *corev1.Service, *corev1.ServiceAccount:
			continue
		default:
			if strings.HasSuffix(o.GetObjectKind().GroupVersionKind().Kind, "Job") {
				t.Fatalf("%T %s runs pods this test does not read", o, o.GetName())
			}
			continue
		}
		for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
			if c.Image == driverToolkitImage {
				continue // the OpenShift release's own image, which its mirror carries
			}
			who := o.GetName() + "/" + c.Name
			if !slices.Contains(used[c.Image], who) {
				used[c.Image] = append(used[c.Image], who)
			}
		}
	}
	return used
}

// The CSV's relatedImages are exactly what the operator runs: every image of the
// release's set is used by a rendered container (a component of the set that nothing
// renders fails, even if another component shares its image), the LINSTOR images of
// the other runnable versions (rollback and stepping-stone targets) are used when the
// controller and satellites render for those versions, and no rendered container uses
// an image the CSV does not list (a disconnected mirror would lack it).
func TestRelatedImagesAreExactlyWhatRuns(t *testing.T) {
	// Each component and loader flavour its own image, so that one used by another
	// component cannot hide an unused one.
	var env []string
	for _, r := range images.Default().Related() {
		env = append(env, r[0]+"=registry.test/"+strings.ToLower(strings.TrimPrefix(r[0], "RELATED_IMAGE_"))+":v0")
	}
	env = append(env, "RELATED_IMAGE_OPERATOR=registry.test/linstor-operator:v0") // the rehearsal Job runs it
	distinct, err := images.FromEnv(env)
	if err != nil {
		t.Fatal(err)
	}
	used := renderedImages(t, distinct)
	for _, r := range distinct.Related() {
		if len(used[r[1]]) == 0 {
			t.Errorf("%s is in the release's image set (and so in the CSV), but no rendered container runs it: render it or remove it from pkg/images", r[0])
		}
	}

	// The CSV as generated, against what the controllers render with the real set.
	csv := map[string]string{} // image -> relatedImages name
	for _, ri := range relatedImages(releaseImages("registry.test/linstor-operator:v0")) {
		csv[ri.Image] = ri.Name
	}
	rollback := map[string]bool{}
	for _, ri := range LinstorVersionImages(upgrade.Current) {
		rollback[ri.Name] = true
	}
	if len(upgrade.Current.Runnable) > 1 && len(rollback) == 0 {
		t.Error("the release runs other LINSTOR versions, but the CSV lists no image for them")
	}
	real, err := images.FromEnv([]string{"RELATED_IMAGE_OPERATOR=registry.test/linstor-operator:v0"})
	if err != nil {
		t.Fatal(err)
	}
	used = renderedImages(t, real)
	var unused []string
	for img, name := range csv {
		if name == "operator" {
			continue // the CSV's own deployment, not rendered
		}
		if len(used[img]) == 0 {
			kind := "image"
			if rollback[name] {
				kind = "rollback/stepping-stone image"
			}
			unused = append(unused, fmt.Sprintf("%s %s=%s", kind, name, img))
		}
	}
	sort.Strings(unused)
	for _, u := range unused {
		t.Errorf("relatedImages lists %s, which no rendered container runs", u)
	}
	for img, who := range used {
		if _, ok := csv[img]; !ok {
			t.Errorf("%v run %s, which the CSV's relatedImages does not list", who, img)
		}
	}
	for name := range rollback {
		found := false
		for img, n := range csv {
			found = found || (n == name && len(used[img]) > 0)
		}
		if !found {
			t.Errorf("rollback/stepping-stone image %s is not run by the controller or satellites rendered for its version", name)
		}
	}
}
