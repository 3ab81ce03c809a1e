package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	linstorv1alpha1 "github.com/linstor-operator/linstor-operator/api/v1alpha1"
)

const crdDir = "../../config/crd/bases"

// coreTypePaths walks a Go type as its JSON is laid out and returns the paths of the
// fields whose type comes from k8s.io/api.
func coreTypePaths(t reflect.Type, prefix string) []string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || (name == "" && !strings.Contains(opts, "inline")) {
			continue
		}
		if name == "metadata" || (f.Anonymous && strings.HasPrefix(f.Type.PkgPath(), "k8s.io/apimachinery/")) {
			continue
		}
		path := prefix + name
		next := path + "."
		if name == "" {
			path, next = strings.TrimSuffix(prefix, "."), prefix
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		if strings.HasPrefix(ft.PkgPath(), "k8s.io/api/") {
			out = append(out, path)
			continue
		}
		out = append(out, coreTypePaths(f.Type, next)...)
	}
	return out
}

// TestEveryCoreTypeFieldIsListed: the list of fields to trim is what the Go types
// hold, for every kind and version of the API group.
func TestEveryCoreTypeFieldIsListed(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := linstorv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := linstorv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	found := map[string][]string{}
	kinds := 0
	for gvk, typ := range scheme.AllKnownTypes() {
		if gvk.Group != "linstor.io" || strings.HasSuffix(gvk.Kind, "List") {
			continue
		}
		kinds++
		if paths := coreTypePaths(typ, ""); len(paths) > 0 {
			found[gvk.Kind+"/"+gvk.Version] = paths
		}
	}
	if kinds < 5 {
		t.Fatalf("only %d kinds in the scheme", kinds)
	}
	for key := range found {
		want, got := found[key], slices.Clone(coreTypeFields[key])
		sort.Strings(want)
		sort.Strings(got)
		if !slices.Equal(want, got) {
			t.Errorf("%s: the Go types hold Kubernetes types at %v, coreTypeFields lists %v", key, want, got)
		}
	}
	for key := range coreTypeFields {
		if _, ok := found[key]; !ok {
			t.Errorf("coreTypeFields lists %s, whose Go type holds no Kubernetes type", key)
		}
	}
}

// annotationLimit is the API server's limit on all annotations of an object together
// (TotalAnnotationSizeLimitB in apimachinery's validation).
const annotationLimit = 256 << 10

const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// TestCRDsFitClientSideApply: `kubectl apply` without --server-side stores the whole
// object as compact JSON in an annotation. Each CRD stays below half that limit, so it
// has room to grow, and the committed files are trimmed.
func TestCRDsFitClientSideApply(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(crdDir, "*.yaml"))
	if len(files) < 5 {
		t.Fatalf("%d CRDs in %s", len(files), crdDir)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		trimmed, _, err := trim(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if !bytes.Equal(trimmed, data) {
			t.Errorf("%s is not trimmed: run `make manifests`", filepath.Base(f))
		}
		js, err := yaml.YAMLToJSON(bytes.TrimPrefix(data, []byte("---\n")))
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		if err := json.Unmarshal(js, &obj); err != nil {
			t.Fatal(err)
		}
		compact, _ := json.Marshal(obj)
		annotations := len(lastApplied) + len(compact)
		meta, _ := obj["metadata"].(map[string]any)
		existing, _ := meta["annotations"].(map[string]any)
		for k, v := range existing {
			annotations += len(k) + len(v.(string))
		}
		t.Logf("%s: %d bytes of YAML, %d of compact JSON; annotations with last-applied-configuration: %d of %d bytes",
			filepath.Base(f), len(data), len(compact), annotations, annotationLimit)
		if len(compact) >= 128<<10 {
			t.Errorf("%s: %d bytes of compact JSON, want < 128 KiB", filepath.Base(f), len(compact))
		}
		if annotations > annotationLimit {
			t.Errorf("%s: last-applied-configuration would make %d bytes of annotations, the limit is %d", filepath.Base(f), annotations, annotationLimit)
		}
	}
}

// TestTrimDropsOnlyDescriptions: descriptions go below the listed fields, and nothing
// else: a property named "description" and every validation keyword stay, and the
// field's own description (pointing at kubectl explain) stays.
func TestTrimDropsOnlyDescriptions(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(crdDir, "linstor.io_linstorclusters.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd map[string]any
	if err := yaml.Unmarshal(bytes.TrimPrefix(data, []byte("---\n")), &crd); err != nil {
		t.Fatal(err)
	}
	v1 := func(crd map[string]any) map[string]any {
		for _, v := range dig(crd, "spec", "versions").([]any) {
			if v.(map[string]any)["name"] == "v1" {
				return dig(v.(map[string]any), "schema", "openAPIV3Schema").(map[string]any)
			}
		}
		t.Fatal("no v1 schema")
		return nil
	}
	root := v1(crd)
	affinity := dig(root, "properties", "spec", "properties", "controller", "properties", "affinity").(map[string]any)
	if d, _ := affinity["description"].(string); !strings.Contains(d, "kubectl explain pod.spec.affinity") {
		t.Errorf("spec.controller.affinity description %q does not point at kubectl explain", d)
	}
	// Put descriptions back everywhere below, and a field named "description".
	var document func(s map[string]any)
	document = func(s map[string]any) {
		s["description"] = "Kubernetes documentation."
		for _, c := range children(s) {
			document(c)
		}
	}
	nodeAffinity := dig(affinity, "properties", "nodeAffinity").(map[string]any)
	nodeAffinity["properties"].(map[string]any)["description"] = map[string]any{"type": "string", "maxLength": float64(8)} // numbers decode as float64
	for _, c := range children(affinity) {
		document(c)
	}
	kept := affinity["description"]
	documented, err := yaml.Marshal(crd)
	if err != nil {
		t.Fatal(err)
	}
	out, keys, err := trim(append([]byte("---\n"), documented...))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(keys, "LinstorCluster/v1") {
		t.Fatalf("trimmed %v", keys)
	}
	var after map[string]any
	if err := yaml.Unmarshal(bytes.TrimPrefix(out, []byte("---\n")), &after); err != nil {
		t.Fatal(err)
	}
	// Expected: the committed file plus the made-up property, without its description.
	delete(nodeAffinity["properties"].(map[string]any)["description"].(map[string]any), "description")
	var strip func(s map[string]any)
	strip = func(s map[string]any) {
		delete(s, "description")
		for _, c := range children(s) {
			strip(c)
		}
	}
	for _, c := range children(affinity) {
		strip(c)
	}
	affinity["description"] = kept
	if !reflect.DeepEqual(after, crd) {
		t.Fatal("trim changed more than the descriptions below the listed fields")
	}
	field := dig(v1(after), "properties", "spec", "properties", "controller", "properties", "affinity", "properties", "nodeAffinity", "properties", "description")
	if m, _ := field.(map[string]any); m["maxLength"] == nil {
		t.Fatalf("a property named description lost its schema: %v", field)
	}
}
