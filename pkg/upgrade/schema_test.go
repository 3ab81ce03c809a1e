package upgrade

import "testing"

// The numbers come from linstor-server's tags (docs/linstor-schema-history.md §2: the
// highest k8s migration per tag, plus one).
func TestStoredSchema(t *testing.T) {
	cases := []struct {
		version string
		stored  int64
		known   bool
	}{
		{"1.29.0", 23, true}, {"1.29.2", 23, true},
		{"1.30.0", 24, true}, {"1.30.1", 24, true}, {"1.30.2", 25, true}, {"1.30.3", 25, true}, {"1.30.4", 26, true},
		{"1.31.0", 28, true}, {"1.31.3", 28, true},
		{"1.32.0", 29, true}, {"1.32.3", 29, true},
		{"1.33.0", 30, true}, {"1.33.1", 30, true},
		{"1.33.2", 31, true}, {"1.33.3", 31, true},
		{"1.28.0", 0, false}, {"1.34.0", 0, false}, {"1.31.4", 0, false},
	}
	for _, tc := range cases {
		stored, known := StoredSchema(MustParse(tc.version))
		if stored != tc.stored || known != tc.known {
			t.Errorf("StoredSchema(%s) = %d, %v; want %d, %v", tc.version, stored, known, tc.stored, tc.known)
		}
	}
}

func TestWrittenBy(t *testing.T) {
	cases := []struct {
		stored   int64
		newest   string
		versions string
		known    bool
	}{
		{28, "1.31.3", "1.31.0 to 1.31.3", true},
		{29, "1.32.3", "1.32.0 to 1.32.3", true},
		{31, "1.33.3", "1.33.2 to 1.33.3", true},
		{26, "1.30.4", "1.30.4", true},
		{27, "", "", false}, // no release stored 27: 1.31.0-rc.1 only
		{35, "", "", false}, // 1.34: newer than this table
		{0, "", "", false},
	}
	for _, tc := range cases {
		newest, versions, known := WrittenBy(tc.stored)
		if known != tc.known || known && (newest.String() != tc.newest || versions != tc.versions) {
			t.Errorf("WrittenBy(%d) = %s, %q, %v; want %s, %q, %v", tc.stored, newest, versions, known, tc.newest, tc.versions, tc.known)
		}
	}
	// Every runnable version of this release stamps a number its newest patch shares.
	for _, v := range Current.Runnable {
		stored, ok := StoredSchema(v)
		if !ok {
			t.Errorf("runnable %s has no stored schema number", v)
			continue
		}
		if newest, _, _ := WrittenBy(stored); newest.Compare(v) < 0 {
			t.Errorf("runnable %s is newer than the newest writer %s of %d", v, newest, stored)
		}
	}
}
