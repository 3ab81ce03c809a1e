package corpus

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Mutation is one schema-violating change of an object.
type Mutation struct {
	Path        string                   // field path in the API server's notation, e.g. spec.storagePools[1].name
	Description string                   // e.g. "pattern ^[a-z]+$ violated", "enum value not allowed", "required field removed", "duplicate list-map key"
	Apply       func(obj map[string]any) // mutates a deep copy the caller passes
}

// Mutations lists schema-violating mutations of obj (a value generated for s at
// path), one or more per constrained leaf it finds: a string breaking its pattern or
// enum or length bounds or format, a number outside minimum/maximum, a list breaking
// minItems/maxItems or with a duplicated list-map key / set item, a map breaking
// minProperties/maxProperties, a required property removed (unless it has a default,
// which the API server would fill in), a value of the wrong type. Each Mutation,
// applied to a deep copy of obj, makes it invalid under s's structural constraints
// (not CEL). Skipped paths are left alone. Deterministic given g.Rand.
//
// Paths follow the API server's messages: map values of additionalProperties are
// written "spec.nodeSelector.key", like the OpenAPI validator reports them.
//
// Nothing is set to null (the API server drops nulls of non-nullable fields before
// validating) and no unknown field is added (it would be pruned, not refused).
func (g *Generator) Mutations(path string, s *apiextensionsv1.JSONSchemaProps, obj map[string]any) []Mutation {
	m := &mutator{g: g}
	m.walk(nil, path, path, s, obj)
	return m.out
}

// step is one move from a value into a child: a map key or a list index.
type step struct {
	key     string
	index   int
	isIndex bool
}

type mutator struct {
	g   *Generator
	out []Mutation
}

// set records a mutation that replaces the value at steps with v (computed now,
// so that Apply is deterministic and cheap).
func (m *mutator) set(steps []step, path, desc string, v any) {
	steps = slices.Clone(steps)
	m.out = append(m.out, Mutation{Path: path, Description: desc, Apply: func(obj map[string]any) {
		setAt(obj, steps, DeepCopy(v))
	}})
}

func (m *mutator) remove(steps []step, path, desc string) {
	steps = slices.Clone(steps)
	m.out = append(m.out, Mutation{Path: path, Description: desc, Apply: func(obj map[string]any) {
		removeAt(obj, steps)
	}})
}

// walk lists the mutations of v, the value of s at steps. path is the concrete
// path (with indexes), pattern the one matched against Skip and Hints.
func (m *mutator) walk(steps []step, path, pattern string, s *apiextensionsv1.JSONSchemaProps, v any) {
	if s == nil || v == nil || m.g.skipped(pattern) {
		return
	}
	if len(steps) > 0 { // the caller's root must stay a map
		if bad, want := wrongType(s); bad != nil {
			m.set(steps, path, "wrong type (want "+want+")", bad)
		}
		if bad, ok := m.notInEnum(s); ok {
			m.set(steps, path, "enum value not allowed", bad)
		}
	}
	switch v := v.(type) {
	case map[string]any:
		m.object(steps, path, pattern, s, v)
	case []any:
		m.array(steps, path, pattern, s, v)
	case string:
		if len(steps) > 0 {
			m.str(steps, path, s)
		}
	case int64, int, float64:
		if len(steps) > 0 {
			m.number(steps, path, s)
		}
	}
}

