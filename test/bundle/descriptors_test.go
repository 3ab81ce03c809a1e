package bundle

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/linstor-operator/linstor-operator/pkg/crdschema"
)

// The OpenShift console's rules for descriptors, read from its source
// (github.com/openshift/console, frontend/packages/...):
//
//   - operator-lifecycle-manager/src/components/descriptors/types.ts: the SpecCapability
//     and StatusCapability enums, the only x-descriptors it knows.
//   - .../descriptors/const.ts: COMMON_, OBJECT_, ARRAY_ and PRIMITIVE_COMPATIBLE_CAPABILITIES
//     (which capability works on which schema type), DEPRECATED_CAPABILITIES, and the
//     regular expressions of k8sResourcePrefix (group:version:Kind), select: and
//     fieldDependency:<path>:<value>.
//   - .../descriptors/utils.tsx getValidCapabilitiesForSchema: a capability on a schema
//     type it is not compatible with is dropped ("will have no effect"); the type is
//     rjsf's getSchemaType (no type and no properties: primitive).
//   - .../operand/utils.ts capabilitiesToUISchema / descriptorsToUISchema: a
//     k8sResourcePrefix capability wins and becomes a K8sResourceWidget listing objects of
//     that kind (modelFor: known kinds only); select: options become a dropdown; the
//     first fieldDependency only is used; a descriptor whose path is not in the schema
//     is dropped with a warning.
//   - .../descriptors/spec/spec-descriptor-input.tsx: nodeAffinity, podAffinity,
//     podAntiAffinity, resourceRequirements and updateStrategy are whole-object fields
//     (console-shared/src/components/dynamic-form/fields.tsx: NodeAffinityField edits
//     requiredDuringScheduling... nodeSelectorTerms and preferred... terms, PodAffinityField
//     the pod affinity terms, ResourceRequirementsField limits and requests); hidden,
//     imagePullPolicy, booleanSwitch, checkbox, number, password, podCount, text and
//     select are widgets of one value.
//   - console-shared/src/components/dynamic-form/templates.tsx FieldTemplate: a
//     dependency compares _.get(formData, ['spec', ...controlFieldPath]).toString() with
//     the value, so the control path is from spec and cannot go through a list
//     (stringPathToUISchemaPath turns [0] into "items", which formData does not have).
//   - .../descriptors/status/index.tsx StatusDescriptorDetailsItem: a status value that is
//     an object or a list renders nothing ("A valid x-descriptor must be provided for
//     non-primitive properties") unless it is podStatuses; conditions are shown by
//     operand/index.tsx from the conditions capability, on a list.
//   - .../descriptors/utils.tsx groupDescriptorDetails: hidden descriptors are left out of
//     the details page; "a.b" groups under "a", "a[0].b" lists every item.
//   - console-shared/src/utils/utils.ts getSchemaAtPath: digits in a path step into items.
//   - .../descriptors/spec/index.tsx BooleanSwitch (the details page) shows
//     Boolean(value) of the stored object, and the form's SwitchWidget and
//     CheckboxWidget (console-shared/.../dynamic-form/widgets.tsx) the same: a field the
//     object does not have is OFF. A schema default applies only where its parent object
//     exists (the API server's structural defaulting), so each parent needs one too; and a
//     field whose unset state means something else than false cannot be a switch.
//   - .../operand/index.tsx getOperandStatus: the list of instances shows status.phase,
//     else status.status, else status.state, else every True condition's type;
//     OperandDetails puts the status descriptor named "Status" (isMainStatusDescriptor,
//     .../descriptors/utils.tsx) first on the details page.
const (
	specPrefix = "urn:alm:descriptor:com.tectonic.ui:"
	k8sPrefix  = "urn:alm:descriptor:io.kubernetes:"
)

// typeClass is what getValidCapabilitiesForSchema sees: object, array or primitive.
type typeClass string

const (
	object    typeClass = "object"
	array     typeClass = "array"
	primitive typeClass = "primitive"
)

// capability is one row of the console's table.
type capability struct {
	urn    string // exact, or a prefix when prefix is set
	prefix bool
	spec   bool // a SpecCapability
	status bool // a StatusCapability
	on     typeClass
	// shape checks what the widget needs of the schema beyond its type class.
	shape func(d descriptorCtx) string
	// whole: the widget edits the entire object, so its fields need no descriptors.
	whole bool
}

var capabilities = []capability{
	// COMMON_COMPATIBLE_CAPABILITIES: any type.
	{urn: specPrefix + "advanced", spec: true},
	{urn: specPrefix + "hidden", spec: true, status: true, whole: true},
	{urn: specPrefix + "fieldDependency:", prefix: true, spec: true, shape: checkDependency},
	// OBJECT_COMPATIBLE_CAPABILITIES.
	{urn: specPrefix + "resourceRequirements", spec: true, on: object, whole: true, shape: hasProperties("limits", "requests")},
	{urn: specPrefix + "nodeAffinity", spec: true, on: object, whole: true, shape: checkNodeAffinity},
	{urn: specPrefix + "podAffinity", spec: true, on: object, whole: true, shape: checkPodAffinity},
	{urn: specPrefix + "podAntiAffinity", spec: true, on: object, whole: true, shape: checkPodAffinity},
	{urn: specPrefix + "updateStrategy", spec: true, on: object, whole: true, shape: hasProperties("type")},
	{urn: specPrefix + "selector:", prefix: true, spec: true, on: object, shape: checkSelector},
	{urn: specPrefix + "podStatuses", status: true, on: object},
	// ARRAY_COMPATIBLE_CAPABILITIES.
	{urn: specPrefix + "endpointList", spec: true, on: array},
	{urn: "urn:alm:descriptor:io.kubernetes.conditions", status: true, on: array, shape: checkConditions},
	// PRIMITIVE_COMPATIBLE_CAPABILITIES.
	{urn: k8sPrefix, prefix: true, spec: true, status: true, on: primitive, shape: checkResourceKind},
	{urn: specPrefix + "select:", prefix: true, spec: true, on: primitive, shape: checkSelect},
	{urn: specPrefix + "imagePullPolicy", spec: true, on: primitive, shape: isType("string")},
	{urn: specPrefix + "podCount", spec: true, status: true, on: primitive, shape: isType("integer")},
	{urn: specPrefix + "booleanSwitch", spec: true, on: primitive, shape: isType("boolean")},
	{urn: specPrefix + "checkbox", spec: true, on: primitive, shape: isType("boolean")},
	{urn: specPrefix + "password", spec: true, status: true, on: primitive, shape: isType("string")},
	{urn: specPrefix + "text", spec: true, on: primitive, shape: isType("string", "int-or-string")},
	{urn: specPrefix + "number", spec: true, on: primitive, shape: isType("integer", "number")},
	{urn: "urn:alm:descriptor:text", status: true, on: primitive},
	{urn: "urn:alm:descriptor:org.w3:link", status: true, on: primitive, shape: isType("string")},
	{urn: "urn:alm:descriptor:io.kubernetes.phase", status: true, on: primitive, shape: isType("string")},
	{urn: "urn:alm:descriptor:io.kubernetes.phase:reason", status: true, on: primitive, shape: isType("string")},
	{urn: "urn:alm:descriptor:prometheusEndpoint", status: true, on: primitive},
}

// deprecated are DEPRECATED_CAPABILITIES: logged by the console, and on their way out.
var deprecated = []string{specPrefix + "arrayFieldGroup:", specPrefix + "fieldGroup:", specPrefix + "namespaceSelector", specPrefix + "label"}

// coreKinds are the core/v1 kinds a k8sResourcePrefix may name here (the console's
// modelFor knows them); kinds of linstor.io must be owned by the CSV.
var coreKinds = []string{"Secret", "ConfigMap", "Node", "Namespace", "ServiceAccount", "Service", "PersistentVolumeClaim", "Pod"}

// exemptBelow: fields at these paths ("*." matches any prefix) are Kubernetes types the
// console has no widget for; the field itself needs a descriptor, what lies below it
// does not: the form shows Kubernetes' own field names, documented by `kubectl explain`.
var exemptBelow = map[string]string{
	"*.tolerations": "corev1.Toleration: types.ts has no tolerations capability (io.kubernetes:Tolerations is a resource picker of a kind that does not exist)",
	"nodeAffinity":  "corev1.NodeSelector: the nodeAffinity field edits a NodeAffinity (requiredDuringScheduling...), not bare nodeSelectorTerms",
}

