// Package observer reads a LINSTOR cluster's state with a few list calls per cycle and
// shares it with every reconciler, so the LINSTOR load does not grow with the number of
// nodes: one cycle is GET /v1/controller/version, /v1/controller/properties,
// /v1/encryption/passphrase, /v1/nodes and /v1/view/storage-pools, whatever the size
// (every Interval the replicas' health adds three more: ReadHealth).
//
// Storage pools are listed from LINSTOR's cache (cached=true), and only every
// PoolQueryInterval without it: an uncached list makes LINSTOR ask every satellite
// with a thin pool for its free space (FreeCapacityFetcherProto.fetchThinFreeSpaceInfo),
// one request per node per list, and only that list carries the satellites' errors,
// which the cycles in between keep.
//
// A cycle runs every Interval, sooner when a reconciler asks (coalesced: at most one
// every MinInterval), and when LINSTOR's node event stream reports a change. After each
// cycle the observer tells the reconcilers which nodes look different, so nothing polls
// per node. A reconciler that wrote to LINSTOR marks the node (or the controller) as
// written; until a cycle that started after that write has been read, the node's
// observation is stale, so a decision is never taken twice on data that predates it.
package observer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/linstor"
	"github.com/linstor-operator/linstor-operator/pkg/replicahealth"
)

// Controller is the key Wrote and Fresh use for the controller's own state (version,
// properties, passphrase), as opposed to a node's.
const Controller = ""

const (
	// DefaultInterval: LINSTOR has no watch for connection states, so they are re-read
	// this often; a change reported by the event stream or a reconciler comes sooner.
	DefaultInterval = 30 * time.Second
	// DefaultMinInterval coalesces requested cycles: N reconcilers asking at once cost one.
	DefaultMinInterval = time.Second
	// streamLifetime: how long one node event stream is followed before it is reopened.
	streamLifetime = 10 * time.Minute
	// maxBackoff bounds the wait between failed cycles (LINSTOR down).
	maxBackoff = 30 * time.Second
	// minReadTimeout: a cycle's reads get at least this long, however short the
	// interval (an uncached pool list gets half of it: observer.readPools).
	minReadTimeout = 10 * time.Second
)

// Snapshot is LINSTOR's state as one cycle saw it. It is never modified after it is
// published: readers share it without copying.
type Snapshot struct {
	// Seq counts the cycles of this cluster.
	Seq uint64
	// Started is when the cycle sent its first request: a write acknowledged before it
	// is in the snapshot.
	Started time.Time
	// Err is set when the cycle failed; the rest is then the last successful cycle's
	// (zero before the first), so a blip does not erase what was known.
	Err error
	// FailingSince is when the current run of failures began (zero when Err is nil).
	FailingSince time.Time

	Version         string
	ControllerProps map[string]string
	Passphrase      linstor.PassphraseStatus
	// PassphraseErr: the passphrase status could not be read (the rest may still be fine).
	PassphraseErr error

	// HealthErr: the last read of the resource view failed (nodes and pools may be
	// fine); Health keeps the report before it until that is too old.
	HealthErr error
	// health classifies every resource; nil until a cycle read the resource view.
	// healthAt is when the cycle that read it started, healthMaxAge how old it may
	// get before Health stops answering with it. peers is which nodes' DRBD reports a
	// connection to each node (replicahealth.ConnectedPeers), from the same read.
	health       *replicahealth.Report
	healthAt     time.Time
	healthMaxAge time.Duration
	peers        map[string][]string

	nodes map[string]lapi.Node          // by lower-case name: LINSTOR ignores case
	pools map[string][]lapi.StoragePool // by lower-case node name
	ok    bool                          // at least one cycle succeeded
	// poolsQueriedAt is when the last cycle that listed pools without LINSTOR's cache
	// started (their error reports are from then, unless PoolsQueryErr).
	poolsQueriedAt time.Time
	// PoolsQueryErr: that cycle's uncached list failed (a satellite that does not
	// answer hangs it), and its pools are the cache's, with the errors before.
	PoolsQueryErr error
}

