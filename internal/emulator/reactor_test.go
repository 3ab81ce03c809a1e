package emulator_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// reactorPage scrapes node's drbd-reactor page; "" when it does not answer 200.
func reactorPage(t *testing.T, h *harness, node string) string {
	t.Helper()
	srv := httptest.NewServer(h.emu.ReactorHandler(node))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	must(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	must(t, err)
	if resp.StatusCode != http.StatusOK {
		return ""
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	if _, err := parser.TextToMetricFamilies(strings.NewReader(string(body))); err != nil {
		t.Fatalf("Prometheus cannot parse the page: %v\n%s", err, body)
	}
	return string(body)
}

// drbd-reactor's page follows DRBD, not LINSTOR: connections and disks as the kernel
// has them, suspension where quorum is lost under on-no-quorum suspend-io, the rest of
// a resync out of sync; a machine that is gone answers nothing.
func TestReactorPageFollowsDRBD(t *testing.T) {
	h, clk := onlineHarness(t, "n1", "n2", "n3")
	addPool(t, h, "n1", "n2", "n3")
	for _, n := range []string{"n1", "n2", "n3"} {
		must(t, h.emu.PlaceResource("pvc-q", n, "thin", n == "n1"))
	}
	must(t, h.emu.PlaceResource("pvc-io", "n1", "thin", false))
	must(t, h.emu.PlaceResource("pvc-io", "n2", "thin", false))
	must(t, h.emu.PlaceResource("pvc-io", "n3", "thin", false))

	page := reactorPage(t, h, "n1")
	hasLines(t, page,
		`drbd_resource_resources 2`,
		`drbd_resource_role{name="pvc-q",drbd_resource_role="Primary"} 1`,
		`drbd_resource_suspended{name="pvc-q"} 0`,
		`drbd_connection_state{name="pvc-q",conn_name="n2",peer_node_id="1",drbd_connection_state="Connected"} 1`,
		`drbd_device_state{name="pvc-q",volume="0",minor="1000",drbd_device_state="UpToDate"} 1`,
		`drbd_device_quorum{name="pvc-q",volume="0",minor="1000"} 1`)

	// n1 cut off from both peers: no quorum. A new database's controller sets
	// on-no-quorum io-error: I/O fails, nothing suspends; pvc-q's own suspend-io does.
	must(t, h.emu.PartitionLink("n1", "n2"))
	must(t, h.emu.PartitionLink("n1", "n3"))
	hasLines(t, reactorPage(t, h, "n1"), `drbd_resource_suspended{name="pvc-q"} 0`)
	must(t, h.emu.SetResourceDefinitionProp("pvc-q", "DrbdOptions/Resource/on-no-quorum", "suspend-io"))
	if err := h.emu.SetResourceDefinitionProp("pvc-q", "DrbdOptions/Resource/on-no-quorum", "freeze"); err == nil {
		t.Error("on-no-quorum freeze was accepted")
	}
	page = reactorPage(t, h, "n1")
	hasLines(t, page,
		`drbd_resource_suspended{name="pvc-q"} 1`,
		`drbd_resource_suspended{name="pvc-io"} 0`,
		`drbd_device_quorum{name="pvc-io",volume="0",minor="1000"} 0`,
		`drbd_connection_state{name="pvc-q",conn_name="n2",peer_node_id="1",drbd_connection_state="Connecting"} 1`,
		`drbd_connection_state{name="pvc-q",conn_name="n2",peer_node_id="1",drbd_connection_state="Connected"} 0`)
	// Without quorum the Primary writes nothing: nothing is out of sync.
	hasLines(t, page, `drbd_peerdevice_outofsync_bytes{name="pvc-q",conn_name="n2",peer_node_id="1",volume="0"} 0`)
	must(t, h.emu.PartitionLink("n2", "n3"))
	must(t, h.emu.HealLink("n1", "n2"))

	// With n2 back, quorum holds: n3, cut off from both, misses the Primary's writes,
	// then resyncs from it.
	hasLines(t, reactorPage(t, h, "n1"), `drbd_peerdevice_outofsync_bytes{name="pvc-q",conn_name="n3",peer_node_id="2",volume="0"} 4096`)
	must(t, h.emu.HealLink("n1", "n3"))
	hasLines(t, reactorPage(t, h, "n3"), `drbd_device_state{name="pvc-q",volume="0",minor="1000",drbd_device_state="Inconsistent"} 1`)
	// The source counts down what n3 missed; it never rises to the whole volume.
	hasLines(t, reactorPage(t, h, "n1"), `drbd_peerdevice_outofsync_bytes{name="pvc-q",conn_name="n3",peer_node_id="2",volume="0"} 4096`)
	clk.Advance(500 * time.Millisecond)
	hasLines(t, reactorPage(t, h, "n1"), `drbd_peerdevice_outofsync_bytes{name="pvc-q",conn_name="n3",peer_node_id="2",volume="0"} 2048`)
	clk.Advance(2 * time.Second)
	hasLines(t, reactorPage(t, h, "n1"), `drbd_peerdevice_outofsync_bytes{name="pvc-q",conn_name="n3",peer_node_id="2",volume="0"} 0`)
	hasLines(t, reactorPage(t, h, "n3"), `drbd_device_state{name="pvc-q",volume="0",minor="1000",drbd_device_state="UpToDate"} 1`)
	must(t, h.emu.HealLink("n2", "n3"))

	// A failed disk: Diskless, not a client, unintentionally.
	must(t, h.emu.FailDisk("pvc-io", "n3"))
	hasLines(t, reactorPage(t, h, "n3"),
		`drbd_device_state{name="pvc-io",volume="0",minor="1000",drbd_device_state="Diskless"} 1`,
		`drbd_device_client{name="pvc-io",volume="0",minor="1000"} 0`,
		`drbd_device_unintentionaldiskless{name="pvc-io",volume="0",minor="1000"} 1`)

	// The machine gone: nothing answers; only its satellite stopped: DRBD still reports.
	must(t, h.emu.StopSatellite("n2"))
	if reactorPage(t, h, "n2") == "" {
		t.Error("n2's drbd-reactor stopped with only its satellite")
	}
	must(t, h.emu.SetNodeOnline("n2", false))
	if page := reactorPage(t, h, "n2"); page != "" {
		t.Errorf("a machine that is gone answered:\n%s", page)
	}
}
