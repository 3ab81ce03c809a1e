package bundle

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/blang/semver/v4"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/linstor-operator/linstor-operator/pkg/upgrade"
)

// Channel names. A Subscription's channel decides the LINSTOR line its cluster runs:
//   - "stable-linstor-X.Y" holds the releases that run LINSTOR X.Y. Its first entry, when an
//     older line exists, is the newest release of that line: the way in for a
//     Subscription switched over from "stable-linstor-X.(Y-1)", which the operator there brings
//     to the last X.(Y-1) version (a stepping stone, when the next line needs one) before
//     OLM may go on (the operator holds Upgradeable=False while LINSTOR upgrades).
//   - "stable" (the default) holds every release of a released LINSTOR version, oldest
//     first: it moves to a new LINSTOR line when that line's first release arrives.
//   - "candidate" holds the releases that run a LINSTOR release candidate, entered from
//     the newest stable release; it exists only while there is one.
const (
	StableChannel    = "stable"
	CandidateChannel = "candidate"
	linePrefix       = "stable-linstor-"
)

// LinstorVersionAnnotation on the CSV is the LINSTOR version the release pins: what its
// catalog channels are decided by (a pinned image carries no tag to read it from).
const LinstorVersionAnnotation = "linstor.io/linstor-version"

// SourceCommitAnnotation in a frozen release's metadata/annotations.yaml (bundles/<v>/)
// names the commit of this repository the release was built from; this tree's bundle/
// has none.
const SourceCommitAnnotation = "linstor.io/source-commit"

// CatalogRelease is one bundle of the catalog.
type CatalogRelease struct {
	// Name is the CSV name, linstor-operator.v<Version>.
	Name    string
	Version semver.Version
	// Linstor is the LINSTOR version the release pins.
	Linstor upgrade.Version
}

// CatalogChannel is one olm.channel: entries oldest first.
type CatalogChannel struct {
	Name    string
	Entries []CatalogEntry
}

// CatalogEntry is one channel entry and its upgrade edges.
type CatalogEntry struct {
	Name      string   `json:"name"`
	Replaces  string   `json:"replaces,omitempty"`
	Skips     []string `json:"skips,omitempty"`
	SkipRange string   `json:"skipRange,omitempty"`
}

// LineChannel is the channel of a LINSTOR minor line: stable-linstor-1.33 (channel names
// start with stable, fast or candidate by OLM's convention, which its validators check).
func LineChannel(v upgrade.Version) string {
	return fmt.Sprintf("%s%d.%d", linePrefix, v.Major, v.Minor)
}

