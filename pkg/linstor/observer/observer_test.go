package observer_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	lapi "github.com/LINBIT/golinstor/client"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/internal/emulator"
	"github.com/linstor-operator/linstor-operator/pkg/linstor"
	"github.com/linstor-operator/linstor-operator/pkg/linstor/observer"
	"github.com/linstor-operator/linstor-operator/pkg/replicahealth"
)

var key = types.NamespacedName{Namespace: "linstor", Name: "linstor"}

type world struct {
	emu     *emulator.Emulator
	conn    *linstor.Connection
	obs     *observer.Observer
	changes chan observer.Change
}

// start serves an emulator with nodes and runs an observer on it with interval.
func start(t *testing.T, nodes int, interval time.Duration, opts ...func(*observer.Observer)) *world {
	t.Helper()
	emu := emulator.New()
	emu.SetTiming(emulator.Timing{})
	srv := httptest.NewServer(emu.Handler())
	t.Cleanup(srv.Close)
	connector := &linstor.Connector{URL: srv.URL}
	conn, err := connector.Connect(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range nodes {
		addNode(t, conn, fmt.Sprintf("n%03d", i))
	}
	w := &world{emu: emu, conn: conn, changes: make(chan observer.Change, 100)}
	w.obs = observer.New(observer.ConnectorSource{Connector: connector}, interval, func(ctx context.Context, c observer.Change) {
		select {
		case w.changes <- c:
		case <-ctx.Done():
		}
	})
	w.obs.MinInterval = 50 * time.Millisecond
	for _, o := range opts {
		o(w.obs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = w.obs.Start(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	w.obs.Observe(&linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, UID: "u1"}})
	return w
}

func addNode(t *testing.T, conn *linstor.Connection, name string) {
	t.Helper()
	if err := emulator.RegisterSatellite(context.Background(), conn.Client, name, "10.0.0.1"); err != nil {
		t.Fatal(err)
	}
}

// next waits for the next change notification.
func (w *world) next(t *testing.T) observer.Change {
	t.Helper()
	select {
	case c := <-w.changes:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no change notified")
		return observer.Change{}
	}
}

// reads counts the GET requests of a cycle (the event stream aside).
func reads(emu *emulator.Emulator) map[string]int {
	out := map[string]int{}
	for _, r := range emu.Requests() {
		if r.Method == "GET" && r.Route != "GET /v1/events/nodes" {
			out[r.Route]++
		}
	}
	return out
}

// A cycle costs the same few list requests whatever the number of nodes, and the first
// one reports every node.
func TestCycleCostDoesNotGrowWithNodes(t *testing.T) {
	for _, n := range []int{3, 150} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			w := start(t, n, time.Hour)
			w.emu.ResetRequests()
			first := w.next(t)
			if !first.Controller || len(first.Nodes) != n {
				t.Fatalf("first change = controller %t, %d nodes; want true, %d", first.Controller, len(first.Nodes), n)
			}
			snap := w.obs.Snapshot(key)
			if len(snap.Nodes()) != n || len(snap.Pools("n001")) == 0 || snap.Version == "" {
				t.Fatalf("snapshot: %d nodes, pools of n001 %v, version %q", len(snap.Nodes()), snap.Pools("n001"), snap.Version)
			}
			got := reads(w.emu)
			want := map[string]int{"GET /v1/controller/version": 1, "GET /v1/controller/properties": 1, "GET /v1/encryption/passphrase": 1, "GET /v1/nodes": 1, "GET /v1/view/storage-pools": 1,
				"GET /v1/resource-groups": 1, "GET /v1/resource-definitions": 1, "GET /v1/view/resources": 1}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("requests of one cycle = %v, want %v", got, want)
			}
		})
	}
}

// A write is followed by a cycle that shows it; until then the node's observation is
// not fresh, and only the node that changed is reported.
func TestWriteIsSeenByTheNextCycleOnly(t *testing.T) {
	w := start(t, 5, time.Hour)
	w.next(t)
	if w.obs.Fresh(key, "n002") == nil {
		t.Fatal("no fresh snapshot after the first cycle")
	}
	err := w.conn.Nodes.Modify(context.Background(), "n002", lapi.NodeModify{GenericPropsModify: lapi.GenericPropsModify{OverrideProps: lapi.OverrideProps{"Aux/x": "1"}}})
	if err != nil {
		t.Fatal(err)
	}
	w.obs.Wrote(key, "N002") // LINSTOR names ignore case
	if w.obs.Fresh(key, "n002") != nil {
		t.Error("the snapshot taken before the write is reported fresh")
	}
	if w.obs.Fresh(key, "n003") == nil {
		t.Error("a write to n002 made n003's observation stale")
	}
	c := w.next(t)
	if len(c.Nodes) != 1 || c.Nodes[0] != "n002" || c.Controller {
		t.Fatalf("change = %+v, want only n002", c)
	}
	snap := w.obs.Fresh(key, "n002")
	if snap == nil {
		t.Fatal("not fresh after the cycle that followed the write")
	}
	if n, _ := snap.Node("n002"); n.Props["Aux/x"] != "1" {
		t.Errorf("n002 props = %v", n.Props)
	}
}

