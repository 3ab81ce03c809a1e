package render

import (
	"slices"
	"strings"
	"testing"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/images"
)

func patch(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }

// renderedTemplates are the operands' pod templates as the operator renders them,
// without any patch.
func renderedTemplates(t *testing.T) map[string]*corev1.PodTemplateSpec {
	t.Helper()
	c := cluster(linstorv1.LinstorClusterSpec{})
	imgs := images.Default()
	var objs Objects
	for _, render := range []func() (Objects, error){
		func() (Objects, error) { return Controller(c, imgs) },
		func() (Objects, error) { return CSI(c, imgs, "http://linstor-controller:3370") },
		func() (Objects, error) { return HAController(c, imgs) },
		func() (Objects, error) {
			return Satellite(c, &linstorv1.LinstorSatellite{ObjectMeta: metav1.ObjectMeta{Name: "n", Namespace: "storage"}},
				&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}, imgs)
		},
	} {
		o, err := render()
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, o...)
	}
	out := map[string]*corev1.PodTemplateSpec{}
	for _, name := range []string{names.ControllerName, names.CSIControllerName, names.CSINodeName, names.HAControllerName, names.SatelliteDaemonSetName("n")} {
		if out[name] = podTemplateOf(objs, name); out[name] == nil {
			t.Fatalf("no %s rendered", name)
		}
	}
	out["satellite"] = out[names.SatelliteDaemonSetName("n")]
	return out
}

// synthetic is a pod that exercises what the rendered ones do not have: a writable and
// a read-only host path, a user namespace, a non-root UID, a projected token.
var synthetic = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
	HostUsers: ptr.To(false),
	Containers: []corev1.Container{{
		Name: "main", Image: "main",
		SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To[int64](1000), RunAsNonRoot: ptr.To(true)},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "modules", MountPath: "/lib/modules", ReadOnly: true},
			{Name: "state", MountPath: "/var/lib/state"},
		},
	}},
	Volumes: []corev1.Volume{
		hostPath("modules", "/lib/modules", corev1.HostPathDirectory),
		hostPath("state", "/var/lib/state", corev1.HostPathDirectoryOrCreate),
		{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "linstor", Path: "token"}}}}}},
	},
}}

