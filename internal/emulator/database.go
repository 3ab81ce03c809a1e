package emulator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"sort"
	"strings"
	"time"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"
	"github.com/LINBIT/golinstor/devicelayerkind"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/linstor-operator/linstor-operator/pkg/dbbackup"
	"github.com/linstor-operator/linstor-operator/pkg/upgrade"
)

// The emulator's k8s database is LINSTOR's (docs/linstor-schema-history.md): a CRD per
// table of the schema (schema.go), one object per row, LINSTOR's columns in spec. It is
// loaded when a controller starts, after the migrations its version has and the
// database lacks (migrations.go), and written while it runs, one changed row at a time.
//
// Rows in LINSTOR's columns: PropsContainers (the controller's, resource and volume
// definitions' properties, one row per property), ResourceDefinitions,
// VolumeDefinitions, LayerResourceIds, LayerDrbdResources and
// LayerDrbdResourceDefinitions: every table migrations 28–30 read or write. Tables no
// migration in range touches keep the emulator's own format, LINSTOR's key columns
// plus the emulator's JSON in emulatorColumn: Nodes (node and storage pools),
// Resources (a replica's state), NodeConnections, SecConfiguration (the passphrase).
// ResourceDefinitions and Resources rows carry emulatorColumn too: no migration
// rewrites them. Every other row (snapshots, other property instances, tables the
// emulator does not model, orphans) is opaque: carried unchanged in memory, written
// back unchanged, seen by the migrations.

// emulatorColumn holds what the emulator keeps of a row beyond LINSTOR's columns.
const emulatorColumn = "emulator"

// Props instances (LinStorObject at v1.33.3: CTRL "/CTRL", RSC_DFN "/RSC_DFNS/",
// VLM_DFN "/VLM_DFNS/"), names upper-cased as ResourceName.value.
const ctrlPropsInstance = "/CTRL"

func rscDfnInstance(rd string) string { return "/RSC_DFNS/" + strings.ToUpper(rd) }

func vlmDfnInstance(rd string, nr int32) string {
	return fmt.Sprintf("/VLM_DFNS/%s/%d", strings.ToUpper(rd), nr)
}

// passphraseKey is the emulator's SecConfiguration row (entry_key, PK_FORMAT "%s").
const passphraseKey = "EMULATOR_PASSPHRASE"

// nodeRow holds what LINSTOR stores of a node. The machine's disks are not LINSTOR's
// (disks.go).
type nodeRow struct {
	Node  lapi.Node          `json:"node"`
	Pools []lapi.StoragePool `json:"pools"`
}

// replicaRow is the emulator's part of a Resources row.
type replicaRow struct {
	Node      string                            `json:"node"`
	Pool      string                            `json:"pool"`
	InUse     bool                              `json:"inUse,omitempty"`
	DiskState string                            `json:"diskState"`
	Flags     []string                          `json:"flags,omitempty"`
	Props     map[string]string                 `json:"props,omitempty"`
	Layers    []devicelayerkind.DeviceLayerKind `json:"layers,omitempty"`
}

// Flag bits (ResourceDefinition.Flags, VolumeDefinition.Flags at v1.33.3).
var (
	rscDfnFlagBits = map[string]int64{"DELETE": 1, "RESTORE_TARGET": 1 << 1, "CLONING": 1 << 2, "FAILED": 1 << 3}
	vlmDfnFlagBits = map[string]int64{"DELETE": 1, "ENCRYPTED": 1 << 1, "RESIZE": 1 << 2, "GROSS_SIZE": 1 << 3,
		"RESIZE_SHRINK": 1<<2 | 1<<4, "DRBD_INITIALIZED": 1 << 5}
	vlmDfnFlagOrder = []string{"DELETE", "ENCRYPTED", "RESIZE", "GROSS_SIZE", "RESIZE_SHRINK", "DRBD_INITIALIZED"}
)

func flagBits(flags []string, bits map[string]int64) int64 {
	var out int64
	for _, f := range flags {
		out |= bits[f]
	}
	return out
}

// vlmDfnFlags reads vlm_flags as FlagsHelper.toStringList does: every flag whose bits
// are all set.
func vlmDfnFlags(v int64) []string {
	var out []string
	for _, f := range vlmDfnFlagOrder {
		if b := vlmDfnFlagBits[f]; v&b == b {
			out = append(out, f)
		}
	}
	return out
}

