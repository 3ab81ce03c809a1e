package linstor_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	lapi "github.com/LINBIT/golinstor/client"

	"github.com/linstor-operator/linstor-operator/internal/emulator"
	"github.com/linstor-operator/linstor-operator/pkg/linstor"
)

// follow runs NodeEvents in the background: it returns the events, a channel closed
// once connected, and the channel that gets NodeEvents' result.
func follow(ctx context.Context, conn *linstor.Connection) (<-chan linstor.NodeEvent, <-chan struct{}, <-chan error) {
	events := make(chan linstor.NodeEvent, 100)
	connected := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- conn.NodeEvents(ctx, func() { close(connected) }, func(e linstor.NodeEvent) { events <- e })
	}()
	return events, connected, done
}

func wait[T any](t *testing.T, what string, c <-chan T) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("no %s within 5s", what)
	}
	var zero T
	return zero
}

func expectEvent(t *testing.T, events <-chan linstor.NodeEvent, name, node string) linstor.NodeEvent {
	t.Helper()
	e := wait(t, name, events)
	if e.Name != name || e.Node.Name != node {
		t.Fatalf("event %s of node %q, want %s of %s", e.Name, e.Node.Name, name, node)
	}
	return e
}

// The operator follows node events of the emulated controller; cancelling ends the
// stream without an error.
func TestNodeEvents(t *testing.T) {
	_, conn := connect(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, connected, done := follow(ctx, conn)
	wait(t, "connection", connected)

	addNode(t, conn, "n1", "10.0.0.1")
	if e := expectEvent(t, events, linstor.NodeCreated, "n1"); e.OldNode != nil {
		t.Errorf("node-create with an old node: %+v", e.OldNode)
	}
	err := conn.Nodes.Modify(ctx, "n1", lapi.NodeModify{GenericPropsModify: lapi.GenericPropsModify{OverrideProps: map[string]string{"Aux/zone": "a"}}})
	if err != nil {
		t.Fatal(err)
	}
	e := expectEvent(t, events, linstor.NodeModified, "n1")
	if e.OldNode == nil || e.Node.Props["Aux/zone"] != "a" || e.OldNode.Props["Aux/zone"] != "a" {
		t.Errorf("node-modified = %+v, want the new property in both nodes (LINSTOR's old_node is taken after the change)", e)
	}
	if err := conn.Nodes.DeleteStoragePool(ctx, "n1", "thin"); err != nil {
		t.Fatal(err)
	}
	if err := conn.Nodes.Delete(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, events, linstor.NodeDeleted, "n1")

	cancel()
	if err := wait(t, "end", done); err != nil {
		t.Errorf("NodeEvents after cancel = %v, want nil", err)
	}
}

// A controller restart ends the stream: NodeEvents reports it.
func TestNodeEventsEndWithTheController(t *testing.T) {
	emu, conn := connect(t)
	_, connected, done := follow(context.Background(), conn)
	wait(t, "connection", connected)
	emu.RestartController()
	if err := wait(t, "end", done); !errors.Is(err, linstor.ErrStreamEnded) {
		t.Errorf("NodeEvents after a restart = %v, want ErrStreamEnded", err)
	}

	emu.InjectFault("GET /v1/events/nodes", emulator.Fault{Status: http.StatusServiceUnavailable, Times: 1})
	_, _, done = follow(context.Background(), conn)
	if err := wait(t, "end", done); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("NodeEvents on a 503 = %v, want an error naming the status", err)
	}
	if n := emu.RequestCounts()["GET /v1/events/nodes"]; n != 2 {
		t.Errorf("the emulator counted %d streams, want 2", n)
	}
}

// A stream outlives the connection's request timeout.
func TestNodeEventsIgnoreTheRequestTimeout(t *testing.T) {
	_, conn := connect(t)
	conn.HTTP.Timeout = 100 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, connected, done := follow(ctx, conn)
	wait(t, "connection", connected)
	time.Sleep(300 * time.Millisecond)
	conn.HTTP.Timeout = 15 * time.Second
	addNode(t, conn, "n1", "10.0.0.1")
	expectEvent(t, events, linstor.NodeCreated, "n1")
	select {
	case err := <-done:
		t.Fatalf("the stream ended: %v", err)
	default:
	}
}

// The event-stream format in full: CRLF, CR and LF line ends, comments, data over
// several lines, a space after the colon or none, id and retry fields, events
// without data, unknown events; the LINSTOR "error" event ends the stream.
func TestNodeEventsParsing(t *testing.T) {
	const stream = "\xef\xbb\xbf: a comment\r\n" +
		"retry: 1000\r\n" +
		"event: node-create\r\nid: 7\r\ndata: {\"node\":\r\ndata:{\"name\":\"a\"}}\r\n\r\n" +
		"event: node-evicted\rdata: {\"node\":{\"name\":\"b\",\"flags\":[\"DELETE\",\"EVICTED\"]}}\r\r" +
		"event: node-nothing\n\n" +
		"event: node-online\ndata: {\"node\":{\"name\":\"c\"}}\n\n" +
		"event: node-renamed\ndata: {\"old_node\":{\"name\":\"d\"},\"new_node\":{\"name\":\"e\"}}\n\n" +
		"event: node-future\ndata: not json\n\n" +
		"data: {\"node\":{\"name\":\"f\"}}\n\n" +
		"event: error\ndata: [{\"ret_code\":-4611686018427386906,\"message\":\"Exception thrown.\"}]\n\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream;charset=utf-8")
		fmt.Fprint(w, stream)
	}))
	defer srv.Close()
	conn := &linstor.Connection{HTTP: srv.Client(), URL: srv.URL + "/"}
	var got []string
	err := conn.NodeEvents(context.Background(), nil, func(e linstor.NodeEvent) {
		s := e.Name + " " + e.Node.Name
		if e.OldNode != nil {
			s += " old " + e.OldNode.Name
		}
		if e.Name == linstor.NodeEvicted {
			s += " " + strings.Join(e.Node.Flags, ",")
		}
		got = append(got, s)
	})
	want := []string{"node-create a", "node-evicted b DELETE,EVICTED", "node-online c", "node-renamed e old d", "node-future ", "message f"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("events:\n got %q\nwant %q", got, want)
	}
	if err == nil || !strings.Contains(err.Error(), "Exception thrown.") {
		t.Errorf("NodeEvents = %v, want LINSTOR's error event", err)
	}

	// A known event that does not decode ends the stream with an error; so does a
	// stream that is no event stream.
	for body, want := range map[string]string{
		"event: node-delete\ndata: {\"node\":\"x\"}\n\n": "node-delete",
		"event: node-modified\ndata: {}\n\n":             "new_node",
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, body)
		}))
		err := (&linstor.Connection{HTTP: srv.Client(), URL: srv.URL}).NodeEvents(context.Background(), nil, func(linstor.NodeEvent) {})
		srv.Close()
		if err == nil || !strings.Contains(err.Error(), want) || errors.Is(err, linstor.ErrStreamEnded) {
			t.Errorf("%q: NodeEvents = %v, want an error about %s", body, err, want)
		}
	}
	json := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, "[]")
	}))
	defer json.Close()
	connected := false
	err = (&linstor.Connection{HTTP: json.Client(), URL: json.URL}).NodeEvents(context.Background(), func() { connected = true }, func(linstor.NodeEvent) {})
	if err == nil || connected {
		t.Errorf("a JSON answer: NodeEvents = %v, connected %t; want an error before connecting", err, connected)
	}
}
