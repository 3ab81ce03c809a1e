package metricsproxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// linstorAPI stands for LINSTOR's API: /metrics and the rest, counting what reaches it.
func linstorAPI(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		switch {
		case r.URL.Path == "/metrics" && r.URL.RawQuery == "" && r.Header.Get("Authorization") == "":
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			_, _ = io.WriteString(w, "linstor_info{version=\"1.33.3\"} 1\n")
		case r.URL.Path == "/metrics":
			http.Error(w, "a scraper's query or headers reached LINSTOR", http.StatusTeapot)
		default:
			_, _ = io.WriteString(w, `[{"name":"node-1"}]`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func TestOnlyTheMetricsPageReachesLinstor(t *testing.T) {
	api, calls := linstorAPI(t)
	var leads atomic.Bool
	leads.Store(true)
	source := func(context.Context) (string, *http.Client, error) { return api.URL, api.Client(), nil }
	proxy := httptest.NewServer(Handler(source, leads.Load))
	t.Cleanup(proxy.Close)
	for _, row := range []struct {
		name, method string
		query        string
		header       http.Header
		lead         bool
		status       int
		reaches      bool
		body         string
	}{
		{"GET", "GET", "", nil, true, http.StatusOK, true, "linstor_info"},
		{"HEAD", "HEAD", "", nil, true, http.StatusOK, true, ""},
		{"query and token stay here", "GET", "?x=/v1/nodes", http.Header{"Authorization": {"Bearer t"}}, true, http.StatusOK, true, "linstor_info"},
		{"POST", "POST", "", nil, true, http.StatusMethodNotAllowed, false, ""},
		{"DELETE", "DELETE", "", nil, true, http.StatusMethodNotAllowed, false, ""},
		{"not leading: an empty page", "GET", "", nil, false, http.StatusOK, false, ""},
	} {
		t.Run(row.name, func(t *testing.T) {
			leads.Store(row.lead)
			before := calls.Load()
			req, err := http.NewRequest(row.method, proxy.URL+row.query, strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range row.header {
				req.Header[k] = v
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != row.status {
				t.Errorf("status %d, want %d (%s)", resp.StatusCode, row.status, body)
			}
			if reached := calls.Load() > before; reached != row.reaches {
				t.Errorf("reached LINSTOR: %t, want %t", reached, row.reaches)
			}
			if !bytes.Contains(body, []byte(row.body)) || (row.body == "" && row.status == http.StatusOK && len(body) != 0) {
				t.Errorf("body %q, want %q", body, row.body)
			}
			if row.status == http.StatusOK && !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
				t.Errorf("Content-Type %q: Prometheus reads the text format", resp.Header.Get("Content-Type"))
			}
		})
	}
}

// Prometheus must see the target down when LINSTOR is, or cannot be reached.
func TestLinstorUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := "http://" + l.Addr().String()
	l.Close() // nothing listens there now
	for _, row := range []struct {
		name   string
		source Source
		status int
	}{
		{"connection refused", func(context.Context) (string, *http.Client, error) {
			return gone, &http.Client{Timeout: time.Second}, nil
		}, http.StatusBadGateway},
		{"no LinstorCluster, or its client certificate unreadable", func(context.Context) (string, *http.Client, error) {
			return "", nil, errors.New("no LinstorCluster")
		}, http.StatusServiceUnavailable},
	} {
		proxy := httptest.NewServer(Handler(row.source, func() bool { return true }))
		resp, err := http.Get(proxy.URL)
		proxy.Close()
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != row.status {
			t.Errorf("%s: status %d, want %d", row.name, resp.StatusCode, row.status)
		}
	}
}

// Scrapers beyond MaxInFlight are refused while LINSTOR is busy with the others, and
// served again once it answered.
func TestScrapesInFlightAreBounded(t *testing.T) {
	release := make(chan struct{})
	var started atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started.Add(1)
		<-release
		_, _ = io.WriteString(w, "linstor_info 1\n")
	}))
	t.Cleanup(api.Close)
	source := func(context.Context) (string, *http.Client, error) { return api.URL, api.Client(), nil }
	proxy := httptest.NewServer(Handler(source, func() bool { return true }))
	t.Cleanup(proxy.Close)
	statuses := make(chan int, MaxInFlight)
	for range MaxInFlight {
		go func() {
			resp, err := http.Get(proxy.URL)
			if err != nil {
				statuses <- 0
				return
			}
			resp.Body.Close()
			statuses <- resp.StatusCode
		}()
	}
	for deadline := time.Now().Add(5 * time.Second); started.Load() < MaxInFlight; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d scrapes reached LINSTOR", started.Load(), MaxInFlight)
		}
	}
	resp, err := http.Get(proxy.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || started.Load() != MaxInFlight {
		t.Errorf("one scrape too many: status %d, %d reached LINSTOR", resp.StatusCode, started.Load())
	}
	close(release)
	for range MaxInFlight {
		if s := <-statuses; s != http.StatusOK {
			t.Errorf("a bounded scrape got %d", s)
		}
	}
	resp, err = http.Get(proxy.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("after the others: %d", resp.StatusCode)
	}
}

// A page that breaks off reaches Prometheus as a failed scrape, never as a shorter
// complete one, even when it breaks at a line's end.
func TestACutPageFailsTheScrape(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		_, _ = io.WriteString(w, "linstor_node_state{node=\"a\"} 2\n")
		w.(http.Flusher).Flush()
		// The connection ends before the promised length: a LINSTOR that died mid-page.
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(api.Close)
	source := func(context.Context) (string, *http.Client, error) { return api.URL + "/", api.Client(), nil }
	proxy := httptest.NewServer(Handler(source, func() bool { return true }))
	t.Cleanup(proxy.Close)
	resp, err := http.Get(proxy.URL)
	if err != nil {
		return // broken before the status: also a failed scrape
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Errorf("status %d and a complete body: the cut page would be taken as LINSTOR's whole page", resp.StatusCode)
	}
}
