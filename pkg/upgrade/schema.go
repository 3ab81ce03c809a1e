package upgrade

import "fmt"

// What LINSTOR's k8s database says about the version that wrote it. LINSTOR keeps one
// number, LinstorVersion/version's spec.version: the number of the last migration it
// applied plus one (DbK8sCrd.migrate stores BaseK8sCrdMigration.getNextVersion). A
// release writes its highest migration's number plus one on its first start and never
// changes it afterwards; docs/linstor-schema-history.md §2 lists which release has which
// highest migration (read from linstor-server's tags). A version that stamps the number a
// database holds runs no migration on it.

// stamps maps each LINSTOR line (or patch range) to the number its releases store: the
// newest patch of each group first, since that is the one adopted.
var stamps = []struct {
	newest Version
	oldest Version
	stored int64
}{
	{MustParse("1.33.3"), MustParse("1.33.2"), 31},
	{MustParse("1.33.1"), MustParse("1.33.0"), 30},
	{MustParse("1.32.3"), MustParse("1.32.0"), 29},
	{MustParse("1.31.3"), MustParse("1.31.0"), 28},
	{MustParse("1.30.4"), MustParse("1.30.4"), 26},
	{MustParse("1.30.3"), MustParse("1.30.2"), 25},
	{MustParse("1.30.1"), MustParse("1.30.0"), 24},
	{MustParse("1.29.2"), MustParse("1.29.0"), 23},
}

// StoredSchema is the number a database last started by LINSTOR v holds, false for a
// version outside the table (older than 1.29.0 or newer than 1.33.3).
func StoredSchema(v Version) (int64, bool) {
	for _, s := range stamps {
		if !v.Less(s.oldest) && !s.newest.Less(v) {
			return s.stored, true
		}
	}
	return 0, false
}

// WrittenBy names the LINSTOR versions that leave stored in their database, and the
// newest of them: the version that runs such a database without migrating it.
func WrittenBy(stored int64) (newest Version, versions string, ok bool) {
	for _, s := range stamps {
		if s.stored == stored {
			if s.newest.Compare(s.oldest) == 0 {
				return s.newest, s.newest.String(), true
			}
			return s.newest, fmt.Sprintf("%s to %s", s.oldest, s.newest), true
		}
	}
	return Version{}, "", false
}
