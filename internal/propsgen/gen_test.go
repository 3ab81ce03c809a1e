package propsgen

import (
	"bytes"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

const testConsts = `[
	{"blockcomment": "ignored"},
	{"name": "NAMESPC_STORAGE_DRIVER", "value": "StorDriver", "type": "string"},
	{"name": "KEY_X", "value": "X", "type": "string"},
	{"name": "MASK_X", "value": "0x1L", "type": "long"}
]`

const testProperties = `{
	"properties": {
		"x": {"key": ["NAMESPC_STORAGE_DRIVER", "KEY_X"], "type": "regex", "value": "(\\\\d+)\\\\s*\"", "info": "i"},
		"sym": {"key": "Sym", "type": "symbol", "values": ["b", "a"], "default": "a", "info": "i"},
		"flag": {"key": "Flag", "type": "boolean_true_false", "default": false, "internal": true},
		"ratio": {"key": "Ratio", "type": "range-float", "min_float": 0.0, "max_float": 10.5, "info": "i"},
		"num": {"key": "Num", "type": "numeric", "min": 1, "max": 5, "default": 3, "unit_prefix": "1", "info": "i"}
	},
	"objects": {"node": ["x", "sym", "flag", "ratio", "num"], "controller": ["x"]}
}`

const testXML = `<root>
<!--
DRBD_KERNEL_VERSION=9.3.1
-->
<command name="disk-options">
	<summary>ignored</summary>
	<option name="set-defaults" type="flag"></option>
	<option name="bitmap" type="boolean"><default>yes</default></option>
	<option name="resync-after" type="numeric"><min>-1</min><max>10</max><default>-1</default><unit_prefix>1</unit_prefix></option>
	<option name="on-io-error" type="handler"><handler>pass_on</handler><handler>detach</handler></option>
</command>
<command name="new-minor">
	<option name="max-bio-size" type="numeric"><min>512</min><max>1048576</max><default>1048576</default><unit>bytes</unit></option>
</command>
<command name="new-peer">
	<option name="_name" type="string"></option>
	<option name="protocol" type="handler"><handler>C</handler><handler>A</handler><handler>B</handler></option>
</command>
<command name="peer-device-options">
	<option name="bitmap" type="boolean"><default>no</default></option>
</command>
<command name="resource-options">
	<option name="quorum" type="numeric-or-symbol"><min>1</min><max>32</max><default>off</default><symbol>off</symbol><symbol>majority</symbol></option>
</command>
</root>`

func testSource() Source {
	return Source{PropertiesJSON: []byte(testProperties), ConstsJSON: []byte(testConsts), DrbdsetupXML: []byte(testXML)}
}

func keys(rules []Rule) []string {
	var out []string
	for _, r := range rules {
		out = append(out, r.Key)
	}
	return out
}

func TestBuild(t *testing.T) {
	wl, err := Build(testSource())
	if err != nil {
		t.Fatal(err)
	}
	diskVolume := []string{"DrbdOptions/Disk/max-bio-size", "DrbdOptions/Disk/on-io-error",
		"DrbdOptions/Disk/resync-after", "DrbdOptions/PeerDevice/bitmap"}
	conn := []string{"DrbdOptions/Net/protocol", "DrbdOptions/PeerDevice/bitmap"}
	drbdAll := append(append([]string{}, diskVolume[:3]...), "DrbdOptions/Net/protocol",
		"DrbdOptions/PeerDevice/bitmap", "DrbdOptions/Resource/quorum")
	var handlers []string
	for _, h := range drbdHandlers {
		handlers = append(handlers, "DrbdOptions/Handlers/"+h)
	}
	wantKeys := map[string]int{
		"node":                5,
		"controller":          1 + len(drbdAll) + len(handlers),
		"resource-definition": len(drbdAll) + len(handlers),
		"volume-definition":   len(diskVolume),
		"volume":              len(diskVolume),
		"rsc-conn":            len(conn),
		"node-conn":           len(conn),
	}
	for obj, n := range wantKeys {
		if got := len(wl[obj]); got != n {
			t.Errorf("%s: %d rules %v, want %d", obj, got, keys(wl[obj]), n)
		}
	}
	if len(wl) != len(wantKeys) {
		t.Errorf("objects: %d, want %d", len(wl), len(wantKeys))
	}
	if got := keys(wl["volume"]); !reflect.DeepEqual(got, diskVolume) {
		t.Errorf("volume: %v, want %v", got, diskVolume)
	}
	if got := keys(wl["node-conn"]); !reflect.DeepEqual(got, conn) {
		t.Errorf("node-conn: %v, want %v", got, conn)
	}

	want := map[string]Rule{
		"node/StorDriver/X": {Key: "StorDriver/X", Type: "regex", Pattern: `(\d+)\s*"`},
		"node/Sym":          {Key: "Sym", Type: "symbol", Pattern: "(?:a|b)", Values: []string{"a", "b"}, Default: "a"},
		"node/Flag": {Key: "Flag", Type: "boolean_true_false", Pattern: patternBooleanTrueFalse,
			Default: "False", Internal: true},
		"node/Ratio": {Key: "Ratio", Type: "range-float", Min: "0", Max: "10.5"},
		"node/Num":   {Key: "Num", Type: "range", Min: "1", Max: "5", Default: "3"},
		"controller/DrbdOptions/PeerDevice/bitmap": {Key: "DrbdOptions/PeerDevice/bitmap", Type: "boolean",
			Pattern: patternBoolean, Default: "False", Internal: true},
		"volume/DrbdOptions/PeerDevice/bitmap": {Key: "DrbdOptions/PeerDevice/bitmap", Type: "boolean",
			Pattern: patternBoolean, Default: "False", Internal: true},
		"controller/DrbdOptions/Disk/resync-after": {Key: "DrbdOptions/Disk/resync-after", Type: "string", Internal: true},
		"controller/DrbdOptions/Disk/on-io-error": {Key: "DrbdOptions/Disk/on-io-error", Type: "symbol",
			Pattern: "(?:detach|pass_on)", Values: []string{"detach", "pass_on"}, Internal: true},
		"volume/DrbdOptions/Disk/max-bio-size": {Key: "DrbdOptions/Disk/max-bio-size", Type: "range",
			Min: "512", Max: "1048576", Unit: "bytes", Default: "1048576", Internal: true},
		"rsc-conn/DrbdOptions/Net/protocol": {Key: "DrbdOptions/Net/protocol", Type: "symbol",
			Pattern: "(?:A|B|C)", Values: []string{"A", "B", "C"}, Internal: true},
		"resource-definition/DrbdOptions/Resource/quorum": {Key: "DrbdOptions/Resource/quorum",
			Type: "numeric-or-symbol", Pattern: "(?:majority|off)", Values: []string{"majority", "off"},
			Min: "1", Max: "32", Internal: true},
		"resource-definition/DrbdOptions/Handlers/fence-peer": {Key: "DrbdOptions/Handlers/fence-peer",
			Type: "string", Internal: true},
	}
	for id, w := range want {
		obj, key, _ := strings.Cut(id, "/")
		var got *Rule
		for i := range wl[obj] {
			if wl[obj][i].Key == key {
				got = &wl[obj][i]
			}
		}
		if got == nil || !reflect.DeepEqual(*got, w) {
			t.Errorf("%s:\n got  %+v\n want %+v", id, got, w)
		}
	}
	for _, obj := range []string{"controller", "volume-definition"} {
		for _, r := range wl[obj] {
			if r.Key == "DrbdOptions/Disk/bitmap" {
				t.Errorf("%s whitelists DrbdOptions/Disk/bitmap", obj)
			}
		}
	}
}

func TestBuildErrors(t *testing.T) {
	for _, tc := range []struct {
		name, old, new string
		xml            bool
		want           string
	}{
		{"duplicate key", `"controller": ["x"]`, `"controller": ["x", "x"]`, false, "twice"},
		{"unknown rule name", `"controller": ["x"]`, `"controller": ["y"]`, false, "unknown property"},
		{"public without info", `"values": ["b", "a"], "default": "a", "info": "i"`, `"values": ["b", "a"]`, false, "no info"},
		{"unknown field", `"default": 3,`, `"default": 3, "step": 2,`, false, "unknown field"},
		{"unknown constant", `"KEY_X"]`, `"KEY_Y"]`, false, "unknown string constant"},
		{"unknown type", `"type": "numeric"`, `"type": "integer"`, false, "unknown type"},
		{"unknown command", `<command name="new-minor">`, `<command name="attach">`, true, "unknown command"},
		{"unknown option type", `type="numeric-or-symbol"`, `type="numeric-or-string"`, true, "unknown option type"},
		{"resync-after fixed upstream", `<unit_prefix>1</unit_prefix></option>
	<option name="on-io-error"`, `</option>
	<option name="on-io-error"`, true, "no unit_prefix"},
	} {
		src := testSource()
		target := &src.PropertiesJSON
		if tc.xml {
			target = &src.DrbdsetupXML
		}
		if !bytes.Contains(*target, []byte(tc.old)) {
			t.Fatalf("%s: %q not in the test input", tc.name, tc.old)
		}
		*target = bytes.Replace(*target, []byte(tc.old), []byte(tc.new), 1)
		if _, err := Build(src); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

func TestRender(t *testing.T) {
	wl, err := Build(testSource())
	if err != nil {
		t.Fatal(err)
	}
	a, err := Render(wl, "abc123", "v9.9.9")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		b, err := Render(wl, "abc123", "v9.9.9")
		if err != nil || !bytes.Equal(a, b) {
			t.Fatal("Render is not deterministic")
		}
	}
	header := "// Code generated by hack/propsgen from linstor-common abc123 (LINSTOR v9.9.9). DO NOT EDIT.\n"
	if !bytes.HasPrefix(a, []byte(header)) {
		t.Errorf("header: %q", a[:min(len(a), 120)])
	}
	// The PeerDevice/bitmap rule is shared by six objects but stored once.
	if n := bytes.Count(a, []byte(`Key: "DrbdOptions/PeerDevice/bitmap"`)); n != 1 {
		t.Errorf("bitmap rule stored %d times", n)
	}
}

func TestJavaString(t *testing.T) {
	for _, tc := range []struct{ in, out string }{
		{`plain`, "plain"},
		{`\\d\"\t\101\0`, "\\d\"\tA\x00"},
		{`\377x`, "\u00ffx"},
		{`\u0041`, ""},
		{`\q`, ""},
		{`end\`, ""},
	} {
		got, err := javaString(tc.in)
		if (tc.out == "") != (err != nil) || got != tc.out {
			t.Errorf("javaString(%q) = %q, %v, want %q", tc.in, got, err, tc.out)
		}
	}
}

var headerRE = regexp.MustCompile(`^// Code generated by hack/propsgen from linstor-common ([0-9a-f]+) \(LINSTOR (\S+)\)\. DO NOT EDIT\.\n`)

// whitelistPath is the committed table of package props.
const whitelistPath = "../../pkg/linstor/props/zz_generated_whitelist.go"

// TestGeneratedIsFresh regenerates the table from linstor-common and compares.
func TestGeneratedIsFresh(t *testing.T) {
	dir := os.Getenv("LINSTOR_COMMON_DIR")
	if dir == "" {
		t.Skip("set LINSTOR_COMMON_DIR to a directory holding linstor-common's properties.json, consts.json " +
			"and drbdsetup.xml of the commit in zz_generated_whitelist.go's header (see hack/propsgen) to check the table")
	}
	committed, err := os.ReadFile(whitelistPath)
	if err != nil {
		t.Fatal(err)
	}
	m := headerRE.FindSubmatch(committed)
	if m == nil {
		t.Fatal("zz_generated_whitelist.go: header not recognized")
	}
	fresh, err := Generate(dir, string(m[1]), string(m[2]))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fresh, committed) {
		t.Errorf("zz_generated_whitelist.go differs from what hack/propsgen makes of %s; regenerate it", dir)
	}
}
