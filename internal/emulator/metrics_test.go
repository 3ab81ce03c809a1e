package emulator_test

import (
	"context"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	lapi "github.com/LINBIT/golinstor/client"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape reads GET /metrics (with query, e.g. "?resource=false") and checks that
// Prometheus's own text parser accepts it.
func (h *harness) scrape(t *testing.T, query string) string {
	t.Helper()
	resp, err := h.http.Get(h.url + "/metrics" + query)
	must(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	must(t, err)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/plain; version=0.0.4" {
		t.Fatalf("/metrics: HTTP %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	if _, err := parser.TextToMetricFamilies(strings.NewReader(string(body))); err != nil {
		t.Fatalf("Prometheus cannot parse /metrics: %v\n%s", err, body)
	}
	return string(body)
}

func hasLines(t *testing.T, page string, lines ...string) {
	t.Helper()
	have := map[string]bool{}
	for _, l := range strings.Split(page, "\n") {
		have[l] = true
	}
	for _, l := range lines {
		if !have[l] {
			t.Errorf("/metrics lacks the line\n  %s\nin\n%s", l, page)
		}
	}
}

func lacks(t *testing.T, page string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if strings.Contains(page, p) {
			t.Errorf("/metrics has %q:\n%s", p, page)
		}
	}
}

// PrometheusBuilder.build at v1.33.3: the families in its order with their HELP and
// TYPE lines, label maps in the order Java's HashMap iterates them, values as
// Double.toString prints them; a node that goes OFFLINE reports 0, unknown pool
// capacities (NaN), unknown resource and volume states (-1) and the controller's
// reconnect tries; a failed disk is Diskless(Detached), 90.
func TestMetricsPageFollowsPrometheusBuilder(t *testing.T) {
	h, clk := onlineHarness(t, "n1", "n2")
	addPool(t, h, "n1", "n2")
	must(t, h.emu.PlaceResource("pvc-a", "n1", "thin", true))
	must(t, h.emu.PlaceResource("pvc-a", "n2", "thin", false))
	clk.Advance(time.Minute) // the initial resync ends
	views, err := h.client.Resources.GetResourceView(context.Background())
	must(t, err)
	devicePath := map[string]string{}
	for _, v := range views {
		devicePath[v.NodeName] = v.Volumes[0].DevicePath
	}
	if devicePath["n1"] == "" || devicePath["n2"] == "" {
		t.Fatalf("no device paths in the view: %+v", views)
	}

	page := h.scrape(t, "")
	hasLines(t, page,
		`# TYPE linstor_info gauge`,
		`linstor_info{gitid="emulator",buildtime="2026-01-01T00:00:00+00:00",version="1.33.3"} 1.0`,
		`# HELP linstor_node_state 0="OFFLINE", 1="CONNECTED", 2="ONLINE", 3="VERSION_MISMATCH", 4="FULL_SYNC_FAILED", 5="AUTHENTICATION_ERROR", 6="UNKNOWN", 7="HOSTNAME_MISMATCH", 8="OTHER_CONTROLLER", 9="AUTHENTICATED", 10="NO_STLT_CONN", 11="MISSING_EXT_TOOLS", 12="DUPLICATE_UNAME", `,
		`# TYPE linstor_node_state gauge`,
		`linstor_node_state{node="n1",address="10.0.1.1",nodetype="SATELLITE",encryption="PLAIN",port="3366"} 2.0`,
		`linstor_node_state{node="n2",address="10.0.1.2",nodetype="SATELLITE",encryption="PLAIN",port="3366"} 2.0`,
		`# HELP linstor_node_reconnect_attempt_count Number of node reconnection attempts`,
		`linstor_node_reconnect_attempt_count{node="n2",address="10.0.1.2",nodetype="SATELLITE",encryption="PLAIN",port="3366"} 1.0`,
		`linstor_resource_definition_count 1.0`,
		`linstor_resource_definition_resource_count{resource_group="DfltRscGrp",name="pvc-a"} 2.0`,
		`linstor_volume_definition_size_bytes{resource_group="DfltRscGrp",volume_number="0",name="pvc-a"} 1.073741824E9`,
		`# HELP linstor_resource_state -1="unknown state", 0="secondary", 1="primary"`,
		`linstor_resource_state{node="n1",name="pvc-a"} 1.0`,
		`linstor_resource_state{node="n2",name="pvc-a"} 0.0`,
		`# HELP linstor_volume_state 1="UpToDate", 2="Created", 3="Attached", 4="Diskless", 5="Inconsistent", 6="Failed", 7="To: Creating", 8="To: Attachable", 9="To: Attaching", 90="Diskless(Detached)", -1="DUnknown", `,
		`linstor_volume_state{volume="0",node="n1",resource="pvc-a",device_path="`+devicePath["n1"]+`",storage_pool="thin"} 1.0`,
		`linstor_volume_allocated_size_bytes{volume="0",node="n2",resource="pvc-a",device_path="`+devicePath["n2"]+`",storage_pool="thin"} 1.073741824E9`,
		`linstor_storage_pool_capacity_free_bytes{node="n1",driver="LVM_THIN",backing_pool="vg/thin",storage_pool="thin"} 1.06300440576E11`,
		`linstor_storage_pool_capacity_total_bytes{node="n1",driver="LVM_THIN",backing_pool="vg/thin",storage_pool="thin"} 1.073741824E11`,
		`linstor_storage_pool_capacity_total_bytes{node="n1",driver="DISKLESS",backing_pool="",storage_pool="DfltDisklessStorPool"} 0.0`,
		`linstor_storage_pool_error_count{node="n1",driver="LVM_THIN",backing_pool="vg/thin",storage_pool="thin"} 0.0`,
		`linstor_error_reports_count 0.0`,
		`# TYPE linstor_scrape_requests_count counter`,
		`linstor_scrape_requests_count 1.0`,
		`# TYPE linstor_scrape_duration_seconds gauge`,
	)
	// Counted twice per scrape.
	hasLines(t, h.scrape(t, ""), `linstor_scrape_requests_count 3.0`)

	// n2 goes away for 25 s: OFFLINE, two reconnect tries so far, nothing known of its
	// pools and replicas.
	must(t, h.emu.SetNodeOnline("n2", false))
	clk.Advance(25 * time.Second)
	page = h.scrape(t, "")
	hasLines(t, page,
		`linstor_node_state{node="n2",address="10.0.1.2",nodetype="SATELLITE",encryption="PLAIN",port="3366"} 0.0`,
		`linstor_node_reconnect_attempt_count{node="n2",address="10.0.1.2",nodetype="SATELLITE",encryption="PLAIN",port="3366"} 3.0`,
		`linstor_node_reconnect_attempt_count{node="n1",address="10.0.1.1",nodetype="SATELLITE",encryption="PLAIN",port="3366"} 1.0`,
		`linstor_storage_pool_capacity_free_bytes{node="n2",driver="LVM_THIN",backing_pool="vg/thin",storage_pool="thin"} NaN`,
		`linstor_storage_pool_capacity_total_bytes{node="n2",driver="LVM_THIN",backing_pool="vg/thin",storage_pool="thin"} NaN`,
		`linstor_storage_pool_error_count{node="n2",driver="LVM_THIN",backing_pool="vg/thin",storage_pool="thin"} 0.0`, // WARN_NOT_CONNECTED is no error
		`linstor_resource_state{node="n2",name="pvc-a"} -1.0`,
		`linstor_volume_state{volume="0",node="n2",resource="pvc-a",device_path="`+devicePath["n2"]+`",storage_pool="thin"} -1.0`,
	)
	// Back: the try that found it counts too, and the count stays.
	must(t, h.emu.SetNodeOnline("n2", true))
	clk.Advance(time.Second)
	hasLines(t, h.scrape(t, ""),
		`linstor_node_state{node="n2",address="10.0.1.2",nodetype="SATELLITE",encryption="PLAIN",port="3366"} 2.0`,
		`linstor_node_reconnect_attempt_count{node="n2",address="10.0.1.2",nodetype="SATELLITE",encryption="PLAIN",port="3366"} 4.0`)

	// A failed disk: Diskless without the DRBD_DISKLESS flag.
	must(t, h.emu.FailDisk("pvc-a", "n2"))
	hasLines(t, h.scrape(t, ""),
		`linstor_volume_state{volume="0",node="n2",resource="pvc-a",device_path="`+devicePath["n2"]+`",storage_pool="thin"} 90.0`)

	// A controller restart counts from zero.
	h.emu.RestartController()
	hasLines(t, h.scrape(t, ""), `linstor_scrape_requests_count 1.0`,
		`linstor_node_reconnect_attempt_count{node="n2",address="10.0.1.2",nodetype="SATELLITE",encryption="PLAIN",port="3366"} 1.0`)
}

// An intentionally diskless replica is Diskless (4), and its volume's pool is the
// diskless pool.
func TestMetricsDisklessReplica(t *testing.T) {
	h, clk := onlineHarness(t, "n1", "n2")
	addPool(t, h, "n1")
	must(t, h.emu.PlaceResource("pvc-d", "n1", "thin", false))
	must(t, h.emu.PlaceResource("pvc-d", "n2", "", true))
	clk.Advance(time.Minute)
	page := h.scrape(t, "")
	if !strings.Contains(page, `linstor_volume_state{volume="0",node="n2",resource="pvc-d",device_path="`) ||
		!strings.Contains(page, `",storage_pool="DfltDisklessStorPool"} 4.0`) {
		t.Errorf("no Diskless (4) volume state for n2:\n%s", page)
	}
	hasLines(t, page, `linstor_resource_state{node="n2",name="pvc-d"} 1.0`)
}

// resource=false, storage_pools=false and error_reports=false leave out what they
// name; any value but "true" (any case) is false.
func TestMetricsQueryParameters(t *testing.T) {
	h, _ := onlineHarness(t, "n1")
	addPool(t, h, "n1")
	must(t, h.emu.PlaceResource("pvc-q", "n1", "thin", false))

	page := h.scrape(t, "?resource=false&storage_pools=no&error_reports=0")
	lacks(t, page, "linstor_resource_definition_resource_count", "linstor_resource_state", "linstor_volume_state",
		"linstor_volume_allocated_size_bytes", "linstor_storage_pool_", "linstor_error_reports_count")
	hasLines(t, page, `linstor_resource_definition_count 1.0`,
		`linstor_volume_definition_size_bytes{resource_group="DfltRscGrp",volume_number="0",name="pvc-q"} 1.073741824E9`)

	page = h.scrape(t, "?resource=TRUE")
	for _, family := range []string{"linstor_resource_state", "linstor_storage_pool_capacity_free_bytes", "linstor_error_reports_count"} {
		if !strings.Contains(page, "# TYPE "+family+" ") {
			t.Errorf("/metrics?resource=TRUE lacks %s:\n%s", family, page)
		}
	}
}

// The numbers parse back to what the views say (Java's E notation included).
func TestMetricsNumbersParse(t *testing.T) {
	h, _ := onlineHarness(t, "n1")
	addPool(t, h, "n1")
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(h.scrape(t, "")))
	must(t, err)
	pools, err := h.emu.StoragePools("n1")
	must(t, err)
	var thin lapi.StoragePool
	for _, p := range pools {
		if p.StoragePoolName == "thin" {
			thin = p
		}
	}
	found := false
	for _, m := range families["linstor_storage_pool_capacity_total_bytes"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "storage_pool" && l.GetValue() == "thin" {
				found = true
				if got := m.GetGauge().GetValue(); got != float64(thin.TotalCapacity)*1024 || math.IsNaN(got) {
					t.Errorf("total bytes %v, want %d KiB", got, thin.TotalCapacity)
				}
			}
		}
	}
	if !found {
		t.Error("no total capacity of pool thin")
	}
}