func TestPodTemplateEscalation(t *testing.T) {
	rendered := renderedTemplates(t)
	rendered["synthetic"] = synthetic
	ctrl := "spec.controller.podTemplate.spec.containers[name=linstor-controller].securityContext."
	cases := []struct {
		name, pod, patch string
		// want are the fields refused (under at = spec.controller.podTemplate); none means allowed.
		want []string
	}{
		// Pod identity and host namespaces.
		{"host PID", names.ControllerName, `{"spec":{"hostPID":true}}`, []string{"spec.controller.podTemplate.spec.hostPID"}},
		{"host IPC", names.ControllerName, `{"spec":{"hostIPC":true}}`, []string{"spec.controller.podTemplate.spec.hostIPC"}},
		{"host network for the controller", names.ControllerName, `{"spec":{"hostNetwork":true}}`, []string{"spec.controller.podTemplate.spec.hostNetwork"}},
		{"host PID for the satellite", "satellite", `{"spec":{"hostPID":true}}`, []string{"spec.controller.podTemplate.spec.hostPID"}},
		{"shared process namespace", names.ControllerName, `{"spec":{"shareProcessNamespace":true}}`, []string{"spec.controller.podTemplate.spec.shareProcessNamespace"}},
		{"host user namespace", "synthetic", `{"spec":{"hostUsers":true}}`, []string{"spec.controller.podTemplate.spec.hostUsers"}},
		{"host user namespace by removal", "synthetic", `{"spec":{"hostUsers":null}}`, []string{"spec.controller.podTemplate.spec.hostUsers"}},
		{"another ServiceAccount", names.ControllerName, `{"spec":{"serviceAccountName":"default"}}`, []string{"spec.controller.podTemplate.spec.serviceAccountName"}},
		{"another ServiceAccount, deprecated field", names.CSINodeName, `{"spec":{"serviceAccount":"admin"}}`, []string{"spec.controller.podTemplate.spec.serviceAccount"}},
		{"the satellite's ServiceAccount token", "satellite", `{"spec":{"automountServiceAccountToken":true}}`, []string{"spec.controller.podTemplate.spec.automountServiceAccountToken"}},
		{"the satellite's token by removing the opt-out", "satellite", `{"spec":{"automountServiceAccountToken":null}}`, []string{"spec.controller.podTemplate.spec.automountServiceAccountToken"}},
		{"a projected ServiceAccount token", names.CSIControllerName, `{"spec":{"volumes":[{"name":"t","projected":{"sources":[{"serviceAccountToken":{"path":"t","audience":"vault"}}]}}]}}`,
			[]string{"spec.controller.podTemplate.spec.volumes[name=t].projected.sources[0].serviceAccountToken"}},
		// Pod security context.
		{"pod runs as root", names.ControllerName, `{"spec":{"securityContext":{"runAsUser":0}}}`, []string{"spec.controller.podTemplate.spec.securityContext.runAsUser"}},
		{"pod seccomp unconfined", names.ControllerName, `{"spec":{"securityContext":{"seccompProfile":{"type":"Unconfined"}}}}`, []string{"spec.controller.podTemplate.spec.securityContext.seccompProfile"}},
		{"pod seccomp removed", names.ControllerName, `{"spec":{"securityContext":null}}`, []string{"spec.controller.podTemplate.spec.securityContext.seccompProfile"}},
		{"pod AppArmor unconfined", names.CSIControllerName, `{"spec":{"securityContext":{"appArmorProfile":{"type":"Unconfined"}}}}`, []string{"spec.controller.podTemplate.spec.securityContext.appArmorProfile"}},
		{"pod SELinux super-privileged type", names.CSIControllerName, `{"spec":{"securityContext":{"seLinuxOptions":{"type":"spc_t"}}}}`, []string{"spec.controller.podTemplate.spec.securityContext.seLinuxOptions.type"}},
		{"pod Windows host process", names.CSIControllerName, `{"spec":{"securityContext":{"windowsOptions":{"hostProcess":true}}}}`, []string{"spec.controller.podTemplate.spec.securityContext.windowsOptions.hostProcess"}},
		{"pod runAsNonRoot lifted", "synthetic", `{"spec":{"securityContext":{"runAsNonRoot":false}}}`, []string{"spec.controller.podTemplate.spec.securityContext.runAsNonRoot"}},
		// Containers.
		{"privileged controller", names.ControllerName, `{"spec":{"containers":[{"name":"linstor-controller","securityContext":{"privileged":true}}]}}`, []string{ctrl + "privileged"}},
		{"privilege escalation", names.ControllerName, `{"spec":{"containers":[{"name":"linstor-controller","securityContext":{"allowPrivilegeEscalation":true}}]}}`, []string{ctrl + "allowPrivilegeEscalation"}},
		{"added capability", names.ControllerName, `{"spec":{"containers":[{"name":"linstor-controller","securityContext":{"capabilities":{"add":["NET_ADMIN"]}}}]}}`, []string{ctrl + "capabilities.add[0]"}},
		{"capabilities no longer dropped", names.ControllerName, `{"spec":{"containers":[{"name":"linstor-controller","securityContext":{"capabilities":{"drop":["NET_RAW"]}}}]}}`, []string{ctrl + "capabilities.drop"}},
		{"security context removed", names.ControllerName, `{"spec":{"containers":[{"name":"linstor-controller","securityContext":null}]}}`, []string{ctrl + "allowPrivilegeEscalation", ctrl + "capabilities.drop"}},
		{"container runs as root", names.ControllerName, `{"spec":{"containers":[{"name":"linstor-controller","securityContext":{"runAsUser":0}}]}}`, []string{ctrl + "runAsUser"}},
		{"container runAsNonRoot false", names.CSIControllerName, `{"spec":{"containers":[{"name":"csi-attacher","securityContext":{"runAsNonRoot":false}}]}}`,
			[]string{"spec.controller.podTemplate.spec.containers[name=csi-attacher].securityContext.runAsNonRoot"}},
		{"container drops its non-root UID", "synthetic", `{"spec":{"containers":[{"name":"main","securityContext":{"runAsUser":null}}]}}`,
			[]string{"spec.controller.podTemplate.spec.containers[name=main].securityContext.runAsUser"}},
		{"unmasked /proc", names.ControllerName, `{"spec":{"containers":[{"name":"linstor-controller","securityContext":{"procMount":"Unmasked"}}]}}`, []string{ctrl + "procMount"}},
		{"container seccomp unconfined", names.ControllerName, `{"spec":{"containers":[{"name":"linstor-controller","securityContext":{"seccompProfile":{"type":"Unconfined"}}}]}}`, []string{ctrl + "seccompProfile"}},
		{"container AppArmor unconfined", names.ControllerName, `{"spec":{"containers":[{"name":"linstor-controller","securityContext":{"appArmorProfile":{"type":"Unconfined"}}}]}}`, []string{ctrl + "appArmorProfile"}},
		{"AppArmor annotation", names.ControllerName, `{"metadata":{"annotations":{"container.apparmor.security.beta.kubernetes.io/linstor-controller":"unconfined"}}}`,
			[]string{"spec.controller.podTemplate.metadata.annotations[container.apparmor.security.beta.kubernetes.io/linstor-controller]"}},
		{"SELinux user", names.ControllerName, `{"spec":{"containers":[{"name":"linstor-controller","securityContext":{"seLinuxOptions":{"user":"system_u"}}}]}}`, []string{ctrl + "seLinuxOptions"}},
		{"host port", names.ControllerName, `{"spec":{"containers":[{"name":"linstor-controller","ports":[{"containerPort":3370,"hostPort":3370}]}]}}`,
			[]string{"spec.controller.podTemplate.spec.containers[name=linstor-controller].ports[containerPort=3370].hostPort"}},
		// Host paths.
		{"new hostPath volume", names.ControllerName, `{"spec":{"volumes":[{"name":"host","hostPath":{"path":"/"}}]}}`, []string{"spec.controller.podTemplate.spec.volumes[name=host].hostPath"}},
		{"hostPath volume pointed elsewhere", "satellite", `{"spec":{"volumes":[{"name":"lib-modules","hostPath":{"path":"/etc"}}]}}`,
			[]string{"spec.controller.podTemplate.spec.volumes[name=lib-modules].hostPath.path"}},
		{"a volume turned into a hostPath", names.CSIControllerName, `{"spec":{"volumes":[{"name":"socket-dir","emptyDir":null,"hostPath":{"path":"/var/run"}}]}}`,
			[]string{"spec.controller.podTemplate.spec.volumes[name=socket-dir].hostPath"}},
		{"read-only host path made writable", "synthetic", `{"spec":{"containers":[{"name":"main","volumeMounts":[{"mountPath":"/lib/modules","name":"modules","readOnly":false}]}]}}`,
			[]string{"spec.controller.podTemplate.spec.containers[name=main].volumeMounts[mountPath=/lib/modules].readOnly"}},
		// New containers.
		{"privileged sidecar", names.ControllerName, `{"spec":{"containers":[{"name":"debug","image":"busybox","securityContext":{"privileged":true}}]}}`,
			[]string{"spec.controller.podTemplate.spec.containers[name=debug].securityContext.privileged"}},
		{"init container with a capability", names.CSINodeName, `{"spec":{"initContainers":[{"name":"setup","image":"busybox","securityContext":{"capabilities":{"add":["SYS_ADMIN"]}}}]}}`,
			[]string{"spec.controller.podTemplate.spec.initContainers[name=setup].securityContext.capabilities.add[0]"}},
		{"privileged ephemeral container", names.ControllerName, `{"spec":{"ephemeralContainers":[{"name":"debug","image":"busybox","securityContext":{"privileged":true}}]}}`,
			[]string{"spec.controller.podTemplate.spec.ephemeralContainers[name=debug].securityContext.privileged"}},
		{"sidecar mounting the satellite's /dev", "satellite", `{"spec":{"containers":[{"name":"sidecar","image":"busybox","volumeMounts":[{"name":"dev","mountPath":"/dev"}]}]}}`,
			[]string{"spec.controller.podTemplate.spec.containers[name=sidecar].volumeMounts[mountPath=/dev]"}},
		{"sidecar running as root", names.CSIControllerName, `{"spec":{"containers":[{"name":"sidecar","image":"busybox","securityContext":{"runAsUser":0}}]}}`,
			[]string{"spec.controller.podTemplate.spec.containers[name=sidecar].securityContext.runAsUser"}},

		// Allowed: what keeps or lowers privilege.
		{"resources, env and tolerations", names.ControllerName, `{"spec":{"tolerations":[{"operator":"Exists"}],"containers":[{"name":"linstor-controller","env":[{"name":"JAVA_OPTS","value":"-Xmx2g"}],"resources":{"limits":{"memory":"2Gi"}}}]}}`, nil},
		{"labels and annotations", names.CSINodeName, `{"metadata":{"labels":{"team":"storage"},"annotations":{"container.apparmor.security.beta.kubernetes.io/linstor-csi":"runtime/default"}}}`, nil},
		{"extra non-host volume", names.ControllerName, `{"spec":{"volumes":[{"name":"extra","emptyDir":{}},{"name":"cfg","configMap":{"name":"x"}}],"containers":[{"name":"linstor-controller","volumeMounts":[{"name":"extra","mountPath":"/extra"}]}]}}`, nil},
		{"dropping more capabilities", "satellite", `{"spec":{"initContainers":[{"name":"drbd-module-loader","securityContext":{"capabilities":{"drop":["ALL","NET_RAW"]}}}]}}`, nil},
		{"stricter controller", names.ControllerName, `{"spec":{"securityContext":{"runAsNonRoot":true,"runAsUser":1000},"containers":[{"name":"linstor-controller","securityContext":{"readOnlyRootFilesystem":true}}]}}`, nil},
		{"keeping the controller's runAsNonRoot false", names.ControllerName, `{"spec":{"securityContext":{"runAsNonRoot":false}}}`, nil},
		{"container seccomp where the pod has it", names.ControllerName, `{"spec":{"containers":[{"name":"linstor-controller","securityContext":{"seccompProfile":{"type":"RuntimeDefault"}}}]}}`, nil},
		{"unprivileged sidecar", names.ControllerName, `{"spec":{"containers":[{"name":"exporter","image":"exporter","securityContext":{"allowPrivilegeEscalation":false,"capabilities":{"drop":["ALL"]}}}]}}`, nil},
		{"a container deleted", names.CSIControllerName, `{"spec":{"containers":[{"name":"csi-snapshotter","$patch":"delete"}]}}`, nil},
		{"the satellite keeps its privilege", "satellite", `{"spec":{"hostNetwork":true,"containers":[{"name":"linstor-satellite","securityContext":{"privileged":true,"allowPrivilegeEscalation":true,"capabilities":{"add":["SYS_ADMIN"]}}}]}}`, nil},
		{"the satellite's privileged container, unconfined as root", "satellite", `{"spec":{"containers":[{"name":"linstor-satellite","securityContext":{"runAsUser":0,"seccompProfile":{"type":"Unconfined"},"procMount":"Unmasked"}}]}}`, nil},
		{"the satellite mounts its own host paths elsewhere", "satellite", `{"spec":{"containers":[{"name":"linstor-satellite","volumeMounts":[{"name":"dev","mountPath":"/host-dev"}]}]}}`, nil},
		{"the satellite's host path, cleaned", "satellite", `{"spec":{"volumes":[{"name":"lib-modules","hostPath":{"path":"/lib/modules/"}}]}}`, nil},
		{"the satellite's host port on the host network", "satellite", `{"spec":{"containers":[{"name":"linstor-satellite","ports":[{"containerPort":9942,"hostPort":9942}]}]}}`, nil},
		{"the HA controller stays privileged", names.HAControllerName, `{"spec":{"hostNetwork":true,"containers":[{"name":"linstor-ha-controller","securityContext":{"privileged":true}}]}}`, nil},
		{"the loader keeps SYS_MODULE and root", "satellite", `{"spec":{"initContainers":[{"name":"drbd-module-loader","securityContext":{"runAsUser":0,"capabilities":{"add":["CAP_SYS_MODULE"],"drop":["ALL"]}}}]}}`, nil},
		{"a read-only mount of a writable host path", "synthetic", `{"spec":{"containers":[{"name":"main","volumeMounts":[{"mountPath":"/var/lib/state","name":"state","readOnly":true}]}]}}`, nil},
		{"the same projected token", "synthetic", `{"spec":{"volumes":[{"name":"token","projected":{"sources":[{"serviceAccountToken":{"audience":"linstor","path":"token","expirationSeconds":3600}}]}}]}}`, nil},
		{"the same ServiceAccount", names.ControllerName, `{"spec":{"serviceAccountName":"` + rendered[names.ControllerName].Spec.ServiceAccountName + `"}}`, nil},
	}
	at := field.NewPath("spec", "controller", "podTemplate")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := rendered[tc.pod].DeepCopy()
			after, err := strategicPatch(before, patch(tc.patch))
			if err != nil {
				t.Fatal(err)
			}
			errs := PodTemplateEscalation(linstorv1.PodTemplateRestricted, before, after, at)
			var got []string
			for _, e := range errs {
				got = append(got, e.Field)
				if e.Type != field.ErrorTypeForbidden || !strings.Contains(e.Detail, "spec.podTemplatePolicy: AllowPrivileged") {
					t.Errorf("%s: %s: want Forbidden saying how to allow it", e.Field, e.Error())
				}
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tc.want))
			if !slices.Equal(got, want) {
				t.Errorf("refused %q, want %q (%v)", got, want, errs)
			}
			// The default (unset) is Restricted, and AllowPrivileged allows everything.
			if n := len(PodTemplateEscalation("", before, after, at)); n != len(errs) {
				t.Errorf("unset policy refused %d fields, Restricted %d", n, len(errs))
			}
			if errs := PodTemplateEscalation(linstorv1.PodTemplateAllowPrivileged, before, after, at); len(errs) != 0 {
				t.Errorf("AllowPrivileged refused %v", errs)
			}
		})
	}
}

