package manager

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// The operator goes on serving for the drain delay after SIGTERM, then stops.
func TestContextUntilDrainedServesThroughTheDelay(t *testing.T) {
	sig := make(chan os.Signal, 2)
	ctx := ContextUntilDrained(sig, 300*time.Millisecond)
	select {
	case <-ctx.Done():
		t.Fatal("cancelled before any signal")
	case <-time.After(50 * time.Millisecond):
	}
	sent := time.Now()
	sig <- syscall.SIGTERM
	select {
	case <-ctx.Done():
		t.Fatalf("cancelled %v after SIGTERM, before the drain delay", time.Since(sent))
	case <-time.After(200 * time.Millisecond):
	}
	select {
	case <-ctx.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("not cancelled after the drain delay")
	}
}
