package catalog

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/blang/semver/v4"
	"sigs.k8s.io/yaml"

	"github.com/linstor-operator/linstor-operator/internal/bundle"
	"github.com/linstor-operator/linstor-operator/test/envtest"
)

// imageTagBase is the Makefile's IMAGE_TAG_BASE, as make catalog passes it.
func imageTagBase(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(envtest.RepoRoot(), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "IMAGE_TAG_BASE ?= "); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatal("the Makefile sets no IMAGE_TAG_BASE")
	return ""
}

func releaseDirs(t *testing.T) []string {
	t.Helper()
	root := envtest.RepoRoot()
	dirs, err := filepath.Glob(filepath.Join(root, "bundles", "*"))
	if err != nil {
		t.Fatal(err)
	}
	return append(dirs, filepath.Join(root, "bundle"))
}

// The CSV of this tree's release carries the upgrade edges the catalog gives it
// (spec.replaces, spec.skips, the olm.skipRange annotation), the same in every channel
// (but one it is the way into): a catalog built from the CSVs alone, as OperatorHub.io's
// replaces mode builds it, has the same graph. The skipRange is bounded below by the
// catalog's oldest release.
func TestCSVEdgesAreTheCatalogs(t *testing.T) {
	csv := readCSV(t, filepath.Join(envtest.RepoRoot(), "bundle"))
	own := entry{Name: csv.Name, Replaces: csv.Spec.Replaces, Skips: csv.Spec.Skips, SkipRange: csv.Annotations[bundle.SkipRangeAnnotation]}
	if own.Replaces == "" || own.SkipRange == "" {
		t.Fatalf("the CSV has replaces %q and olm.skipRange %q: the previous releases dangle in replaces mode", own.Replaces, own.SkipRange)
	}
	raw, err := os.ReadFile(catalogFile())
	if err != nil {
		t.Fatal(err)
	}
	blobs := parse(t, raw)
	oldest := ""
	var versions []semver.Version
	for _, b := range blobs {
		if b.Schema == "olm.bundle" {
			v := semver.MustParse(strings.TrimPrefix(b.Name, bundle.Package+".v"))
			versions = append(versions, v)
		}
	}
	sort.Slice(versions, func(i, j int) bool { return versions[i].LT(versions[j]) })
	oldest = versions[0].String()
	if !strings.HasPrefix(own.SkipRange, ">="+oldest+" ") {
		t.Errorf("olm.skipRange %q is not bounded below by the oldest release %s", own.SkipRange, oldest)
	}
	compared := 0
	for _, b := range blobs {
		if b.Schema != "olm.channel" {
			continue
		}
		for i, e := range b.Entries {
			if e.Name != csv.Name {
				continue
			}
			if i == 0 && e.Replaces == "" && own.Replaces != "" {
				t.Logf("channel %s: the way in, skipRange %q", b.Name, e.SkipRange)
				continue
			}
			if !reflect.DeepEqual(e, own) {
				t.Errorf("channel %s: %+v, the CSV says %+v", b.Name, e, own)
			}
			compared++
		}
	}
	if compared == 0 {
		t.Fatalf("%s is in no channel of the catalog", csv.Name)
	}
	t.Logf("%s: replaces %s, skipRange %q, as in %d channels", csv.Name, own.Replaces, own.SkipRange, compared)
}

// community/ is what make catalog writes: regenerating it changes nothing.
func TestCommunityFilesAreFresh(t *testing.T) {
	root := envtest.RepoRoot()
	tmp := t.TempDir()
	args := append([]string{"run", "./hack/catalogchannels", "-community", tmp, "-image-tag-base", imageTagBase(t), "-reviewers", "linstor-operator"}, releaseDirs(t)...)
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("catalogchannels -community: %v\n%s", err, out)
	}
	n := 0
	_ = filepath.Walk(tmp, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(tmp, path)
		want, _ := os.ReadFile(path)
		got, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil || !bytes.Equal(want, got) {
			t.Errorf("%s is stale: run `make catalog`", rel)
		}
		n++
		return nil
	})
	if n != 3 {
		t.Errorf("%d community files, want two ci.yaml and the catalog template", n)
	}
}

type basicTemplate struct {
	Schema  string           `json:"schema"`
	Entries []map[string]any `json:"entries"`
}