// Initial-sync properties: ≤ 1.33.1 the rsc-dfn's DrbdPrimarySetOn
// (InternalApiConsts.PROP_PRIMARY_SET), ≥ 1.33.2 the volume definition's
// Linstor/Drbd/InitialUptoDateOn (KEY_LINSTOR_DRBD_INITIAL_UPTODATE_ON).
const (
	primarySetOnKey      = "DrbdPrimarySetOn"
	initialUpToDateOnKey = "Linstor/Drbd/InitialUptoDateOn"
)

// drbdRscDfn is a resource definition's LayerDrbdResourceDefinitions row.
type drbdRscDfn struct {
	tcpPort *int64 // nil from 1.32 on: ports are per resource (tcp_port_list)
	secret  string
}

// errStartRefused marks a controller start that fails every time it is tried.
var errStartRefused = errors.New("controller start refused")

// FailNextMigration makes the next migration step (a controller starting on a database
// its version has migrations for) fail: the step's rows are not written, the stored
// version stays at the step, and this controller pod does not come up; the next pod
// resumes at that step.
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

// SeedRow adds one row to table (its plural or kind) as if the user's database had it,
// committed as a change: the emulator carries it as it is, and the migrations see it
// (e.g. an orphaned LayerDrbdResources row fails migration 28). Its name is LINSTOR's
// (deriveKey of the primary key) where the key is modelled.
func (e *Emulator) SeedRow(table string, spec map[string]any) error {
	plural := strings.ToLower(table)
	r := normalizeRow(spec)
	name, err := rowObjectName(plural, r)
	if err != nil {
		return fmt.Errorf("SeedRow: %w", err)
	}
	return e.change(func() error {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.opaque == nil {
			e.opaque = dbTables{}
		}
		if e.opaque[plural] == nil {
			e.opaque[plural] = tableRows{}
		}
		e.opaque[plural][name] = r
		return nil
	})
}

// StoredVersion is the database's LinstorVersion: the last migration applied + 1, 0
// for no database.
func StoredVersion(ctx context.Context, c client.Client) (int, error) {
	return readStoredMigration(ctx, c)
}

// rowObjectName is a row's object name: deriveKey of its primary key; for a table whose
// key is not modelled, of the row's JSON (stable, and unique per content).
func rowObjectName(plural string, r row) (string, error) {
	if plural == "secconfiguration" {
		return deriveKey(stringColumn(r, "entry_key")), nil
	}
	if _, ok := primaryKeyColumns[plural]; ok {
		return objectName(plural, r)
	}
	b, err := json.Marshal(r)
	if err != nil {
		return "", err
	}
	return deriveKey(string(b)), nil
}

// normalizeRow gives integers one type, int64, as rows read from the API server have.
func normalizeRow(spec map[string]any) row {
	out := make(row, len(spec))
	for k, v := range spec {
		switch n := v.(type) {
		case int:
			out[k] = int64(n)
		case int32:
			out[k] = int64(n)
		case float64:
			if n == float64(int64(n)) {
				out[k] = int64(n)
			} else {
				out[k] = n
			}
		default:
			out[k] = v
		}
	}
	return out
}

