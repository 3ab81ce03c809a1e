package satellite

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

func cfg(name string, sel map[string]string, spec linstorv1.LinstorSatelliteConfigurationSpec) linstorv1.LinstorSatelliteConfiguration {
	spec.NodeSelector = sel
	return linstorv1.LinstorSatelliteConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
}

func TestDesired(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"storage": "ssd", "zone": "a"}, Annotations: map[string]string{"rack": "r7"}}}
	cluster := &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Name: "linstor"}}
	thin := linstorv1.StoragePool{Name: "thin", LvmThinPool: &linstorv1.LvmThinPool{}}
	thinBig := linstorv1.StoragePool{Name: "thin", LvmThinPool: &linstorv1.LvmThinPool{VolumeGroup: "big"}}
	file := linstorv1.StoragePool{Name: "file", FilePool: &linstorv1.FilePool{}}

	cases := []struct {
		name     string
		selector map[string]string
		configs  []linstorv1.LinstorSatelliteConfiguration
		want     linstorv1.LinstorSatelliteSpec
		applied  []string
		none     bool
		// satellite is the cluster's spec.satellite.
		satellite *linstorv1.SatelliteSpec
	}{
		{name: "node not selected by the cluster", selector: map[string]string{"storage": "hdd"}, none: true},
		{name: "no configurations", want: linstorv1.LinstorSatelliteSpec{DeletionPolicy: linstorv1.DeletionRetain}},
		{
			name: "later name wins per item, items accumulate",
			configs: []linstorv1.LinstorSatelliteConfiguration{
				cfg("b-override", map[string]string{"storage": "ssd"}, linstorv1.LinstorSatelliteConfigurationSpec{StoragePools: []linstorv1.StoragePool{thinBig}, DeletionPolicy: linstorv1.DeletionEvacuate}),
				cfg("a-base", nil, linstorv1.LinstorSatelliteConfigurationSpec{StoragePools: []linstorv1.StoragePool{thin, file}, DeletionPolicy: linstorv1.DeletionDelete}),
				cfg("c-other-nodes", map[string]string{"storage": "hdd"}, linstorv1.LinstorSatelliteConfigurationSpec{DeletionPolicy: linstorv1.DeletionDelete}),
			},
			want:    linstorv1.LinstorSatelliteSpec{StoragePools: []linstorv1.StoragePool{thinBig, file}, DeletionPolicy: linstorv1.DeletionEvacuate},
			applied: []string{"a-base", "b-override"},
		},
		{
			name: "properties resolved from the node",
			configs: []linstorv1.LinstorSatelliteConfiguration{cfg("p", nil, linstorv1.LinstorSatelliteConfigurationSpec{Properties: []linstorv1.NodeProperty{
				{Name: "Aux/zone", ValueFrom: &linstorv1.NodePropertySource{NodeFieldRef: "metadata.labels['zone']"}},
				{Name: "Aux/rack", ValueFrom: &linstorv1.NodePropertySource{NodeFieldRef: "metadata.annotations['rack']"}},
				{Name: "Aux/node", ValueFrom: &linstorv1.NodePropertySource{NodeFieldRef: "metadata.name"}},
				{Name: "Aux/missing", ValueFrom: &linstorv1.NodePropertySource{NodeFieldRef: "metadata.labels['nope']"}},
				{Name: "Aux/literal", Value: "x"},
			}})},
			want: linstorv1.LinstorSatelliteSpec{DeletionPolicy: linstorv1.DeletionRetain, Properties: []linstorv1.Property{
				{Name: "Aux/literal", Value: "x"}, {Name: "Aux/node", Value: "n1"}, {Name: "Aux/rack", Value: "r7"}, {Name: "Aux/zone", Value: "a"},
			}},
			applied: []string{"p"},
		},
		{
			name: "ipFamilies: the last configuration by name that sets it wins",
			configs: []linstorv1.LinstorSatelliteConfiguration{
				cfg("c-unset", nil, linstorv1.LinstorSatelliteConfigurationSpec{}),
				cfg("b-v6", nil, linstorv1.LinstorSatelliteConfigurationSpec{IPFamilies: []linstorv1.IPFamily{linstorv1.IPv6, linstorv1.IPv4}}),
				cfg("a-v4", nil, linstorv1.LinstorSatelliteConfigurationSpec{IPFamilies: []linstorv1.IPFamily{linstorv1.IPv4}}),
				cfg("d-other-nodes", map[string]string{"storage": "hdd"}, linstorv1.LinstorSatelliteConfigurationSpec{IPFamilies: []linstorv1.IPFamily{linstorv1.IPv4}}),
			},
			want:    linstorv1.LinstorSatelliteSpec{DeletionPolicy: linstorv1.DeletionRetain, IPFamilies: []linstorv1.IPFamily{linstorv1.IPv6, linstorv1.IPv4}},
			applied: []string{"a-v4", "b-v6", "c-unset"},
		},
		{
			name:      "patches: the cluster's first, then each configuration's in name order",
			satellite: &linstorv1.SatelliteSpec{ComponentSpec: linstorv1.ComponentSpec{Patches: []linstorv1.Patch{{Patch: "cluster"}}}},
			configs: []linstorv1.LinstorSatelliteConfiguration{
				cfg("b", nil, linstorv1.LinstorSatelliteConfigurationSpec{Patches: []linstorv1.Patch{{Patch: "b1"}, {Patch: "b2", Target: &linstorv1.PatchTarget{Kind: "ConfigMap"}}}}),
				cfg("a", nil, linstorv1.LinstorSatelliteConfigurationSpec{Patches: []linstorv1.Patch{{Patch: "a1"}}}),
				cfg("c-other-nodes", map[string]string{"storage": "hdd"}, linstorv1.LinstorSatelliteConfigurationSpec{Patches: []linstorv1.Patch{{Patch: "c1"}}}),
			},
			want: linstorv1.LinstorSatelliteSpec{DeletionPolicy: linstorv1.DeletionRetain, Patches: []linstorv1.Patch{
				{Patch: "cluster"}, {Patch: "a1"}, {Patch: "b1"}, {Patch: "b2", Target: &linstorv1.PatchTarget{Kind: "ConfigMap"}},
			}},
			applied: []string{"a", "b"},
		},
		{
			name: "pod template patches stack in name order",
			configs: []linstorv1.LinstorSatelliteConfiguration{
				cfg("2", nil, linstorv1.LinstorSatelliteConfigurationSpec{PodTemplate: &runtime.RawExtension{Raw: []byte(`{"metadata":{"labels":{"b":"2","a":"override"}}}`)}}),
				cfg("1", nil, linstorv1.LinstorSatelliteConfigurationSpec{PodTemplate: &runtime.RawExtension{Raw: []byte(`{"metadata":{"labels":{"a":"1"}}}`)}}),
			},
			want: linstorv1.LinstorSatelliteSpec{DeletionPolicy: linstorv1.DeletionRetain,
				PodTemplate: &runtime.RawExtension{Raw: []byte(`{"metadata":{"labels":{"a":"override","b":"2"}}}`)}},
			applied: []string{"1", "2"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster.DeepCopy()
			c.Spec.NodeSelector = tc.selector
			c.Spec.Satellite = tc.satellite
			d, err := Desired(c, tc.configs, node)
			if err != nil {
				t.Fatal(err)
			}
			got, applied := d.Spec, d.Applied
			if tc.none {
				if d.Selected || got.ClusterRef.Name != "" {
					t.Fatalf("node got a satellite: %+v", got)
				}
				return
			}
			tc.want.ClusterRef = linstorv1.ClusterReference{Name: "linstor"}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("spec (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.applied, applied); d != "" {
				t.Errorf("applied configurations (-want +got):\n%s", d)
			}
		})
	}
}

