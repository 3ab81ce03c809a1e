package propsgen

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Property types, spelled as props.Rule.Type spells them.
const (
	typeRegex            = "regex"
	typeSymbol           = "symbol"
	typeBoolean          = "boolean"
	typeBooleanTrueFalse = "boolean_true_false"
	typeRange            = "range"
	typeRangeFloat       = "range-float"
	typeNumericOrSymbol  = "numeric-or-symbol"
	typeLong             = "long"
	typeString           = "string"
)

// typeNames maps the server's canonical type name (upper case, '_' for '-') and its
// aliases to our spelling.
var typeNames = map[string]string{
	"REGEX":              typeRegex,
	"SYMBOL":             typeSymbol,
	"HANDLER":            typeSymbol,
	"BOOLEAN":            typeBoolean,
	"BOOLEAN_TRUE_FALSE": typeBooleanTrueFalse,
	"RANGE":              typeRange,
	"NUMERIC":            typeRange,
	"RANGE_FLOAT":        typeRangeFloat,
	"NUMERIC_OR_SYMBOL":  typeNumericOrSymbol,
	"LONG":               typeLong,
	"STRING":             typeString,
}

// knownFields are the fields a property definition may have. The last three are
// dropped on the way to the server; any other field would not compile there.
var knownFields = map[string]bool{
	"key": true, "type": true, "value": true, "values": true, "internal": true, "info": true,
	"default": true, "min": true, "max": true, "min_float": true, "max_float": true, "unit": true,
	"drbd_option_name": true, "unit_prefix": true, "drbd_res_file_section": true,
}

// Fixed value rules of the boolean types (case-insensitive, ASCII only).
const (
	patternBoolean          = "(?i)(?:yes|no)"
	patternBooleanTrueFalse = "(?i)(?:true|false|yes|no)"
)

// build turns one property definition into a Rule the way LINSTOR's build does. The
// upstream generator prints every field as a Java string literal: strings verbatim
// with only '"' escaped (so the Java compiler then interprets backslash escapes),
// other JSON values as Python's str() of them. Symbol values are sorted and joined
// into the alternation "(?:a|b|c)", unquoted. Min and max are parsed as 64-bit
// integers, min_float and max_float as doubles, whatever the type; only the fields
// the type uses end up in the Rule.
func build(p rawProp, consts map[string]string) (Rule, error) {
	for field := range p {
		if !knownFields[field] {
			return Rule{}, fmt.Errorf("unknown field %q", field)
		}
	}
	var r Rule
	var err error
	if r.Key, err = buildKey(p["key"], consts); err != nil {
		return Rule{}, err
	}

	typ, err := literal(p, "type")
	if err != nil {
		return Rule{}, err
	}
	r.Type = typeNames[strings.ToUpper(strings.ReplaceAll(typ, "-", "_"))]
	if r.Type == "" {
		return Rule{}, fmt.Errorf("unknown type %q", typ)
	}
	if _, ok := p["internal"]; ok {
		s, err := literal(p, "internal")
		if err != nil {
			return Rule{}, err
		}
		r.Internal = strings.EqualFold(s, "true")
	}
	if r.Default, err = optLiteral(p, "default"); err != nil {
		return Rule{}, err
	}
	if r.Unit, err = optLiteral(p, "unit"); err != nil {
		return Rule{}, err
	}
	min, err := optInt(p, "min")
	if err != nil {
		return Rule{}, err
	}
	max, err := optInt(p, "max")
	if err != nil {
		return Rule{}, err
	}
	minFloat, err := optFloat(p, "min_float")
	if err != nil {
		return Rule{}, err
	}
	maxFloat, err := optFloat(p, "max_float")
	if err != nil {
		return Rule{}, err
	}
	values, err := buildValues(p["values"])
	if err != nil {
		return Rule{}, err
	}

	// need reports the first field of fields the type needs but the definition lacks.
	need := func(fields ...string) error {
		for _, f := range fields {
			if _, ok := p[f]; !ok {
				return fmt.Errorf("type %s needs %s", r.Type, f)
			}
		}
		return nil
	}
	switch r.Type {
	case typeRegex:
		if err := need("value"); err != nil {
			return Rule{}, err
		}
		if r.Pattern, err = literal(p, "value"); err != nil {
			return Rule{}, err
		}
	case typeSymbol, typeNumericOrSymbol:
		if len(values) == 0 {
			return Rule{}, fmt.Errorf("type %s needs at least one value", r.Type)
		}
		r.Values = values
		r.Pattern = "(?:" + strings.Join(values, "|") + ")"
		if r.Type == typeNumericOrSymbol {
			if err := need("min", "max"); err != nil {
				return Rule{}, err
			}
			r.Min, r.Max = min, max
		}
	case typeBoolean:
		r.Pattern = patternBoolean
	case typeBooleanTrueFalse:
		r.Pattern = patternBooleanTrueFalse
	case typeRange:
		if err := need("min", "max"); err != nil {
			return Rule{}, err
		}
		r.Min, r.Max = min, max
	case typeRangeFloat:
		if err := need("min_float", "max_float"); err != nil {
			return Rule{}, err
		}
		r.Min, r.Max = minFloat, maxFloat
	}
	return r, nil
}

