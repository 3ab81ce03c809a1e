package render

import (
	"testing"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/images"
)

var (
	lostQuorum   = corev1.Toleration{Key: names.TaintLostQuorum, Operator: corev1.TolerationOpExists}
	forceIOError = corev1.Toleration{Key: names.TaintForceIOError, Operator: corev1.TolerationOpExists}
	notReady30   = corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](30)}
	unreach30    = corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](30)}
)

// A user's toleration is added to the defaults; one with a default's key and effect
// replaces that default.
func TestMergeTolerations(t *testing.T) {
	storage := corev1.Toleration{Key: "storage", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	longer := unreach30
	longer.TolerationSeconds = ptr.To[int64](300)
	rackA := corev1.Toleration{Key: "rack", Operator: corev1.TolerationOpEqual, Value: "a", Effect: corev1.TaintEffectNoSchedule}
	rackB := corev1.Toleration{Key: "rack", Operator: corev1.TolerationOpEqual, Value: "b", Effect: corev1.TaintEffectNoSchedule}
	lostQuorumNoSchedule := corev1.Toleration{Key: names.TaintLostQuorum, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	cases := []struct {
		name        string
		base, extra []corev1.Toleration
		want        []corev1.Toleration
	}{
		{"nothing to add", []corev1.Toleration{lostQuorum}, nil, []corev1.Toleration{lostQuorum}},
		{"added after the defaults", []corev1.Toleration{lostQuorum}, []corev1.Toleration{storage}, []corev1.Toleration{lostQuorum, storage}},
		{"same key and effect: the user's wins", []corev1.Toleration{notReady30, unreach30}, []corev1.Toleration{longer}, []corev1.Toleration{notReady30, longer}},
		{"two values of one key and effect both stay", nil, []corev1.Toleration{rackA, rackB}, []corev1.Toleration{rackA, rackB}},
		{"two values of one key and effect merged with themselves", []corev1.Toleration{rackA, rackB}, []corev1.Toleration{rackA, rackB}, []corev1.Toleration{rackA, rackB}},
		{"same key, another effect: both", []corev1.Toleration{lostQuorum}, []corev1.Toleration{lostQuorumNoSchedule}, []corev1.Toleration{lostQuorum, lostQuorumNoSchedule}},
		{"tolerate everything is one more toleration", []corev1.Toleration{lostQuorum}, []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, []corev1.Toleration{lostQuorum, {Operator: corev1.TolerationOpExists}}},
		{"no defaults", nil, []corev1.Toleration{storage}, []corev1.Toleration{storage}},
		{"a list merged with itself is unchanged", []corev1.Toleration{lostQuorum, storage}, []corev1.Toleration{lostQuorum, storage}, []corev1.Toleration{lostQuorum, storage}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := append([]corev1.Toleration(nil), tc.base...)
			got := MergeTolerations(base, tc.extra)
			if !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
			if !equality.Semantic.DeepEqual(base, tc.base) {
				t.Errorf("the defaults were modified: %+v", base)
			}
		})
	}
}

// podSpecs renders every workload of c and returns the pod spec of each by name.
func podSpecs(t *testing.T, c *linstorv1.LinstorCluster) map[string]corev1.PodSpec {
	t.Helper()
	out := map[string]corev1.PodSpec{}
	add := func(objs Objects, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			switch w := o.(type) {
			case *appsv1.Deployment:
				out[w.Name] = w.Spec.Template.Spec
			case *appsv1.DaemonSet:
				out[w.Name] = w.Spec.Template.Spec
			}
		}
	}
	add(Controller(c, images.Default()))
	add(CSI(c, images.Default(), "http://linstor"))
	add(HAController(c, images.Default()))
	sat := &linstorv1.LinstorSatellite{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Namespace: c.Namespace}}
	add(Satellite(c, sat, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, images.Default()))
	return out
}

// The pods on the nodes that hold or use DRBD volumes keep running, and start again,
// on a node the HA controller tainted: the satellite, the CSI node plugin and the HA
// controller itself. The LINSTOR controller leaves a dead node in 30 s, not 5 minutes.
// Nothing else gets a default.
func TestDefaultTolerations(t *testing.T) {
	specs := podSpecs(t, cluster(linstorv1.LinstorClusterSpec{}))
	want := map[string][]corev1.Toleration{
		names.SatelliteDaemonSetName("node-1"): {lostQuorum, forceIOError},
		names.CSINodeName:                      {lostQuorum, forceIOError},
		names.HAControllerName:                 {lostQuorum, forceIOError},
		names.ControllerName:                   {notReady30, unreach30},
		names.CSIControllerName:                nil,
	}
	for name, w := range want {
		spec, ok := specs[name]
		if !ok {
			t.Errorf("%s not rendered", name)
			continue
		}
		if !equality.Semantic.DeepEqual(spec.Tolerations, w) {
			t.Errorf("%s tolerations %+v, want %+v", name, spec.Tolerations, w)
		}
	}
}

