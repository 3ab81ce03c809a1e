package props

import (
	"errors"
	"math"
	"regexp"
	"strings"
	"testing"
)

// The objects of the operator, with their rule counts for LINSTOR v1.33.3.
var objectCounts = []struct {
	obj   Object
	count int
}{
	{Controller, 209},
	{Node, 67},
	{StoragePool, 36},
	{StoragePoolDefinition, 8},
	{ResourceDefinition, 171},
	{Resource, 19},
	{VolumeDefinition, 71},
	{Volume, 24},
	{NodeConnection, 47},
	{ResourceConnection, 47},
}

func TestRuleCounts(t *testing.T) {
	for _, tc := range objectCounts {
		if got := len(Rules(tc.obj)); got != tc.count {
			t.Errorf("%s: %d rules, want %d", tc.obj, got, tc.count)
		}
	}
	if got := Rules("vlm-conn"); got != nil {
		t.Errorf("an object without a whitelist has rules: %v", got)
	}
}

func TestRulesSortedAndLookup(t *testing.T) {
	for obj := range objectRules {
		rules := Rules(obj)
		for i, r := range rules {
			if i > 0 && rules[i-1].Key >= r.Key {
				t.Errorf("%s: %q before %q", obj, rules[i-1].Key, r.Key)
			}
			got, ok := Lookup(obj, r.Key)
			if !ok || got.Key != r.Key || got.Type != r.Type {
				t.Errorf("%s: Lookup(%q) = %+v, %v", obj, r.Key, got, ok)
			}
		}
	}
	if _, ok := Lookup(Node, "prefnic"); ok {
		t.Error("Lookup is not case-sensitive")
	}
	if _, ok := Lookup(Node, "/PrefNic"); ok {
		t.Error("Lookup accepts a leading slash")
	}
	// The table is not exposed to modification.
	r, _ := Lookup(ResourceDefinition, "DrbdOptions/Net/protocol")
	r.Values[0] = "X"
	if err := Check(ResourceDefinition, "DrbdOptions/Net/protocol", "A"); err != nil {
		t.Errorf("modifying a looked-up rule changed the table: %v", err)
	}
}

func TestRuleTypes(t *testing.T) {
	for _, tc := range []struct {
		obj  Object
		key  string
		rule Rule
	}{
		{ResourceDefinition, "DrbdOptions/Net/protocol", Rule{Type: TypeSymbol, Values: []string{"A", "B", "C"}}},
		{ResourceDefinition, "DrbdOptions/Resource/quorum", Rule{Type: TypeNumericOrSymbol, Min: "1", Max: "32", Values: []string{"all", "majority", "off"}}},
		{Controller, "DrbdOptions/PeerDevice/c-plan-ahead", Rule{Type: TypeRange, Min: "0", Max: "300", Unit: "1/10 seconds", Default: "20"}},
		{Node, "DrbdOptions/AutoEvictAllowEviction", Rule{Type: TypeBooleanTrueFalse, Default: "true"}},
		{VolumeDefinition, "DrbdOptions/Disk/resync-after", Rule{Type: TypeString}},
		{Controller, "DrbdOptions/Handlers/split-brain", Rule{Type: TypeString}},
		{StoragePool, "StorDriver/StorPoolName", Rule{Type: TypeRegex, Pattern: "[a-zA-Z0-9_/-]+"}},
		{StoragePool, "MaxOversubscriptionRatio", Rule{Type: TypeRangeFloat, Min: "0", Max: "1000"}},
	} {
		got, ok := Lookup(tc.obj, tc.key)
		if !ok {
			t.Errorf("%s %s: not whitelisted", tc.obj, tc.key)
			continue
		}
		want := tc.rule
		if got.Type != want.Type || (want.Pattern != "" && got.Pattern != want.Pattern) ||
			got.Min != want.Min || got.Max != want.Max || got.Unit != want.Unit || got.Default != want.Default ||
			strings.Join(got.Values, ",") != strings.Join(want.Values, ",") {
			t.Errorf("%s %s: %+v, want %+v", tc.obj, tc.key, got, want)
		}
	}
}

