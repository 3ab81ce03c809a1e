package emulator_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestConformanceDetectsDrift proves the validator is not a rubber stamp: responses
// that drift from the spec are reported.
func TestConformanceDetectsDrift(t *testing.T) {
	doc := loadSpec(t)
	cases := []struct {
		name, method, path, body string
		status                   int
		want                     string
	}{
		{"enum value outside the spec", "GET", "/v1/nodes", `[{"name":"n1","type":"Satellite","connection_status":"BOGUS"}]`, 200, "connection_status"},
		{"capacity sent as a string", "GET", "/v1/view/storage-pools", `[{"storage_pool_name":"p","provider_kind":"LVM","free_capacity":"12"}]`, 200, "free_capacity"},
		{"ApiCallRc without ret_code", "POST", "/v1/nodes", `[{"message":"created"}]`, 201, "ret_code"},
		{"undeclared success status", "GET", "/v1/controller/version", `{"version":"1.33.3"}`, 202, "status"},
		{"path outside the spec", "GET", "/v1/not-a-thing", `{}`, 200, "not in the spec"},
		{"event data outside the spec", "GET", "/v1/events/nodes", "event: node-create\ndata: {\"node\":{\"name\":\"n1\",\"connection_status\":\"BOGUS\"}}\n\n", 200, "connection_status"},
		{"modified event with a string node", "GET", "/v1/events/nodes", "event: node-modified\ndata: {\"old_node\":\"n1\"}\n\n", 200, "old_node"},
		{"event name outside the spec", "GET", "/v1/events/nodes", "event: node-online\ndata: {}\n\n", 200, "not in the spec"},
		{"event data on two lines", "GET", "/v1/events/nodes", "event: node-create\ndata: {}\ndata: {}\n\n", 200, "one data line"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(nil)
			conf := newConformance(t, doc, "http://"+srv.Listener.Addr().String())
			srv.Config.Handler = conf.wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				if strings.HasPrefix(tc.path, "/v1/events/") {
					w.Header().Set("Content-Type", "text/event-stream")
				} else {
					w.Header().Set("Content-Type", "application/json")
				}
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}), func(r *http.Request) string { return r.Method + " " + r.URL.Path })
			srv.Start()
			defer srv.Close()

			var body *strings.Reader
			if tc.method == "POST" {
				body = strings.NewReader(`{"name":"n1","type":"Satellite","net_interfaces":[{"name":"d","address":"10.0.0.1"}]}`)
			} else {
				body = strings.NewReader("")
			}
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, body)
			req.Header.Set("Content-Type", "application/json")
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			joined := strings.Join(conf.failures, "\n")
			if !strings.Contains(joined, tc.want) {
				t.Fatalf("validator did not report %q; failures: %q", tc.want, joined)
			}
		})
	}
}
