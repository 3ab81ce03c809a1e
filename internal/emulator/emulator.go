package emulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"
	"github.com/LINBIT/golinstor/devicelayerkind"
	"github.com/google/uuid"
)

// DefaultVersion is the LINSTOR version the emulated controller reports by default.
const DefaultVersion = "1.33.3"

// restAPIVersion is the REST API version of LINSTOR 1.33.
const restAPIVersion = "1.27.0"

// Emulator is the emulated controller. All methods are safe for concurrent use.
type Emulator struct {
	mu sync.Mutex
	// freeSpaceQueries counts the satellites' free-space queries (freespace.go).
	freeSpaceQueries int

	version         string
	controllerProps map[string]string
	nodes           map[string]*node
	rds             map[string]*resourceDefinition
	// rgs are the resource groups besides DfltRscGrp (resourcegroups.go).
	rgs       map[string]lapi.ResourceGroup
	nodeConns map[[2]string]map[string]string
	// cutLinks are replication links cut between two nodes (linkKey): DRBD cannot reach
	// the peer while both satellites stay ONLINE to the controller (PartitionLink). The
	// network is not LINSTOR's: nothing of it is in the database.
	cutLinks       map[[2]string]bool
	passphrase     string
	passphraseOpen bool
	// hosts are the machines' disks by lower-cased node name (disks.go); they are not
	// LINSTOR's and outlive its nodes and database.
	hosts        map[string]*host
	newNodeDisks func(node string) []Disk
	overwritten  []string
	// diskAnnotations: the DisksAnnotation value last seen per Node (coupled.go).
	diskAnnotations map[string]string
	// coupled: node state follows a Kubernetes cluster (see Couple).
	coupled                 bool
	controllerDown          bool
	controllerPod           string
	controllerFailure       string
	controllerStarting      bool // the database of the current pod is not loaded yet
	failMigration           bool
	failStartAfterMigration bool
	persisted               dbTables // database rows as last committed; unknownRow where a failed commit left it unknown
	opaque                  dbTables // rows the emulator does not interpret, carried as they are (database.go)
	schema                  string   // the schema the controller reads and writes through ("" before the first start)
	tablesAt                string   // schema whose tables the last write created
	// commitMu is the one committer: every write of the database (a start, a migration,
	// a request's commit, the periodic save) holds it, as the server commits one
	// transaction at a time (ControllerK8sCrdTransactionMgr.commit, synchronized).
	commitMu sync.Mutex
	alive    fence         // whether the controller pod whose state is kept still exists (SyncWithCluster)
	db       client.Client // the k8s database, when coupled with one

	timing Timing
	clock  func() time.Time

	faults map[string]*Fault
	// requests is the request log, bounded by maxLoggedRequests; counts counts every
	// request by "METHOD route" and does not depend on the log.
	requests []Request
	counts   map[string]int
	mux      *http.ServeMux

	// subscribers of GET /v1/events/nodes (events.go).
	subscribers map[*subscriber]struct{}
	// scrapeRequests is the controller's count of /metrics scrapes (metrics.go).
	scrapeRequests int64

	// backups: S3 remotes, schedules, snapshots and volume contents (remotes.go).
	backups backupState
}

type node struct {
	lapi.Node
	satelliteVersion string
	// online: the satellite process runs and is reachable; onlineSince: when it came
	// up or its connection was last switched (it is CONNECTED, not ONLINE, until the
	// connect delay has passed).
	online      bool
	onlineSince time.Time
	// drbdRunsAway: the satellite is stopped but the machine runs, and with it the
	// DRBD resources in its kernel, which keep replicating (StopSatellite).
	drbdRunsAway bool
	switches     int // satellite connection switches (net interface changes)
	// offlineSince: when the satellite last went away, for auto-evict (zero: never
	// connected and lost since this controller started).
	offlineSince time.Time
	pools        map[string]*lapi.StoragePool
	reconnects   int64 // the controller's connect tries of ended outages (metrics.go)
	// seenThin: the controller's free space tracker of each thin pool, by lower-case
	// pool name (freespace.go).
	seenThin map[string]thinSeen
	// freeSpaceHangs: the satellite's free-space query does not answer
	// (HangFreeSpaceQuery).
	freeSpaceHangs bool
}

