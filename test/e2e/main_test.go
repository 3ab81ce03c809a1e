// Package e2e runs the operator end to end on a kwok-simulated cluster: real etcd,
// kube-apiserver, kube-controller-manager (garbage collector, Deployment and DaemonSet
// controllers) and kube-scheduler, kwok playing the kubelets, the LINSTOR emulator
// coupled to the pods, and the operator as a local process with its webhooks. The tests
// run in file order as one scenario, each step building on the previous one.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/linstor-operator/linstor-operator/internal/kwokcluster"
	"github.com/linstor-operator/linstor-operator/internal/sim"
	"github.com/linstor-operator/linstor-operator/test/envtest"
)

const (
	namespace   = "linstor"
	clusterName = "linstor-e2e"
)

var env *sim.Env

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	root := envtest.RepoRoot()
	// The operator runs in this process; its log goes to a file, and its end is shown
	// when a test fails.
	logPath, closeLog, err := envtest.LogOperatorTo("e2e-operator.log")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer closeLog()
	start := time.Now()
	env, err = sim.Start(context.Background(), sim.Options{Root: root, Name: clusterName, Namespace: namespace,
		// Four satellite pods roll in about 20 s on a loaded 2-core machine: a 20 s phase
		// timeout rolled back 2 of 40 runs of the rollback test at the Satellites phase.
		LinstorPoll: 2 * time.Second, UpgradePhaseTimeout: 40 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: starting the simulated cluster:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e: kwok cluster up in %.1fs\n", time.Since(start).Seconds())
	addrs := env.Addresses()
	if err := env.StartOperator(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: starting the operator:", err)
		_ = env.Stop()
		return 1
	}
	code := m.Run()
	if code != 0 {
		envtest.ShowTail("e2e", logPath, 150)
	}
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: stopping:", err)
		code = 1
	}
	// Nothing may outlive the run: no cluster process, no listening port. Processes get
	// a few seconds to finish shutting down.
	clusterDir := filepath.Join(kwokcluster.Workdir(root), "clusters", clusterName)
	if err := envtest.NothingLeft([]string{clusterDir}, addrs, 15*time.Second); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		code = 1
	}
	return code
}
