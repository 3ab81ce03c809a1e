package corpus

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

const crdDir = "../../config/crd/bases"

// quantityPattern is the pattern of resource.Quantity (int-or-string).
const quantityPattern = `^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`

// The CRDs under test, their versions and the subtrees left out for speed (the
// Kubernetes affinity types are large and not ours).
var crdCases = []struct {
	file     string
	versions []string
	skip     []string
}{
	{"linstor.io_linstorclusters.yaml", []string{"v1", "v1alpha1"}, []string{
		"spec.controller.affinity", "spec.csi.controller.affinity", "spec.csi.node.affinity",
		"spec.highAvailabilityController.affinity", "spec.satellite.affinity",
	}},
	{"linstor.io_linstorsatelliteconfigurations.yaml", []string{"v1", "v1alpha1"}, nil},
	{"linstor.io_linstorsatellites.yaml", []string{"v1", "v1alpha1"}, nil},
	{"linstor.io_linstornodeconnections.yaml", []string{"v1"}, nil},
	{"linstor.io_linstorbackups.yaml", []string{"v1"}, nil},
}

// checker validates objects the way kube-apiserver does for the structural part of
// a CRD schema: OpenAPI validation, then list-type map/set uniqueness.
type checker struct {
	validator  validation.SchemaValidator
	structural *structuralschema.Structural
}

func newChecker(t *testing.T, s *apiextensionsv1.JSONSchemaProps) *checker {
	t.Helper()
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(s, internal, nil); err != nil {
		t.Fatal(err)
	}
	v, _, err := validation.NewSchemaValidator(internal)
	if err != nil {
		t.Fatal(err)
	}
	st, err := structuralschema.NewStructural(internal)
	if err != nil {
		t.Fatal(err)
	}
	return &checker{validator: v, structural: st}
}

func (c *checker) errors(obj map[string]any) field.ErrorList {
	errs := validation.ValidateCustomResource(nil, obj, c.validator)
	return append(errs, listtype.ValidateListSetsAndMaps(nil, c.structural, obj)...)
}

// reportsAt reports whether an error is at path or below it.
func reportsAt(errs field.ErrorList, path string) bool {
	for _, e := range errs {
		f := e.Field
		if f == path || strings.HasPrefix(f, path+".") || strings.HasPrefix(f, path+"[") {
			return true
		}
	}
	return false
}

