// Package alerts checks the alert rules config/prometheus ships with a real promtool
// (PROMTOOL, built by `make promtool`): the rules load, their unit tests in
// config/prometheus/tests pass, every alert has a test that makes it fire and one where
// it is quiet, a runbook section in docs/alerts.md that its runbook_url names, and
// reads only linstor_operator_* metrics the operator registers.
package alerts

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

var (
	root      = filepath.Join("..", "..")
	rulesFile = filepath.Join(root, "config", "prometheus", "rules.yaml")
	testsDir  = filepath.Join(root, "config", "prometheus", "tests")
	runbook   = filepath.Join(root, "docs", "alerts.md")
)

// runbookBase is where every runbook_url points, followed by "#<section anchor>".
const runbookBase = "https://github.com/linstor-operator/linstor-operator/blob/main/docs/alerts.md#"

type prometheusRule struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   map[string]any `json:"metadata"`
	Spec       struct {
		Groups []ruleGroup `json:"groups"`
	} `json:"spec"`
}

type ruleGroup struct {
	Name  string `json:"name"`
	Rules []rule `json:"rules"`
}

type rule struct {
	Alert       string            `json:"alert"`
	Record      string            `json:"record,omitempty"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// unitTests is what this package reads of a promtool test file.
type unitTests struct {
	RuleFiles []string `json:"rule_files"`
	Tests     []struct {
		AlertRuleTests []struct {
			Alertname string `json:"alertname"`
			ExpAlerts []any  `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

func promtool(t *testing.T) string {
	t.Helper()
	p := os.Getenv("PROMTOOL")
	if p == "" {
		t.Fatal("PROMTOOL is not set: run `make promtool` and set PROMTOOL to the path it prints (bin/promtool/promtool-<version>); `make test` sets it")
	}
	return p
}

func loadRules(t *testing.T) []ruleGroup {
	t.Helper()
	data, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var pr prometheusRule
	if err := yaml.UnmarshalStrict(data, &pr); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	if pr.Kind != "PrometheusRule" || len(pr.Spec.Groups) == 0 {
		t.Fatalf("%s: want a PrometheusRule with rule groups, got kind %q with %d groups", rulesFile, pr.Kind, len(pr.Spec.Groups))
	}
	return pr.Spec.Groups
}

func alerts(groups []ruleGroup) []rule {
	var out []rule
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				out = append(out, r)
			}
		}
	}
	return out
}

// workdir holds the rule groups as the plain rules file promtool reads (rules.yaml) and
// a copy of every unit test file beside it, which names that file.
func workdir(t *testing.T, groups []ruleGroup) (dir string, testFiles []string) {
	t.Helper()
	dir = t.TempDir()
	plain, err := yaml.Marshal(map[string]any{"groups": groups})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), plain, 0o644); err != nil {
		t.Fatal(err)
	}
	paths, err := filepath.Glob(filepath.Join(testsDir, "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no promtool unit tests in %s (%v)", testsDir, err)
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(p)
		if name == "rules.yaml" {
			t.Fatalf("%s: the name is taken by the extracted rules", p)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		testFiles = append(testFiles, name)
	}
	return dir, testFiles
}

func run(t *testing.T, dir, bin string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	t.Logf("promtool %s:\n%s", strings.Join(args, " "), out.String())
}

func TestRulesPassPromtool(t *testing.T) {
	bin := promtool(t)
	dir, testFiles := workdir(t, loadRules(t))
	run(t, dir, bin, "check", "rules", "rules.yaml")
	run(t, dir, bin, append([]string{"test", "rules"}, testFiles...)...)
}