// PoolsQueriedAt is when the satellites were last asked about their pools: the pools'
// error reports are as of then (or before, if PoolsQueryErr), their capacity as of
// then or of a satellite's update.
func (s *Snapshot) PoolsQueriedAt() time.Time {
	if s == nil {
		return time.Time{}
	}
	return s.poolsQueriedAt
}

// Observed reports whether any cycle has succeeded yet.
func (s *Snapshot) Observed() bool { return s != nil && s.ok }

// Health is the health of every resource as LINSTOR's resource view last showed it:
// nil before it was read and once that read is older than the observer's
// HealthMaxAge at the cycle's start (LINSTOR or its view failing for longer). A blip keeps the last report,
// as every cycle between two reads does; what is not known for longer is not used (a
// drain is held on it, nothing is evicted on it).
func (s *Snapshot) Health() *replicahealth.Report {
	// Aged as of the cycle, not the clock: a snapshot never changes once published, and
	// the next cycle (at most Interval later) is the one that tells of the change.
	if s == nil || s.health == nil || s.Started.Sub(s.healthAt) > s.healthMaxAge {
		return nil
	}
	return s.health
}

// HealthAt is when the read behind Health started.
func (s *Snapshot) HealthAt() time.Time {
	if s == nil {
		return time.Time{}
	}
	return s.healthAt
}

// PeersConnectedTo names (up to three) nodes whose DRBD reported a Connected
// connection to node in the read behind Health.
func (s *Snapshot) PeersConnectedTo(node string) []string {
	if s.Health() == nil {
		return nil
	}
	return s.peers[strings.ToLower(node)]
}

// Node returns the LINSTOR node named name, if LINSTOR has it.
func (s *Snapshot) Node(name string) (lapi.Node, bool) {
	n, ok := s.nodes[strings.ToLower(name)]
	return n, ok
}

// Pools returns the storage pools of node name (diskless ones included).
func (s *Snapshot) Pools(name string) []lapi.StoragePool { return s.pools[strings.ToLower(name)] }

