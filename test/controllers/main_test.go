// Package controllers tests the operator's reconcilers on a real kube-apiserver, with
// LINSTOR played by the emulator over HTTP through golinstor.
package controllers

import (
	"fmt"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	lapi "github.com/LINBIT/golinstor/client"

	"github.com/linstor-operator/linstor-operator/internal/emulator"
	"github.com/linstor-operator/linstor-operator/test/envtest"
)

var (
	env         *envtest.Env
	emu         *emulator.Emulator
	emulatorURL string
)

func TestMain(m *testing.M) {
	emu = emulator.New()
	emu.SetNewNodeDisks(lapi.PhysicalStorageNode{PhysicalStorageDevice: lapi.PhysicalStorageDevice{Device: "/dev/vdb"}, Size: 100 << 30})
	srv := httptest.NewServer(emu.Handler())
	emulatorURL = srv.URL
	code := envtest.Run(m, envtest.Options{LinstorURL: srv.URL, LinstorPoll: time.Second, LinstorGrace: 3 * time.Second, DiskRelist: 2 * time.Second, RestoreSettle: 2 * time.Second,
		BackupTargetPoll: 2 * time.Second, Now: scheduleClock.Now,
		// cert-manager's Certificate kind, for mode CertManager; the tests play cert-manager.
		// OpenShift's ImageStream kind, for the Driver Toolkit of RHCOS nodes.
		ExtraCRDs: []string{"testdata/certificates.cert-manager.io.yaml", "testdata/imagestreams.image.openshift.io.yaml"}}, &env)
	srv.Close()
	if code != 0 {
		fmt.Fprintln(os.Stderr, "controllers: tests failed")
	}
	os.Exit(code)
}
