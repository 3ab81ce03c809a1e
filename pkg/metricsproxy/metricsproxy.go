// Package metricsproxy is the LINSTOR controller pod's metrics sidecar: it serves the
// controller's /metrics, and nothing else of its API, on a port of its own.
//
// LINSTOR serves /metrics on its REST API port and has no read-only role: whoever may
// scrape it there may also create and delete resources (with API TLS, whoever holds a
// client certificate of its CA may). The sidecar reads /metrics from the controller's
// plain HTTP listener on the pod's loopback (API TLS keeps that listener there:
// render.httpsTOML) and answers GET and HEAD of /metrics only, so the NetworkPolicy
// can admit Prometheus to the sidecar's port without admitting it to the API, and
// Prometheus needs no LINSTOR credential.
package metricsproxy

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/signal"
	"syscall"
	"time"
)

// Path is the only path served.
const Path = "/metrics"

// MaxBody bounds one answer: LINSTOR's page grows with its nodes, pools and resources
// (a few hundred bytes each); a larger answer is cut off rather than buffered.
const MaxBody = 64 << 20

// Handler forwards GET and HEAD of Path to upstream's Path with client; every other
// method is refused (405) and every other path is not found (404). The request's
// query, headers and body are not forwarded: nothing a scraper sends reaches LINSTOR
// but the request for its page.
func Handler(upstream *url.URL, client *http.Client) http.Handler {
	target := upstream.JoinPath(Path).String()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != Path {
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "only GET and HEAD of "+Path, http.StatusMethodNotAllowed)
			return
		}
		req, err := http.NewRequestWithContext(r.Context(), r.Method, target, nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		resp, err := client.Do(req)
		if err != nil {
			http.Error(w, "LINSTOR controller: "+err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for _, h := range []string{"Content-Type", "Content-Encoding"} {
			if v := resp.Header.Get(h); v != "" {
				w.Header().Set(h, v)
			}
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, io.LimitReader(resp.Body, MaxBody))
	})
}

// Main runs the sidecar: `manager metrics-proxy --listen=:9943
// --upstream=http://127.0.0.1:3370`, until SIGTERM.
func Main(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("metrics-proxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", ":9943", "address to serve "+Path+" on")
	upstream := fs.String("upstream", "http://127.0.0.1:3370", "the LINSTOR controller's plain HTTP listener")
	timeout := fs.Duration("timeout", 10*time.Second, "how long one scrape may wait for LINSTOR")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	u, err := url.Parse(*upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		fmt.Fprintf(stderr, "--upstream=%q: want http://host:port\n", *upstream)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := Serve(ctx, *listen, u, *timeout); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

// Serve serves Handler on listen until ctx ends.
func Serve(ctx context.Context, listen string, upstream *url.URL, timeout time.Duration) error {
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	srv := &http.Server{
		// Never through a proxy: the cluster's HTTP_PROXY reaches every container of the
		// controller pod, and LINSTOR is on the pod's loopback.
		Handler:           Handler(upstream, &http.Client{Timeout: timeout, Transport: &http.Transport{Proxy: nil, DisableCompression: true}}),
		ReadHeaderTimeout: 5 * time.Second,
		WriteTimeout:      timeout + 5*time.Second,
		MaxHeaderBytes:    16 << 10,
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return err
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