// The olm.template.basic catalog template renders the committed catalog: the same
// package and channels (the upgrade graph), and one bundle image per release of the
// catalog, IMAGE_TAG_BASE-bundle:v<version> as make bundle-build tags it. opm renders
// the bundles from those images (make catalog-build does).
func TestBasicTemplateIsTheCatalogsGraph(t *testing.T) {
	root := envtest.RepoRoot()
	raw, err := os.ReadFile(filepath.Join(root, bundle.CommunityOpenShiftDir, bundle.BasicTemplateFile))
	if err != nil {
		t.Fatal(err)
	}
	var tmpl basicTemplate
	if err := yaml.Unmarshal(raw, &tmpl); err != nil {
		t.Fatal(err)
	}
	catalogRaw, err := os.ReadFile(catalogFile())
	if err != nil {
		t.Fatal(err)
	}
	if problems := templateProblems(tmpl, parse(t, catalogRaw), imageTagBase(t)); len(problems) > 0 {
		t.Error(strings.Join(problems, "\n"))
	}
	// The check sees a changed graph and a bundle the template lacks.
	mutated := tmpl
	mutated.Entries = slices.Clone(tmpl.Entries)
	for i, e := range mutated.Entries {
		if e["schema"] == "olm.channel" && e["name"] == "stable" {
			c := map[string]any{}
			for k, v := range e {
				c[k] = v
			}
			entries := slices.Clone(c["entries"].([]any))
			entries = entries[:len(entries)-1]
			c["entries"] = entries
			mutated.Entries[i] = c
		}
	}
	if len(templateProblems(mutated, parse(t, catalogRaw), imageTagBase(t))) == 0 {
		t.Error("a channel missing its head went unseen")
	}
	var fewer basicTemplate
	fewer.Schema = tmpl.Schema
	for _, e := range tmpl.Entries {
		if e["schema"] != "olm.bundle" || !strings.HasSuffix(fmt.Sprint(e["image"]), ":v0.2.0") {
			fewer.Entries = append(fewer.Entries, e)
		}
	}
	if len(templateProblems(fewer, parse(t, catalogRaw), imageTagBase(t))) == 0 {
		t.Error("a release without its bundle image went unseen")
	}
}