type resourceDefinition struct {
	lapi.ResourceDefinition
	volumes   []lapi.VolumeDefinition
	resources map[string]*replica
	syncing   bool
	// layers is the definition's layer stack: from its layer_data, else the stack of its
	// first resource (ResourceControllerFactory.create); empty until then.
	layers []devicelayerkind.DeviceLayerKind
	// drbd is the definition's DRBD layer data, from its first DRBD resource on.
	drbd *drbdRscDfn
}

// replica is a resource on one node.
type replica struct {
	pool      string // "" for a diskless replica
	inUse     bool
	diskState string // the settled DRBD disk state
	// syncUntil: a new diskful replica is a resync target, Inconsistent, until then.
	syncUntil time.Time
	flags     []string
	props     map[string]string
	// migrateTo names the node an evacuation placed this replica's replacement on.
	migrateTo string
	// layers is the resource's layer stack, top first; empty means DRBD,STORAGE (the
	// server's default stack, CtrlRscLayerDataFactory.createDefaultStack).
	layers []devicelayerkind.DeviceLayerKind
	// behind names (lower-cased) the writers whose writes never reached this replica
	// while DRBD could not reach it, so it does not hold the newest data, although DRBD
	// still reports its own disk UpToDate (noteWrites). A resync from a peer that has
	// them clears them (handshake); when both sides of a connection missed the other's
	// writes, their data diverged: a split brain. LINSTOR cannot see this;
	// HasNewestData tells tests.
	behind map[string]bool
	// syncFrom names the resync source while syncUntil is ahead ("" for a new replica:
	// its first connected UpToDate peer, syncSource); syncStart is when it began.
	syncFrom  string
	syncStart time.Time
	// diskFailed: the backing disk failed and DRBD detached it (FailDisk); the replica
	// stays diskful to LINSTOR and reports Diskless.
	diskFailed bool
	// layerIDs are the LayerResourceIds of the stack's layers, top first; nodeID and
	// tcpPortList the DRBD layer's (tcp_port_list as stored, nil before schema v1-31-1).
	layerIDs    []int64
	nodeID      int64
	tcpPortList *string
}

// layerStack is the replica's layer stack, top first.
func (r *replica) layerStack() []devicelayerkind.DeviceLayerKind {
	if len(r.layers) == 0 {
		return defaultLayers
	}
	return r.layers
}

// drbd: the resource is replicated by DRBD. DRBD is always the top layer when present
// (LayerUtils: no layer lists DRBD among its children).
func (r *replica) drbd() bool { return r.layerStack()[0] == devicelayerkind.Drbd }

// diskful: the replica stores data (CtrlRscDeleteApiHelper: not DRBD_DISKLESS,
// NVME_INITIATOR, EBS_INITIATOR).
func (r *replica) diskful() bool {
	return r.pool != "" && !hasFlag(r.flags, lapiconst.FlagDrbdDiskless) && !hasFlag(r.flags, lapiconst.FlagDiskless) &&
		!hasFlag(r.flags, lapiconst.FlagNvmeInitiator) && !hasFlag(r.flags, "EBS_INITIATOR")
}

// Timing is how long LINSTOR takes for what happens in the background. The server's
// answers come at once; the state they start changes over time.
type Timing struct {
	// SatelliteConnect: from a satellite coming up (or its connection being switched)
	// to ONLINE; CONNECTED meanwhile (connect, authenticate, full sync).
	SatelliteConnect time.Duration
	// Resync: how long a new diskful replica stays Inconsistent before UpToDate.
	Resync time.Duration
}

// DefaultTiming is short enough for tests and visible to every wait.
var DefaultTiming = Timing{SatelliteConnect: 300 * time.Millisecond, Resync: time.Second}

// SetTiming changes how long background work takes from now on.
func (e *Emulator) SetTiming(t Timing) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.timing = t
}

// SetClock replaces the emulator's clock, so tests can move time forward.
func (e *Emulator) SetClock(now func() time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.clock = now
}

func (e *Emulator) now() time.Time {
	if e.clock != nil {
		return e.clock()
	}
	return time.Now()
}

// Fault makes matching requests slow or fail.
type Fault struct {
	// Status, when non-zero, is returned instead of serving the request (e.g. 500, 503).
	Status int
	// Latency is added before answering.
	Latency time.Duration
	// Times limits how often the fault fires; 0 means until cleared.
	Times int
	// AfterServing, with Status, serves the request first (its effects happen and are
	// committed) and then answers Status instead: the answer is lost on its way. Not
	// for event streams.
	AfterServing bool
}

