package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	jsonpatch "github.com/evanphx/json-patch/v5"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/images"
)

// Patches (spec.<component>.patches) are kustomize-style changes to the objects rendered
// for one component, applied in order after its podTemplate:
//  1. the text is read as YAML (JSON is YAML): a list is a JSON 6902 patch, an object a
//     strategic-merge patch for the object's Go type (a JSON merge patch for an object
//     without one);
//  2. the target selects objects of the component by kind and name; unset selects its
//     workload, and a target that selects nothing is an error (a typo must not be a
//     silent no-op);
//  3. a patch may not rename an object, move it, change its kind, or touch the labels
//     and selectors the operator finds and prunes its objects by;
//  4. the pod template a patch leaves is held to spec.podTemplatePolicy against the
//     template before any patch, exactly like podTemplate (PodTemplateEscalation).
// A component with any bad patch is rendered not at all: nothing is applied half-patched.

// SatelliteWorkloadAlias is the name a satellite patch may give its DaemonSet, whose real
// name differs per node (names.SatelliteDaemonSetName).
const SatelliteWorkloadAlias = names.SatelliteComponent

// patchComponent is a component whose objects one list of patches changes.
type patchComponent struct {
	field   *field.Path
	patches []linstorv1.Patch
	// workload is the component's Deployment or DaemonSet, the target of a patch
	// without one; alias is another name it answers to.
	workloadKind, workload, alias string
	member                        func(client.Object) bool
}

// clusterComponents are the components the cluster controller renders, in the order
// their patches apply. The CSIDriver belongs to both CSI workloads: it exists while
// either runs.
func clusterComponents(c *linstorv1.LinstorCluster) []patchComponent {
	spec := field.NewPath("spec")
	s := c.Spec
	byName := func(name string) func(client.Object) bool {
		return func(o client.Object) bool { return o.GetLabels()[names.LabelName] == name }
	}
	isDriver := func(o client.Object) bool { return kindOf(o) == "CSIDriver" }
	named := func(kind, name string) func(client.Object) bool {
		return func(o client.Object) bool { return isDriver(o) || kindOf(o) == kind && o.GetName() == name }
	}
	var ctrlPatches, csiCtrlPatches, csiNodePatches, haPatches []linstorv1.Patch
	if s.Controller != nil {
		ctrlPatches = s.Controller.Patches
	}
	if s.CSI != nil && s.CSI.Controller != nil {
		csiCtrlPatches = s.CSI.Controller.Patches
	}
	if s.CSI != nil && s.CSI.Node != nil {
		csiNodePatches = s.CSI.Node.Patches
	}
	if s.HighAvailabilityController != nil {
		haPatches = s.HighAvailabilityController.Patches
	}
	return []patchComponent{
		{field: spec.Child("controller", "patches"), patches: ctrlPatches, workloadKind: "Deployment", workload: names.ControllerName, member: byName(names.ControllerName)},
		{field: spec.Child("csi", "controller", "patches"), patches: csiCtrlPatches, workloadKind: "Deployment", workload: names.CSIControllerName, member: named("Deployment", names.CSIControllerName)},
		{field: spec.Child("csi", "node", "patches"), patches: csiNodePatches, workloadKind: "DaemonSet", workload: names.CSINodeName, member: named("DaemonSet", names.CSINodeName)},
		{field: spec.Child("highAvailabilityController", "patches"), patches: haPatches, workloadKind: "DaemonSet", workload: names.HAControllerName, member: byName(names.HAControllerName)},
	}
}

// satelliteComponent holds patches for every object rendered for one node's satellite.
func satelliteComponent(at *field.Path, patches []linstorv1.Patch, node string) patchComponent {
	return patchComponent{field: at, patches: patches, workloadKind: "DaemonSet", workload: names.SatelliteDaemonSetName(node), alias: SatelliteWorkloadAlias,
		member: func(client.Object) bool { return true }}
}