// The render itself refuses an escalating patch (objects that predate the webhook),
// naming the field, and applies it when the cluster allows it.
func TestRenderRefusesEscalatingPatches(t *testing.T) {
	hostPID := patch(`{"spec":{"hostPID":true}}`)
	restricted := cluster(linstorv1.LinstorClusterSpec{Controller: &linstorv1.ControllerSpec{ComponentSpec: linstorv1.ComponentSpec{PodTemplate: hostPID}}})
	_, err := Controller(restricted, images.Default())
	if err == nil || !strings.Contains(err.Error(), "spec.controller.podTemplate: spec.hostPID: Forbidden") || !strings.Contains(err.Error(), "spec.podTemplatePolicy: AllowPrivileged") {
		t.Errorf("controller: err = %v, want the field and how to allow it", err)
	}

	allowed := restricted.DeepCopy()
	allowed.Spec.PodTemplatePolicy = linstorv1.PodTemplateAllowPrivileged
	objs, err := Controller(allowed, images.Default())
	if err != nil {
		t.Fatal(err)
	}
	if !podTemplateOf(objs, names.ControllerName).Spec.HostPID {
		t.Error("AllowPrivileged did not apply the patch")
	}

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
	sat := &linstorv1.LinstorSatellite{ObjectMeta: metav1.ObjectMeta{Name: "n", Namespace: "storage"}, Spec: linstorv1.LinstorSatelliteSpec{PodTemplate: hostPID}}
	if _, err := Satellite(cluster(linstorv1.LinstorClusterSpec{}), sat, node, images.Default()); err == nil || !strings.Contains(err.Error(), "spec.hostPID: Forbidden") {
		t.Errorf("satellite: err = %v, want spec.hostPID refused", err)
	}
	sat.Spec.PodTemplate = patch(`{"spec":{"hostNetwork":true,"containers":[{"name":"linstor-satellite","securityContext":{"privileged":true}}]}}`)
	if _, err := Satellite(cluster(linstorv1.LinstorClusterSpec{}), sat, node, images.Default()); err != nil {
		t.Errorf("satellite keeping its privilege: %v", err)
	}

	ha := cluster(linstorv1.LinstorClusterSpec{CSI: &linstorv1.CSISpec{Node: &linstorv1.ComponentSpec{PodTemplate: patch(`{"spec":{"hostIPC":true}}`)}}})
	if _, err := CSI(ha, images.Default(), ""); err == nil || !strings.Contains(err.Error(), "spec.csi.node.podTemplate: spec.hostIPC: Forbidden") {
		t.Errorf("CSI node: err = %v", err)
	}
}