// Two configurations each making another interface active: the later one by name
// wins on every node (never both, which would make LINSTOR switch between them), and
// the earlier one is told.
func TestActiveInterfaceConflict(t *testing.T) {
	cluster := &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Name: "linstor"}}
	node := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"tier": "storage"}}}
	nic := func(name string) []linstorv1.NetInterface {
		return []linstorv1.NetInterface{{Name: name, CIDR: "10.0.0.0/8", Active: true}}
	}
	configs := []linstorv1.LinstorSatelliteConfiguration{
		{ObjectMeta: metav1.ObjectMeta{Name: "b-storage"}, Spec: linstorv1.LinstorSatelliteConfigurationSpec{NetInterfaces: nic("storage")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "a-data"}, Spec: linstorv1.LinstorSatelliteConfigurationSpec{NetInterfaces: nic("data")}},
	}
	for i := 0; i < 2; i++ { // whatever the list order
		configs[0], configs[1] = configs[1], configs[0]
		d, err := Desired(cluster, configs, &node)
		if err != nil {
			t.Fatal(err)
		}
		var active []string
		for _, n := range d.Spec.NetInterfaces {
			if n.Active {
				active = append(active, n.Name)
			}
		}
		if len(active) != 1 || active[0] != "storage" {
			t.Fatalf("active interfaces %v, want only storage (b-storage comes last)", active)
		}
	}
	conflicts := ActiveConflicts(cluster, configs, []corev1.Node{node})
	if len(conflicts) != 1 || !strings.Contains(conflicts["a-data"], "storage of LinstorSatelliteConfiguration b-storage") {
		t.Fatalf("conflicts = %v", conflicts)
	}
}

