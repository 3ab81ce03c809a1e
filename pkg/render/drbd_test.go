package render

import (
	"errors"
	"slices"
	"testing"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/images"
)

const (
	osUbuntu  = "Ubuntu 22.04.4 LTS"
	osDebian  = "Debian GNU/Linux 12 (bookworm)"
	osRHEL    = "Red Hat Enterprise Linux 9.4 (Plow)"
	osRHCOS9  = "Red Hat Enterprise Linux CoreOS 415.92.202402201450-0 (Plow)"
	osRHCOS8  = "Red Hat Enterprise Linux CoreOS 412.86.202306132230-0 (Ootpa)"
	osTalos   = "Talos (v1.7.0)"
	osFlatcar = "Flatcar Container Linux by Kinvolk 3815.2.0 (Oklo)"
	osUnknown = "Bottlerocket OS 1.20.0 (aws-k8s-1.29)"
)

func loaderImage(flavour string) string {
	return "quay.io/piraeusdatastore/drbd9-" + flavour + ":v9.3.3"
}

// osNode is a node of osImage; an RHCOS one carries its label and kernel version.
func osNode(osImage string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{OSImage: osImage}}}
	if osImage == osRHCOS9 || osImage == osRHCOS8 {
		n.Labels = map[string]string{"node.openshift.io/os_id": "rhcos"}
		n.Status.NodeInfo.KernelVersion = kernelRHCOS
	}
	return n
}

const (
	kernelRHCOS = "5.14.0-284.54.1.el9_2.x86_64"
	toolkit9    = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:9999"
	toolkit8    = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:8888"
)

// withToolkit is the default set with a Driver Toolkit ImageStream that has a tag for
// both RHCOS versions of these tests.
func withToolkit() images.Set {
	return images.Default().WithDriverToolkit(images.DriverToolkit{Images: map[string]string{
		"415.92.202402201450-0": toolkit9, "412.86.202306132230-0": toolkit8,
	}})
}

func TestResolveDRBDLoader(t *testing.T) {
	var (
		compile = linstorv1.DRBDModuleLoaderCompile
		shipped = linstorv1.DRBDModuleLoaderShippedModules
		none    = linstorv1.DRBDModuleLoaderNone
		auto    = linstorv1.DRBDModuleLoaderAuto
	)
	rhcos := func(strategy linstorv1.DRBDModuleLoader, flavour, toolkit string) DRBDLoader {
		l := DRBDLoader{Strategy: strategy, Image: loaderImage(flavour), SELinuxType: "spc_t", DriverToolkit: toolkit}
		if toolkit != "" {
			l.KernelVersion = kernelRHCOS
		}
		return l
	}
	cases := []struct {
		name       string
		osImage    string
		configured linstorv1.DRBDModuleLoader
		want       DRBDLoader
	}{
		// Auto, by operating system.
		{"ubuntu compiles against /usr/src", osUbuntu, "", DRBDLoader{Strategy: compile, Image: loaderImage("jammy"), HostUsrSrc: true}},
		{"debian compiles against /usr/src", osDebian, "", DRBDLoader{Strategy: compile, Image: loaderImage("bookworm"), HostUsrSrc: true}},
		{"rhel compiles against /usr/src", osRHEL, "", DRBDLoader{Strategy: compile, Image: loaderImage("almalinux9"), HostUsrSrc: true}},
		{"rhcos on rhel 9 compiles with its version's driver toolkit, as spc_t", osRHCOS9, "", rhcos(compile, "almalinux9", toolkit9)},
		{"rhcos on rhel 8 compiles with its version's driver toolkit, as spc_t", osRHCOS8, "", rhcos(compile, "almalinux8", toolkit8)},
		{"talos loads drbd itself", osTalos, "", DRBDLoader{Strategy: none}},
		{"flatcar compiles without /usr/src", osFlatcar, "", DRBDLoader{Strategy: compile, Image: loaderImage("noble")}},
		{"unknown os compiles with the fallback image", osUnknown, "", DRBDLoader{Strategy: compile, Image: loaderImage("noble"), HostUsrSrc: true}},
		{"no osImage reported yet", "", "", DRBDLoader{Strategy: compile, Image: loaderImage("noble"), HostUsrSrc: true}},
		{"explicit Auto is Auto", osRHCOS9, auto, rhcos(compile, "almalinux9", toolkit9)},
		// A configured strategy wins over the operating system's.
		{"Compile on rhcos is the driver toolkit's", osRHCOS9, compile, rhcos(compile, "almalinux9", toolkit9)},
		{"ShippedModules on rhcos (an image that ships modules) still runs as spc_t", osRHCOS9, shipped, rhcos(shipped, "almalinux9", "")},
		{"Compile on flatcar still has no /usr/src", osFlatcar, compile, DRBDLoader{Strategy: compile, Image: loaderImage("noble")}},
		{"ShippedModules on ubuntu mounts no /usr/src", osUbuntu, shipped, DRBDLoader{Strategy: shipped, Image: loaderImage("jammy")}},
		{"None on ubuntu (module preloaded)", osUbuntu, none, DRBDLoader{Strategy: none}},
		{"None on rhcos", osRHCOS9, none, DRBDLoader{Strategy: none}},
		{"Compile on talos", osTalos, compile, DRBDLoader{Strategy: compile, Image: loaderImage("noble"), HostUsrSrc: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResolveDRBDLoader(osNode(tc.osImage), tc.configured, withToolkit())
			if err != nil || got != tc.want {
				t.Errorf("ResolveDRBDLoader(%q, %q) = %+v, %v; want %+v", tc.osImage, tc.configured, got, err, tc.want)
			}
		})
	}
}

