package render

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/images"
	"github.com/linstor-operator/linstor-operator/pkg/names"
)

// hasObject tells whether objs holds an object of that name.
func hasObject(objs Objects, name string) bool {
	return slices.ContainsFunc(objs, func(o client.Object) bool { return o.GetName() == name })
}

// satellitePod renders the satellite pod of a node with that osImage, for a default
// cluster.
func satellitePod(t *testing.T, osImage string) corev1.PodTemplateSpec {
	t.Helper()
	sat := &linstorv1.LinstorSatellite{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Namespace: "storage"}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{OSImage: osImage}}}
	objs, err := Satellite(cluster(linstorv1.LinstorClusterSpec{}), sat, node, withToolkit())
	if err != nil {
		t.Fatal(err)
	}
	return objs[0].(*appsv1.DaemonSet).Spec.Template
}

// mount is a container's mount as the node sees it.
type mount struct {
	hostPath string // the host path, or "configMap:<name>", "secret:<name>"
	typ      corev1.HostPathType
	readOnly bool
}

// mountsOf maps each mount path of the named container to what it mounts.
func mountsOf(t *testing.T, spec corev1.PodSpec, container string) map[string]mount {
	t.Helper()
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
		if c.Name != container {
			continue
		}
		out := map[string]mount{}
		for _, m := range c.VolumeMounts {
			v, ok := volumes[m.Name]
			if !ok {
				t.Fatalf("container %s mounts %s from volume %s, which the pod does not have", container, m.MountPath, m.Name)
			}
			switch {
			case v.HostPath != nil:
				out[m.MountPath] = mount{v.HostPath.Path, ptr.Deref(v.HostPath.Type, ""), m.ReadOnly}
			case v.ConfigMap != nil:
				out[m.MountPath] = mount{hostPath: "configMap:" + v.ConfigMap.Name, readOnly: m.ReadOnly}
			case v.Secret != nil:
				out[m.MountPath] = mount{hostPath: "secret:" + v.Secret.SecretName, readOnly: m.ReadOnly}
			case v.EmptyDir != nil:
				out[m.MountPath] = mount{hostPath: "emptyDir", readOnly: m.ReadOnly}
			default:
				out[m.MountPath] = mount{hostPath: "other:" + v.Name, readOnly: m.ReadOnly}
			}
		}
		return out
	}
	t.Fatalf("no container %s", container)
	return nil
}

