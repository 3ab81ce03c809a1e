// Package propsgen derives LINSTOR's effective property whitelist from the linstor-common
// files and renders it as the Go table of package props (zz_generated_whitelist.go).
//
// LINSTOR builds its whitelist at compile time: properties.json holds hand-written
// rules, drbdsetup.xml (the output of `drbdsetup xml-help` for five commands) yields
// the DrbdOptions rules, consts.json resolves symbolic key names. The controller then
// patches the result once at start-up. This package reproduces that pipeline (see
// Build) and keeps only data: keys, types, value rules, units, defaults.
//
// The generator is strict: input it does not understand is an error, so that an
// upstream change is noticed when the table is regenerated, not silently mistranslated.
package propsgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// DefaultCommit is the linstor-common commit that LINSTOR DefaultLinstorVersion pins
// as its submodule (`git ls-tree v1.33.3 linstor-common` in linstor-server).
const DefaultCommit = "ab276708d06bef880fe829230472a5c35ac25359"

// DefaultLinstorVersion is the LINSTOR release the table describes.
const DefaultLinstorVersion = "v1.33.3"

// Files are the linstor-common files Build reads, relative to the directory given
// to ReadSource.
var Files = []string{"properties.json", "consts.json", "drbdsetup.xml"}

// Rule is one whitelisted key of one object, in the shape of props.Rule.
type Rule struct {
	Key      string
	Type     string // regex, symbol, boolean, boolean_true_false, range, range-float, numeric-or-symbol, long, string
	Pattern  string // regex source as LINSTOR matches it (whole value), for regex, symbol, the booleans and numeric-or-symbol
	Values   []string
	Min, Max string
	Unit     string
	Default  string
	Internal bool
}

// Whitelist maps an object name as properties.json spells it ("controller",
// "resource-definition", ...) to its rules, sorted by key.
type Whitelist map[string][]Rule

// Source holds the contents of the linstor-common input files.
type Source struct {
	PropertiesJSON []byte
	ConstsJSON     []byte
	DrbdsetupXML   []byte
}

// ReadSource reads Files from dir.
func ReadSource(dir string) (Source, error) {
	var data [3][]byte
	for i, name := range Files {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return Source{}, err
		}
		data[i] = b
	}
	return Source{PropertiesJSON: data[0], ConstsJSON: data[1], DrbdsetupXML: data[2]}, nil
}

// Generate reads the linstor-common files from dir and returns the formatted Go
// source of zz_generated_whitelist.go.
func Generate(dir, commit, linstorVersion string) ([]byte, error) {
	src, err := ReadSource(dir)
	if err != nil {
		return nil, err
	}
	wl, err := Build(src)
	if err != nil {
		return nil, err
	}
	return Render(wl, commit, linstorVersion)
}

// rawProp is one property definition before it is built: the JSON object of
// properties.json, or the equivalent derived from drbdsetup.xml. Values are string,
// bool, int64, json.Number or []any.
type rawProp map[string]any

// rawSet is the pair (properties by rule name, rule names by object) that both
// properties.json and the drbdsetup.xml derivation produce.
type rawSet struct {
	Properties map[string]rawProp  `json:"properties"`
	Objects    map[string][]string `json:"objects"`
}

// Build computes the effective whitelist of every object:
//  1. the rules of properties.json and those derived from drbdsetup.xml (see
//     deriveDrbd) are merged: a rule name defined in both takes the drbdsetup.xml
//     definition, the per-object name lists are concatenated;
//  2. every rule is built the way the server's property builder does (see build);
//  3. each object maps the keys of its rules to the rules; a key twice in one object,
//     an unknown rule name, or a public rule without an info text is an error, as it is
//     for the upstream generator;
//  4. the start-up patch of the controller is applied: every key that starts with
//     "DrbdOptions" and ends with "resync-after" becomes an internal string rule, and
//     the DRBD handler keys are (re)added to the controller as internal string rules.
func Build(src Source) (Whitelist, error) {
	consts, err := parseConsts(src.ConstsJSON)
	if err != nil {
		return nil, fmt.Errorf("consts.json: %w", err)
	}
	var hand rawSet
	dec := json.NewDecoder(bytes.NewReader(src.PropertiesJSON))
	dec.UseNumber()
	if err := dec.Decode(&hand); err != nil {
		return nil, fmt.Errorf("properties.json: %w", err)
	}
	drbd, err := deriveDrbd(src.DrbdsetupXML)
	if err != nil {
		return nil, fmt.Errorf("drbdsetup.xml: %w", err)
	}

	merged := rawSet{Properties: map[string]rawProp{}, Objects: map[string][]string{}}
	for _, set := range []rawSet{hand, drbd} {
		for name, p := range set.Properties {
			merged.Properties[name] = p
		}
		for obj, names := range set.Objects {
			merged.Objects[obj] = append(merged.Objects[obj], names...)
		}
	}

	built := make(map[string]Rule, len(merged.Properties))
	for _, name := range slices.Sorted(maps.Keys(merged.Properties)) {
		p := merged.Properties[name]
		if !truthy(p["internal"]) {
			if _, ok := p["info"]; !ok {
				return nil, fmt.Errorf("public property %q has no info", name)
			}
		}
		r, err := build(p, consts)
		if err != nil {
			return nil, fmt.Errorf("property %q: %w", name, err)
		}
		built[name] = r
	}

	byObject := map[string]map[string]Rule{}
	for _, obj := range slices.Sorted(maps.Keys(merged.Objects)) {
		rules := map[string]Rule{}
		for _, name := range merged.Objects[obj] {
			r, ok := built[name]
			if !ok {
				return nil, fmt.Errorf("object %q lists unknown property %q", obj, name)
			}
			if _, dup := rules[r.Key]; dup {
				return nil, fmt.Errorf("object %q holds key %q twice", obj, r.Key)
			}
			rules[r.Key] = r
		}
		byObject[obj] = rules
	}

	// Start-up patch of the controller (it runs on every object's rule map).
	for _, rules := range byObject {
		for key := range rules {
			if strings.HasPrefix(key, "DrbdOptions") && strings.HasSuffix(key, "resync-after") {
				rules[key] = Rule{Key: key, Type: typeString, Internal: true}
			}
		}
	}
	ctrl, ok := byObject["controller"]
	if !ok {
		return nil, fmt.Errorf("no rules for object controller")
	}
	for _, h := range drbdHandlers {
		key := drbdHandlersNamespace + "/" + h
		ctrl[key] = Rule{Key: key, Type: typeString, Internal: true}
	}

	wl := Whitelist{}
	for obj, rules := range byObject {
		list := make([]Rule, 0, len(rules))
		for _, key := range slices.Sorted(maps.Keys(rules)) {
			list = append(list, rules[key])
		}
		wl[obj] = list
	}
	return wl, nil
}

// parseConsts returns the string constants of consts.json by name (the values the
// server's key references resolve to).
func parseConsts(data []byte) (map[string]string, error) {
	var entries []map[string]any
	if err := json.Unmarshal(data, &entries); err != nil {
		return nil, err
	}
	consts := map[string]string{}
	for _, e := range entries {
		if e["type"] != "string" {
			continue
		}
		name, ok1 := e["name"].(string)
		value, ok2 := e["value"].(string)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("string constant %v: name and value must be strings", e["name"])
		}
		consts[name] = value
	}
	return consts, nil
}

// truthy is Python's truth value of a decoded JSON value.
func truthy(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	case string:
		return v != ""
	case int64:
		return v != 0
	case json.Number:
		f, err := v.Float64()
		return err != nil || f != 0
	case []any:
		return len(v) > 0
	default:
		return true
	}
}