func isExemptBelow(path string) bool { return matchesPattern(exemptBelow, path) }

// matchesPattern: a key is a path, or "*." and the path's end.
func matchesPattern(patterns map[string]string, path string) bool {
	for p := range patterns {
		if path == p || (strings.HasPrefix(p, "*.") && strings.HasSuffix(path, p[1:])) {
			return true
		}
	}
	return false
}

// formOnly: spec fields left to the create form, which draws them from the CRD's schema
// (titled by their name, described by it). A descriptor would add nothing the details
// page can show: its row reads "None" while the field is unset and is empty once it is
// set (neverShown). Everything below them needs no descriptor either.
var formOnly = map[string]string{
	"*.tolerations":          "a list of corev1.Toleration",
	"*.affinity":             "a corev1.Affinity; the console's affinity editors are form widgets, its details page draws no affinity",
	"*.podTemplate":          "a free-form strategic-merge patch",
	"podTemplate":            "a free-form strategic-merge patch (LinstorSatelliteConfiguration)",
	"nodeAffinity":           "a corev1.NodeSelector (LinstorCluster, LinstorSatelliteConfiguration)",
	"ipFamilies":             "a list of IP families",
	"volumes.resourceGroups": "a list of resource group names",
}

// describedBelow: some descriptor's path lies below path.
func describedBelow(described map[string][]string, path string) bool {
	for p := range described {
		if strings.HasPrefix(p, path+".") || strings.HasPrefix(p, path+"[") {
			return true
		}
	}
	return false
}

// exemptSpec: kinds whose spec users do not write.
var exemptSpec = map[string]string{
	"LinstorSatellite": "written by the operator from the LinstorCluster and the LinstorSatelliteConfigurations; an internal object (operators.operatorframework.io/internal-objects), never created from the console",
}

// exemptStatus: status fields not worth a line on the details page.
var exemptStatus = map[string]string{
	"*/observedGeneration":              "bookkeeping for controllers",
	"LinstorCluster/satellitesSummary":  "the printer column's copy of satellites.ready and satellites.total, which have descriptors",
	"LinstorCluster/restore.clusterUID": "guards a recreated object against an old restore; means nothing to a reader",
	"LinstorCluster/restore.backupUID":  "tells a replaced LinstorBackup from the failed one; means nothing to a reader",
	"LinstorSatellite/poolsSummary":     "the printer column's summary of storagePools, which have descriptors",
}

// bookkeeping: status fields that say nothing a reader of the details page acts on.
// The console lists every status descriptor that is not hidden, a "None" row when the
// value is absent; these are hidden (or have no descriptor) and stay in the YAML.
var bookkeeping = map[string]string{
	"*/observedAt":                                    "when the operator last looked; the values below it are what matters",
	"LinstorCluster/upgrade.startedAt":                "when the upgrade started; its phase and message say where it is",
	"LinstorCluster/splitBrainResolution.startedAt":   "when the resolution started; its phase and message say where it is",
	"*/phaseStartedAt":                                "bounds a phase's timeout; the message says when it would expire",
	"*/acknowledgedAt":                                "when the operator first saw an annotation",
	"*/fingerprint":                                   "changes when a certificate is renewed; notAfter is what a reader checks",
	"*/confirmation":                                  "the annotation value already processed, against replays",
	"*/attempts":                                      "counts LINSTOR writes for crash safety",
	"LinstorCluster/tls.defaultMode":                  "the mode unset channels get; tls.internal and tls.api are the modes in effect",
	"LinstorCluster/splitBrainResolution.uid":         "the uid confirmed; the resource name is shown",
	"LinstorCluster/splitBrainResolution.storagePool": "where the discarded replica is rebuilt; LINSTOR's own view shows it",
}

func isBookkeeping(kind, path string) bool {
	last := path[strings.LastIndexAny(path, ".]")+1:]
	return bookkeeping[kind+"/"+path] != "" || bookkeeping["*/"+last] != ""
}

type descriptorCtx struct {
	kind, path, urn string
	displayName     string
	schema          *apiextensionsv1.JSONSchemaProps
	root            *apiextensionsv1.JSONSchemaProps // spec or status
	owned           map[string]bool                  // kinds of linstor.io in the CSV
}

// classOf is rjsf's getSchemaType as getCompatibleCapabilities uses it.
func classOf(s *apiextensionsv1.JSONSchemaProps) typeClass {
	switch {
	case s.Type == "array":
		return array
	case s.Type == "object" || (s.Type == "" && (len(s.Properties) > 0 || s.AdditionalProperties != nil)):
		return object
	}
	return primitive
}

// schemaAt follows a descriptor path as getSchemaAtPath does.
func schemaAt(root *apiextensionsv1.JSONSchemaProps, path string) *apiextensionsv1.JSONSchemaProps {
	s := root
	for _, step := range strings.FieldsFunc(path, func(r rune) bool { return r == '.' || r == '[' || r == ']' }) {
		if s == nil {
			return nil
		}
		if regexp.MustCompile(`^\d+$`).MatchString(step) {
			if s.Items == nil || s.Items.Schema == nil {
				return nil
			}
			s = s.Items.Schema
			continue
		}
		p, ok := s.Properties[step]
		if !ok {
			return nil
		}
		s = &p
	}
	return s
}

func isType(types ...string) func(descriptorCtx) string {
	return func(d descriptorCtx) string {
		t := d.schema.Type
		if t == "" && d.schema.XIntOrString {
			t = "int-or-string"
		}
		if !slices.Contains(types, t) {
			return fmt.Sprintf("is for %s values, the field is %q", strings.Join(types, " or "), t)
		}
		return ""
	}
}

func hasProperties(names ...string) func(descriptorCtx) string {
	return func(d descriptorCtx) string {
		for _, n := range names {
			if _, ok := d.schema.Properties[n]; !ok {
				return "needs an object with " + strings.Join(names, ", ") + "; the field has no " + n
			}
		}
		return ""
	}
}

func checkNodeAffinity(d descriptorCtx) string {
	req, ok := d.schema.Properties["requiredDuringSchedulingIgnoredDuringExecution"]
	if _, terms := req.Properties["nodeSelectorTerms"]; !ok || !terms {
		return "edits a NodeAffinity (requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms); the field is not one"
	}
	return hasProperties("preferredDuringSchedulingIgnoredDuringExecution")(d)
}

func checkPodAffinity(d descriptorCtx) string {
	req, ok := d.schema.Properties["requiredDuringSchedulingIgnoredDuringExecution"]
	if !ok || req.Items == nil || req.Items.Schema == nil {
		return "edits a PodAffinity (a list of requiredDuringSchedulingIgnoredDuringExecution terms); the field is not one"
	}
	if _, ok := req.Items.Schema.Properties["topologyKey"]; !ok {
		return "edits pod affinity terms with a topologyKey; the field has none"
	}
	return hasProperties("preferredDuringSchedulingIgnoredDuringExecution")(d)
}

// checkSelector: the details page renders the value with the Selector component, which
// takes a LabelSelector or a plain label map.
func checkSelector(d descriptorCtx) string {
	if d.schema.AdditionalProperties != nil && d.schema.AdditionalProperties.Schema != nil && d.schema.AdditionalProperties.Schema.Type == "string" {
		return ""
	}
	if _, ok := d.schema.Properties["matchLabels"]; ok {
		return ""
	}
	return "needs a label map or a LabelSelector"
}

func checkConditions(d descriptorCtx) string {
	if d.schema.Items == nil || d.schema.Items.Schema == nil {
		return "needs a list of conditions"
	}
	for _, p := range []string{"type", "status"} {
		if _, ok := d.schema.Items.Schema.Properties[p]; !ok {
			return "needs a list of conditions with type and status"
		}
	}
	return ""
}

