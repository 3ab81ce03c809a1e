package s3server

import (
	"fmt"
	"html"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"
)

// Faults is a reverse proxy in front of a Server that a test switches between
// faults: pass through, a delay per request, S3 errors (HTTP 5xx with an S3 XML body)
// for every request or the next N, connections refused, connections closed unanswered.
// It serves plain HTTP on a loopback address of its own (Endpoint) and keeps the
// client's Host header, so S3 signatures made for Endpoint hold.
type Faults struct {
	// Endpoint is the URL clients use instead of the server's; Host is its host:port.
	Endpoint, Host string

	proxy *httputil.ReverseProxy

	mu       sync.Mutex
	fault    fault
	srv      *http.Server // nil while refusing
	requests []string
}

type faultKind int

const (
	passThrough faultKind = iota
	delay
	failAll
	failNext
	refuse
	drop
)

type fault struct {
	kind   faultKind
	delay  time.Duration
	status int
	code   string
	// left is how many requests failNext still fails.
	left int
	// match picks the requests a failure applies to (nil: all).
	match func(*http.Request) bool
}

// StartFaults runs a proxy to s, passing everything through.
func StartFaults(s *Server) (*Faults, error) {
	target, err := url.Parse(s.Endpoint)
	if err != nil {
		return nil, err
	}
	f := &Faults{Host: s.Host}
	f.proxy = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			// The signature covers the Host the client sent.
			r.Out.Host = r.In.Host
		},
		Transport: s.Transport(),
		// A client giving up during a delay is a test's point, not news.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f.Host = l.Addr().String()
	f.Endpoint = "http://" + f.Host
	f.serve(l)
	return f, nil
}

func (f *Faults) serve(l net.Listener) {
	srv := &http.Server{Handler: http.HandlerFunc(f.handle), ReadHeaderTimeout: 10 * time.Second}
	f.srv = srv
	go func() { _ = srv.Serve(l) }()
}

// PassThrough ends every fault.
func (f *Faults) PassThrough() error { return f.set(fault{kind: passThrough}) }

// Delay holds every request for d before passing it on (or until the client gives up).
func (f *Faults) Delay(d time.Duration) error { return f.set(fault{kind: delay, delay: d}) }

// FailAll answers every request with status and an S3 error of code (for example 503,
// "SlowDown" or 500, "InternalError").
func (f *Faults) FailAll(status int, code string) error {
	return f.set(fault{kind: failAll, status: status, code: code})
}

// FailNext answers the next n requests that match (nil: any) with status and an S3
// error of code, then passes through again.
func (f *Faults) FailNext(n int, status int, code string, match func(*http.Request) bool) error {
	return f.set(fault{kind: failNext, status: status, code: code, left: n, match: match})
}

// Refuse stops listening and closes every open connection: new connections are
// refused until another fault is set.
func (f *Faults) Refuse() error { return f.set(fault{kind: refuse}) }

// Drop accepts requests and closes their connections without an answer.
func (f *Faults) Drop() error { return f.set(fault{kind: drop}) }

// Requests lists the requests the proxy received, "METHOD /path", oldest first.
func (f *Faults) Requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.requests...)
}

// Close stops the proxy.
func (f *Faults) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.srv != nil {
		_ = f.srv.Close()
		f.srv = nil
	}
}

func (f *Faults) set(next fault) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fault = next
	switch {
	case next.kind == refuse && f.srv != nil:
		// Close, not Shutdown: kept-alive connections must end too, or a client's
		// pooled connection would still reach the server.
		err := f.srv.Close()
		f.srv = nil
		return err
	case next.kind != refuse && f.srv == nil:
		l, err := net.Listen("tcp", f.Host)
		if err != nil {
			return fmt.Errorf("listening on %s again: %w", f.Host, err)
		}
		f.serve(l)
	}
	return nil
}

// take decides what to do with one request.
func (f *Faults) take(r *http.Request) fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, r.Method+" "+r.URL.Path)
	current := f.fault
	if current.kind == failNext {
		if current.left <= 0 || (current.match != nil && !current.match(r)) {
			return fault{kind: passThrough}
		}
		f.fault.left--
	}
	return current
}

func (f *Faults) handle(w http.ResponseWriter, r *http.Request) {
	current := f.take(r)
	switch current.kind {
	case delay:
		select {
		case <-time.After(current.delay):
		case <-r.Context().Done():
			return
		}
	case failAll, failNext:
		writeS3Error(w, r, current.status, current.code)
		return
	case drop:
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.Close()
		}
		return
	}
	f.proxy.ServeHTTP(w, r)
}

// writeS3Error answers as S3 does: an XML Error document.
func writeS3Error(w http.ResponseWriter, r *http.Request, status int, code string) {
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("x-amz-request-id", "s3server-fault")
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	_, _ = fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>%s</Code><Message>fault injected by s3server.Faults</Message><Resource>%s</Resource><RequestId>s3server-fault</RequestId></Error>
`, html.EscapeString(code), html.EscapeString(r.URL.Path))
}
