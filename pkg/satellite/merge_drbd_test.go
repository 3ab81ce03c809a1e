package satellite

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// The loader strategy starts from the cluster's satellite default; configurations that
// select the node override it in name order, and one that leaves it unset keeps it.
func TestDesiredDRBDModuleLoader(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"os": "talos"}}}
	loader := func(name string, sel map[string]string, l linstorv1.DRBDModuleLoader) linstorv1.LinstorSatelliteConfiguration {
		return cfg(name, sel, linstorv1.LinstorSatelliteConfigurationSpec{DRBDModuleLoader: l})
	}
	cases := []struct {
		name           string
		clusterDefault *linstorv1.SatelliteSpec
		configs        []linstorv1.LinstorSatelliteConfiguration
		want           linstorv1.DRBDModuleLoader
	}{
		{"nothing set", nil, nil, ""},
		{"cluster default", &linstorv1.SatelliteSpec{DRBDModuleLoader: linstorv1.DRBDModuleLoaderCompile}, nil, linstorv1.DRBDModuleLoaderCompile},
		{"configuration overrides the cluster",
			&linstorv1.SatelliteSpec{DRBDModuleLoader: linstorv1.DRBDModuleLoaderCompile},
			[]linstorv1.LinstorSatelliteConfiguration{loader("talos", map[string]string{"os": "talos"}, linstorv1.DRBDModuleLoaderNone)},
			linstorv1.DRBDModuleLoaderNone},
		{"a configuration for other nodes does not",
			&linstorv1.SatelliteSpec{DRBDModuleLoader: linstorv1.DRBDModuleLoaderCompile},
			[]linstorv1.LinstorSatelliteConfiguration{loader("rhcos", map[string]string{"os": "rhcos"}, linstorv1.DRBDModuleLoaderShippedModules)},
			linstorv1.DRBDModuleLoaderCompile},
		{"later name wins, unset keeps it",
			&linstorv1.SatelliteSpec{DRBDModuleLoader: linstorv1.DRBDModuleLoaderCompile},
			[]linstorv1.LinstorSatelliteConfiguration{
				loader("c-pools-only", nil, ""),
				loader("b-auto", nil, linstorv1.DRBDModuleLoaderAuto),
				loader("a-none", nil, linstorv1.DRBDModuleLoaderNone),
			},
			linstorv1.DRBDModuleLoaderAuto},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cluster := &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Name: "linstor"}, Spec: linstorv1.LinstorClusterSpec{Satellite: tc.clusterDefault}}
			d, err := Desired(cluster, tc.configs, node)
			got := d.Spec
			if err != nil {
				t.Fatal(err)
			}
			if got.DRBDModuleLoader != tc.want {
				t.Errorf("drbdModuleLoader = %q, want %q", got.DRBDModuleLoader, tc.want)
			}
		})
	}
}
