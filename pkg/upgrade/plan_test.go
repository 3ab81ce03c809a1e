package upgrade

import (
	"strings"
	"testing"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

func TestVersionOrder(t *testing.T) {
	ordered := []string{"1.21.0", "1.29.1", "1.33.2", "1.33.3", "1.34.0-rc.1", "1.34.0-rc.2", "1.34.0", "2.0.0"}
	for i := range ordered {
		for j := range ordered {
			a, b := MustParse(ordered[i]), MustParse(ordered[j])
			if got, want := a.Compare(b), sign(i-j); got != want {
				t.Errorf("Compare(%s, %s) = %d, want %d", a, b, got, want)
			}
		}
	}
	if v := MustParse("v1.33.3"); v.String() != "1.33.3" {
		t.Errorf("leading v: %s", v)
	}
	for _, bad := range []string{"", "1.33", "1.33.x", "1.-1.0", "latest"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

// next is a hypothetical release targeting 1.34.0 that carries 1.33.2 as a stepping stone.
var next = Release{
	Target: MustParse("1.34.0"), Runnable: []Version{MustParse("1.33.2"), MustParse("1.34.0")}, Oldest: MustParse("1.29.0"),
	Stones: Current.Stones,
}

func TestDecide(t *testing.T) {
	cases := []struct {
		name    string
		release Release
		in      Input
		action  Action
		to      string
		message string
	}{
		{"fresh install", Current, Input{}, Install, "1.33.3", "Installing LINSTOR 1.33.3"},
		{"fresh install pinned", Current, Input{Requested: "1.33.2"}, Install, "1.33.2", ""},
		{"up to date", Current, Input{Running: "1.33.3"}, Stay, "1.33.3", ""},
		{"previous release's version, automatic", Current, Input{Running: "1.29.1", Policy: linstorv1.UpgradeAutomatic}, Upgrade, "1.33.3", "Upgrading LINSTOR from 1.29.1 to 1.33.3"},
		{"empty policy means automatic", Current, Input{Running: "1.33.2"}, Upgrade, "1.33.3", ""},
		{"manual waits", Current, Input{Running: "1.29.1", Policy: linstorv1.UpgradeManual}, AwaitApproval, "1.33.3", "set spec.version to 1.33.3 to start it"},
		{"manual approved", Current, Input{Running: "1.29.1", Requested: "1.33.3", Policy: linstorv1.UpgradeManual}, Upgrade, "1.33.3", ""},
		{"pinned older runnable", Current, Input{Running: "1.29.1", Requested: "1.33.2"}, Upgrade, "1.33.2", ""},
		{"pinned to the running version", Current, Input{Running: "1.33.2", Requested: "1.33.2"}, Stay, "1.33.2", ""},
		{"downgrade", Current, Input{Running: "1.33.3", Requested: "1.33.2"}, Refuse, "1.33.3", "LINSTOR cannot downgrade"},
		{"newer than the release", Current, Input{Running: "1.34.0"}, Refuse, "1.34.0", "cannot downgrade"},
		{"not runnable", Current, Input{Running: "1.29.1", Requested: "1.32.0"}, Refuse, "", "spec.version 1.32.0 is not a version this operator release can run; it runs 1.31.3, 1.32.3, 1.33.2, 1.33.3"},
		// No stepping stone inside the 1.29-1.33 range: one start runs every migration.
		{"1.31 line in one hop", Current, Input{Running: "1.31.3"}, Upgrade, "1.33.3", "Upgrading LINSTOR from 1.31.3 to 1.33.3"},
		{"1.32 line in one hop", Current, Input{Running: "1.32.0"}, Upgrade, "1.33.3", ""},
		{"pinned to the 1.31 line", Current, Input{Requested: "1.31.3"}, Install, "1.31.3", ""},
		{"pinned 1.32 from 1.31", Current, Input{Running: "1.31.3", Requested: "1.32.3"}, Upgrade, "1.32.3", ""},
		{"too old", Current, Input{Running: "1.20.3"}, Refuse, "1.20.3", "older than 1.29.0"},
		{"bad reported version", Current, Input{Running: "garbage"}, Refuse, "", "unreadable version"},
		{"stepping stone first", next, Input{Running: "1.29.1"}, Upgrade, "1.33.2", "Upgrading LINSTOR from 1.29.1 to 1.33.2, on the way to 1.34.0"},
		{"then the target", next, Input{Running: "1.33.2"}, Upgrade, "1.34.0", ""},
		{"past the stone", next, Input{Running: "1.33.3"}, Upgrade, "1.34.0", ""},
		{"stone not carried", Release{Target: next.Target, Runnable: []Version{next.Target}, Oldest: next.Oldest, Stones: next.Stones},
			Input{Running: "1.30.0"}, Refuse, "1.30.0", "must pass through 1.33.2 before 1.34.0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.release.Decide(tc.in)
			if d.Action != tc.action {
				t.Fatalf("action %s, want %s (%s)", d.Action, tc.action, d.Message)
			}
			if tc.to != "" && d.To.String() != tc.to {
				t.Errorf("to %s, want %s", d.To, tc.to)
			}
			if !strings.Contains(d.Message, tc.message) {
				t.Errorf("message %q, want it to contain %q", d.Message, tc.message)
			}
		})
	}
}
