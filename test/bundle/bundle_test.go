// Package bundle checks the committed OLM bundle: the operatorframework validator suite
// with zero errors and warnings, scorecard-style checks, and freshness.
package bundle

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/api/pkg/validation"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/linstor-operator/linstor-operator/internal/bundle"
	"github.com/linstor-operator/linstor-operator/pkg/images"
	"github.com/linstor-operator/linstor-operator/pkg/upgrade"
	"github.com/linstor-operator/linstor-operator/test/envtest"
)

func bundleDir() string { return filepath.Join(envtest.RepoRoot(), "bundle") }

func load(t *testing.T, dir string) *manifests.Bundle {
	t.Helper()
	b, err := manifests.GetBundleFromDir(dir)
	if err != nil {
		t.Fatalf("loading bundle: %v", err)
	}
	return b
}

// acceptedWarnings are validator warnings reviewed and kept, each with its reason.
var acceptedWarnings = map[string]string{
	// GoodPracticesValidator flags any clusterPermissions rule that may create CRDs.
	// LINSTOR's k8s database backend creates one CRD per table on first start and
	// migrates them on upgrades (internal.linstor.linbit.com); the rule belongs to the
	// LINSTOR controller's account, and updates are limited to those tables by name
	// (config/rbac/linstor_controller_rbac.yaml). The operator's own account may create
	// them too, for one reason: a restore into a cluster whose LINSTOR tables are gone
	// (disaster recovery, a migration that dropped a table) recreates the backup's tables
	// before LINSTOR first starts; it creates only names of pkg/dbbackup.Tables, and
	// changes existing CRDs only by those names.
	"CSV contains permissions to create CRD": "LINSTOR's k8s database backend",
}

// TestOperatorFrameworkSuite runs what `operator-sdk bundle validate
// --select-optional suite=operatorframework` runs, and allows no warning but the
// reviewed ones.
func TestOperatorFrameworkSuite(t *testing.T) {
	b := load(t, bundleDir())
	validators := validation.DefaultBundleValidators.WithValidators(
		validation.OperatorHubV2Validator,
		validation.StandardCapabilitiesValidator,
		validation.StandardCategoriesValidator,
		validation.AlphaDeprecatedAPIsValidator,
		validation.GoodPracticesValidator,
	)
	objs := append(b.ObjectsToValidate(), map[string]string{"k8s-version": "1.34"})
	results := validators.Validate(objs...)
	checked := 0
	for _, r := range results {
		for _, e := range r.Errors {
			t.Errorf("%s %s: error: %v", r.Name, r.Name, e)
		}
	warnings:
		for _, w := range r.Warnings {
			for text := range acceptedWarnings {
				if strings.Contains(w.Error(), text) {
					continue warnings
				}
			}
			t.Errorf("%s: warning: %v", r.Name, w)
		}
		checked++
	}
	t.Logf("%d validator results, no errors, no warnings", checked)
}

