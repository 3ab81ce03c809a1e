package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// auditPolicy makes the kube-apiserver log one line per finished request
// (ResponseComplete only) at level Metadata: who (user agent), what (verb, resource,
// subresource, name) and the response code, never bodies. Requests of nobody's
// interest at this scale are dropped to keep the log small at 1,000 nodes: leases and
// node/pod status (the simulated kubelets' heartbeats), pod bindings (the scheduler) and
// health probes. The operator runs with --leader-elect=false and never writes those.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: None
  resources:
  - group: coordination.k8s.io
    resources: ["leases"]
  - group: ""
    resources: ["nodes/status", "pods/status", "pods/binding"]
- level: None
  nonResourceURLs: ["/healthz*", "/livez*", "/readyz*", "/metrics", "/version"]
- level: Metadata
`

// auditEvent is the part of an audit.k8s.io/v1 Event the bench reads.
type auditEvent struct {
	Stage     string `json:"stage"`
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		APIGroup    string `json:"apiGroup"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	StageTimestamp time.Time `json:"stageTimestamp"`
}

// writeVerbs are the verbs that change (or try to change) the cluster.
var writeVerbs = map[string]bool{"create": true, "update": true, "patch": true, "delete": true, "deletecollection": true}

// requestKey identifies a kind of API request in the series: verb, API group,
// resource, subresource and whether the request failed (code >= 400).
type requestKey struct {
	Verb, Group, Resource, Subresource string
	Failed                             bool
}

func (k requestKey) String() string {
	f := "ok"
	if k.Failed {
		f = "failed"
	}
	return strings.Join([]string{k.Verb, k.Group, k.Resource, k.Subresource, f}, "|")
}

func parseRequestKey(s string) requestKey {
	p := strings.Split(s, "|")
	return requestKey{Verb: p[0], Group: p[1], Resource: p[2], Subresource: p[3], Failed: p[4] == "failed"}
}

// resourceName is "resource" or "resource/subresource", with the group for non-core.
func (k requestKey) resourceName() string {
	r := k.Resource
	if k.Group != "" {
		r += "." + k.Group
	}
	if k.Subresource != "" {
		r += "/" + k.Subresource
	}
	return r
}

func (k requestKey) isWrite() bool { return writeVerbs[k.Verb] }

// auditTail follows the audit log as the apiserver writes it and counts the operator's
// requests (user agent prefix) by requestKey in one-second buckets of their completion
// time (stageTimestamp). It reads line by line: the log is never held in memory, so a
// multi-gigabyte log of a 1,000-node run costs nothing but disk. Watch requests are
// logged when they end, so they are counted in the second they end.
type auditTail struct {
	path     string
	uaPrefix string
	clock    clock
	requests *series
	// others: every other client's requests, "product verb resource" (product: the user
	// agent before its first "/"), for seeing what else loads the apiserver.
	others *series

	mu          sync.Mutex
	lines       int
	bad         int
	operatorN   int
	lastStamp   time.Time
	eofAt       time.Time      // when the reader last reached the end of what was written
	userAgents  map[string]int // user agent products seen (before the first "/"), for diagnostics
	firstOp     time.Time
	rotations   int
	readErr     error
	partialLine []byte
}

func newAuditTail(path, uaPrefix string, c clock) *auditTail {
	return &auditTail{path: path, uaPrefix: uaPrefix, clock: c, requests: newSeries(), others: newSeries(), userAgents: map[string]int{}}
}

