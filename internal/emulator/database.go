package emulator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"
	"github.com/LINBIT/golinstor/devicelayerkind"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/linstor-operator/linstor-operator/pkg/dbbackup"
	"github.com/linstor-operator/linstor-operator/pkg/upgrade"
)

// The emulator's k8s database: like LINSTOR's k8s backend, a CRD per table in group
// internal.linstor.linbit.com, versioned by the LINSTOR version whose schema it holds,
// with one object per row. It is loaded when a controller starts and written while it
// runs, so a backup and a restore of these objects really carry the state, and a
// controller of a newer version migrates them first.
var tables = []table{
	{"linstorversion", "LinstorVersion"},
	{"nodes", "Nodes"},
	{"resourcedefinitions", "ResourceDefinitions"},
	{"propscontainers", "PropsContainers"},
	{"secconfiguration", "SecConfiguration"},
	{"nodeconnections", "NodeConnections"},
}

type table struct{ plural, kind string }

// tablesOf is the table set of a LINSTOR version: every table but those a migration
// to this version or an older one dropped (DropTableAtNextMigration). Holds e.mu.
func (e *Emulator) tablesOf(version string) []table {
	var out []table
	for _, t := range tables {
		if at, ok := e.dropped[t.plural]; ok && !older(version, at) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// onlyTables keeps the rows of the given tables.
func onlyTables(rows map[string]string, ts []table) map[string]string {
	kinds := map[string]bool{}
	for _, t := range ts {
		kinds[t.kind] = true
	}
	out := make(map[string]string, len(rows))
	for key, raw := range rows {
		if kind, _, _ := strings.Cut(key, "/"); kinds[kind] {
			out[key] = raw
		}
	}
	return out
}

// nodeRow holds what LINSTOR stores of a node. The machine's disks are not LINSTOR's
// (disks.go); rows written before that still carry a "disks" field, which is ignored.
type nodeRow struct {
	Node  lapi.Node          `json:"node"`
	Pools []lapi.StoragePool `json:"pools"`
}

type replicaRow struct {
	Pool      string                            `json:"pool"`
	InUse     bool                              `json:"inUse,omitempty"`
	DiskState string                            `json:"diskState"`
	Flags     []string                          `json:"flags,omitempty"`
	Props     map[string]string                 `json:"props,omitempty"`
	Layers    []devicelayerkind.DeviceLayerKind `json:"layers,omitempty"`
}

type rdRow struct {
	RD        lapi.ResourceDefinition           `json:"rd"`
	Volumes   []lapi.VolumeDefinition           `json:"volumes"`
	Resources map[string]replicaRow             `json:"resources"`
	Layers    []devicelayerkind.DeviceLayerKind `json:"layers,omitempty"`
}

// schemaVersion names a CRD version after a LINSTOR version: 1.33.2 -> v1-33-2.
func schemaVersion(linstor string) string {
	return "v" + strings.NewReplacer(".", "-").Replace(linstor)
}

// errStartRefused marks a controller start that fails every time it is tried.
var errStartRefused = errors.New("controller start refused")

// FailNextMigration makes the next database migration (a controller of a newer version
// starting on an older database) fail: the controller does not come up.
func (e *Emulator) FailNextMigration() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.failMigration = true
}

// FailNextStartAfterMigration makes the next migration complete, the database then
// at the new version, and the controller fail to start after it.
func (e *Emulator) FailNextStartAfterMigration() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.failStartAfterMigration = true
}