// checkResourceKind: REGEXP_K8S_RESOURCE_SUFFIX takes [core:v1:]Kind or group:version:Kind,
// the value is the object's name.
func checkResourceKind(d descriptorCtx) string {
	if msg := isType("string")(d); msg != "" {
		return "names an object: " + msg
	}
	gvk := strings.TrimPrefix(strings.TrimPrefix(d.urn, k8sPrefix), "core:v1:")
	gvk, _, _ = strings.Cut(gvk, "?")
	parts := strings.Split(gvk, ":")
	switch {
	case len(parts) == 1 && slices.Contains(coreKinds, parts[0]):
		return ""
	case len(parts) == 3 && parts[0] == "linstor.io" && d.owned[parts[2]+"/"+parts[1]]:
		return ""
	}
	return "names no kind the console knows: " + gvk
}

// checkSelect: the dropdown offers exactly the select: options; they must be the enum.
func checkSelect(d descriptorCtx) string {
	if msg := isType("string")(d); msg != "" {
		return msg
	}
	var enum []string
	for _, e := range d.schema.Enum {
		enum = append(enum, strings.Trim(string(e.Raw), `"`))
	}
	if len(enum) == 0 {
		return "offers a fixed list on a field without an enum"
	}
	return "" // the options are compared with the enum per descriptor, in check()
}

// checkDependency: <path>:<value>, from spec, no list in the path, value one the
// control can take.
func checkDependency(d descriptorCtx) string {
	rest := strings.TrimPrefix(d.urn, specPrefix+"fieldDependency:")
	path, value, ok := strings.Cut(rest, ":")
	if !ok || path == "" || value == "" {
		return "needs fieldDependency:<path>:<value>"
	}
	if strings.Contains(path, "[") {
		return "control path " + path + " goes through a list, which the form cannot follow"
	}
	control := schemaAt(d.root, path)
	if control == nil {
		return "control path " + path + " is not in the schema"
	}
	switch {
	case control.Type == "boolean" && (value == "true" || value == "false"):
	case len(control.Enum) > 0:
		found := false
		for _, e := range control.Enum {
			found = found || strings.Trim(string(e.Raw), `"`) == value
		}
		if !found {
			return "control " + path + " never has the value " + value
		}
	case control.Type == "string":
	default:
		return "control " + path + " is not a boolean or string"
	}
	return ""
}

func lookup(urn string) (capability, bool) {
	for _, c := range capabilities {
		if urn == c.urn || (c.prefix && strings.HasPrefix(urn, c.urn) && urn != c.urn) {
			return c, true
		}
	}
	return capability{}, false
}

// check returns what is wrong with one descriptor.
func check(d descriptorCtx, part string, xds []string) []string {
	var out []string
	bad := func(format string, a ...any) {
		out = append(out, fmt.Sprintf("%s %s %s: ", d.kind, part, d.path)+fmt.Sprintf(format, a...))
	}
	if d.schema == nil {
		bad("no such field in the CRD schema")
		return out
	}
	var selects []string
	dependencies := 0
	for _, x := range xds {
		if slices.ContainsFunc(deprecated, func(p string) bool { return strings.HasPrefix(x, p) }) {
			bad("%s is deprecated by the console", x)
			continue
		}
		c, ok := lookup(x)
		if !ok || (part == "spec" && !c.spec) || (part == "status" && !c.status) {
			bad("%s is not a console %s capability", x, part)
			continue
		}
		if c.on != "" && c.on != classOf(d.schema) {
			bad("%s works on %s fields, this one is %s", x, c.on, classOf(d.schema))
			continue
		}
		if c.shape != nil {
			dc := d
			dc.urn = x
			if msg := c.shape(dc); msg != "" {
				bad("%s %s", x, msg)
			}
		}
		if c.urn == specPrefix+"select:" {
			selects = append(selects, strings.TrimPrefix(x, c.urn))
		}
		if c.urn == specPrefix+"fieldDependency:" {
			dependencies++
		}
	}
	if dependencies > 1 {
		bad("the console uses the first fieldDependency only")
	}
	if len(selects) > 0 && len(d.schema.Enum) > 0 {
		var enum []string
		for _, e := range d.schema.Enum {
			enum = append(enum, strings.Trim(string(e.Raw), `"`))
		}
		sort.Strings(enum)
		sort.Strings(selects)
		if !slices.Equal(enum, selects) {
			bad("select options %v differ from the enum %v", selects, enum)
		}
	}
	hidden := slices.Contains(xds, specPrefix+"hidden")
	if part == "spec" && !hidden && (slices.Contains(xds, specPrefix+"booleanSwitch") || slices.Contains(xds, specPrefix+"checkbox")) {
		if threeStates.MatchString(d.schema.Description) && saysFalse.MatchString(d.schema.Description) {
			bad("is a switch, but its description gives unset a meaning of its own (%q): the switch shows unset as OFF; use a select on an enum", threeStates.FindString(d.schema.Description))
		}
		if d.schema.Default != nil {
			for _, parent := range undefaultedParents(d.root, d.path) {
				bad("shows OFF until %s exists: its default (%s) applies only inside it; default %s to {}", parent, d.schema.Default.Raw, parent)
			}
		}
	}
	if part == "status" && !hidden && isBookkeeping(d.kind, d.path) {
		bad("is bookkeeping (%s): hide it", bookkeeping[d.kind+"/"+d.path]+bookkeeping["*/"+d.path[strings.LastIndexAny(d.path, ".]")+1:]])
	}
	if part == "status" && d.displayName == "Status" && d.path != "phase" {
		bad("is the main status, but the list of instances reads status.phase, not status.%s", d.path)
	}
	if part == "status" && !hidden {
		conditions := slices.Contains(xds, "urn:alm:descriptor:io.kubernetes.conditions")
		pods := slices.Contains(xds, specPrefix+"podStatuses")
		if classOf(d.schema) != primitive && !conditions && !pods {
			bad("a status %s renders nothing on the details page: describe its fields", classOf(d.schema))
		}
	}
	return out
}

// threeStates finds what a description says an unset boolean means; together with a
// meaning for false, the field has three states.
var (
	threeStates = regexp.MustCompile(`(?i)\bunset\b[^.;]*`)
	saysFalse   = regexp.MustCompile(`(?i)\bfalse\b`)
)

// undefaultedParents are the objects on path (from root, not through lists) without a
// default: while one is absent from the stored object, the field below it is too.
func undefaultedParents(root *apiextensionsv1.JSONSchemaProps, path string) []string {
	var out []string
	steps := strings.Split(path, ".")
	s := root
	for i, step := range steps[:len(steps)-1] {
		if strings.Contains(step, "[") {
			return out // inside a list item: the item exists where the field is shown
		}
		p, ok := s.Properties[step]
		if !ok {
			return out
		}
		if p.Default == nil {
			out = append(out, strings.Join(steps[:i+1], "."))
		}
		s = &p
	}
	return out
}

// node is one property of a schema and its path in descriptor syntax.
type node struct {
	path   string
	schema *apiextensionsv1.JSONSchemaProps
}

// walkSchema visits every property below s: objects, lists and leaves; it enters a
// property when visit returns true. Items of a list of objects are entered as path[0].
func walkSchema(s *apiextensionsv1.JSONSchemaProps, prefix string, visit func(node) bool) {
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := s.Properties[n]
		path := prefix + n
		if !visit(node{path, &p}) {
			continue
		}
		switch {
		case len(p.Properties) > 0:
			walkSchema(&p, path+".", visit)
		case p.Type == "array" && p.Items != nil && p.Items.Schema != nil && len(p.Items.Schema.Properties) > 0:
			walkSchema(p.Items.Schema, path+"[0].", visit)
		}
	}
}

type coverage struct{ with, without int }

func TestConsoleDescriptors(t *testing.T) {
	csv, crds := bundleParts(t)
	schemas := map[string]*apiextensionsv1.JSONSchemaProps{}
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
				schemas[crd.Spec.Names.Kind+"/"+v.Name] = v.Schema.OpenAPIV3Schema
			}
		}
	}
	owned := map[string]bool{}
	for _, d := range csv.Spec.CustomResourceDefinitions.Owned {
		owned[d.Kind+"/"+d.Version] = true
	}
	for _, p := range descriptorProblems(t, csv, schemas, owned) {
		t.Error(p)
	}
}

