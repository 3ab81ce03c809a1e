package v1alpha1

import (
	"testing"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

func TestFieldPathsNameWhatTheUserWrote(t *testing.T) {
	cluster := &linstorv1.LinstorClusterSpec{
		Properties: []linstorv1.Property{{Name: "Aux/a"}, {Name: "Aux/b c"}},
		Database:   &linstorv1.DatabaseSpec{Type: linstorv1.DatabaseK8s, ClientCertificateSecretRef: &linstorv1.LocalSecretReference{Name: "x"}},
		TLS:        &linstorv1.TLSSpec{Internal: &linstorv1.TLSConfig{Mode: linstorv1.TLSSecret, SecretName: "s"}},
	}
	pools := []linstorv1.StoragePool{
		{Name: "thin1", LvmThinPool: &linstorv1.LvmThinPool{}},
		{Name: "files", FilePool: &linstorv1.FilePool{}}, // v1 only
		{Name: "fat", LvmPool: &linstorv1.LvmPool{}, Source: &linstorv1.StoragePoolSource{HostDevices: []string{"/dev/a", "/dev/b"}}},
		{Name: "thin2", LvmThinPool: &linstorv1.LvmThinPool{}},
	}
	config := &linstorv1.LinstorSatelliteConfigurationSpec{
		StoragePools: pools,
		Properties: []linstorv1.NodeProperty{{Name: "Aux/lit"}, {Name: "Aux/from", ValueFrom: &linstorv1.NodePropertySource{NodeFieldRef: "metadata.name"}},
			{Name: "Aux/many/", ExpandFrom: &linstorv1.NodePropertyExpansion{NodeFieldRef: "metadata.labels['x/*']", NameTemplate: "$1"}}},
	}
	satellite := &linstorv1.LinstorSatelliteSpec{StoragePools: pools, Properties: []linstorv1.Property{{Name: "Aux/x"}}}
	for _, tc := range []struct {
		name, path, want string
		mapped           bool
		fn               func(string) (string, bool)
	}{
		{"controller property", "spec.properties[1].name", "spec.controllerProperties[Aux/b c]", true, func(p string) (string, bool) { return ClusterFieldPath(cluster, p) }},
		{"certificate with the k8s database", "spec.database", "spec.dbCertSecret", true, func(p string) (string, bool) { return ClusterFieldPath(cluster, p) }},
		{"replicas", "spec.controller.replicas", "spec.controllerReplicas", true, func(p string) (string, bool) { return ClusterFieldPath(cluster, p) }},
		{"internal TLS secret", "spec.tls.internal.secretName", "spec.sslSecret", true, func(p string) (string, bool) { return ClusterFieldPath(cluster, p) }},
		{"v1-only version", "spec.version", "", false, func(p string) (string, bool) { return ClusterFieldPath(cluster, p) }},
		{"API TLS is v1 only", "spec.tls.api.mode", "", false, func(p string) (string, bool) { return ClusterFieldPath(cluster, p) }},
		{"second thin pool", "spec.storagePools[3].name", "spec.lvmThinPools[1].name", true, func(p string) (string, bool) { return SatelliteConfigurationFieldPath(config, p) }},
		{"device of the thick pool", "spec.storagePools[2].source.hostDevices[1]", "spec.lvmPools[0].devicePaths[1]", true, func(p string) (string, bool) { return SatelliteConfigurationFieldPath(config, p) }},
		{"file pool is v1 only", "spec.storagePools[1].name", "", false, func(p string) (string, bool) { return SatelliteConfigurationFieldPath(config, p) }},
		{"pool properties are v1 only", "spec.storagePools[0].properties[0].name", "", false, func(p string) (string, bool) { return SatelliteConfigurationFieldPath(config, p) }},
		{"literal node property", "spec.properties[0].value", "spec.nodeProperties[Aux/lit]", true, func(p string) (string, bool) { return SatelliteConfigurationFieldPath(config, p) }},
		{"valueFrom is v1 only", "spec.properties[1].valueFrom", "", false, func(p string) (string, bool) { return SatelliteConfigurationFieldPath(config, p) }},
		{"expandFrom is v1 only", "spec.properties[2].name", "", false, func(p string) (string, bool) { return SatelliteConfigurationFieldPath(config, p) }},
		{"cluster name", "spec.clusterRef.name", "spec.clusterName", true, func(p string) (string, bool) { return SatelliteFieldPath(satellite, p) }},
		{"satellite pool volume group", "spec.storagePools[0].lvmThinPool.volumeGroup", "spec.lvmThinPools[0].volumeGroup", true, func(p string) (string, bool) { return SatelliteFieldPath(satellite, p) }},
		{"index out of range", "spec.storagePools[9].name", "", false, func(p string) (string, bool) { return SatelliteFieldPath(satellite, p) }},
	} {
		got, ok := tc.fn(tc.path)
		if ok != tc.mapped || got != tc.want {
			t.Errorf("%s: %s -> %q, %v; want %q, %v", tc.name, tc.path, got, ok, tc.want, tc.mapped)
		}
	}
}
