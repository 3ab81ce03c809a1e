package emulator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"

	"github.com/linstor-operator/linstor-operator/internal/emulator"
)

type harness struct {
	emu    *emulator.Emulator
	client *lapi.Client
	http   *http.Client
	url    string
	conf   *conformance
}

// newHarness serves the emulator behind the conformance validator when the spec is
// available, and plainly otherwise.
func newHarness(t *testing.T, validate bool) *harness {
	t.Helper()
	emu := emulator.New()
	h := &harness{emu: emu}
	var handler http.Handler = emu.Handler()
	srv := httptest.NewUnstartedServer(nil)
	h.url = "http://" + srv.Listener.Addr().String()
	if validate {
		h.conf = newConformance(t, loadSpec(t), h.url)
		handler = h.conf.wrap(handler, emu.Route)
	}
	srv.Config.Handler = handler
	srv.Start()
	t.Cleanup(srv.Close)
	u, _ := url.Parse(h.url)
	h.http = srv.Client()
	c, err := lapi.NewClient(lapi.BaseURL(u), lapi.HTTPClient(h.http))
	if err != nil {
		t.Fatal(err)
	}
	h.client = c
	return h
}

// raw sends a request golinstor has no method for and decodes the JSON answer.
func (h *harness) raw(t *testing.T, method, path string, body, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, h.url+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := h.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: decoding %q: %v", method, path, data, err)
		}
	}
	return resp.StatusCode
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustFail(t *testing.T, err error, contains string) {
	t.Helper()
	if err == nil {
		t.Fatalf("expected an error containing %q, got success", contains)
	}
	if !strings.Contains(err.Error(), contains) {
		t.Fatalf("expected an error containing %q, got %v", contains, err)
	}
}

// satellite is a node as the operator registers it: one interface with the satellite
// port and encryption (the server has no defaults for them).
func satellite(name, ip string) lapi.Node {
	return lapi.Node{Name: name, Type: "Satellite", NetInterfaces: []lapi.NetInterface{{Name: "default", Address: net.ParseIP(ip), SatellitePort: 3366, SatelliteEncryptionType: "PLAIN"}}}
}