// More patches than a LinstorSatellite holds is an error naming where they come from (the
// caller then keeps the satellite as it is), not a LinstorSatellite the API refuses.
func TestDesiredTooManyPatches(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	cluster := &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Name: "linstor"}}
	var configs []linstorv1.LinstorSatelliteConfiguration
	for i := 0; i < 9; i++ {
		configs = append(configs, cfg(string(rune('a'+i)), nil, linstorv1.LinstorSatelliteConfigurationSpec{Patches: make([]linstorv1.Patch, 32)}))
	}
	if _, err := Desired(cluster, configs[:8], node); err != nil {
		t.Fatalf("256 patches: %v", err)
	}
	_, err := Desired(cluster, configs, node)
	if err == nil || !strings.Contains(err.Error(), "288 patches") || !strings.Contains(err.Error(), "a, b, c") {
		t.Fatalf("288 patches: error %v", err)
	}
}

func TestMisplaced(t *testing.T) {
	for _, tc := range []struct {
		name, ns, operatorNS string
		clusters             []string
		want                 string
	}{
		{"in the operator's namespace", "linstor", "linstor", []string{"linstor"}, ""},
		{"in the operator's namespace before the cluster exists", "linstor", "linstor", nil, ""},
		{"elsewhere", "default", "linstor", nil, `in namespace "default", but the operator runs LINSTOR only in its own namespace "linstor"`},
		{"elsewhere, even beside a LinstorCluster the operator refuses", "default", "linstor", []string{"default"}, `Create it in namespace "linstor"`},
		{"every namespace allowed: beside the cluster", "a", "", []string{"a"}, ""},
		{"every namespace allowed: no cluster yet", "b", "", nil, ""},
		{"every namespace allowed: the cluster is elsewhere", "b", "", []string{"a"}, `namespace "b" holds no LinstorCluster. Create it in the namespace of the LinstorCluster (a)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var clusters []linstorv1.LinstorCluster
			for _, ns := range tc.clusters {
				clusters = append(clusters, linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Name: "linstor", Namespace: ns}})
			}
			got := Misplaced("LinstorSatelliteConfiguration", tc.ns, tc.operatorNS, clusters)
			if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("Misplaced = %q, want %q", got, tc.want)
			}
		})
	}
}
