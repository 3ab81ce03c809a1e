package emulator_test

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"

	"github.com/linstor-operator/linstor-operator/internal/emulator"
)

// Each test here pins one behaviour of LINSTOR v1.33.3 as its source has it (the
// comment names the server code); docs/linstor-semantics.md lists them all.

// answer is one decoded ApiCallRc entry.
type answer struct {
	RetCode    int64             `json:"ret_code"`
	Message    string            `json:"message"`
	Cause      string            `json:"cause"`
	Correction string            `json:"correction"`
	Details    string            `json:"details"`
	ObjRefs    map[string]string `json:"obj_refs"`
	CreatedAt  string            `json:"created_at"`
}

func (a answer) code() uint64 { return uint64(a.RetCode) }

// call sends a request and decodes the ApiCallRc list the server answers.
func (h *harness) call(t *testing.T, method, path string, body any) (int, []answer) {
	t.Helper()
	var out []answer
	status := h.raw(t, method, path, body, &out)
	return status, out
}

// expect checks the status and that the first entry carries code (severity, object
// and operation masks included).
func expect(t *testing.T, what string, status int, got []answer, wantStatus int, code uint64) {
	t.Helper()
	if status != wantStatus || len(got) == 0 || got[0].code() != code {
		t.Fatalf("%s: HTTP %d %+v, want HTTP %d with ret_code %#x", what, status, got, wantStatus, code)
	}
	if got[0].CreatedAt == "" {
		t.Errorf("%s: entry without created_at", what)
	}
}

// onlineHarness is an emulator with a manual clock and nodes whose satellites are up.
func onlineHarness(t *testing.T, nodes ...string) (*harness, *clock) {
	t.Helper()
	return harnessWithNodes(t, false, "10.0.1.", nodes...)
}

// harnessWithNodes registers nodes at subnet+1, +2, ... (validated against the OpenAPI
// spec when conform) and lets their satellites connect.
func harnessWithNodes(t *testing.T, conform bool, subnet string, nodes ...string) (*harness, *clock) {
	t.Helper()
	h := newHarness(t, conform)
	clk := newClock(h.emu)
	for i, n := range nodes {
		must(t, h.client.Nodes.Create(context.Background(), satellite(n, subnet+strconv.Itoa(i+1))))
	}
	clk.Advance(time.Second)
	return h, clk
}

func addPool(t *testing.T, h *harness, nodes ...string) {
	t.Helper()
	for _, n := range nodes {
		must(t, h.client.Nodes.CreateStoragePool(context.Background(), n, lapi.StoragePool{StoragePoolName: "thin", ProviderKind: lapi.LVM_THIN,
			Props: map[string]string{"StorDriver/LvmVg": "vg", "StorDriver/ThinPool": "thin"}}))
	}
}

// Node types: parsed case-insensitively, answered as the enum name; CONTROLLER and
// AUXILIARY nodes have no satellite (OFFLINE) and no diskless pool
// (LinstorParsingUtils.asNodeType, Node.getApiData, CtrlNodeApiCallHandler.connectNow).
func TestNodeTypes(t *testing.T) {
	h, _ := onlineHarness(t)
	ctx := context.Background()
	for typ, want := range map[string]string{"satellite": "SATELLITE", "Combined": "COMBINED", "CONTROLLER": "CONTROLLER", "auxiliary": "AUXILIARY"} {
		n := satellite("node-"+strings.ToLower(typ), "10.0.2.1")
		n.Type = typ
		must(t, h.client.Nodes.Create(ctx, n))
		got, err := h.client.Nodes.Get(ctx, n.Name)
		must(t, err)
		pools, err := h.client.Nodes.GetStoragePools(ctx, n.Name)
		must(t, err)
		if got.Type != want {
			t.Errorf("type %q answered as %q, want %q", typ, got.Type, want)
		}
		if satelliteless := want == "CONTROLLER" || want == "AUXILIARY"; satelliteless != (len(pools) == 0) || satelliteless && got.ConnectionStatus != "OFFLINE" {
			t.Errorf("%s node: status %s, %d pools", want, got.ConnectionStatus, len(pools))
		}
	}
	bad := satellite("node-bad", "10.0.2.1")
	bad.Type = "storage"
	status, got := h.call(t, "POST", "/v1/nodes", bad)
	expect(t, "invalid type", status, got, http.StatusInternalServerError, lapiconst.FailInvldNodeType|lapiconst.MaskCrt|lapiconst.MaskNode)
	if !strings.Contains(got[0].Correction, "SATELLITE") || got[0].ObjRefs["Node"] != "node-bad" {
		t.Errorf("invalid type answer lacks correction or obj_refs: %+v", got[0])
	}
	// A satellite cannot become a CONTROLLER: its diskless pool forbids it.
	status, got = h.call(t, "PUT", "/v1/nodes/node-satellite", lapi.NodeModify{NodeType: "CONTROLLER"})
	expect(t, "satellite to controller", status, got, http.StatusInternalServerError, lapiconst.FailInvldStorDriver|lapiconst.MaskMod|lapiconst.MaskNode)
}