// clock is a manual clock for the emulator's background work.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock(emu *emulator.Emulator) *clock {
	c := &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	emu.SetClock(c.Now)
	return c
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestConformance drives every emulated operation through golinstor (or plain HTTP
// where golinstor has no method) and validates each request and response against the
// official OpenAPI spec, with the server's corrections. It also walks the behaviour
// the operator relies on; semantics_test.go checks them one by one.
func TestConformance(t *testing.T) {
	h := newHarness(t, true)
	ctx := context.Background()
	c := h.client
	emu := h.emu
	clk := newClock(emu)
	emu.SetNewNodeDisks(lapi.PhysicalStorageNode{PhysicalStorageDevice: lapi.PhysicalStorageDevice{Device: "/dev/vdb", Model: "virtio"}, Size: 100 << 30})

	// Controller.
	v, err := c.Controller.GetVersion(ctx)
	must(t, err)
	if v.Version != emulator.DefaultVersion {
		t.Errorf("version = %q, want %q", v.Version, emulator.DefaultVersion)
	}
	must(t, c.Controller.Modify(ctx, lapi.GenericPropsModify{OverrideProps: map[string]string{"DrbdOptions/Net/protocol": "C", "Aux/a": "1"}}))
	mustFail(t, c.Controller.Modify(ctx, lapi.GenericPropsModify{OverrideProps: map[string]string{"DrbdOptions/Net/protocol": "c"}}), "is not valid")
	must(t, c.Controller.DeleteProp(ctx, "Aux/a"))
	props, err := c.Controller.GetProps(ctx)
	must(t, err)
	if props["DrbdOptions/Net/protocol"] != "C" || props["Aux/a"] != "" {
		t.Errorf("controller props = %v", props)
	}

	// Passphrase: one status object; create, refuse a second create, lock on restart,
	// enter, modify (which does not unlock).
	var status map[string]string
	h.raw(t, "GET", "/v1/encryption/passphrase", nil, &status)
	if status["status"] != "unset" {
		t.Errorf("passphrase status = %v, want unset", status)
	}
	must(t, c.Encryption.Create(ctx, lapi.Passphrase{NewPassphrase: "s3cret"}))
	mustFail(t, c.Encryption.Create(ctx, lapi.Passphrase{NewPassphrase: "other"}), "already exists")
	emu.RestartController()
	h.raw(t, "GET", "/v1/encryption/passphrase", nil, &status)
	if status["status"] != "locked" {
		t.Errorf("after restart status = %v, want locked", status)
	}
	mustFail(t, c.Encryption.Enter(ctx, "wrong"), "incorrect")
	must(t, c.Encryption.Enter(ctx, "s3cret"))
	mustFail(t, c.Encryption.Modify(ctx, lapi.Passphrase{OldPassphrase: "bad", NewPassphrase: "n"}), "Wrong passphrase")
	must(t, c.Encryption.Modify(ctx, lapi.Passphrase{OldPassphrase: "s3cret", NewPassphrase: "n3w"}))
	h.raw(t, "GET", "/v1/encryption/passphrase", nil, &status)
	if status["status"] != "unlocked" {
		t.Errorf("after enter status = %v, want unlocked", status)
	}

	// The node event stream, validated event by event against EventNode and
	// EventNodeModified as the rest of the run sends events.
	events := h.subscribe(t)

	// Nodes: CONNECTED while the satellite authenticates, then ONLINE.
	for i, n := range []string{"n1", "n2", "n3"} {
		must(t, c.Nodes.Create(ctx, satellite(n, "10.0.0."+string(rune('1'+i)))))
	}
	mustFail(t, c.Nodes.Create(ctx, satellite("N1", "10.0.0.9")), "already exists")
	mustFail(t, c.Nodes.Create(ctx, satellite("-bad", "10.0.0.9")), "invalid")
	mustFail(t, c.Nodes.Create(ctx, lapi.Node{Name: "n9", Type: "satellite", NetInterfaces: []lapi.NetInterface{{Name: "default", Address: net.ParseIP("10.0.0.9")}}}), "No satellite connection")
	_, err = c.Nodes.Get(ctx, "missing")
	if !errors.Is(err, lapi.NotFoundError) {
		t.Errorf("get missing node: %v, want NotFoundError", err)
	}
	n1, err := c.Nodes.Get(ctx, "n1")
	must(t, err)
	if n1.ConnectionStatus != "CONNECTED" || n1.Type != "SATELLITE" {
		t.Errorf("new node n1 = %s %s, want SATELLITE CONNECTED", n1.Type, n1.ConnectionStatus)
	}
	clk.Advance(time.Second)
	n1, err = c.Nodes.Get(ctx, "N1") // names are case-insensitive
	must(t, err)
	if n1.ConnectionStatus != "ONLINE" || len(n1.NetInterfaces) != 1 || !n1.NetInterfaces[0].IsActive || n1.NetInterfaces[0].SatellitePort != 3366 || n1.Props["CurStltConnName"] != "default" {
		t.Errorf("node n1 = %+v", n1)
	}
	all, err := c.Nodes.GetAll(ctx)
	must(t, err)
	if len(all) != 3 {
		t.Errorf("nodes = %d, want 3", len(all))
	}
	must(t, c.Nodes.Modify(ctx, "n1", lapi.NodeModify{GenericPropsModify: lapi.GenericPropsModify{OverrideProps: map[string]string{"Aux/zone": "a"}}}))
	mustFail(t, c.Nodes.Modify(ctx, "n1", lapi.NodeModify{GenericPropsModify: lapi.GenericPropsModify{OverrideProps: map[string]string{"Aux/rack": "1", "NoSuch/Key": "x"}}}), "not whitelisted")
	if n, _ := emu.Node("n1"); n.Props["Aux/rack"] != "" {
		t.Error("a refused modification changed a property")
	}

	// Net interfaces: the active one can be deleted; another with a port takes over.
	must(t, c.Nodes.CreateNetInterface(ctx, "n1", lapi.NetInterface{Name: "data", Address: net.ParseIP("192.168.1.1"), SatellitePort: 3366, SatelliteEncryptionType: "PLAIN"}))
	must(t, c.Nodes.ModifyNetInterface(ctx, "n1", "data", lapi.NetInterface{Name: "data", Address: net.ParseIP("192.168.1.2"), IsActive: true}))
	nif, err := c.Nodes.GetNetInterface(ctx, "n1", "data")
	must(t, err)
	if nif.Address.String() != "192.168.1.2" || !nif.IsActive {
		t.Errorf("net interface = %+v", nif)
	}
	must(t, c.Nodes.DeleteNetinterface(ctx, "n1", "data"))
	nifs, err := c.Nodes.GetNetInterfaces(ctx, "n1")
	must(t, err)
	if len(nifs) != 1 || !nifs[0].IsActive {
		t.Errorf("net interfaces = %+v, want default active", nifs)
	}
	must(t, c.Nodes.DeleteNetinterface(ctx, "n1", "gone")) // a warning, not an error
	clk.Advance(time.Second)

	// Storage pools, device pools, physical storage.
	for _, n := range []string{"n1", "n2"} {
		must(t, c.Nodes.CreateStoragePool(ctx, n, lapi.StoragePool{StoragePoolName: "thin", ProviderKind: lapi.LVM_THIN, Props: map[string]string{"StorDriver/LvmVg": "vg", "StorDriver/ThinPool": "thin"}}))
	}
	mustFail(t, c.Nodes.CreateStoragePool(ctx, "n1", lapi.StoragePool{StoragePoolName: "THIN", ProviderKind: lapi.LVM_THIN}), "already exists")
	must(t, c.Nodes.ModifyStoragePool(ctx, "n1", "thin", lapi.GenericPropsModify{OverrideProps: map[string]string{"Aux/tier": "fast"}}))
	sp, err := c.Nodes.GetStoragePool(ctx, "n1", "thin")
	must(t, err)
	if sp.Props["Aux/tier"] != "fast" || sp.Props["StorDriver/StorPoolName"] != "vg/thin" || sp.TotalCapacity == 0 {
		t.Errorf("pool = %+v", sp)
	}
	// A pool whose thin volume is gone carries the satellite's error in reports, on the
	// node's list, the pool and the view; the spec validates the shape.
	must(t, emu.BreakStoragePool("n1", "thin"))
	sp, err = c.Nodes.GetStoragePool(ctx, "n1", "thin")
	must(t, err)
	if len(sp.Reports) != 1 || !sp.Reports[0].Is(lapiconst.FailUnknownError) || sp.TotalCapacity != 0 {
		t.Errorf("broken pool = %+v", sp)
	}
	if _, err := c.Nodes.GetStoragePools(ctx, "n1"); err != nil {
		t.Error(err)
	}
	if _, err := c.Nodes.GetStoragePoolView(ctx); err != nil {
		t.Error(err)
	}
	must(t, emu.RepairStoragePool("n1", "thin"))
	disks, err := c.Nodes.GetPhysicalStorage(ctx, "n3")
	must(t, err)
	if len(disks) != 1 || disks[0].Device != "/dev/vdb" {
		t.Errorf("n3 disks = %+v", disks)
	}
	view, err := c.Nodes.GetPhysicalStorageView(ctx)
	must(t, err)
	if len(view) != 1 || len(view[0].Nodes) != 3 {
		t.Errorf("physical storage view = %+v", view)
	}
	must(t, c.Nodes.CreateDevicePool(ctx, "n3", lapi.PhysicalStorageCreate{ProviderKind: lapi.LVM_THIN, DevicePaths: []string{"/dev/vdb"}, PoolName: "linstor_thin/thin", WithStoragePool: lapi.PhysicalStorageStoragePoolCreate{Name: "thin"}}))
	mustFail(t, c.Nodes.CreateDevicePool(ctx, "n3", lapi.PhysicalStorageCreate{ProviderKind: lapi.LVM, DevicePaths: []string{"/dev/vdb"}, PoolName: "vg2"}), "Failed to pvcreate on device: /dev/vdb")
	sp3, err := c.Nodes.GetStoragePool(ctx, "n3", "thin")
	must(t, err)
	if sp3.TotalCapacity != 100<<20 {
		t.Errorf("device pool capacity = %d KiB, want %d", sp3.TotalCapacity, 100<<20)
	}
	pools, err := c.Nodes.GetStoragePools(ctx, "n1")
	must(t, err)
	if len(pools) != 2 { // thin + DfltDisklessStorPool
		t.Errorf("pools on n1 = %d, want 2", len(pools))
	}
	spView, err := c.Nodes.GetStoragePoolView(ctx)
	must(t, err)
	if len(spView) != 6 {
		t.Errorf("pool view = %d, want 6", len(spView))
	}

	// Node connections.
	must(t, c.Connections.SetNodeConnection(ctx, "n1", "n2", lapi.GenericPropsModify{OverrideProps: map[string]string{"Paths/data/n1": "default", "Paths/data/n2": "default"}}))
	mustFail(t, c.Connections.SetNodeConnection(ctx, "n1", "n2", lapi.GenericPropsModify{OverrideProps: map[string]string{"Paths/data/n1": "nosuchnic"}}), "NetInterface for node unknown")
	conns, err := c.Connections.GetNodeConnections(ctx, "n1", "n2")
	must(t, err)
	if len(conns) != 1 || conns[0].Props["Paths/data/n1"] != "default" {
		t.Errorf("node connections = %+v", conns)
	}

	// Resources: replicas on n1 and n2, the second resyncs before it is UpToDate.
	must(t, c.ResourceDefinitions.Create(ctx, lapi.ResourceDefinitionCreate{ResourceDefinition: lapi.ResourceDefinition{Name: "pvc-1"}}))
	must(t, c.ResourceDefinitions.CreateVolumeDefinition(ctx, "pvc-1", lapi.VolumeDefinitionCreate{VolumeDefinition: lapi.VolumeDefinition{SizeKib: 1 << 20}}))
	vds, err := c.ResourceDefinitions.GetVolumeDefinitions(ctx, "pvc-1")
	must(t, err)
	if len(vds) != 1 {
		t.Errorf("volume definitions = %+v", vds)
	}
	for _, n := range []string{"n1", "n2"} {
		must(t, c.Resources.Create(ctx, lapi.ResourceCreate{Resource: lapi.Resource{Name: "pvc-1", NodeName: n, Props: map[string]string{"StorPoolName": "thin"}}}))
	}
	rview, err := c.Resources.GetResourceView(ctx, &lapi.ListOpts{Node: []string{"n2"}})
	must(t, err)
	if len(rview) != 1 || rview[0].Volumes[0].State.DiskState != "Inconsistent" {
		t.Errorf("a new replica should resync first: %+v", rview)
	}
	sync, err := c.ResourceDefinitions.SyncStatus(ctx, "pvc-1")
	must(t, err)
	if sync.SyncedOnAll {
		t.Error("sync status: want not synced while the new replica resyncs")
	}
	clk.Advance(time.Minute)
	must(t, emu.SetInUse("pvc-1", "n1", true))
	rscs, err := c.Resources.GetAll(ctx, "pvc-1")
	must(t, err)
	if len(rscs) != 2 {
		t.Errorf("resources = %d, want 2", len(rscs))
	}
	rview, err = c.Resources.GetResourceView(ctx)
	must(t, err)
	if len(rview) != 2 || rview[1].Volumes[0].State.DiskState != "UpToDate" || !rview[0].LayerObject.Drbd.Connections["n2"].Connected {
		t.Errorf("resource view = %+v", rview)
	}
	sync, err = c.ResourceDefinitions.SyncStatus(ctx, "pvc-1")
	must(t, err)
	if !sync.SyncedOnAll {
		t.Error("sync status: want synced")
	}
	rdefs, err := c.ResourceDefinitions.GetAll(ctx, lapi.RDGetAllRequest{})
	must(t, err)
	if len(rdefs) != 1 {
		t.Errorf("resource definitions = %d", len(rdefs))
	}

	// Data guards as the server has them: in use refuses; pools with volumes stay.
	mustFail(t, c.Nodes.Delete(ctx, "n1"), "in use")
	mustFail(t, c.Nodes.DeleteStoragePool(ctx, "n2", "thin"), "still using it")
	mustFail(t, c.Resources.Delete(ctx, "pvc-1", "n1"), "in use")
	must(t, emu.SetInUse("pvc-1", "n1", false))
	mustFail(t, c.Nodes.Lost(ctx, "n2"), "still connected")

	// Connection states: an offline satellite reports no resource state.
	must(t, emu.SetNodeOnline("n2", false))
	n2, err := c.Nodes.Get(ctx, "n2")
	must(t, err)
	if n2.ConnectionStatus != "OFFLINE" {
		t.Errorf("n2 status = %s, want OFFLINE", n2.ConnectionStatus)
	}
	rview, err = c.Resources.GetResourceView(ctx)
	must(t, err)
	if rview[0].LayerObject.Drbd.Connections["n2"].Connected || rview[1].Volumes[0].State.DiskState != "" {
		t.Errorf("offline satellite: view = %+v", rview)
	}
	must(t, emu.SetSatelliteVersion("n3", "1.32.0"))
	n3, err := c.Nodes.Get(ctx, "n3")
	must(t, err)
	if n3.ConnectionStatus != "VERSION_MISMATCH" {
		t.Errorf("n3 status = %s, want VERSION_MISMATCH", n3.ConnectionStatus)
	}
	must(t, emu.SetSatelliteVersion("n3", ""))

	// Evacuate, evict, restore, reconnect, lost.
	must(t, c.Nodes.Evacuate(ctx, "n3", lapi.NodeEvacuate{}))
	mustFail(t, c.Nodes.Evict(ctx, "n3"), "online node")
	must(t, emu.SetNodeOnline("n3", false))
	must(t, c.Nodes.Evict(ctx, "n3"))
	n3, err = c.Nodes.Get(ctx, "n3")
	must(t, err)
	if !contains(n3.Flags, "EVICTED") || !contains(n3.Flags, "DELETE") || !contains(n3.Flags, "EVACUATE") || n3.ConnectionStatus != "OFFLINE" {
		t.Errorf("n3 after evict = %+v", n3)
	}
	must(t, c.Nodes.Delete(ctx, "n3")) // an evicted node: a warning, nothing happens
	if _, ok := emu.Node("n3"); !ok {
		t.Error("deleting an evicted node removed it")
	}
	must(t, c.Nodes.Restore(ctx, "n3", lapi.NodeRestore{}))
	must(t, emu.SetNodeOnline("n3", true))
	clk.Advance(time.Second)
	n3, err = c.Nodes.Get(ctx, "n3")
	must(t, err)
	if len(n3.Flags) != 0 || n3.ConnectionStatus != "ONLINE" {
		t.Errorf("n3 after restore = %+v", n3)
	}
	mustFail(t, c.Nodes.Restore(ctx, "n3", lapi.NodeRestore{}), "neither evicted nor evacuated")
	must(t, c.Nodes.Reconnect(ctx, "n1"))
	must(t, c.Nodes.Lost(ctx, "n2")) // offline: allowed, and LINSTOR does not check replicas here
	if _, ok := emu.Node("n2"); ok {
		t.Error("lost node still exists")
	}

	// Clean-up paths, and deleting what is already gone.
	must(t, c.Resources.Delete(ctx, "pvc-1", "n1"))
	must(t, c.Resources.Delete(ctx, "pvc-1", "n1"))
	must(t, c.ResourceDefinitions.Delete(ctx, "pvc-1"))
	must(t, c.ResourceDefinitions.Delete(ctx, "pvc-1"))
	must(t, c.Nodes.DeleteStoragePool(ctx, "n1", "thin"))
	must(t, c.Nodes.DeleteStoragePool(ctx, "n1", "thin"))
	must(t, c.Nodes.Delete(ctx, "n1"))
	must(t, c.Nodes.Delete(ctx, "n1"))

	// Faults: a 503 once, then recovery; latency.
	emu.InjectFault("GET /v1/nodes", emulator.Fault{Status: http.StatusServiceUnavailable, Times: 1})
	_, err = c.Nodes.GetAll(ctx)
	mustFail(t, err, "injected fault")
	_, err = c.Nodes.GetAll(ctx)
	must(t, err)
	emu.InjectFault("GET /v1/controller/version", emulator.Fault{Latency: 50 * time.Millisecond, Times: 1})
	start := time.Now()
	_, err = c.Controller.GetVersion(ctx)
	must(t, err)
	if time.Since(start) < 50*time.Millisecond {
		t.Error("latency fault not applied")
	}

	// Every kind of node event went through the validator; a restart ends the stream.
	emu.RestartController()
	seen := map[string]bool{}
	for ev := range events.events {
		seen[ev.name] = true
	}
	for _, name := range []string{"node-create", "node-modified", "node-evacuate", "node-evicted", "node-restored", "node-delete"} {
		if !seen[name] {
			t.Errorf("no %s event in the run", name)
		}
	}
	must(t, c.Encryption.Enter(ctx, "n3w"))

	// Health and metrics.
	if code := h.raw(t, "GET", "/health", nil, nil); code != http.StatusOK {
		t.Errorf("/health = %d", code)
	}
	resp, err := h.http.Get(h.url + "/metrics")
	must(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `linstor_node_state{node="n3",address="10.0.0.3",nodetype="SATELLITE",encryption="PLAIN",port="3366"} 2.0`) { // 2: ONLINE
		t.Errorf("/metrics lacks n3 state:\n%s", body)
	}

	// The request log counts what the operator did.
	if emu.MutatingRequests() < 20 {
		t.Errorf("mutating requests = %d, want >= 20", emu.MutatingRequests())
	}

	h.conf.report(t)
	validated, exempted := keys(h.conf.validated), keys(h.conf.exempted)
	t.Logf("%d operations validated against the spec:\n  %s", len(validated), strings.Join(validated, "\n  "))
	t.Logf("%d exempt operations (not in the spec):\n  %s", len(exempted), strings.Join(exempted, "\n  "))
	for _, c := range serverCorrections {
		t.Logf("spec corrected where the server differs: %s (%s)", c.what, c.source)
	}
	if len(validated) < 25 {
		t.Errorf("only %d operations validated, want at least 25", len(validated))
	}
	for op := range exempt {
		if h.conf.exempted[op] == 0 {
			t.Errorf("exempt operation %s was never exercised", op)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