// startController runs when a controller pod of version starts (DbK8sCrd.migrate):
// on no database (stored 0) it creates the tables of its schema, writes its rows and
// stamps its last migration + 1; on an older one it runs the missing migrations, one
// step each (migrateDatabase); on a newer one nothing runs and nothing is refused. It
// then loads every table its schema has; a missing one fails the start
// (K8sCachingClient lists each table), and the pod is retried.
func (e *Emulator) startController(ctx context.Context, c client.Client, version string, alive fence) error {
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	last, err := lastMigration(version)
	if err != nil {
		return fmt.Errorf("%w: %w", err, errStartRefused)
	}
	schema, err := schemaOf(version)
	if err != nil {
		return fmt.Errorf("%w: %w", err, errStartRefused)
	}
	stored, err := readStoredMigration(ctx, c)
	if err != nil {
		return err
	}
	known := tablesOf(schema)
	if stored == 0 {
		e.mu.Lock()
		e.schema = schema
		rows := e.rows()
		e.mu.Unlock()
		if err := writeDatabase(ctx, c, schema, known, rows, nil, true, alive); err != nil {
			return err
		}
		if err := alive(ctx); err != nil {
			return err
		}
		if err := stampVersion(ctx, c, last+1); err != nil {
			return err
		}
		e.mu.Lock()
		e.persisted, e.tablesAt = rows, schema
		e.mu.Unlock()
		return nil
	}
	if stored <= last {
		e.mu.Lock()
		inject := migrationHooks{failNext: e.failMigration}
		e.failMigration = false
		e.mu.Unlock()
		if _, err := migrateDatabase(ctx, c, stored, last, alive, inject); err != nil {
			if ctx.Err() != nil || alive(ctx) != nil {
				return err
			}
			// A failing step fails every start until the data or the image changes: the
			// pod crash-loops (Controller.start exits 20), each start failing the same.
			return fmt.Errorf("migrating the database from %d to %d: %w: %w", stored, last+1, err, errStartRefused)
		}
		e.mu.Lock()
		fail := e.failStartAfterMigration
		e.failStartAfterMigration = false
		e.mu.Unlock()
		if fail {
			return fmt.Errorf("the database was migrated to %d, then the controller failed to start (injected): %w", last+1, errStartRefused)
		}
	}
	rows, err := readDatabaseRows(ctx, c, known)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.schema = schema
	if err := e.load(rows); err != nil {
		return err
	}
	e.tablesAt = schema
	return nil
}

// unknownRow marks a row whose content a failed commit left unknown: the next commit
// writes (or deletes) it whatever it holds.
var unknownRow = row{"\x00unknown": true}

func isUnknown(r row) bool { return r != nil && r["\x00unknown"] == true }

// persist writes the in-memory state, the rows that changed only (the periodic save).
func (e *Emulator) persist(ctx context.Context, c client.Client, alive fence) error {
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	return e.commit(ctx, c, alive)
}

// commit writes the rows that differ from the last commit, through the CRD version of
// the controller's schema (its GenCrdCurrent). Only a commit that succeeded moves the
// baseline; a failed one marks the rows it tried as unknown, since some of its writes
// may have landed. The caller holds commitMu.
func (e *Emulator) commit(ctx context.Context, c client.Client, alive fence) error {
	e.mu.Lock()
	schema := e.writeSchema()
	rows := e.rows()
	prev, createdAt := e.persisted, e.tablesAt
	e.mu.Unlock()
	if err := writeDatabase(ctx, c, schema, tablesOf(schema), rows, prev, createdAt != schema, alive); err != nil {
		e.mu.Lock()
		e.tablesAt = "" // a table may be gone (a restore deletes them): create again next time
		e.persisted = uncertain(prev, rows)
		e.mu.Unlock()
		return err
	}
	e.mu.Lock()
	e.persisted, e.tablesAt = rows, schema
	e.mu.Unlock()
	return nil
}

// writeSchema is the schema the controller reads and writes through: its
// GenCrdCurrent. Holds e.mu.
func (e *Emulator) writeSchema() string {
	if e.schema != "" {
		return e.schema
	}
	if s, err := schemaOf(e.version); err == nil {
		return s
	}
	return newestSchema
}

// uncertain is the baseline after a failed commit of rows over prev: every row it
// tried to change is unknown. A nil prev (nothing known) stays nil.
func uncertain(prev, rows dbTables) dbTables {
	if prev == nil {
		return nil
	}
	out := prev.clone()
	for plural, tr := range prev {
		for name, r := range tr {
			if !rowEqual(rows[plural][name], r) {
				out[plural][name] = unknownRow
			}
		}
	}
	for plural, tr := range rows {
		for name := range tr {
			if _, ok := prev[plural][name]; !ok {
				if out[plural] == nil {
					out[plural] = tableRows{}
				}
				out[plural][name] = unknownRow
			}
		}
	}
	return out
}

func rowEqual(a, b row) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return reflect.DeepEqual(a, b)
}