// Node names follow Checks.hostNameCheck and compare ignoring case; net interface names
// NetInterfaceName's rules.
func TestNames(t *testing.T) {
	h, _ := onlineHarness(t)
	for name, ok := range map[string]bool{
		"ab": true, "1node": true, "node.example.com": true, "Node-A": true,
		"a": false, "_node": false, "-node": false, "node-": false, ".node": false, "no_de": false,
		strings.Repeat("a", 64) + ".b": false, strings.Repeat("a", 63) + ".b": true,
	} {
		status, got := h.call(t, "POST", "/v1/nodes", satellite(name, "10.0.3.1"))
		if ok && status != http.StatusCreated || !ok && (status != http.StatusInternalServerError || got[0].code() != lapiconst.FailInvldNodeName|lapiconst.MaskCrt|lapiconst.MaskNode) {
			t.Errorf("node name %q: HTTP %d %+v, want valid=%t", name, status, got, ok)
		}
	}
	status, got := h.call(t, "POST", "/v1/nodes", satellite("NODE-a", "10.0.3.2"))
	expect(t, "same name in another case", status, got, http.StatusInternalServerError, lapiconst.FailExistsNode|lapiconst.MaskCrt|lapiconst.MaskNode)
	i := 0
	for nif, ok := range map[string]bool{"eth": true, "data_1": true, "lo": false, "1st": false, strings.Repeat("n", 33): false, "a-b": true} {
		i++
		n := satellite("nic-"+strconv.Itoa(i), "10.0.3.3")
		n.NetInterfaces[0].Name = nif
		status, _ := h.call(t, "POST", "/v1/nodes", n)
		if (status == http.StatusCreated) != ok {
			t.Errorf("net interface name %q: HTTP %d, want valid=%t", nif, status, ok)
		}
	}
}

// Node delete refuses in-use replicas and the last diskful replica of a resource that
// still has diskless peers, and nothing else: a lone replica is deleted with its data
// (CtrlNodeDeleteApiCallHandler, CtrlRscDeleteApiHelper.ensureNotInUse/ensureNotLastDisk).
func TestNodeDeleteReplicaRules(t *testing.T) {
	h, _ := onlineHarness(t, "n1", "n2", "n3")
	addPool(t, h, "n1", "n2", "n3")
	emu := h.emu
	must(t, emu.PlaceResource("lone", "n1", "thin", false))
	must(t, emu.PlaceResource("attached", "n2", "thin", false))
	must(t, emu.PlaceResource("attached", "n3", "", false))

	status, got := h.call(t, "DELETE", "/v1/nodes/n2", nil)
	expect(t, "last diskful with a diskless peer", status, got, http.StatusInternalServerError, lapiconst.FailInUse|lapiconst.MaskDel|lapiconst.MaskNode)
	if last := got[len(got)-1]; last.code() != lapiconst.FailNodeHasUsedRsc|lapiconst.MaskDel|lapiconst.MaskNode {
		t.Errorf("refusal should end with FAIL_NODE_HAS_USED_RSC: %+v", got)
	}
	must(t, emu.SetInUse("lone", "n1", true))
	status, got = h.call(t, "DELETE", "/v1/nodes/n1", nil)
	expect(t, "in use", status, got, http.StatusInternalServerError, lapiconst.FailInUse|lapiconst.MaskDel|lapiconst.MaskNode)
	must(t, emu.SetInUse("lone", "n1", false))
	status, got = h.call(t, "DELETE", "/v1/nodes/n1", nil)
	expect(t, "the only replica, no peers", status, got, http.StatusOK, lapiconst.Deleted|lapiconst.MaskDel|lapiconst.MaskNode)
	if emu.ResourcePlaced("lone", "n1") {
		t.Error("the lone replica survived its node")
	}
	status, got = h.call(t, "DELETE", "/v1/nodes/n1", nil)
	expect(t, "missing node", status, got, http.StatusOK, lapiconst.WarnNotFound|lapiconst.MaskDel|lapiconst.MaskNode)
}