func containerNames(cs []corev1.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

// The satellite pod has the guard, the reactor and every host mount LVM, udev and
// LINSTOR need, each with its host path and type; the operating system decides the
// guard (systemd) and where LVM keeps its backups.
func TestSatellitePodContainersAndMounts(t *testing.T) {
	dirOrCreate, dir, socket := corev1.HostPathDirectoryOrCreate, corev1.HostPathDirectory, corev1.HostPathSocket
	satelliteMounts := func(lvm string) map[string]mount {
		return map[string]mount{
			"/dev":                       {"/dev", dir, false},
			"/lib/modules":               {"/lib/modules", dir, true},
			"/var/lib/drbd":              {"/var/lib/drbd", dirOrCreate, false},
			"/var/lib/linstor-pools":     {"/var/lib/linstor-pools", dirOrCreate, false},
			"/var/lib/linstor.d":         {"/var/lib/linstor.d", dirOrCreate, false},
			"/var/log/linstor-satellite": {"/var/log/linstor-satellite", dirOrCreate, false},
			"/etc/lvm/archive":           {lvm + "/archive", dirOrCreate, false},
			"/etc/lvm/backup":            {lvm + "/backup", dirOrCreate, false},
			"/run/lock":                  {"/run/lock", dirOrCreate, false},
			"/run/udev":                  {"/run/udev", dirOrCreate, true},
			// Internal TLS, on by default.
			"/etc/linstor":         {hostPath: "configMap:" + names.SatelliteConfigName, readOnly: true},
			"/etc/linstor/ssl-pem": {hostPath: "secret:" + names.DefaultInternalTLSSecret, readOnly: true},
			"/etc/linstor/ssl":     {hostPath: "emptyDir"},
		}
	}
	guardMounts := map[string]mount{
		"/run/systemd/system":         {"/run/systemd/system", dir, false},
		"/run/drbd-shutdown-guard":    {"/run/drbd-shutdown-guard", dirOrCreate, false},
		"/run/dbus/system_bus_socket": {"/run/dbus/system_bus_socket", socket, false},
	}
	reactorMounts := map[string]mount{"/etc/drbd-reactor.d": {hostPath: "configMap:" + names.ReactorConfigName, readOnly: true}}
	cases := []struct {
		name, osImage string
		init          []string
		lvm           string
	}{
		{"ubuntu", osUbuntu, []string{names.DRBDLoaderContainer, names.ShutdownGuardContainer}, "/etc/lvm"},
		{"rhcos", osRHCOS9, []string{names.KernelHeadersContainer, names.DRBDLoaderContainer, names.ShutdownGuardContainer}, "/etc/lvm"},
		{"flatcar", osFlatcar, []string{names.DRBDLoaderContainer, names.ShutdownGuardContainer}, "/etc/lvm"},
		// No systemd to install a guard into; /etc is read-only, /var persists.
		{"talos", osTalos, nil, "/var/etc/lvm"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := satellitePod(t, tc.osImage).Spec
			if got := containerNames(spec.InitContainers); !slices.Equal(got, tc.init) {
				t.Errorf("init containers = %v, want %v", got, tc.init)
			}
			if got := containerNames(spec.Containers); !slices.Equal(got, []string{names.SatelliteComponent, names.ReactorContainer}) {
				t.Errorf("containers = %v, want the satellite and drbd-reactor", got)
			}
			for container, want := range map[string]map[string]mount{names.SatelliteComponent: satelliteMounts(tc.lvm), names.ReactorContainer: reactorMounts} {
				got := mountsOf(t, spec, container)
				for path, m := range want {
					if got[path] != m {
						t.Errorf("%s: mount %s = %+v, want %+v", container, path, got[path], m)
					}
				}
				for path := range got {
					if _, ok := want[path]; !ok {
						t.Errorf("%s: unexpected mount %s = %+v", container, path, got[path])
					}
				}
			}
			if slices.Contains(tc.init, names.ShutdownGuardContainer) {
				got := mountsOf(t, spec, names.ShutdownGuardContainer)
				if len(got) != len(guardMounts) {
					t.Errorf("guard mounts = %+v, want %+v", got, guardMounts)
				}
				for path, m := range guardMounts {
					if got[path] != m {
						t.Errorf("guard: mount %s = %+v, want %+v", path, got[path], m)
					}
				}
			}
			// Nothing mounts a volume the pod does not use, and no volume is left over.
			used := map[string]bool{}
			for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
				for _, m := range c.VolumeMounts {
					used[m.Name] = true
				}
			}
			for _, v := range spec.Volumes {
				if !used[v.Name] {
					t.Errorf("volume %s is mounted by no container", v.Name)
				}
			}
		})
	}
}