func (m *mutator) object(steps []step, path, pattern string, s *apiextensionsv1.JSONSchemaProps, v map[string]any) {
	for _, name := range s.Required {
		prop, known := s.Properties[name]
		if _, present := v[name]; !present || (known && prop.Default != nil) || m.g.skipped(child(pattern, name)) {
			continue
		}
		m.remove(append(steps, step{key: name}), child(path, name), "required field removed")
	}
	for _, name := range sortedKeys(v) {
		if prop, ok := s.Properties[name]; ok {
			m.walk(append(steps, step{key: name}), child(path, name), child(pattern, name), &prop, v[name])
		}
	}
	ap := s.AdditionalProperties
	if ap == nil || ap.Schema == nil {
		return // only maps can grow: unknown properties would be pruned
	}
	if s.MaxProperties != nil {
		bigger := maps.Clone(v)
		for tries := 0; len(bigger) <= int(*s.MaxProperties) && tries < 10*int(*s.MaxProperties)+10; tries++ {
			key := randomAlnum(m.g.Rand, 1, 12)
			if _, dup := bigger[key]; dup {
				continue
			}
			// At MaxDepth only required parts are generated: small values.
			if value, ok := m.g.gen(pattern+"[*]", ap.Schema, m.g.maxDepth()); ok {
				bigger[key] = value
			}
		}
		if len(bigger) > int(*s.MaxProperties) {
			m.set(steps, path, fmt.Sprintf("maxProperties %d exceeded", *s.MaxProperties), bigger)
		}
	}
	if s.MinProperties != nil && *s.MinProperties > 0 && len(v) >= int(*s.MinProperties) {
		smaller := map[string]any{}
		for _, key := range sortedKeys(v)[:*s.MinProperties-1] {
			smaller[key] = v[key]
		}
		m.set(steps, path, fmt.Sprintf("minProperties %d violated", *s.MinProperties), smaller)
	}
	for _, key := range sortedKeys(v) {
		if _, isProp := s.Properties[key]; !isProp {
			m.walk(append(steps, step{key: key}), child(path, key), pattern+"[*]", ap.Schema, v[key])
		}
	}
}

func (m *mutator) array(steps []step, path, pattern string, s *apiextensionsv1.JSONSchemaProps, v []any) {
	var items *apiextensionsv1.JSONSchemaProps
	if s.Items != nil {
		items = s.Items.Schema
	}
	if s.MinItems != nil && *s.MinItems > 0 && len(v) >= int(*s.MinItems) {
		m.set(steps, path, fmt.Sprintf("minItems %d violated", *s.MinItems), slices.Clone(v[:*s.MinItems-1]))
	}
	if s.MaxItems != nil && items != nil {
		longer := slices.Clone(v)
		for len(longer) <= int(*s.MaxItems) {
			item, ok := m.g.gen(pattern+"[*]", items, m.g.maxDepth())
			if !ok {
				if len(v) == 0 {
					break
				}
				item = v[len(longer)%len(v)]
			}
			longer = append(longer, item)
		}
		if len(longer) > int(*s.MaxItems) {
			m.set(steps, path, fmt.Sprintf("maxItems %d exceeded", *s.MaxItems), longer)
		}
	}
	if s.XListType != nil && (*s.XListType == "map" || *s.XListType == "set") && len(v) > 0 {
		dup := slices.Clone(v)
		if len(dup) >= 2 {
			dup[len(dup)-1] = v[0]
		} else {
			dup = append(dup, v[0])
		}
		desc := "duplicate set item"
		if *s.XListType == "map" {
			desc = "duplicate list-map key"
		}
		m.set(steps, path, desc, dup)
	}
	for i, item := range v {
		m.walk(append(steps, step{index: i, isIndex: true}), fmt.Sprintf("%s[%d]", path, i), pattern+"[*]", items, item)
	}
}

func (m *mutator) str(steps []step, path string, s *apiextensionsv1.JSONSchemaProps) {
	minLen, maxLen := lengthBounds(s)
	if s.Pattern != "" {
		if bad, ok := violatePattern(m.g.Rand, s.Pattern, minLen, maxLen); ok {
			m.set(steps, path, "pattern "+s.Pattern+" violated", bad)
		}
	}
	if minLen > 0 {
		m.set(steps, path, fmt.Sprintf("minLength %d violated", minLen), strings.Repeat("a", minLen-1))
	}
	if maxLen >= 0 {
		m.set(steps, path, fmt.Sprintf("maxLength %d exceeded", maxLen), strings.Repeat("a", maxLen+1))
	}
	if validatedFormats[s.Format] {
		m.set(steps, path, "format "+s.Format+" violated", "%not a "+s.Format+"%")
	}
}

