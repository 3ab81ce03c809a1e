package v1alpha1

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// drbdModuleLoader exists only in v1: a read and write through v1alpha1 keeps it on all
// three kinds, also when the v1alpha1 edit touches the satellite's own fields.
func TestDRBDModuleLoaderSurvivesV1alpha1(t *testing.T) {
	t.Run("LinstorCluster", func(t *testing.T) {
		in := &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: linstorv1.LinstorClusterSpec{
			Satellite: &linstorv1.SatelliteSpec{DRBDModuleLoader: linstorv1.DRBDModuleLoaderNone},
		}}
		out := roundTripEdit(t, in, &LinstorCluster{}, func(s *LinstorCluster) { s.Spec.SatelliteImage = "mirror.local/satellite" },
			&linstorv1.LinstorCluster{})
		if out.Spec.Satellite == nil || out.Spec.Satellite.DRBDModuleLoader != linstorv1.DRBDModuleLoaderNone || out.Spec.Satellite.Image != "mirror.local/satellite" {
			t.Errorf("satellite = %+v, want drbdModuleLoader None kept and the image edited", out.Spec.Satellite)
		}
	})
	t.Run("LinstorSatelliteConfiguration", func(t *testing.T) {
		in := &linstorv1.LinstorSatelliteConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "rhcos"}, Spec: linstorv1.LinstorSatelliteConfigurationSpec{
			NodeSelector:     map[string]string{"node.openshift.io/os_id": "rhcos"},
			DRBDModuleLoader: linstorv1.DRBDModuleLoaderShippedModules,
		}}
		out := roundTripEdit(t, in, &LinstorSatelliteConfiguration{}, func(s *LinstorSatelliteConfiguration) {
			s.Spec.NodeProperties = map[string]string{"Aux/os": "rhcos"}
		}, &linstorv1.LinstorSatelliteConfiguration{})
		if out.Spec.DRBDModuleLoader != linstorv1.DRBDModuleLoaderShippedModules || len(out.Spec.Properties) != 1 {
			t.Errorf("spec = %+v, want drbdModuleLoader ShippedModules kept and the property added", out.Spec)
		}
	})
	t.Run("LinstorSatellite", func(t *testing.T) {
		in := &linstorv1.LinstorSatellite{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: linstorv1.LinstorSatelliteSpec{
			ClusterRef:       linstorv1.ClusterReference{Name: "c"},
			DRBDModuleLoader: linstorv1.DRBDModuleLoaderCompile,
		}}
		out := roundTripEdit(t, in, &LinstorSatellite{}, func(*LinstorSatellite) {}, &linstorv1.LinstorSatellite{})
		if out.Spec.DRBDModuleLoader != linstorv1.DRBDModuleLoaderCompile {
			t.Errorf("drbdModuleLoader = %q, want Compile", out.Spec.DRBDModuleLoader)
		}
	})
}