func tablesEqual(a, b dbTables) bool {
	for _, pair := range [2][2]dbTables{{a, b}, {b, a}} {
		for plural, tr := range pair[0] {
			for name, r := range tr {
				if !rowEqual(r, pair[1][plural][name]) {
					return false
				}
			}
		}
	}
	return true
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
	before := e.rows()
	e.mu.Unlock()
	apply()
	e.mu.Lock()
	after := e.rows()
	e.mu.Unlock()
	if tablesEqual(before, after) {
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
func (e *Emulator) revert(before, after dbTables) error {
	nodes, rds, persisted, open := e.nodes, e.rds, e.persisted, e.passphraseOpen
	if err := e.load(before); err != nil {
		return err
	}
	e.persisted, e.passphraseOpen = persisted, open
	for name, n := range nodes {
		key := deriveKey(strings.ToUpper(n.Name))
		if _, ok := before["nodes"][key]; ok && rowEqual(before["nodes"][key], after["nodes"][key]) {
			e.nodes[name] = n
		}
	}
	for name, rd := range rds {
		if _, ok := e.rds[name]; ok && tablesEqual(rowsOfResource(before, rd.Name), rowsOfResource(after, rd.Name)) {
			e.rds[name] = rd
		}
	}
	return nil
}

// rowsOfResource are the rows naming resource rd: its definition, volume
// definitions, replicas, layer ids and properties.
func rowsOfResource(db dbTables, rd string) dbTables {
	upper := strings.ToUpper(rd)
	out := dbTables{}
	for plural, tr := range db {
		for name, r := range tr {
			inst := stringColumn(r, "props_instance")
			if stringColumn(r, "resource_name") == upper || inst == rscDfnInstance(rd) || strings.HasPrefix(inst, "/VLM_DFNS/"+upper+"/") {
				if out[plural] == nil {
					out[plural] = tableRows{}
				}
				out[plural][name] = r
			}
		}
	}
	return out
}

// rowSink collects rendered rows: each over the row last committed under its name, so
// columns the emulator does not model (and a newer schema's, e.g. tcp_port_list read
// by a 1.31 controller) are kept; defaults fill a new row's columns the emulator
// writes once and does not model afterwards.
type rowSink struct {
	out  dbTables
	base dbTables
}

func (s rowSink) put(plural string, r, defaults row) {
	name, err := rowObjectName(plural, r)
	if err != nil {
		panic(err) // the emulator's own rows always have their key columns
	}
	merged := row{}
	if base := s.base[plural][name]; base != nil && !isUnknown(base) {
		maps.Copy(merged, base)
	} else {
		for k, v := range defaults {
			if v != nil {
				merged[k] = v
			}
		}
	}
	for k, v := range r {
		if v == nil {
			delete(merged, k) // the API server prunes a null column: absent and null are one
		} else {
			merged[k] = v
		}
	}
	if s.out[plural] == nil {
		s.out[plural] = tableRows{}
	}
	s.out[plural][name] = merged
}

func prop(instance, key, value string) row {
	return row{"props_instance": instance, "prop_key": key, "prop_value": value}
}

// rows renders the state as the database's rows: the opaque ones as they are, the
// emulator's over them. Holds e.mu.
func (e *Emulator) rows() dbTables {
	s := rowSink{out: e.opaque.clone(), base: e.persisted}
	withPortList := schemaIndex(e.writeSchema()) >= schemaIndex("v1-31-1")
	for k, v := range e.controllerProps {
		s.put("propscontainers", prop(ctrlPropsInstance, k, v), nil)
	}
	for _, n := range e.nodes {
		row0 := nodeRow{Node: n.Node}
		// What a satellite reports when it connects is not in LINSTOR's database.
		row0.Node.ConnectionStatus, row0.Node.StorageProviders, row0.Node.ResourceLayers = "", nil, nil
		row0.Node.UnsupportedProviders, row0.Node.UnsupportedLayers = nil, nil
		for _, name := range sortedKeys(n.pools) {
			row0.Pools = append(row0.Pools, *n.pools[name])
		}
		s.put("nodes", row{"node_name": strings.ToUpper(n.Name), "node_dsp_name": n.Name, emulatorColumn: mustJSON(row0)}, nil)
	}
	s.put("secconfiguration", row{"entry_key": passphraseKey, "entry_dsp_key": passphraseKey, "entry_value": e.passphrase}, nil)
	for pair, props := range e.nodeConns {
		s.put("nodeconnections", row{"node_name_src": strings.ToUpper(pair[0]), "node_name_dst": strings.ToUpper(pair[1]),
			emulatorColumn: mustJSON(map[string]any{"a": pair[0], "b": pair[1], "props": props})}, nil)
	}
	for _, rd := range e.rds {
		e.renderResourceDefinition(s, rd, withPortList)
	}
	return s.out
}

func (e *Emulator) renderResourceDefinition(s rowSink, rd *resourceDefinition, withPortList bool) {
	name := strings.ToUpper(rd.Name)
	extras := rd.ResourceDefinition
	extras.Props = nil
	var stack []string
	for _, l := range rd.layers {
		stack = append(stack, string(l))
	}
	s.put("resourcedefinitions", row{
		"uuid": rd.Uuid, "resource_name": name, "snapshot_name": "", "resource_dsp_name": rd.Name, "snapshot_dsp_name": "",
		"resource_flags": flagBits(rd.Flags, rscDfnFlagBits), "layer_stack": javaJSONList(stack),
		"resource_group_name": strings.ToUpper(rd.ResourceGroupName), emulatorColumn: mustJSON(extras),
	}, nil)
	for k, v := range rd.Props {
		s.put("propscontainers", prop(rscDfnInstance(rd.Name), k, v), nil)
	}
	for _, vd := range rd.volumes {
		nr := int32(0)
		if vd.VolumeNumber != nil {
			nr = *vd.VolumeNumber
		}
		s.put("volumedefinitions", row{"uuid": vd.Uuid, "resource_name": name, "snapshot_name": "", "vlm_nr": int64(nr),
			"vlm_size": int64(vd.SizeKib), "vlm_flags": flagBits(vd.Flags, vlmDfnFlagBits)}, nil)
		for k, v := range vd.Props {
			s.put("propscontainers", prop(vlmDfnInstance(rd.Name, nr), k, v), nil)
		}
	}
	if rd.drbd != nil {
		r := row{"resource_name": name, "resource_name_suffix": "", "snapshot_name": "", "secret": rd.drbd.secret, "tcp_port": nil}
		if rd.drbd.tcpPort != nil {
			r["tcp_port"] = *rd.drbd.tcpPort
		}
		// LayerDrbdRscDfnDbDriver: DEFAULT_PEER_SLOTS 7, DEFAULT_AL_STRIPES 1, DEFAULT_AL_SIZE 32, IP.
		s.put("layerdrbdresourcedefinitions", r, row{"peer_slots": int64(7), "al_stripes": int64(1), "al_stripe_size": int64(32), "transport_type": "IP"})
	}
	for nodeName, rep := range rd.resources {
		s.put("resources", row{"node_name": strings.ToUpper(nodeName), "resource_name": name, "snapshot_name": "",
			emulatorColumn: mustJSON(replicaRow{Node: nodeName, Pool: rep.pool, InUse: rep.inUse, DiskState: rep.diskState, Flags: rep.flags, Props: rep.props, Layers: rep.layers})}, nil)
		stack := rep.layerStack()
		var parent any
		for i, id := range rep.layerIDs {
			if i >= len(stack) {
				break
			}
			s.put("layerresourceids", row{"layer_resource_id": id, "node_name": strings.ToUpper(nodeName), "resource_name": name,
				"snapshot_name": "", "layer_resource_kind": string(stack[i]), "layer_resource_parent_id": parent,
				"layer_resource_suffix": "", "layer_resource_suspended": false}, nil)
			parent = id
		}
		if len(rep.layerIDs) == 0 || stack[0] != devicelayerkind.Drbd {
			continue
		}
		r := row{"layer_resource_id": rep.layerIDs[0], "node_id": rep.nodeID}
		if withPortList {
			r["tcp_port_list"] = nil
			if rep.tcpPortList != nil {
				r["tcp_port_list"] = *rep.tcpPortList
			}
		}
		var flags int64
		if !rep.diskful() {
			flags = 1 << 2 // DrbdRscObject.DrbdRscFlags.DISKLESS (RscDrbdLayerHelper.createRscData)
		}
		s.put("layerdrbdresources", r, row{"peer_slots": int64(7), "al_stripes": int64(1), "al_stripe_size": int64(32), "flags": flags})
	}
}

// javaJSONList is a string list as generateCollectionToJsonStringArrayDriver writes it
// (Jackson): ["DRBD","STORAGE"].
func javaJSONList(items []string) string {
	if items == nil {
		items = []string{}
	}
	return mustJSON(items)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sortStrings(out)
	return out
}

// load replaces the state with rows read from the database; every row it does not
// interpret is kept as opaque. Holds e.mu.
func (e *Emulator) load(db dbTables) error {
	opaque := db.clone()
	take := func(plural, name string) row {
		r := opaque[plural][name]
		delete(opaque[plural], name)
		return r
	}
	nodes := map[string]*node{}
	for name, r := range db["nodes"] {
		raw := stringColumn(r, emulatorColumn)
		if raw == "" {
			continue
		}
		var nr nodeRow
		if err := json.Unmarshal([]byte(raw), &nr); err != nil {
			return fmt.Errorf("database row nodes/%s: %w", name, err)
		}
		take("nodes", name)
		n := &node{Node: nr.Node, online: !e.coupled, pools: map[string]*lapi.StoragePool{}}
		for i := range nr.Pools {
			n.pools[strings.ToLower(nr.Pools[i].StoragePoolName)] = &nr.Pools[i]
		}
		if old, ok := e.nodes[strings.ToLower(n.Name)]; ok { // a restart does not change which satellites run
			n.online, n.satelliteVersion, n.onlineSince, n.drbdRunsAway = old.online, old.satelliteVersion, old.onlineSince, old.drbdRunsAway
		}
		nodes[strings.ToLower(n.Name)] = n
	}
	conns := map[[2]string]map[string]string{}
	for name, r := range db["nodeconnections"] {
		raw := stringColumn(r, emulatorColumn)
		if raw == "" {
			continue
		}
		var c struct {
			A, B  string
			Props map[string]string
		}
		if err := json.Unmarshal([]byte(raw), &c); err != nil {
			return fmt.Errorf("database row nodeconnections/%s: %w", name, err)
		}
		take("nodeconnections", name)
		conns[[2]string{c.A, c.B}] = c.Props
	}
	passphrase := ""
	if r := db["secconfiguration"][deriveKey(passphraseKey)]; r != nil {
		passphrase = stringColumn(r, "entry_value")
		take("secconfiguration", deriveKey(passphraseKey))
	}

	rds := map[string]*resourceDefinition{} // by upper-cased name
	for name, r := range db["resourcedefinitions"] {
		if stringColumn(r, "snapshot_name") != "" {
			continue
		}
		rd := &resourceDefinition{resources: map[string]*replica{}}
		if raw := stringColumn(r, emulatorColumn); raw != "" {
			if err := json.Unmarshal([]byte(raw), &rd.ResourceDefinition); err != nil {
				return fmt.Errorf("database row resourcedefinitions/%s: %w", name, err)
			}
		} else {
			rd.ResourceGroupName = stringColumn(r, "resource_group_name")
		}
		rd.Name, rd.Uuid, rd.Props = stringColumn(r, "resource_dsp_name"), stringColumn(r, "uuid"), nil
		var stack []string
		_ = json.Unmarshal([]byte(stringColumn(r, "layer_stack")), &stack)
		for _, l := range stack {
			rd.layers = append(rd.layers, devicelayerkind.DeviceLayerKind(l))
		}
		take("resourcedefinitions", name)
		rds[stringColumn(r, "resource_name")] = rd
	}
	vds := map[string]*lapi.VolumeDefinition{} // by props instance
	for name, r := range db["volumedefinitions"] {
		rd := rds[stringColumn(r, "resource_name")]
		if rd == nil || stringColumn(r, "snapshot_name") != "" {
			continue
		}
		nr, _ := int64Column(r, "vlm_nr")
		size, _ := int64Column(r, "vlm_size")
		flags, _ := int64Column(r, "vlm_flags")
		rd.volumes = append(rd.volumes, lapi.VolumeDefinition{VolumeNumber: ptrTo(int32(nr)), SizeKib: uint64(size), Flags: vlmDfnFlags(flags), Uuid: stringColumn(r, "uuid")})
		take("volumedefinitions", name)
	}
	for upper, rd := range rds {
		sortVolumes(rd.volumes)
		for i := range rd.volumes {
			vds[vlmDfnInstance(upper, *rd.volumes[i].VolumeNumber)] = &rd.volumes[i]
		}
	}
	ctrlProps := map[string]string{}
	for name, r := range db["propscontainers"] {
		inst, key, value := stringColumn(r, "props_instance"), stringColumn(r, "prop_key"), stringColumn(r, "prop_value")
		var into *map[string]string
		switch {
		case inst == ctrlPropsInstance:
			into = &ctrlProps
		case strings.HasPrefix(inst, "/RSC_DFNS/") && rds[strings.TrimPrefix(inst, "/RSC_DFNS/")] != nil:
			into = &rds[strings.TrimPrefix(inst, "/RSC_DFNS/")].Props
		case vds[inst] != nil:
			into = &vds[inst].Props
		default:
			continue
		}
		if *into == nil {
			*into = map[string]string{}
		}
		(*into)[key] = value
		take("propscontainers", name)
	}
	for name, r := range db["layerdrbdresourcedefinitions"] {
		rd := rds[stringColumn(r, "resource_name")]
		if rd == nil || stringColumn(r, "snapshot_name") != "" || stringColumn(r, "resource_name_suffix") != "" {
			continue
		}
		rd.drbd = &drbdRscDfn{secret: stringColumn(r, "secret")}
		if port, ok := int64Column(r, "tcp_port"); ok {
			rd.drbd.tcpPort = &port
		}
		take("layerdrbdresourcedefinitions", name)
	}
	for name, r := range db["resources"] {
		rd := rds[stringColumn(r, "resource_name")]
		raw := stringColumn(r, emulatorColumn)
		if rd == nil || raw == "" || stringColumn(r, "snapshot_name") != "" {
			continue
		}
		var rr replicaRow
		if err := json.Unmarshal([]byte(raw), &rr); err != nil {
			return fmt.Errorf("database row resources/%s: %w", name, err)
		}
		rep := &replica{pool: rr.Pool, inUse: rr.InUse, diskState: rr.DiskState, flags: rr.Flags, props: rr.Props, layers: rr.Layers}
		// What the replica's disk holds is the machine's, not the database's: a
		// restart does not bring missed writes back.
		if old, ok := e.rds[strings.ToLower(rd.Name)]; ok && old.resources[rr.Node] != nil {
			rep.behind = old.resources[rr.Node].behind
		}
		rd.resources[rr.Node] = rep
		take("resources", name)
	}
	// Layer data: each replica's LayerResourceIds by kind, then its DRBD row.
	type lri struct {
		rep  *replica
		kind string
		name string
	}
	ids := map[int64]lri{}
	for name, r := range db["layerresourceids"] {
		rd := rds[stringColumn(r, "resource_name")]
		if rd == nil || stringColumn(r, "snapshot_name") != "" || stringColumn(r, "layer_resource_suffix") != "" {
			continue
		}
		for nodeName, rep := range rd.resources {
			if strings.EqualFold(nodeName, stringColumn(r, "node_name")) {
				id, _ := int64Column(r, "layer_resource_id")
				ids[id] = lri{rep: rep, kind: stringColumn(r, "layer_resource_kind"), name: name}
			}
		}
	}
	for _, rd := range rds {
		for _, rep := range rd.resources {
			byKind := map[string]int64{}
			for id, l := range ids {
				if l.rep == rep {
					byKind[l.kind] = id
				}
			}
			for _, kind := range rep.layerStack() {
				id, ok := byKind[string(kind)]
				if !ok {
					break
				}
				rep.layerIDs = append(rep.layerIDs, id)
				take("layerresourceids", ids[id].name)
			}
		}
	}
	for name, r := range db["layerdrbdresources"] {
		id, _ := int64Column(r, "layer_resource_id")
		l, ok := ids[id]
		if !ok || l.kind != string(devicelayerkind.Drbd) || len(l.rep.layerIDs) == 0 || l.rep.layerIDs[0] != id {
			continue // an orphan, or a row of a resource the emulator does not model: opaque
		}
		l.rep.nodeID, _ = int64Column(r, "node_id")
		if list, ok := r["tcp_port_list"].(string); ok {
			l.rep.tcpPortList = &list
		}
		take("layerdrbdresources", name)
	}
	for plural, tr := range opaque {
		if len(tr) == 0 {
			delete(opaque, plural)
		}
	}
	e.nodes, e.nodeConns, e.controllerProps = nodes, conns, ctrlProps
	e.rds = map[string]*resourceDefinition{}
	for _, rd := range rds {
		e.rds[strings.ToLower(rd.Name)] = rd
	}
	e.passphrase, e.passphraseOpen = passphrase, false
	e.opaque, e.persisted = opaque, db
	return nil
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// readDatabaseRows reads every row of tables, through each CRD's storage version.
func readDatabaseRows(ctx context.Context, c client.Client, tables []schemaTable) (dbTables, error) {
	out := dbTables{}
	for _, t := range tables {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: t.plural + "." + dbbackup.Group}, crd); err != nil {
			return nil, err
		}
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(dbbackup.Group + "/" + storageVersion(crd))
		list.SetKind(t.kind + "List")
		if err := c.List(ctx, list); err != nil {
			return nil, err
		}
		rows := tableRows{}
		for _, o := range list.Items {
			spec, _, _ := unstructured.NestedMap(o.Object, "spec")
			rows[o.GetName()] = normalizeRow(spec)
		}
		if len(rows) > 0 {
			out[t.plural] = rows
		}
	}
	return out, nil
}

func storageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
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

// writeDatabase creates the tables of schema when asked (those missing: a first
// start, or after a restore deleted them) and writes rows that differ from prev (nil:
// all), deleting rows no longer present, through schema's CRD version.
func writeDatabase(ctx context.Context, c client.Client, schema string, tables []schemaTable, rows, prev dbTables, createTables bool, alive fence) error {
	kinds := map[string]string{}
	for _, t := range tables {
		kinds[t.plural] = t.kind
		if !createTables {
			continue
		}
		if err := alive(ctx); err != nil {
			return err
		}
		if err := c.Create(ctx, tableCRD(t, schema)); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	for plural, tr := range rows {
		kind, ok := kinds[plural]
		if !ok {
			continue // a table this schema does not have: never loaded, never written
		}
		for name, r := range tr {
			old, existed := prev[plural][name]
			if prev != nil && existed && rowEqual(old, r) {
				continue
			}
			if err := alive(ctx); err != nil {
				return err
			}
			if existed && !isUnknown(old) {
				// One request for a row known to exist, as a database driver updating it.
				if err := replaceRow(ctx, c, schema, kind, name, r); err == nil {
					continue
				}
			}
			if err := upsertRow(ctx, c, schema, kind, name, r); err != nil {
				return err
			}
		}
	}
	for plural, tr := range prev {
		kind, ok := kinds[plural]
		if !ok {
			continue
		}
		for name := range tr {
			if _, ok := rows[plural][name]; ok {
				continue
			}
			if err := alive(ctx); err != nil {
				return err
			}
			u := rowObject(schema, kind, name, nil)
			if err := c.Delete(ctx, u); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
	}
	return nil
}

func rowObject(schema, kind, name string, r row) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	if r != nil {
		u.Object["spec"] = map[string]any(maps.Clone(r))
	}
	u.SetAPIVersion(dbbackup.Group + "/" + schema)
	u.SetKind(kind)
	u.SetName(name)
	return u
}

// replaceRow replaces an existing row's spec (a merge patch that also removes the
// columns the row no longer has).
func replaceRow(ctx context.Context, c client.Client, schema, kind, name string, r row) error {
	cur := rowObject(schema, kind, name, nil)
	if err := c.Get(ctx, client.ObjectKey{Name: name}, cur); err != nil {
		return err
	}
	spec := map[string]any{}
	if old, ok := cur.Object["spec"].(map[string]any); ok {
		for k := range old {
			spec[k] = nil
		}
	}
	maps.Copy(spec, r)
	patch, err := json.Marshal(map[string]any{"spec": spec})
	if err != nil {
		return err
	}
	return c.Patch(ctx, cur, client.RawPatch(types.MergePatchType, patch))
}

func upsertRow(ctx context.Context, c client.Client, schema, kind, name string, r row) error {
	u := rowObject(schema, kind, name, r)
	// By time, not by tries: a loaded API server takes seconds to establish a CRD and a
	// client's discovery to see it (CI once exceeded 50 tries of 100 ms).
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		err := c.Create(ctx, u)
		if apierrors.IsAlreadyExists(err) {
			cur := rowObject(schema, kind, name, nil)
			if err := c.Get(ctx, client.ObjectKey{Name: name}, cur); err != nil {
				return err
			}
			u.SetResourceVersion(cur.GetResourceVersion())
			return c.Update(ctx, u)
		}
		// A new table is not in discovery, or not served, yet.
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			waitBriefly(ctx)
			continue
		}
		return err
	}
	return fmt.Errorf("table %s never appeared in discovery", kind)
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

func sortStrings(s []string) { sort.Strings(s) }

func sortVolumes(vds []lapi.VolumeDefinition) {
	sort.Slice(vds, func(i, j int) bool { return *vds[i].VolumeNumber < *vds[j].VolumeNumber })
}