// buildKey resolves a key: a list names string constants joined with '/', a string is
// the key itself.
func buildKey(v any, consts map[string]string) (string, error) {
	switch v := v.(type) {
	case string:
		return javaString(quoteEscape(v))
	case []any:
		parts := make([]string, 0, len(v))
		for _, c := range v {
			name, ok := c.(string)
			if !ok {
				return "", fmt.Errorf("key: constant name %v is not a string", c)
			}
			value, ok := consts[name]
			if !ok {
				return "", fmt.Errorf("key: unknown string constant %q", name)
			}
			s, err := javaString(quoteEscape(value))
			if err != nil {
				return "", err
			}
			parts = append(parts, s)
		}
		if len(parts) == 0 {
			return "", fmt.Errorf("key: empty list")
		}
		return strings.Join(parts, "/"), nil
	case nil:
		return "", fmt.Errorf("no key")
	default:
		return "", fmt.Errorf("key: unsupported value %v", v)
	}
}

// buildValues sorts the symbol values (as Python sorts strings) and interprets each
// as the body of a Java string literal; they are printed without escaping.
func buildValues(v any) ([]string, error) {
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("values: not a list")
	}
	raw := make([]string, 0, len(list))
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("values: %v is not a string", e)
		}
		raw = append(raw, s)
	}
	sort.Strings(raw) // byte order of UTF-8 = code point order, as Python sorts
	out := make([]string, len(raw))
	for i, s := range raw {
		u, err := javaString(s)
		if err != nil {
			return nil, fmt.Errorf("values: %w", err)
		}
		out[i] = u
	}
	return out, nil
}

// literal returns what the server receives for field: Python's str() of the value,
// with '"' escaped for strings, read back as a Java string literal.
func literal(p rawProp, field string) (string, error) {
	var s string
	switch v := p[field].(type) {
	case string:
		s = quoteEscape(v)
	case bool:
		s = "False"
		if v {
			s = "True"
		}
	case int64:
		s = strconv.FormatInt(v, 10)
	case json.Number:
		if strings.ContainsAny(string(v), ".eE") {
			return "", fmt.Errorf("%s: floating-point value %s is not supported here", field, v)
		}
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return "", fmt.Errorf("%s: %w", field, err)
		}
		s = strconv.FormatInt(n, 10)
	default:
		return "", fmt.Errorf("%s: unsupported value %v", field, v)
	}
	u, err := javaString(s)
	if err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	return u, nil
}

func optLiteral(p rawProp, field string) (string, error) {
	if _, ok := p[field]; !ok {
		return "", nil
	}
	return literal(p, field)
}

// optInt returns the field parsed as a 64-bit integer, in canonical decimal form.
// Only plain decimal integers are accepted.
func optInt(p rawProp, field string) (string, error) {
	if _, ok := p[field]; !ok {
		return "", nil
	}
	s, err := literal(p, field)
	if err != nil {
		return "", err
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	return strconv.FormatInt(n, 10), nil
}

// optFloat returns the field parsed as a double, formatted as the shortest decimal
// that reads back to the same value.
func optFloat(p rawProp, field string) (string, error) {
	v, ok := p[field]
	if !ok {
		return "", nil
	}
	var text string
	switch v := v.(type) {
	case json.Number:
		text = string(v)
	case int64:
		text = strconv.FormatInt(v, 10)
	case string:
		text = strings.TrimSpace(v)
	default:
		return "", fmt.Errorf("%s: unsupported value %v", field, v)
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || strings.ContainsAny(text, "_xXnNiI") {
		return "", fmt.Errorf("%s: %q is not a plain decimal number", field, text)
	}
	return strconv.FormatFloat(f, 'g', -1, 64), nil
}

func quoteEscape(s string) string {
	return strings.ReplaceAll(s, `"`, `\"`)
}

// javaString interprets s as the body of a Java string literal: it resolves the
// backslash escapes \b \t \n \f \r \s \" \' \\ and octal escapes. Unicode escapes and
// unknown escapes are errors.
func javaString(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		if i+1 == len(s) {
			return "", fmt.Errorf("string %q ends in a backslash", s)
		}
		i++
		switch e := s[i]; e {
		case 'b':
			b.WriteByte('\b')
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'f':
			b.WriteByte('\f')
		case 'r':
			b.WriteByte('\r')
		case 's':
			b.WriteByte(' ')
		case '"', '\'', '\\':
			b.WriteByte(e)
		case '0', '1', '2', '3', '4', '5', '6', '7':
			// Up to three octal digits if the first is 0-3, else up to two.
			maxLen := 2
			if e <= '3' {
				maxLen = 3
			}
			j := i
			for j < len(s) && j-i < maxLen && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			n, _ := strconv.ParseUint(s[i:j], 8, 8)
			b.WriteRune(rune(n))
			i = j - 1
		default:
			return "", fmt.Errorf("string %q has an unsupported escape \\%c", s, e)
		}
	}
	return b.String(), nil
}
