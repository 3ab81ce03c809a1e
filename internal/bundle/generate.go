package bundle

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/blang/semver/v4"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/linstor-operator/linstor-operator/pkg/names"
	"github.com/linstor-operator/linstor-operator/pkg/upgrade"
)

// Package is the OLM package name.
const Package = "linstor-operator"

// Options choose what is generated.
type Options struct {
	// Root is the repository root; Out is where bundle/ is written.
	Root, Out string
	// Version is the operator version (semver, no "v").
	Version string
	// Image is the operator image.
	Image string
	// Channels and DefaultChannel for the bundle's annotations.
	Channels       []string
	DefaultChannel string
	// CreatedAt is the createdAt annotation; fixed so regeneration is reproducible.
	CreatedAt string
	// Dockerfile is where bundle.Dockerfile is written; empty means Root/bundle.Dockerfile.
	Dockerfile string
	// Digests pins every image by digest (image reference -> "sha256:..."); nil keeps
	// the tags. See ReadDigests.
	Digests map[string]string
}

const (
	deploymentName   = "linstor-operator-controller-manager"
	serviceAccount   = "linstor-operator-controller-manager"
	webhookPort      = 9443
	conversionPath   = "/convert"
	scorecardConfig  = "config/scorecard/patches"
	managerContainer = "manager"
)

// Generate writes the bundle.
func Generate(o Options) error {
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	if err := readYAML(filepath.Join(o.Root, "config/manifests/bases", Package+".clusterserviceversion.yaml"), csv); err != nil {
		return err
	}
	csv.Name = fmt.Sprintf("%s.v%s", Package, o.Version)
	csv.Namespace = ""
	v, err := parseSemver(o.Version)
	if err != nil {
		return fmt.Errorf("VERSION %q: %w", o.Version, err)
	}
	csv.Spec.Version.Version = v
	csv.Annotations["createdAt"] = o.CreatedAt
	csv.Annotations[LinstorVersionAnnotation] = upgrade.Current.Target.String()
	csv.Annotations["operators.operatorframework.io/builder"] = "linstor-operator-bundlegen"
	csv.Annotations["operators.operatorframework.io/project_layout"] = "go.kubebuilder.io/v4"

	crds, err := readCRDs(filepath.Join(o.Root, "config/crd/bases"))
	if err != nil {
		return err
	}
	kinds := map[string]map[string]*kindInfo{}
	for _, version := range []string{"v1", "v1alpha1"} {
		if kinds[version], err = readMarkers(filepath.Join(o.Root, "api", version)); err != nil {
			return err
		}
	}
	csv.Spec.CustomResourceDefinitions.Owned = ownedCRDs(crds, kinds)

	edges, err := releaseEdges(o, csv.Name, v)
	if err != nil {
		return err
	}
	csv.Spec.Replaces, csv.Spec.Skips = edges.Replaces, edges.Skips
	if edges.SkipRange != "" {
		csv.Annotations[SkipRangeAnnotation] = edges.SkipRange
	}

	imgs := releaseImages(o.Image)
	if o.Digests != nil {
		if imgs, err = pinImages(imgs, o.Digests); err != nil {
			return fmt.Errorf("pinning image digests: %w", err)
		}
	}
	csv.Annotations["containerImage"] = imgs[0].image
	deploy, err := managerDeployment(o, imgs)
	if err != nil {
		return err
	}
	rbac, err := ReadRBAC(o.Root, "")
	if err != nil {
		return err
	}
	clusterPermissions, rbacObjects, err := installRBAC(rbac)
	if err != nil {
		return err
	}
	csv.Spec.InstallStrategy = operatorsv1alpha1.NamedInstallStrategy{
		StrategyName: operatorsv1alpha1.InstallStrategyNameDeployment,
		StrategySpec: operatorsv1alpha1.StrategyDetailsDeployment{
			DeploymentSpecs:    []operatorsv1alpha1.StrategyDeploymentSpec{{Name: deploymentName, Label: deploy.Labels, Spec: deploy.Spec}},
			ClusterPermissions: clusterPermissions,
		},
	}
	if csv.Spec.WebhookDefinitions, err = webhookDefinitions(o.Root, crds); err != nil {
		return err
	}
	csv.Spec.RelatedImages = relatedImages(imgs)
	csv.Annotations[DisconnectedAnnotation] = strconv.FormatBool(allPinned(imgs))
	if csv.Annotations["alm-examples"], err = almExamples(o.Root); err != nil {
		return err
	}
	// After install, the console offers to create the LinstorCluster, pre-filled with
	// its sample (the same object as its alm-example).
	if csv.Annotations[InitializationResourceAnnotation], err = initializationResource(o.Root); err != nil {
		return err
	}

	// The CRDs in the bundle convert through the webhook; OLM points it at its service.
	for _, crd := range crds {
		if len(crd.Spec.Versions) > 1 {
			crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
				Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{
					ClientConfig:             &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{Name: "linstor-operator-webhook-service", Namespace: "system", Path: ptr.To(conversionPath)}},
					ConversionReviewVersions: []string{"v1"},
				},
			}
		}
	}

	manifests := filepath.Join(o.Out, "manifests")
	if err := os.RemoveAll(manifests); err != nil {
		return err
	}
	if err := os.MkdirAll(manifests, 0o755); err != nil {
		return err
	}
	if err := writeYAML(filepath.Join(manifests, Package+".clusterserviceversion.yaml"), csv); err != nil {
		return err
	}
	for _, crd := range crds {
		if err := writeYAML(filepath.Join(manifests, crd.Spec.Group+"_"+crd.Spec.Names.Plural+".yaml"), crd); err != nil {
			return err
		}
	}
	if err := writeExtras(o, manifests); err != nil {
		return err
	}
	if err := writeRBACObjects(manifests, rbacObjects); err != nil {
		return err
	}
	if err := writeMetadata(o); err != nil {
		return err
	}
	return writeScorecard(o)
}

