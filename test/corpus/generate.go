package corpus

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"net"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Generator makes random values valid against CRD structural schemas.
type Generator struct {
	Rand *rand.Rand
	// Hints override generation at a path. Keys are paths like "spec.properties[*].name"
	// or "spec.controller.podTemplate" ([*] matches any index; map keys of
	// additionalProperties maps appear as [*] too; a segment "*" matches any one
	// segment). The hint returns a JSON-compatible value; nil omits the value.
	// An optional property is still only generated with OptionalProbability.
	Hints map[string]func(r *rand.Rand) any
	// Skip lists paths never generated (e.g. "spec.controller.affinity", "status"),
	// nor mutated. Same syntax as the Hints keys.
	Skip []string
	// OptionalProbability is the chance an optional property is generated (default 0.5 if 0).
	OptionalProbability float64
	// MaxItems caps list and map sizes (default 3 if 0), unless minItems/minProperties
	// need more; MaxDepth caps nesting (default 8 if 0): deeper, only required
	// properties and minItems/minProperties entries are generated.
	MaxItems, MaxDepth int
}

func (g *Generator) optionalProbability() float64 {
	if g.OptionalProbability == 0 {
		return 0.5
	}
	return g.OptionalProbability
}

func (g *Generator) maxItems() int {
	if g.MaxItems == 0 {
		return 3
	}
	return g.MaxItems
}

func (g *Generator) maxDepth() int {
	if g.MaxDepth == 0 {
		return 8
	}
	return g.MaxDepth
}

func (g *Generator) skipped(path string) bool {
	for _, p := range g.Skip {
		if matchPath(p, path) {
			return true
		}
	}
	return false
}

func (g *Generator) hint(path string) func(*rand.Rand) any {
	if h, ok := g.Hints[path]; ok {
		return h
	}
	for _, k := range sortedKeys(g.Hints) { // sorted: deterministic when several match
		if matchPath(k, path) {
			return g.Hints[k]
		}
	}
	return nil
}

// Value generates a random value valid against s (types, enum, pattern,
// minLength/maxLength, minimum/maximum incl. exclusive, minItems/maxItems,
// minProperties/maxProperties of maps, required, x-kubernetes-list-type map (unique
// list-map-keys) and set (unique items), x-kubernetes-int-or-string,
// x-kubernetes-preserve-unknown-fields (emit {} unless hinted), string formats
// validated by the API server, nullable). CEL rules (x-kubernetes-validations) are
// NOT evaluated: the caller filters. The path argument is the dotted path of s
// (e.g. "spec", "" for the root); it returns nil when path is skipped.
func (g *Generator) Value(path string, s *apiextensionsv1.JSONSchemaProps) any {
	v, _ := g.gen(path, s, 0)
	return v
}

// gen returns a value for s at path; ok=false means "leave it out" (skipped path,
// hint returning nil).
func (g *Generator) gen(path string, s *apiextensionsv1.JSONSchemaProps, depth int) (v any, ok bool) {
	if g.skipped(path) {
		return nil, false
	}
	if h := g.hint(path); h != nil {
		v := h(g.Rand)
		return v, v != nil
	}
	if s.Nullable && g.Rand.Intn(10) == 0 {
		return nil, true
	}
	if len(s.Enum) > 0 {
		return decodeJSON(s.Enum[g.Rand.Intn(len(s.Enum))].Raw), true
	}
	if s.XIntOrString {
		if g.Rand.Intn(2) == 0 {
			return g.integer(s), true
		}
		return g.str(s), true
	}
	switch s.Type {
	case "object":
		return g.object(path, s, depth), true
	case "array":
		return g.array(path, s, depth), true
	case "string":
		return g.str(s), true
	case "integer":
		return g.integer(s), true
	case "number":
		return g.number(s), true
	case "boolean":
		return g.Rand.Intn(2) == 0, true
	}
	// Untyped: structural schemas only allow this with preserve-unknown-fields.
	return map[string]any{}, true
}

