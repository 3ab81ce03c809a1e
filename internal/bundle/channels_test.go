package bundle

import (
	"reflect"
	"strings"
	"testing"

	"github.com/blang/semver/v4"

	"github.com/linstor-operator/linstor-operator/pkg/upgrade"
)

func release(version, linstor string) CatalogRelease {
	return CatalogRelease{Name: "linstor-operator.v" + version, Version: semver.MustParse(version), Linstor: upgrade.MustParse(linstor)}
}

func entry(name, replaces, skipRange string) CatalogEntry {
	return CatalogEntry{Name: "linstor-operator.v" + name, Replaces: replaces, SkipRange: skipRange}
}

func replaces(v string) string { return "linstor-operator.v" + v }

func skipping(e CatalogEntry, versions ...string) CatalogEntry {
	for _, v := range versions {
		e.Skips = append(e.Skips, replaces(v))
	}
	return e
}

// The channels a Subscription can follow, row by row through the life of two LINSTOR
// lines: patch releases, the next line's release candidate, its first release.
func TestChannelsFollowLinstorLines(t *testing.T) {
	r020, r030 := release("0.2.0", "1.33.2"), release("0.3.0", "1.33.3")
	r040rc := release("0.4.0", "1.34.0-rc.1")
	r050 := release("0.5.0", "1.34.0")
	cases := []struct {
		name     string
		releases []CatalogRelease
		want     map[string][]CatalogEntry
	}{
		{"one line: its channel and stable", []CatalogRelease{r030, r020}, map[string][]CatalogEntry{
			"stable-linstor-1.33": {entry("0.2.0", "", ""), entry("0.3.0", replaces("0.2.0"), ">=0.2.0 <0.3.0")},
			"stable":              {entry("0.2.0", "", ""), entry("0.3.0", replaces("0.2.0"), ">=0.2.0 <0.3.0")},
		}},
		{"a release candidate of the next line: candidate only, entered from the newest stable release", []CatalogRelease{r020, r030, r040rc}, map[string][]CatalogEntry{
			"candidate":           {entry("0.3.0", "", ">=0.2.0 <0.3.0"), entry("0.4.0", replaces("0.3.0"), ">=0.2.0 <0.4.0")},
			"stable-linstor-1.33": {entry("0.2.0", "", ""), entry("0.3.0", replaces("0.2.0"), ">=0.2.0 <0.3.0")},
			"stable":              {entry("0.2.0", "", ""), entry("0.3.0", replaces("0.2.0"), ">=0.2.0 <0.3.0")},
		}},
		{"the next line released: its channel is entered from the last release of the line before; the release skips the candidate", []CatalogRelease{r020, r030, r040rc, r050}, map[string][]CatalogEntry{
			"candidate":           {entry("0.3.0", "", ">=0.2.0 <0.3.0"), entry("0.4.0", replaces("0.3.0"), ">=0.2.0 <0.4.0"), skipping(entry("0.5.0", replaces("0.3.0"), ">=0.2.0 <0.5.0"), "0.4.0")},
			"stable-linstor-1.33": {entry("0.2.0", "", ""), entry("0.3.0", replaces("0.2.0"), ">=0.2.0 <0.3.0")},
			"stable-linstor-1.34": {entry("0.3.0", "", ">=0.2.0 <0.3.0"), skipping(entry("0.5.0", replaces("0.3.0"), ">=0.2.0 <0.5.0"), "0.4.0")},
			"stable":              {entry("0.2.0", "", ""), entry("0.3.0", replaces("0.2.0"), ">=0.2.0 <0.3.0"), skipping(entry("0.5.0", replaces("0.3.0"), ">=0.2.0 <0.5.0"), "0.4.0")},
		}},
		{"only a candidate", []CatalogRelease{r040rc}, map[string][]CatalogEntry{
			"candidate": {entry("0.4.0", "", "")},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			channels, err := Channels(tc.releases)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string][]CatalogEntry{}
			for _, c := range channels {
				got[c.Name] = c.Entries
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("channels\n got %v\nwant %v", got, tc.want)
			}
		})
	}
}

// A newer operator pinning an older LINSTOR would make OLM lead a cluster to a
// downgrade LINSTOR refuses: the catalog is refused instead.
func TestChannelsRefuseALinstorDowngrade(t *testing.T) {
	_, err := Channels([]CatalogRelease{release("0.2.0", "1.33.3"), release("0.3.0", "1.33.2")})
	if err == nil || !strings.Contains(err.Error(), "linstor-operator.v0.3.0 pins LINSTOR 1.33.2, older than 1.33.3") {
		t.Fatalf("error %v", err)
	}
}

func TestChannelsOf(t *testing.T) {
	all := []CatalogRelease{release("0.2.0", "1.33.2"), release("0.3.0", "1.33.3"), release("0.4.0", "1.34.0-rc.1")}
	got, err := ChannelsOf(all[1], all)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"candidate", "stable", "stable-linstor-1.33"}; !reflect.DeepEqual(got, want) {
		t.Errorf("0.3.0 is in %v, want %v", got, want)
	}
}

// A CSV carries one replaces, one skips list and one skipRange: every channel holds a
// release with those same edges (OperatorHub.io builds its graph from the CSVs), except
// the channel it is the way into, where the release it replaces is not.
func TestEveryChannelHasTheReleasesOwnEdges(t *testing.T) {
	all := []CatalogRelease{release("0.1.0", "1.31.3"), release("0.1.1", "1.32.3"), release("0.2.0", "1.33.2"),
		release("0.3.0", "1.33.3"), release("0.4.0", "1.34.0-rc.1"), release("0.5.0", "1.34.0"), release("0.5.1", "1.34.1")}
	channels, err := Channels(all)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, r := range all {
		own, err := UpgradeEdges(r, all)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range channels {
			for i, e := range c.Entries {
				if e.Name != r.Name {
					continue
				}
				if i == 0 && own.Replaces != "" {
					// The way in: the release it replaces is in another channel.
					if e.Replaces != "" || e.SkipRange != own.SkipRange {
						t.Errorf("channel %s: way in %+v, want only the skipRange of %+v", c.Name, e, own)
					}
					continue
				}
				if !reflect.DeepEqual(e, own) {
					t.Errorf("channel %s: %+v, the release's own edges are %+v", c.Name, e, own)
				}
				checked++
			}
		}
	}
	if checked < 10 {
		t.Errorf("only %d entries checked", checked)
	}
	if _, err := UpgradeEdges(release("0.9.0", "1.35.0"), all); err == nil {
		t.Error("a release outside the catalog has edges")
	}
}