// DropTableAtNextMigration makes the next database migration drop a table as a
// migration that removes one does (BaseK8sCrdMigration.updateCrdSchemaForAllTables
// deletes the CRDs of tables the new version no longer has, and with them their rows).
// From that version on the controller neither reads nor writes it; an older controller
// still needs it and does not start while its CRD is missing.
func (e *Emulator) DropTableAtNextMigration(plural string) error {
	known := false
	for _, t := range tables {
		known = known || t.plural == plural
	}
	if !known || plural == "linstorversion" {
		return fmt.Errorf("DropTableAtNextMigration: plural %q is not a table a migration can drop (one of the emulator's tables but linstorversion)", plural)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.dropAtMigration = append(e.dropAtMigration, plural)
	return nil
}

// startController runs when a controller pod of version starts: it migrates the
// database if it is older, then loads it (or creates it on a first start). A database
// a newer version migrated is loaded as it is, as the server does: DbK8sCrd.migrate
// runs only migrations numbered above the stored version, so none.
func (e *Emulator) startController(ctx context.Context, c client.Client, version string, alive fence) error {
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	stored, err := readStoredVersion(ctx, c)
	if err != nil {
		return err
	}
	e.mu.Lock()
	known := e.tablesOf(version)
	e.mu.Unlock()
	if stored == "" {
		e.mu.Lock()
		rows := onlyTables(e.rows(version), known)
		e.mu.Unlock()
		if err := writeDatabase(ctx, c, version, known, rows, nil, true, alive); err != nil {
			return err
		}
		e.mu.Lock()
		e.schema, e.persisted, e.tablesAt = version, rows, version
		e.mu.Unlock()
		return nil
	}
	schema := version
	switch {
	case older(version, stored):
		schema = stored // nothing to migrate: the newer schema stays, its rows are read as they are
	case stored != version:
		e.mu.Lock()
		fail, drop := e.failMigration, e.dropAtMigration
		e.failMigration, e.dropAtMigration = false, nil
		from := e.tablesOf(stored)
		e.mu.Unlock()
		if fail {
			return fmt.Errorf("migrating the database from %s to %s failed (injected): %w", stored, version, errStartRefused)
		}
		if err := migrate(ctx, c, stored, version, from, drop, alive); err != nil {
			return err
		}
		e.mu.Lock()
		for _, plural := range drop {
			if e.dropped == nil {
				e.dropped = map[string]string{}
			}
			e.dropped[plural] = version
		}
		known = e.tablesOf(version)
		fail = e.failStartAfterMigration
		e.failStartAfterMigration = false
		e.mu.Unlock()
		if fail {
			return fmt.Errorf("the database was migrated to %s, then the controller failed to start (injected): %w", version, errStartRefused)
		}
	}
	// Every table this version knows is read; one whose CRD is missing fails the start
	// (K8sCachingClient lists each table when it is first used), and the pod is retried.
	rows, err := readRows(ctx, c, known)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.load(rows); err != nil {
		return err
	}
	e.schema, e.tablesAt = schema, ""
	return nil
}

// unknownRow marks a row whose content a failed commit left unknown: the next commit
// writes (or deletes) it whatever it holds.
const unknownRow = "\x00unknown"

// persist writes the in-memory state, the rows that changed only (the periodic save).
func (e *Emulator) persist(ctx context.Context, c client.Client, alive fence) error {
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	return e.commit(ctx, c, alive)
}

// commit writes the rows that differ from the last commit. Only a commit that
// succeeded moves the baseline; a failed one marks the rows it tried as unknown, since
// some of its writes may have landed. The caller holds commitMu.
func (e *Emulator) commit(ctx context.Context, c client.Client, alive fence) error {
	e.mu.Lock()
	version := e.databaseVersion()
	known := e.tablesOf(e.version)
	rows := onlyTables(e.rows(version), known)
	prev, createdAt := e.persisted, e.tablesAt
	e.mu.Unlock()
	if err := writeDatabase(ctx, c, version, known, rows, prev, createdAt != version, alive); err != nil {
		e.mu.Lock()
		e.tablesAt = "" // a table may be gone (a restore deletes them): create again next time
		e.persisted = uncertain(prev, rows)
		e.mu.Unlock()
		return err
	}
	e.mu.Lock()
	e.persisted, e.tablesAt = rows, version
	e.mu.Unlock()
	return nil
}

// uncertain is the baseline after a failed commit of rows over prev: every row it
// tried to change is unknown. A nil prev (nothing known) stays nil.
func uncertain(prev, rows map[string]string) map[string]string {
	if prev == nil {
		return nil
	}
	out := make(map[string]string, len(prev))
	for key, raw := range prev {
		out[key] = raw
		if rows[key] != raw {
			out[key] = unknownRow
		}
	}
	for key := range rows {
		if _, ok := prev[key]; !ok {
			out[key] = unknownRow
		}
	}
	return out
}

// databaseVersion is the LINSTOR version whose schema the database has: the
// controller's own, or a newer one it started on. Holds e.mu.
func (e *Emulator) databaseVersion() string {
	if e.schema != "" {
		return e.schema
	}
	return e.version
}

// committer is the database and fence of a running controller that commits its
// changes, nil when there is none (no database, no controller, or not loaded yet).
func (e *Emulator) committer() (client.Client, fence) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.db == nil || e.alive == nil || e.controllerPod == "" || e.controllerFailure != "" || e.controllerDown || e.controllerStarting {
		return nil, nil
	}
	return e.db, e.alive
}

