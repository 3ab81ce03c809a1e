package emulator

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"
)

// GET /v1/events/nodes follows the server's node event stream
// (REST/events/Events.java nodeEvents, REST/events/EventNodeHandlerBridge.java,
// REST/events/EventHandlerBridge.java): a server-sent event stream that starts with
// nothing (no snapshot of the current nodes, no comment, no keepalive, no event ids,
// Last-Event-ID is not read) and carries one event per node change, named
//
//	node-create, node-delete, node-evacuate, node-evicted, node-restored
//	    data {"node": <Node>}
//	node-modified
//	    data {"old_node": <Node>, "new_node": <Node>}
//
// each written as "event: <name>\ndata: <json on one line>\n\n", with the node as the
// GET endpoints render it (Json.apiToNode). Events are sent at these points only:
// node create (CtrlNodeCrtApiCallHandler.createNodeInTransaction), node modify
// (CtrlNodeApiCallHandler.modifyInTransaction), the node leaving after a delete
// (CtrlNodeDeleteApiCallHandler.deleteNodeIfEmpty), evacuate
// (CtrlNodeApiCallHandler.evacuateNodeInTrasaction), evict (declareEvicted) and
// restore (restoreNode). Connection changes, reconnect, node lost, net interfaces and
// storage pools send nothing. The server keeps its subscribers in memory, so a
// controller restart ends every stream.

// eventBuffer is how many events a subscriber may fall behind by. One further event
// disconnects it: the emulator never waits for a subscriber while it holds its lock
// (the server, which writes under a lock, drops a subscriber when a write fails).
const eventBuffer = 1024

// eventStall bounds how long one write to a subscriber may block before the stream
// is given up.
const eventStall = 10 * time.Second

// sseEvent is one server-sent event.
type sseEvent struct {
	name string
	data []byte
}

// subscriber is one open GET /v1/events/nodes.
type subscriber struct {
	// events is closed when the controller restarts: the stream ends after what was
	// sent before (the server wrote those before it went away).
	events chan sseEvent
	// behind is closed when the subscriber fell eventBuffer events behind: the stream
	// ends at once.
	behind chan struct{}
}

// eventNode is the data of every node event but node-modified (JsonGenTypes.EventNode).
type eventNode struct {
	Node lapi.Node `json:"node"`
}

// eventNodeModified is the data of node-modified (JsonGenTypes.EventNodeModified).
type eventNodeModified struct {
	OldNode lapi.Node `json:"old_node"`
	NewNode lapi.Node `json:"new_node"`
}

// Event names (EventNodeHandlerBridge).
const (
	evNodeCreate   = "node-create"
	evNodeDelete   = "node-delete"
	evNodeEvacuate = "node-evacuate"
	evNodeEvicted  = "node-evicted"
	evNodeRestored = "node-restored"
	evNodeModified = "node-modified"
)

// nodeEvents serves GET /v1/events/nodes until the client goes away, the controller
// restarts or the subscriber falls behind.
func (e *Emulator) nodeEvents(w http.ResponseWriter, r *http.Request) {
	s := &subscriber{events: make(chan sseEvent, eventBuffer), behind: make(chan struct{})}
	e.mu.Lock()
	down := e.controllerDown
	if !down {
		e.subscribers[s] = struct{}{}
	}
	e.mu.Unlock()
	if down { // went down after Handler looked
		writeStatus(w, http.StatusServiceUnavailable, rc(lapiconst.MaskError|lapiconst.FailUnknownError, "LINSTOR controller is not running"))
		return
	}
	defer e.unsubscribe(s)

	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	ctl := http.NewResponseController(w)
	if flushErr(ctl.Flush()) != nil {
		return
	}
	// A deadline left on the connection would hit the next request it carries.
	defer func() { _ = ctl.SetWriteDeadline(time.Time{}) }()
	for {
		select {
		case <-s.behind: // before anything still buffered
			return
		default:
		}
		var ev sseEvent
		select {
		case <-r.Context().Done():
			return
		case <-s.behind:
			return
		case next, open := <-s.events:
			if !open {
				return
			}
			ev = next
		}
		_ = ctl.SetWriteDeadline(time.Now().Add(eventStall))
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.name, ev.data); err != nil {
			return
		}
		if flushErr(ctl.Flush()) != nil {
			return
		}
		_ = ctl.SetWriteDeadline(time.Time{})
	}
}

// flushErr ignores a writer that cannot flush (a test's recorder).
func flushErr(err error) error {
	if errors.Is(err, http.ErrNotSupported) {
		return nil
	}
	return err
}

func (e *Emulator) unsubscribe(s *subscriber) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.subscribers, s)
}

// endStreams ends every event stream, as a controller restart does. The caller holds
// e.mu.
func (e *Emulator) endStreams() {
	for s := range e.subscribers {
		close(s.events)
		delete(e.subscribers, s)
	}
}

// emit sends an event to every subscriber; one that has fallen behind is dropped.
// The caller holds e.mu.
func (e *Emulator) emit(name string, payload any) {
	if len(e.subscribers) == 0 {
		return
	}
	data, err := json.Marshal(payload) // one line, as Jackson's writeValueAsString
	if err != nil {
		return // golinstor's types always marshal
	}
	ev := sseEvent{name: name, data: data}
	for s := range e.subscribers {
		select {
		case s.events <- ev:
		default:
			close(s.behind)
			delete(e.subscribers, s)
		}
	}
}

// emitNode sends one of the events that carry a single node.
func (e *Emulator) emitNode(name string, n lapi.Node) {
	e.emit(name, eventNode{Node: n})
}

// emitNodeModified sends node-modified. The server takes old_node after it applied
// the new type and properties, just before the commit, so old_node and new_node show
// the same, new, state (CtrlNodeApiCallHandler.modifyInTransaction: getApiData at
// :587, after fillProperties and remove; triggerNodeModified at :591). Reproduced as
// it is: old_node is no record of what the node was.
func (e *Emulator) emitNodeModified(n *node) {
	view := e.nodeView(n)
	e.emit(evNodeModified, eventNodeModified{OldNode: view, NewNode: view})
}