func TestCheck(t *testing.T) {
	long := func(prefix string, n int) string { return prefix + strings.Repeat("a", n-len(prefix)) }
	type row struct {
		obj        Object
		key, value string
		ok         bool
		unknown    bool
	}
	var rows []row
	for _, tc := range objectCounts {
		rows = append(rows, row{tc.obj, "Aux/anything", "", true, false}, row{tc.obj, "Aux/x/y", "any value", true, false})
	}
	rows = append(rows, []row{
		{"vlm-conn", "Aux/x", "v", true, false},
		{"vlm-conn", "DrbdOptions/Net/protocol", "C", false, true},
		{Node, "aux/x", "v", false, true},
		{Node, "/Aux/x", "v", false, true},
		{Node, "Foo/Bar", "v", false, true},
		{Node, "CurStltConnName", "default", false, true},
		{Node, "NodeUname", "n1", false, true},
		{Node, "PrefNic", "eth0", true, false},
		{Node, "PrefNic", "e", false, false},
		{StoragePool, "PrefNic", "bond0.100", false, false},
		{StoragePool, "PrefNic", "data_nic", true, false},
		{StoragePool, "StorDriver/StorPoolName", "vg/thin", true, false},
		{StoragePool, "StorDriver/StorPoolName", "vg thin", false, false},
		{StoragePool, "SED/x", "secret", true, false},
		{Node, "SED/x", "secret", false, true},
		{NodeConnection, "Paths/x/n1", "eth0", true, false},
		{ResourceConnection, "Paths/x/n1", "eth0", true, false},
		{Node, "Paths/x", "eth0", false, true},
		{Node, "EBS/Tags/owner", "me", true, false},
		{Resource, "EBS/Tags/owner", "me", false, true},
		{ResourceConnection, "DrbdOptions/Net/protocol", "C", true, false},
		{ResourceDefinition, "DrbdOptions/Net/protocol", "C", true, false},
		{ResourceDefinition, "DrbdOptions/Net/protocol", "c", false, false},
		{Node, "DrbdOptions/Net/protocol", "C", false, true},
		{ResourceDefinition, "DrbdOptions/Resource/quorum", "majority", true, false},
		{ResourceDefinition, "DrbdOptions/Resource/quorum", "off", true, false},
		{ResourceDefinition, "DrbdOptions/Resource/quorum", "2", true, false},
		{ResourceDefinition, "DrbdOptions/Resource/quorum", "+2", true, false},
		{ResourceDefinition, "DrbdOptions/Resource/quorum", "33", false, false},
		{ResourceDefinition, "DrbdOptions/Resource/quorum", "0", false, false},
		{ResourceDefinition, "DrbdOptions/Resource/quorum", "Majority", false, false},
		{Controller, "DrbdOptions/PeerDevice/c-plan-ahead", "0", true, false},
		{Controller, "DrbdOptions/PeerDevice/c-plan-ahead", "300", true, false},
		{Controller, "DrbdOptions/PeerDevice/c-plan-ahead", "+5", true, false},
		{Controller, "DrbdOptions/PeerDevice/c-plan-ahead", "301", false, false},
		{Controller, "DrbdOptions/PeerDevice/c-plan-ahead", "-1", false, false},
		{Controller, "DrbdOptions/PeerDevice/c-plan-ahead", " 5", false, false},
		{Controller, "DrbdOptions/PeerDevice/c-plan-ahead", "5 ", false, false},
		{Controller, "DrbdOptions/PeerDevice/c-plan-ahead", "5.0", false, false},
		{Controller, "DrbdOptions/PeerDevice/c-plan-ahead", "", false, false},
		{Controller, "DrbdOptions/Disk/bitmap", "yes", false, true},
		{Controller, "DrbdOptions/PeerDevice/bitmap", "no", true, false},
		{VolumeDefinition, "DrbdOptions/PeerDevice/bitmap", "yes", true, false},
		{VolumeDefinition, "DrbdOptions/Disk/bitmap", "yes", false, true},
		{VolumeDefinition, "DrbdOptions/Disk/al-updates", "YES", true, false},
		{VolumeDefinition, "DrbdOptions/Disk/al-updates", "true", false, false},
		{VolumeDefinition, "DrbdOptions/Disk/al-updates", "yeſ", false, false}, // ASCII-only case folding
		{Node, "DrbdOptions/AutoEvictAllowEviction", "Yes", true, false},
		{Node, "DrbdOptions/AutoEvictAllowEviction", "FALSE", true, false},
		{Node, "DrbdOptions/AutoEvictAllowEviction", "1", false, false},
		{Node, "DrbdOptions/SkipDisk", "True", true, false},
		{Node, "DrbdOptions/SkipDisk", "true", false, false},
		{ResourceDefinition, "DrbdOptions/Disk/resync-after", "rsc/0", true, false},
		{ResourceDefinition, "AutoSnapshot/Keep", "-9223372036854775808", true, false},
		{ResourceDefinition, "AutoSnapshot/Keep", "9223372036854775807", true, false},
		{ResourceDefinition, "AutoSnapshot/Keep", "9223372036854775808", false, false},
		{ResourceDefinition, "AutoSnapshot/Keep", "1e3", false, false},
		{StoragePool, "MaxOversubscriptionRatio", "20", true, false},
		{StoragePool, "MaxOversubscriptionRatio", " 2.5 ", true, false},
		{StoragePool, "MaxOversubscriptionRatio", "1e3", true, false},
		{StoragePool, "MaxOversubscriptionRatio", "1.5d", true, false},
		{StoragePool, "MaxOversubscriptionRatio", "0x1p3", true, false},
		{StoragePool, "MaxOversubscriptionRatio", "1000.0001", false, false},
		{StoragePool, "MaxOversubscriptionRatio", "-0.5", false, false},
		{StoragePool, "MaxOversubscriptionRatio", "NaN", false, false},
		{StoragePool, "MaxOversubscriptionRatio", "Infinity", false, false},
		{StoragePool, "MaxOversubscriptionRatio", "1,5", false, false},
		{StoragePool, "MaxOversubscriptionRatio", "1_0", false, false},
		// Java regex semantics: '.' excludes all line terminators, \s includes \x0B.
		{Node, "StorDriver/LvcreateOptions", "--type raid1\t-m 1", true, false},
		{Node, "StorDriver/LvcreateOptions", "a\rb", false, false},
		{Node, "StorDriver/LvcreateOptions", "a\u2028b", false, false},
		{Controller, "Autoplacer/MinThinFreeSpace", "10 GiB", true, false},
		{Controller, "Autoplacer/MinThinFreeSpace", "10\x0bGiB", true, false},
		{Controller, "Autoplacer/MinThinFreeSpace", "10%", true, false},
		{Controller, "Autoplacer/MinThinFreeSpace", "ten", false, false},
		{Resource, "StorPoolNameDrbdMeta", "", true, false},
		{Resource, "StorPoolNameDrbdMeta", ".internal", true, false},
		{Resource, "StorPoolNameDrbdMeta", "\ninternal", false, false},
		{Resource, "StorPoolNameDrbdMeta", "meta_pool", true, false},
		// Key length: 256 UTF-16 code units raw, 255 without empty segments.
		{Node, long("Aux/", 255), "v", true, false},
		{Node, long("Aux/", 256), "v", false, false},
		{Node, long("Aux//", 256), "v", true, false},
		{Node, long("Aux//", 257), "v", false, false},
		{Node, "Aux/" + strings.Repeat("😀", 126), "v", false, false},
		{Node, "Aux/" + strings.Repeat("😀", 125), "v", true, false},
		{Node, long("Foo/", 300), "v", false, true},
	}...)
	for _, tc := range rows {
		err := Check(tc.obj, tc.key, tc.value)
		if (err == nil) != tc.ok {
			t.Errorf("Check(%s, %.40q, %q) = %v, want ok=%v", tc.obj, tc.key, tc.value, err, tc.ok)
			continue
		}
		if err == nil {
			continue
		}
		var pe *Error
		if !errors.As(err, &pe) {
			t.Errorf("Check(%s, %.40q, %q): %T is not an *Error", tc.obj, tc.key, tc.value, err)
			continue
		}
		if pe.UnknownKey != tc.unknown || pe.Object != tc.obj || pe.Key != tc.key || pe.Value != tc.value {
			t.Errorf("Check(%s, %.40q, %q) = %#v, want UnknownKey=%v", tc.obj, tc.key, tc.value, pe, tc.unknown)
		}
		if strings.HasPrefix(pe.Reason, "cannot be checked") {
			t.Errorf("Check(%s, %.40q, %q): %v", tc.obj, tc.key, tc.value, err)
		}
	}
}