// descriptorProblems checks every descriptor of the v1 kinds and that every field has one.
func descriptorProblems(t *testing.T, csv *operatorsv1alpha1.ClusterServiceVersion, schemas map[string]*apiextensionsv1.JSONSchemaProps, owned map[string]bool) []string {
	var out []string
	kinds := 0
	for _, crd := range csv.Spec.CustomResourceDefinitions.Owned {
		if crd.Version != "v1" {
			continue
		}
		kinds++
		top := schemas[crd.Kind+"/v1"]
		if top == nil {
			out = append(out, crd.Kind+": no v1 schema")
			continue
		}
		for _, part := range []string{"spec", "status"} {
			root := schemaAt(top, part)
			if root == nil {
				continue
			}
			described := map[string][]string{}
			displayNames := map[string]string{}
			var paths []string
			if part == "spec" {
				for _, d := range crd.SpecDescriptors {
					paths = append(paths, d.Path)
					described[d.Path], displayNames[d.Path] = d.XDescriptors, d.DisplayName
				}
			} else {
				for _, d := range crd.StatusDescriptors {
					paths = append(paths, d.Path)
					described[d.Path], displayNames[d.Path] = d.XDescriptors, d.DisplayName
				}
			}
			seen := map[string]bool{}
			for _, p := range paths {
				if seen[p] {
					out = append(out, fmt.Sprintf("%s %s %s: two descriptors", crd.Kind, part, p))
				}
				seen[p] = true
				out = append(out, check(descriptorCtx{kind: crd.Kind, path: p, displayName: displayNames[p], schema: schemaAt(root, p), root: root, owned: owned}, part, described[p])...)
			}
			if reason, ok := exemptSpec[crd.Kind]; ok && part == "spec" {
				t.Logf("%s spec: %d descriptors, coverage not required (%s)", crd.Kind, len(paths), reason)
				continue
			}
			var cov coverage
			var missing []string
			walkSchema(root, "", func(n node) bool {
				xds, has := described[n.path]
				last := n.path[strings.LastIndexAny(n.path, ".]")+1:]
				if part == "spec" && !has {
					if matchesPattern(formOnly, n.path) {
						return false
					}
					// An object's own row shows no value (neverShown): its fields' rows do.
					if classOf(n.schema) == object && len(n.schema.Properties) > 0 && describedBelow(described, n.path) {
						return true
					}
				}
				if part == "status" {
					if exemptStatus[crd.Kind+"/"+n.path] != "" || exemptStatus["*/"+last] != "" {
						return false
					}
					// Conditions are one descriptor on the list (operand/index.tsx).
					if last == "conditions" {
						if has {
							cov.with++
						} else {
							cov.without++
							missing = append(missing, n.path)
						}
						return false
					}
					// Lists of values render nothing on the details page (status/index.tsx).
					if n.schema.Type == "array" && (n.schema.Items == nil || n.schema.Items.Schema == nil || len(n.schema.Items.Schema.Properties) == 0) {
						return false
					}
					if classOf(n.schema) != primitive && !slices.Contains(xds, "urn:alm:descriptor:io.kubernetes.conditions") {
						return true // objects and lists of objects: their fields are described
					}
				}
				if has {
					cov.with++
				} else {
					cov.without++
					missing = append(missing, n.path)
				}
				for _, x := range xds {
					if c, ok := lookup(x); ok && c.whole {
						return false
					}
				}
				if slices.Contains(xds, "urn:alm:descriptor:io.kubernetes.conditions") {
					return false
				}
				return !isExemptBelow(n.path)
			})
			t.Logf("%s %s: %d paths with descriptors, %d without", crd.Kind, part, cov.with, cov.without)
			for _, m := range missing {
				out = append(out, fmt.Sprintf("%s %s %s: no descriptor", crd.Kind, part, m))
			}
		}
	}
	if kinds == 0 {
		out = append(out, "no v1 kinds in the CSV")
	}
	return out
}

// TestConsoleDescriptorChecksCatchMistakes proves each rule fails on the mistake it is for.
func TestConsoleDescriptorChecksCatchMistakes(t *testing.T) {
	cases := []struct {
		name, kind, path string
		xds              []string
		want             string
	}{
		{"secret picker on an object", "LinstorCluster", "passphraseSecretRef", []string{k8sPrefix + "Secret"}, "works on primitive fields, this one is object"},
		{"unknown capability", "LinstorCluster", "controller.tolerations", []string{specPrefix + "tolerations"}, ""},
		{"resource picker on a list", "LinstorCluster", "controller.tolerations", []string{k8sPrefix + "Tolerations"}, "works on primitive fields, this one is array"},
		{"status capability in spec", "LinstorCluster", "version", []string{"urn:alm:descriptor:text"}, ""},
		{"node affinity on an Affinity", "LinstorCluster", "controller.affinity", []string{specPrefix + "nodeAffinity"}, "edits a NodeAffinity"},
		{"node affinity on a NodeSelector", "LinstorCluster", "nodeAffinity", []string{specPrefix + "nodeAffinity"}, "edits a NodeAffinity"},
		{"select with a value the enum lacks", "LinstorCluster", "networkPolicy", []string{specPrefix + "select:Enabled", specPrefix + "select:Off"}, "differ from the enum"},
		{"dependency on a missing field", "LinstorCluster", "tls.api.secretName", []string{specPrefix + "fieldDependency:tls.api.kind:Secret"}, "not in the schema"},
		{"dependency on a value the control never has", "LinstorCluster", "tls.api.secretName", []string{specPrefix + "fieldDependency:tls.api.mode:Manual"}, "never has the value"},
		{"dependency through a list", "LinstorCluster", "properties[0].value", []string{specPrefix + "fieldDependency:properties[0].name:x"}, "goes through a list"},
		{"missing path", "LinstorCluster", "controller.replica", []string{specPrefix + "podCount"}, "no such field"},
		{"switch on a string", "LinstorCluster", "version", []string{specPrefix + "booleanSwitch"}, "is for boolean values"},
		{"picker of an unknown kind", "LinstorCluster", "database.restoreFrom", []string{k8sPrefix + "linstor.io:v1:LinstorBackups"}, "names no kind"},
		{"deprecated", "LinstorCluster", "controller", []string{specPrefix + "fieldGroup:controller"}, "deprecated"},
	}
	csv, crds := bundleParts(t)
	owned := map[string]bool{}
	for _, d := range csv.Spec.CustomResourceDefinitions.Owned {
		owned[d.Kind+"/"+d.Version] = true
	}
	var spec *apiextensionsv1.JSONSchemaProps
	for _, crd := range crds {
		if crd.Spec.Names.Kind == "LinstorCluster" {
			for _, v := range crd.Spec.Versions {
				if v.Name == "v1" {
					spec = schemaAt(v.Schema.OpenAPIV3Schema, "spec")
				}
			}
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Join(check(descriptorCtx{kind: tc.kind, path: tc.path, schema: schemaAt(spec, tc.path), root: spec, owned: owned}, "spec", tc.xds), "\n")
			want := tc.want
			if want == "" {
				want = "is not a console spec capability"
			}
			if !strings.Contains(got, want) {
				t.Fatalf("want a problem containing %q, got %q", want, got)
			}
		})
	}
	t.Run("status object", func(t *testing.T) {
		status := schemaAt(csvSchema(t, crds, "LinstorCluster"), "status")
		got := strings.Join(check(descriptorCtx{kind: "LinstorCluster", path: "upgrade", schema: schemaAt(status, "upgrade"), root: status, owned: owned}, "status", nil), "\n")
		if !strings.Contains(got, "renders nothing") {
			t.Fatalf("a status descriptor on an object passed: %q", got)
		}
	})
	t.Run("switch under a parent without a default", func(t *testing.T) {
		root := spec.DeepCopy()
		controller := root.Properties["controller"]
		controller.Default = nil
		root.Properties["controller"] = controller
		got := strings.Join(check(descriptorCtx{kind: "LinstorCluster", path: "controller.enabled", schema: schemaAt(root, "controller.enabled"), root: root, owned: owned}, "spec", []string{specPrefix + "booleanSwitch"}), "\n")
		if !strings.Contains(got, "shows OFF until controller exists") {
			t.Fatalf("a switch whose default cannot apply passed: %q", got)
		}
	})
	t.Run("switch on three states", func(t *testing.T) {
		root := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"rotational": {Type: "boolean", Description: "rotational: true only spinning disks, false only solid-state ones; unset, either."}}}
		got := strings.Join(check(descriptorCtx{kind: "LinstorSatelliteConfiguration", path: "rotational", schema: schemaAt(root, "rotational"), root: root, owned: owned}, "spec", []string{specPrefix + "checkbox"}), "\n")
		if !strings.Contains(got, "use a select on an enum") {
			t.Fatalf("a checkbox on a three-state field passed: %q", got)
		}
	})
	t.Run("bookkeeping on the details page", func(t *testing.T) {
		status := schemaAt(csvSchema(t, crds, "LinstorCluster"), "status")
		got := strings.Join(check(descriptorCtx{kind: "LinstorCluster", path: "upgrade.phaseStartedAt", schema: schemaAt(status, "upgrade.phaseStartedAt"), root: status, owned: owned}, "status", []string{"urn:alm:descriptor:text"}), "\n")
		if !strings.Contains(got, "is bookkeeping") {
			t.Fatalf("a visible bookkeeping field passed: %q", got)
		}
	})
	t.Run("main status not on phase", func(t *testing.T) {
		status := schemaAt(csvSchema(t, crds, "LinstorCluster"), "status")
		got := strings.Join(check(descriptorCtx{kind: "LinstorCluster", path: "version", displayName: "Status", schema: schemaAt(status, "version"), root: status, owned: owned}, "status", []string{"urn:alm:descriptor:text"}), "\n")
		if !strings.Contains(got, "reads status.phase") {
			t.Fatalf("a main status the list does not read passed: %q", got)
		}
	})
	t.Run("missing descriptor", func(t *testing.T) {
		c := csv.DeepCopy()
		for i, d := range c.Spec.CustomResourceDefinitions.Owned {
			if d.Kind == "LinstorNodeConnection" && d.Version == "v1" {
				c.Spec.CustomResourceDefinitions.Owned[i].SpecDescriptors = d.SpecDescriptors[:0]
			}
		}
		schemas := map[string]*apiextensionsv1.JSONSchemaProps{"LinstorNodeConnection/v1": csvSchema(t, crds, "LinstorNodeConnection")}
		got := strings.Join(descriptorProblems(t, c, schemas, owned), "\n")
		if !strings.Contains(got, "LinstorNodeConnection spec paths[0].name: no descriptor") {
			t.Fatalf("a field without a descriptor passed: %q", got)
		}
	})
}

