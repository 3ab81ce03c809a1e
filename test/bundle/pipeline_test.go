package bundle

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/linstor-operator/linstor-operator/internal/bundle"
	"github.com/linstor-operator/linstor-operator/pkg/names"
	"github.com/linstor-operator/linstor-operator/test/envtest"
)

// The bundle names the OpenShift versions whose catalogs may carry it, in its metadata and
// as the bundle image's label, and they are exactly those that ship the CSV's
// minKubeVersion: the community pipeline's check_api_version_constraints refuses a
// minKubeVersion without the annotation, and a range reaching an OpenShift whose
// Kubernetes is older (4.17 ships 1.30).
func TestOpenShiftVersionsFollowMinKubeVersion(t *testing.T) {
	csv, _ := bundleParts(t)
	ann := metadataAnnotations(t)
	oldest, err := bundle.OldestOpenShiftFor(csv.Spec.MinKubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	want := "v" + oldest
	if got := openShiftVersionsProblem(ann, csv.Spec.MinKubeVersion, want); got != "" {
		t.Error(got)
	}
	dockerfile, err := os.ReadFile(filepath.Join(envtest.RepoRoot(), "bundle.Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	if label := "LABEL " + bundle.OpenShiftVersionsAnnotation + "=" + want + "\n"; !strings.Contains(string(dockerfile), label) {
		t.Errorf("bundle.Dockerfile lacks %q: the bundle image's labels are what the pipeline reads", label)
	}
	t.Logf("minKubeVersion %s: %s %s (OpenShift %s ships Kubernetes %s)", csv.Spec.MinKubeVersion, bundle.OpenShiftVersionsAnnotation, want, oldest, bundle.OpenShiftKubernetes[oldest])
	// One minor older would conflict, as the pipeline judges it.
	if older, _ := bundle.OldestOpenShiftFor("1.30"); older != "4.17" {
		t.Errorf("Kubernetes 1.30 is OpenShift %s in the table, want 4.17", older)
	}
	if got := openShiftVersionsProblem(ann, csv.Spec.MinKubeVersion, "v4.17"); got == "" {
		t.Error("the check accepts v4.17 with minKubeVersion 1.31")
	}
}

// openShiftVersionsProblem is check_api_version_constraints of the community pipeline
// for "vX.Y" (X.Y and later), given the table, plus the annotation's presence.
func openShiftVersionsProblem(ann map[string]string, minKube, want string) string {
	got := ann[bundle.OpenShiftVersionsAnnotation]
	if got == "" {
		return "metadata/annotations.yaml has no " + bundle.OpenShiftVersionsAnnotation + " though the CSV sets minKubeVersion"
	}
	oldest := strings.TrimPrefix(got, "v")
	kube, ok := bundle.OpenShiftKubernetes[oldest]
	if !ok {
		return got + ": not an OpenShift version of the table"
	}
	if kubeMinor(kube) < kubeMinor(minKube) {
		return "OpenShift " + oldest + " (Kubernetes " + kube + ") conflicts with minKubeVersion " + minKube
	}
	if got != want {
		return bundle.OpenShiftVersionsAnnotation + " " + got + ", want " + want + ": the oldest OpenShift that ships minKubeVersion"
	}
	return ""
}

func kubeMinor(v string) string {
	parts := strings.SplitN(v, ".", 3)
	if len(parts[1]) == 1 {
		return "0" + parts[1]
	}
	return parts[1]
}

// OLM creates and updates every object of the bundle: none says kustomize manages it.
func TestBundleObjectsAreManagedByOLM(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(bundleDir(), "manifests", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(raw, &u.Object); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		switch u.GetKind() {
		case "CustomResourceDefinition":
			continue
		case "ClusterServiceVersion":
			csv, _ := bundleParts(t)
			for _, d := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
				if got := d.Label[names.LabelManagedBy]; got != bundle.ManagedByOLM {
					t.Errorf("CSV Deployment %s: %s=%q, want %q", d.Name, names.LabelManagedBy, got, bundle.ManagedByOLM)
				}
				if got := d.Spec.Template.Labels[names.LabelManagedBy]; got != bundle.ManagedByOLM {
					t.Errorf("CSV Deployment %s pods: %s=%q, want %q", d.Name, names.LabelManagedBy, got, bundle.ManagedByOLM)
				}
				checked++
			}
			continue
		}
		if got := u.GetLabels()[names.LabelManagedBy]; got != bundle.ManagedByOLM {
			t.Errorf("%s %s: %s=%q, want %q", u.GetKind(), u.GetName(), names.LabelManagedBy, got, bundle.ManagedByOLM)
		}
		checked++
	}
	if checked < 20 {
		t.Errorf("checked %d objects, want every object of the bundle", checked)
	}
}

// The default channel is stable, which by OLM's channel naming convention holds releases
// for production (olm.operatorframework.io/docs/best-practices/channel-naming); the CSV's
// maturity says the same, not alpha.
func TestMaturityFollowsTheDefaultChannel(t *testing.T) {
	csv, _ := bundleParts(t)
	want := map[string]string{"stable": "stable", "fast": "stable", "candidate": "beta"}
	channel := metadataAnnotations(t)["operators.operatorframework.io.bundle.channel.default.v1"]
	prefix := ""
	for p := range want {
		if strings.HasPrefix(channel, p) {
			prefix = p
		}
	}
	if prefix == "" {
		t.Fatalf("default channel %q follows no naming convention", channel)
	}
	if csv.Spec.Maturity != want[prefix] {
		t.Errorf("maturity %q beside the default channel %q, want %q", csv.Spec.Maturity, channel, want[prefix])
	}
}

// The CSV's description is what OperatorHub and the OpenShift console show: it says how
// to install with oc on OpenShift, which channel and approval to choose, and explains
// every validator warning the bundle keeps; the links include the documentation.
func TestCSVDescriptionTellsWhatAUserNeeds(t *testing.T) {
	csv, _ := bundleParts(t)
	// Whitespace as the console shows it: lines are wrapped in the CSV.
	d := strings.Join(strings.Fields(csv.Spec.Description), " ")
	for _, want := range []string{
		"### On OpenShift",
		"oc label namespace linstor pod-security.kubernetes.io/enforce=privileged",
		"oc get csv -n linstor",
		"### Channels and approval",
		"**Manual** approval",
	} {
		if !strings.Contains(d, want) {
			t.Errorf("the description lacks %q", want)
		}
	}
	// The channel of this release's LINSTOR line, as the bundle declares it.
	for _, c := range strings.Split(metadataAnnotations(t)["operators.operatorframework.io.bundle.channels.v1"], ",") {
		if strings.HasPrefix(c, "stable-linstor-") && !strings.Contains(d, "`"+c+"`") {
			t.Errorf("the description does not name the release's line channel %s", c)
		}
	}
	for warning := range acceptedWarnings {
		if !strings.Contains(d, warning) {
			t.Errorf("the validator warning %q is kept but the description does not explain it", warning)
		}
	}
	documentation := ""
	for _, l := range csv.Spec.Links {
		if l.Name == "Documentation" {
			documentation = l.URL
		}
	}
	if !strings.HasPrefix(documentation, csv.Annotations["repository"]) || !strings.HasSuffix(documentation, "/docs") {
		t.Errorf("Documentation link %q, want the repository's docs/", documentation)
	}
	// The OpenShift version the description names is the bundle's.
	if v := strings.TrimPrefix(metadataAnnotations(t)[bundle.OpenShiftVersionsAnnotation], "v"); !strings.Contains(d, "OpenShift "+v+" and later") {
		t.Errorf("the description does not say OpenShift %s and later", v)
	}
}

func metadataAnnotations(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(bundleDir(), "metadata", "annotations.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var a struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.Unmarshal(raw, &a); err != nil {
		t.Fatal(err)
	}
	return a.Annotations
}