// Request is one recorded request.
type Request struct {
	Method string
	Path   string
	// Route is the pattern that served it, e.g. "GET /v1/nodes/{node}".
	Route  string
	Status int
}

// New returns an emulator with no nodes, reporting DefaultVersion.
func New() *Emulator {
	e := &Emulator{
		version:         DefaultVersion,
		controllerProps: freshControllerProps(),
		nodes:           map[string]*node{},
		rds:             map[string]*resourceDefinition{},
		nodeConns:       map[[2]string]map[string]string{},
		cutLinks:        map[[2]string]bool{},
		faults:          map[string]*Fault{},
		timing:          DefaultTiming,
		counts:          map[string]int{},
		mux:             http.NewServeMux(),
		subscribers:     map[*subscriber]struct{}{},
		hosts:           map[string]*host{},
		diskAnnotations: map[string]string{},
	}
	e.routes(e.mux)
	return e
}

// Route names the route pattern that serves r, e.g. "GET /v1/nodes/{node}".
func (e *Emulator) Route(r *http.Request) string {
	_, pattern := e.mux.Handler(r)
	return pattern
}

// Handler returns the HTTP handler serving the LINSTOR REST API.
func (e *Emulator) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route := e.Route(r)
		e.count(r, route)
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		defer func() { e.record(r, route, rec.status) }()
		if e.isControllerDown() {
			// No controller pod runs: nothing answers, as a refused connection would.
			writeStatus(rec, http.StatusServiceUnavailable, rc(lapiconst.MaskError|lapiconst.FailUnknownError, "LINSTOR controller is not running%s", e.failureSuffix()))
			return
		}
		if f := e.takeFault(route); f != nil {
			if f.Latency > 0 {
				time.Sleep(f.Latency)
			}
			if f.Status != 0 && f.AfterServing {
				lost := &bufferedAnswer{header: http.Header{}, status: http.StatusOK}
				if r.Method == http.MethodGet {
					e.mux.ServeHTTP(lost, r)
				} else {
					_ = e.inTransaction(func() { e.mux.ServeHTTP(lost, r) })
				}
				writeStatus(rec, f.Status, rc(lapiconst.MaskError|lapiconst.FailUnknownError, "injected fault on %s: the request was served, its answer lost", route))
				return
			}
			if f.Status != 0 {
				writeStatus(rec, f.Status, rc(lapiconst.MaskError|lapiconst.FailUnknownError, "injected fault on %s", route))
				return
			}
		}
		if r.Method == http.MethodGet {
			e.mux.ServeHTTP(rec, r)
			return
		}
		// LINSTOR commits every change to its database before answering; a failed
		// commit is answered as an error and the change is rolled back.
		answer := &bufferedAnswer{header: http.Header{}, status: http.StatusOK}
		if err := e.inTransaction(func() { e.mux.ServeHTTP(answer, r) }); err != nil {
			writeStatus(rec, http.StatusInternalServerError, commitFailed(route, err))
			return
		}
		answer.replay(rec)
	})
}

// writeStatus answers an ApiCallRc list with exactly this status (writeRC would make
// an error entry a 500): the emulator's own 503 and injected faults.
func writeStatus(w http.ResponseWriter, status int, rcs ...apiCallRc) {
	writeJSON(w, status, rcs)
}

// bufferedAnswer holds a mutating request's answer until its change is committed (or
// takes the answer of a request whose answer is lost, Fault.AfterServing).
type bufferedAnswer struct {
	header http.Header
	status int
	wrote  bool
	body   bytes.Buffer
}

func (b *bufferedAnswer) Header() http.Header { return b.header }

func (b *bufferedAnswer) Write(p []byte) (int, error) {
	b.wrote = true
	return b.body.Write(p)
}

func (b *bufferedAnswer) WriteHeader(code int) {
	if !b.wrote {
		b.status, b.wrote = code, true
	}
}

