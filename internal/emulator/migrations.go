package emulator

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/linstor-operator/linstor-operator/pkg/dbbackup"
)

// LINSTOR's k8s migrations at v1.33.3 (MIG/Migration_NN_*.java, docs/linstor-schema-history.md
// §2): a chain numbered from 1, migration N taking a database stamped N to N+1
// (BaseK8sCrdMigration.getNextVersion). Those whose to-schema differs from the one
// before change the schema (the (fromCtx, toCtx) constructor, updateCrdSchemaForAllTables).
//
// Modelled with their data: 18 (drops the OpenFlex tables), 28, 29 and 30 (§3). The
// others are steps of the chain that change the schema where the source says so and
// transform no data: they ran before the releases the operator supports (1.29+), except
// 23–27, which rename or add props the emulator's data does not contain.
type migration struct {
	number       int
	class        string // MIG/<class>.java
	schema       string // the to-context's GenCrdV*
	firstRelease string // the first release containing it (git ls-tree of MIG/ per tag)
	// reads are the tables the data transform reads; the runner lists only those.
	reads []string
	// transform computes the rows the migration writes and deletes from the rows it
	// reads (nil: no data modelled). Pure: it fails where the source throws.
	transform func(db dbTables) (rowChanges, error)
}

// rowChanges are the rows a migration's transaction commits.
type rowChanges struct {
	upserts dbTables            // written whole (txTo.upsert: create or replace, exactly these columns)
	creates dbTables            // txTo.create: the row must not exist (409 at commit otherwise)
	deletes map[string][]string // table plural -> object names (txTo.delete)
}

func (ch *rowChanges) put(into *dbTables, plural, name string, r row) {
	if *into == nil {
		*into = dbTables{}
	}
	if (*into)[plural] == nil {
		(*into)[plural] = tableRows{}
	}
	(*into)[plural][name] = r
}

func (ch *rowChanges) upsert(plural, name string, r row) { ch.put(&ch.upserts, plural, name, r) }
func (ch *rowChanges) create(plural, name string, r row) { ch.put(&ch.creates, plural, name, r) }
func (ch *rowChanges) delete(plural, name string) {
	if ch.deletes == nil {
		ch.deletes = map[string][]string{}
	}
	ch.deletes[plural] = append(ch.deletes[plural], name)
}

