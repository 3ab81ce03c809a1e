package render

import (
	"slices"
	"strings"
	"testing"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/images"
)

// renderCluster renders what the cluster controller applies, patches included.
func renderCluster(t *testing.T, c *linstorv1.LinstorCluster) (Objects, error) {
	t.Helper()
	var objs Objects
	for _, part := range []func() (Objects, error){
		func() (Objects, error) { return Controller(c, images.Default()) },
		func() (Objects, error) { return CSI(c, images.Default(), "http://linstor-controller:3370") },
		func() (Objects, error) { return HAController(c, images.Default()) },
	} {
		o, err := part()
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, o...)
	}
	return WithClusterPatches(c, objs)
}

func find[T any](objs Objects, name string) *T {
	for _, o := range objs {
		if t, ok := any(o).(*T); ok && o.GetName() == name {
			return t
		}
	}
	return nil
}

func envOf(tmpl *corev1.PodTemplateSpec, container, name string) string {
	for _, c := range tmpl.Spec.Containers {
		if c.Name == container {
			for _, e := range c.Env {
				if e.Name == name {
					return e.Value
				}
			}
		}
	}
	return ""
}

func TestClusterPatchesApply(t *testing.T) {
	cases := []struct {
		name  string
		spec  linstorv1.LinstorClusterSpec
		check func(t *testing.T, objs Objects)
	}{
		{
			name: "strategic merge on the workload by default",
			spec: linstorv1.LinstorClusterSpec{Controller: &linstorv1.ControllerSpec{ComponentSpec: linstorv1.ComponentSpec{Patches: []linstorv1.Patch{{
				Patch: "spec:\n  template:\n    spec:\n      containers:\n      - name: linstor-controller\n        env:\n        - name: JAVA_OPTS\n          value: -Xmx2g\n",
			}}}}},
			check: func(t *testing.T, objs Objects) {
				d := find[appsv1.Deployment](objs, names.ControllerName)
				if got := envOf(&d.Spec.Template, names.ControllerName, "JAVA_OPTS"); got != "-Xmx2g" {
					t.Errorf("JAVA_OPTS = %q", got)
				}
				if envOf(&d.Spec.Template, names.ControllerName, "K8S_AWAIT_ELECTION_NAME") == "" {
					t.Error("the merge dropped the rendered env")
				}
			},
		},
		{
			name: "JSON 6902 on a Service",
			spec: linstorv1.LinstorClusterSpec{Controller: &linstorv1.ControllerSpec{ComponentSpec: linstorv1.ComponentSpec{Patches: []linstorv1.Patch{{
				Target: &linstorv1.PatchTarget{Kind: "Service", Name: names.ControllerName},
				Patch:  `[{"op":"add","path":"/metadata/annotations","value":{"lb.example.com/internal":"true"}},{"op":"add","path":"/spec/type","value":"LoadBalancer"}]`,
			}}}}},
			check: func(t *testing.T, objs Objects) {
				svc := find[corev1.Service](objs, names.ControllerName)
				if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || svc.Annotations["lb.example.com/internal"] != "true" {
					t.Errorf("service not patched: %+v %v", svc.Spec.Type, svc.Annotations)
				}
			},
		},
		{
			name: "patches apply in order, a later one on the result of an earlier one",
			spec: linstorv1.LinstorClusterSpec{HighAvailabilityController: &linstorv1.ComponentSpec{Patches: []linstorv1.Patch{
				{Patch: `{"spec":{"template":{"spec":{"containers":[{"name":"linstor-ha-controller","args":["/agent","--v=5"]}]}}}}`},
				{Patch: "- op: add\n  path: /spec/template/spec/containers/0/args/-\n  value: --fail-over-timeout=30s\n"},
			}}},
			check: func(t *testing.T, objs Objects) {
				ds := find[appsv1.DaemonSet](objs, names.HAControllerName)
				if got := ds.Spec.Template.Spec.Containers[0].Args; !slices.Equal(got, []string{"/agent", "--v=5", "--fail-over-timeout=30s"}) {
					t.Errorf("args = %q", got)
				}
			},
		},
		{
			name: "CSI controller and node patches reach only their workload",
			spec: linstorv1.LinstorClusterSpec{CSI: &linstorv1.CSISpec{
				Controller: &linstorv1.ComponentSpec{Patches: []linstorv1.Patch{{Patch: `{"spec":{"replicas":2}}`}}},
				Node: &linstorv1.ComponentSpec{Patches: []linstorv1.Patch{{Patch: `{"metadata":{"annotations":{"node":"yes"}}}`},
					{Target: &linstorv1.PatchTarget{Kind: "CSIDriver"}, Patch: `{"spec":{"fsGroupPolicy":"None"}}`}}},
			}},
			check: func(t *testing.T, objs Objects) {
				if r := find[appsv1.Deployment](objs, names.CSIControllerName).Spec.Replicas; *r != 2 {
					t.Errorf("replicas = %d", *r)
				}
				if find[appsv1.DaemonSet](objs, names.CSINodeName).Annotations["node"] != "yes" {
					t.Error("node DaemonSet not patched")
				}
				if find[appsv1.Deployment](objs, names.CSIControllerName).Annotations["node"] != "" {
					t.Error("a node patch reached the controller")
				}
			},
		},
		{
			name: "a disabled component's patches wait",
			spec: linstorv1.LinstorClusterSpec{HighAvailabilityController: &linstorv1.ComponentSpec{Enabled: ptr.To(false),
				Patches: []linstorv1.Patch{{Target: &linstorv1.PatchTarget{Kind: "Service", Name: "none"}, Patch: `{}`}}}},
			check: func(t *testing.T, objs Objects) {
				if find[appsv1.DaemonSet](objs, names.HAControllerName) != nil {
					t.Error("disabled HA controller rendered")
				}
			},
		},
		{
			name: "AllowPrivileged lets a patch add privilege",
			spec: linstorv1.LinstorClusterSpec{PodTemplatePolicy: linstorv1.PodTemplateAllowPrivileged, Controller: &linstorv1.ControllerSpec{ComponentSpec: linstorv1.ComponentSpec{Patches: []linstorv1.Patch{{
				Patch: `[{"op":"add","path":"/spec/template/spec/hostNetwork","value":true}]`,
			}}}}},
			check: func(t *testing.T, objs Objects) {
				if !find[appsv1.Deployment](objs, names.ControllerName).Spec.Template.Spec.HostNetwork {
					t.Error("not applied")
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := renderCluster(t, cluster(tc.spec))
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, objs)
		})
	}
}

