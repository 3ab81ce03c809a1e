package crdschema

import (
	"context"
	"strings"
	"testing"

	"github.com/linstor-operator/linstor-operator/config/crd"
)

func TestV1RulesOfTheShippedCRDs(t *testing.T) {
	schemas, err := Load(crd.Bases, "bases", "v1")
	if err != nil {
		t.Fatal(err)
	}
	if len(schemas) != 7 {
		t.Fatalf("%d v1 schemas, want the 7 kinds", len(schemas))
	}
	obj := func(spec map[string]any) map[string]any {
		return map[string]any{"apiVersion": "linstor.io/v1", "kind": "LinstorSatelliteConfiguration", "metadata": map[string]any{"name": "x"}, "spec": spec}
	}
	pool := func(kind, vg string) map[string]any {
		return map[string]any{"storagePools": []any{map[string]any{"name": "pool", kind: map[string]any{"volumeGroup": vg}}}}
	}
	s := schemas["LinstorSatelliteConfiguration"]
	for _, tc := range []struct {
		name     string
		obj, old map[string]any
		want     string
	}{
		{"valid", obj(pool("lvmThinPool", "vg")), nil, ""},
		{"pattern", obj(map[string]any{"properties": []any{map[string]any{"name": "/x"}}}), nil, "spec.properties[0].name in body should match"},
		{"list-map key", obj(map[string]any{"properties": []any{map[string]any{"name": "Aux/a"}, map[string]any{"name": "Aux/a"}}}), nil, "spec.properties[1]: Duplicate value"},
		{"CEL", obj(map[string]any{"storagePools": []any{map[string]any{"name": "pool"}}}), nil, "exactly one of lvmPool"},
		{"transition rule", obj(pool("lvmThinPool", "vg2")), obj(pool("lvmThinPool", "vg1")), "volumeGroup is immutable"},
		{"type change", obj(pool("lvmPool", "vg1")), obj(pool("lvmThinPool", "vg1")), "the pool type is immutable"},
		// Ratcheting: a value that did not change is not held against the object.
		{"unchanged invalid value", obj(map[string]any{"properties": []any{map[string]any{"name": "/x"}}, "nodeSelector": map[string]any{"a": "b"}}),
			obj(map[string]any{"properties": []any{map[string]any{"name": "/x"}}}), ""},
	} {
		s.Default(tc.obj)
		if tc.old != nil {
			s.Default(tc.old)
		}
		errs := s.Validate(context.Background(), tc.obj, tc.old)
		got := errs.ToAggregate()
		if (tc.want == "") != (got == nil) || (got != nil && !strings.Contains(got.Error(), tc.want)) {
			t.Errorf("%s: got %v, want %q", tc.name, got, tc.want)
		}
	}
}
