package emulator

import (
	"encoding/json"
	"strings"
)

// EventBuffer is eventBuffer, for the tests of a subscriber that falls behind.
const EventBuffer = eventBuffer

// DatabaseRows is what the controller would write to its database now: a backup.
func (e *Emulator) DatabaseRows() dbTables {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rows()
}

// LoadDatabaseRows loads rows as a controller starting on a restored database does.
func (e *Emulator) LoadDatabaseRows(rows dbTables) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.load(rows)
}

// WithNodeRowField sets a field in the emulator's JSON of node's Nodes row, as rows
// of an older emulator that kept more there.
func WithNodeRowField(rows dbTables, node, field string, value any) dbTables {
	out := rows.clone()
	name := deriveKey(strings.ToUpper(node))
	var data map[string]any
	if err := json.Unmarshal([]byte(stringColumn(out["nodes"][name], emulatorColumn)), &data); err != nil {
		panic(err)
	}
	data[field] = value
	out["nodes"][name][emulatorColumn] = mustJSON(data)
	return out
}
