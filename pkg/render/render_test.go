package render

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/linstor-operator/linstor-operator/pkg/clustertls"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/images"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func cluster(spec linstorv1.LinstorClusterSpec) *linstorv1.LinstorCluster {
	return &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Name: "linstor", Namespace: "storage"}, Spec: spec}
}

func golden(t *testing.T, name string, objs Objects) {
	t.Helper()
	var buf bytes.Buffer
	for _, o := range objs {
		out, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		buf.WriteString("---\n")
		buf.Write(out)
	}
	goldenFile(t, name+".yaml", buf.Bytes())
}

// goldenFile compares got with testdata/file (rewritten with -update).
func goldenFile(t *testing.T, file string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", file)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./pkg/render -update)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs from the golden file; if intended, run go test ./pkg/render -update and review the diff\n--- got:\n%s", path, got)
	}
}

func TestControllerGolden(t *testing.T) {
	cases := []struct {
		name string
		spec linstorv1.LinstorClusterSpec
	}{
		{"controller-default", linstorv1.LinstorClusterSpec{}},
		{"controller-external-db-ha", linstorv1.LinstorClusterSpec{
			Controller: &linstorv1.ControllerSpec{
				ComponentSpec: linstorv1.ComponentSpec{
					Image:        "mirror.local/piraeus-server:v1.33.3",
					Resources:    &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}},
					NodeSelector: map[string]string{"node-role.kubernetes.io/control-plane": ""},
					Tolerations:  []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
					PodTemplate:  &runtime.RawExtension{Raw: []byte(`{"metadata":{"annotations":{"backup.velero.io/backup-volumes":""}},"spec":{"containers":[{"name":"linstor-controller","env":[{"name":"JAVA_OPTS","value":"-Xmx2g"}]}]}}`)},
				},
				Replicas: ptr.To[int32](3),
			},
			Database: &linstorv1.DatabaseSpec{Type: linstorv1.DatabaseExternal, ConnectionURL: "jdbc:postgresql://db.storage.svc/linstor",
				ClientCertificateSecretRef: &linstorv1.LocalSecretReference{Name: "db-client"}},
		}},
		{"controller-tls", linstorv1.LinstorClusterSpec{TLS: &linstorv1.TLSSpec{
			Internal: &linstorv1.TLSConfig{Mode: linstorv1.TLSGenerated},
			API:      &linstorv1.TLSConfig{Mode: linstorv1.TLSSecret, SecretName: "my-api", ClientSecretName: "my-client"},
		}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Controller(cluster(tc.spec), images.Default())
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name, objs)
		})
	}
}

func TestControllerNotRenderedForExternalOrDisabled(t *testing.T) {
	for name, spec := range map[string]linstorv1.LinstorClusterSpec{
		"external": {ExternalController: &linstorv1.ExternalControllerSpec{URL: "http://linstor.example.com:3370"}},
		"disabled": {Controller: &linstorv1.ControllerSpec{ComponentSpec: linstorv1.ComponentSpec{Enabled: ptr.To(false)}}},
	} {
		objs, err := Controller(cluster(spec), images.Default())
		if err != nil || len(objs) != 0 {
			t.Errorf("%s: got %d objects, err %v; want none", name, len(objs), err)
		}
	}
}

func TestControllerBadPatchIsAnError(t *testing.T) {
	_, err := Controller(cluster(linstorv1.LinstorClusterSpec{Controller: &linstorv1.ControllerSpec{
		ComponentSpec: linstorv1.ComponentSpec{PodTemplate: &runtime.RawExtension{Raw: []byte(`{"spec":{"containers":"nope"}}`)}}}}), images.Default())
	if err == nil {
		t.Fatal("a malformed patch rendered without error")
	}
}

func TestCSIAndHAGolden(t *testing.T) {
	c := cluster(linstorv1.LinstorClusterSpec{CSI: &linstorv1.CSISpec{
		Node: &linstorv1.ComponentSpec{Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}},
	}})
	csi, err := CSI(c, images.Default(), clustertls.ServiceURL(c))
	if err != nil {
		t.Fatal(err)
	}
	ha, err := HAController(c, images.Default())
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "csi-ha-default", append(csi, ha...))
}

func TestCSIAndHADisabled(t *testing.T) {
	c := cluster(linstorv1.LinstorClusterSpec{
		CSI:                        &linstorv1.CSISpec{Enabled: ptr.To(false)},
		HighAvailabilityController: &linstorv1.ComponentSpec{Enabled: ptr.To(false)},
	})
	csi, _ := CSI(c, images.Default(), "")
	ha, _ := HAController(c, images.Default())
	if len(csi)+len(ha) != 0 {
		t.Errorf("disabled components rendered %d objects", len(csi)+len(ha))
	}
}

