// Package promserver runs a real Prometheus server (PROMETHEUS, built by `make
// prometheus`) on loopback for tests: static scrape targets, short scrape and rule
// evaluation intervals, rule files; queries and alerts go through its HTTP API.
package promserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"sigs.k8s.io/yaml"
)

// Job is one scrape job of static targets.
type Job struct {
	Name string
	// Targets are host:port addresses.
	Targets []string
	// MetricsPath defaults to /metrics.
	MetricsPath string
	// Labels are added to every series of the job's targets.
	Labels map[string]string
	// Settings are more scrape_config fields (scheme, authorization, tls_config,
	// honor_labels, ...), as Prometheus's configuration spells them.
	Settings map[string]any
}

// Config says what the server scrapes and evaluates.
type Config struct {
	// Binary is the prometheus executable.
	Binary string
	// Dir holds the configuration, the TSDB and the log (a test's TempDir).
	Dir  string
	Jobs []Job
	// RuleFiles are plain Prometheus rule files (groups:), by absolute path.
	RuleFiles []string
	// ScrapeInterval and EvaluationInterval default to 1s.
	ScrapeInterval     time.Duration
	EvaluationInterval time.Duration
}

// Server is a running Prometheus.
type Server struct {
	// URL is its HTTP API's base, http://127.0.0.1:<port>.
	URL string
	// LogPath is where its output goes.
	LogPath string
	API     promv1.API
	cmd     *exec.Cmd
	exited  chan error
}

// Binary returns $PROMETHEUS, or an error telling how to build it.
func Binary() (string, error) {
	p := os.Getenv("PROMETHEUS")
	if p == "" {
		return "", errors.New("PROMETHEUS is not set: run `make prometheus` and set PROMETHEUS to bin/prometheus/prometheus-<version>; `make test` sets it")
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("PROMETHEUS=%s: %w (run `make prometheus`)", p, err)
	}
	return p, nil
}

// Start writes the configuration, starts the server and waits until it is ready.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.ScrapeInterval == 0 {
		cfg.ScrapeInterval = time.Second
	}
	if cfg.EvaluationInterval == 0 {
		cfg.EvaluationInterval = time.Second
	}
	configPath := filepath.Join(cfg.Dir, "prometheus.yml")
	data, err := yaml.Marshal(configFile(cfg))
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(configPath, data, 0o644); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &Server{URL: fmt.Sprintf("http://127.0.0.1:%d", port), LogPath: filepath.Join(cfg.Dir, "prometheus.log"), exited: make(chan error, 1)}
	log, err := os.Create(s.LogPath)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	s.cmd = exec.Command(cfg.Binary,
		"--config.file="+configPath,
		"--storage.tsdb.path="+filepath.Join(cfg.Dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port),
		"--log.level=warn",
	)
	s.cmd.Dir = cfg.Dir
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", cfg.Binary, err)
	}
	go func() { s.exited <- s.cmd.Wait() }()
	client, err := api.NewClient(api.Config{Address: s.URL})
	if err != nil {
		_ = s.Stop()
		return nil, err
	}
	s.API = promv1.NewAPI(client)
	if err := s.waitReady(ctx, 60*time.Second); err != nil {
		_ = s.Stop()
		return nil, fmt.Errorf("%w; log %s:\n%s", err, s.LogPath, tail(s.LogPath, 20))
	}
	return s, nil
}

// configFile is prometheus.yml. Prometheus 3 refuses a scrape whose Content-Type it does
// not know unless a fallback protocol is set; every target here speaks the text format.
func configFile(cfg Config) map[string]any {
	var jobs []map[string]any
	for _, j := range cfg.Jobs {
		path := j.MetricsPath
		if path == "" {
			path = "/metrics"
		}
		target := map[string]any{"targets": j.Targets}
		if len(j.Labels) > 0 {
			target["labels"] = j.Labels
		}
		job := map[string]any{
			"job_name":                 j.Name,
			"metrics_path":             path,
			"scrape_interval":          model.Duration(cfg.ScrapeInterval).String(),
			"scrape_timeout":           model.Duration(cfg.ScrapeInterval).String(),
			"fallback_scrape_protocol": "PrometheusText0.0.4",
			"static_configs":           []any{target},
		}
		for k, v := range j.Settings {
			job[k] = v
		}
		jobs = append(jobs, job)
	}
	return map[string]any{
		"global": map[string]any{
			"scrape_interval":     model.Duration(cfg.ScrapeInterval).String(),
			"evaluation_interval": model.Duration(cfg.EvaluationInterval).String(),
		},
		"rule_files":     cfg.RuleFiles,
		"scrape_configs": jobs,
	}
}

func (s *Server) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case err := <-s.exited:
			s.exited <- err
			return fmt.Errorf("prometheus exited: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		resp, err := http.Get(s.URL + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("prometheus not ready at %s within %s", s.URL, timeout)
}

// Stop ends the server (SIGTERM, then SIGKILL after 10 s).
func (s *Server) Stop() error {
	if s.cmd == nil || s.cmd.Process == nil {
		return nil
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	s.cmd = nil
	return nil
}

// Query evaluates an instant query now.
func (s *Server) Query(ctx context.Context, expr string) (model.Vector, error) {
	v, _, err := s.API.Query(ctx, expr, time.Now())
	if err != nil {
		return nil, err
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("query %q: %s, not a vector", expr, v.Type())
	}
	return vec, nil
}

// Alerts lists the alerts that are pending or firing now.
func (s *Server) Alerts(ctx context.Context) ([]promv1.Alert, error) {
	res, err := s.API.Alerts(ctx)
	if err != nil {
		return nil, err
	}
	return res.Alerts, nil
}

// Targets lists the active scrape targets with their health and last error.
func (s *Server) Targets(ctx context.Context) ([]promv1.ActiveTarget, error) {
	res, err := s.API.Targets(ctx)
	if err != nil {
		return nil, err
	}
	return res.Active, nil
}

// LogTail is the end of the server's log, for failure messages.
func (s *Server) LogTail(lines int) string { return tail(s.LogPath, lines) }

func tail(path string, lines int) string {
	data, _ := os.ReadFile(path)
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
