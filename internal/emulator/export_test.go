package emulator

// EventBuffer is eventBuffer, for the tests of a subscriber that falls behind.
const EventBuffer = eventBuffer

// DatabaseRows is what the controller would write to its database now: a backup.
func (e *Emulator) DatabaseRows() map[string]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rows(e.version)
}

// LoadDatabaseRows loads rows as a controller starting on a restored database does.
func (e *Emulator) LoadDatabaseRows(rows map[string]string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.load(rows)
}
