package reconciler

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Next tells the wait Failed would give without counting a failure.
func TestBackoffNext(t *testing.T) {
	b := &Backoff{Max: 5 * time.Second}
	uid := types.UID("u")
	for _, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second} {
		if got := b.Next(uid); got != want {
			t.Fatalf("Next = %v, want %v", got, want)
		}
		if got := b.Next(uid); got != want {
			t.Fatalf("Next counted a failure: %v, want %v", got, want)
		}
		if got := b.Failed(uid); got != want {
			t.Fatalf("Failed = %v, want %v", got, want)
		}
	}
	b.Succeeded(uid)
	if got := b.Next(uid); got != time.Second {
		t.Errorf("after Succeeded: %v, want 1s", got)
	}
}
