package linstorsatellite

import (
	"testing"
)

// Every LINSTOR write of this package goes through linstorWriter.send:
// test/layering TestEveryLinstorWriteTellsTheObserver reads the source.

func TestWriterHoldsWritesWhileFenced(t *testing.T) {
	w := &linstorWriter{}
	if !w.may("node properties") || w.fencedMessage() != "" {
		t.Fatalf("without a fence a write may go: %q", w.fencedMessage())
	}
	w.fence = "the upgrade is in phase Satellites"
	for _, what := range []string{"node properties", "pool thin: creating it", "node properties"} {
		if w.may(what) {
			t.Errorf("%s may go while fenced", what)
		}
	}
	if got, want := w.fencedMessage(), "LINSTOR writes wait (node properties; pool thin: creating it): the upgrade is in phase Satellites"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if w.wrote {
		t.Errorf("a held write counts as written")
	}
}