// ownedCRDs lists every served version with the markers of its Go package; resources
// come from the storage version.
func ownedCRDs(crds []*apiextensionsv1.CustomResourceDefinition, kinds map[string]map[string]*kindInfo) []operatorsv1alpha1.CRDDescription {
	var owned []operatorsv1alpha1.CRDDescription
	for _, crd := range crds {
		hub := kinds["v1"][crd.Spec.Names.Kind]
		if hub == nil {
			hub = &kindInfo{DisplayName: crd.Spec.Names.Kind}
		}
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			info := kinds[v.Name][crd.Spec.Names.Kind]
			if info == nil {
				info = hub
			}
			d := operatorsv1alpha1.CRDDescription{
				Name: crd.Name, Version: v.Name, Kind: crd.Spec.Names.Kind,
				DisplayName: info.DisplayName, Description: info.Description, Resources: hub.Resources,
				SpecDescriptors: info.Spec, StatusDescriptors: info.Status,
			}
			if !v.Storage {
				d.Description = "Deprecated: use " + v1Name(crd) + ". " + info.Description
			}
			owned = append(owned, d)
		}
	}
	sort.Slice(owned, func(i, j int) bool {
		if owned[i].Name != owned[j].Name {
			return owned[i].Name < owned[j].Name
		}
		return owned[i].Version < owned[j].Version
	})
	return owned
}

func v1Name(crd *apiextensionsv1.CustomResourceDefinition) string {
	return crd.Spec.Group + "/v1 " + crd.Spec.Names.Kind
}

func managerDeployment(o Options, imgs []releaseImage) (*appsv1.Deployment, error) {
	docs, err := readDocs(filepath.Join(o.Root, "config/manager/manager.yaml"))
	if err != nil {
		return nil, err
	}
	for _, doc := range docs {
		if !bytes.Contains(doc, []byte("kind: Deployment")) {
			continue
		}
		d := &appsv1.Deployment{}
		if err := yaml.UnmarshalStrict(doc, d); err != nil {
			return nil, err
		}
		spec := &d.Spec.Template.Spec
		spec.ServiceAccountName = serviceAccount
		for i := range spec.Containers {
			c := &spec.Containers[i]
			if c.Name != managerContainer {
				continue
			}
			c.Image = imgs[0].image
			// Every image the operator may run, so a mirror (and a Subscription's
			// spec.config.env) can replace each one.
			for _, img := range imgs[1:] {
				c.Env = append(c.Env, corev1.EnvVar{Name: img.env, Value: img.image})
			}
			c.Env = append(c.Env, corev1.EnvVar{Name: imgs[0].env, Value: imgs[0].image})
		}
		d.Labels = managedByOLM(d.Labels)
		d.Spec.Template.Labels = managedByOLM(d.Spec.Template.Labels)
		return d, nil
	}
	return nil, fmt.Errorf("config/manager/manager.yaml has no Deployment")
}

