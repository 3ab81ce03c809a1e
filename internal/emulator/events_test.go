package emulator_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"

	"github.com/linstor-operator/linstor-operator/internal/emulator"
)

// event is one event of GET /v1/events/nodes with its data decoded.
type event struct {
	name string
	data struct {
		Node    *lapi.Node `json:"node"`
		OldNode *lapi.Node `json:"old_node"`
		NewNode *lapi.Node `json:"new_node"`
	}
	raw string
}

// stream is an open GET /v1/events/nodes.
type stream struct {
	events chan event // closed when the stream ends
}

// subscribe opens the node event stream; it is closed when the test ends.
func (h *harness) subscribe(t *testing.T) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", h.url+"/v1/events/nodes", nil)
	resp, err := h.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET /v1/events/nodes: %s, Content-Type %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	s := &stream{events: make(chan event, 100)}
	go func() {
		defer close(s.events)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var ev event
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				_ = json.Unmarshal([]byte(ev.raw), &ev.data)
				s.events <- ev
				ev = event{}
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.raw = strings.TrimPrefix(line, "data: ")
			default:
				ev.name = "unexpected line " + line
			}
		}
	}()
	return s
}

// next is the next event; the events of a request are written before it is answered.
func (s *stream) next(t *testing.T) event {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		if !ok {
			t.Fatal("the event stream ended")
		}
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
	}
	return event{}
}

// expectNode checks the next event's name and node.
func (s *stream) expectNode(t *testing.T, name, node string) event {
	t.Helper()
	ev := s.next(t)
	n := ev.data.Node
	if name == "node-modified" {
		n = ev.data.NewNode
	}
	if ev.name != name || n == nil || n.Name != node {
		t.Fatalf("event %s %s, want %s of node %s", ev.name, ev.raw, name, node)
	}
	return ev
}

func (s *stream) expectEnd(t *testing.T) {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		if ok {
			t.Fatalf("event %s %s, want the stream to end", ev.name, ev.raw)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the event stream did not end within 5s")
	}
}

// Node events: node-create (OFFLINE: the satellite is contacted after it), node-modified
// with old_node already showing the change, node-evicted, node-restored, node-evacuate
// and node-delete (with DELETE); nothing for refused requests, connection changes,
// reconnect, net interfaces, storage pools or node lost (REST/events/Events.java,
// EventNodeHandlerBridge; H/CtrlNodeCrtApiCallHandler.java:198,
// H/CtrlNodeApiCallHandler.java:591, :1422, :1563, :1900,
// H/CtrlNodeDeleteApiCallHandler.java:481).
func TestNodeEvents(t *testing.T) {
	h, clk := onlineHarness(t, "n1")
	ctx := context.Background()
	s := h.subscribe(t)

	must(t, h.client.Nodes.Create(ctx, satellite("n2", "10.0.1.2")))
	created := s.expectNode(t, "node-create", "n2").data.Node
	if created.ConnectionStatus != "OFFLINE" || len(created.StorageProviders) != 0 || created.Props["CurStltConnName"] != "default" || len(created.NetInterfaces) != 1 {
		t.Errorf("node-create node = %+v, want OFFLINE, no providers, its interface", created)
	}
	clk.Advance(time.Second)

	must(t, h.client.Nodes.Modify(ctx, "n2", lapi.NodeModify{GenericPropsModify: lapi.GenericPropsModify{OverrideProps: map[string]string{"Aux/zone": "a"}}}))
	mod := s.expectNode(t, "node-modified", "n2")
	if mod.data.OldNode == nil || mod.data.OldNode.Props["Aux/zone"] != "a" || mod.data.NewNode.Props["Aux/zone"] != "a" {
		t.Errorf("node-modified = %s, want old_node and new_node both with the new property", mod.raw)
	}

	// Nothing for these.
	status, _ := h.call(t, "PUT", "/v1/nodes/n2", lapi.NodeModify{GenericPropsModify: lapi.GenericPropsModify{OverrideProps: map[string]string{"Foo/Bar": "1"}}})
	if status != http.StatusInternalServerError {
		t.Fatalf("modify with an unknown key: HTTP %d", status)
	}
	must(t, h.emu.SetNodeOnline("n2", false))
	must(t, h.emu.SetNodeOnline("n1", false))
	must(t, h.emu.SetNodeOnline("n1", true))
	clk.Advance(time.Second)
	must(t, h.client.Nodes.CreateNetInterface(ctx, "n1", lapi.NetInterface{Name: "data", Address: net.ParseIP("10.0.9.1"), SatellitePort: 3366, SatelliteEncryptionType: "PLAIN", IsActive: true}))
	must(t, h.client.Nodes.ModifyNetInterface(ctx, "n1", "data", lapi.NetInterface{Name: "data", Address: net.ParseIP("10.0.9.2")}))
	must(t, h.client.Nodes.DeleteNetinterface(ctx, "n1", "default"))
	h.call(t, "PUT", "/v1/nodes/n1/reconnect", nil)
	clk.Advance(time.Second)
	addPool(t, h, "n1")
	must(t, h.client.Nodes.DeleteStoragePool(ctx, "n1", "thin"))
	status, _ = h.call(t, "PUT", "/v1/nodes/n1/evict", nil) // refused: ONLINE
	if status != http.StatusInternalServerError {
		t.Fatalf("evicting an ONLINE node: HTTP %d", status)
	}

	h.call(t, "PUT", "/v1/nodes/n2/evict", nil)
	evicted := s.expectNode(t, "node-evicted", "n2").data.Node
	if !contains(evicted.Flags, lapiconst.FlagEvicted) || !contains(evicted.Flags, lapiconst.FlagDelete) {
		t.Errorf("node-evicted flags = %v, want EVICTED and DELETE", evicted.Flags)
	}
	h.call(t, "PUT", "/v1/nodes/n2/evict", nil) // again: sent again
	s.expectNode(t, "node-evicted", "n2")
	h.call(t, "PUT", "/v1/nodes/n2/restore", lapi.NodeRestore{})
	if restored := s.expectNode(t, "node-restored", "n2").data.Node; len(restored.Flags) != 0 {
		t.Errorf("node-restored flags = %v, want none", restored.Flags)
	}
	h.call(t, "PUT", "/v1/nodes/n1/evacuate", lapi.NodeEvacuate{})
	if ev := s.expectNode(t, "node-evacuate", "n1").data.Node; !contains(ev.Flags, lapiconst.FlagEvacuate) {
		t.Errorf("node-evacuate flags = %v, want EVACUATE", ev.Flags)
	}

	must(t, h.client.Nodes.Lost(ctx, "n2")) // offline: lost, without an event
	must(t, h.client.Nodes.Delete(ctx, "n1"))
	if gone := s.expectNode(t, "node-delete", "n1").data.Node; !contains(gone.Flags, lapiconst.FlagDelete) || gone.ConnectionStatus != "ONLINE" {
		t.Errorf("node-delete node = %+v, want DELETE and its connection as it was", gone)
	}
	must(t, h.client.Nodes.Create(ctx, satellite("n3", "10.0.1.3")))
	s.expectNode(t, "node-create", "n3") // nothing came in between
}