// Each container runs with the privilege it needs and no more: the guard privileged
// (systemd over D-Bus, SELinux), the reactor with no capability at all.
func TestSatellitePodSecurity(t *testing.T) {
	spec := satellitePod(t, osUbuntu).Spec
	for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
		sc := c.SecurityContext
		switch c.Name {
		case names.ShutdownGuardContainer:
			if !ptr.Deref(sc.Privileged, false) || !ptr.Deref(sc.ReadOnlyRootFilesystem, false) {
				t.Errorf("guard: %+v, want privileged with a read-only root", sc)
			}
			if c.Image != images.Default().Image(images.DRBDShutdownGuard) {
				t.Errorf("guard image %s, want the release's", c.Image)
			}
		case names.ReactorContainer:
			if ptr.Deref(sc.Privileged, false) || !ptr.Deref(sc.ReadOnlyRootFilesystem, false) || ptr.Deref(sc.AllowPrivilegeEscalation, true) ||
				sc.Capabilities == nil || len(sc.Capabilities.Add) != 0 || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
				t.Errorf("drbd-reactor: %+v, want no capability, no escalation, a read-only root", sc)
			}
			if c.Image != images.Default().Image(images.DRBDReactor) {
				t.Errorf("reactor image %s, want the release's", c.Image)
			}
			for _, m := range c.VolumeMounts {
				if !m.ReadOnly {
					t.Errorf("drbd-reactor mounts %s writable", m.MountPath)
				}
			}
			if c.ReadinessProbe != nil || c.LivenessProbe != nil {
				t.Error("drbd-reactor has a probe: metrics must never make the satellite unready or restart it")
			}
		}
	}
}

// The reactor's ConfigMap is what drbd-reactor's prometheus plugin reads: a *.toml
// snippet in the directory the image's main configuration includes, with one
// [[prometheus]] table, enums on, and the address of the port the pod declares.
func TestReactorConfig(t *testing.T) {
	c := cluster(linstorv1.LinstorClusterSpec{})
	var cm *corev1.ConfigMap
	for _, o := range SatelliteConfig(c) {
		if o.GetName() == names.ReactorConfigName {
			cm = o.(*corev1.ConfigMap)
		}
	}
	if cm == nil {
		t.Fatalf("SatelliteConfig renders no %s", names.ReactorConfigName)
	}
	if cm.Namespace != c.Namespace || cm.Labels[names.LabelCluster] != c.Name || cm.Labels[names.LabelManagedBy] != names.ManagedBy {
		t.Errorf("ConfigMap %s/%s labels %v: not pruned with the cluster", cm.Namespace, cm.Name, cm.Labels)
	}
	if len(cm.Data) != 1 || !strings.HasSuffix(names.ReactorConfigKey, ".toml") {
		t.Fatalf("data keys %v: drbd-reactor reads only *.toml snippets", cm.Data)
	}
	tables, err := parseTOMLTables(cm.Data[names.ReactorConfigKey])
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) != 1 || tables[0].name != "prometheus" {
		t.Fatalf("tables %+v, want one [[prometheus]]", tables)
	}
	kv := tables[0].values
	if kv["enums"] != "true" {
		t.Errorf("enums = %q, want true (the state metrics alerts match on)", kv["enums"])
	}
	addr, err := strconv.Unquote(kv["address"])
	if err != nil {
		t.Fatalf("address %s is not a TOML string: %v", kv["address"], err)
	}
	host, port, ok := strings.Cut(addr, ":")
	if !ok || host != "" {
		t.Errorf("address %q: want drbd-reactor's unspecified form \":<port>\" (IPv6 with an IPv4 fallback)", addr)
	}
	spec := satellitePod(t, osUbuntu).Spec
	var reactor corev1.Container
	for _, ct := range spec.Containers {
		if ct.Name == names.ReactorContainer {
			reactor = ct
		}
	}
	if len(reactor.Ports) != 1 || strconv.Itoa(int(reactor.Ports[0].ContainerPort)) != port || reactor.Ports[0].Name != names.ReactorMetricsPortName {
		t.Errorf("reactor ports %+v, want %s named %s", reactor.Ports, port, names.ReactorMetricsPortName)
	}
	if m := mountsOf(t, spec, names.ReactorContainer)[reactorSnippets]; m.hostPath != "configMap:"+cm.Name {
		t.Errorf("%s mounts %+v, want ConfigMap %s", reactorSnippets, m, cm.Name)
	}
}

type tomlTable struct {
	name   string
	values map[string]string
}