func (b *bufferedAnswer) replay(w http.ResponseWriter) {
	for k, v := range b.header {
		w.Header()[k] = v
	}
	w.WriteHeader(b.status)
	_, _ = w.Write(b.body.Bytes())
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection (flushes and write
// deadlines of the event stream).
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// maxLoggedRequests bounds the request log: beyond it the older half is dropped, so a
// long run (a benchmark) does not grow without end. RequestCounts keeps counting.
const maxLoggedRequests = 100_000

// count counts a request as it arrives, so a stream that is still open is counted.
func (e *Emulator) count(r *http.Request, route string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.counts[countKey(r.Method, route)]++
}

// countKey is "METHOD route" with the route's path part: "GET /v1/nodes/{node}". A
// request no route serves is counted under "METHOD (no route)".
func countKey(method, route string) string {
	if route == "" {
		return method + " (no route)"
	}
	if _, path, ok := strings.Cut(route, " "); ok {
		route = path
	}
	return method + " " + route
}

// record logs a request once it is answered (a stream when it ends).
func (e *Emulator) record(r *http.Request, route string, status int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.requests) >= maxLoggedRequests {
		e.requests = append([]Request(nil), e.requests[len(e.requests)/2:]...)
	}
	e.requests = append(e.requests, Request{Method: r.Method, Path: r.URL.Path, Route: route, Status: status})
}

// InjectFault makes requests served by route (for example "PUT /v1/nodes/{node}")
// fail or slow down. A zero Fault clears it.
func (e *Emulator) InjectFault(route string, f Fault) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if f == (Fault{}) {
		delete(e.faults, route)
		return
	}
	e.faults[route] = &f
}

func (e *Emulator) takeFault(route string) *Fault {
	e.mu.Lock()
	defer e.mu.Unlock()
	f, ok := e.faults[route]
	if !ok {
		return nil
	}
	out := *f
	if f.Times > 0 {
		f.Times--
		if f.Times == 0 {
			delete(e.faults, route)
		}
	}
	return &out
}

// Requests returns a copy of the request log: answered requests, the most recent
// maxLoggedRequests at most.
func (e *Emulator) Requests() []Request {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Request(nil), e.requests...)
}

// RequestCounts counts the requests received since New or ResetRequests, keyed
// "METHOD route" (e.g. "GET /v1/nodes/{node}", "GET /v1/events/nodes"). A request is
// counted when it arrives, so open event streams are included; unlike Requests, the
// counts never drop anything.
func (e *Emulator) RequestCounts() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]int, len(e.counts))
	for k, v := range e.counts {
		out[k] = v
	}
	return out
}

// MutatingRequests counts the requests other than GET received since New or
// ResetRequests.
func (e *Emulator) MutatingRequests() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for k, v := range e.counts {
		if method, _, _ := strings.Cut(k, " "); method != http.MethodGet {
			n += v
		}
	}
	return n
}

// ResetRequests clears the request log and the counts.
func (e *Emulator) ResetRequests() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.requests = nil
	e.counts = map[string]int{}
}

// SetVersion sets the controller's version, as after an upgrade. Satellites that
// keep another version become VERSION_MISMATCH.
func (e *Emulator) SetVersion(v string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.version = v
}

// Version is the controller's version.
func (e *Emulator) Version() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.version
}

// RestartController simulates a controller restart: the passphrase must be entered
// again, and every event stream ends (the process that served them is gone).
func (e *Emulator) RestartController() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.passphraseOpen = false
	e.endStreams()
	// A new process counts scrapes and its nodes' connect tries from zero.
	e.scrapeRequests = 0
	for _, n := range e.nodes {
		n.reconnects = 0
		// Its trackers start empty and fill from each satellite's full sync on
		// reconnect (IntFullSyncResponse.updateCapacities), before it is ONLINE.
		e.refreshSeen(n)
	}
}

// ResetPassphrase forgets the master passphrase, as a freshly installed controller.
func (e *Emulator) ResetPassphrase() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.passphrase, e.passphraseOpen = "", false
}

// SetNodeOnline connects or disconnects a satellite. Disconnected, the whole machine
// is gone: its DRBD peers lose their connections to it too (StopSatellite stops only
// the satellite).
func (e *Emulator) SetNodeOnline(name string, online bool) error {
	return e.withNode(name, func(n *node) { e.setOnline(n, online) })
}