// inTransaction applies one change as the controller runs an API call: under the one
// committer lock, the change is committed before it returns. When the commit fails the
// change is rolled back in memory and its rows written back, as the server's
// transaction does (ScopeRunner.rollbackIfNeeded -> ControllerK8sCrdTransactionMgr.rollback:
// ControllerK8sCrdRollbackMgr.rollback restores the rows, rollbackAll the objects), and
// the commit's error is returned.
func (e *Emulator) inTransaction(apply func()) error {
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	db, alive := e.committer()
	if db == nil {
		apply()
		return nil
	}
	e.mu.Lock()
	before := e.rows(e.databaseVersion())
	e.mu.Unlock()
	apply()
	e.mu.Lock()
	after := e.rows(e.databaseVersion())
	e.mu.Unlock()
	if maps.Equal(before, after) {
		return nil // nothing in the transaction is dirty: nothing to commit
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := e.commit(ctx, db, alive)
	if err == nil {
		return nil
	}
	e.mu.Lock()
	revertErr := e.revert(before, after)
	e.mu.Unlock()
	_ = e.commit(ctx, db, alive) // best effort; a row left unknown is written by the next commit
	return errors.Join(err, revertErr)
}

// change runs a test hook's change as a transaction (inTransaction).
func (e *Emulator) change(apply func() error) error {
	var err error
	if commitErr := e.inTransaction(func() { err = apply() }); commitErr != nil {
		return commitErr
	}
	return err
}

// commitFailed is the answer to a request whose commit failed. The k8s backend's
// writes throw KubernetesClientException, which CtrlTransactionHelper.commit does not
// wrap, so ResponseConverter.exceptionToResponse answers FAIL_UNKNOWN_ERROR ("... failed
// due to an unhandled exception of type ..."), a 500. The emulator does not know each
// handler's operation and object, so the route names the call.
func commitFailed(route string, err error) apiCallRc {
	return rc(lapiconst.MaskError|lapiconst.FailUnknownError, "%s failed due to an unhandled exception of type KubernetesClientException. %v", route, err)
}

// revert undoes a change whose commit failed: the objects whose rows it changed are
// loaded from before; every other object keeps its runtime state (a resync under way,
// an evacuation target). The baseline of the last commit and the passphrase's
// unlocked state stay. Holds e.mu.
func (e *Emulator) revert(before, after map[string]string) error {
	nodes, rds, persisted, open := e.nodes, e.rds, e.persisted, e.passphraseOpen
	if err := e.load(before); err != nil {
		return err
	}
	e.persisted, e.passphraseOpen = persisted, open
	unchanged := func(key string) bool {
		raw, ok := before[key]
		return ok && after[key] == raw
	}
	for name, n := range nodes {
		if unchanged("Nodes/" + rowName(name)) {
			e.nodes[name] = n
		}
	}
	for name, rd := range rds {
		if unchanged("ResourceDefinitions/" + rowName(name)) {
			e.rds[name] = rd
		}
	}
	return nil
}

// rows renders the state as table rows: kind/name -> spec JSON.
func (e *Emulator) rows(version string) map[string]string {
	out := map[string]string{"LinstorVersion/version": mustJSON(map[string]string{"version": version})}
	for name, n := range e.nodes {
		row := nodeRow{Node: n.Node}
		// What a satellite reports when it connects is not in LINSTOR's database.
		row.Node.ConnectionStatus, row.Node.StorageProviders, row.Node.ResourceLayers = "", nil, nil
		row.Node.UnsupportedProviders, row.Node.UnsupportedLayers = nil, nil
		for _, p := range n.pools {
			row.Pools = append(row.Pools, *p)
		}
		sort.Slice(row.Pools, func(i, j int) bool { return row.Pools[i].StoragePoolName < row.Pools[j].StoragePoolName })
		out["Nodes/"+rowName(name)] = mustJSON(row)
	}
	for name, rd := range e.rds {
		row := rdRow{RD: rd.ResourceDefinition, Volumes: rd.volumes, Resources: map[string]replicaRow{}, Layers: rd.layers}
		for node, r := range rd.resources {
			row.Resources[node] = replicaRow{Pool: r.pool, InUse: r.inUse, DiskState: r.diskState, Flags: r.flags, Props: r.props, Layers: r.layers}
		}
		out["ResourceDefinitions/"+rowName(name)] = mustJSON(row)
	}
	out["PropsContainers/controller"] = mustJSON(e.controllerProps)
	out["SecConfiguration/passphrase"] = mustJSON(map[string]string{"passphrase": e.passphrase})
	for pair, props := range e.nodeConns {
		out["NodeConnections/"+rowName(pair[0]+"."+pair[1])] = mustJSON(map[string]any{"a": pair[0], "b": pair[1], "props": props})
	}
	return out
}

// load replaces the state with rows read from the database.
func (e *Emulator) load(rows map[string]string) error {
	nodes := map[string]*node{}
	rds := map[string]*resourceDefinition{}
	conns := map[[2]string]map[string]string{}
	props := map[string]string{}
	pass := map[string]string{}
	for key, raw := range rows {
		kind, _, _ := strings.Cut(key, "/")
		var err error
		switch kind {
		case "Nodes":
			var row nodeRow
			if err = json.Unmarshal([]byte(raw), &row); err == nil {
				n := &node{Node: row.Node, online: !e.coupled, pools: map[string]*lapi.StoragePool{}}
				for i := range row.Pools {
					n.pools[strings.ToLower(row.Pools[i].StoragePoolName)] = &row.Pools[i]
				}
				if old, ok := e.nodes[strings.ToLower(n.Name)]; ok { // a restart does not change which satellites run
					n.online, n.satelliteVersion, n.onlineSince, n.drbdRunsAway = old.online, old.satelliteVersion, old.onlineSince, old.drbdRunsAway
				}
				nodes[strings.ToLower(n.Name)] = n
			}
		case "ResourceDefinitions":
			var row rdRow
			if err = json.Unmarshal([]byte(raw), &row); err == nil {
				rd := &resourceDefinition{ResourceDefinition: row.RD, volumes: row.Volumes, resources: map[string]*replica{}, layers: row.Layers}
				for node, r := range row.Resources {
					rep := &replica{pool: r.Pool, inUse: r.InUse, diskState: r.DiskState, flags: r.Flags, props: r.Props, layers: r.Layers}
					// What the replica's disk holds is the machine's, not the database's:
					// a restart does not bring missed writes back.
					if old, ok := e.rds[strings.ToLower(row.RD.Name)]; ok && old.resources[node] != nil {
						rep.behind = old.resources[node].behind
					}
					rd.resources[node] = rep
				}
				rds[strings.ToLower(rd.Name)] = rd
			}
		case "PropsContainers":
			err = json.Unmarshal([]byte(raw), &props)
		case "SecConfiguration":
			err = json.Unmarshal([]byte(raw), &pass)
		case "NodeConnections":
			var row struct {
				A, B  string
				Props map[string]string
			}
			if err = json.Unmarshal([]byte(raw), &row); err == nil {
				conns[[2]string{row.A, row.B}] = row.Props
			}
		}
		if err != nil {
			return fmt.Errorf("database row %s: %w", key, err)
		}
	}
	e.nodes, e.rds, e.nodeConns, e.controllerProps = nodes, rds, conns, props
	e.passphrase, e.passphraseOpen = pass["passphrase"], false
	e.persisted = rows
	return nil
}

func rowName(s string) string {
	return strings.ToLower(strings.NewReplacer("_", "-", ".", "-").Replace(s))
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func readStoredVersion(ctx context.Context, c client.Client) (string, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	err := c.Get(ctx, client.ObjectKey{Name: "linstorversion." + dbbackup.Group}, crd)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	rows, err := readTable(ctx, c, crd, "LinstorVersion")
	if err != nil {
		return "", err
	}
	var v map[string]string
	if raw, ok := rows["LinstorVersion/version"]; ok {
		_ = json.Unmarshal([]byte(raw), &v)
	}
	return v["version"], nil
}

func readRows(ctx context.Context, c client.Client, tables []table) (map[string]string, error) {
	out := map[string]string{}
	for _, t := range tables {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: t.plural + "." + dbbackup.Group}, crd); err != nil {
			return nil, err
		}
		rows, err := readTable(ctx, c, crd, t.kind)
		if err != nil {
			return nil, err
		}
		for k, v := range rows {
			out[k] = v
		}
	}
	return out, nil
}