var migrationChain = []migration{
	{number: 1, class: "Migration_01_v1_15_0_init", schema: "v1-15-0", firstRelease: "1.16.0"},
	{number: 2, class: "Migration_02_v1_15_0_fixRollbackSpec", schema: "v1-15-0", firstRelease: "1.18.0"},
	{number: 3, class: "Migration_03_v1_17_0_ChangeKeysFromBase32ToSha256", schema: "v1-17-0", firstRelease: "1.18.0"},
	{number: 4, class: "Migration_04_v1_17_0_SpaceTrackingV2", schema: "v1-17-0", firstRelease: "1.18.0"},
	{number: 5, class: "Migration_05_v1_17_0_RenameNetComNamespace", schema: "v1-17-0", firstRelease: "1.18.1"},
	{number: 6, class: "Migration_06_v1_18_2_AddScheduleTable", schema: "v1-18-2", firstRelease: "1.19.0"},
	{number: 7, class: "Migration_07_v1_19_1_AddEbsRemoteTable", schema: "v1-19-1", firstRelease: "1.20.0"},
	{number: 8, class: "Migration_08_v1_19_1_CleanupOrphanedSnapAndSnapVlmProps", schema: "v1-19-1", firstRelease: "1.20.0"},
	{number: 9, class: "Migration_09_v1_19_1_RandomizeLocalClusterId", schema: "v1-19-1", firstRelease: "1.20.0"},
	{number: 10, class: "Migration_10_v1_19_1_CleanupOrphanedObjects", schema: "v1-19-1", firstRelease: "1.20.1"},
	{number: 11, class: "Migration_11_v1_19_1_DisableResyncAfter", schema: "v1-19-1", firstRelease: "1.21.1"},
	{number: 12, class: "Migration_12_v1_19_1_AddWinDRBDToAllowedVerifyAlgoList", schema: "v1-19-1", firstRelease: "1.24.0"},
	{number: 13, class: "Migration_13_v1_19_1_UpperCasePropsInstance", schema: "v1-19-1", firstRelease: "1.24.0"},
	{number: 14, class: "Migration_14_v1_19_1_CleanupFsmName", schema: "v1-19-1", firstRelease: "1.24.0"},
	{number: 15, class: "Migration_15_v1_19_1_AddEmptySnapNameToLRI", schema: "v1-19-1", firstRelease: "1.24.0"},
	{number: 16, class: "Migration_16_v1_19_1_RestoreInvisbleKvs", schema: "v1-19-1", firstRelease: "1.24.0"},
	{number: 17, class: "Migration_17_v1_19_1_CleanupOrphanedAcls", schema: "v1-19-1", firstRelease: "1.24.0"},
	// 18's own deletes of the OpenFlex rows go through txFrom, which nothing marks dirty,
	// so they are not committed; the CRD deletes of its schema change remove the rows.
	{number: 18, class: "Migration_18_v1_25_1_DropOpenflexTables", schema: "v1-25-1", firstRelease: "1.26.0"},
	{number: 19, class: "Migration_19_v1_25_1_AddPeerSlotsToRscGrp", schema: "v1-25-1", firstRelease: "1.26.0"},
	{number: 20, class: "Migration_20_v1_25_1_FixSpaceHistoryDates", schema: "v1-25-1", firstRelease: "1.27.0"},
	{number: 21, class: "Migration_21_v1_25_1_UpdateAllowedVerifyAlgoList", schema: "v1-25-1", firstRelease: "1.27.1"},
	{number: 22, class: "Migration_22_v1_27_1_AddXReplicasOnDifferent", schema: "v1-27-1", firstRelease: "1.28.0"},
	{number: 23, class: "Migration_23_v1_27_1_SplitSnapPropsFromRscPropsAndChangeInstanceNames", schema: "v1-27-1", firstRelease: "1.30.0"},
	{number: 24, class: "Migration_24_v1_27_1_SplitSnapPropsFromRscProps_Fixes", schema: "v1-27-1", firstRelease: "1.30.2"},
	{number: 25, class: "Migration_25_v1_27_1_SplitSnapPropsFromRscProps_FixRscGrpInstanceName", schema: "v1-27-1", firstRelease: "1.30.4"},
	{number: 26, class: "Migration_26_v1_27_1_AutoQuorumInerhitRework", schema: "v1-27-1", firstRelease: "1.31.0"},
	{number: 27, class: "Migration_27_v1_27_1_CreateSnapshotsFromZfsClones", schema: "v1-27-1", firstRelease: "1.31.0"},
	{number: 28, class: "Migration_28_v1_31_1_MoveTcpPortsToNodes", schema: "v1-31-1", firstRelease: "1.32.0",
		reads: []string{"layerdrbdresourcedefinitions", "resourceconnections", "layerresourceids", "layerdrbdresources"}, transform: moveTCPPortsToNodes},
	{number: 29, class: "Migration_29_v1_31_1_DisableAutoBlockSizesForExistingResources", schema: "v1-31-1", firstRelease: "1.33.0",
		reads: []string{"resourcedefinitions", "propscontainers"}, transform: disableAutoBlockSizes},
	{number: 30, class: "Migration_30_v1_31_1_NewUpToDateMechanic", schema: "v1-31-1", firstRelease: "1.33.2",
		reads: []string{"volumedefinitions", "propscontainers"}, transform: newUpToDateMechanic},
}

// fromSchema is the schema a migration starts from: its predecessor's ("" for 1, which
// starts on an empty database).
func (m migration) fromSchema() string {
	if m.number == 1 {
		return ""
	}
	return migrationChain[m.number-2].schema
}

func (m migration) changesSchema() bool { return m.schema != m.fromSchema() }

// migrationsToRun are the migrations a controller whose last migration is last runs on
// a database stamped stored (DbK8sCrd.migrate: while dbVersion <= highestKey; key 0 is
// migration 1): none when stored > last, a newer or up-to-date database.
func migrationsToRun(stored, last int) []migration {
	var out []migration
	for n := max(stored, 1); n <= last && n <= len(migrationChain); n++ {
		out = append(out, migrationChain[n-1])
	}
	return out
}