// Many requests for a cycle at once cost one or two cycles, not one each.
func TestRefreshRequestsCoalesce(t *testing.T) {
	w := start(t, 3, time.Hour)
	w.next(t)
	w.emu.ResetRequests()
	var wg sync.WaitGroup
	for range 200 {
		wg.Add(1)
		go func() { defer wg.Done(); w.obs.RefreshWithin(key, 0) }()
	}
	wg.Wait()
	time.Sleep(500 * time.Millisecond)
	if n := reads(w.emu)["GET /v1/nodes"]; n < 1 || n > 2 {
		t.Errorf("200 refresh requests made %d cycles, want 1 or 2", n)
	}
}

// A node created behind the operator's back is seen at once through LINSTOR's node
// event stream, not at the next interval.
func TestNodeEventTriggersACycle(t *testing.T) {
	w := start(t, 2, time.Hour)
	w.next(t)
	time.Sleep(200 * time.Millisecond) // the stream is open
	addNode(t, w.conn, "late")
	deadline := time.After(5 * time.Second)
	for {
		select {
		case c := <-w.changes:
			for _, n := range c.Nodes {
				if n == "late" {
					return
				}
			}
		case <-deadline:
			t.Fatal("the new node was not seen within 5 s (interval 1 h): the event stream is not followed")
		}
	}
}

// While LINSTOR fails, the last observation stays with the error, retries back off,
// and recovery is reported to everyone.
func TestFailureKeepsTheLastStateAndBacksOff(t *testing.T) {
	w := start(t, 2, 100*time.Millisecond)
	w.next(t)
	w.emu.InjectFault("GET /v1/controller/version", emulator.Fault{Status: 500})
	failedAt := time.Now()
	c := w.next(t)
	if !c.Controller || len(c.Nodes) != 2 {
		t.Fatalf("failure change = %+v, want everyone told", c)
	}
	snap := w.obs.Snapshot(key)
	if observer.Err(snap) == nil || snap.FailingSince.IsZero() || len(snap.Nodes()) != 2 {
		t.Fatalf("failed snapshot: err %v, since %v, %d nodes", snap.Err, snap.FailingSince, len(snap.Nodes()))
	}
	w.emu.ResetRequests()
	time.Sleep(4 * time.Second)
	// Backoff 1 s, 2 s, …: at most 3 tries in 4 s, where the 100 ms interval would make 40.
	if n := reads(w.emu)["GET /v1/controller/version"]; n > 3 {
		t.Errorf("%d tries in 4 s while failing: no backoff", n)
	}
	w.emu.InjectFault("GET /v1/controller/version", emulator.Fault{})
	deadline := time.After(40 * time.Second)
	for {
		select {
		case c := <-w.changes:
			if c.Controller {
				if err := observer.Err(w.obs.Snapshot(key)); err != nil {
					continue
				}
				if time.Since(failedAt) < time.Second {
					t.Error("recovered too soon")
				}
				return
			}
		case <-deadline:
			t.Fatal("recovery not reported")
		}
	}
}

func TestLasting(t *testing.T) {
	t0 := time.Unix(1000, 0)
	failing := observer.NewSnapshot("1.33.3", nil, nil)
	failing.Err, failing.FailingSince = fmt.Errorf("down"), t0
	for _, tc := range []struct {
		name string
		snap *observer.Snapshot
		now  time.Time
		want bool
	}{
		{"not observed yet", nil, t0.Add(time.Hour), false},
		{"healthy", observer.NewSnapshot("1.33.3", nil, nil), t0.Add(time.Hour), false},
		{"failing within the grace period", failing, t0.Add(29 * time.Second), false},
		{"failing for the whole grace period", failing, t0.Add(30 * time.Second), true},
	} {
		if got := observer.Lasting(tc.snap, 30*time.Second, tc.now); got != tc.want {
			t.Errorf("%s: Lasting = %t, want %t", tc.name, got, tc.want)
		}
	}
}