func readTable(ctx context.Context, c client.Client, crd *apiextensionsv1.CustomResourceDefinition, kind string) (map[string]string, error) {
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion(dbbackup.Group + "/" + storage(crd))
	list.SetKind(kind + "List")
	if err := c.List(ctx, list); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, o := range list.Items {
		raw, _, _ := unstructured.NestedString(o.Object, "spec", "data")
		out[kind+"/"+o.GetName()] = raw
	}
	return out, nil
}

func storage(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return crd.Spec.Versions[0].Name
}

// fence reports an error once the controller process doing a write is gone. A real
// controller cannot write after its pod object is deleted (the pod is removed only after
// its containers stopped); the emulator, which acts on a pod list taken a moment ago, checks
// before every database write, so that a backup restored after the pod is gone is never
// overwritten by the process that was stopped.
type fence func(context.Context) error

// writeDatabase creates the tables at version when missing and writes rows that differ
// from prev (nil: all), deleting rows no longer present.
func writeDatabase(ctx context.Context, c client.Client, version string, tables []table, rows, prev map[string]string, createTables bool, alive fence) error {
	for _, t := range tables {
		if !createTables {
			break // created by an earlier write at this version: not asked again each commit
		}
		if err := alive(ctx); err != nil {
			return err
		}
		if err := ensureTable(ctx, c, t.plural, t.kind, version); err != nil {
			return err
		}
	}
	for key, raw := range rows {
		if prev != nil && prev[key] == raw {
			continue
		}
		if err := alive(ctx); err != nil {
			return err
		}
		kind, name, _ := strings.Cut(key, "/")
		if _, existed := prev[key]; existed {
			// One request for a row known to exist, as a database driver updating it.
			if err := patchRow(ctx, c, version, kind, name, raw); err == nil {
				continue
			}
		}
		if err := upsertRow(ctx, c, version, kind, name, raw); err != nil {
			return err
		}
	}
	for key := range prev {
		if _, ok := rows[key]; !ok {
			if err := alive(ctx); err != nil {
				return err
			}
			kind, name, _ := strings.Cut(key, "/")
			u := &unstructured.Unstructured{}
			u.SetAPIVersion(dbbackup.Group + "/" + schemaVersion(version))
			u.SetKind(kind)
			u.SetName(name)
			if err := c.Delete(ctx, u); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
	}
	return nil
}

func ensureTable(ctx context.Context, c client.Client, plural, kind, version string) error {
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + dbbackup.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: dbbackup.Group, Scope: apiextensionsv1.ClusterScoped,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: strings.ToLower(kind), Kind: kind, ListKind: kind + "List"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{tableVersion(version, true)},
		},
	}
	err := c.Create(ctx, crd)
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func tableVersion(version string, storage bool) apiextensionsv1.CustomResourceDefinitionVersion {
	return apiextensionsv1.CustomResourceDefinitionVersion{Name: schemaVersion(version), Served: true, Storage: storage,
		Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
			Type: "object", XPreserveUnknownFields: ptr.To(true)}}}
}

