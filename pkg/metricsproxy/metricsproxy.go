// Package metricsproxy serves the LINSTOR controller's /metrics at Path on the
// operator's own metrics endpoint.
//
// LINSTOR serves /metrics on its REST API port and has no read-only role: whoever may
// scrape it there may also create resources and delete nodes (with API TLS, whoever
// holds a client certificate of its CA may). So Prometheus is never admitted to that
// port and never given LINSTOR's client certificate. The operator, which reaches
// LINSTOR anyway, forwards GET /metrics and nothing else. Its metrics endpoint
// authenticates every request with a TokenReview and authorizes GET Path with a
// SubjectAccessReview (controller-runtime's filter wraps extra handlers too), so
// reading LINSTOR's page takes the same grant as reading the operator's.
package metricsproxy

import (
	"context"
	"io"
	"net/http"
	"net/url"
)

// Path is where the LINSTOR controller's page is served, beside the operator's
// /metrics; RBAC grants it by this non-resource URL.
const Path = "/metrics/linstor"

// MaxBody bounds one answer: LINSTOR's page grows with its nodes, pools and resources
// (a few hundred bytes each); a larger one fails the scrape, and is never buffered.
const MaxBody = 64 << 20

// MaxInFlight bounds the scrapes forwarded at once: LINSTOR builds its page from its
// whole in-memory state, and a Prometheus pair, the platform's and the user
// workloads', each scrape on their own. One more is refused (503) rather than queued.
const MaxInFlight = 4

// Source says where LINSTOR is and how to reach it: the base URL and a client with the
// operator's credentials for it.
type Source func(ctx context.Context) (url string, client *http.Client, err error)

// Handler forwards GET and HEAD to LINSTOR's /metrics while leading() says this
// replica leads; every other method is refused (405). A replica that does not lead
// answers an empty page: one replica's copy of LINSTOR's series is enough, and two
// would double every alert on them, while the target stays up. The request's query,
// headers and body are not forwarded: nothing a scraper sends reaches LINSTOR but the
// request for its page.
func Handler(source Source, leading func() bool) http.Handler {
	inFlight := make(chan struct{}, MaxInFlight)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "only GET and HEAD", http.StatusMethodNotAllowed)
			return
		}
		if !leading() {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
			w.WriteHeader(http.StatusOK)
			return
		}
		select {
		case inFlight <- struct{}{}:
			defer func() { <-inFlight }()
		default:
			http.Error(w, "too many scrapes of LINSTOR at once", http.StatusServiceUnavailable)
			return
		}
		base, client, err := source(r.Context())
		if err != nil {
			http.Error(w, "LINSTOR controller: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		target, err := url.JoinPath(base, "metrics")
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
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
		// A page cut short (LINSTOR's answer broke off, the request timed out, or it
		// passed MaxBody) must not reach Prometheus as a complete one: ended on a line
		// boundary it would parse, and the missing nodes' series would go stale
		// instead of the scrape failing. Aborting the handler breaks the connection.
		n, err := io.Copy(w, io.LimitReader(resp.Body, MaxBody+1))
		if err != nil || n > MaxBody {
			panic(http.ErrAbortHandler)
		}
	})
}
