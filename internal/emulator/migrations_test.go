package emulator

import (
	"maps"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Rows as LINSTOR writes them (GenCrdV1_31_1.*Spec columns), for the pure tests of
// the schema history and of migrations 18, 28, 29 and 30.

func lriRow(id int64, rsc, snap string) row {
	return row{"layer_resource_id": id, "node_name": "N1", "resource_name": rsc, "snapshot_name": snap,
		"layer_resource_kind": "DRBD", "layer_resource_suffix": "", "layer_resource_suspended": false}
}

func drbdRscRow(id int64) row {
	return row{"layer_resource_id": id, "peer_slots": int64(7), "al_stripes": int64(1), "al_stripe_size": int64(32),
		"flags": int64(0), "node_id": id % 3}
}

func drbdRscDfnRow(rsc, suffix, snap string, port any) row {
	return row{"resource_name": rsc, "resource_name_suffix": suffix, "snapshot_name": snap, "peer_slots": int64(7),
		"al_stripes": int64(1), "al_stripe_size": int64(32), "tcp_port": port, "transport_type": "IP", "secret": "s"}
}

func rscConnRow(src, dst, rsc string, port any) row {
	return row{"uuid": "u-" + src + dst, "node_name_src": src, "node_name_dst": dst, "resource_name": rsc,
		"snapshot_name": "", "flags": int64(0), "tcp_port": port}
}

func propRow(instance, key, value string) row {
	return row{"props_instance": instance, "prop_key": key, "prop_value": value}
}

func vlmDfnRow(rsc, snap string, nr, flags int64) row {
	return row{"uuid": "u-" + rsc + snap, "resource_name": rsc, "snapshot_name": snap, "vlm_nr": nr,
		"vlm_size": int64(1 << 20), "vlm_flags": flags}
}

func rscDfnRow(rsc, snap string) row {
	return row{"uuid": "u-" + rsc + snap, "resource_name": rsc, "snapshot_name": snap, "resource_dsp_name": strings.ToLower(rsc),
		"snapshot_dsp_name": snap, "resource_flags": int64(0), "layer_stack": `["DRBD","STORAGE"]`, "resource_group_name": "DFLTRSCGRP"}
}

// dbOf builds a database of typed rows, each under its deriveKey name.
func dbOf(t *testing.T, rows map[string][]row) dbTables {
	t.Helper()
	db := dbTables{}
	for plural, rs := range rows {
		db[plural] = tableRows{}
		for _, r := range rs {
			db[plural][nameOf(t, plural, r)] = r
		}
	}
	return db
}

func nameOf(t *testing.T, plural string, r row) string {
	t.Helper()
	name, err := objectName(plural, r)
	if err != nil {
		t.Fatal(err)
	}
	return name
}

func TestLastMigrationPerRelease(t *testing.T) {
	for _, tc := range []struct {
		version string
		last    int
		schema  string
	}{
		{"1.29.0", 22, "v1-27-1"}, {"1.29.2", 22, "v1-27-1"},
		{"1.30.0", 23, "v1-27-1"}, {"1.30.1", 23, "v1-27-1"},
		{"1.30.2", 24, "v1-27-1"}, {"1.30.3", 24, "v1-27-1"},
		{"1.30.4", 25, "v1-27-1"},
		{"1.31.0", 27, "v1-27-1"}, {"1.31.3", 27, "v1-27-1"},
		{"1.32.0", 28, "v1-31-1"}, {"1.32.0-rc.1", 28, "v1-31-1"}, {"1.32.3", 28, "v1-31-1"},
		{"1.33.0", 29, "v1-31-1"}, {"1.33.1", 29, "v1-31-1"},
		{"1.33.2", 30, "v1-31-1"}, {"1.33.3", 30, "v1-31-1"},
		{"1.34.0", 30, "v1-31-1"}, // not modelled: counts as 1.33.3
		{"1.25.0", 17, "v1-19-1"}, {"1.26.0", 19, "v1-25-1"}, {"1.28.0", 22, "v1-27-1"},
		{"1.16.0", 1, "v1-15-0"},
	} {
		t.Run(tc.version, func(t *testing.T) {
			last, err := lastMigration(tc.version)
			if err != nil || last != tc.last {
				t.Fatalf("lastMigration(%s) = %d, %v; want %d", tc.version, last, err, tc.last)
			}
			schema, err := schemaOf(tc.version)
			if err != nil || schema != tc.schema {
				t.Fatalf("schemaOf(%s) = %s, %v; want %s", tc.version, schema, err, tc.schema)
			}
		})
	}
	for _, bad := range []string{"1.14.0", "one.two", ""} {
		if _, err := lastMigration(bad); err == nil {
			t.Errorf("lastMigration(%q): want an error", bad)
		}
	}
}

func TestMigrationChain(t *testing.T) {
	var schemaChanges []int
	for i, m := range migrationChain {
		if m.number != i+1 {
			t.Fatalf("migration at %d is numbered %d", i, m.number)
		}
		if !strings.HasPrefix(m.class, "Migration_") || schemaIndex(m.schema) < 0 {
			t.Errorf("migration %d: class %q schema %q", m.number, m.class, m.schema)
		}
		if m.changesSchema() {
			schemaChanges = append(schemaChanges, m.number)
		}
	}
	if len(migrationChain) != 30 {
		t.Errorf("%d migrations, want 30", len(migrationChain))
	}
	if want := []int{1, 3, 6, 7, 18, 22, 28}; !slices.Equal(schemaChanges, want) {
		t.Errorf("schema-changing migrations %v, want %v", schemaChanges, want)
	}
}

func TestMigrationsToRun(t *testing.T) {
	numbers := func(ms []migration) []int {
		var out []int
		for _, m := range ms {
			out = append(out, m.number)
		}
		return out
	}
	for _, tc := range []struct {
		name         string
		stored, last int
		want         []int
	}{
		{"1.31.3 on its own database", 28, 27, nil},
		{"1.31.3 -> 1.32.3 runs 28", 28, 28, []int{28}},
		{"1.32.3 -> 1.33.2 runs 29 and 30", 29, 30, []int{29, 30}},
		{"1.31.3 -> 1.33.3 runs 28, 29, 30", 28, 30, []int{28, 29, 30}},
		{"1.33.2 -> 1.33.3 (patch release) runs nothing", 31, 30, nil},
		{"1.32.1 -> 1.32.3 (patch release) runs nothing", 29, 28, nil},
		{"1.33.3 on a newer database (1.34, stored 35) runs nothing", 35, 30, nil},
		{"resumes at the failed step", 30, 30, []int{30}},
		{"an empty database starts with migration 1", 0, 3, []int{1, 2, 3}},
		{"1.25 -> 1.26 runs 18 and 19", 18, 19, []int{18, 19}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := numbers(migrationsToRun(tc.stored, tc.last)); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	// The releases the tests run: the patch hop 1.33.2 -> 1.33.3 has no migration.
	a, _ := lastMigration("1.33.2")
	b, _ := lastMigration("1.33.3")
	if len(migrationsToRun(a+1, b)) != 0 {
		t.Errorf("1.33.2 -> 1.33.3 runs migrations")
	}
}

func TestSchemas(t *testing.T) {
	for _, tc := range []struct {
		schema   string
		tables   int
		openflex bool
		has      []string
		lacks    []string
	}{
		{"v1-15-0", 43, true, nil, []string{"schedules", "ebsremotes"}},
		{"v1-17-0", 43, true, nil, []string{"schedules"}},
		{"v1-18-2", 44, true, []string{"schedules"}, []string{"ebsremotes"}},
		{"v1-19-1", 45, true, []string{"schedules", "ebsremotes"}, nil},
		{"v1-25-1", 43, false, []string{"schedules", "ebsremotes"}, nil},
		{"v1-27-1", 43, false, nil, nil},
		{"v1-31-1", 43, false, []string{"layerdrbdresources", "propscontainers", "volumedefinitions"}, nil},
		{"v1-33-2", 0, false, nil, nil},
	} {
		t.Run(tc.schema, func(t *testing.T) {
			var plurals []string
			for _, tb := range tablesOf(tc.schema) {
				plurals = append(plurals, tb.plural)
				if tb.plural != strings.ToLower(tb.kind) {
					t.Errorf("%s: plural %s", tb.kind, tb.plural)
				}
			}
			if len(plurals) != tc.tables {
				t.Errorf("%d tables, want %d", len(plurals), tc.tables)
			}
			if got := slices.Contains(plurals, "layeropenflexvolumes") && slices.Contains(plurals, "layeropenflexresourcedefinitions"); got != tc.openflex {
				t.Errorf("OpenFlex tables present: %v, want %v", got, tc.openflex)
			}
			for _, p := range tc.has {
				if !slices.Contains(plurals, p) {
					t.Errorf("lacks %s", p)
				}
			}
			for _, p := range tc.lacks {
				if slices.Contains(plurals, p) {
					t.Errorf("has %s", p)
				}
			}
		})
	}
	for stored, want := range map[int]string{0: "", 1: "", 2: "v1-15-0", 18: "v1-19-1", 19: "v1-25-1", 28: "v1-27-1", 29: "v1-31-1", 31: "v1-31-1", 35: "v1-31-1"} {
		if got := schemaAt(stored); got != want {
			t.Errorf("schemaAt(%d) = %q, want %q", stored, got, want)
		}
	}
	if got := droppedTables("v1-19-1", "v1-25-1"); len(got) != 2 {
		t.Errorf("v1-19-1 -> v1-25-1 drops %v, want the two OpenFlex tables", got)
	}
}

func TestTableCRD(t *testing.T) {
	versionsOf := func(kind, schema string) (names []string, storage string) {
		crd := tableCRD(schemaTable{strings.ToLower(kind), kind}, schema)
		for _, v := range crd.Spec.Versions {
			names = append(names, v.Name)
			if !v.Served {
				t.Errorf("%s %s not served", kind, v.Name)
			}
			if v.Storage {
				storage = v.Name
			}
		}
		if crd.Spec.Conversion != nil || crd.Spec.Scope != "Cluster" || crd.Spec.Names.Plural != strings.ToLower(kind) {
			t.Errorf("%s: conversion %v scope %s names %+v", kind, crd.Spec.Conversion, crd.Spec.Scope, crd.Spec.Names)
		}
		return names, storage
	}
	for _, tc := range []struct {
		kind, schema string
		want         []string
	}{
		{"LayerDrbdResources", "v1-31-1", []string{"v1-31-1", "v1-27-1", "v1-25-1", "v1-19-1", "v1-18-2", "v1-17-0", "v1-15-0"}},
		{"LayerDrbdResources", "v1-27-1", []string{"v1-27-1", "v1-25-1", "v1-19-1", "v1-18-2", "v1-17-0", "v1-15-0"}},
		{"Schedules", "v1-31-1", []string{"v1-31-1", "v1-27-1", "v1-25-1", "v1-19-1", "v1-18-2"}},
		{"EbsRemotes", "v1-25-1", []string{"v1-25-1", "v1-19-1"}},
		{"LayerOpenflexVolumes", "v1-19-1", []string{"v1-19-1", "v1-18-2", "v1-17-0", "v1-15-0"}},
	} {
		names, storage := versionsOf(tc.kind, tc.schema)
		if !slices.Equal(names, tc.want) || storage != tc.schema {
			t.Errorf("%s at %s: versions %v storage %s, want %v storage %s", tc.kind, tc.schema, names, storage, tc.want, tc.schema)
		}
	}
	// Columns per schema, as RES/v1_27_1 and RES/v1_31_1.
	props := func(kind, schema string) []string {
		crd := tableCRD(schemaTable{strings.ToLower(kind), kind}, schema)
		return slices.Sorted(func(yield func(string) bool) {
			for k := range crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties {
				if !yield(k) {
					return
				}
			}
		})
	}
	if p := props("LayerDrbdResources", "v1-27-1"); slices.Contains(p, "tcp_port_list") {
		t.Errorf("v1-27-1 LayerDrbdResources has tcp_port_list: %v", p)
	}
	if p := props("LayerDrbdResources", "v1-31-1"); !slices.Contains(p, "tcp_port_list") {
		t.Errorf("v1-31-1 LayerDrbdResources lacks tcp_port_list: %v", p)
	}
	if p := props("ResourceConnections", "v1-31-1"); slices.Contains(p, "tcp_port") || !slices.Contains(p, "tcp_port_src") || !slices.Contains(p, "tcp_port_dst") {
		t.Errorf("v1-31-1 ResourceConnections columns %v", p)
	}
	if p := props("ResourceConnections", "v1-27-1"); !slices.Contains(p, "tcp_port") || slices.Contains(p, "tcp_port_src") {
		t.Errorf("v1-27-1 ResourceConnections columns %v", p)
	}
	if p := props("LayerDrbdResourceDefinitions", "v1-31-1"); !slices.Contains(p, "tcp_port") {
		t.Errorf("v1-31-1 LayerDrbdResourceDefinitions lacks tcp_port: %v", p)
	}
}

func TestDeriveKey(t *testing.T) {
	// sha256("abc"), lowercase hex.
	if got := deriveKey("abc"); got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Errorf("deriveKey(abc) = %s", got)
	}
	for _, tc := range []struct {
		plural string
		r      row
		want   string
	}{
		{"propscontainers", propRow("/RSC_DFNS/PVC-1", "Linstor/Drbd/auto-block-size", "False"), "/RSC_DFNS/PVC-1:Linstor/Drbd/auto-block-size"},
		{"layerresourceids", lriRow(12, "PVC-1", ""), "12"},
		{"layerdrbdresources", drbdRscRow(12), "12"},
		{"volumedefinitions", vlmDfnRow("PVC-1", "", 0, 0), "PVC-1::0"},
		{"resourcedefinitions", rscDfnRow("PVC-1", "SNAP1"), "PVC-1:SNAP1"},
		{"layerdrbdresourcedefinitions", drbdRscDfnRow("PVC-1", "", "", int64(7000)), "PVC-1::"},
		{"resourceconnections", rscConnRow("N1", "N2", "PVC-1", nil), "N1:N2:PVC-1:"},
	} {
		pk, err := formatPrimaryKey(tc.plural, tc.r)
		if err != nil || pk != tc.want {
			t.Errorf("%s: primary key %q, %v; want %q", tc.plural, pk, err, tc.want)
		}
		if name, _ := objectName(tc.plural, tc.r); name != deriveKey(tc.want) {
			t.Errorf("%s: object name %s, want deriveKey(%q)", tc.plural, name, tc.want)
		}
	}
}

func TestMigration28MoveTcpPortsToNodes(t *testing.T) {
	base := func() map[string][]row {
		return map[string][]row{
			"layerdrbdresourcedefinitions": {
				drbdRscDfnRow("PVC-1", "", "", int64(7000)),
				drbdRscDfnRow("PVC-1", "", "SNAP1", int64(7999)), // a snapshot's: not used
				drbdRscDfnRow("PVC-2", "", "", nil),              // tcp_port null
				drbdRscDfnRow("PVC-3", "_X", "", int64(7003)),    // a suffixed one: not used
				drbdRscDfnRow("PVC-4", "", "", int64(7004)),
			},
			"layerresourceids":    {lriRow(1, "PVC-1", ""), lriRow(2, "PVC-1", "SNAP1"), lriRow(3, "PVC-2", "")},
			"layerdrbdresources":  {drbdRscRow(1), drbdRscRow(2), drbdRscRow(3)},
			"resourceconnections": {rscConnRow("N1", "N2", "PVC-1", int64(7100)), rscConnRow("N1", "N3", "PVC-1", nil)},
			"nodes":               {{"node_name": "N1", "node_dsp_name": "n1"}},
		}
	}
	t.Run("tcp_port_list per DRBD resource", func(t *testing.T) {
		db := dbOf(t, base())
		db["layerdrbdresources"][nameOf(t, "layerdrbdresources", drbdRscRow(1))]["emulator_extra"] = "x"
		ch, err := moveTCPPortsToNodes(db)
		if err != nil {
			t.Fatal(err)
		}
		for id, want := range map[int64]string{1: "[7000]", 2: "[-1]", 3: "[null]"} {
			got := ch.upserts["layerdrbdresources"][nameOf(t, "layerdrbdresources", drbdRscRow(id))]
			if got["tcp_port_list"] != want {
				t.Errorf("LRI %d: tcp_port_list %v, want %s", id, got["tcp_port_list"], want)
			}
			// Upserted with exactly the v1-31-1 columns, the others copied.
			wantRow := drbdRscRow(id)
			wantRow["tcp_port_list"] = want
			if !rowsEqual(got, wantRow) {
				t.Errorf("LRI %d: row %v, want %v", id, got, wantRow)
			}
		}
		if len(ch.upserts["layerdrbdresources"]) != 3 {
			t.Errorf("%d DRBD resources upserted, want 3", len(ch.upserts["layerdrbdresources"]))
		}
		for _, tc := range []struct {
			conn row
			port any
		}{{rscConnRow("N1", "N2", "PVC-1", int64(7100)), int64(7100)}, {rscConnRow("N1", "N3", "PVC-1", nil), nil}} {
			got := ch.upserts["resourceconnections"][nameOf(t, "resourceconnections", tc.conn)]
			if _, has := got["tcp_port"]; has || got["tcp_port_src"] != tc.port || got["tcp_port_dst"] != tc.port || got["uuid"] != tc.conn["uuid"] {
				t.Errorf("connection %v: %v, want tcp_port_src = tcp_port_dst = %v and no tcp_port", tc.conn, got, tc.port)
			}
		}
		for plural := range ch.upserts {
			if plural != "layerdrbdresources" && plural != "resourceconnections" {
				t.Errorf("28 writes %s", plural)
			}
		}
		if len(ch.creates) != 0 || len(ch.deletes) != 0 {
			t.Errorf("28 creates %v, deletes %v", ch.creates, ch.deletes)
		}
	})
	t.Run("an orphaned DRBD resource fails: LayerResourceId N not found!", func(t *testing.T) {
		rows := base()
		rows["layerdrbdresources"] = append(rows["layerdrbdresources"], drbdRscRow(9))
		_, err := moveTCPPortsToNodes(dbOf(t, rows))
		if err == nil || !strings.Contains(err.Error(), "LayerResourceId 9 not found!") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("a DRBD resource whose resource definition has no DRBD data fails", func(t *testing.T) {
		rows := base()
		rows["layerresourceids"] = append(rows["layerresourceids"], lriRow(4, "PVC-3", "")) // only a suffixed rsc-dfn
		rows["layerdrbdresources"] = append(rows["layerdrbdresources"], drbdRscRow(4))
		_, err := moveTCPPortsToNodes(dbOf(t, rows))
		if err == nil || !strings.Contains(err.Error(), "NullPointerException") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("rehearsal: version and tables unchanged on failure, original untouched", func(t *testing.T) {
		rows := base()
		rows["layerdrbdresources"] = append(rows["layerdrbdresources"], drbdRscRow(9))
		db := dbOf(t, rows)
		err := rehearse(db, 28, 30)
		if err == nil || !strings.Contains(err.Error(), "migration 28") || !strings.Contains(err.Error(), "LayerResourceId 9 not found!") {
			t.Fatalf("err = %v", err)
		}
		ok := dbOf(t, base())
		if err := rehearse(ok, 28, 30); err != nil {
			t.Fatal(err)
		}
		for _, r := range ok["layerdrbdresources"] {
			if _, has := r["tcp_port_list"]; has {
				t.Errorf("rehearse changed the original: %v", r)
			}
		}
	})
}

// rowsEqual: rows hold only comparable values (int64, string, bool, nil).
func rowsEqual(a, b row) bool { return maps.Equal(a, b) }

func TestMigration29DisableAutoBlockSizes(t *testing.T) {
	rows := map[string][]row{
		"resourcedefinitions": {rscDfnRow("PVC-1", ""), rscDfnRow("PVC-1", "SNAP1"), rscDfnRow("PVC-2", "")},
		"propscontainers":     {propRow("/RSC_DFNS/PVC-1", "DrbdOptions/Net/protocol", "C")},
	}
	t.Run("one prop per resource name", func(t *testing.T) {
		ch, err := disableAutoBlockSizes(dbOf(t, rows))
		if err != nil {
			t.Fatal(err)
		}
		if len(ch.creates["propscontainers"]) != 2 || len(ch.upserts) != 0 || len(ch.deletes) != 0 {
			t.Fatalf("changes %+v, want 2 creates", ch)
		}
		for _, rsc := range []string{"PVC-1", "PVC-2"} {
			want := propRow("/RSC_DFNS/"+rsc, "Linstor/Drbd/auto-block-size", "False")
			if got := ch.creates["propscontainers"][nameOf(t, "propscontainers", want)]; !rowsEqual(got, want) {
				t.Errorf("%s: %v, want %v", rsc, got, want)
			}
		}
	})
	t.Run("a lower-case name is upper-cased in the instance", func(t *testing.T) {
		ch, err := disableAutoBlockSizes(dbOf(t, map[string][]row{"resourcedefinitions": {rscDfnRow("pvc-x", "")}}))
		want := propRow("/RSC_DFNS/PVC-X", "Linstor/Drbd/auto-block-size", "False")
		if err != nil || ch.creates["propscontainers"][nameOf(t, "propscontainers", want)] == nil {
			t.Fatalf("%v %v", ch, err)
		}
	})
	t.Run("an existing auto-block-size prop fails with the create's 409", func(t *testing.T) {
		withProp := map[string][]row{
			"resourcedefinitions": rows["resourcedefinitions"],
			"propscontainers":     {propRow("/RSC_DFNS/PVC-2", "Linstor/Drbd/auto-block-size", "True")},
		}
		_, err := disableAutoBlockSizes(dbOf(t, withProp))
		if !apierrors.IsAlreadyExists(err) {
			t.Fatalf("err = %v, want a 409", err)
		}
		err = rehearse(dbOf(t, withProp), 29, 30)
		if !apierrors.IsAlreadyExists(err) || !strings.Contains(err.Error(), "migration 29") {
			t.Fatalf("rehearse: %v", err)
		}
	})
}

func TestMigration30NewUpToDateMechanic(t *testing.T) {
	rows := map[string][]row{
		"volumedefinitions": {
			vlmDfnRow("PVC-1", "", 0, 0),
			vlmDfnRow("PVC-1", "", 1, 1), // other flags are kept
			vlmDfnRow("PVC-1", "SNAP1", 0, 0),
			vlmDfnRow("PVC-2", "", 0, 0), // no DrbdPrimarySetOn: untouched
		},
		"propscontainers": {
			propRow("/RSC_DFNS/PVC-1", "DrbdPrimarySetOn", "N1"),
			propRow("/SNAP_DFNS_RSC_DFN/PVC-1/SNAP1", "DrbdPrimarySetOn", "N2"),
			propRow("/RSC_DFNS/PVC-9", "DrbdPrimarySetOn", "N3"), // no volume definition: only deleted
			propRow("/RSC_DFNS/PVC-2", "DrbdOptions/Net/protocol", "C"),
		},
	}
	db := dbOf(t, rows)
	ch, err := newUpToDateMechanic(db)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		vd       row
		instance string
		value    string
		flags    int64
	}{
		{vlmDfnRow("PVC-1", "", 0, 0), "/VLM_DFNS/PVC-1/0", "N1", 32},
		{vlmDfnRow("PVC-1", "", 1, 1), "/VLM_DFNS/PVC-1/1", "N1", 33},
		{vlmDfnRow("PVC-1", "SNAP1", 0, 0), "/SNAP_VLM_DFNS_VLM_DFN/PVC-1/SNAP1/0", "N2", 0},
	} {
		prop := propRow(tc.instance, "Linstor/Drbd/InitialUptoDateOn", tc.value)
		if got := ch.upserts["propscontainers"][nameOf(t, "propscontainers", prop)]; !rowsEqual(got, prop) {
			t.Errorf("%s: prop %v, want %v", tc.instance, got, prop)
		}
		want := tc.vd
		want["vlm_flags"] = tc.flags
		if got := ch.upserts["volumedefinitions"][nameOf(t, "volumedefinitions", tc.vd)]; !rowsEqual(got, want) {
			t.Errorf("%s: volume definition %v, want %v", tc.instance, got, want)
		}
	}
	if len(ch.upserts["volumedefinitions"]) != 3 || len(ch.upserts["propscontainers"]) != 3 {
		t.Errorf("upserts %v", ch.upserts)
	}
	var deleted []string
	for _, name := range ch.deletes["propscontainers"] {
		deleted = append(deleted, stringColumn(db["propscontainers"][name], "props_instance"))
		if stringColumn(db["propscontainers"][name], "prop_key") != "DrbdPrimarySetOn" {
			t.Errorf("deletes %v", db["propscontainers"][name])
		}
	}
	slices.Sort(deleted)
	if want := []string{"/RSC_DFNS/PVC-1", "/RSC_DFNS/PVC-9", "/SNAP_DFNS_RSC_DFN/PVC-1/SNAP1"}; !slices.Equal(deleted, want) {
		t.Errorf("deleted DrbdPrimarySetOn on %v, want %v", deleted, want)
	}
	// Applied: no DrbdPrimarySetOn left anywhere.
	if err := applyChanges(db, ch, nil); err != nil {
		t.Fatal(err)
	}
	for _, p := range db["propscontainers"] {
		if p["prop_key"] == "DrbdPrimarySetOn" {
			t.Errorf("left %v", p)
		}
	}
}

func TestMigration18DropsTheOpenflexTables(t *testing.T) {
	db := dbTables{
		"layeropenflexresourcedefinitions": {"a": {"resource_name": "PVC-1"}},
		"layeropenflexvolumes":             {"b": {"layer_resource_id": int64(1)}},
		"nodes":                            {"c": {"node_name": "N1"}},
	}
	m := migrationChain[17]
	ch, dropped, err := changesOf(m, db)
	if err != nil || m.number != 18 {
		t.Fatal(m.number, err)
	}
	if err := applyChanges(db, ch, dropped); err != nil {
		t.Fatal(err)
	}
	if _, ok := db["layeropenflexresourcedefinitions"]; ok {
		t.Error("layeropenflexresourcedefinitions kept")
	}
	if _, ok := db["layeropenflexvolumes"]; ok {
		t.Error("layeropenflexvolumes kept")
	}
	if len(db["nodes"]) != 1 {
		t.Error("nodes lost")
	}
	// No other step drops a table.
	for _, m := range migrationChain {
		if _, dropped, _ := changesOf(m, dbTables{}); m.number != 18 && len(dropped) != 0 {
			t.Errorf("migration %d drops %v", m.number, dropped)
		}
	}
}

func TestRehearseAPatchReleaseRunsNothing(t *testing.T) {
	// A database stamped 31 with data every modelled migration would fail on: nothing runs.
	rows := map[string][]row{
		"layerdrbdresources":  {drbdRscRow(9)},
		"resourcedefinitions": {rscDfnRow("PVC-1", "")},
		"propscontainers":     {propRow("/RSC_DFNS/PVC-1", "Linstor/Drbd/auto-block-size", "False")},
	}
	if err := rehearse(dbOf(t, rows), 31, 30); err != nil {
		t.Fatal(err)
	}
	if err := rehearse(dbOf(t, rows), 35, 30); err != nil {
		t.Fatal(err)
	}
	if err := rehearse(dbOf(t, rows), 29, 30); err == nil {
		t.Fatal("29 on an existing auto-block-size prop: want the 409")
	}
}