// An RHCOS node whose version has no Driver Toolkit image gets no loader (headers of
// another kernel cannot build DRBD for it), and an error naming the version and the
// ImageStream; the strategies that need no headers do not care.
func TestResolveDRBDLoaderWithoutDriverToolkit(t *testing.T) {
	cases := []struct {
		name       string
		toolkit    images.DriverToolkit
		configured linstorv1.DRBDModuleLoader
		wantErr    string // "" for a loader
	}{
		{"no tag for the version", images.DriverToolkit{Images: map[string]string{"416.94.202410211619-0": toolkit9}}, "",
			"no Driver Toolkit image for RHCOS 415.92.202402201450-0: ImageStream openshift/driver-toolkit has no tag 415.92.202402201450-0 (RHCOS tags: 416.94.202410211619-0)"},
		{"not OpenShift", images.DriverToolkit{Unavailable: "the image.openshift.io/v1 API is not served"}, linstorv1.DRBDModuleLoaderCompile,
			"no Driver Toolkit image for RHCOS 415.92.202402201450-0: ImageStream openshift/driver-toolkit: the image.openshift.io/v1 API is not served"},
		{"ShippedModules needs none", images.DriverToolkit{}, linstorv1.DRBDModuleLoaderShippedModules, ""},
		{"None needs none", images.DriverToolkit{}, linstorv1.DRBDModuleLoaderNone, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResolveDRBDLoader(osNode(osRHCOS9), tc.configured, images.Default().WithDriverToolkit(tc.toolkit))
			var missing *images.DriverToolkitMissingError
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("error %v, want loader", err)
			case tc.wantErr != "" && (!errors.As(err, &missing) || err.Error() != tc.wantErr):
				t.Errorf("error = %v, want %q", err, tc.wantErr)
			case tc.wantErr != "" && got != (DRBDLoader{}):
				t.Errorf("loader = %+v with the error, want none", got)
			}
		})
	}
}