// changesOf is what migration m commits on db: its data transform's rows, plus the
// tables its schema change drops.
func changesOf(m migration, db dbTables) (rowChanges, []schemaTable, error) {
	var ch rowChanges
	if m.transform != nil {
		var err error
		if ch, err = m.transform(db); err != nil {
			return rowChanges{}, nil, err
		}
	}
	var dropped []schemaTable
	if m.changesSchema() && m.fromSchema() != "" {
		dropped = droppedTables(m.fromSchema(), m.schema)
	}
	return ch, dropped, nil
}

// conflictError is the answer to txTo.create of a row that exists: fabric8's create
// gets a 409 at commit (K8sCachingClient.create).
func conflictError(plural, name string) error {
	return apierrors.NewAlreadyExists(schemaGroupResource(plural), name)
}

// applyChanges applies a migration's changes to db in memory, failing as the commit
// would: a create of an existing row is a 409.
func applyChanges(db dbTables, ch rowChanges, dropped []schemaTable) error {
	for plural, rows := range ch.creates {
		for name := range rows {
			if _, exists := db[plural][name]; exists {
				return conflictError(plural, name)
			}
		}
	}
	for _, into := range []dbTables{ch.creates, ch.upserts} {
		for plural, rows := range into {
			if db[plural] == nil {
				db[plural] = tableRows{}
			}
			for name, r := range rows {
				db[plural][name] = maps.Clone(r)
			}
		}
	}
	for plural, names := range ch.deletes {
		for _, name := range names {
			delete(db[plural], name)
		}
	}
	for _, t := range dropped {
		delete(db, t.plural)
	}
	return nil
}

// migrationFailed wraps a step's failure as DbK8sCrd.migrate does.
func migrationFailed(m migration, err error) error {
	return fmt.Errorf("Exception occurred during migration %d (%s): %w", m.number, m.class, err)
}

// rehearse runs the migrations of a controller whose last migration is last on a copy
// of db stamped stored: the same transforms as migrateDatabase, so it fails where the
// real start would, and db is left as it was.
func rehearse(db dbTables, stored, last int) error {
	copied := db.clone()
	for _, m := range migrationsToRun(stored, last) {
		ch, dropped, err := changesOf(m, copied)
		if err == nil {
			err = applyChanges(copied, ch, dropped)
		}
		if err != nil {
			return migrationFailed(m, err)
		}
	}
	return nil
}

// --- 28: MIG/Migration_28_v1_31_1_MoveTcpPortsToNodes.migrateImpl ---

// moveTCPPortsToNodes gives every LayerDrbdResources row a tcp_port_list and every
// ResourceConnections row tcp_port_src/dst (updateDrbdRscTcpPortList,
// updateRscConnDrbdProxyPorts), both upserted with exactly their v1-31-1 columns.
func moveTCPPortsToNodes(db dbTables) (rowChanges, error) {
	// The DRBD rsc-dfn data of resources (no snapshot, no suffix), by resource name.
	portByResource := map[string]any{}
	for _, rd := range db["layerdrbdresourcedefinitions"] {
		if stringColumn(rd, "snapshot_name") == "" && stringColumn(rd, "resource_name_suffix") == "" {
			portByResource[stringColumn(rd, "resource_name")] = rd["tcp_port"]
		}
	}
	lriByID := map[int64]row{}
	for _, lri := range db["layerresourceids"] {
		if id, ok := int64Column(lri, "layer_resource_id"); ok {
			lriByID[id] = lri
		}
	}
	var ch rowChanges
	for _, name := range sortedNames(db["layerdrbdresources"]) {
		drbd := db["layerdrbdresources"][name]
		id, _ := int64Column(drbd, "layer_resource_id")
		lri, ok := lriByID[id]
		if !ok {
			return rowChanges{}, fmt.Errorf("DatabaseException: LayerResourceId %d not found!", id)
		}
		portList := "[-1]" // a snapshot's DRBD resource
		if stringColumn(lri, "snapshot_name") == "" {
			port, ok := portByResource[stringColumn(lri, "resource_name")]
			if !ok {
				// oldLayerDrbdRscDfnDataByRscName.get(…).tcpPort on a missing rsc-dfn
				return rowChanges{}, fmt.Errorf("NullPointerException: Cannot read field \"tcpPort\" because the return value of \"java.util.HashMap.get(Object)\" is null (LayerResourceId %d, resource %s has no DRBD resource definition)", id, stringColumn(lri, "resource_name"))
			}
			portList = "[" + javaString(port) + "]"
		}
		updated := row{"layer_resource_id": drbd["layer_resource_id"], "tcp_port_list": portList}
		for _, col := range []string{"peer_slots", "al_stripes", "al_stripe_size", "flags", "node_id"} {
			updated[col] = drbd[col]
		}
		ch.upsert("layerdrbdresources", name, updated)
	}
	for name, conn := range db["resourceconnections"] {
		updated := row{"tcp_port_src": conn["tcp_port"], "tcp_port_dst": conn["tcp_port"]}
		for _, col := range []string{"uuid", "node_name_src", "node_name_dst", "resource_name", "snapshot_name", "flags"} {
			updated[col] = conn[col]
		}
		ch.upsert("resourceconnections", name, updated)
	}
	return ch, nil
}

