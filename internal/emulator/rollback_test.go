package emulator

import (
	"context"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/linstor-operator/linstor-operator/pkg/dbbackup"
)

// A rollback restores the database of before a migration that changed the schema: the
// tables' CRDs lose the version the migration added, their rows are the backup's. The
// operator may be stopped in the middle of a restore (a kill during RollingBack): the
// next restore must still bring the database back, whatever the first one left.
func TestRestoreAfterAFailedSchemaMigrationEvenWhenInterrupted(t *testing.T) {
	c := apiServer(t)
	ctx := context.Background()
	if n, err := dbbackup.StoredSchema(ctx, c); err != nil || n != 0 {
		t.Fatalf("StoredSchema of no database: %d, %v", n, err)
	}
	seedDatabase(t, c, "v1-27-1", 28, database131(t))
	// What the operator reads to name the LINSTOR versions that last ran a database.
	if n, err := dbbackup.StoredSchema(ctx, c); err != nil || n != 28 {
		t.Fatalf("StoredSchema: %d, %v; want 28", n, err)
	}
	dump, err := dbbackup.Take(ctx, c)
	must(t, err)

	if _, err := migrateDatabase(ctx, c, 28, 30, alwaysAlive, migrationHooks{failNext: true}); err == nil {
		t.Fatal("the injected failure did not fail the migration")
	}
	// The first restore is cut short at several points; each time the next one starts
	// from what the previous left.
	for _, after := range []time.Duration{50 * time.Millisecond, 300 * time.Millisecond, time.Second} {
		short, cancel := context.WithTimeout(ctx, after)
		_ = dbbackup.Restore(short, c, dump)
		cancel()
	}
	if err := dbbackup.Restore(ctx, c, dump); err != nil {
		t.Fatalf("restore after interrupted ones: %v", err)
	}
	expectTheBackup(t, c, dump)
	if n := stored(t, c); n != 28 {
		t.Errorf("stored %d after the restore, want 28", n)
	}
	if _, storage := crdVersions(t, c, "volumedefinitions"); storage != "v1-27-1" {
		t.Errorf("volumedefinitions stored as %s after the restore, want v1-27-1", storage)
	}
}

// A table whose objects are stored in a version its CRD no longer has (the API server
// wrote them with the storage version of before a CRD update it had not taken in yet)
// cannot be listed: a restore must still bring the backup back, and leave every table
// readable.
func TestRestoreOverObjectsStoredInALostVersion(t *testing.T) {
	c := apiServer(t)
	ctx := context.Background()
	seedDatabase(t, c, "v1-27-1", 28, database131(t))
	dump, err := dbbackup.Take(ctx, c)
	must(t, err)
	if _, err := migrateDatabase(ctx, c, 28, 30, alwaysAlive, migrationHooks{}); err != nil {
		t.Fatal(err)
	}
	// Migration 28 rewrote layerdrbdresources in v1-31-1; now its CRD loses v1-31-1.
	crd := &apiextensionsv1.CustomResourceDefinition{}
	must(t, c.Get(ctx, client.ObjectKey{Name: "layerdrbdresources." + dbbackup.Group}, crd))
	var keep []apiextensionsv1.CustomResourceDefinitionVersion
	for _, v := range crd.Spec.Versions {
		if v.Name != "v1-31-1" {
			v.Storage = v.Name == "v1-27-1"
			keep = append(keep, v)
		}
	}
	crd.Spec.Versions = keep
	crd.Status.StoredVersions = []string{"v1-27-1"}
	must(t, c.Status().Update(ctx, crd))
	must(t, c.Get(ctx, client.ObjectKey{Name: crd.Name}, crd))
	crd.Spec.Versions = keep
	must(t, c.Update(ctx, crd))
	time.Sleep(2 * time.Second)
	if _, err := dbbackup.Take(ctx, c); err == nil || !strings.Contains(err.Error(), "invalid group/version") {
		t.Fatalf("the table should be unreadable now, Take says %v", err)
	}

	if err := dbbackup.Restore(ctx, c, dump); err != nil {
		t.Fatalf("restore: %v", err)
	}
	expectTheBackup(t, c, dump)
}

// A rollback over a migration that dropped tables (18 deletes the OpenFlex CRDs, rows
// and all) brings them back as the backup has them: their CRDs with their versions,
// their rows, and the stored version of before.
func TestRestoreBringsBackTablesAMigrationDropped(t *testing.T) {
	c := apiServer(t)
	ctx := context.Background()
	seedDatabase(t, c, "v1-19-1", 18, openflexRows())
	dump, err := dbbackup.Take(ctx, c)
	must(t, err)
	if _, err := migrateDatabase(ctx, c, 18, 30, alwaysAlive, migrationHooks{}); err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: "layeropenflexvolumes." + dbbackup.Group}, crd); err == nil {
		t.Fatal("migration 18 left the OpenFlex table")
	}
	must(t, dbbackup.Restore(ctx, c, dump))
	expectTheBackup(t, c, dump)
	if n := stored(t, c); n != 18 {
		t.Errorf("stored %d, want 18", n)
	}
	if names, storage := crdVersions(t, c, "layeropenflexvolumes"); storage != "v1-19-1" || len(tableOf(t, c, "layeropenflexvolumes")) != 1 {
		t.Errorf("OpenFlex volumes: versions %v storage %s, rows %d", names, storage, len(tableOf(t, c, "layeropenflexvolumes")))
	}
}

// expectTheBackup: the database reads back as dump, byte for byte (CRDs and objects).
func expectTheBackup(t *testing.T, c client.Client, dump *dbbackup.Dump) {
	t.Helper()
	got, err := dbbackup.Take(context.Background(), c)
	must(t, err)
	a, err := got.Encode()
	must(t, err)
	b, err := dump.Encode()
	must(t, err)
	if dbbackup.Checksum(a) != dbbackup.Checksum(b) {
		t.Errorf("the restored database differs from the backup")
	}
}

// openflexRows are a 1.25 database's OpenFlex rows (tables migration 18 drops).
func openflexRows() map[string][]row {
	return map[string][]row{
		"layeropenflexresourcedefinitions": {{"name": "PVC-OF", "resource_name": "PVC-OF", "snapshot_name": "", "nqn": "nqn.x"}},
		"layeropenflexvolumes":             {{"name": "1:0", "layer_resource_id": int64(1), "vlm_nr": int64(0)}},
	}
}