// StopSatellite stops only the satellite process: LINSTOR reports the node OFFLINE
// and knows none of its states, while DRBD, which runs in the machine's kernel, keeps
// its connections and replicates; its peers still report it Connected (a satellite's
// shutdown stops its own services and leaves DRBD alone,
// ApplicationLifecycleManager.executeShutdown). SetNodeOnline brings it back.
func (e *Emulator) StopSatellite(name string) error {
	return e.withNode(name, func(n *node) {
		e.setOnline(n, false)
		n.drbdRunsAway = true
	})
}

// setOnline records the satellite coming up or going away; coming up starts the
// connect delay.
func (e *Emulator) setOnline(n *node, online bool) {
	if online && !n.online {
		n.onlineSince = e.now()
		e.countReconnects(n)
		e.refreshSeen(n) // the full sync carries every pool's space
	}
	if !online && n.online {
		n.offlineSince = e.now()
	}
	n.online = online
	n.drbdRunsAway = false
}

// drbdRuns: DRBD runs on the node, as its peers see it.
func (e *Emulator) drbdRuns(name string) bool {
	n, ok := e.nodes[strings.ToLower(name)]
	return ok && (n.drbdRunsAway || e.connectionStatus(n) == "ONLINE")
}

// SetSatelliteVersion sets the version a satellite runs; "" follows the controller.
func (e *Emulator) SetSatelliteVersion(name, version string) error {
	return e.withNode(name, func(n *node) { n.satelliteVersion = version })
}

// PlaceResource creates (if needed) a resource definition with one 1 GiB volume and
// places a replica of it on node in pool. An empty pool places a diskless replica.
// The replica has the default layer stack, DRBD over STORAGE.
func (e *Emulator) PlaceResource(rd, nodeName, pool string, inUse bool) error {
	return e.PlaceResourceWithLayers(rd, nodeName, pool, inUse)
}

// PlaceResourceWithLayers is PlaceResource with a layer stack, top first, as a
// resource create's layer_list gives it: STORAGE alone or LUKS,STORAGE are not
// replicated and report no disk state. No layers means DRBD,STORAGE.
func (e *Emulator) PlaceResourceWithLayers(rd, nodeName, pool string, inUse bool, layers ...devicelayerkind.DeviceLayerKind) error {
	return e.change(func() error { return e.placeResource(rd, nodeName, pool, inUse, layers) })
}

func (e *Emulator) placeResource(rd, nodeName, pool string, inUse bool, layers []devicelayerkind.DeviceLayerKind) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	n, ok := e.nodes[strings.ToLower(nodeName)]
	if !ok {
		return fmt.Errorf("node %q not found", nodeName)
	}
	var stack []devicelayerkind.DeviceLayerKind
	if len(layers) > 0 {
		var bad string
		if stack, bad = checkLayerStack(layers); bad != "" {
			return fmt.Errorf("layers %v: %s", layers, bad)
		}
	}
	rep := &replica{pool: pool, inUse: inUse, diskState: "UpToDate", layers: stack}
	switch {
	case pool != "":
		if _, ok := n.pools[strings.ToLower(pool)]; !ok {
			return fmt.Errorf("pool %q not found on node %q", pool, nodeName)
		}
	case !rep.drbd():
		return fmt.Errorf("a %v resource needs a pool: only DRBD has diskless replicas", stack)
	default:
		rep.flags = []string{lapiconst.FlagDiskless, lapiconst.FlagDrbdDiskless}
	}
	def, ok := e.rds[strings.ToLower(rd)]
	if !ok {
		def = &resourceDefinition{ResourceDefinition: lapi.ResourceDefinition{Name: rd, Uuid: uuid.NewString(), ResourceGroupName: "DfltRscGrp"}, resources: map[string]*replica{}}
		def.volumes = []lapi.VolumeDefinition{{VolumeNumber: ptrTo(int32(0)), SizeKib: 1 << 20, Uuid: uuid.NewString()}}
		e.rds[strings.ToLower(rd)] = def
	}
	if len(def.layers) == 0 {
		def.layers = rep.layerStack()
	}
	def.resources[n.Name] = rep
	e.addLayerData(def, n.Name, rep)
	e.noteWrites()
	return nil
}