// parseTOMLTables reads the small subset of TOML the reactor snippet uses: arrays of
// tables and key = value lines. Anything else is an error.
func parseTOMLTables(doc string) ([]tomlTable, error) {
	var out []tomlTable
	for i, line := range strings.Split(doc, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "":
		case strings.HasPrefix(line, "[[") && strings.HasSuffix(line, "]]"):
			out = append(out, tomlTable{name: strings.TrimSpace(line[2 : len(line)-2]), values: map[string]string{}})
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || len(out) == 0 {
				return nil, fmt.Errorf("line %d %q: not a key of a table", i+1, line)
			}
			out[len(out)-1].values[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out, nil
}

// monitorSpec is the part of a Prometheus operator PodMonitor the test reads.
type monitorSpec struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Selector            metav1.LabelSelector `json:"selector"`
		PodMetricsEndpoints []struct {
			Port string `json:"port"`
		} `json:"podMetricsEndpoints"`
	} `json:"spec"`
}

// config/prometheus scrapes the reactor of every satellite pod, and nothing else: its
// PodMonitor's selector matches the satellite pod's labels and not another component's,
// and the port it scrapes is the reactor's.
func TestSatelliteMetricsScraped(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "config", "prometheus", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("config/prometheus: %v", err)
	}
	var monitors []monitorSpec
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(raw), "\n---\n") {
			var m monitorSpec
			if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if m.Kind == "PodMonitor" {
				monitors = append(monitors, m)
			}
		}
	}
	pod := satellitePod(t, osUbuntu)
	ports := map[string]string{}
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			ports[p.Name] = c.Name
		}
	}
	c := cluster(linstorv1.LinstorClusterSpec{})
	others := map[string]map[string]string{}
	for name, render := range map[string]func() (Objects, error){
		"controller": func() (Objects, error) { return Controller(c, images.Default()) },
		"csi":        func() (Objects, error) { return CSI(c, images.Default(), "http://linstor") },
		"ha":         func() (Objects, error) { return HAController(c, images.Default()) },
	} {
		objs, err := render()
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			switch w := o.(type) {
			case *appsv1.Deployment:
				others[name+"/"+w.Name] = w.Spec.Template.Labels
			case *appsv1.DaemonSet:
				others[name+"/"+w.Name] = w.Spec.Template.Labels
			}
		}
	}
	scraped := false
	for _, m := range monitors {
		sel, err := metav1.LabelSelectorAsSelector(&m.Spec.Selector)
		if err != nil {
			t.Fatalf("PodMonitor %s: %v", m.Metadata.Name, err)
		}
		if sel.Empty() || !sel.Matches(k8slabels.Set(pod.Labels)) {
			continue
		}
		for name, l := range others {
			if sel.Matches(k8slabels.Set(l)) {
				t.Errorf("PodMonitor %s also selects the %s pods", m.Metadata.Name, name)
			}
		}
		for _, e := range m.Spec.PodMetricsEndpoints {
			if ports[e.Port] != names.ReactorContainer {
				t.Errorf("PodMonitor %s scrapes port %q, which is no port of drbd-reactor (ports %v)", m.Metadata.Name, e.Port, ports)
			}
			if e.Port == names.ReactorMetricsPortName {
				scraped = true
			}
		}
	}
	if !scraped {
		t.Errorf("no PodMonitor in config/prometheus scrapes the satellite pods' %s port (labels %v)", names.ReactorMetricsPortName, pod.Labels)
	}
}

// The satellite pod's containers, images, privileges, ports and mounts, one line
// each, as a golden file: any change to what the satellite runs with on the host shows
// in review as a diff of testdata/satellite-pod-listing.txt.
func TestSatellitePodListing(t *testing.T) {
	goldenFile(t, "satellite-pod-listing.txt", []byte(podListing(satellitePod(t, osUbuntu).Spec)))
}

