// Package corpus generates random custom resources from CRD OpenAPI v3 schemas,
// together with random mutations that break the schema's structural constraints.
// A test suite sends both through a real kube-apiserver: generated objects must be
// accepted (unless a CEL rule refuses them), mutated ones must be refused.
//
// Values are JSON-compatible: map[string]any, []any, string, int64, float64, bool.
// CEL rules (x-kubernetes-validations) are not evaluated, and anyOf/allOf/oneOf/not
// are ignored except for the anyOf that comes with x-kubernetes-int-or-string.
package corpus

import (
	"fmt"
	"os"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// Load reads a CRD YAML file and returns it. The file may start with a "---"
// document separator; only the first non-empty document is read.
func Load(path string) (*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	for _, doc := range strings.Split("\n"+string(data), "\n---") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal([]byte(doc), crd); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if crd.Kind != "CustomResourceDefinition" {
			return nil, fmt.Errorf("%s: kind %q is not CustomResourceDefinition", path, crd.Kind)
		}
		return crd, nil
	}
	return nil, fmt.Errorf("%s: no YAML document", path)
}

// Schema returns the openAPIV3Schema of the named version (error if absent).
func Schema(crd *apiextensionsv1.CustomResourceDefinition, version string) (*apiextensionsv1.JSONSchemaProps, error) {
	for _, v := range crd.Spec.Versions {
		if v.Name != version {
			continue
		}
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			return nil, fmt.Errorf("CRD %s version %s has no openAPIV3Schema", crd.Name, version)
		}
		return v.Schema.OpenAPIV3Schema, nil
	}
	return nil, fmt.Errorf("CRD %s has no version %s", crd.Name, version)
}

// DeepCopy copies a JSON-compatible value. Values of other types are returned as they are.
func DeepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = DeepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = DeepCopy(e)
		}
		return out
	default:
		return v
	}
}

// child joins a property name to a dotted path ("" is the root).
func child(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// matchPath reports whether a Skip or Hints key matches a path whose list indexes
// and map keys are already written as [*]. A key segment "*" matches any one
// segment, so "spec.*.affinity" matches "spec.controller.affinity".
func matchPath(pattern, path string) bool {
	if pattern == path {
		return true
	}
	ps, xs := strings.Split(pattern, "."), strings.Split(path, ".")
	if len(ps) != len(xs) {
		return false
	}
	for i := range ps {
		if ps[i] != "*" && ps[i] != xs[i] {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