// The typed tolerations and a podTemplate's tolerations are merged with the defaults,
// not put in their place (a strategic-merge patch replaces a pod's toleration list); a
// user's toleration with a default's key and effect wins.
func TestUserTolerationsMergeWithTheDefaults(t *testing.T) {
	storage := corev1.Toleration{Key: "storage", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	rack := corev1.Toleration{Key: "rack", Operator: corev1.TolerationOpEqual, Value: "7", Effect: corev1.TaintEffectNoExecute}
	unreach300 := unreach30
	unreach300.TolerationSeconds = ptr.To[int64](300)
	patch := &runtime.RawExtension{Raw: []byte(`{"spec":{"tolerations":[{"key":"rack","operator":"Equal","value":"7","effect":"NoExecute"}]}}`)}
	typed := linstorv1.ComponentSpec{Tolerations: []corev1.Toleration{storage}, PodTemplate: patch}
	c := cluster(linstorv1.LinstorClusterSpec{
		Controller:                 &linstorv1.ControllerSpec{ComponentSpec: linstorv1.ComponentSpec{Tolerations: []corev1.Toleration{unreach300}, PodTemplate: patch}},
		Satellite:                  &linstorv1.SatelliteSpec{ComponentSpec: typed},
		CSI:                        &linstorv1.CSISpec{Node: &typed},
		HighAvailabilityController: &typed,
	})
	specs := podSpecs(t, c)
	want := map[string][]corev1.Toleration{
		names.SatelliteDaemonSetName("node-1"): {lostQuorum, forceIOError, storage, rack},
		names.CSINodeName:                      {lostQuorum, forceIOError, storage, rack},
		names.HAControllerName:                 {lostQuorum, forceIOError, storage, rack},
		names.ControllerName:                   {notReady30, unreach300, rack},
	}
	for name, w := range want {
		if got := specs[name].Tolerations; !equality.Semantic.DeepEqual(got, w) {
			t.Errorf("%s tolerations %+v, want %+v", name, got, w)
		}
	}

	// A LinstorSatelliteConfiguration's podTemplate merges too, on top of the cluster's.
	sat := &linstorv1.LinstorSatellite{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Namespace: c.Namespace},
		Spec: linstorv1.LinstorSatelliteSpec{PodTemplate: &runtime.RawExtension{Raw: []byte(`{"spec":{"tolerations":[{"key":"gpu","operator":"Exists"}]}}`)}}}
	spec, err := SatellitePodSpec(c, sat, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, images.Default())
	if err != nil {
		t.Fatal(err)
	}
	gpu := corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpExists}
	if w := []corev1.Toleration{lostQuorum, forceIOError, storage, rack, gpu}; !equality.Semantic.DeepEqual(spec.Tolerations, w) {
		t.Errorf("satellite tolerations with a configuration's podTemplate %+v, want %+v", spec.Tolerations, w)
	}
}

// SatellitePodSpec is the pod the satellite's DaemonSet runs: the cluster's and the
// configurations' patches (spec.patches) included, still pinned to its node.
func TestSatellitePodSpecIncludesPatches(t *testing.T) {
	c := cluster(linstorv1.LinstorClusterSpec{})
	sat := &linstorv1.LinstorSatellite{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Namespace: c.Namespace},
		Spec: linstorv1.LinstorSatelliteSpec{Patches: []linstorv1.Patch{{Patch: `[{"op":"add","path":"/spec/template/spec/tolerations/-","value":{"key":"patched","operator":"Exists"}}]`}}}}
	spec, err := SatellitePodSpec(c, sat, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, images.Default())
	if err != nil {
		t.Fatal(err)
	}
	if w := []corev1.Toleration{lostQuorum, forceIOError, {Key: "patched", Operator: corev1.TolerationOpExists}}; !equality.Semantic.DeepEqual(spec.Tolerations, w) {
		t.Errorf("tolerations %+v, want %+v", spec.Tolerations, w)
	}
	pin := spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields
	if len(pin) != 1 || pin[0].Values[0] != "node-1" {
		t.Errorf("pod not pinned to its node: %+v", pin)
	}
}