func loadSchema(t *testing.T, file, version string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	crd, err := Load(filepath.Join(crdDir, file))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Schema(crd, version)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func toJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// mutationKind is a Description without its specifics, for coverage counts.
func mutationKind(desc string) string {
	for _, k := range []string{"pattern", "minLength", "maxLength", "minimum", "maximum", "minItems", "maxItems",
		"minProperties", "maxProperties", "format", "wrong type"} {
		if strings.HasPrefix(desc, k) {
			return k
		}
	}
	return desc
}

// TestCRDObjects generates objects for every CRD version, checks them with the API
// server's validators, then checks that every mutation of them is refused.
func TestCRDObjects(t *testing.T) {
	const objects = 200
	kinds := map[string]int{}
	for _, tc := range crdCases {
		for _, version := range tc.versions {
			t.Run(strings.TrimSuffix(tc.file, ".yaml")+"/"+version, func(t *testing.T) {
				s := loadSchema(t, tc.file, version)
				c := newChecker(t, s)
				g := &Generator{Rand: rand.New(rand.NewSource(42)), Skip: tc.skip}
				mutations := 0
				for i := range objects {
					obj, ok := g.Value("", s).(map[string]any)
					if !ok {
						t.Fatalf("object %d is not a map", i)
					}
					if errs := c.errors(obj); len(errs) > 0 {
						t.Fatalf("object %d invalid: %v\n%s", i, errs, toJSON(obj))
					}
					before := toJSON(obj)
					for _, m := range g.Mutations("", s, obj) {
						mutations++
						kinds[mutationKind(m.Description)]++
						copied := DeepCopy(obj).(map[string]any)
						m.Apply(copied)
						errs := c.errors(copied)
						if len(errs) == 0 {
							t.Errorf("object %d: mutation %s (%s) accepted:\n%s", i, m.Path, m.Description, toJSON(copied))
							continue
						}
						if !reportsAt(errs, m.Path) {
							t.Errorf("object %d: mutation %s (%s) reported elsewhere: %v", i, m.Path, m.Description, errs)
						}
					}
					if toJSON(obj) != before {
						t.Fatalf("object %d changed by Mutations or Apply", i)
					}
				}
				t.Logf("%d objects, %d mutations checked", objects, mutations)
			})
		}
	}
	// Every kind of mutation occurs somewhere in these CRDs.
	for _, k := range []string{"pattern", "minLength", "maxLength", "minimum", "maximum", "minItems", "maxItems",
		"maxProperties", "format", "wrong type", "enum value not allowed", "required field removed",
		"duplicate list-map key", "duplicate set item"} {
		if kinds[k] == 0 {
			t.Errorf("no mutation of kind %q", k)
		}
	}
	t.Logf("mutations by kind: %v", kinds)
}

// TestDeterministic: the same seed gives the same objects and mutations.
func TestDeterministic(t *testing.T) {
	s := loadSchema(t, "linstor.io_linstorsatellites.yaml", "v1")
	run := func() string {
		g := &Generator{Rand: rand.New(rand.NewSource(7))}
		var b strings.Builder
		for range 20 {
			obj := g.Value("", s).(map[string]any)
			b.WriteString(toJSON(obj))
			for _, m := range g.Mutations("", s, obj) {
				copied := DeepCopy(obj).(map[string]any)
				m.Apply(copied)
				fmt.Fprintf(&b, "\n%s %s %s", m.Path, m.Description, toJSON(copied))
			}
		}
		return b.String()
	}
	if run() != run() {
		t.Fatal("same seed, different output")
	}
}

// TestMutationPaths checks paths and descriptions on a hand-made object.
func TestMutationPaths(t *testing.T) {
	s := loadSchema(t, "linstor.io_linstorsatelliteconfigurations.yaml", "v1")
	spec := s.Properties["spec"]
	obj := map[string]any{
		"storagePools": []any{
			map[string]any{"name": "pool1", "lvmPool": map[string]any{}},
			map[string]any{"name": "pool2", "source": map[string]any{"hostDevices": []any{"/dev/sda"}}},
		},
		"nodeSelector": map[string]any{"zone": "a"},
	}
	g := &Generator{Rand: rand.New(rand.NewSource(1))}
	got := map[string]bool{}
	for _, m := range g.Mutations("spec", &spec, obj) {
		got[m.Path+": "+m.Description] = true
	}
	for _, want := range []string{
		"spec.storagePools[1].name: pattern ^[A-Za-z][A-Za-z0-9_-]*$ violated",
		"spec.storagePools[1].name: required field removed",
		"spec.storagePools[0].name: minLength 3 violated",
		"spec.storagePools: duplicate list-map key",
		"spec.storagePools: maxItems 32 exceeded",
		"spec.storagePools[1].source.hostDevices: minItems 1 violated",
		"spec.storagePools[1].source.hostDevices: duplicate set item",
		"spec.storagePools[1].source.hostDevices[0]: maxLength 256 exceeded",
		"spec.nodeSelector.zone: wrong type (want string)",
		"spec.storagePools[0].lvmPool: wrong type (want object)",
	} {
		if !got[want] {
			t.Errorf("missing mutation %q", want)
		}
	}
}

// TestHintsAndSkip: hints replace generated values (list-map keys stay unique even
// from a small hinted set), skipped paths never appear.
func TestHintsAndSkip(t *testing.T) {
	s := loadSchema(t, "linstor.io_linstorclusters.yaml", "v1")
	c := newChecker(t, s)
	template := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "linstor-controller"}}}}
	g := &Generator{
		Rand: rand.New(rand.NewSource(3)),
		Hints: map[string]func(*rand.Rand) any{
			"spec.properties[*].name":     func(r *rand.Rand) any { return []string{"a", "b"}[r.Intn(2)] },
			"spec.controller.podTemplate": func(*rand.Rand) any { return DeepCopy(template) },
			"kind":                        func(*rand.Rand) any { return "LinstorCluster" },
		},
		Skip:                []string{"status", "spec.*.affinity", "spec.csi.*.affinity"},
		OptionalProbability: 0.9,
		MaxItems:            5,
	}
	sawTemplate, sawProperties := false, false
	for i := range 50 {
		obj := g.Value("", s).(map[string]any)
		if errs := c.errors(obj); len(errs) > 0 {
			t.Fatalf("object %d invalid: %v", i, errs)
		}
		if kind, ok := obj["kind"]; ok && kind != "LinstorCluster" { // optional: only sometimes present
			t.Fatalf("kind hint not used: %v", obj["kind"])
		}
		if _, ok := obj["status"]; ok {
			t.Fatal("skipped status generated")
		}
		js := toJSON(obj)
		if strings.Contains(js, `"affinity"`) {
			t.Fatalf("skipped affinity generated: %s", js)
		}
		spec, _ := obj["spec"].(map[string]any) // optional: nil when absent
		if ctrl, ok := spec["controller"].(map[string]any); ok && ctrl["podTemplate"] != nil {
			if !reflect.DeepEqual(ctrl["podTemplate"], template) {
				t.Fatalf("podTemplate hint not used: %v", ctrl["podTemplate"])
			}
			sawTemplate = true
		}
		if props, ok := spec["properties"].([]any); ok {
			if len(props) > 2 {
				t.Fatalf("list-map keys repeated: %v", props)
			}
			for _, p := range props {
				if name := p.(map[string]any)["name"]; name != "a" && name != "b" {
					t.Fatalf("name hint not used: %v", name)
				}
				sawProperties = true
			}
		}
		for _, m := range g.Mutations("", s, obj) {
			if strings.HasPrefix(m.Path, "status") || strings.Contains(m.Path, "affinity") {
				t.Fatalf("mutation of a skipped path: %s", m.Path)
			}
		}
	}
	if !sawTemplate || !sawProperties {
		t.Fatalf("hinted fields never generated: podTemplate %v, properties %v", sawTemplate, sawProperties)
	}
}