// Nodes returns every node, sorted by name.
func (s *Snapshot) Nodes() []lapi.Node {
	out := make([]lapi.Node, 0, len(s.nodes))
	for _, n := range s.nodes {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// SummaryResources is how many of the worst resources a Health change looks at (the
// LinstorCluster's status lists as many).
const SummaryResources = 20

// Change is what a cycle found different from the one before.
type Change struct {
	Cluster types.NamespacedName
	// Nodes whose node or pools differ, or that appeared or disappeared (LINSTOR names).
	Nodes []string
	// Controller: version, properties, passphrase, the cycle's success or the uncached
	// pool list's changed.
	Controller bool
	// Health: a resource changed state, or the health became known or unknown.
	Health bool
}

// HealthSource reads what classifying every resource needs. A Source that is also a
// HealthSource gets its resource view read every Interval (and when RefreshHealth
// asks), not on every faster cycle: the view is the largest read by far.
type HealthSource interface {
	ReadHealth(ctx context.Context, cluster *linstorv1.LinstorCluster) (*replicahealth.Input, error)
}

// Source of the cycle's data; the default reads LINSTOR through a Connector.
type Source interface {
	// Read reads one cycle; queryPools: list storage pools without LINSTOR's cache.
	Read(ctx context.Context, cluster *linstorv1.LinstorCluster, queryPools bool) (*Snapshot, error)
	// Follow blocks following LINSTOR's node event stream, calling changed for each
	// event, until ctx ends or the stream breaks.
	Follow(ctx context.Context, cluster *linstorv1.LinstorCluster, changed func(node string)) error
}

// Observer runs one cycle loop per observed LinstorCluster. It is a manager Runnable:
// only the leader reads LINSTOR.
type Observer struct {
	Source      Source
	Interval    time.Duration
	MinInterval time.Duration
	// HealthMaxAge: how old the replica health may get (reads failing) before it is
	// unknown; zero means 2*Interval+MinInterval.
	HealthMaxAge time.Duration
	// PoolQueryInterval: how often storage pools are listed without LINSTOR's cache
	// (their errors and thin pools' space, at the cost of a request to every satellite
	// with a thin pool); zero means 4*Interval.
	PoolQueryInterval time.Duration
	// Notify receives the changes each cycle finds; it may block (the loop waits) until
	// ctx ends.
	Notify func(context.Context, Change)

	mu       sync.Mutex
	ctx      context.Context // set by Start; loops started before it wait for it
	started  chan struct{}
	clusters map[types.NamespacedName]*tracked
}

// expectation: until when to look for a node to be ONLINE (online) or not.
type expectation struct {
	until  time.Time
	online bool
}

type tracked struct {
	cluster *linstorv1.LinstorCluster
	snap    *Snapshot
	wake    chan struct{} // buffered 1: a requested cycle
	due     time.Time     // earliest time a requested cycle is due (zero: none)
	fast    time.Time     // cycles run every MinInterval until then
	// expect: nodes LINSTOR should soon report ONLINE (their satellite runs) or no
	// longer ONLINE (their node is being lost), with how long to keep looking; cycles
	// run every MinInterval while any is left.
	expect  map[string]expectation
	invalid time.Time // nothing observed before this is current
	// healthDue: a write that changes replicas asked for the next cycle to read the
	// resource view too.
	healthDue bool
	// poolsDue: a node came ONLINE, and the cached pool list has no errors of its
	// pools (a satellite's full sync does not bring them): the next cycle at least
	// Interval after the last uncached list lists them uncached.
	poolsDue bool
	written  map[string]time.Time
	cancel   context.CancelFunc
}

// New returns an observer reading through source.
func New(source Source, interval time.Duration, notify func(context.Context, Change)) *Observer {
	if interval <= 0 {
		interval = DefaultInterval
	}
	return &Observer{Source: source, Interval: interval, MinInterval: DefaultMinInterval, Notify: notify,
		started: make(chan struct{}), clusters: map[types.NamespacedName]*tracked{}}
}

// NeedLeaderElection: only the leading operator replica reads LINSTOR; the others
// serve webhooks.
func (o *Observer) NeedLeaderElection() bool { return true }

// Start runs until ctx ends; loops of clusters observed before it begin now.
func (o *Observer) Start(ctx context.Context) error {
	o.mu.Lock()
	o.ctx = ctx
	for key, t := range o.clusters {
		o.startLocked(key, t)
	}
	close(o.started)
	o.mu.Unlock()
	<-ctx.Done()
	o.mu.Lock()
	for _, t := range o.clusters {
		if t.cancel != nil {
			t.cancel()
		}
	}
	o.mu.Unlock()
	return nil
}

// Observe starts observing cluster, or updates the copy the loop connects with.
func (o *Observer) Observe(cluster *linstorv1.LinstorCluster) {
	key := types.NamespacedName{Namespace: cluster.Namespace, Name: cluster.Name}
	o.mu.Lock()
	defer o.mu.Unlock()
	t, ok := o.clusters[key]
	if ok {
		// Reconcilers may hold copies of different ages: only a newer spec (or another
		// cluster of that name) restarts the loop.
		if t.cluster.UID == cluster.UID && (cluster.Generation < t.cluster.Generation || equality.Semantic.DeepEqual(t.cluster.Spec, cluster.Spec)) {
			return
		}
		// Another LINSTOR URL, TLS or a re-created cluster: start over.
		if t.cancel != nil {
			t.cancel()
		}
	}
	t = &tracked{cluster: cluster.DeepCopy(), wake: make(chan struct{}, 1), written: map[string]time.Time{}}
	o.clusters[key] = t
	if o.ctx != nil {
		o.startLocked(key, t)
	}
}

// Forget stops observing the cluster.
func (o *Observer) Forget(key types.NamespacedName) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if t, ok := o.clusters[key]; ok {
		if t.cancel != nil {
			t.cancel()
		}
		delete(o.clusters, key)
	}
}

// Snapshot returns the cluster's latest snapshot, nil before its first cycle.
func (o *Observer) Snapshot(key types.NamespacedName) *Snapshot {
	o.mu.Lock()
	defer o.mu.Unlock()
	if t, ok := o.clusters[key]; ok {
		return t.snap
	}
	return nil
}

// Fresh returns the snapshot when it postdates every write to what (a node name, or
// Controller), and nil while a cycle that would show the write is still to come.
func (o *Observer) Fresh(key types.NamespacedName, what string) *Snapshot {
	o.mu.Lock()
	defer o.mu.Unlock()
	t, ok := o.clusters[key]
	if !ok || t.snap == nil {
		return nil
	}
	if w, ok := t.written[strings.ToLower(what)]; ok && !t.snap.Started.After(w) {
		return nil
	}
	if !t.snap.Started.After(t.invalid) {
		return nil
	}
	return t.snap
}

// FreshHealth is Fresh for the replica health: the snapshot when its resource view was
// read after every write to what, nil otherwise (RefreshHealth asks for such a read).
func (o *Observer) FreshHealth(key types.NamespacedName, what string) *Snapshot {
	snap := o.Fresh(key, what)
	if snap == nil || snap.Health() == nil {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	t := o.clusters[key]
	if w, ok := t.written[strings.ToLower(what)]; ok && !snap.healthAt.After(w) {
		return nil
	}
	if !snap.healthAt.After(t.invalid) {
		return nil
	}
	return snap
}

// Invalidate says everything observed so far may be wrong (the operator restarted the
// LINSTOR controller): nothing is fresh until a cycle that starts after now.
func (o *Observer) Invalidate(key types.NamespacedName) {
	o.mu.Lock()
	if t, ok := o.clusters[key]; ok {
		t.invalid = time.Now()
	}
	o.mu.Unlock()
	o.RefreshWithin(key, 0)
}

// Invalidated reports whether no cycle has started since the last Invalidate.
func (o *Observer) Invalidated(key types.NamespacedName) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	t, ok := o.clusters[key]
	return ok && !t.invalid.IsZero() && (t.snap == nil || !t.snap.Started.After(t.invalid))
}

// Writer sends one reconciler's writes about what (a node name, or Controller) to
// LINSTOR through lc and tells the observer of each, whatever the answer: a write whose
// answer is lost may have happened, so no decision is taken on a cycle older than it.
// Reconcilers write to LINSTOR only through a Writer, never telling the observer by
// hand (test/layering checks it).
type Writer struct {
	lc       *lapi.Client
	observer *Observer
	key      types.NamespacedName
	what     string
}

// Writer returns the writer of the cluster key's what.
func (o *Observer) Writer(key types.NamespacedName, what string, lc *lapi.Client) Writer {
	return Writer{lc: lc, observer: o, key: key, what: what}
}

// Send sends write (one request, or several that belong together) and tells the
// observer.
func (w Writer) Send(write func(*lapi.Client) error) error {
	err := write(w.lc)
	w.observer.Wrote(w.key, w.what)
	return err
}

// Wrote records a write to what (a node name, or Controller) and asks for a cycle: its
// observation is stale until a cycle that started after now has been read.
func (o *Observer) Wrote(key types.NamespacedName, what string) {
	o.mu.Lock()
	if t, ok := o.clusters[key]; ok {
		t.written[strings.ToLower(what)] = time.Now()
	}
	o.mu.Unlock()
	o.RefreshWithin(key, 0)
}

// RefreshWithin asks for a cycle no later than d from now (and not sooner than
// MinInterval after the last one). Requests coalesce: the earliest wins.
func (o *Observer) RefreshWithin(key types.NamespacedName, d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t, ok := o.clusters[key]
	if !ok {
		return
	}
	due := time.Now().Add(d)
	if t.due.IsZero() || due.Before(t.due) {
		t.due = due
		select {
		case t.wake <- struct{}{}:
		default:
		}
	}
}

// ExpectOnline says a node's satellite runs and LINSTOR should report it ONLINE
// without anything telling the observer (LINSTOR sends no event when it connects to a
// satellite): cycles run every MinInterval until it is ONLINE, or for at most window.
// Unlike a window, this stops as soon as the last expected node is ONLINE.
func (o *Observer) ExpectOnline(key types.NamespacedName, node string, window time.Duration) {
	o.expectNode(key, node, window, true)
}

// ExpectOffline says a node is being lost (NotReady, its satellite's pod taken away)
// while LINSTOR still reports it ONLINE, which it does until its own connection to the
// satellite fails, and sends no event then: cycles run every MinInterval until LINSTOR
// no longer reports it ONLINE (that cycle also reads the replicas' health), or for at
// most window.
func (o *Observer) ExpectOffline(key types.NamespacedName, node string, window time.Duration) {
	o.expectNode(key, node, window, false)
}

func (o *Observer) expectNode(key types.NamespacedName, node string, window time.Duration, online bool) {
	o.mu.Lock()
	t, ok := o.clusters[key]
	if ok {
		if t.expect == nil {
			t.expect = map[string]expectation{}
		}
		if until := time.Now().Add(window); until.After(t.expect[node].until) || t.expect[node].online != online {
			t.expect[node] = expectation{until: until, online: online}
		}
	}
	o.mu.Unlock()
	if ok {
		o.RefreshWithin(key, o.MinInterval)
	}
}

// ExpectChange says LINSTOR's state is about to change without anything telling the
// observer (a satellite pod runs, LINSTOR will report it ONLINE): cycles run every
// MinInterval for the next window, then back at Interval.
func (o *Observer) ExpectChange(key types.NamespacedName, window time.Duration) {
	o.mu.Lock()
	t, ok := o.clusters[key]
	if ok {
		if until := time.Now().Add(window); until.After(t.fast) {
			t.fast = until
		}
	}
	o.mu.Unlock()
	if ok {
		o.RefreshWithin(key, o.MinInterval)
	}
}

func (o *Observer) startLocked(key types.NamespacedName, t *tracked) {
	ctx, cancel := context.WithCancel(o.ctx)
	t.cancel = cancel
	go o.loop(ctx, key, t)
	go o.follow(ctx, key, t)
}

// loop runs the cluster's cycles until ctx ends.
func (o *Observer) loop(ctx context.Context, key types.NamespacedName, t *tracked) {
	log := ctrl.Log.WithName("linstor-observer").WithValues("cluster", key.String())
	var seq uint64
	var failures int
	for {
		seq++
		started := time.Now()
		o.mu.Lock()
		prev := t.snap
		sinceQuery := time.Duration(0)
		if prev.Observed() {
			sinceQuery = started.Sub(prev.poolsQueriedAt)
		}
		queryPools := !prev.Observed() || sinceQuery >= o.poolQueryInterval()-o.MinInterval || t.poolsDue && sinceQuery >= o.Interval-o.MinInterval
		o.mu.Unlock()
		readCtx, cancel := context.WithTimeout(ctx, max(o.Interval, minReadTimeout))
		next, err := o.Source.Read(readCtx, t.cluster, queryPools)
		cancel()
		if ctx.Err() != nil {
			return
		}
		o.mu.Lock()
		if err != nil {
			failures++
			next = failed(prev, err, started)
			log.V(1).Info("LINSTOR cycle failed", "error", err.Error(), "failures", failures)
		} else {
			failures = 0
			next.ok = true
			switch {
			case queryPools && next.PoolsQueryErr != nil:
				// Tried: not again before the interval (each try waits out half a cycle).
				if prev != nil {
					carryPools(prev, next)
				}
				next.poolsQueriedAt, t.poolsDue = started, false
				log.Info("LINSTOR's uncached storage pool list failed; pools read from its cache", "error", next.PoolsQueryErr.Error())
			case queryPools:
				next.poolsQueriedAt, t.poolsDue = started, false
			default:
				carryPools(prev, next)
				if prev.ok {
					next.PoolsQueryErr = prev.PoolsQueryErr
				}
			}
			t.poolsDue = t.poolsDue || enteredOnline(prev, next)
		}
		readHealth := t.healthDue || prev == nil || started.Sub(prev.healthAt) >= o.Interval-o.MinInterval
		var healthLater time.Duration
		if !readHealth && err == nil && leftOnline(prev, next) {
			// Its replicas' health changed with it: read it now, but nodes lost one
			// after the other (a rack) read it at most once per spacing.
			if wait := o.lostNodeSpacing() - started.Sub(prev.healthAt); wait <= 0 {
				readHealth = true
			} else {
				t.healthDue, healthLater = true, wait
			}
		}
		t.healthDue = t.healthDue && !readHealth
		o.mu.Unlock()
		o.carryHealth(prev, next)
		if hs, ok := o.Source.(HealthSource); ok && readHealth && err == nil {
			hctx, hcancel := context.WithTimeout(ctx, o.Interval)
			in, herr := hs.ReadHealth(hctx, t.cluster)
			hcancel()
			if ctx.Err() != nil {
				return
			}
			next.HealthErr = herr
			if herr == nil {
				in.Now = started
				in.Previous = next.health // the last report, kept through failed reads: how long a state lasts
				next.health, next.healthAt, next.peers = replicahealth.Classify(*in), started, replicahealth.ConnectedPeers(in.Replicas)
			} else {
				log.V(1).Info("reading LINSTOR's resource view failed", "error", herr.Error())
			}
		}
		o.mu.Lock()
		next.Seq, next.Started = seq, started
		t.snap = next
		// A request that arrived during the cycle may have been for data it already
		// holds, but not for a write after started: keep only requests made after it.
		if !t.due.IsZero() && !t.due.After(started) {
			t.due = time.Time{}
		}
		if later := started.Add(healthLater); healthLater > 0 && (t.due.IsZero() || later.Before(t.due)) {
			t.due = later // the health read a lost node brought forward, after its spacing
		}
		due, fast := t.due, t.fast
		for node, e := range t.expect {
			n, ok := next.Node(node)
			if time.Now().After(e.until) || ok && (n.ConnectionStatus == "ONLINE") == e.online || !ok && !e.online {
				delete(t.expect, node)
			}
		}
		expecting := len(t.expect) > 0
		o.mu.Unlock()

		if change := diff(key, prev, next); o.Notify != nil && (change.Controller || change.Health || len(change.Nodes) > 0) {
			o.Notify(ctx, change)
		}

		wait := o.Interval
		if failures > 0 {
			wait = min(maxBackoff, time.Second<<min(failures-1, 5))
			wait += time.Duration(rand.Int64N(int64(wait / 5))) // jitter: two operators do not align
		}
		if !due.IsZero() {
			wait = min(wait, time.Until(due))
		}
		if expecting || time.Now().Before(fast) {
			wait = min(wait, o.MinInterval)
		}
		wait = max(wait, o.MinInterval-time.Since(started))
		if !o.sleep(ctx, t, wait, started) {
			return
		}
	}
}

// sleep waits until the next cycle is due: after wait, or sooner when a refresh due
// before then is asked for. It returns false when ctx ended.
func (o *Observer) sleep(ctx context.Context, t *tracked, wait time.Duration, started time.Time) bool {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-timer.C:
			return true
		case <-t.wake:
			o.mu.Lock()
			due := t.due
			o.mu.Unlock()
			if due.IsZero() {
				continue
			}
			d := max(time.Until(due), o.MinInterval-time.Since(started))
			if !timer.Stop() {
				return true
			}
			timer.Reset(max(d, 0))
		}
	}
}