// problems runs the scorecard-like checks on a CSV and its CRDs.
func problems(csv *operatorsv1alpha1.ClusterServiceVersion, crds []*apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	owned := map[string]operatorsv1alpha1.CRDDescription{}
	for _, d := range csv.Spec.CustomResourceDefinitions.Owned {
		owned[d.Kind+"/"+d.Version] = d
	}
	// Every CRD: validation schema, owned in every served version, resources listed.
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				out = append(out, crd.Name+"/"+v.Name+": no validation schema")
			}
			if _, ok := owned[crd.Spec.Names.Kind+"/"+v.Name]; v.Served && !ok {
				out = append(out, crd.Name+"/"+v.Name+": served but not owned by the CSV")
			}
		}
	}
	// alm-examples: every top-level spec field has a spec descriptor; conditions have a status descriptor.
	var examples []map[string]any
	if err := json.Unmarshal([]byte(csv.Annotations["alm-examples"]), &examples); err != nil {
		return append(out, "alm-examples: "+err.Error())
	}
	if len(examples) == 0 {
		out = append(out, "alm-examples is empty")
	}
	for _, ex := range examples {
		kind := ex["kind"].(string)
		version := strings.TrimPrefix(ex["apiVersion"].(string), "linstor.io/")
		d, ok := owned[kind+"/"+version]
		if !ok {
			out = append(out, "alm-example "+kind+" is not an owned CRD")
			continue
		}
		// scorecard's olm-crds-have-resources: every owned CRD lists what it creates or affects.
		if len(d.Resources) == 0 {
			out = append(out, kind+": no resources listed")
		}
		paths := map[string]bool{}
		for _, sd := range d.SpecDescriptors {
			paths[sd.Path] = true
		}
		// As scorecard's basic-check-spec: a spec block, which may be empty (defaults only).
		spec, ok := ex["spec"].(map[string]any)
		if !ok {
			out = append(out, kind+": alm-example has no spec")
		}
		for field := range spec {
			if !paths[field] {
				out = append(out, kind+": spec field "+field+" has no spec descriptor")
			}
		}
		hasConditions := false
		for _, sd := range d.StatusDescriptors {
			if sd.Path == "conditions" {
				hasConditions = true
			}
		}
		if !hasConditions {
			out = append(out, kind+": no status descriptor for conditions")
		}
	}
	// Related images: every operand image of the release, and the same as env on the manager.
	related := map[string]string{}
	for _, ri := range csv.Spec.RelatedImages {
		related[ri.Name] = ri.Image
	}
	for _, r := range images.Default().Related() {
		name := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(r[0], "RELATED_IMAGE_"), "_", "-"))
		if related[name] != r[1] {
			out = append(out, "relatedImages lacks "+name+"="+r[1])
		}
	}
	// The LINSTOR versions the release runs besides its target, for disconnected mirrors.
	stones := bundle.LinstorVersionImages(upgrade.Current)
	if len(upgrade.Current.Runnable) > 1 && len(stones) == 0 {
		out = append(out, "no images for the release's other runnable LINSTOR versions")
	}
	for _, ri := range stones {
		if related[ri.Name] != ri.Image {
			out = append(out, "relatedImages lacks "+ri.Name+"="+ri.Image)
		}
	}
	env := map[string]string{}
	for _, dep := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		for _, c := range dep.Spec.Template.Spec.Containers {
			for _, e := range c.Env {
				env[e.Name] = e.Value
			}
		}
	}
	for _, r := range images.Default().Related() {
		if env[r[0]] != r[1] {
			out = append(out, "manager env "+r[0]+" does not match relatedImages")
		}
	}
	// Install modes: AllNamespaces only (OLM's rule for conversion webhooks).
	for _, m := range csv.Spec.InstallModes {
		if m.Supported != (m.Type == operatorsv1alpha1.InstallModeTypeAllNamespaces) {
			out = append(out, "install mode "+string(m.Type)+" must be supported only for AllNamespaces")
		}
	}
	// Webhooks: one conversion webhook listing every multi-version CRD.
	var conv []string
	for _, w := range csv.Spec.WebhookDefinitions {
		if w.Type == operatorsv1alpha1.ConversionWebhook {
			conv = append(conv, w.ConversionCRDs...)
			if w.WebhookPath == nil || *w.WebhookPath != "/convert" || w.ContainerPort != 443 || w.TargetPort == nil || w.TargetPort.IntValue() != 9443 {
				out = append(out, "conversion webhook must serve /convert on 443 -> 9443")
			}
		}
	}
	sort.Strings(conv)
	var multi []string
	for _, crd := range crds {
		if len(crd.Spec.Versions) > 1 {
			multi = append(multi, crd.Name)
		}
	}
	sort.Strings(multi)
	if strings.Join(conv, ",") != strings.Join(multi, ",") {
		out = append(out, "conversionCRDs "+strings.Join(conv, ",")+" != multi-version CRDs "+strings.Join(multi, ","))
	}
	return out
}

func bundleParts(t *testing.T) (*operatorsv1alpha1.ClusterServiceVersion, []*apiextensionsv1.CustomResourceDefinition) {
	b := load(t, bundleDir())
	return b.CSV, b.V1CRDs
}

func TestScorecardChecks(t *testing.T) {
	csv, crds := bundleParts(t)
	for _, p := range problems(csv, crds) {
		t.Error(p)
	}
	if n := len(csv.Spec.RelatedImages); n < 20 {
		t.Errorf("relatedImages = %d, want every operand image", n)
	}
}

// TestChecksCatchMistakes proves the checks fail on the mistakes they exist for.
func TestChecksCatchMistakes(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*operatorsv1alpha1.ClusterServiceVersion)
		want   string
	}{
		{"removed spec descriptor", func(c *operatorsv1alpha1.ClusterServiceVersion) {
			for i, d := range c.Spec.CustomResourceDefinitions.Owned {
				if d.Kind == "LinstorSatelliteConfiguration" && d.Version == "v1" {
					var keep []operatorsv1alpha1.SpecDescriptor
					for _, sd := range d.SpecDescriptors {
						if sd.Path != "storagePools" {
							keep = append(keep, sd)
						}
					}
					c.Spec.CustomResourceDefinitions.Owned[i].SpecDescriptors = keep
				}
			}
		}, "LinstorSatelliteConfiguration: spec field storagePools has no spec descriptor"},
		{"removed related image", func(c *operatorsv1alpha1.ClusterServiceVersion) {
			c.Spec.RelatedImages = c.Spec.RelatedImages[:len(c.Spec.RelatedImages)-1]
		}, "relatedImages lacks"},
		{"owned CRD without resources", func(c *operatorsv1alpha1.ClusterServiceVersion) {
			for i, d := range c.Spec.CustomResourceDefinitions.Owned {
				if d.Kind == "LinstorNodeConnection" {
					c.Spec.CustomResourceDefinitions.Owned[i].Resources = nil
				}
			}
		}, "LinstorNodeConnection: no resources listed"},
		{"extra install mode", func(c *operatorsv1alpha1.ClusterServiceVersion) {
			c.Spec.InstallModes[0].Supported = true
		}, "must be supported only for AllNamespaces"},
		{"conversion CRD missing", func(c *operatorsv1alpha1.ClusterServiceVersion) {
			for i := range c.Spec.WebhookDefinitions {
				if c.Spec.WebhookDefinitions[i].Type == operatorsv1alpha1.ConversionWebhook {
					c.Spec.WebhookDefinitions[i].ConversionCRDs = c.Spec.WebhookDefinitions[i].ConversionCRDs[1:]
				}
			}
		}, "conversionCRDs"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			csv, crds := bundleParts(t)
			tc.mutate(csv)
			if got := strings.Join(problems(csv, crds), "\n"); !strings.Contains(got, tc.want) {
				t.Fatalf("checks missed the mistake; problems:\n%s", got)
			}
		})
	}
}