func (m *mutator) number(steps []step, path string, s *apiextensionsv1.JSONSchemaProps) {
	isInt := s.Type == "integer" || s.XIntOrString
	if lo := s.Minimum; lo != nil {
		var bad any = *lo - 1
		switch {
		case isInt && s.ExclusiveMinimum:
			bad = int64(math.Floor(*lo))
		case isInt:
			bad = int64(math.Ceil(*lo)) - 1
		case s.ExclusiveMinimum:
			bad = *lo
		}
		m.set(steps, path, fmt.Sprintf("minimum %v violated", *lo), bad)
	}
	if hi := s.Maximum; hi != nil {
		var bad any = *hi + 1
		switch {
		case isInt && s.ExclusiveMaximum:
			bad = int64(math.Ceil(*hi))
		case isInt:
			bad = int64(math.Floor(*hi)) + 1
		case s.ExclusiveMaximum:
			bad = *hi
		}
		m.set(steps, path, fmt.Sprintf("maximum %v exceeded", *hi), bad)
	}
}

// wrongType returns a value of another type than s accepts, and the type it wants.
func wrongType(s *apiextensionsv1.JSONSchemaProps) (bad any, want string) {
	if s.XIntOrString {
		return true, "integer or string"
	}
	switch s.Type {
	case "object":
		return "not-an-object", s.Type
	case "array":
		return "not-an-array", s.Type
	case "string":
		return int64(42), s.Type
	case "integer":
		return "42", s.Type
	case "number":
		return "4.2", s.Type
	case "boolean":
		return "true", s.Type
	}
	return nil, "" // untyped (preserve-unknown-fields): anything goes
}

// notInEnum returns a value of s's type that its enum does not allow.
func (m *mutator) notInEnum(s *apiextensionsv1.JSONSchemaProps) (any, bool) {
	if len(s.Enum) == 0 {
		return nil, false
	}
	allowed := map[string]bool{}
	highest := math.Inf(-1)
	for _, e := range s.Enum {
		v := decodeJSON(e.Raw)
		b, _ := json.Marshal(v)
		allowed[string(b)] = true
		switch n := v.(type) {
		case int64:
			highest = max(highest, float64(n))
		case float64:
			highest = max(highest, n)
		}
	}
	switch s.Type {
	case "string":
		for range 100 {
			c := "x" + randomAlnum(m.g.Rand, 1, 12)
			if b, _ := json.Marshal(c); !allowed[string(b)] {
				return c, true
			}
		}
	case "integer":
		return int64(max(highest, 0)) + 1, true
	case "number":
		return max(highest, 0) + 1, true
	case "boolean":
		if !allowed["true"] {
			return true, true
		}
		if !allowed["false"] {
			return false, true
		}
	}
	return nil, false
}

// navigate follows steps from obj; ok=false when the shape does not fit.
func navigate(obj map[string]any, steps []step) (any, bool) {
	var cur any = obj
	for _, st := range steps {
		switch c := cur.(type) {
		case map[string]any:
			if st.isIndex {
				return nil, false
			}
			cur = c[st.key]
		case []any:
			if !st.isIndex || st.index >= len(c) {
				return nil, false
			}
			cur = c[st.index]
		default:
			return nil, false
		}
	}
	return cur, true
}

func setAt(obj map[string]any, steps []step, v any) {
	if len(steps) == 0 { // the root itself: replace its content
		if vm, ok := v.(map[string]any); ok {
			clear(obj)
			maps.Copy(obj, vm)
		}
		return
	}
	parent, ok := navigate(obj, steps[:len(steps)-1])
	if !ok {
		return
	}
	last := steps[len(steps)-1]
	switch p := parent.(type) {
	case map[string]any:
		if !last.isIndex {
			p[last.key] = v
		}
	case []any:
		if last.isIndex && last.index < len(p) {
			p[last.index] = v
		}
	}
}

func removeAt(obj map[string]any, steps []step) {
	if len(steps) == 0 {
		return
	}
	parent, _ := navigate(obj, steps[:len(steps)-1])
	if p, ok := parent.(map[string]any); ok && !steps[len(steps)-1].isIndex {
		delete(p, steps[len(steps)-1].key)
	}
}
