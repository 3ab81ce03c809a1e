// Package e2edr plays docs/disaster-recovery.md end to end: a kwok-simulated cluster
// backs LINSTOR's database up to a real S3 server on a schedule and has LINSTOR ship a
// volume there, is stopped whole (its etcd too), and a second simulated cluster, given
// only the bucket, the credentials and the key, restores the database before LINSTOR
// first starts, then the volume from LINSTOR's backup.
package e2edr

import (
	"fmt"
	"os"
	"testing"
	"time"

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
	// Both clusters' operators run in this process; their log goes to one file, whose
	// end is shown when a test fails.
	logPath, closeLog, err := envtest.LogOperatorTo("e2edr-operator.log")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2edr:", err)
		return 1
	}
	defer closeLog()
	code := m.Run()
	if code != 0 {
		envtest.ShowTail("e2edr", logPath, 150)
	}
	if err := envtest.NothingLeft(started.processDirs, started.addresses, 15*time.Second); err != nil {
		fmt.Fprintln(os.Stderr, "e2edr:", err)
		code = 1
	}
	return code
}