func TestClusterPodTemplateErrors(t *testing.T) {
	c := cluster(linstorv1.LinstorClusterSpec{
		Controller: &linstorv1.ControllerSpec{ComponentSpec: linstorv1.ComponentSpec{PodTemplate: patch(`{"spec":{"containers":[{"name":"linstor-controller","securityContext":{"privileged":true}}]}}`)}},
		Satellite:  &linstorv1.SatelliteSpec{ComponentSpec: linstorv1.ComponentSpec{PodTemplate: patch(`{"spec":{"hostNetwork":true,"hostPID":true}}`)}},
		CSI: &linstorv1.CSISpec{Enabled: ptr.To(false), // disabled components are checked too
			Controller: &linstorv1.ComponentSpec{PodTemplate: patch(`{"spec":{"serviceAccountName":"default"}}`)},
			Node:       &linstorv1.ComponentSpec{PodTemplate: patch(`{"spec":{"tolerations":[{"operator":"Exists"}]}}`)}},
		HighAvailabilityController: &linstorv1.ComponentSpec{PodTemplate: patch(`{"spec":{"containers":[{"name":"linstor-ha-controller","securityContext":{"privileged":true}}]}}`)},
	})
	var got []string
	for _, e := range ClusterPodTemplateErrors(c, images.Default()) {
		got = append(got, e.Field)
	}
	want := []string{
		"spec.controller.podTemplate.spec.containers[name=linstor-controller].securityContext.privileged",
		"spec.satellite.podTemplate.spec.hostPID",
		"spec.csi.controller.podTemplate.spec.serviceAccountName",
	}
	if !slices.Equal(got, want) {
		t.Errorf("refused %q, want %q", got, want)
	}
	c.Spec.PodTemplatePolicy = linstorv1.PodTemplateAllowPrivileged
	if errs := ClusterPodTemplateErrors(c, images.Default()); len(errs) != 0 {
		t.Errorf("AllowPrivileged refused %v", errs)
	}
	// A patch that does not apply is the syntax check's to report.
	c = cluster(linstorv1.LinstorClusterSpec{Controller: &linstorv1.ControllerSpec{ComponentSpec: linstorv1.ComponentSpec{PodTemplate: patch(`{"spec":{"containers":"nope"}}`)}}})
	if errs := ClusterPodTemplateErrors(c, images.Default()); len(errs) != 0 {
		t.Errorf("malformed patch: %v", errs)
	}
}

