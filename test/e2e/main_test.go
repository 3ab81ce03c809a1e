// Package e2e runs the operator end to end on a kwok-simulated cluster: real etcd,
// kube-apiserver, kube-controller-manager (garbage collector, Deployment and DaemonSet
// controllers) and kube-scheduler, kwok playing the kubelets, the LINSTOR emulator
// coupled to the pods, and the operator as a local process with its webhooks. The tests
// run in file order as one scenario, each step building on the previous one.
package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

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
	logPath := filepath.Join(root, "bin", "e2e-operator.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer logFile.Close()
	ctrl.SetLogger(zap.New(zap.WriteTo(logFile), zap.Level(zapcore.InfoLevel)))
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
	deadline := time.Now().Add(15 * time.Second)
	for {
		left, open := kwokcluster.ProcessesUnder(clusterDir), listening(addrs)
		if len(left) == 0 && len(open) == 0 {
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "e2e: left behind: processes %v, listening %v\n", left, open)
			code = 1
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	return code
}

func listening(addrs []string) []string {
	var out []string
	for _, addr := range addrs {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			_ = c.Close()
			out = append(out, addr)
		}
	}
	return out
}