// Evacuation places a replacement that resyncs; the source goes once the replacement is
// UpToDate and the source is no longer in use; a replica with no place stays, with a
// warning in a 200 answer, and nothing retries it (CtrlNodeApiCallHandler.evacuateNode).
func TestEvacuation(t *testing.T) {
	h, clk := onlineHarness(t, "n1", "n2", "n3")
	addPool(t, h, "n1", "n2", "n3")
	emu := h.emu
	must(t, emu.PlaceResource("pvc-a", "n1", "thin", true))
	must(t, emu.PlaceResource("pvc-a", "n2", "thin", false))

	status, got := h.call(t, "PUT", "/v1/nodes/n1/evacuate", nil)
	if status != http.StatusOK || len(got) != 1 || got[0].code() != lapiconst.Created|lapiconst.MaskCrt|lapiconst.MaskRsc {
		t.Fatalf("evacuate: HTTP %d %+v, want a replacement created", status, got)
	}
	if !emu.ResourcePlaced("pvc-a", "n3") || !emu.ResourcePlaced("pvc-a", "n1") {
		t.Fatal("the replacement should be on n3 while n1 still holds its replica")
	}
	view, err := h.client.Resources.GetResourceView(context.Background(), &lapi.ListOpts{Node: []string{"n3"}})
	must(t, err)
	if view[0].Volumes[0].State.DiskState != "Inconsistent" {
		t.Errorf("the replacement should resync first: %s", view[0].Volumes[0].State.DiskState)
	}
	clk.Advance(time.Minute)
	if !emu.ResourcePlaced("pvc-a", "n1") {
		t.Error("an in-use source replica must wait for its workload to move")
	}
	must(t, emu.SetInUse("pvc-a", "n1", false))
	if emu.ResourcePlaced("pvc-a", "n1") {
		t.Error("the source should be gone once the replacement is UpToDate and it is unused")
	}

	// n2 now: n1 is evacuating, n3 holds a replica, nowhere to go.
	status, got = h.call(t, "PUT", "/v1/nodes/n2/evacuate", nil)
	expect(t, "no place", status, got, http.StatusOK, lapiconst.WarnNotEvacuating)
	clk.Advance(time.Hour)
	if !emu.ResourcePlaced("pvc-a", "n2") {
		t.Error("a replica with nowhere to go must stay")
	}
	n2, _ := emu.Node("n2")
	if !contains(n2.Flags, "EVACUATE") {
		t.Errorf("n2 flags = %v, want EVACUATE", n2.Flags)
	}
	ctx := context.Background()
	must(t, h.client.ResourceDefinitions.Create(ctx, lapi.ResourceDefinitionCreate{ResourceDefinition: lapi.ResourceDefinition{Name: "pvc-b"}}))
	status, got = h.call(t, "POST", "/v1/resource-definitions/pvc-b/resources/n2", lapi.ResourceCreate{Resource: lapi.Resource{Props: map[string]string{"StorPoolName": "thin"}}})
	expect(t, "a new resource on an evacuating node", status, got, http.StatusInternalServerError, lapiconst.FailEvacuating|lapiconst.MaskCrt|lapiconst.MaskRsc)
}

