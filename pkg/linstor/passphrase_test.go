package linstor

import "testing"

func TestParsePassphraseStatus(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       PassphraseStatus
		wantErr    bool
	}{
		{"server shape: one object", `{"status":"locked"}`, PassphraseLocked, false},
		{"server shape, unset", `{"status":"unset"}`, PassphraseUnset, false},
		{"spec shape: a list of one", `[{"status":"unlocked"}]`, PassphraseUnlocked, false},
		{"empty list is not unset", `[]`, "", true},
		{"two entries are ambiguous", `[{"status":"unset"},{"status":"locked"}]`, "", true},
		{"unknown status is not unset", `{"status":"sealed"}`, "", true},
		{"missing status", `{}`, "", true},
		{"not JSON", `<html>`, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParsePassphraseStatus([]byte(tc.body))
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("ParsePassphraseStatus(%s) = %q, %v; want %q, error %t", tc.body, got, err, tc.want, tc.wantErr)
			}
		})
	}
}