// follow keeps the node event stream open; each event asks for a cycle. A broken
// stream is reopened with a backoff; polling covers the gap.
func (o *Observer) follow(ctx context.Context, key types.NamespacedName, t *tracked) {
	backoff := time.Second
	for ctx.Err() == nil {
		opened := time.Now()
		// LINSTOR sends nothing on an idle stream (no keepalive): a connection a proxy or
		// conntrack dropped silently would never end. Reopened now and then instead.
		streamCtx, cancel := context.WithTimeout(ctx, streamLifetime)
		err := o.Source.Follow(streamCtx, t.cluster, func(string) { o.RefreshWithin(key, 0) })
		cancel()
		if ctx.Err() != nil {
			return
		}
		if time.Since(opened) > maxBackoff {
			backoff = time.Second // it ran a while: the controller restarted, reconnect soon
		}
		ctrl.Log.WithName("linstor-observer").V(1).Info("node event stream ended", "cluster", key.String(), "error", fmt.Sprint(err))
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
		// Events sent while no stream was open are lost: one cycle covers the gap.
		o.RefreshWithin(key, o.MinInterval)
	}
}

func (o *Observer) poolQueryInterval() time.Duration {
	if o.PoolQueryInterval > 0 {
		return o.PoolQueryInterval
	}
	return 4 * o.Interval
}

