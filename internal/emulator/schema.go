package emulator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/linstor-operator/linstor-operator/pkg/dbbackup"
	"github.com/linstor-operator/linstor-operator/pkg/upgrade"
)

// LINSTOR's k8s database schemas, oldest first, as at v1.33.3: each named after the
// release that introduced it (GenCrdV1_31_1.VERSION = "v1-31-1"), the name of the CRD
// version, of RES/v1_31_1/ and of GEN/GenCrdV1_31_1.java (docs/linstor-schema-history.md §1).
var schemas = []string{"v1-15-0", "v1-17-0", "v1-18-2", "v1-19-1", "v1-25-1", "v1-27-1", "v1-31-1"}

// newestSchema is GenCrdCurrent at v1.33.3.
const newestSchema = "v1-31-1"

// The 43 tables of v1-31-1 (GEN/GenCrdV1_31_1.GeneratedDatabaseTables, RES/v1_31_1/*.yaml).
var tablesV1_31_1 = []string{
	"EbsRemotes", "Files", "KeyValueStore", "LayerBcacheVolumes", "LayerCacheVolumes",
	"LayerDrbdResourceDefinitions", "LayerDrbdResources", "LayerDrbdVolumeDefinitions", "LayerDrbdVolumes",
	"LayerLuksVolumes", "LayerResourceIds", "LayerStorageVolumes", "LayerWritecacheVolumes", "LinstorRemotes",
	"NodeConnections", "NodeNetInterfaces", "NodeStorPool", "Nodes", "PropsContainers",
	"ResourceConnections", "ResourceDefinitions", "ResourceGroups", "Resources", "S3Remotes",
	"SatellitesCapacity", "Schedules", "SecAccessTypes", "SecAclMap", "SecConfiguration", "SecDfltRoles",
	"SecIdRoleMap", "SecIdentities", "SecObjectProtection", "SecRoles", "SecTypeRules", "SecTypes",
	"SpaceHistory", "StorPoolDefinitions", "TrackingDate", "VolumeConnections", "VolumeDefinitions",
	"VolumeGroups", "Volumes",
}

// tableSpan is the range of schemas a table exists in, for the tables that did not
// exist in all of them (RES/v1_*/: Schedules arrives with v1-18-2 (migration 06),
// EbsRemotes with v1-19-1 (07); migration 18 drops the OpenFlex tables, absent from
// GenCrdV1_25_1 although a stale YAML is left in RES/v1_25_1/).
var tableSpan = map[string][2]string{
	"Schedules":                        {"v1-18-2", ""},
	"EbsRemotes":                       {"v1-19-1", ""},
	"LayerOpenflexResourceDefinitions": {"v1-15-0", "v1-19-1"},
	"LayerOpenflexVolumes":             {"v1-15-0", "v1-19-1"},
}

// schemaIndex is the position of a schema in schemas, -1 for a name that is none.
func schemaIndex(schema string) int {
	return slices.Index(schemas, schema)
}

// tableIn reports whether the table of kind exists at schema.
func tableIn(kind, schema string) bool {
	at := schemaIndex(schema)
	if at < 0 {
		return false
	}
	span, limited := tableSpan[kind]
	if !limited {
		return true
	}
	if at < schemaIndex(span[0]) {
		return false
	}
	return span[1] == "" || at <= schemaIndex(span[1])
}

// tablesOf is the table set of a schema, sorted by kind; none for a name that is no
// schema.
func tablesOf(schema string) []schemaTable {
	kinds := slices.Concat(tablesV1_31_1, []string{"LayerOpenflexResourceDefinitions", "LayerOpenflexVolumes"})
	slices.Sort(kinds)
	var out []schemaTable
	for _, kind := range kinds {
		if tableIn(kind, schema) {
			out = append(out, schemaTable{plural: strings.ToLower(kind), kind: kind})
		}
	}
	return out
}

// droppedTables are the tables of from that to no longer has: the CRDs
// BaseK8sCrdMigration.updateCrdSchemaForAllTables deletes (deleteCrdSchema), rows and all.
func droppedTables(from, to string) []schemaTable {
	var out []schemaTable
	for _, t := range tablesOf(from) {
		if !tableIn(t.kind, to) {
			out = append(out, t)
		}
	}
	return out
}

// lastMigration is the highest k8s migration a LINSTOR release contains: the
// migrations are numbered by the chain (DbK8sCrd.buildMigrations), each first shipped
// in the release of migrationChain's firstRelease. A database a release's controller
// last started on stores this + 1. Pre-releases count as their release (28 is in
// 1.32.0-rc.1). Releases after 1.33.3 are not modelled: they count as 1.33.3, the last
// release read (v1.34.0-rc.1 adds 31–34 and schema v1-33-1, out of scope).
// Releases before 1.15.0 have no k8s backend.
func lastMigration(linstorVersion string) (int, error) {
	v, err := upgrade.Parse(linstorVersion)
	if err != nil {
		return 0, err
	}
	v.Pre = ""
	last := 0
	for _, m := range migrationChain {
		if !v.Less(upgrade.MustParse(m.firstRelease)) {
			last = m.number
		}
	}
	if last == 0 {
		return 0, fmt.Errorf("LINSTOR %s has no k8s database backend (its first migration ships in %s)", linstorVersion, migrationChain[0].firstRelease)
	}
	return last, nil
}

