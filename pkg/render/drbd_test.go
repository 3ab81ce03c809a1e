package render

import (
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
	return "quay.io/piraeusdatastore/drbd9-" + flavour + ":v9.2.11"
}

func TestResolveDRBDLoader(t *testing.T) {
	var (
		compile = linstorv1.DRBDModuleLoaderCompile
		shipped = linstorv1.DRBDModuleLoaderShippedModules
		none    = linstorv1.DRBDModuleLoaderNone
		auto    = linstorv1.DRBDModuleLoaderAuto
	)
	cases := []struct {
		name       string
		osImage    string
		configured linstorv1.DRBDModuleLoader
		want       DRBDLoader
	}{
		// Auto, by operating system.
		{"ubuntu compiles against /usr/src", osUbuntu, "", DRBDLoader{compile, loaderImage("jammy"), true}},
		{"debian compiles against /usr/src", osDebian, "", DRBDLoader{compile, loaderImage("bookworm"), true}},
		{"rhel compiles against /usr/src", osRHEL, "", DRBDLoader{compile, loaderImage("almalinux9"), true}},
		{"rhcos on rhel 9 has no headers: shipped modules", osRHCOS9, "", DRBDLoader{shipped, loaderImage("almalinux9"), false}},
		{"rhcos on rhel 8 has no headers: shipped modules", osRHCOS8, "", DRBDLoader{shipped, loaderImage("almalinux8"), false}},
		{"talos loads drbd itself", osTalos, "", DRBDLoader{Strategy: none}},
		{"flatcar compiles without /usr/src", osFlatcar, "", DRBDLoader{compile, loaderImage("noble"), false}},
		{"unknown os compiles with the fallback image", osUnknown, "", DRBDLoader{compile, loaderImage("noble"), true}},
		{"no osImage reported yet", "", "", DRBDLoader{compile, loaderImage("noble"), true}},
		{"explicit Auto is Auto", osRHCOS9, auto, DRBDLoader{shipped, loaderImage("almalinux9"), false}},
		// A configured strategy wins over the operating system's.
		{"Compile on rhcos (headers brought by a podTemplate patch)", osRHCOS9, compile, DRBDLoader{compile, loaderImage("almalinux9"), true}},
		{"Compile on flatcar still has no /usr/src", osFlatcar, compile, DRBDLoader{compile, loaderImage("noble"), false}},
		{"ShippedModules on ubuntu mounts no /usr/src", osUbuntu, shipped, DRBDLoader{shipped, loaderImage("jammy"), false}},
		{"None on ubuntu (module preloaded)", osUbuntu, none, DRBDLoader{Strategy: none}},
		{"Compile on talos", osTalos, compile, DRBDLoader{compile, loaderImage("noble"), true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ResolveDRBDLoader(tc.osImage, tc.configured, images.Default()); got != tc.want {
				t.Errorf("ResolveDRBDLoader(%q, %q) = %+v, want %+v", tc.osImage, tc.configured, got, tc.want)
			}
		})
	}
}

func TestResolveDRBDLoaderTakesOverriddenImages(t *testing.T) {
	imgs, err := images.FromEnv([]string{"RELATED_IMAGE_DRBD_MODULE_LOADER_ALMALINUX9=mirror.local/drbd9-rhel9:v9.2.11"})
	if err != nil {
		t.Fatal(err)
	}
	if got := ResolveDRBDLoader(osRHCOS9, "", imgs).Image; got != "mirror.local/drbd9-rhel9:v9.2.11" {
		t.Errorf("image = %s, want the RELATED_IMAGE override", got)
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
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{OSImage: osImage}}}
	objs, err := Satellite(cluster(spec), sat, node, images.Default())
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
		{"ShippedModules", linstorv1.DRBDModuleLoaderShippedModules, osRHCOS9, true, "shipped_modules", []string{"/lib/modules"}, false},
		{"None", linstorv1.DRBDModuleLoaderNone, osUbuntu, false, "", nil, false},
		{"Auto on talos", "", osTalos, false, "", nil, false},
		{"Auto on rhcos", "", osRHCOS8, true, "shipped_modules", []string{"/lib/modules"}, false},
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
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{OSImage: osRHCOS9}}}
	objs, err := Satellite(cluster(linstorv1.LinstorClusterSpec{}), sat, node, images.Default())
	if err != nil {
		t.Fatal(err)
	}
	init := objs[0].(*appsv1.DaemonSet).Spec.Template.Spec.InitContainers
	if len(init) != 2 || init[0].Name != names.DRBDLoaderContainer || init[0].Image != "mirror.local/drbd9-rhel9:v9.2.11" || init[0].Env[0].Value != "shipped_modules" {
		t.Errorf("init containers = %+v", init)
	}
}