// SetInUse marks a replica as in use (mounted, Primary) or not, as its satellite
// reports. A replica in use writes: peers cut off from it fall behind (noteWrites).
func (e *Emulator) SetInUse(rd, nodeName string, inUse bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	def, ok := e.rds[strings.ToLower(rd)]
	if !ok || def.resources[nodeName] == nil {
		return fmt.Errorf("resource %q not on node %q", rd, nodeName)
	}
	e.noteWrites() // what was written until now
	def.resources[nodeName].inUse = inUse
	e.noteWrites()
	return nil
}

// linkKey names the replication link between two nodes, in either order.
func linkKey(a, b string) [2]string {
	a, b = strings.ToLower(a), strings.ToLower(b)
	if b < a {
		a, b = b, a
	}
	return [2]string{a, b}
}

// linked: DRBD on a can reach b over the replication network.
func (e *Emulator) linked(a, b string) bool { return !e.cutLinks[linkKey(a, b)] }

// PartitionLink cuts the replication link between nodes a and b: their DRBD
// connections drop to Connecting on both sides while both satellites stay ONLINE to
// the controller. Each side keeps reporting its own disk state, UpToDate included;
// writes made on one side from now on do not reach the other (HasNewestData).
func (e *Emulator) PartitionLink(a, b string) error {
	if strings.EqualFold(a, b) {
		return fmt.Errorf("a link needs two nodes, got %q twice", a)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.noteWrites()
	e.cutLinks[linkKey(a, b)] = true
	e.noteWrites()
	return nil
}

// HealLink restores the link PartitionLink cut. DRBD reconnects and compares the
// data (handshake): a replica that missed writes its peer has becomes the peer's
// resync target, Inconsistent for Timing.Resync, then UpToDate with the newest data;
// when each side missed the other's writes the connection goes StandAlone.
func (e *Emulator) HealLink(a, b string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.noteWrites()
	delete(e.cutLinks, linkKey(a, b))
	e.noteWrites()
	return nil
}

// HasNewestData reports whether the replica of rd on node holds every write made so
// far: false for a diskless replica, for one that missed writes behind a cut link and
// has not resynced, and for one still resyncing. LINSTOR cannot know this; tests can.
func (e *Emulator) HasNewestData(rd, nodeName string) (bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.advance()
	def, ok := e.rds[strings.ToLower(rd)]
	if !ok || def.resources[nodeName] == nil {
		return false, fmt.Errorf("resource %q not on node %q", rd, nodeName)
	}
	rep := def.resources[nodeName]
	return rep.holdsData() && len(rep.behind) == 0 && !e.syncing(rep), nil
}

// withReplica changes one replica under the lock.
func (e *Emulator) withReplica(rd, nodeName string, f func(*replica)) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	def, ok := e.rds[strings.ToLower(rd)]
	if !ok || def.resources[nodeName] == nil {
		return fmt.Errorf("resource %q not on node %q", rd, nodeName)
	}
	f(def.resources[nodeName])
	return nil
}

// SetDiskState sets the DRBD disk state of a replica (UpToDate, Inconsistent, Outdated...).
func (e *Emulator) SetDiskState(rd, nodeName, state string) error {
	return e.change(func() error {
		return e.withReplica(rd, nodeName, func(r *replica) { r.diskState = state })
	})
}

// SetSyncing marks a resource definition as resyncing (sync-status reports not synced).
func (e *Emulator) SetSyncing(rd string, syncing bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	def, ok := e.rds[strings.ToLower(rd)]
	if !ok {
		return fmt.Errorf("resource definition %q not found", rd)
	}
	def.syncing = syncing
	return nil
}

// Node returns a copy of a node as the API would show it.
func (e *Emulator) Node(name string) (lapi.Node, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	n, ok := e.nodes[strings.ToLower(name)]
	if !ok {
		return lapi.Node{}, false
	}
	return e.nodeView(n), true
}

func (e *Emulator) withNode(name string, f func(*node)) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	n, ok := e.nodes[strings.ToLower(name)]
	if !ok {
		return fmt.Errorf("node %q not found", name)
	}
	f(n)
	return nil
}

// nodeView renders the node as GET shows it. The EVICTED flag carries the DELETE
// bit, so an evicted node lists both (FlagsHelper.toStringList).
func (e *Emulator) nodeView(n *node) lapi.Node {
	out := n.Node
	out.Props = maps.Clone(n.Props)
	out.Flags = append([]string(nil), n.Flags...)
	if hasFlag(n.Flags, lapiconst.FlagEvicted) {
		out.Flags = appendFlag(out.Flags, lapiconst.FlagDelete)
	}
	out.NetInterfaces = nil
	for _, nif := range n.NetInterfaces {
		out.NetInterfaces = append(out.NetInterfaces, netIfView(n, nif))
	}
	out.ConnectionStatus = e.connectionStatus(n)
	return out
}

