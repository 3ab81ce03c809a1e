package emulator

import "maps"

// The shared vocabulary of the emulator's database (schema.go, migrations.go,
// database.go): LINSTOR's k8s backend keeps one CRD per table and one custom object per
// row, the row's columns in spec under LINSTOR's snake_case names (GenCrdV1_31_1.*Spec
// @JsonProperty).

// row is the spec of one object: column -> value (int64, string, bool, nil). An absent
// column and a nil one mean the same: the API server prunes a null in a column that is
// not nullable, and LINSTOR reads either back as null.
type row map[string]any

// tableRows is one table: object name (deriveKey of the primary key) -> row.
type tableRows map[string]row

// dbTables is a database: table plural -> rows.
type dbTables map[string]tableRows

// schemaTable names a table's CRD: kind as LINSTOR's class (e.g. LayerDrbdResources),
// plural the lowercased kind.
type schemaTable struct{ plural, kind string }

// clone copies the tables and their rows, so that a migration run on the copy (a
// rehearsal) leaves the original as it was.
func (db dbTables) clone() dbTables {
	out := make(dbTables, len(db))
	for plural, rows := range db {
		copied := make(tableRows, len(rows))
		for name, r := range rows {
			copied[name] = maps.Clone(r)
		}
		out[plural] = copied
	}
	return out
}

// int64Column reads an integer column; JSON from the API server and Go literals in
// tests give different integer types. ok is false when the column is absent or null.
func int64Column(r row, column string) (n int64, ok bool) {
	switch v := r[column].(type) {
	case int64:
		return v, true
	case int:
		return int64(v), true
	case int32:
		return int64(v), true
	case float64:
		return int64(v), true
	}
	return 0, false
}

// stringColumn reads a string column; "" when absent or null.
func stringColumn(r row, column string) string {
	s, _ := r[column].(string)
	return s
}