func podListing(spec corev1.PodSpec) string {
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	var b strings.Builder
	list := func(kind string, cs []corev1.Container) {
		for _, c := range cs {
			sc := "-"
			if s := c.SecurityContext; s != nil {
				switch {
				case ptr.Deref(s.Privileged, false):
					sc = "privileged"
				case s.Capabilities != nil:
					sc = fmt.Sprintf("caps add %v drop %v", s.Capabilities.Add, s.Capabilities.Drop)
				}
			}
			var ports []string
			for _, p := range c.Ports {
				ports = append(ports, fmt.Sprintf("%s/%d", p.Name, p.ContainerPort))
			}
			fmt.Fprintf(&b, "%s %s (%s) [%s] ports %v\n", kind, c.Name, c.Image, sc, ports)
			for _, m := range c.VolumeMounts {
				v := volumes[m.Name]
				src := v.Name
				switch {
				case v.HostPath != nil:
					src = fmt.Sprintf("host %s (%s)", v.HostPath.Path, ptr.Deref(v.HostPath.Type, ""))
				case v.ConfigMap != nil:
					src = "ConfigMap " + v.ConfigMap.Name
				case v.Secret != nil:
					src = "Secret " + v.Secret.SecretName
				}
				ro := ""
				if m.ReadOnly {
					ro = " ro"
				}
				fmt.Fprintf(&b, "    %-30s <- %s%s\n", m.MountPath, src, ro)
			}
		}
	}
	list("init", spec.InitContainers)
	list("container", spec.Containers)
	for _, t := range spec.Tolerations {
		effect := string(t.Effect)
		if effect == "" {
			effect = "any effect"
		}
		fmt.Fprintf(&b, "toleration %q %s %q, %s\n", t.Key, t.Operator, t.Value, effect)
	}
	return b.String()
}

// A host where the guard cannot run (no systemd, no D-Bus) or an admin who wants no
// metrics sidecar drops them with a podTemplate patch: removing a container and its
// host paths adds no privilege, so the default policy accepts it, and the pod renders
// without them.
func TestSatellitePatchRemovesGuardAndReactor(t *testing.T) {
	patch := &runtime.RawExtension{Raw: []byte(`{"spec":{
		"initContainers":[{"name":"drbd-shutdown-guard","$patch":"delete"}],
		"containers":[{"name":"drbd-reactor","$patch":"delete"}],
		"volumes":[{"name":"run-systemd-system","$patch":"delete"},{"name":"run-drbd-shutdown-guard","$patch":"delete"},
			{"name":"systemd-bus-socket","$patch":"delete"},{"name":"reactor-config","$patch":"delete"}]}}`)}
	cfg := &linstorv1.LinstorSatelliteConfiguration{Spec: linstorv1.LinstorSatelliteConfigurationSpec{PodTemplate: patch}}
	if errs := SatelliteConfigurationPodTemplateErrors(nil, cfg, images.Default()); len(errs) != 0 {
		t.Fatalf("the removal is refused: %v", errs)
	}
	sat := &linstorv1.LinstorSatellite{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Namespace: "storage"}, Spec: linstorv1.LinstorSatelliteSpec{PodTemplate: patch}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{OSImage: osUbuntu}}}
	objs, err := Satellite(cluster(linstorv1.LinstorClusterSpec{}), sat, node, images.Default())
	if err != nil {
		t.Fatal(err)
	}
	spec := objs[0].(*appsv1.DaemonSet).Spec.Template.Spec
	if got := containerNames(spec.InitContainers); !slices.Equal(got, []string{names.DRBDLoaderContainer}) {
		t.Errorf("init containers = %v, want only the loader", got)
	}
	if got := containerNames(spec.Containers); !slices.Equal(got, []string{names.SatelliteComponent}) {
		t.Errorf("containers = %v, want only the satellite", got)
	}
	for _, v := range spec.Volumes {
		if slices.Contains([]string{"run-systemd-system", "run-drbd-shutdown-guard", "systemd-bus-socket", "reactor-config"}, v.Name) {
			t.Errorf("volume %s left", v.Name)
		}
	}
}