// javaString is "" + v in Java: a null Integer is "null".
func javaString(v any) string {
	if v == nil {
		return "null"
	}
	if n, ok := int64Column(row{"v": v}, "v"); ok {
		return fmt.Sprint(n)
	}
	return fmt.Sprint(v)
}

// --- 29: MIG/Migration_29_v1_31_1_DisableAutoBlockSizesForExistingResources.migrateImpl ---

// disableAutoBlockSizes creates Linstor/Drbd/auto-block-size=False on every resource
// definition named in ResourceDefinitions (snapshot definitions included, names
// de-duplicated; Migration_2025_10_28_….getPropsToInsert, instance "/RSC_DFNS/" +
// name.toUpperCase()). It is a create: an existing prop fails the commit with a 409.
func disableAutoBlockSizes(db dbTables) (rowChanges, error) {
	var ch rowChanges
	seen := map[string]bool{}
	for _, rd := range db["resourcedefinitions"] {
		name := stringColumn(rd, "resource_name")
		if seen[name] {
			continue
		}
		seen[name] = true
		prop := row{"props_instance": "/RSC_DFNS/" + strings.ToUpper(name), "prop_key": "Linstor/Drbd/auto-block-size", "prop_value": "False"}
		key, err := objectName("propscontainers", prop)
		if err != nil {
			return rowChanges{}, err
		}
		if _, exists := db["propscontainers"][key]; exists {
			return rowChanges{}, conflictError("propscontainers", key)
		}
		ch.create("propscontainers", key, prop)
	}
	return ch, nil
}

// --- 30: MIG/Migration_30_v1_31_1_NewUpToDateMechanic.migrateImpl ---

const (
	propDrbdPrimarySetOn        = "DrbdPrimarySetOn"               // PROP_KEY_OLD_DRBD_PRIMARY_SET_ON
	propInitialUpToDateOn       = "Linstor/Drbd/InitialUptoDateOn" // PROP_KEY_NEW_LINSTOR_DRBD_INITIAL_UPTODATE_ON
	vlmDfnFlagDrbdInit    int64 = 1 << 5                           // VD_FLAG_DRBD_INIT
)