func TestMatchPath(t *testing.T) {
	for _, tc := range []struct {
		pattern, path string
		want          bool
	}{
		{"spec.controller.affinity", "spec.controller.affinity", true},
		{"spec.*.affinity", "spec.controller.affinity", true},
		{"spec.*.affinity", "spec.csi.node.affinity", false},
		{"spec.properties[*].name", "spec.properties[*].name", true},
		{"spec.*.name", "spec.properties[*].name", true},
		{"status", "statusx", false},
	} {
		if got := matchPath(tc.pattern, tc.path); got != tc.want {
			t.Errorf("matchPath(%q, %q) = %v", tc.pattern, tc.path, got)
		}
	}
}

// TestRandomString checks patterns of these CRDs with their length bounds, and
// tighter ones, on 1000 samples each.
func TestRandomString(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, tc := range []struct {
		pattern        string
		minLen, maxLen int
	}{
		{quantityPattern, 0, -1},
		{quantityPattern, 4, 6},
		{`^/dev/[^\s]+$`, 0, 256},
		{`^/dev/[^\s]+$`, 12, 14},
		{`^[A-Za-z0-9][A-Za-z0-9_./:-]*$`, 1, 256},
		{`^/[^\s]*$`, 0, 1024},
		{`^[A-Za-z0-9+_.-]+$`, 0, 128},
		{`^[A-Za-z0-9_.:/-]+$`, 0, 128},
		{`^metadata\.(name|uid|labels\['[^']+'\]|annotations\['[^']+'\])$`, 1, 512},
		{`^[^\s]+$`, 0, 512},
		{`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`, 1, 253},
		{`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`, 20, 25},
		{`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`, 0, 316},
		{`^[A-Za-z0-9_.:@-]+$`, 0, 15},
		{`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`, 1, 1024},
		{`^[A-Za-z][A-Za-z0-9_-]*$`, 3, 32},
		{`^[A-Za-z][A-Za-z0-9_-]*$`, 1, 1},
		{`^([0-9]+(\.[0-9]+)?(h|m|s))+$`, 0, -1},
		{`^(jdbc:[a-z0-9]+:|etcd://)\S+$`, 0, 1024},
		{`^(k8s|(jdbc:[a-z0-9]+:|etcd://)\S+)$`, 0, 1024},
		{`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`, 0, 64},
		// Unanchored, case-insensitive, counted repetition, non-ASCII classes.
		{`[a-z]+-[0-9]{2,4}`, 0, -1},
		{`(?i)abc`, 3, 3},
		{`^x{3}y{0,2}$`, 0, -1},
		{`^\p{Greek}{2}$`, 2, 2},
		{`^$`, 0, 0},
	} {
		re := regexp.MustCompile(tc.pattern)
		for range 1000 {
			s, ok := RandomString(r, tc.pattern, tc.minLen, tc.maxLen)
			if !ok {
				t.Fatalf("RandomString(%q, %d, %d) failed", tc.pattern, tc.minLen, tc.maxLen)
			}
			n := utf8.RuneCountInString(s)
			if !re.MatchString(s) || n < tc.minLen || (tc.maxLen >= 0 && n > tc.maxLen) {
				t.Fatalf("RandomString(%q, %d, %d) = %q", tc.pattern, tc.minLen, tc.maxLen, s)
			}
		}
	}
}

