package linstor

import (
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	requestsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "linstor_operator_linstor_requests_total",
		Help: "LINSTOR REST API requests by method, route and HTTP status code (\"error\" when no answer came).",
	}, []string{"method", "route", "code"})
	requestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "linstor_operator_linstor_request_duration_seconds",
		Help:    "LINSTOR REST API request latency by method and route.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
	}, []string{"method", "route"})
)

func init() {
	metrics.Registry.MustRegister(requestsTotal, requestDuration)
}

// routeParams collapses object names so label cardinality stays bounded.
var routeParams = regexp.MustCompile(`/(nodes|storage-pools|net-interfaces|resource-definitions|resources|properties|physical-storage|node-connections)/[^/]+`)

func route(path string) string { return routeParams.ReplaceAllString(path, "/$1/{name}") }

type instrumented struct{ next http.RoundTripper }

// InstrumentedTransport counts and times every LINSTOR request.
func InstrumentedTransport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return instrumented{next: next}
}

func (t instrumented) RoundTrip(req *http.Request) (*http.Response, error) {
	start := time.Now()
	r := route(req.URL.Path)
	resp, err := t.next.RoundTrip(req)
	requestDuration.WithLabelValues(req.Method, r).Observe(time.Since(start).Seconds())
	code := "error"
	if err == nil {
		code = strconv.Itoa(resp.StatusCode)
	}
	requestsTotal.WithLabelValues(req.Method, r, code).Inc()
	return resp, err
}