func TestCheckDelete(t *testing.T) {
	for _, tc := range []struct {
		obj     Object
		key     string
		ok      bool
		unknown bool
	}{
		{Node, "Aux/x", true, false},
		{Node, "PrefNic", true, false},
		{Node, "EBS/Tags/owner", true, false},
		{Node, "CurStltConnName", false, true},
		{Node, "Foo/Bar", false, true},
		{StoragePool, "SED/x", false, true},
		{StoragePool, "Aux/" + strings.Repeat("a", 300), true, false}, // deleting never checks the length
		{NodeConnection, "Paths/x/n1", true, false},
		{ResourceConnection, "Paths/x/n1", true, false},
		{VolumeDefinition, "EBS/Tags/x", true, false},
		{Volume, "EBS/Tags/x", false, true},
		{Controller, "DrbdOptions/Disk/bitmap", false, true},
		{Controller, "DrbdOptions/Handlers/fence-peer", true, false},
	} {
		err := CheckDelete(tc.obj, tc.key)
		if (err == nil) != tc.ok {
			t.Errorf("CheckDelete(%s, %.40q) = %v, want ok=%v", tc.obj, tc.key, err, tc.ok)
			continue
		}
		var pe *Error
		if err != nil && (!errors.As(err, &pe) || pe.UnknownKey != tc.unknown) {
			t.Errorf("CheckDelete(%s, %.40q) = %#v, want UnknownKey=%v", tc.obj, tc.key, err, tc.unknown)
		}
	}
}