// TestRandomStringAllCRDPatterns runs every pattern the CRDs use, with the
// minLength/maxLength found next to it, and its violation.
func TestRandomStringAllCRDPatterns(t *testing.T) {
	type bounds struct {
		pattern        string
		minLen, maxLen int
	}
	found := map[bounds]bool{}
	var collect func(s *apiextensionsv1.JSONSchemaProps)
	collect = func(s *apiextensionsv1.JSONSchemaProps) {
		if s.Pattern != "" {
			minLen, maxLen := lengthBounds(s)
			found[bounds{s.Pattern, minLen, maxLen}] = true
		}
		for _, p := range s.Properties {
			collect(&p)
		}
		if s.Items != nil && s.Items.Schema != nil {
			collect(s.Items.Schema)
		}
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			collect(s.AdditionalProperties.Schema)
		}
	}
	for _, tc := range crdCases {
		for _, v := range tc.versions {
			collect(loadSchema(t, tc.file, v))
		}
	}
	if !found[bounds{quantityPattern, 0, -1}] {
		t.Fatal("quantity pattern not found in the CRDs")
	}
	keys := make([]bounds, 0, len(found))
	for b := range found {
		keys = append(keys, b)
	}
	sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
	r := rand.New(rand.NewSource(2))
	for _, b := range keys {
		re := regexp.MustCompile(b.pattern)
		for range 1000 {
			s, ok := RandomString(r, b.pattern, b.minLen, b.maxLen)
			n := utf8.RuneCountInString(s)
			if !ok || !re.MatchString(s) || n < b.minLen || (b.maxLen >= 0 && n > b.maxLen) {
				t.Fatalf("RandomString(%q, %d, %d) = %q, %v", b.pattern, b.minLen, b.maxLen, s, ok)
			}
		}
		bad, ok := violatePattern(r, b.pattern, b.minLen, b.maxLen)
		if !ok || re.MatchString(bad) {
			t.Fatalf("violatePattern(%q) = %q, %v", b.pattern, bad, ok)
		}
	}
	t.Logf("%d pattern/length combinations", len(keys))
}

func TestRandomStringImpossible(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, tc := range []struct {
		pattern        string
		minLen, maxLen int
	}{
		{`^a$`, 2, -1},
		{`^ab+$`, 0, 1},
		{`^[0-9]+$`, 5, 3},
		{`(`, 0, -1},
		{`^[^\x00-\x{10FFFF}]$`, 0, -1},
	} {
		if s, ok := RandomString(r, tc.pattern, tc.minLen, tc.maxLen); ok {
			t.Errorf("RandomString(%q, %d, %d) = %q, want failure", tc.pattern, tc.minLen, tc.maxLen, s)
		}
	}
	// No pattern: lowercase alphanumerics, 1..12 by default.
	for range 1000 {
		s, ok := RandomString(r, "", 0, -1)
		if !ok || !regexp.MustCompile(`^[a-z0-9]{1,12}$`).MatchString(s) {
			t.Fatalf("RandomString(\"\") = %q", s)
		}
	}
}

