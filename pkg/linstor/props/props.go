package props

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Object names a whitelist, as linstor-common's properties.json names it.
type Object string

// The objects an operator sets properties on.
const (
	Controller            Object = "controller"
	Node                  Object = "node"
	StoragePool           Object = "storagepool"
	StoragePoolDefinition Object = "storagepool-definition"
	ResourceDefinition    Object = "resource-definition" // also resource groups
	Resource              Object = "resource"
	VolumeDefinition      Object = "volume-definition" // also volume groups
	Volume                Object = "volume"
	NodeConnection        Object = "node-conn"
	ResourceConnection    Object = "rsc-conn"
)

// The DRBD Proxy whitelists (drbd-proxy modify: its own properties, and the settings
// of each compression plugin).
const (
	DrbdProxy     Object = "drbd-proxy"
	DrbdProxyLZMA Object = "drbd-proxy-lzma"
	DrbdProxyZlib Object = "drbd-proxy-zlib"
	DrbdProxyZstd Object = "drbd-proxy-zstd"
)

// Rule types (Rule.Type).
const (
	TypeRegex            = "regex"
	TypeSymbol           = "symbol"
	TypeBoolean          = "boolean"
	TypeBooleanTrueFalse = "boolean_true_false"
	TypeRange            = "range"
	TypeRangeFloat       = "range-float"
	TypeNumericOrSymbol  = "numeric-or-symbol"
	TypeLong             = "long"
	TypeString           = "string"
)

// MaxKeyLength is LINSTOR's limit on the length of a property key, in UTF-16 code
// units. After empty path segments and a trailing '/' are removed the key must be
// shorter still: at most MaxKeyLength-1.
const MaxKeyLength = 256

// Rule is the whitelist entry of one key on one object.
type Rule struct {
	Key string
	// Type is one of the Type constants.
	Type string
	// Pattern is the regular expression LINSTOR matches the whole value against,
	// unanchored Java source: for regex, symbol (the values as "(?:a|b)"),
	// numeric-or-symbol (the symbols) and the boolean types (informational).
	Pattern string
	// Values are the symbols of symbol and numeric-or-symbol, sorted.
	Values []string
	// Min and Max bound range, range-float and numeric-or-symbol values (inclusive),
	// as decimals; "" for other types.
	Min, Max string
	Unit     string
	Default  string
	// Internal marks rules LINSTOR does not document for users. LINSTOR accepts
	// them from users all the same.
	Internal bool
}

// Lookup returns the whitelisted rule for key on obj (exact, case-sensitive).
func Lookup(obj Object, key string) (Rule, bool) {
	i, ok := find(obj, key)
	if !ok {
		return Rule{}, false
	}
	return ruleAt(i), true
}

// Rules lists obj's rules sorted by key; nil for an object without a whitelist.
func Rules(obj Object) []Rule {
	idx := objectRules[obj]
	if len(idx) == 0 {
		return nil
	}
	out := make([]Rule, len(idx))
	for i, ri := range idx {
		out[i] = ruleAt(int(ri))
	}
	return out
}

// ruleAt returns a copy of ruleTable[i] that the caller may modify.
func ruleAt(i int) Rule {
	r := ruleTable[i]
	r.Values = slices.Clone(r.Values)
	return r
}

// find returns the index in ruleTable of obj's rule for key.
func find(obj Object, key string) (int, bool) {
	idx := objectRules[obj]
	n := sort.Search(len(idx), func(i int) bool { return ruleTable[idx[i]].Key >= key })
	if n < len(idx) && ruleTable[idx[n]].Key == key {
		return int(idx[n]), true
	}
	return 0, false
}

// Prefixes whose keys skip the whitelist.
const (
	prefixAux     = "Aux/"
	prefixEBSTags = "EBS/Tags/"
	prefixPaths   = "Paths/"
	prefixSED     = "SED/"
)

// ignoredPrefixes returns the key prefixes that skip the whitelist of obj when
// setting (del false) or deleting (del true) properties.
func ignoredPrefixes(obj Object, del bool) []string {
	switch obj {
	case Controller, Node, ResourceDefinition, VolumeDefinition:
		return []string{prefixAux, prefixEBSTags}
	case NodeConnection, ResourceConnection:
		return []string{prefixAux, prefixPaths}
	case StoragePool:
		if del {
			return []string{prefixAux}
		}
		return []string{prefixAux, prefixSED}
	default:
		return []string{prefixAux}
	}
}

