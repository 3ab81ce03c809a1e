// Package monitoring runs a real Prometheus (PROMETHEUS, built by `make prometheus`)
// against the operator and LINSTOR: it scrapes the LINSTOR emulator's /metrics (the
// controller's page as v1.33.3 writes it) and the operator's metrics registry while the
// operator's controllers run on a real kube-apiserver, evaluates
// config/prometheus/rules.yaml, and faults make the alerts fire, as Prometheus's HTTP API
// reports them (the backup alerts' on a real S3 server, VERSITYGW, behind a fault proxy
// of internal/s3server). The Grafana dashboard (config/grafana) is checked against the same
// sources: its queries parse and read only exported metrics, and its main panels,
// queried over the run, are drawn into docs/img/dashboard.svg (UPDATE_DASHBOARD_IMAGE=1).
package monitoring

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"
	"time"

	lapi "github.com/LINBIT/golinstor/client"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/linstor-operator/linstor-operator/internal/emulator"
	"github.com/linstor-operator/linstor-operator/test/envtest"
)

var (
	env *envtest.Env
	emu *emulator.Emulator
	// linstorURL is the emulator behind linstorDown; operatorMetrics serves the
	// operator's registry.
	linstorURL      string
	operatorMetrics string
	// linstorDown makes the LINSTOR controller unreachable: every connection to it,
	// the API's and the scrapes of /metrics, is closed unanswered.
	linstorDown atomic.Bool
	// linstorMetricsDown closes only the scrapes of LINSTOR's /metrics: its API answers.
	linstorMetricsDown atomic.Bool
)

func TestMain(m *testing.M) {
	emu = emulator.New()
	emu.SetNewNodeDisks(lapi.PhysicalStorageNode{PhysicalStorageDevice: lapi.PhysicalStorageDevice{Device: "/dev/vdb"}, Size: 100 << 30})
	linstor := httptest.NewServer(unreachableWhenDown(emu.Handler()))
	linstorURL = linstor.URL
	// The operator's own metrics: the registry its manager serves on its secure
	// endpoint, with every collector its controllers and webhooks fill, served here
	// over plain HTTP (the secure endpoint with the scraper's token: secure_scrape_test.go).
	metricsSrv := httptest.NewServer(promhttp.HandlerFor(ctrlmetrics.Registry, promhttp.HandlerOpts{}))
	operatorMetrics = metricsSrv.URL
	code := envtest.Run(m, envtest.Options{LinstorURL: linstor.URL, LinstorPoll: time.Second, LinstorGrace: 3 * time.Second,
		DiskRelist: 2 * time.Second, RestoreSettle: 2 * time.Second, BackupTargetPoll: 2 * time.Second}, &env)
	metricsSrv.Close()
	linstor.Close()
	if code != 0 {
		fmt.Fprintln(os.Stderr, "monitoring: tests failed")
	}
	os.Exit(code)
}

func unreachableWhenDown(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !linstorDown.Load() && !(linstorMetricsDown.Load() && r.URL.Path == "/metrics") {
			next.ServeHTTP(w, r)
			return
		}
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	})
}

// hostPort is a URL's host:port, as Prometheus's static targets name it.
func hostPort(rawURL string) string {
	var host string
	_, _ = fmt.Sscanf(rawURL, "http://%s", &host)
	return host
}