func TestSatelliteConfigurationPodTemplateErrors(t *testing.T) {
	cfg := func(p string) *linstorv1.LinstorSatelliteConfiguration {
		return &linstorv1.LinstorSatelliteConfiguration{Spec: linstorv1.LinstorSatelliteConfigurationSpec{PodTemplate: patch(p)}}
	}
	fields := func(errs field.ErrorList) []string {
		var out []string
		for _, e := range errs {
			out = append(out, e.Field)
		}
		return out
	}
	if got := fields(SatelliteConfigurationPodTemplateErrors(nil, cfg(`{"spec":{"hostPID":true}}`), images.Default())); !slices.Equal(got, []string{"spec.podTemplate.spec.hostPID"}) {
		t.Errorf("without a cluster: refused %q, want spec.podTemplate.spec.hostPID", got)
	}
	if errs := SatelliteConfigurationPodTemplateErrors(nil, cfg(`{"spec":{"hostNetwork":true,"containers":[{"name":"linstor-satellite","securityContext":{"privileged":true}}]}}`), images.Default()); len(errs) != 0 {
		t.Errorf("keeping the satellite's privilege: %v", errs)
	}
	allow := cluster(linstorv1.LinstorClusterSpec{PodTemplatePolicy: linstorv1.PodTemplateAllowPrivileged})
	if errs := SatelliteConfigurationPodTemplateErrors(allow, cfg(`{"spec":{"hostPID":true}}`), images.Default()); len(errs) != 0 {
		t.Errorf("AllowPrivileged: %v", errs)
	}
	// Compared with the satellite as the cluster renders it: what the cluster's own
	// patch took away cannot come back through a configuration.
	dropped := cluster(linstorv1.LinstorClusterSpec{Satellite: &linstorv1.SatelliteSpec{ComponentSpec: linstorv1.ComponentSpec{
		PodTemplate: patch(`{"spec":{"volumes":[{"name":"var-lib-linstor-pools","$patch":"delete"}]}}`)}}})
	got := fields(SatelliteConfigurationPodTemplateErrors(dropped, cfg(`{"spec":{"volumes":[{"name":"var-lib-linstor-pools","hostPath":{"path":"/var/lib/linstor-pools"}}]}}`), images.Default()))
	if !slices.Equal(got, []string{"spec.podTemplate.spec.volumes[name=var-lib-linstor-pools].hostPath"}) {
		t.Errorf("refused %q, want the volume the cluster removed", got)
	}
	// A cluster patch that is itself refused does not count as what the satellite has.
	escalated := cluster(linstorv1.LinstorClusterSpec{Satellite: &linstorv1.SatelliteSpec{ComponentSpec: linstorv1.ComponentSpec{PodTemplate: patch(`{"spec":{"hostPID":true}}`)}}})
	if got := fields(SatelliteConfigurationPodTemplateErrors(escalated, cfg(`{"spec":{"hostPID":true}}`), images.Default())); !slices.Equal(got, []string{"spec.podTemplate.spec.hostPID"}) {
		t.Errorf("refused %q, want spec.podTemplate.spec.hostPID", got)
	}
}
