package promserver_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/linstor-operator/linstor-operator/internal/promserver"
)

// A real Prometheus scrapes a target, answers a query with what it scraped, and an
// alert on it goes pending, then firing after its for:, and ends when the value does.
func TestPrometheusScrapesQueriesAndFiresAlerts(t *testing.T) {
	bin, err := promserver.Binary()
	if err != nil {
		t.Fatal(err)
	}
	var value atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintf(w, "# TYPE demo_value gauge\ndemo_value{thing=\"a\"} %d\n", value.Load())
	}))
	defer target.Close()

	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(rules, []byte(`groups:
- name: demo
  rules:
  - alert: DemoHigh
    expr: demo_value > 5
    for: 3s
    labels: {severity: warning}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	srv, err := promserver.Start(ctx, promserver.Config{Binary: bin, Dir: dir, RuleFiles: []string{rules},
		Jobs: []promserver.Job{{Name: "demo", Targets: []string{strings.TrimPrefix(target.URL, "http://")}, Labels: map[string]string{"namespace": "x"}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()

	waitFor(t, srv, 30*time.Second, "the scraped value", func() (bool, string) {
		vec, err := srv.Query(ctx, `demo_value{job="demo",namespace="x",thing="a"}`)
		return err == nil && len(vec) == 1 && vec[0].Value == 0, fmt.Sprint(vec, err)
	})
	value.Store(7)
	start := time.Now()
	var sawPending bool
	waitFor(t, srv, 30*time.Second, "DemoHigh firing", func() (bool, string) {
		state := alertState(t, srv, "DemoHigh")
		sawPending = sawPending || state == promv1.AlertStatePending
		return state == promv1.AlertStateFiring, string(state)
	})
	if took := time.Since(start); !sawPending || took < 3*time.Second {
		t.Errorf("DemoHigh fired after %s, pending seen: %v; want pending first and its for: of 3s", took, sawPending)
	}
	value.Store(1)
	waitFor(t, srv, 30*time.Second, "DemoHigh resolved", func() (bool, string) {
		state := alertState(t, srv, "DemoHigh")
		return state == "", string(state)
	})
}

func alertState(t *testing.T, srv *promserver.Server, name string) promv1.AlertState {
	t.Helper()
	alerts, err := srv.Alerts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range alerts {
		if string(a.Labels["alertname"]) == name {
			return a.State
		}
	}
	return ""
}

func waitFor(t *testing.T, srv *promserver.Server, timeout time.Duration, what string, done func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		var ok bool
		if ok, last = done(); ok {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("no %s within %s (last: %s); prometheus log:\n%s", what, timeout, last, srv.LogTail(20))
}