// carryPools gives the pools of a cycle that read LINSTOR's cache the error reports
// only the uncached list had: LINSTOR clears a pool's reports on every list and adds
// errors back only from the satellites' answers (CtrlStorPoolListApiCallHandler
// .assembleList), so the cache never has one. A pool whose satellite is not connected
// has its warning instead, as the uncached list would. A pool is the same only with the
// same uuid: one deleted and made again is new. Capacity is the cache's as it is: an
// empty tracker (a pool not applied yet) reads 0 of 0 exactly as a lost pool's failed
// answer does (golinstor drops the null), so an old figure is never kept over it.
func carryPools(prev, next *Snapshot) {
	next.poolsQueriedAt = prev.poolsQueriedAt
	for key, pools := range next.pools {
		var carried []lapi.StoragePool
		for i, p := range pools {
			if len(p.Reports) > 0 {
				continue
			}
			for _, q := range prev.pools[key] {
				if q.StoragePoolName == p.StoragePoolName && q.Uuid == p.Uuid && len(q.Reports) > 0 && !notConnected(q.Reports) {
					if carried == nil {
						carried = slices.Clone(pools)
					}
					carried[i].Reports = q.Reports
				}
			}
		}
		if carried != nil {
			next.pools[key] = carried
		}
	}
}

