package v1alpha1

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	lossless "github.com/linstor-operator/linstor-operator/pkg/conversion"
)

// roundTripEdit reads hub through v1alpha1, applies edit, and writes it back.
func roundTripEdit[H hub, S spoke](t *testing.T, in H, read S, edit func(S), out H) H {
	t.Helper()
	if err := read.ConvertFrom(in); err != nil {
		t.Fatal(err)
	}
	read = viaJSON(t, read, read)
	edit(read)
	if err := read.ConvertTo(out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestEditThroughV1alpha1KeepsV1OnlyFields(t *testing.T) {
	t.Run("LinstorCluster", func(t *testing.T) {
		in := &linstorv1.LinstorCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "c"},
			Spec: linstorv1.LinstorClusterSpec{
				Controller: &linstorv1.ControllerSpec{ComponentSpec: linstorv1.ComponentSpec{
					Image:       "old",
					Resources:   &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}},
					Tolerations: []corev1.Toleration{{Key: "storage", Operator: corev1.TolerationOpExists}},
				}},
				CSI:        &linstorv1.CSISpec{Enabled: ptr.To(true), Node: &linstorv1.ComponentSpec{NodeSelector: map[string]string{"csi": "yes"}}},
				TLS:        &linstorv1.TLSSpec{API: &linstorv1.TLSConfig{Mode: linstorv1.TLSGenerated}},
				Properties: []linstorv1.Property{{Name: "b", Value: "2"}, {Name: "a", Value: "1"}},
				Version:    "1.33.3",
				Upgrade:    &linstorv1.UpgradeSpec{Policy: linstorv1.UpgradeManual},
				// Security: an edit through v1alpha1 must not reset it to the default.
				PodTemplatePolicy: linstorv1.PodTemplateAllowPrivileged,
			},
		}
		out := roundTripEdit(t, in, &LinstorCluster{}, func(s *LinstorCluster) {
			s.Spec.ControllerImage = "new"
			s.Spec.DisableCSI = true
			s.Spec.ControllerProperties["c"] = "3"
		}, &linstorv1.LinstorCluster{})

		if out.Spec.Controller.Image != "new" {
			t.Errorf("controller image = %q, want the edit", out.Spec.Controller.Image)
		}
		if out.Spec.Controller.Resources == nil || len(out.Spec.Controller.Tolerations) != 1 {
			t.Errorf("controller resources/tolerations lost: %+v", out.Spec.Controller)
		}
		if out.Spec.CSI.Enabled == nil || *out.Spec.CSI.Enabled || out.Spec.CSI.Node == nil {
			t.Errorf("csi = %+v, want disabled with node settings kept", out.Spec.CSI)
		}
		if out.Spec.TLS == nil || out.Spec.TLS.API == nil || out.Spec.Version != "1.33.3" || out.Spec.Upgrade == nil {
			t.Errorf("v1-only fields lost: tls=%+v version=%q upgrade=%+v", out.Spec.TLS, out.Spec.Version, out.Spec.Upgrade)
		}
		if out.Spec.PodTemplatePolicy != linstorv1.PodTemplateAllowPrivileged {
			t.Errorf("podTemplatePolicy = %q, want the v1 value kept", out.Spec.PodTemplatePolicy)
		}
		want := []linstorv1.Property{{Name: "b", Value: "2"}, {Name: "a", Value: "1"}, {Name: "c", Value: "3"}}
		if same, _ := lossless.SameJSON(out.Spec.Properties, want); !same {
			t.Errorf("properties = %+v, want kept order plus the new one %+v", out.Spec.Properties, want)
		}
		if _, ok := out.Annotations[lossless.DataAnnotation]; ok {
			t.Error("conversion annotation leaked into the hub object")
		}
	})

	t.Run("LinstorSatelliteConfiguration", func(t *testing.T) {
		in := &linstorv1.LinstorSatelliteConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "s"},
			Spec: linstorv1.LinstorSatelliteConfigurationSpec{
				StoragePools: []linstorv1.StoragePool{
					{Name: "thin", LvmThinPool: &linstorv1.LvmThinPool{}, Source: &linstorv1.StoragePoolSource{HostDevices: []string{"/dev/vdb"}},
						Properties: []linstorv1.Property{{Name: "Aux/tier", Value: "fast"}}},
					{Name: "files", FilePool: &linstorv1.FilePool{Directory: "/srv"}},
				},
				Properties: []linstorv1.NodeProperty{
					{Name: "Aux/rack", ValueFrom: &linstorv1.NodePropertySource{NodeFieldRef: "metadata.labels['rack']"}},
					{Name: "Aux/x", Value: "1"},
				},
				NetInterfaces:  []linstorv1.NetInterface{{Name: "data", CIDR: "10.0.0.0/24", Active: true}},
				DeletionPolicy: linstorv1.DeletionEvacuate,
			},
		}
		out := roundTripEdit(t, in, &LinstorSatelliteConfiguration{}, func(s *LinstorSatelliteConfiguration) {
			s.Spec.LvmThinPools[0].DevicePaths = []string{"/dev/vdb", "/dev/vdc"}
			s.Spec.LvmPools = append(s.Spec.LvmPools, LvmPool{Name: "thick", VolumeGroup: "vg"})
			delete(s.Spec.NodeProperties, "Aux/x")
		}, &linstorv1.LinstorSatelliteConfiguration{})

		pools := map[string]linstorv1.StoragePool{}
		for _, p := range out.Spec.StoragePools {
			pools[p.Name] = p
		}
		if p := pools["thin"]; len(p.Source.HostDevices) != 2 || len(p.Properties) != 1 {
			t.Errorf("thin pool = %+v, want the new devices and its kept properties", p)
		}
		if p, ok := pools["files"]; !ok || p.FilePool == nil {
			t.Error("file pool (v1 only) lost")
		}
		if p, ok := pools["thick"]; !ok || p.LvmPool == nil || p.LvmPool.VolumeGroup != "vg" {
			t.Error("pool added through v1alpha1 missing")
		}
		if len(out.Spec.Properties) != 1 || out.Spec.Properties[0].ValueFrom == nil {
			t.Errorf("properties = %+v, want only the valueFrom one", out.Spec.Properties)
		}
		if len(out.Spec.NetInterfaces) != 1 || out.Spec.DeletionPolicy != linstorv1.DeletionEvacuate {
			t.Errorf("v1-only fields lost: %+v", out.Spec)
		}
	})

	t.Run("LinstorSatellite status written through v1alpha1", func(t *testing.T) {
		in := &linstorv1.LinstorSatellite{
			Spec: linstorv1.LinstorSatelliteSpec{ClusterRef: linstorv1.ClusterReference{Name: "c"}},
			Status: linstorv1.LinstorSatelliteStatus{ConnectionStatus: "ONLINE", Version: "1.33.3",
				StoragePools: []linstorv1.StoragePoolStatus{{Name: "thin", ProviderKind: "LVM_THIN"}}},
		}
		out := roundTripEdit(t, in, &LinstorSatellite{}, func(s *LinstorSatellite) {
			s.Status.ConnectionStatus = "OFFLINE"
		}, &linstorv1.LinstorSatellite{})
		if out.Status.ConnectionStatus != "OFFLINE" || out.Status.Version != "1.33.3" || len(out.Status.StoragePools) != 1 {
			t.Errorf("status = %+v, want the edit and the v1-only fields", out.Status)
		}
	})
}