// WithClusterPatches applies the patches of the controller, CSI and HA controller to
// the objects rendered for them (objs may hold others, which no patch reaches). A
// component that is not rendered (disabled) has nothing to patch.
func WithClusterPatches(cluster *linstorv1.LinstorCluster, objs Objects) (Objects, error) {
	var errs field.ErrorList
	for _, c := range clusterComponents(cluster) {
		if !slices.ContainsFunc(objs, func(o client.Object) bool { return kindOf(o) == c.workloadKind && o.GetName() == c.workload }) {
			continue
		}
		var e field.ErrorList
		objs, e = applyPatches(objs, c, cluster.Spec.PodTemplatePolicy)
		errs = append(errs, e...)
	}
	return objs, errs.ToAggregate()
}

// WithSatellitePatches applies a LinstorSatellite's merged patches (spec.patches) to the
// objects rendered for its node.
func WithSatellitePatches(cluster *linstorv1.LinstorCluster, sat *linstorv1.LinstorSatellite, objs Objects) (Objects, error) {
	objs, errs := applyPatches(objs, satelliteComponent(field.NewPath("spec", "patches"), sat.Spec.Patches, sat.Name), cluster.Spec.PodTemplatePolicy)
	if len(errs) > 0 {
		return objs, errs.ToAggregate()
	}
	// A patch may rewrite the affinity or name a node: pin again, last, so each
	// DaemonSet still runs on its own node only (two satellites claiming one node's name
	// would register the wrong host in LINSTOR).
	for _, o := range objs {
		if ds, ok := o.(*appsv1.DaemonSet); ok && ds.Name == names.SatelliteDaemonSetName(sat.Name) {
			ds.Spec.Template.Spec.NodeName = ""
			pinToNode(&ds.Spec.Template.Spec, sat.Name)
		}
	}
	return objs, nil
}

// PatchTargets lists, by the field of each component's patches, the objects the
// component renders for cluster ("Kind name"), every component enabled: what a patch
// target may select. The satellite's DaemonSet is listed by its alias.
func PatchTargets(cluster *linstorv1.LinstorCluster, imgs images.Set) map[string][]string {
	all, sat := dryRender(cluster, imgs)
	out := map[string][]string{}
	for _, c := range clusterComponents(cluster) {
		out[c.field.String()] = describe(all, c)
	}
	satC := satelliteComponent(field.NewPath("spec", "satellite", "patches"), nil, probeNode)
	out[satC.field.String()] = describe(sat, satC)
	return out
}

// ClusterPatchErrors returns what is wrong with the cluster's patches, judged on a dry
// render of every component (disabled ones too: enabling one must not bring in a bad
// patch): text that is no patch, targets that select nothing, changes to what the
// operator finds its objects by, patches that do not apply, and, under the cluster's
// podTemplatePolicy, privilege a patch adds. spec.satellite.patches is judged against
// the satellite of a made-up node.
func ClusterPatchErrors(cluster *linstorv1.LinstorCluster, imgs images.Set) field.ErrorList {
	some := cluster.Spec.Satellite != nil && len(cluster.Spec.Satellite.Patches) > 0
	for _, c := range clusterComponents(cluster) {
		some = some || len(c.patches) > 0
	}
	if !some {
		return nil
	}
	all, sat := dryRender(cluster, imgs)
	policy := cluster.Spec.PodTemplatePolicy
	var errs field.ErrorList
	for _, c := range clusterComponents(cluster) {
		_, e := applyPatches(all, c, policy)
		errs = append(errs, e...)
	}
	if s := cluster.Spec.Satellite; s != nil && len(s.Patches) > 0 {
		_, e := applyPatches(sat, satelliteComponent(field.NewPath("spec", "satellite", "patches"), s.Patches, probeNode), policy)
		errs = append(errs, e...)
	}
	return errs
}

// SatelliteConfigurationPatchErrors judges the patches of cfg against the satellite
// cluster renders (nil: a cluster with the defaults), all but the privilege they add:
// text that is no patch, targets that select nothing, changes to the operator's names,
// patches that do not apply.
func SatelliteConfigurationPatchErrors(cluster *linstorv1.LinstorCluster, cfg *linstorv1.LinstorSatelliteConfiguration, imgs images.Set) field.ErrorList {
	errs, _ := satelliteConfigurationPatches(cluster, cfg, imgs)
	return errs
}

