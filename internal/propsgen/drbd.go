package propsgen

import (
	"encoding/xml"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// drbdNamespaces maps a drbdsetup command to the namespace of its options' keys.
var drbdNamespaces = map[string]string{
	"disk-options":        "DrbdOptions/Disk",
	"new-minor":           "DrbdOptions/Disk",
	"new-peer":            "DrbdOptions/Net",
	"peer-device-options": "DrbdOptions/PeerDevice",
	"resource-options":    "DrbdOptions/Resource",
}

// drbdObjects lists, per object, the drbdsetup commands whose options it whitelists.
// Resource groups and volume groups use the rules of resource-definition and
// volume-definition.
var drbdObjects = map[string][]string{
	"controller":          {"disk-options", "resource-options", "new-peer", "peer-device-options", "new-minor"},
	"resource-definition": {"disk-options", "resource-options", "new-peer", "peer-device-options", "new-minor"},
	"volume-definition":   {"disk-options", "new-minor"},
	"volume":              {"disk-options", "new-minor"},
	"rsc-conn":            {"peer-device-options", "new-peer"},
	"node-conn":           {"peer-device-options", "new-peer"},
}

// drbdSkipped are drbdsetup options that do not become properties.
var drbdSkipped = map[string]bool{"set-defaults": true, "_name": true}

// drbdHandlersNamespace and drbdHandlers: the DRBD handler keys, internal strings on
// controller and resource-definition.
const drbdHandlersNamespace = "DrbdOptions/Handlers"

var drbdHandlers = []string{
	"after-resync-target", "before-resync-target", "before-resync-source", "out-of-sync",
	"quorum-lost", "fence-peer", "unfence-peer", "initial-split-brain", "local-io-error",
	"pri-lost", "pri-lost-after-sb", "pri-on-incon-degr", "split-brain",
}

// drbdResyncAfter is the option whose numeric type drbdsetup reports wrongly; it is a
// string property.
const drbdResyncAfter = "resync-after"

type xmlRoot struct {
	Commands []xmlCommand `xml:"command"`
	Other    []xmlAny     `xml:",any"`
}

type xmlCommand struct {
	Name    string      `xml:"name,attr"`
	Options []xmlOption `xml:"option"`
}

type xmlOption struct {
	Name       string   `xml:"name,attr"`
	Type       string   `xml:"type,attr"`
	Default    []string `xml:"default"`
	Min        []string `xml:"min"`
	Max        []string `xml:"max"`
	Unit       []string `xml:"unit"`
	UnitPrefix []string `xml:"unit_prefix"`
	Handlers   []string `xml:"handler"`
	Symbols    []string `xml:"symbol"`
}

type xmlAny struct {
	XMLName xml.Name
}

// deriveDrbd turns drbdsetup.xml into property definitions, the way LINSTOR's build
// does:
//   - each option of a command (minus drbdSkipped) becomes the internal property
//     "<namespace>/<option>", see drbdOption for the types;
//   - definitions are keyed by option name, so an option name that two commands share
//     keeps the definition, and therefore the key, of the later command in the file.
//     An object that gets the name from either command whitelists that one key. In the
//     v1.33.3 data this is "bitmap": DrbdOptions/PeerDevice/bitmap is whitelisted
//     wherever disk-options is (volume-definition too), DrbdOptions/Disk/bitmap nowhere;
//   - the drbdHandlers become internal string properties of controller and
//     resource-definition;
//   - resync-after is forced to type string, without min, max and default.
func deriveDrbd(data []byte) (rawSet, error) {
	var root xmlRoot
	if err := xml.Unmarshal(data, &root); err != nil {
		return rawSet{}, err
	}
	if len(root.Other) > 0 {
		return rawSet{}, fmt.Errorf("unexpected element <%s>", root.Other[0].XMLName.Local)
	}
	set := rawSet{Properties: map[string]rawProp{}, Objects: map[string][]string{}}
	for obj := range drbdObjects {
		set.Objects[obj] = []string{}
	}
	for _, cmd := range root.Commands {
		ns, ok := drbdNamespaces[cmd.Name]
		if !ok {
			return rawSet{}, fmt.Errorf("unknown command %q", cmd.Name)
		}
		var names []string
		props := map[string]rawProp{}
		for _, opt := range cmd.Options {
			if drbdSkipped[opt.Name] {
				continue
			}
			p, err := drbdOption(ns, opt)
			if err != nil {
				return rawSet{}, fmt.Errorf("%s %s: %w", cmd.Name, opt.Name, err)
			}
			if _, seen := props[opt.Name]; !seen {
				names = append(names, opt.Name)
			}
			props[opt.Name] = p
		}
		for obj, cmds := range drbdObjects {
			if !slices.Contains(cmds, cmd.Name) {
				continue
			}
			for _, name := range names {
				if !slices.Contains(set.Objects[obj], name) {
					set.Objects[obj] = append(set.Objects[obj], name)
				}
			}
		}
		for name, p := range props {
			set.Properties[name] = p
		}
	}

	for _, h := range drbdHandlers {
		if _, dup := set.Properties[h]; dup {
			return rawSet{}, fmt.Errorf("handler %q is also an option name", h)
		}
		set.Properties[h] = rawProp{"internal": true, "key": drbdHandlersNamespace + "/" + h, "type": typeString}
		set.Objects["controller"] = append(set.Objects["controller"], h)
		set.Objects["resource-definition"] = append(set.Objects["resource-definition"], h)
	}

	ra, ok := set.Properties[drbdResyncAfter]
	if !ok {
		return rawSet{}, fmt.Errorf("no option %q", drbdResyncAfter)
	}
	for _, f := range []string{"min", "max", "default", "unit_prefix"} {
		if _, ok := ra[f]; !ok {
			return rawSet{}, fmt.Errorf("option %q has no %s to remove", drbdResyncAfter, f)
		}
		delete(ra, f)
	}
	ra["type"] = typeString
	return set, nil
}

// drbdOption converts one drbdsetup option:
//   - string and boolean keep their type; a boolean's default is the Python bool
//     (printed True/False) of default == "yes";
//   - handler becomes symbol, its values the <handler> texts;
//   - numeric becomes range (numeric if it has no min) with integer min, max, default,
//     and the unit;
//   - numeric-or-symbol keeps its type, values the <symbol> texts, min and max as text.
func drbdOption(ns string, opt xmlOption) (rawProp, error) {
	p := rawProp{"internal": true, "key": ns + "/" + opt.Name}
	switch opt.Type {
	case "string":
		p["type"] = typeString
	case "boolean":
		if len(opt.Default) == 0 {
			return nil, fmt.Errorf("boolean without default")
		}
		p["type"] = typeBoolean
		p["default"] = opt.Default[0] == "yes"
	case "handler":
		p["type"] = typeSymbol
		p["values"] = anyList(opt.Handlers)
	case "numeric":
		if len(opt.UnitPrefix) > 0 {
			p["unit_prefix"] = opt.UnitPrefix[0]
		}
		if len(opt.Unit) > 0 {
			p["unit"] = opt.Unit[0]
		}
		for _, f := range []struct {
			name string
			list []string
		}{{"min", opt.Min}, {"max", opt.Max}, {"default", opt.Default}} {
			if len(f.list) == 0 {
				continue
			}
			n, err := strconv.ParseInt(strings.TrimSpace(f.list[0]), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.name, err)
			}
			p[f.name] = n
		}
		p["type"] = "numeric"
		if _, ok := p["min"]; ok {
			p["type"] = typeRange
		}
	case "numeric-or-symbol":
		if len(opt.Min) == 0 || len(opt.Max) == 0 {
			return nil, fmt.Errorf("numeric-or-symbol without min or max")
		}
		p["type"] = typeNumericOrSymbol
		p["values"] = anyList(opt.Symbols)
		p["min"] = opt.Min[0]
		p["max"] = opt.Max[0]
	default:
		return nil, fmt.Errorf("unknown option type %q", opt.Type)
	}
	return p, nil
}

func anyList(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
