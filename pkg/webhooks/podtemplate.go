package webhooks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
)

// Strategic-merge directives (k8s.io/apimachinery/pkg/util/strategicpatch): $patch on
// a map or a list item, $retainKeys on a map, and two that name a sibling list.
const (
	directivePatch         = "$patch"
	directiveRetainKeys    = "$retainKeys"
	prefixSetElementOrder  = "$setElementOrder/"
	prefixDeleteFromPrimit = "$deleteFromPrimitiveList/"
)

var patchTypes = []string{"merge", "replace", "delete"}

// probeTemplate exercises the patch: a pod template with a container, a volume and a
// node selector, the shapes the rendered templates have, so list directives meet a
// list to act on.
var probeTemplate = []byte(`{"metadata":{"labels":{"app":"probe"}},"spec":{"containers":[{"name":"probe","image":"probe","args":["a"],"env":[{"name":"A","value":"1"}],"volumeMounts":[{"name":"probe","mountPath":"/probe"}]}],"volumes":[{"name":"probe","emptyDir":{}}],"nodeSelector":{"probe":"true"},"tolerations":[{"operator":"Exists"}]}}`)

// validatePodTemplatePatch checks a strategic-merge patch of a pod template: every
// field is a pod template field of the right type (a typo fails here, not silently at
// render time), and the directives are ones the strategic merge applies where they
// stand ($patch: delete on a container, $retainKeys, $setElementOrder/..., ...).
func validatePodTemplatePatch(path *field.Path, patch *runtime.RawExtension) field.ErrorList {
	if patch == nil || len(bytes.TrimSpace(patch.Raw)) == 0 {
		return nil
	}
	var doc any
	if err := json.Unmarshal(patch.Raw, &doc); err != nil {
		return field.ErrorList{field.Invalid(path, "<patch>", "must be a pod template patch: "+err.Error())}
	}
	var errs field.ErrorList
	plain := withoutDirectives(path, doc, &errs)
	if len(errs) > 0 {
		return errs
	}
	raw, _ := json.Marshal(plain)
	var tmpl corev1.PodTemplateSpec
	strictErrs, err := kjson.UnmarshalStrict(raw, &tmpl)
	if err != nil {
		return field.ErrorList{field.Invalid(path, "<patch>", "must be a pod template patch: "+err.Error())}
	}
	for _, e := range strictErrs {
		errs = append(errs, field.Invalid(path, "<patch>", "must be a pod template patch: "+e.Error()))
	}
	if len(errs) > 0 {
		return errs
	}
	if _, err := strategicpatch.StrategicMergePatch(probeTemplate, patch.Raw, corev1.PodTemplateSpec{}); err != nil {
		return field.ErrorList{field.Invalid(path, "<patch>", "is not a strategic-merge patch of a pod template: "+err.Error())}
	}
	return nil
}

// withoutDirectives returns doc with its directives checked and turned into plain
// fields, so the strict decode checks what they name: $deleteFromPrimitiveList/args
// and $setElementOrder/containers must name lists of the right item type.
func withoutDirectives(path *field.Path, doc any, errs *field.ErrorList) any {
	switch v := doc.(type) {
	case map[string]any:
		out := map[string]any{}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			val := v[k]
			at := path.Child(k)
			switch {
			case k == directivePatch:
				if s, ok := val.(string); !ok || !slices.Contains(patchTypes, s) {
					*errs = append(*errs, field.NotSupported(at, val, patchTypes))
				}
			case k == directiveRetainKeys:
				keys, ok := val.([]any)
				if !ok {
					*errs = append(*errs, field.Invalid(at, val, "must be a list of the field names to keep"))
					continue
				}
				for i, key := range keys {
					if name, ok := key.(string); !ok || name == "" {
						*errs = append(*errs, field.Invalid(at.Index(i), key, "must be a field name"))
					}
				}
			case strings.HasPrefix(k, prefixSetElementOrder), strings.HasPrefix(k, prefixDeleteFromPrimit):
				target := k[strings.Index(k, "/")+1:]
				if _, ok := val.([]any); !ok || target == "" {
					*errs = append(*errs, field.Invalid(at, val, fmt.Sprintf("must be a list of items of the list field %q", target)))
					continue
				}
				if _, set := v[target]; !set {
					out[target] = withoutDirectives(path.Child(target), val, errs)
				}
			case strings.HasPrefix(k, "$"):
				*errs = append(*errs, field.Invalid(at, k, "is not a strategic-merge directive; the directives are $patch, $retainKeys, $setElementOrder/<list> and $deleteFromPrimitiveList/<list>"))
			default:
				out[k] = withoutDirectives(at, val, errs)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, item := range v {
			out[i] = withoutDirectives(path.Index(i), item, errs)
		}
		return out
	}
	return doc
}