// newUpToDateMechanic moves each resource definition's DrbdPrimarySetOn to its volume
// definitions as Linstor/Drbd/InitialUptoDateOn, sets DRBD_INIT on them (not on
// snapshot volume definitions, which are rewritten unchanged), and deletes every
// DrbdPrimarySetOn prop on any instance (Migration_2025_12_31_NewUpTodateMechanic
// .getMigrationResult, apply, deleteObsoleteRscDfnPrimaryOnProp).
func newUpToDateMechanic(db dbTables) (rowChanges, error) {
	props := map[string]map[string]string{} // instance -> key -> value
	for _, p := range db["propscontainers"] {
		instance := stringColumn(p, "props_instance")
		if props[instance] == nil {
			props[instance] = map[string]string{}
		}
		props[instance][stringColumn(p, "prop_key")] = stringColumn(p, "prop_value")
	}
	var ch rowChanges
	for name, vd := range db["volumedefinitions"] {
		rsc, snap := strings.ToUpper(stringColumn(vd, "resource_name")), strings.ToUpper(stringColumn(vd, "snapshot_name"))
		nr, _ := int64Column(vd, "vlm_nr")
		rscDfnInstance := "/RSC_DFNS/" + rsc
		vlmDfnInstance := fmt.Sprintf("/VLM_DFNS/%s/%d", rsc, nr)
		if strings.TrimSpace(snap) != "" {
			rscDfnInstance = "/SNAP_DFNS_RSC_DFN/" + rsc + "/" + snap
			vlmDfnInstance = fmt.Sprintf("/SNAP_VLM_DFNS_VLM_DFN/%s/%s/%d", rsc, snap, nr)
		}
		primary, ok := props[rscDfnInstance][propDrbdPrimarySetOn]
		if !ok {
			continue
		}
		prop := row{"props_instance": vlmDfnInstance, "prop_key": propInitialUpToDateOn, "prop_value": primary}
		key, err := objectName("propscontainers", prop)
		if err != nil {
			return rowChanges{}, err
		}
		ch.upsert("propscontainers", key, prop)
		flags, _ := int64Column(vd, "vlm_flags")
		if strings.TrimSpace(snap) == "" {
			flags |= vlmDfnFlagDrbdInit
		}
		updated := row{"vlm_flags": flags}
		for _, col := range []string{"uuid", "resource_name", "snapshot_name", "vlm_nr", "vlm_size"} {
			updated[col] = vd[col]
		}
		ch.upsert("volumedefinitions", name, updated)
	}
	for _, name := range sortedNames(db["propscontainers"]) {
		if stringColumn(db["propscontainers"][name], "prop_key") == propDrbdPrimarySetOn {
			ch.delete("propscontainers", name)
		}
	}
	return ch, nil
}

func sortedNames(rows tableRows) []string {
	return slices.Sorted(maps.Keys(rows))
}

// --- The runner ---

// migrationHooks are the test hooks a migration run honours.
type migrationHooks struct {
	failNext bool // the first step fails in its commit, after its first row write (rolled back)
}

// errInjectedMigrationFailure marks a step failed by migrationHooks.failNext.
var errInjectedMigrationFailure = errors.New("migration failed (injected)")

// migrateDatabase runs the migrations stored … last against the API server as
// DbK8sCrd.migrate does: each migration one step, LinstorVersion stamped n+1 after each
// (K8sCrdTransaction.updateLinstorVersion). A schema-changing step first applies the new
// schema's CRDs (BaseK8sCrdMigration.updateCrdSchemaForAllTables: new storage version,
// new tables, dropped tables' CRDs deleted, not transactional); then its transform reads
// the rows it needs and the rows it changes are committed, rolled back when the commit
// fails. A failing step stops the run: its CRDs stay applied, the version stays at the
// step's number, and the next start resumes there. A database stamped past last (a newer
// controller's) is left alone, as is one already at last+1. Returns the stored version
// reached.
func migrateDatabase(ctx context.Context, c client.Client, stored, last int, alive fence, inject migrationHooks) (int, error) {
	for _, m := range migrationsToRun(stored, last) {
		if err := runStep(ctx, c, m, alive, inject); err != nil {
			return stored, migrationFailed(m, err)
		}
		inject.failNext = false
		if err := alive(ctx); err != nil {
			return stored, err
		}
		if err := stampVersion(ctx, c, m.number+1); err != nil {
			return stored, fmt.Errorf("stamping the database version %d after migration %d: %w", m.number+1, m.number, err)
		}
		stored = m.number + 1
	}
	return stored, nil
}

// runStep is one migration: read, schema change, transform, commit.
func runStep(ctx context.Context, c client.Client, m migration, alive fence, inject migrationHooks) error {
	// The transform's inputs are read in the from-schema (28 reads through GenCrdV1_27_1
	// before its schema change); stored rows are the same through either version.
	db := dbTables{}
	for _, plural := range m.reads {
		rows, err := readTableRows(ctx, c, plural)
		if err != nil {
			return err
		}
		db[plural] = rows
	}
	if m.changesSchema() {
		if err := applySchema(ctx, c, m.fromSchema(), m.schema, alive); err != nil {
			return err
		}
	}
	ch, _, err := changesOf(m, db)
	if err != nil {
		return err
	}
	return commitChanges(ctx, c, m.schema, db, ch, alive, inject.failNext)
}