func TestResolveDRBDLoaderTakesOverriddenImages(t *testing.T) {
	imgs, err := images.FromEnv([]string{"RELATED_IMAGE_DRBD_MODULE_LOADER_ALMALINUX9=mirror.local/drbd9-rhel9:v9.2.11"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := ResolveDRBDLoader(osNode(osRHEL), "", imgs); got.Image != "mirror.local/drbd9-rhel9:v9.2.11" {
		t.Errorf("image = %s, want the RELATED_IMAGE override", got.Image)
	}
}

// renderedLoader renders a satellite and returns its pod spec and loader container (nil
// when there is none).
func renderedLoader(t *testing.T, clusterDefault, satellite linstorv1.DRBDModuleLoader, osImage string) (corev1.PodSpec, *corev1.Container) {
	t.Helper()
	spec := linstorv1.LinstorClusterSpec{}
	if clusterDefault != "" {
		spec.Satellite = &linstorv1.SatelliteSpec{DRBDModuleLoader: clusterDefault}
	}
	sat := &linstorv1.LinstorSatellite{ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: "storage"},
		Spec: linstorv1.LinstorSatelliteSpec{DRBDModuleLoader: satellite}}
	objs, err := Satellite(cluster(spec), sat, osNode(osImage), withToolkit())
	if err != nil {
		t.Fatal(err)
	}
	pod := objs[0].(*appsv1.DaemonSet).Spec.Template.Spec
	for i := range pod.InitContainers {
		if pod.InitContainers[i].Name == names.DRBDLoaderContainer {
			return pod, &pod.InitContainers[i]
		}
	}
	return pod, nil
}

func TestSatelliteRendersEachLoaderStrategy(t *testing.T) {
	cases := []struct {
		name       string
		satellite  linstorv1.DRBDModuleLoader
		osImage    string
		wantLoader bool
		lbHow      string
		mounts     []string // the loader's mount paths
		usrSrc     bool     // the pod has the host's /usr/src as a volume
	}{
		{"Compile", linstorv1.DRBDModuleLoaderCompile, osUbuntu, true, "compile", []string{"/lib/modules", "/usr/src"}, true},
		{"Compile on flatcar", linstorv1.DRBDModuleLoaderCompile, osFlatcar, true, "compile", []string{"/lib/modules"}, false},
		{"ShippedModules", linstorv1.DRBDModuleLoaderShippedModules, osUbuntu, true, "shipped_modules", []string{"/lib/modules"}, false},
		{"None", linstorv1.DRBDModuleLoaderNone, osUbuntu, false, "", nil, false},
		{"Auto on talos", "", osTalos, false, "", nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod, loader := renderedLoader(t, "", tc.satellite, tc.osImage)
			var volumes []string
			for _, v := range pod.Volumes {
				volumes = append(volumes, v.Name)
			}
			if got := slices.Contains(volumes, "usr-src"); got != tc.usrSrc {
				t.Errorf("usr-src volume present = %v, want %v (volumes %v)", got, tc.usrSrc, volumes)
			}
			// The satellite itself keeps reading the host's modules whatever the loader.
			if !slices.Contains(volumes, "lib-modules") {
				t.Errorf("lib-modules volume missing: %v", volumes)
			}
			if !tc.wantLoader {
				if loader != nil {
					t.Fatalf("init containers %v, want no loader", pod.InitContainers)
				}
				return
			}
			if loader == nil {
				t.Fatal("no drbd-module-loader init container")
			}
			if len(loader.Env) != 1 || loader.Env[0].Name != "LB_HOW" || loader.Env[0].Value != tc.lbHow {
				t.Errorf("env = %v, want LB_HOW=%s", loader.Env, tc.lbHow)
			}
			var mounts []string
			for _, m := range loader.VolumeMounts {
				mounts = append(mounts, m.MountPath)
				if !m.ReadOnly {
					t.Errorf("mount %s is writable", m.MountPath)
				}
				if !slices.Contains(volumes, m.Name) {
					t.Errorf("mount %s names volume %s, which the pod does not have", m.MountPath, m.Name)
				}
			}
			if !slices.Equal(mounts, tc.mounts) {
				t.Errorf("mounts = %v, want %v", mounts, tc.mounts)
			}
			caps := loader.SecurityContext.Capabilities
			if !slices.Equal(caps.Add, []corev1.Capability{"SYS_MODULE"}) || !slices.Equal(caps.Drop, []corev1.Capability{"ALL"}) {
				t.Errorf("capabilities = %+v, want only SYS_MODULE", caps)
			}
		})
	}
}

func TestSatelliteLoaderConfigurationWinsOverClusterDefault(t *testing.T) {
	cases := []struct {
		name           string
		clusterDefault linstorv1.DRBDModuleLoader
		satellite      linstorv1.DRBDModuleLoader
		osImage        string
		lbHow          string // "" when no loader is rendered
	}{
		{"configuration Compile over cluster None", linstorv1.DRBDModuleLoaderNone, linstorv1.DRBDModuleLoaderCompile, osUbuntu, "compile"},
		{"configuration None over cluster Compile", linstorv1.DRBDModuleLoaderCompile, linstorv1.DRBDModuleLoaderNone, osUbuntu, ""},
		{"configuration Auto over cluster ShippedModules", linstorv1.DRBDModuleLoaderShippedModules, linstorv1.DRBDModuleLoaderAuto, osUbuntu, "compile"},
		{"cluster default when the satellite has none", linstorv1.DRBDModuleLoaderShippedModules, "", osUbuntu, "shipped_modules"},
		{"nothing set is Auto", "", "", osTalos, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, loader := renderedLoader(t, tc.clusterDefault, tc.satellite, tc.osImage)
			got := ""
			if loader != nil {
				got = loader.Env[0].Value
			}
			if got != tc.lbHow {
				t.Errorf("LB_HOW = %q, want %q", got, tc.lbHow)
			}
		})
	}
}

