package observer_test

import (
	"testing"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/linstor/observer"
)

// poolErrors are the error reports the snapshot holds for n000's pool thin.
func poolErrors(snap *observer.Snapshot) int {
	for _, p := range snap.Pools("n000") {
		if p.StoragePoolName == "thin" {
			return len(p.Reports)
		}
	}
	return -1
}

// Cycles list pools from LINSTOR's cache; only every PoolQueryInterval does LINSTOR ask
// its satellites (one request per node with a thin pool). A pool's error, which only
// the uncached list carries, shows after the next query and stays through the cached
// cycles after it without a change reported for it, until a query no longer finds it.
func TestPoolsAreQueriedEveryPoolQueryInterval(t *testing.T) {
	const nodes = 4
	interval, poolQuery := 100*time.Millisecond, time.Second
	w := start(t, nodes, interval, func(o *observer.Observer) { o.PoolQueryInterval = poolQuery })
	w.next(t)

	queries, views := w.emu.FreeSpaceQueries(), reads(w.emu)["GET /v1/view/storage-pools"]
	began := time.Now()
	time.Sleep(3 * time.Second)
	elapsed := time.Since(began)
	asked := w.emu.FreeSpaceQueries() - queries
	cycles := reads(w.emu)["GET /v1/view/storage-pools"] - views
	t.Logf("%s: %d cycles, %d satellite free-space queries (%d nodes with a thin pool)", elapsed.Round(time.Millisecond), cycles, asked, nodes)
	if most := (int(elapsed/poolQuery) + 1) * nodes; asked > most || asked < nodes {
		t.Errorf("%d satellite queries in %s, want between %d and %d (every %s, not every cycle)", asked, elapsed, nodes, most, poolQuery)
	}
	if cycles < 10 {
		t.Errorf("%d cycles in %s at an interval of %s", cycles, elapsed, interval)
	}

	if err := w.emu.BreakStoragePool("n000", "thin"); err != nil {
		t.Fatal(err)
	}
	broken := time.Now()
	var seenAt time.Time
	var seq uint64
	for deadline := time.Now().Add(poolQuery + 2*time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		snap := w.obs.Snapshot(key)
		if poolErrors(snap) > 0 {
			seenAt, seq = time.Now(), snap.Seq
			break
		}
	}
	if seenAt.IsZero() {
		t.Fatalf("the broken pool's error was not seen within %s", poolQuery+2*time.Second)
	}
	t.Logf("error seen %s after the pool broke", seenAt.Sub(broken).Round(time.Millisecond))
	// Drain the change that reported it; the cycles after it, cached ones included, keep
	// the error and report no change of n000.
	for len(w.changes) > 0 {
		<-w.changes
	}
	for deadline := time.Now().Add(poolQuery / 2); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if snap := w.obs.Snapshot(key); poolErrors(snap) != 1 {
			t.Fatalf("cycle %d (after %d, which saw the error) has %d error reports", snap.Seq, seq, poolErrors(snap))
		}
	}
	if snap := w.obs.Snapshot(key); snap.Seq < seq+3 {
		t.Errorf("only %d cycles after the error was seen", snap.Seq-seq)
	}
	for len(w.changes) > 0 {
		if c := <-w.changes; len(c.Nodes) > 0 {
			t.Errorf("a change of %v while nothing changed", c.Nodes)
		}
	}

	if err := w.emu.RepairStoragePool("n000", "thin"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(poolQuery + 2*time.Second); poolErrors(w.obs.Snapshot(key)) != 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the repaired pool's error stayed")
		}
	}
}