func csvSchema(t *testing.T, crds []*apiextensionsv1.CustomResourceDefinition, kind string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	for _, crd := range crds {
		if crd.Spec.Names.Kind == kind {
			for _, v := range crd.Spec.Versions {
				if v.Name == "v1" {
					return v.Schema.OpenAPIV3Schema
				}
			}
		}
	}
	t.Fatalf("no v1 schema of %s", kind)
	return nil
}

// The list of instances shows status.phase (operand/index.tsx getOperandStatus); without
// it, "Conditions:" and every True condition's type (Available, Upgradeable, Encrypted,
// Redundant...), which says nothing of whether the cluster is well.
func TestConsoleListShowsTheClusterState(t *testing.T) {
	_, crds := bundleParts(t)
	phase := schemaAt(csvSchema(t, crds, "LinstorCluster"), "status.phase")
	if phase == nil || phase.Type != "string" {
		t.Fatal("LinstorCluster has no status.phase: the console's list shows its True conditions")
	}
	var values []string
	for _, e := range phase.Enum {
		values = append(values, strings.Trim(string(e.Raw), `"`))
	}
	for _, want := range []string{"Available", "Degraded", "Upgrading"} {
		if !slices.Contains(values, want) {
			t.Errorf("status.phase can be %v, not %s", values, want)
		}
	}
}

// The operand details page, as the console draws it (github.com/openshift/console,
// frontend/packages/operator-lifecycle-manager/src/components/):
//
//   - operand/index.tsx OperandDetails: the status column lists the main status
//     (isMainStatusDescriptor: displayName "Status") and, through DescriptorDetailsItems,
//     every other status descriptor except conditions and podStatuses; below it,
//     DescriptorDetailsItems lists every spec descriptor. Nothing is filtered by value.
//   - descriptors/utils.tsx groupDescriptorDetails: hidden descriptors and paths with two
//     list indices are left out; every other one is a row, grouped under its first path
//     step; "a.b[0].c" is a list group under "a".
//   - descriptors/index.tsx DescriptorDetailsItemArrayGroup: a list group with no items is
//     one "None" row; otherwise each item's descriptors.
//   - descriptors/utils.tsx useCalculatedDescriptorProperties: the value is
//     _.get(obj, [spec|status, ...path], descriptor.value); getValidCapabilitiesForValue
//     keeps the x-descriptors that fit the value's type (all of them for an absent value)
//     sorted by CAPABILITY_SORT_ORDER (const.ts); the first one picks the component.
//   - descriptors/spec/index.tsx SpecDescriptorDetailsItem and status/index.tsx
//     StatusDescriptorDetailsItem: hidden draws nothing; with no component of its own
//     (text, number, select, advanced, fieldDependency, affinity...) an object value draws
//     nothing and anything else is common.tsx DefaultCapability, "None" when absent; the
//     resource link (common.tsx K8sResourceLinkCapability), link, phase reason and
//     updateStrategy draw "None" when absent, podCount "-", a switch or checkbox OFF
//     (Boolean(value)), a selector "No selector" (public/components/utils/selector.tsx),
//     resourceRequirements its edit links (spec/resource-requirements.tsx
//     ResourceRequirementsModalLink, "CPU: None, Memory: None" when absent).
//
// No x-descriptor takes a row off the details page and leaves the field in the create
// form: hidden is the form's hidden widget too (spec/spec-descriptor-input.tsx
// capabilityWidgetMap), advanced only moves the field into the form's "Advanced
// configuration" (operand/utils.ts descriptorsToUISchema) and fieldGroup and
// arrayFieldGroup are deprecated no-ops on both pages. The form, though, is drawn from
// the CRD's schema (operand/create-operand.tsx: the openAPIV3Schema without status is
// the DynamicForm's schema; descriptorsToUISchema only adds titles, widgets, order and
// dependencies), so a field without a descriptor stays in the form, titled from its
// name, described by the schema, an enum as a dropdown and a boolean as a checkbox.
var (
	arrayPath       = regexp.MustCompile(`^(.*)\[\d+\]\.?(.*)$`)         // REGEXP_ARRAY_PATH
	nestedArrayPath = regexp.MustCompile(`^.*\[\d+\]\.?.*\[\d+\]\.?.*$`) // REGEXP_NESTED_ARRAY_PATH
	groupSubgroup   = regexp.MustCompile(`^([^.]*)\.?(.*)$`)             // REGEXP_CAPTURE_GROUP_SUBGROUP
	firstIndex      = regexp.MustCompile(`\d+`)                          // path.replace(/\d+/, i)
	lodashPathStep  = regexp.MustCompile(`[^.\[\]]+`)                    // _.toPath
	statusPrefix    = "urn:alm:descriptor:"                              // StatusCapability's own URNs
	conditionsURN   = statusPrefix + "io.kubernetes.conditions"          // StatusCapability.conditions
	podStatusesURN  = specPrefix + "podStatuses"                         // StatusCapability.podStatuses
	phaseURN        = statusPrefix + "io.kubernetes.phase"               // StatusCapability.k8sPhase
	phaseReasonURN  = statusPrefix + "io.kubernetes.phase:reason"        // StatusCapability.k8sPhaseReason
	w3LinkURN       = statusPrefix + "org.w3:link"                       // StatusCapability.w3Link
	statusTextURN   = statusPrefix + "text"                              // StatusCapability.text
	commonCaps      = []string{specPrefix + "advanced", specPrefix + "fieldDependency:", specPrefix + "hidden", specPrefix + "arrayFieldGroup:", specPrefix + "fieldGroup:"}
	objectCaps      = []string{podStatusesURN, specPrefix + "updateStrategy", specPrefix + "nodeAffinity", specPrefix + "podAffinity", specPrefix + "podAntiAffinity", specPrefix + "resourceRequirements", specPrefix + "selector:", specPrefix + "label", specPrefix + "namespaceSelector"}
	arrayCaps       = []string{specPrefix + "endpointList", conditionsURN}
	primitiveCaps   = []string{phaseURN, phaseReasonURN, k8sPrefix, specPrefix + "imagePullPolicy", specPrefix + "podCount", specPrefix + "select:", w3LinkURN, specPrefix + "booleanSwitch", specPrefix + "checkbox", specPrefix + "password", specPrefix + "text", statusTextURN, specPrefix + "number", specPrefix + "label"}
	// CAPABILITY_SORT_ORDER.
	capabilitySortOrder = []string{
		specPrefix + "hidden", specPrefix + "endpointList", conditionsURN, specPrefix + "resourceRequirements",
		specPrefix + "updateStrategy", podStatusesURN, specPrefix + "selector:", k8sPrefix, specPrefix + "podCount",
		specPrefix + "password", phaseReasonURN, specPrefix + "booleanSwitch", specPrefix + "checkbox", w3LinkURN,
		specPrefix + "select:", specPrefix + "imagePullPolicy", phaseURN, specPrefix + "text", statusTextURN, specPrefix + "number",
		specPrefix + "podAntiAffinity", specPrefix + "podAffinity", specPrefix + "nodeAffinity",
		specPrefix + "advanced", specPrefix + "fieldDependency:",
		specPrefix + "arrayFieldGroup:", specPrefix + "fieldGroup:", specPrefix + "namespaceSelector", specPrefix + "label",
	}
)

