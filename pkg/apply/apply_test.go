package apply_test

import (
	"testing"

	"github.com/linstor-operator/linstor-operator/pkg/apply"
)

func TestContains(t *testing.T) {
	m := func(kv ...any) map[string]any {
		out := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i].(string)] = kv[i+1]
		}
		return out
	}
	for _, tc := range []struct {
		name       string
		have, want any
		contains   bool
	}{
		{"equal", m("a", "x"), m("a", "x"), true},
		{"defaulted field in the live object", m("a", "x", "b", "default"), m("a", "x"), true},
		{"changed value", m("a", "y"), m("a", "x"), false},
		{"missing field", m(), m("a", "x"), false},
		{"int64 and float64 are the same number", m("n", int64(3)), m("n", float64(3)), true},
		{"different numbers", m("n", int64(3)), m("n", int64(4)), false},
		{"bool is not a string", m("b", "true"), m("b", true), false},
		{"list element with defaults", m("l", []any{m("name", "c", "imagePullPolicy", "IfNotPresent")}), m("l", []any{m("name", "c")}), true},
		{"list with an extra element", m("l", []any{m("name", "c"), m("name", "d")}), m("l", []any{m("name", "c")}), false},
		{"list with a changed element", m("l", []any{m("name", "d")}), m("l", []any{m("name", "c")}), false},
		{"list order matters", m("l", []any{"a", "b"}), m("l", []any{"b", "a"}), false},
		{"empty wanted map matches an absent one", m(), m("r", m()), true},
		{"empty wanted list matches an absent one", m(), m("l", []any{}), true},
		{"wanted null", m("a", "x"), m("a", nil), false},
		{"nested change", m("s", m("t", m("u", "1"))), m("s", m("t", m("u", "2"))), false},
	} {
		if got := apply.Contains(tc.have, tc.want); got != tc.contains {
			t.Errorf("%s: Contains = %t, want %t", tc.name, got, tc.contains)
		}
	}
}