// schemaOf is the schema of a release's GenCrdCurrent: the to-schema of its last migration.
func schemaOf(linstorVersion string) (string, error) {
	last, err := lastMigration(linstorVersion)
	if err != nil {
		return "", err
	}
	return migrationChain[last-1].schema, nil
}

// schemaAt is the schema a database stamped stored holds: the to-schema of the last
// migration applied (stored-1); "" for no database (0) or one whose first migration
// never completed. A database stamped past the chain (a newer LINSTOR's, e.g. 35 from
// 1.34) is read through the newest schema modelled, as 1.33.3 reads it through
// GenCrdCurrent: the newer YAMLs keep v1-31-1 served.
func schemaAt(stored int) string {
	switch {
	case stored <= 1:
		return ""
	case stored-1 > len(migrationChain):
		return newestSchema
	}
	return migrationChain[stored-2].schema
}

// tableCRD is the CRD of table t as schema applies it: every schema up to and
// including schema that has the table, newest first, all served, schema the storage
// version, no conversion (the Kubernetes default, None), cluster-scoped, singular =
// plural (as RES/v1_31_1/*.yaml). Known columns are typed per schema; unknown fields
// are kept, so opaque rows and the emulator's own fields survive.
func tableCRD(t schemaTable, schema string) *apiextensionsv1.CustomResourceDefinition {
	var versions []apiextensionsv1.CustomResourceDefinitionVersion
	for i := schemaIndex(schema); i >= 0; i-- {
		s := schemas[i]
		if !tableIn(t.kind, s) {
			continue
		}
		versions = append(versions, apiextensionsv1.CustomResourceDefinitionVersion{
			Name: s, Served: true, Storage: s == schema,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: rowSchema(columnsOf(t.kind, s))},
		})
	}
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: t.plural + "." + dbbackup.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: dbbackup.Group, Scope: apiextensionsv1.ClusterScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: t.plural, Singular: t.plural, Kind: t.kind, ListKind: t.kind + "List",
			},
			Versions: versions,
		},
	}
}

// linstorVersionCRD is LinstorVersion.yaml: one version v1 ("hopefully never changes",
// LinstorVersionCrd.VERSION), spec.version an int32.
func linstorVersionCRD() *apiextensionsv1.CustomResourceDefinition {
	t := schemaTable{plural: "linstorversion", kind: "LinstorVersion"}
	crd := tableCRD(t, newestSchema)
	crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{
		Name: "v1", Served: true, Storage: true,
		Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: rowSchema([]column{{"version", "integer", "int32"}})},
	}}
	return crd
}

type column struct{ name, typ, format string }

// columnsOf are the typed columns of the tables the migrations between 1.31.0 and
// 1.33.3 read or write, as RES/v1_27_1 and RES/v1_31_1 list them (the same at every
// older schema); nil for the tables the emulator does not type.
func columnsOf(kind, schema string) []column {
	str := func(name string) column { return column{name, "string", ""} }
	i32 := func(name string) column { return column{name, "integer", "int32"} }
	i64 := func(name string) column { return column{name, "integer", "int64"} }
	atV1_31_1 := schemaIndex(schema) >= schemaIndex("v1-31-1")
	switch kind {
	case "PropsContainers":
		return []column{str("props_instance"), str("prop_key"), str("prop_value")}
	case "VolumeDefinitions":
		return []column{str("uuid"), str("resource_name"), str("snapshot_name"), i32("vlm_nr"), i64("vlm_size"), i64("vlm_flags")}
	case "ResourceDefinitions":
		return []column{str("uuid"), str("resource_name"), str("snapshot_name"), str("resource_dsp_name"),
			str("snapshot_dsp_name"), i64("resource_flags"), str("layer_stack"), {"resource_external_name", "string", "byte"},
			str("resource_group_name"), str("parent_uuid")}
	case "LayerResourceIds":
		return []column{i32("layer_resource_id"), str("node_name"), str("resource_name"), str("snapshot_name"),
			str("layer_resource_kind"), i32("layer_resource_parent_id"), str("layer_resource_suffix"),
			{"layer_resource_suspended", "boolean", ""}}
	case "LayerDrbdResources":
		cols := []column{i32("layer_resource_id"), i32("peer_slots"), i32("al_stripes"), i64("al_stripe_size"), i64("flags"), i32("node_id")}
		if atV1_31_1 {
			cols = append(cols, str("tcp_port_list"))
		}
		return cols
	case "LayerDrbdResourceDefinitions":
		return []column{str("resource_name"), str("resource_name_suffix"), str("snapshot_name"), i32("peer_slots"),
			i32("al_stripes"), i64("al_stripe_size"), i32("tcp_port"), str("transport_type"), str("secret")}
	case "ResourceConnections":
		cols := []column{str("uuid"), str("node_name_src"), str("node_name_dst"), str("resource_name"), str("snapshot_name"), i64("flags")}
		if atV1_31_1 {
			return append(cols, i32("tcp_port_src"), i32("tcp_port_dst"))
		}
		return append(cols, i32("tcp_port"))
	}
	return nil
}

