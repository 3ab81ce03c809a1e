package envtest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// LINSTOR's k8s database as a test reads it, independently of the emulator's and the
// operator's code: every CRD of LINSTOR's group with its versions, and every object's
// spec. Tests compare it before and after an upgrade hop against what LINSTOR's
// migrations do (docs/linstor-schema-history.md), never against the code under test.

const linstorGroup = "internal.linstor.linbit.com"

// LinstorDatabase is LINSTOR's k8s database at one moment.
type LinstorDatabase struct {
	// Tables by plural: the CRD's versions and rows.
	Tables map[string]LinstorTable
}

// LinstorTable is one table: its CRD versions (served ones, sorted), the
// storage version, and its rows by object name.
type LinstorTable struct {
	Served  []string
	Storage string
	Rows    map[string]map[string]any
}

// ReadLinstorDatabase lists every CRD of LINSTOR's group and every object of each.
func ReadLinstorDatabase(ctx context.Context, c client.Client) (*LinstorDatabase, error) {
	var crds apiextensionsv1.CustomResourceDefinitionList
	if err := c.List(ctx, &crds); err != nil {
		return nil, err
	}
	db := &LinstorDatabase{Tables: map[string]LinstorTable{}}
	for _, crd := range crds.Items {
		if crd.Spec.Group != linstorGroup {
			continue
		}
		t := LinstorTable{Rows: map[string]map[string]any{}}
		for _, v := range crd.Spec.Versions {
			if v.Served {
				t.Served = append(t.Served, v.Name)
			}
			if v.Storage {
				t.Storage = v.Name
			}
		}
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(linstorGroup + "/" + t.Storage)
		list.SetKind(crd.Spec.Names.ListKind)
		if err := c.List(ctx, list); err != nil {
			return nil, fmt.Errorf("listing %s: %w", crd.Name, err)
		}
		for _, o := range list.Items {
			spec, _, _ := unstructured.NestedMap(o.Object, "spec")
			t.Rows[o.GetName()] = spec
		}
		sort.Strings(t.Served)
		db.Tables[crd.Spec.Names.Plural] = t
	}
	return db, nil
}

// StoredVersion is LinstorVersion/version's spec.version (the next migration's number),
// 0 without one.
func (db *LinstorDatabase) StoredVersion() int64 {
	for _, r := range db.Tables["linstorversion"].Rows {
		if v, ok := r["version"].(int64); ok {
			return v
		}
	}
	return 0
}

// Select returns the rows of table whose columns equal every pair of match.
func (db *LinstorDatabase) Select(table string, match map[string]any) []map[string]any {
	var out []map[string]any
	names := slices.Sorted(maps.Keys(db.Tables[table].Rows))
	for _, name := range names {
		r := db.Tables[table].Rows[name]
		ok := true
		for k, v := range match {
			ok = ok && fmt.Sprint(r[k]) == fmt.Sprint(v)
		}
		if ok {
			out = append(out, r)
		}
	}
	return out
}

// Diff lists what differs between db and want, table by table: CRD versions, missing
// and extra tables and rows, changed rows. Empty when equal.
func (db *LinstorDatabase) Diff(want *LinstorDatabase) []string {
	var out []string
	for _, plural := range unionKeys(db.Tables, want.Tables) {
		got, haveGot := db.Tables[plural]
		w, haveWant := want.Tables[plural]
		switch {
		case !haveGot:
			out = append(out, "missing table "+plural)
			continue
		case !haveWant:
			out = append(out, "extra table "+plural)
			continue
		}
		if got.Storage != w.Storage || !slices.Equal(got.Served, w.Served) {
			out = append(out, fmt.Sprintf("table %s: versions %v storage %s, want %v storage %s", plural, got.Served, got.Storage, w.Served, w.Storage))
		}
		for _, name := range unionKeys(got.Rows, w.Rows) {
			g, okG := got.Rows[name]
			x, okW := w.Rows[name]
			switch {
			case !okG:
				out = append(out, fmt.Sprintf("%s/%s missing: %v", plural, name, x))
			case !okW:
				out = append(out, fmt.Sprintf("%s/%s extra: %v", plural, name, g))
			case fmt.Sprint(g) != fmt.Sprint(x):
				out = append(out, fmt.Sprintf("%s/%s changed:\n  got  %v\n  want %v", plural, name, g, x))
			}
		}
	}
	return out
}

// Clone copies db deeply enough to edit rows of the copy.
func (db *LinstorDatabase) Clone() *LinstorDatabase {
	out := &LinstorDatabase{Tables: map[string]LinstorTable{}}
	for plural, t := range db.Tables {
		c := LinstorTable{Served: slices.Clone(t.Served), Storage: t.Storage, Rows: map[string]map[string]any{}}
		for name, r := range t.Rows {
			c.Rows[name] = maps.Clone(r)
		}
		out.Tables[plural] = c
	}
	return out
}

func unionKeys[V any](a, b map[string]V) []string {
	set := map[string]bool{}
	for k := range a {
		set[k] = true
	}
	for k := range b {
		set[k] = true
	}
	out := slices.Collect(maps.Keys(set))
	sort.Strings(out)
	return out
}

// Upper is how LINSTOR keys names in its database (resource and node names upper-cased).
func Upper(s string) string { return strings.ToUpper(s) }