func hasAnyPrefix(key string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// Check validates setting key=value on obj the way LINSTOR v1.33.3 does for a set or
// override (create or modify); see the package documentation for the steps. It
// returns nil or an *Error.
func Check(obj Object, key, value string) error {
	if hasAnyPrefix(key, ignoredPrefixes(obj, false)) {
		if reason := keyLengthProblem(key); reason != "" {
			return &Error{Object: obj, Key: key, Value: value, Reason: reason, keyProblem: true}
		}
		return nil
	}
	i, ok := find(obj, key)
	if !ok {
		return unknownKey(obj, key, value)
	}
	if reason := validate(i, value); reason != "" {
		return &Error{Object: obj, Key: key, Value: value, Reason: reason}
	}
	return nil
}

// CheckDelete validates deleting key from obj (delete_props): keys with an ignored
// prefix of the delete path (SED/ is not one) pass, other keys must be whitelisted. A
// whitelisted key that is not set is fine for LINSTOR; whether it exists is the
// caller's business.
func CheckDelete(obj Object, key string) error {
	if hasAnyPrefix(key, ignoredPrefixes(obj, true)) {
		return nil
	}
	if _, ok := find(obj, key); !ok {
		return unknownKey(obj, key, "")
	}
	return nil
}

// Normalize returns the value LINSTOR stores for key=value on obj: boolean values
// lower-cased ("YES" → "yes"), boolean_true_false values as "true" or "false"
// ("Yes" → "true"); any other value, and a value Check refuses, unchanged.
func Normalize(obj Object, key, value string) string {
	i, ok := find(obj, key)
	if !ok || validate(i, value) != "" {
		return value
	}
	switch ruleTable[i].Type {
	case TypeBoolean:
		return strings.ToLower(value)
	case TypeBooleanTrueFalse:
		if equalFoldASCII(value, "true") || equalFoldASCII(value, "yes") {
			return "true"
		}
		return "false"
	}
	return value
}

func unknownKey(obj Object, key, value string) *Error {
	return &Error{Object: obj, Key: key, Value: value, Reason: "is not whitelisted", UnknownKey: true}
}

// keyLengthProblem returns why LINSTOR's property container refuses key, or "".
func keyLengthProblem(key string) string {
	if n := javaLength(key); n > MaxKeyLength {
		return fmt.Sprintf("key is %d characters long, LINSTOR allows at most %d", n, MaxKeyLength)
	}
	var parts []string
	for _, p := range strings.Split(key, "/") {
		if p != "" {
			parts = append(parts, p)
		}
	}
	sanitized := strings.Join(parts, "/")
	if strings.HasPrefix(key, "/") {
		sanitized = "/" + sanitized
	}
	if n := javaLength(sanitized); n+1 > MaxKeyLength {
		return fmt.Sprintf("key is %d characters long without empty path segments, LINSTOR allows at most %d",
			n, MaxKeyLength-1)
	}
	return ""
}

// javaLength is the length of s as a Java string (UTF-16 code units; an invalid
// UTF-8 byte counts as one replacement character).
func javaLength(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// Error is a property LINSTOR would refuse.
type Error struct {
	Object Object
	Key    string
	Value  string
	// Reason says what is wrong: "is not whitelisted" for an unknown key, else the
	// rule the value breaks, e.g. "must be one of A, B, C", "must be an integer in
	// 0..300", or a problem with the key's length.
	Reason string
	// UnknownKey is set when key is not whitelisted for Object.
	UnknownKey bool

	keyProblem bool
}

// maxKeyInMessage bounds how much of a key Error prints.
const maxKeyInMessage = 100

func (e *Error) Error() string {
	key := e.Key
	if len(key) > maxKeyInMessage {
		cut := maxKeyInMessage
		for cut > 0 && !utf8.RuneStart(key[cut]) {
			cut--
		}
		key = key[:cut] + "..."
	}
	switch {
	case e.UnknownKey:
		return fmt.Sprintf("property %q is not a LINSTOR property of %s", key, describe(e.Object))
	case e.keyProblem:
		return fmt.Sprintf("property %q: %s", key, e.Reason)
	default:
		return fmt.Sprintf("property %q: value %q %s", key, e.Value, e.Reason)
	}
}

// describe names an object for messages: "a node", "the controller".
func describe(obj Object) string {
	switch obj {
	case Controller:
		return "the controller"
	case Node:
		return "a node"
	case StoragePool:
		return "a storage pool"
	case StoragePoolDefinition:
		return "a storage pool definition"
	case ResourceDefinition:
		return "a resource definition or resource group"
	case Resource:
		return "a resource"
	case VolumeDefinition:
		return "a volume definition or volume group"
	case Volume:
		return "a volume"
	case NodeConnection:
		return "a node connection"
	case ResourceConnection:
		return "a resource connection"
	case DrbdProxy:
		return "DRBD Proxy"
	case DrbdProxyLZMA, DrbdProxyZlib, DrbdProxyZstd:
		return "DRBD Proxy compression " + strings.TrimPrefix(string(obj), "drbd-proxy-")
	default:
		return fmt.Sprintf("object %q", string(obj))
	}
}