// TestValueScalars covers schema features the CRDs do not use.
func TestValueScalars(t *testing.T) {
	f64 := func(f float64) *float64 { return &f }
	i64 := func(i int64) *int64 { return &i }
	s := &apiextensionsv1.JSONSchemaProps{
		Type:     "object",
		Required: []string{"exclusive", "number", "nullable", "duration", "map", "when", "uuid", "intEnum", "set"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"exclusive": {Type: "integer", Minimum: f64(1), ExclusiveMinimum: true, Maximum: f64(3), ExclusiveMaximum: true},
			"number":    {Type: "number", Minimum: f64(0.5), Maximum: f64(0.75), ExclusiveMaximum: true},
			"nullable":  {Type: "string", Nullable: true, MinLength: i64(2), MaxLength: i64(2)},
			"duration":  {Type: "string", Format: "duration"},
			"when":      {Type: "string", Format: "date-time"},
			"uuid":      {Type: "string", Format: "uuid"},
			"intEnum":   {Type: "integer", Enum: []apiextensionsv1.JSON{{Raw: []byte("3")}, {Raw: []byte("5")}}},
			"map": {Type: "object", MinProperties: i64(2), MaxProperties: i64(4),
				AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &apiextensionsv1.JSONSchemaProps{Type: "boolean"}}},
			"set": {Type: "array", MinItems: i64(2), MaxItems: i64(2), XListType: ptr.To("set"),
				Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "integer", Minimum: f64(0), Maximum: f64(1)}}},
			"free": {XPreserveUnknownFields: ptr.To(true)},
		},
	}
	c := newChecker(t, s)
	g := &Generator{Rand: rand.New(rand.NewSource(5)), OptionalProbability: 1}
	nulls := 0
	for i := range 200 {
		obj := g.Value("", s).(map[string]any)
		if errs := c.errors(obj); len(errs) > 0 {
			t.Fatalf("object %d invalid: %v\n%s", i, errs, toJSON(obj))
		}
		if obj["exclusive"] != int64(2) {
			t.Fatalf("exclusive bounds: %v", obj["exclusive"])
		}
		if obj["nullable"] == nil {
			nulls++
		}
		if !reflect.DeepEqual(obj["free"], map[string]any{}) {
			t.Fatalf("preserve-unknown-fields: %v", obj["free"])
		}
		for _, m := range g.Mutations("", s, obj) {
			copied := DeepCopy(obj).(map[string]any)
			m.Apply(copied)
			if errs := c.errors(copied); len(errs) == 0 {
				t.Fatalf("mutation %s (%s) accepted: %s", m.Path, m.Description, toJSON(copied))
			}
		}
	}
	if nulls == 0 {
		t.Error("nullable field never null")
	}
}

func TestLoadAndSchemaErrors(t *testing.T) {
	crd, err := Load(filepath.Join(crdDir, "linstor.io_linstorbackups.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if crd.Spec.Names.Kind != "LinstorBackup" {
		t.Fatalf("kind %q", crd.Spec.Names.Kind)
	}
	if _, err := Schema(crd, "v1alpha1"); err == nil {
		t.Fatal("Schema of an absent version succeeded")
	}
	if _, err := Load(filepath.Join(crdDir, "absent.yaml")); err == nil {
		t.Fatal("Load of an absent file succeeded")
	}
}

func TestDeepCopy(t *testing.T) {
	in := map[string]any{"a": []any{map[string]any{"b": int64(1)}, "c"}, "d": true}
	out := DeepCopy(in).(map[string]any)
	out["a"].([]any)[0].(map[string]any)["b"] = int64(2)
	if in["a"].([]any)[0].(map[string]any)["b"] != int64(1) {
		t.Fatal("DeepCopy shares nested maps")
	}
}
