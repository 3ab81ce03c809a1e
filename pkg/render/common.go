package render

import (
	"encoding/json"
	"fmt"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// Labels every rendered object carries.

func labels(cluster *linstorv1.LinstorCluster, component string) map[string]string {
	return map[string]string{
		names.LabelName:             component,
		names.LabelInstance:         cluster.Name,
		names.LabelManagedBy:        names.ManagedBy,
		names.LabelComponent:        component,
		names.LabelCluster:          cluster.Name,
		names.LabelClusterNamespace: cluster.Namespace,
	}
}

func selectorLabels(cluster *linstorv1.LinstorCluster, component string) map[string]string {
	return map[string]string{names.LabelName: component, names.LabelInstance: cluster.Name}
}

// image picks the CR override or the release image.
func image(override, release string) string {
	if override != "" {
		return override
	}
	return release
}

// applyComponent sets the typed scheduling and resource fields of spec on the pod.
func applyComponent(tmpl *corev1.PodTemplateSpec, spec *linstorv1.ComponentSpec, mainContainer string) {
	if spec == nil {
		return
	}
	if spec.NodeSelector != nil {
		tmpl.Spec.NodeSelector = spec.NodeSelector
	}
	// Added to the component's default tolerations (a user's with a default's key and
	// effect replaces that one), never in their place.
	tmpl.Spec.Tolerations = MergeTolerations(tmpl.Spec.Tolerations, spec.Tolerations)
	if spec.Affinity != nil {
		tmpl.Spec.Affinity = spec.Affinity
	}
	if spec.Resources != nil {
		for i := range tmpl.Spec.Containers {
			if tmpl.Spec.Containers[i].Name == mainContainer {
				tmpl.Spec.Containers[i].Resources = *spec.Resources
			}
		}
	}
}

// patchPodTemplate applies a user's strategic-merge patch to a pod template. Unless the
// policy allows it, a patch that adds privilege is refused here too, with the fields
// named relative to the patch: the webhook refuses it at admission, but an object
// written before that check (or while the webhook was away) must not be rendered.
func patchPodTemplate(tmpl *corev1.PodTemplateSpec, patch *runtime.RawExtension, policy linstorv1.PodTemplatePolicy) error {
	if patch == nil || len(patch.Raw) == 0 {
		return nil
	}
	out, err := strategicPatch(tmpl, patch)
	if err != nil {
		return err
	}
	// A strategic-merge patch replaces the toleration list (it has no merge key): merge
	// the patch's tolerations with those before it, as the typed field does.
	out.Spec.Tolerations = MergeTolerations(tmpl.Spec.Tolerations, out.Spec.Tolerations)
	if errs := PodTemplateEscalation(policy, tmpl, out, nil); len(errs) > 0 {
		return errs.ToAggregate()
	}
	*tmpl = *out
	return nil
}

// strategicPatch returns tmpl with patch applied.
func strategicPatch(tmpl *corev1.PodTemplateSpec, patch *runtime.RawExtension) (*corev1.PodTemplateSpec, error) {
	orig, err := json.Marshal(tmpl)
	if err != nil {
		return nil, err
	}
	patched, err := strategicpatch.StrategicMergePatch(orig, patch.Raw, corev1.PodTemplateSpec{})
	if err != nil {
		return nil, fmt.Errorf("applying podTemplate patch: %w", err)
	}
	var out corev1.PodTemplateSpec
	if err := json.Unmarshal(patched, &out); err != nil {
		return nil, fmt.Errorf("applying podTemplate patch: %w", err)
	}
	return &out, nil
}

// Objects is an ordered set of desired objects.
type Objects []client.Object

// WithEnv adds env to every container of the Deployments and DaemonSets in objs (the
// cluster-wide proxy settings OLM gives the operator, for example). Existing variables
// of the same name win: a pod-template patch can override them.
func WithEnv(objs Objects, env []corev1.EnvVar) Objects {
	if len(env) == 0 {
		return objs
	}
	add := func(spec *corev1.PodSpec) {
		for i := range spec.Containers {
			c := &spec.Containers[i]
			have := map[string]bool{}
			for _, e := range c.Env {
				have[e.Name] = true
			}
			for _, e := range env {
				if !have[e.Name] {
					c.Env = append(c.Env, e)
				}
			}
		}
	}
	for _, o := range objs {
		switch w := o.(type) {
		case *appsv1.Deployment:
			add(&w.Spec.Template.Spec)
		case *appsv1.DaemonSet:
			add(&w.Spec.Template.Spec)
		}
	}
	return objs
}
