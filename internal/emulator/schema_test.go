package emulator

import (
	"context"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/linstor-operator/linstor-operator/pkg/dbbackup"
)

// The migration runner against a real kube-apiserver (envtest), as LINSTOR's
// DbK8sCrd.migrate runs against one.

func alwaysAlive(context.Context) error { return nil }

// seedDatabase creates the tables of schema with its CRD versions, writes rows in
// schema's version and stamps stored: a database a controller of that schema left.
func seedDatabase(t *testing.T, c client.Client, schema string, stored int, rows map[string][]row) {
	t.Helper()
	ctx := context.Background()
	must(t, applySchema(ctx, c, "", schema, alwaysAlive))
	for plural, rs := range rows {
		for _, r := range rs {
			name, err := objectName(plural, r)
			if err != nil {
				name = deriveKey(stringColumn(r, "name")) // a table the emulator does not type
			}
			must(t, putRow(ctx, c, schema, plural, name, r))
		}
	}
	must(t, stampVersion(ctx, c, stored))
}

func stored(t *testing.T, c client.Client) int {
	t.Helper()
	n, err := readStoredMigration(context.Background(), c)
	must(t, err)
	return n
}

func tableOf(t *testing.T, c client.Client, plural string) tableRows {
	t.Helper()
	rows, err := readTableRows(context.Background(), c, plural)
	must(t, err)
	return rows
}

// crdVersions are a table CRD's versions, newest first, and its storage version.
func crdVersions(t *testing.T, c client.Client, plural string) ([]string, string) {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	must(t, c.Get(context.Background(), client.ObjectKey{Name: plural + "." + dbbackup.Group}, crd))
	var names []string
	storage := ""
	for _, v := range crd.Spec.Versions {
		names = append(names, v.Name)
		if v.Storage {
			storage = v.Name
		}
	}
	return names, storage
}

// resourceVersions snapshots every CRD of the group and every object in it.
func resourceVersions(t *testing.T, c client.Client) map[string]string {
	t.Helper()
	ctx := context.Background()
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	must(t, c.List(ctx, crds))
	out := map[string]string{}
	for _, crd := range crds.Items {
		if crd.Spec.Group != dbbackup.Group {
			continue
		}
		out[crd.Name] = crd.ResourceVersion
		for _, v := range crd.Spec.Versions {
			if !v.Storage {
				continue
			}
			list := &unstructured.UnstructuredList{}
			list.SetAPIVersion(dbbackup.Group + "/" + v.Name)
			list.SetKind(crd.Spec.Names.Kind + "List")
			must(t, c.List(ctx, list))
			for _, o := range list.Items {
				out[crd.Spec.Names.Plural+"/"+o.GetName()] = o.GetResourceVersion()
			}
		}
	}
	return out
}

// A 1.31 database with data in every table migrations 28–30 touch.
func database131(t *testing.T) map[string][]row {
	return map[string][]row{
		"layerdrbdresourcedefinitions": {drbdRscDfnRow("PVC-1", "", "", int64(7000)), drbdRscDfnRow("PVC-2", "", "", nil)},
		"layerresourceids":             {lriRow(1, "PVC-1", ""), lriRow(2, "PVC-1", "SNAP1"), lriRow(3, "PVC-2", "")},
		"layerdrbdresources":           {drbdRscRow(1), drbdRscRow(2), drbdRscRow(3)},
		"resourceconnections":          {rscConnRow("N1", "N2", "PVC-1", int64(7100)), rscConnRow("N1", "N3", "PVC-2", nil)},
		"resourcedefinitions":          {rscDfnRow("PVC-1", ""), rscDfnRow("PVC-1", "SNAP1"), rscDfnRow("PVC-2", "")},
		"volumedefinitions":            {vlmDfnRow("PVC-1", "", 0, 0), vlmDfnRow("PVC-1", "SNAP1", 0, 0), vlmDfnRow("PVC-2", "", 0, 1)},
		"propscontainers": {
			propRow("/RSC_DFNS/PVC-1", "DrbdPrimarySetOn", "N1"),
			propRow("/SNAP_DFNS_RSC_DFN/PVC-1/SNAP1", "DrbdPrimarySetOn", "N1"),
			propRow("/CTRLCFG", "DrbdOptions/auto-verify-algo-allowed-list", "crct10dif"),
		},
		// A table no migration in range reads, in the emulator's own format.
		"nodes": {{"node_name": "N1", "emulator_blob": `{"node":{"name":"n1"}}`}},
	}
}