// enteredOnline: a node next reports ONLINE was not ONLINE (or not there) in prev.
func enteredOnline(prev, next *Snapshot) bool { return leftOnline(next, prev) }

// notConnected: the reports are LINSTOR's not-connected warning, which says nothing of
// the pool.
func notConnected(reports []lapi.ApiCallRc) bool {
	for _, rc := range reports {
		if uint64(rc.RetCode)&lapiconst.MaskError == lapiconst.MaskError {
			return false
		}
	}
	return true
}

// lostNodeSpacing is the least time between two reads of the resource view that
// nodes leaving ONLINE bring forward.
func (o *Observer) lostNodeSpacing() time.Duration { return 5 * o.MinInterval }

// leftOnline: a node prev saw ONLINE is gone from next or no longer ONLINE.
func leftOnline(prev, next *Snapshot) bool {
	if prev == nil || next == nil {
		return false
	}
	for key, n := range prev.nodes {
		if n.ConnectionStatus != "ONLINE" {
			continue
		}
		if m, ok := next.nodes[key]; !ok || m.ConnectionStatus != "ONLINE" {
			return true
		}
	}
	return false
}

// carryHealth gives next the replica health prev had (a cycle that does not read the
// resource view, or fails, keeps the last read; Health ages it out).
func (o *Observer) carryHealth(prev, next *Snapshot) {
	next.healthMaxAge = o.HealthMaxAge
	if next.healthMaxAge <= 0 {
		next.healthMaxAge = 2*o.Interval + o.MinInterval
	}
	if prev != nil {
		next.health, next.healthAt, next.peers, next.HealthErr = prev.health, prev.healthAt, prev.peers, prev.HealthErr
	}
}