// A property outside LINSTOR's whitelist, or a value its rule refuses, fails the whole
// request and changes nothing (CtrlPropsHelper.fillProperties/remove, transaction
// rollback); deleting a key that is not whitelisted fails even when it is absent.
func TestPropertyWhitelist(t *testing.T) {
	h, _ := onlineHarness(t, "n1")
	mod := func(m lapi.GenericPropsModify) (int, []answer) {
		return h.call(t, "PUT", "/v1/nodes/n1", lapi.NodeModify{GenericPropsModify: m})
	}
	var code uint64 = lapiconst.FailInvldProp | lapiconst.MaskMod | lapiconst.MaskNode
	status, got := mod(lapi.GenericPropsModify{OverrideProps: map[string]string{"Aux/ok": "1", "Foo/Bar": "x"}})
	expect(t, "unknown key", status, got, http.StatusInternalServerError, code)
	status, got = mod(lapi.GenericPropsModify{OverrideProps: map[string]string{"Aux/ok": "1", "DrbdOptions/AutoEvictAllowEviction": "maybe"}})
	expect(t, "invalid value", status, got, http.StatusInternalServerError, code)
	if n, _ := h.emu.Node("n1"); n.Props["Aux/ok"] != "" {
		t.Error("a refused request set a property")
	}
	status, got = mod(lapi.GenericPropsModify{DeleteProps: []string{"Foo/Bar"}})
	expect(t, "deleting a key that is not whitelisted", status, got, http.StatusInternalServerError, code)
	status, got = mod(lapi.GenericPropsModify{DeleteProps: []string{"PrefNic"}})
	expect(t, "deleting an absent whitelisted key", status, got, http.StatusOK, lapiconst.MaskNode|lapiconst.MaskDel|lapiconst.Deleted)
	status, got = mod(lapi.GenericPropsModify{OverrideProps: map[string]string{"CurStltConnName": "x"}})
	expect(t, "the controller's own key", status, got, http.StatusInternalServerError, code)
	status, got = mod(lapi.GenericPropsModify{OverrideProps: map[string]string{"DrbdOptions/AutoEvictAllowEviction": "YES", "Aux/ok": "1"}})
	expect(t, "a valid request", status, got, http.StatusOK, lapiconst.MaskNode|lapiconst.MaskCrt|lapiconst.Created)
	if n, _ := h.emu.Node("n1"); n.Props["DrbdOptions/AutoEvictAllowEviction"] != "true" || n.Props["Aux/ok"] != "1" {
		t.Errorf("properties after a valid request: %v (booleans are stored normalized)", n.Props)
	}
	// Storage pool create rewrites the driver keys (rest/v1/StoragePools.convertStorPoolProp).
	addPool(t, h, "n1")
	pool, err := h.client.Nodes.GetStoragePool(context.Background(), "n1", "thin")
	must(t, err)
	if pool.Props["StorDriver/StorPoolName"] != "vg/thin" || pool.Props["StorDriver/LvmVg"] != "" {
		t.Errorf("pool props = %v, want StorDriver/StorPoolName=vg/thin only", pool.Props)
	}
}