func rowSchema(columns []column) *apiextensionsv1.JSONSchemaProps {
	spec := apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}
	if len(columns) > 0 {
		spec.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
		for _, c := range columns {
			spec.Properties[c.name] = apiextensionsv1.JSONSchemaProps{Type: c.typ, Format: c.format}
		}
	}
	return &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec}}
}

// deriveKey is an object's name: GenCrdV1_31_1.deriveKey, the lowercase hex SHA-256 of
// the UTF-8 formatted primary key. The server appends a counter and hashes again on a
// collision among the keys it has used; SHA-256 does not collide in practice, so that
// branch is not modelled.
func deriveKey(formattedPrimaryKey string) string {
	sum := sha256.Sum256([]byte(formattedPrimaryKey))
	return hex.EncodeToString(sum[:])
}

// primaryKeyColumns is each typed table's primary key, in the order of its PK_FORMAT
// (GenCrdV1_31_1.<Table>Spec: "%s:%s" for PropsContainers, "%d" for LayerResourceIds, …).
var primaryKeyColumns = map[string][]string{
	"propscontainers":              {"props_instance", "prop_key"},
	"volumedefinitions":            {"resource_name", "snapshot_name", "vlm_nr"},
	"resourcedefinitions":          {"resource_name", "snapshot_name"},
	"layerresourceids":             {"layer_resource_id"},
	"layerdrbdresources":           {"layer_resource_id"},
	"layerdrbdresourcedefinitions": {"resource_name", "resource_name_suffix", "snapshot_name"},
	"resourceconnections":          {"node_name_src", "node_name_dst", "resource_name", "snapshot_name"},
	"resources":                    {"node_name", "resource_name", "snapshot_name"},
	"nodes":                        {"node_name"},
	"nodeconnections":              {"node_name_src", "node_name_dst"},
}

// formatPrimaryKey is the <Table>Spec constructor's String.format(PK_FORMAT, …): the
// key columns joined by ":", integers in decimal (%d), a null as "null" (%s of null).
func formatPrimaryKey(plural string, r row) (string, error) {
	cols, ok := primaryKeyColumns[plural]
	if !ok {
		return "", fmt.Errorf("table %s: primary key not modelled", plural)
	}
	parts := make([]string, len(cols))
	for i, col := range cols {
		switch v := r[col].(type) {
		case nil:
			parts[i] = "null"
		case string:
			parts[i] = v
		default:
			n, ok := int64Column(r, col)
			if !ok {
				return "", fmt.Errorf("table %s: key column %s is %T", plural, col, v)
			}
			parts[i] = fmt.Sprint(n)
		}
	}
	return strings.Join(parts, ":"), nil
}

// objectName is the name of a typed table's row: deriveKey of its formatted primary key.
func objectName(plural string, r row) (string, error) {
	pk, err := formatPrimaryKey(plural, r)
	if err != nil {
		return "", err
	}
	return deriveKey(pk), nil
}

// linstorVersionObject is LinstorVersion/version (LinstorVersionSpec.getLinstorKey),
// holding the number of the last migration applied + 1.
func linstorVersionObject(stored int) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"version": int64(stored)}}}
	u.SetAPIVersion(dbbackup.Group + "/v1")
	u.SetKind("LinstorVersion")
	u.SetName("version")
	return u
}

// readStoredMigration is the stored version: spec.version of LinstorVersion/version,
// 0 when its CRD or the object is missing (ControllerK8sCrdTransactionMgr.getDbVersion
// answers null, DbK8sCrd.dbVersion 0: no database).
func readStoredMigration(ctx context.Context, c client.Client) (int, error) {
	u := linstorVersionObject(0)
	err := c.Get(ctx, client.ObjectKey{Name: "version"}, u)
	if apierrors.IsNotFound(err) || isNoKind(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	spec, _ := u.Object["spec"].(map[string]any)
	n, ok := int64Column(spec, "version")
	if !ok {
		return 0, fmt.Errorf("LinstorVersion/version has no spec.version")
	}
	return int(n), nil
}

// stampVersion stores the version (K8sCrdTransaction.updateLinstorVersion: an
// immediate createOrReplace), creating the LinstorVersion CRD when it is missing, as
// DbK8sCrd.migrate applies it on an empty database.
func stampVersion(ctx context.Context, c client.Client, stored int) error {
	if err := c.Create(ctx, linstorVersionCRD()); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return retryUntilServed(ctx, func() error {
		u := linstorVersionObject(stored)
		err := c.Create(ctx, u)
		if !apierrors.IsAlreadyExists(err) {
			return err
		}
		cur := linstorVersionObject(0)
		if err := c.Get(ctx, client.ObjectKey{Name: "version"}, cur); err != nil {
			return err
		}
		u.SetResourceVersion(cur.GetResourceVersion())
		return c.Update(ctx, u)
	})
}