// connectionStatus is the peer's state: CONTROLLER and AUXILIARY nodes get no
// connection attempt and stay OFFLINE; a satellite is CONNECTED while it
// authenticates and syncs, then ONLINE, or VERSION_MISMATCH when its version differs
// from the controller's; without an active net interface it is NO_STLT_CONN.
func (e *Emulator) connectionStatus(n *node) string {
	switch {
	case !holdsPools(n.Type):
		return "OFFLINE"
	case n.Props[curStltConnKey] == "":
		return "NO_STLT_CONN"
	case hasFlag(n.Flags, lapiconst.FlagEvicted) || !n.online:
		return "OFFLINE"
	case e.now().Before(n.onlineSince.Add(e.timing.SatelliteConnect)):
		return "CONNECTED"
	case e.satelliteVersion(n) != e.version:
		return "VERSION_MISMATCH"
	}
	if n.Props[nodeUnameKey] == "" {
		n.Props[nodeUnameKey] = strings.ToLower(n.Name) // the satellite's uname, on first authentication
	}
	return "ONLINE"
}

// online reports whether the node's satellite is ONLINE.
// OnlineNodes counts the nodes LINSTOR reports ONLINE now.
func (e *Emulator) OnlineNodes() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, node := range e.nodes {
		if e.connectionStatus(node) == "ONLINE" {
			n++
		}
	}
	return n
}

func (e *Emulator) online(name string) bool {
	n, ok := e.nodes[strings.ToLower(name)]
	return ok && e.connectionStatus(n) == "ONLINE"
}

// diskState is what the view reports for a replica: nothing while its satellite is
// not ONLINE (no state is known) or for a resource without DRBD (only DRBD's events
// fill a volume's state), Diskless without a disk, Inconsistent while a replica
// resyncs, else its settled state, UpToDate also for one that is behind.
func (e *Emulator) diskState(nodeName string, rep *replica) string {
	switch {
	case !e.online(nodeName), !rep.drbd():
		return ""
	case rep.pool == "", rep.diskFailed:
		return "Diskless"
	case e.syncing(rep):
		return "Inconsistent"
	}
	return rep.diskState
}

// reportedInUse is the resource state's in_use as the satellite reports it: DRBD's
// role for a DRBD resource (DrbdEventPublisher.determineResourceState), false for a
// LUKS one and unknown (nil) for a STORAGE one (LuksLayer.resourceFinished,
// StorageLayer.resourceFinished, sent once, never updated); nil while the satellite
// is not ONLINE.
func (e *Emulator) reportedInUse(nodeName string, rep *replica) *bool {
	if !e.online(nodeName) {
		return nil
	}
	switch rep.layerStack()[0] {
	case devicelayerkind.Drbd:
		return ptrTo(rep.inUse)
	case devicelayerkind.Luks:
		return ptrTo(false)
	}
	return nil
}

// inUseReported: LINSTOR knows the replica is in use; CtrlRscDeleteApiHelper.ensureNotInUse
// refuses only a known true.
func (e *Emulator) inUseReported(nodeName string, rep *replica) bool {
	u := e.reportedInUse(nodeName, rep)
	return u != nil && *u
}

func (e *Emulator) satelliteVersion(n *node) string {
	if n.satelliteVersion == "" {
		return e.version
	}
	return n.satelliteVersion
}