// applySchema applies every table CRD of schema to (created, or its version list
// replaced), waits until each is listed in the new version, then deletes the CRDs of
// the tables from had that to no longer has.
func applySchema(ctx context.Context, c client.Client, from, to string, alive fence) error {
	for _, t := range tablesOf(to) {
		if err := alive(ctx); err != nil {
			return err
		}
		if err := applyCRD(ctx, c, tableCRD(t, to)); err != nil {
			return fmt.Errorf("Failed to update CRDs: %s: %w", t.plural, err)
		}
	}
	for _, t := range tablesOf(to) {
		if err := retryUntilServed(ctx, func() error {
			list := &unstructured.UnstructuredList{}
			list.SetAPIVersion(dbbackup.Group + "/" + to)
			list.SetKind(t.kind + "List")
			return c.List(ctx, list, client.Limit(1))
		}); err != nil {
			return fmt.Errorf("Failed to update CRDs: %s not served at %s: %w", t.plural, to, err)
		}
	}
	if from == "" {
		return nil
	}
	for _, t := range droppedTables(from, to) {
		if err := alive(ctx); err != nil {
			return err
		}
		crd := tableCRD(t, from)
		if err := c.Delete(ctx, crd); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting the CRD of dropped table %s: %w", t.plural, err)
		}
		// The server's crd.delete() does not wait; the emulator does, so that the step
		// ends with the table gone (the API server deletes its rows first).
		if err := waitGone(ctx, c, crd); err != nil {
			return fmt.Errorf("deleting the CRD of dropped table %s: %w", t.plural, err)
		}
	}
	return nil
}

func waitGone(ctx context.Context, c client.Client, obj client.Object) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		case time.Now().After(deadline):
			return fmt.Errorf("%s still present after 30s", obj.GetName())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// applyCRD creates the CRD or replaces its spec, as a forced server-side apply of the
// YAML does (BaseK8sCrdMigration.createOrReplaceCrdSchema).
func applyCRD(ctx context.Context, c client.Client, want *apiextensionsv1.CustomResourceDefinition) error {
	for {
		err := c.Create(ctx, want.DeepCopy())
		if !apierrors.IsAlreadyExists(err) {
			return err
		}
		cur := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(want), cur); err != nil {
			return err
		}
		cur.Spec = want.Spec
		err = c.Update(ctx, cur)
		if !apierrors.IsConflict(err) {
			return err
		}
	}
}

// readTableRows lists a table's rows (in the CRD's storage version) as typed rows.
func readTableRows(ctx context.Context, c client.Client, plural string) (tableRows, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: plural + "." + dbbackup.Group}, crd); err != nil {
		return nil, err
	}
	version := crd.Spec.Versions[0].Name
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			version = v.Name
		}
	}
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion(dbbackup.Group + "/" + version)
	list.SetKind(crd.Spec.Names.Kind + "List")
	if err := retryUntilServed(ctx, func() error { return c.List(ctx, list) }); err != nil {
		return nil, err
	}
	out := tableRows{}
	for _, o := range list.Items {
		spec, _ := o.Object["spec"].(map[string]any)
		out[o.GetName()] = row(spec)
	}
	return out, nil
}