// count picks a list or map size within the schema's bounds and MaxItems.
func (g *Generator) count(minN, maxN *int64, depth int) int {
	lo := 0
	if minN != nil {
		lo = int(*minN)
	}
	if depth >= g.maxDepth() {
		return lo
	}
	hi := g.maxItems()
	if maxN != nil {
		hi = min(hi, int(*maxN))
	}
	hi = max(hi, lo)
	return lo + g.Rand.Intn(hi-lo+1)
}

func (g *Generator) object(path string, s *apiextensionsv1.JSONSchemaProps, depth int) map[string]any {
	out := map[string]any{}
	required := map[string]bool{}
	for _, name := range s.Required {
		required[name] = true
	}
	for _, name := range sortedKeys(s.Properties) {
		if !required[name] && (depth >= g.maxDepth() || g.Rand.Float64() >= g.optionalProbability()) {
			continue
		}
		prop := s.Properties[name]
		if v, ok := g.gen(child(path, name), &prop, depth+1); ok {
			out[name] = v
		}
	}
	if ap := s.AdditionalProperties; ap != nil && ap.Schema != nil {
		n := g.count(s.MinProperties, s.MaxProperties, depth)
		for tries := 0; len(out) < n && tries < 10*n+10; tries++ {
			key := randomAlnum(g.Rand, 1, 12)
			if _, dup := out[key]; dup {
				continue
			}
			if v, ok := g.gen(path+"[*]", ap.Schema, depth+1); ok {
				out[key] = v
			}
		}
	}
	return out
}

func (g *Generator) array(path string, s *apiextensionsv1.JSONSchemaProps, depth int) []any {
	out := []any{}
	if s.Items == nil || s.Items.Schema == nil {
		return out
	}
	n := g.count(s.MinItems, s.MaxItems, depth)
	seen := map[string]bool{}
	for tries := 0; len(out) < n && tries < 10*n+10; tries++ {
		v, ok := g.gen(path+"[*]", s.Items.Schema, depth+1)
		if !ok {
			continue
		}
		if key, unique := uniqueKey(s, v); unique {
			if seen[key] {
				continue // a hint or a small enum may repeat itself: try again
			}
			seen[key] = true
		}
		out = append(out, v)
	}
	return out
}

// uniqueKey returns what must be unique in a list-type set (the item) or map (the
// tuple of list-map-keys), as JSON; unique=false for other lists.
func uniqueKey(s *apiextensionsv1.JSONSchemaProps, item any) (key string, unique bool) {
	var k any
	switch {
	case s.XListType != nil && *s.XListType == "set":
		k = item
	case s.XListType != nil && *s.XListType == "map":
		m, _ := item.(map[string]any)
		tuple := make([]any, len(s.XListMapKeys))
		for i, name := range s.XListMapKeys {
			v, ok := m[name]
			if prop := s.Items.Schema.Properties[name]; !ok && prop.Default != nil {
				v = decodeJSON(prop.Default.Raw) // the API server defaults keys before comparing
			}
			tuple[i] = v
		}
		k = tuple
	default:
		return "", false
	}
	b, _ := json.Marshal(k)
	return string(b), true
}

func lengthBounds(s *apiextensionsv1.JSONSchemaProps) (minLen, maxLen int) {
	minLen, maxLen = 0, -1
	if s.MinLength != nil {
		minLen = int(*s.MinLength)
	}
	if s.MaxLength != nil {
		maxLen = int(*s.MaxLength)
	}
	return minLen, maxLen
}

func (g *Generator) str(s *apiextensionsv1.JSONSchemaProps) string {
	if s.Pattern == "" {
		if v, ok := formatValue(g.Rand, s.Format); ok {
			return v
		}
	}
	minLen, maxLen := lengthBounds(s)
	if v, ok := RandomString(g.Rand, s.Pattern, minLen, maxLen); ok {
		return v
	}
	// The bounds contradict the pattern (or are too hard to hit): best effort.
	v, _ := RandomString(g.Rand, s.Pattern, 0, -1)
	return v
}

// validatedFormats are the string formats the API server checks and formatValue
// knows; password and the name-like formats accept randomAlnum output as it is.
var validatedFormats = map[string]bool{
	"date-time": true, "datetime": true, "date": true, "duration": true, "uuid": true,
	"ipv4": true, "ipv6": true, "cidr": true, "mac": true, "byte": true, "email": true, "uri": true,
}