// RefreshHealth asks for a cycle soon that also reads LINSTOR's resource view (after
// a write that changes replicas: a toggle-disk, an eviction).
func (o *Observer) RefreshHealth(key types.NamespacedName) {
	o.mu.Lock()
	if t, ok := o.clusters[key]; ok {
		t.healthDue = true
	}
	o.mu.Unlock()
	o.RefreshWithin(key, 0)
}

// failed is the snapshot of a failed cycle: the last known state with the error.
func failed(prev *Snapshot, err error, started time.Time) *Snapshot {
	s := &Snapshot{Err: err, FailingSince: started}
	if prev != nil {
		cp := *prev
		s = &cp
		s.Err = err
		if prev.Err == nil {
			s.FailingSince = started
		}
	}
	return s
}

// diff lists what differs between two cycles.
func diff(key types.NamespacedName, prev, next *Snapshot) Change {
	c := Change{Cluster: key}
	if prev == nil {
		prev = &Snapshot{}
	}
	if (prev.Err == nil) != (next.Err == nil) || prev.ok != next.ok || prev.Version != next.Version || (prev.PoolsQueryErr == nil) != (next.PoolsQueryErr == nil) ||
		prev.Passphrase != next.Passphrase || !maps.Equal(prev.ControllerProps, next.ControllerProps) {
		c.Controller = true
	}
	name := func(key string) string {
		if n, ok := next.nodes[key]; ok {
			return n.Name
		}
		return prev.nodes[key].Name
	}
	ph, nh := prev.Health(), next.Health()
	// The status shows the counts and the worst resources: a resync's progress there
	// is news too, not only a change of state.
	c.Health = (ph == nil) != (nh == nil) || len(replicahealth.Transitions(ph, nh)) > 0 || !replicahealth.SameSummary(ph, nh, SummaryResources)
	everyone := (prev.Err == nil) != (next.Err == nil) || prev.ok != next.ok || (ph == nil) != (nh == nil)
	for _, key := range nodeKeys(prev, next) {
		a, aok := prev.nodes[key]
		b, bok := next.nodes[key]
		// Every reconciler decides differently when LINSTOR stops or starts answering.
		if everyone || aok != bok || !equality.Semantic.DeepEqual(a, b) || !equality.Semantic.DeepEqual(prev.pools[key], next.pools[key]) ||
			!slices.Equal(ph.Holding(key), nh.Holding(key)) {
			c.Nodes = append(c.Nodes, name(key))
		}
	}
	return c
}

// nodeKeys lists the lower-case names of both snapshots' nodes, sorted.
func nodeKeys(a, b *Snapshot) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range []*Snapshot{a, b} {
		for key := range s.nodes {
			if !seen[key] {
				seen[key] = true
				out = append(out, key)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Lasting reports whether snap's failure has lasted longer than grace: a blip must not
// flip conditions that users and alerts watch. No observation yet is not lasting.
func Lasting(snap *Snapshot, grace time.Duration, now time.Time) bool {
	return snap != nil && snap.Err != nil && now.Sub(snap.FailingSince) >= grace
}

// errNotObserved: no cycle has succeeded yet.
var errNotObserved = errors.New("LINSTOR not observed yet")

// Err is the error a reconciler reports for snap: nil when it can be used.
func Err(snap *Snapshot) error {
	switch {
	case snap == nil:
		return errNotObserved
	case snap.Err != nil:
		return snap.Err
	case !snap.ok:
		return errNotObserved
	}
	return nil
}