func templateProblems(tmpl basicTemplate, catalog []blob, imageTagBase string) []string {
	var problems []string
	if tmpl.Schema != bundle.BasicTemplateSchema {
		problems = append(problems, fmt.Sprintf("schema %q, want %s", tmpl.Schema, bundle.BasicTemplateSchema))
	}
	// The template's package and channel blobs, compared as the catalog parses them.
	var fromTemplate []blob
	images := map[string]bool{}
	for _, e := range tmpl.Entries {
		switch e["schema"] {
		case "olm.bundle":
			images[fmt.Sprint(e["image"])] = true
			if len(e) != 2 {
				problems = append(problems, fmt.Sprintf("bundle entry %v: a basic template's bundle is only its image", e))
			}
		default:
			raw, _ := yaml.Marshal(e)
			var b blob
			if err := yaml.Unmarshal(raw, &b); err != nil {
				problems = append(problems, err.Error())
			}
			fromTemplate = append(fromTemplate, b)
		}
	}
	var graph []blob
	want := map[string]bool{}
	for _, b := range catalog {
		if b.Schema == "olm.bundle" {
			want[fmt.Sprintf("%s-bundle:v%s", imageTagBase, strings.TrimPrefix(b.Name, bundle.Package+".v"))] = true
			continue
		}
		graph = append(graph, b)
	}
	if !reflect.DeepEqual(fromTemplate, graph) {
		problems = append(problems, fmt.Sprintf("package and channels\n%+v\nthe catalog's\n%+v", fromTemplate, graph))
	}
	if !reflect.DeepEqual(images, want) {
		problems = append(problems, fmt.Sprintf("bundle images %v, want one per release %v", keys(images), keys(want)))
	}
	return problems
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// The two ci.yaml files follow their pipelines' rules (operator-pipelines:
// operatorcert/schemas/ci-schema.json, the read-config task, the static checks):
//   - OpenShift's community catalogs: File-Based Catalog mode (fbc.enabled), no updateGraph
//     (read-config fails "FBC is enabled, updateGraph cannot be defined"), a mapping of the
//     catalog template that exists to catalogs no older than the bundle's
//     com.redhat.openshift.versions, each catalog in one mapping (check_catalog_usage_ci_config);
//   - OperatorHub.io: updateGraph replaces-mode (check_ci_upgrade_graph allows
//     replaces-mode and semver-mode), and then, from the releases' CSVs and channel
//     annotations as that pipeline reads them, no dangling bundle in any channel
//     (check_dangling_bundles) and no loop (check_upgrade_graph_loop).
func TestCommunityCIConfigsFollowThePipelines(t *testing.T) {
	root := envtest.RepoRoot()
	read := func(dir string) map[string]any {
		raw, err := os.ReadFile(filepath.Join(root, dir, "ci.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]any{}
		if err := yaml.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	schemaKeys := map[string]bool{"updateGraph": true, "reviewers": true, "merge": true, "cert_project_id": true, "fbc": true}
	for _, dir := range []string{bundle.CommunityOpenShiftDir, bundle.CommunityOperatorHubDir} {
		for k := range read(dir) {
			if !schemaKeys[k] {
				t.Errorf("%s/ci.yaml: key %s is not in the pipeline's schema", dir, k)
			}
		}
		if r, _ := read(dir)["reviewers"].([]any); len(r) == 0 {
			t.Errorf("%s/ci.yaml: no reviewers (the schema wants at least one)", dir)
		}
	}

	openshift := read(bundle.CommunityOpenShiftDir)
	if _, ok := openshift["updateGraph"]; ok {
		t.Error("OpenShift ci.yaml: updateGraph beside fbc.enabled, which the pipeline refuses")
	}
	fbc, _ := openshift["fbc"].(map[string]any)
	if fbc["enabled"] != true {
		t.Errorf("OpenShift ci.yaml: fbc %v, want enabled", fbc)
	}
	for k := range fbc {
		if k != "enabled" && k != "version_promotion_strategy" && k != "catalog_mapping" {
			t.Errorf("OpenShift ci.yaml: fbc.%s is not in the schema (additionalProperties: false)", k)
		}
	}
	oldest := strings.TrimPrefix(readAnnotations(t, filepath.Join(root, "bundle"))[bundle.OpenShiftVersionsAnnotation], "v")
	if oldest == "" {
		t.Fatal("bundle/ has no " + bundle.OpenShiftVersionsAnnotation)
	}
	seen := map[string]bool{}
	mapping, _ := fbc["catalog_mapping"].([]any)
	if len(mapping) == 0 {
		t.Error("OpenShift ci.yaml: no fbc.catalog_mapping")
	}
	for _, m := range mapping {
		m := m.(map[string]any)
		name := fmt.Sprint(m["template_name"])
		if _, err := os.Stat(filepath.Join(root, bundle.CommunityOpenShiftDir, "catalog-templates", name)); err != nil {
			t.Errorf("catalog_mapping template %s: %v", name, err)
		}
		if m["type"] != "olm.template.basic" && m["type"] != "olm.semver" {
			t.Errorf("catalog_mapping type %v", m["type"])
		}
		names, _ := m["catalog_names"].([]any)
		if len(names) == 0 {
			t.Errorf("catalog_mapping %s: no catalog_names", name)
		}
		for _, c := range names {
			c := fmt.Sprint(c)
			if seen[c] {
				t.Errorf("catalog %s is mapped twice", c)
			}
			seen[c] = true
			v, err := semver.ParseTolerant(strings.TrimPrefix(c, "v"))
			o, _ := semver.ParseTolerant(oldest)
			if err != nil || v.LT(o) {
				t.Errorf("catalog %s: the bundle allows OpenShift %s and later", c, oldest)
			}
		}
	}
	if !seen["v"+oldest] {
		t.Errorf("catalogs %v: the oldest OpenShift the bundle allows, v%s, is not among them", keys(seen), oldest)
	}

	operatorhub := read(bundle.CommunityOperatorHubDir)
	if operatorhub["updateGraph"] != "replaces-mode" {
		t.Errorf("OperatorHub.io ci.yaml: updateGraph %v, want replaces-mode", operatorhub["updateGraph"])
	}
	if _, ok := operatorhub["fbc"]; ok {
		t.Error("OperatorHub.io ci.yaml: fbc settings, but that catalog is built from the CSVs")
	}
	releases := csvReleases(t, releaseDirs(t))
	for _, p := range replacesModeProblems(releases) {
		t.Error(p)
	}
	t.Logf("replaces mode over %d releases: no dangling bundle, no loop", len(releases))
}

// csvRelease is a bundle as the pipeline's replaces mode sees it.
type csvRelease struct {
	name      string
	version   semver.Version
	channels  []string
	replaces  string
	skips     []string
	skipRange string
}

func csvReleases(t *testing.T, dirs []string) []csvRelease {
	t.Helper()
	var out []csvRelease
	for _, dir := range dirs {
		csv := readCSV(t, dir)
		out = append(out, csvRelease{
			name: csv.Name, version: csv.Spec.Version.Version,
			channels: strings.Split(readAnnotations(t, dir)["operators.operatorframework.io.bundle.channels.v1"], ","),
			replaces: csv.Spec.Replaces, skips: csv.Spec.Skips, skipRange: csv.Annotations[bundle.SkipRangeAnnotation],
		})
	}
	return out
}

// replacesModeProblems is the pipeline's update_graph in replaces-mode, per channel: an
// edge from each bundle a CSV's replaces, skips or olm.skipRange names to that CSV, both
// in the channel; a bundle that is neither the channel's head (its newest) nor the source
// of an edge dangles.
func replacesModeProblems(releases []csvRelease) []string {
	var problems []string
	channels := map[string][]csvRelease{}
	for _, r := range releases {
		for _, c := range r.channels {
			channels[c] = append(channels[c], r)
		}
	}
	for name, members := range channels {
		sort.Slice(members, func(i, j int) bool { return members[i].version.LT(members[j].version) })
		edges := map[string][]string{}
		for _, to := range members {
			var inRange semver.Range
			if to.skipRange != "" {
				r, err := semver.ParseRange(to.skipRange)
				if err != nil {
					problems = append(problems, fmt.Sprintf("%s: olm.skipRange %q: %v", to.name, to.skipRange, err))
					continue
				}
				inRange = r
			}
			for _, from := range members {
				if from.name == to.name {
					continue
				}
				if from.name == to.replaces || slices.Contains(to.skips, from.name) || (inRange != nil && inRange(from.version)) {
					edges[from.name] = append(edges[from.name], to.name)
				}
			}
		}
		head := members[len(members)-1].name
		for _, m := range members {
			if m.name != head && len(edges[m.name]) == 0 {
				problems = append(problems, fmt.Sprintf("channel %s has dangling bundle %s", name, m.name))
			}
		}
		// A loop: an edge back to a bundle on the current path.
		state := map[string]int{}
		var visit func(n string) bool
		visit = func(n string) bool {
			state[n] = 1
			for _, m := range edges[n] {
				if state[m] == 1 || (state[m] == 0 && visit(m)) {
					problems = append(problems, fmt.Sprintf("channel %s: upgrade graph loop through %s -> %s", name, n, m))
					return true
				}
			}
			state[n] = 2
			return false
		}
		for _, m := range members {
			if state[m.name] == 0 {
				visit(m.name)
			}
		}
	}
	sort.Strings(problems)
	return problems
}

// The replaces-mode check sees what it exists for: this tree's CSV without its edges
// leaves the older releases of the stable channel dangling (as before this CSV carried
// them), and an edge back makes a loop.
func TestReplacesModeChecksCatchMistakes(t *testing.T) {
	releases := csvReleases(t, releaseDirs(t))
	last := len(releases) - 1
	noEdges := slices.Clone(releases)
	noEdges[last].replaces, noEdges[last].skips, noEdges[last].skipRange = "", nil, ""
	if got := strings.Join(replacesModeProblems(noEdges), "\n"); !strings.Contains(got, "channel stable has dangling bundle linstor-operator.v0.2.0") {
		t.Errorf("without the CSV's edges: %q", got)
	}
	loop := slices.Clone(releases)
	loop[0].replaces = releases[last].name
	if got := strings.Join(replacesModeProblems(loop), "\n"); !strings.Contains(got, "loop") {
		t.Errorf("with an edge back to the oldest release: %q", got)
	}
}