// commitChanges writes a step's rows in schema, as ControllerK8sCrdTransactionMgr.commit
// (creates, replaces, deletes, one request each). When a write fails, the rows already
// written are put back from their pre-images in before, as ControllerK8sCrdRollbackMgr
// restores them, and the write's error is returned. failAfterFirst injects that failure.
func commitChanges(ctx context.Context, c client.Client, schema string, before dbTables, ch rowChanges, alive fence, failAfterFirst bool) error {
	type write struct {
		plural, name string
		r            row  // nil: delete
		mustCreate   bool // txTo.create
	}
	var writes []write
	for _, into := range []struct {
		rows   dbTables
		create bool
	}{{ch.creates, true}, {ch.upserts, false}} {
		for _, plural := range slices.Sorted(maps.Keys(into.rows)) {
			for _, name := range sortedNames(into.rows[plural]) {
				writes = append(writes, write{plural, name, into.rows[plural][name], into.create})
			}
		}
	}
	for _, plural := range slices.Sorted(maps.Keys(ch.deletes)) {
		for _, name := range ch.deletes[plural] {
			writes = append(writes, write{plural: plural, name: name})
		}
	}
	var done []write
	var err error
	for i, w := range writes {
		if err = alive(ctx); err != nil {
			break
		}
		switch {
		case w.r == nil:
			err = deleteRow(ctx, c, schema, w.plural, w.name)
		case w.mustCreate:
			err = createRow(ctx, c, schema, w.plural, w.name, w.r)
		default:
			err = putRow(ctx, c, schema, w.plural, w.name, w.r)
		}
		if err != nil {
			break
		}
		done = append(done, w)
		if failAfterFirst && i == 0 {
			err = errInjectedMigrationFailure
			break
		}
	}
	if failAfterFirst && len(writes) == 0 {
		err = errInjectedMigrationFailure
	}
	if err == nil {
		return nil
	}
	// Roll back what landed, newest first; a row that cannot be restored is reported.
	var rollbackErrs []error
	for i := len(done) - 1; i >= 0; i-- {
		w := done[i]
		pre, existed := before[w.plural][w.name]
		var rbErr error
		if existed {
			rbErr = putRow(ctx, c, schema, w.plural, w.name, pre)
		} else {
			rbErr = deleteRow(ctx, c, schema, w.plural, w.name)
		}
		if rbErr != nil {
			rollbackErrs = append(rollbackErrs, fmt.Errorf("rolling back %s/%s: %w", w.plural, w.name, rbErr))
		}
	}
	return errors.Join(append([]error{err}, rollbackErrs...)...)
}

func migrationRowObject(schema, plural, name string, r row) *unstructured.Unstructured {
	spec := map[string]any{}
	for col, v := range r {
		if v != nil { // the API server prunes a null in a column that is not nullable
			spec[col] = v
		}
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(dbbackup.Group + "/" + schema)
	u.SetKind(kindOf(plural))
	u.SetName(name)
	return u
}

// kindOf is the kind of a table plural (LinstorVersion's too).
func kindOf(plural string) string {
	for _, kind := range slices.Concat(tablesV1_31_1, []string{"LayerOpenflexResourceDefinitions", "LayerOpenflexVolumes", "LinstorVersion"}) {
		if strings.ToLower(kind) == plural {
			return kind
		}
	}
	return plural
}

func schemaGroupResource(plural string) k8sschema.GroupResource {
	return k8sschema.GroupResource{Group: dbbackup.Group, Resource: plural}
}

// createRow is txTo.create: a 409 when the row exists.
func createRow(ctx context.Context, c client.Client, schema, plural, name string, r row) error {
	return retryUntilServed(ctx, func() error { return c.Create(ctx, migrationRowObject(schema, plural, name, r)) })
}

// putRow is txTo.upsert: create, or replace the whole object.
func putRow(ctx context.Context, c client.Client, schema, plural, name string, r row) error {
	return retryUntilServed(ctx, func() error {
		u := migrationRowObject(schema, plural, name, r)
		err := c.Create(ctx, u)
		if !apierrors.IsAlreadyExists(err) {
			return err
		}
		cur := migrationRowObject(schema, plural, name, nil)
		if err := c.Get(ctx, client.ObjectKey{Name: name}, cur); err != nil {
			return err
		}
		u.SetResourceVersion(cur.GetResourceVersion())
		return c.Update(ctx, u)
	})
}

func deleteRow(ctx context.Context, c client.Client, schema, plural, name string) error {
	return retryUntilServed(ctx, func() error {
		return client.IgnoreNotFound(c.Delete(ctx, migrationRowObject(schema, plural, name, nil)))
	})
}

// isNoKind reports an error of a kind or version the API server does not serve (yet).
func isNoKind(err error) bool {
	return err != nil && (meta.IsNoMatchError(err) || (apierrors.IsNotFound(err) && !isObjectNotFound(err)))
}

// isObjectNotFound tells a missing object (its name in the status details) from a
// missing resource type.
func isObjectNotFound(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Name != ""
}

// retryUntilServed retries op while its kind or version is not served yet (a CRD
// just applied is not in discovery at once), for up to 30 s as
// BaseK8sCrdMigration.updateCrdSchemaForAllTables polls.
func retryUntilServed(ctx context.Context, op func() error) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := op()
		if !isNoKind(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