// Every alert has a unit test that expects it to fire and one that expects it quiet
// (healthy series, or after the fault is gone); each test file tests the extracted
// rules, not a file of its own.
func TestEveryAlertIsUnitTested(t *testing.T) {
	fires, quiet := map[string]bool{}, map[string]bool{}
	paths, err := filepath.Glob(filepath.Join(testsDir, "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no promtool unit tests in %s (%v)", testsDir, err)
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var ut unitTests
		if err := yaml.Unmarshal(data, &ut); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if len(ut.RuleFiles) != 1 || ut.RuleFiles[0] != "rules.yaml" {
			t.Errorf("%s: rule_files is %v, want [rules.yaml] (the rules extracted from %s)", p, ut.RuleFiles, rulesFile)
		}
		for _, tc := range ut.Tests {
			for _, at := range tc.AlertRuleTests {
				if len(at.ExpAlerts) > 0 {
					fires[at.Alertname] = true
				} else {
					quiet[at.Alertname] = true
				}
			}
		}
	}
	known := map[string]bool{}
	for _, a := range alerts(loadRules(t)) {
		known[a.Alert] = true
		if !fires[a.Alert] {
			t.Errorf("alert %s has no unit test in %s that expects it to fire", a.Alert, testsDir)
		}
		if !quiet[a.Alert] {
			t.Errorf("alert %s has no unit test in %s that expects it quiet (healthy or resolved)", a.Alert, testsDir)
		}
	}
	for name := range fires {
		if !known[name] {
			t.Errorf("unit tests expect alert %s, which %s does not define", name, rulesFile)
		}
	}
}

// Every alert says how bad it is, names its object, waits a while, and points to its
// own section of docs/alerts.md.
func TestEveryAlertHasARunbook(t *testing.T) {
	data, err := os.ReadFile(runbook)
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]string{} // heading -> anchor
	anchors := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if heading, ok := strings.CutPrefix(line, "### "); ok {
			sections[heading] = anchor(heading)
			anchors[anchor(heading)] = true
		}
	}
	seen := map[string]bool{}
	for _, a := range alerts(loadRules(t)) {
		if seen[a.Alert] {
			t.Errorf("alert %s is defined twice", a.Alert)
		}
		seen[a.Alert] = true
		switch a.Labels["severity"] {
		case "critical", "warning", "info":
		default:
			t.Errorf("alert %s: severity label %q, want critical, warning or info", a.Alert, a.Labels["severity"])
		}
		if !strings.Contains(a.Annotations["summary"], "{{ $labels.") {
			t.Errorf("alert %s: the summary %q names no object ({{ $labels.<name> }})", a.Alert, a.Annotations["summary"])
		}
		if a.For == "" {
			t.Errorf("alert %s has no for: one bad sample would page", a.Alert)
		}
		want, ok := sections[a.Alert]
		if !ok {
			t.Errorf("alert %s has no section \"### %s\" in %s", a.Alert, a.Alert, runbook)
			continue
		}
		url := a.Annotations["runbook_url"]
		fragment, ok := strings.CutPrefix(url, runbookBase)
		switch {
		case !ok:
			t.Errorf("alert %s: runbook_url %q does not start with %s", a.Alert, url, runbookBase)
		case !anchors[fragment]:
			t.Errorf("alert %s: runbook_url %q names no section of %s", a.Alert, url, runbook)
		case fragment != want:
			t.Errorf("alert %s: runbook_url %q points to #%s, not to its own section #%s", a.Alert, url, fragment, want)
		}
	}
	for heading := range sections {
		if !seen[heading] {
			t.Errorf("%s has a section %q for an alert that does not exist", runbook, heading)
		}
	}
}

// anchor is the fragment GitHub gives a Markdown heading: lower case, punctuation
// dropped, spaces as hyphens.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

var (
	operatorMetric   = regexp.MustCompile(`\blinstor_operator_[a-z0-9_]+`)
	registeredMetric = regexp.MustCompile(`Name:\s*"(linstor_operator_[a-z0-9_]+)"`)
)

// An alert on a metric nobody exports would never fire: every linstor_operator_* name
// an expression reads is registered by the operator's code (histograms by their base
// name).
func TestAlertsReadExportedOperatorMetrics(t *testing.T) {
	registered := map[string]string{}
	for _, dir := range []string{"controllers", "pkg", "internal"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range registeredMetric.FindAllStringSubmatch(string(data), -1) {
				registered[m[1]] = path
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(registered) == 0 {
		t.Fatal("found no registered linstor_operator_* metric in the Go sources: the pattern is stale")
	}
	exported := func(name string) bool {
		if _, ok := registered[name]; ok {
			return true
		}
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, suffix); ok && registered[base] != "" {
				return true
			}
		}
		return false
	}
	var names []string
	for n := range registered {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, a := range alerts(loadRules(t)) {
		for _, name := range operatorMetric.FindAllString(a.Expr, -1) {
			if !exported(name) {
				t.Errorf("alert %s reads %s, which the operator does not register (it registers %s)", a.Alert, name, strings.Join(names, ", "))
			}
		}
	}
	t.Logf("registered: %v", names)
}
