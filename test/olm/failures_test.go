package olm

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
)

// failures keeps every failed assertion's message, so the suite can repeat them after
// the processes' log tails: a CI log shortened in its middle still shows why.
var failures struct {
	mu   sync.Mutex
	list []string
}

// recordingT is a testing.T whose Gomega failures are also kept in failures.
type recordingT struct{ *testing.T }

func (r recordingT) Fatalf(format string, args ...any) {
	r.Helper()
	msg := fmt.Sprintf(format, args...)
	failures.mu.Lock()
	failures.list = append(failures.list, r.Name()+": "+msg)
	failures.mu.Unlock()
	r.T.Fatalf("%s", msg)
}

// newG is NewWithT whose failures are repeated at the end of the suite.
func newG(t *testing.T) *WithT { return NewWithT(recordingT{t}) }

// showFailures repeats the failures, each shortened to its first lines.
func showFailures() {
	failures.mu.Lock()
	defer failures.mu.Unlock()
	for _, f := range failures.list {
		lines := strings.Split(f, "\n")
		if len(lines) > 12 {
			lines = append(lines[:12], fmt.Sprintf("[%d more lines above, in the test's output]", len(lines)-12))
		}
		fmt.Fprintln(os.Stderr, "test/olm: FAILED:", strings.Join(lines, "\n    "))
	}
}