func TestMigrateDatabaseFrom131To133(t *testing.T) {
	c := apiServer(t)
	ctx := context.Background()
	seedDatabase(t, c, "v1-27-1", 28, database131(t))
	before := tableOf(t, c, "layerdrbdresources")

	// The first step fails in its commit: its CRDs stay applied, its rows are rolled
	// back, the version stays at 28.
	got, err := migrateDatabase(ctx, c, 28, 30, alwaysAlive, migrationHooks{failNext: true})
	if err == nil || got != 28 || !strings.Contains(err.Error(), "migration 28") {
		t.Fatalf("injected failure: stored %d, err %v", got, err)
	}
	if n := stored(t, c); n != 28 {
		t.Fatalf("stored %d after the failed step, want 28", n)
	}
	if _, storage := crdVersions(t, c, "layerdrbdresources"); storage != "v1-31-1" {
		t.Errorf("CRDs of the failed step not applied: storage %s", storage)
	}
	for name, r := range tableOf(t, c, "layerdrbdresources") {
		if _, has := r["tcp_port_list"]; has || !rowsEqual(r, before[name]) {
			t.Errorf("row %s of the failed step not rolled back: %v", name, r)
		}
	}
	for _, r := range tableOf(t, c, "resourceconnections") {
		if _, has := r["tcp_port_src"]; has {
			t.Errorf("resource connection written by the failed step: %v", r)
		}
	}

	// The next start resumes at 28 and runs 28, 29, 30.
	got, err = migrateDatabase(ctx, c, 28, 30, alwaysAlive, migrationHooks{})
	if err != nil || got != 31 {
		t.Fatalf("resume: stored %d, err %v", got, err)
	}
	if n := stored(t, c); n != 31 {
		t.Errorf("stored %d, want 31", n)
	}
	wantVersions := []string{"v1-31-1", "v1-27-1", "v1-25-1", "v1-19-1", "v1-18-2", "v1-17-0", "v1-15-0"}
	for _, tb := range tablesOf("v1-31-1") {
		names, storage := crdVersions(t, c, tb.plural)
		want := wantVersions
		switch tb.kind {
		case "Schedules":
			want = wantVersions[:5]
		case "EbsRemotes":
			want = wantVersions[:4]
		}
		if storage != "v1-31-1" || !slices.Equal(names, want) {
			t.Errorf("%s: versions %v storage %s", tb.plural, names, storage)
		}
	}
	// 28
	for id, want := range map[int64]string{1: "[7000]", 2: "[-1]", 3: "[null]"} {
		r := tableOf(t, c, "layerdrbdresources")[nameOf(t, "layerdrbdresources", drbdRscRow(id))]
		if r["tcp_port_list"] != want {
			t.Errorf("LRI %d: tcp_port_list %v, want %s", id, r["tcp_port_list"], want)
		}
	}
	for _, r := range tableOf(t, c, "resourceconnections") {
		if _, has := r["tcp_port"]; has {
			t.Errorf("connection kept tcp_port: %v", r)
		}
		if r["resource_name"] == "PVC-1" && (r["tcp_port_src"] != int64(7100) || r["tcp_port_dst"] != int64(7100)) {
			t.Errorf("connection ports %v", r)
		}
		if _, has := r["tcp_port_src"]; r["resource_name"] == "PVC-2" && has {
			t.Errorf("a null port written as %v", r["tcp_port_src"])
		}
	}
	if r := tableOf(t, c, "layerdrbdresourcedefinitions")[nameOf(t, "layerdrbdresourcedefinitions", drbdRscDfnRow("PVC-1", "", "", nil))]; r["tcp_port"] != int64(7000) {
		t.Errorf("rsc-dfn tcp_port changed: %v", r)
	}
	// 29, 30
	props := map[string]string{}
	for _, p := range tableOf(t, c, "propscontainers") {
		props[stringColumn(p, "props_instance")+" "+stringColumn(p, "prop_key")] = stringColumn(p, "prop_value")
	}
	for key, want := range map[string]string{
		"/RSC_DFNS/PVC-1 Linstor/Drbd/auto-block-size":                        "False",
		"/RSC_DFNS/PVC-2 Linstor/Drbd/auto-block-size":                        "False",
		"/VLM_DFNS/PVC-1/0 Linstor/Drbd/InitialUptoDateOn":                    "N1",
		"/SNAP_VLM_DFNS_VLM_DFN/PVC-1/SNAP1/0 Linstor/Drbd/InitialUptoDateOn": "N1",
		"/CTRLCFG DrbdOptions/auto-verify-algo-allowed-list":                  "crct10dif",
	} {
		if props[key] != want {
			t.Errorf("prop %s = %q, want %q", key, props[key], want)
		}
	}
	if len(props) != 5 {
		t.Errorf("props %v", props)
	}
	for key := range props {
		if strings.HasSuffix(key, " DrbdPrimarySetOn") {
			t.Errorf("left %s", key)
		}
	}
	vds := tableOf(t, c, "volumedefinitions")
	for _, tc := range []struct {
		vd    row
		flags int64
	}{{vlmDfnRow("PVC-1", "", 0, 0), 32}, {vlmDfnRow("PVC-1", "SNAP1", 0, 0), 0}, {vlmDfnRow("PVC-2", "", 0, 1), 1}} {
		if got, _ := int64Column(vds[nameOf(t, "volumedefinitions", tc.vd)], "vlm_flags"); got != tc.flags {
			t.Errorf("%v: vlm_flags %d, want %d", tc.vd, got, tc.flags)
		}
	}
	// A table no migration touches keeps its rows as they were, extra fields included.
	if n := tableOf(t, c, "nodes")[deriveKey("N1")]; n["emulator_blob"] != `{"node":{"name":"n1"}}` {
		t.Errorf("nodes row %v", n)
	}

	// 1.33.2 -> 1.33.3: nothing runs, nothing is written.
	snapshot := resourceVersions(t, c)
	if got, err := migrateDatabase(ctx, c, 31, 30, alwaysAlive, migrationHooks{failNext: true}); err != nil || got != 31 {
		t.Fatalf("patch release: stored %d, err %v", got, err)
	}
	if after := resourceVersions(t, c); !mapsEqual(snapshot, after) {
		t.Errorf("a patch release wrote to the database")
	}

	// A newer database (1.34 stored 35): not refused, untouched.
	must(t, stampVersion(ctx, c, 35))
	snapshot = resourceVersions(t, c)
	if got, err := migrateDatabase(ctx, c, 35, 30, alwaysAlive, migrationHooks{}); err != nil || got != 35 {
		t.Fatalf("newer database: stored %d, err %v", got, err)
	}
	if after := resourceVersions(t, c); !mapsEqual(snapshot, after) || stored(t, c) != 35 {
		t.Errorf("a newer database was changed")
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestMigrateDatabaseFailsOnDataAndDropsOpenflexTables(t *testing.T) {
	c := apiServer(t)
	ctx := context.Background()
	// A 1.25 database (stored 18, schema v1-19-1) with OpenFlex rows.
	rows := openflexRows()
	rows["layerdrbdresources"] = []row{drbdRscRow(9)} // orphaned: 28 will fail on it
	rows["nodes"] = []row{{"node_name": "N1", "emulator_blob": "x"}}
	seedDatabase(t, c, "v1-19-1", 18, rows)
	// 1.26.0 runs 18 and 19.
	got, err := migrateDatabase(ctx, c, 18, 19, alwaysAlive, migrationHooks{})
	if err != nil || got != 20 || stored(t, c) != 20 {
		t.Fatalf("18, 19: stored %d, err %v", got, err)
	}
	for _, plural := range []string{"layeropenflexresourcedefinitions", "layeropenflexvolumes"} {
		err := c.Get(ctx, client.ObjectKey{Name: plural + "." + dbbackup.Group}, &apiextensionsv1.CustomResourceDefinition{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("CRD %s after 18: %v", plural, err)
		}
	}
	if _, storage := crdVersions(t, c, "nodes"); storage != "v1-25-1" {
		t.Errorf("nodes storage %s after 18, want v1-25-1", storage)
	}
	if len(tableOf(t, c, "nodes")) != 1 || len(tableOf(t, c, "layerdrbdresources")) != 1 {
		t.Error("rows of the remaining tables lost")
	}

	// 1.32.3 on it runs 20 … 28; 28 fails on the orphaned DRBD resource and the
	// version stays at 28, after 20 … 27 were each stamped.
	got, err = migrateDatabase(ctx, c, 20, 28, alwaysAlive, migrationHooks{})
	if err == nil || got != 28 || stored(t, c) != 28 || !strings.Contains(err.Error(), "LayerResourceId 9 not found!") {
		t.Fatalf("28 on an orphan: stored %d (read %d), err %v", got, stored(t, c), err)
	}
	if _, storage := crdVersions(t, c, "layerdrbdresources"); storage != "v1-31-1" {
		t.Errorf("the failed step's CRDs: storage %s, want v1-31-1 (not transactional)", storage)
	}
	// Started again it fails again at 28.
	if got, err := migrateDatabase(ctx, c, 28, 28, alwaysAlive, migrationHooks{}); err == nil || got != 28 {
		t.Fatalf("again: stored %d, err %v", got, err)
	}
}

// The operator may back up, restore and roll back only the tables it knows
// (dbbackup.Tables, and the RBAC generated from the same list): every table of every
// LINSTOR k8s schema must be among them, or every rollback on a real database is refused
// (S3Remotes, in every schema since v1-15-0, was missing until #31).
func TestTheOperatorKnowsEveryTable(t *testing.T) {
	for _, s := range schemas {
		for _, tb := range tablesOf(s) {
			if !slices.Contains(dbbackup.Tables, tb.plural) {
				t.Errorf("table %s of schema %s is not in dbbackup.Tables", tb.plural, s)
			}
		}
	}
}