// A podTemplate patch still reaches the loader: an admin can replace its image (a loader
// that ships modules for the node's kernel) without a new strategy.
func TestSatelliteLoaderImagePatchable(t *testing.T) {
	sat := &linstorv1.LinstorSatellite{ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: "storage"}}
	sat.Spec.PodTemplate = &runtime.RawExtension{Raw: []byte(`{"spec":{"initContainers":[{"name":"drbd-module-loader","image":"mirror.local/drbd9-rhel9:v9.2.11"}]}}`)}
	sat.Spec.DRBDModuleLoader = linstorv1.DRBDModuleLoaderShippedModules
	objs, err := Satellite(cluster(linstorv1.LinstorClusterSpec{}), sat, osNode(osRHCOS9), images.Default())
	if err != nil {
		t.Fatal(err)
	}
	init := objs[0].(*appsv1.DaemonSet).Spec.Template.Spec.InitContainers
	if len(init) != 2 || init[0].Name != names.DRBDLoaderContainer || init[0].Image != "mirror.local/drbd9-rhel9:v9.2.11" || init[0].Env[0].Value != "shipped_modules" {
		t.Errorf("init containers = %+v", init)
	}
}

// The loader of an RHCOS node as it runs: the Driver Toolkit of the node's version copies
// the headers of its kernel into the pod, unprivileged; the loader compiles DRBD against
// them and loads it as spc_t, after relabelling the modules it built.
func TestSatelliteOnRHCOSCompilesWithTheDriverToolkit(t *testing.T) {
	pod, loader := renderedLoader(t, "", "", osRHCOS9)
	if len(pod.InitContainers) != 3 || pod.InitContainers[0].Name != names.KernelHeadersContainer || loader == nil || pod.InitContainers[1].Name != names.DRBDLoaderContainer {
		t.Fatalf("init containers = %+v, want kernel-headers, drbd-module-loader, the shutdown guard", pod.InitContainers)
	}
	headers := pod.InitContainers[0]
	if headers.Image != toolkit9 || !slices.Equal(headers.Command, []string{"cp", "-Rf", "/usr/src/kernels", "/headers/"}) {
		t.Errorf("kernel-headers = %s %v, want the toolkit of 415.92.202402201450-0 copying /usr/src/kernels", headers.Image, headers.Command)
	}
	if sc := headers.SecurityContext; sc.Privileged != nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.SELinuxOptions != nil {
		t.Errorf("kernel-headers security context = %+v, want an unprivileged one", sc)
	}
	if loader.Image != loaderImage("almalinux9") || loader.SecurityContext.SELinuxOptions == nil || loader.SecurityContext.SELinuxOptions.Type != "spc_t" {
		t.Errorf("loader = %s, SELinux %+v; want almalinux9 as spc_t", loader.Image, loader.SecurityContext.SELinuxOptions)
	}
	env := map[string]string{}
	for _, e := range loader.Env {
		env[e.Name] = e.Value
	}
	want := map[string]string{"LB_HOW": "compile", "LB_MAKEOPTS": "KDIR=/usr/src/kernels/" + kernelRHCOS, "LB_SELINUX_AS": "modules_object_t"}
	if len(env) != len(want) {
		t.Errorf("loader env = %v, want %v", env, want)
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("loader env %s = %q, want %q", k, env[k], v)
		}
	}
	// The headers' volume is the pod's own, never the host's /usr/src.
	var usrSrc *corev1.Volume
	for i := range pod.Volumes {
		if pod.Volumes[i].Name == "usr-src" {
			usrSrc = &pod.Volumes[i]
		}
	}
	if usrSrc == nil || usrSrc.EmptyDir == nil || usrSrc.HostPath != nil {
		t.Errorf("usr-src = %+v, want an emptyDir", usrSrc)
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range loader.VolumeMounts {
		mounts[m.MountPath] = m
	}
	if m := mounts["/usr/src"]; m.Name != "usr-src" || !m.ReadOnly {
		t.Errorf("loader mounts = %+v, want usr-src read-only at /usr/src", loader.VolumeMounts)
	}
}
