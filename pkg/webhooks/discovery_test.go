package webhooks

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

func discoveryConfig(pools ...linstorv1.StoragePool) *linstorv1.LinstorSatelliteConfiguration {
	return &linstorv1.LinstorSatelliteConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "storage", Namespace: "linstor"},
		Spec: linstorv1.LinstorSatelliteConfigurationSpec{StoragePools: pools}}
}

func discoverPool(name string, d linstorv1.DiskDiscovery) linstorv1.StoragePool {
	return linstorv1.StoragePool{Name: name, ZfsPool: &linstorv1.ZfsPool{}, Source: &linstorv1.StoragePoolSource{Discover: &d}}
}

// A matcher that takes any disk needs allowAnyDisk on create and on change; one made
// before the rule stays as it is through unrelated updates.
func TestAMatcherTakingAnyDiskIsAcknowledged(t *testing.T) {
	minSize := resource.MustParse("4Ti")
	sizeOnly := linstorv1.DiskDiscovery{Rotational: ptr.To(true), MinSize: &minSize}
	acknowledged := sizeOnly
	acknowledged.AllowAnyDisk = true
	named := sizeOnly
	named.Models = []string{"ST8000*"}
	dry := sizeOnly
	dry.DryRun = true
	bigger := sizeOnly
	bigger.MinSize = ptr.To(resource.MustParse("8Ti"))
	const refusal = "spec.storagePools[0].source.discover.allowAnyDisk"
	for _, tc := range []struct {
		name    string
		old     *linstorv1.DiskDiscovery
		new     linstorv1.DiskDiscovery
		refused bool
	}{
		{"create size only", nil, sizeOnly, true},
		{"create acknowledged", nil, acknowledged, false},
		{"create with models", nil, named, false},
		{"create dry run", nil, dry, false},
		{"update leaves an old matcher alone", &sizeOnly, sizeOnly, false},
		{"update changes an old matcher", &sizeOnly, bigger, true},
		{"update ends a dry run", &dry, sizeOnly, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var old runtime.Object // nil on create
			if tc.old != nil {
				old = discoveryConfig(discoverPool("hdd", *tc.old))
			}
			var errs []string
			for _, e := range specErrors(discoveryConfig(discoverPool("hdd", tc.new)), old) {
				errs = append(errs, e.Error())
			}
			got := false
			for _, e := range errs {
				got = got || strings.HasPrefix(e, refusal)
			}
			if got != tc.refused {
				t.Errorf("refused = %v, want %v: %v", got, tc.refused, errs)
			}
		})
	}
}