// Deleting the active net interface is allowed: the first other interface with a port
// and encryption takes over; without one the node has no satellite connection and the
// answer is a warning alone (CtrlNetIfApiCallHandler.deleteNetIf).
func TestActiveNetInterface(t *testing.T) {
	h, clk := onlineHarness(t, "n1")
	ctx := context.Background()
	must(t, h.client.Nodes.CreateNetInterface(ctx, "n1", lapi.NetInterface{Name: "storage", Address: net.ParseIP("10.9.0.1")}))
	status, got := h.call(t, "PUT", "/v1/nodes/n1/net-interfaces/storage", lapi.NetInterface{IsActive: true})
	expect(t, "activating an interface without a port", status, got, http.StatusInternalServerError,
		lapiconst.FailInvldNetPort|lapiconst.FailInvldEncryptType|lapiconst.MaskMod|lapiconst.MaskNetIf)
	must(t, h.client.Nodes.CreateNetInterface(ctx, "n1", lapi.NetInterface{Name: "backup", Address: net.ParseIP("10.9.1.1"), SatellitePort: 3366, SatelliteEncryptionType: "plain"}))
	must(t, h.client.Nodes.DeleteNetinterface(ctx, "n1", "default"))
	n1, _ := h.emu.Node("n1")
	if n1.Props["CurStltConnName"] != "backup" || n1.ConnectionStatus != "CONNECTED" {
		t.Errorf("after deleting the active interface: %s %s, want backup, reconnecting", n1.Props["CurStltConnName"], n1.ConnectionStatus)
	}
	clk.Advance(time.Second)
	status, got = h.call(t, "DELETE", "/v1/nodes/n1/net-interfaces/backup", nil)
	expect(t, "the last connection", status, got, http.StatusOK, lapiconst.WarnNoStltConnDefined|lapiconst.MaskDel|lapiconst.MaskNetIf)
	if n1, _ = h.emu.Node("n1"); n1.ConnectionStatus != "NO_STLT_CONN" {
		t.Errorf("status = %s, want NO_STLT_CONN", n1.ConnectionStatus)
	}
}

// What deleting a missing object answers: 200 with WARN_NOT_FOUND (each handler), and
// what reading one answers: 404 with the raw code (RequestHelper.notFoundResponse).
func TestMissingObjects(t *testing.T) {
	h, _ := onlineHarness(t, "n1")
	for _, tc := range []struct {
		method, path string
		status       int
		code         uint64
	}{
		{"DELETE", "/v1/nodes/gone", http.StatusOK, lapiconst.WarnNotFound | lapiconst.MaskDel | lapiconst.MaskNode},
		{"DELETE", "/v1/nodes/gone/lost", http.StatusOK, lapiconst.WarnNotFound | lapiconst.MaskDel | lapiconst.MaskNode},
		{"DELETE", "/v1/nodes/n1/net-interfaces/gone", http.StatusOK, lapiconst.WarnNotFound | lapiconst.MaskDel | lapiconst.MaskNetIf},
		{"DELETE", "/v1/nodes/n1/storage-pools/gone", http.StatusOK, lapiconst.WarnNotFound | lapiconst.MaskDel | lapiconst.MaskStorPool},
		{"DELETE", "/v1/resource-definitions/gone", http.StatusOK, lapiconst.WarnNotFound | lapiconst.MaskDel | lapiconst.MaskRscDfn},
		{"DELETE", "/v1/resource-definitions/gone/resources/n1", http.StatusOK, lapiconst.WarnNotFound | lapiconst.MaskDel | lapiconst.MaskRsc},
		{"DELETE", "/v1/nodes/n1/storage-pools/DfltDisklessStorPool", http.StatusInternalServerError, lapiconst.FailInvldStorPoolName | lapiconst.MaskDel | lapiconst.MaskStorPool},
		{"GET", "/v1/nodes/gone", http.StatusNotFound, lapiconst.FailNotFoundNode},
		{"GET", "/v1/nodes/n1/storage-pools/gone", http.StatusNotFound, lapiconst.FailNotFoundStorPool},
		{"GET", "/v1/resource-definitions/gone/resources", http.StatusNotFound, lapiconst.FailNotFoundRscDfn},
		{"PUT", "/v1/nodes/gone", http.StatusNotFound, lapiconst.FailNotFoundNode | lapiconst.MaskMod | lapiconst.MaskNode},
		{"PUT", "/v1/nodes/gone/evacuate", http.StatusNotFound, lapiconst.FailNotFoundNode},
		{"PUT", "/v1/nodes/n1/restore", http.StatusInternalServerError, lapiconst.MaskError},
	} {
		status, got := h.call(t, tc.method, tc.path, nil)
		expect(t, tc.method+" "+tc.path, status, got, tc.status, tc.code)
	}
}