// patchRow replaces an existing row's data.
func patchRow(ctx context.Context, c client.Client, version, kind, name, raw string) error {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(dbbackup.Group + "/" + schemaVersion(version))
	u.SetKind(kind)
	u.SetName(name)
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"data": raw, "schema": version}})
	if err != nil {
		return err
	}
	return c.Patch(ctx, u, client.RawPatch(types.MergePatchType, patch))
}

func upsertRow(ctx context.Context, c client.Client, version, kind, name, raw string) error {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"data": raw, "schema": version}}}
	u.SetAPIVersion(dbbackup.Group + "/" + schemaVersion(version))
	u.SetKind(kind)
	u.SetName(name)
	for attempt := 0; attempt < 50; attempt++ {
		err := c.Create(ctx, u)
		if apierrors.IsAlreadyExists(err) {
			cur := &unstructured.Unstructured{}
			cur.SetGroupVersionKind(u.GroupVersionKind())
			if err := c.Get(ctx, client.ObjectKey{Name: name}, cur); err != nil {
				return err
			}
			u.SetResourceVersion(cur.GetResourceVersion())
			return c.Update(ctx, u)
		}
		// A new table or table version is not in discovery, or not served, yet.
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			waitBriefly(ctx)
			continue
		}
		return err
	}
	return fmt.Errorf("table %s never appeared in discovery", kind)
}