// A satellite that reconnects gets its pools' errors back within an Interval, not at
// the next PoolQueryInterval: while it was away only the not-connected warning was
// listed, and the cached list after it has no errors.
func TestReconnectedNodeHasItsPoolErrorsQueried(t *testing.T) {
	w := start(t, 2, 300*time.Millisecond, func(o *observer.Observer) { o.PoolQueryInterval = time.Hour })
	w.next(t)
	if err := w.emu.BreakStoragePool("n000", "thin"); err != nil {
		t.Fatal(err)
	}
	bounce := func() {
		t.Helper()
		if err := w.emu.SetNodeOnline("n000", false); err != nil {
			t.Fatal(err)
		}
		w.waitFor(t, "n000 seen offline", func(s *observer.Snapshot) bool { n, _ := s.Node("n000"); return n.ConnectionStatus != "ONLINE" })
		if err := w.emu.SetNodeOnline("n000", true); err != nil {
			t.Fatal(err)
		}
	}
	// No query since the first cycle (PoolQueryInterval is an hour): the reconnect
	// asks for one.
	bounce()
	w.waitFor(t, "the error after a reconnect", func(s *observer.Snapshot) bool { return poolErrors(s) == 1 })
	queries := w.emu.FreeSpaceQueries()
	bounce()
	back := time.Now()
	w.waitFor(t, "the error after the second reconnect", func(s *observer.Snapshot) bool {
		n, _ := s.Node("n000")
		return n.ConnectionStatus == "ONLINE" && poolErrors(s) == 1
	})
	asked := w.emu.FreeSpaceQueries() - queries
	t.Logf("error back %s after the reconnect; %d satellite queries", time.Since(back).Round(time.Millisecond), asked)
	if asked > 2 {
		t.Errorf("%d satellite queries for one reconnect, want one uncached list (2 nodes)", asked)
	}
}

// waitFor polls the snapshot until ok, for at most 10 s.
func (w *world) waitFor(t *testing.T, what string, ok func(*observer.Snapshot) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if s := w.obs.Snapshot(key); s != nil && ok(s) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A satellite whose free-space query hangs (LINSTOR sets no timeout on it) does not
// make LINSTOR look unreachable: the uncached list gives up after half a cycle, the
// cached one answers the cycle, the failure is reported, and the next try waits for
// PoolQueryInterval.
func TestHungFreeSpaceQueryFallsBackToTheCache(t *testing.T) {
	interval, poolQuery := 400*time.Millisecond, 2*time.Second
	w := start(t, 3, interval, func(o *observer.Observer) { o.PoolQueryInterval = poolQuery })
	w.next(t)
	if err := w.emu.HangFreeSpaceQuery("n001", true); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	w.waitFor(t, "the failed query reported", func(s *observer.Snapshot) bool { return s.PoolsQueryErr != nil })
	views := reads(w.emu)["GET /v1/view/storage-pools"]
	time.Sleep(2 * poolQuery)
	snap := w.obs.Snapshot(key)
	if snap.Err != nil {
		t.Fatalf("a hung free-space query failed the cycle: %v", snap.Err)
	}
	if snap.PoolsQueryErr == nil || len(snap.Pools("n001")) == 0 {
		t.Errorf("snapshot after the hang: query error %v, n001's pools %v", snap.PoolsQueryErr, snap.Pools("n001"))
	}
	cycles := reads(w.emu)["GET /v1/view/storage-pools"] - views
	t.Logf("last try %s after the hang began; %d pool lists in %s", snap.PoolsQueriedAt().Sub(began).Round(time.Millisecond), cycles, 2*poolQuery)
	// Each cycle lists once; a try lists twice (the uncached list, then the cache).
	if most := int(2*poolQuery/interval) + int(2*poolQuery/poolQuery) + 2; cycles > most {
		t.Errorf("%d pool lists in %s, want at most %d: the uncached list is not retried every cycle", cycles, 2*poolQuery, most)
	}
	if err := w.emu.HangFreeSpaceQuery("n001", false); err != nil {
		t.Fatal(err)
	}
	w.waitFor(t, "the query answering again", func(s *observer.Snapshot) bool { return s.PoolsQueryErr == nil })
}