// Storage pools: a provider needing tools is refused while the satellite is offline
// (its supported providers come from the handshake); capacity is unknown offline
// (StorPoolHelper.createStorPool, CtrlStorPoolListApiCallHandler).
func TestPoolsAndOfflineSatellites(t *testing.T) {
	h, _ := onlineHarness(t, "n1")
	addPool(t, h, "n1")
	must(t, h.emu.SetNodeOnline("n1", false))
	status, got := h.call(t, "POST", "/v1/nodes/n1/storage-pools", lapi.StoragePool{StoragePoolName: "fat", ProviderKind: lapi.LVM})
	expect(t, "LVM on an offline satellite", status, got, http.StatusInternalServerError, lapiconst.FailStltDoesNotSupportProvider|lapiconst.MaskCrt|lapiconst.MaskStorPool)
	pool, err := h.client.Nodes.GetStoragePool(context.Background(), "n1", "thin")
	must(t, err)
	if pool.TotalCapacity != 0 || len(pool.Reports) != 1 {
		t.Errorf("offline pool = %+v, want no capacity and a report", pool)
	}
	status, got = h.call(t, "POST", "/v1/nodes/n1/storage-pools", lapi.StoragePool{StoragePoolName: "x", ProviderKind: lapi.LVM})
	expect(t, "a short pool name", status, got, http.StatusInternalServerError, lapiconst.FailInvldStorPoolName|lapiconst.MaskCrt|lapiconst.MaskStorPool)
	status, got = h.call(t, "POST", "/v1/nodes/n1/storage-pools", lapi.StoragePool{StoragePoolName: "thin2", ProviderKind: "LVM_THICK"})
	expect(t, "an unknown provider", status, got, http.StatusBadRequest, lapiconst.FailInvldLayerKind)
}

// The passphrase: one status object; a wrong passphrase answers the code of missing
// properties; modify does not unlock (CtrlConfApiCallHandler, Encryption).
func TestPassphrase(t *testing.T) {
	h, _ := onlineHarness(t)
	status, got := h.call(t, "PATCH", "/v1/encryption/passphrase", "x")
	expect(t, "enter without a passphrase", status, got, http.StatusInternalServerError, lapiconst.FailMissingProps|lapiconst.MaskMod|lapiconst.MaskCtrlConf)
	status, got = h.call(t, "POST", "/v1/encryption/passphrase", lapi.Passphrase{NewPassphrase: "one"})
	expect(t, "create", status, got, http.StatusCreated, lapiconst.Created|lapiconst.MaskCrt|lapiconst.MaskCtrlConf)
	h.emu.RestartController()
	status, got = h.call(t, "PUT", "/v1/encryption/passphrase", lapi.Passphrase{OldPassphrase: "one", NewPassphrase: "two"})
	expect(t, "modify", status, got, http.StatusOK, lapiconst.Modified|lapiconst.MaskMod|lapiconst.MaskCtrlConf)
	var st map[string]string
	h.raw(t, "GET", "/v1/encryption/passphrase", nil, &st)
	if st["status"] != "locked" {
		t.Errorf("after modify on a locked controller: %v, want still locked", st)
	}
	status, got = h.call(t, "PATCH", "/v1/encryption/passphrase", "one")
	expect(t, "the old passphrase", status, got, http.StatusInternalServerError, lapiconst.FailMissingProps|lapiconst.MaskMod|lapiconst.MaskCtrlConf)
	status, got = h.call(t, "PATCH", "/v1/encryption/passphrase", map[string]string{"passphrase": "two"})
	expect(t, "an object instead of a JSON string", status, got, http.StatusInternalServerError, lapiconst.ApiCallParseError)
}

// Satellites take time: CONNECTED while they authenticate, then ONLINE; a replica
// joining UpToDate peers is Inconsistent until its resync ends.
func TestTimedStates(t *testing.T) {
	h := newHarness(t, false)
	clk := newClock(h.emu)
	h.emu.SetTiming(emulator.Timing{SatelliteConnect: 5 * time.Second, Resync: 30 * time.Second})
	must(t, h.client.Nodes.Create(context.Background(), satellite("n1", "10.0.4.1")))
	for _, step := range []struct {
		after time.Duration
		want  string
	}{{0, "CONNECTED"}, {4 * time.Second, "CONNECTED"}, {time.Second, "ONLINE"}} {
		clk.Advance(step.after)
		if n, _ := h.emu.Node("n1"); n.ConnectionStatus != step.want {
			t.Errorf("after %s more: %s, want %s", step.after, n.ConnectionStatus, step.want)
		}
	}
}