// consoleDescriptor is a spec or status descriptor as the details page reads it.
type consoleDescriptor struct {
	path, displayName string
	xds               []string
	value             any // descriptor.value, the value of an absent field
}

// descriptorGroup is groupDescriptorDetails' DescriptorGroup.
type descriptorGroup struct {
	key            string
	arrayGroupPath string
	isArrayGroup   bool
	descriptor     *consoleDescriptor // of the group, or in a list group's nested map the item's
	element        *consoleDescriptor // elementDescriptor: a descriptor on "a[0]" itself
	nested         []*descriptorGroup // insertion order, as a JavaScript object's keys
}

func childGroup(groups *[]*descriptorGroup, key string) *descriptorGroup {
	for _, g := range *groups {
		if g.key == key {
			return g
		}
	}
	g := &descriptorGroup{key: key}
	*groups = append(*groups, g)
	return g
}

// groupDescriptorDetails is descriptors/utils.tsx groupDescriptorDetails.
func groupDescriptorDetails(descriptors []consoleDescriptor) []*descriptorGroup {
	var groups []*descriptorGroup
	for i := range descriptors {
		d := &descriptors[i]
		if nestedArrayPath.MatchString(d.path) || slices.Contains(d.xds, specPrefix+"hidden") {
			continue
		}
		if m := arrayPath.FindStringSubmatch(d.path); m != nil {
			before, after := m[1], m[2]
			gs := groupSubgroup.FindStringSubmatch(before)
			target := childGroup(&groups, gs[1])
			if gs[2] != "" {
				target = childGroup(&target.nested, gs[2])
			}
			target.arrayGroupPath, target.isArrayGroup = before, true
			if after != "" {
				childGroup(&target.nested, after).descriptor = d
			} else {
				target.element = d
			}
			continue
		}
		gs := groupSubgroup.FindStringSubmatch(d.path)
		if gs[1] == "" {
			continue
		}
		g := childGroup(&groups, gs[1])
		if gs[2] != "" {
			childGroup(&g.nested, gs[2]).descriptor = d
		} else {
			g.descriptor = d
		}
	}
	return groups
}

// lodashGet is _.get(obj, [root, ..._.toPath(path)]).
func lodashGet(obj map[string]any, root, path string) (any, bool) {
	var v any = obj
	for _, step := range append([]string{root}, lodashPathStep.FindAllString(path, -1)...) {
		switch c := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = c[step]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(step)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, v != nil
}

// firstCapability is the first of getValidCapabilitiesForValue: the capabilities that
// fit the value's type (any for an absent value), sorted by CAPABILITY_SORT_ORDER.
func firstCapability(xds []string, value any, present bool) string {
	var compatible []string
	switch value.(type) {
	case []any:
		compatible = append(slices.Clone(commonCaps), arrayCaps...)
	case map[string]any:
		compatible = append(slices.Clone(commonCaps), objectCaps...)
	default:
		compatible = append(slices.Clone(commonCaps), primitiveCaps...)
	}
	var valid []string
	for _, x := range xds {
		if !present || slices.ContainsFunc(compatible, func(c string) bool { return strings.HasPrefix(x, c) }) {
			valid = append(valid, x)
		}
	}
	rank := func(x string) int {
		return slices.IndexFunc(capabilitySortOrder, func(c string) bool { return strings.HasPrefix(x, c) })
	}
	slices.SortStableFunc(valid, func(a, b string) int {
		ai, bi := rank(a), rank(b)
		if ai < 0 || bi < 0 {
			return bi - ai
		}
		return ai - bi
	})
	if len(valid) == 0 {
		return ""
	}
	return valid[0]
}

// detailsRow is one row of the details page: what it shows, and whether the field it
// shows is absent from the object.
type detailsRow struct {
	part, path, shows string
	absent            bool
}

// detailsRows lists the rows DescriptorDetailsItems draws for descriptors of part.
func detailsRows(descriptors []consoleDescriptor, obj map[string]any, part string) []detailsRow {
	var rows []detailsRow
	item := func(d *consoleDescriptor) {
		if d == nil {
			return
		}
		value, present := lodashGet(obj, part, d.path)
		if !present && d.value != nil {
			value, present = d.value, true
		}
		if shows, drawn := drawItem(d, part, value, present); drawn {
			rows = append(rows, detailsRow{part: part, path: d.path, shows: shows, absent: !present})
		}
	}
	arrayGroup := func(g *descriptorGroup) {
		value, _ := lodashGet(obj, part, g.arrayGroupPath)
		items, _ := value.([]any)
		if len(items) == 0 {
			rows = append(rows, detailsRow{part: part, path: g.arrayGroupPath, shows: "None", absent: true})
			return
		}
		elements := []*consoleDescriptor{g.element}
		if len(g.nested) > 0 {
			elements = nil
			for _, n := range g.nested {
				elements = append(elements, n.descriptor)
			}
		}
		for i := range items {
			for _, e := range elements {
				if e != nil {
					indexed := *e
					indexed.path = firstIndex.ReplaceAllStringFunc(e.path, onlyFirst(strconv.Itoa(i)))
					item(&indexed)
				}
			}
		}
	}
	for _, g := range groupDescriptorDetails(descriptors) {
		switch {
		case g.isArrayGroup:
			arrayGroup(g)
		case len(g.nested) > 0:
			for _, n := range g.nested {
				if !n.isArrayGroup {
					item(n.descriptor)
				}
			}
			for _, n := range g.nested {
				if n.isArrayGroup {
					arrayGroup(n)
				}
			}
		default:
			item(g.descriptor)
		}
	}
	return rows
}

// onlyFirst replaces the first match only, as String.prototype.replace with a
// non-global regular expression does.
func onlyFirst(with string) func(string) string {
	done := false
	return func(s string) string {
		if done {
			return s
		}
		done = true
		return with
	}
}

// drawItem is SpecDescriptorDetailsItem or StatusDescriptorDetailsItem: what the row
// shows, or no row.
func drawItem(d *consoleDescriptor, part string, value any, present bool) (string, bool) {
	capability := firstCapability(d.xds, value, present)
	_, isObject := value.(map[string]any)
	_, isList := value.([]any)
	text := func() (string, bool) { // DefaultCapability
		if isObject || isList {
			return "", false // "A valid x-descriptor must be provided for non-primitive properties"
		}
		switch v := value.(type) {
		case nil:
			return "None", true
		case string:
			if v == "" {
				return "None", true
			}
			return v, true
		default:
			return fmt.Sprint(v), true
		}
	}
	orNone := func() (string, bool) {
		if !present || value == "" {
			return "None", true
		}
		return fmt.Sprint(value), true
	}
	switch {
	case capability == specPrefix+"hidden":
		return "", false
	case strings.HasPrefix(capability, k8sPrefix):
		return orNone()
	}
	if part == "spec" {
		switch {
		case strings.HasPrefix(capability, specPrefix+"selector:"):
			if !present || (isObject && len(value.(map[string]any)) == 0) {
				return "No selector", true
			}
			return fmt.Sprint(value), true
		case capability == specPrefix+"podCount":
			if !present {
				return "-", true
			}
			return fmt.Sprintf("%v pods", value), true
		case capability == specPrefix+"booleanSwitch", capability == specPrefix+"checkbox":
			if on, _ := value.(bool); on {
				return "ON", true
			}
			return "OFF", true
		case capability == specPrefix+"resourceRequirements":
			if !present {
				return "CPU: None, Memory: None, Storage: None", true
			}
			return fmt.Sprint(value), true
		case capability == specPrefix+"updateStrategy", capability == specPrefix+"namespaceSelector":
			return orNone()
		case capability == specPrefix+"password", capability == specPrefix+"endpointList", capability == specPrefix+"label":
			return fmt.Sprint(value), true
		}
		return text()
	}
	switch capability {
	case w3LinkURN, phaseReasonURN:
		return orNone()
	case phaseURN: // phase.tsx Phase: the value, nothing when absent
		if !present {
			return "", true
		}
		return fmt.Sprint(value), true
	case podStatusesURN, specPrefix + "password":
		return fmt.Sprint(value), true
	}
	return text()
}

// clusterDetails are the rows of a LinstorCluster's details page: status (the main
// status first; conditions and podStatuses have sections of their own) then spec.
func clusterDetails(t *testing.T, csv *operatorsv1alpha1.ClusterServiceVersion, obj map[string]any) []detailsRow {
	t.Helper()
	for _, crd := range csv.Spec.CustomResourceDefinitions.Owned {
		if crd.Kind != "LinstorCluster" || crd.Version != "v1" {
			continue
		}
		var main, status, spec []consoleDescriptor
		for _, d := range crd.StatusDescriptors {
			cd := consoleDescriptor{path: d.Path, displayName: d.DisplayName, xds: d.XDescriptors, value: rawValue(t, d.Value)}
			switch {
			case d.Path == "status" || d.DisplayName == "Status": // isMainStatusDescriptor
				main = append(main, cd)
			case slices.Contains(d.XDescriptors, conditionsURN) || d.Path == "conditions", slices.Contains(d.XDescriptors, podStatusesURN):
			default:
				status = append(status, cd)
			}
		}
		for _, d := range crd.SpecDescriptors {
			spec = append(spec, consoleDescriptor{path: d.Path, displayName: d.DisplayName, xds: d.XDescriptors, value: rawValue(t, d.Value)})
		}
		var rows []detailsRow
		for _, m := range main { // DescriptorDetailsItem, not grouped
			value, present := lodashGet(obj, "status", m.path)
			rows = append(rows, detailsRow{part: "status", path: m.path, shows: fmt.Sprint(value), absent: !present})
		}
		rows = append(rows, detailsRows(status, obj, "status")...)
		return append(rows, detailsRows(spec, obj, "spec")...)
	}
	t.Fatal("no LinstorCluster v1 in the CSV")
	return nil
}

func rawValue(t *testing.T, raw []byte) any {
	if len(raw) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("descriptor value %s: %v", raw, err)
	}
	return v
}