func TestErrorMessages(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{Check(ResourceDefinition, "DrbdOptions/Net/protocol", "c"),
			`property "DrbdOptions/Net/protocol": value "c" must be one of A, B, C`},
		{Check(Node, "Foo/Bar", "x"), `property "Foo/Bar" is not a LINSTOR property of a node`},
		{CheckDelete(StoragePool, "SED/x"), `property "SED/x" is not a LINSTOR property of a storage pool`},
		{Check(Controller, "DrbdOptions/PeerDevice/c-plan-ahead", "301"),
			`property "DrbdOptions/PeerDevice/c-plan-ahead": value "301" must be an integer in 0..300 (1/10 seconds)`},
		{Check(ResourceDefinition, "DrbdOptions/Resource/quorum", "33"),
			`property "DrbdOptions/Resource/quorum": value "33" must be an integer in 1..32 or one of all, majority, off`},
		{Check(StoragePool, "StorDriver/StorPoolName", "a b"),
			`property "StorDriver/StorPoolName": value "a b" must match [a-zA-Z0-9_/-]+`},
		{Check(Node, "DrbdOptions/AutoEvictAllowEviction", "1"),
			`property "DrbdOptions/AutoEvictAllowEviction": value "1" must be true, false, yes or no`},
		{Check(Node, "Aux/"+strings.Repeat("b", 300), "v"),
			`property "Aux/` + strings.Repeat("b", 96) + `...": key is 304 characters long, LINSTOR allows at most 256`},
	} {
		if tc.err == nil || tc.err.Error() != tc.want {
			t.Errorf("got  %v\nwant %s", tc.err, tc.want)
		}
	}
}

func TestNormalize(t *testing.T) {
	for _, tc := range []struct {
		obj             Object
		key, value, out string
	}{
		{VolumeDefinition, "DrbdOptions/Disk/al-updates", "YES", "yes"},
		{VolumeDefinition, "DrbdOptions/Disk/al-updates", "No", "no"},
		{Node, "DrbdOptions/AutoEvictAllowEviction", "Yes", "true"},
		{Node, "DrbdOptions/AutoEvictAllowEviction", "NO", "false"},
		{Node, "DrbdOptions/AutoEvictAllowEviction", "True", "true"},
		{Node, "DrbdOptions/AutoEvictAllowEviction", "maybe", "maybe"}, // refused: unchanged
		{ResourceDefinition, "DrbdOptions/Net/protocol", "C", "C"},
		{Node, "Aux/X", "YES", "YES"},
		{Node, "Foo/Bar", "YES", "YES"},
	} {
		if got := Normalize(tc.obj, tc.key, tc.value); got != tc.out {
			t.Errorf("Normalize(%s, %s, %q) = %q, want %q", tc.obj, tc.key, tc.value, got, tc.out)
		}
	}
}

// Every pattern of the table must be usable in Go with LINSTOR's meaning.
func TestPatternsCompile(t *testing.T) {
	n := 0
	for i, r := range ruleTable {
		switch r.Type {
		case TypeRegex, TypeSymbol, TypeNumericOrSymbol:
			n++
			if _, err := ruleRegexp(i); err != nil {
				t.Errorf("%s: %v", r.Key, err)
			}
		}
	}
	if n == 0 {
		t.Fatal("no patterns")
	}
}

