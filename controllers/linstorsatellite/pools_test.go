package linstorsatellite

import (
	"reflect"
	"strings"
	"testing"

	lapi "github.com/LINBIT/golinstor/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/storagepool"
)

// TestWantedPools: the spec's pools in LINSTOR's terms, as the requests carry them.
func TestWantedPools(t *testing.T) {
	spec := []linstorv1.StoragePool{
		{Name: "thin", LvmThinPool: &linstorv1.LvmThinPool{}, Properties: []linstorv1.Property{{Name: "Aux/team", Value: "db"}, {Name: "NoSuchKey", Value: "x"}}},
		{Name: "files", FilePool: &linstorv1.FilePool{Directory: "/srv/pools"}},
	}
	existing := []lapi.StoragePool{{StoragePoolName: "THIN", ProviderKind: lapi.LVM_THIN, Props: map[string]string{"Aux/old": "1", "Aux/linstor-operator/last-applied": `["Aux/old"]`}}}
	got := wantedPools(spec, existing)
	if len(got) != 2 {
		t.Fatalf("got %d pools", len(got))
	}
	thin, files := got[0], got[1]
	if thin.ProviderKind != "LVM_THIN" || !reflect.DeepEqual(thin.DriverProps, map[string]string{"StorDriver/LvmVg": "linstor_thin", "StorDriver/ThinPool": "thin"}) {
		t.Errorf("thin: %s %v", thin.ProviderKind, thin.DriverProps)
	}
	if want := map[string]string{"Aux/team": "db", "Aux/linstor-operator/last-applied": `["Aux/team"]`}; !reflect.DeepEqual(thin.CreateProps, want) {
		t.Errorf("thin create props: %v", thin.CreateProps)
	}
	if len(thin.Refused) != 1 || !strings.Contains(thin.Refused[0], "NoSuchKey") {
		t.Errorf("thin refused: %q", thin.Refused)
	}
	// The pool exists (LINSTOR ignores case): the spec's key is set, the one the
	// operator set before and the spec dropped is deleted.
	want := storagepool.PropsChange{Override: map[string]string{"Aux/team": "db", "Aux/linstor-operator/last-applied": `["Aux/team"]`}, Delete: []string{"Aux/old"}}
	if !reflect.DeepEqual(thin.Change, want) {
		t.Errorf("thin change: %+v", thin.Change)
	}
	if files.ProviderKind != "FILE" || files.DriverProps["StorDriver/FileDir"] != "/srv/pools" || !files.Change.Empty() || len(files.CreateProps) != 0 {
		t.Errorf("files: %+v", files)
	}
}
