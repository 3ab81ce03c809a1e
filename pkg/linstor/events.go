package linstor

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	lapi "github.com/LINBIT/golinstor/client"
)

// LINSTOR's node event stream, GET /v1/events/nodes (LINSTOR 1.33, REST API 1.27), is
// a server-sent event stream. It sends no snapshot of the current nodes, no comments
// or keepalives and no event ids, so a client lists the nodes itself once connected
// and lists them again after every reconnect. The events and when LINSTOR sends them:
//
//	node-create    a node was created (it is still OFFLINE: the satellite is contacted after)
//	node-modified  PUT /v1/nodes/{node} passed (old_node shows the new state too)
//	node-delete    a deleted node is gone (not sent by node lost)
//	node-evacuate  evacuate started
//	node-evicted   the node was evicted, by request or by auto-evict
//	node-restored  restore passed
//
// Connection changes (ONLINE, OFFLINE), net interfaces and storage pools send nothing.
// A controller restart ends the stream. docs/linstor-semantics.md has the server
// references.

// Node event names.
const (
	NodeCreated   = "node-create"
	NodeModified  = "node-modified"
	NodeDeleted   = "node-delete"
	NodeEvacuated = "node-evacuate"
	NodeEvicted   = "node-evicted"
	NodeRestored  = "node-restored"
)

// ErrStreamEnded means LINSTOR closed the event stream, as it does when the
// controller restarts. The caller lists what it follows again and reconnects.
var ErrStreamEnded = errors.New("LINSTOR ended the event stream")

// NodeEvent is one event of LINSTOR's node event stream.
type NodeEvent struct {
	// Name is the event name: node-create, node-modified, node-delete,
	// node-evacuate, node-evicted, node-restored, or one a newer LINSTOR added.
	Name string
	// Node is the node (new_node for node-modified). For an unknown event it is
	// decoded when the data has the shape of a known one, else zero.
	Node lapi.Node
	// OldNode is old_node of node-modified, nil for the other events. LINSTOR
	// 1.33 takes it after applying the change, so it shows the new state as well.
	OldNode *lapi.Node
}

// maxEventSize bounds one line of the stream (a node as JSON).
const maxEventSize = 16 << 20

// NodeEvents follows GET /v1/events/nodes until ctx ends or the stream breaks,
// calling handle for each event; it returns the error that ended it (nil when ctx
// ended). connected (may be nil) is called once the server answered 200. handle runs
// on the reading goroutine: while it blocks, events queue up in LINSTOR, which
// drops a subscriber it cannot write to.
func (c *Connection) NodeEvents(ctx context.Context, connected func(), handle func(NodeEvent)) error {
	// A stream is open for as long as it is followed: no overall timeout, the same
	// transport (TLS, client certificate, metrics).
	stream := http.Client{}
	if c.HTTP != nil {
		stream = *c.HTTP
	}
	stream.Timeout = 0
	url := strings.TrimSuffix(c.URL, "/") + "/v1/events/nodes"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("LINSTOR node events: %w", err)
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := stream.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("%w at %s: %v", ErrUnreachable, c.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return fmt.Errorf("LINSTOR answered %s to GET /v1/events/nodes%s", resp.Status, rcMessages(body))
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || mt != "text/event-stream" {
		return fmt.Errorf("LINSTOR answered GET /v1/events/nodes with Content-Type %q, not an event stream", resp.Header.Get("Content-Type"))
	}
	if connected != nil {
		connected()
	}
	err = readEvents(resp.Body, func(name string, data []byte) error {
		if name == "error" {
			// The server's answer when it cannot register the subscriber: one event
			// "error" with the ApiCallRc list, then the end (Events.nodeEvents).
			return fmt.Errorf("LINSTOR refused the node event stream%s", rcMessages(data))
		}
		ev, err := decodeNodeEvent(name, data)
		if err != nil {
			return err
		}
		handle(ev)
		return nil
	})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// decodeNodeEvent decodes the data of a node event: {"node": …}, or {"old_node": …,
// "new_node": …} for node-modified. An unknown event is decoded as whichever shape
// it has; only the known ones must decode.
func decodeNodeEvent(name string, data []byte) (NodeEvent, error) {
	var payload struct {
		Node    *lapi.Node `json:"node"`
		OldNode *lapi.Node `json:"old_node"`
		NewNode *lapi.Node `json:"new_node"`
	}
	ev := NodeEvent{Name: name}
	err := json.Unmarshal(data, &payload)
	known := true
	switch name {
	case NodeModified:
		if err == nil && payload.NewNode == nil {
			err = errors.New("no new_node")
		}
	case NodeCreated, NodeDeleted, NodeEvacuated, NodeEvicted, NodeRestored:
		if err == nil && payload.Node == nil {
			err = errors.New("no node")
		}
	default:
		known = false
	}
	if err != nil {
		if known {
			return ev, fmt.Errorf("LINSTOR node event %s: %w", name, err)
		}
		return ev, nil
	}
	switch {
	case payload.NewNode != nil:
		ev.Node, ev.OldNode = *payload.NewNode, payload.OldNode
	case payload.Node != nil:
		ev.Node = *payload.Node
	}
	return ev, nil
}

// readEvents parses a server-sent event stream (the WHATWG event-stream format):
// lines end with CRLF, LF or CR; a line starting with ':' is a comment; "field:
// value" (one space after the colon is dropped); data lines of one event are joined
// with newlines; an empty line dispatches the event unless it has no data; an
// unnamed event is "message"; id and retry are read and ignored. It returns
// ErrStreamEnded at the end of the stream (an event cut off there is dropped), the
// read error, or the first error of dispatch.
func readEvents(r io.Reader, dispatch func(name string, data []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxEventSize)
	sc.Split(scanSSELines)
	var name string
	var data []byte
	hasData, first := false, true
	for sc.Scan() {
		line := sc.Bytes()
		if first {
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf")) // a leading BOM
			first = false
		}
		if len(line) == 0 {
			if hasData {
				if err := dispatch(eventName(name), data); err != nil {
					return err
				}
			}
			name, data, hasData = "", data[:0], false
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			name = string(value)
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			data, hasData = append(data, value...), true
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading the LINSTOR event stream: %w", err)
	}
	return ErrStreamEnded
}

func eventName(name string) string {
	if name == "" {
		return "message"
	}
	return name
}

// scanSSELines splits at CRLF, LF or a lone CR, without the line ending.
func scanSSELines(data []byte, atEOF bool) (int, []byte, error) {
	for i, b := range data {
		switch b {
		case '\n':
			return i + 1, data[:i], nil
		case '\r':
			if i+1 < len(data) {
				if data[i+1] == '\n' {
					return i + 2, data[:i], nil
				}
				return i + 1, data[:i], nil
			}
			if atEOF {
				return i + 1, data[:i], nil
			}
			return 0, nil, nil // a CR at the end of the buffer: is LF next?
		}
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil // a last line without its end: dropped with its event
	}
	return 0, nil, nil
}

// rcMessages renders an ApiCallRc list (LINSTOR's error body) as ": msg; msg", or
// nothing when the body is not one.
func rcMessages(body []byte) string {
	var rcs []lapi.ApiCallRc
	if json.Unmarshal(body, &rcs) != nil || len(rcs) == 0 {
		return ""
	}
	msgs := make([]string, 0, len(rcs))
	for _, rc := range rcs {
		msgs = append(msgs, rc.Message)
	}
	return ": " + strings.Join(msgs, "; ")
}