// run follows the log until ctx ends. The apiserver's log writer rotates the file at
// 100 MB (renames it and opens a new one): the old file is read to its end first.
func (a *auditTail) run(ctx context.Context) {
	f, err := openWait(ctx, a.path)
	if err != nil {
		a.setErr(err)
		return
	}
	defer func() { f.Close() }()
	r := bufio.NewReaderSize(f, 1<<20)
	draining := false
	for {
		line, err := r.ReadSlice('\n')
		switch {
		case err == nil:
			a.handle(line)
			continue
		case errors.Is(err, bufio.ErrBufferFull):
			// A line longer than the buffer: keep the part and go on reading.
			a.partialLine = append(a.partialLine, line...)
			continue
		case errors.Is(err, io.EOF):
			// A line not yet complete stays in partialLine until the rest arrives.
			a.partialLine = append(a.partialLine, line...)
		default:
			a.setErr(err)
			return
		}
		// At the end of what is written: has the file been rotated? Then the old file
		// is complete: read what was written to it after this EOF (before the rename),
		// then go on with the new file.
		if rotated(f, a.path) {
			if !draining {
				draining = true
				continue
			}
			if nf, err := os.Open(a.path); err == nil {
				f.Close()
				f, draining = nf, false
				a.partialLine = nil // lines never span files
				r.Reset(f)
				a.mu.Lock()
				a.rotations++
				a.mu.Unlock()
				continue
			}
		}
		a.mu.Lock()
		a.eofAt = time.Now()
		a.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func openWait(ctx context.Context, path string) (*os.File, error) {
	for {
		f, err := os.Open(path)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func rotated(f *os.File, path string) bool {
	a, err1 := f.Stat()
	b, err2 := os.Stat(path)
	if err1 != nil || err2 != nil {
		return false
	}
	sa, ok1 := a.Sys().(*syscall.Stat_t)
	sb, ok2 := b.Sys().(*syscall.Stat_t)
	return ok1 && ok2 && sa.Ino != sb.Ino
}

func (a *auditTail) setErr(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.readErr = err
}

func (a *auditTail) handle(line []byte) {
	if len(a.partialLine) > 0 {
		line = append(a.partialLine, line...)
		a.partialLine = nil
	}
	var ev auditEvent
	err := json.Unmarshal(line, &ev)
	a.mu.Lock()
	a.lines++
	if err != nil {
		a.bad++
		a.mu.Unlock()
		return
	}
	if ev.StageTimestamp.After(a.lastStamp) {
		a.lastStamp = ev.StageTimestamp
	}
	product, _, _ := strings.Cut(ev.UserAgent, "/")
	if _, ok := a.userAgents[product]; ok || len(a.userAgents) < 64 {
		a.userAgents[product]++
	}
	mine := ev.Stage == "ResponseComplete" && strings.HasPrefix(ev.UserAgent, a.uaPrefix)
	if mine {
		a.operatorN++
		if a.firstOp.IsZero() {
			a.firstOp = ev.StageTimestamp
		}
	}
	a.mu.Unlock()
	k := requestKey{Verb: ev.Verb}
	if ev.ObjectRef != nil {
		k.Group, k.Resource, k.Subresource = ev.ObjectRef.APIGroup, ev.ObjectRef.Resource, ev.ObjectRef.Subresource
	} else {
		k.Resource = "(non-resource)"
	}
	if ev.ResponseStatus != nil && ev.ResponseStatus.Code >= 400 {
		k.Failed = true
	}
	if !mine {
		a.others.add(a.clock.bucket(ev.StageTimestamp), product+" "+k.Verb+" "+k.resourceName(), 1)
		return
	}
	a.requests.add(a.clock.bucket(ev.StageTimestamp), k.String(), 1)
}

// caughtUp reports whether the tail has read everything the apiserver logged for
// requests that finished before t: an event stamped at or after t was read, or the
// reader reached the end of the file a second after t (the apiserver writes each event
// as its request finishes, in the request's own goroutine).
func (a *auditTail) caughtUp(t time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return !a.lastStamp.Before(t) || a.eofAt.After(t.Add(time.Second))
}

type auditStats struct {
	Lines, Unparsable, OperatorEvents, Rotations int
	UserAgents                                   map[string]int
	FirstOperatorEvent                           time.Time
	Err                                          error
}

func (a *auditTail) stats() auditStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	ua := map[string]int{}
	for k, v := range a.userAgents {
		ua[k] = v
	}
	return auditStats{Lines: a.lines, Unparsable: a.bad, OperatorEvents: a.operatorN, Rotations: a.rotations,
		UserAgents: ua, FirstOperatorEvent: a.firstOp, Err: a.readErr}
}