// TestBundleIsFresh regenerates the bundle and compares it with the committed one.
func TestBundleIsFresh(t *testing.T) {
	root := envtest.RepoRoot()
	out := t.TempDir()
	dockerfile := filepath.Join(out, "bundle.Dockerfile")
	err := bundle.Generate(bundle.Options{Root: root, Out: out, Version: "0.3.0", Image: "quay.io/linstor-operator/linstor-operator:v0.3.0",
		Channels: []string{"stable", "stable-linstor-1.33"}, DefaultChannel: "stable", CreatedAt: "2026-11-24T00:00:00Z", Dockerfile: dockerfile})
	if err != nil {
		t.Fatal(err)
	}
	compare := func(generated, committed string) {
		want, _ := os.ReadFile(generated)
		got, err := os.ReadFile(committed)
		if err != nil || !bytes.Equal(want, got) {
			t.Errorf("%s is stale: run `make bundle` and commit", committed)
		}
	}
	files := 0
	_ = filepath.Walk(out, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || path == dockerfile {
			return err
		}
		rel, _ := filepath.Rel(out, path)
		compare(path, filepath.Join(bundleDir(), rel))
		files++
		return nil
	})
	compare(dockerfile, filepath.Join(root, "bundle.Dockerfile"))
	committed := 0
	_ = filepath.Walk(bundleDir(), func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			committed++
		}
		return err
	})
	if committed != files {
		t.Errorf("bundle/ has %d files, generation makes %d: run `make bundle`", committed, files)
	}
}

// TestBundleInstallsRBACAsOLMKeepsItNamespaced: OLM copies CSV permissions into
// cluster-wide roles for an AllNamespaces install, so the bundle has none; the Roles
// ship as objects. Only the LINSTOR controller's account may create CRDs, and nobody may
// bind or escalate.
func TestBundleInstallsRBACAsOLMKeepsItNamespaced(t *testing.T) {
	csv, _ := bundleParts(t)
	strategy := csv.Spec.InstallStrategy.StrategySpec
	if len(strategy.Permissions) != 0 {
		t.Errorf("CSV permissions %v: OLM would promote them cluster-wide", strategy.Permissions)
	}
	accounts := map[string]bool{}
	for _, p := range strategy.ClusterPermissions {
		accounts[p.ServiceAccountName] = true
		for _, r := range p.Rules {
			for _, v := range r.Verbs {
				if v == "bind" || v == "escalate" || v == "impersonate" || v == "*" {
					t.Errorf("%s may %s %v", p.ServiceAccountName, v, r.Resources)
				}
				if v == "create" && slices.Contains(r.Resources, "customresourcedefinitions") &&
					p.ServiceAccountName != "linstor-operator-linstor-controller" && p.ServiceAccountName != "linstor-operator-controller-manager" {
					t.Errorf("%s may create CRDs", p.ServiceAccountName)
				}
			}
		}
	}
	for _, want := range []string{"linstor-operator-controller-manager", "linstor-operator-linstor-controller", "linstor-operator-linstor-csi-controller", "linstor-operator-linstor-csi-node", "linstor-operator-linstor-ha-controller"} {
		if !accounts[want] {
			t.Errorf("no clusterPermissions for %s", want)
		}
	}
	b := load(t, bundleDir())
	kinds := map[string]int{}
	for _, o := range b.Objects {
		kinds[o.GetKind()]++
	}
	// A Role and a RoleBinding for the operator, leader election and each operand; the
	// satellite's and the migration rehearsal's accounts, which have no cluster-wide rule
	// for OLM to create them with.
	if kinds["Role"] != 8 || kinds["RoleBinding"] != 8 || kinds["ServiceAccount"] != 2 {
		t.Errorf("bundle objects %v, want 8 Roles, 8 RoleBindings, 2 ServiceAccounts", kinds)
	}
}