func TestJavaToGo(t *testing.T) {
	for _, tc := range []struct {
		in, out string // out "" means an error
	}{
		{"[a-z.]+", "[a-z.]+"},
		{`a.b`, "a" + javaDot + "b"},
		{`\d+\s*[\s%]`, `\d+[` + javaSpace + `]*[` + javaSpace + `%]`},
		{`\S\.\-`, `[^` + javaSpace + `]\.\-`},
		{`(?:a|b)`, `(?:a|b)`},
		{`(?i)yes`, ""},
		{`(?<n>a)`, ""},
		{`[a-z&&[^b]]`, ""},
		{`\Qa.b\E`, ""},
		{`\p{Alpha}`, ""},
		{`[\S]`, ""},
		{`[ab`, ""},
	} {
		got, err := javaToGo(tc.in)
		if tc.out == "" {
			if err == nil {
				t.Errorf("javaToGo(%q) = %q, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.out {
			t.Errorf("javaToGo(%q) = %q, %v, want %q", tc.in, got, err, tc.out)
		}
		if _, err := regexp.Compile(got); err != nil {
			t.Errorf("javaToGo(%q): %v", tc.in, err)
		}
	}
}

func TestParseLong(t *testing.T) {
	for _, tc := range []struct {
		in string
		n  int64
		ok bool
	}{
		{"0", 0, true}, {"+5", 5, true}, {"-5", -5, true}, {"007", 7, true},
		{"9223372036854775807", math.MaxInt64, true}, {"-9223372036854775808", math.MinInt64, true},
		{"9223372036854775808", 0, false}, {"-9223372036854775809", 0, false},
		{"", 0, false}, {"+", 0, false}, {"-", 0, false}, {" 5", 0, false}, {"5 ", 0, false},
		{"1_000", 0, false}, {"0x10", 0, false}, {"1.0", 0, false}, {"+-1", 0, false},
		{"٣٠", 30, true}, {"１２", 12, true}, // Character.digit accepts any BMP decimal digit
		{"𝟏", 0, false}, // but not one outside the BMP (a surrogate pair in Java)
	} {
		n, ok := parseLong(tc.in)
		if ok != tc.ok || n != tc.n {
			t.Errorf("parseLong(%q) = %d, %v, want %d, %v", tc.in, n, ok, tc.n, tc.ok)
		}
	}
}

func TestParseDouble(t *testing.T) {
	for _, tc := range []struct {
		in string
		f  float64
		ok bool
	}{
		{"1", 1, true}, {"1.", 1, true}, {".5", 0.5, true}, {"-2.5e1", -25, true}, {"1E+2", 100, true},
		{"\t 3 \n", 3, true}, {"2f", 2, true}, {"2D", 2, true}, {"0x1.8p1", 3, true}, {"0X10P0d", 16, true},
		{"1e400", math.Inf(1), true}, {"-Infinity", math.Inf(-1), true},
		{"", 0, false}, {".", 0, false}, {"e5", 0, false}, {"1e", 0, false}, {"0x10", 0, false},
		{"inf", 0, false}, {"nan", 0, false}, {"1_0", 0, false}, {"1 0", 0, false}, {"Infinityd", 0, false},
		{"١", 0, false}, {"--1", 0, false},
	} {
		f, ok := parseDouble(tc.in)
		if ok != tc.ok || (ok && f != tc.f) {
			t.Errorf("parseDouble(%q) = %v, %v, want %v, %v", tc.in, f, ok, tc.f, tc.ok)
		}
	}
	if f, ok := parseDouble("NaN"); !ok || !math.IsNaN(f) {
		t.Errorf("parseDouble(NaN) = %v, %v", f, ok)
	}
}

func BenchmarkCheck(b *testing.B) {
	cases := []struct {
		obj        Object
		key, value string
	}{
		{ResourceDefinition, "DrbdOptions/Net/protocol", "C"},
		{ResourceDefinition, "DrbdOptions/Resource/quorum", "majority"},
		{Node, "PrefNic", "eth0"},
		{Node, "Aux/foo", "bar"},
		{Node, "Foo/Bar", "x"},
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		c := cases[i%len(cases)]
		_ = Check(c.obj, c.key, c.value)
	}
}