func TestNoAnnotationWhenV1alpha1ExpressesEverything(t *testing.T) {
	in := &linstorv1.LinstorCluster{Spec: linstorv1.LinstorClusterSpec{
		Controller: &linstorv1.ControllerSpec{ComponentSpec: linstorv1.ComponentSpec{Image: "img"}},
		Database:   &linstorv1.DatabaseSpec{Type: linstorv1.DatabaseExternal, ConnectionURL: "jdbc:postgresql://db/linstor"},
	}}
	out := &LinstorCluster{}
	if err := out.ConvertFrom(in); err != nil {
		t.Fatal(err)
	}
	if len(out.Annotations) != 0 {
		t.Errorf("annotations = %v, want none", out.Annotations)
	}
	if out.Spec.DBConnectionURL != "jdbc:postgresql://db/linstor" || out.Spec.ControllerImage != "img" {
		t.Errorf("spoke = %+v", out.Spec)
	}
}

// The parity fields of v1 have no v1alpha1 equivalent: an edit through v1alpha1 keeps
// them, and a property read from the node (expandFrom, like valueFrom) never shows up
// in v1alpha1 as a literal with an empty value.
func TestParityFieldsSurviveV1alpha1(t *testing.T) {
	expand := linstorv1.NodeProperty{Name: "Aux/topology/", ExpandFrom: &linstorv1.NodePropertyExpansion{NodeFieldRef: "metadata.labels['topology.example.com/*']", NameTemplate: "$1"}}
	cfg := &linstorv1.LinstorSatelliteConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "s"},
		Spec: linstorv1.LinstorSatelliteConfigurationSpec{
			Properties: []linstorv1.NodeProperty{{Name: "Aux/x", Value: "1"}, expand},
			IPFamilies: []linstorv1.IPFamily{linstorv1.IPv6, linstorv1.IPv4},
			Patches:    []linstorv1.Patch{{Patch: "spec: {template: {spec: {hostNetwork: true}}}"}},
		},
	}
	read := &LinstorSatelliteConfiguration{}
	if err := read.ConvertFrom(cfg); err != nil {
		t.Fatal(err)
	}
	if _, shown := read.Spec.NodeProperties["Aux/topology/"]; shown || read.Spec.NodeProperties["Aux/x"] != "1" {
		t.Fatalf("v1alpha1 nodeProperties = %v, want only the literal", read.Spec.NodeProperties)
	}

	out := roundTripEdit(t, cfg, &LinstorSatelliteConfiguration{}, func(s *LinstorSatelliteConfiguration) {
		s.Spec.NodeProperties["Aux/y"] = "2"
		s.Spec.NodeSelector = map[string]string{"a": "b"}
	}, &linstorv1.LinstorSatelliteConfiguration{})
	want := []linstorv1.NodeProperty{{Name: "Aux/x", Value: "1"}, {Name: "Aux/y", Value: "2"}, expand}
	if same, _ := lossless.SameJSON(out.Spec.Properties, want); !same {
		t.Errorf("properties = %+v, want %+v", out.Spec.Properties, want)
	}
	if len(out.Spec.IPFamilies) != 2 || len(out.Spec.Patches) != 1 || out.Spec.NodeSelector["a"] != "b" {
		t.Errorf("spec = %+v, want the edit and the v1-only ipFamilies and patches", out.Spec)
	}

	// A literal of the expansion's name written through v1alpha1 replaces it: the list
	// is keyed by name, so keeping both would be refused.
	out = roundTripEdit(t, cfg, &LinstorSatelliteConfiguration{}, func(s *LinstorSatelliteConfiguration) {
		s.Spec.NodeProperties["Aux/topology/"] = "flat"
	}, &linstorv1.LinstorSatelliteConfiguration{})
	want = []linstorv1.NodeProperty{{Name: "Aux/topology/", Value: "flat"}, {Name: "Aux/x", Value: "1"}}
	if same, _ := lossless.SameJSON(out.Spec.Properties, want); !same {
		t.Errorf("properties = %+v, want %+v", out.Spec.Properties, want)
	}

	cluster := &linstorv1.LinstorCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "c"},
		Spec: linstorv1.LinstorClusterSpec{
			NodeAffinity: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "storage", Operator: corev1.NodeSelectorOpExists}}}}},
			Satellite: &linstorv1.SatelliteSpec{ComponentSpec: linstorv1.ComponentSpec{Image: "sat", Patches: []linstorv1.Patch{{Patch: "{}"}}}},
		},
	}
	outCluster := roundTripEdit(t, cluster, &LinstorCluster{}, func(s *LinstorCluster) {
		s.Spec.SatelliteImage = "sat2"
	}, &linstorv1.LinstorCluster{})
	if outCluster.Spec.NodeAffinity == nil || outCluster.Spec.Satellite.Image != "sat2" || len(outCluster.Spec.Satellite.Patches) != 1 {
		t.Errorf("spec = %+v, want the edit, nodeAffinity and satellite patches", outCluster.Spec)
	}
}
