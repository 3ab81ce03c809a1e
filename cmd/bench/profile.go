package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// profiler fetches the operator's Go profiles from its --pprof-bind-address.
type profiler struct {
	addr string
	dir  string
}

// newProfiler picks a free loopback port for the operator's profiling endpoints.
func newProfiler(dir string) (*profiler, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		return nil, err
	}
	return &profiler{addr: addr, dir: dir}, nil
}

func (p *profiler) operatorArg() string { return "--pprof-bind-address=" + p.addr }

// cpu records the operator's CPU for d into name; it returns when the profile is saved.
func (p *profiler) cpu(ctx context.Context, name string, d time.Duration) error {
	return p.save(ctx, name, fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(d/time.Second)), d+30*time.Second)
}

// heap saves the operator's heap (in use and allocated since start) into name.
func (p *profiler) heap(ctx context.Context, name string) error {
	return p.save(ctx, name, "/debug/pprof/heap", 30*time.Second)
}

func (p *profiler) save(ctx context.Context, name, path string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.addr+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("profile %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("profile %s: %s", path, resp.Status)
	}
	f, err := os.Create(filepath.Join(p.dir, name))
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
