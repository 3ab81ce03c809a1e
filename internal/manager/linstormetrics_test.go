package manager

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	ctrlenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/linstor-operator/linstor-operator/pkg/metricsproxy"
)

// LINSTOR's page is served only where the operator was told its metrics endpoint
// authenticates (main.go passes --metrics-secure): on a plain endpoint it would be
// anyone's to read.
func TestLinstorMetricsOnlyWhenAsked(t *testing.T) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		dir = filepath.Join("..", "..", "bin", "k8s", "v1.34.2")
	}
	te := &ctrlenvtest.Environment{BinaryAssetsDirectory: dir, CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")}}
	cfg, err := te.Start()
	if err != nil {
		t.Fatalf("starting kube-apiserver from %s: %v", dir, err)
	}
	t.Cleanup(func() { _ = te.Stop() })
	for _, serve := range []bool{false, true} {
		t.Run(fmt.Sprintf("LinstorMetrics=%t", serve), func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := l.Addr().String()
			l.Close()
			mgr, err := New(cfg, Options{LinstorMetrics: serve, Manager: ctrl.Options{
				Metrics:                metricsserver.Options{BindAddress: addr},
				HealthProbeBindAddress: "0",
				// Two managers in one process register the same controllers.
				Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
			}})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- mgr.Start(ctx) }()
			t.Cleanup(func() { cancel(); <-done })
			var status int
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				resp, err := http.Get("http://" + addr + metricsproxy.Path)
				if err != nil {
					continue
				}
				resp.Body.Close()
				status = resp.StatusCode
				break
			}
			switch {
			case status == 0:
				t.Fatal("the metrics endpoint never answered")
			case !serve && status != http.StatusNotFound:
				t.Errorf("status %d: LINSTOR's page served on an endpoint not said to authenticate", status)
			case serve && status == http.StatusNotFound:
				t.Error("LINSTOR's page not served though asked")
			}
		})
	}
}