// formatValue returns a random string of a known format.
func formatValue(r *rand.Rand, format string) (string, bool) {
	switch format {
	case "date-time", "datetime":
		return randomTime(r).Format(time.RFC3339), true
	case "date":
		return randomTime(r).Format(time.DateOnly), true
	case "duration":
		return fmt.Sprintf("%dh%dm%ds", r.Intn(100), r.Intn(60), r.Intn(60)), true
	case "uuid":
		b := randomBytes(r, 16)
		return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]), true
	case "ipv4":
		return net.IP(randomBytes(r, 4)).String(), true
	case "ipv6":
		return net.IP(randomBytes(r, 16)).String(), true
	case "cidr":
		return fmt.Sprintf("10.%d.%d.0/24", r.Intn(256), r.Intn(256)), true
	case "mac":
		return net.HardwareAddr(randomBytes(r, 6)).String(), true
	case "byte":
		return base64.StdEncoding.EncodeToString(randomBytes(r, 1+r.Intn(12))), true
	case "email":
		return randomAlnum(r, 1, 12) + "@example.com", true
	case "uri":
		return "https://example.com/" + randomAlnum(r, 1, 12), true
	}
	return "", false
}

func randomTime(r *rand.Rand) time.Time {
	// 2000-01-01 .. about 2063, whole seconds: round-trips through metav1.Time.
	return time.Unix(946684800+r.Int63n(2e9), 0).UTC()
}

func randomBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Intn(256))
	}
	return b
}

// intRange returns the integers s allows. Without a format the range stays within
// ±2^53 so that values survive a float64 JSON decoder; int32 keeps Go types happy
// although the API server does not check formats of integers.
func intRange(s *apiextensionsv1.JSONSchemaProps) (lo, hi int64) {
	lo, hi = -(1 << 53), 1<<53
	if s.Format == "int32" {
		lo, hi = math.MinInt32, math.MaxInt32
	}
	if s.Minimum != nil {
		m := math.Ceil(*s.Minimum)
		if s.ExclusiveMinimum && m == *s.Minimum {
			m++
		}
		if m > float64(lo) { // compare as floats: a huge bound must not overflow int64
			lo = int64(m)
		}
	}
	if s.Maximum != nil {
		m := math.Floor(*s.Maximum)
		if s.ExclusiveMaximum && m == *s.Maximum {
			m--
		}
		if m < float64(hi) {
			hi = int64(m)
		}
	}
	return lo, hi
}

func (g *Generator) integer(s *apiextensionsv1.JSONSchemaProps) int64 {
	lo, hi := intRange(s)
	if hi < lo {
		return lo // contradictory schema: nothing valid exists
	}
	// Mostly small values near the bound that is set, sometimes anything.
	switch {
	case s.Minimum != nil && s.Maximum != nil, g.Rand.Intn(10) == 0:
	case s.Minimum != nil:
		hi = min(hi, lo+100)
	case s.Maximum != nil:
		lo = max(lo, hi-100)
	default:
		lo, hi = max(lo, -10), min(hi, 1000)
	}
	return lo + g.Rand.Int63n(hi-lo+1)
}

func (g *Generator) number(s *apiextensionsv1.JSONSchemaProps) float64 {
	lo, hi := -1000.0, 1000.0
	if s.Minimum != nil {
		lo = *s.Minimum
		if s.Maximum == nil {
			hi = lo + 1000
		}
	}
	if s.Maximum != nil {
		hi = *s.Maximum
		if s.Minimum == nil {
			lo = hi - 1000
		}
	}
	for range 100 {
		v := lo + g.Rand.Float64()*(hi-lo)
		if (s.ExclusiveMinimum && v == lo) || (s.ExclusiveMaximum && v == hi) {
			continue
		}
		return v
	}
	return (lo + hi) / 2
}

// decodeJSON decodes raw JSON into a JSON-compatible value, integers as int64.
func decodeJSON(raw []byte) any {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil
	}
	return fromNumbers(v)
}

func fromNumbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		f, _ := v.Float64()
		return f
	case map[string]any:
		for k, e := range v {
			v[k] = fromNumbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = fromNumbers(e)
		}
	}
	return v
}