func webhookDefinitions(root string, crds []*apiextensionsv1.CustomResourceDefinition) ([]operatorsv1alpha1.WebhookDescription, error) {
	var conv []string
	for _, crd := range crds {
		if len(crd.Spec.Versions) > 1 {
			conv = append(conv, crd.Name)
		}
	}
	sort.Strings(conv)
	defs := []operatorsv1alpha1.WebhookDescription{{
		Type: operatorsv1alpha1.ConversionWebhook, GenerateName: "cconversion.linstor.io", DeploymentName: deploymentName,
		ContainerPort: 443, TargetPort: ptrIntStr(webhookPort), WebhookPath: ptr.To(conversionPath),
		SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
		ConversionCRDs: conv,
	}}
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	if err := readYAML(filepath.Join(root, "config/webhook/manifests.yaml"), &vwc); err != nil {
		return nil, err
	}
	for _, w := range vwc.Webhooks {
		defs = append(defs, operatorsv1alpha1.WebhookDescription{
			Type: operatorsv1alpha1.ValidatingAdmissionWebhook, GenerateName: w.Name, DeploymentName: deploymentName,
			ContainerPort: 443, TargetPort: ptrIntStr(webhookPort), WebhookPath: w.ClientConfig.Service.Path,
			Rules: w.Rules, FailurePolicy: w.FailurePolicy, SideEffects: w.SideEffects, AdmissionReviewVersions: w.AdmissionReviewVersions,
		})
	}
	return defs, nil
}

func almExamples(root string) (string, error) {
	// Every sample, so each provided API (both versions) has an example.
	files, err := filepath.Glob(filepath.Join(root, "config/samples/linstor_*.yaml"))
	if err != nil {
		return "", err
	}
	var objs []map[string]any
	for _, f := range files {
		u, err := readSample(f)
		if err != nil {
			return "", err
		}
		objs = append(objs, u)
	}
	return toJSON(objs)
}

// InitializationResourceAnnotation names, on the CSV, the object the console asks to
// create once the operator is installed (a JSON object; without a namespace the
// console uses the install namespace, where LINSTOR runs).
const InitializationResourceAnnotation = "operatorframework.io/initialization-resource"

func initializationResource(root string) (string, error) {
	u, err := readSample(filepath.Join(root, "config/samples/linstor_v1_linstorcluster.yaml"))
	if err != nil {
		return "", err
	}
	return toJSON(u)
}

// readSample reads a sample without its namespace: the console creates it in the
// namespace the user is in.
func readSample(path string) (map[string]any, error) {
	u := map[string]any{}
	if err := readYAML(path, &u); err != nil {
		return nil, err
	}
	meta, ok := u["metadata"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: no metadata", path)
	}
	delete(meta, "namespace")
	return u, nil
}

func toJSON(v any) (string, error) {
	raw, err := yaml.Marshal(v)
	if err != nil {
		return "", err
	}
	j, err := yaml.YAMLToJSON(raw)
	return string(j), err
}

// writeExtras adds the metrics Service and the operator's PodDisruptionBudget (RBAC
// objects: writeRBACObjects).
func writeExtras(o Options, dir string) error {
	var svc corev1.Service
	if err := readYAML(filepath.Join(o.Root, "config/default/metrics_service.yaml"), &svc); err != nil {
		return err
	}
	svc.Name, svc.Namespace = "linstor-operator-controller-manager-metrics-service", ""
	svc.Labels = managedByOLM(svc.Labels)
	if err := writeYAML(filepath.Join(dir, svc.Name+"_v1_service.yaml"), &svc); err != nil {
		return err
	}
	// Keeps a webhook-serving replica through node drains (OLM installs PDBs from bundles).
	var pdb policyv1.PodDisruptionBudget
	if err := readYAML(filepath.Join(o.Root, "config/manager/pdb.yaml"), &pdb); err != nil {
		return err
	}
	pdb.Name, pdb.Namespace = deploymentName, ""
	pdb.Labels = managedByOLM(pdb.Labels)
	return writeYAML(filepath.Join(dir, pdb.Name+"_policy_v1_poddisruptionbudget.yaml"), &pdb)
}

func metadataAnnotations(o Options) map[string]string {
	return map[string]string{
		"operators.operatorframework.io.bundle.mediatype.v1":       "registry+v1",
		"operators.operatorframework.io.bundle.manifests.v1":       "manifests/",
		"operators.operatorframework.io.bundle.metadata.v1":        "metadata/",
		"operators.operatorframework.io.bundle.package.v1":         Package,
		"operators.operatorframework.io.bundle.channels.v1":        strings.Join(o.Channels, ","),
		"operators.operatorframework.io.bundle.channel.default.v1": o.DefaultChannel,
		"operators.operatorframework.io.test.mediatype.v1":         "scorecard+v1",
		"operators.operatorframework.io.test.config.v1":            "tests/scorecard/",
		"operators.operatorframework.io.metrics.builder":           "linstor-operator-bundlegen",
		"operators.operatorframework.io.metrics.mediatype.v1":      "metrics+v1",
		"operators.operatorframework.io.metrics.project_layout":    "go.kubebuilder.io/v4",
		OpenShiftVersionsAnnotation:                                OpenShiftVersions,
	}
}

