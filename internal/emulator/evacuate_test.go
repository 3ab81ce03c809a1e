package emulator_test

import (
	"net/http"
	"testing"

	lapiconst "github.com/LINBIT/golinstor"
)

// An evacuated replica that is not UpToDate is deleted at once, whatever its peers
// hold: "no use to keep a non-UpToDate resource that should be evacuated"
// (CtrlNodeApiCallHandler.evacuateNodeInTrasaction, allVolumesUpToDate, then
// rscDeleteHandler.deleteResource). An unknown state counts as UpToDate there
// (SatelliteResourceStateDrbdUtils.allVolumesUpToDate, defaultIfUnknown), so the
// replica of an OFFLINE node is moved, not deleted.
func TestEvacuationDeletesASourceThatIsNotUpToDate(t *testing.T) {
	h, _ := onlineHarness(t, "n1", "n2", "n3")
	addPool(t, h, "n1", "n2", "n3")
	must(t, h.emu.PlaceResource("pvc-out", "n1", "thin", false))
	must(t, h.emu.SetDiskState("pvc-out", "n1", "Outdated"))

	status, got := h.call(t, "PUT", "/v1/nodes/n1/evacuate", nil)
	expect(t, "evacuate", status, got, http.StatusOK, lapiconst.Deleted|lapiconst.MaskDel|lapiconst.MaskRsc)
	if h.emu.ResourcePlaced("pvc-out", "n1") || h.emu.ResourcePlaced("pvc-out", "n2") || h.emu.ResourcePlaced("pvc-out", "n3") {
		t.Errorf("the Outdated lone replica should be deleted without a replacement: %v", h.emu.Replicas("pvc-out"))
	}

	must(t, h.emu.PlaceResource("pvc-away", "n2", "thin", false))
	must(t, h.emu.SetNodeOnline("n2", false))
	status, got = h.call(t, "PUT", "/v1/nodes/n2/evacuate", nil)
	expect(t, "evacuate an OFFLINE node", status, got, http.StatusOK, lapiconst.Created|lapiconst.MaskCrt|lapiconst.MaskRsc)
	if !h.emu.ResourcePlaced("pvc-away", "n2") {
		t.Error("an unknown state counts as UpToDate: the replica is moved, not deleted")
	}
}

// A stopped satellite is not a dead machine: LINSTOR reports the node OFFLINE and
// knows nothing of its replicas, while its DRBD keeps replicating and its peers still
// report the connection Connected.
func TestStoppedSatelliteLeavesDRBDRunning(t *testing.T) {
	h, _ := onlineHarness(t, "n1", "n2")
	addPool(t, h, "n2")
	must(t, h.emu.PlaceResource("pvc-s", "n1", "", true))
	must(t, h.emu.PlaceResource("pvc-s", "n2", "thin", false))

	must(t, h.emu.StopSatellite("n1"))
	if n, _ := h.emu.Node("n1"); n.ConnectionStatus != "OFFLINE" {
		t.Errorf("n1 is %s, want OFFLINE", n.ConnectionStatus)
	}
	if v := viewOf(t, h, "pvc-s", "n1"); v.State != nil || v.LayerObject.Drbd.Connections != nil {
		t.Errorf("n1's own view: state %+v, connections %+v; want nothing known", v.State, v.LayerObject.Drbd.Connections)
	}
	if c := viewOf(t, h, "pvc-s", "n2").LayerObject.Drbd.Connections["n1"]; !c.Connected {
		t.Errorf("n2 -> n1 while only n1's satellite is stopped: %+v, want Connected", c)
	}

	must(t, h.emu.SetNodeOnline("n1", false)) // now the machine goes
	if c := viewOf(t, h, "pvc-s", "n2").LayerObject.Drbd.Connections["n1"]; c.Connected || c.Message != "Connecting" {
		t.Errorf("n2 -> n1 with n1's machine gone: %+v, want Connecting", c)
	}
}