func TestSatelliteGolden(t *testing.T) {
	c := cluster(linstorv1.LinstorClusterSpec{Satellite: &linstorv1.SatelliteSpec{ComponentSpec: linstorv1.ComponentSpec{
		Tolerations: []corev1.Toleration{{Key: "storage", Operator: corev1.TolerationOpExists}},
		PodTemplate: &runtime.RawExtension{Raw: []byte(`{"spec":{"containers":[{"name":"linstor-satellite","env":[{"name":"TZ","value":"UTC"}]}]}}`)},
	}}})
	sat := &linstorv1.LinstorSatellite{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Namespace: "storage"},
		Spec: linstorv1.LinstorSatelliteSpec{PodTemplate: &runtime.RawExtension{Raw: []byte(`{"metadata":{"annotations":{"rack":"7"}}}`)}}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"node.openshift.io/os_id": "rhcos"}},
		Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{OSImage: "Red Hat Enterprise Linux CoreOS 416.94.202410211619-0", KernelVersion: "5.14.0-427.40.1.el9_4.x86_64"}}}
	toolkit := images.DriverToolkit{Images: map[string]string{"416.94.202410211619-0": "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:1328c4e7944b6d8eda40a8f789471a1aec63abda75ac1199ce098b965ec16709"}}
	objs, err := Satellite(c, sat, node, images.Default().WithDriverToolkit(toolkit))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "satellite-rhcos", objs)
}

func TestWithEnvAddsProxyWithoutOverriding(t *testing.T) {
	objs, err := Controller(cluster(linstorv1.LinstorClusterSpec{Controller: &linstorv1.ControllerSpec{ComponentSpec: linstorv1.ComponentSpec{
		PodTemplate: &runtime.RawExtension{Raw: []byte(`{"spec":{"containers":[{"name":"linstor-controller","env":[{"name":"NO_PROXY","value":"custom"}]}]}}`)},
	}}}), images.Default())
	if err != nil {
		t.Fatal(err)
	}
	WithEnv(objs, []corev1.EnvVar{{Name: "HTTPS_PROXY", Value: "http://proxy:3128"}, {Name: "NO_PROXY", Value: ".svc"}})
	var env map[string]string
	for _, o := range objs {
		if d, ok := o.(*appsv1.Deployment); ok {
			env = map[string]string{}
			for _, e := range d.Spec.Template.Spec.Containers[0].Env {
				env[e.Name] = e.Value
			}
		}
	}
	if env["HTTPS_PROXY"] != "http://proxy:3128" || env["NO_PROXY"] != "custom" {
		t.Errorf("env = %v, want the proxy added and the user's NO_PROXY kept", env)
	}
}

func TestSatelliteWithInternalTLS(t *testing.T) {
	c := cluster(linstorv1.LinstorClusterSpec{TLS: &linstorv1.TLSSpec{Internal: &linstorv1.TLSConfig{Mode: linstorv1.TLSSecret, SecretName: "sat-tls"}}})
	sat := &linstorv1.LinstorSatellite{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Namespace: "storage"}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}
	objs, err := Satellite(c, sat, node, images.Default())
	if err != nil {
		t.Fatal(err)
	}
	objs = WithSecretFingerprints(objs, map[string]string{"sat-tls": "abc", "unrelated": "def"})
	golden(t, "satellite-tls", append(objs, SatelliteConfig(c)...))
	if hasObject(SatelliteConfig(cluster(linstorv1.LinstorClusterSpec{TLS: &linstorv1.TLSSpec{Internal: &linstorv1.TLSConfig{Mode: linstorv1.TLSDisabled}}})), names.SatelliteConfigName) {
		t.Error("a satellite configuration was rendered without internal TLS")
	}
}

func TestFencingStopsOnlyTheCSIController(t *testing.T) {
	cluster := &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Name: "linstor", Namespace: "linstor"}}
	objs, err := CSI(cluster, images.Default(), "http://linstor:3370")
	if err != nil {
		t.Fatal(err)
	}
	fenced := 0
	for _, o := range WithCSIFenced(objs) {
		switch o := o.(type) {
		case *appsv1.Deployment:
			if o.Name != names.CSIControllerName || *o.Spec.Replicas != 0 {
				t.Errorf("deployment %s replicas %v", o.Name, o.Spec.Replicas)
			}
			fenced++
		case *appsv1.DaemonSet:
			if o.Spec.Template.Spec.Containers == nil {
				t.Errorf("the CSI node plugin must keep running: %s", o.Name)
			}
		}
	}
	if fenced != 1 {
		t.Fatalf("fenced %d CSI controllers, want 1", fenced)
	}
}
