// Command crdtrim removes the descriptions controller-gen copies from Kubernetes core
// types (corev1.Affinity, Toleration, ResourceRequirements, NodeSelector) into our CRDs,
// run by `make manifests` after controller-gen. Five components each embed an Affinity
// with the whole Kubernetes documentation of it, which made the LinstorCluster CRD too
// large for client-side `kubectl apply` (its last-applied-configuration annotation is
// limited to 256 KiB). Validation is kept whole: only descriptions below the listed
// fields go, and each field keeps its own description, which points at `kubectl explain`.
//
// Usage: go run ./hack/crdtrim config/crd/bases
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// coreTypeFields are, per kind and version, the schema paths of our fields whose type
// comes from k8s.io/api. main_test.go finds them in the Go types, so a new one cannot be
// missed.
var coreTypeFields = map[string][]string{
	"LinstorCluster/v1": append([]string{"spec.nodeAffinity"}, componentFields(
		"spec.controller", "spec.satellite", "spec.csi.controller", "spec.csi.node", "spec.highAvailabilityController")...),
	"LinstorSatelliteConfiguration/v1": {"spec.nodeAffinity"},
}

// componentFields are the core-typed fields of each ComponentSpec at prefixes.
func componentFields(prefixes ...string) []string {
	var out []string
	for _, p := range prefixes {
		out = append(out, p+".resources", p+".tolerations", p+".affinity")
	}
	return out
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: crdtrim <directory of CRD YAML files>")
		os.Exit(2)
	}
	if err := trimDir(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "crdtrim:", err)
		os.Exit(1)
	}
}

func trimDir(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return err
	}
	used := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		out, keys, err := trim(data)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		for _, k := range keys {
			used[k] = true
		}
		if !bytes.Equal(out, data) {
			if err := os.WriteFile(f, out, 0o644); err != nil {
				return err
			}
		}
	}
	var unused []string
	for k := range coreTypeFields {
		if !used[k] {
			unused = append(unused, k)
		}
	}
	sort.Strings(unused)
	if len(unused) > 0 {
		return fmt.Errorf("no CRD in %s has %s", dir, strings.Join(unused, ", "))
	}
	return nil
}

// trim returns the CRD in data with the listed fields trimmed, in controller-gen's
// layout (a "---" line, then keys in order), and the kind/version keys it trimmed.
func trim(data []byte) ([]byte, []string, error) {
	var crd map[string]any
	if err := yaml.Unmarshal(bytes.TrimPrefix(data, []byte("---\n")), &crd); err != nil {
		return nil, nil, err
	}
	kind, _ := dig(crd, "spec", "names", "kind").(string)
	versions, _ := dig(crd, "spec", "versions").([]any)
	var keys []string
	for _, v := range versions {
		version, _ := v.(map[string]any)
		name, _ := version["name"].(string)
		key := kind + "/" + name
		paths, ok := coreTypeFields[key]
		if !ok {
			continue
		}
		keys = append(keys, key)
		root, _ := dig(version, "schema", "openAPIV3Schema").(map[string]any)
		for _, path := range paths {
			field := root
			for _, step := range strings.Split(path, ".") {
				field, _ = dig(field, "properties", step).(map[string]any)
			}
			if field == nil {
				return nil, nil, fmt.Errorf("%s has no field %s", key, path)
			}
			if _, ok := field["description"]; !ok {
				return nil, nil, fmt.Errorf("%s: %s has no description of its own", key, path)
			}
			for _, child := range children(field) {
				dropDescriptions(child)
			}
		}
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		return nil, nil, err
	}
	return append([]byte("---\n"), out...), keys, nil
}

// dropDescriptions removes the description of schema s and of every schema below it.
func dropDescriptions(s map[string]any) {
	delete(s, "description")
	for _, c := range children(s) {
		dropDescriptions(c)
	}
}

// children are the schemas directly below s: its properties (not the properties map
// itself, whose keys are field names), items, additionalProperties and alternatives.
func children(s map[string]any) []map[string]any {
	var out []map[string]any
	if props, ok := s["properties"].(map[string]any); ok {
		for _, p := range props {
			if m, ok := p.(map[string]any); ok {
				out = append(out, m)
			}
		}
	}
	for _, k := range []string{"items", "additionalProperties", "not"} {
		if m, ok := s[k].(map[string]any); ok {
			out = append(out, m)
		}
	}
	for _, k := range []string{"anyOf", "allOf", "oneOf"} {
		list, _ := s[k].([]any)
		for _, item := range list {
			if m, ok := item.(map[string]any); ok {
				out = append(out, m)
			}
		}
	}
	return out
}

func dig(m map[string]any, keys ...string) any {
	var cur any = m
	for _, k := range keys {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[k]
	}
	return cur
}