// A restart ends every stream; the server keeps subscribers in memory
// (REST/events/EventHandlerBridge.java). Events sent before it are delivered first,
// and a new stream starts empty.
func TestNodeEventsEndOnRestart(t *testing.T) {
	h, _ := onlineHarness(t)
	ctx := context.Background()
	s := h.subscribe(t)
	must(t, h.client.Nodes.Create(ctx, satellite("n1", "10.0.1.1")))
	h.emu.RestartController()
	s.expectNode(t, "node-create", "n1")
	s.expectEnd(t)

	again := h.subscribe(t)
	must(t, h.client.Nodes.Modify(ctx, "n1", lapi.NodeModify{}))
	again.expectNode(t, "node-modified", "n1")
	if n := h.emu.RequestCounts()["GET /v1/events/nodes"]; n != 2 {
		t.Errorf("RequestCounts counts %d streams, want 2", n)
	}
}

// A subscriber that does not read never holds up the API: once it has fallen
// EventBuffer events behind it is dropped, and its stream ends when its write returns.
func TestNodeEventsSlowSubscriber(t *testing.T) {
	h, _ := onlineHarness(t, "n1")
	ctx := context.Background()
	w := &stalledWriter{header: http.Header{}, subscribed: make(chan struct{}), release: make(chan struct{})}
	reqCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		h.emu.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/v1/events/nodes", nil).WithContext(reqCtx))
	}()
	<-w.subscribed
	start := time.Now()
	for i := 0; i < emulator.EventBuffer+2; i++ { // one stalls in Write, EventBuffer wait, one too many
		must(t, h.client.Nodes.Modify(ctx, "n1", lapi.NodeModify{}))
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("%d modifies took %s with a stalled subscriber", emulator.EventBuffer+2, d)
	}
	close(w.release)
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream of a dropped subscriber did not end")
	}
	if n := w.writes.Load(); n != 1 {
		t.Errorf("%d events written after the subscriber was dropped, want only the stalled one", n-1)
	}
}

// stalledWriter is a client that stops reading: its first Write blocks until release.
type stalledWriter struct {
	header     http.Header
	once       sync.Once
	subscribed chan struct{}
	release    chan struct{}
	writes     atomic.Int32
}

func (w *stalledWriter) Header() http.Header {
	w.once.Do(func() { close(w.subscribed) }) // the handler subscribes before it sets headers
	return w.header
}

func (w *stalledWriter) WriteHeader(int) {}

func (w *stalledWriter) Write(p []byte) (int, error) {
	<-w.release
	w.writes.Add(1)
	return len(p), nil
}