// migrate rewrites the database for a newer version: every table gets the new schema
// version as storage version and every row is rewritten in it. The tables in drop are
// deleted, rows and all, as BaseK8sCrdMigration.updateCrdSchemaForAllTables deletes the
// CRDs of tables the new version no longer has.
func migrate(ctx context.Context, c client.Client, from, to string, tables []table, drop []string, alive fence) error {
	all := map[string]string{}
	for _, t := range tables {
		if err := alive(ctx); err != nil {
			return err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: t.plural + "." + dbbackup.Group}, crd); err != nil {
			return err
		}
		if slices.Contains(drop, t.plural) {
			if err := c.Delete(ctx, crd); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("dropping table %s: %w", t.plural, err)
			}
			continue
		}
		rows, err := readTable(ctx, c, crd, t.kind)
		if err != nil {
			return err
		}
		for k, v := range rows {
			all[k] = v
		}
		for i := range crd.Spec.Versions {
			crd.Spec.Versions[i].Storage = false
		}
		crd.Spec.Versions = append(crd.Spec.Versions, tableVersion(to, true))
		if err := c.Update(ctx, crd); err != nil {
			return fmt.Errorf("migrating table %s: %w", t.plural, err)
		}
	}
	all["LinstorVersion/version"] = mustJSON(map[string]string{"version": to})
	for key, raw := range all {
		if err := alive(ctx); err != nil {
			return err
		}
		kind, name, _ := strings.Cut(key, "/")
		if err := upsertRow(ctx, c, to, kind, name, raw); err != nil {
			return fmt.Errorf("migrating %s: %w", key, err)
		}
	}
	return nil
}

func waitBriefly(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(100 * time.Millisecond):
	}
}

// older reports a < b for LINSTOR versions; unreadable versions compare as equal.
func older(a, b string) bool {
	va, err1 := upgrade.Parse(a)
	vb, err2 := upgrade.Parse(b)
	return err1 == nil && err2 == nil && va.Less(vb)
}