// emptyCluster is `spec: {}` as the API server stores it: defaulted by its structural
// defaulting on the shipped CRD (the operator has no mutating webhook).
func emptyCluster(t *testing.T, crds []*apiextensionsv1.CustomResourceDefinition) map[string]any {
	t.Helper()
	schema, err := crdschema.New(csvSchema(t, crds, "LinstorCluster"))
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{"apiVersion": "linstor.io/v1", "kind": "LinstorCluster", "metadata": map[string]any{"name": "linstor", "namespace": "linstor"}, "spec": map[string]any{}}
	schema.Default(obj)
	return obj
}

// valueComponents are the capabilities with a details component that draws an object or
// a list (spec/index.tsx, status/index.tsx); any other capability draws nothing for one.
var valueComponents = []string{specPrefix + "resourceRequirements", specPrefix + "updateStrategy", specPrefix + "selector:", specPrefix + "endpointList", specPrefix + "label", specPrefix + "namespaceSelector", podStatusesURN}

// neverShown are the spec descriptors drawn as a row of their own whose row can show no
// value: an object or list field whose first capability has no component for it draws
// nothing when set and "None" when unset. A dependency keeps its descriptor (the form
// hides the field until its control has the value); anything else such a descriptor
// gives the form (a title, the Advanced fold, the affinity editors) the form has without
// it, from the schema.
func neverShown(descriptors []consoleDescriptor, root *apiextensionsv1.JSONSchemaProps) []string {
	var out []string
	check := func(d *consoleDescriptor) {
		if d == nil || slices.ContainsFunc(d.xds, func(x string) bool { return strings.HasPrefix(x, specPrefix+"fieldDependency:") }) {
			return
		}
		s := schemaAt(root, d.path)
		if s == nil || classOf(s) == primitive || alwaysPresent(root, d.path) {
			return
		}
		var value any = map[string]any{"set": true}
		if classOf(s) == array {
			value = []any{map[string]any{}}
		}
		capability := firstCapability(d.xds, value, true)
		if !slices.ContainsFunc(valueComponents, func(c string) bool { return strings.HasPrefix(capability, c) }) {
			out = append(out, d.path)
		}
	}
	for _, g := range groupDescriptorDetails(descriptors) {
		switch {
		case g.isArrayGroup:
		case len(g.nested) > 0:
			for _, n := range g.nested {
				if !n.isArrayGroup {
					check(n.descriptor)
				}
			}
		default:
			check(g.descriptor)
		}
	}
	return out
}

func hasDependency(descriptors []consoleDescriptor, path string) bool {
	for _, d := range descriptors {
		if d.path == path && slices.ContainsFunc(d.xds, func(x string) bool { return strings.HasPrefix(x, specPrefix+"fieldDependency:") }) {
			return true
		}
	}
	return false
}

// alwaysPresent: every step of path (not through a list) is required or defaulted, so a
// stored object has the field and its row is never "None".
func alwaysPresent(root *apiextensionsv1.JSONSchemaProps, path string) bool {
	s := root
	for _, step := range strings.Split(path, ".") {
		if strings.Contains(step, "[") {
			return false
		}
		p, ok := s.Properties[step]
		if !ok || (p.Default == nil && !slices.Contains(s.Required, step)) {
			return false
		}
		s = &p
	}
	return true
}

func specDescriptorsOf(csv *operatorsv1alpha1.ClusterServiceVersion, kind string) []consoleDescriptor {
	var out []consoleDescriptor
	for _, crd := range csv.Spec.CustomResourceDefinitions.Owned {
		if crd.Kind == kind && crd.Version == "v1" {
			for _, d := range crd.SpecDescriptors {
				out = append(out, consoleDescriptor{path: d.Path, displayName: d.DisplayName, xds: d.XDescriptors})
			}
		}
	}
	return out
}

func TestConsoleDetailsRowsShowValues(t *testing.T) {
	csv, crds := bundleParts(t)
	for _, crd := range csv.Spec.CustomResourceDefinitions.Owned {
		if crd.Version != "v1" || exemptSpec[crd.Kind] != "" {
			continue
		}
		root := schemaAt(csvSchema(t, crds, crd.Kind), "spec")
		for _, p := range neverShown(specDescriptorsOf(csv, crd.Kind), root) {
			t.Errorf("%s spec %s: its details row shows \"None\" when unset and nothing when set; the form shows the field without a descriptor", crd.Kind, p)
		}
	}
}