// A satellite expected ONLINE is looked for every MinInterval until LINSTOR reports it
// ONLINE, and not a cycle longer.
func TestExpectedNodeIsLookedForUntilOnline(t *testing.T) {
	w := start(t, 2, time.Hour)
	w.next(t)
	if err := w.emu.SetNodeOnline("n000", false); err != nil {
		t.Fatal(err)
	}
	w.obs.ExpectOnline(key, "n000", time.Hour)
	time.Sleep(500 * time.Millisecond)
	w.emu.ResetRequests()
	time.Sleep(500 * time.Millisecond)
	if n := reads(w.emu)["GET /v1/nodes"]; n < 5 {
		t.Fatalf("%d cycles in 500 ms while a node is expected (MinInterval 50 ms), want about 10", n)
	}
	if err := w.emu.SetNodeOnline("n000", true); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the next cycle sees it ONLINE
	w.emu.ResetRequests()
	time.Sleep(500 * time.Millisecond)
	if n := reads(w.emu)["GET /v1/nodes"]; n != 0 {
		t.Errorf("%d cycles after the expected node came ONLINE (interval 1 h), want 0", n)
	}
}

// A cycle that starts while a write is on its way (sent, not answered) may read LINSTOR
// from before it: the writer tells the observer after the answer, so that cycle never
// counts as fresh for the node written to.
func TestWriterTellsTheObserverAfterTheAnswer(t *testing.T) {
	w := start(t, 3, time.Hour)
	w.next(t)
	writer := w.obs.Writer(key, "n001", w.conn.Client)
	err := writer.Send(func(lc *lapi.Client) error {
		// A cycle runs while the write is in flight, before LINSTOR applied it.
		before := w.obs.Snapshot(key).Started
		w.obs.RefreshWithin(key, 0)
		deadline := time.Now().Add(5 * time.Second)
		for !w.obs.Snapshot(key).Started.After(before) {
			if time.Now().After(deadline) {
				return fmt.Errorf("no cycle ran within 5s")
			}
			time.Sleep(5 * time.Millisecond)
		}
		return lc.Nodes.Modify(context.Background(), "n001", lapi.NodeModify{GenericPropsModify: lapi.GenericPropsModify{OverrideProps: lapi.OverrideProps{"Aux/x": "1"}}})
	})
	if err != nil {
		t.Fatal(err)
	}
	if snap := w.obs.Fresh(key, "n001"); snap != nil {
		n, _ := snap.Node("n001")
		t.Errorf("the cycle that ran during the write counts as fresh (it read props %v)", n.Props)
	}
	if w.obs.Fresh(key, "n002") == nil {
		t.Error("a write to n001 made n002's observation stale")
	}
}

// The resource view is read every Interval and when a write that changes replicas asks
// (RefreshHealth), not on every faster cycle; each read classifies every resource. A
// resource changing state is a Health change, and the node that now holds the
// resource's last UpToDate replica is told. A failing view keeps the last report until
// it is older than HealthMaxAge, then the health is unknown (a drain is not allowed
// on old news, and a blip does not flip every drain guard).
func TestCycleClassifiesReplicas(t *testing.T) {
	w := start(t, 2, time.Hour, func(o *observer.Observer) { o.HealthMaxAge = 2 * time.Second })
	w.next(t)
	if h := w.obs.Snapshot(key).Health(); h == nil || len(h.Resources) != 0 {
		t.Fatalf("health of an empty LINSTOR = %+v, want an empty report", h)
	}
	for _, n := range []string{"n000", "n001"} {
		if err := w.emu.PlaceResource("pvc-1", n, "thin", false); err != nil {
			t.Fatal(err)
		}
	}
	w.emu.ResetRequests()
	w.obs.RefreshWithin(key, 0) // a cycle that does not read the view
	w.next(t)
	if got := reads(w.emu)["GET /v1/view/resources"]; got != 0 {
		t.Fatalf("a refresh read the resource view %d times, want 0 (only every Interval or RefreshHealth)", got)
	}
	w.obs.RefreshHealth(key)
	c := w.next(t)
	h := w.obs.Snapshot(key).Health()
	if !c.Health || h == nil || h.Resources["pvc-1"] == nil || h.Resources["pvc-1"].State != replicahealth.Healthy {
		t.Fatalf("change %+v, report %+v: want pvc-1 Healthy and a Health change", c, h)
	}
	if peers := w.obs.Snapshot(key).PeersConnectedTo("N001"); len(peers) != 1 || peers[0] != "n000" {
		t.Fatalf("peers connected to n001 = %v, want [n000]", peers)
	}
	if err := w.emu.SetNodeOnline("n001", false); err != nil {
		t.Fatal(err)
	}
	w.obs.RefreshHealth(key)
	c = w.next(t)
	h = w.obs.Snapshot(key).Health()
	if got := h.Resources["pvc-1"].State; got != replicahealth.Degraded || !c.Health {
		t.Fatalf("pvc-1 is %s (change %+v), want Degraded and a Health change", got, c)
	}
	if holds := h.Holding("n000"); len(holds) != 1 || !slices.Contains(c.Nodes, "n000") {
		t.Fatalf("n000 holds %v, change names %v: want pvc-1 held by n000 and n000 told", holds, c.Nodes)
	}

	w.emu.InjectFault("GET /v1/view/resources", emulator.Fault{Status: 500})
	w.obs.RefreshHealth(key)
	deadline := time.Now().Add(5 * time.Second)
	for w.obs.Snapshot(key).HealthErr == nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	snap := w.obs.Snapshot(key)
	if snap.HealthErr == nil || snap.Health() != h || len(snap.Nodes()) != 2 {
		t.Fatalf("after a failed view: err %v, health %p (last %p), %d nodes; want an error, the last report kept, both nodes", snap.HealthErr, snap.Health(), h, len(snap.Nodes()))
	}
	time.Sleep(2 * time.Second) // older than HealthMaxAge
	w.obs.RefreshWithin(key, 0)
	if c = w.next(t); !c.Health || w.obs.Snapshot(key).Health() != nil {
		t.Fatalf("health %v older than HealthMaxAge, change %+v: want unknown and a Health change", w.obs.Snapshot(key).Health(), c)
	}
}

