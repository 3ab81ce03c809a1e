package main

import (
	"net/http"
	"time"

	"github.com/linstor-operator/linstor-operator/internal/emulator"
)

// countingHandler counts every LINSTOR request by route ("GET /v1/nodes/{node}": the
// method and the emulator's route pattern) in one-second buckets of its arrival. The
// operator is the emulator's only HTTP client, so every request counted is the
// operator's.
func countingHandler(e *emulator.Emulator, c clock, s *series) http.Handler {
	next := e.Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route := e.Route(r)
		if route == "" {
			route = r.Method + " (no route) " + r.URL.Path
		}
		s.add(c.bucket(time.Now()), route, 1)
		next.ServeHTTP(w, r)
	})
}
