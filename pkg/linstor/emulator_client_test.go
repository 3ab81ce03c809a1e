package linstor_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/linstorstate"
	"github.com/linstor-operator/linstor-operator/pkg/names"

	lapi "github.com/LINBIT/golinstor/client"

	"github.com/linstor-operator/linstor-operator/internal/emulator"
	"github.com/linstor-operator/linstor-operator/pkg/linstor"
)

// connect serves a fresh emulator and returns a connection as the operator makes it.
func connect(t *testing.T) (*emulator.Emulator, *linstor.Connection) {
	t.Helper()
	emu := emulator.New()
	emu.SetTiming(emulator.Timing{})
	srv := httptest.NewServer(emu.Handler())
	t.Cleanup(srv.Close)
	conn, err := (&linstor.Connector{URL: srv.URL}).Connect(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return emu, conn
}

func addNode(t *testing.T, conn *linstor.Connection, name, ip string) {
	t.Helper()
	if err := emulator.RegisterSatellite(context.Background(), conn.Client, name, ip); err != nil {
		t.Fatal(err)
	}
}

// LINSTOR refuses a whole request for one key it does not know; the operator's own
// Aux/ bookkeeping still goes through, and the refusal is returned.
func TestModifyPropertiesKeepsTheOperatorsKeys(t *testing.T) {
	emu, conn := connect(t)
	addNode(t, conn, "n1", "10.0.0.1")
	ctx := context.Background()
	send := func(m lapi.GenericPropsModify) error {
		return conn.Nodes.Modify(ctx, "n1", lapi.NodeModify{GenericPropsModify: m})
	}
	mod := lapi.GenericPropsModify{OverrideProps: lapi.OverrideProps{names.AuxLastApplied: `["Foo/Bar"]`, "Foo/Bar": "1"}}
	err := linstor.ModifyProperties(mod, send)
	if err == nil || !linstor.IsPropertyRefusal(err) {
		t.Fatalf("ModifyProperties = %v, want LINSTOR's property refusal", err)
	}
	n, _ := emu.Node("n1")
	if n.Props[names.AuxLastApplied] == "" || n.Props["Foo/Bar"] != "" {
		t.Errorf("node props = %v: want the Aux/ key applied and Foo/Bar refused", n.Props)
	}
	if linstor.IsPropertyRefusal(context.DeadlineExceeded) {
		t.Error("a timeout is not a property refusal")
	}
}

// Evacuate reads the warnings golinstor drops: a replica with nowhere to go.
func TestEvacuateReturnsWarnings(t *testing.T) {
	emu, conn := connect(t)
	addNode(t, conn, "n1", "10.0.0.1")
	addNode(t, conn, "n2", "10.0.0.2")
	for _, n := range []string{"n1", "n2"} {
		if err := emu.PlaceResource("pvc-1", n, "thin", false); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(10 * time.Millisecond)
	warnings, err := linstor.Evacuate(context.Background(), conn, "n2")
	if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], "pvc-1") {
		t.Fatalf("Evacuate = %v, %v; want one warning naming pvc-1", warnings, err)
	}
	replicas, err := linstor.ReplicasOf(context.Background(), conn.Client, "n2")
	if err != nil {
		t.Fatal(err)
	}
	if ev := linstorstate.ObserveEvacuation("n2", replicas); len(ev.Stuck) != 1 || ev.Stuck[0] != "pvc-1" {
		t.Errorf("linstorstate.ObserveEvacuation = %+v, want pvc-1 stuck", ev)
	}
	if _, err := linstor.Evacuate(context.Background(), conn, "gone"); !linstor.IsNotFound(err) {
		t.Errorf("evacuating a missing node: %v, want not found", err)
	}
}
