// Package e2edr plays docs/disaster-recovery.md end to end: a kwok-simulated cluster
// backs LINSTOR's database up to a real S3 server on a schedule and has LINSTOR ship a
// volume there, is stopped whole (its etcd too), and a second simulated cluster, given
// only the bucket, the credentials and the key, restores the database before LINSTOR
// first starts, then the volume from LINSTOR's backup.
package e2edr

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/linstor-operator/linstor-operator/internal/kwokcluster"
	"github.com/linstor-operator/linstor-operator/test/envtest"
)

// started records every cluster and server the test started, for the leak check after
// the run: nothing may outlive it, even when the test failed.
var started struct {
	// processDirs: a process whose command line names one is the test's (the clusters'
	// directories, the S3 server's).
	processDirs []string
	addresses   []string
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	root := envtest.RepoRoot()
	// Both clusters' operators run in this process; their log goes to one file, whose
	// end is shown when a test fails.
	logPath := filepath.Join(root, "bin", "e2edr-operator.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2edr:", err)
		return 1
	}
	defer logFile.Close()
	ctrl.SetLogger(zap.New(zap.WriteTo(logFile), zap.Level(zapcore.InfoLevel)))
	code := m.Run()
	if code != 0 {
		envtest.ShowTail("e2edr", logPath, 150)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		var left []string
		for _, dir := range started.processDirs {
			left = append(left, kwokcluster.ProcessesUnder(dir)...)
		}
		open := listening(started.addresses)
		if len(left) == 0 && len(open) == 0 {
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "e2edr: left behind: processes %v, listening %v\n", left, open)
			code = 1
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	return code
}