// A cycle that sees a node leave ONLINE reads the resource view at once: its replicas'
// health changed with it, and LINSTOR sends no event for a lost connection, so waiting
// for the interval would leave the loss unseen for up to a whole interval.
func TestNodeLeavingOnlineReadsTheHealthAtOnce(t *testing.T) {
	w := start(t, 3, time.Hour)
	w.next(t)
	placeHealthy(t, w)

	if err := w.emu.SetNodeOnline("n001", false); err != nil {
		t.Fatal(err)
	}
	w.obs.RefreshWithin(key, 0) // any cycle: a pod's change, a write; not RefreshHealth
	waitState(t, w, "pvc-1", replicahealth.Degraded)

	// Nodes lost one after the other (a rack) do not read the view every cycle: after
	// one read, the next waits its spacing.
	w.emu.ResetRequests()
	for _, n := range []string{"n000", "n002"} {
		if err := w.emu.SetNodeOnline(n, false); err != nil {
			t.Fatal(err)
		}
		w.obs.RefreshWithin(key, 0)
		w.next(t)
	}
	time.Sleep(200 * time.Millisecond)
	if got := reads(w.emu)["GET /v1/view/resources"]; got > 2 {
		t.Fatalf("two nodes lost in a row read the resource view %d times, want at most 2", got)
	}
}

// ExpectOffline: the operator saw a node being lost (NotReady, its satellite's pod
// taken away) while LINSTOR still reports it ONLINE; cycles run every MinInterval until
// LINSTOR reports it gone, and that cycle reads the health.
func TestExpectedOfflineIsLookedForAndReadsTheHealth(t *testing.T) {
	w := start(t, 2, time.Hour)
	w.next(t)
	placeHealthy(t, w)
	w.obs.ExpectOffline(key, "n001", time.Minute)
	time.Sleep(300 * time.Millisecond) // a few cycles: it still is ONLINE
	if err := w.emu.SetNodeOnline("n001", false); err != nil {
		t.Fatal(err)
	}
	waitState(t, w, "pvc-1", replicahealth.Degraded)
	// Once it is gone, the cycles are back at the interval.
	time.Sleep(200 * time.Millisecond)
	w.emu.ResetRequests()
	time.Sleep(500 * time.Millisecond)
	if got := reads(w.emu)["GET /v1/nodes"]; got > 1 {
		t.Fatalf("%d node reads in 500 ms after the node went OFFLINE, want the interval's pace (at most 1)", got)
	}
}

// placeHealthy places pvc-1 on n000 and n001 and waits for the observer to see it
// Healthy.
func placeHealthy(t *testing.T, w *world) {
	t.Helper()
	for _, n := range []string{"n000", "n001"} {
		if err := w.emu.PlaceResource("pvc-1", n, "thin", false); err != nil {
			t.Fatal(err)
		}
	}
	w.obs.RefreshHealth(key)
	waitState(t, w, "pvc-1", replicahealth.Healthy)
}

// waitState waits up to 5 s for rsc to be in state in the observer's health.
func waitState(t *testing.T, w *world, rsc string, state replicahealth.State) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if h := w.obs.Snapshot(key).Health(); h != nil && h.Resources[rsc] != nil && h.Resources[rsc].State == state {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not %s within 5 s (interval 1 h): health %+v", rsc, state, w.obs.Snapshot(key).Health())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
