package webhooks

import (
	"bytes"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
)

// validatePodTemplatePatch checks that a strategic-merge patch decodes into a pod
// template without unknown or mistyped fields, so a typo fails at admission and not
// silently at render time.
func validatePodTemplatePatch(path *field.Path, patch *runtime.RawExtension) field.ErrorList {
	if patch == nil || len(bytes.TrimSpace(patch.Raw)) == 0 {
		return nil
	}
	var tmpl corev1.PodTemplateSpec
	strictErrs, err := kjson.UnmarshalStrict(patch.Raw, &tmpl)
	if err != nil {
		return field.ErrorList{field.Invalid(path, "<patch>", "must be a pod template patch: "+err.Error())}
	}
	var errs field.ErrorList
	for _, e := range strictErrs {
		errs = append(errs, field.Invalid(path, "<patch>", "must be a pod template patch: "+e.Error()))
	}
	return errs
}
