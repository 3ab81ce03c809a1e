// Package catalog checks the file-based catalog: opm validates it, it is fresh, and its
// upgrade graph leads every release to the current one.
package catalog

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blang/semver/v4"
	"sigs.k8s.io/yaml"

	"github.com/linstor-operator/linstor-operator/test/envtest"
)

const current = "linstor-operator.v0.3.0"

func catalogFile() string {
	return filepath.Join(envtest.RepoRoot(), "catalog", "linstor-operator", "index.yaml")
}

func TestCatalogValidates(t *testing.T) {
	out, err := exec.Command(envtest.OPMBinary(t), "validate", filepath.Join(envtest.RepoRoot(), "catalog")).CombinedOutput()
	if err != nil {
		t.Fatalf("opm validate: %v\n%s", err, out)
	}
}

func TestCatalogIsFresh(t *testing.T) {
	tmp := t.TempDir()
	cmd := exec.Command(filepath.Join(envtest.RepoRoot(), "hack", "render-catalog.sh"), envtest.OPMBinary(t), tmp)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("rendering: %v\n%s", err, out)
	}
	want, _ := os.ReadFile(filepath.Join(tmp, "linstor-operator", "index.yaml"))
	got, err := os.ReadFile(catalogFile())
	if err != nil || !bytes.Equal(want, got) {
		t.Fatal("catalog/linstor-operator/index.yaml is stale: run `make catalog` and commit")
	}
}

type blob struct {
	Schema  string  `json:"schema"`
	Name    string  `json:"name"`
	Package string  `json:"package"`
	Default string  `json:"defaultChannel"`
	Entries []entry `json:"entries"`
	Props   []struct {
		Type  string         `json:"type"`
		Value map[string]any `json:"value"`
	} `json:"properties"`
}

type entry struct {
	Name      string   `json:"name"`
	Replaces  string   `json:"replaces"`
	Skips     []string `json:"skips"`
	SkipRange string   `json:"skipRange"`
}

func parse(t *testing.T, raw []byte) []blob {
	var out []blob
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		doc = strings.TrimPrefix(strings.TrimSpace(doc), "---")
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var b blob
		if err := yaml.Unmarshal([]byte(doc), &b); err != nil {
			t.Fatalf("parsing catalog: %v", err)
		}
		out = append(out, b)
	}
	return out
}

// graphProblems walks each channel: one head, the current release; every entry reaches
// it through replaces or skipRange; no replaces or entry without a bundle.
func graphProblems(blobs []blob) []string {
	var problems []string
	versions := map[string]semver.Version{}
	for _, b := range blobs {
		if b.Schema != "olm.bundle" {
			continue
		}
		for _, p := range b.Props {
			if p.Type == "olm.package" {
				v, err := semver.Parse(fmt.Sprint(p.Value["version"]))
				if err != nil {
					problems = append(problems, b.Name+": bad version")
				}
				versions[b.Name] = v
			}
		}
	}
	channels := 0
	for _, b := range blobs {
		if b.Schema != "olm.channel" {
			continue
		}
		channels++
		names := map[string]bool{}
		for _, e := range b.Entries {
			names[e.Name] = true
			if _, ok := versions[e.Name]; !ok {
				problems = append(problems, fmt.Sprintf("channel %s: entry %s has no bundle", b.Name, e.Name))
			}
		}
		next := map[string][]string{} // entry -> entries that upgrade from it
		for _, e := range b.Entries {
			if e.Replaces != "" {
				if !names[e.Replaces] {
					problems = append(problems, fmt.Sprintf("channel %s: %s replaces %s, which is not in the channel", b.Name, e.Name, e.Replaces))
				}
				next[e.Replaces] = append(next[e.Replaces], e.Name)
			}
			if e.SkipRange != "" {
				r, err := semver.ParseRange(e.SkipRange)
				if err != nil {
					problems = append(problems, fmt.Sprintf("channel %s: %s: bad skipRange: %v", b.Name, e.Name, err))
					continue
				}
				for other, v := range versions {
					if names[other] && other != e.Name && r(v) {
						next[other] = append(next[other], e.Name)
					}
				}
			}
		}
		// The head is the channel's newest release: the current one for stable; a
		// LINSTOR line's channel ends at that line's last release.
		newest := ""
		for _, e := range b.Entries {
			if newest == "" || versions[e.Name].GT(versions[newest]) {
				newest = e.Name
			}
		}
		if b.Name == "stable" && newest != current {
			problems = append(problems, fmt.Sprintf("channel stable: newest entry %s, want %s", newest, current))
		}
		var heads []string
		for _, e := range b.Entries {
			if len(next[e.Name]) == 0 {
				heads = append(heads, e.Name)
			}
		}
		if len(heads) != 1 || heads[0] != newest {
			problems = append(problems, fmt.Sprintf("channel %s: heads %v, want exactly [%s]", b.Name, heads, newest))
		}
		for _, e := range b.Entries {
			seen, queue := map[string]bool{e.Name: true}, []string{e.Name}
			for len(queue) > 0 {
				n := queue[0]
				queue = queue[1:]
				for _, m := range next[n] {
					if !seen[m] {
						seen[m] = true
						queue = append(queue, m)
					}
				}
			}
			if !seen[newest] {
				problems = append(problems, fmt.Sprintf("channel %s: %s cannot upgrade to %s", b.Name, e.Name, newest))
			}
		}
	}
	if channels < 2 {
		problems = append(problems, fmt.Sprintf("%d channels, want stable and one per LINSTOR line", channels))
	}
	return problems
}

func TestUpgradeGraph(t *testing.T) {
	raw, err := os.ReadFile(catalogFile())
	if err != nil {
		t.Fatal(err)
	}
	blobs := parse(t, raw)
	for _, p := range graphProblems(blobs) {
		t.Error(p)
	}
	var pkg blob
	for _, b := range blobs {
		if b.Schema == "olm.package" {
			pkg = b
		}
	}
	if pkg.Default != "stable" {
		t.Errorf("default channel = %q, want stable", pkg.Default)
	}
}

func TestGraphChecksCatchMistakes(t *testing.T) {
	raw, err := os.ReadFile(catalogFile())
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]func([]blob){
		"dangling replaces": func(bs []blob) {
			for i := range bs {
				for j := range bs[i].Entries {
					if bs[i].Entries[j].Replaces != "" {
						bs[i].Entries[j].Replaces = "linstor-operator.v0.0.9"
						bs[i].Entries[j].SkipRange = ""
					}
				}
			}
		},
		"broken upgrade edge": func(bs []blob) {
			for i := range bs {
				for j := range bs[i].Entries {
					bs[i].Entries[j].Replaces, bs[i].Entries[j].SkipRange = "", ""
				}
			}
		},
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			blobs := parse(t, raw)
			mutate(blobs)
			if len(graphProblems(blobs)) == 0 {
				t.Fatal("graph check missed the mistake")
			}
		})
	}
}