// SatelliteConfigurationPatchEscalations returns the privilege the patches of cfg add
// to the satellite cluster renders, under its podTemplatePolicy (nil: no cluster yet,
// the default Restricted applies).
func SatelliteConfigurationPatchEscalations(cluster *linstorv1.LinstorCluster, cfg *linstorv1.LinstorSatelliteConfiguration, imgs images.Set) field.ErrorList {
	_, escalations := satelliteConfigurationPatches(cluster, cfg, imgs)
	return escalations
}

func satelliteConfigurationPatches(cluster *linstorv1.LinstorCluster, cfg *linstorv1.LinstorSatelliteConfiguration, imgs images.Set) (field.ErrorList, field.ErrorList) {
	if len(cfg.Spec.Patches) == 0 {
		return nil, nil
	}
	if cluster == nil {
		cluster = &linstorv1.LinstorCluster{}
	}
	_, sat := dryRender(cluster, imgs)
	_, errs, escalations := applyPatchesSplit(sat, satelliteComponent(field.NewPath("spec", "patches"), cfg.Spec.Patches, probeNode), cluster.Spec.PodTemplatePolicy)
	return errs, escalations
}

// dryRender renders every component of cluster, enabled, with its podTemplate (without
// it when the podTemplate itself is refused: that has its own error), and the
// satellite of the probe node.
func dryRender(cluster *linstorv1.LinstorCluster, imgs images.Set) (Objects, Objects) {
	render := func(c *linstorv1.LinstorCluster) (Objects, Objects, error) {
		var all Objects
		for _, part := range []func() (Objects, error){
			func() (Objects, error) { return Controller(c, imgs) },
			func() (Objects, error) { return CSI(c, imgs, "http://"+names.ControllerName) },
			func() (Objects, error) { return HAController(c, imgs) },
			func() (Objects, error) { return NetworkPolicy(c), nil },
		} {
			o, err := part()
			if err != nil {
				return nil, nil, err
			}
			all = append(all, o...)
		}
		sat, err := Satellite(c, probeSatellite(c, ""), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: probeNode}}, imgs)
		if err != nil {
			return nil, nil, err
		}
		// The satellites' shared ConfigMap (SatelliteConfig) is the cluster's, not a
		// node's: no satellite patch reaches it.
		return all, sat, nil
	}
	if all, sat, err := render(enabled(cluster)); err == nil {
		return all, sat
	}
	all, sat, _ := render(withoutPatches(cluster))
	return all, sat
}

// enabled is the cluster with every component it can run switched on.
func enabled(cluster *linstorv1.LinstorCluster) *linstorv1.LinstorCluster {
	c := cluster.DeepCopy()
	s := &c.Spec
	s.ExternalController = nil
	if s.Controller == nil {
		s.Controller = &linstorv1.ControllerSpec{}
	}
	s.Controller.Enabled = ptr.To(true)
	if s.CSI == nil {
		s.CSI = &linstorv1.CSISpec{}
	}
	s.CSI.Enabled = ptr.To(true)
	for _, p := range []**linstorv1.ComponentSpec{&s.CSI.Controller, &s.CSI.Node, &s.HighAvailabilityController} {
		if *p == nil {
			*p = &linstorv1.ComponentSpec{}
		}
		(*p).Enabled = ptr.To(true)
	}
	return c
}

// applyPatches applies c's patches to the objects of objs that belong to c. It returns
// a new slice (objs is not changed) and every error, each naming its patch.
func applyPatches(objs Objects, c patchComponent, policy linstorv1.PodTemplatePolicy) (Objects, field.ErrorList) {
	out, errs, escalations := applyPatchesSplit(objs, c, policy)
	return out, append(errs, escalations...)
}