func (e *Emulator) sortedNodes() []*node {
	out := make([]*node, 0, len(e.nodes))
	for _, n := range e.nodes {
		out = append(out, n)
	}
	// The server keeps nodes in a map keyed by the upper-cased name (NodesMapImpl).
	sort.Slice(out, func(i, j int) bool { return strings.ToUpper(out[i].Name) < strings.ToUpper(out[j].Name) })
	return out
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// decode reads a JSON body as the server's plain ObjectMapper does: unknown fields are
// a parse error. The server answers API_CALL_PARSE_ERROR; the flux endpoints (node
// create/modify, evacuate, restore) end with 500 and the synchronous ones with 400
// (rest/v1/RequestHelper.handleJsonParseException, ApiCallRcRestUtils.toResponse).
func decode(w http.ResponseWriter, r *http.Request, into any, parseStatus int) bool {
	return decodeTwice(w, r, into, nil, parseStatus)
}

// decodeTwice is decode, also reading the body into also (leniently), for requests
// where an absent field means something else than an empty one.
func decodeTwice(w http.ResponseWriter, r *http.Request, into, also any, parseStatus int) bool {
	if r.Body == nil || r.ContentLength == 0 {
		return true
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		err = dec.Decode(into)
	}
	if err == nil && also != nil {
		err = json.Unmarshal(body, also)
	}
	if err != nil {
		writeJSON(w, parseStatus, []apiCallRc{rc(lapiconst.ApiCallParseError, "Unable to parse input json.").withDetails("%s", err.Error())})
		return false
	}
	return true
}

// maxBody bounds what the emulator reads of a request.
const maxBody = 8 << 20

// applyProps applies a GenericPropsModify to m.
func applyProps(m map[string]string, mod lapi.GenericPropsModify) {
	for _, k := range mod.DeleteProps {
		delete(m, k)
	}
	for _, ns := range mod.DeleteNamespaces {
		prefix := strings.TrimSuffix(ns, "/") + "/"
		for k := range m {
			if strings.HasPrefix(k, prefix) {
				delete(m, k)
			}
		}
	}
	for k, v := range mod.OverrideProps {
		m[k] = v
	}
}

func hasFlag(flags []string, f string) bool {
	for _, x := range flags {
		if x == f {
			return true
		}
	}
	return false
}

func withoutFlag(flags []string, f string) []string {
	var out []string
	for _, x := range flags {
		if x != f {
			out = append(out, x)
		}
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }

// StoragePools lists a node's storage pools, sorted by name.
func (e *Emulator) StoragePools(nodeName string) ([]lapi.StoragePool, error) {
	var out []lapi.StoragePool
	err := e.withNode(nodeName, func(n *node) {
		for _, p := range n.pools {
			out = append(out, *p)
		}
	})
	sort.Slice(out, func(i, j int) bool { return out[i].StoragePoolName < out[j].StoragePoolName })
	return out, err
}

func (e *Emulator) failureSuffix() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.controllerFailure == "" {
		return ""
	}
	return ": " + e.controllerFailure
}

// Reset forgets everything LINSTOR knows, as a freshly installed controller with an
// empty database. The machines start anew too: every host's disks return to how they
// were last configured (SetNodeDisks, the Node annotation, the defaults), without the
// volume groups and zpools made since, so a new installation finds clean disks.
// Overwritten keeps its record.
func (e *Emulator) Reset() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, h := range e.hosts {
		h.reset()
	}
	e.nodes, e.rds = map[string]*node{}, map[string]*resourceDefinition{}
	e.nodeConns, e.controllerProps = map[[2]string]map[string]string{}, map[string]string{}
	e.cutLinks = map[[2]string]bool{} // a new installation starts on a working network
	e.controllerProps = freshControllerProps()
	e.passphrase, e.passphraseOpen, e.persisted, e.tablesAt = "", false, nil, ""
	e.controllerPod, e.controllerFailure, e.controllerStarting = "", "", false
	e.failMigration, e.failStartAfterMigration = false, false
	e.schema, e.opaque = "", nil
	e.backups = backupState{transport: e.backups.transport, running: e.backups.running, idle: e.backups.idle}
	e.endStreams()
}

// ResourcePlaced reports whether a resource has a replica on a node.
func (e *Emulator) ResourcePlaced(rd, nodeName string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.advance()
	r, ok := e.rds[strings.ToLower(rd)]
	if !ok {
		return false
	}
	_, ok = r.resources[nodeName]
	return ok
}

// Replicas maps each node holding a replica of rd to its disk state as the view
// reports it ("" while the satellite is not ONLINE).
func (e *Emulator) Replicas(rd string) map[string]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.advance()
	out := map[string]string{}
	if def, ok := e.rds[strings.ToLower(rd)]; ok {
		for nodeName, rep := range def.resources {
			out[nodeName] = e.diskState(nodeName, rep)
		}
	}
	return out
}