// ChannelsOf names the channels Channels puts release r in, given all releases.
func ChannelsOf(r CatalogRelease, all []CatalogRelease) ([]string, error) {
	channels, err := Channels(all)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range channels {
		for _, e := range c.Entries {
			if e.Name == r.Name {
				out = append(out, c.Name)
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// Channels decides the catalog's channels from its releases. Releases are linear: a
// newer operator never pins an older LINSTOR (LINSTOR cannot downgrade), or it is an error.
func Channels(releases []CatalogRelease) ([]CatalogChannel, error) {
	sorted := sortedReleases(releases)
	for i := 1; i < len(sorted); i++ {
		if sorted[i].Linstor.Compare(sorted[i-1].Linstor) < 0 {
			return nil, fmt.Errorf("%s pins LINSTOR %s, older than %s of %s: LINSTOR cannot downgrade, so no channel may lead there",
				sorted[i].Name, sorted[i].Linstor, sorted[i-1].Linstor, sorted[i-1].Name)
		}
	}
	var stable []CatalogRelease
	lines := map[string][]CatalogRelease{}
	var lineOrder []string
	firstRC := -1
	for i, r := range sorted {
		if r.Linstor.Pre != "" {
			if firstRC < 0 {
				firstRC = i
			}
			continue
		}
		stable = append(stable, r)
		line := LineChannel(r.Linstor)
		if _, seen := lines[line]; !seen {
			lineOrder = append(lineOrder, line)
		}
		lines[line] = append(lines[line], r)
	}
	edges := upgradeEdges(sorted)
	var out []CatalogChannel
	if firstRC >= 0 {
		// From the last release before the first candidate, every release after it: a
		// candidate subscriber reaches the line's first stable release too.
		if firstRC > 0 {
			out = append(out, CatalogChannel{Name: CandidateChannel, Entries: chain(sorted[firstRC-1:], true, edges)})
		} else {
			out = append(out, CatalogChannel{Name: CandidateChannel, Entries: chain(sorted, false, edges)})
		}
	}
	for i, line := range lineOrder {
		members := lines[line]
		entered := false
		if i > 0 {
			prev := lines[lineOrder[i-1]]
			members = append([]CatalogRelease{prev[len(prev)-1]}, members...)
			entered = true
		}
		out = append(out, CatalogChannel{Name: line, Entries: chain(members, entered, edges)})
	}
	if len(stable) > 0 {
		out = append(out, CatalogChannel{Name: StableChannel, Entries: chain(stable, false, edges)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// UpgradeEdges is release r's entry in every channel it is in (but one it is the way
// into): what its CSV carries as spec.replaces, spec.skips and the olm.skipRange
// annotation. A catalog built from the CSVs alone (OperatorHub.io's replaces mode) then
// has the graph this catalog has. all must hold r.
func UpgradeEdges(r CatalogRelease, all []CatalogRelease) (CatalogEntry, error) {
	if _, err := Channels(all); err != nil {
		return CatalogEntry{}, err
	}
	sorted := sortedReleases(all)
	e, ok := upgradeEdges(sorted)[r.Name]
	if !ok {
		return CatalogEntry{}, fmt.Errorf("%s is not among the catalog's releases", r.Name)
	}
	return e, nil
}

func sortedReleases(releases []CatalogRelease) []CatalogRelease {
	sorted := append([]CatalogRelease(nil), releases...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Version.LT(sorted[j].Version) })
	return sorted
}

// upgradeEdges decides each release's one entry, the same in every channel, so that the
// CSV can carry it:
//   - a stable release replaces the stable release before it and skips the candidates
//     between them (a candidate subscriber moves on to it; the stable channel has no
//     candidate, and skips name no bundle that must exist);
//   - a candidate replaces the release before it;
//   - every release but the oldest skips the range from the catalog's oldest release up to
//     itself, so a cluster that missed releases upgrades in one step. The range is bounded
//     below: it never claims versions this catalog never had.
func upgradeEdges(sorted []CatalogRelease) map[string]CatalogEntry {
	out := map[string]CatalogEntry{}
	lastStable := -1
	for i, r := range sorted {
		e := CatalogEntry{Name: r.Name}
		if i > 0 {
			e.SkipRange = fmt.Sprintf(">=%s <%s", sorted[0].Version, r.Version)
		}
		switch {
		case r.Linstor.Pre != "" && i > 0:
			e.Replaces = sorted[i-1].Name
		case r.Linstor.Pre == "":
			if lastStable >= 0 {
				e.Replaces = sorted[lastStable].Name
			}
			for _, skipped := range sorted[lastStable+1 : i] {
				e.Skips = append(e.Skips, skipped.Name)
			}
			lastStable = i
		}
		out[r.Name] = e
	}
	return out
}

// chain lists releases oldest first with their entries. entered: the first entry is the
// way in from another channel; the release it replaces is not in this channel, so it only
// skips the older releases (a Subscription switched over from any of them finds it).
func chain(rs []CatalogRelease, entered bool, edges map[string]CatalogEntry) []CatalogEntry {
	out := make([]CatalogEntry, len(rs))
	for i, r := range rs {
		out[i] = edges[r.Name]
		if i == 0 && entered {
			out[i] = CatalogEntry{Name: r.Name, SkipRange: edges[r.Name].SkipRange}
		}
	}
	return out
}

// ReadCatalogRelease reads a bundle directory's CSV: its name, version and the LINSTOR
// version of its controller image (every release's CSV lists it as "linstor-controller").
func ReadCatalogRelease(dir string) (CatalogRelease, error) {
	files, err := filepath.Glob(filepath.Join(dir, "manifests", "*.clusterserviceversion.yaml"))
	if err != nil || len(files) != 1 {
		return CatalogRelease{}, fmt.Errorf("%s: want one CSV in manifests/, found %d", dir, len(files))
	}
	raw, err := os.ReadFile(files[0])
	if err != nil {
		return CatalogRelease{}, err
	}
	var csv operatorsv1alpha1.ClusterServiceVersion
	if err := yaml.Unmarshal(raw, &csv); err != nil {
		return CatalogRelease{}, fmt.Errorf("%s: %w", files[0], err)
	}
	r := CatalogRelease{Name: csv.Name, Version: csv.Spec.Version.Version}
	if v, ok := csv.Annotations[LinstorVersionAnnotation]; ok {
		if r.Linstor, err = upgrade.Parse(v); err != nil {
			return CatalogRelease{}, fmt.Errorf("%s: %s: %w", files[0], LinstorVersionAnnotation, err)
		}
		return r, nil
	}
	// Releases before the annotation: the tag of their controller image.
	for _, img := range csv.Spec.RelatedImages {
		if img.Name != "linstor-controller" {
			continue
		}
		_, tag, ok := strings.Cut(img.Image[strings.LastIndex(img.Image, "/")+1:], ":v")
		if !ok {
			return CatalogRelease{}, fmt.Errorf("%s: linstor-controller image %q has no v<version> tag", files[0], img.Image)
		}
		tag, _, _ = strings.Cut(tag, "@")
		if r.Linstor, err = upgrade.Parse(tag); err != nil {
			return CatalogRelease{}, fmt.Errorf("%s: linstor-controller image %q: %w", files[0], img.Image, err)
		}
		return r, nil
	}
	return CatalogRelease{}, fmt.Errorf("%s: no linstor-controller in relatedImages", files[0])
}