// applyPatchesSplit is applyPatches with the privilege patches add (escalations) told
// apart from every other error. A refused patch is skipped, so the next is judged on
// what the earlier good ones made.
func applyPatchesSplit(objs Objects, c patchComponent, policy linstorv1.PodTemplatePolicy) (Objects, field.ErrorList, field.ErrorList) {
	if len(c.patches) == 0 {
		return objs, nil, nil
	}
	out := slices.Clone(objs)
	// The pod templates as rendered: what every patch is judged against.
	before := map[int]*corev1.PodTemplateSpec{}
	for i, o := range out {
		if c.member(o) {
			if t := podTemplate(o); t != nil {
				before[i] = t.DeepCopy()
			}
		}
	}
	var errs, escalations field.ErrorList
	for i, p := range c.patches {
		at := c.field.Index(i)
		parsed, err := parsePatch(p.Patch)
		if err != nil {
			errs = append(errs, field.Invalid(at.Child("patch"), "<patch>", err.Error()))
			continue
		}
		targets := selectTargets(out, c, p.Target)
		if len(targets) == 0 {
			errs = append(errs, field.Invalid(at.Child("target"), targetValue(c, p.Target),
				fmt.Sprintf("no rendered %s; rendered: %s", targetString(c, p.Target), strings.Join(describe(out, c), ", "))))
			continue
		}
		for _, idx := range targets {
			o := out[idx]
			what := kindOf(o) + " " + o.GetName()
			patched, err := patchObject(o, parsed)
			if err != nil {
				errs = append(errs, field.Invalid(at.Child("patch"), "<patch>", fmt.Sprintf("%s: %v", what, err)))
				continue
			}
			if err := keepsIdentity(o, patched); err != nil {
				errs = append(errs, field.Forbidden(at.Child("patch"), fmt.Sprintf("%s: %v", what, err)))
				continue
			}
			if was := before[idx]; was != nil {
				if e := PodTemplateEscalation(policy, was, podTemplate(patched), at.Child("patch", "spec", "template")); len(e) > 0 {
					escalations = append(escalations, e...)
					continue
				}
			}
			out[idx] = patched
		}
	}
	if len(errs) > 0 || len(escalations) > 0 {
		return objs, errs, escalations
	}
	return out, nil, nil
}

// selectTargets returns the indexes of the objects of c a target selects.
func selectTargets(objs Objects, c patchComponent, t *linstorv1.PatchTarget) []int {
	kind, name := c.workloadKind, c.workload
	if t != nil {
		kind, name = t.Kind, t.Name
	}
	var out []int
	for i, o := range objs {
		if !c.member(o) || kindOf(o) != kind {
			continue
		}
		if name == "" || o.GetName() == name || (c.alias != "" && name == c.alias && o.GetName() == c.workload) {
			out = append(out, i)
		}
	}
	return out
}

// targetValue is a target as kind/name, for an error's value.
func targetValue(c patchComponent, t *linstorv1.PatchTarget) string {
	if t == nil {
		return c.workloadKind + "/" + c.workload
	}
	return strings.TrimSuffix(t.Kind+"/"+t.Name, "/")
}

func targetString(c patchComponent, t *linstorv1.PatchTarget) string {
	switch {
	case t == nil:
		return fmt.Sprintf("%s named %q", c.workloadKind, c.workload)
	case t.Name == "":
		return t.Kind
	}
	return fmt.Sprintf("%s named %q", t.Kind, t.Name)
}