func TestClusterPatchesRefused(t *testing.T) {
	ctrl := func(patches ...linstorv1.Patch) linstorv1.LinstorClusterSpec {
		return linstorv1.LinstorClusterSpec{Controller: &linstorv1.ControllerSpec{ComponentSpec: linstorv1.ComponentSpec{Patches: patches}}}
	}
	cases := []struct {
		name        string
		spec        linstorv1.LinstorClusterSpec
		field, text string
	}{
		{"target selects nothing", ctrl(linstorv1.Patch{}, linstorv1.Patch{Target: &linstorv1.PatchTarget{Kind: "Service", Name: "x"}, Patch: `{}`}),
			"spec.controller.patches[1].target", `no rendered Service named "x"; rendered: ConfigMap linstor-controller-config, Deployment linstor-controller, Service linstor-controller`},
		{"neither object nor list", ctrl(linstorv1.Patch{Patch: "just text"}), "spec.controller.patches[0].patch", "must be an object (a strategic-merge patch) or a list"},
		{"unknown JSON 6902 op", ctrl(linstorv1.Patch{Patch: `[{"op":"merge","path":"/spec"}]`}), "spec.controller.patches[0].patch", "unsupported operation"},
		{"JSON 6902 path missing", ctrl(linstorv1.Patch{Patch: `[{"op":"replace","path":"/spec/nothing/here","value":1}]`}), "spec.controller.patches[0].patch", "Deployment linstor-controller"},
		{"unknown field", ctrl(linstorv1.Patch{Patch: `{"spec":{"replica":3}}`}), "spec.controller.patches[0].patch", `unknown field "spec.replica"`},
		{"rename", ctrl(linstorv1.Patch{Patch: `{"metadata":{"name":"other"}}`}), "spec.controller.patches[0].patch", "may not change the name"},
		{"move", ctrl(linstorv1.Patch{Target: &linstorv1.PatchTarget{Kind: "ConfigMap"}, Patch: `[{"op":"replace","path":"/metadata/namespace","value":"default"}]`}), "spec.controller.patches[0].patch", "may not change the name or namespace"},
		{"change kind", ctrl(linstorv1.Patch{Target: &linstorv1.PatchTarget{Kind: "ConfigMap"}, Patch: `{"kind":"Secret"}`}), "spec.controller.patches[0].patch", "may not change apiVersion or kind"},
		{"prune label", ctrl(linstorv1.Patch{Target: &linstorv1.PatchTarget{Kind: "Service"}, Patch: `{"metadata":{"labels":{"linstor.io/cluster":null}}}`}), "spec.controller.patches[0].patch", "may not change the label linstor.io/cluster"},
		{"pod selector label", ctrl(linstorv1.Patch{Patch: `{"spec":{"template":{"metadata":{"labels":{"app.kubernetes.io/instance":"other"}}}}}`}), "spec.controller.patches[0].patch", "may not change the pod label app.kubernetes.io/instance"},
		{"privileged under Restricted", ctrl(linstorv1.Patch{Patch: `{"spec":{"template":{"spec":{"containers":[{"name":"linstor-controller","securityContext":{"privileged":true}}]}}}}`}),
			"spec.controller.patches[0].patch.spec.template.spec.containers[name=linstor-controller].securityContext.privileged", "spec.podTemplatePolicy: AllowPrivileged"},
		{"host network by JSON 6902", linstorv1.LinstorClusterSpec{CSI: &linstorv1.CSISpec{Controller: &linstorv1.ComponentSpec{Patches: []linstorv1.Patch{{Patch: `[{"op":"add","path":"/spec/template/spec/hostNetwork","value":true}]`}}}}},
			"spec.csi.controller.patches[0].patch.spec.template.spec.hostNetwork", "host's network"},
		{"another ServiceAccount", linstorv1.LinstorClusterSpec{HighAvailabilityController: &linstorv1.ComponentSpec{Patches: []linstorv1.Patch{{Patch: `{"spec":{"template":{"spec":{"serviceAccountName":"default"}}}}`}}}},
			"spec.highAvailabilityController.patches[0].patch.spec.template.spec.serviceAccountName", "ServiceAccount"},
		{"host path", linstorv1.LinstorClusterSpec{CSI: &linstorv1.CSISpec{Controller: &linstorv1.ComponentSpec{Patches: []linstorv1.Patch{{Patch: `{"spec":{"template":{"spec":{"volumes":[{"name":"etc","hostPath":{"path":"/etc"}}]}}}}`}}}}},
			"spec.csi.controller.patches[0].patch.spec.template.spec.volumes[name=etc].hostPath", `"/etc"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster(tc.spec)
			objs, err := renderCluster(t, c)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tc.field+": ") || !strings.Contains(err.Error(), tc.text) {
				t.Errorf("err = %v\nwant %s: ...%s", err, tc.field, tc.text)
			}
			// Nothing of it is applied half-patched: the objects are as rendered.
			for _, o := range objs {
				if o.GetName() == "other" || o.GetNamespace() == "default" {
					t.Errorf("a refused patch changed %s", o.GetName())
				}
			}
			// Admission finds the same field on a dry render.
			var fields []string
			for _, e := range ClusterPatchErrors(c, images.Default()) {
				fields = append(fields, e.Field)
			}
			if !slices.Contains(fields, tc.field) {
				t.Errorf("ClusterPatchErrors named %q, want %s", fields, tc.field)
			}
		})
	}
}

func TestRefusedPatchLeavesObjectsAsRendered(t *testing.T) {
	c := cluster(linstorv1.LinstorClusterSpec{Controller: &linstorv1.ControllerSpec{ComponentSpec: linstorv1.ComponentSpec{Patches: []linstorv1.Patch{
		{Patch: `{"metadata":{"annotations":{"first":"applied"}}}`},
		{Target: &linstorv1.PatchTarget{Kind: "Secret"}, Patch: `{}`},
	}}}})
	objs, err := renderCluster(t, c)
	if err == nil {
		t.Fatal("accepted")
	}
	if find[appsv1.Deployment](objs, names.ControllerName).Annotations["first"] != "" {
		t.Error("the good patch was applied although a later one is refused")
	}
}

func TestSatellitePatches(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	render := func(c *linstorv1.LinstorCluster, patches ...linstorv1.Patch) (Objects, error) {
		sat := &linstorv1.LinstorSatellite{ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: "storage"}, Spec: linstorv1.LinstorSatelliteSpec{Patches: patches}}
		objs, err := Satellite(c, sat, node, images.Default())
		if err != nil {
			t.Fatal(err)
		}
		return WithSatellitePatches(c, sat, objs)
	}
	env := `{"spec":{"template":{"spec":{"containers":[{"name":"linstor-satellite","env":[{"name":"LS_EXTRA","value":"1"}]}]}}}}`
	for _, target := range []*linstorv1.PatchTarget{nil, {Kind: "DaemonSet", Name: SatelliteWorkloadAlias}, {Kind: "DaemonSet", Name: names.SatelliteDaemonSetName("n1")}, {Kind: "DaemonSet"}} {
		objs, err := render(cluster(linstorv1.LinstorClusterSpec{}), linstorv1.Patch{Target: target, Patch: env})
		if err != nil {
			t.Fatalf("target %+v: %v", target, err)
		}
		if got := envOf(&find[appsv1.DaemonSet](objs, names.SatelliteDaemonSetName("n1")).Spec.Template, names.SatelliteComponent, "LS_EXTRA"); got != "1" {
			t.Errorf("target %+v: LS_EXTRA = %q", target, got)
		}
	}
	// The satellite keeps its own privilege; a new container does not get it.
	if _, err := render(cluster(linstorv1.LinstorClusterSpec{}), linstorv1.Patch{Patch: `{"spec":{"template":{"spec":{"hostNetwork":true,"containers":[{"name":"linstor-satellite","securityContext":{"privileged":true}}]}}}}`}); err != nil {
		t.Errorf("keeping privilege: %v", err)
	}
	_, err := render(cluster(linstorv1.LinstorClusterSpec{}), linstorv1.Patch{Patch: `{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"x","securityContext":{"privileged":true}}]}}}}`})
	if err == nil || !strings.Contains(err.Error(), "spec.patches[0].patch.spec.template.spec.containers[name=sidecar].securityContext.privileged: Forbidden") {
		t.Errorf("privileged sidecar: %v", err)
	}
	_, err = render(cluster(linstorv1.LinstorClusterSpec{}), linstorv1.Patch{Target: &linstorv1.PatchTarget{Kind: "DaemonSet", Name: "linstor-satellite.n2"}, Patch: `{}`})
	if err == nil || !strings.Contains(err.Error(), `spec.patches[0].target: Invalid value: "DaemonSet/linstor-satellite.n2": no rendered DaemonSet named "linstor-satellite.n2"; rendered: DaemonSet linstor-satellite`) {
		t.Errorf("another node's DaemonSet: %v", err)
	}
}

func TestSatelliteConfigurationPatchErrors(t *testing.T) {
	cfg := &linstorv1.LinstorSatelliteConfiguration{Spec: linstorv1.LinstorSatelliteConfigurationSpec{Patches: []linstorv1.Patch{
		{Patch: `{"spec":{"template":{"spec":{"hostPID":true}}}}`},
		{Target: &linstorv1.PatchTarget{Kind: "Service"}, Patch: `{}`},
	}}}
	fields := func(errs field.ErrorList) []string {
		var out []string
		for _, e := range errs {
			out = append(out, e.Field)
		}
		return out
	}
	// The spec's own errors, and the privilege it adds, judged apart: the policy is the
	// LinstorCluster's.
	if got, want := fields(SatelliteConfigurationPatchErrors(nil, cfg, images.Default())), []string{"spec.patches[1].target"}; !slices.Equal(got, want) {
		t.Errorf("refused %q, want %q", got, want)
	}
	if got, want := fields(SatelliteConfigurationPatchEscalations(nil, cfg, images.Default())), []string{"spec.patches[0].patch.spec.template.spec.hostPID"}; !slices.Equal(got, want) {
		t.Errorf("escalations %q, want %q", got, want)
	}
	allow := cluster(linstorv1.LinstorClusterSpec{PodTemplatePolicy: linstorv1.PodTemplateAllowPrivileged})
	if errs := SatelliteConfigurationPatchEscalations(allow, cfg, images.Default()); len(errs) != 0 {
		t.Errorf("AllowPrivileged: %v", errs)
	}
}

func TestClusterPatchErrorsJudgeDisabledComponents(t *testing.T) {
	c := cluster(linstorv1.LinstorClusterSpec{
		CSI: &linstorv1.CSISpec{Enabled: ptr.To(false), Node: &linstorv1.ComponentSpec{Enabled: ptr.To(false),
			Patches: []linstorv1.Patch{{Patch: `{"spec":{"template":{"spec":{"hostPID":true}}}}`}}}},
		Satellite: &linstorv1.SatelliteSpec{ComponentSpec: linstorv1.ComponentSpec{Patches: []linstorv1.Patch{{Target: &linstorv1.PatchTarget{Kind: "Deployment"}, Patch: `{}`}}}},
	})
	var got []string
	for _, e := range ClusterPatchErrors(c, images.Default()) {
		got = append(got, e.Field)
	}
	if want := []string{"spec.csi.node.patches[0].patch.spec.template.spec.hostPID", "spec.satellite.patches[0].target"}; !slices.Equal(got, want) {
		t.Errorf("refused %q, want %q", got, want)
	}
}

func TestPatchTargets(t *testing.T) {
	got := PatchTargets(cluster(linstorv1.LinstorClusterSpec{}), images.Default())
	want := map[string][]string{
		"spec.controller.patches":                 {"ConfigMap linstor-controller-config", "Deployment linstor-controller", "NetworkPolicy linstor-controller", "Service linstor-controller"},
		"spec.csi.controller.patches":             {"CSIDriver linstor.csi.linbit.com", "Deployment linstor-csi-controller"},
		"spec.csi.node.patches":                   {"CSIDriver linstor.csi.linbit.com", "DaemonSet linstor-csi-node"},
		"spec.highAvailabilityController.patches": {"DaemonSet linstor-ha-controller"},
	}
	for k, w := range want {
		if !slices.Equal(got[k], w) {
			t.Errorf("%s: %q, want %q", k, got[k], w)
		}
	}
	if !slices.Contains(got["spec.satellite.patches"], "DaemonSet "+SatelliteWorkloadAlias) {
		t.Errorf("satellite: %q", got["spec.satellite.patches"])
	}
}

func TestParsePatch(t *testing.T) {
	cases := []struct {
		name, text string
		json6902   bool
		err        string
	}{
		{"yaml object", "spec:\n  replicas: 2\n", false, ""},
		{"json object", `{"spec":{"replicas":2}}`, false, ""},
		{"yaml list", "- op: remove\n  path: /spec/replicas\n", true, ""},
		{"json list", `[{"op":"test","path":"/kind","value":"Deployment"}]`, true, ""},
		{"op without path", `[{"op":"remove"}]`, true, "not a JSON 6902 patch"},
		{"unknown op", `[{"op":"merge","path":"/"}]`, true, "unsupported operation"},
		{"scalar", "42", false, "must be an object"},
		{"bad yaml", "a: [", false, "neither YAML nor JSON"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := parsePatch(tc.text)
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("err = %v, want %q", err, tc.err)
				}
			case err != nil:
				t.Errorf("err = %v", err)
			case (p.ops != nil) != tc.json6902:
				t.Errorf("read as JSON 6902: %v, want %v", p.ops != nil, tc.json6902)
			}
		})
	}
}
