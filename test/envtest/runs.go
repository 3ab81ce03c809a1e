package envtest

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/linstor-operator/linstor-operator/internal/kwokcluster"
)

// LogOperatorTo sends the log of the operators a suite runs in its own process to
// bin/<file> (its end is worth showing when a test fails: ShowTail); close it after
// the run.
func LogOperatorTo(file string) (path string, closeLog func(), err error) {
	path = filepath.Join(RepoRoot(), "bin", file)
	f, err := os.Create(path)
	if err != nil {
		return "", nil, err
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(f), zap.Level(zapcore.InfoLevel)))
	return path, func() { _ = f.Close() }, nil
}

// NothingLeft waits up to within for every process whose command line names one of
// dirs to end and every address to stop listening: nothing a suite started may outlive
// its run, even when a test failed. It says what was left behind.
func NothingLeft(dirs, addresses []string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		var left []string
		for _, dir := range dirs {
			left = append(left, kwokcluster.ProcessesUnder(dir)...)
		}
		open := Listening(addresses)
		if len(left) == 0 && len(open) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("left behind: processes %v, listening %v", left, open)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Listening returns the addresses that still accept a TCP connection.
func Listening(addresses []string) []string {
	var out []string
	for _, addr := range addresses {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			_ = c.Close()
			out = append(out, addr)
		}
	}
	return out
}
