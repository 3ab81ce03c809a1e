package emulator

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// onlineTestNodes is withTestNodes with each satellite connected and ONLINE at once,
// so the view reports the replicas' states.
func onlineTestNodes(e *Emulator, names ...string) {
	withTestNodes(e, names...)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.timing.SatelliteConnect = 0
	for _, name := range names {
		e.nodes[strings.ToLower(name)].Props = map[string]string{curStltConnKey: "default"}
	}
}

// benchPlacements: volumes resources of three replicas over nodes n0…n(nodes-1), one
// diskless replica every fifth resource and one in use every seventh.
func benchPlacements(volumes, nodes int) []Placement {
	var ps []Placement
	for v := range volumes {
		for r := range 3 {
			p := Placement{Resource: fmt.Sprintf("pvc-%04d", v), Node: fmt.Sprintf("n%d", (v+r)%nodes), Pool: "DfltStorPool"}
			if r == 2 && v%5 == 0 {
				p.Pool = ""
			}
			p.InUse = r == 0 && v%7 == 0
			ps = append(ps, p)
		}
	}
	return ps
}

func nodeNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("n%d", i)
	}
	return out
}

// resourceView is GET /v1/view/resources as generic JSON, with the random UUIDs
// (each emulator draws its own) removed.
func resourceView(t *testing.T, e *Emulator) []any {
	t.Helper()
	srv := httptest.NewServer(e.Handler())
	defer srv.Close()
	status, body := call(t, srv, http.MethodGet, "/v1/view/resources", nil)
	if status != http.StatusOK {
		t.Fatalf("GET /v1/view/resources: %d %s", status, body)
	}
	var out []any
	must(t, json.Unmarshal(body, &out))
	withoutUUIDs(out)
	return out
}

func withoutUUIDs(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if strings.EqualFold(k, "uuid") {
				delete(v, k)
				continue
			}
			withoutUUIDs(x)
		}
	case []any:
		for _, x := range v {
			withoutUUIDs(x)
		}
	}
}

// Placing replicas in one batch gives what placing them one by one gives: the same
// view, layer data and DRBD node ids included, and the resource group named.
func TestPlaceResourcesEqualsOneByOne(t *testing.T) {
	nodes := nodeNames(5)
	ps := benchPlacements(40, len(nodes))

	oneByOne := New()
	onlineTestNodes(oneByOne, nodes...)
	must(t, oneByOne.SetResourceGroup("sc-three", 3, ""))
	for _, p := range ps {
		must(t, oneByOne.PlaceResource(p.Resource, p.Node, p.Pool, p.InUse))
		must(t, oneByOne.SetResourceGroup("sc-three", 3, p.Resource))
	}
	batch := New()
	onlineTestNodes(batch, nodes...)
	must(t, batch.SetResourceGroup("sc-three", 3, ""))
	for i := range ps {
		ps[i].ResourceGroup = "sc-three"
	}
	must(t, batch.PlaceResources(ps))
	if rg := rdGroup(t, batch, ps[0].Resource); rg != "sc-three" {
		t.Errorf("resource group of %s: %q, want sc-three", ps[0].Resource, rg)
	}

	want, got := resourceView(t, oneByOne), resourceView(t, batch)
	if len(want) != len(ps) {
		t.Fatalf("one by one: %d replicas in the view, want %d", len(want), len(ps))
	}
	if !reflect.DeepEqual(got, want) {
		for i := range min(len(got), len(want)) {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Fatalf("replica %d: batch %v\none by one %v", i, got[i], want[i])
			}
		}
		t.Fatalf("batch: %d replicas in the view, one by one %d", len(got), len(want))
	}
}

// rdGroup is the resource group of rd as GET /v1/resource-definitions shows it.
func rdGroup(t *testing.T, e *Emulator, rd string) string {
	t.Helper()
	srv := httptest.NewServer(e.Handler())
	defer srv.Close()
	status, body := call(t, srv, http.MethodGet, "/v1/resource-definitions", nil)
	var rds []struct {
		Name              string `json:"name"`
		ResourceGroupName string `json:"resource_group_name"`
	}
	if status != http.StatusOK || json.Unmarshal(body, &rds) != nil {
		t.Fatalf("GET /v1/resource-definitions: %d %s", status, body)
	}
	for _, d := range rds {
		if d.Name == rd {
			return d.ResourceGroupName
		}
	}
	t.Fatalf("%s not listed", rd)
	return ""
}

// A placement that fails stops the batch with an error naming it; the placements
// before it stay, as PlaceResource called for each would leave them. A resource group
// must exist.
func TestPlaceResourcesStopsAtTheFirstFailure(t *testing.T) {
	e := New()
	onlineTestNodes(e, "n0", "n1")
	err := e.PlaceResources([]Placement{
		{Resource: "pvc-a", Node: "n0", Pool: "DfltStorPool"},
		{Resource: "pvc-a", Node: "n9", Pool: "DfltStorPool"},
		{Resource: "pvc-a", Node: "n1", Pool: "DfltStorPool"},
	})
	if err == nil || !strings.Contains(err.Error(), "placement 1") || !strings.Contains(err.Error(), "n9") {
		t.Errorf("error %v, want one naming placement 1 on n9", err)
	}
	if !e.ResourcePlaced("pvc-a", "n0") || e.ResourcePlaced("pvc-a", "n1") {
		t.Errorf("placed on n0 %v (want true), on n1 %v (want false)", e.ResourcePlaced("pvc-a", "n0"), e.ResourcePlaced("pvc-a", "n1"))
	}
	err = e.PlaceResources([]Placement{{Resource: "pvc-b", Node: "n0", Pool: "DfltStorPool", ResourceGroup: "missing"}})
	if err == nil || !strings.Contains(err.Error(), `"missing" not found`) {
		t.Errorf("a missing resource group: error %v", err)
	}
}

// A batch is committed to the k8s database before PlaceResources returns: the rows
// in the API server are the memory's, and a controller that starts on that database
// holds every replica and shows them as the first one did.
func TestPlaceResourcesPersists(t *testing.T) {
	c := apiServer(t)
	e := New()
	nodes := nodeNames(4)
	onlineTestNodes(e, nodes...)
	runController(t, c, DefaultVersion)
	coupledWithDatabase(t, e, c, c, DefaultVersion)

	ps := benchPlacements(30, len(nodes))
	must(t, e.PlaceResources(ps))
	databaseEqualsMemory(t, e, c)

	e.mu.Lock()
	schema := e.writeSchema()
	e.mu.Unlock()
	stored, err := readDatabaseRows(context.Background(), c, tablesOf(schema))
	must(t, err)
	restarted := New()
	must(t, restarted.LoadDatabaseRows(stored))
	if !tablesEqual(restarted.DatabaseRows(), e.DatabaseRows()) {
		t.Error("the controller started on the database holds other rows than the one that placed them")
	}
	for _, p := range ps {
		if !restarted.ResourcePlaced(p.Resource, p.Node) {
			t.Errorf("after the restart %s is not on %s", p.Resource, p.Node)
		}
	}
	// Its satellites connect again: the view is the first controller's, UUIDs and all.
	restarted.SetTiming(Timing{})
	for _, n := range nodes {
		must(t, restarted.SetNodeOnline(n, true))
	}
	fresh := New()
	onlineTestNodes(fresh, nodes...)
	must(t, fresh.PlaceResources(ps))
	if got, want := resourceView(t, restarted), resourceView(t, fresh); !reflect.DeepEqual(got, want) {
		t.Errorf("view after the restart:\n%v\nwant:\n%v", got, want)
	}
}
