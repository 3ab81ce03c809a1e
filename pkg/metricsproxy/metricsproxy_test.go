package metricsproxy

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// linstorAPI stands for the controller's plain listener: /metrics and the rest of the
// API, counting what reaches it.
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

func TestOnlyMetricsReachesLinstor(t *testing.T) {
	api, calls := linstorAPI(t)
	u, _ := url.Parse(api.URL)
	proxy := httptest.NewServer(Handler(u, api.Client()))
	t.Cleanup(proxy.Close)
	for _, row := range []struct {
		method, path string
		header       http.Header
		status       int
		reaches      bool
		body         string
	}{
		{"GET", "/metrics", nil, http.StatusOK, true, "linstor_info"},
		{"HEAD", "/metrics", nil, http.StatusOK, true, ""},
		{"GET", "/metrics?name[]=x", http.Header{"Authorization": {"Bearer t"}}, http.StatusOK, true, "linstor_info"},
		{"POST", "/metrics", nil, http.StatusMethodNotAllowed, false, ""},
		{"DELETE", "/metrics", nil, http.StatusMethodNotAllowed, false, ""},
		{"GET", "/v1/nodes", nil, http.StatusNotFound, false, ""},
		{"DELETE", "/v1/nodes/node-1", nil, http.StatusNotFound, false, ""},
		{"GET", "/metrics/../v1/nodes", nil, http.StatusNotFound, false, ""},
		{"GET", "/health", nil, http.StatusNotFound, false, ""},
		{"GET", "/", nil, http.StatusNotFound, false, ""},
	} {
		t.Run(row.method+" "+row.path, func(t *testing.T) {
			before := calls.Load()
			req, err := http.NewRequest(row.method, proxy.URL+row.path, strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			req.URL.Opaque = row.path // sent as written, dot segments included
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
			if !bytes.Contains(body, []byte(row.body)) {
				t.Errorf("body %q, want %q in it", body, row.body)
			}
			if row.status == http.StatusOK && !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
				t.Errorf("Content-Type %q: Prometheus needs LINSTOR's", resp.Header.Get("Content-Type"))
			}
		})
	}
}

func TestLinstorDownIsBadGateway(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse("http://" + l.Addr().String())
	l.Close() // nothing listens there now
	proxy := httptest.NewServer(Handler(u, &http.Client{Timeout: time.Second}))
	t.Cleanup(proxy.Close)
	resp, err := http.Get(proxy.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("status %d, want 502: Prometheus must see the target down", resp.StatusCode)
	}
}

func TestServeStopsOnCancel(t *testing.T) {
	api, _ := linstorAPI(t)
	u, _ := url.Parse(api.URL)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, addr, u, time.Second) }()
	var resp *http.Response
	for i := 0; i < 100; i++ {
		if resp, err = http.Get("http://" + addr + "/metrics"); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not stop")
	}
}

func TestMainRefusesABadUpstream(t *testing.T) {
	var stderr bytes.Buffer
	if code := Main([]string{"--upstream=3370"}, &stderr); code != 2 || !strings.Contains(stderr.String(), "--upstream") {
		t.Errorf("exit %d, %q", code, stderr.String())
	}
}