func writeMetadata(o Options) error {
	dir := filepath.Join(o.Out, "metadata")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeYAML(filepath.Join(dir, "annotations.yaml"), map[string]any{"annotations": metadataAnnotations(o)}); err != nil {
		return err
	}
	// bundle.Dockerfile carries the same annotations as labels.
	keys := make([]string, 0)
	ann := metadataAnnotations(o)
	for k := range ann {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("# Generated by `make bundle`. Do not edit.\nFROM scratch\n\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "LABEL %s=%s\n", k, ann[k])
	}
	b.WriteString("\nCOPY bundle/manifests /manifests/\nCOPY bundle/metadata /metadata/\nCOPY bundle/tests/scorecard /tests/scorecard/\n")
	path := o.Dockerfile
	if path == "" {
		path = filepath.Join(o.Root, "bundle.Dockerfile")
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func writeScorecard(o Options) error {
	cfg := map[string]any{}
	if err := readYAML(filepath.Join(o.Root, "config/scorecard/bases/config.yaml"), &cfg); err != nil {
		return err
	}
	var tests []any
	for _, f := range []string{"basic.config.yaml", "olm.config.yaml"} {
		var ops []map[string]any
		if err := readYAML(filepath.Join(o.Root, scorecardConfig, f), &ops); err != nil {
			return err
		}
		for _, op := range ops {
			tests = append(tests, op["value"])
		}
	}
	cfg["stages"] = []any{map[string]any{"parallel": true, "tests": tests}}
	cfg["storage"] = map[string]any{"spec": map[string]any{"mountPath": map[string]any{}}}
	dir := filepath.Join(o.Out, "tests", "scorecard")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return writeYAML(filepath.Join(dir, "config.yaml"), cfg)
}

func readCRDs(dir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := readYAML(f, crd); err != nil {
			return nil, err
		}
		out = append(out, crd)
	}
	return out, nil
}

func readDocs(path string) ([][]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return bytes.Split(raw, []byte("\n---\n")), nil
}

func readYAML(path string, into any) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	raw = bytes.TrimPrefix(raw, []byte("---\n"))
	if err := yaml.Unmarshal(raw, into); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// writeYAML writes obj without status and creationTimestamp noise.
func writeYAML(path string, obj any) error {
	raw, err := yaml.Marshal(obj)
	if err != nil {
		return err
	}
	m := map[string]any{}
	if err := yaml.Unmarshal(raw, &m); err != nil {
		return err
	}
	if _, isObject := m["kind"]; isObject {
		delete(m, "status")
	}
	out, err := yaml.Marshal(m)
	if err != nil {
		return err
	}
	return os.WriteFile(path, nullTimestamps.ReplaceAll(out, nil), 0o644)
}

// nullTimestamps are the zero creationTimestamps typed objects serialize.
var nullTimestamps = regexp.MustCompile(`(?m)^\s*creationTimestamp: null\n`)

// SkipRangeAnnotation on the CSV: the versions this release replaces in one step.
const SkipRangeAnnotation = "olm.skipRange"

// releaseEdges is the release's entry in the catalog's channels (UpgradeEdges): the
// frozen releases in bundles/, this tree's bundle/ when it is an older version (a
// test-only release generated beside it), and the release being generated.
func releaseEdges(o Options, name string, version semver.Version) (CatalogEntry, error) {
	dirs, err := filepath.Glob(filepath.Join(o.Root, "bundles", "*"))
	if err != nil {
		return CatalogEntry{}, err
	}
	if _, err := os.Stat(filepath.Join(o.Root, "bundle", "manifests")); err == nil {
		dirs = append(dirs, filepath.Join(o.Root, "bundle"))
	}
	this := CatalogRelease{Name: name, Version: version, Linstor: upgrade.Current.Target}
	all := []CatalogRelease{this}
	for _, dir := range dirs {
		r, err := ReadCatalogRelease(dir)
		if err != nil {
			return CatalogEntry{}, err
		}
		if r.Version.LT(version) {
			all = append(all, r)
		}
	}
	return UpgradeEdges(this, all)
}

// ManagedByOLM is the app.kubernetes.io/managed-by of every object of the bundle: OLM
// creates and updates them (config/ says kustomize, which deploys them without OLM).
const ManagedByOLM = "olm"

func managedByOLM(labels map[string]string) map[string]string {
	if labels == nil {
		labels = map[string]string{}
	}
	labels[names.LabelManagedBy] = ManagedByOLM
	return labels
}

func parseSemver(v string) (semver.Version, error) { return semver.Parse(v) }

func ptrIntStr(i int) *intstr.IntOrString { v := intstr.FromInt32(int32(i)); return &v }