// describe lists the objects of c as "Kind name", the workload by its alias if it has one.
func describe(objs Objects, c patchComponent) []string {
	var out []string
	for _, o := range objs {
		if !c.member(o) {
			continue
		}
		name := o.GetName()
		if c.alias != "" && name == c.workload {
			name = c.alias
		}
		out = append(out, kindOf(o)+" "+name)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// parsedPatch is a patch read from its text: ops for JSON 6902, else a merge patch.
type parsedPatch struct {
	ops   jsonpatch.Patch
	merge []byte
}

// parsePatch reads a patch: a YAML or JSON list is JSON 6902, an object a merge patch.
func parsePatch(text string) (parsedPatch, error) {
	raw, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		return parsedPatch{}, fmt.Errorf("is neither YAML nor JSON: %v", err)
	}
	raw = bytes.TrimSpace(raw)
	switch {
	case bytes.HasPrefix(raw, []byte("[")):
		ops, err := jsonpatch.DecodePatch(raw)
		if err != nil {
			return parsedPatch{}, fmt.Errorf("is a list but not a JSON 6902 patch: %v", err)
		}
		return parsedPatch{ops: ops}, nil
	case bytes.HasPrefix(raw, []byte("{")):
		return parsedPatch{merge: raw}, nil
	}
	return parsedPatch{}, errors.New("must be an object (a strategic-merge patch) or a list (JSON 6902 operations)")
}

// patchObject returns a patched copy of o, decoded strictly: a field its type does not
// have is an error, not dropped.
func patchObject(o client.Object, p parsedPatch) (client.Object, error) {
	orig, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	var patched []byte
	_, unstruct := o.(*unstructured.Unstructured)
	switch {
	case p.ops != nil:
		patched, err = p.ops.Apply(orig)
	case unstruct:
		patched, err = jsonpatch.MergePatch(orig, p.merge)
	default:
		patched, err = strategicpatch.StrategicMergePatch(orig, p.merge, o)
	}
	if err != nil {
		return nil, err
	}
	out := reflect.New(reflect.TypeOf(o).Elem()).Interface().(client.Object)
	if unstruct {
		err = json.Unmarshal(patched, out)
		return out, err
	}
	strict, err := kjson.UnmarshalStrict(patched, out)
	if err != nil {
		return nil, err
	}
	if len(strict) > 0 {
		return nil, fmt.Errorf("the result is no valid %s: %v", kindOf(o), errors.Join(strict...))
	}
	return out, nil
}

// protectedLabels find and prune the operator's objects.
var protectedLabels = []string{names.LabelCluster, names.LabelClusterNamespace, names.LabelManagedBy}

// keepsIdentity refuses a patch that changes what the operator finds an object by.
func keepsIdentity(before, after client.Object) error {
	if before.GetObjectKind().GroupVersionKind() != after.GetObjectKind().GroupVersionKind() {
		return fmt.Errorf("may not change apiVersion or kind")
	}
	if before.GetName() != after.GetName() || before.GetNamespace() != after.GetNamespace() {
		return fmt.Errorf("may not change the name or namespace")
	}
	for _, k := range protectedLabels {
		if before.GetLabels()[k] != after.GetLabels()[k] {
			return fmt.Errorf("may not change the label %s: the operator selects and prunes its objects by it", k)
		}
	}
	var sel *metav1.LabelSelector
	switch w := before.(type) {
	case *appsv1.Deployment:
		sel = w.Spec.Selector
		if !equality.Semantic.DeepEqual(sel, after.(*appsv1.Deployment).Spec.Selector) {
			return fmt.Errorf("may not change spec.selector")
		}
	case *appsv1.DaemonSet:
		sel = w.Spec.Selector
		if !equality.Semantic.DeepEqual(sel, after.(*appsv1.DaemonSet).Spec.Selector) {
			return fmt.Errorf("may not change spec.selector")
		}
	}
	if sel != nil {
		pod := podTemplate(after).Labels
		for _, k := range slices.Sorted(maps.Keys(sel.MatchLabels)) {
			if pod[k] != sel.MatchLabels[k] {
				return fmt.Errorf("may not change the pod label %s: the workload selects its pods by it", k)
			}
		}
	}
	return nil
}

// podTemplate is the pod template of a Deployment or DaemonSet, nil for other objects.
func podTemplate(o client.Object) *corev1.PodTemplateSpec {
	switch w := o.(type) {
	case *appsv1.Deployment:
		return &w.Spec.Template
	case *appsv1.DaemonSet:
		return &w.Spec.Template
	}
	return nil
}

// kindOf is an object's kind. Every rendered object carries its TypeMeta (server-side
// apply needs it).
func kindOf(o client.Object) string { return o.GetObjectKind().GroupVersionKind().Kind }
