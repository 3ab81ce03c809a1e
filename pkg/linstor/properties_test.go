package linstor

import (
	"reflect"
	"testing"

	"github.com/linstor-operator/linstor-operator/pkg/linstor/props"
	"github.com/linstor-operator/linstor-operator/pkg/names"
)

func TestPropertyDiff(t *testing.T) {
	tracked := func(keys string) string { return keys }
	cases := []struct {
		name       string
		current    map[string]string
		desired    map[string]string
		override   map[string]string
		deleteKeys []string
	}{
		{"nothing to do", nil, nil, nil, nil},
		{"first apply", map[string]string{"Foreign": "x"}, map[string]string{"A": "1"},
			map[string]string{"A": "1", names.AuxLastApplied: `["A"]`}, nil},
		{"steady state", map[string]string{"A": "1", names.AuxLastApplied: tracked(`["A"]`)}, map[string]string{"A": "1"}, nil, nil},
		{"value changed", map[string]string{"A": "1", names.AuxLastApplied: `["A"]`}, map[string]string{"A": "2"},
			map[string]string{"A": "2"}, nil},
		{"removed from spec is removed", map[string]string{"A": "1", "B": "2", names.AuxLastApplied: `["A","B"]`}, map[string]string{"A": "1"},
			map[string]string{names.AuxLastApplied: `["A"]`}, []string{"B"}},
		{"foreign keys are never touched", map[string]string{"A": "1", "Foreign": "x", names.AuxLastApplied: `["A"]`}, map[string]string{},
			nil, []string{"A", names.AuxLastApplied}},
		{"already removed by hand", map[string]string{names.AuxLastApplied: `["A"]`}, nil, nil, []string{names.AuxLastApplied}},
		{"damaged tracker deletes nothing", map[string]string{"A": "1", names.AuxLastApplied: "{"}, map[string]string{"B": "2"},
			map[string]string{"B": "2", names.AuxLastApplied: `["B"]`}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mod := PropertyDiff(tc.current, tc.desired)
			if !reflect.DeepEqual(map[string]string(mod.OverrideProps), tc.override) && !(len(mod.OverrideProps) == 0 && len(tc.override) == 0) {
				t.Errorf("override = %v, want %v", mod.OverrideProps, tc.override)
			}
			if !reflect.DeepEqual([]string(mod.DeleteProps), tc.deleteKeys) && !(len(mod.DeleteProps) == 0 && len(tc.deleteKeys) == 0) {
				t.Errorf("delete = %v, want %v", mod.DeleteProps, tc.deleteKeys)
			}
			if IsEmpty(mod) != (len(tc.override) == 0 && len(tc.deleteKeys) == 0) {
				t.Errorf("IsEmpty = %v", IsEmpty(mod))
			}
			// Applying the diff reaches a fixed point: the next diff is empty.
			next := map[string]string{}
			for k, v := range tc.current {
				next[k] = v
			}
			for _, k := range mod.DeleteProps {
				delete(next, k)
			}
			for k, v := range mod.OverrideProps {
				next[k] = v
			}
			if again := PropertyDiff(next, tc.desired); !IsEmpty(again) {
				t.Errorf("not a fixed point: second diff %+v", again)
			}
		})
	}
}

func TestValidPropertiesNormalizes(t *testing.T) {
	valid, refused := ValidProperties(props.Controller, map[string]string{"DrbdOptions/AutoEvictAllowEviction": "True"})
	if len(refused) > 0 || valid["DrbdOptions/AutoEvictAllowEviction"] != "true" {
		t.Fatalf("valid %v refused %v: want the value as LINSTOR stores it, \"true\"", valid, refused)
	}
	if mod := PropertyDiff(map[string]string{"DrbdOptions/AutoEvictAllowEviction": "true", names.AuxLastApplied: `["DrbdOptions/AutoEvictAllowEviction"]`}, valid); !IsEmpty(mod) {
		t.Fatalf("a stored \"true\" for an asked \"True\" is a write: %+v", mod)
	}
}