// A satellite that is away: a pool change is committed but the answer is a 500 (the
// handler does not suppress the failed satellite update); a replica delete waits for
// the satellite, flagged DELETE, and answers 200 with a warning
// (CtrlStorPoolApiCallHandler, CtrlRscDeleteApiCallHandler).
func TestChangesWhileTheSatelliteIsAway(t *testing.T) {
	h, clk := onlineHarness(t, "n1", "n2")
	addPool(t, h, "n1", "n2")
	must(t, h.emu.PlaceResource("pvc-a", "n1", "thin", false))
	must(t, h.emu.PlaceResource("pvc-a", "n2", "thin", false))
	must(t, h.emu.SetNodeOnline("n2", false))

	status, got := h.call(t, "PUT", "/v1/nodes/n2/storage-pools/thin", lapi.GenericPropsModify{OverrideProps: map[string]string{"Aux/x": "1"}})
	if status != http.StatusInternalServerError || got[len(got)-1].code() != lapiconst.FailUnknownError|lapiconst.MaskMod|lapiconst.MaskStorPool {
		t.Errorf("pool modify on an offline satellite: HTTP %d %+v", status, got)
	}
	if p, _ := h.emu.StoragePools("n2"); p[1].Props["Aux/x"] != "1" {
		t.Errorf("the change should be committed all the same: %+v", p)
	}
	status, got = h.call(t, "PUT", "/v1/nodes/n2/storage-pools/thin", lapi.GenericPropsModify{OverrideProps: map[string]string{"Aux/x": "1"}})
	expect(t, "the same change again (nothing to send)", status, got, http.StatusOK, lapiconst.MaskStorPool|lapiconst.MaskCrt|lapiconst.Created)

	status, got = h.call(t, "DELETE", "/v1/resource-definitions/pvc-a/resources/n2", nil)
	expect(t, "replica delete on an offline satellite", status, got, http.StatusOK, lapiconst.Deleted|lapiconst.MaskDel|lapiconst.MaskRsc)
	if got[1].code() != lapiconst.WarnNotConnected|lapiconst.MaskDel|lapiconst.MaskRsc || !h.emu.ResourcePlaced("pvc-a", "n2") {
		t.Errorf("the replica should wait for its satellite, flagged DELETE: %+v", got)
	}
	must(t, h.emu.SetNodeOnline("n2", true))
	clk.Advance(time.Second) // reconnected and synced
	if h.emu.ResourcePlaced("pvc-a", "n2") {
		t.Error("the replica should go once its satellite is back")
	}
}

// A node create without a type is a satellite; an empty type is no enum name
// (LinstorParsingUtils.asNodeType).
func TestMissingNodeType(t *testing.T) {
	h, _ := onlineHarness(t)
	body := map[string]any{"name": "n1", "net_interfaces": []map[string]any{{"name": "default", "address": "10.0.5.1", "satellite_port": 3366, "satellite_encryption_type": "PLAIN"}}}
	status, got := h.call(t, "POST", "/v1/nodes", body)
	expect(t, "no type", status, got, http.StatusCreated, lapiconst.Created|lapiconst.MaskCrt|lapiconst.MaskNode)
	if n, _ := h.emu.Node("n1"); n.Type != "SATELLITE" {
		t.Errorf("type = %q, want SATELLITE", n.Type)
	}
	body["name"], body["type"] = "n2", ""
	status, got = h.call(t, "POST", "/v1/nodes", body)
	expect(t, "empty type", status, got, http.StatusInternalServerError, lapiconst.FailInvldNodeType|lapiconst.MaskCrt|lapiconst.MaskNode)
}