// unstoredDefaults are the rows of an empty cluster's page that say "None" although the
// field has a schema default: the API server applies a default only inside an object
// that exists, and these objects have none of their own (spec.database, spec.tls,
// spec.tls.*.issuerRef, spec.tls.*.caReference), so the default is in effect without
// being stored. Materializing them is a change to what the API server stores (as
// c11b47c did for the switches' parents), not to descriptors.
var unstoredDefaults = []string{
	"database.type",
	"tls.api.caReference.key", "tls.api.caReference.kind", "tls.api.issuerRef.kind", "tls.api.mode",
	"tls.internal.caReference.key", "tls.internal.caReference.kind", "tls.internal.issuerRef.kind", "tls.internal.mode",
}

// sampleValue is a value of the schema's type, to draw a row as it looks once set.
func sampleValue(s *apiextensionsv1.JSONSchemaProps) any {
	switch {
	case len(s.Enum) > 0:
		var v any
		_ = json.Unmarshal(s.Enum[0].Raw, &v)
		return v
	case s.Type == "boolean":
		return true
	case s.Type == "integer", s.Type == "number":
		return int64(1)
	case s.Type == "array":
		item := map[string]any{}
		if s.Items != nil && s.Items.Schema != nil {
			for name, p := range s.Items.Schema.Properties {
				item[name] = sampleValue(&p)
			}
		}
		return []any{item}
	case classOf(s) == object:
		o := map[string]any{}
		for name, p := range s.Properties {
			o[name] = sampleValue(&p)
		}
		if len(o) == 0 {
			o["key"] = "value"
		}
		return o
	}
	return "value"
}

// setAt sets path (dots only; a list step is set whole) in obj, creating its parents.
func setAt(obj map[string]any, path []string, value any) {
	for _, step := range path[:len(path)-1] {
		next, ok := obj[step].(map[string]any)
		if !ok {
			next = map[string]any{}
			obj[step] = next
		}
		obj = next
	}
	obj[path[len(path)-1]] = value
}

// emptyClusterProblems draws the details page of an empty LinstorCluster, as the API
// server stores it and before the operator has observed anything, and returns what is
// wrong with its spec part and the row counts. Its status part is all unset until the
// operator's first reconcile.
func emptyClusterProblems(t *testing.T, csv *operatorsv1alpha1.ClusterServiceVersion, crds []*apiextensionsv1.CustomResourceDefinition) ([]string, map[string]int) {
	var out []string
	root := schemaAt(csvSchema(t, crds, "LinstorCluster"), "spec")
	counts := map[string]int{}
	var unstored []string
	for _, r := range clusterDetails(t, csv, emptyCluster(t, crds)) {
		counts[r.part]++
		if !r.absent {
			continue
		}
		counts[r.part+" unset"]++
		if r.part == "status" {
			continue
		}
		field := strings.Split(r.path, "[")[0]
		s := schemaAt(root, field)
		if s == nil {
			out = append(out, fmt.Sprintf("spec %s: not in the schema", r.path))
			continue
		}
		if s.Default != nil {
			unstored = append(unstored, r.path)
		}
		if strings.HasPrefix(r.shows, "CPU: None") {
			counts["spec unset: resource editors"]++
			continue // the console's editor of limits and requests, drawn whatever the value
		}
		if classOf(s) == object && hasDependency(specDescriptorsOf(csv, "LinstorCluster"), r.path) {
			counts["spec unset: dependencies"]++
			continue // the form's dependency for the whole object (neverShown keeps these)
		}
		// Any other row must show the field's value once it is set: its "None" (or "No
		// selector", or OFF) is then what the field holds.
		set := emptyCluster(t, crds)
		setAt(set["spec"].(map[string]any), strings.Split(field, "."), sampleValue(s))
		var after *detailsRow
		for _, a := range clusterDetails(t, csv, set) {
			if a.part == "spec" && (a.path == r.path || strings.HasPrefix(a.path, field+"[")) {
				after = &a
				break
			}
		}
		switch {
		case after == nil:
			out = append(out, fmt.Sprintf("spec %s: shows %q while unset and nothing once set", r.path, r.shows))
		case after.absent || after.shows == "None" || after.shows == "No selector" || after.shows == "":
			out = append(out, fmt.Sprintf("spec %s: shows %q while unset and %q once set", r.path, r.shows, after.shows))
		default:
			counts["spec unset: shown once set"]++
		}
	}
	sort.Strings(unstored)
	if !slices.Equal(unstored, unstoredDefaults) {
		out = append(out, fmt.Sprintf("rows of fields whose default is not stored: %v, documented: %v", unstored, unstoredDefaults))
	}
	return out, counts
}

// An empty LinstorCluster's details page shows what is set: every other spec row is one
// that shows the field's value once it is set, the resources editor, or the object of a
// form dependency; the unset fields whose default is not stored are the documented ones.
func TestConsoleDetailsOfAnEmptyClusterShowWhatIsSet(t *testing.T) {
	csv, crds := bundleParts(t)
	problems, counts := emptyClusterProblems(t, csv, crds)
	for _, p := range problems {
		t.Error(p)
	}
	t.Logf("details rows: %v", counts)
}

// TestConsoleDetailsChecksCatchMistakes puts back descriptors of the kinds the rules
// above took off the details page.
func TestConsoleDetailsChecksCatchMistakes(t *testing.T) {
	csv, crds := bundleParts(t)
	for _, tc := range []struct {
		name string
		add  operatorsv1alpha1.SpecDescriptor
	}{
		{"the Advanced fold on a list", operatorsv1alpha1.SpecDescriptor{Path: "controller.tolerations", DisplayName: "Tolerations", XDescriptors: []string{specPrefix + "advanced"}}},
		{"an affinity editor", operatorsv1alpha1.SpecDescriptor{Path: "satellite.affinity.nodeAffinity", DisplayName: "Node Affinity", XDescriptors: []string{specPrefix + "nodeAffinity"}}},
		{"a title on an object", operatorsv1alpha1.SpecDescriptor{Path: "tls.internal", DisplayName: "Internal TLS"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := csv.DeepCopy()
			for i, d := range c.Spec.CustomResourceDefinitions.Owned {
				if d.Kind == "LinstorCluster" && d.Version == "v1" {
					c.Spec.CustomResourceDefinitions.Owned[i].SpecDescriptors = append(d.SpecDescriptors, tc.add)
				}
			}
			root := schemaAt(csvSchema(t, crds, "LinstorCluster"), "spec")
			if got := neverShown(specDescriptorsOf(c, "LinstorCluster"), root); !slices.Contains(got, tc.add.Path) {
				t.Errorf("neverShown passed %s: %v", tc.add.Path, got)
			}
			problems, _ := emptyClusterProblems(t, c, crds)
			want := "spec " + tc.add.Path + `: shows "None" while unset and nothing once set`
			if !slices.Contains(problems, want) {
				t.Errorf("the empty cluster's page passed %s: %q", tc.add.Path, problems)
			}
		})
	}
}

// hiddenFromTheForm are the spec fields the create form does not offer: hidden is the
// form's hidden widget (spec/spec-descriptor-input.tsx capabilityWidgetMap) as well as
// no row on the details page, so it is not a way to shorten the details page.
var hiddenFromTheForm = map[string]string{
	"LinstorCluster/satellite.enabled":                                         "not used: every node spec.nodeSelector selects runs a satellite",
	"LinstorCluster/tls.internal.clientSecretName":                             "refused by validation: only the api channel has client certificates",
	"LinstorSatelliteConfiguration/storagePools[0].source.discover.rotational": "superseded by discover.media, kept for objects written before it",
	"LinstorSatellite/storagePools[0].source.discover.rotational":              "superseded by discover.media, kept for objects written before it",
}

// The create form keeps every field but the documented ones.
func TestConsoleFormKeepsEveryField(t *testing.T) {
	csv, _ := bundleParts(t)
	for _, crd := range csv.Spec.CustomResourceDefinitions.Owned {
		if crd.Version != "v1" {
			continue
		}
		for _, d := range crd.SpecDescriptors {
			if slices.Contains(d.XDescriptors, specPrefix+"hidden") && hiddenFromTheForm[crd.Kind+"/"+d.Path] == "" {
				t.Errorf("%s spec %s: hidden from the create form", crd.Kind, d.Path)
			}
		}
	}
}
